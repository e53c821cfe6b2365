//! "Is a supervisor running here?" — a POSIX fcntl write lock on `supervise/lock` (or
//! `.s6-svscan/lock`), held for the owner's lifetime. Clients probe it with F_GETLK.
//! Never flock(2): it is invisible to F_GETLK, so s6's clients would not see it.

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl, open};
use nix::sys::stat::Mode;
use std::os::fd::{AsRawFd, OwnedFd};
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
    // Non-blocking: a FIFO in place of the lock must not hang a client.
    let fd = match open(
        path,
        OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => own(fd),
        Err(Errno::ENOENT) => return Ok(false),
        Err(e) => return Err(e),
    };
    let mut fl = whole_file(libc::F_RDLCK as i16);
    fcntl(fd.as_raw_fd(), FcntlArg::F_GETLK(&mut fl))?;
    Ok(fl.l_type != libc::F_UNLCK as i16)
}
