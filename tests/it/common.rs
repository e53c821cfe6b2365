//! Shared test support: scratch directories that survive failures, running the built
//! binaries, daemons that are always killed, and polling instead of sleeping.

#![allow(dead_code)]

use std::ffi::OsStr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tend_proto::StatusRecord;

/// The built multi-call executable.
pub fn multicall() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_tend"))
}

/// The directory holding the tend programs as they ship: one hard link per program name to
/// the multi-call `tend` (what packaging/install.sh makes), made once per test process.
pub fn bindir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bin");
        std::fs::create_dir_all(&dir).unwrap();
        let o = Command::new(multicall()).arg("-l").output().unwrap();
        assert!(o.status.success(), "tend -l: {o:?}");
        let names = String::from_utf8(o.stdout).unwrap();
        let mut all = vec!["tend"];
        all.extend(names.lines());
        for name in all {
            // Link under a private name, then rename over the old link: concurrent test
            // processes and stale links from an earlier build never see a missing file.
            let tmp = dir.join(format!(".{name}.{}", std::process::id()));
            let _ = std::fs::remove_file(&tmp);
            std::fs::hard_link(multicall(), &tmp)
                .or_else(|_| std::os::unix::fs::symlink(multicall(), &tmp))
                .unwrap();
            std::fs::rename(&tmp, dir.join(name)).unwrap();
        }
        dir
    })
    .clone()
}

/// Path of a built tend binary.
pub fn bin(name: &str) -> PathBuf {
    bindir().join(name)
}

/// PATH with the tend binaries first.
pub fn path_env() -> std::ffi::OsString {
    let mut p = bindir().into_os_string();
    p.push(":");
    p.push(std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()));
    p
}

/// A Command for a tend binary (or any program on PATH), with the tend dir first on PATH.
pub fn cmd(name: &str) -> Command {
    let prog = if name == "tend" || name.starts_with("tend-") {
        bin(name)
    } else {
        PathBuf::from(name)
    };
    let mut c = Command::new(prog);
    c.env("PATH", path_env());
    c
}

/// Whether a program from Debian (s6, runit, …) is installed; compatibility tests that
/// need it fail loudly if not, since CI installs them.
pub fn have(prog: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()))
        .unwrap_or(false)
}

/// Fail (not skip) when a Debian tool the test compares against is missing.
pub fn require(prog: &str) {
    assert!(
        have(prog),
        "{prog} is not installed: run `apt-get install s6 runit daemontools execline` (CI does)"
    );
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A scratch directory under CARGO_TARGET_TMPDIR; removed on success, kept (and its
/// listing printed) when the test panics.
pub struct Scratch {
    pub path: PathBuf,
}

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "it-{}-{}-{}",
            name,
            std::process::id(),
            n
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Scratch { path }
    }

    pub fn join(&self, p: impl AsRef<Path>) -> PathBuf {
        self.path.join(p)
    }

    /// Write a file (creating parents), optionally executable.
    pub fn write(&self, rel: &str, contents: &str, exec: bool) -> PathBuf {
        let p = self.path.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, contents).unwrap();
        if exec {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let listing = Command::new("ls").arg("-laR").arg(&self.path).output();
            if let Ok(o) = listing {
                eprintln!(
                    "--- kept {} ---\n{}",
                    self.path.display(),
                    String::from_utf8_lossy(&o.stdout)
                );
            }
        } else {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// A background process in its own process group; killed (group-wide) and reaped on drop.
pub struct Daemon {
    pub child: Child,
    pub what: String,
}

impl Daemon {
    pub fn start(mut c: Command) -> Daemon {
        let what = format!("{c:?}");
        c.process_group(0);
        let child = c
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        Daemon { child, what }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn signal(&self, sig: nix::sys::signal::Signal) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid()), sig);
    }

    /// Wait for the process to exit (with a deadline) and return its status.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(st)) = self.child.try_wait() {
                return Some(st);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let pg = nix::unistd::Pid::from_raw(-self.pid());
        let _ = nix::sys::signal::kill(pg, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Poll `f` every few ms until it returns Some, or panic with `what` after `timeout`.
pub fn wait_until<T>(timeout: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        if Instant::now() > deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Run to completion, with stdin closed.
pub fn run(mut c: Command) -> Output {
    c.stdin(Stdio::null());
    c.output()
        .unwrap_or_else(|e| panic!("cannot run {c:?}: {e}"))
}

/// Output fields as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Assert an exit code, printing the command's output on failure.
#[track_caller]
pub fn assert_code(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    );
}

/// Convenience: a tend binary with args, run to completion.
pub fn tend<I, S>(name: &str, args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut c = cmd(name);
    c.args(args);
    run(c)
}

/// How long a test waits for a state before it fails.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// A run script that stays up and does nothing.
pub const SLEEPER: &str = "#!/bin/sh\nexec sleep 1000\n";

/// A service directory, written file by file: `ServiceDir::new(s.join("sv")).run(SLEEPER)
/// .finish(..).notification_fd(3).down().path()`.
pub struct ServiceDir {
    dir: PathBuf,
}

impl ServiceDir {
    /// Create the directory (and its parents).
    pub fn new(dir: impl Into<PathBuf>) -> ServiceDir {
        let dir = dir.into();
        std::fs::create_dir_all(&dir).unwrap();
        ServiceDir { dir }
    }

    /// An executable `run`.
    pub fn run(self, script: &str) -> ServiceDir {
        self.script("run", script)
    }

    /// An executable `finish`.
    pub fn finish(self, script: &str) -> ServiceDir {
        self.script("finish", script)
    }

    /// `notification-fd` holding `fd`.
    pub fn notification_fd(self, fd: u32) -> ServiceDir {
        self.file("notification-fd", &format!("{fd}\n"))
    }

    /// An empty `down`.
    pub fn down(self) -> ServiceDir {
        self.file("down", "")
    }

    /// Any other file (a setting such as `timeout-finish`).
    pub fn file(self, name: &str, contents: &str) -> ServiceDir {
        let p = self.dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, contents).unwrap();
        self
    }

    /// Any other executable file (`log/run`, `data/check`).
    pub fn script(self, name: &str, body: &str) -> ServiceDir {
        use std::os::unix::fs::PermissionsExt;
        let dir = self.file(name, body);
        std::fs::set_permissions(dir.dir.join(name), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        dir
    }

    pub fn path(self) -> PathBuf {
        self.dir
    }
}

/// The status record on disk.
pub fn status(dir: &Path) -> StatusRecord {
    StatusRecord::read(dir).expect("status readable")
}

/// Whether a supervisor holds the service's lock.
pub fn running(dir: &Path) -> bool {
    tend_proto::lock::is_held(&dir.join("supervise/lock")).unwrap_or(false)
}

/// Wait until the status record satisfies `f`.
#[track_caller]
pub fn wait_status(dir: &Path, what: &str, f: impl Fn(&StatusRecord) -> bool) -> StatusRecord {
    wait_until(PATIENCE, what, || {
        StatusRecord::read(dir).ok().filter(|r| f(r))
    })
}

pub fn is_up(r: &StatusRecord) -> bool {
    r.pid != 0 && !r.finishing
}

/// The parent pid of a live process.
pub fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')')
        .next()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// A supervisor (s6-supervise or tend-supervise) on one service directory. Dropping it
/// asks the supervisor to take the service down and exit, then kills what is left.
pub struct Supervised {
    pub dir: PathBuf,
    daemon: Option<Daemon>,
}

impl Supervised {
    pub fn start(supervisor: &str, dir: &Path) -> Supervised {
        if supervisor.starts_with("s6-") {
            require(supervisor);
        }
        let stderr = std::fs::File::create(dir.with_extension("stderr")).unwrap();
        let mut c = cmd(supervisor);
        c.arg(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        let mut daemon = Daemon::start(c);
        let deadline = Instant::now() + PATIENCE;
        loop {
            if running(dir) && StatusRecord::read(dir).is_ok() && dir.join("event").is_dir() {
                break;
            }
            if let Ok(Some(st)) = daemon.child.try_wait() {
                panic!(
                    "{supervisor} {} exited at start ({st}): {}",
                    dir.display(),
                    std::fs::read_to_string(dir.with_extension("stderr")).unwrap_or_default()
                );
            }
            assert!(
                Instant::now() < deadline,
                "{supervisor} never started on {}",
                dir.display()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        Supervised {
            dir: dir.to_path_buf(),
            daemon: Some(daemon),
        }
    }

    /// Wait for the supervisor process to exit by itself.
    pub fn wait_exit(&mut self) -> std::process::ExitStatus {
        self.daemon
            .as_mut()
            .unwrap()
            .wait_exit(PATIENCE)
            .expect("supervisor exits")
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        let Some(mut d) = self.daemon.take() else {
            return;
        };
        // The service runs in its own session; remember it only if it really is this
        // supervisor's child (a crafted status may name any pid).
        let service = StatusRecord::read(&self.dir)
            .ok()
            .map(|r| r.pid as i32)
            .filter(|&pid| pid > 0 && parent_of(pid) == Some(d.pid()));
        if d.child.try_wait().ok().flatten().is_none() {
            let _ = tend_proto::control::send(&self.dir.join("supervise/control"), b"dx");
            let _ = d.wait_exit(Duration::from_secs(3));
        }
        if let Some(pid) = service {
            let pid = nix::unistd::Pid::from_raw(pid);
            let _ = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGKILL);
        }
        drop(d);
    }
}

impl Supervised {
    /// What the supervisor (and its services, which inherit it) wrote on stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.with_extension("stderr")).unwrap_or_default()
    }

    /// The supervisor process, to signal it or wait for it.
    pub fn daemon(&mut self) -> &mut Daemon {
        self.daemon.as_mut().unwrap()
    }

    pub fn status(&self) -> StatusRecord {
        status(&self.dir)
    }

    #[track_caller]
    pub fn wait_status(&self, what: &str, f: impl Fn(&StatusRecord) -> bool) -> StatusRecord {
        wait_status(&self.dir, what, f)
    }

    #[track_caller]
    pub fn wait_up(&self) -> StatusRecord {
        self.wait_status("service up", is_up)
    }

    /// Write control letters (any supervisor's, by the protocol, not a client).
    pub fn send(&self, letters: &str) {
        tend_proto::control::send(&self.dir.join("supervise/control"), letters.as_bytes()).unwrap();
    }

    /// Take the service down and make the supervisor exit; fail if it does not.
    pub fn stop(mut self) {
        self.send("dx");
        let exited = self.daemon.as_mut().unwrap().wait_exit(PATIENCE);
        assert!(
            exited.is_some(),
            "supervisor on {} did not exit after -dx",
            self.dir.display()
        );
    }
}
