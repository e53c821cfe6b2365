//! Waiting for services to reach a state, through their `event/` fifodirs.
//!
//! The race-free order is s6's: create `event/` if missing, subscribe (our own FIFO in
//! it), and only then read `supervise/status` for the starting state; every state change
//! after that arrives as an event byte. tend-svc does the same and sends its letters
//! after subscribing, so it cannot miss the transition it causes; unlike s6-svc it does
//! not exec a helper (s6-svlisten1 + s6-ftrigrd) to do it.
//!
//! Events (s6 2.11): `d` down, `D` down and ready (finish done), `u` up, `U` up and ready,
//! `O` permanent failure (counts as a failure when waiting for up), `x` supervisor exited
//! (a failure unless that service was already where we want it). Others (`s`) are ignored.

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, poll};
use std::path::Path;
use std::time::Instant;
use tend_proto::fifodir::{Subscription, make_fifodir};
use tend_proto::servicedir;

/// A state to wait for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// Up (./run alive) or down.
    pub up: bool,
    /// And ready: notified readiness when up, finish done when down.
    pub ready: bool,
    /// First down, then `up`/`ready` (a restart).
    pub restart: bool,
}

impl Target {
    /// Up, not necessarily ready: s6-svwait's default (`-u`).
    pub const UP: Target = Target {
        up: true,
        ready: false,
        restart: false,
    };

    /// Up and ready (`-U`).
    pub const UP_READY: Target = Target {
        up: true,
        ready: true,
        restart: false,
    };

    /// Down and finished (`-D`).
    pub const DOWN_READY: Target = Target {
        up: false,
        ready: true,
        restart: false,
    };

    /// From s6's letters: `u U d D r R`.
    pub fn from_letter(c: u8) -> Option<Target> {
        let (up, ready, restart) = match c {
            b'u' => (true, false, false),
            b'U' => (true, true, false),
            b'd' => (false, false, false),
            b'D' => (false, true, false),
            b'r' => (true, false, true),
            b'R' => (true, true, true),
            _ => return None,
        };
        Some(Target { up, ready, restart })
    }

    /// The same wait without readiness (`-wU` → `-wu`, `-wR` → `-wr`).
    pub fn without_ready(self) -> Target {
        Target {
            ready: false,
            ..self
        }
    }
}

/// Why a service could not be watched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitError {
    /// Creating our FIFO in `event/` failed.
    Subscribe(Errno),
    /// Reading the starting status failed (EPIPE: short file).
    Status(Errno),
    /// poll(2) or read(2) on a subscription failed.
    Poll(Errno),
}

impl WaitError {
    /// Every wait failure is a system call's.
    pub fn code(&self) -> i32 {
        tend_sys::code::SYSTEM
    }

    /// The message for the service `name` (as shown).
    pub fn describe<'a>(&'a self, name: &'a str) -> impl std::fmt::Display + 'a {
        DescribedWait(*self, name)
    }
}

struct DescribedWait<'a>(WaitError, &'a str);

impl std::fmt::Display for DescribedWait<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            WaitError::Subscribe(e) => {
                write!(
                    f,
                    "unable to subscribe to events for {}: {}",
                    self.1,
                    e.desc()
                )
            }
            WaitError::Status(e) => write!(f, "unable to read status for {}: {}", self.1, e.desc()),
            WaitError::Poll(e) => write!(f, "unable to wait for events: {}", e.desc()),
        }
    }
}

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The state was reached; `failures` services reported a permanent failure or lost
    /// their supervisor on the way (0 means a clean success).
    Reached { failures: usize },
    /// The deadline passed first.
    TimedOut,
}

/// Subscriptions to one or more services, with their last known states.
pub struct Watch {
    subs: Vec<Subscription>,
    up: Vec<bool>,
    ready: Vec<bool>,
    /// Events read but not yet applied when the previous wait ended (a restart's second
    /// phase must see the `u` that arrived in the same read as the `d`).
    pending: Vec<Vec<u8>>,
}

impl Default for Watch {
    fn default() -> Self {
        Watch::new()
    }
}

impl Watch {
    pub fn new() -> Watch {
        Watch {
            subs: Vec::new(),
            up: Vec::new(),
            ready: Vec::new(),
            pending: Vec::new(),
        }
    }

    /// Subscribe to `servicedir/event` (created as s6 does if missing), then read the
    /// service's current state.
    pub fn add(&mut self, servicedir: &Path) -> Result<(), WaitError> {
        let eventdir = servicedir.join(servicedir::EVENT);
        let _ = make_fifodir(&eventdir, nix::unistd::getegid());
        let sub = Subscription::new(&eventdir).map_err(|e| WaitError::Subscribe(e.errno))?;
        let rec =
            crate::status::read_record(servicedir).map_err(|b| WaitError::Status(b.errno()))?;
        self.subs.push(sub);
        self.up.push(rec.pid as i32 != 0 && !rec.finishing);
        self.ready.push(rec.ready);
        self.pending.push(Vec::new());
        Ok(())
    }

    /// Number of services watched.
    pub fn len(&self) -> usize {
        self.subs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.subs.is_empty()
    }

    /// Wait until all services (or, with `any`, one of them) reach `target`, or until
    /// `deadline`. A restart waits for all of them down first, then for the target.
    pub fn wait(
        &mut self,
        target: Target,
        any: bool,
        deadline: Option<Instant>,
    ) -> Result<Outcome, WaitError> {
        if target.restart {
            let down = Target {
                up: false,
                ready: false,
                restart: false,
            };
            match self.wait_state(down, false, deadline)? {
                Outcome::Reached { failures: 0 } => {}
                other => return Ok(other),
            }
        }
        self.wait_state(target, any, deadline)
    }

    /// Wait for one state: done at once if every service (or one, with `any`) is there,
    /// else after the events left over from the previous wait, else as events arrive.
    fn wait_state(
        &mut self,
        target: Target,
        any: bool,
        deadline: Option<Instant>,
    ) -> Result<Outcome, WaitError> {
        let mut goal = Goal {
            target,
            any,
            failures: 0,
        };
        let Watch {
            subs,
            up,
            ready,
            pending,
        } = self;
        if goal.met(up, ready) {
            return Ok(Outcome::Reached { failures: 0 });
        }
        if let Some(failures) = goal.replay(up, ready, pending) {
            return Ok(Outcome::Reached { failures });
        }
        let mut fds: Vec<PollFd> = subs
            .iter()
            .map(|s| PollFd::new(s.fd(), PollFlags::POLLIN))
            .collect();
        loop {
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return Ok(Outcome::TimedOut);
            }
            match poll(&mut fds, tend_sys::deadline::poll_timeout(deadline, now)) {
                Ok(0) | Err(Errno::EINTR) => continue,
                Ok(_) => {}
                Err(e) => return Err(WaitError::Poll(e)),
            }
            if let Some(failures) = goal.read_events(&fds, subs, up, ready, pending)? {
                return Ok(Outcome::Reached { failures });
            }
        }
    }
}

/// What one wait is for, and the failures counted on the way.
struct Goal {
    target: Target,
    any: bool,
    failures: usize,
}

impl Goal {
    /// Whether service `i` is in the target state.
    fn reached(&self, up: &[bool], ready: &[bool], i: usize) -> bool {
        up[i] == self.target.up && (!self.target.ready || ready[i])
    }

    /// Whether the wait is over: every service (or, with `any`, one) is there.
    fn met(&self, up: &[bool], ready: &[bool]) -> bool {
        let mut services = 0..up.len();
        if self.any {
            services.any(|i| self.reached(up, ready, i))
        } else {
            services.all(|i| self.reached(up, ready, i))
        }
    }

    /// Apply one event of service `i`; the failure count when the wait is over.
    fn apply(&mut self, up: &mut [bool], ready: &mut [bool], i: usize, ev: u8) -> Option<usize> {
        match ev {
            // The supervisor exited: a failure unless the service was already there.
            b'x' => {
                if !self.reached(up, ready, i) {
                    self.failures += 1;
                }
                up[i] = self.target.up;
                ready[i] = self.target.ready;
            }
            // Failed permanently: it will not come up.
            b'O' => {
                if self.target.up {
                    up[i] = true;
                    ready[i] = self.target.ready;
                    self.failures += 1;
                }
            }
            b'd' | b'D' | b'u' | b'U' => {
                up[i] = ev == b'u' || ev == b'U';
                ready[i] = ev == b'D' || ev == b'U';
            }
            _ => return None,
        }
        self.met(up, ready).then_some(self.failures)
    }

    /// Apply the events the previous wait read but did not use; those after the one that
    /// ends this wait stay queued.
    fn replay(
        &mut self,
        up: &mut [bool],
        ready: &mut [bool],
        pending: &mut [Vec<u8>],
    ) -> Option<usize> {
        for (i, queued) in pending.iter_mut().enumerate() {
            let events = std::mem::take(queued);
            for (k, &ev) in events.iter().enumerate() {
                if let Some(failures) = self.apply(up, ready, i, ev) {
                    *queued = events[k + 1..].to_vec();
                    return Some(failures);
                }
            }
        }
        None
    }

    /// Read and apply the events of every readable subscription; the events after the one
    /// that ends the wait are queued for the next.
    fn read_events(
        &mut self,
        fds: &[PollFd],
        subs: &[Subscription],
        up: &mut [bool],
        ready: &mut [bool],
        pending: &mut [Vec<u8>],
    ) -> Result<Option<usize>, WaitError> {
        let mut buf = [0u8; 64];
        for (i, fd) in fds.iter().enumerate() {
            if fd.revents().is_none_or(|r| r.is_empty()) {
                continue;
            }
            let n = match subs[i].read(&mut buf) {
                Ok(n) => n,
                Err(Errno::EAGAIN | Errno::EINTR) => continue,
                Err(e) => return Err(WaitError::Poll(e)),
            };
            for k in 0..n {
                if let Some(failures) = self.apply(up, ready, i, buf[k]) {
                    pending[i].extend_from_slice(&buf[k + 1..n]);
                    return Ok(Some(failures));
                }
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tend_proto::fifodir::EventDir;
    use tend_proto::{StatusRecord, Tai64n};

    fn service(name: &str, rec: StatusRecord) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("tend-wait-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join(tend_proto::servicedir::SUPERVISE)).unwrap();
        std::fs::write(d.join(tend_proto::servicedir::STATUS), rec.encode()).unwrap();
        d
    }

    fn down() -> StatusRecord {
        StatusRecord {
            stamp: Tai64n::now(),
            ready: true,
            ..Default::default()
        }
    }

    #[test]
    fn already_there_returns_at_once() {
        let d = service("there", down());
        let mut w = Watch::new();
        w.add(&d).unwrap();
        assert!(d.join(tend_proto::servicedir::EVENT).is_dir());
        let t = Target::from_letter(b'D').unwrap();
        assert_eq!(
            w.wait(t, false, Some(Instant::now())),
            Ok(Outcome::Reached { failures: 0 })
        );
        let t = Target::from_letter(b'u').unwrap();
        assert_eq!(
            w.wait(t, false, Some(Instant::now() + Duration::from_millis(30))),
            Ok(Outcome::TimedOut)
        );
        drop(w);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn events_drive_the_state() {
        let a = service("ev-a", down());
        let b = service("ev-b", down());
        let mut w = Watch::new();
        w.add(&a).unwrap();
        w.add(&b).unwrap();
        let ea = EventDir::open(&a.join(tend_proto::servicedir::EVENT)).unwrap();
        let eb = EventDir::open(&b.join(tend_proto::servicedir::EVENT)).unwrap();
        let soon = || Some(Instant::now() + Duration::from_secs(5));
        ea.notify(b"u");
        let any_up = Target::from_letter(b'u').unwrap();
        assert_eq!(
            w.wait(any_up, true, soon()),
            Ok(Outcome::Reached { failures: 0 })
        );
        eb.notify(b"uU");
        let all_ready = Target::from_letter(b'U').unwrap();
        ea.notify(b"U");
        assert_eq!(
            w.wait(all_ready, false, soon()),
            Ok(Outcome::Reached { failures: 0 })
        );
        let all_down = Target::from_letter(b'd').unwrap();
        ea.notify(b"d");
        eb.notify(b"d");
        assert_eq!(
            w.wait(all_down, false, soon()),
            Ok(Outcome::Reached { failures: 0 })
        );
        // b reports a permanent failure while we wait for both to be up
        ea.notify(b"Du");
        eb.notify(b"DOD");
        assert_eq!(
            w.wait(any_up, false, soon()),
            Ok(Outcome::Reached { failures: 1 })
        );
        // a's supervisor exits while we wait for all down: a failure, then reached
        ea.notify(b"x");
        eb.notify(b"uD");
        assert_eq!(
            w.wait(all_down, false, soon()),
            Ok(Outcome::Reached { failures: 1 })
        );
        drop(w);
        std::fs::remove_dir_all(&a).unwrap();
        std::fs::remove_dir_all(&b).unwrap();
    }

    #[test]
    fn restart_sees_an_immediate_restart() {
        let up = StatusRecord {
            pid: 4242,
            want_up: true,
            ..down()
        };
        let a = service("restart", up);
        let mut w = Watch::new();
        w.add(&a).unwrap();
        let ea = EventDir::open(&a.join(tend_proto::servicedir::EVENT)).unwrap();
        let soon = Some(Instant::now() + Duration::from_secs(5));
        // tend-supervise restarts at once: all three events may come in one read
        ea.notify(b"dDu");
        let restart = Target::from_letter(b'r').unwrap();
        assert_eq!(
            w.wait(restart, false, soon),
            Ok(Outcome::Reached { failures: 0 })
        );
        ea.notify(b"dOD");
        assert_eq!(
            w.wait(restart, false, soon),
            Ok(Outcome::Reached { failures: 1 })
        );
        drop(w);
        std::fs::remove_dir_all(&a).unwrap();
    }

    #[test]
    fn missing_things() {
        let mut w = Watch::new();
        let nowhere = std::env::temp_dir().join(format!("tend-wait-none-{}", std::process::id()));
        assert_eq!(w.add(&nowhere), Err(WaitError::Subscribe(Errno::ENOENT)));
        let d = service("short", down());
        std::fs::write(d.join(tend_proto::servicedir::STATUS), b"short").unwrap();
        assert_eq!(w.add(&d), Err(WaitError::Status(Errno::EPIPE)));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
