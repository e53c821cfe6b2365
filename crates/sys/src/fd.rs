//! Raw file descriptors: taking ownership of fds returned by nix 0.29 calls (`open`,
//! `openat`, …), and writing to a descriptor known only by its number (e.g. a
//! readiness-notification fd given on the command line).

#![allow(unsafe_code)]

use nix::errno::Errno;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// Wrap an fd that a system call just returned to us.
///
/// Only for fds fresh from a successful `open`/`openat`/`dup`/`socket` that nothing else
/// owns; the caller must not close the raw number itself afterwards.
pub fn own(fd: RawFd) -> OwnedFd {
    // SAFETY: per the contract above, fd is valid, open and owned by nobody else.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// Like `own`, for a syscall result.
pub fn own_result(r: Result<RawFd, Errno>) -> Result<OwnedFd, Errno> {
    r.map(own)
}

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
