//! Readiness in s6-notifyoncheck's shape: fork a prober, exec the daemon (which keeps the
//! pid the supervisor knows), and let the prober write the readiness newline on the
//! notification fd when a probe first succeeds.

use crate::probe::{self, Probe};
use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use std::os::fd::{AsFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};
use tend_sys::Error;
use tend_sys::process::{Forked, fork};

/// What the readiness prober does.
#[derive(Debug, Clone)]
pub struct Readiness {
    pub probe: Probe,
    pub notify_fd: RawFd,
    /// Double-fork, so the prober is not the daemon's child (s6-notifyoncheck -d).
    pub double_fork: bool,
    /// Before the first attempt.
    pub initial_sleep: Duration,
    /// Give up after this long in all (None: never).
    pub global_timeout: Option<Duration>,
    /// Per attempt.
    pub attempt_timeout: Duration,
    /// Between attempts.
    pub wait: Duration,
    /// Attempts before giving up; 0 = forever.
    pub tries: u32,
}

/// Which process we are after [`split`].
pub enum Role {
    /// Exec the daemon now. If the exec fails, call [`ExecGate::failed`] before exiting,
    /// so the prober leaves without probing; a successful exec closes the gate's fd.
    Daemon(ExecGate),
    /// The middle child of a double fork: exit 0 at once.
    Intermediate,
    /// Probe.
    Prober(Prober),
}

/// The daemon side's end of a close-on-exec pipe: the prober starts probing when it
/// reads end-of-file (the exec succeeded, or the daemon side is gone), and leaves quietly
/// when it reads a byte (the exec failed: nothing to probe, nothing more to say).
pub struct ExecGate(OwnedFd);

impl ExecGate {
    pub fn failed(self) {
        let _ = tend_sys::fd::write_all(self.0.as_fd(), b"x");
    }
}

/// The prober's side.
pub struct Prober {
    r: Readiness,
    daemon: Option<OwnedFd>,
    gate: OwnedFd,
}

/// How the prober ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// A probe succeeded; the newline is written.
    Ready,
    /// Out of tries or time; the last failure's reason.
    GaveUp(String),
    /// The daemon died first.
    DaemonDied,
}

/// Check the notification fd, then fork the prober off. The daemon side closes the fd.
pub fn split(r: Readiness) -> Result<Role, Error> {
    tend_sys::fd::check_open(r.notify_fd).map_err(|e| Error::new("use the notification fd", e))?;
    let me = nix::unistd::getpid();
    let pidfd = rustix::process::Pid::from_raw(me.as_raw())
        .and_then(|p| rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).ok());
    let (gate, gate_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .map_err(|e| Error::new("make a pipe", e))?;
    match fork().map_err(|e| Error::new("fork", e))? {
        Forked::Parent(child) => {
            drop(gate);
            if r.double_fork {
                let _ = tend_sys::wait::wait(Some(child));
            }
            let _ = nix::unistd::close(r.notify_fd);
            Ok(Role::Daemon(ExecGate(gate_w)))
        }
        Forked::Child => {
            drop(gate_w);
            let prober = Prober {
                r,
                daemon: pidfd,
                gate,
            };
            if !prober.r.double_fork {
                return Ok(Role::Prober(prober));
            }
            match fork() {
                Ok(Forked::Child) => Ok(Role::Prober(prober)),
                _ => Ok(Role::Intermediate),
            }
        }
    }
}

impl Prober {
    /// Sleep for `d`, waking early only if the daemon dies (true then).
    fn sleep(&self, d: Duration) -> bool {
        let deadline = Instant::now() + d;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            let t = tend_sys::deadline::ms_rounded_up(left);
            match &self.daemon {
                Some(fd) => {
                    let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
                    match poll(&mut fds, t) {
                        Ok(0) => return false,
                        Ok(_) => return true,
                        Err(Errno::EINTR) => {}
                        Err(_) => std::thread::sleep(left),
                    }
                }
                None => std::thread::sleep(left),
            }
        }
    }

    fn daemon_gone(&self) -> bool {
        self.daemon.as_ref().is_some_and(|fd| {
            let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
            matches!(poll(&mut fds, PollTimeout::ZERO), Ok(n) if n > 0)
        })
    }

    /// Probe until success, the last try, the global timeout or the daemon's death.
    pub fn run(self) -> Result<Ended, Error> {
        // Wait for the daemon side's exec: a byte means it failed.
        let mut b = [0u8; 1];
        loop {
            match nix::unistd::read(std::os::fd::AsRawFd::as_raw_fd(&self.gate), &mut b) {
                Ok(0) => break,
                Ok(_) => return Ok(Ended::DaemonDied),
                Err(Errno::EINTR) => {}
                Err(e) => return Err(Error::new("wait for the daemon's exec", e)),
            }
        }
        let start = Instant::now();
        let end = self.r.global_timeout.map(|t| start + t);
        if self.sleep(self.r.initial_sleep) {
            return Ok(Ended::DaemonDied);
        }
        let mut buf = Vec::new();
        let mut n = 0u32;
        loop {
            if self.daemon_gone() {
                return Ok(Ended::DaemonDied);
            }
            let mut timeout = self.r.attempt_timeout;
            if let Some(end) = end {
                timeout = timeout.min(end.saturating_duration_since(Instant::now()));
            }
            let why = match probe::attempt(&self.r.probe, timeout, &[self.r.notify_fd], &mut buf) {
                Ok(()) => {
                    tend_sys::fd::write_all_raw(self.r.notify_fd, b"\n")
                        .map_err(|e| Error::new("write to the notification fd", e))?;
                    return Ok(Ended::Ready);
                }
                Err(why) => why,
            };
            n += 1;
            if self.r.tries != 0 && n >= self.r.tries {
                return Ok(Ended::GaveUp(why));
            }
            if let Some(end) = end
                && Instant::now() + self.r.wait >= end
            {
                return Ok(Ended::GaveUp(why));
            }
            if self.sleep(self.r.wait) {
                return Ok(Ended::DaemonDied);
            }
        }
    }
}
