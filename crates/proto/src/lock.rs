//! "Is a supervisor running here?" — a POSIX fcntl write lock on `supervise/lock` (or
//! `.s6-svscan/lock`), held for the owner's lifetime. Clients probe it with F_GETLK.
//! Never flock(2): it is invisible to F_GETLK, so s6's clients would not see it.
//!
//! Also the open-file-description locks that tend-setlock hands to the program it execs
//! (s6-setlock's job; tend-supervise's `lock-fd` takes the same kind in crates/sys).

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::sys::stat::Mode;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::Path;
use tend_sys::fd::open;

/// Why a lock could not be taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockError {
    /// Another process holds it.
    Busy,
    /// open or fcntl failed.
    Sys(Errno),
}

fn whole_file(kind: i16) -> libc::flock {
    libc::flock {
        l_type: kind,
        l_whence: libc::SEEK_SET as i16,
        l_start: 0,
        l_len: 0,
        l_pid: 0,
    }
}

/// Create (with `mode`) and lock `path`; the returned fd holds the lock until dropped.
pub fn acquire(path: &Path, mode: u32) -> Result<OwnedFd, LockError> {
    let fd = open(
        path,
        OFlag::O_WRONLY | OFlag::O_NONBLOCK | OFlag::O_CREAT | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(mode),
    )
    .map_err(LockError::Sys)?;
    try_lock(&fd)?;
    Ok(fd)
}

/// Take the whole-file write lock on an fd opened for writing, without waiting.
pub fn try_lock(fd: &OwnedFd) -> Result<(), LockError> {
    let fl = whole_file(libc::F_WRLCK as i16);
    match fcntl(fd.as_raw_fd(), FcntlArg::F_SETLK(&fl)) {
        Ok(_) => Ok(()),
        Err(Errno::EACCES) | Err(Errno::EAGAIN) => Err(LockError::Busy),
        Err(e) => Err(LockError::Sys(e)),
    }
}

/// Whether some process holds a lock on `path`. A missing file means "nobody".
pub fn is_held(path: &Path) -> Result<bool, Errno> {
    // Non-blocking: a FIFO in place of the lock must not hang a client. rustix's open is
    // the bare system call (musl's adds an fcntl(F_SETFD) to every O_CLOEXEC open): one
    // system call less per service for a client that asks about many.
    use rustix::fs::OFlags;
    let fd = match rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(false),
        Err(e) => return Err(Errno::from_raw(e.raw_os_error())),
    };
    let mut fl = whole_file(libc::F_RDLCK as i16);
    fcntl(fd.as_raw_fd(), FcntlArg::F_GETLK(&mut fl))?;
    Ok(fl.l_type != libc::F_UNLCK as i16)
}

/// A shared (read) or an exclusive (write) lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Shared,
    Exclusive,
}

/// How long to wait for a lock someone else holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Fail at once.
    No,
    /// Until it is free.
    Forever,
    /// At most this long.
    For(std::time::Duration),
}

/// Why an open-file-description lock was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OfdError {
    /// Held elsewhere, and not waiting.
    Busy,
    /// Still held elsewhere when the wait ended.
    TimedOut,
    Sys(Errno),
}

impl OfdError {
    /// 1 when the lock is held elsewhere (busy, or still at the deadline), else 111.
    pub fn code(&self) -> i32 {
        match self {
            OfdError::Busy | OfdError::TimedOut => tend_sys::code::NO,
            OfdError::Sys(_) => tend_sys::code::SYSTEM,
        }
    }

    /// The message for the lock file `path`, in s6-setlock's words.
    pub fn describe(&self, path: &Path) -> String {
        let errno = match self {
            OfdError::Busy => Errno::EBUSY,
            OfdError::TimedOut => Errno::ETIMEDOUT,
            OfdError::Sys(e) => *e,
        };
        format!("unable to lock {}: {}", path.display(), errno.desc())
    }
}

/// Open `path` for a lock of `kind` as s6-setlock does, creating it (mode 0666 minus the
/// umask) if missing: for writing, or for reading after creating it. The fd is
/// inheritable: it carries the lock into the program exec'd next. The error's `op` is
/// `open for writing`, `open for reading` or `create`.
pub fn open_inheritable(path: &Path, kind: Kind) -> Result<OwnedFd, tend_sys::Error> {
    open_inheritable_mode(path, kind, 0o666)
}

/// [`open_inheritable`], creating a missing file with `mode` (runit's chpst: 0600).
pub fn open_inheritable_mode(
    path: &Path,
    kind: Kind,
    mode: u32,
) -> Result<OwnedFd, tend_sys::Error> {
    let create = OFlag::O_WRONLY | OFlag::O_NONBLOCK | OFlag::O_CREAT;
    let mode = Mode::from_bits_truncate(mode);
    match kind {
        Kind::Exclusive => {
            open(path, create, mode).map_err(|e| tend_sys::Error::at("open for writing", path, e))
        }
        Kind::Shared => {
            let read = OFlag::O_RDONLY | OFlag::O_NONBLOCK;
            match open(path, read, Mode::empty()) {
                Ok(fd) => return Ok(fd),
                Err(Errno::ENOENT) => {}
                Err(e) => return Err(tend_sys::Error::at("open for reading", path, e)),
            }
            drop(
                open(path, create | OFlag::O_CLOEXEC, mode)
                    .map_err(|e| tend_sys::Error::at("create", path, e))?,
            );
            open(path, read, Mode::empty())
                .map_err(|e| tend_sys::Error::at("open for reading", path, e))
        }
    }
}

fn ofd_request(kind: Kind) -> libc::flock {
    whole_file(match kind {
        Kind::Shared => libc::F_RDLCK as i16,
        Kind::Exclusive => libc::F_WRLCK as i16,
    })
}

/// Take a whole-file OFD lock on `fd`. It belongs to the open file description, not to
/// the process: every process that inherits the fd shares it, and it is released when
/// the last of them closes it. It conflicts with s6's per-process fcntl locks on the
/// same file (the kernel keeps both in one table). A wait with a limit forks a
/// short-lived helper (which makes only async-signal-safe calls).
pub fn lock_ofd(fd: &OwnedFd, kind: Kind, wait: Wait) -> Result<(), OfdError> {
    let fl = ofd_request(kind);
    let once = || match fcntl(fd.as_raw_fd(), FcntlArg::F_OFD_SETLK(&fl)) {
        Ok(_) => Ok(()),
        Err(Errno::EACCES) | Err(Errno::EAGAIN) => Err(OfdError::Busy),
        Err(e) => Err(OfdError::Sys(e)),
    };
    match wait {
        Wait::No => once(),
        Wait::Forever => loop {
            match fcntl(fd.as_raw_fd(), FcntlArg::F_OFD_SETLKW(&fl)) {
                Ok(_) => return Ok(()),
                Err(Errno::EINTR) => {}
                Err(e) => return Err(OfdError::Sys(e)),
            }
        },
        Wait::For(limit) => match once() {
            Err(OfdError::Busy) if limit.is_zero() => Err(OfdError::TimedOut),
            Err(OfdError::Busy) => lock_ofd_until(fd, &fl, std::time::Instant::now() + limit),
            other => other,
        },
    }
}

/// Which kind of lock to take on a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// An open-file-description fcntl lock (s6-setlock's).
    Ofd,
    /// flock(2), as runit's chpst `-l`/`-L` and runsv take theirs: flock and fcntl locks
    /// do not see each other on Linux, so a lock shared with runit programs must be this.
    Flock,
}

/// Take a whole-file lock of `style` on `fd`. Both styles belong to the open file
/// description (inherited across fork and exec). `Wait::For` is only offered for `Ofd`;
/// with `Flock` it is taken as `Wait::No`.
pub fn lock(fd: &OwnedFd, kind: Kind, wait: Wait, style: Style) -> Result<(), OfdError> {
    if style == Style::Ofd {
        return lock_ofd(fd, kind, wait);
    }
    use rustix::fs::{FlockOperation as Op, flock};
    let op = match (kind, wait) {
        (Kind::Shared, Wait::Forever) => Op::LockShared,
        (Kind::Exclusive, Wait::Forever) => Op::LockExclusive,
        (Kind::Shared, _) => Op::NonBlockingLockShared,
        (Kind::Exclusive, _) => Op::NonBlockingLockExclusive,
    };
    loop {
        match flock(fd, op) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::INTR) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => return Err(OfdError::Busy),
            Err(e) => return Err(OfdError::Sys(Errno::from_raw(e.raw_os_error()))),
        }
    }
}

/// A blocking lock with a deadline, without a signal handler: a child blocks in
/// F_OFD_SETLKW on the shared open file description (so the lock it takes is ours) and
/// reports through a pipe; at the deadline it is killed, and one last try decides.
fn lock_ofd_until(
    fd: &OwnedFd,
    fl: &libc::flock,
    deadline: std::time::Instant,
) -> Result<(), OfdError> {
    use nix::poll::{PollFd, PollFlags, poll};
    let (r, w) = nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(OfdError::Sys)?;
    let child =
        tend_sys::process::fork_lock_waiter(fd.as_fd(), fl, w.as_fd()).map_err(OfdError::Sys)?;
    drop(w);
    let answer = loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            break None;
        }
        let mut fds = [PollFd::new(r.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, tend_sys::deadline::ms_rounded_up(left)) {
            Ok(0) => {}
            Ok(_) => {
                let mut b = [0u8; 1];
                break match nix::unistd::read(r.as_raw_fd(), &mut b) {
                    Ok(1) => Some(b[0]),
                    _ => Some(Errno::EIO as i32 as u8),
                };
            }
            Err(Errno::EINTR) => {}
            Err(e) => break Some(e as i32 as u8),
        }
    };
    // Harmless if it already exited; a lock it took stays with the shared description.
    let _ = nix::sys::signal::kill(child, nix::sys::signal::Signal::SIGKILL);
    let _ = tend_sys::wait::wait(Some(child));
    match answer {
        Some(0) => Ok(()),
        Some(e) => Err(OfdError::Sys(Errno::from_raw(i32::from(e)))),
        // The child may have got it just before it died: then this succeeds.
        None => match fcntl(fd.as_raw_fd(), FcntlArg::F_OFD_SETLK(fl)) {
            Ok(_) => Ok(()),
            Err(Errno::EACCES) | Err(Errno::EAGAIN) => Err(OfdError::TimedOut),
            Err(e) => Err(OfdError::Sys(e)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn scratch(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("tend-lock-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn flock_style_conflicts_between_descriptions_not_with_ofd() {
        let d = scratch("flock");
        let f = d.join("lock");
        let a = open_inheritable_mode(&f, Kind::Exclusive, 0o600).unwrap();
        let b = open_inheritable(&f, Kind::Exclusive).unwrap();
        lock(&a, Kind::Exclusive, Wait::No, Style::Flock).unwrap();
        assert_eq!(
            lock(&b, Kind::Exclusive, Wait::No, Style::Flock),
            Err(OfdError::Busy)
        );
        // flock and fcntl locks do not see each other (why chpst's must be flock).
        lock(&b, Kind::Exclusive, Wait::No, Style::Ofd).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & !0o600, 0);
        std::fs::remove_dir_all(&d).unwrap();
    }

    // OFD locks of two open file descriptions conflict even within one process, which
    // is what lets these tests play both sides.
    #[test]
    fn ofd_locks_conflict_between_descriptions() {
        let d = scratch("ofd");
        let f = d.join("lock");
        let a = open_inheritable(&f, Kind::Exclusive).unwrap();
        let b = open_inheritable(&f, Kind::Shared).unwrap();
        let c = open_inheritable(&f, Kind::Shared).unwrap();
        lock_ofd(&a, Kind::Exclusive, Wait::No).unwrap();
        assert_eq!(lock_ofd(&b, Kind::Shared, Wait::No), Err(OfdError::Busy));
        let start = Instant::now();
        assert_eq!(
            lock_ofd(&b, Kind::Shared, Wait::For(Duration::from_millis(50))),
            Err(OfdError::TimedOut)
        );
        assert!(
            start.elapsed() >= Duration::from_millis(50),
            "{:?}",
            start.elapsed()
        );
        drop(a);
        lock_ofd(&b, Kind::Shared, Wait::No).unwrap();
        lock_ofd(&c, Kind::Shared, Wait::For(Duration::from_millis(50))).unwrap();
        let a = open_inheritable(&f, Kind::Exclusive).unwrap();
        assert_eq!(lock_ofd(&a, Kind::Exclusive, Wait::No), Err(OfdError::Busy));
        drop((b, c));
        lock_ofd(&a, Kind::Exclusive, Wait::Forever).unwrap();
        // The same description may take its own lock again.
        lock_ofd(&a, Kind::Exclusive, Wait::No).unwrap();
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn open_creates_for_both_kinds() {
        let d = scratch("open");
        drop(open_inheritable(&d.join("r"), Kind::Shared).unwrap());
        drop(open_inheritable(&d.join("w"), Kind::Exclusive).unwrap());
        assert!(d.join("r").is_file() && d.join("w").is_file());
        let e = open_inheritable(&d.join("no/such"), Kind::Shared).unwrap_err();
        assert_eq!((e.op, e.errno), ("create", Errno::ENOENT));
        let e = open_inheritable(&d.join("no/such"), Kind::Exclusive).unwrap_err();
        assert_eq!((e.op, e.errno), ("open for writing", Errno::ENOENT));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
