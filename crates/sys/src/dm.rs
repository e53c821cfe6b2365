//! The device-mapper's ioctl interface (`/dev/mapper/control`), just what a read-only
//! mapping of one target needs: create a device, load its table, resume it (which makes
//! the table live), and remove it again. libdevmapper and veritysetup speak the same
//! ioctls; a guest's init has neither.
//!
//! The request is `struct dm_ioctl` (linux/dm-ioctl.h, 312 bytes) followed, for a table
//! load, by one `struct dm_target_spec` (40 bytes) and its NUL-terminated parameter
//! line, padded to 8. The buffer is built field by field at the header's offsets, so no
//! struct is reinterpreted; the kernel reads and writes it through the one pointer.
#![allow(unsafe_code)]

use nix::errno::Errno;
use std::os::fd::{AsRawFd, OwnedFd};

const HEADER: usize = 312;
const SPEC: usize = 40;
const NAME_LEN: usize = 128;
const TYPE_LEN: usize = 16;
// Offsets inside struct dm_ioctl.
const DATA_SIZE: usize = 12;
const DATA_START: usize = 16;
const TARGET_COUNT: usize = 20;
const FLAGS: usize = 28;
const DEV: usize = 40;
const NAME: usize = 48;

const READONLY_FLAG: u32 = 1 << 0;

/// _IOWR(0xfd, cmd, struct dm_ioctl).
const fn request(cmd: u32) -> libc::c_ulong {
    ((3u32 << 30) | ((HEADER as u32) << 16) | (0xfd << 8) | cmd) as libc::c_ulong
}
const DEV_CREATE: libc::c_ulong = request(3);
const DEV_REMOVE: libc::c_ulong = request(4);
const DEV_SUSPEND: libc::c_ulong = request(6);
const TABLE_LOAD: libc::c_ulong = request(9);

/// The control device, opened once for every request.
pub struct Control(OwnedFd);

impl Control {
    pub const PATH: &'static str = "/dev/mapper/control";

    pub fn open() -> Result<Control, Errno> {
        crate::fd::open(
            Control::PATH,
            nix::fcntl::OFlag::O_RDWR | nix::fcntl::OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        )
        .map(Control)
    }

    /// A new device named `name`, with no table yet: its (major, minor).
    pub fn create(&self, name: &str) -> Result<(u32, u32), Errno> {
        let mut buf = header(name, HEADER, 0)?;
        self.ioctl(DEV_CREATE, &mut buf)?;
        let dev = u64::from_ne_bytes(buf[DEV..DEV + 8].try_into().unwrap_or_default());
        // The kernel's huge_encode_dev: minor's low byte, major, minor's high bits.
        let major = ((dev >> 8) & 0xfff) as u32;
        let minor = ((dev & 0xff) | ((dev >> 12) & 0xfff00)) as u32;
        Ok((major, minor))
    }

    /// Load one read-only target covering sectors 0..`sectors` as the device's inactive
    /// table: `target` is its type ("verity"), `params` its line.
    pub fn load(&self, name: &str, sectors: u64, target: &str, params: &str) -> Result<(), Errno> {
        if target.len() >= TYPE_LEN || params.as_bytes().contains(&0) {
            return Err(Errno::EINVAL);
        }
        let spec_len = (SPEC + params.len() + 1).next_multiple_of(8);
        let mut buf = header(name, HEADER + spec_len, READONLY_FLAG)?;
        put_u32(&mut buf, TARGET_COUNT, 1);
        let s = HEADER;
        buf[s + 8..s + 16].copy_from_slice(&sectors.to_ne_bytes());
        // next: where a following spec would start, from this one's start.
        put_u32(&mut buf, s + 20, spec_len as u32);
        buf[s + 24..s + 24 + target.len()].copy_from_slice(target.as_bytes());
        buf[s + SPEC..s + SPEC + params.len()].copy_from_slice(params.as_bytes());
        self.ioctl(TABLE_LOAD, &mut buf)
    }

    /// Resume the device: its loaded table goes live.
    pub fn resume(&self, name: &str) -> Result<(), Errno> {
        let mut buf = header(name, HEADER, 0)?;
        self.ioctl(DEV_SUSPEND, &mut buf)
    }

    pub fn remove(&self, name: &str) -> Result<(), Errno> {
        let mut buf = header(name, HEADER, 0)?;
        self.ioctl(DEV_REMOVE, &mut buf)
    }

    fn ioctl(&self, req: libc::c_ulong, buf: &mut [u8]) -> Result<(), Errno> {
        // SAFETY: buf is a dm_ioctl request whose data_size (set by `header`) is its
        // length: the kernel reads and writes within it, and only during the call.
        let r = unsafe { libc::ioctl(self.0.as_raw_fd(), req as _, buf.as_mut_ptr()) };
        if r == -1 { Err(Errno::last()) } else { Ok(()) }
    }
}

fn put_u32(buf: &mut [u8], at: usize, v: u32) {
    buf[at..at + 4].copy_from_slice(&v.to_ne_bytes());
}

/// A zeroed request of `size` bytes: interface version 4.0.0, data after the header,
/// `name` (at most 127 bytes, no NUL).
fn header(name: &str, size: usize, flags: u32) -> Result<Vec<u8>, Errno> {
    if name.is_empty() || name.len() >= NAME_LEN || name.as_bytes().contains(&0) {
        return Err(Errno::EINVAL);
    }
    let mut buf = vec![0u8; size];
    put_u32(&mut buf, 0, 4);
    put_u32(&mut buf, DATA_SIZE, size as u32);
    put_u32(&mut buf, DATA_START, HEADER as u32);
    put_u32(&mut buf, FLAGS, flags);
    buf[NAME..NAME + name.len()].copy_from_slice(name.as_bytes());
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_the_kernels_numbers() {
        // DM_DEV_CREATE and DM_TABLE_LOAD as strace prints them on x86_64.
        assert_eq!(DEV_CREATE, 0xc138fd03);
        assert_eq!(TABLE_LOAD, 0xc138fd09);
    }

    #[test]
    fn a_header_holds_version_sizes_and_name() {
        let b = header("extension-x", HEADER, READONLY_FLAG).unwrap();
        assert_eq!(&b[0..4], &4u32.to_ne_bytes());
        assert_eq!(&b[DATA_SIZE..DATA_SIZE + 4], &312u32.to_ne_bytes());
        assert_eq!(&b[NAME..NAME + 12], b"extension-x\0");
        assert_eq!(header(&"n".repeat(128), HEADER, 0), Err(Errno::EINVAL));
    }
}
