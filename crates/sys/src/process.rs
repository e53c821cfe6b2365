//! Starting child processes: a plain `fork`, and `spawn`, which forks and execs with a
//! fixed recipe (new session, fd moves, cwd, signal reset) and reports exec failure
//! through a close-on-exec pipe, so the parent learns the errno synchronously.

#![allow(unsafe_code)]

use crate::exec::{Prepared, Ready, pointers};
use nix::errno::Errno;
use nix::unistd::Pid;
use std::ffi::CString;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};

/// Which side of a fork we are on.
pub enum Forked {
    Parent(Pid),
    Child,
}

/// fork(2), for a child that goes on running Rust code (not only async-signal-safe
/// calls). That is sound only while the process has one thread, so it is checked here
/// (the thread count in `/proc/self/stat`) at each call, not assumed: a process with
/// other threads, or without /proc, gets EAGAIN or the errno of the read, and no child.
pub fn fork() -> Result<Forked, Errno> {
    if threads()? != 1 {
        return Err(Errno::EAGAIN);
    }
    // SAFETY: the process has one thread (checked just above, and only this thread could
    // have started another since), so the child inherits no lock another thread holds.
    match unsafe { nix::unistd::fork() }? {
        nix::unistd::ForkResult::Parent { child } => Ok(Forked::Parent(child)),
        nix::unistd::ForkResult::Child => Ok(Forked::Child),
    }
}

/// The number of threads of this process: field 20 of `/proc/self/stat`, counted after
/// the command name's closing parenthesis (the name itself may hold spaces).
fn threads() -> Result<u64, Errno> {
    let stat = crate::fd::read_regular(std::path::Path::new("/proc/self/stat"), 1024).map_err(
        |e| match e {
            crate::fd::NotRead::Sys(e) => e,
            crate::fd::NotRead::NotAFile(_) => Errno::EIO,
        },
    )?;
    let after_name = stat.iter().rposition(|&b| b == b')').ok_or(Errno::EIO)?;
    std::str::from_utf8(&stat[after_name + 1..])
        .ok()
        .and_then(|rest| rest.split_ascii_whitespace().nth(20 - 3))
        .and_then(|n| n.parse().ok())
        .ok_or(Errno::EIO)
}

/// Fork a child that waits for the OFD lock `fl` on `fd` (F_OFD_SETLKW, so the lock it
/// takes belongs to the open file description it shares with us), then writes one byte
/// to `report`, 0 or the errno, and exits. Kill it to give up. The child makes only
/// async-signal-safe calls, so this is sound in any process.
pub fn fork_lock_waiter(
    fd: BorrowedFd,
    fl: &libc::flock,
    report: BorrowedFd,
) -> Result<Pid, Errno> {
    let (fd, report) = (fd.as_raw_fd(), report.as_raw_fd());
    // SAFETY: the child below calls only fcntl, write and _exit (async-signal-safe) on
    // fds and a flock that stay valid in it.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(Errno::last());
    }
    if pid == 0 {
        let answer = loop {
            // SAFETY: fl points to a live flock; fcntl is async-signal-safe.
            if unsafe { libc::fcntl(fd, libc::F_OFD_SETLKW, fl) } == 0 {
                break 0u8;
            }
            match Errno::last_raw() {
                libc::EINTR => {}
                e => break e as u8,
            }
        };
        // SAFETY: answer is one byte on our stack; write is async-signal-safe.
        unsafe { libc::write(report, (&answer as *const u8).cast(), 1) };
        exit_now(0)
    }
    Ok(Pid::from_raw(pid))
}

/// Leave the process now, without running destructors or flushing stdio (for children).
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit is always safe to call; it never returns.
    unsafe { libc::_exit(code) }
}

/// The most fd moves one spawn takes: the child moves them through a stack array (it
/// may not allocate). `spawn` refuses more with E2BIG before forking.
pub const MAX_FD_MOVES: usize = 16;

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
    /// After `setsid`, make the terminal open on this fd the session's controlling
    /// terminal (TIOCSCTTY), as a login does on a pty's slave. Unlike `foreground`, a
    /// failure here fails the spawn.
    pub ctty: Option<RawFd>,
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
    /// pipe or fork failed (a system problem, retry later), or E2BIG: more than
    /// [`MAX_FD_MOVES`] fd moves were asked for (nothing was forked).
    Fork(Errno),
    /// The child could not exec the program (errno from execve, chdir or dup2).
    Exec(Errno),
}

/// Fork and exec `prog`. Returns the child's pid once it has exec'd, or the reason it
/// could not. Between fork and exec the child makes only async-signal-safe calls.
pub fn spawn(prog: &Prepared, opts: &SpawnOptions) -> Result<Pid, SpawnError> {
    spawn_start(prog, opts)?.confirm()
}

/// A spawned child whose exec is not confirmed yet: the caller may do other work while
/// the child execs (a supervisor's bookkeeping of the previous death, issue 28), then
/// learns the outcome from `confirm`, exactly as `spawn` returns it.
#[derive(Debug)]
pub struct Pending {
    pid: Pid,
    report: std::os::fd::OwnedFd,
}

impl Pending {
    /// Wait for the child's exec: its pid, or why it did not exec (it is then reaped).
    pub fn confirm(self) -> Result<Pid, SpawnError> {
        let mut buf = [0u8; 4];
        let mut got = 0;
        while got < 4 {
            match nix::unistd::read(self.report.as_raw_fd(), &mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(Errno::EINTR) => continue,
                Err(_) => break,
            }
        }
        if got == 4 {
            let errno = Errno::from_raw(i32::from_ne_bytes(buf));
            let _ = crate::wait::wait(Some(self.pid));
            return Err(SpawnError::Exec(errno));
        }
        Ok(self.pid)
    }
}

/// The first half of `spawn`: fork the child (which execs `prog` as `spawn`'s does) and
/// return at once; `Pending::confirm` is the second half. The child has its own copy of
/// memory (fork, not vfork), so `prog` and `opts` may go as soon as this returns.
pub fn spawn_start(prog: &Prepared, opts: &SpawnOptions) -> Result<Pending, SpawnError> {
    start_child(prog, opts, false)
}

/// `spawn_start` for a caller that has nothing to do while the child execs (a
/// supervisor's plain start of ./run, which `confirm`s at once): the same child, run as a
/// vfork-style clone (see `spawn_unreported_vfork`), so a tree of 1000 supervisors starting
/// their services pays no page-table copy and no copy-on-write faults. `confirm` then
/// finds the report already written (or the pipe at end of file). With `opts.lock` it
/// forks: that child may wait for the lock, and a clone would hold us until it got it.
pub fn spawn_start_vfork(prog: &Prepared, opts: &SpawnOptions) -> Result<Pending, SpawnError> {
    start_child(prog, opts, opts.lock.is_none())
}

/// The child of `spawn_start` and `spawn_start_vfork`, built once, started by a fork or
/// by a vfork-style clone.
fn start_child(prog: &Prepared, opts: &SpawnOptions, vfork: bool) -> Result<Pending, SpawnError> {
    if opts.fds.len() > MAX_FD_MOVES {
        return Err(SpawnError::Fork(Errno::E2BIG));
    }
    let argv = pointers(&prog.argv);
    let envp = prog.envp_pointers();
    let (rd, wr) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(SpawnError::Fork)?;
    let child = Child {
        opts,
        cwd: opts.cwd.as_ref().map(|c| c.as_ptr()),
        exec: Exec::Arrays {
            argv: &argv,
            envp: &envp,
            candidates: &prog.candidates,
        },
        report: Report::Pipe(wr.as_raw_fd()),
    };
    let pid = if vfork {
        // A supervisor spawns seldom: the pages its child touched are given back after
        // each spawn, the mapping kept. (Unmapping it each time cost more than the
        // fork it replaced saved: the VMA split and merge, and a TLB shootdown of the
        // CPU the child ran on; bench/RESULTS.md, issue 39.)
        let mut kept = KEPT_STACK.lock().unwrap_or_else(|e| e.into_inner());
        if kept.is_none() {
            *kept = Some(CloneStack::new().map_err(SpawnError::Fork)?);
        }
        let Some(stack) = kept.as_ref() else {
            return Err(SpawnError::Fork(Errno::ENOMEM));
        };
        let pid = clone_vfork(&child, stack);
        stack.release();
        pid.map_err(SpawnError::Fork)?
    } else {
        // SAFETY: the child half (Child::exec) only makes async-signal-safe calls on
        // memory prepared before the fork, then execs or _exits; the parent goes on.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(SpawnError::Fork(Errno::last()));
        }
        if pid == 0 {
            // SAFETY: we are the freshly forked child; exec never returns.
            unsafe { child.exec() }
        }
        Pid::from_raw(pid)
    };
    drop(wr);
    Ok(Pending { pid, report: rd })
}

/// Fork and exec without waiting for the exec (s6-svscan's way of starting a
/// supervisor): the parent returns as soon as it has forked. Only `opts.fds` is
/// applied. If the exec fails, the child writes `exec_failed` followed by the reason to
/// stderr and exits 111; if a move fails, it exits 111 silently. `prog`'s pointer arrays
/// were built before (so this allocates nothing).
pub fn spawn_unreported(
    prog: &Ready,
    opts: &SpawnOptions,
    exec_failed: &[&str],
) -> Result<Pid, Errno> {
    let child = Child::unreported(prog, opts, exec_failed)?;
    // SAFETY: as in spawn: the child only makes async-signal-safe calls, then execs or
    // _exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(Errno::last());
    }
    if pid == 0 {
        // SAFETY: we are the freshly forked child; exec never returns.
        unsafe { child.exec() }
    }
    Ok(Pid::from_raw(pid))
}

/// `spawn_unreported` for a parent with many children (tend-svscan): the same child,
/// but the parent returns once it has exec'd or exited. The child is a vfork-style clone
/// (`CLONE_VM | CLONE_VFORK`, as musl's posix_spawn): it runs in our memory, on a stack
/// mapped for it, while we wait. A fork copied
/// the page tables of a scanner with 1000 children and then took a copy-on-write fault
/// for every page either side wrote before the exec (bench/RESULTS.md, issue 39).
pub fn spawn_unreported_vfork(
    prog: &Ready,
    opts: &SpawnOptions,
    exec_failed: &[&str],
) -> Result<Pid, Errno> {
    let child = Child::unreported(prog, opts, exec_failed)?;
    let mut kept = KEPT_STACK.lock().unwrap_or_else(|e| e.into_inner());
    if kept.is_none() {
        *kept = Some(CloneStack::new()?);
    }
    match kept.as_ref() {
        Some(stack) => clone_vfork(&child, stack),
        None => Err(Errno::ENOMEM),
    }
}

/// The stack a vfork-style child runs on: a mapping of its own. (An array in the
/// parent's frame was probed page by page on entry, as any frame over a page is, which
/// left the whole array as dirty stack in every supervisor: +32 kB each, bench/RESULTS.md,
/// issue 39.) Only the pages the child touches are ever backed.
struct CloneStack(std::ptr::NonNull<libc::c_void>);

impl CloneStack {
    fn new() -> Result<CloneStack, Errno> {
        // SAFETY: a new private anonymous mapping; no existing memory is touched.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                CLONE_STACK,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Errno::last());
        }
        std::ptr::NonNull::new(p)
            .map(CloneStack)
            .ok_or(Errno::ENOMEM)
    }

    /// Give back the pages a child touched (they read as zeros again), keeping the
    /// mapping: a supervisor's memory stays what it was before the spawn.
    fn release(&self) {
        // SAFETY: our own mapping, of that length; no child runs on it any more (each
        // clone_vfork returns after its child's exec or exit).
        unsafe { libc::madvise(self.0.as_ptr(), CLONE_STACK, libc::MADV_DONTNEED) };
    }

    /// One past the end: where a downward-growing stack starts. Page-aligned, so 16-byte
    /// aligned as the x86-64 ABI wants.
    fn top(&self) -> *mut libc::c_void {
        self.0.as_ptr().wrapping_byte_add(CLONE_STACK)
    }
}

impl Drop for CloneStack {
    fn drop(&mut self) {
        // SAFETY: our own mapping, of that length; no child runs on it any more (each
        // clone_vfork returns after its child's exec or exit).
        unsafe { libc::munmap(self.0.as_ptr(), CLONE_STACK) };
    }
}

// SAFETY: the mapping is plain memory owned by this value; the mutex below lends it to
// one clone at a time.
unsafe impl Send for CloneStack {}

/// The vfork-style children's stack, mapped once and kept. tend-svscan starts a child
/// per service: what they touch stays, once, in the one scanner. A supervisor gives the
/// pages back after each spawn (`CloneStack::release`).
static KEPT_STACK: std::sync::Mutex<Option<CloneStack>> = std::sync::Mutex::new(None);

/// Run `child` as a vfork-style clone on `stack` and return its pid once it has exec'd
/// or exited.
fn clone_vfork(child: &Child, stack: &CloneStack) -> Result<Pid, Errno> {
    extern "C" fn run(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: arg is the `child` below, alive in the suspended parent's frame until
        // this child execs or exits; exec never returns.
        unsafe { (*arg.cast::<Child>()).exec() }
    }
    let top = stack.top();
    // With every signal blocked, no handler of ours can run in the child on our memory;
    // the child unblocks only after it has reset every disposition (reset_signals_raw).
    let mut all: libc::sigset_t = zeroed_sigset();
    let mut old: libc::sigset_t = zeroed_sigset();
    // SAFETY: sigfillset and sigprocmask on sets on our stack.
    unsafe {
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
    }
    // SAFETY: the child runs `run` on `stack` (ours, not used by us until it is done:
    // CLONE_VFORK suspends us until its exec or exit) and makes only async-signal-safe
    // calls on memory prepared before the clone. Not CLONE_SIGHAND: its dispositions
    // are its own. Its errno writes land in our thread's errno, read again only after
    // our next call.
    let pid = unsafe {
        libc::clone(
            run,
            top.cast(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (child as *const Child).cast_mut().cast(),
        )
    };
    let err = Errno::last();
    // SAFETY: as above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    if pid < 0 {
        return Err(err);
    }
    Ok(Pid::from_raw(pid))
}

/// The stack of a vfork-style child: it runs `Child::exec` only (fd moves through
/// a small array, the exec, a failure message), far less than this.
const CLONE_STACK: usize = 32 * 1024;

fn zeroed_sigset() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; all zeros is the empty set.
    unsafe { std::mem::zeroed() }
}

/// What the child execs: arrays `spawn` built for this one spawn from a borrowed
/// `Prepared` (so they point into strings alive for the whole spawn), or a [`Ready`].
#[derive(Clone, Copy)]
enum Exec<'a> {
    Arrays {
        argv: &'a [*const libc::c_char],
        envp: &'a [*const libc::c_char],
        candidates: &'a [CString],
    },
    Ready(&'a Ready),
}

/// How a child tells why it did not exec.
#[derive(Clone, Copy)]
enum Report<'a> {
    /// Write the errno to this close-on-exec pipe, then exit 126/127 (`spawn`).
    Pipe(RawFd),
    /// Exit 111; after a failed exec, first write these words and the reason to stderr.
    Stderr(&'a [&'a str]),
}

/// What the child half of a spawn works on, all prepared before the fork.
struct Child<'a> {
    opts: &'a SpawnOptions,
    cwd: Option<*const libc::c_char>,
    exec: Exec<'a>,
    report: Report<'a>,
}

impl<'a> Child<'a> {
    /// The child of `spawn_unreported` and its vfork twin: only `opts.fds` applied, an
    /// exec failure reported on stderr after `exec_failed`.
    fn unreported(
        prog: &'a Ready,
        opts: &'a SpawnOptions,
        exec_failed: &'a [&'a str],
    ) -> Result<Child<'a>, Errno> {
        if opts.fds.len() > MAX_FD_MOVES {
            return Err(Errno::E2BIG);
        }
        Ok(Child {
            opts,
            cwd: None,
            exec: Exec::Ready(prog),
            report: Report::Stderr(exec_failed),
        })
    }
}

/// A step of the child failed with this errno.
type Step = Result<(), i32>;

fn check(r: libc::c_int) -> Step {
    if r < 0 {
        Err(Errno::last_raw())
    } else {
        Ok(())
    }
}

impl Child<'_> {
    /// The child half of a spawn: each step, then exec; a failed step reports and exits.
    ///
    /// # Safety
    /// Only in a freshly forked child: the steps overwrite and close fds by number,
    /// which would break the ownership of fds held by the code of any other process.
    unsafe fn exec(&self) -> ! {
        // SAFETY: we are the forked child (this function's contract).
        let (e, exec) = match unsafe { self.steps() } {
            Err(e) => (e, false),
            Ok(()) => {
                let e = match self.exec {
                    Exec::Arrays {
                        argv,
                        envp,
                        candidates,
                    } => {
                        // SAFETY: `spawn` built the arrays from the `Prepared` it borrows
                        // for the whole spawn: NULL-terminated, into live strings.
                        unsafe { crate::exec::execve_arrays(argv, envp, candidates) }
                    }
                    Exec::Ready(r) => crate::exec::execve_prepared(r),
                };
                (e as i32, true)
            }
        };
        // SAFETY: as above; fail exits the child.
        unsafe { self.fail(e, exec) }
    }

    /// Every step before exec, in order; the first failure's errno.
    ///
    /// # Safety
    /// Only in a freshly forked child (see `exec`).
    unsafe fn steps(&self) -> Step {
        let opts = self.opts;
        // SAFETY: forked child about to exec (this function's contract).
        unsafe { new_session(opts)? };
        if let Some(tty) = opts.ctty {
            // SAFETY: ioctl(TIOCSCTTY) takes an integer argument and is a plain system
            // call, safe in a forked child.
            check(unsafe { libc::ioctl(tty, libc::TIOCSCTTY, 0) })?;
        }
        if let Some(tty) = opts.foreground {
            // SAFETY: forked child about to exec.
            unsafe { take_terminal(tty)? };
        }
        if let Some(lock) = &opts.lock {
            // SAFETY: forked child about to exec; the report pipe is ours to close.
            unsafe { take_lock(lock, self.report)? };
        }
        // SAFETY: forked child about to exec; the spawn functions checked the count.
        unsafe { move_fds(&opts.fds)? };
        // SAFETY: forked child about to exec.
        unsafe { close_fds(&opts.close, &opts.fds) };
        if let Some(dir) = self.cwd {
            // SAFETY: dir points into opts.cwd, a CString that outlives the child.
            check(unsafe { libc::chdir(dir) })?;
        }
        // SAFETY: forked child about to exec.
        unsafe { reset_signals_raw() };
        Ok(())
    }

    /// Say why the child did not exec, and exit.
    ///
    /// # Safety
    /// Only in a forked child (it exits the process without any cleanup).
    unsafe fn fail(&self, e: i32, exec: bool) -> ! {
        match self.report {
            Report::Pipe(fd) => {
                let b = e.to_ne_bytes();
                // SAFETY: write is async-signal-safe; b is 4 bytes on our stack.
                unsafe { libc::write(fd, b.as_ptr().cast(), b.len()) };
                exit_now(crate::exec::exit_code_for(Errno::from_raw(e)))
            }
            Report::Stderr(words) => {
                if exec {
                    let why = Errno::from_raw(e).desc();
                    for part in words.iter().chain([&why, &"\n"]) {
                        // SAFETY: write is async-signal-safe; part is a live &str.
                        unsafe { libc::write(2, part.as_ptr().cast(), part.len()) };
                    }
                }
                exit_now(111)
            }
        }
    }
}

/// setsid / setpgid as asked.
///
/// # Safety
/// Only in a forked child about to exec.
unsafe fn new_session(opts: &SpawnOptions) -> Step {
    // SAFETY: setsid and setpgid take no pointers and are async-signal-safe.
    unsafe {
        if opts.setsid {
            check(libc::setsid())?;
        }
        if opts.setpgid {
            check(libc::setpgid(0, 0))?;
        }
    }
    Ok(())
}

/// Make our process group the terminal's foreground group; a terminal that is not ours
/// (or not a terminal) is not an error.
///
/// # Safety
/// Only in a forked child about to exec.
unsafe fn take_terminal(tty: RawFd) -> Step {
    // SAFETY: tcsetpgrp and getpgrp take no pointers and are async-signal-safe.
    match check(unsafe { libc::tcsetpgrp(tty, libc::getpgrp()) }) {
        Err(libc::ENOTTY | libc::ENXIO | libc::EBADF | libc::EINVAL | libc::EPERM) => Ok(()),
        other => other,
    }
}

/// s6's lock-fd: open the lock file, take an OFD write lock (after a warning and
/// silencing the report pipe if it is held, wait for it), and put it on `lock.fd`.
///
/// # Safety
/// Only in a forked child about to exec: it closes the report pipe by number.
unsafe fn take_lock(lock: &ServiceLock, report: Report) -> Step {
    // SAFETY: open, fcntl, write, close and dup2 are async-signal-safe; the pointers are
    // to lock's CString and buffer and to fl on our stack, all live across the calls.
    unsafe {
        let fd = libc::open(
            lock.path.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_NONBLOCK | libc::O_CLOEXEC,
            0o644,
        );
        check(fd)?;
        let mut fl: libc::flock = std::mem::zeroed();
        fl.l_type = libc::F_WRLCK as i16;
        fl.l_whence = libc::SEEK_SET as i16;
        if libc::fcntl(fd, libc::F_OFD_SETLK, &fl) < 0 {
            let e = Errno::last_raw();
            if e != libc::EAGAIN && e != libc::EACCES {
                return Err(e);
            }
            libc::write(2, lock.warning.as_ptr().cast(), lock.warning.len());
            if let Report::Pipe(fd) = report {
                libc::close(fd);
            }
            while libc::fcntl(fd, libc::F_OFD_SETLKW, &fl) < 0 {
                if Errno::last_raw() != libc::EINTR {
                    libc::_exit(111);
                }
            }
        }
        check(libc::dup2(fd, lock.fd))?;
        if fd != lock.fd {
            libc::close(fd);
        }
    }
    Ok(())
}

/// Apply every (source, target) move as if all happened at once: first each source to a
/// close-on-exec copy above every target, then each copy into place.
///
/// # Safety
/// Only in a forked child about to exec; `fds.len() <= MAX_FD_MOVES` (checked by the
/// spawn functions before forking).
unsafe fn move_fds(fds: &[(RawFd, RawFd)]) -> Step {
    let mut moved = [-1 as RawFd; MAX_FD_MOVES];
    for (slot, (src, _)) in moved.iter_mut().zip(fds) {
        // SAFETY: fcntl(F_DUPFD_CLOEXEC) takes no pointer and is async-signal-safe.
        let fd = unsafe { libc::fcntl(*src, libc::F_DUPFD_CLOEXEC, 64) };
        check(fd)?;
        *slot = fd;
    }
    for (copy, (_, dst)) in moved.iter().zip(fds) {
        // SAFETY: dup2 takes no pointer and is async-signal-safe.
        check(unsafe { libc::dup2(*copy, *dst) })?;
    }
    Ok(())
}

/// Close `close`, except the fds just moved into place.
///
/// # Safety
/// Only in a forked child about to exec.
unsafe fn close_fds(close: &[RawFd], moved: &[(RawFd, RawFd)]) {
    for fd in close {
        if !moved.iter().any(|(_, d)| d == fd) {
            // SAFETY: close takes no pointer and is async-signal-safe.
            unsafe { libc::close(*fd) };
        }
    }
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
    fn fd_moves_past_the_capacity_are_refused() {
        let p = Prepared::with_current_env(&[OsString::from("true")]).unwrap();
        let most = SpawnOptions {
            fds: vec![(2, 2); MAX_FD_MOVES],
            ..Default::default()
        };
        let pid = spawn(&p, &most).unwrap();
        crate::wait::wait(Some(pid)).unwrap();
        let too_many = SpawnOptions {
            fds: vec![(2, 2); MAX_FD_MOVES + 1],
            ..Default::default()
        };
        assert_eq!(spawn(&p, &too_many), Err(SpawnError::Fork(Errno::E2BIG)));
    }

    #[test]
    fn fork_counts_threads() {
        assert!(threads().unwrap() >= 1);
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
        let st = crate::wait::wait(Some(pid)).unwrap();
        assert_eq!(st, (pid, crate::wait::Wstat(0)));
    }
}
