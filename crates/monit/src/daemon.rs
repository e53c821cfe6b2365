//! `tend-monit -I`: the long-lived part. Install one service per process check into the
//! scan directory tend-monit owns, make sure a tend-svscan runs on it, bring the
//! services up in `depends on` order, then wait for signals: SIGHUP re-reads the control
//! file and applies only what changed; SIGTERM and SIGINT end tend-monit and leave every
//! service running (the scanner is in a session of its own), so a new tend-monit takes
//! the tree over without restarting anything.

use crate::model::{Control, Mode};
use nix::sys::signal::Signal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tend_sys::warn::Warn;

/// tend-monit's own files in the scan directory (a dot name: the scanner skips it).
pub const STATE: &str = ".tend-monit";

#[derive(Debug)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The running daemon's pid and start time (seconds since the epoch), if one runs.
pub fn running(scandir: &Path) -> Option<(i32, u64)> {
    let text = std::fs::read_to_string(scandir.join(STATE).join("daemon")).ok()?;
    let mut it = text.split_whitespace();
    let pid: i32 = it.next()?.parse().ok()?;
    let started: u64 = it.next()?.parse().ok()?;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).ok()?;
    Some((pid, started))
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Install the services; the names added or replaced.
pub fn install(
    c: &Control,
    scandir: &Path,
    exe: &str,
    report: &dyn Warn,
) -> Result<Vec<String>, Error> {
    let services = crate::service::render_all(c, exe, report).map_err(Error)?;
    let o = tend_client::install::apply(
        scandir,
        crate::service::OWNER,
        &services,
        Duration::from_secs(30),
        report,
    )
    .map_err(|e| Error(e.0))?;
    for (what, names) in [
        ("added", &o.added),
        ("replaced", &o.replaced),
        ("removed", &o.removed),
    ] {
        for n in names {
            report.say("info", &format_args!("{what} {n}"));
        }
    }
    Ok(o.added.into_iter().chain(o.replaced).collect())
}

/// A scanner on `scandir`: the one running, or a tend-svscan started in a session of its
/// own (it outlives tend-monit).
fn ensure_scanner(scandir: &Path, exe: &Path) -> Result<(), Error> {
    let listening =
        || tend_proto::control::send_in(scandir, tend_proto::servicedir::SVSCAN, b"").is_ok();
    if listening() {
        return Ok(());
    }
    let beside = exe.with_file_name("tend-svscan");
    let prog: std::ffi::OsString = if beside.exists() {
        beside.into()
    } else {
        "tend-svscan".into()
    };
    let argv = [prog, scandir.as_os_str().to_owned()];
    let p = tend_sys::exec::Prepared::with_current_env(&argv)
        .map_err(|e| Error(format!("unable to prepare tend-svscan: {}", e.desc())))?;
    let opts = tend_sys::process::SpawnOptions {
        setsid: true,
        ..Default::default()
    };
    tend_sys::process::spawn(&p, &opts).map_err(|e| {
        Error(format!(
            "unable to start tend-svscan on {}: {e:?}",
            scandir.display()
        ))
    })?;
    wait(Duration::from_secs(10), listening)
        .then_some(())
        .ok_or_else(|| {
            Error(format!(
                "tend-svscan on {} does not listen",
                scandir.display()
            ))
        })
}

/// Look again every 10 ms until `f` holds or `patience` ends: only while starting up
/// (a scanner's or a supervisor's control FIFO appearing), never in the steady state.
fn wait(patience: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + patience;
    loop {
        if f() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Bring up every process check not in `mode manual`, in dependency order; a service
/// with dependents is waited for (up and its daemon found) before they start.
fn start_all(c: &Control, scandir: &Path, report: &dyn Warn) {
    for name in crate::control::process_order(c) {
        let Some(ch) = c.checks.iter().find(|ch| ch.name == name) else {
            continue;
        };
        if ch.mode == Mode::Manual || crate::control::is_unmonitored(&scandir.join(&name)) {
            continue;
        }
        let dir = scandir.join(&name);
        // The supervisor listens, and has written its first status (a watch reads it).
        let supervised = || {
            tend_client::svok(&dir).unwrap_or(false)
                && tend_client::status::read_record(&dir).is_ok()
        };
        if !wait(Duration::from_secs(10), supervised) {
            report.warn(&format_args!("{name}: no supervisor on {}", dir.display()));
            continue;
        }
        let dependents = c
            .checks
            .iter()
            .any(|o| o.depends.iter().any(|(d, _)| *d == name));
        let step = crate::control::Step::Up(name.clone());
        match crate::control::execute(c, scandir, &step, dependents) {
            Ok(true) => {}
            Ok(false) => report.warn(&format_args!(
                "{name}: not up in time: its dependents start anyway"
            )),
            Err(e) => report.warn(&e),
        }
    }
}

/// The daemon's side of the HTTP interface: states read when asked, actions run as
/// `tend-monit ACTION NAME` children (the answer does not wait for them; monit also
/// answers at once and acts in its next cycle).
struct Backend<'a> {
    control: Control,
    scandir: &'a Path,
    controlfile: &'a Path,
    exe: &'a Path,
    id: String,
    started: u64,
    /// (name, action, pid of the child carrying it out).
    pending: Vec<(String, String, nix::unistd::Pid)>,
    /// The services' states as last read, and their /proc numbers.
    cache: crate::cache::StateCache,
}

impl Backend<'_> {
    fn with_report<T>(&mut self, f: impl FnOnce(&crate::status::Report) -> T) -> T {
        let names = crate::control::process_order(&self.control);
        let cache = &mut self.cache;
        crate::resource::snapshot(|| {
            let services = cache.services(self.scandir, &names);
            let measured: Vec<_> = services.iter().map(|s| cache.measure(s)).collect();
            let pending: Vec<(String, String)> = self
                .pending
                .iter()
                .map(|(n, a, _)| (n.clone(), a.clone()))
                .collect();
            let now = now_secs();
            let r = crate::status::Report {
                control: &self.control,
                services: &services,
                measured: &measured,
                pending: &pending,
                id: &self.id,
                incarnation: self.started,
                uptime: now.saturating_sub(self.started),
                controlfile: &self.controlfile.to_string_lossy(),
                now,
            };
            f(&r)
        })
    }

    /// A child ended: its action is no longer pending.
    fn reaped(&mut self, pid: nix::unistd::Pid) {
        self.pending.retain(|(_, _, p)| *p != pid);
    }
}

impl crate::http::Backend for Backend<'_> {
    fn control(&self) -> &Control {
        &self.control
    }

    fn xml(&mut self, two: bool) -> String {
        self.with_report(|r| if two { r.xml_525() } else { r.xml_533() })
    }

    fn page(&mut self, name: Option<&str>, token: &str) -> String {
        self.with_report(|r| r.html(name, token))
    }

    fn act(&mut self, name: &str, action: &str) -> Result<(), String> {
        let argv: Vec<std::ffi::OsString> = vec![
            self.exe.into(),
            "-c".into(),
            self.controlfile.into(),
            "-S".into(),
            self.scandir.into(),
            action.into(),
            name.into(),
        ];
        let p =
            tend_sys::exec::Prepared::with_current_env(&argv).map_err(|e| e.desc().to_string())?;
        let pid =
            tend_sys::process::spawn(&p, &Default::default()).map_err(|e| format!("{e:?}"))?;
        self.pending.push((name.into(), action.into(), pid));
        Ok(())
    }
}

/// monit's id: 32 hex digits, made once per scan directory and kept.
fn daemon_id(scandir: &Path) -> String {
    let p = scandir.join(STATE).join("id");
    if let Ok(id) = std::fs::read_to_string(&p) {
        let id = id.trim();
        if id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return id.to_string();
        }
    }
    let mut b = [0u8; 16];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = std::io::Read::read_exact(&mut f, &mut b);
    }
    let id: String = b.iter().map(|x| format!("{x:02x}")).collect();
    let _ = std::fs::write(&p, format!("{id}\n"));
    id
}

/// Run until SIGTERM or SIGINT; `reread` gives the control file again on SIGHUP.
pub fn run(
    c: Control,
    scandir: &Path,
    controlfile: &Path,
    exe: &Path,
    reread: &dyn Fn() -> Option<Control>,
    report: &dyn Warn,
) -> Result<(), Error> {
    let sigfd = tend_sys::signals::signalfd(&[
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
        Signal::SIGCHLD,
    ])
    .map_err(|e| Error(format!("unable to take signals: {}", e.desc())))?;
    std::fs::create_dir_all(scandir.join(STATE)).map_err(|e| {
        Error(format!(
            "unable to create {}: {e}",
            scandir.join(STATE).display()
        ))
    })?;
    // The XML's <controlfile> is absolute, as monit's.
    let controlfile = &std::path::absolute(controlfile).unwrap_or_else(|_| controlfile.into());
    let mut server = crate::http::Server::bind(&c).map_err(Error)?;
    let exe_s = exe.to_string_lossy().into_owned();
    ensure_scanner(scandir, exe)?;
    install(&c, scandir, &exe_s, report)?;
    // The daemon's pid and start (the incarnation the BOSH agent waits to see change).
    let started = now_secs();
    let state: PathBuf = scandir.join(STATE).join("daemon");
    let tmp = scandir.join(STATE).join(".daemon.new");
    std::fs::write(&tmp, format!("{} {started}\n", std::process::id()))
        .and_then(|()| std::fs::rename(&tmp, &state))
        .map_err(|e| Error(format!("unable to write {}: {e}", state.display())))?;
    start_all(&c, scandir, report);
    report.say(
        "info",
        &format_args!(
            "started: {} services",
            crate::control::process_order(&c).len()
        ),
    );
    let cache = crate::cache::StateCache::new(&c);
    let mut b = Backend {
        control: c,
        scandir,
        controlfile,
        exe,
        id: daemon_id(scandir),
        started,
        pending: Vec::new(),
        cache,
    };
    use nix::poll::{PollFd, PollFlags};
    loop {
        let now = Instant::now();
        let timeout =
            tend_sys::deadline::poll_timeout(server.as_ref().and_then(|s| s.deadline()), now);
        let mut fds = vec![PollFd::new(
            std::os::fd::AsFd::as_fd(&sigfd),
            PollFlags::POLLIN,
        )];
        if let Some(s) = &server {
            for (fd, write) in s.poll_fds() {
                fds.push(PollFd::new(
                    fd,
                    if write {
                        PollFlags::POLLOUT
                    } else {
                        PollFlags::POLLIN
                    },
                ));
            }
        }
        let _ = nix::poll::poll(&mut fds, timeout);
        drop(fds);
        if let Some(s) = &mut server {
            s.service(&mut b);
        }
        while let Ok(Some(s)) = sigfd.read_signal() {
            match Signal::try_from(s.ssi_signo as i32) {
                Ok(Signal::SIGTERM | Signal::SIGINT) => {
                    let _ = std::fs::remove_file(&state);
                    return Ok(());
                }
                Ok(Signal::SIGHUP) => {
                    if let Some(n) = reread() {
                        b.control = n;
                        // Services may be replaced and the cycle changed: start afresh.
                        b.cache = crate::cache::StateCache::new(&b.control);
                        match install(&b.control, scandir, &exe_s, report) {
                            Ok(_) => start_all(&b.control, scandir, report),
                            Err(e) => report.warn(&e),
                        }
                    }
                }
                _ => {
                    while let Ok(Some((pid, _))) = tend_sys::wait::reap(None) {
                        b.reaped(pid);
                    }
                }
            }
        }
    }
}
