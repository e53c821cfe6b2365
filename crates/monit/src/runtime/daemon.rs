//! `tend-monit -I`: the long-lived part. Install one service per process check into the
//! scan directory tend-monit owns, make sure a tend-svscan runs on it, bring the
//! services up in `depends on` order, then wait for signals: SIGHUP re-reads the control
//! file and applies only what changed; SIGTERM and SIGINT end tend-monit and leave every
//! service running (the scanner is in a session of its own), so a new tend-monit takes
//! the tree over without restarting anything.

use crate::reader::model::{Control, Mode};
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
    let services = crate::runtime::service::render_all(c, exe, report).map_err(Error)?;
    let o = tend_client::install::apply(
        scandir,
        crate::runtime::service::OWNER,
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
    let listening = || tend_proto::control::send_scan(scandir, &[]).is_ok();
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
            "unable to start tend-svscan on {}: {}",
            scandir.display(),
            spawn_reason(e)
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

/// The bare strerror text of a failed spawn.
fn spawn_reason(e: tend_sys::process::SpawnError) -> &'static str {
    match e {
        tend_sys::process::SpawnError::Fork(e) | tend_sys::process::SpawnError::Exec(e) => e.desc(),
    }
}

/// This daemon's incarnation (what the BOSH agent waits to see change after it restarted
/// tend-monit): its start in seconds, but always past the last daemon's on this scan
/// directory, kept in `.tend-monit/incarnation`, even when both started in one second.
fn incarnation(scandir: &Path) -> Result<u64, Error> {
    let p = scandir.join(STATE).join("incarnation");
    let last = tend_sys::fd::read_regular(&p, 32)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|t| t.trim().parse::<u64>().ok());
    let now = now_secs();
    let next = last.map_or(now, |l| now.max(l.saturating_add(1)));
    let tmp = scandir.join(STATE).join(".incarnation.new");
    std::fs::write(&tmp, format!("{next}\n"))
        .and_then(|()| std::fs::rename(&tmp, &p))
        .map_err(|e| {
            Error(format!(
                "unable to write {}: {}",
                p.display(),
                tend_sys::error::io_reason(&e)
            ))
        })?;
    Ok(next)
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

/// Bringing up every process check not in `mode manual`, in dependency order, one look
/// per turn of the daemon's loop, so the HTTP interface answers (from the states as they
/// are: pending, initializing) while services start: a service with dependents is
/// waited for (up and its daemon found, within its start timeout) before they start.
struct Starter {
    /// The names still to start, the next one last.
    todo: Vec<String>,
    current: Option<Waiting>,
    /// How many services the control file has (the "started" line's count).
    total: usize,
}

struct Waiting {
    name: String,
    /// Its start was sent: now its readiness is awaited.
    sent: bool,
    until: Instant,
}

/// How often a starting service is looked at: only while services start.
const STARTING_LOOK: Duration = Duration::from_millis(20);

impl Starter {
    fn new(c: &Control) -> Starter {
        let mut todo = crate::runtime::control::process_order(c);
        let total = todo.len();
        todo.reverse();
        Starter {
            todo,
            current: None,
            total,
        }
    }

    fn idle() -> Starter {
        Starter {
            todo: Vec::new(),
            current: None,
            total: 0,
        }
    }

    fn busy(&self) -> bool {
        self.current.is_some() || !self.todo.is_empty()
    }

    /// Go as far as can be gone without waiting, then say in `pending` which services
    /// are yet to be started (their XML says "start pending").
    fn advance(
        &mut self,
        c: &Control,
        scandir: &Path,
        report: &dyn Warn,
        pending: &mut Vec<String>,
    ) {
        self.go(c, scandir, report);
        pending.clear();
        pending.extend(
            self.todo
                .iter()
                .chain(self.current.as_ref().map(|w| &w.name))
                .cloned(),
        );
    }

    /// Go as far as can be gone without waiting; true while there is more to do.
    fn go(&mut self, c: &Control, scandir: &Path, report: &dyn Warn) -> bool {
        loop {
            let Some(w) = &mut self.current else {
                let Some(name) = self.todo.pop() else {
                    report.say("info", &format_args!("started: {} services", self.total));
                    self.total = 0;
                    return false;
                };
                let wanted = c
                    .checks
                    .iter()
                    .any(|ch| ch.name == name && ch.mode != Mode::Manual);
                if wanted && !crate::runtime::state::is_unmonitored(&scandir.join(&name)) {
                    self.current = Some(Waiting {
                        name,
                        sent: false,
                        until: Instant::now() + Duration::from_secs(10),
                    });
                }
                continue;
            };
            let dir = scandir.join(&w.name);
            let late = Instant::now() >= w.until;
            if !w.sent {
                // The supervisor listens, and has written its first status (a watch
                // reads it).
                let supervised = tend_client::svok(&dir).unwrap_or(false)
                    && tend_client::status::read_record(&dir).is_ok();
                if !supervised {
                    if !late {
                        return true;
                    }
                    report.warn(&format_args!(
                        "{}: no supervisor on {}",
                        w.name,
                        dir.display()
                    ));
                    self.current = None;
                    continue;
                }
                let dependents = c
                    .checks
                    .iter()
                    .any(|o| o.depends.iter().any(|(d, _)| *d == w.name));
                let step = crate::runtime::control::Step::Up(w.name.clone());
                if let Err(e) = crate::runtime::control::execute(c, scandir, &step, false) {
                    report.warn(&e);
                }
                if !dependents {
                    self.current = None;
                    continue;
                }
                w.sent = true;
                w.until = Instant::now() + crate::runtime::control::patience(c, &w.name, true);
                continue;
            }
            match crate::runtime::control::wait_ready(&dir, Duration::ZERO) {
                Ok(true) => {}
                Ok(false) if !late => return true,
                Ok(false) => report.warn(&format_args!(
                    "{}: not up in time: its dependents start anyway",
                    w.name
                )),
                Err(e) => report.warn(&e),
            }
            self.current = None;
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
    /// The services the daemon has yet to start (their XML says "start pending").
    starting: Vec<String>,
    /// The services' states as last read, and their /proc numbers.
    cache: crate::runtime::cache::StateCache,
}

impl Backend<'_> {
    fn with_report<T>(&mut self, f: impl FnOnce(&crate::runtime::status::Report) -> T) -> T {
        let names = crate::runtime::control::process_order(&self.control);
        let cache = &mut self.cache;
        crate::runtime::resource::snapshot(|| {
            let services = cache.services(self.scandir, &names);
            let measured: Vec<_> = services.iter().map(|s| cache.measure(s)).collect();
            let pending: Vec<(String, String)> = self
                .pending
                .iter()
                .map(|(n, a, _)| (n.clone(), a.clone()))
                .chain(
                    self.starting
                        .iter()
                        .map(|n| (n.clone(), "start".to_string())),
                )
                .collect();
            let now = now_secs();
            let r = crate::runtime::status::Report {
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

impl crate::runtime::http::Backend for Backend<'_> {
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
        let pid = tend_sys::process::spawn(&p, &Default::default())
            .map_err(|e| spawn_reason(e).to_string())?;
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

/// Take the tree: its state directory, a scanner on it, the services installed, then
/// this daemon's pid and incarnation written (the incarnation the BOSH agent waits to
/// see change); the incarnation and the daemon file's path.
fn settle(
    c: &Control,
    scandir: &Path,
    exe: &Path,
    report: &dyn Warn,
) -> Result<(u64, PathBuf), Error> {
    std::fs::create_dir_all(scandir.join(STATE)).map_err(|e| {
        Error(format!(
            "unable to create {}: {}",
            scandir.join(STATE).display(),
            tend_sys::error::io_reason(&e)
        ))
    })?;
    ensure_scanner(scandir, exe)?;
    install(c, scandir, &exe.to_string_lossy(), report)?;
    let started = incarnation(scandir)?;
    let state: PathBuf = scandir.join(STATE).join("daemon");
    let tmp = scandir.join(STATE).join(".daemon.new");
    std::fs::write(&tmp, format!("{} {started}\n", std::process::id()))
        .and_then(|()| std::fs::rename(&tmp, &state))
        .map_err(|e| {
            Error(format!(
                "unable to write {}: {}",
                state.display(),
                tend_sys::error::io_reason(&e)
            ))
        })?;
    Ok((started, state))
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
    // The XML's <controlfile> is absolute, as monit's.
    let controlfile = &std::path::absolute(controlfile).unwrap_or_else(|_| controlfile.into());
    let exe_s = exe.to_string_lossy().into_owned();
    let (started, state) = settle(&c, scandir, exe, report)?;
    // From here every request is answered, while the services start.
    let mut server = crate::runtime::http::Server::bind(&c, report).map_err(Error)?;
    let mut starter = Starter::new(&c);
    let cache = crate::runtime::cache::StateCache::new(&c);
    let mut b = Backend {
        control: c,
        scandir,
        controlfile,
        exe,
        id: daemon_id(scandir),
        started,
        pending: Vec::new(),
        starting: Vec::new(),
        cache,
    };
    loop {
        if starter.busy() {
            starter.advance(&b.control, scandir, report, &mut b.starting);
        }
        let now = Instant::now();
        let look = starter.busy().then(|| now + STARTING_LOOK);
        let deadline = [server.as_ref().and_then(|s| s.deadline()), look]
            .into_iter()
            .flatten()
            .min();
        sleep_until_turn(&sigfd, server.as_ref(), deadline, now);
        if let Some(s) = &mut server {
            s.service(&mut b);
        }
        while let Ok(Some(s)) = sigfd.read_signal() {
            match Signal::try_from(s.ssi_signo as i32) {
                Ok(Signal::SIGTERM | Signal::SIGINT) => {
                    // The port closed before the daemon file goes: whoever saw this
                    // daemon gone may bind it at once.
                    drop(server);
                    let _ = std::fs::remove_file(&state);
                    return Ok(());
                }
                Ok(Signal::SIGHUP) => {
                    if let Some(n) = reread() {
                        starter = reload(n, &mut b, server.as_mut(), &exe_s, report);
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

/// Sleep until a signal, a connection's turn or `deadline`.
fn sleep_until_turn(
    sigfd: &nix::sys::signalfd::SignalFd,
    server: Option<&crate::runtime::http::Server>,
    deadline: Option<Instant>,
    now: Instant,
) {
    use nix::poll::{PollFd, PollFlags};
    let mut fds = vec![PollFd::new(
        std::os::fd::AsFd::as_fd(sigfd),
        PollFlags::POLLIN,
    )];
    if let Some(s) = server {
        let events = |write| [PollFlags::POLLIN, PollFlags::POLLOUT][usize::from(write)];
        fds.extend(
            s.poll_fds()
                .into_iter()
                .map(|(fd, w)| PollFd::new(fd, events(w))),
        );
    }
    let _ = nix::poll::poll(&mut fds, tend_sys::deadline::poll_timeout(deadline, now));
}

/// SIGHUP with a control file read again: the server and the cache take it, its
/// services are installed, and starting begins afresh (services may be replaced and the
/// cycle changed).
fn reload(
    c: Control,
    b: &mut Backend<'_>,
    server: Option<&mut crate::runtime::http::Server>,
    exe: &str,
    report: &dyn Warn,
) -> Starter {
    b.control = c;
    if let Some(s) = server {
        s.reconfigure(&b.control, report);
    }
    b.cache = crate::runtime::cache::StateCache::new(&b.control);
    match install(&b.control, b.scandir, exe, report) {
        Ok(_) => Starter::new(&b.control),
        Err(e) => {
            report.warn(&e);
            Starter::idle()
        }
    }
}
