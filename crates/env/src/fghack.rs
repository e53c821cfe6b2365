//! tend-fghack's trick (s6-fghack's): keep a program that insists on backgrounding
//! itself in the foreground. Before it is started, the write end of a pipe is copied onto
//! the lowest 32 free fds, which every process it forks inherits unless it closes fds it
//! does not know about; the pipe reports end-of-file only when the last of them is gone.

use crate::sys::Error;
use crate::sys::process::{SpawnError, SpawnOptions, spawn};
use crate::sys::wait::{Ended, wait};
use nix::errno::Errno;
use nix::fcntl::{FcntlArg, FdFlag, fcntl};
use std::ffi::OsString;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

/// How many copies of the pipe's write end the program gets (s6-fghack's number).
pub const COPIES: usize = 32;

/// How it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Every holder of the pipe is gone; the program itself exited with this code.
    Exited(u8),
    /// The program itself was killed by this signal.
    Crashed(u8),
    /// Something wrote on the pipe: a bug in the program (s6-fghack exits 102).
    Wrote,
}

/// Why it could not run.
#[derive(Debug)]
pub enum FghackError {
    Sys(Error),
    /// The program could not be started (exec's errno).
    Exec(Errno),
}

/// Start `prog` with the copies, wait until nobody holds the pipe, then reap it.
pub fn run(prog: &[OsString]) -> Result<Outcome, FghackError> {
    let sys = |op, e| FghackError::Sys(Error::new(op, e));
    let (r, w) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| sys("create pipe", e))?;
    let mut copies: Vec<OwnedFd> = Vec::with_capacity(COPIES);
    for _ in 0..COPIES {
        // The lowest free number from 3 on (std's F_DUPFD_CLOEXEC from 3), made
        // inheritable: fds the caller gave us (a notification fd) are left as they are.
        let fd = w
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| FghackError::Sys(Error::io("dup", "the pipe", &e)))?;
        fcntl(fd.as_raw_fd(), FcntlArg::F_SETFD(FdFlag::empty())).map_err(|e| sys("fcntl", e))?;
        copies.push(fd);
    }
    let prepared = crate::sys::exec::Prepared::with_current_env(prog).map_err(FghackError::Exec)?;
    let pid = match spawn(&prepared, &SpawnOptions::default()) {
        Ok(pid) => pid,
        Err(SpawnError::Exec(e)) => return Err(FghackError::Exec(e)),
        Err(SpawnError::Fork(e)) => return Err(sys("spawn", e)),
    };
    drop(copies);
    drop(w);
    let mut buf = [0u8; 1];
    let wrote = loop {
        match nix::unistd::read(r.as_raw_fd(), &mut buf) {
            Ok(0) => break false,
            Ok(_) => break true,
            Err(Errno::EINTR) => {}
            Err(e) => return Err(sys("read pipe", e)),
        }
    };
    if wrote {
        return Ok(Outcome::Wrote);
    }
    let (_, wstat) = wait(Some(pid)).map_err(|e| sys("wait", e))?;
    Ok(match wstat.ended() {
        Ended::Exited(c) => Outcome::Exited(c),
        Ended::Signaled(s) => Outcome::Crashed(s),
    })
}
