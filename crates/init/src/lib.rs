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
//! Throughout, one thread waits in `poll` on a signalfd: SIGCHLD reaps every dead child at
//! once (a `WNOHANG` loop), the other signals are forwarded to the command. While waiting
//! for the services, init also listens on their `event/` fifodirs (subscribed before the
//! supervisors start) and reads `supervise/status` on each event.
//!
//! What this crate is not: a supervisor (tend-svscan and tend-supervise are), or a
//! service manager with dependencies (services start together, as in a scan directory).

pub mod guest;
pub mod settings;
mod tree;

pub use guest::{Action, Failure, start};
pub use settings::{Mode, OnFailure, Settings};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, poll};
use nix::sys::signal::{Signal, kill};
use nix::sys::signalfd::SignalFd;
use nix::unistd::Pid;
use std::ffi::{CString, OsStr, OsString};
use std::fmt;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tend_proto::fifodir::{Subscription, make_fifodir};
use tend_proto::status::StatusRecord;
use tend_sys::Error;
use tend_sys::exec::Prepared;
use tend_sys::process::{SpawnError, SpawnOptions, spawn};
use tend_sys::wait;
use tend_sys::warn::Warn;

/// The signals init takes. SIGCHLD reaps; SIGTTOU, SIGTTIN and SIGTSTP are only blocked,
/// so that init may hand the terminal to the command and take it back; the rest are
/// forwarded to the command.
const SIGNALS: [Signal; 11] = [
    Signal::SIGCHLD,
    Signal::SIGTERM,
    Signal::SIGINT,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
    Signal::SIGWINCH,
    Signal::SIGTTOU,
    Signal::SIGTTIN,
    Signal::SIGTSTP,
];

/// A VM guest's init also takes SIGPWR (poweroff), and acts on the stop signals itself
/// instead of forwarding them.
const GUEST_SIGNALS: [Signal; 12] = {
    let mut all = [Signal::SIGPWR; 12];
    let mut i = 0;
    while i < SIGNALS.len() {
        all[i] = SIGNALS[i];
        i += 1;
    }
    all
};

/// The scanner, looked for beside our own executable first, then on PATH.
const SCANNER: &str = "tend-svscan";

/// Exit code when a service is not up in time and `-U stop` says to stop.
pub const SERVICES_FAILED: i32 = 1;
/// Exit code for a system call failure.
pub const SYSTEM: i32 = 111;

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
    let set: &[Signal] = if guest { &GUEST_SIGNALS } else { &SIGNALS };
    let sigfd = tend_sys::signals::signalfd(set).map_err(|e| Error::new("signalfd", e))?;
    let _ = tend_sys::signals::ignore(Signal::SIGPIPE);
    let pid1 = std::process::id() == 1;
    let mut init = Init {
        settings,
        say,
        sigfd,
        env: guest_env(tend_sys::exec::current_env(), guest),
        pid1,
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
    };
    if !pid1 {
        init.become_subreaper();
    }
    init.stage1(!command.is_empty());
    if init.carry_on() {
        init.start_services(!command.is_empty());
    }
    if init.carry_on() {
        init.stage2(command);
    }
    init.stage(format_args!("stage 3: stopping"));
    init.stage3();
    let code = if let Some(c) = settings.exit_code {
        c
    } else if let Some(c) = init.failure {
        c
    } else if let Some(c) = init.command_code {
        c
    } else if let (false, Some(sig)) = (command.is_empty(), init.stop) {
        128 + sig as i32
    } else {
        0
    };
    Ok((code, init.action.unwrap_or(Action::Poweroff)))
}

/// A kernel starts init with HOME and TERM only: give the children a PATH.
fn guest_env(mut env: Vec<(OsString, OsString)>, guest: bool) -> Vec<(OsString, OsString)> {
    if guest && !env.iter().any(|(k, _)| k == "PATH") {
        env.push(("PATH".into(), "/usr/sbin:/usr/bin:/sbin:/bin".into()));
    }
    env
}

impl Init<'_> {
    fn info(&mut self, msg: fmt::Arguments<'_>) {
        self.say.say("info", &msg);
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

    /// Not PID 1 (docker run --init, a test, a shell): orphans of our tree must still come
    /// to us to be reaped.
    fn become_subreaper(&mut self) {
        match nix::sys::prctl::set_child_subreaper(true) {
            Ok(()) => self.warn(format_args!(
                "not PID 1 (pid {}): reaping as a child subreaper",
                std::process::id()
            )),
            Err(e) => self.warn(format_args!(
                "not PID 1 (pid {}): unable to become a child subreaper: {}",
                std::process::id(),
                e.desc()
            )),
        }
    }

    // ---- stage 1 -------------------------------------------------------------------

    /// Save the environment as an envdir (when asked to); false if that failed and the
    /// container stops.
    fn save_env(&mut self) -> bool {
        self.env_deferred = false;
        if let Some(dir) = self.settings.env_dir.clone()
            && let Err(e) = tree::save_env(&dir, &self.env)
        {
            self.fatal(SYSTEM, format_args!("{e}"));
            return false;
        }
        true
    }

    /// Whether there is any service to start (the services directory has entries, or a
    /// guest's console service is asked for).
    fn has_services(&self) -> bool {
        let console = self.guest && self.settings.console.is_some();
        console || tree::list(&self.settings.services_dir).is_ok_and(|v| !v.is_empty())
    }

    fn stage1(&mut self, has_command: bool) {
        self.stage(format_args!("stage 1: init scripts"));
        let dir = self.settings.init_dir.clone();
        let scripts = self.scripts(&dir);
        if scripts.is_empty() && has_command && !self.has_services() {
            self.env_deferred = true;
        } else if !self.save_env() {
            return;
        }
        for script in scripts {
            if !self.carry_on() {
                return;
            }
            self.info(format_args!("running {}", script.display()));
            let code = self.run_script(&script, None);
            // A script killed by the SIGTERM we forwarded is part of the stop, not a failure.
            if code != 0 && self.stop.is_none() {
                let text = format_args!("{} failed: exit code {code}", script.display());
                match self.settings.on_init_failure {
                    OnFailure::Stop => self.fatal(code, text),
                    OnFailure::Warn => self.warn(text),
                }
            }
        }
    }

    /// The executables of a script directory in lexical order (none if it is missing).
    fn scripts(&mut self, dir: &Path) -> Vec<PathBuf> {
        let mut names = match tree::list(dir) {
            Ok(v) => v,
            Err(e) if e.errno == Errno::ENOENT => return Vec::new(),
            Err(e) => {
                self.warn(format_args!("{e}"));
                return Vec::new();
            }
        };
        names.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            let path = dir.join(&name);
            if !path.is_file() {
                continue;
            }
            if nix::unistd::access(&path, nix::unistd::AccessFlags::X_OK).is_err() {
                self.warn(format_args!("skipping {}: not executable", path.display()));
                continue;
            }
            out.push(path);
        }
        out
    }

    /// The PATH programs are searched in: the saved environment's.
    fn path(&self) -> Option<&OsStr> {
        self.env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.as_os_str())
    }

    /// Run one script to its end (or until `limit`, then SIGKILL it): its exit code,
    /// 128+N if killed, 126/127 if it could not be run.
    fn run_script(&mut self, path: &Path, limit: Option<Duration>) -> i32 {
        let argv = [path.as_os_str().to_os_string()];
        let spawned = Prepared::new(&argv, &self.env)
            .map_err(SpawnError::Exec)
            .and_then(|p| spawn(&p, &SpawnOptions::default()));
        let pid = match spawned {
            Ok(pid) => pid,
            Err(SpawnError::Exec(e)) => {
                let (msg, code) = exec_failure(path.as_os_str(), self.path(), e);
                self.warn(format_args!("{msg}"));
                return code;
            }
            Err(SpawnError::Fork(e)) => {
                self.warn(format_args!("unable to fork: {}", e.desc()));
                return SYSTEM;
            }
        };
        self.script = Some(pid);
        self.script_code = None;
        let deadline = limit.map(|l| Instant::now() + l);
        if !self.wait_while(deadline, |i| i.script.is_some()) {
            self.warn(format_args!(
                "{} still running after {} ms: killing it",
                path.display(),
                limit.unwrap_or_default().as_millis()
            ));
            let _ = kill(pid, Signal::SIGKILL);
            self.wait_while(None, |i| i.script.is_some());
        }
        self.script_code.unwrap_or(SYSTEM)
    }

    // ---- services ------------------------------------------------------------------

    fn start_services(&mut self, has_command: bool) {
        let src = self.settings.services_dir.clone();
        let dst = self.settings.scan_dir.clone();
        let console = self.settings.console.clone().filter(|_| self.guest);
        let have = match tree::list(&src) {
            Ok(v) => !v.is_empty(),
            Err(e) if e.errno == Errno::ENOENT => false,
            Err(e) => return self.fatal(SYSTEM, format_args!("{e}")),
        };
        if !have && console.is_none() {
            return;
        }
        if have && let Err(e) = tree::mirror(&src, &dst) {
            return self.fatal(SYSTEM, format_args!("{e}"));
        }
        if let Some(tty) = console
            && let Err(e) = guest::console_service(&dst, &tty)
        {
            // A debug aid: the guest boots without it.
            self.warn(format_args!("{e}"));
        }
        self.stage(format_args!("stage 2: starting services"));
        // Without a command and without a limit nobody waits for the services.
        let wait = has_command || self.settings.services_wait.is_some();
        let services = if wait {
            tree::services(&dst)
        } else {
            Vec::new()
        };
        let subs = if wait {
            Self::subscribe(&services)
        } else {
            None
        };
        let mut argv = vec![OsString::from(SCANNER), dst.clone().into_os_string()];
        let prepared = Prepared::new(&argv, &self.env).map(|mut p| {
            if let Some(dir) = std::env::current_exe()
                .ok()
                .and_then(|e| e.parent().map(Path::to_path_buf))
                && let Ok(c) = CString::new(dir.join(SCANNER).as_os_str().as_bytes())
            {
                p.candidates.insert(0, c);
            }
            p
        });
        // The scanner and its services stay off the terminal: its own process group, and
        // /dev/null as stdin.
        let null = tend_sys::fd::open(
            "/dev/null",
            nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        )
        .ok();
        let opts = SpawnOptions {
            setpgid: true,
            fds: null
                .iter()
                .map(|fd: &OwnedFd| (fd.as_raw_fd(), 0))
                .collect(),
            ..Default::default()
        };
        match prepared
            .map_err(SpawnError::Exec)
            .and_then(|p| spawn(&p, &opts))
        {
            Ok(pid) => self.scanner = Some(pid),
            Err(SpawnError::Exec(e)) => {
                let (msg, _) = exec_failure(argv.remove(0).as_os_str(), self.path(), e);
                return self.fatal(SYSTEM, format_args!("{msg}"));
            }
            Err(SpawnError::Fork(e)) => {
                return self.fatal(SYSTEM, format_args!("unable to fork: {}", e.desc()));
            }
        }
        drop(null);
        if wait {
            self.wait_for_services(&services, subs);
            if self.carry_on() {
                self.stage(format_args!("services up"));
            }
        }
    }

    /// Subscribe to every service's `event/` before its supervisor exists (as s6-svwait
    /// does: tend-supervise keeps an existing fifodir), so that no transition is missed.
    /// None if one subscription fails: the wait then looks every 20 ms instead.
    fn subscribe(services: &[tree::Service]) -> Option<Vec<Subscription>> {
        let gid = nix::unistd::getegid();
        let mut subs = Vec::with_capacity(services.len());
        for s in services {
            let event = s.dir.join(tend_proto::servicedir::EVENT);
            make_fifodir(&event, gid).ok()?;
            subs.push(Subscription::new(&event).ok()?);
        }
        Some(subs)
    }

    /// Wait until every service (and its logger) is up, or ready where it has a
    /// notification-fd; name those that are not when the limit passes.
    fn wait_for_services(&mut self, services: &[tree::Service], subs: Option<Vec<Subscription>>) {
        let start = Instant::now();
        let deadline = self.settings.services_wait.map(|w| start + w);
        let tick = subs.is_none().then_some(Duration::from_millis(20));
        let subs = subs.unwrap_or_default();
        loop {
            let pending: Vec<&tree::Service> = services.iter().filter(|s| !s.arrived()).collect();
            if pending.is_empty() || !self.carry_on() {
                return;
            }
            if self.scanner.is_none() {
                let code = self.scanner_code.unwrap_or(SYSTEM);
                return self.fatal(
                    SYSTEM,
                    format_args!("{SCANNER} exited before the services were up: exit code {code}"),
                );
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                let waited = now.duration_since(start).as_millis();
                let names: Vec<String> = pending
                    .iter()
                    .map(|s| format!("{} is not {}", s.name, s.wanted()))
                    .collect();
                for n in names {
                    let text = format_args!("service {n} after {waited} ms");
                    match self.settings.on_services_failure {
                        OnFailure::Stop => self.fatal(SERVICES_FAILED, text),
                        OnFailure::Warn => self.warn(text),
                    }
                }
                return;
            }
            let next = match (deadline, tick) {
                (Some(d), Some(t)) => Some(d.min(now + t)),
                (d, t) => d.or(t.map(|t| now + t)),
            };
            self.turn_with(next, &subs);
        }
    }

    // ---- stage 2 -------------------------------------------------------------------

    fn stage2(&mut self, command: &[OsString]) {
        let Some(prog) = command.first() else {
            // Services only (or nothing at all): run until told to stop, or until the
            // scanner dies.
            let had_scanner = self.scanner.is_some();
            self.wait_while(None, |i| {
                i.stop.is_none() && (i.scanner.is_some() || !had_scanner)
            });
            if self.stop.is_none() {
                let code = self.scanner_code.unwrap_or(SYSTEM);
                self.fatal(SYSTEM, format_args!("{SCANNER} exited: exit code {code}"));
            }
            return;
        };
        let opts = SpawnOptions {
            setpgid: true,
            foreground: self.tty.then_some(0),
            ..Default::default()
        };
        let spawned = Prepared::new(command, &self.env)
            .map_err(SpawnError::Exec)
            .and_then(|p| spawn(&p, &opts));
        match spawned {
            Ok(pid) => {
                self.command = Some(pid);
                if self.env_deferred && !self.save_env() {
                    return;
                }
            }
            Err(SpawnError::Exec(e)) => {
                let (msg, code) = exec_failure(prog, self.path(), e);
                return self.fatal(code, format_args!("{msg}"));
            }
            Err(SpawnError::Fork(e)) => {
                return self.fatal(SYSTEM, format_args!("unable to fork: {}", e.desc()));
            }
        }
        // A guest's stop signals stop init, not only the command (stage 3 signals it).
        self.wait_while(None, |i| i.command.is_some() && i.stop.is_none());
        if self.guest
            && let Some(code) = self.command_code
        {
            self.stage(format_args!("command exited: exit code {code}"));
        }
    }

    // ---- stage 3 -------------------------------------------------------------------

    fn stage3(&mut self) {
        self.stopping = true;
        if self.tty {
            // The command's group may have kept the terminal; take it back (SIGTTOU is
            // blocked) so the finish scripts can use it.
            let _ = nix::unistd::tcsetpgrp(std::io::stdin().as_fd(), nix::unistd::getpgrp());
        }
        let dir = self.settings.finish_dir.clone();
        for script in self.scripts(&dir) {
            self.info(format_args!("running {}", script.display()));
            let code = self.run_script(&script, Some(self.settings.finish_time));
            if code != 0 {
                self.warn(format_args!(
                    "{} failed: exit code {code}",
                    script.display()
                ));
            }
        }
        if let Some(pid) = self.scanner {
            // As tend-svscanctl -t: supervisors bring their services down, loggers drain
            // their pipes and exit last.
            self.stage(format_args!("stopping services"));
            let sent = tend_proto::control::send_in(
                &self.settings.scan_dir,
                tend_proto::servicedir::SVSCAN,
                b"t",
            )
            .is_ok();
            if !sent {
                let _ = kill(pid, Signal::SIGTERM);
            }
            let deadline = Instant::now() + self.settings.services_grace;
            self.wait_while(Some(deadline), |i| i.scanner.is_some());
        }
        // As PID 1 or as a subreaper, every orphan of the tree is our child: no child
        // left means no process left, and nothing to walk /proc for.
        self.reap();
        if self.children {
            self.stage(format_args!("sending SIGTERM to every process"));
            self.signal_all(Signal::SIGTERM);
            self.signal_all(Signal::SIGCONT);
            let deadline = Instant::now() + self.settings.kill_grace;
            self.wait_while(Some(deadline), |i| i.children);
            if self.children {
                self.stage(format_args!("sending SIGKILL to every process"));
                self.signal_all(Signal::SIGKILL);
                let deadline = Instant::now() + Duration::from_secs(2);
                self.wait_while(Some(deadline), |i| i.children);
            }
        }
    }

    /// Every process left: the whole namespace as PID 1 (kill -1 spares the caller), our
    /// descendants otherwise.
    fn signal_all(&mut self, sig: Signal) {
        if self.pid1 {
            let _ = kill(Pid::from_raw(-1), sig);
        } else {
            for pid in tree::descendants(std::process::id() as i32) {
                let _ = kill(Pid::from_raw(pid), sig);
            }
        }
    }

    // ---- the loop ------------------------------------------------------------------

    /// Turn the loop while `busy` holds, until `deadline`. False if the deadline passed.
    fn wait_while(&mut self, deadline: Option<Instant>, busy: impl Fn(&Self) -> bool) -> bool {
        loop {
            if !busy(self) {
                return true;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return false;
            }
            self.turn(deadline);
        }
    }

    /// Wait for a signal (or `deadline`) and act on every pending one.
    fn turn(&mut self, deadline: Option<Instant>) {
        self.turn_with(deadline, &[]);
    }

    /// As `turn`, also waking when one of `events` (service subscriptions) is readable.
    fn turn_with(&mut self, deadline: Option<Instant>, events: &[Subscription]) {
        let timeout = tend_sys::deadline::poll_timeout(deadline, Instant::now());
        let polled = if events.is_empty() {
            let mut fds = [PollFd::new(self.sigfd.as_fd(), PollFlags::POLLIN)];
            poll(&mut fds, timeout)
        } else {
            // Only while waiting for the services to come up: one vector per wake-up.
            let mut fds = Vec::with_capacity(events.len() + 1);
            fds.push(PollFd::new(self.sigfd.as_fd(), PollFlags::POLLIN));
            fds.extend(
                events
                    .iter()
                    .map(|e| PollFd::new(e.fd(), PollFlags::POLLIN)),
            );
            poll(&mut fds, timeout)
        };
        match polled {
            Ok(0) | Err(Errno::EINTR) => return,
            Ok(_) => {}
            Err(e) => {
                // Cannot happen with valid fds; do not spin if it does.
                self.warn(format_args!("unable to poll: {}", e.desc()));
                std::thread::sleep(Duration::from_millis(100));
                return;
            }
        }
        // Event bytes only say "look again"; the status files say what is true.
        let mut buf = [0u8; 64];
        for e in events {
            while matches!(e.read(&mut buf), Ok(n) if n > 0) {}
        }
        while let Ok(Some(info)) = self.sigfd.read_signal() {
            let Ok(sig) = Signal::try_from(info.ssi_signo as i32) else {
                continue;
            };
            self.on_signal(sig);
        }
    }

    fn on_signal(&mut self, sig: Signal) {
        match sig {
            Signal::SIGCHLD => self.reap(),
            Signal::SIGTTOU | Signal::SIGTTIN | Signal::SIGTSTP => {}
            _ if self.guest => {
                let Some(action) = Action::of_signal(sig) else {
                    return;
                };
                if self.stopping || self.action.is_some() {
                    return;
                }
                self.action = Some(action);
                self.stop = Some(sig);
                self.stage(format_args!("{} requested by {sig}", action.name()));
                if let Some(pid) = self.script {
                    let _ = kill(pid, Signal::SIGTERM);
                }
            }
            _ => {
                if let Some(pid) = self.command {
                    let target = if self.settings.signal_group {
                        Pid::from_raw(-pid.as_raw())
                    } else {
                        pid
                    };
                    let _ = kill(target, sig);
                } else if !self.stopping && matches!(sig, Signal::SIGTERM | Signal::SIGINT) {
                    self.stop.get_or_insert(sig);
                    if let Some(pid) = self.script {
                        let _ = kill(pid, sig);
                    }
                }
            }
        }
    }

    /// Collect every dead child, ours or an orphan's.
    fn reap(&mut self) {
        loop {
            match wait::reap(None) {
                Ok(None) => {
                    self.children = true;
                    return;
                }
                Ok(Some((pid, st))) => {
                    let code = st.shell_code();
                    if self.command == Some(pid) {
                        self.command = None;
                        self.command_code = Some(code);
                    } else if self.scanner == Some(pid) {
                        self.scanner = None;
                        self.scanner_code = Some(code);
                    } else if self.script == Some(pid) {
                        self.script = None;
                        self.script_code = Some(code);
                    }
                }
                Err(Errno::ECHILD) => {
                    self.children = false;
                    return;
                }
                Err(_) => return,
            }
        }
    }
}

impl tree::Service {
    fn arrived(&self) -> bool {
        match StatusRecord::read(&self.dir) {
            Ok(r) => r.is_up() && (!self.notifies || r.ready),
            Err(_) => false,
        }
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
