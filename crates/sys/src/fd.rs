//! Raw file descriptors: `open`/`openat` that return an owned fd (nix 0.29 returns a bare
//! number), borrowing fds a program inherited by number (a notification fd, a
//! controlling terminal given with `-d`), and writing to one.

#![allow(unsafe_code)]

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, fcntl};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// Wrap an fd that a system call just returned to us.
///
/// # Safety
/// `fd` must be fresh from a successful `open`/`openat`/`dup`/`socket` call, owned by
/// nothing else, and its raw number must not be closed elsewhere afterwards.
pub(crate) unsafe fn own(fd: RawFd) -> OwnedFd {
    // SAFETY: the caller guarantees fd is open and owned by nobody else.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// open(2), as `nix::fcntl::open`, returning an owned fd.
pub fn open<P: ?Sized + nix::NixPath>(
    path: &P,
    flags: nix::fcntl::OFlag,
    mode: nix::sys::stat::Mode,
) -> Result<OwnedFd, Errno> {
    let fd = nix::fcntl::open(path, flags, mode)?;
    // SAFETY: open just returned fd; nothing else knows it.
    Ok(unsafe { own(fd) })
}

/// openat(2), as `nix::fcntl::openat`, returning an owned fd.
pub fn openat<P: ?Sized + nix::NixPath>(
    dir: impl AsFd,
    path: &P,
    flags: nix::fcntl::OFlag,
    mode: nix::sys::stat::Mode,
) -> Result<OwnedFd, Errno> {
    let fd = nix::fcntl::openat(Some(dir.as_fd().as_raw_fd()), path, flags, mode)?;
    // SAFETY: openat just returned fd; nothing else knows it.
    Ok(unsafe { own(fd) })
}

/// accept4(2) on a listening socket, returning the connection as an owned fd.
pub fn accept(listen: BorrowedFd, flags: nix::sys::socket::SockFlag) -> Result<OwnedFd, Errno> {
    let fd = nix::sys::socket::accept4(listen.as_raw_fd(), flags)?;
    // SAFETY: accept4 just returned fd; nothing else knows it.
    Ok(unsafe { own(fd) })
}

/// Read at most `max` bytes of the file at `path`, as s6's clients do: opened
/// non-blocking, so a FIFO planted there can never hang the reader; anything but a
/// regular file reads as empty (what a FIFO without a writer gives s6).
pub fn read_regular(path: &std::path::Path, max: usize) -> Result<Vec<u8>, Errno> {
    use nix::fcntl::OFlag;
    let fd = open(
        path,
        OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )?;
    let st = nix::sys::stat::fstat(fd.as_raw_fd())?;
    let mut out = Vec::new();
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Ok(out);
    }
    out.resize(max, 0);
    let mut got = 0;
    while got < max {
        match nix::unistd::read(fd.as_raw_fd(), &mut out[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
    out.truncate(got);
    Ok(out)
}

/// Write all of `data` to a blocking fd, retrying after EINTR and short writes.
pub fn write_all(fd: impl AsFd, mut data: &[u8]) -> Result<(), Errno> {
    while !data.is_empty() {
        match nix::unistd::write(&fd, data) {
            Ok(n) => data = &data[n..],
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

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
    use super::*;

    #[test]
    fn bad_fd_is_ebadf() {
        assert_eq!(write_raw(987, b"x"), Err(Errno::EBADF));
    }

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
