//! Raw file descriptors: `open`/`openat` that return an owned fd (nix 0.29 returns a bare
//! number), borrowing fds a program inherited by number (0-2 safely, any other only
//! under the caller's promise), and one call on a number (a notification fd, a
//! controlling terminal given with `-d`) without a borrow.

#![allow(unsafe_code)]

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, fcntl};
use nix::sys::stat::Mode;
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

/// open(2), as `nix::fcntl::open`, returning an owned fd. The bare system call: musl's
/// open() follows every `O_CLOEXEC` open with an fcntl(F_SETFD) for kernels older than
/// 2.6.23, one system call more per file for a client that reads many (tend-monit's
/// XML reads a dozen files per service).
pub fn open<P: ?Sized + nix::NixPath>(
    path: &P,
    flags: nix::fcntl::OFlag,
    mode: nix::sys::stat::Mode,
) -> Result<OwnedFd, Errno> {
    openat_raw(libc::AT_FDCWD, path, flags, mode)
}

/// openat(2), as `nix::fcntl::openat`, returning an owned fd (the bare system call, as
/// `open`).
pub fn openat<P: ?Sized + nix::NixPath>(
    dir: impl AsFd,
    path: &P,
    flags: nix::fcntl::OFlag,
    mode: nix::sys::stat::Mode,
) -> Result<OwnedFd, Errno> {
    openat_raw(dir.as_fd().as_raw_fd(), path, flags, mode)
}

fn openat_raw<P: ?Sized + nix::NixPath>(
    dir: RawFd,
    path: &P,
    flags: nix::fcntl::OFlag,
    mode: nix::sys::stat::Mode,
) -> Result<OwnedFd, Errno> {
    // EINTR is returned, as by nix: a blocking FIFO open may be meant to be interrupted.
    let fd = path.with_nix_path(|p| {
        // SAFETY: p is a NUL-terminated path that outlives the call; openat takes no
        // other pointer.
        Errno::result(unsafe {
            libc::syscall(
                libc::SYS_openat,
                dir,
                p.as_ptr(),
                flags.bits(),
                mode.bits() as libc::c_uint,
            )
        })
    })??;
    // SAFETY: openat just returned fd; nothing else knows it.
    Ok(unsafe { own(fd as RawFd) })
}

/// accept4(2) on a listening socket, returning the connection as an owned fd.
pub fn accept(listen: BorrowedFd, flags: nix::sys::socket::SockFlag) -> Result<OwnedFd, Errno> {
    let fd = nix::sys::socket::accept4(listen.as_raw_fd(), flags)?;
    // SAFETY: accept4 just returned fd; nothing else knows it.
    Ok(unsafe { own(fd) })
}

/// Why a small file (a setting, a status, a verdict) was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotRead {
    /// open, fstat or read failed (ENOENT: there is no such file).
    Sys(Errno),
    /// Not a regular file (which kind: `a FIFO`, `a directory`...): never read.
    NotAFile(&'static str),
}

impl NotRead {
    /// What is wrong, after `PATH: ` in a message.
    pub fn describe(self) -> std::borrow::Cow<'static, str> {
        match self {
            NotRead::Sys(e) => e.desc().into(),
            NotRead::NotAFile(kind) => format!("{kind}, not a regular file").into(),
        }
    }
}

/// Read the start of the file at `path` into `buf`: how many bytes it gave (at most
/// `buf.len()`; the caller asks for one byte more than it accepts to see that a file is
/// too long). The one safe way to read a small file someone else may have planted:
/// opened non-blocking and checked with fstat before any read, so a FIFO or a device can
/// neither hang the reader nor feed it endless data. Allocates nothing (a supervisor
/// re-reads its settings at every start of ./run).
pub fn read_regular_into<P: ?Sized + nix::NixPath>(
    path: &P,
    buf: &mut [u8],
) -> Result<usize, NotRead> {
    use nix::fcntl::OFlag;
    let fd = match open(
        path,
        OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::EISDIR) => return Err(NotRead::NotAFile("a directory")),
        Err(e) => return Err(NotRead::Sys(e)),
    };
    let st = nix::sys::stat::fstat(fd.as_raw_fd()).map_err(NotRead::Sys)?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(NotRead::NotAFile(crate::diagnose::kind_of(st.st_mode)));
    }
    let mut got = 0;
    while got < buf.len() {
        match nix::unistd::read(fd.as_raw_fd(), &mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(Errno::EINTR) => {}
            Err(e) => return Err(NotRead::Sys(e)),
        }
    }
    Ok(got)
}

/// Read at most `max` bytes of the file at `path` (`read_regular_into`, into a Vec).
pub fn read_regular(path: &std::path::Path, max: usize) -> Result<Vec<u8>, NotRead> {
    let mut out = vec![0; max];
    let got = read_regular_into(path, &mut out)?;
    out.truncate(got);
    Ok(out)
}

/// Read a whole procfs file into `buf` (cleared, grown as needed; its room is kept for
/// the next file): open, usually one read, close. A procfs read shorter than asked and
/// shorter than half a page is the file's end, so no read is spent to see 0: the kernel
/// fills a reader's buffer from a page-sized one (seq_file) and stops early only when
/// that page is full or the file ends. Not for other file systems.
pub fn read_proc_into<P: ?Sized + nix::NixPath>(path: &P, buf: &mut Vec<u8>) -> Result<(), Errno> {
    use nix::fcntl::OFlag;
    let fd = open(path, OFlag::O_RDONLY | OFlag::O_CLOEXEC, Mode::empty())?;
    buf.clear();
    loop {
        if buf.capacity() - buf.len() < 4096 {
            buf.reserve(4096);
        }
        let len = buf.len();
        let room = buf.capacity() - len;
        // SAFETY: read(2) writes at most `room` bytes into the spare capacity, which is
        // exactly `room` bytes long; only the bytes it reports are then counted as set.
        let n = unsafe {
            libc::read(
                fd.as_raw_fd(),
                buf.as_mut_ptr().add(len).cast::<libc::c_void>(),
                room,
            )
        };
        match Errno::result(n) {
            Ok(n) => {
                let n = n as usize;
                // SAFETY: the kernel initialised these n bytes.
                unsafe { buf.set_len(len + n) };
                if n == 0 || (n < room && n < 2048) {
                    return Ok(());
                }
            }
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
}

/// Open each of `fds` (standard fds, in increasing order) that is closed on /dev/null, as
/// skalibs' fd_sanitize: for a daemon that must not have a socket or file it opens land
/// on fd 0 or 1 and be read or written as if it were stdin or stdout (tend-svscan: 0-2,
/// as s6-svscan; tend-log: 0 and 1, as s6-log). Chain tools never call this.
pub fn open_closed_on_dev_null(fds: &[RawFd]) -> Result<(), Errno> {
    for &fd in fds {
        if fcntl(fd, FcntlArg::F_GETFD) == Err(Errno::EBADF) {
            let null = nix::fcntl::open("/dev/null", nix::fcntl::OFlag::O_RDWR, Mode::empty())?;
            if null != fd {
                // A lower fd was closed too and not asked for: leave it as it was.
                let _ = nix::unistd::close(null);
                return Err(Errno::EBADF);
            }
        }
    }
    Ok(())
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

/// Whether the inherited fd `fd` is open: Ok, or EBADF (a negative number too). What a
/// program checks about a notification fd before it opens anything that could take the
/// number.
pub fn check_open(fd: RawFd) -> Result<(), Errno> {
    if fd < 0 {
        return Err(Errno::EBADF);
    }
    fcntl(fd, FcntlArg::F_GETFD).map(drop)
}

/// Borrow one of the standard fds 0, 1 and 2, after checking that it is open (EBADF if
/// not, or for any other number).
///
/// Safe, as rustix's `stdio` is with std: these three numbers are the process's own for
/// its whole life. No value owns them, and tend's programs never close one by number;
/// where one is given up, something is put in its place with dup2 (tend-ipcserverd's
/// fd 0), so the number stays open. Other fds need [`inherited`].
pub fn stdio(fd: RawFd) -> Result<BorrowedFd<'static>, Errno> {
    if !(0..=2).contains(&fd) {
        return Err(Errno::EBADF);
    }
    check_open(fd)?;
    // SAFETY: fd is 0, 1 or 2 and open (F_GETFD succeeded); see above for why it stays so.
    Ok(unsafe { BorrowedFd::borrow_raw(fd) })
}

/// Borrow an inherited fd by number, after checking that it is open (EBADF if not).
///
/// # Safety
/// As std's `BorrowedFd::borrow_raw`: the fd must stay open for all of `'a`, the lifetime
/// the caller chooses, and no value of the program may own it (no `OwnedFd` or `File`
/// that could close it meanwhile). For fds 0-2 use the safe [`stdio`]; for one system
/// call on a number, [`write_raw`], [`write_all_raw`] and [`set_foreground`] need no borrow.
pub unsafe fn inherited<'a>(fd: RawFd) -> Result<BorrowedFd<'a>, Errno> {
    check_open(fd)?;
    // SAFETY: F_GETFD just succeeded, so fd is open; the caller keeps it open for 'a.
    Ok(unsafe { BorrowedFd::borrow_raw(fd) })
}

/// Write all of `data` to the inherited fd numbered `fd` (a notification fd), retrying
/// after EINTR and short writes. EBADF if it is not open.
pub fn write_all_raw(fd: RawFd, mut data: &[u8]) -> Result<(), Errno> {
    while !data.is_empty() {
        match write_raw(fd, data) {
            Ok(n) => data = &data[n..],
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// tcsetpgrp(3) on the terminal open as fd number `fd` (a controlling terminal named by
/// number, tend-setsid's `-d`): make `pgrp` its foreground process group.
pub fn set_foreground(fd: RawFd, pgrp: nix::unistd::Pid) -> Result<(), Errno> {
    // SAFETY: tcsetpgrp reads no memory of ours; a bad fd makes it fail with EBADF.
    Errno::result(unsafe { libc::tcsetpgrp(fd, pgrp.as_raw()) }).map(drop)
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
            // SAFETY: f owns raw and lives to the end of the test, past the borrow.
            std::os::fd::AsRawFd::as_raw_fd(&unsafe { inherited(raw) }.unwrap()),
            raw
        );
        assert_eq!(check_open(raw), Ok(()));
        assert_eq!(check_open(-1), Err(Errno::EBADF));
        assert_eq!(check_open(1 << 20), Err(Errno::EBADF));
        assert_eq!(stdio(raw).err(), Some(Errno::EBADF));
        assert_eq!(stdio(-1).err(), Some(Errno::EBADF));
    }

    #[test]
    fn open_is_close_on_exec_and_says_why_not() {
        use nix::fcntl::OFlag;
        let fd = open(
            "/dev/null",
            OFlag::O_RDONLY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        let flags = fcntl(fd.as_raw_fd(), FcntlArg::F_GETFD).unwrap();
        assert_eq!(flags & libc::FD_CLOEXEC, libc::FD_CLOEXEC);
        assert_eq!(
            open("/nonexistent/x", OFlag::O_RDONLY, Mode::empty()).err(),
            Some(Errno::ENOENT)
        );
        let dir = open("/proc", OFlag::O_RDONLY | OFlag::O_DIRECTORY, Mode::empty()).unwrap();
        assert!(openat(&dir, "version", OFlag::O_RDONLY, Mode::empty()).is_ok());
    }

    #[test]
    fn proc_files_read_whole_small_and_larger_than_a_page() {
        let mut buf = Vec::new();
        for path in ["/proc/version", "/proc/cpuinfo", "/proc/self/cmdline"] {
            read_proc_into(path, &mut buf).unwrap();
            assert_eq!(buf, std::fs::read(path).unwrap(), "{path}");
        }
        // Many pages of short records (seq_file stops at each full page): every byte.
        read_proc_into("/proc/kallsyms", &mut buf).unwrap();
        assert!(buf.len() > 64 * 1024);
        assert_eq!(buf, std::fs::read("/proc/kallsyms").unwrap());
        assert_eq!(read_proc_into("/proc/0/stat", &mut buf), Err(Errno::ENOENT));
    }
}
