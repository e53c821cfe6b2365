//! What monit would say about each service, read from the supervisors' status files and
//! the watchers' `monit-state/`: the states of `summary` and of the XML, and 5.2.5's and
//! 5.33's summary layouts.

use crate::model::{Control, Kind};
use crate::watch::STATE_DIR;
use std::path::Path;

/// A service's state as monit names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Running,
    NotMonitored,
    /// Started, the daemon not found yet (monit: `initializing`, monitor 2).
    Initializing,
    /// The daemon died and is being started again.
    DoesNotExist,
    /// The start program did not bring it up.
    ExecutionFailed,
    /// Being stopped.
    StopPending,
}

impl State {
    /// 5.2.5's word in `summary`.
    pub fn word_525(self) -> &'static str {
        match self {
            State::Running => "running",
            State::NotMonitored => "not monitored",
            State::Initializing => "initializing",
            State::DoesNotExist => "Does not exist",
            State::ExecutionFailed => "Execution failed",
            State::StopPending => "stop pending",
        }
    }

    /// 5.33's word in `summary`.
    pub fn word_533(self) -> &'static str {
        match self {
            State::Running => "OK",
            State::NotMonitored => "Not monitored",
            State::Initializing => "Initializing",
            State::DoesNotExist => "Does not exist",
            State::ExecutionFailed => "Execution failed",
            State::StopPending => "Stop pending",
        }
    }
}

/// A process check's state, with the daemon's pid when it runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Service {
    pub name: String,
    pub state: State,
    pub pid: Option<i32>,
    /// Seconds since the supervisor's last up/down transition.
    pub uptime: u64,
}

/// The watcher's exit code when the start program failed (see `watch::Exit`).
pub const EXIT_START_FAILED: u8 = 2;

pub fn read(scandir: &Path, name: &str) -> Service {
    let dir = scandir.join(name);
    let mut s = Service {
        name: name.into(),
        state: State::NotMonitored,
        pid: None,
        uptime: 0,
    };
    if crate::control::is_unmonitored(&dir) || !tend_client::svok(&dir).unwrap_or(false) {
        return s;
    }
    let Ok(r) = tend_client::status::read_record(&dir) else {
        return s;
    };
    let now = tend_proto::Tai64n::now();
    s.uptime = r.stamp.secs_until(now);
    let pid = std::fs::read_to_string(dir.join(STATE_DIR).join("pid"))
        .ok()
        .and_then(|p| p.trim().parse().ok());
    let running = r.pid != 0 && !r.finishing;
    let start_failed = dir
        .join(STATE_DIR)
        .join(crate::watch::START_FAILED)
        .exists();
    s.state = match (r.want_up, running, r.ready) {
        (true, true, true) => State::Running,
        (true, true, false) if start_failed => State::ExecutionFailed,
        (true, true, false) => State::Initializing,
        (true, false, _) => {
            let code = tend_sys::wait::Wstat(i32::from(r.wstat)).exit_code();
            if code == Some(EXIT_START_FAILED) {
                State::ExecutionFailed
            } else {
                State::DoesNotExist
            }
        }
        (false, true, _) => State::StopPending,
        (false, false, _) => State::NotMonitored,
    };
    if s.state == State::Running {
        s.pid = pid;
    }
    s
}

/// monit's uptime text: `[Nd ][Nh ]Nm ` (5.2.5 keeps the trailing blank).
pub fn uptime_525(secs: u64) -> String {
    let (d, h, m) = (secs / 86400, secs % 86400 / 3600, secs % 3600 / 60);
    let mut s = String::new();
    if d > 0 {
        s += &format!("{d}d ");
    }
    if d > 0 || h > 0 {
        s += &format!("{h}h ");
    }
    s += &format!("{m}m ");
    s
}

/// The system service's name as monit makes it: `system_` and the host name.
pub fn system_name() -> String {
    // The kernel's host name, as gethostname(2) returns it.
    let h = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into());
    format!("system_{h}")
}

/// `monit summary` in 5.2.5's layout: the daemon line, a blank line, then one row per
/// process check (and the system) with the state at column 37.
pub fn summary_525(c: &Control, services: &[Service], daemon_uptime: u64) -> String {
    let mut out = format!(
        "The Monit daemon 5.2.5 uptime: {}\n\n",
        uptime_525(daemon_uptime)
    );
    for s in services {
        out += &format!(
            "{:<36}{}\n",
            format!("Process '{}'", s.name),
            s.state.word_525()
        );
    }
    let system = c
        .checks
        .iter()
        .find(|ch| ch.kind == Kind::System)
        .map_or_else(system_name, |ch| ch.name.clone());
    out += &format!("{:<36}{}\n", format!("System '{system}'"), "running");
    out
}

/// `monit status` in 5.2.5's layout: a block per service, values at column 37.
pub fn status_525(services: &[Service], daemon_uptime: u64) -> String {
    let mut out = format!(
        "The Monit daemon 5.2.5 uptime: {}\n\n",
        uptime_525(daemon_uptime)
    );
    let row = |k: &str, v: &str| format!("  {k:<34}{v}\n");
    for s in services {
        out += &format!("Process '{}'\n", s.name);
        out += &row("status", s.state.word_525());
        let monitored = match s.state {
            State::NotMonitored => "not monitored",
            State::Initializing => "initializing",
            _ => "monitored",
        };
        out += &row("monitoring status", monitored);
        if let Some(pid) = s.pid {
            out += &row("pid", &pid.to_string());
            out += &row("uptime", uptime_525(s.uptime).trim_end());
        }
        out += "\n";
    }
    out
}
