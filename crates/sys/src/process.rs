//! Starting child processes: a plain `fork`, and `spawn`, which forks and execs with a
//! fixed recipe (new session, fd moves, cwd, signal reset) and reports exec failure
//! through a close-on-exec pipe, so the parent learns the errno synchronously.

#![allow(unsafe_code)]

use crate::exec::{Prepared, pointers};
use nix::errno::Errno;
use nix::unistd::Pid;
use std::ffi::CString;
use std::os::fd::{AsRawFd, RawFd};

/// Which side of a fork we are on.
pub enum Forked {
    Parent(Pid),
    Child,
}

/// fork(2). The caller must be single-threaded (every tend daemon is) so the child may
/// use any function, not only async-signal-safe ones.
pub fn fork() -> Result<Forked, Errno> {
    // SAFETY: tend's long-lived programs are single-threaded; the child inherits no
    // locks held by other threads.
    match unsafe { nix::unistd::fork() }? {
        nix::unistd::ForkResult::Parent { child } => Ok(Forked::Parent(child)),
        nix::unistd::ForkResult::Child => Ok(Forked::Child),
    }
}

/// Leave the process now, without running destructors or flushing stdio (for children).
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit is always safe to call; it never returns.
    unsafe { libc::_exit(code) }
}

/// How to start a child.
#[derive(Debug, Default)]
pub struct SpawnOptions {
    /// Call setsid() in the child (service becomes session and group leader).
    pub setsid: bool,
    /// Put the child in a new process group of its own.
    pub setpgid: bool,
    /// After `setsid`/`setpgid`, make the child's process group the foreground group of
    /// the terminal open on this fd (tcsetpgrp), as a shell does for a job: the child then
    /// gets the terminal's ^C and ^Z, its parent does not. Ignored when the fd is not a
    /// terminal, or not this session's (ENOTTY, ENXIO, EBADF, EINVAL, EPERM). The parent
    /// must have SIGTTOU blocked when it spawns (a background group calling tcsetpgrp is
    /// otherwise stopped); the child's mask is reset after this step.
    pub foreground: Option<RawFd>,
    /// Change directory before exec.
    pub cwd: Option<CString>,
    /// (source fd, target fd) pairs; every source is moved as if all dup2s happened at
    /// once, so sources and targets may overlap in any order.
    pub fds: Vec<(RawFd, RawFd)>,
    /// Fds to close in the child (after the moves).
    pub close: Vec<RawFd>,
    /// Take an open-file-description lock before exec and hand it to the program.
    pub lock: Option<ServiceLock>,
}

/// s6's `lock-fd`: the child opens `path`, takes a whole-file OFD write lock on it (so the
/// lock is shared with every descendant that inherits the fd, unlike a per-process fcntl
/// lock), and gets it on fd `fd`. If the lock is held by a previous instance, the child
/// writes `warning` to stderr, stops reporting to the parent (which then sees the spawn as
/// successful) and blocks until the lock is free.
#[derive(Debug, Clone)]
pub struct ServiceLock {
    pub path: CString,
    pub fd: RawFd,
    pub warning: Vec<u8>,
}

/// Why a spawn failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpawnError {
    /// pipe or fork failed: a system problem, retry later.
    Fork(Errno),
    /// The child could not exec the program (errno from execve, chdir or dup2).
    Exec(Errno),
}

/// Fork and exec `prog`. Returns the child's pid once it has exec'd, or the reason it
/// could not. Between fork and exec the child makes only async-signal-safe calls.
pub fn spawn(prog: &Prepared, opts: &SpawnOptions) -> Result<Pid, SpawnError> {
    let argv = pointers(&prog.argv);
    let envp = prog.envp_pointers();
    let (rd, wr) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(SpawnError::Fork)?;
    let cwd_ptr = opts.cwd.as_ref().map(|c| c.as_ptr());
    let wr_fd = wr.as_raw_fd();
    // SAFETY: the child only calls async-signal-safe functions (setsid, tcsetpgrp, fcntl, dup2,
    // close, chdir, sigaction, sigprocmask, execve, write, _exit) on memory prepared
    // before the fork, then execs or exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(SpawnError::Fork(Errno::last()));
    }
    if pid == 0 {
        // SAFETY: see above; child_exec never returns.
        unsafe { child_exec(opts, cwd_ptr, wr_fd, &argv, &envp, &prog.candidates) }
    }
    drop(wr);
    let mut buf = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match nix::unistd::read(rd.as_raw_fd(), &mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(Errno::EINTR) => continue,
            Err(_) => break,
        }
    }
    let pid = Pid::from_raw(pid);
    if got == 4 {
        let errno = Errno::from_raw(i32::from_ne_bytes(buf));
        let _ = nix::sys::wait::waitpid(pid, None);
        return Err(SpawnError::Exec(errno));
    }
    Ok(pid)
}

/// The child half of spawn.
///
/// # Safety
/// Must only be called in a freshly forked child; it never returns.
unsafe fn child_exec(
    opts: &SpawnOptions,
    cwd: Option<*const libc::c_char>,
    report: RawFd,
    argv: &[*const libc::c_char],
    envp: &[*const libc::c_char],
    candidates: &[CString],
) -> ! {
    let fail = |e: i32| -> ! {
        let b = e.to_ne_bytes();
        // SAFETY: write and _exit are async-signal-safe; report is our pipe.
        unsafe {
            libc::write(report, b.as_ptr().cast(), 4);
            libc::_exit(if e == libc::ENOENT { 127 } else { 126 })
        }
    };
    // SAFETY: every call below is async-signal-safe and operates on plain integers or
    // pointers into memory prepared before the fork.
    unsafe {
        if opts.setsid && libc::setsid() < 0 {
            fail(*libc::__errno_location());
        }
        if opts.setpgid && libc::setpgid(0, 0) < 0 {
            fail(*libc::__errno_location());
        }
        if let Some(tty) = opts.foreground
            && libc::tcsetpgrp(tty, libc::getpgrp()) < 0
        {
            match *libc::__errno_location() {
                libc::ENOTTY | libc::ENXIO | libc::EBADF | libc::EINVAL | libc::EPERM => {}
                e => fail(e),
            }
        }
        if let Some(lock) = &opts.lock {
            let fd = libc::open(
                lock.path.as_ptr(),
                libc::O_RDWR | libc::O_CREAT | libc::O_NONBLOCK | libc::O_CLOEXEC,
                0o644,
            );
            if fd < 0 {
                fail(*libc::__errno_location());
            }
            let mut fl: libc::flock = std::mem::zeroed();
            fl.l_type = libc::F_WRLCK as i16;
            fl.l_whence = libc::SEEK_SET as i16;
            if libc::fcntl(fd, libc::F_OFD_SETLK, &fl) < 0 {
                let e = *libc::__errno_location();
                if e != libc::EAGAIN && e != libc::EACCES {
                    fail(e);
                }
                libc::write(2, lock.warning.as_ptr().cast(), lock.warning.len());
                libc::close(report);
                while libc::fcntl(fd, libc::F_OFD_SETLKW, &fl) < 0 {
                    if *libc::__errno_location() != libc::EINTR {
                        libc::_exit(111);
                    }
                }
            }
            if libc::dup2(fd, lock.fd) < 0 {
                fail(*libc::__errno_location());
            }
            if fd != lock.fd {
                libc::close(fd);
            }
        }
        // Move sources out of the way first (above every target), then into place.
        let mut moved = [-1 as RawFd; 16];
        for (i, (src, _)) in opts.fds.iter().enumerate().take(16) {
            let fd = libc::fcntl(*src, libc::F_DUPFD_CLOEXEC, 64);
            if fd < 0 {
                fail(*libc::__errno_location());
            }
            moved[i] = fd;
        }
        for (i, (_, dst)) in opts.fds.iter().enumerate().take(16) {
            if libc::dup2(moved[i], *dst) < 0 {
                fail(*libc::__errno_location());
            }
        }
        for fd in &opts.close {
            if !opts.fds.iter().any(|(_, d)| d == fd) {
                libc::close(*fd);
            }
        }
        if let Some(dir) = cwd
            && libc::chdir(dir) < 0
        {
            fail(*libc::__errno_location());
        }
        reset_signals_raw();
    }
    let e = crate::exec::execve_prepared(argv, envp, candidates);
    fail(e as i32)
}

/// Reap one dead child without blocking: Some((pid, raw wait status)), or None when no
/// child has changed state (or there are no children).
pub fn reap_any() -> Option<(i32, i32)> {
    let mut status: libc::c_int = 0;
    // SAFETY: waitpid writes only to our local status.
    let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
    if pid > 0 { Some((pid, status)) } else { None }
}

/// Restore default dispositions and an empty mask (async-signal-safe).
///
/// # Safety
/// Only for a child about to exec.
pub(crate) unsafe fn reset_signals_raw() {
    // SAFETY: sigaction/sigprocmask with stack-local structures are async-signal-safe.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = libc::SIG_DFL;
        for sig in 1..libc::SIGRTMIN() {
            if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                libc::sigaction(sig, &sa, std::ptr::null_mut());
            }
        }
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
    }
}

/// Restore default signal dispositions and unblock everything (for a forked child that
/// will not exec, or just before an exec in the current process).
pub fn reset_signals() {
    // SAFETY: plain libc calls on local structures.
    unsafe { reset_signals_raw() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    #[test]
    fn reports_exec_failure() {
        let p = Prepared::with_current_env(&[OsString::from("/nonexistent/prog")]).unwrap();
        assert_eq!(
            spawn(&p, &SpawnOptions::default()),
            Err(SpawnError::Exec(Errno::ENOENT))
        );
    }

    #[test]
    fn spawns_and_reaps() {
        let p = Prepared::with_current_env(&[OsString::from("true")]).unwrap();
        let pid = spawn(
            &p,
            &SpawnOptions {
                setsid: true,
                ..Default::default()
            },
        )
        .unwrap();
        let st = nix::sys::wait::waitpid(pid, None).unwrap();
        assert_eq!(st, nix::sys::wait::WaitStatus::Exited(pid, 0));
    }
}
