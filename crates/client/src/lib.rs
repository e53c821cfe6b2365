//! The client side of a supervisor: what tend-svc, tend-svstat, tend-svwait and tend-svok
//! do, written once.
//!
//! What lives here: sending control letters with s6-svc's checks (which failure means
//! "supervisor not listening", which means "something is wrong with supervise/"), and
//! to a scanner's `.s6-svscan/control` as s6-svscanctl does (`scanctl`), reading
//! a service's status and computing every field s6-svstat prints (the legacy human line,
//! `-o` field lists, and tend's JSON object), and waiting for states through the `event/`
//! fifodir, subscribed to directly (no helper process). Every answer matches s6 2.11.3's
//! clients byte for byte where s6 has one; the differences are listed in the man pages.
//!
//! What does not: option parsing, messages and exit codes (the binaries), the wire
//! formats themselves (crates/proto). Nothing here prints, exits or panics.

#![forbid(unsafe_code)]

pub mod control;
pub mod dtally;
pub mod install;
pub mod instance;
pub mod link;
pub mod permafailon;
pub mod perms;
pub mod scanctl;
pub mod status;
pub mod summary;
pub mod wait;

pub use control::SendError;
pub use status::{Field, FieldError, ReadError, Snapshot};
pub use wait::{Outcome, Target, WaitError, Watch};

use nix::errno::Errno;
use std::path::Path;
use std::time::Instant;

/// The service directory an operand names: with a scan directory (`-s`, or
/// `TEND_SCANDIR` when no `-s` is given), an operand without a slash (other than `.` and
/// `..`) is a service of that directory; anything else is a path as given.
pub fn service_path(
    operand: &std::ffi::OsStr,
    scandir: Option<&std::ffi::OsStr>,
) -> std::ffi::OsString {
    let b = operand.as_encoded_bytes();
    match scandir {
        Some(dir) if !dir.is_empty() && !b.contains(&b'/') && b != b"." && b != b".." => {
            Path::new(dir).join(operand).into_os_string()
        }
        _ => operand.to_os_string(),
    }
}

/// The scan directory for [`service_path`]: the option's value, else `TEND_SCANDIR`.
pub fn scandir_option(given: Option<&std::ffi::OsStr>) -> Option<std::ffi::OsString> {
    given
        .map(std::ffi::OsStr::to_os_string)
        .or_else(|| std::env::var_os("TEND_SCANDIR").filter(|d| !d.is_empty()))
}

/// What tend-svc achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SvcOutcome {
    /// Letters written (no wait asked).
    Sent,
    /// Letters written and the state reached.
    Reached,
    /// The service failed permanently or its supervisor exited before the state was reached.
    Failed,
    /// The deadline passed first.
    TimedOut,
}

/// Why tend-svc failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SvcError {
    Control(SendError),
    Wait(WaitError),
}

impl SvcError {
    pub fn code(&self) -> i32 {
        match self {
            SvcError::Control(e) => e.code(),
            SvcError::Wait(e) => e.code(),
        }
    }

    /// The message for the service `name` (as shown).
    pub fn describe<'a>(&'a self, name: &'a str) -> Box<dyn std::fmt::Display + 'a> {
        match self {
            SvcError::Control(e) => Box::new(e.describe(name, tend_proto::servicedir::SUPERVISE)),
            SvcError::Wait(e) => Box::new(e.describe(name)),
        }
    }
}

/// Send `letters` to a service's supervisor; with `wait`, subscribe to its events first
/// and then wait (until `deadline`) for the target state. With a wait and no letters,
/// nothing is sent: it only waits, as s6-svc does.
pub fn svc(
    servicedir: &Path,
    letters: &[u8],
    wait: Option<Target>,
    deadline: Option<Instant>,
) -> Result<SvcOutcome, SvcError> {
    let Some(target) = wait else {
        control::send(servicedir, letters).map_err(SvcError::Control)?;
        return Ok(SvcOutcome::Sent);
    };
    let mut watch = Watch::new();
    watch.add(servicedir).map_err(SvcError::Wait)?;
    if !letters.is_empty() {
        control::send(servicedir, letters).map_err(SvcError::Control)?;
    }
    Ok(
        match watch
            .wait(target, false, deadline)
            .map_err(SvcError::Wait)?
        {
            wait::Outcome::Reached { failures: 0 } => SvcOutcome::Reached,
            wait::Outcome::Reached { .. } => SvcOutcome::Failed,
            wait::Outcome::TimedOut => SvcOutcome::TimedOut,
        },
    )
}

/// Whether the service can notify readiness (`notification-fd` exists); s6-svc degrades
/// `-wU`/`-wR` to `-wu`/`-wr` when it does not.
pub fn notifies_readiness(servicedir: &Path) -> Result<bool, Errno> {
    match nix::unistd::access(
        &servicedir.join(tend_proto::servicedir::NOTIFICATION_FD),
        nix::unistd::AccessFlags::F_OK,
    ) {
        Ok(()) => Ok(true),
        Err(Errno::ENOENT) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Why tend-svwait could not wait: which service (index into its list) and what failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SvwaitError {
    pub index: usize,
    pub error: WaitError,
}

/// Subscribe to every service, then wait for all (or, with `any`, one) to reach `target`.
pub fn svwait<P: AsRef<Path>>(
    servicedirs: &[P],
    target: Target,
    any: bool,
    deadline: Option<Instant>,
) -> Result<wait::Outcome, SvwaitError> {
    let mut watch = Watch::new();
    for (index, dir) in servicedirs.iter().enumerate() {
        watch
            .add(dir.as_ref())
            .map_err(|error| SvwaitError { index, error })?;
    }
    watch
        .wait(target, any, deadline)
        .map_err(|error| SvwaitError { index: 0, error })
}

/// Why tend-svlisten could not listen: a service could not be watched, or the program
/// could not be started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SvlistenError {
    Watch(SvwaitError),
    /// spawn failed: the program's name and the errno.
    Spawn(std::ffi::OsString, Errno),
}

/// s6-svlisten's order: subscribe to every service and read its state, then start
/// `prog` (not waited for), then wait for all (or one) to reach `target`. The program
/// can make the change happen without a race: its events are already subscribed to.
pub fn svlisten<P: AsRef<Path>>(
    servicedirs: &[P],
    prog: &[std::ffi::OsString],
    target: Target,
    any: bool,
    deadline: Option<Instant>,
) -> Result<wait::Outcome, SvlistenError> {
    let mut watch = Watch::new();
    for (index, dir) in servicedirs.iter().enumerate() {
        watch
            .add(dir.as_ref())
            .map_err(|error| SvlistenError::Watch(SvwaitError { index, error }))?;
    }
    let name = prog.first().cloned().unwrap_or_default();
    let prepared = tend_sys::exec::Prepared::with_current_env(prog)
        .map_err(|e| SvlistenError::Spawn(name.clone(), e))?;
    match tend_sys::process::spawn(&prepared, &tend_sys::process::SpawnOptions::default()) {
        Ok(_) => {}
        Err(tend_sys::process::SpawnError::Fork(e) | tend_sys::process::SpawnError::Exec(e)) => {
            return Err(SvlistenError::Spawn(name, e));
        }
    }
    watch
        .wait(target, any, deadline)
        .map_err(|error| SvlistenError::Watch(SvwaitError { index: 0, error }))
}

/// s6-svlisten's operands: the service directories up to an empty argument (an
/// execline block: each word may carry execline's leading space), then the program.
/// None when the block has no terminator.
pub fn split_block(
    operands: &[std::ffi::OsString],
) -> Option<(Vec<std::ffi::OsString>, &[std::ffi::OsString])> {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let end = operands.iter().position(|a| a.is_empty())?;
    let dirs = operands[..end]
        .iter()
        .map(|a| {
            let b = a.as_bytes();
            let b = b.strip_prefix(b" ").unwrap_or(b);
            std::ffi::OsString::from_vec(b.to_vec())
        })
        .collect();
    Some((dirs, &operands[end + 1..]))
}

/// Whether a supervisor runs on `servicedir` (s6-svok).
pub fn svok(servicedir: &Path) -> Result<bool, Errno> {
    tend_proto::lock::is_held(&servicedir.join(tend_proto::servicedir::LOCK))
}
