//! `supervise/status`: s6 2.11's 35-byte record, and its atomic replacement.
//!
//! Layout: stamp (TAI64N, 12) | readystamp (TAI64N, 12) | pid (u64 BE) | wstat (u16 BE) |
//! flags (paused 0x01, finishing 0x02, want-up 0x04, ready 0x08).

use crate::Tai64n;
use nix::errno::Errno;
use nix::fcntl::{OFlag, renameat};
use nix::sys::stat::Mode;
use std::ffi::CStr;
use std::os::fd::AsRawFd;
use std::path::Path;
use tend_sys::Error;
use tend_sys::fd::{open, openat, write_all};

pub const STATUS_SIZE: usize = 35;

const PAUSED: u8 = 0x01;
const FINISHING: u8 = 0x02;
const WANT_UP: u8 = 0x04;
const READY: u8 = 0x08;

/// One decoded `supervise/status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StatusRecord {
    /// Time of the last up/down transition.
    pub stamp: Tai64n,
    /// Time of the last readiness change.
    pub readystamp: Tai64n,
    /// Pid of ./run while up, of ./finish while finishing, 0 when down.
    pub pid: u64,
    /// Raw wait status of the last ./run, truncated to 16 bits.
    pub wstat: u16,
    pub paused: bool,
    pub finishing: bool,
    pub want_up: bool,
    pub ready: bool,
}

impl StatusRecord {
    pub fn encode(&self) -> [u8; STATUS_SIZE] {
        let mut b = [0u8; STATUS_SIZE];
        b[0..12].copy_from_slice(&self.stamp.encode());
        b[12..24].copy_from_slice(&self.readystamp.encode());
        b[24..32].copy_from_slice(&self.pid.to_be_bytes());
        b[32..34].copy_from_slice(&self.wstat.to_be_bytes());
        b[34] = (if self.paused { PAUSED } else { 0 })
            | (if self.finishing { FINISHING } else { 0 })
            | (if self.want_up { WANT_UP } else { 0 })
            | (if self.ready { READY } else { 0 });
        b
    }

    /// Decode the first 35 bytes; None if there are fewer (s6 fails with EPIPE then).
    pub fn decode(b: &[u8]) -> Option<StatusRecord> {
        if b.len() < STATUS_SIZE {
            return None;
        }
        let mut t = [0u8; 12];
        t.copy_from_slice(&b[0..12]);
        let stamp = Tai64n::decode(&t);
        t.copy_from_slice(&b[12..24]);
        let readystamp = Tai64n::decode(&t);
        let mut p = [0u8; 8];
        p.copy_from_slice(&b[24..32]);
        let rec = StatusRecord {
            stamp,
            readystamp,
            pid: u64::from_be_bytes(p),
            wstat: u16::from_be_bytes([b[32], b[33]]),
            ..Default::default()
        };
        Some(rec.with_flags(b[34]))
    }

    /// The same record with its four flags taken from a status byte (offset 34).
    pub fn with_flags(self, flags: u8) -> StatusRecord {
        StatusRecord {
            paused: flags & PAUSED != 0,
            finishing: flags & FINISHING != 0,
            want_up: flags & WANT_UP != 0,
            ready: flags & READY != 0,
            ..self
        }
    }

    /// Up means: ./run is alive (s6-svstat's definition).
    pub fn is_up(&self) -> bool {
        self.pid != 0 && !self.finishing
    }

    /// Exit code of the last ./run, if it exited normally.
    pub fn exitcode(&self) -> Option<u8> {
        tend_sys::wait::Wstat::from(self.wstat).exit_code()
    }

    /// Signal that killed the last ./run, if any.
    pub fn signal(&self) -> Option<u8> {
        tend_sys::wait::Wstat::from(self.wstat).term_signal()
    }

    /// Read `dir/supervise/status`.
    pub fn read(servicedir: &Path) -> Result<StatusRecord, Error> {
        let path = servicedir.join(crate::servicedir::STATUS);
        // Anything but a regular file reads as empty, as a FIFO without a writer gives s6.
        let data = match tend_sys::fd::read_regular(&path, STATUS_SIZE + 1) {
            Ok(d) => d,
            Err(tend_sys::fd::NotRead::NotAFile(_)) => Vec::new(),
            Err(tend_sys::fd::NotRead::Sys(e)) => return Err(Error::at("read", &path, e)),
        };
        StatusRecord::decode(&data).ok_or(Error::at("read", &path, Errno::EPIPE))
    }
}

/// Where a supervisor writes its status: `status.new` then rename over `status`, relative
/// to an open `supervise/` directory, with paths prepared once (no allocation per write).
pub struct StatusFile {
    dir: std::os::fd::OwnedFd,
}

use crate::servicedir::within::{STATUS, STATUS_NEW};

impl StatusFile {
    /// `supervise_dir` is the `supervise/` directory (already created).
    pub fn open(supervise_dir: &Path) -> Result<StatusFile, Error> {
        let dir = open(
            supervise_dir,
            OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| Error::at("open", supervise_dir, e))?;
        Ok(StatusFile { dir })
    }

    /// The open `supervise/` directory, for the supervisor's other atomic writes.
    pub fn dir(&self) -> &std::os::fd::OwnedFd {
        &self.dir
    }

    /// Atomically replace the status file, so readers never see a torn record.
    pub fn write(&self, rec: &StatusRecord) -> Result<(), Errno> {
        write_atomic_at(&self.dir, STATUS_NEW, STATUS, &rec.encode())
    }
}

/// Write `data` to `tmp` (created 0666 & ~umask, truncated) under `dir`, then rename it to
/// `name`. Readers see the old or the new file, never a mix.
pub fn write_atomic_at(
    dir: &std::os::fd::OwnedFd,
    tmp: &CStr,
    name: &CStr,
    data: &[u8],
) -> Result<(), Errno> {
    // Non-blocking and not following symlinks: a FIFO (ENXIO) or symlink (ELOOP) planted
    // as `tmp` is removed and the open retried once, instead of hanging or writing
    // elsewhere.
    let open_tmp = || {
        openat(
            dir,
            tmp,
            OFlag::O_WRONLY
                | OFlag::O_CREAT
                | OFlag::O_TRUNC
                | OFlag::O_NONBLOCK
                | OFlag::O_NOFOLLOW
                | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(0o666),
        )
    };
    let fd = match open_tmp() {
        Err(Errno::ENXIO | Errno::ELOOP | Errno::EAGAIN) => {
            let _ = nix::unistd::unlinkat(
                Some(dir.as_raw_fd()),
                tmp,
                nix::unistd::UnlinkatFlags::NoRemoveDir,
            );
            open_tmp()?
        }
        other => other?,
    };
    write_all(fd, data)?;
    renameat(Some(dir.as_raw_fd()), tmp, Some(dir.as_raw_fd()), name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_bytes() {
        // "down, run exited 3": pid 0, wstat 0300, flags 08
        let r = StatusRecord {
            stamp: Tai64n {
                secs: 0x4000_0000_6b0c_398d,
                nanos: 0x1894_2ad6,
            },
            readystamp: Tai64n {
                secs: 0x4000_0000_6b0c_398d,
                nanos: 0x185a_e944,
            },
            pid: 0x26f0,
            wstat: 0x0300,
            ready: true,
            want_up: true,
            ..Default::default()
        };
        let b = r.encode();
        assert_eq!(b.len(), 35);
        assert_eq!(&b[0..8], &[0x40, 0, 0, 0, 0x6b, 0x0c, 0x39, 0x8d]);
        assert_eq!(&b[24..32], &[0, 0, 0, 0, 0, 0, 0x26, 0xf0]);
        assert_eq!(&b[32..35], &[0x03, 0x00, 0x0c]);
        assert_eq!(StatusRecord::decode(&b), Some(r));
        assert_eq!(r.exitcode(), Some(3));
        assert_eq!(r.signal(), None);
    }

    #[test]
    fn flags_and_derived_state() {
        for bits in 0u8..16 {
            let mut b = [0u8; 35];
            b[34] = bits;
            b[31] = 7;
            let r = StatusRecord::decode(&b).unwrap();
            assert_eq!(r.encode(), b);
            assert_eq!(r.is_up(), bits & FINISHING == 0);
        }
        let killed = StatusRecord {
            wstat: 9,
            ..Default::default()
        };
        assert_eq!((killed.exitcode(), killed.signal()), (None, Some(9)));
        assert_eq!(StatusRecord::decode(&[0u8; 34]), None);
    }
}
