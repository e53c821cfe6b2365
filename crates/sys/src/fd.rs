//! Ownership of raw fds returned by nix 0.29 calls (`open`, `openat`, …).

#![allow(unsafe_code)]

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
pub fn own_result(r: Result<RawFd, nix::errno::Errno>) -> Result<OwnedFd, nix::errno::Errno> {
    r.map(own)
}
