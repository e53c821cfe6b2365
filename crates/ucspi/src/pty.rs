//! tend-pty's work: a program on a new pseudo-terminal, its bytes relayed to and from
//! fds 0 and 1. It is the other half of a console served over UCSPI
//! (`tend-vsockserver 1026 tend-pty /bin/sh`): the connection is a plain socket, the
//! shell needs a terminal for job control and ^C.
//!
//! The program is a session leader with the slave as its controlling terminal and on its
//! fds 0, 1 and 2. The window is 24x80: a socket carries no SIGWINCH, and a size of 0x0
//! makes full-screen programs misbehave.
//!
//! One thread, one poll over a signalfd, fd 0, fd 1 and the master, all non-blocking
//! except the caller's fds (which are polled before each transfer). Each direction has
//! one fixed buffer: a side is read only when its buffer is empty, so a slow reader
//! stalls its writer rather than growing memory. The relay ends when either side closes:
//! - the program ends: what the master still holds is copied out, then tend-pty exits
//!   with the program's code (128+n for a signal);
//! - fd 0 reaches end of file, or fd 1 is gone: the master is closed, which hangs the
//!   terminal up (the kernel sends the session SIGHUP, as when a modem line drops), and
//!   tend-pty waits for the program and exits with its code;
//! - every holder of the slave closed it (the master reads EIO): tend-pty waits for the
//!   program.

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::pty::{Winsize, openpty};
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use std::ffi::OsString;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use tend_sys::Error;
use tend_sys::exec::Prepared;
use tend_sys::process::{SpawnError, SpawnOptions, spawn};
use tend_sys::wait::{Wstat, reap};

/// The window size a new terminal gets.
pub const DEFAULT_SIZE: Winsize = Winsize {
    ws_row: 24,
    ws_col: 80,
    ws_xpixel: 0,
    ws_ypixel: 0,
};

/// Bytes one direction holds between a read and its write.
const BUF: usize = 4096;

/// Why tend-pty could not run the program.
#[derive(Debug)]
pub enum PtyError {
    /// The program could not be executed (126, or 127 when not found).
    Exec(OsString, Errno),
    Sys(Error),
}

impl From<Error> for PtyError {
    fn from(e: Error) -> PtyError {
        PtyError::Sys(e)
    }
}

impl std::fmt::Display for PtyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PtyError::Exec(prog, e) => {
                let why = tend_sys::diagnose::describe(prog, *e);
                write!(f, "unable to exec {}: {why}", prog.to_string_lossy())
            }
            PtyError::Sys(e) => e.fmt(f),
        }
    }
}

impl PtyError {
    pub fn code(&self) -> i32 {
        match self {
            PtyError::Exec(_, e) => tend_sys::exec::exit_code_for(*e),
            PtyError::Sys(e) => e.code(),
        }
    }
}

/// Run `prog` on a new pty, relay until either side closes, and return the program's
/// wait status.
pub fn run(prog: &[OsString]) -> Result<Wstat, PtyError> {
    let pty = openpty(&DEFAULT_SIZE, None).map_err(|e| Error::new("open a pty", e))?;
    for fd in [&pty.master, &pty.slave] {
        fcntl(fd.as_raw_fd(), FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))
            .map_err(|e| Error::new("set close-on-exec", e))?;
    }
    nonblocking(pty.master.as_raw_fd())?;
    let sigfd = tend_sys::signals::signalfd(&[Signal::SIGCHLD])
        .map_err(|e| Error::new("trap signals", e))?;
    tend_sys::signals::ignore(Signal::SIGPIPE).map_err(|e| Error::new("ignore SIGPIPE", e))?;
    let env = tend_sys::exec::current_env();
    let prepared = Prepared::new(prog, &env).map_err(|e| Error::new("prepare the program", e))?;
    let slave = pty.slave.as_raw_fd();
    let opts = SpawnOptions {
        setsid: true,
        ctty: Some(slave),
        fds: vec![(slave, 0), (slave, 1), (slave, 2)],
        ..Default::default()
    };
    let name = prog.first().cloned().unwrap_or_default();
    let pid = match spawn(&prepared, &opts) {
        Ok(pid) => pid,
        Err(SpawnError::Exec(e)) => return Err(PtyError::Exec(name, e)),
        Err(SpawnError::Fork(e)) => return Err(Error::new("fork", e).into()),
    };
    drop(pty.slave);
    let mut relay = Relay {
        master: Some(pty.master),
        input: Pipe::new(),
        output: Pipe::new(),
        stdin_open: true,
        pid,
    };
    Ok(relay.run(sigfd.as_fd())?)
}

fn nonblocking(fd: RawFd) -> Result<(), Error> {
    let flags = fcntl(fd, FcntlArg::F_GETFL).map_err(|e| Error::new("get fd flags", e))?;
    fcntl(
        fd,
        FcntlArg::F_SETFL(OFlag::from_bits_truncate(flags) | OFlag::O_NONBLOCK),
    )
    .map_err(|e| Error::new("set non-blocking", e))?;
    Ok(())
}

/// One direction's buffer: `buf[at..len]` is read and not yet written.
struct Pipe {
    buf: [u8; BUF],
    at: usize,
    len: usize,
}

impl Pipe {
    fn new() -> Pipe {
        Pipe {
            buf: [0; BUF],
            at: 0,
            len: 0,
        }
    }

    fn is_empty(&self) -> bool {
        self.at == self.len
    }

    /// Read into the empty buffer: Ok(false) at end of file (or EIO, a pty's hang-up).
    fn fill(&mut self, from: RawFd) -> Result<bool, Errno> {
        match nix::unistd::read(from, &mut self.buf) {
            Ok(0) | Err(Errno::EIO) => Ok(false),
            Ok(n) => {
                (self.at, self.len) = (0, n);
                Ok(true)
            }
            Err(Errno::EAGAIN | Errno::EINTR) => Ok(true),
            Err(e) => Err(e),
        }
    }

    /// Write what the buffer holds, as much as `to` takes now.
    fn drain(&mut self, to: RawFd) -> Result<(), Errno> {
        match tend_sys::fd::write_raw(to, &self.buf[self.at..self.len]) {
            Ok(n) => {
                self.at += n;
                Ok(())
            }
            Err(Errno::EAGAIN | Errno::EINTR) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

struct Relay {
    /// None once hung up (closed) or read to its end.
    master: Option<OwnedFd>,
    /// fd 0 to the master.
    input: Pipe,
    /// The master to fd 1.
    output: Pipe,
    stdin_open: bool,
    pid: Pid,
}

impl Relay {
    fn run(&mut self, sigfd: BorrowedFd) -> Result<Wstat, Error> {
        // fds 0 and 1 are the caller's for the whole run.
        let stdin = tend_sys::fd::stdio(0).map_err(|e| Error::new("borrow stdin", e))?;
        let stdout = tend_sys::fd::stdio(1).map_err(|e| Error::new("borrow stdout", e))?;
        loop {
            if let Some(w) = self.child_ended()? {
                self.copy_out_rest();
                return Ok(w);
            }
            let mut fds = [PollFd::new(sigfd, PollFlags::POLLIN); 4];
            let mut n = 1;
            let (mut i_in, mut i_out, mut i_master) = (None, None, None);
            if self.stdin_open && self.input.is_empty() {
                fds[n] = PollFd::new(stdin, PollFlags::POLLIN);
                (i_in, n) = (Some(n), n + 1);
            }
            if !self.output.is_empty() {
                fds[n] = PollFd::new(stdout, PollFlags::POLLOUT);
                (i_out, n) = (Some(n), n + 1);
            }
            if let Some(m) = &self.master {
                let mut want = PollFlags::empty();
                if self.output.is_empty() {
                    want |= PollFlags::POLLIN;
                }
                if !self.input.is_empty() {
                    want |= PollFlags::POLLOUT;
                }
                fds[n] = PollFd::new(m.as_fd(), want);
                (i_master, n) = (Some(n), n + 1);
            }
            match poll(&mut fds[..n], PollTimeout::NONE) {
                Ok(_) | Err(Errno::EINTR) => {}
                Err(e) => return Err(Error::new("poll", e)),
            }
            let ready = |i: Option<usize>| {
                i.and_then(|i| fds[i].revents())
                    .is_some_and(|r| !r.is_empty())
            };
            let (r_sig, r_in, r_out, r_master) =
                (ready(Some(0)), ready(i_in), ready(i_out), ready(i_master));
            if r_sig {
                let _ = nix::unistd::read(sigfd.as_raw_fd(), &mut [0u8; 128]);
            }
            if r_in && !self.input.fill(0).unwrap_or(false) {
                // fd 0 is done: the terminal hangs up once what was read is written.
                self.stdin_open = false;
                if self.input.is_empty() {
                    self.master = None;
                }
            }
            if r_out && self.output.drain(1).is_err() {
                // Nobody reads fd 1 any more: hang up.
                self.output = Pipe::new();
                self.stdin_open = false;
                self.master = None;
            }
            if r_master && let Some(m) = &self.master {
                let raw = m.as_raw_fd();
                if !self.input.is_empty() && self.input.drain(raw).is_err() {
                    self.input = Pipe::new();
                }
                if !self.stdin_open && self.input.is_empty() {
                    self.master = None;
                } else if self.output.is_empty() && !self.output.fill(raw).unwrap_or(false) {
                    // Every holder of the slave closed it: only the program's end is left.
                    self.master = None;
                }
            }
        }
    }

    /// The program's wait status once it has ended (other children are reaped and ignored).
    fn child_ended(&self) -> Result<Option<Wstat>, Error> {
        loop {
            match reap(None) {
                Ok(Some((pid, w))) if pid == self.pid => return Ok(Some(w)),
                Ok(Some(_)) => {}
                Ok(None) => return Ok(None),
                Err(Errno::ECHILD) => return Ok(None),
                Err(e) => return Err(Error::new("wait", e)),
            }
        }
    }

    /// After the program's end: copy out what is buffered and what the master still
    /// holds, without waiting for more (a background holder of the slave may never close
    /// it).
    fn copy_out_rest(&mut self) {
        let Ok(stdout) = tend_sys::fd::stdio(1) else {
            return;
        };
        loop {
            if !self.output.is_empty() {
                if tend_sys::fd::write_all(
                    stdout,
                    &self.output.buf[self.output.at..self.output.len],
                )
                .is_err()
                {
                    return;
                }
                self.output = Pipe::new();
            }
            let Some(m) = &self.master else { return };
            match nix::unistd::read(m.as_raw_fd(), &mut self.output.buf) {
                Ok(n) if n > 0 => (self.output.at, self.output.len) = (0, n),
                _ => return,
            }
        }
    }
}
