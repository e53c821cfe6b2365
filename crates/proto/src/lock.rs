//! "Is a supervisor running here?" — a POSIX fcntl write lock on `supervise/lock` (or
//! `.s6-svscan/lock`), held for the owner's lifetime. Clients probe it with F_GETLK.
//! Never flock(2): it is invisible to F_GETLK, so s6's clients would not see it.
//!
//! Also the open-file-description locks that tend-setlock hands to the program it execs
//! (s6-setlock's job; tend-supervise's `lock-fd` takes the same kind in crates/sys).

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl, open};
use nix::sys::stat::Mode;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::Path;
use tend_sys::fd::own;

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
    .map(own)
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
    let fd = match open(path, OFlag::O_RDONLY | OFlag::O_CLOEXEC, Mode::empty()) {
        Ok(fd) => own(fd),
        Err(Errno::ENOENT) => return Ok(false),
        Err(e) => return Err(e),
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

/// Open `path` for a lock of `kind` as s6-setlock does, creating it (mode 0666 minus the
/// umask) if missing: for writing, or for reading after creating it. The fd is
/// inheritable: it carries the lock into the program exec'd next. The error's `op` is
/// `open for writing`, `open for reading` or `create`.
pub fn open_inheritable(path: &Path, kind: Kind) -> Result<OwnedFd, tend_sys::Error> {
    let create = OFlag::O_WRONLY | OFlag::O_NONBLOCK | OFlag::O_CREAT;
    let mode = Mode::from_bits_truncate(0o666);
    match kind {
        Kind::Exclusive => open(path, create, mode)
            .map(own)
            .map_err(|e| tend_sys::Error::at("open for writing", path, e)),
        Kind::Shared => {
            let read = OFlag::O_RDONLY | OFlag::O_NONBLOCK;
            match open(path, read, Mode::empty()) {
                Ok(fd) => return Ok(own(fd)),
                Err(Errno::ENOENT) => {}
                Err(e) => return Err(tend_sys::Error::at("open for reading", path, e)),
            }
            drop(
                open(path, create | OFlag::O_CLOEXEC, mode)
                    .map(own)
                    .map_err(|e| tend_sys::Error::at("create", path, e))?,
            );
            open(path, read, Mode::empty())
                .map(own)
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
/// same file (the kernel keeps both in one table). A wait with a limit forks a helper,
/// so the caller must be single-threaded.
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
            Err(OfdError::Busy) => lock_ofd_for(fd, &fl, limit),
            other => other,
        },
    }
}

/// A blocking lock with a deadline, without a signal handler: a child blocks in
/// F_OFD_SETLKW on the shared open file description (so the lock it takes is ours) and
/// reports through a pipe; at the deadline it is killed, and one last try decides.
fn lock_ofd_for(
    fd: &OwnedFd,
    fl: &libc::flock,
    limit: std::time::Duration,
) -> Result<(), OfdError> {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use tend_sys::process::{Forked, exit_now, fork};
    let (r, w) = nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(OfdError::Sys)?;
    let child = match fork().map_err(OfdError::Sys)? {
        Forked::Child => {
            let answer = loop {
                match fcntl(fd.as_raw_fd(), FcntlArg::F_OFD_SETLKW(fl)) {
                    Ok(_) => break 0u8,
                    Err(Errno::EINTR) => {}
                    Err(e) => break e as i32 as u8,
                }
            };
            let _ = nix::unistd::write(&w, &[answer]);
            exit_now(0)
        }
        Forked::Parent(pid) => pid,
    };
    drop(w);
    let deadline = std::time::Instant::now() + limit;
    let answer = loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let ms = PollTimeout::try_from(left.as_millis().min(i32::MAX as u128) as i32)
            .unwrap_or(PollTimeout::MAX);
        let mut fds = [PollFd::new(r.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, ms) {
            Ok(0) => break None,
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
    if answer.is_none() {
        let _ = nix::sys::signal::kill(child, nix::sys::signal::Signal::SIGKILL);
    }
    let _ = nix::sys::wait::waitpid(child, None);
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
