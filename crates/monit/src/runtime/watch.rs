//! One `check process` at run time: the `./run` of its service directory.
//!
//! monit's model is a start program that daemonizes and leaves a pidfile; the daemon is
//! not monit's child. So the service's `./run` (`tend-monit -W`) is a small watcher that
//! tend-supervise keeps going: it runs the start program (with its uid, gid and timeout),
//! waits for the pidfile to name a live process (inotify on the pidfile's directory and
//! the start program's exit, no polling), says "ready" on the notification fd, then
//! watches the daemon through a pidfd for its whole life. The daemon's death makes the
//! pidfd readable at once; the watcher exits, and tend-supervise runs it again at once,
//! which runs the start program again: monit's restart, without waiting for a cycle.
//! SIGTERM (tend-svc -d, `monit stop`) runs the stop program and waits, up to its
//! timeout, for the daemon to go.
//!
//! The check's settings are in the service directory's `monit-check` file (written by
//! `service::render`); what the watcher learns at run time (the daemon's pid) goes to
//! `monit-state/`, which the installer never compares.

use crate::runtime::state::{
    CHECK_FILE, DEFAULT_TIMEOUT, LimitAction, Run, START_FAILED, STATE_DIR, STOP_FAILED, Settings,
};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use std::ffi::OsString;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tend_proto::ControlCommand;
use tend_sys::warn::Warn;

/// In `STATE_DIR`: the daemon died (the next start is a restart).
const DIED: &str = "died";
/// In `STATE_DIR`: the daemon was stopped by a restart of the service (tend-check's
/// failed connection test, `tend-svc -r`): the next start is a restart, not a death.
const RESTARTED: &str = "restarted";
/// In `STATE_DIR`: which resource rules are matched now (a `1` or `0` per rule), kept
/// across the watcher's restarts.
const MATCHED: &str = "matched";
/// In `STATE_DIR`: the times of recent restarts, for `if N restarts within M cycles`.
const RESTARTS: &str = "restarts";
/// In `STATE_DIR`: the dependents stopped at the daemon's death, to start again once it
/// runs (one name a line, in start order).
const DEPENDENTS_STOPPED: &str = "dependents-stopped";

/// How the watcher ends: the code tend-supervise sees.
#[derive(Debug, PartialEq, Eq)]
pub enum Exit {
    /// Stopped on request (0).
    Stopped,
    /// The daemon died (1): run me again.
    Died(i32),
    /// The start program did not bring the daemon up within its timeout (1).
    StartFailed(String),
}

/// A failure of the watcher itself (exit 111).
#[derive(Debug)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn err(what: impl std::fmt::Display, e: impl std::fmt::Display) -> Error {
    Error(format!("{what}: {e}"))
}

/// Why the watcher will not watch what its pidfile or `matching` pattern names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FindError {
    /// The pidfile's first line is not a number (that line).
    NotAPid(PathBuf, String),
    /// The pidfile names pid 0 or 1.
    Low(PathBuf, i32),
    /// The pidfile names the watcher itself.
    Itself(PathBuf),
    /// The pidfile's process belongs to another uid than the program's: (pid, its
    /// owner, the program's uid).
    Owner(PathBuf, i32, u32, u32),
    /// The `matching` pattern does not compile (regerror's text).
    Pattern(String),
    /// /proc could not be listed.
    Proc(nix::errno::Errno),
}

impl std::fmt::Display for FindError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FindError::NotAPid(p, s) => {
                write!(f, "{}: not a pid: {}", p.display(), s.escape_debug())
            }
            FindError::Low(p, pid) => write!(f, "{}: names pid {pid}: refused", p.display()),
            FindError::Itself(p) => {
                write!(f, "{}: names the watcher itself: refused", p.display())
            }
            FindError::Owner(p, pid, owner, u) => write!(
                f,
                "{}: pid {pid} belongs to uid {owner}, not {u}: refused",
                p.display()
            ),
            FindError::Pattern(why) => f.write_str(why),
            FindError::Proc(e) => write!(f, "/proc: {}", e.desc()),
        }
    }
}

/// The pid a pidfile names, if it is one the watcher may watch: a number, not 0 or 1,
/// not the watcher itself, and (with `as uid`) owned by that uid.
pub fn pid_from_file(path: &Path, uid: Option<u32>) -> Result<Option<i32>, FindError> {
    let Ok(text) = std::fs::read(path) else {
        return Ok(None);
    };
    let first = text.split(|&b| b == b'\n').next().unwrap_or(&[]);
    let s = std::str::from_utf8(first).unwrap_or("").trim();
    if s.is_empty() {
        return Ok(None);
    }
    let pid: i32 = s
        .parse()
        .map_err(|_| FindError::NotAPid(path.to_path_buf(), s.to_string()))?;
    if pid <= 1 {
        return Err(FindError::Low(path.to_path_buf(), pid));
    }
    if pid == std::process::id() as i32 {
        return Err(FindError::Itself(path.to_path_buf()));
    }
    let Ok(meta) = std::fs::metadata(format!("/proc/{pid}")) else {
        return Ok(None);
    };
    if !alive(pid) {
        return Ok(None);
    }
    if let Some(u) = uid {
        let owner = std::os::unix::fs::MetadataExt::uid(&meta);
        if owner != u {
            return Err(FindError::Owner(path.to_path_buf(), pid, owner, u));
        }
    }
    Ok(Some(pid))
}

/// Whether `pid` runs: it exists and is not a zombie (a dead daemon whose parent has not
/// reaped it yet still has a /proc entry, and its pidfd is readable at once).
fn alive(pid: i32) -> bool {
    let Ok(stat) = std::fs::read(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // `pid (comm) S ...`: the state follows the last `)` (comm may hold one).
    let state = stat
        .iter()
        .rposition(|&b| b == b')')
        .and_then(|i| stat.get(i + 2))
        .copied();
    !matches!(state, None | Some(b'Z') | Some(b'X'))
}

/// A process whose command line matches a `matching` pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Match {
    pub pid: i32,
    pub ppid: i32,
    pub command: String,
    /// Start time in clock ticks since boot (/proc/PID/stat field 22).
    pub start: u64,
}

/// The live processes (not the caller) whose command line, its arguments joined by
/// blanks, matches `pattern` (POSIX extended, as monit's `matching` and `procmatch`).
pub fn matching(pattern: &str) -> Result<Vec<Match>, FindError> {
    let re = tend_sys::regex::Regex::new(pattern.as_bytes()).map_err(FindError::Pattern)?;
    let me = std::process::id() as i32;
    let mut out = Vec::new();
    let rd = std::fs::read_dir("/proc").map_err(|e| {
        FindError::Proc(
            e.raw_os_error()
                .map_or(nix::errno::Errno::EIO, nix::errno::Errno::from_raw),
        )
    })?;
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        if pid == me || !alive(pid) {
            continue;
        }
        let Ok(mut cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        if cmd.is_empty() {
            continue;
        }
        for b in cmd.iter_mut() {
            if *b == 0 {
                *b = b' ';
            }
        }
        while cmd.last() == Some(&b' ') {
            cmd.pop();
        }
        let command = String::from_utf8_lossy(&cmd).into_owned();
        cmd.push(0);
        let Ok(c) = std::ffi::CStr::from_bytes_with_nul(&cmd) else {
            continue;
        };
        if !re.is_match(c) {
            continue;
        }
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        // Fields after `(comm)`: state is the 3rd field of the line, ppid the 4th, start
        // time the 22nd.
        let rest: Vec<&str> = stat
            .rsplit_once(") ")
            .map(|(_, r)| r.split(' ').collect())
            .unwrap_or_default();
        let ppid = rest.get(1).and_then(|v| v.parse().ok()).unwrap_or(0);
        let start = rest.get(19).and_then(|v| v.parse().ok()).unwrap_or(0);
        out.push(Match {
            pid,
            ppid,
            command,
            start,
        });
    }
    out.sort_by_key(|m| m.pid);
    Ok(out)
}

/// The process monit would pick among the matches: the one running longest.
pub fn pick(matches: &[Match]) -> Option<&Match> {
    matches.iter().min_by_key(|m| (m.start, m.pid))
}

/// The process `matching` names: the longest-running match (pid 1 never).
pub fn pid_matching(pattern: &str) -> Result<Option<i32>, FindError> {
    let all = matching(pattern)?;
    let candidates: Vec<Match> = all.into_iter().filter(|m| m.pid > 1).collect();
    Ok(pick(&candidates).map(|m| m.pid))
}

/// `monit procmatch PATTERN`'s report, in its layout.
pub fn procmatch_report(pattern: &str, matches: &[Match]) -> String {
    let mut out = format!(
        "List of processes matching pattern \"{pattern}\":\n    PID       PPID      {:<51}\n",
        "Command"
    );
    let chosen = pick(matches).map(|m| m.pid);
    for m in matches {
        let mark = if Some(m.pid) == chosen { '*' } else { ' ' };
        out += &format!(" {mark}{:>10}{:>10}  {:<51}\n", m.pid, m.ppid, m.command);
    }
    out += &format!("Total matches: {}\n", matches.len());
    if matches.len() > 1 {
        out += "\nWARNING:\nMultiple processes match the pattern. Monit will select the process with the\nhighest uptime, the one highlighted.\n";
    }
    out
}

/// argv for a program, through tend-applyuidgid when it has a uid or gid.
fn command(r: &Run) -> Vec<OsString> {
    let mut v: Vec<OsString> = Vec::new();
    if r.uid.is_some() || r.gid.is_some() {
        v.push("tend-applyuidgid".into());
        if let Some(u) = r.uid {
            v.push("-u".into());
            v.push(u.to_string().into());
        }
        if let Some(g) = r.gid {
            v.push("-g".into());
            v.push(g.to_string().into());
            v.push("-G".into());
            v.push(g.to_string().into());
        }
    }
    v.extend(r.argv.iter().map(OsString::from));
    v
}

fn spawn(r: &Run) -> Result<Pid, String> {
    let argv = command(r);
    let mut prog = tend_sys::exec::Prepared::with_current_env(&argv)
        .map_err(|e| format!("unable to prepare {}: {}", r.argv.join(" "), e.desc()))?;
    if argv.len() > r.argv.len() {
        // tend-applyuidgid is ours: beside the watcher first, as the scanner is found.
        prog.prefer_beside_self(&argv[0]);
    }
    tend_sys::process::spawn(&prog, &Default::default()).map_err(|e| match e {
        tend_sys::process::SpawnError::Fork(e) => format!("unable to fork: {}", e.desc()),
        tend_sys::process::SpawnError::Exec(e) => {
            format!("unable to run {}: {}", argv[0].to_string_lossy(), e.desc())
        }
    })
}

struct Watcher<'a> {
    st: Settings,
    dir: PathBuf,
    sigfd: nix::sys::signalfd::SignalFd,
    report: &'a dyn Warn,
    stop_asked: bool,
    /// The last refusal reported (a pidfile with garbage is said once, not per look).
    last_warning: Option<FindError>,
    /// Dependents still to start (after a death stopped them), in start order: they are
    /// started one after the other from the watcher's own poll loop, so the watcher still
    /// sees its daemon die and answers a stop while a dependent's start program runs.
    to_start: std::collections::VecDeque<String>,
    /// The dependent being started: its name, its `event/` subscription, the deadline.
    starting: Option<(String, tend_proto::fifodir::Subscription, Instant)>,
    /// The daemon died and was started again before its death was posted (the restart
    /// does not wait for the mail server).
    death_unposted: bool,
    /// The connection test failed when last looked at.
    connection_failed: bool,
}

/// The resource rules' clock: when the next cycle is due (none without rules), and the
/// meter that measures them.
struct Cycles {
    every: Duration,
    next: Option<Instant>,
    meter: crate::runtime::resource::Meter,
}

/// What woke the watcher.
struct Woke {
    died: bool,
    dependent: bool,
    verdict: bool,
}

/// Run the watcher in service directory `dir` (its working directory, as tend-supervise
/// starts `./run`).
pub fn run(dir: &Path, report: &dyn Warn) -> Result<Exit, Error> {
    let text = std::fs::read_to_string(dir.join(CHECK_FILE)).map_err(|e| {
        err(
            format_args!("unable to read {}", dir.join(CHECK_FILE).display()),
            tend_sys::error::io_reason(&e),
        )
    })?;
    let st = Settings::parse(&text).map_err(|e| err(CHECK_FILE, e))?;
    let sigfd = tend_sys::signals::signalfd(&[
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
        Signal::SIGCHLD,
    ])
    .map_err(|e| err("unable to take signals", e.desc()))?;
    let mut w = Watcher {
        st,
        dir: dir.to_path_buf(),
        sigfd,
        report,
        stop_asked: false,
        last_warning: None,
        to_start: Default::default(),
        starting: None,
        death_unposted: false,
        connection_failed: false,
    };
    w.connection_failed =
        crate::runtime::status::connection_verdict(&w.dir).is_some_and(|(f, _)| f);
    w.go()
}

impl Watcher<'_> {
    /// An event: a line in the log, one more in `supervise/tend-events`, a mail to every
    /// recipient (`alert::post`).
    fn alert(&self, event: &str, action: &str, description: &str) {
        let ev = crate::runtime::alert::Event {
            service: &self.st.name,
            event,
            action,
            description,
        };
        crate::runtime::alert::post(&self.st.mail, &self.dir, &ev, self.report);
    }

    /// A death not posted yet (its restart went first): posted now.
    fn post_death(&mut self) {
        if std::mem::take(&mut self.death_unposted) {
            self.alert("Does not exist", "restart", "process is not running");
        }
    }

    /// tend-check wrote its verdict: a change between passing and failing is an event.
    fn connection_event(&mut self) {
        let Some(action) = self.st.connection.clone() else {
            return;
        };
        let Some((failing, reason)) = crate::runtime::status::connection_verdict(&self.dir) else {
            return;
        };
        if failing == self.connection_failed {
            return;
        }
        self.connection_failed = failing;
        if failing {
            self.alert(
                "Connection failed",
                &action,
                &format!("failed connection test -- {reason}"),
            );
        } else {
            self.alert("Connection succeeded", "alert", "connection succeeded");
        }
    }

    /// The daemon's pid, if the pidfile (or `matching`) names one it may watch.
    fn find(&mut self) -> Option<i32> {
        let uid = self.st.start.as_ref().and_then(|r| r.uid);
        let found = match (&self.st.pidfile, &self.st.matching) {
            (Some(p), _) => pid_from_file(Path::new(p), uid),
            (None, Some(m)) => pid_matching(m),
            (None, None) => Ok(None),
        };
        found.unwrap_or_else(|e| {
            if self.last_warning.as_ref() != Some(&e) {
                self.report.warn(&e);
                self.last_warning = Some(e);
            }
            None
        })
    }

    /// Signals since the last call: whether a stop was asked; children reaped.
    fn signals(&mut self) {
        while let Ok(Some(s)) = self.sigfd.read_signal() {
            if let Ok(Signal::SIGTERM | Signal::SIGINT | Signal::SIGHUP) =
                Signal::try_from(s.ssi_signo as i32)
            {
                self.stop_asked = true;
            }
        }
        while let Ok(Some(_)) = tend_sys::wait::reap(None) {}
    }

    fn state_file(&self, name: &str) -> PathBuf {
        self.dir.join(STATE_DIR).join(name)
    }

    fn record_pid(&self, pid: Option<i32>) {
        let _ = std::fs::create_dir_all(self.dir.join(STATE_DIR));
        let p = self.state_file("pid");
        match pid {
            Some(pid) => {
                let tmp = self.state_file(".pid.new");
                if std::fs::write(&tmp, format!("{pid}\n")).is_ok() {
                    let _ = std::fs::rename(&tmp, &p);
                }
            }
            None => {
                let _ = std::fs::remove_file(&p);
            }
        }
    }

    /// Restarts so far (times, seconds since the epoch) within the limit's window, this
    /// one included; whether the limit is reached.
    fn count_restart(&self) -> bool {
        let Some((n, window, _)) = &self.st.restart_limit else {
            return false;
        };
        let now = now_secs();
        let p = self.state_file(RESTARTS);
        let mut times: Vec<u64> = std::fs::read_to_string(&p)
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|t| t.parse().ok())
            .filter(|&t: &u64| now.saturating_sub(t) < (*window).max(1))
            .collect();
        times.push(now);
        let reached = times.len() as u32 >= *n;
        let text: String = if reached {
            String::new()
        } else {
            times.iter().map(|t| format!("{t}\n")).collect()
        };
        let _ = std::fs::create_dir_all(self.dir.join(STATE_DIR));
        let _ = std::fs::write(&p, text);
        reached
    }

    /// The watcher's life, in tini's shape: count this start, find or start the daemon,
    /// say it is ready, then wait for what comes (a stop, its death, a cycle, a
    /// dependent's event) until one of them ends it.
    fn go(&mut self) -> Result<Exit, Error> {
        let (died_before, unmonitor_after) = self.count_start();
        let (pid, pidfd) = match self.open_daemon()? {
            Ok(daemon) => daemon,
            Err(exit) => return Ok(exit),
        };
        self.announce_ready(pid, died_before, unmonitor_after);
        // tend-check's verdicts, when a connection test's events are this watcher's to
        // post: woken only when tend-check writes one.
        let verdicts = self
            .st
            .connection
            .as_ref()
            .and_then(|_| self.verdict_watch());
        self.connection_event();
        let mut cycles = self.cycles(pid);
        loop {
            if self.stop_asked {
                return Ok(self.on_stop(pid, &pidfd));
            }
            let woke = self.wait(&pidfd, verdicts.as_ref(), &cycles)?;
            self.signals();
            if woke.verdict
                && let Some(fd) = &verdicts
            {
                drain(fd);
                self.connection_event();
            }
            if !woke.died && !self.stop_asked {
                self.on_dependent(woke.dependent);
            }
            if woke.died && !self.stop_asked {
                return Ok(self.on_death(pid));
            }
            if let Some(exit) = self.on_cycle(pid, &pidfd, &mut cycles) {
                return Ok(exit);
            }
        }
    }

    /// A start after a death is a restart: `if N restarts within M cycles` counts it.
    /// As in monit, the restart that reaches the limit still happens; `timeout` /
    /// `unmonitor` then stops watching (the daemon runs on, not restarted again).
    /// Whether the daemon died before, and whether to unmonitor once it runs.
    fn count_start(&mut self) -> (bool, bool) {
        // Started again: a daemon that outlived the last stop is taken over below.
        let _ = std::fs::remove_file(self.state_file(STOP_FAILED));
        let died_before = self.state_file(DIED).exists();
        let restarted = std::fs::remove_file(self.state_file(RESTARTED)).is_ok();
        self.death_unposted = died_before;
        if died_before {
            let _ = std::fs::remove_file(self.state_file(DIED));
        }
        let unmonitor_after =
            (died_before || restarted) && self.count_restart() && self.restart_limit_reached();
        (died_before, unmonitor_after)
    }

    /// The restart limit is reached: say so and do its action; whether it unmonitors.
    fn restart_limit_reached(&mut self) -> bool {
        if let Some((n, secs, a)) = &self.st.restart_limit {
            let cycles = secs / u64::from(self.st.cycle.max(1));
            let what = a.word();
            let text = format!("service restarted {n} times within {cycles} cycles(s) - {what}");
            self.alert("Timeout", what, &text);
        }
        let limit = self.st.restart_limit.clone();
        match limit.map(|l| l.2) {
            Some(LimitAction::Unmonitor) => return true,
            Some(LimitAction::Exec(argv)) => {
                self.report.warn(&format_args!(
                    "{}: restart limit reached: running {}",
                    self.st.name,
                    argv.join(" ")
                ));
                self.exec(argv);
            }
            _ => self
                .report
                .warn(&format_args!("{}: restart limit reached", self.st.name)),
        }
        false
    }

    /// Run an `exec` action's program, without waiting for it.
    fn exec(&self, argv: Vec<String>) {
        let run = Run {
            argv,
            uid: None,
            gid: None,
            timeout: DEFAULT_TIMEOUT,
        };
        if let Err(e) = spawn(&run) {
            self.report.warn(&e);
        }
    }

    /// The daemon's pid and a pidfd on it: taken over from an earlier watcher (or
    /// tend-monit), or started by hand, it is watched rather than started a second time.
    /// `Err(exit)` when it could not be started or is already gone.
    fn open_daemon(&mut self) -> Result<Result<(i32, OwnedFd), Exit>, Error> {
        let pid = match self.find() {
            Some(pid) => pid,
            None => match self.start()? {
                Ok(pid) => pid,
                Err(exit) => return Ok(Err(exit)),
            },
        };
        let rpid = rustix::process::Pid::from_raw(pid).ok_or_else(|| Error("pid 0".into()))?;
        match rustix::process::pidfd_open(rpid, rustix::process::PidfdFlags::empty()) {
            Ok(fd) => Ok(Ok((pid, fd))),
            // Gone between the pidfile and the pidfd: a death like any other.
            Err(rustix::io::Errno::SRCH) => Ok(Err(Exit::Died(pid))),
            Err(e) => Err(err(
                format_args!("unable to watch pid {pid}"),
                tend_sys::error::io_reason(&std::io::Error::from(e)),
            )),
        }
    }

    /// The daemon runs: record it, tell the supervisor, post an earlier death (once it
    /// runs again: the restart does not wait for the mail server), start the dependents
    /// a death stopped, and unmonitor when the restart limit says so.
    fn announce_ready(&mut self, pid: i32, died_before: bool, unmonitor_after: bool) {
        self.record_pid(Some(pid));
        notify_ready();
        if died_before {
            self.post_death();
            self.alert(
                "Exists",
                "alert",
                &format!("process is running with pid {pid}"),
            );
        }
        self.start_dependents();
        if unmonitor_after {
            self.report.warn(&format_args!(
                "{}: restart limit reached: no longer monitored",
                self.st.name
            ));
            let _ = std::fs::write(self.state_file("unmonitored"), "");
            // `O`: the supervisor runs ./run no more once it exits.
            let _ = tend_client::control::command(&self.dir, &[ControlCommand::OnceNoStart]);
        }
    }

    /// The resource rules' clock and meter (no clock without rules).
    fn cycles(&self, pid: i32) -> Cycles {
        let every = Duration::from_secs(u64::from(self.st.cycle.max(1)));
        let next = (!self.st.resources.is_empty()).then(|| Instant::now() + every);
        let mut meter = crate::runtime::resource::Meter::with_matched(
            &std::fs::read_to_string(self.state_file(MATCHED)).unwrap_or_default(),
        );
        if next.is_some() {
            meter.cycle(pid, &[]);
        }
        Cycles { every, next, meter }
    }

    /// Without resource rules or a dependent starting, the watcher sleeps until the
    /// daemon dies or a signal comes; with them, it wakes once per cycle to measure, and
    /// at the dependent's deadline.
    fn wait(
        &self,
        pidfd: &OwnedFd,
        verdicts: Option<&OwnedFd>,
        cycles: &Cycles,
    ) -> Result<Woke, Error> {
        let now = Instant::now();
        let dep_deadline = self.starting.as_ref().map(|(_, _, d)| *d);
        let wake = match (cycles.next, dep_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let timeout = match wake {
            Some(t) => tend_sys::deadline::poll_timeout(Some(t), now),
            None => PollTimeout::NONE,
        };
        let mut fds = [
            PollFd::new(self.sigfd.as_fd(), PollFlags::POLLIN),
            PollFd::new(pidfd.as_fd(), PollFlags::POLLIN),
            PollFd::new(self.sigfd.as_fd(), PollFlags::empty()),
            PollFd::new(self.sigfd.as_fd(), PollFlags::empty()),
        ];
        let mut n = 2;
        let (mut dep_at, mut verdict_at) = (None, None);
        if let Some((_, sub, _)) = &self.starting {
            fds[n] = PollFd::new(sub.fd(), PollFlags::POLLIN);
            dep_at = Some(n);
            n += 1;
        }
        if let Some(fd) = verdicts {
            fds[n] = PollFd::new(fd.as_fd(), PollFlags::POLLIN);
            verdict_at = Some(n);
            n += 1;
        }
        match poll(&mut fds[..n], timeout) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(err("poll", e.desc())),
        }
        let ready = |i: Option<usize>| i.is_some_and(|i| fds[i].any().unwrap_or(false));
        Ok(Woke {
            died: fds[1].any().unwrap_or(false),
            dependent: ready(dep_at),
            verdict: ready(verdict_at),
        })
    }

    /// Asked to stop: stop the daemon and end.
    fn on_stop(&mut self, pid: i32, pidfd: &OwnedFd) -> Exit {
        self.stop(pid, Some(pidfd));
        self.record_pid(None);
        // The supervisor wrote its status right after its SIGTERM, long before the stop
        // was over: still wanted up, this was a restart (tend-check's, after a failed
        // connection test), which the restart limit counts.
        if tend_client::status::read_record(&self.dir).is_ok_and(|r| r.want_up) {
            let _ = std::fs::write(self.state_file(RESTARTED), "");
        }
        Exit::Stopped
    }

    /// The daemon died: stop its dependents and end, to be run again.
    fn on_death(&mut self, pid: i32) -> Exit {
        self.record_pid(None);
        let _ = std::fs::write(self.state_file(DIED), "");
        self.stop_dependents();
        Exit::Died(pid)
    }

    /// The dependent being started said something, or is late.
    fn on_dependent(&mut self, event: bool) {
        if event {
            self.dependent_event();
        }
        self.dependent_late(Instant::now());
    }

    /// A cycle is due: measure the resource rules and do what those that fire say.
    fn on_cycle(&mut self, pid: i32, pidfd: &OwnedFd, cycles: &mut Cycles) -> Option<Exit> {
        let t = cycles.next.filter(|t| Instant::now() >= *t)?;
        cycles.next = Some(t + cycles.every);
        let outcomes = cycles.meter.cycle(pid, &self.st.resources);
        if outcomes.iter().any(|o| o.changed) {
            let _ = std::fs::create_dir_all(self.dir.join(STATE_DIR));
            let _ = std::fs::write(self.state_file(MATCHED), cycles.meter.matched_text());
        }
        for o in outcomes {
            let r = self.st.resources[o.rule].clone();
            if o.changed {
                let (event, action) = if o.fired {
                    ("Resource limit matched", r.action.as_str())
                } else {
                    ("Resource limit succeeded", "alert")
                };
                self.alert(event, action, &r.describe(&o));
            }
            if o.fired
                && let Some(exit) = self.on_fired(pid, pidfd, &r)
            {
                return Some(exit);
            }
        }
        None
    }

    /// A resource rule fired: its action.
    fn on_fired(
        &mut self,
        pid: i32,
        pidfd: &OwnedFd,
        r: &crate::runtime::resource::Rule,
    ) -> Option<Exit> {
        let text = format!(
            "{} {} {}{}",
            r.what,
            r.op,
            r.limit,
            if r.percent { "%" } else { "" }
        );
        match r.action.as_str() {
            "restart" => {
                self.report
                    .warn(&format_args!("{}: {text}: restarting", self.st.name));
                self.stop_dependents();
                self.stop(pid, Some(pidfd));
                self.record_pid(None);
                let _ = std::fs::write(self.state_file(DIED), "");
                return Some(Exit::Died(pid));
            }
            "stop" | "unmonitor" => {
                self.report
                    .warn(&format_args!("{}: {text}: {}", self.st.name, r.action));
                let _ = std::fs::write(self.state_file("unmonitored"), "");
                let _ = tend_client::control::command(&self.dir, &[ControlCommand::OnceNoStart]);
                if r.action == "stop" {
                    self.stop(pid, Some(pidfd));
                    self.record_pid(None);
                    return Some(Exit::Stopped);
                }
            }
            "exec" => {
                self.report.warn(&format_args!(
                    "{}: {text}: running {}",
                    self.st.name,
                    r.argv.join(" ")
                ));
                self.exec(r.argv.clone());
            }
            // `alert`: the event said it all.
            _ => {}
        }
        None
    }

    /// The service directory of a sibling check (the watcher runs in its own).
    fn sibling(&self, name: &str) -> PathBuf {
        self.dir.join("..").join(name)
    }

    /// The seconds a sibling's start or stop may take: its program's timeout (from its
    /// own `monit-check`) and a margin for its supervisor.
    fn sibling_patience(&self, name: &str, start: bool) -> Duration {
        let t = std::fs::read_to_string(self.sibling(name).join(CHECK_FILE))
            .ok()
            .and_then(|t| Settings::parse(&t).ok())
            .and_then(|st| if start { st.start } else { st.stop })
            .map_or(DEFAULT_TIMEOUT, |r| r.timeout);
        Duration::from_secs(u64::from(t) + 5)
    }

    /// The checks that depend on this one, transitively, in start order (every one
    /// after what it depends on, ties by name), read from the siblings' `monit-check`.
    fn dependents(&self) -> Vec<String> {
        let Ok(rd) = std::fs::read_dir(self.dir.join("..")) else {
            return Vec::new();
        };
        let siblings: Vec<(String, Vec<String>)> = rd
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let t = std::fs::read_to_string(e.path().join(CHECK_FILE)).ok()?;
                Some((name, Settings::parse(&t).ok()?.depends))
            })
            .collect();
        let mut set = vec![self.st.name.clone()];
        let mut i = 0;
        while i < set.len() {
            for (n, deps) in &siblings {
                if deps.contains(&set[i]) && !set.contains(n) {
                    set.push(n.clone());
                }
            }
            i += 1;
        }
        set.remove(0);
        let mut out: Vec<String> = Vec::with_capacity(set.len());
        while out.len() < set.len() {
            let mut ready: Vec<&String> = set
                .iter()
                .filter(|n| !out.contains(n))
                .filter(|n| {
                    siblings
                        .iter()
                        .find(|(s, _)| s == *n)
                        .is_none_or(|(_, deps)| {
                            deps.iter().all(|d| !set.contains(d) || out.contains(d))
                        })
                })
                .collect();
            if ready.is_empty() {
                break; // a loop (validation refuses one)
            }
            ready.sort();
            out.extend(ready.into_iter().cloned());
        }
        out
    }

    /// monit's restart of a dependency: what depends on it is stopped first, last
    /// dependent first, and started again once the dependency runs. Only the dependents
    /// that run and are meant to (not stopped, not unmonitored) are touched; they are
    /// remembered in `STATE_DIR` for the next watcher, which starts them.
    /// Those the previous death stopped and this watcher had not started yet are still
    /// owed a start: they are remembered too.
    fn stop_dependents(&mut self) {
        self.starting = None;
        let owed = std::mem::take(&mut self.to_start);
        let mut stopped = Vec::new();
        for name in self.dependents().iter().rev() {
            let dir = self.sibling(name);
            if owed.contains(name) {
                stopped.push(name.clone());
                continue;
            }
            let wanted = tend_client::status::read_record(&dir).is_ok_and(|r| r.want_up);
            if !wanted || crate::runtime::state::is_unmonitored(&dir) {
                continue;
            }
            self.stop_dependent(name, &dir);
            stopped.push(name.clone());
        }
        if stopped.is_empty() {
            return;
        }
        stopped.reverse();
        let text: String = stopped.iter().map(|n| format!("{n}\n")).collect();
        let _ = std::fs::create_dir_all(self.dir.join(STATE_DIR));
        let _ = std::fs::write(self.state_file(DEPENDENTS_STOPPED), text);
    }

    /// Queue, in order, the dependents a death stopped, and start the first: each is
    /// waited for (up and ready, or its start timeout) before the next, from the poll
    /// loop (`dependent_event`, `dependent_late`).
    fn start_dependents(&mut self) {
        let p = self.state_file(DEPENDENTS_STOPPED);
        let Ok(text) = std::fs::read_to_string(&p) else {
            return;
        };
        let _ = std::fs::remove_file(&p);
        self.to_start = text
            .lines()
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect();
        self.next_dependent();
    }

    /// Start the next queued dependent (`u`), subscribed to its events first; one that
    /// is unmonitored, or that cannot be controlled, is passed over.
    fn next_dependent(&mut self) {
        self.starting = None;
        while let Some(name) = self.to_start.front().cloned() {
            let dir = self.sibling(&name);
            if crate::runtime::state::is_unmonitored(&dir) {
                self.to_start.pop_front();
                continue;
            }
            let eventdir = dir.join(tend_proto::servicedir::EVENT);
            let _ = tend_proto::fifodir::make_fifodir(&eventdir, nix::unistd::getegid());
            let sub = match tend_proto::fifodir::Subscription::new(&eventdir) {
                Ok(sub) => sub,
                Err(e) => {
                    self.report.warn(&format_args!(
                        "unable to watch {}: {}",
                        dir.display(),
                        e.errno.desc()
                    ));
                    self.to_start.pop_front();
                    continue;
                }
            };
            if let Err(e) = tend_client::control::command(&dir, &[ControlCommand::Up]) {
                self.report.warn(&e.describe(
                    &dir.display().to_string(),
                    tend_proto::servicedir::SUPERVISE,
                ));
                self.to_start.pop_front();
                continue;
            }
            let already = tend_client::status::read_record(&dir)
                .is_ok_and(|r| r.pid != 0 && !r.finishing && r.ready);
            if already {
                self.to_start.pop_front();
                continue;
            }
            let deadline = Instant::now() + self.sibling_patience(&name, true);
            self.starting = Some((name, sub, deadline));
            return;
        }
    }

    /// The dependent being started sent events: up and ready (`U`) ends its wait, as do
    /// a permanent failure (`O`) or its supervisor's exit (`x`), with a warning.
    fn dependent_event(&mut self) {
        let Some((name, sub, _)) = &self.starting else {
            return;
        };
        let mut buf = [0u8; 64];
        let mut end = None;
        while let Ok(n) = sub.read(&mut buf) {
            if n == 0 {
                break;
            }
            for &ev in &buf[..n] {
                match ev {
                    b'U' => end = Some(true),
                    b'O' | b'x' => end = end.or(Some(false)),
                    _ => {}
                }
            }
        }
        let Some(up) = end else { return };
        if !up {
            self.report.warn(&format_args!(
                "{}: dependent {name} not up: it failed",
                self.st.name
            ));
        }
        self.to_start.pop_front();
        self.next_dependent();
    }

    /// The dependent being started is past its start timeout: a warning, then the next.
    fn dependent_late(&mut self, now: Instant) {
        let Some((name, _, deadline)) = &self.starting else {
            return;
        };
        if now < *deadline {
            return;
        }
        let secs = self.sibling_patience(name, true).as_secs();
        self.report.warn(&format_args!(
            "{}: dependent {name} not up within {secs} s",
            self.st.name
        ));
        self.to_start.pop_front();
        self.next_dependent();
    }

    /// Bring dependent `name` (its service directory `dir`) down and wait for it, within
    /// its stop timeout; a warning if it does not get there. (Starts go through the poll
    /// loop: `next_dependent`.)
    fn stop_dependent(&mut self, name: &str, dir: &Path) {
        let patience = self.sibling_patience(name, false);
        match crate::runtime::control::send_and_wait(
            dir,
            ControlCommand::Down,
            tend_client::wait::Target::DOWN_READY,
            patience,
        ) {
            Ok(true) => {}
            Ok(false) => self.report.warn(&format_args!(
                "{}: dependent {name} not down within {} s",
                self.st.name,
                patience.as_secs()
            )),
            Err(e) => self.report.warn(&e),
        }
    }

    /// Run the start program and wait for the daemon: its pid, or how it failed.
    fn start(&mut self) -> Result<Result<i32, Exit>, Error> {
        let Some(run) = self.st.start.clone() else {
            // No start program: wait for the process to appear, as monit waits for
            // someone else to start it.
            return self
                .wait_for_pid(None, None)
                .map(|p| p.ok_or(Exit::Stopped));
        };
        let child = match spawn(&run) {
            Ok(c) => c,
            Err(e) => return Ok(Err(Exit::StartFailed(e))),
        };
        if self.st.foreground {
            return Ok(Ok(child.as_raw()));
        }
        let deadline = Instant::now() + Duration::from_secs(u64::from(run.timeout));
        let found = self.wait_for_pid(Some(child), Some(deadline))?;
        // A start program still running past its timeout is killed, as monit does; one
        // that exited was reaped already (then the kill finds nothing).
        if found.is_none() {
            let _ = nix::sys::signal::kill(child, Signal::SIGKILL);
            let _ = tend_sys::wait::wait(Some(child));
        }
        match found {
            Some(pid) => {
                if std::fs::remove_file(self.state_file(START_FAILED)).is_ok() {
                    self.post_death();
                    self.alert(
                        "Execution succeeded",
                        "alert",
                        &format!("process is running with pid {pid}"),
                    );
                }
                Ok(Ok(pid))
            }
            None if self.stop_asked => Ok(Err(Exit::Stopped)),
            None => {
                let why = format!(
                    "{}: no process within {} s of the start program",
                    self.st
                        .pidfile
                        .as_deref()
                        .or(self.st.matching.as_deref())
                        .unwrap_or("?"),
                    run.timeout
                );
                let _ = std::fs::create_dir_all(self.dir.join(STATE_DIR));
                let _ = std::fs::write(self.state_file(START_FAILED), format!("{why}\n"));
                self.post_death();
                self.alert("Execution failed", "alert", &why);
                Ok(Err(Exit::StartFailed(why)))
            }
        }
    }

    /// Wait for the pidfile (or `matching`) to name a live process, watching the
    /// pidfile's directory with inotify and the start program's exit; a stop request or
    /// the deadline ends the wait.
    fn wait_for_pid(
        &mut self,
        child: Option<Pid>,
        deadline: Option<Instant>,
    ) -> Result<Option<i32>, Error> {
        let ino = self.pidfile_watch();
        // Without an inotify watch (no pidfile, or its directory does not exist yet),
        // look again every 100 ms: only while starting, never once the daemon runs.
        let tick = ino.is_none().then_some(Duration::from_millis(100));
        loop {
            if let Some(pid) = self.find() {
                return Ok(Some(pid));
            }
            if self.stop_asked {
                if let Some(c) = child {
                    let _ = nix::sys::signal::kill(c, Signal::SIGTERM);
                }
                return Ok(None);
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return Ok(None);
            }
            let next = match (deadline, tick) {
                (Some(d), Some(t)) => Some(d.min(now + t)),
                (d, t) => d.or(t.map(|t| now + t)),
            };
            let timeout = tend_sys::deadline::poll_timeout(next, now);
            let mut fds = vec![PollFd::new(self.sigfd.as_fd(), PollFlags::POLLIN)];
            if let Some(fd) = &ino {
                fds.push(PollFd::new(fd.as_fd(), PollFlags::POLLIN));
            }
            match poll(&mut fds, timeout) {
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(err("poll", e.desc())),
            }
            if let Some(fd) = &ino {
                drain(fd);
            }
            self.signals();
        }
    }

    fn verdict_watch(&self) -> Option<OwnedFd> {
        use rustix::fs::inotify;
        let fd =
            inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK).ok()?;
        inotify::add_watch(
            &fd,
            self.dir.join(tend_proto::servicedir::SUPERVISE),
            inotify::WatchFlags::MOVED_TO | inotify::WatchFlags::CLOSE_WRITE,
        )
        .ok()?;
        Some(fd)
    }

    fn pidfile_watch(&self) -> Option<OwnedFd> {
        let p = Path::new(self.st.pidfile.as_deref()?);
        let dir = p.parent()?;
        use rustix::fs::inotify;
        let fd =
            inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK).ok()?;
        inotify::add_watch(
            &fd,
            dir,
            inotify::WatchFlags::CLOSE_WRITE
                | inotify::WatchFlags::MOVED_TO
                | inotify::WatchFlags::CREATE
                | inotify::WatchFlags::MODIFY,
        )
        .ok()?;
        Some(fd)
    }

    /// Stop the daemon: its stop program (or SIGTERM without one), then wait up to the
    /// timeout for the daemon to go and the stop program to finish (a stop program that
    /// cleans up after the kill must not outlive the stop: the next start's pidfile would
    /// be its to remove). A stop program still running at the timeout is killed; a daemon
    /// still running is recorded (`STOP_FAILED`), so the service is never reported as
    /// not monitored while it runs.
    fn stop(&mut self, pid: i32, pidfd: Option<&OwnedFd>) {
        let timeout = match (&self.st.stop, self.st.stop_grace) {
            (Some(r), _) => r.timeout,
            (None, Some(g)) => g,
            (None, None) => DEFAULT_TIMEOUT,
        };
        let _ = std::fs::remove_file(self.state_file(STOP_FAILED));
        let program = self.begin_stop(pidfd);
        let deadline = Instant::now() + Duration::from_secs(u64::from(timeout));
        let (daemon, program) = self.await_stop(deadline, pidfd, program);
        if let Some((child, _)) = program {
            self.report.warn(&format_args!(
                "{}: stop program still runs after {timeout} s: killed",
                self.st.name
            ));
            let _ = nix::sys::signal::kill(child, Signal::SIGKILL);
            self.signals();
        }
        let Some(fd) = daemon else { return };
        if self.st.foreground {
            // Its own child, as bpm's: killed after the grace.
            self.report.warn(&format_args!(
                "{}: pid {pid} still runs {timeout} s after its stop signal: killed",
                self.st.name
            ));
            let _ = rustix::process::pidfd_send_signal(fd, rustix::process::Signal::KILL);
            let _ = tend_sys::wait::wait(Some(Pid::from_raw(pid)));
            return;
        }
        self.report.warn(&format_args!(
            "{}: pid {pid} still runs {timeout} s after the stop program",
            self.st.name
        ));
        let _ = std::fs::create_dir_all(self.dir.join(STATE_DIR));
        let _ = std::fs::write(
            self.state_file(STOP_FAILED),
            format!("pid {pid} still runs {timeout} s after the stop program\n"),
        );
    }

    /// The stop program started (its pid, and a pidfd that turns readable when it exits),
    /// or, without one, the stop signal sent to the daemon.
    fn begin_stop(&mut self, pidfd: Option<&OwnedFd>) -> Option<(Pid, OwnedFd)> {
        match &self.st.stop {
            Some(run) => match spawn(run) {
                // Opened before any reaping (only `signals` reaps): the child is at most
                // a zombie here.
                Ok(child) => rustix::process::Pid::from_raw(child.as_raw())
                    .and_then(|p| {
                        rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).ok()
                    })
                    .map(|fd| (child, fd)),
                Err(e) => {
                    self.report
                        .warn(&format_args!("{}: stop program: {e}", self.st.name));
                    None
                }
            },
            None => {
                // The toolkit's one signal grammar (what tend-jobs wrote as bpm's
                // shutdown_signal); TERM when none is set.
                let sig = self
                    .st
                    .stop_signal
                    .and_then(rustix::process::Signal::from_named_raw)
                    .unwrap_or(rustix::process::Signal::TERM);
                if let Some(fd) = pidfd {
                    let _ = rustix::process::pidfd_send_signal(fd, sig);
                }
                None
            }
        }
    }

    /// Wait until the daemon is gone and the stop program has finished, or until
    /// `deadline`, reaping as signals come: what still runs then.
    fn await_stop<'a>(
        &mut self,
        deadline: Instant,
        mut daemon: Option<&'a OwnedFd>,
        mut program: Option<(Pid, OwnedFd)>,
    ) -> (Option<&'a OwnedFd>, Option<(Pid, OwnedFd)>) {
        loop {
            if daemon.is_none() && program.is_none() {
                return (None, None);
            }
            let now = Instant::now();
            if now >= deadline {
                return (daemon, program);
            }
            // A fixed set: the signals, then the daemon and the stop program while they
            // are awaited (an unused slot polls the signalfd for nothing).
            let idle = PollFd::new(self.sigfd.as_fd(), PollFlags::empty());
            let mut fds = [
                PollFd::new(self.sigfd.as_fd(), PollFlags::POLLIN),
                idle,
                idle,
            ];
            if let Some(fd) = daemon {
                fds[1] = PollFd::new(fd.as_fd(), PollFlags::POLLIN);
            }
            if let Some((_, fd)) = &program {
                fds[2] = PollFd::new(fd.as_fd(), PollFlags::POLLIN);
            }
            let _ = poll(
                &mut fds,
                tend_sys::deadline::poll_timeout(Some(deadline), now),
            );
            let ended = |i: usize| fds[i].any().unwrap_or(false);
            let (daemon_gone, program_done) = (ended(1), ended(2));
            if daemon_gone {
                daemon = None;
            }
            if program_done {
                program = None;
            }
            self.signals();
        }
    }
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn drain(fd: &OwnedFd) {
    let mut buf = [0u8; 1024];
    while let Ok(n) = rustix::io::read(fd, &mut buf) {
        if n == 0 {
            break;
        }
    }
}

/// Tell tend-supervise the daemon is up: a newline on the notification fd (3, as the
/// service's `notification-fd` says), then close it. No fd 3 (run by hand): nothing.
fn notify_ready() {
    if tend_sys::fd::check_open(3).is_ok() {
        let _ = tend_sys::fd::write_all_raw(3, b"\n");
        let _ = nix::unistd::close(3);
    }
}

/// Before anything is spawned: fd 3 (the notification pipe) is not for the start
/// program's daemon, which would otherwise hold it open for its whole life.
pub fn keep_notification_fd_private() {
    let _ = nix::fcntl::fcntl(
        3,
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip() {
        let st = Settings {
            name: "web".into(),
            pidfile: Some("/run/web.pid".into()),
            matching: None,
            start: Some(Run {
                argv: vec!["/bin/sh".into(), "-c".into(), "echo a b".into()],
                uid: Some(1000),
                gid: Some(1000),
                timeout: 60,
            }),
            stop: Some(Run {
                argv: vec!["/bin/kill".into()],
                uid: None,
                gid: None,
                timeout: 30,
            }),
            restart_limit: Some((
                3,
                30,
                LimitAction::Exec(vec!["/bin/x".into(), "a b".into()]),
            )),
            resources: vec![crate::runtime::resource::Rule {
                what: "totalmem".into(),
                op: ">".into(),
                limit: 102400.0,
                percent: false,
                cycles: (3, 5),
                action: "exec".into(),
                argv: vec!["/bin/drain".into()],
            }],
            cycle: 10,
            mail: crate::runtime::alert::Mail {
                recipients: vec!["agent@local".into()],
                servers: vec!["127.0.0.1:2825".into()],
                from: Some("monit@localhost".into()),
                subject: Some("Monit Alert".into()),
                message: Some("Service: $SERVICE\nEvent: $EVENT".into()),
                queue: Some("/var/vcap/monit/events".into()),
                log: Some("/var/vcap/monit/monit.log".into()),
            },
            depends: vec!["db".into(), "cache".into()],
            connection: Some("restart".into()),
            foreground: true,
            stop_signal: Some(nix::sys::signal::Signal::SIGINT as i32),
            stop_grace: Some(20),
        };
        assert_eq!(Settings::parse(&st.to_text()).unwrap(), st);
    }

    #[test]
    fn pidfile_refuses_pid_1_and_garbage() {
        let d = std::env::temp_dir().join(format!("tend-monit-pid-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join("p.pid");
        std::fs::write(&f, "1\n").unwrap();
        let e = pid_from_file(&f, None).unwrap_err();
        assert_eq!(e, FindError::Low(f.clone(), 1));
        assert_eq!(
            e.to_string(),
            format!("{}: names pid 1: refused", f.display())
        );
        std::fs::write(&f, "garbage\tx\n").unwrap();
        let e = pid_from_file(&f, None).unwrap_err();
        assert_eq!(e, FindError::NotAPid(f.clone(), "garbage\tx".into()));
        assert_eq!(
            e.to_string(),
            format!("{}: not a pid: garbage\\tx", f.display())
        );
        let me = std::process::id();
        std::fs::write(&f, format!("{me}\n")).unwrap();
        assert_eq!(pid_from_file(&f, None), Err(FindError::Itself(f.clone())));
        std::fs::write(&f, "").unwrap();
        assert_eq!(pid_from_file(&f, None), Ok(None));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_bad_pattern_is_told_apart_from_a_system_failure() {
        assert!(matches!(matching("("), Err(FindError::Pattern(_))));
        assert!(matching("^no-such-process-xyz-123$").unwrap().is_empty());
    }
}
