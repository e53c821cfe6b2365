//! The supervisor's state machine, free of processes and files.
//!
//! Every input (a control letter, a child's death, a signal, a timer) goes through one
//! method that updates the state and returns the actions to carry out, in order. The
//! driver (`crate::daemon`) performs them; the unit tests check every state × input cell
//! without forking anything.

use crate::policy::{self, Policy, Tally, Then};
pub use crate::time::{Ms, Now};
use nix::sys::signal::Signal;
use tend_proto::{ControlCommand, StatusRecord, Tai64n};
use tend_sys::wait::Wstat;

/// Pacing: at least this long between two spawns of ./run (start to start).
pub const MIN_RESTART_MS: Ms = 1000;
/// Retry delay after ./run could not be exec'd.
pub const EXEC_RETRY_MS: Ms = 10_000;
/// Retry delay after fork itself failed.
pub const FORK_RETRY_MS: Ms = 60_000;

/// Where the service is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Nothing running.
    Down,
    /// ./run is alive.
    Up,
    /// ./run died; ./finish is running.
    Finishing,
}

/// Per-run settings read from the service directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    pub down_signal: Signal,
    /// 0: never SIGKILL after `d`.
    pub timeout_kill: Ms,
    /// 0: let ./finish run forever.
    pub timeout_finish: Ms,
    /// `flag-timeout-killpg` (s6 2.15): the timeout-kill SIGKILL goes to ./run's group.
    pub timeout_kill_group: bool,
    /// `reload-signal` (s6 2.15.1): what `l` sends.
    pub reload_signal: Signal,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            down_signal: Signal::SIGTERM,
            timeout_kill: 0,
            timeout_finish: 5000,
            timeout_kill_group: false,
            reload_signal: Signal::SIGHUP,
        }
    }
}

/// Something for the driver to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// kill(pid, sig) on the current ./run (or ./finish for SIGKILL on timeout).
    Kill { pid: i32, sig: Signal },
    /// killpg(pid, sig).
    KillGroup { pid: i32, sig: Signal },
    /// Fork and exec ./run; report back with `spawned` or `spawn_failed`.
    SpawnRun,
    /// Fork ./finish with ./run's wait status; report back with `finish_spawned`.
    SpawnFinish { wstat: Wstat },
    /// Rewrite supervise/status (no event).
    WriteStatus,
    /// Rewrite supervise/status, then send these events to event/.
    Publish(&'static [u8]),
    /// Append a death to death_tally.
    RecordDeath { wstat: Wstat },
    /// The crash-restart policy fired on this death: record it in supervise/tend-policy.
    PolicyFired { then: Then, wstat: Wstat },
    /// Create ./down.
    CreateDown,
    /// Remove ./down.
    RemoveDown,
    /// Reopen our own stdin and stdout on /dev/null.
    CloseStdio,
    /// Send the `x` event and exit 0.
    Exit,
}

/// A short, fixed-capacity list of actions (no allocation per event). No transition
/// pushes more than [`Actions::CAPACITY`]: the longest path (`D` on a live ./run, or a
/// death without ./finish) pushes 4, and the tests drive every transition from every
/// phase with debug assertions on, so a push past the capacity fails them.
#[derive(Debug, Clone, Copy)]
pub struct Actions {
    buf: [Action; Actions::CAPACITY],
    len: usize,
}

impl Actions {
    pub const CAPACITY: usize = 8;

    fn new() -> Actions {
        Actions {
            buf: [Action::WriteStatus; Actions::CAPACITY],
            len: 0,
        }
    }

    fn push(&mut self, a: Action) {
        debug_assert!(
            self.len < Actions::CAPACITY,
            "more than {} actions",
            Actions::CAPACITY
        );
        if let Some(slot) = self.buf.get_mut(self.len) {
            *slot = a;
            self.len += 1;
        }
    }

    pub fn as_slice(&self) -> &[Action] {
        &self.buf[..self.len]
    }
}

/// The whole state of one supervisor. Private: only the transitions below change it;
/// the driver reads it through the accessors.
#[derive(Debug, Clone)]
pub struct Core {
    phase: Phase,
    want_up: bool,
    /// Exit once the service is down and ./finish is done (`x`, SIGHUP, SIGTERM).
    exit_after: bool,
    paused: bool,
    /// No ./run started yet: the status says so as s6 2.13.2+ does (paused, pid 0).
    not_started: bool,
    ready: bool,
    /// ./run's pid when Up, ./finish's pid when Finishing (0 if finish was not forked).
    pid: i32,
    wstat: u16,
    stamp: Tai64n,
    readystamp: Tai64n,
    last_spawn: Option<Ms>,
    /// When ./run is due to be (re)started.
    spawn_at: Option<Ms>,
    /// timeout-kill deadline after `d`.
    kill_at: Option<Ms>,
    /// timeout-finish deadline.
    finish_kill_at: Option<Ms>,
    settings: Settings,
    /// `restart-policy`, re-read at every start of ./run.
    policy: Option<Policy>,
    /// The deaths the policy counts.
    tally: Tally,
    /// The policy's verdict on the last death, until ./finish is done.
    fired: Option<Then>,
}

impl Core {
    /// A fresh supervisor: down and ready; `normally_up` is "no ./down file".
    pub fn new(now: Now, normally_up: bool) -> Core {
        Core {
            phase: Phase::Down,
            want_up: normally_up,
            exit_after: false,
            paused: false,
            not_started: true,
            ready: true,
            pid: 0,
            wstat: 0,
            stamp: now.wall,
            readystamp: now.wall,
            last_spawn: None,
            spawn_at: None,
            kill_at: None,
            finish_kill_at: None,
            settings: Settings::default(),
            policy: None,
            tally: Tally::default(),
            fired: None,
        }
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// ./run's pid when Up, ./finish's when Finishing (0 if finish was not forked).
    pub fn pid(&self) -> i32 {
        self.pid
    }

    pub fn want_up(&self) -> bool {
        self.want_up
    }

    /// Told to exit once the service is down (`x`, SIGHUP, SIGTERM): no restart is due.
    pub fn exiting(&self) -> bool {
        self.exit_after
    }

    /// When ./run was last spawned (monotonic ms).
    pub fn last_spawn(&self) -> Option<Ms> {
        self.last_spawn
    }

    /// When the state last changed (wall clock), as the status record says.
    pub fn stamp(&self) -> Tai64n {
        self.stamp
    }

    /// The crash-restart policy in effect (`restart-policy`), if any.
    pub fn policy(&self) -> Option<Policy> {
        self.policy
    }

    /// The policy read from the service directory before each start of ./run.
    pub fn set_policy(&mut self, policy: Option<Policy>) {
        self.policy = policy;
    }

    /// The settings read from the service directory before each start of ./run.
    pub fn set_settings(&mut self, settings: Settings) {
        self.settings = settings;
    }

    /// The status record to publish.
    pub fn record(&self) -> StatusRecord {
        StatusRecord {
            stamp: self.stamp,
            readystamp: self.readystamp,
            pid: if self.phase == Phase::Down {
                0
            } else {
                self.pid.max(0) as u64
            },
            wstat: self.wstat,
            paused: self.paused || (self.not_started && self.phase == Phase::Down),
            finishing: self.phase == Phase::Finishing,
            want_up: self.want_up,
            ready: self.ready,
        }
    }

    /// The first thing to do: publish `s`, then start ./run if wanted.
    pub fn start(&mut self, now: Now) -> Actions {
        let mut a = Actions::new();
        a.push(Action::Publish(b"s"));
        if self.want_up {
            self.spawn_at = Some(now.mono);
            a.push(Action::SpawnRun);
        }
        a
    }

    /// The start's announcement is out: later records drop the not-started mark (s6
    /// writes it once, before anything else).
    pub fn started(&mut self) {
        self.not_started = false;
    }

    /// The signal `l` sends, read from `reload-signal` when the letter comes (as s6 does).
    pub fn set_reload_signal(&mut self, sig: Signal) {
        self.settings.reload_signal = sig;
    }

    /// The earliest pending deadline, for the poll timeout.
    pub fn next_deadline(&self) -> Option<Ms> {
        [self.spawn_at, self.kill_at, self.finish_kill_at]
            .into_iter()
            .flatten()
            .min()
    }

    /// ./run was forked and exec'd.
    pub fn spawned(&mut self, pid: i32, now: Now) -> Actions {
        let mut a = Actions::new();
        self.phase = Phase::Up;
        self.pid = pid;
        self.ready = false;
        self.paused = false;
        self.not_started = false;
        self.stamp = now.wall;
        self.last_spawn = Some(now.mono);
        self.spawn_at = None;
        self.kill_at = None;
        a.push(Action::Publish(b"u"));
        a
    }

    /// ./run could not be started: exec failed (`exec_code` = 126/127), or fork failed
    /// (`exec_code` = None). Stay down and retry later; the status says why.
    pub fn spawn_failed(&mut self, exec_code: Option<u8>, now: Now) -> Actions {
        self.not_started = false;
        let mut a = Actions::new();
        self.last_spawn = Some(now.mono);
        let delay = match exec_code {
            Some(code) => {
                self.wstat = u16::from(code) << 8;
                EXEC_RETRY_MS
            }
            None => FORK_RETRY_MS,
        };
        self.spawn_at = if self.want_up {
            Some(now.mono + delay)
        } else {
            None
        };
        a.push(Action::WriteStatus);
        if self.exit_after {
            a.push(Action::Exit);
        }
        a
    }

    /// The readiness line arrived.
    pub fn became_ready(&mut self, now: Now) -> Actions {
        let mut a = Actions::new();
        if self.phase == Phase::Up && !self.ready {
            self.ready = true;
            self.readystamp = now.wall;
            a.push(Action::Publish(b"U"));
        }
        a
    }

    /// ./run died with `wstat`. `finish_exists` says whether to fork ./finish.
    pub fn run_died(&mut self, wstat: Wstat, finish_exists: bool, now: Now) -> Actions {
        let mut a = Actions::new();
        self.wstat = wstat.low16();
        self.paused = false;
        self.ready = false;
        self.stamp = now.wall;
        self.kill_at = None;
        a.push(Action::RecordDeath { wstat });
        self.fired = self
            .policy
            .as_ref()
            .and_then(|p| policy::on_death(p, &mut self.tally, wstat, now.mono));
        if let Some(then) = self.fired {
            a.push(Action::PolicyFired { then, wstat });
        }
        if finish_exists {
            self.phase = Phase::Finishing;
            self.pid = 0;
            a.push(Action::SpawnFinish { wstat });
        } else {
            self.phase = Phase::Finishing;
            self.pid = 0;
            a.push(Action::Publish(b"d"));
            self.finish_done(false, now, &mut a);
        }
        a
    }

    /// ./finish was forked (pid) or could not be (None).
    pub fn finish_spawned(&mut self, pid: Option<i32>, now: Now) -> Actions {
        let mut a = Actions::new();
        match pid {
            Some(pid) => {
                self.pid = pid;
                if self.settings.timeout_finish > 0 {
                    self.finish_kill_at =
                        Some(now.mono.saturating_add(self.settings.timeout_finish));
                }
                a.push(Action::Publish(b"d"));
            }
            None => {
                a.push(Action::Publish(b"d"));
                self.finish_done(false, now, &mut a);
            }
        }
        a
    }

    /// ./finish exited with `wstat`.
    pub fn finish_died(&mut self, wstat: Wstat, now: Now) -> Actions {
        let mut a = Actions::new();
        // s6: ./finish exiting 125 means "do not restart".
        let permanent = wstat.exit_code() == Some(125);
        self.finish_done(permanent, now, &mut a);
        a
    }

    fn finish_done(&mut self, permanent: bool, now: Now, a: &mut Actions) {
        let fired = self.fired.take();
        let permanent = permanent || fired == Some(Then::Stop);
        let pace = match fired {
            Some(Then::Slow(ms)) => ms.max(MIN_RESTART_MS),
            _ => MIN_RESTART_MS,
        };
        self.phase = Phase::Down;
        self.pid = 0;
        self.finish_kill_at = None;
        self.ready = true;
        self.readystamp = now.wall;
        if permanent {
            self.want_up = false;
            a.push(Action::Publish(b"OD"));
        } else {
            a.push(Action::Publish(b"D"));
        }
        if self.exit_after {
            a.push(Action::Exit);
        } else if self.want_up {
            let at = self
                .last_spawn
                .map_or(now.mono, |t| (t + pace).max(now.mono));
            self.spawn_at = Some(at);
            if at <= now.mono {
                a.push(Action::SpawnRun);
            }
        }
    }

    /// A timer may have expired.
    pub fn tick(&mut self, now: Now) -> Actions {
        let mut a = Actions::new();
        if let Some(t) = self.kill_at
            && t <= now.mono
        {
            self.kill_at = None;
            if self.phase == Phase::Up && self.settings.timeout_kill_group {
                a.push(Action::KillGroup {
                    pid: self.pid,
                    sig: Signal::SIGKILL,
                });
                a.push(Action::KillGroup {
                    pid: self.pid,
                    sig: Signal::SIGCONT,
                });
            } else if self.phase == Phase::Up {
                a.push(Action::Kill {
                    pid: self.pid,
                    sig: Signal::SIGKILL,
                });
            }
        }
        if let Some(t) = self.finish_kill_at
            && t <= now.mono
        {
            self.finish_kill_at = None;
            if self.phase == Phase::Finishing && self.pid > 0 {
                a.push(Action::Kill {
                    pid: self.pid,
                    sig: Signal::SIGKILL,
                });
            }
        }
        if let Some(t) = self.spawn_at
            && t <= now.mono
            && self.phase == Phase::Down
        {
            if self.want_up {
                a.push(Action::SpawnRun);
            } else {
                self.spawn_at = None;
            }
        }
        a
    }

    /// Start ./run now if down (explicit commands are not paced).
    fn start_now(&mut self, now: Now, a: &mut Actions) {
        if self.phase == Phase::Down {
            self.spawn_at = Some(now.mono);
            a.push(Action::SpawnRun);
        }
    }

    fn bring_down(&mut self, now: Now, a: &mut Actions) {
        self.want_up = false;
        self.spawn_at = None;
        if self.phase == Phase::Up {
            a.push(Action::Kill {
                pid: self.pid,
                sig: self.settings.down_signal,
            });
            a.push(Action::Kill {
                pid: self.pid,
                sig: Signal::SIGCONT,
            });
            self.paused = false;
            if self.settings.timeout_kill > 0 {
                self.kill_at = Some(now.mono.saturating_add(self.settings.timeout_kill));
            }
        }
        a.push(Action::WriteStatus);
    }

    /// One control letter.
    pub fn control(&mut self, cmd: ControlCommand, now: Now) -> Actions {
        use ControlCommand as C;
        let mut a = Actions::new();
        match cmd {
            C::Signal(_)
            | C::Pause
            | C::Continue
            | C::PauseGroup
            | C::ContinueGroup
            | C::KillGroup
            | C::Reload
            | C::Restart => self.signal_run(cmd, &mut a),
            C::Down => self.bring_down(now, &mut a),
            C::DownPermanent => {
                a.push(Action::CreateDown);
                self.bring_down(now, &mut a);
            }
            C::Up => {
                self.want_up = true;
                a.push(Action::WriteStatus);
                self.start_now(now, &mut a);
            }
            C::UpPermanent => {
                a.push(Action::RemoveDown);
                self.want_up = true;
                a.push(Action::WriteStatus);
                self.start_now(now, &mut a);
            }
            C::Once => {
                self.want_up = false;
                a.push(Action::WriteStatus);
                self.start_now(now, &mut a);
            }
            C::OnceNoStart => {
                self.want_up = false;
                self.spawn_at = None;
                a.push(Action::WriteStatus);
            }
            C::QuitKeep => {
                self.want_up = false;
                self.spawn_at = None;
                a.push(Action::CreateDown);
                a.push(Action::WriteStatus);
            }
            C::Exit => {
                if self.phase == Phase::Down {
                    a.push(Action::Exit);
                } else {
                    self.exit_after = true;
                    a.push(Action::CloseStdio);
                }
            }
        }
        a
    }

    /// The letters that only signal ./run (or its process group), and only while it is
    /// up; pausing and continuing also set the paused mark.
    fn signal_run(&mut self, cmd: ControlCommand, a: &mut Actions) {
        use ControlCommand as C;
        if self.phase != Phase::Up {
            return;
        }
        let pid = self.pid;
        let (kill, paused) = match cmd {
            C::Signal(sig) => (Action::Kill { pid, sig }, None),
            C::Pause => (
                Action::Kill {
                    pid,
                    sig: Signal::SIGSTOP,
                },
                Some(true),
            ),
            C::Continue => (
                Action::Kill {
                    pid,
                    sig: Signal::SIGCONT,
                },
                Some(false),
            ),
            C::PauseGroup => (
                Action::KillGroup {
                    pid,
                    sig: Signal::SIGSTOP,
                },
                Some(true),
            ),
            C::ContinueGroup => (
                Action::KillGroup {
                    pid,
                    sig: Signal::SIGCONT,
                },
                Some(false),
            ),
            C::KillGroup => (
                Action::KillGroup {
                    pid,
                    sig: Signal::SIGKILL,
                },
                None,
            ),
            C::Reload => (
                Action::Kill {
                    pid,
                    sig: self.settings.reload_signal,
                },
                None,
            ),
            C::Restart => (
                Action::Kill {
                    pid,
                    sig: self.settings.down_signal,
                },
                None,
            ),
            _ => return,
        };
        a.push(kill);
        if let Some(p) = paused {
            self.paused = p;
            a.push(Action::WriteStatus);
        }
    }

    /// A signal to the supervisor itself.
    pub fn signal(&mut self, sig: Signal, now: Now) -> Actions {
        let mut a = Actions::new();
        match sig {
            Signal::SIGTERM => match self.phase {
                Phase::Down => a.push(Action::Exit),
                Phase::Up => {
                    self.exit_after = true;
                    self.bring_down(now, &mut a);
                }
                Phase::Finishing => {
                    self.exit_after = true;
                    a.push(Action::CloseStdio);
                }
            },
            Signal::SIGHUP => {
                if self.phase == Phase::Down {
                    a.push(Action::Exit);
                } else {
                    self.exit_after = true;
                    a.push(Action::CloseStdio);
                }
            }
            Signal::SIGQUIT => a.push(Action::Exit),
            Signal::SIGINT => {
                if self.phase == Phase::Up {
                    a.push(Action::KillGroup {
                        pid: self.pid,
                        sig: Signal::SIGINT,
                    });
                }
                a.push(Action::Exit);
            }
            _ => {}
        }
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Action::*;
    use ControlCommand as C;

    fn at(ms: Ms) -> Now {
        Now {
            mono: ms,
            wall: Tai64n::from_unix(1_800_000_000 + ms / 1000, 0),
        }
    }

    fn down() -> Core {
        Core::new(at(0), false)
    }

    fn up() -> Core {
        let mut c = Core::new(at(0), true);
        c.start(at(0));
        c.spawned(100, at(0));
        c
    }

    fn finishing() -> Core {
        let mut c = up();
        c.run_died(Wstat(15), true, at(5000));
        c.finish_spawned(Some(200), at(5000));
        c
    }

    fn acts(a: Actions) -> Vec<Action> {
        a.as_slice().to_vec()
    }

    #[test]
    fn start_publishes_s_then_spawns_if_normally_up() {
        let mut c = Core::new(at(0), true);
        assert_eq!(acts(c.start(at(0))), vec![Publish(b"s"), SpawnRun]);
        let mut c = Core::new(at(0), false);
        assert_eq!(acts(c.start(at(0))), vec![Publish(b"s")]);
        let r = c.record();
        assert!(r.ready && !r.want_up && r.pid == 0 && r.stamp == r.readystamp);
    }

    #[test]
    fn spawn_sets_up_not_ready() {
        let c = up();
        let r = c.record();
        assert_eq!(
            (r.pid, r.ready, r.want_up, r.finishing),
            (100, false, true, false)
        );
    }

    #[test]
    fn pause_and_continue() {
        let mut c = up();
        assert_eq!(
            acts(c.control(C::Pause, at(1))),
            vec![
                Kill {
                    pid: 100,
                    sig: Signal::SIGSTOP
                },
                WriteStatus
            ]
        );
        assert!(c.record().paused);
        assert_eq!(
            acts(c.control(C::Continue, at(2))),
            vec![
                Kill {
                    pid: 100,
                    sig: Signal::SIGCONT
                },
                WriteStatus
            ]
        );
        assert!(!c.record().paused);
        assert_eq!(acts(down().control(C::Pause, at(1))), vec![]);
        assert_eq!(acts(finishing().control(C::Continue, at(5001))), vec![]);
    }

    /// A timeout file may hold any 19-digit number: the deadline saturates, never wraps.
    #[test]
    fn huge_timeouts_saturate() {
        let mut c = up();
        c.settings.timeout_kill = u64::MAX;
        c.control(C::Down, at(10));
        assert_eq!(c.kill_at, Some(u64::MAX));
        assert!(!acts(c.tick(at(1_000_000))).contains(&Kill {
            pid: 100,
            sig: Signal::SIGKILL
        }));
    }

    #[test]
    fn down_in_each_phase() {
        let mut c = up();
        c.settings.timeout_kill = 300;
        assert_eq!(
            acts(c.control(C::Down, at(10))),
            vec![
                Kill {
                    pid: 100,
                    sig: Signal::SIGTERM
                },
                Kill {
                    pid: 100,
                    sig: Signal::SIGCONT
                },
                WriteStatus
            ]
        );
        assert!(!c.want_up);
        assert_eq!(c.kill_at, Some(310));
        assert_eq!(
            acts(c.tick(at(310))),
            vec![Kill {
                pid: 100,
                sig: Signal::SIGKILL
            }]
        );
        let mut d = down();
        assert_eq!(acts(d.control(C::Down, at(1))), vec![WriteStatus]);
        let mut f = finishing();
        assert_eq!(acts(f.control(C::Down, at(5001))), vec![WriteStatus]);
        assert!(!f.want_up);
        assert_eq!(acts(f.finish_died(Wstat(0), at(5002))), vec![Publish(b"D")]);
    }

    #[test]
    fn down_signal_is_configurable() {
        let mut c = up();
        c.settings.down_signal = Signal::SIGHUP;
        assert_eq!(
            acts(c.control(C::Restart, at(10))),
            vec![Kill {
                pid: 100,
                sig: Signal::SIGHUP
            }]
        );
        assert_eq!(acts(down().control(C::Restart, at(10))), vec![]);
    }

    #[test]
    fn up_letters() {
        let mut d = down();
        assert_eq!(acts(d.control(C::Up, at(1))), vec![WriteStatus, SpawnRun]);
        let mut d = down();
        assert_eq!(
            acts(d.control(C::UpPermanent, at(1))),
            vec![RemoveDown, WriteStatus, SpawnRun]
        );
        let mut u = up();
        assert_eq!(acts(u.control(C::Up, at(1))), vec![WriteStatus]);
        let mut f = finishing();
        f.want_up = false;
        assert_eq!(acts(f.control(C::Up, at(5001))), vec![WriteStatus]);
        assert!(f.want_up);
    }

    #[test]
    fn once_letters() {
        let mut d = Core::new(at(0), true);
        d.want_up = false;
        assert_eq!(acts(d.control(C::Once, at(1))), vec![WriteStatus, SpawnRun]);
        assert!(!d.want_up);
        let mut u = up();
        assert_eq!(acts(u.control(C::Once, at(1))), vec![WriteStatus]);
        assert!(!u.want_up);
        let mut d = down();
        assert_eq!(acts(d.control(C::OnceNoStart, at(1))), vec![WriteStatus]);
        let mut u = up();
        assert_eq!(
            acts(u.control(C::QuitKeep, at(1))),
            vec![CreateDown, WriteStatus]
        );
        assert!(!u.want_up && u.phase == Phase::Up);
        let mut u = up();
        assert_eq!(acts(u.control(C::DownPermanent, at(1)))[0], CreateDown);
    }

    #[test]
    fn exit_letter() {
        assert_eq!(acts(down().control(C::Exit, at(1))), vec![Exit]);
        let mut u = up();
        assert_eq!(acts(u.control(C::Exit, at(1))), vec![CloseStdio]);
        assert_eq!(
            acts(u.run_died(Wstat(0), true, at(2))),
            vec![
                RecordDeath { wstat: Wstat(0) },
                SpawnFinish { wstat: Wstat(0) }
            ]
        );
        assert_eq!(acts(u.finish_spawned(Some(7), at(2))), vec![Publish(b"d")]);
        assert_eq!(
            acts(u.finish_died(Wstat(0), at(3))),
            vec![Publish(b"D"), Exit]
        );
        let mut f = finishing();
        assert_eq!(acts(f.control(C::Exit, at(5001))), vec![CloseStdio]);
        assert_eq!(
            acts(f.finish_died(Wstat(0), at(5002))),
            vec![Publish(b"D"), Exit]
        );
    }

    #[test]
    fn death_without_finish_is_d_then_d_at_once() {
        let mut c = up();
        c.spawned(100, at(0));
        let a = acts(c.run_died(Wstat(3 << 8), false, at(2000)));
        assert_eq!(
            a,
            vec![
                RecordDeath { wstat: Wstat(768) },
                Publish(b"d"),
                Publish(b"D"),
                SpawnRun
            ]
        );
        let r = c.record();
        assert_eq!((r.wstat, r.ready, r.pid), (0x0300, true, 0));
    }

    #[test]
    fn finishing_status_has_finish_pid() {
        let c = finishing();
        let r = c.record();
        assert_eq!(
            (r.pid, r.finishing, r.ready, r.want_up, r.wstat),
            (200, true, false, true, 15)
        );
        assert!(!r.is_up());
    }

    #[test]
    fn restart_policy_stops_or_slows() {
        let mut c = Core::new(at(0), true);
        c.policy = Some(Policy::parse("deaths=2\nseconds=60\nthen=stop").unwrap());
        c.spawned(10, at(0));
        let a = c.run_died(Wstat(1 << 8), false, at(100));
        assert!(
            !a.as_slice()
                .iter()
                .any(|x| matches!(x, Action::PolicyFired { .. }))
        );
        assert!(c.want_up);
        c.tick(at(1000));
        c.spawned(11, at(1000));
        let a = c.run_died(Wstat(1 << 8), false, at(1100));
        assert_eq!(
            a.as_slice(),
            &[
                Action::RecordDeath {
                    wstat: Wstat(1 << 8)
                },
                Action::PolicyFired {
                    then: Then::Stop,
                    wstat: Wstat(1 << 8)
                },
                Action::Publish(b"d"),
                Action::Publish(b"OD"),
            ]
        );
        assert!(!c.want_up && c.spawn_at.is_none());
        // Slow: the next start waits for the slow pace, not one second.
        let mut c = Core::new(at(0), true);
        c.policy = Some(Policy::parse("deaths=1\nseconds=60\nthen=slow:30s").unwrap());
        c.spawned(10, at(0));
        let a = c.run_died(Wstat(0), false, at(100));
        assert!(a.as_slice().contains(&Action::PolicyFired {
            then: Then::Slow(30_000),
            wstat: Wstat(0)
        }));
        assert!(c.want_up);
        assert_eq!(c.spawn_at, Some(30_000));
        assert!(c.tick(at(29_999)).as_slice().is_empty());
        assert_eq!(c.tick(at(30_000)).as_slice(), &[Action::SpawnRun]);
    }

    #[test]
    fn finish_125_is_permanent_failure() {
        let mut c = finishing();
        assert_eq!(
            acts(c.finish_died(Wstat(125 << 8), at(5001))),
            vec![Publish(b"OD")]
        );
        assert!(!c.want_up);
        assert_eq!(c.spawn_at, None);
    }

    #[test]
    fn timeout_finish_kills_finish() {
        let mut c = finishing();
        assert_eq!(c.finish_kill_at, Some(10_000));
        assert_eq!(
            acts(c.tick(at(10_000))),
            vec![Kill {
                pid: 200,
                sig: Signal::SIGKILL
            }]
        );
        let mut c = up();
        c.settings.timeout_finish = 0;
        c.run_died(Wstat(0), true, at(1));
        c.finish_spawned(Some(9), at(1));
        assert_eq!(c.finish_kill_at, None);
    }

    #[test]
    fn pacing_one_second_start_to_start() {
        let mut c = up(); // spawned at 0
        c.run_died(Wstat(1 << 8), false, at(200));
        // died quickly: the next start waits until 1000
        assert_eq!(c.spawn_at, Some(1000));
        assert_eq!(acts(c.tick(at(999))), vec![]);
        assert_eq!(acts(c.tick(at(1000))), vec![SpawnRun]);
        c.spawned(101, at(1000));
        // lived longer than a second: restart at once
        let a = acts(c.run_died(Wstat(15), false, at(2500)));
        assert_eq!(*a.last().unwrap(), SpawnRun);
    }

    #[test]
    fn exec_failure_retries_after_ten_seconds_and_says_why() {
        let mut c = Core::new(at(0), true);
        c.start(at(0));
        assert_eq!(acts(c.spawn_failed(Some(126), at(0))), vec![WriteStatus]);
        assert_eq!(c.spawn_at, Some(EXEC_RETRY_MS));
        assert_eq!(c.record().exitcode(), Some(126));
        assert_eq!(acts(c.tick(at(9_999))), vec![]);
        assert_eq!(acts(c.tick(at(10_000))), vec![SpawnRun]);
        // an explicit `u` does not wait for the retry
        let mut c2 = Core::new(at(0), true);
        c2.spawn_failed(Some(127), at(0));
        assert_eq!(acts(c2.control(C::Up, at(5))), vec![WriteStatus, SpawnRun]);
        let mut c3 = Core::new(at(0), true);
        c3.spawn_failed(None, at(0));
        assert_eq!(c3.spawn_at, Some(FORK_RETRY_MS));
    }

    #[test]
    fn not_started_mark_until_the_first_start() {
        // s6 2.13.2+: the first record is paused with pid 0; 2.15's s6-svstat reads that
        // as "not started yet".
        let mut c = Core::new(at(0), false);
        assert!(c.record().paused && c.record().pid == 0);
        c.started();
        assert!(!c.record().paused);
        let mut c = Core::new(at(0), true);
        c.start(at(0));
        c.spawned(100, at(0));
        assert!(!c.record().paused);
    }

    #[test]
    fn timeout_kill_to_the_group_with_flag_timeout_killpg() {
        let mut c = up();
        c.settings.timeout_kill = 300;
        c.settings.timeout_kill_group = true;
        c.control(C::Down, at(1000));
        let g = |sig| KillGroup { pid: 100, sig };
        assert_eq!(acts(c.tick(at(1300))), vec![g(Signal::SIGKILL), g(CONT)]);
    }

    #[test]
    fn readiness() {
        let mut c = up();
        assert_eq!(acts(c.became_ready(at(50))), vec![Publish(b"U")]);
        assert!(c.record().ready);
        assert_eq!(acts(c.became_ready(at(60))), vec![]);
        assert_eq!(acts(down().became_ready(at(1))), vec![]);
    }

    #[test]
    fn supervisor_signals() {
        assert_eq!(acts(down().signal(Signal::SIGTERM, at(1))), vec![Exit]);
        let mut u = up();
        let a = acts(u.signal(Signal::SIGTERM, at(1)));
        assert_eq!(
            a[0],
            Kill {
                pid: 100,
                sig: Signal::SIGTERM
            }
        );
        assert!(u.exit_after && !u.want_up && !a.contains(&CloseStdio));
        let mut f = finishing();
        assert_eq!(acts(f.signal(Signal::SIGTERM, at(5001))), vec![CloseStdio]);
        assert_eq!(acts(down().signal(Signal::SIGHUP, at(1))), vec![Exit]);
        let mut u = up();
        assert_eq!(acts(u.signal(Signal::SIGHUP, at(1))), vec![CloseStdio]);
        assert!(u.want_up && u.exit_after);
        assert_eq!(acts(up().signal(Signal::SIGQUIT, at(1))), vec![Exit]);
        assert_eq!(
            acts(up().signal(Signal::SIGINT, at(1))),
            vec![
                KillGroup {
                    pid: 100,
                    sig: Signal::SIGINT
                },
                Exit
            ]
        );
        assert_eq!(acts(down().signal(Signal::SIGINT, at(1))), vec![Exit]);
    }

    /// The phases a cell starts from, by name: Down (not wanted up), Up (./run is pid
    /// 100, wanted up), Finishing (./finish is pid 200, wanted up).
    fn phase(name: &str) -> Core {
        match name {
            "down" => down(),
            "up" => up(),
            "finishing" => finishing(),
            _ => unreachable!("{name}"),
        }
    }

    const TERM: Signal = Signal::SIGTERM;
    const CONT: Signal = Signal::SIGCONT;

    /// Every control letter × phase: (letter, phase, actions, want_up after, exit_after
    /// after). The phase itself never changes on a letter: only deaths and spawns do.
    #[test]
    fn control_matrix() {
        let k = |sig| Kill { pid: 100, sig };
        let g = |sig| KillGroup { pid: 100, sig };
        let signal_letters = [
            (b'a', Signal::SIGALRM),
            (b'b', Signal::SIGABRT),
            (b'q', Signal::SIGQUIT),
            (b'h', Signal::SIGHUP),
            (b'k', Signal::SIGKILL),
            (b't', Signal::SIGTERM),
            (b'i', Signal::SIGINT),
            (b'1', Signal::SIGUSR1),
            (b'2', Signal::SIGUSR2),
            (b'y', Signal::SIGWINCH),
        ];
        let mut rows: Vec<(u8, &str, Vec<Action>, bool, bool)> = Vec::new();
        for (l, sig) in signal_letters {
            rows.push((l, "down", vec![], false, false));
            rows.push((l, "up", vec![k(sig)], true, false));
            rows.push((l, "finishing", vec![], true, false));
        }
        #[rustfmt::skip]
        rows.extend([
            (b'p', "down", vec![], false, false),
            (b'p', "up", vec![k(Signal::SIGSTOP), WriteStatus], true, false),
            (b'p', "finishing", vec![], true, false),
            (b'c', "down", vec![], false, false),
            (b'c', "up", vec![k(CONT), WriteStatus], true, false),
            (b'c', "finishing", vec![], true, false),
            (b'P', "down", vec![], false, false),
            (b'P', "up", vec![g(Signal::SIGSTOP), WriteStatus], true, false),
            (b'P', "finishing", vec![], true, false),
            (b'C', "down", vec![], false, false),
            (b'C', "up", vec![g(CONT), WriteStatus], true, false),
            (b'C', "finishing", vec![], true, false),
            (b'K', "down", vec![], false, false),
            (b'K', "up", vec![g(Signal::SIGKILL)], true, false),
            (b'K', "finishing", vec![], true, false),
            (b'l', "down", vec![], false, false),
            (b'l', "up", vec![k(Signal::SIGHUP)], true, false),
            (b'l', "finishing", vec![], true, false),
            (b'r', "down", vec![], false, false),
            (b'r', "up", vec![k(TERM)], true, false),
            (b'r', "finishing", vec![], true, false),
            (b'o', "down", vec![WriteStatus, SpawnRun], false, false),
            (b'o', "up", vec![WriteStatus], false, false),
            (b'o', "finishing", vec![WriteStatus], false, false),
            (b'd', "down", vec![WriteStatus], false, false),
            (b'd', "up", vec![k(TERM), k(CONT), WriteStatus], false, false),
            (b'd', "finishing", vec![WriteStatus], false, false),
            (b'u', "down", vec![WriteStatus, SpawnRun], true, false),
            (b'u', "up", vec![WriteStatus], true, false),
            (b'u', "finishing", vec![WriteStatus], true, false),
            (b'D', "down", vec![CreateDown, WriteStatus], false, false),
            (b'D', "up", vec![CreateDown, k(TERM), k(CONT), WriteStatus], false, false),
            (b'D', "finishing", vec![CreateDown, WriteStatus], false, false),
            (b'U', "down", vec![RemoveDown, WriteStatus, SpawnRun], true, false),
            (b'U', "up", vec![RemoveDown, WriteStatus], true, false),
            (b'U', "finishing", vec![RemoveDown, WriteStatus], true, false),
            (b'x', "down", vec![Exit], false, false),
            (b'x', "up", vec![CloseStdio], true, true),
            (b'x', "finishing", vec![CloseStdio], true, true),
            (b'O', "down", vec![WriteStatus], false, false),
            (b'O', "up", vec![WriteStatus], false, false),
            (b'O', "finishing", vec![WriteStatus], false, false),
            (b'Q', "down", vec![CreateDown, WriteStatus], false, false),
            (b'Q', "up", vec![CreateDown, WriteStatus], false, false),
            (b'Q', "finishing", vec![CreateDown, WriteStatus], false, false),
        ]);
        // Every letter a client may send, from every phase, exactly once.
        assert_eq!(rows.len(), tend_proto::control::LETTERS.len() * 3);
        for l in tend_proto::control::LETTERS.bytes() {
            assert_eq!(rows.iter().filter(|r| r.0 == l).count(), 3, "{}", l as char);
        }
        for (letter, from, actions, want_up, exit_after) in rows {
            let cell = format!("letter {} in {from}", letter as char);
            let mut c = phase(from);
            let before = c.phase;
            let cmd = ControlCommand::from_byte(letter).unwrap();
            assert_eq!(acts(c.control(cmd, at(5001))), actions, "{cell}");
            assert_eq!(c.phase, before, "{cell}: phase");
            assert_eq!(c.want_up, want_up, "{cell}: want_up");
            assert_eq!(c.exit_after, exit_after, "{cell}: exit_after");
        }
    }

    /// Every signal the supervisor acts on (and one it ignores) × phase.
    #[test]
    fn signal_matrix() {
        #[rustfmt::skip]
        let rows: Vec<(Signal, &str, Vec<Action>, bool)> = vec![
            (TERM, "down", vec![Exit], false),
            (TERM, "up", vec![Kill { pid: 100, sig: TERM }, Kill { pid: 100, sig: CONT }, WriteStatus], true),
            (TERM, "finishing", vec![CloseStdio], true),
            (Signal::SIGHUP, "down", vec![Exit], false),
            (Signal::SIGHUP, "up", vec![CloseStdio], true),
            (Signal::SIGHUP, "finishing", vec![CloseStdio], true),
            (Signal::SIGQUIT, "down", vec![Exit], false),
            (Signal::SIGQUIT, "up", vec![Exit], false),
            (Signal::SIGQUIT, "finishing", vec![Exit], false),
            (Signal::SIGINT, "down", vec![Exit], false),
            (Signal::SIGINT, "up", vec![KillGroup { pid: 100, sig: Signal::SIGINT }, Exit], false),
            (Signal::SIGINT, "finishing", vec![Exit], false),
            (Signal::SIGUSR1, "down", vec![], false),
            (Signal::SIGUSR1, "up", vec![], false),
            (Signal::SIGUSR1, "finishing", vec![], false),
        ];
        for (sig, from, actions, exit_after) in rows {
            let cell = format!("signal {sig} in {from}");
            let mut c = phase(from);
            let before = c.phase;
            assert_eq!(acts(c.signal(sig, at(5001))), actions, "{cell}");
            assert_eq!(c.phase, before, "{cell}: phase");
            assert_eq!(c.exit_after, exit_after, "{cell}: exit_after");
        }
    }

    /// Every event input from every phase, wanted up or not, exiting or not, stays
    /// within the action list's capacity (push asserts it in debug builds).
    #[test]
    fn no_transition_overflows_the_action_list() {
        type Input = fn(&mut Core) -> Actions;
        let inputs: [Input; 12] = [
            |c| c.start(at(9000)),
            |c| c.spawned(300, at(9000)),
            |c| c.spawn_failed(Some(127), at(9000)),
            |c| c.spawn_failed(None, at(9000)),
            |c| c.became_ready(at(9000)),
            |c| c.run_died(Wstat(9), true, at(9000)),
            |c| c.run_died(Wstat(0), false, at(9000)),
            |c| c.finish_spawned(Some(400), at(9000)),
            |c| c.finish_spawned(None, at(9000)),
            |c| c.finish_died(Wstat(125 << 8), at(9000)),
            |c| c.finish_died(Wstat(0), at(9000)),
            |c| c.tick(at(99_000)),
        ];
        for from in ["down", "up", "finishing"] {
            for want_up in [false, true] {
                for exit_after in [false, true] {
                    for (i, input) in inputs.iter().enumerate() {
                        let mut c = phase(from);
                        c.want_up = want_up;
                        c.exit_after = exit_after;
                        c.settings.timeout_kill = 1;
                        c.kill_at = Some(1);
                        c.finish_kill_at = Some(1);
                        c.spawn_at = Some(1);
                        let n = input(&mut c).as_slice().len();
                        assert!(
                            n <= 4,
                            "input {i} in {from} (want_up {want_up}, exit_after {exit_after}): {n} actions"
                        );
                    }
                }
            }
        }
    }
}
