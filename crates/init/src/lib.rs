//! tend-init: PID 1 for a container (or a VM guest), in the stages of s6-overlay's /init
//! and with the duties of tini.
//!
//! Stage 1 saves the environment as an envdir and runs the init.d scripts. Then the
//! image's service directories are mirrored (directories made, files symlinked) into a
//! writable scan directory and tend-svscan
//! runs on it as a child (not as PID 1), and init waits, with a limit, until every
//! service is up (ready, where it notifies readiness). Stage 2 runs the command in the
//! foreground, in a process group of its own that owns the terminal. Stage 3 runs the
//! finish.d scripts, brings the tree down as `tend-svscanctl -t` does (loggers drain),
//! then SIGTERMs and SIGKILLs whatever is left, each after its grace time.
//!
//! Throughout, one thread waits for its blocked signals (rt_sigtimedwait when they are all
//! it waits for, else `poll` on their signalfd): SIGCHLD reaps every dead child at
//! once (a `WNOHANG` loop), the other signals are forwarded to the command. While waiting
//! for the services, init also listens on their `event/` fifodirs (subscribed before the
//! supervisors start) and reads `supervise/status` on each event.
//!
//! The door is `start` (below): it picks the mode and runs the stages as named steps.
//! The rooms: `stages` (stage 1, 2, 3 and the scripts they run), `services` (mirror the
//! tree, spawn the scanner, wait for the services), `reaper` (the signals and the
//! reaping loop that every stage turns), `guest` (what a VM's PID 1 does before and
//! after the stages), `overlay` (s6-overlay v3's /init: its stages, in its order,
//! over the same rooms) and `extension` (tend-extension: Kata's guest extension images,
//! mounted by an init.d script before the agent).
//!
//! What this crate is not: a supervisor (tend-svscan and tend-supervise are), or a
//! service manager with dependencies: its own services start together, as in a scan
//! directory, and an s6-overlay image's dependency graph is tend-rc's job, which init
//! runs as a program.

pub mod extension;
pub mod guest;
pub mod overlay;
mod reaper;
mod services;
pub mod settings;
mod stages;
mod tree;

pub use guest::Action;
pub use settings::{Mode, OnFailure, Settings};

use nix::errno::Errno;
use nix::sys::signal::Signal;
use nix::sys::signalfd::SignalFd;
use nix::unistd::Pid;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use tend_sys::Error;
use tend_sys::warn::Warn;

/// Why tend-init could not start.
#[derive(Debug)]
pub enum Failure {
    /// A setting does not parse (exit 100).
    Usage(settings::BadSetting),
    /// The loop could not be set up (exit 111).
    System(Error),
}

impl Failure {
    pub fn code(&self) -> i32 {
        match self {
            Failure::Usage(_) => tend_sys::code::USAGE,
            Failure::System(e) => e.code(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Usage(e) => e.fmt(f),
            Failure::System(e) => e.fmt(f),
        }
    }
}

/// Signs of a container runtime: its PID 1 must never read the host's kernel command
/// line as its own.
fn in_container(env: &[(OsString, OsString)]) -> bool {
    Path::new("/.dockerenv").exists()
        || Path::new("/run/.containerenv").exists()
        || env.iter().any(|(k, _)| k == "container")
}

/// Pick the mode and run: the settings from the options, the kernel command line (a
/// guest's, never a container's) and the environment. A kernel's PID 1 starts without
/// /proc: that is how `-m auto` knows it is a guest.
pub fn start(
    argv0: &OsStr,
    opts: &[(char, Option<OsString>)],
    command: &[OsString],
    env: &[(OsString, OsString)],
    say: &dyn Warn,
) -> Result<i32, Failure> {
    let pid1 = std::process::id() == 1;
    // A VM's PID 1 is never s6-overlay's /init (and must not exit over a bad setting).
    if (!pid1 || in_container(env))
        && let Some(code) = start_overlay(argv0, opts, command, env, say)?
    {
        return Ok(code);
    }
    let kernel = pid1 && !Path::new("/proc/self").exists();
    let mut mounted = Vec::new();
    if kernel {
        guest::mount_proc(&mut mounted, say);
    }
    let maybe_guest = pid1 && !in_container(env);
    let mut all = env.to_vec();
    if maybe_guest && let Ok(line) = std::fs::read("/proc/cmdline") {
        all.extend(settings::kernel_params(&line));
    }
    let settings = match Settings::resolve(opts, &all, !command.is_empty()) {
        Ok(s) => s,
        // A kernel's init must not exit over a typo on the boot line: say so and boot.
        Err(e) if maybe_guest => {
            say.say("warning", &format_args!("{e}: using the defaults"));
            Settings::resolve(&[], &[], !command.is_empty()).map_err(Failure::Usage)?
        }
        Err(e) => return Err(Failure::Usage(e)),
    };
    let guest = match settings.mode {
        Mode::Guest => true,
        Mode::Container => false,
        Mode::Auto => kernel,
    };
    // Agent mode: without a command, the main program is the command.
    let main;
    let (settings, command) = match main_program(&settings, command, guest) {
        Some(m) => {
            main = [m];
            // Resolved again as with a command: the same default wait for the services.
            let s = Settings::resolve(opts, &all, true).unwrap_or(settings);
            (s, &main[..])
        }
        None => (settings, command),
    };
    if !guest {
        return run(&settings, command, say).map_err(Failure::System);
    }
    if !pid1 {
        say.say(
            "warning",
            &format_args!("guest mode but not PID 1: no mounts, no host name, no reboot(2)"),
        );
        return run_stages(&settings, command, say, true)
            .map(|(code, _)| code)
            .map_err(Failure::System);
    }
    guest::boot_run_shutdown(&settings, &mut mounted, command, say)
}

/// Where an image names its main program (agent mode) when neither `-M`, `TEND_MAIN` nor
/// `tend.main=` does: an executable, or a symlink to one, read only in a guest.
pub const MAIN_FILE: &str = "/etc/tend/main";

/// The main program: none when a command is given; else the setting; else, in a
/// guest, /etc/tend/main when it is there.
fn main_program(settings: &Settings, command: &[OsString], guest: bool) -> Option<OsString> {
    if !command.is_empty() {
        return None;
    }
    if let Some(m) = &settings.main {
        return Some(m.clone());
    }
    (guest && Path::new(MAIN_FILE).exists()).then(|| OsString::from(MAIN_FILE))
}

/// s6-overlay's /init (`-o`, else run as `init` over an image with its layout): the
/// S6_* variables translated, the stages in s6-overlay's order. None: not this mode.
fn start_overlay(
    argv0: &OsStr,
    opts: &[(char, Option<OsString>)],
    command: &[OsString],
    env: &[(OsString, OsString)],
    say: &dyn Warn,
) -> Result<Option<i32>, Failure> {
    let first = Settings::resolve(opts, env, !command.is_empty()).map_err(Failure::Usage)?;
    let layout = overlay::Layout::detect(Path::new("/"));
    if !overlay::wanted(first.overlay, argv0, &layout) {
        return Ok(None);
    }
    let (env, ov, warnings) = overlay::translate(env, layout);
    for w in warnings {
        say.say("warning", &format_args!("{w}"));
    }
    let settings = Settings::resolve(opts, &env, !command.is_empty()).map_err(Failure::Usage)?;
    overlay::run(&settings, &ov, command, say)
        .map(Some)
        .map_err(Failure::System)
}

/// The one place an exec failure of the command becomes a message and an exit code
/// (127 not found, 126 otherwise), so a better diagnosis can be plugged in here.
pub fn exec_failure(prog: &OsStr, path: Option<&OsStr>, e: Errno) -> (String, i32) {
    // The same diagnosis as tend-supervise and the chain tools (CRLF #!, missing
    // interpreter, foreign ELF...), looked up only now that exec has failed.
    let why = match tend_sys::exec::search(prog, path) {
        Ok(candidates) => tend_sys::diagnose::describe_search(prog, &candidates, e),
        Err(_) => e.desc().to_string(),
    };
    (
        format!(
            "unable to exec {}: {why}",
            String::from_utf8_lossy(prog.as_bytes()),
        ),
        tend_sys::exec::exit_code_for(e),
    )
}

/// Everything the running init holds.
struct Init<'a> {
    settings: &'a Settings,
    say: &'a dyn Warn,
    sigfd: SignalFd,
    /// The signals the signalfd takes (blocked), for a wait on them alone.
    signals: &'static [Signal],
    env: Vec<(OsString, OsString)>,
    pid1: bool,
    /// Stdin is a terminal: the command gets it as its foreground group.
    tty: bool,
    command: Option<Pid>,
    command_code: Option<i32>,
    scanner: Option<Pid>,
    scanner_code: Option<i32>,
    script: Option<Pid>,
    script_code: Option<i32>,
    /// SIGTERM or SIGINT arrived while no command ran.
    stop: Option<Signal>,
    /// In stage 3: signals are no longer acted on.
    stopping: bool,
    /// Whether the last reap found children left (ECHILD makes it false).
    children: bool,
    /// The code a failed stage asks to exit with.
    failure: Option<i32>,
    /// A VM guest's init: stop signals are acted on, never forwarded.
    guest: bool,
    /// Guest: what to do once stopped, set by the first stop signal.
    action: Option<Action>,
    /// The environment is still to be saved: nothing reads it before the command starts
    /// (no init.d script, no service), so the command is not kept waiting for it.
    env_deferred: bool,
    /// s6-overlay's catch-all logger (S6_LOGGING): the write end of its pipe, which the
    /// tree's children get as stdout and stderr.
    catch_all: Option<std::os::fd::OwnedFd>,
    /// The catch-all logger's pid while it runs.
    logger: Option<Pid>,
    /// The command's output goes to the catch-all logger as well (S6_LOGGING 1 or 2).
    log_command: bool,
    /// No info lines (S6_VERBOSITY below 2).
    quiet: bool,
    /// s6-overlay's legacy services (services.d) now in the scan directory.
    legacy: Vec<OsString>,
    /// The scanner exiting is a stop request (s6-overlay, where `s6-svscanctl -t
    /// /run/service` stops the container), not a failure.
    scanner_exit_stops: bool,
}

/// Run init through all its stages; the exit code is the command's (128+N when killed by
/// signal N), a failed stage's, the configured one, or 0 after a clean stop. An `Err` is a
/// failure to set up the loop itself (nothing was started).
pub fn run(settings: &Settings, command: &[OsString], say: &dyn Warn) -> Result<i32, Error> {
    run_stages(settings, command, say, false).map(|(code, _)| code)
}

/// The stages, shared by both modes; a guest also gets back what to do once stopped
/// (poweroff when nothing asked for anything else).
fn run_stages(
    settings: &Settings,
    command: &[OsString],
    say: &dyn Warn,
    guest: bool,
) -> Result<(i32, Action), Error> {
    let mut init = Init::new(settings, say, guest)?;
    let has_command = !command.is_empty();
    if !init.pid1 {
        init.become_subreaper();
    }
    init.stage1(has_command);
    // -A none: the command waits for no service, so it starts before them, not behind
    // the scanner's and the supervisors' execs (an agent guest's time to ready).
    let first = settings.main_after.as_ref().is_some_and(Vec::is_empty);
    if first && has_command && init.carry_on() {
        init.start_command(command);
    }
    if init.carry_on() {
        init.start_services(has_command);
    }
    if init.carry_on() {
        init.stage2(command);
    }
    init.stage(format_args!("stage 3: stopping"));
    init.stage3();
    Ok((
        init.exit_code(has_command),
        init.action.unwrap_or(Action::Poweroff),
    ))
}

/// A kernel starts init with HOME and TERM only: give the children a PATH.
fn guest_env(mut env: Vec<(OsString, OsString)>, guest: bool) -> Vec<(OsString, OsString)> {
    if guest && !env.iter().any(|(k, _)| k == "PATH") {
        env.push(("PATH".into(), "/usr/sbin:/usr/bin:/sbin:/bin".into()));
    }
    env
}

impl<'a> Init<'a> {
    /// Take the signals and start with nothing running.
    fn new(settings: &'a Settings, say: &'a dyn Warn, guest: bool) -> Result<Init<'a>, Error> {
        let set: &[Signal] = if guest {
            &reaper::GUEST_SIGNALS
        } else {
            &reaper::SIGNALS
        };
        let sigfd = tend_sys::signals::signalfd(set).map_err(|e| Error::new("signalfd", e))?;
        let _ = tend_sys::signals::ignore(Signal::SIGPIPE);
        Ok(Init {
            settings,
            say,
            sigfd,
            signals: set,
            env: guest_env(tend_sys::exec::current_env(), guest),
            pid1: std::process::id() == 1,
            // A guest's console is not a terminal init controls.
            tty: !guest && nix::unistd::isatty(0).unwrap_or(false),
            command: None,
            command_code: None,
            scanner: None,
            scanner_code: None,
            script: None,
            script_code: None,
            stop: None,
            stopping: false,
            children: true,
            failure: None,
            guest,
            action: None,
            env_deferred: false,
            catch_all: None,
            logger: None,
            log_command: false,
            quiet: false,
            legacy: Vec::new(),
            scanner_exit_stops: false,
        })
    }

    /// The container's exit code: the configured one, a failed stage's, the command's
    /// (128+N when killed by signal N), 128+N after a stop signal N ended a command that
    /// never started, or 0.
    fn exit_code(&self, has_command: bool) -> i32 {
        if let Some(c) = self.settings.exit_code {
            c
        } else if let Some(c) = self.failure {
            c
        } else if let Some(c) = self.command_code {
            c
        } else if let (true, Some(sig)) = (has_command, self.stop) {
            128 + sig as i32
        } else {
            0
        }
    }
}

impl Init<'_> {
    fn info(&mut self, msg: fmt::Arguments<'_>) {
        if !self.quiet {
            self.say.say("info", &msg);
        }
    }

    /// A guest's console line for each stage (a container's stderr stays as it was).
    fn stage(&mut self, msg: fmt::Arguments<'_>) {
        if self.guest {
            self.say.say("info", &msg);
        }
    }

    fn warn(&mut self, msg: fmt::Arguments<'_>) {
        self.say.say("warning", &msg);
    }

    fn fatal(&mut self, code: i32, msg: fmt::Arguments<'_>) {
        self.say.say("fatal", &msg);
        self.failure.get_or_insert(code);
    }

    /// Neither a failure nor a stop so far.
    fn carry_on(&self) -> bool {
        self.failure.is_none() && self.stop.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_failures_name_the_program_and_the_errno() {
        assert_eq!(
            exec_failure(
                OsStr::new("nope"),
                Some(OsStr::new("/nonexistent")),
                Errno::ENOENT
            ),
            (
                "unable to exec nope: No such file or directory".to_string(),
                127
            )
        );
        assert_eq!(exec_failure(OsStr::new("x"), None, Errno::EACCES).1, 126);
    }
}
