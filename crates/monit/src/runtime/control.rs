//! monit's actions on the services tend-monit installed: which services, in which
//! order, with which supervisor letters, and waiting for each to get there.
//!
//! `start NAME` starts what NAME depends on first; `stop NAME` stops what depends on
//! NAME first; `restart` is both; `unmonitor` leaves the process running but no longer
//! restarted (the supervisor's `O`: do not run again), `monitor` undoes it. The order is
//! `order::start_order`'s (a topological sort here until tend-rc's engine takes over).

use crate::reader::model::{Control, Kind};
use crate::runtime::state::STATE_DIR;
use crate::runtime::state::unmonitored_marker;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tend_client::wait::{Outcome, Target, Watch};
use tend_proto::ControlCommand;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Start,
    Stop,
    Restart,
    Monitor,
    Unmonitor,
}

impl Action {
    pub fn word(self) -> &'static str {
        match self {
            Action::Start => "start",
            Action::Stop => "stop",
            Action::Restart => "restart",
            Action::Monitor => "monitor",
            Action::Unmonitor => "unmonitor",
        }
    }

    pub fn from_word(w: &str) -> Option<Action> {
        Some(match w {
            "start" => Action::Start,
            "stop" => Action::Stop,
            "restart" => Action::Restart,
            "monitor" => Action::Monitor,
            "unmonitor" => Action::Unmonitor,
            _ => return None,
        })
    }
}

/// monit's `Action done` event (`'db' restart action done`) for each service the
/// action was asked of, once every step of it was done.
pub fn post_done(
    c: &Control,
    scandir: &Path,
    action: Action,
    names: &[String],
    report: &dyn tend_sys::warn::Warn,
) {
    let description = format!("{} action done", action.word());
    for ch in c.checks.iter().filter(|ch| names.contains(&ch.name)) {
        let ev = crate::runtime::alert::Event {
            service: &ch.name,
            event: "Action done",
            action: "alert",
            description: &description,
        };
        crate::runtime::alert::post(
            &crate::runtime::alert::mail(c, ch),
            &scandir.join(&ch.name),
            &ev,
            report,
        );
    }
}

/// One step: a service and what to do to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Up(String),
    Down(String),
    Unmonitor(String),
}

/// `start NAME`, `stop NAME`, `unmonitor NAME`: a step as messages name it.
impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Step::Up(n) => write!(f, "start {n}"),
            Step::Down(n) => write!(f, "stop {n}"),
            Step::Unmonitor(n) => write!(f, "unmonitor {n}"),
        }
    }
}

/// The process checks in start order.
pub fn process_order(c: &Control) -> Vec<String> {
    crate::reader::order::start_order(&c.checks)
        .into_iter()
        .filter(|n| {
            c.checks
                .iter()
                .any(|ch| ch.name == *n && ch.kind == Kind::Process)
        })
        .map(String::from)
        .collect()
}

/// `names` and everything they depend on, transitively (`up`), or everything that
/// depends on them (`!up`).
fn closure(c: &Control, names: &[String], up: bool) -> Vec<String> {
    let mut set: Vec<String> = names.to_vec();
    let mut i = 0;
    while i < set.len() {
        let n = set[i].clone();
        let more: Vec<String> = if up {
            c.checks
                .iter()
                .filter(|ch| ch.name == n)
                .flat_map(|ch| ch.depends.iter().map(|(d, _)| d.clone()))
                .collect()
        } else {
            c.checks
                .iter()
                .filter(|ch| ch.depends.iter().any(|(d, _)| *d == n))
                .map(|ch| ch.name.clone())
                .collect()
        };
        for m in more {
            if !set.contains(&m) {
                set.push(m);
            }
        }
        i += 1;
    }
    set
}

/// Send `cmd` to the supervisor of `dir` and wait up to `patience` for `target`
/// (subscribed before sending, so the transition cannot be missed).
pub fn send_and_wait(
    dir: &Path,
    cmd: ControlCommand,
    target: Target,
    patience: Duration,
) -> Result<bool, StepError> {
    let mut w = Watch::new();
    w.add(dir).map_err(|e| watch_error(dir, &e))?;
    tend_client::control::command(dir, &[cmd]).map_err(|e| control_error(dir, &e))?;
    match w.wait(target, false, Some(Instant::now() + patience)) {
        Ok(Outcome::Reached { .. }) => Ok(true),
        Ok(_) => Ok(false),
        Err(e) => Err(watch_error(dir, &e)),
    }
}

/// The steps of `action` on `names`, in order.
pub fn plan(c: &Control, action: Action, names: &[String]) -> Vec<Step> {
    let order = process_order(c);
    let in_order = |set: &[String]| -> Vec<String> {
        order.iter().filter(|n| set.contains(n)).cloned().collect()
    };
    let ups = |set: Vec<String>| in_order(&set).into_iter().map(Step::Up);
    let downs = |set: Vec<String>| in_order(&set).into_iter().rev().map(Step::Down);
    match action {
        Action::Start | Action::Monitor => ups(closure(c, names, true)).collect(),
        Action::Stop => downs(closure(c, names, false)).collect(),
        Action::Restart => {
            let set = closure(c, names, false);
            downs(set.clone()).chain(ups(set)).collect()
        }
        Action::Unmonitor => in_order(&closure(c, names, false))
            .into_iter()
            .rev()
            .map(Step::Unmonitor)
            .collect(),
    }
}

fn watch_error(dir: &Path, e: &tend_client::wait::WaitError) -> StepError {
    StepError::Watch(dir.to_path_buf(), *e)
}

fn control_error(dir: &Path, e: &tend_proto::control::SendError) -> StepError {
    StepError::Control(dir.to_path_buf(), *e)
}

/// Why a step failed, with the service directory or name it failed on.
#[derive(Debug)]
pub enum StepError {
    /// The service's events could not be watched.
    Watch(PathBuf, tend_client::wait::WaitError),
    /// Its supervisor was not sent the command.
    Control(PathBuf, tend_proto::control::SendError),
    /// The service's unmonitored marker could not be written.
    Mark(String, std::io::Error),
}

impl std::fmt::Display for StepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StepError::Watch(dir, e) => write!(f, "{}", e.describe(&dir.display().to_string())),
            StepError::Control(dir, e) => write!(
                f,
                "{}",
                e.describe(
                    &dir.display().to_string(),
                    tend_proto::servicedir::SUPERVISE
                )
            ),
            StepError::Mark(name, e) => write!(
                f,
                "unable to mark {name} unmonitored: {}",
                tend_sys::error::io_reason(e)
            ),
        }
    }
}

/// The seconds a step may take: the program's timeout and a margin for the supervisor.
pub fn patience(c: &Control, name: &str, up: bool) -> Duration {
    let t = c
        .checks
        .iter()
        .find(|ch| ch.name == name)
        .and_then(|ch| {
            if up {
                ch.start.as_ref()
            } else {
                ch.stop.as_ref()
            }
        })
        .and_then(|p| p.timeout)
        .unwrap_or(crate::runtime::state::DEFAULT_TIMEOUT);
    Duration::from_secs(u64::from(t) + 5)
}

fn wait_for(dir: &Path, target: Target, patience: Duration) -> Result<bool, StepError> {
    let mut w = Watch::new();
    w.add(dir).map_err(|e| watch_error(dir, &e))?;
    match w.wait(target, false, Some(Instant::now() + patience)) {
        Ok(Outcome::Reached { .. }) => Ok(true),
        Ok(_) => Ok(false),
        Err(e) => Err(watch_error(dir, &e)),
    }
}

/// Carry out one step on `scandir/NAME`, waiting for it (`wait`); `Ok(false)`: the
/// service did not get there in time.
pub fn execute(c: &Control, scandir: &Path, step: &Step, wait: bool) -> Result<bool, StepError> {
    let (name, cmd, target, up) = match step {
        Step::Up(n) => (n, ControlCommand::Up, Some(Target::UP_READY), true),
        Step::Down(n) => (n, ControlCommand::Down, Some(Target::DOWN_READY), false),
        Step::Unmonitor(n) => (n, ControlCommand::OnceNoStart, None, false),
    };
    let dir = scandir.join(name);
    match step {
        Step::Unmonitor(_) => {
            let _ = std::fs::create_dir_all(dir.join(STATE_DIR));
            std::fs::write(unmonitored_marker(&dir), "")
                .map_err(|e| StepError::Mark(name.clone(), e))?;
        }
        _ => {
            let _ = std::fs::remove_file(unmonitored_marker(&dir));
        }
    }
    // Subscribe before sending, so the transition cannot be missed.
    let mut w = None;
    if let Some(t) = target.filter(|_| wait) {
        let mut watch = Watch::new();
        watch.add(&dir).map_err(|e| watch_error(&dir, &e))?;
        w = Some((watch, t));
    }
    tend_client::control::command(&dir, &[cmd]).map_err(|e| control_error(&dir, &e))?;
    let Some((mut watch, t)) = w else {
        return Ok(true);
    };
    match watch.wait(t, false, Some(Instant::now() + patience(c, name, up))) {
        // Down, but its daemon outlived the stop program's timeout: not done.
        Ok(Outcome::Reached { .. }) if !up => Ok(!dir
            .join(STATE_DIR)
            .join(crate::runtime::state::STOP_FAILED)
            .exists()),
        Ok(Outcome::Reached { .. }) => Ok(true),
        Ok(_) => Ok(false),
        Err(e) => Err(watch_error(&dir, &e)),
    }
}

/// Whether a service is up and ready (its daemon found), waiting up to `patience`.
pub fn wait_ready(dir: &Path, patience: Duration) -> Result<bool, StepError> {
    wait_for(dir, Target::UP_READY, patience)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tend-monit-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_step_that_fails_says_where_and_why() {
        let scan = scratch("step");
        let c = Control::default();
        // No supervisor ever ran in db: its control FIFO has no reader.
        std::fs::create_dir(scan.join("db")).unwrap();
        let e = execute(&c, &scan, &Step::Up("db".into()), false).unwrap_err();
        assert!(matches!(
            e,
            StepError::Control(_, tend_proto::control::SendError::NotListening)
        ));
        let want = format!(
            "unable to control {}: supervisor not listening",
            scan.join("db").display()
        );
        assert_eq!(e.to_string(), want);
        // web is a file: its state directory cannot be made, nor the marker written.
        std::fs::write(scan.join("web"), "").unwrap();
        let e = execute(&c, &scan, &Step::Unmonitor("web".into()), false).unwrap_err();
        assert!(matches!(e, StepError::Mark(ref n, _) if n == "web"));
        assert_eq!(
            e.to_string(),
            "unable to mark web unmonitored: Not a directory"
        );
        std::fs::remove_dir_all(&scan).unwrap();
    }
}
