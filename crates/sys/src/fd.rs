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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_and_closed() {
        let f = std::fs::File::open("/dev/null").unwrap();
        let raw = std::os::fd::AsRawFd::as_raw_fd(&f);
        assert_eq!(
            std::os::fd::AsRawFd::as_raw_fd(&inherited(raw).unwrap()),
            raw
        );
        assert_eq!(inherited(-1).err(), Some(Errno::EBADF));
        assert_eq!(inherited(1 << 20).err(), Some(Errno::EBADF));
    }
}
