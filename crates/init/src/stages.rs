//! The stages: stage 1 (the environment saved, the init.d scripts), stage 2 (the command
//! in the foreground), stage 3 (the finish.d scripts, the tree brought down, what is left
//! signalled), and the scripts they run one at a time.

use crate::services::SCANNER;
use crate::{Init, OnFailure, exec_failure, tree};
use nix::errno::Errno;
use nix::sys::resource::{Resource, getrlimit, setrlimit};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::ffi::{OsStr, OsString};
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tend_proto::ScanCommand;
use tend_sys::code::SYSTEM;
use tend_sys::exec::Prepared;
use tend_sys::process::{SpawnError, SpawnOptions, spawn};

/// Init's own limits while the command is spawned, put back after.
#[derive(Default)]
struct SavedLimits {
    nofile: Option<(u64, u64)>,
    oom: Option<i32>,
}

impl SavedLimits {
    fn restore(&self) {
        if let Some((soft, hard)) = self.nofile {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, soft, hard);
        }
        if let Some(adj) = self.oom {
            let _ = tend_env::oom::set(adj);
        }
    }
}

impl Init<'_> {
    /// Save the environment as an envdir (when asked to); false if that failed and the
    /// container stops.
    pub(crate) fn save_env(&mut self) -> bool {
        self.env_deferred = false;
        if let Some(dir) = self.settings.env_dir.clone()
            && let Err(e) = tree::save_env(&dir, &self.env)
        {
            self.fatal(SYSTEM, format_args!("{e}"));
            return false;
        }
        true
    }

    pub(crate) fn stage1(&mut self, has_command: bool) {
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
    pub(crate) fn scripts(&mut self, dir: &Path) -> Vec<PathBuf> {
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
    pub(crate) fn path(&self) -> Option<&OsStr> {
        self.env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.as_os_str())
    }

    /// Run one script to its end (or until `limit`, then SIGKILL it): its exit code,
    /// 128+N if killed, 126/127 if it could not be run.
    pub(crate) fn run_script(&mut self, path: &Path, limit: Option<Duration>) -> i32 {
        self.run_program(&[path.as_os_str().to_os_string()], limit)
    }

    /// As `run_script`, for a whole command line (argv[0] searched on PATH, then beside
    /// our own executable when it is one of ours).
    pub(crate) fn run_program(&mut self, argv: &[OsString], limit: Option<Duration>) -> i32 {
        let prog = argv[0].clone();
        let opts = SpawnOptions {
            fds: self.catch_all_fds(),
            ..Default::default()
        };
        let spawned = Prepared::new(argv, &self.env)
            .map(|mut p| {
                if prog.as_bytes().starts_with(b"tend-") {
                    p.prefer_beside_self(&prog);
                }
                p
            })
            .map_err(SpawnError::Exec)
            .and_then(|p| spawn(&p, &opts));
        let pid = match spawned {
            Ok(pid) => pid,
            Err(SpawnError::Exec(e)) => {
                let (msg, code) = exec_failure(&prog, self.path(), e);
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
        // A stop that arrives while it runs (it got the SIGTERM) leaves it the kill grace;
        // one from before (the way down) does not shorten it.
        let stopped_before = self.stop.is_some();
        let mut ended = self.wait_while(deadline, |i| {
            i.script.is_some() && (stopped_before || i.stop.is_none())
        });
        let mut why = format!("after {} ms", limit.unwrap_or_default().as_millis());
        if ended && self.script.is_some() {
            let grace = self.settings.kill_grace;
            let by = Instant::now() + grace;
            ended = self.wait_while(Some(deadline.map_or(by, |d| d.min(by))), |i| {
                i.script.is_some()
            });
            why = format!("{} ms after SIGTERM", grace.as_millis());
        }
        if !ended {
            self.warn(format_args!(
                "{} still running {why}: killing it",
                Path::new(&prog).display(),
            ));
            let _ = kill(pid, Signal::SIGKILL);
            self.wait_while(None, |i| i.script.is_some());
        }
        self.script_code.unwrap_or(SYSTEM)
    }

    /// Where the catch-all logger (s6-overlay's S6_LOGGING) takes stdout and stderr: the
    /// moves for a child's spawn, none without it.
    pub(crate) fn catch_all_fds(&self) -> Vec<(i32, i32)> {
        match &self.catch_all {
            Some(fd) => {
                use std::os::fd::AsRawFd;
                vec![(fd.as_raw_fd(), 1), (fd.as_raw_fd(), 2)]
            }
            None => Vec::new(),
        }
    }

    pub(crate) fn stage2(&mut self, command: &[OsString]) {
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
        let mut restarts_left = self.settings.restarts;
        // Started before the services (-A none), and maybe exited already.
        let mut started = self.command.is_some() || self.command_code.is_some();
        loop {
            if !started && !self.spawn_command(command, prog) {
                return;
            }
            started = false;
            // A guest's stop signals stop init, not only the command (stage 3 signals it).
            self.wait_while(None, |i| i.command.is_some() && i.stop.is_none());
            let Some(code) = self.command_code else {
                return;
            };
            if self.guest {
                self.stage(format_args!("command exited: exit code {code}"));
            }
            if restarts_left == 0 || !self.carry_on() {
                return;
            }
            restarts_left -= 1;
            let done = self.settings.restarts - restarts_left;
            self.stage(format_args!(
                "restarting the command ({done} of {})",
                self.settings.restarts
            ));
        }
    }

    /// Start the command ahead of stage 2 (which then waits for it).
    pub(crate) fn start_command(&mut self, command: &[OsString]) {
        if let Some(prog) = command.first() {
            self.spawn_command(command, prog);
        }
    }

    /// Start the command with its limits; false if it could not be started (a failure).
    fn spawn_command(&mut self, command: &[OsString], prog: &OsStr) -> bool {
        let opts = SpawnOptions {
            setpgid: true,
            foreground: self.tty.then_some(0),
            // S6_LOGGING=1: the command's output goes to the catch-all logger too.
            fds: if self.log_command {
                self.catch_all_fds()
            } else {
                Vec::new()
            },
            ..Default::default()
        };
        // A child inherits both at fork: init takes them on for the spawn only, so the
        // shared spawn path needs no step of its own, and a refusal is said before the
        // command runs.
        let saved = match self.command_limits() {
            Ok(saved) => saved,
            Err(e) => {
                self.fatal(SYSTEM, format_args!("{e}"));
                return false;
            }
        };
        let spawned = Prepared::new(command, &self.env)
            .map_err(SpawnError::Exec)
            .and_then(|p| spawn(&p, &opts));
        saved.restore();
        match spawned {
            Ok(pid) => {
                self.command = Some(pid);
                self.command_code = None;
                !self.env_deferred || self.save_env()
            }
            Err(SpawnError::Exec(e)) => {
                let (msg, code) = exec_failure(prog, self.path(), e);
                self.fatal(code, format_args!("{msg}"));
                false
            }
            Err(SpawnError::Fork(e)) => {
                self.fatal(SYSTEM, format_args!("unable to fork: {}", e.desc()));
                false
            }
        }
    }

    /// Set the command's open-file limit and OOM adjustment on init itself; what to
    /// restore once it is spawned.
    fn command_limits(&self) -> Result<SavedLimits, tend_sys::Error> {
        let mut saved = SavedLimits::default();
        if let Some(n) = self.settings.nofile {
            let old = getrlimit(Resource::RLIMIT_NOFILE)
                .map_err(|e| tend_sys::Error::new("getrlimit", e))?;
            // The hard limit is raised to n, never lowered: init must be able to take
            // its own back without CAP_SYS_RESOURCE.
            setrlimit(Resource::RLIMIT_NOFILE, n, n.max(old.1))
                .map_err(|e| tend_sys::Error::new("setrlimit RLIMIT_NOFILE", e))?;
            saved.nofile = Some(old);
        }
        if let Some(adj) = self.settings.oom_score_adj {
            let old = std::fs::read(tend_env::oom::PATH)
                .ok()
                .and_then(|b| tend_env::oom::parse(OsStr::from_bytes(b.trim_ascii())))
                .unwrap_or(0);
            if let Err(e) = tend_env::oom::set(adj) {
                saved.restore();
                return Err(e);
            }
            saved.oom = Some(old);
        }
        Ok(saved)
    }

    /// Stage 3 as named steps: the finish scripts, then the tree.
    pub(crate) fn stage3(&mut self) {
        self.stopping = true;
        self.take_terminal_back();
        self.finish_scripts();
        self.stop_tree();
    }

    /// The command's group may have kept the terminal; take it back (SIGTTOU is blocked)
    /// so the finish scripts can use it.
    pub(crate) fn take_terminal_back(&mut self) {
        if self.tty {
            let _ = nix::unistd::tcsetpgrp(std::io::stdin().as_fd(), nix::unistd::getpgrp());
        }
    }

    /// The finish.d scripts, each bounded by the finish time.
    pub(crate) fn finish_scripts(&mut self) {
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
    }

    /// The scanner brought down as `tend-svscanctl -t` does (supervisors bring their
    /// services down, loggers drain their pipes and exit last), then SIGTERM and SIGKILL
    /// for what is left, each after its grace time.
    pub(crate) fn stop_tree(&mut self) {
        if let Some(pid) = self.scanner {
            self.stage(format_args!("stopping services"));
            let sent =
                tend_proto::control::send_scan(&self.settings.scan_dir, &[ScanCommand::Terminate])
                    .is_ok();
            if !sent {
                let _ = kill(pid, Signal::SIGTERM);
            }
            let deadline = Instant::now() + self.settings.services_grace;
            self.wait_while(Some(deadline), |i| i.scanner.is_some());
        }
        // The catch-all logger reads until every writer is gone: ours goes now, so it
        // drains what the tree wrote and exits before the SIGTERM below.
        self.catch_all = None;
        if let Some(pid) = self.logger {
            let deadline = Instant::now() + self.settings.kill_grace;
            self.wait_while(Some(deadline), |i| i.logger.is_some());
            if self.logger.is_some() {
                let _ = kill(pid, Signal::SIGTERM);
            }
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
}
