//! A service's state as sv needs it, from either supervisor's `supervise/status`.
//!
//! runit's runsv writes a 20-byte record (runsv.c's `update_status`, "supervise
//! compatibility"): bytes 0-11 the TAI64N time of the last start or stop, 12-15 the pid
//! (little-endian; 0 when nothing runs), 16 paused (1/0), 17 what is wanted (`u` or `d`),
//! 18 "got TERM" (1 from the TERM it sent until the process dies), 19 the state (0 down,
//! 1 run, 2 finish). A runsv is running when its `supervise/ok` FIFO has a reader (it
//! holds a flock(2) on `supervise/lock`, which fcntl probes do not see).
//!
//! s6-supervise and tend-supervise write s6's 35-byte record (tend_proto::status); they
//! run when their fcntl lock on `supervise/lock` is held. Both map to one [`View`].

use nix::errno::Errno;
use rustix::fs::OFlags;
use std::ffi::OsStr;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use tend_proto::{StatusRecord, Tai64n};

/// runit's record size.
pub const RUNIT_SIZE: usize = 20;
/// What runit adds to 2^62 + unix seconds in its labels (s6: `LEAP_OFFSET`).
const RUNIT_TAI_OFFSET: u64 = 10;

/// Which supervisor wrote the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// runsv's 20 bytes.
    Runit,
    /// s6-supervise's or tend-supervise's 35 bytes.
    S6,
}

/// What sv reads from either record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct View {
    pub format: Format,
    pub pid: u64,
    /// 0 down, 1 run, 2 finish (runit's numbers).
    pub state: u8,
    pub paused: bool,
    /// `b'u'` or `b'd'`.
    pub want: u8,
    /// runit only: TERM sent, process not dead yet.
    pub got_term: bool,
    /// The last start or stop.
    pub stamp: Tai64n,
}

/// Decode runit's record (exactly 20 bytes).
pub fn decode_runit(b: &[u8]) -> Option<View> {
    if b.len() != RUNIT_SIZE {
        return None;
    }
    let mut t = [0u8; 12];
    t.copy_from_slice(&b[0..12]);
    // runit's TAI labels are 2^62 + unix time + 10 (djb's), s6's + 37: one scale for both.
    let mut stamp = Tai64n::decode(&t);
    stamp.secs = stamp
        .secs
        .wrapping_add(tend_proto::tai64n::LEAP_OFFSET - RUNIT_TAI_OFFSET);
    Some(View {
        format: Format::Runit,
        pid: u64::from(u32::from_le_bytes([b[12], b[13], b[14], b[15]])),
        paused: b[16] != 0,
        want: b[17],
        got_term: b[18] != 0,
        state: b[19],
        stamp,
    })
}

/// The view of s6's record.
pub fn from_s6(r: &StatusRecord) -> View {
    View {
        format: Format::S6,
        pid: r.pid,
        state: match (r.pid, r.finishing) {
            (0, _) => 0,
            (_, true) => 2,
            (_, false) => 1,
        },
        paused: r.paused,
        want: if r.want_up { b'u' } else { b'd' },
        got_term: false,
        stamp: r.stamp,
    }
}

/// What looking at a service directory found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    Running(View),
    /// No supervisor (sv: "runsv not running").
    NotRunning,
    /// Something else went wrong: sv's words for it, and the errno if there is one.
    Trouble(&'static str, Option<Errno>),
}

// runsv's files, at the same paths as s6's (supervise/status holds runit's 20-byte record
// there); supervise/ok is runit's alone.
use tend_proto::servicedir::{LOCK, RUNIT_OK as OK_FIFO, STATUS};

/// `dir/rel`, built in `buf` (reused across services: a status over many services
/// allocates nothing per service once the buffer is long enough).
pub fn join<'a>(buf: &'a mut Vec<u8>, dir: &Path, rel: &str) -> &'a Path {
    buf.clear();
    buf.extend_from_slice(dir.as_os_str().as_bytes());
    buf.push(b'/');
    buf.extend_from_slice(rel.as_bytes());
    Path::new(OsStr::from_bytes(buf))
}

/// Is a runsv reading `supervise/ok`?
fn runsv_listening(path: &Path) -> Result<bool, Errno> {
    match open(path, OFlags::WRONLY | OFlags::NONBLOCK) {
        Ok(_) => Ok(true),
        Err(Errno::ENXIO) => Ok(false),
        Err(e) => Err(e),
    }
}

/// open(2) with O_CLOEXEC through rustix's direct system call: musl's open adds an
/// fcntl(F_SETFD) after each one, two more system calls per service for a status.
fn open(path: &Path, flags: OFlags) -> Result<std::os::fd::OwnedFd, Errno> {
    rustix::fs::open(path, flags | OFlags::CLOEXEC, rustix::fs::Mode::empty())
        .map_err(|e| Errno::from_raw(e.raw_os_error()))
}

/// Read up to 44 bytes of `path` (no record is longer than s6 2.13's 43) into `buf`, in one read as
/// sv does (a record is replaced whole, by rename, and a regular file gives all it has).
/// Non-blocking, so a FIFO planted there reads as empty instead of hanging.
fn read_record(path: &Path, buf: &mut [u8; 44]) -> Result<usize, Errno> {
    let fd = open(path, OFlags::RDONLY | OFlags::NONBLOCK)?;
    loop {
        match nix::unistd::read(fd.as_raw_fd(), buf) {
            Ok(n) => return Ok(n),
            Err(Errno::EAGAIN) => return Ok(0),
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
}

/// Read the state of the service in `dir`, whichever supervisor runs it. `buf` is the
/// caller's scratch space for paths.
pub fn probe(dir: &Path, buf: &mut Vec<u8>) -> Probe {
    let mut data = [0u8; 44];
    let read = read_record(join(buf, dir, STATUS), &mut data);
    let mut held = || tend_proto::lock::is_held(join(buf, dir, LOCK));
    match read {
        Ok(RUNIT_SIZE) => match runsv_listening(join(buf, dir, OK_FIFO)) {
            Ok(true) => decode_runit(&data[..RUNIT_SIZE]).map_or(
                Probe::Trouble("unable to read supervise/status: bad format", None),
                Probe::Running,
            ),
            Ok(false) => Probe::NotRunning,
            Err(e) => Probe::Trouble("unable to open supervise/ok", Some(e)),
        },
        Ok(n) => match held() {
            Ok(false) => Probe::NotRunning,
            // 35 or 43 bytes (s6 2.13), by size.
            Ok(true) => match StatusRecord::decode(&data[..n]) {
                Some(r) => Probe::Running(from_s6(&r)),
                None => Probe::Trouble("unable to read supervise/status: bad format", None),
            },
            Err(e) => Probe::Trouble("unable to check supervise/lock", Some(e)),
        },
        // A supervisor that has not written its first record yet, or none ever ran here:
        // then sv's own words (it finds no supervise/ok), whoever would supervise it.
        Err(e @ (Errno::ENOENT | Errno::ENOTDIR)) => match held() {
            Ok(true) => Probe::Trouble("unable to open supervise/status", Some(e)),
            Ok(false) => Probe::Trouble("unable to open supervise/ok", Some(e)),
            Err(e) => Probe::Trouble("unable to open supervise/ok", Some(e)),
        },
        Err(e) => Probe::Trouble("unable to read supervise/status", Some(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runit_record() {
        let mut b = [0u8; 20];
        b[0..8].copy_from_slice(&(0x4000_0000_6000_0000u64).to_be_bytes());
        b[8..12].copy_from_slice(&5u32.to_be_bytes());
        b[12..16].copy_from_slice(&123_456u32.to_le_bytes());
        b[16] = 1;
        b[17] = b'd';
        b[18] = 1;
        b[19] = 1;
        let v = decode_runit(&b).unwrap();
        assert_eq!(v.pid, 123_456);
        assert!(v.paused && v.got_term);
        assert_eq!((v.want, v.state, v.format), (b'd', 1, Format::Runit));
        assert_eq!(v.stamp.secs, 0x4000_0000_6000_0000 + 27);
        assert_eq!(v.stamp.nanos, 5);
        assert_eq!(decode_runit(&b[..19]), None);
    }

    #[test]
    fn s6_record() {
        let r = StatusRecord {
            pid: 42,
            finishing: true,
            want_up: true,
            ..Default::default()
        };
        let v = from_s6(&r);
        assert_eq!((v.state, v.want, v.got_term), (2, b'u', false));
        assert_eq!(from_s6(&StatusRecord::default()).state, 0);
    }
}
