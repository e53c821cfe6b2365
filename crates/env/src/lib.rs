//! What a chain-loader changes about a process before it execs into the rest of its
//! command line: the environment (envdir, account variables), the credentials, resource
//! limits, the session, the CPU affinity, the cgroup, and the sd_notify bridge.
//!
//! Each module has a pure part (parsing a directory's files, a limit value, a cpulist,
//! `/proc/self/mountinfo`, an sd_notify datagram), unit-tested without processes, and a
//! thin part that makes the system calls and returns a [`sys::Error`] naming what failed.
//! This crate is not a supervisor and knows nothing about service directories, except
//! `notification-fd`, which tend-notify reads. It never prints, exits or panics: the
//! programs in `bins/` decide what a failure means.

#![forbid(unsafe_code)]

pub mod account;
pub mod contenv;
pub mod cpulist;
pub mod envdir;
pub mod environ;
pub mod fghack;
pub mod notify;
pub mod oom;
pub mod rlimit;
pub mod session;
pub mod uidgid;

pub use tend_account::userdb;
pub use tend_cgroups as cgroup;

pub use tend_sys as sys;

use std::ffi::OsString;
use std::fmt;

/// exec failed: which program, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecError {
    pub prog: OsString,
    pub errno: nix::errno::Errno,
    /// What looking at the file said (sys::diagnose), e.g. `interpreter /bin/sh\r not
    /// found (the file has CRLF line endings)`; for a PATH search, prefixed with the path
    /// that was found.
    pub why: String,
}

impl ExecError {
    /// 127 when the program was not found, 126 otherwise.
    pub fn code(&self) -> i32 {
        sys::exec::exit_code_for(self.errno)
    }
}

impl fmt::Display for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unable to exec {}: {}",
            String::from_utf8_lossy(std::os::unix::ffi::OsStrExt::as_bytes(
                self.prog.as_os_str()
            )),
            self.why
        )
    }
}

/// A program made ready to exec before the process changes itself (its limits, its
/// credentials): exec then needs no allocation, so a tight RLIMIT_AS or RLIMIT_DATA set
/// in between cannot make it abort.
pub struct Ready {
    prog: OsString,
    ready: sys::exec::Ready,
}

impl Ready {
    /// Search PATH (in `env`) and build every C string now.
    pub fn new(argv: &[OsString], env: &[(OsString, OsString)]) -> Result<Ready, ExecError> {
        let prog = argv.first().cloned().unwrap_or_default();
        match sys::exec::Prepared::new(argv, env) {
            Ok(prepared) => Ok(Ready {
                prog,
                ready: sys::exec::Ready::new(prepared),
            }),
            Err(errno) => Err(ExecError {
                prog,
                errno,
                why: errno.desc().to_string(),
            }),
        }
    }

    /// Run the program under another argv[0] (chpst's `-b`): the PATH search already
    /// done stays the program's own name's.
    pub fn set_argv0(&mut self, argv0: &std::ffi::OsStr) -> Result<(), ExecError> {
        use std::os::unix::ffi::OsStrExt;
        // An argument from argv holds no NUL, so nothing is dropped here.
        self.ready.set_arg(0, &[argv0.as_bytes()]);
        Ok(())
    }

    /// Replace the process; returns the errno only on failure, without allocating.
    pub fn exec(&self) -> nix::errno::Errno {
        sys::entry::restore_sigpipe();
        sys::exec::execve_prepared(&self.ready)
    }

    /// The failure, diagnosed (this looks at the file and allocates: call it once the
    /// process can afford to).
    pub fn error(&self, errno: nix::errno::Errno) -> ExecError {
        ExecError {
            prog: self.prog.clone(),
            errno,
            why: sys::diagnose::describe_search(
                &self.prog,
                &self.ready.prepared().candidates,
                errno,
            ),
        }
    }
}

/// Replace the process with `argv`, environment `env` (PATH searched in `env`).
/// Returns only on failure.
/// Returns only on failure, with the failure diagnosed (only then is the file looked at).
pub fn exec(argv: &[OsString], env: &[(OsString, OsString)]) -> ExecError {
    let prog = argv.first().cloned().unwrap_or_default();
    let (errno, why) = match sys::exec::Prepared::new(argv, env) {
        Ok(p) => {
            let errno = sys::exec::exec(&p);
            (
                errno,
                sys::diagnose::describe_search(&prog, &p.candidates, errno),
            )
        }
        Err(errno) => (errno, errno.desc().to_string()),
    };
    ExecError { prog, errno, why }
}
