//! The executor: performs a [`Plan`] in dependency order, in parallel, in one thread.
//! One poll(2) on a signalfd (SIGCHLD for the oneshots it runs as its own children;
//! SIGINT/SIGTERM to stop waiting) and on the `event/` subscriptions of the longruns in
//! transition. All stops run first (a service only when everything depending on it is
//! down), then all starts (a service only when everything it depends on is up). A
//! failure fails only what depends on it.

use crate::graph::Graph;
use crate::live::Live;
use crate::plan::Plan;
use crate::script::{Script, StepKind};
use crate::source::Kind;
use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, poll};
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use std::os::fd::{AsFd, AsRawFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tend_proto::ControlCommand;
use tend_proto::StatusRecord;
use tend_proto::fifodir::{Subscription, make_fifodir};
use tend_proto::servicedir as sd;

/// What happened to one service, for the caller to report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Started(usize, Duration),
    Stopped(usize, Duration),
    Failed(usize, String),
    /// Progress: done so far, of how many, which way, and the longest-running
    /// transition with how long it has run.
    Progress {
        done: usize,
        total: usize,
        up: bool,
        waiting: Option<(usize, Duration)>,
    },
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Outcome {
    /// (atom, why) for every failure, in the order they happened.
    pub failed: Vec<(usize, String)>,
    pub timed_out: bool,
    pub interrupted: bool,
}

/// Whether a longrun's supervisor says it is up (and ready, when it notifies).
pub fn longrun_up(dir: &std::path::Path, notify: bool) -> bool {
    match StatusRecord::read(dir) {
        Ok(r) => r.is_up() && (!notify || r.ready),
        Err(_) => false,
    }
}

/// The true state of every atom: a oneshot from its marker, a longrun from its
/// supervisor.
pub fn current(g: &Graph, live: &Live) -> Vec<bool> {
    g.atoms
        .iter()
        .map(|a| match &a.def.kind {
            Kind::Oneshot { .. } => live.oneshot_up(a.name()),
            Kind::Longrun(l) => longrun_up(&live.servicedir(a.name()), l.notify),
            Kind::Bundle { .. } => false,
        })
        .collect()
}

/// Every atom that may be up or coming up: a oneshot recorded up; a longrun whose
/// supervisor runs it, means to (restarting after a crash), or has no `down` file. What
/// goes down is chosen from this, so a longrun caught between two restarts is not
/// forgotten at shutdown.
pub fn astir(g: &Graph, live: &Live) -> Vec<bool> {
    g.atoms
        .iter()
        .map(|a| match &a.def.kind {
            Kind::Oneshot { .. } => live.oneshot_up(a.name()),
            Kind::Longrun(_) => {
                let dir = live.servicedir(a.name());
                let rec = StatusRecord::read(&dir).ok();
                rec.is_some_and(|r| r.is_up() || r.want_up || r.finishing)
                    || (rec.is_some() && !dir.join(sd::DOWN).exists())
            }
            Kind::Bundle { .. } => false,
        })
        .collect()
}

enum Run {
    Waiting,
    /// A oneshot's script: the step running and its process group.
    Script {
        steps: Script,
        step: usize,
        pid: Pid,
        deadline: Option<Instant>,
        began: Instant,
        killed: bool,
    },
    Longrun {
        sub: Subscription,
        deadline: Option<Instant>,
        began: Instant,
        sent: tend_proto::Tai64n,
    },
    Done,
    Failed,
}

pub struct Engine<'a> {
    pub g: &'a Graph,
    pub live: &'a Live,
    pub up: Vec<bool>,
    pub deadline: Option<Instant>,
    /// Wake this often to report progress (a terminal's line shows a running clock).
    pub tick: Option<Duration>,
    /// The state the starts go by (up and ready), where `up` (astir) chose the stops.
    pub strict: Option<Vec<bool>>,
    runs: Vec<Run>,
    stopping: Vec<bool>,
    starting: Vec<bool>,
    outcome: Outcome,
    devnull: std::os::fd::OwnedFd,
    /// Longruns that failed coming up and were sent a `d`: tend-rc returns only once
    /// their supervisors have taken it, so a status read after it says "want down".
    sent_down: Vec<PathBuf>,
}

impl<'a> Engine<'a> {
    pub fn new(
        g: &'a Graph,
        live: &'a Live,
        up: Vec<bool>,
        deadline: Option<Instant>,
    ) -> Result<Engine<'a>, tend_sys::Error> {
        let devnull = tend_sys::fd::open(
            "/dev/null",
            nix::fcntl::OFlag::O_RDWR | nix::fcntl::OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        )
        .map_err(|e| tend_sys::Error::at("open", "/dev/null", e))?;
        Ok(Engine {
            g,
            live,
            up,
            deadline,
            tick: None,
            strict: None,
            runs: Vec::new(),
            stopping: Vec::new(),
            starting: Vec::new(),
            outcome: Outcome {
                failed: Vec::new(),
                timed_out: false,
                interrupted: false,
            },
            devnull,
            sent_down: Vec::new(),
        })
    }

    /// Perform `plan`: stops, then starts. `report` sees every event as it happens.
    pub fn run(
        mut self,
        plan: &Plan,
        report: &mut dyn FnMut(&Event, &Graph),
    ) -> Result<Outcome, tend_sys::Error> {
        let r = self.perform(plan, report);
        wait_taken_down(&self.sent_down, self.deadline);
        r.map(|()| self.outcome)
    }

    /// Send a failed longrun down; `run` waits for its supervisor to take the `d`.
    fn send_down(&mut self, dir: PathBuf) {
        if tend_client::control::command(&dir, &[ControlCommand::Down]).is_ok() {
            self.sent_down.push(dir);
        }
    }

    fn perform(
        &mut self,
        plan: &Plan,
        report: &mut dyn FnMut(&Event, &Graph),
    ) -> Result<(), tend_sys::Error> {
        let sfd = tend_sys::signals::signalfd(&[
            Signal::SIGCHLD,
            Signal::SIGINT,
            Signal::SIGTERM,
            Signal::SIGHUP,
        ])
        .map_err(|e| tend_sys::Error::new("create signalfd", e))?;
        for phase in [false, true] {
            let n = self.g.atoms.len();
            self.enter_phase(phase, plan);
            let set = if phase { &plan.start } else { &plan.stop };
            let total = set.iter().filter(|&&b| b).count();
            let mut done = 0usize;
            if total == 0 {
                continue;
            }
            loop {
                self.begin_ready(phase, report);
                let active: Vec<usize> = (0..n)
                    .filter(|&i| matches!(self.runs[i], Run::Script { .. } | Run::Longrun { .. }))
                    .collect();
                let finished = (0..n)
                    .filter(|&i| set[i] && matches!(self.runs[i], Run::Done | Run::Failed))
                    .count();
                if finished != done || self.tick.is_some() {
                    done = finished;
                    self.progress(phase, done, total, &active, report);
                }
                if active.is_empty() {
                    // Nothing running and nothing could start: the rest is blocked.
                    let waiting: Vec<usize> = (0..n)
                        .filter(|&i| matches!(self.runs[i], Run::Waiting))
                        .collect();
                    if waiting.is_empty() {
                        break;
                    }
                    for i in waiting {
                        self.fail(i, "blocked".into(), report);
                    }
                    continue;
                }
                let now = Instant::now();
                if self.deadline.is_some_and(|d| now >= d) {
                    self.outcome.timed_out = true;
                    return Ok(());
                }
                let wake = self.wake(&active, now);
                let mut fds = vec![PollFd::new(sfd.as_fd(), PollFlags::POLLIN)];
                let mut which = Vec::new();
                for &i in &active {
                    if let Run::Longrun { sub, .. } = &self.runs[i] {
                        fds.push(PollFd::new(sub.fd(), PollFlags::POLLIN));
                        which.push(i);
                    }
                }
                match poll(&mut fds, tend_sys::deadline::poll_timeout(wake, now)) {
                    Ok(_) | Err(Errno::EINTR) => {}
                    Err(e) => return Err(tend_sys::Error::new("poll", e)),
                }
                let sig_ready = fds[0].revents().is_some_and(|r| !r.is_empty());
                let ev_ready: Vec<usize> = fds[1..]
                    .iter()
                    .zip(&which)
                    .filter(|(f, _)| f.revents().is_some_and(|r| !r.is_empty()))
                    .map(|(_, &i)| i)
                    .collect();
                drop(fds);
                if sig_ready {
                    while let Ok(Some(si)) = sfd.read_signal() {
                        if si.ssi_signo != Signal::SIGCHLD as u32 {
                            self.outcome.interrupted = true;
                        }
                    }
                    if self.outcome.interrupted {
                        return Ok(());
                    }
                    self.reap(phase, report);
                }
                for i in ev_ready {
                    self.longrun_event(i, phase, report);
                }
                self.check_deadlines(phase, report);
            }
        }
        Ok(())
    }

    /// Set up the runs of a phase (false: the stops, true: the starts). The starts go by
    /// the strict state (up and ready), where the stops went by what was astir.
    fn enter_phase(&mut self, phase: bool, plan: &Plan) {
        let n = self.g.atoms.len();
        if phase && let Some(strict) = self.strict.take() {
            for (i, &ready) in strict.iter().enumerate() {
                if !plan.stop[i] {
                    self.up[i] = ready;
                }
            }
        }
        let set = if phase { &plan.start } else { &plan.stop };
        self.runs = (0..n)
            .map(|i| if set[i] { Run::Waiting } else { Run::Done })
            .collect();
        self.stopping = if phase {
            vec![false; n]
        } else {
            plan.stop.clone()
        };
        self.starting = if phase {
            plan.start.clone()
        } else {
            vec![false; n]
        };
    }

    /// Report how far the phase is, and what has been awaited longest.
    fn progress(
        &self,
        phase: bool,
        done: usize,
        total: usize,
        active: &[usize],
        report: &mut dyn FnMut(&Event, &Graph),
    ) {
        let now = Instant::now();
        let waiting = active
            .iter()
            .filter_map(|&i| match &self.runs[i] {
                Run::Script { began, .. } | Run::Longrun { began, .. } => {
                    Some((i, now.saturating_duration_since(*began)))
                }
                _ => None,
            })
            .max_by_key(|&(_, d)| d);
        report(
            &Event::Progress {
                done,
                total,
                up: phase,
                waiting,
            },
            self.g,
        );
    }

    /// When to wake at the latest: the overall deadline, the progress tick, each
    /// script's deadline, and a longrun's next look.
    fn wake(&self, active: &[usize], now: Instant) -> Option<Instant> {
        let mut wake = match (self.deadline, self.tick) {
            (Some(d), Some(t)) => Some(d.min(now + t)),
            (d, t) => d.or(t.map(|t| now + t)),
        };
        for &i in active {
            let d = match &self.runs[i] {
                Run::Script { deadline, .. } => *deadline,
                // A longrun is looked at now and then: coming up, for a spawn error;
                // going down, for its supervisor to have taken the `d` when it was
                // already down. Neither sends an event.
                Run::Longrun { deadline, .. } => {
                    let tick = now + Duration::from_millis(250);
                    Some(deadline.map_or(tick, |d| d.min(tick)))
                }
                _ => None,
            };
            wake = match (wake, d) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        wake
    }

    fn fail(&mut self, i: usize, why: String, report: &mut dyn FnMut(&Event, &Graph)) {
        self.runs[i] = Run::Failed;
        report(&Event::Failed(i, why.clone()), self.g);
        self.outcome.failed.push((i, why));
    }

    /// Start every transition whose neighbours allow it; fail those that never can.
    fn begin_ready(&mut self, phase: bool, report: &mut dyn FnMut(&Event, &Graph)) {
        let mut again = true;
        while again {
            again = false;
            for i in 0..self.g.atoms.len() {
                if !matches!(self.runs[i], Run::Waiting) {
                    continue;
                }
                let a = &self.g.atoms[i];
                let others = if phase { &a.deps } else { &a.rdeps };
                let mut ready = true;
                let mut blocked = None;
                for &j in others {
                    let fine = if phase { self.up[j] } else { !self.up[j] };
                    if fine {
                        continue;
                    }
                    ready = false;
                    let pending = matches!(
                        self.runs[j],
                        Run::Waiting | Run::Script { .. } | Run::Longrun { .. }
                    ) && (if phase {
                        self.starting[j]
                    } else {
                        self.stopping[j]
                    });
                    if !pending {
                        blocked = Some(j);
                        break;
                    }
                }
                if let Some(j) = blocked {
                    let why = if phase {
                        format!("dependency {} is not up", self.g.atoms[j].name())
                    } else {
                        format!("{} depends on it and is not down", self.g.atoms[j].name())
                    };
                    self.fail(i, why, report);
                    again = true;
                    continue;
                }
                if ready {
                    self.begin(i, phase, report);
                    again = true;
                }
            }
        }
    }

    fn begin(&mut self, i: usize, up: bool, report: &mut dyn FnMut(&Event, &Graph)) {
        let a = &self.g.atoms[i];
        let now = Instant::now();
        let limit = if up {
            a.def.timeout_up
        } else {
            a.def.timeout_down
        };
        let deadline = (limit > 0).then(|| now + Duration::from_millis(limit));
        match &a.def.kind {
            Kind::Oneshot { up: u, down, .. } => {
                let script = if up {
                    u.clone()
                } else {
                    // The down script recorded when it came up (the definition may be gone).
                    recorded_down(self.live, a.name()).unwrap_or_else(|| down.clone())
                };
                self.start_script(i, script, 0, deadline, now, up, report);
            }
            Kind::Longrun(_) => {
                let dir = self.live.servicedir(a.name());
                match self.longrun_begin(&dir, up) {
                    Ok((sub, sent)) => {
                        self.runs[i] = Run::Longrun {
                            sub,
                            deadline,
                            began: now,
                            sent,
                        };
                        // It may be there already.
                        self.longrun_check(i, up, report);
                    }
                    Err(why) => self.fail(i, why, report),
                }
            }
            Kind::Bundle { .. } => self.runs[i] = Run::Done,
        }
    }

    fn longrun_begin(
        &self,
        dir: &std::path::Path,
        up: bool,
    ) -> Result<(Subscription, tend_proto::Tai64n), String> {
        let down = dir.join(sd::DOWN);
        if up {
            let _ = std::fs::remove_file(&down);
        } else {
            let _ = std::fs::write(&down, b"");
        }
        let eventdir = dir.join(tend_proto::servicedir::EVENT);
        let _ = make_fifodir(&eventdir, nix::unistd::getegid());
        let sub = Subscription::new(&eventdir).map_err(|e| e.to_string())?;
        let sent = tend_proto::Tai64n::now();
        tend_client::control::command(
            dir,
            &[if up {
                ControlCommand::Up
            } else {
                ControlCommand::Down
            }],
        )
        .map_err(|e| {
            e.describe(&dir.display().to_string(), sd::SUPERVISE)
                .to_string()
        })?;
        Ok((sub, sent))
    }

    #[allow(clippy::too_many_arguments)]
    fn start_script(
        &mut self,
        i: usize,
        script: Script,
        step: usize,
        deadline: Option<Instant>,
        began: Instant,
        up: bool,
        report: &mut dyn FnMut(&Event, &Graph),
    ) {
        let a = &self.g.atoms[i];
        let Some(s) = script.steps.get(step) else {
            self.finished(i, up, began, report);
            return;
        };
        let file = a.def.dir.join(if up {
            crate::source::UP_SCRIPT
        } else {
            crate::source::DOWN_SCRIPT
        });
        let prog = match tend_sys::exec::Prepared::with_current_env(&s.argv) {
            Ok(p) => p,
            Err(e) => {
                let why = not_found(&file, &s.argv, script.execline, e);
                self.fail(i, why, report);
                return;
            }
        };
        let opts = tend_sys::process::SpawnOptions {
            setpgid: true,
            cwd: std::ffi::CString::new(self.live.dir.as_os_str().as_encoded_bytes()).ok(),
            fds: vec![(self.devnull.as_raw_fd(), 0)],
            ..Default::default()
        };
        match tend_sys::process::spawn(&prog, &opts) {
            Ok(pid) => {
                self.runs[i] = Run::Script {
                    steps: script,
                    step,
                    pid,
                    deadline,
                    began,
                    killed: false,
                }
            }
            Err(tend_sys::process::SpawnError::Exec(e)) => {
                let why = not_found(&file, &s.argv, script.execline, e);
                self.fail(i, why, report);
            }
            Err(tend_sys::process::SpawnError::Fork(e)) => {
                self.fail(i, format!("unable to fork: {}", e.desc()), report)
            }
        }
    }

    fn finished(
        &mut self,
        i: usize,
        up: bool,
        began: Instant,
        report: &mut dyn FnMut(&Event, &Graph),
    ) {
        let a = &self.g.atoms[i];
        if let Kind::Oneshot { .. } = &a.def.kind {
            let marker = self.live.oneshot_marker(a.name());
            if up {
                let text =
                    std::fs::read(a.def.dir.join(crate::source::DOWN_SCRIPT)).unwrap_or_default();
                let _ = crate::live::write_atomic(&marker, &text, 0o644);
            } else {
                let _ = std::fs::remove_file(&marker);
            }
        }
        self.up[i] = up;
        self.runs[i] = Run::Done;
        let took = began.elapsed();
        report(
            &if up {
                Event::Started(i, took)
            } else {
                Event::Stopped(i, took)
            },
            self.g,
        );
    }

    fn reap(&mut self, phase: bool, report: &mut dyn FnMut(&Event, &Graph)) {
        loop {
            let (pid, wstat) = match tend_sys::wait::reap(None) {
                Ok(Some(x)) => x,
                _ => return,
            };
            let Some(i) = (0..self.runs.len())
                .find(|&i| matches!(&self.runs[i], Run::Script { pid: p, .. } if *p == pid))
            else {
                continue;
            };
            let Run::Script {
                steps,
                step,
                deadline,
                began,
                killed,
                ..
            } = std::mem::replace(&mut self.runs[i], Run::Waiting)
            else {
                continue;
            };
            let file = self.g.atoms[i].def.dir.join(if phase {
                crate::source::UP_SCRIPT
            } else {
                crate::source::DOWN_SCRIPT
            });
            if killed {
                let limit = if phase {
                    self.g.atoms[i].def.timeout_up
                } else {
                    self.g.atoms[i].def.timeout_down
                };
                self.fail(
                    i,
                    format!("{} timed out after {limit} ms (killed)", file.display()),
                    report,
                );
                continue;
            }
            let kind = steps.steps[step].kind;
            let ok = wstat.exit_code() == Some(0);
            match kind {
                StepKind::If if !ok => {
                    self.fail(i, format!("{} {}", file.display(), ended(wstat)), report);
                }
                StepKind::Last if !ok => {
                    self.fail(i, format!("{} {}", file.display(), ended(wstat)), report);
                }
                StepKind::Last => self.finished(i, phase, began, report),
                _ => self.start_script(i, steps, step + 1, deadline, began, phase, report),
            }
        }
    }

    fn check_deadlines(&mut self, phase: bool, report: &mut dyn FnMut(&Event, &Graph)) {
        let now = Instant::now();
        for i in 0..self.runs.len() {
            match &mut self.runs[i] {
                Run::Script {
                    pid,
                    deadline: Some(d),
                    killed,
                    ..
                } if now >= *d && !*killed => {
                    *killed = true;
                    let _ = nix::sys::signal::killpg(*pid, Signal::SIGKILL);
                }
                Run::Longrun { .. } => self.longrun_check(i, phase, report),
                _ => {}
            }
        }
    }

    fn longrun_event(&mut self, i: usize, up: bool, report: &mut dyn FnMut(&Event, &Graph)) {
        let mut buf = [0u8; 64];
        let mut gone = false;
        let mut permanent = false;
        if let Run::Longrun { sub, .. } = &self.runs[i] {
            while let Ok(n) = sub.read(&mut buf) {
                if n == 0 {
                    break;
                }
                gone |= buf[..n].contains(&b'x');
                permanent |= buf[..n].contains(&b'O');
            }
        }
        if up && permanent {
            let why = format!("{} failed permanently", self.g.atoms[i].name());
            self.send_down(self.live.servicedir(self.g.atoms[i].name()));
            self.fail(i, why, report);
            return;
        }
        self.longrun_check(i, up, report);
        if gone && matches!(self.runs[i], Run::Longrun { .. }) {
            self.fail(i, "its supervisor exited".into(), report);
        }
    }

    /// Is the longrun where it should be, or has it failed?
    fn longrun_check(&mut self, i: usize, up: bool, report: &mut dyn FnMut(&Event, &Graph)) {
        let a = &self.g.atoms[i];
        let Kind::Longrun(l) = &a.def.kind else {
            return;
        };
        let Run::Longrun {
            deadline,
            began,
            sent,
            ..
        } = &self.runs[i]
        else {
            return;
        };
        let (deadline, began, sent) = (*deadline, *began, *sent);
        let dir = self.live.servicedir(a.name());
        let rec = StatusRecord::read(&dir).ok();
        let there = match rec {
            Some(r) if up => r.is_up() && (!l.notify || r.ready),
            // Down only once the supervisor has taken the `d`: a longrun between two
            // restarts already has no pid, but would be started again.
            Some(r) => r.pid == 0 && !r.finishing && !r.want_up,
            None => false,
        };
        if there {
            self.finished(i, up, began, report);
            return;
        }
        if up {
            let se = dir.join(tend_proto::servicedir::SPAWN_ERROR);
            if let Ok(b) = std::fs::read(&se)
                && let Some(rec) = tend_proto::spawn_error::SpawnRecord::decode(&b)
                && rec.stamp >= sent
            {
                let why = format!("unable to spawn {}/run: {}", dir.display(), rec.reason());
                self.send_down(dir);
                self.fail(i, why, report);
                return;
            }
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            let limit = if up {
                a.def.timeout_up
            } else {
                a.def.timeout_down
            };
            let why = format!(
                "not {} after {limit} ms",
                if up {
                    if l.notify { "ready" } else { "up" }
                } else {
                    "down"
                }
            );
            if up {
                self.send_down(dir);
            }
            self.fail(i, why, report);
        }
    }
}

/// The down script recorded when the oneshot came up.
fn recorded_down(live: &Live, name: &str) -> Option<Script> {
    let b = std::fs::read(live.oneshot_marker(name)).ok()?;
    crate::script::parse(&b).ok()
}

pub(crate) fn ended(w: tend_sys::wait::Wstat) -> String {
    match w.ended() {
        tend_sys::wait::Ended::Exited(c) => format!("exited {c}"),
        tend_sys::wait::Ended::Signaled(s) => format!(
            "was killed by {}",
            tend_sys::signals::name(i32::from(s)).unwrap_or("a signal")
        ),
    }
}

/// Why a script's program could not run, naming the file.
pub(crate) fn not_found(
    file: &std::path::Path,
    argv: &[std::ffi::OsString],
    execline: bool,
    e: Errno,
) -> String {
    let prog = argv
        .first()
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_default();
    if execline && e == Errno::ENOENT {
        return format!(
            "{}: uses execline ({prog}), which is not installed (tend-rc runs plain commands and if/foreground blocks itself)",
            file.display()
        );
    }
    let why = tend_sys::diagnose::diagnose(std::ffi::OsStr::new(&prog), e);
    format!("{}: unable to run {prog}: {why}", file.display())
}

/// Wait until each supervisor in `dirs` has taken its `d` (its status says "want
/// down"), until `deadline` but no longer than 5 s: a supervisor reads its control FIFO
/// at once, so this is a few milliseconds unless one is stopped.
fn wait_taken_down(dirs: &[PathBuf], deadline: Option<Instant>) {
    let limit = Instant::now() + Duration::from_secs(5);
    let limit = deadline.map_or(limit, |d| d.min(limit));
    let mut tick = 1u64;
    for dir in dirs {
        while StatusRecord::read(dir).is_ok_and(|r| r.want_up) && Instant::now() < limit {
            std::thread::sleep(Duration::from_millis(tick));
            tick = (tick * 2).min(20);
        }
    }
}

/// Send `letters` to every supervisor and wait (up to `patience`) until each runs.
pub fn wait_supervisors(
    dirs: &[PathBuf],
    scandir: &std::path::Path,
    deadline: Option<Instant>,
) -> Result<(), String> {
    // dirs[up..] are not yet known to run. Each look stops at the first that does not:
    // the others mostly come up after it, and looking at all of them at every tick was
    // a svok (an open of the control FIFO) per waiting supervisor per tick.
    let mut up = 0;
    let mut tick = 1u64;
    loop {
        // Running means listening: a supervisor holds its lock before it opens its
        // control FIFO, and a letter sent in between is refused.
        while up < dirs.len()
            && tend_client::svok(&dirs[up]).unwrap_or(false)
            && tend_client::control::send(&dirs[up], b"").is_ok()
        {
            up += 1;
        }
        let Some(waiting) = dirs.get(up) else {
            return Ok(());
        };
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(format!(
                "timed out waiting for the supervisor of {}",
                waiting.display()
            ));
        }
        if let Err(tend_proto::control::SendError::NotListening) =
            tend_client::scanctl::send(scandir, &[])
        {
            return Err(format!("no scanner runs on {}", scandir.display()));
        }
        // The scanner gives no event for a new supervisor: look again soon.
        std::thread::sleep(Duration::from_millis(tick));
        tick = (tick * 2).min(20);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tend_sys::wait::Wstat;

    #[test]
    fn how_a_script_ended() {
        for (w, want) in [
            (0, "exited 0"),
            (3 << 8, "exited 3"),
            (9, "was killed by SIGKILL"),
            (15, "was killed by SIGTERM"),
        ] {
            assert_eq!(ended(Wstat(w)), want);
        }
    }
}
