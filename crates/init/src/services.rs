//! The services: the image's tree mirrored into the writable scan directory, the scanner
//! spawned on it, and the wait until every service is up (ready, where it notifies).

use crate::{Init, OnFailure, exec_failure, guest, tree};
use nix::errno::Errno;
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, Instant};
use tend_proto::fifodir::{Subscription, make_fifodir};
use tend_proto::status::StatusRecord;
use tend_sys::code::SYSTEM;
use tend_sys::exec::Prepared;
use tend_sys::process::{SpawnError, SpawnOptions, spawn};

/// The scanner, looked for beside our own executable first, then on PATH.
pub(crate) const SCANNER: &str = "tend-svscan";

impl Init<'_> {
    /// Whether there is any service to start (the services directory has entries, or a
    /// guest's console service is asked for).
    pub(crate) fn has_services(&self) -> bool {
        let console = self.guest && self.settings.console.is_some();
        console || tree::list(&self.settings.services_dir).is_ok_and(|v| !v.is_empty())
    }

    /// The services, as named steps: mirror the tree, subscribe to what will be waited
    /// for, spawn the scanner, wait.
    pub(crate) fn start_services(&mut self, has_command: bool) {
        let Some(dst) = self.mirror_services() else {
            return;
        };
        self.stage(format_args!("stage 2: starting services"));
        // Without a command and without a limit nobody waits for the services.
        let mut wait = has_command || self.settings.services_wait.is_some();
        let mut services = if wait {
            tree::services(&dst)
        } else {
            Vec::new()
        };
        if has_command && let Some(names) = self.settings.main_after.clone() {
            self.keep_only(&mut services, &names);
            wait = !services.is_empty();
        }
        let subs = if wait {
            Self::subscribe(&services)
        } else {
            None
        };
        if !self.spawn_scanner(&dst) {
            return;
        }
        if wait {
            self.wait_for_services(&services, subs);
            if self.carry_on() {
                self.stage(format_args!("services up"));
            }
        }
    }

    /// Mirror the services directory (and a guest's console service) into the scan
    /// directory: the scan directory, or None when there is nothing to start or the
    /// mirror failed.
    fn mirror_services(&mut self) -> Option<std::path::PathBuf> {
        let src = self.settings.services_dir.clone();
        let dst = self.settings.scan_dir.clone();
        let console = self.settings.console.clone().filter(|_| self.guest);
        let have = match tree::list(&src) {
            Ok(v) => !v.is_empty(),
            Err(e) if e.errno == Errno::ENOENT => false,
            Err(e) => {
                self.fatal(SYSTEM, format_args!("{e}"));
                return None;
            }
        };
        if !have && console.is_none() {
            return None;
        }
        if have && let Err(e) = tree::mirror(&src, &dst) {
            self.fatal(SYSTEM, format_args!("{e}"));
            return None;
        }
        if let Some(tty) = console
            && let Err(e) = guest::console_service(&dst, &tty)
        {
            // A debug aid: the guest boots without it.
            self.warn(format_args!("{e}"));
        }
        Some(dst)
    }

    /// `-A`: the command waits only for the services named (and their loggers); a name
    /// with no service is said, not waited for.
    fn keep_only(&mut self, services: &mut Vec<tree::Service>, names: &[OsString]) {
        let named = |s: &tree::Service, n: &OsString| {
            s.name.strip_suffix("/log").unwrap_or(&s.name).as_bytes() == n.as_bytes()
        };
        for n in names {
            if !services.iter().any(|s| named(s, n)) {
                let n = Path::new(n).display();
                self.warn(format_args!("no service {n} to wait for"));
            }
        }
        services.retain(|s| names.iter().any(|n| named(s, n)));
    }

    /// Start tend-svscan on `dst`, off the terminal; false if it could not be started.
    pub(crate) fn spawn_scanner(&mut self, dst: &Path) -> bool {
        let argv = [OsString::from(SCANNER), dst.as_os_str().to_os_string()];
        let prepared = Prepared::new(&argv, &self.env).map(|mut p| {
            p.prefer_beside_self(OsStr::new(SCANNER));
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
        let mut fds: Vec<(i32, i32)> = null
            .iter()
            .map(|fd: &OwnedFd| (fd.as_raw_fd(), 0))
            .collect();
        fds.extend(self.catch_all_fds());
        let opts = SpawnOptions {
            setpgid: true,
            fds,
            ..Default::default()
        };
        match prepared
            .map_err(SpawnError::Exec)
            .and_then(|p| spawn(&p, &opts))
        {
            Ok(pid) => {
                self.scanner = Some(pid);
                true
            }
            Err(SpawnError::Exec(e)) => {
                let (msg, _) = exec_failure(OsStr::new(SCANNER), self.path(), e);
                self.fatal(SYSTEM, format_args!("{msg}"));
                false
            }
            Err(SpawnError::Fork(e)) => {
                self.fatal(SYSTEM, format_args!("unable to fork: {}", e.desc()));
                false
            }
        }
    }

    /// Subscribe to every service's `event/` before its supervisor exists (as s6-svwait
    /// does: tend-supervise keeps an existing fifodir), so that no transition is missed.
    /// None if one subscription fails: the wait then looks every 20 ms instead.
    pub(crate) fn subscribe(services: &[tree::Service]) -> Option<Vec<Subscription>> {
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
    pub(crate) fn wait_for_services(
        &mut self,
        services: &[tree::Service],
        subs: Option<Vec<Subscription>>,
    ) {
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
                        OnFailure::Stop => self.fatal(tend_sys::code::NO, text),
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
}

impl tree::Service {
    fn arrived(&self) -> bool {
        match StatusRecord::read(&self.dir) {
            Ok(r) => r.is_up() && (!self.notifies || r.ready),
            Err(_) => false,
        }
    }
}
