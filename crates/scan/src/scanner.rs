//! The scanner's event loop: one thread, one `poll` on a signalfd and the control FIFO,
//! woken early only by the table's deadline (a restart due, a retry, `-t`).
//!
//! Each turn does, in s6-svscan's order: reap every dead child (known or not, so this can
//! be PID 1), scan if asked (one `readdir` pass), send the signals a prune or a shutdown
//! asked for, then wait. Stopping closes every held pipe, waits for every supervisor
//! unless aborting, and returns `Ending::Finish` for the caller to exec
//! `.s6-svscan/finish`.

use crate::command::{Command, OnSignal, SIGNALS, Wants, on_signal};
use crate::table::{FORK_RETRY_DELAY, Key, Kill, Lookup, Pipe, RESTART_DELAY, Side, Table};
use nix::errno::Errno;
use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::Signal;
use nix::sys::signalfd::SignalFd;
use nix::sys::stat::{Mode, SFlag, stat, umask};
use nix::unistd::Pid;
use std::ffi::{CStr, OsStr, OsString};
use std::fmt;
use std::os::fd::{AsFd, AsRawFd, IntoRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, Instant};
use tend_proto::lock::{self, LockError};
use tend_sys::Error;
use tend_sys::exec::{Prepared, Ready};
use tend_sys::process::{SpawnError, SpawnOptions, spawn};
use tend_sys::wait;
pub use tend_sys::warn::Warn;

/// The supervisor program every service gets, looked for beside our own executable,
/// then on PATH.
pub const SUPERVISOR: &str = "tend-supervise";
/// s6's control directory, FIFO and lock, relative to the scan directory.
pub const CONTROL_DIR: &str = tend_proto::servicedir::SVSCAN;
pub const CONTROL_FIFO: &str = tend_proto::servicedir::svscan::CONTROL;
pub const LOCK_FILE: &str = tend_proto::servicedir::svscan::LOCK;
pub const FINISH: &str = tend_proto::servicedir::svscan::FINISH;
pub const CRASH: &str = tend_proto::servicedir::svscan::CRASH;
/// The catch-all logger service: its supervisor gets the `-X` console as stderr.
pub const CATCH_ALL_LOGGER: &str = "s6-svscan-log";

/// Default and bounds of `-c`.
pub const DEFAULT_MAX: usize = 500;
pub const MIN_MAX: usize = 2;
pub const MAX_MAX: usize = 90000;
/// `-C`'s bounds (s6 2.15's clamp).
pub const SERVICES_MIN: usize = 4;
pub const SERVICES_MAX: usize = 160_000;
/// `-L`: the longest service name started (s6 2.15's default and clamp); longer names are
/// skipped with a warning.
pub const DEFAULT_NAME_MAX: usize = 251;
pub const NAME_MAX_MIN: usize = 11;
pub const NAME_MAX_MAX: usize = 1019;

/// What tend-svscan was asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// `-d`: write a newline here once the control FIFO is ready.
    pub notify: Option<RawFd>,
    /// `-X`: the console, given as stderr to the catch-all logger's supervisor.
    pub console: Option<RawFd>,
    /// At most this many services (already clamped: `-c` to 2..=90000, `-C` to
    /// 4..=160000).
    pub max: usize,
    /// `-L`: longer service names are not started (already clamped to 11..=1019).
    pub name_max: usize,
    /// `-S`: the status size the supervisors write ([`tend_proto::status::LAYOUT_ENV`],
    /// appended to their environment); None leaves the inherited one.
    pub status_size: Option<tend_proto::status::Layout>,
    /// `-t`: scan this often (never if None).
    pub rescan: Option<Duration>,
    /// The scan directory (the current directory if None).
    pub dir: Option<OsString>,
    /// runsvdir's `-P`: each supervisor (and diverted script) starts in a session and
    /// process group of its own.
    pub new_session: bool,
    /// Run as `runsvdir`: SIGTERM and SIGHUP mean what they mean to runsvdir(8)
    /// ([`Ending::Exit`]), not s6-svscan's.
    pub runsvdir: bool,
}

impl Default for Options {
    /// s6-svscan's defaults: 500 services, names up to 251 bytes, no rescan.
    fn default() -> Options {
        Options {
            notify: None,
            console: None,
            max: DEFAULT_MAX,
            name_max: DEFAULT_NAME_MAX,
            status_size: None,
            rescan: None,
            dir: None,
            new_session: false,
            runsvdir: false,
        }
    }
}

/// Why the scanner could not start.
#[derive(Debug)]
pub enum StartError {
    /// Bad input (exit 100): another scanner, a bad fd, `.s6-svscan` not a directory.
    Usage(String),
    /// A system call failed (exit 111).
    Sys(Error),
}

impl StartError {
    pub fn code(&self) -> i32 {
        match self {
            StartError::Usage(_) => tend_sys::code::USAGE,
            StartError::Sys(e) => e.code(),
        }
    }
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::Usage(s) => f.write_str(s),
            StartError::Sys(e) => e.fmt(f),
        }
    }
}

/// How the loop ended.
#[derive(Debug)]
pub enum Ending {
    /// Told to stop: exec `.s6-svscan/finish` (or exit 0 if there is none).
    Finish,
    /// A system call the scanner cannot live without failed: exec `.s6-svscan/crash`.
    Crash(Error),
    /// runsvdir's signals: exit with this code, no finish script, the supervisors not
    /// waited for (SIGTERM: 0, every supervisor left running; SIGHUP: 111, each sent
    /// SIGTERM first).
    Exit(i32),
}

/// Text of a name from the scan directory, for messages.
fn shown(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

/// Everything the running scanner holds.
struct Scanner<'w> {
    table: Table,
    wants: Wants,
    rescan: Option<Duration>,
    console: Option<RawFd>,
    /// runsvdir's signal meanings, and the code to exit with once one came.
    runsvdir: bool,
    exit: Option<i32>,
    sigfd: SignalFd,
    control: OwnedFd,
    /// Kept open so the FIFO never reports EOF and clients can tell we run.
    _control_writer: OwnedFd,
    /// Holds `.s6-svscan/lock` for our lifetime.
    _lock: OwnedFd,
    /// `tend-supervise NAME` with its execve arrays, the operand renamed before each fork.
    supervisor: Ready,
    script: Prepared,
    spawn_opts: SpawnOptions,
    logname: Vec<u8>,
    name_max: usize,
    warn: &'w dyn Warn,
}

/// Run the scanner until it is told to stop. Returns an error only for start-up
/// failures; once the loop runs, everything ends in `Ending`.
pub fn run(opts: &Options, warn: &dyn Warn) -> Result<Ending, StartError> {
    check_fds(opts)?;
    open_stdio()?;
    if let Some(dir) = &opts.dir {
        nix::unistd::chdir(dir.as_os_str())
            .map_err(|e| StartError::Sys(Error::at("chdir", Path::new(dir), e)))?;
    }
    let (lock, control, control_writer) = control_init()?;
    tend_sys::signals::ignore(Signal::SIGPIPE)
        .map_err(|e| StartError::Sys(Error::new("ignore SIGPIPE", e)))?;
    let sigfd = tend_sys::signals::signalfd(&SIGNALS)
        .map_err(|e| StartError::Sys(Error::new("trap signals", e)))?;
    // Supervisors and scripts get the scanner's own environment, not a copy of it.
    let supervisor = supervisor_program()
        .map_err(|e| StartError::Sys(Error::new("prepare the supervisor's command line", e)))?;
    let script = Prepared::with_current_env(&[OsString::from(FINISH)])
        .map_err(|e| StartError::Sys(Error::new("prepare the environment", e)))?;
    if let Some(fd) = opts.notify {
        // Written to, then closed by number: check_fds saw it open, and nothing else in
        // the process owns it.
        let _ = tend_sys::fd::write_raw(fd, b"\n");
        let _ = nix::unistd::close(fd);
    }
    let max = opts.max;
    let mut s = Scanner {
        table: Table::new(max),
        wants: Wants::default(),
        rescan: opts.rescan,
        console: opts.console,
        runsvdir: opts.runsvdir,
        exit: None,
        sigfd,
        control,
        _control_writer: control_writer,
        _lock: lock,
        supervisor: Ready::new(supervisor),
        script,
        spawn_opts: SpawnOptions {
            fds: Vec::with_capacity(2),
            setsid: opts.new_session,
            ..Default::default()
        },
        logname: Vec::with_capacity(256),
        name_max: opts.name_max,
        warn,
    };
    if let Some(layout) = opts.status_size {
        // After the inherited environment: the supervisor reads the last occurrence.
        let size = layout.size().to_string();
        s.supervisor.set_env_tail(&[&[
            tend_proto::status::LAYOUT_ENV.as_bytes(),
            b"=",
            size.as_bytes(),
        ]]);
    }
    let ending = s.run_loop();
    Ok(ending)
}

fn check_fds(opts: &Options) -> Result<(), StartError> {
    if let Some(fd) = opts.notify {
        if fd < 3 {
            return Err(StartError::Usage(
                "notification fd must be 3 or more".into(),
            ));
        }
        if let Err(e) = fcntl(fd, FcntlArg::F_GETFD) {
            return Err(StartError::Usage(format!(
                "invalid notification fd {fd}: {}",
                e.desc()
            )));
        }
    }
    if let Some(fd) = opts.console {
        if fd < 3 {
            return Err(StartError::Usage(
                "console holder fd must be 3 or more".into(),
            ));
        }
        if let Err(e) = fcntl(fd, FcntlArg::F_GETFD) {
            return Err(StartError::Usage(format!(
                "invalid console holder fd {fd}: {}",
                e.desc()
            )));
        }
        fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))
            .map_err(|e| StartError::Sys(Error::new("set close-on-exec on the console fd", e)))?;
    }
    Ok(())
}

/// Make sure fds 0, 1 and 2 are open (on /dev/null if they were closed), so no pipe end
/// the scanner creates can land on them.
fn open_stdio() -> Result<(), StartError> {
    tend_sys::fd::open_closed_on_dev_null(&[0, 1, 2])
        .map_err(|e| StartError::Sys(Error::at("open", "/dev/null", e)))
}

/// `.s6-svscan/` (0700), its lock (0600, held) and control FIFO (0600, opened both ways).
fn control_init() -> Result<(OwnedFd, OwnedFd, OwnedFd), StartError> {
    let old = umask(Mode::empty());
    let r = control_init_masked();
    umask(old);
    r
}

fn control_init_masked() -> Result<(OwnedFd, OwnedFd, OwnedFd), StartError> {
    let sys = |op, path: &str, e| StartError::Sys(Error::at(op, path, e));
    match nix::unistd::mkdir(CONTROL_DIR, Mode::from_bits_truncate(0o700)) {
        Ok(()) => {}
        Err(Errno::EEXIST) => {
            let st = stat(CONTROL_DIR).map_err(|e| sys("stat", CONTROL_DIR, e))?;
            if st.st_mode & SFlag::S_IFMT.bits() != SFlag::S_IFDIR.bits() {
                return Err(StartError::Usage(format!(
                    "{CONTROL_DIR} exists and is not a directory"
                )));
            }
        }
        Err(e) => return Err(sys("mkdir", CONTROL_DIR, e)),
    }
    let lock = match lock::acquire(Path::new(LOCK_FILE), 0o600) {
        Ok(fd) => fd,
        Err(LockError::Busy) => {
            return Err(StartError::Usage(
                "another instance of tend-svscan is already running on the same directory".into(),
            ));
        }
        Err(LockError::Sys(e)) => return Err(sys("lock", LOCK_FILE, e)),
    };
    match tend_proto::control::make_fifo(Path::new(CONTROL_FIFO)) {
        Ok(()) => {}
        Err(Errno::EEXIST) => {
            return Err(StartError::Usage(format!("{CONTROL_FIFO} is not a FIFO")));
        }
        Err(e) => return Err(sys("mkfifo", CONTROL_FIFO, e)),
    }
    let (r, w) = tend_proto::control::open_reader(Path::new(CONTROL_FIFO))
        .map_err(|e| sys("open", CONTROL_FIFO, e))?;
    Ok((lock, r, w))
}

/// `tend-supervise NAME`, tried beside our own executable first, then on PATH.
fn supervisor_program() -> Result<Prepared, Errno> {
    let mut p = Prepared::with_current_env(&[OsString::from(SUPERVISOR), OsString::from("x")])?;
    p.prefer_beside_self(OsStr::new(SUPERVISOR));
    Ok(p)
}

impl Scanner<'_> {
    fn run_loop(&mut self) -> Ending {
        while self.wants.run {
            if self.wants.reap {
                self.wants.reap = false;
                if let Err(e) = self.reap() {
                    return self.crash(e);
                }
            }
            if self.wants.scan {
                self.wants.scan = false;
                self.scan();
            }
            if let Some(k) = self.wants.kill.take() {
                self.kill(k);
            }
            let timeout = self.timeout();
            let (sig_ready, ctl_ready) = {
                let mut fds = [
                    PollFd::new(self.sigfd.as_fd(), PollFlags::POLLIN),
                    PollFd::new(self.control.as_fd(), PollFlags::POLLIN),
                ];
                match poll(&mut fds, timeout) {
                    Ok(0) => {
                        self.wants.scan = true;
                        continue;
                    }
                    Ok(_) => {}
                    Err(Errno::EINTR) => continue,
                    Err(e) => return self.crash(Error::new("poll", e)),
                }
                let bad = PollFlags::POLLERR | PollFlags::POLLHUP | PollFlags::POLLNVAL;
                let r0 = fds[0].revents().unwrap_or(PollFlags::empty());
                let r1 = fds[1].revents().unwrap_or(PollFlags::empty());
                if (r0 | r1).intersects(bad) {
                    return self.crash(Error::new("check internal pipes", Errno::EIO));
                }
                (
                    r0.contains(PollFlags::POLLIN),
                    r1.contains(PollFlags::POLLIN),
                )
            };
            if sig_ready && let Err(e) = self.handle_signals() {
                return self.crash(e);
            }
            if ctl_ready && let Err(e) = self.handle_control() {
                return self.crash(e);
            }
        }
        self.stop()
    }

    fn timeout(&self) -> PollTimeout {
        tend_sys::deadline::poll_timeout(self.table.deadline(), Instant::now())
    }

    fn crash(&mut self, e: Error) -> Ending {
        self.restore_console();
        Ending::Crash(e)
    }

    /// Told to stop: signal, close the pipes, wait for the tree, then hand over.
    fn stop(&mut self) -> Ending {
        if let Some(k) = self.wants.kill.take() {
            self.kill(k);
        }
        self.table.close_all(close_pipe);
        self.restore_console();
        if self.wants.wait {
            while self.table.any_supervisor() {
                match wait::wait(None) {
                    Ok((pid, _)) => self.table.forget(pid.as_raw()),
                    Err(Errno::ECHILD) => break,
                    Err(e) => {
                        self.warn.warn(&format_args!(
                            "unable to wait for all supervisors: {}",
                            e.desc()
                        ));
                        break;
                    }
                }
            }
        } else {
            let _ = self.reap();
        }
        match self.exit {
            Some(code) => Ending::Exit(code),
            None => Ending::Finish,
        }
    }

    fn restore_console(&mut self) {
        if let Some(fd) = self.console.take() {
            let _ = nix::unistd::dup2(fd, 2);
            let _ = nix::unistd::close(fd);
            let _ = nix::unistd::dup2(2, 1);
        }
    }

    /// Collect every dead child, known or not.
    fn reap(&mut self) -> Result<(), Error> {
        loop {
            let pid = match wait::reap(None) {
                Ok(None) | Err(Errno::ECHILD) => return Ok(()),
                Ok(Some((pid, _))) => pid,
                Err(e) => return Err(Error::new("wait", e)),
            };
            if let crate::table::Reaped::Left { close, rescan } =
                self.table.reaped(pid.as_raw(), Instant::now())
            {
                if let Some((r, w)) = close {
                    close_pipe(r, w);
                }
                if rescan {
                    self.wants.scan = true;
                }
            }
        }
    }

    fn kill(&mut self, k: Kill) {
        self.table.kill(k, |pid, sig| {
            let _ = nix::sys::signal::kill(Pid::from_raw(pid), sig);
        });
    }

    /// One pass of readdir over the scan directory.
    fn scan(&mut self) {
        let now = Instant::now();
        self.table.begin_scan(now, self.rescan);
        let mut dir = match nix::dir::Dir::open(
            ".",
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        ) {
            Ok(d) => d,
            Err(e) => {
                self.warn
                    .warn(&format_args!("unable to opendir .: {}", e.desc()));
                self.table.retry_later(now);
                return;
            }
        };
        for entry in dir.iter() {
            match entry {
                Ok(e) => self.check(e.file_name(), now),
                Err(e) => {
                    self.warn
                        .warn(&format_args!("unable to readdir .: {}", e.desc()));
                    self.table.retry_later(now);
                    break;
                }
            }
        }
        self.table.end_scan(close_pipe);
    }

    /// One entry of the scan directory.
    fn check(&mut self, name: &CStr, now: Instant) {
        let bytes = name.to_bytes();
        if bytes.first() == Some(&b'.') {
            return;
        }
        if bytes.len() > self.name_max {
            self.warn.warn(&format_args!(
                "name too long - not spawning service: {}",
                shown(bytes)
            ));
            return;
        }
        let st = match stat(name) {
            Ok(st) => st,
            Err(e) => {
                self.warn.warn(&format_args!(
                    "unable to stat {}: {}",
                    shown(bytes),
                    e.desc()
                ));
                self.table.retry_later(now);
                return;
            }
        };
        if st.st_mode & SFlag::S_IFMT.bits() != SFlag::S_IFDIR.bits() {
            return;
        }
        let key: Key = (st.st_dev, st.st_ino);
        match self.table.lookup(key) {
            Lookup::Known => {}
            Lookup::Leaving => return,
            Lookup::Full => {
                self.warn.warn(&format_args!(
                    "unable to start supervisor for {}: too many services",
                    shown(bytes)
                ));
                return;
            }
            Lookup::New => {
                self.logname.clear();
                self.logname.extend_from_slice(bytes);
                self.logname.extend_from_slice(b"/log");
                let pipe = match stat(self.logname.as_slice()) {
                    Err(Errno::ENOENT) => Pipe::None,
                    Err(e) => {
                        self.warn.warn(&format_args!(
                            "unable to stat {}: {}",
                            shown(&self.logname),
                            e.desc()
                        ));
                        self.table.retry_later(now);
                        return;
                    }
                    Ok(st) if st.st_mode & SFlag::S_IFMT.bits() != SFlag::S_IFDIR.bits() => {
                        Pipe::None
                    }
                    Ok(_) => match nix::unistd::pipe2(OFlag::O_CLOEXEC) {
                        Ok((r, w)) => Pipe::Open {
                            read: r.into_raw_fd(),
                            write: w.into_raw_fd(),
                        },
                        Err(e) => {
                            self.warn
                                .warn(&format_args!("unable to pipe: {}", e.desc()));
                            self.table.retry_later(now);
                            return;
                        }
                    },
                };
                self.table.insert(key, pipe, now);
            }
        }
        let starts = self.table.activate(key, now);
        if starts.log {
            self.start(key, bytes, Side::Log, now);
        }
        if starts.main {
            self.start(key, bytes, Side::Main, now);
        }
    }

    /// Start one supervisor: `tend-supervise NAME` or `tend-supervise NAME/log`, cwd the
    /// scan directory, with the pipe end as stdout (service) or stdin (logger).
    fn start(&mut self, key: Key, name: &[u8], side: Side, now: Instant) {
        let suffix: &[u8] = if side == Side::Log { b"/log" } else { b"" };
        // A name that starts with a dash goes as ./NAME, or the supervisor takes it for
        // an option (issue 34 item 25).
        let dot: &[u8] = if name.starts_with(b"-") { b"./" } else { b"" };
        self.supervisor.set_arg(1, &[dot, name, suffix]);
        self.spawn_opts.fds.clear();
        if let Some(Pipe::Open { read, write }) = self.table.get(key).map(|r| r.pipe) {
            self.spawn_opts.fds.push(match side {
                Side::Log => (read, 0),
                Side::Main => (write, 1),
            });
        }
        if let Some(c) = self.console
            && side == Side::Main
            && name == CATCH_ALL_LOGGER.as_bytes()
        {
            self.spawn_opts.fds.push((c, 2));
        }
        match self.spawn_supervisor() {
            Ok(pid) => self.table.started(key, side, pid.as_raw()),
            Err(SpawnError::Fork(e)) => {
                self.warn.warn(&format_args!(
                    "unable to fork for {}{}: {}",
                    shown(name),
                    shown(suffix),
                    e.desc()
                ));
                self.table.start_failed(key, side, now, FORK_RETRY_DELAY);
            }
            Err(SpawnError::Exec(e)) => {
                self.warn.warn(&format_args!(
                    "unable to spawn {SUPERVISOR} for {}{}: {}",
                    shown(name),
                    shown(suffix),
                    e.desc()
                ));
                self.table.start_failed(key, side, now, RESTART_DELAY);
            }
        }
    }

    /// exec mode: a vfork-style clone (no page-table copy of a scanner with 1000
    /// children), move the pipe end into place, exec `tend-supervise NAME`. The scanner
    /// waits for the exec, not for its outcome: if it fails, the child says so and exits 111,
    /// and the reaper restarts it a second later like any dead supervisor (as s6-svscan).
    fn spawn_supervisor(&mut self) -> Result<Pid, SpawnError> {
        tend_sys::process::spawn_unreported_vfork(
            &self.supervisor,
            &self.spawn_opts,
            &[
                "tend-svscan (child): fatal: unable to exec ",
                SUPERVISOR,
                ": ",
            ],
        )
        .map_err(SpawnError::Fork)
    }

    fn handle_signals(&mut self) -> Result<(), Error> {
        loop {
            let info = match self.sigfd.read_signal() {
                Ok(Some(i)) => i,
                Ok(None) | Err(Errno::EAGAIN) => return Ok(()),
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(Error::new("read the signalfd", e)),
            };
            let Ok(sig) = Signal::try_from(info.ssi_signo as i32) else {
                continue;
            };
            if self.runsvdir
                && let Some((kill, code)) = crate::command::on_signal_runsvdir(sig)
            {
                // Leave at once: runit's stage 2 starts a new runsvdir, and the
                // supervisors left (or being stopped) are not ours to wait for.
                self.wants.kill = kill;
                self.wants.run = false;
                self.wants.wait = false;
                self.exit = Some(code);
                continue;
            }
            match on_signal(sig) {
                OnSignal::Fixed(c) => self.wants.apply(c),
                OnSignal::Divert { script, fallback } => {
                    if !self.run_script(script)
                        && let Some(c) = fallback
                    {
                        self.wants.apply(c);
                    }
                }
                OnSignal::Ignore => {}
            }
        }
    }

    /// Spawn `.s6-svscan/SIGxxx`; false if it could not be (a missing one is silent).
    fn run_script(&mut self, script: &str) -> bool {
        tend_sys::exec::set_cstring(&mut self.script.candidates[0], &[script.as_bytes()]);
        tend_sys::exec::set_cstring(&mut self.script.argv[0], &[script.as_bytes()]);
        self.spawn_opts.fds.clear();
        match spawn(&self.script, &self.spawn_opts) {
            Ok(_) => true,
            // Missing: silent. Present but ENOENT (a missing #! interpreter): say why.
            Err(SpawnError::Exec(Errno::ENOENT))
                if Path::new(script).symlink_metadata().is_err() =>
            {
                false
            }
            Err(SpawnError::Exec(e)) => {
                let why = tend_sys::diagnose::describe(OsStr::new(script), e);
                self.warn
                    .warn(&format_args!("unable to spawn {script}: {why}"));
                false
            }
            Err(SpawnError::Fork(e)) => {
                self.warn
                    .warn(&format_args!("unable to fork for {script}: {}", e.desc()));
                false
            }
        }
    }

    fn handle_control(&mut self) -> Result<(), Error> {
        let mut buf = [0u8; 64];
        loop {
            let n = match nix::unistd::read(self.control.as_raw_fd(), &mut buf) {
                Ok(0) | Err(Errno::EAGAIN) => return Ok(()),
                Ok(n) => n,
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(Error::at("read", CONTROL_FIFO, e)),
            };
            for &b in &buf[..n] {
                match Command::from_byte(b) {
                    Some(c) => self.wants.apply(c),
                    None => self.warn.warn(&format_args!(
                        "received unknown control command: {}",
                        std::ascii::escape_default(b)
                    )),
                }
            }
        }
    }
}

fn close_pipe(r: RawFd, w: RawFd) {
    let _ = nix::unistd::close(w);
    let _ = nix::unistd::close(r);
}

/// Replace the process with `path` (no arguments, our environment), signals restored
/// to their defaults first. Returns only on failure.
pub fn exec_script(path: &str) -> Errno {
    let _ = tend_sys::signals::default(Signal::SIGPIPE);
    let _ = tend_sys::signals::unblock_all();
    tend_sys::exec::exec_with_env(&[OsString::from(path)], &tend_sys::exec::current_env())
}

/// The scan directory as given, for messages.
pub fn shown_dir(dir: Option<&OsStr>) -> String {
    dir.map(|d| shown(d.as_bytes()).into_owned())
        .unwrap_or_else(|| ".".into())
}
