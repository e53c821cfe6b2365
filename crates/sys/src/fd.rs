//! Writing to a descriptor known only by its number (e.g. a readiness-notification fd
//! given on the command line), which std and nix only accept as a borrowed fd.

#![allow(unsafe_code)]

use nix::errno::Errno;
use std::os::fd::RawFd;

/// write(2) on an inherited fd number. EBADF if it is not open.
pub fn write_raw(fd: RawFd, buf: &[u8]) -> Result<usize, Errno> {
    // SAFETY: buf is valid for buf.len() bytes; a bad fd only makes write fail with EBADF.
    let r = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    if r < 0 {
        Err(Errno::last())
    } else {
        Ok(r as usize)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn bad_fd_is_ebadf() {
        assert_eq!(super::write_raw(987, b"x"), Err(nix::errno::Errno::EBADF));
    }
}
