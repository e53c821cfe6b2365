//! `supervise/status`: s6's record in both of its sizes, and its atomic replacement.
//!
//! Layout of 35 bytes (s6 2.11, 2.12, and 2.14 on): stamp (TAI64N, 12) | readystamp
//! (TAI64N, 12) | pid (u64 BE) | wstat (u16 BE) | flags (paused 0x01, finishing 0x02,
//! want-up 0x04, ready 0x08). s6 2.13.0.0 to 2.13.2.0 write 43 bytes: a pgid (u64 BE) at
//! 32..40 between pid and wstat, the rest moved up by 8; their readers fail (EPIPE) on 35
//! bytes, and the 35-byte readers misread 43. Readers here choose by the file's size; a
//! writer writes the [`Layout`] its host's s6 reads (see [`Layout::from_env`]).

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
/// s6 2.13's size, with the pgid.
pub const STATUS_SIZE_PGID: usize = 43;

/// The environment variable that chooses the layout a supervisor writes: `43` for s6
/// 2.13's, anything else (or unset) for 35 bytes. Inherited down a tree (tend-svscan's
/// `--status-size` sets it for its supervisors).
pub const LAYOUT_ENV: &str = "TEND_STATUS_SIZE";

/// Which of s6's two status sizes a supervisor writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// 35 bytes: s6 2.11, 2.12, 2.14 and later.
    #[default]
    Plain,
    /// 43 bytes: s6 2.13, the pgid field holding the pid (./run leads its own process
    /// group, which is what 2.14 and later say the pid is).
    Pgid,
}

impl Layout {
    /// The size a value of [`LAYOUT_ENV`] asks for; None for a value that names neither.
    pub fn parse(v: &[u8]) -> Option<Layout> {
        match v {
            b"35" => Some(Layout::Plain),
            b"43" => Some(Layout::Pgid),
            _ => None,
        }
    }

    /// The layout [`LAYOUT_ENV`] asks for (its last occurrence, so a value appended by a
    /// scanner wins over one it inherited); [`Layout::Plain`] when unset or unknown.
    pub fn from_env() -> Layout {
        std::env::vars_os()
            .filter(|(k, _)| k == LAYOUT_ENV)
            .last()
            .and_then(|(_, v)| Layout::parse(std::os::unix::ffi::OsStrExt::as_bytes(v.as_os_str())))
            .unwrap_or_default()
    }

    pub fn size(self) -> usize {
        match self {
            Layout::Plain => STATUS_SIZE,
            Layout::Pgid => STATUS_SIZE_PGID,
        }
    }
}

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
    /// The record in `layout` (its first `layout.size()` bytes of the array).
    pub fn encode_as(&self, layout: Layout) -> [u8; STATUS_SIZE_PGID] {
        let mut b = [0u8; STATUS_SIZE_PGID];
        let plain = self.encode();
        match layout {
            Layout::Plain => b[..STATUS_SIZE].copy_from_slice(&plain),
            Layout::Pgid => {
                b[..32].copy_from_slice(&plain[..32]);
                b[32..40].copy_from_slice(&self.pid.to_be_bytes());
                b[40..43].copy_from_slice(&plain[32..35]);
            }
        }
        b
    }

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

    /// Decode a whole status file, its layout chosen by its size (35 or 43); None for
    /// any other size (s6 fails with EPIPE on a short one).
    pub fn decode(b: &[u8]) -> Option<StatusRecord> {
        match b.len() {
            STATUS_SIZE => StatusRecord::decode_plain(b),
            STATUS_SIZE_PGID => {
                // 2.13's pgid (bytes 32..40) is dropped: tend's ./run leads its group.
                let mut plain = [0u8; STATUS_SIZE];
                plain[..32].copy_from_slice(&b[..32]);
                plain[32..].copy_from_slice(&b[40..43]);
                StatusRecord::decode_plain(&plain)
            }
            _ => None,
        }
    }

    /// Decode the 35-byte layout from the first 35 bytes of `b`.
    fn decode_plain(b: &[u8]) -> Option<StatusRecord> {
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
        let data = match tend_sys::fd::read_regular(&path, STATUS_SIZE_PGID + 1) {
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
    layout: Layout,
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
        Ok(StatusFile {
            dir,
            layout: Layout::Plain,
        })
    }

    /// Write `layout` from now on.
    pub fn set_layout(&mut self, layout: Layout) {
        self.layout = layout;
    }

    /// The open `supervise/` directory, for the supervisor's other atomic writes.
    pub fn dir(&self) -> &std::os::fd::OwnedFd {
        &self.dir
    }

    /// Atomically replace the status file, so readers never see a torn record.
    pub fn write(&self, rec: &StatusRecord) -> Result<(), Errno> {
        let b = rec.encode_as(self.layout);
        write_atomic_at(&self.dir, STATUS_NEW, STATUS, &b[..self.layout.size()])
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

    #[test]
    fn sizes_other_than_35_and_43_are_refused() {
        for n in [0, 1, 34, 36, 42, 44, 70] {
            assert_eq!(StatusRecord::decode(&vec![0u8; n]), None, "{n} bytes");
        }
    }

    #[test]
    fn pgid_layout_golden_bytes() {
        // As s6 2.13.1's s6-supervise wrote it, up as pid 0x467e (its pgid the same),
        // want up; then down, killed by signal 9, ready, want up.
        let up: [u8; 43] = [
            0x40, 0, 0, 0, 0x6b, 0x13, 0x6a, 0x87, 0x16, 0x31, 0x24, 0x90, 0x40, 0, 0, 0, 0x6b,
            0x13, 0x6a, 0x87, 0x15, 0xf5, 0xae, 0x62, 0, 0, 0, 0, 0, 0, 0x46, 0x7e, 0, 0, 0, 0, 0,
            0, 0x46, 0x7e, 0, 0, 0x04,
        ];
        let r = StatusRecord::decode(&up).unwrap();
        assert_eq!(
            (r.pid, r.wstat, r.want_up, r.ready),
            (0x467e, 0, true, false)
        );
        assert!(r.is_up());
        assert_eq!(r.encode_as(Layout::Pgid), up);
        let mut down = [0u8; 43];
        down[40..43].copy_from_slice(&[0x00, 0x09, 0x0c]);
        let r = StatusRecord::decode(&down).unwrap();
        assert_eq!(
            (r.pid, r.signal(), r.ready, r.want_up),
            (0, Some(9), true, true)
        );
        assert_eq!(r.encode_as(Layout::Pgid), down);
        assert_eq!(r.encode_as(Layout::Plain)[..35], r.encode());
        assert_eq!(Layout::parse(b"43"), Some(Layout::Pgid));
        assert_eq!(Layout::parse(b"35"), Some(Layout::Plain));
        assert_eq!(Layout::parse(b"2.13"), None);
    }
}
