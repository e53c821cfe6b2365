//! The experimental forked mode (feature `forked`, for measurement only: bench/scan.sh):
//! each supervisor is a forked child of the scanner running `tend_supervise::Supervisor`
//! without an exec, sharing the scanner's pages. Only this file depends on
//! crates/supervise, and only with the feature on; the shipped scanner execs
//! `tend-supervise` (scanner.rs, `spawn_supervisor`).

use nix::errno::Errno;
use nix::unistd::Pid;
use std::ffi::OsStr;
use std::os::fd::RawFd;

/// Fork a supervisor for the service `name`, moving `fds` (source, target) into place in
/// the child; the parent gets the child's pid.
pub(crate) fn spawn(name: &OsStr, fds: &[(RawFd, RawFd)]) -> Result<Pid, Errno> {
    use tend_sys::process::{Forked, fork};
    match fork()? {
        Forked::Parent(pid) => Ok(pid),
        Forked::Child => forked_supervisor(name, fds),
    }
}

/// The child half of forked mode: become `tend-supervise NAME` without exec.
fn forked_supervisor(name: &OsStr, fds: &[(RawFd, RawFd)]) -> ! {
    use tend_supervise::{Reporter, Supervisor};
    for &(src, dst) in fds {
        if nix::unistd::dup2(src, dst).is_err() {
            tend_sys::process::exit_now(111);
        }
    }
    // Nothing of the scanner's may stay open here: other services' pipe ends would keep
    // their loggers from ever seeing EOF.
    let open: Vec<RawFd> = std::fs::read_dir("/proc/self/fd")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    for fd in open.into_iter().filter(|&fd| fd > 2) {
        let _ = nix::unistd::close(fd);
    }
    tend_sys::process::reset_signals();
    let _ = nix::sys::prctl::set_name(c"tend-supervise");
    let code = match Supervisor::new(name, Reporter::new(name)) {
        Ok(sup) => sup.run(),
        Err(e) => {
            tend_sys::warn::line("tend-supervise", "fatal", &e);
            e.code()
        }
    };
    tend_sys::process::exit_now(code)
}
