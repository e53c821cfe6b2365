//! `supervise/death_tally`: 14-byte records (TAI64N stamp, exit code, signal), oldest
//! first, the last `max-death-tally` deaths.

use crate::Tai64n;
use crate::servicedir::DEATH_TALLY;
use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use tend_sys::Error;
use tend_sys::wait::{Ended, Wstat};

pub const RECORD_SIZE: usize = 14;
pub const DEFAULT_MAX: usize = 100;
pub const LIMIT: usize = 4096;

/// One death.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Death {
    pub stamp: Tai64n,
    /// Exit code, or 128 + signal.
    pub exitcode: u8,
    /// Signal number, 0 if it exited.
    pub signal: u8,
}

impl Death {
    /// From a raw wait status.
    pub fn from_wstat(stamp: Tai64n, wstat: Wstat) -> Death {
        match wstat.ended() {
            Ended::Exited(exitcode) => Death {
                stamp,
                exitcode,
                signal: 0,
            },
            Ended::Signaled(sig) => Death {
                stamp,
                exitcode: 128u8.wrapping_add(sig),
                signal: sig,
            },
        }
    }

    pub fn encode(&self) -> [u8; RECORD_SIZE] {
        let mut b = [0u8; RECORD_SIZE];
        b[..12].copy_from_slice(&self.stamp.encode());
        b[12] = self.exitcode;
        b[13] = self.signal;
        b
    }

    pub fn decode(b: &[u8]) -> Option<Death> {
        if b.len() < RECORD_SIZE {
            return None;
        }
        let mut t = [0u8; 12];
        t.copy_from_slice(&b[..12]);
        Some(Death {
            stamp: Tai64n::decode(&t),
            exitcode: b[12],
            signal: b[13],
        })
    }
}

/// Read `death_tally` (under the open `supervise/` directory `dir`) into `buf`, at most
/// its capacity (so nothing is allocated), whole records only. A missing file is empty.
/// The supervisor reads it again before each death it records: s6-svdt-clear (or
/// tend-svdt-clear) may have emptied it since, and s6-supervise honours that too.
pub fn read_into(dir: &OwnedFd, buf: &mut Vec<u8>) -> Result<(), Errno> {
    buf.clear();
    let fd = match tend_sys::fd::openat(
        dir,
        crate::servicedir::within::DEATH_TALLY,
        OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::ENOENT) => return Ok(()),
        Err(e) => return Err(e),
    };
    let cap = buf.capacity();
    buf.resize(cap, 0);
    let mut got = 0;
    while got < cap {
        match nix::unistd::read(fd.as_raw_fd(), &mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(Errno::EINTR) => {}
            Err(Errno::EAGAIN) => break,
            Err(e) => return Err(e),
        }
    }
    buf.truncate(got - got % RECORD_SIZE);
    Ok(())
}

/// A service's death tally as a reader sees it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Tally {
    pub deaths: Vec<Death>,
    /// Bytes after the last whole record (a file of the wrong size); they are ignored.
    pub trailing: usize,
}

/// Read `servicedir/supervise/death_tally`. No `supervise/` directory is an error
/// (ENOENT, as s6-svdt); no file in it is an empty tally.
pub fn read(servicedir: &Path) -> Result<Tally, Error> {
    use tend_sys::fd::NotRead;
    let path = servicedir.join(DEATH_TALLY);
    let fail = |e| Error::at("read death tally for service", servicedir, e);
    let bytes = match tend_sys::fd::read_regular(&path, LIMIT * RECORD_SIZE * 4) {
        Ok(b) => b,
        Err(NotRead::Sys(Errno::ENOENT)) => {
            nix::sys::stat::stat(&servicedir.join(crate::servicedir::SUPERVISE)).map_err(fail)?;
            Vec::new()
        }
        // Anything but a regular file reads as empty, as a FIFO without a writer gives s6.
        Err(NotRead::NotAFile(_)) => Vec::new(),
        Err(NotRead::Sys(e)) => return Err(fail(e)),
    };
    let chunks = bytes.chunks_exact(RECORD_SIZE);
    let trailing = chunks.remainder().len();
    Ok(Tally {
        deaths: chunks.filter_map(Death::decode).collect(),
        trailing,
    })
}

/// Empty `servicedir/supervise/death_tally` (created if missing), atomically.
pub fn clear(servicedir: &Path) -> Result<(), Error> {
    let fail = |e| Error::at("clear death tally for service", servicedir, e);
    let dir = tend_sys::fd::open(
        &servicedir.join(crate::servicedir::SUPERVISE),
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(fail)?;
    // Not the supervisor's temporary name: the two never write the same file.
    crate::status::write_atomic_at(
        &dir,
        crate::servicedir::within::DEATH_TALLY_CLEAR,
        crate::servicedir::within::DEATH_TALLY,
        b"",
    )
    .map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records() {
        let t = Tai64n {
            secs: 0x4000_0000_0000_0001,
            nanos: 2,
        };
        let d = Death::from_wstat(t, Wstat(15));
        assert_eq!((d.exitcode, d.signal), (143, 15));
        let d2 = Death::from_wstat(t, Wstat(3 << 8));
        assert_eq!((d2.exitcode, d2.signal), (3, 0));
        let mut file = d.encode().to_vec();
        file.extend_from_slice(&d2.encode());
        file.push(0);
        let decoded: Vec<Death> = file
            .chunks_exact(RECORD_SIZE)
            .filter_map(Death::decode)
            .collect();
        assert_eq!(decoded, vec![d, d2]);
    }

    #[test]
    fn read_keeps_whole_records_and_clear_empties() {
        let sv = std::env::temp_dir().join(format!("tend-dtally-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&sv);
        assert_eq!(read(&sv).unwrap_err().errno, Errno::ENOENT);
        std::fs::create_dir_all(sv.join(crate::servicedir::SUPERVISE)).unwrap();
        assert_eq!(read(&sv).unwrap(), Tally::default());
        let t = Tai64n {
            secs: 0x4000_0000_0000_0001,
            nanos: 2,
        };
        let mut file = Death::from_wstat(t, tend_sys::wait::Wstat(15))
            .encode()
            .to_vec();
        file.extend_from_slice(b"xyz");
        std::fs::write(sv.join(DEATH_TALLY), &file).unwrap();
        let got = read(&sv).unwrap();
        assert_eq!((got.deaths.len(), got.trailing), (1, 3));
        let dir = tend_sys::fd::open(
            &sv.join(crate::servicedir::SUPERVISE),
            OFlag::O_RDONLY,
            Mode::empty(),
        )
        .unwrap();
        let mut buf = Vec::with_capacity(2 * RECORD_SIZE);
        read_into(&dir, &mut buf).unwrap();
        assert_eq!(buf, &file[..RECORD_SIZE]);
        clear(&sv).unwrap();
        assert_eq!(std::fs::read(sv.join(DEATH_TALLY)).unwrap(), b"");
        read_into(&dir, &mut buf).unwrap();
        assert!(buf.is_empty());
        let _ = std::fs::remove_dir_all(&sv);
    }
}
