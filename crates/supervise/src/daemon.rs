//! The supervisor's event loop: set up the service directory's `supervise/` and `event/`,
//! then poll the signalfd, the control FIFO, the readiness pipe and the nearest timer,
//! feeding each input to `Core` and carrying out the actions it returns.
//!
//! Single-threaded; after start-up nothing here allocates per event except when forking
//! (building ./finish's argument strings), which costs far more than the allocation.

use crate::core::{Action, Actions, Core, Now, Phase, Settings};
use crate::policy::{Policy, Then};
use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::Signal;
use nix::sys::signalfd::SignalFd;
use nix::sys::stat::Mode;
use std::ffi::{CString, OsStr, OsString};
use std::fmt::Display;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use tend_proto::death_tally::{self, Death};
use tend_proto::fifodir::{self, EventDir};
use tend_proto::health;
use tend_proto::lock::{self, LockError};
use tend_proto::orphan;
use tend_proto::servicedir as sd;
use tend_proto::status::write_atomic_at;
use tend_proto::{ControlCommand, StatusFile, Tai64n};
use tend_sys::Error;
use tend_sys::diagnose::ExecDiagnosis;
use tend_sys::exec::Prepared;
use tend_sys::process::{self, ServiceLock, SpawnError, SpawnOptions};
use tend_sys::wait::{self, Ended, Wstat};
use tend_sys::warn::{Prefixed, Warn};

/// How long to pause after poll itself failed, before the next try.
const POLL_FAILURE_PAUSE: std::time::Duration = std::time::Duration::from_millis(100);

/// Why the supervisor could not start.
#[derive(Debug)]
pub enum StartError {
    /// Another supervisor holds supervise/lock (exit 100, as s6).
    AlreadyRunning,
    /// supervise/, event/ or supervise/control exists but is the wrong kind of file (100).
    Misconfigured(String),
    /// A system call failed (111).
    Sys(Error),
}

impl StartError {
    pub fn code(&self) -> i32 {
        match self {
            StartError::AlreadyRunning | StartError::Misconfigured(_) => tend_sys::code::USAGE,
            StartError::Sys(e) => e.code(),
        }
    }
}

impl Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::AlreadyRunning => {
                write!(f, "another instance of tend-supervise is already running")
            }
            StartError::Misconfigured(m) => write!(f, "{m}"),
            StartError::Sys(e) => write!(f, "{e}"),
        }
    }
}

/// Where warnings go: stderr, prefixed `tend-supervise DIR: warning: `.
pub struct Reporter {
    sink: Prefixed,
}

impl Warn for Reporter {
    fn warn(&self, msg: &dyn Display) {
        self.sink.warn(msg);
    }
}

impl Reporter {
    pub fn new(dir: &OsStr) -> Reporter {
        Reporter {
            sink: Prefixed(format!(
                "tend-supervise {}",
                String::from_utf8_lossy(dir.as_bytes())
            )),
        }
    }

    /// One line, as every program's (tend_sys::warn::line).
    pub fn warn(&self, msg: impl Display) {
        self.sink.warn(&msg);
    }

    /// A setting's value, or None (the default applies) with a warning when the file is
    /// invalid or not a regular file, as s6 warns and carries on.
    pub fn setting<T>(&self, name: &str, s: sd::Setting<T>) -> Option<T> {
        match s {
            sd::Setting::Value(v) => Some(v),
            sd::Setting::Absent => None,
            sd::Setting::Invalid => {
                self.warn(format_args!("invalid {name}: using the default"));
                None
            }
            sd::Setting::NotAFile(kind) => {
                self.warn(format_args!(
                    "{name} is {kind}, not a regular file: using the default"
                ));
                None
            }
        }
    }
}

fn now() -> Now {
    let ts = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .unwrap_or(nix::sys::time::TimeSpec::new(0, 0));
    Now {
        mono: ts.tv_sec() as u64 * 1000 + ts.tv_nsec() as u64 / 1_000_000,
        wall: Tai64n::now(),
    }
}

/// Create `supervise/` (or `event/`): mode 0700; a dangling symlink gets its target made.
fn make_dir(name: &str) -> Result<(), StartError> {
    match nix::unistd::mkdir(name, Mode::from_bits_truncate(0o700)) {
        Ok(()) => Ok(()),
        Err(Errno::EEXIST) => match nix::sys::stat::stat(name) {
            Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFDIR => Ok(()),
            Ok(_) => Err(StartError::Misconfigured(format!(
                "{name} exists and is not a directory"
            ))),
            Err(Errno::ENOENT) => {
                let target = std::fs::read_link(name)
                    .map_err(|e| StartError::Sys(Error::io("readlink", name, &e)))?;
                nix::unistd::mkdir(&target, Mode::from_bits_truncate(0o700))
                    .map_err(|e| StartError::Sys(Error::at("mkdir", &target, e)))
            }
            Err(e) => Err(StartError::Sys(Error::at("stat", name, e))),
        },
        Err(e) => Err(StartError::Sys(Error::at("mkdir", name, e))),
    }
}

/// A start of ./run between its fork and the confirmation of its exec.
struct RunStart {
    pending: Result<process::Pending, SpawnError>,
    pipe_read: Option<OwnedFd>,
    pipe_write: Option<OwnedFd>,
    t: Now,
}

/// One running supervisor.
pub struct Supervisor {
    core: Core,
    report: Reporter,
    dir_arg: OsString,
    status: StatusFile,
    events: EventDir,
    _lock: OwnedFd,
    control: OwnedFd,
    _control_writer: OwnedFd,
    signals: SignalFd,
    run: Prepared,
    notify_pipe: Option<OwnedFd>,
    deaths: Vec<u8>,
    max_deaths: usize,
    exiting: bool,
    /// The pid of the ./run that died last: ./finish's fourth argument (s6 2.14+).
    last_run_pid: i32,
    /// Our own PID namespace, to return to after starting a `flag-newpidns` ./run
    /// (opened the first time one is asked for).
    own_pidns: Option<OwnedFd>,
}

const WATCHED: [Signal; 5] = [
    Signal::SIGCHLD,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGINT,
];

/// `event/` as s6 makes it (a fifodir owned by our group), or the reason it cannot be.
fn make_event_dir() -> Result<(), StartError> {
    match fifodir::make_fifodir(Path::new(sd::EVENT), nix::unistd::getegid()) {
        Ok(()) => Ok(()),
        Err(Errno::ENOTDIR) => Err(StartError::Misconfigured(format!(
            "{} exists and is not a directory",
            sd::EVENT
        ))),
        Err(Errno::ENOENT) => make_dir(sd::EVENT),
        Err(e) => Err(StartError::Sys(Error::at("mkdir", sd::EVENT, e))),
    }
}

/// `supervise/lock`, held for our lifetime: a second supervisor gets AlreadyRunning.
fn take_lock() -> Result<OwnedFd, StartError> {
    match lock::acquire(Path::new(sd::LOCK), 0o644) {
        Ok(fd) => Ok(fd),
        Err(LockError::Busy) => Err(StartError::AlreadyRunning),
        Err(LockError::Sys(e)) => Err(StartError::Sys(Error::at("lock", sd::LOCK, e))),
    }
}

/// `supervise/control`, made if missing, open for reading (and writing, so it never
/// reports EOF).
fn open_control() -> Result<(OwnedFd, OwnedFd), StartError> {
    match tend_proto::control::make_fifo(Path::new(sd::CONTROL)) {
        Ok(()) => {}
        Err(Errno::EEXIST) => {
            return Err(StartError::Misconfigured(format!(
                "{} exists and is not a fifo",
                sd::CONTROL
            )));
        }
        Err(e) => return Err(StartError::Sys(Error::at("mkfifo", sd::CONTROL, e))),
    }
    tend_proto::control::open_reader(Path::new(sd::CONTROL))
        .map_err(|e| StartError::Sys(Error::at("open", sd::CONTROL, e)))
}

/// The service's process that a supervisor before us left running when it died (the
/// lock is ours now, so that supervisor is gone): stopped before anything is started,
/// or the new copy would fail on what it holds (a logdir's lock, a port) for ever. A
/// down-signal is not used: the process may be anything the old ./run became.
/// tend-supervise(8), "A supervisor that died".
fn stop_survivor(report: &Reporter) {
    let Ok(rec) = tend_proto::StatusRecord::read(Path::new(".")) else {
        return;
    };
    let Some(pid) = orphan::survivor(&rec) else {
        return;
    };
    let grace = report
        .setting(sd::TIMEOUT_KILL, sd::read_number(sd::TIMEOUT_KILL))
        .filter(|&ms| ms > 0)
        .map_or(SURVIVOR_GRACE, std::time::Duration::from_millis);
    report.warn(format_args!(
        "stopping pid {pid}, left running by a supervisor that died"
    ));
    if orphan::stop(pid, grace) == orphan::Stopped::Stuck {
        report.warn(format_args!("pid {pid} is still there after SIGKILL"));
    }
}

/// How long a survivor gets between SIGTERM and SIGKILL, without `timeout-kill`.
const SURVIVOR_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// How many deaths `supervise/death_tally` keeps (`max-death-tally`, capped).
fn max_deaths(report: &Reporter) -> usize {
    report
        .setting(sd::MAX_DEATH_TALLY, sd::read_number(sd::MAX_DEATH_TALLY))
        .map_or(death_tally::DEFAULT_MAX, |v| {
            usize::try_from(v).map_or(death_tally::LIMIT, |v| v.min(death_tally::LIMIT))
        })
}

impl Supervisor {
    /// Set up the service directory `dir` (as given on the command line) and take the lock.
    pub fn new(dir: &OsStr, report: Reporter) -> Result<Supervisor, StartError> {
        let dirpath = Path::new(dir);
        nix::unistd::chdir(dirpath)
            .map_err(|e| StartError::Sys(Error::at("chdir to", dirpath, e)))?;
        make_dir(sd::SUPERVISE)?;
        make_event_dir()?;
        let lock = take_lock()?;
        stop_survivor(&report);
        let (control, control_writer) = open_control()?;
        let mut status = StatusFile::open(Path::new(sd::SUPERVISE)).map_err(StartError::Sys)?;
        status.set_layout(tend_proto::status::Layout::from_env());
        // Replaced, not truncated in place: a FIFO planted there must not block us.
        write_atomic_at(
            status.dir(),
            sd::within::DEATH_TALLY_NEW,
            sd::within::DEATH_TALLY,
            b"",
        )
        .map_err(|e| StartError::Sys(Error::at("truncate", sd::DEATH_TALLY, e)))?;
        let events = EventDir::open(Path::new(sd::EVENT)).map_err(StartError::Sys)?;
        events.clean();
        tend_sys::signals::ignore(Signal::SIGPIPE)
            .map_err(|e| StartError::Sys(Error::new("ignore SIGPIPE", e)))?;
        let signals = tend_sys::signals::signalfd(&WATCHED)
            .map_err(|e| StartError::Sys(Error::new("create signalfd", e)))?;
        let run = Prepared::with_current_env(&[OsString::from("./run"), dir.to_os_string()])
            .map_err(|e| StartError::Sys(Error::new("prepare ./run", e)))?;
        let max_deaths = max_deaths(&report);
        let normally_up = !Path::new(sd::DOWN).exists();
        Ok(Supervisor {
            core: Core::new(now(), normally_up),
            report,
            dir_arg: dir.to_os_string(),
            status,
            events,
            _lock: lock,
            control,
            _control_writer: control_writer,
            signals,
            run,
            notify_pipe: None,
            deaths: Vec::with_capacity(max_deaths * death_tally::RECORD_SIZE),
            max_deaths,
            exiting: false,
            last_run_pid: 0,
            own_pidns: None,
        })
    }

    /// Run until told to exit. Returns the exit code (0).
    pub fn run(mut self) -> i32 {
        let acts = self.core.start(now());
        self.apply(acts);
        self.core.started();
        while !self.exiting {
            self.wait_and_dispatch();
        }
        0
    }

    fn wait_and_dispatch(&mut self) {
        let t = now();
        let timeout = match self.core.next_deadline() {
            Some(d) => tend_sys::deadline::ms_rounded_up(std::time::Duration::from_millis(
                d.saturating_sub(t.mono),
            )),
            None => PollTimeout::NONE,
        };
        let (sig_ready, ctl_ready, note_ready) = {
            let mut fds = [
                PollFd::new(self.signals.as_fd(), PollFlags::POLLIN),
                PollFd::new(self.control.as_fd(), PollFlags::POLLIN),
                PollFd::new(
                    self.notify_pipe
                        .as_ref()
                        .map_or(self.control.as_fd(), |p| p.as_fd()),
                    PollFlags::POLLIN,
                ),
            ];
            let n = if self.notify_pipe.is_some() { 3 } else { 2 };
            match poll(&mut fds[..n], timeout) {
                Ok(_) => {}
                Err(Errno::EINTR) => return,
                Err(e) => {
                    self.report.warn(Error::new("poll", e));
                    // Not to spin on a poll that keeps failing (EINVAL, ENOMEM).
                    std::thread::sleep(POLL_FAILURE_PAUSE);
                    return;
                }
            }
            let ready = |f: &PollFd| f.revents().is_some_and(|r| !r.is_empty());
            (ready(&fds[0]), ready(&fds[1]), n == 3 && ready(&fds[2]))
        };
        if sig_ready {
            self.handle_signals();
        }
        if ctl_ready && !self.exiting {
            self.handle_control();
        }
        if note_ready && !self.exiting {
            self.handle_notification();
        }
        if !self.exiting {
            let acts = self.core.tick(now());
            self.apply(acts);
        }
    }

    fn handle_signals(&mut self) {
        while let Ok(Some(info)) = self.signals.read_signal() {
            match Signal::try_from(info.ssi_signo as i32) {
                Ok(Signal::SIGCHLD) => self.reap(),
                Ok(sig) => {
                    let acts = self.core.signal(sig, now());
                    self.apply(acts);
                }
                // Only the signals blocked for the signalfd arrive, all of them named.
                Err(_) => {}
            }
            if self.exiting {
                return;
            }
        }
    }

    fn reap(&mut self) {
        while let Ok(Some((pid, wstat))) = wait::reap(None) {
            if pid.as_raw() != self.core.pid() {
                continue;
            }
            let t = now();
            match self.core.phase() {
                Phase::Up => {
                    self.last_run_pid = pid.as_raw();
                    self.notify_pipe = None;
                    self.warn_if_quick_death(wstat, t);
                    let finish_exists = Path::new(sd::FINISH).exists();
                    let acts = self.core.run_died(wstat, finish_exists, t);
                    self.apply(acts);
                }
                Phase::Finishing => {
                    let acts = self.core.finish_died(wstat, t);
                    self.apply(acts);
                }
                Phase::Down => {}
            }
            if self.exiting {
                return;
            }
        }
    }

    /// A crash loop gets one line per attempt saying how ./run ended.
    fn warn_if_quick_death(&self, wstat: Wstat, t: Now) {
        let Some(started) = self.core.last_spawn() else {
            return;
        };
        let lived = t.mono.saturating_sub(started);
        // A stop (the tree going down) is not a crash: nothing to say.
        if lived >= crate::core::MIN_RESTART_MS || !self.core.want_up() || self.core.exiting() {
            return;
        }
        let how = match wstat.ended() {
            Ended::Exited(code) => format!("exitcode {code}"),
            Ended::Signaled(sig) => format!(
                "signal {}",
                tend_sys::signals::name(i32::from(sig)).unwrap_or("unknown")
            ),
        };
        self.report.warn(format_args!(
            "./run died after {lived} ms ({how}): restarting in {} ms",
            crate::core::MIN_RESTART_MS - lived
        ));
    }

    fn handle_control(&mut self) {
        let mut buf = [0u8; 64];
        loop {
            let n = match nix::unistd::read(self.control.as_raw_fd(), &mut buf) {
                Ok(0) | Err(Errno::EAGAIN) => return,
                Ok(n) => n,
                Err(Errno::EINTR) => continue,
                Err(e) => {
                    self.report.warn(Error::at("read", sd::CONTROL, e));
                    return;
                }
            };
            for &b in &buf[..n] {
                if let Some(cmd) = ControlCommand::from_byte(b) {
                    // runit's control/ overrides (crate::runit).
                    let up = self.core.record().is_up();
                    let hook = crate::runit::before(b, up);
                    if hook == crate::runit::Hook::Replaced {
                        continue;
                    }
                    if cmd == ControlCommand::Reload {
                        let sig = self
                            .report
                            .setting(sd::RELOAD_SIGNAL, sd::read_signal(sd::RELOAD_SIGNAL));
                        self.core.set_reload_signal(sig.unwrap_or(Signal::SIGHUP));
                    }
                    let acts = self.core.control(cmd, now());
                    for &a in acts.as_slice() {
                        if !self.exiting && crate::runit::keeps(hook, &a) {
                            self.perform(a);
                        }
                    }
                    crate::runit::after(b, up);
                    if self.exiting {
                        return;
                    }
                }
            }
        }
    }

    fn handle_notification(&mut self) {
        let Some(pipe) = &self.notify_pipe else {
            return;
        };
        let mut buf = [0u8; 512];
        let (ready, done) = match nix::unistd::read(pipe.as_raw_fd(), &mut buf) {
            Ok(0) => (false, true),
            Ok(n) => {
                let nl = buf[..n].contains(&b'\n');
                (nl, nl)
            }
            Err(Errno::EAGAIN) | Err(Errno::EINTR) => (false, false),
            Err(_) => (false, true),
        };
        if done {
            self.notify_pipe = None;
        }
        if ready {
            let acts = self.core.became_ready(now());
            self.apply(acts);
        }
    }

    fn apply(&mut self, acts: Actions) {
        let acts = acts.as_slice();
        // A death followed by a restart: the new ./run is forked first and its exec
        // confirmed last, so the death's bookkeeping (death_tally, the down status, the d
        // and D events, in their order) is written while the child execs, as runsv writes
        // its status after forking (issue 28: two atomic writes, each a rename on the
        // service directory's file system, leave the path from exit to exec). The status
        // still shows the new ./run only once its exec is confirmed.
        if let [bookkeeping @ .., Action::SpawnRun] = acts
            && bookkeeping
                .iter()
                .any(|a| matches!(a, Action::RecordDeath { .. }))
            && bookkeeping.iter().all(|a| {
                matches!(
                    a,
                    Action::RecordDeath { .. } | Action::Publish(_) | Action::WriteStatus
                )
            })
        {
            let started = self.start_run(false);
            self.apply_each(bookkeeping);
            self.finish_run(started);
            return;
        }
        self.apply_each(acts);
    }

    fn apply_each(&mut self, acts: &[Action]) {
        let mut i = 0;
        while i < acts.len() {
            if self.exiting {
                return;
            }
            if let Action::Publish(_) = acts[i] {
                i = self.publish_run(acts, i);
                continue;
            }
            self.perform(acts[i]);
            i += 1;
        }
    }

    /// The announcements of one transition in a row (a death without ./finish is `d` then
    /// `D`), from `acts[i]` on: the record is the core's state after the whole transition,
    /// the same bytes for each, so the status is written once, then every event byte goes
    /// out in one pass over event/, still after the status says so (issue 28: one atomic
    /// write and one directory pass fewer on each restart). Returns the next index.
    fn publish_run(&mut self, acts: &[Action], mut i: usize) -> usize {
        let mut evs = [0u8; 8];
        let mut n = 0;
        while let Some(&Action::Publish(ev)) = acts.get(i) {
            if n + ev.len() > evs.len() {
                break;
            }
            evs[n..n + ev.len()].copy_from_slice(ev);
            n += ev.len();
            i += 1;
        }
        if n == 0 {
            // Longer than the buffer (none is): announced alone.
            self.perform(acts[i]);
            return i + 1;
        }
        self.write_status();
        self.events.notify(&evs[..n]);
        i
    }

    fn write_status(&self) {
        if let Err(e) = self.status.write(&self.core.record()) {
            self.report.warn(Error::at("write", sd::STATUS, e));
        }
    }

    fn perform(&mut self, a: Action) {
        match a {
            Action::Kill { pid, sig } => {
                if pid > 0 {
                    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig);
                }
            }
            Action::KillGroup { pid, sig } => {
                if pid > 0 {
                    let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), sig);
                }
            }
            Action::SpawnRun => self.spawn_run(),
            Action::SpawnFinish { wstat } => self.spawn_finish(wstat),
            Action::WriteStatus => self.write_status(),
            Action::Publish(ev) => {
                self.write_status();
                self.events.notify(ev);
            }
            Action::RecordDeath { wstat } => self.record_death(wstat),
            Action::PolicyFired { then, wstat } => self.record_policy(then, wstat),
            Action::CreateDown => {
                // Non-blocking: a FIFO named down must not hang the supervisor.
                if let Err(e) = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(sd::DOWN)
                {
                    self.report.warn(Error::io("create", sd::DOWN, &e));
                }
            }
            Action::RemoveDown => match std::fs::remove_file(sd::DOWN) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => self.report.warn(Error::io("unlink", sd::DOWN, &e)),
            },
            Action::CloseStdio => {
                if let Ok(null) =
                    tend_sys::fd::open("/dev/null", OFlag::O_RDWR | OFlag::O_CLOEXEC, Mode::empty())
                {
                    let _ = nix::unistd::dup2(null.as_raw_fd(), 0);
                    let _ = nix::unistd::dup2(null.as_raw_fd(), 1);
                }
            }
            Action::Exit => {
                self.events.notify(b"x");
                self.exiting = true;
            }
        }
    }

    fn record_death(&mut self, wstat: Wstat) {
        if self.max_deaths == 0 {
            return;
        }
        // The encoded records, oldest first, in a buffer sized once at start-up, read
        // again from the file: a death tally cleared since (tend-svdt-clear) stays cleared.
        if let Err(e) = death_tally::read_into(self.status.dir(), &mut self.deaths) {
            self.report.warn(Error::at("read", sd::DEATH_TALLY, e));
        }
        if self.deaths.len() >= self.max_deaths * death_tally::RECORD_SIZE {
            self.deaths.drain(..death_tally::RECORD_SIZE);
        }
        self.deaths
            .extend_from_slice(&Death::from_wstat(self.core.stamp(), wstat).encode());
        if let Err(e) = write_atomic_at(
            self.status.dir(),
            sd::within::DEATH_TALLY_NEW,
            sd::within::DEATH_TALLY,
            &self.deaths,
        ) {
            self.report.warn(Error::at("write", sd::DEATH_TALLY, e));
        }
    }

    /// Record the crash-restart policy's verdict in supervise/tend-policy and say it.
    fn record_policy(&mut self, then: Then, wstat: Wstat) {
        let (deaths, secs) = self
            .core
            .policy()
            .map_or((0, 0), |p| (p.deaths, p.within_ms / 1000));
        let death = Death::from_wstat(self.core.stamp(), wstat);
        let last = if death.signal != 0 {
            format!("signal {}", death.signal)
        } else {
            format!("exit {}", death.exitcode)
        };
        let (action, what) = match then {
            Then::Stop => ("stop".to_string(), "permanent failure".to_string()),
            Then::Slow(ms) => (format!("slow:{ms}"), format!("restarting every {ms} ms")),
        };
        let reason = format!("{deaths} deaths within {secs} s (last: {last}): {what}");
        let mut out = Vec::with_capacity(128);
        health::put(&mut out, "action", action.as_bytes());
        health::put(&mut out, "reason", reason.as_bytes());
        health::put_num(&mut out, "time", health::unix_now());
        if let Err(e) = write_atomic_at(
            self.status.dir(),
            sd::within::POLICY_VERDICT_NEW,
            sd::within::POLICY_VERDICT,
            &out,
        ) {
            self.report.warn(Error::at("write", sd::POLICY_VERDICT, e));
        }
        self.report
            .warn(format_args!("{}: {reason}", sd::RESTART_POLICY));
    }

    /// `restart-policy`, if present and valid (a FIFO, a device or a huge file is refused
    /// without blocking: it is opened non-blocking and checked to be a small regular file).
    fn read_policy(&self) -> Option<Policy> {
        let fd = match tend_sys::fd::open(
            sd::RESTART_POLICY,
            OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => return None,
            Err(e) => {
                self.report.warn(Error::at("open", sd::RESTART_POLICY, e));
                return None;
            }
        };
        let mut buf = [0u8; 1024];
        let regular = nix::sys::stat::fstat(fd.as_raw_fd())
            .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFREG && st.st_size < 1024);
        let n = if regular {
            nix::unistd::read(fd.as_raw_fd(), &mut buf).ok()
        } else {
            None
        };
        let parsed = n
            .and_then(|n| std::str::from_utf8(&buf[..n]).ok())
            .ok_or("not a small regular text file")
            .and_then(Policy::parse);
        match parsed {
            Ok(p) => Some(p),
            Err(why) => {
                self.report.warn(format_args!(
                    "invalid {}: {why}: ignoring it",
                    sd::RESTART_POLICY
                ));
                None
            }
        }
    }

    /// Settings are read at every start of ./run, as s6 does, so edits apply on restart.
    fn read_settings(&mut self) -> (Option<i32>, Option<i32>) {
        let mut settings = Settings::default();
        let number = |name: &str| self.report.setting(name, sd::read_number(name));
        if let Some(v) = number(sd::TIMEOUT_KILL) {
            settings.timeout_kill = v;
        }
        if let Some(v) = number(sd::TIMEOUT_FINISH) {
            settings.timeout_finish = v;
        }
        // An fd number must fit a C int; s6 warns about a bigger one too.
        let fd_number = |name: &str| {
            number(name).and_then(|v| match i32::try_from(v) {
                Ok(fd) => Some(fd),
                Err(_) => {
                    self.report.warn(format_args!(
                        "invalid {name}: {v} is not an fd number: ignoring it"
                    ));
                    None
                }
            })
        };
        let notification = fd_number(sd::NOTIFICATION_FD);
        let lockfd = fd_number(sd::LOCK_FD);
        if let Some(sig) = self
            .report
            .setting(sd::DOWN_SIGNAL, sd::read_signal(sd::DOWN_SIGNAL))
        {
            settings.down_signal = sig;
        }
        settings.timeout_kill_group = Path::new(sd::FLAG_TIMEOUT_KILLPG).exists();
        self.core.set_settings(settings);
        self.core.set_policy(self.read_policy());
        (notification, lockfd)
    }

    fn spawn_run(&mut self) {
        // Nothing to do while the child execs: a vfork-style clone (no fork of our pages).
        let started = self.start_run(true);
        self.finish_run(started);
    }

    /// The first half of a start of ./run: settings read, the child forked (`vfork`: the
    /// child cloned, and its exec over, see `process::spawn_start_vfork`).
    fn start_run(&mut self, vfork: bool) -> RunStart {
        crate::runit::before_start();
        let (notification, lockfd) = self.read_settings();
        let mut opts = SpawnOptions {
            setsid: true,
            ..Default::default()
        };
        let mut pipe_read = None;
        let mut pipe_write = None;
        if let Some(fd) = notification {
            match nix::unistd::pipe2(OFlag::O_CLOEXEC) {
                Ok((r, w)) => {
                    let _ = nix::fcntl::fcntl(
                        r.as_raw_fd(),
                        nix::fcntl::FcntlArg::F_SETFL(OFlag::O_NONBLOCK),
                    );
                    opts.fds.push((w.as_raw_fd(), fd));
                    pipe_read = Some(r);
                    pipe_write = Some(w);
                }
                Err(e) => self.report.warn(Error::new("create notification pipe", e)),
            }
        }
        if let Some(fd) = lockfd {
            let warning = tend_sys::warn::format_line(
                &self.report.sink.0,
                "warning",
                &"service lock is held by a previous instance, waiting",
            );
            opts.lock = Some(ServiceLock {
                path: CString::new(sd::SERVICE_LOCK).unwrap_or_default(),
                fd,
                warning: warning.into_bytes(),
            });
        }
        let t = now();
        let newpidns = Path::new(sd::FLAG_NEWPIDNS).exists() && self.enter_new_pidns();
        // A new PID namespace's first child is forked, as it always was.
        let pending = if vfork && !newpidns {
            process::spawn_start_vfork(&self.run, &opts)
        } else {
            process::spawn_start(&self.run, &opts)
        };
        if newpidns {
            self.leave_new_pidns();
        }
        RunStart {
            pending,
            pipe_read,
            pipe_write,
            t,
        }
    }

    /// `flag-newpidns`: make the next child the first process (PID 1) of a new PID
    /// namespace, so that when it exits the kernel kills what is left in it. False (with a
    /// warning) when that cannot be done: ./run then starts in our namespace.
    fn enter_new_pidns(&mut self) -> bool {
        if self.own_pidns.is_none() {
            match tend_sys::fd::open(
                "/proc/self/ns/pid",
                OFlag::O_RDONLY | OFlag::O_CLOEXEC,
                Mode::empty(),
            ) {
                Ok(fd) => self.own_pidns = Some(fd),
                Err(e) => {
                    self.report
                        .warn(Error::at("open", Path::new("/proc/self/ns/pid"), e));
                    return false;
                }
            }
        }
        match nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWPID) {
            Ok(()) => true,
            Err(e) => {
                self.report.warn(format_args!(
                    "unable to create a PID namespace for {}: {}",
                    sd::FLAG_NEWPIDNS,
                    e.desc()
                ));
                false
            }
        }
    }

    /// Later children (./finish, the next ./run) start in our own namespace again.
    fn leave_new_pidns(&self) {
        if let Some(ns) = &self.own_pidns
            && let Err(e) = nix::sched::setns(ns, nix::sched::CloneFlags::CLONE_NEWPID)
        {
            self.report.warn(format_args!(
                "unable to return to our PID namespace: {}",
                e.desc()
            ));
        }
    }

    /// The second half: the exec confirmed (./run is up) or failed.
    fn finish_run(&mut self, started: RunStart) {
        let RunStart {
            pending,
            pipe_read,
            pipe_write,
            t,
        } = started;
        match pending.and_then(process::Pending::confirm) {
            Ok(pid) => {
                drop(pipe_write);
                self.notify_pipe = pipe_read;
                let _ = nix::unistd::unlinkat(
                    Some(self.status.dir().as_raw_fd()),
                    sd::within::SPAWN_ERROR,
                    nix::unistd::UnlinkatFlags::NoRemoveDir,
                );
                let acts = self.core.spawned(pid.as_raw(), t);
                self.apply(acts);
            }
            Err(SpawnError::Exec(e)) => {
                // Only now, after the failure, is ./run looked at.
                let why = tend_sys::diagnose::diagnose(OsStr::new("./run"), e);
                self.report.warn(format_args!(
                    "unable to spawn ./run (retrying in 10 s): {why}"
                ));
                self.write_spawn_error(e, why, t);
                let code = tend_sys::exec::exit_code_for(e) as u8;
                let acts = self.core.spawn_failed(Some(code), t);
                self.apply(acts);
            }
            Err(SpawnError::Fork(e)) => {
                self.report.warn(format_args!(
                    "unable to fork for ./run (retrying in 60 s): {}",
                    e.desc()
                ));
                let acts = self.core.spawn_failed(None, t);
                self.apply(acts);
            }
        }
    }

    /// tend's own `supervise/spawn-error` (see proto::spawn_error), for tend-svstat.
    fn write_spawn_error(&self, e: Errno, why: ExecDiagnosis, t: Now) {
        let record = tend_proto::spawn_error::SpawnRecord {
            stamp: t.wall,
            errno: e as i32,
            program: b"./run".to_vec(),
            // The errno alone needs no second line: readers print its text.
            why: match why {
                ExecDiagnosis::Errno(_) => Vec::new(),
                why => why.to_string().into_bytes(),
            },
        };
        if let Err(err) = write_atomic_at(
            self.status.dir(),
            sd::within::SPAWN_ERROR_NEW,
            sd::within::SPAWN_ERROR,
            &record.encode(),
        ) {
            self.report.warn(Error::at("write", sd::SPAWN_ERROR, err));
        }
    }

    fn spawn_finish(&mut self, wstat: Wstat) {
        let (code, sig) = match wstat.ended() {
            Ended::Exited(code) => (i32::from(code), 0),
            Ended::Signaled(sig) => (256, i32::from(sig)),
        };
        let arg = |v: i32| CString::new(v.to_string()).unwrap_or_default();
        let dir = CString::new(self.dir_arg.as_bytes()).unwrap_or_default();
        // ./finish shares ./run's prepared environment rather than keeping a copy.
        let finish = Prepared {
            candidates: vec![CString::from(c"./finish")],
            argv: vec![
                CString::from(c"./finish"),
                arg(code),
                arg(sig),
                dir,
                arg(self.last_run_pid),
            ],
            envp: std::mem::take(&mut self.run.envp),
            inherit_env: self.run.inherit_env,
        };
        let t = now();
        let result = process::spawn(
            &finish,
            &SpawnOptions {
                setsid: true,
                ..Default::default()
            },
        );
        self.run.envp = finish.envp;
        let pid = match result {
            Ok(pid) => Some(pid.as_raw()),
            Err(SpawnError::Exec(e)) => {
                let why = tend_sys::diagnose::describe(OsStr::new("./finish"), e);
                self.report
                    .warn(format_args!("unable to spawn ./finish: {why}"));
                None
            }
            Err(SpawnError::Fork(e)) => {
                self.report
                    .warn(format_args!("unable to fork for ./finish: {}", e.desc()));
                None
            }
        };
        let acts = self.core.finish_spawned(pid, t);
        self.apply(acts);
    }
}
