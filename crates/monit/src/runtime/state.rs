//! What the watcher, the daemon and the HTTP interface share about a check at run time:
//! the watcher's settings, and the files of its service directory they all read.

use std::path::{Path, PathBuf};

/// The file of a service directory that holds the check's settings.
pub const CHECK_FILE: &str = "monit-check";
/// Where the watcher keeps what it learns (`pid`: the daemon's pid).
pub const STATE_DIR: &str = "monit-state";
/// In `STATE_DIR`: the last start failed (and why); removed when a start succeeds.
pub const START_FAILED: &str = "start-failed";
/// In `STATE_DIR`: the daemon outlived its stop's timeout (the service is not stopped).
pub const STOP_FAILED: &str = "stop-failed";
/// monit's default for `with timeout`.
pub const DEFAULT_TIMEOUT: u32 = 30;

/// A program as the watcher runs it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Run {
    pub argv: Vec<String>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub timeout: u32,
}

/// What `monit-check` says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Settings {
    pub name: String,
    pub pidfile: Option<String>,
    pub matching: Option<String>,
    pub start: Option<Run>,
    pub stop: Option<Run>,
    /// `if N restarts within M cycles then …`: (N, seconds of M cycles, what to do).
    pub restart_limit: Option<(u32, u64, LimitAction)>,
    /// Resource rules, measured every `cycle` seconds.
    pub resources: Vec<crate::runtime::resource::Rule>,
    pub cycle: u32,
    /// Where alerts go (`set alert`, `set mailserver`, `set mail-format`).
    pub mail: crate::runtime::alert::Mail,
    /// The checks this one depends on (`depends on`). A dependency's watcher reads
    /// them from its siblings to find what depends on it (a dependency's own settings
    /// do not list its dependents: adding a dependent must not replace, so restart, it).
    pub depends: Vec<String>,
    /// The action of its connection test (`restart`, `alert`), run by its `NAME-health`
    /// tend-check: the watcher posts the test's failures and recoveries.
    pub connection: Option<String>,
    /// The start program is the daemon itself, run in the foreground (a bpm process's
    /// chain, `crate::runtime::bpm`): its pid is the child's, no pidfile is waited for.
    pub foreground: bool,
    /// Without a stop program: the signal that stops the daemon (`TERM` unless said)
    /// and the seconds before SIGKILL (a foreground daemon's; bpm's `shutdown_signal`
    /// and its 20 s).
    /// A signal number, written by its name in the check file (sys::signals).
    pub stop_signal: Option<i32>,
    pub stop_grace: Option<u32>,
}

/// What `if N restarts within M cycles then …` does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LimitAction {
    /// `timeout` / `unmonitor`: stop restarting it.
    Unmonitor,
    /// `exec "…"`: run the program, then go on.
    Exec(Vec<String>),
    /// `alert` (and what else has no meaning here): say so, then go on.
    Alert,
}

impl LimitAction {
    /// Its word in `monit-check` and in the `Timeout` event.
    pub fn word(&self) -> &'static str {
        match self {
            LimitAction::Unmonitor => "unmonitor",
            LimitAction::Exec(_) => "exec",
            LimitAction::Alert => "alert",
        }
    }
}

pub fn unmonitored_marker(dir: &Path) -> PathBuf {
    dir.join(STATE_DIR).join("unmonitored")
}

/// Whether the service was unmonitored (`monit unmonitor`).
pub fn is_unmonitored(dir: &Path) -> bool {
    unmonitored_marker(dir).exists()
}
