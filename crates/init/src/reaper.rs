//! The reaper: the signals init takes (on a signalfd, polled with whatever else a stage
//! waits for), what each one does, and the `WNOHANG` loop that collects every dead child,
//! ours or an orphan's. Every stage waits by turning this loop.

use crate::{Action, Init};
use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, poll};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};
use tend_proto::fifodir::Subscription;
use tend_sys::wait;

/// The signals init takes. SIGCHLD reaps; SIGTTOU, SIGTTIN and SIGTSTP are only blocked,
/// so that init may hand the terminal to the command and take it back; the rest are
/// forwarded to the command.
pub(crate) const SIGNALS: [Signal; 11] = [
    Signal::SIGCHLD,
    Signal::SIGTERM,
    Signal::SIGINT,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
    Signal::SIGWINCH,
    Signal::SIGTTOU,
    Signal::SIGTTIN,
    Signal::SIGTSTP,
];

/// A VM guest's init also takes SIGPWR (poweroff), and acts on the stop signals itself
/// instead of forwarding them.
pub(crate) const GUEST_SIGNALS: [Signal; 12] = {
    let mut all = [Signal::SIGPWR; 12];
    let mut i = 0;
    while i < SIGNALS.len() {
        all[i] = SIGNALS[i];
        i += 1;
    }
    all
};

impl Init<'_> {
    /// Not PID 1 (docker run --init, a test, a shell): orphans of our tree must still come
    /// to us to be reaped.
    pub(crate) fn become_subreaper(&mut self) {
        match nix::sys::prctl::set_child_subreaper(true) {
            Ok(()) => self.warn(format_args!(
                "not PID 1 (pid {}): reaping as a child subreaper",
                std::process::id()
            )),
            Err(e) => self.warn(format_args!(
                "not PID 1 (pid {}): unable to become a child subreaper: {}",
                std::process::id(),
                e.desc()
            )),
        }
    }

    /// Turn the loop while `busy` holds, until `deadline`. False if the deadline passed.
    pub(crate) fn wait_while(
        &mut self,
        deadline: Option<Instant>,
        busy: impl Fn(&Self) -> bool,
    ) -> bool {
        loop {
            if !busy(self) {
                return true;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return false;
            }
            self.turn(deadline);
        }
    }

    /// Wait for a signal (or `deadline`) and act on every pending one.
    pub(crate) fn turn(&mut self, deadline: Option<Instant>) {
        self.turn_with(deadline, &[]);
    }

    /// As `turn`, also waking when one of `events` (service subscriptions) is readable.
    pub(crate) fn turn_with(&mut self, deadline: Option<Instant>, events: &[Subscription]) {
        if events.is_empty() {
            // Signals are all there is to wait for: take one straight from the kernel (the
            // signal to forward is then one system call from the kill, as in dumb-init);
            // the next turn takes the next one.
            let timeout = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if let Some(sig) = tend_sys::signals::wait_one(self.signals, timeout) {
                self.on_signal(sig);
            }
            return;
        }
        let timeout = tend_sys::deadline::poll_timeout(deadline, Instant::now());
        let polled = {
            // Only while waiting for the services to come up: one vector per wake-up.
            let mut fds = Vec::with_capacity(events.len() + 1);
            fds.push(PollFd::new(self.sigfd.as_fd(), PollFlags::POLLIN));
            fds.extend(
                events
                    .iter()
                    .map(|e| PollFd::new(e.fd(), PollFlags::POLLIN)),
            );
            poll(&mut fds, timeout)
        };
        match polled {
            Ok(0) | Err(Errno::EINTR) => return,
            Ok(_) => {}
            Err(e) => {
                // Cannot happen with valid fds; do not spin if it does.
                self.warn(format_args!("unable to poll: {}", e.desc()));
                std::thread::sleep(Duration::from_millis(100));
                return;
            }
        }
        // Event bytes only say "look again"; the status files say what is true.
        let mut buf = [0u8; 64];
        for e in events {
            while matches!(e.read(&mut buf), Ok(n) if n > 0) {}
        }
        while let Ok(Some(info)) = self.sigfd.read_signal() {
            let Ok(sig) = Signal::try_from(info.ssi_signo as i32) else {
                continue;
            };
            self.on_signal(sig);
        }
    }

    fn on_signal(&mut self, sig: Signal) {
        match sig {
            Signal::SIGCHLD => self.reap(),
            Signal::SIGTTOU | Signal::SIGTTIN | Signal::SIGTSTP => {}
            _ if self.guest => {
                let Some(action) = Action::of_signal(sig) else {
                    return;
                };
                if self.stopping || self.action.is_some() {
                    return;
                }
                self.action = Some(action);
                self.stop = Some(sig);
                self.stage(format_args!("{} requested by {sig}", action.name()));
                if let Some(pid) = self.script {
                    let _ = kill(pid, Signal::SIGTERM);
                }
            }
            _ => {
                if let Some(pid) = self.command {
                    let target = if self.settings.signal_group {
                        Pid::from_raw(-pid.as_raw())
                    } else {
                        pid
                    };
                    let _ = kill(target, sig);
                } else if !self.stopping && matches!(sig, Signal::SIGTERM | Signal::SIGINT) {
                    self.stop.get_or_insert(sig);
                    if let Some(pid) = self.script {
                        let _ = kill(pid, sig);
                    }
                }
            }
        }
    }

    /// Collect every dead child, ours or an orphan's.
    pub(crate) fn reap(&mut self) {
        loop {
            match wait::reap(None) {
                Ok(None) => {
                    self.children = true;
                    return;
                }
                Ok(Some((pid, st))) => {
                    let code = st.shell_code();
                    if self.command == Some(pid) {
                        self.command = None;
                        self.command_code = Some(code);
                    } else if self.scanner == Some(pid) {
                        self.scanner = None;
                        self.scanner_code = Some(code);
                        if self.scanner_exit_stops && !self.stopping {
                            self.stop.get_or_insert(Signal::SIGTERM);
                        }
                    } else if self.script == Some(pid) {
                        self.script = None;
                        self.script_code = Some(code);
                    } else if self.logger == Some(pid) {
                        self.logger = None;
                    }
                }
                Err(Errno::ECHILD) => {
                    self.children = false;
                    return;
                }
                Err(_) => return,
            }
        }
    }
}
