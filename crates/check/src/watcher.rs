//! Liveness: probe a supervised service at an interval; after `failures` consecutive
//! failures restart it through its control FIFO (as `tend-svc -r`); after `max_restarts`
//! restarts inside a sliding window stop restarting, leave it up and call it unhealthy.
//! One success makes it healthy again. The verdict is kept in `supervise/tend-check`.

use crate::probe::{self, Probe};
use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tend_proto::ControlCommand;
use tend_proto::StatusRecord;
use tend_proto::control::{SendError, send_commands};
use tend_proto::health;
use tend_sys::Error;
use tend_sys::warn::Warn;

/// The watcher's settings.
#[derive(Debug, Clone)]
pub struct Liveness {
    pub probe: Probe,
    pub servicedir: PathBuf,
    pub interval: Duration,
    pub attempt_timeout: Duration,
    pub failures: u32,
    pub max_restarts: u32,
    pub window: Duration,
    /// How long a service that announces readiness may be up and not ready before each
    /// probe counts as failed (so a restart that never becomes ready is counted, up to
    /// `max_restarts`); zero: never judged while not ready.
    pub grace: Duration,
}

/// The service's health as the watcher judges it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// Not probed yet, or the service is down (nothing to judge).
    Unknown,
    Healthy,
    /// Failing, fewer than `failures` times in a row (or a restart was just asked).
    Failing,
    /// Failing and out of restarts for the window: left alone.
    Unhealthy,
}

impl Health {
    pub fn name(self) -> &'static str {
        match self {
            Health::Unknown => "unknown",
            Health::Healthy => "healthy",
            Health::Failing => "failing",
            Health::Unhealthy => "unhealthy",
        }
    }
}

/// What to do after a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Nothing,
    Restart,
}

/// The pure policy: consecutive failures and the restarts of the sliding window.
#[derive(Debug)]
pub struct Policy {
    failures: u32,
    max_restarts: u32,
    window: Duration,
    pub consecutive: u32,
    restarts: VecDeque<Instant>,
    pub health: Health,
}

impl Policy {
    pub fn new(failures: u32, max_restarts: u32, window: Duration) -> Policy {
        Policy {
            failures: failures.max(1),
            max_restarts,
            window,
            consecutive: 0,
            // Allocated once: at most max_restarts stamps are kept.
            restarts: VecDeque::with_capacity(max_restarts as usize + 1),
            health: Health::Unknown,
        }
    }

    /// Restarts inside the window ending at `now`.
    pub fn restarts_in_window(&mut self, now: Instant) -> u32 {
        while let Some(&t) = self.restarts.front() {
            if now.duration_since(t) >= self.window {
                self.restarts.pop_front();
            } else {
                break;
            }
        }
        self.restarts.len() as u32
    }

    /// The service is down: nothing to judge, and a fresh start gets a fresh count.
    pub fn service_down(&mut self) {
        self.consecutive = 0;
        if self.health != Health::Unhealthy {
            self.health = Health::Unknown;
        }
    }

    /// Take one probe result at `now`.
    pub fn result(&mut self, ok: bool, now: Instant) -> Action {
        if ok {
            self.consecutive = 0;
            self.health = Health::Healthy;
            return Action::Nothing;
        }
        self.consecutive = self.consecutive.saturating_add(1);
        if self.consecutive < self.failures {
            if self.health != Health::Unhealthy {
                self.health = Health::Failing;
            }
            return Action::Nothing;
        }
        if self.restarts_in_window(now) >= self.max_restarts {
            self.health = Health::Unhealthy;
            return Action::Nothing;
        }
        self.restarts.push_back(now);
        self.consecutive = 0;
        self.health = Health::Failing;
        Action::Restart
    }
}

/// The state file is rewritten at least this often while the verdict stays the same.
const HEARTBEAT: Duration = Duration::from_secs(10);

use tend_proto::servicedir::within::{CHECK_STATE as STATE, CHECK_STATE_NEW as STATE_NEW};

/// Where the service stands for the watcher.
enum Standing {
    /// Up, wanted up, and ready if it announces readiness: probe it.
    Probe,
    /// Down, or not wanted up: nothing to judge.
    Down,
    /// Up, but it announces readiness (a `notification-fd`) and is not ready yet: up for
    /// this long.
    NotReady(Duration),
}

fn standing(dir: &std::path::Path) -> Standing {
    let Ok(rec) = StatusRecord::read(dir) else {
        return Standing::Down;
    };
    if !(rec.is_up() && rec.want_up) {
        return Standing::Down;
    }
    if rec.ready || !dir.join(tend_proto::servicedir::NOTIFICATION_FD).exists() {
        return Standing::Probe;
    }
    let (now, then) = (tend_proto::Tai64n::now(), rec.stamp);
    let ns = |t: tend_proto::Tai64n| u128::from(t.secs) * 1_000_000_000 + u128::from(t.nanos);
    let up = ns(now).saturating_sub(ns(then));
    Standing::NotReady(Duration::from_nanos(u64::try_from(up).unwrap_or(u64::MAX)))
}

fn open_supervise(dir: &std::path::Path) -> Result<OwnedFd, Error> {
    let p = dir.join(tend_proto::servicedir::SUPERVISE);
    tend_sys::fd::open(
        &p,
        nix::fcntl::OFlag::O_DIRECTORY | nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .map_err(|e| Error::at("open", &p, e))
}

/// Watch forever. Returns only on a failure to start.
pub fn run(l: &Liveness, warn: &dyn Warn) -> Result<std::convert::Infallible, Error> {
    // The service directory must exist; its supervise/ may come later (the supervisor
    // is started by the same scan).
    nix::sys::stat::stat(&l.servicedir).map_err(|e| Error::at("access", &l.servicedir, e))?;
    let mut sup = open_supervise(&l.servicedir).ok();
    let mut policy = Policy::new(l.failures, l.max_restarts, l.window);
    let mut buf = Vec::new();
    let mut out: Vec<u8> = Vec::with_capacity(512);
    let mut reason = String::with_capacity(256);
    let mut last: Vec<u8> = Vec::with_capacity(512);
    let mut last_write: Option<Instant> = None;
    let me = std::process::id();
    let mut next = Instant::now();
    loop {
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        }
        next += l.interval;
        if next < Instant::now() {
            next = Instant::now() + l.interval;
        }
        if sup.is_none() {
            sup = open_supervise(&l.servicedir).ok();
        }
        reason.clear();
        let (result, action) = match standing(&l.servicedir) {
            Standing::Probe => match probe::attempt(&l.probe, l.attempt_timeout, &[], &mut buf) {
                Ok(()) => ("ok", policy.result(true, Instant::now())),
                Err(why) => {
                    reason.push_str(&why);
                    ("fail", policy.result(false, Instant::now()))
                }
            },
            // Not ready past the grace (a restart whose readiness never came back):
            // a failed probe, so the policy keeps counting toward max-restarts.
            Standing::NotReady(up) if !l.grace.is_zero() && up >= l.grace => {
                use std::fmt::Write as _;
                let _ = write!(reason, "not ready {} ms after it started", up.as_millis());
                ("fail", policy.result(false, Instant::now()))
            }
            // Still starting: not judged, and its failures so far stand.
            Standing::NotReady(_) => {
                reason.push_str("service not ready yet");
                ("skip", Action::Nothing)
            }
            Standing::Down => {
                policy.service_down();
                reason.push_str("service not up");
                ("skip", Action::Nothing)
            }
        };
        if action == Action::Restart {
            match send_commands(&l.servicedir, &[ControlCommand::Restart]) {
                Ok(()) => {}
                Err(SendError::NotListening) => warn.warn(&format_args!(
                    "unable to restart {}: supervisor not listening",
                    l.servicedir.display()
                )),
                Err(SendError::Broken(e) | SendError::Sys(e)) => warn.warn(&format_args!(
                    "unable to restart {}: {}",
                    l.servicedir.display(),
                    e.desc()
                )),
            }
        }
        let restarts = policy.restarts_in_window(Instant::now());
        // The file is rewritten when the verdict changes, and otherwise at most every
        // HEARTBEAT (its `time` says when the last probe with this verdict ran): a fast
        // watcher does not rename a file ten times a second to say the same thing.
        out.clear();
        health::put(&mut out, "health", policy.health.name().as_bytes());
        health::put(&mut out, "result", result.as_bytes());
        health::put(&mut out, "reason", reason.as_bytes());
        health::put_num(&mut out, "failures", u64::from(policy.consecutive));
        health::put_num(&mut out, "restarts", u64::from(restarts));
        health::put_num(&mut out, "max_restarts", u64::from(l.max_restarts));
        health::put_num(&mut out, "watcher", u64::from(me));
        let changed = out != last;
        if !changed && last_write.is_some_and(|t| t.elapsed() < HEARTBEAT) {
            continue;
        }
        if changed {
            last.clear();
            last.extend_from_slice(&out);
        }
        health::put_num(&mut out, "time", health::unix_now());
        last_write = Some(Instant::now());
        if let Some(dir) = &sup
            && let Err(e) = tend_proto::status::write_atomic_at(dir, STATE_NEW, STATE, &out)
        {
            warn.warn(&format_args!(
                "unable to write {}/supervise/tend-check: {}",
                l.servicedir.display(),
                e.desc()
            ));
            sup = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restarts_then_gives_up_then_recovers() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut p = Policy::new(3, 2, s(3600));
        // Three failures → restart; twice; the third time it is out of restarts.
        for round in 0..2 {
            assert_eq!(p.result(false, t0 + s(round * 10)), Action::Nothing);
            assert_eq!(p.health, Health::Failing);
            assert_eq!(p.result(false, t0 + s(round * 10 + 1)), Action::Nothing);
            assert_eq!(p.result(false, t0 + s(round * 10 + 2)), Action::Restart);
        }
        assert_eq!(p.restarts_in_window(t0 + s(30)), 2);
        for i in 0..3 {
            assert_eq!(p.result(false, t0 + s(30 + i)), Action::Nothing);
        }
        assert_eq!(p.health, Health::Unhealthy);
        // Still failing: stays unhealthy, never restarts.
        assert_eq!(p.result(false, t0 + s(40)), Action::Nothing);
        assert_eq!(p.health, Health::Unhealthy);
        // One success: healthy.
        assert_eq!(p.result(true, t0 + s(41)), Action::Nothing);
        assert_eq!(p.health, Health::Healthy);
        // The window slides: an hour after the first restarts, restarts are allowed again.
        for i in 0..2 {
            assert_eq!(p.result(false, t0 + s(3700 + i)), Action::Nothing);
        }
        assert_eq!(p.result(false, t0 + s(3702)), Action::Restart);
    }

    #[test]
    fn zero_restarts_only_reports() {
        let t0 = Instant::now();
        let mut p = Policy::new(1, 0, Duration::from_secs(60));
        assert_eq!(p.result(false, t0), Action::Nothing);
        assert_eq!(p.health, Health::Unhealthy);
        p.service_down();
        assert_eq!(p.health, Health::Unhealthy);
    }
}
