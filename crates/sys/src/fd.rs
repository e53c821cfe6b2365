//! Borrowing file descriptors a program inherited by number (a notification fd, a
//! controlling terminal given with `-d`).

#![allow(unsafe_code)]

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, fcntl};
use std::os::fd::{BorrowedFd, RawFd};

/// Borrow an inherited fd by number, after checking that it is open (EBADF if not).
/// The caller must not close it while the borrow is used; tend's chain-loaders use
/// such fds only until they exec or exit.
pub fn inherited(fd: RawFd) -> Result<BorrowedFd<'static>, Errno> {
    if fd < 0 {
        return Err(Errno::EBADF);
    }
    fcntl(fd, FcntlArg::F_GETFD)?;
    // SAFETY: F_GETFD just succeeded, so fd is open; nothing in the process closes it
    // while the borrow is in use (the caller execs or exits first).
    Ok(unsafe { BorrowedFd::borrow_raw(fd) })
}
