//! Shared test support: scratch directories that survive failures, running the built
//! binaries, daemons that are always killed, and polling instead of sleeping.

#![allow(dead_code)]

use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tend_proto::StatusRecord;
use tend_proto::fifodir::{Subscription, make_fifodir};

/// Programs built as executables of their own, outside the multi-call `tend` (Cargo.toml
/// says why for each).
pub const STANDALONE: &[&str] = &["tend-jobs", "tend-monit", "tend-jail"];

/// Every executable the build makes and packaging/install.sh installs: the two multi-call
/// ones and the standalone ones.
pub const EXECUTABLES: &[&str] = &["tend", "tend-tree", "tend-jobs", "tend-monit", "tend-jail"];

/// The built multi-call executable.
pub fn multicall() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_tend"))
}

/// The built small multi-call executable: what a running supervision tree runs.
pub fn tree_multicall() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_tend-tree"))
}

/// The program names `tend-tree -l` prints (each also in `tend -l`).
pub fn tree_programs() -> Vec<String> {
    let o = Command::new(tree_multicall()).arg("-l").output().unwrap();
    assert!(o.status.success(), "tend-tree -l: {o:?}");
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The directory holding the tend programs as they ship: one hard link per program name to
/// the multi-call `tend`, or to `tend-tree` for the programs it holds (what
/// packaging/install.sh makes), made once per test process.
pub fn bindir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        // Services trap HUP, INT and QUIT as a login shell's children may. Started in
        // the background (INT and QUIT ignored) or under nohup (HUP), this process would
        // pass them on ignored, and a shell cannot trap a signal ignored at its start
        // (POSIX): every program run here gets the dispositions a terminal gives.
        use nix::sys::signal::Signal;
        for sig in [Signal::SIGHUP, Signal::SIGINT, Signal::SIGQUIT] {
            tend_sys::signals::default(sig).unwrap();
        }
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bin");
        std::fs::create_dir_all(&dir).unwrap();
        let o = Command::new(multicall()).arg("-l").output().unwrap();
        assert!(o.status.success(), "tend -l: {o:?}");
        let names = String::from_utf8(o.stdout).unwrap();
        // Link under a private name, then rename over the old link: concurrent test
        // processes and stale links from an earlier build never see a missing file.
        let link = |target: &Path, name: &str| {
            let tmp = dir.join(format!(".{name}.{}", std::process::id()));
            let _ = std::fs::remove_file(&tmp);
            std::fs::hard_link(target, &tmp)
                .or_else(|_| std::os::unix::fs::symlink(target, &tmp))
                .unwrap();
            std::fs::rename(&tmp, dir.join(name)).unwrap();
        };
        let tree = tree_programs();
        for name in std::iter::once("tend").chain(names.lines()) {
            if tree.iter().any(|t| t == name) {
                link(tree_multicall(), name);
            } else {
                link(multicall(), name);
            }
        }
        link(tree_multicall(), "tend-tree");
        // Standalone executables are built beside the multi-call one.
        let built = Path::new(env!("CARGO_BIN_EXE_tend-jobs")).parent().unwrap();
        for name in STANDALONE {
            link(&built.join(name), name);
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

/// How long a scanner tree (`Fleet`) gets to reach a state.
pub const FLEET_PATIENCE: Duration = Duration::from_secs(20);

/// One family of clients.
#[derive(Clone, Copy, Debug)]
pub struct Clients {
    pub svc: &'static str,
    pub svstat: &'static str,
    pub svwait: &'static str,
    pub svok: &'static str,
}

pub const S6: Clients = Clients {
    svc: "s6-svc",
    svstat: "s6-svstat",
    svwait: "s6-svwait",
    svok: "s6-svok",
};

pub const TEND: Clients = Clients {
    svc: "tend-svc",
    svstat: "tend-svstat",
    svwait: "tend-svwait",
    svok: "tend-svok",
};

/// Run a client (tend's or s6's) with arguments.
pub fn client(prog: &str, args: &[&str], dir: &Path) -> Output {
    let mut c = cmd(prog);
    for a in args {
        c.arg(a);
    }
    c.arg(dir);
    run(c)
}

/// A client's stderr with the program name made neutral and s6 2.11's doubled
/// "fatal: : " (a skalibs quirk tend does not copy) made single.
pub fn neutral(o: &Output) -> String {
    neutral_text(&text(&o.stderr))
}

/// `neutral` on text.
pub fn neutral_text(stderr: &str) -> String {
    // tend-svstat's usage adds -j; tend-svc's, -svstat's and -svwait's a scandir option
    let mut s = stderr
        .replace("fatal: : ", "fatal: ")
        .replace(" | -j ]", " ]")
        .replace(" [ -s scandir ]", "")
        .replace(" [ -S scandir ]", "");
    for (t, n) in [
        ("tend-svc", "s6-svc"),
        ("tend-svstat", "s6-svstat"),
        ("tend-svwait", "s6-svwait"),
        ("tend-svok", "s6-svok"),
    ] {
        s = s.replace(t, n);
    }
    s
}

/// Event bytes seen by our own subscription to a service's `event/`.
pub struct Events {
    sub: Subscription,
    pub seen: Vec<u8>,
}

impl Events {
    /// Subscribe (creating `event/` as s6 does if it is missing).
    pub fn subscribe(dir: &Path) -> Events {
        let ev = dir.join("event");
        let _ = make_fifodir(&ev, nix::unistd::getegid());
        Events {
            sub: Subscription::new(&ev).expect("subscribe"),
            seen: Vec::new(),
        }
    }

    fn drain(&mut self) {
        let mut buf = [0u8; 64];
        while let Ok(n) = self.sub.read(&mut buf) {
            if n == 0 {
                break;
            }
            self.seen.extend_from_slice(&buf[..n]);
        }
    }

    /// Wait until the events seen so far end with `tail`.
    #[track_caller]
    pub fn wait_for(&mut self, tail: &str) {
        let what = format!("events ending in {tail:?}");
        wait_until(PATIENCE, &what, || {
            self.drain();
            self.seen.ends_with(tail.as_bytes()).then_some(())
        });
    }

    /// Everything seen so far, as text.
    pub fn text(&mut self) -> String {
        self.drain();
        text(&self.seen)
    }
}

/// Run the same client call with s6's and tend's tools until two s6 runs around the
/// tend run agree (the seconds did not tick), then assert tend printed the same.
#[track_caller]
pub fn same_as_s6(prog: &str, args: &[&str], dir: &Path) -> Output {
    let tend_prog = prog.replacen("s6-", "tend-", 1);
    for _ in 0..20 {
        let a = client(prog, args, dir);
        let t = client(&tend_prog, args, dir);
        let b = client(prog, args, dir);
        if a.stdout == b.stdout && a.stderr == b.stderr && a.status == b.status {
            assert_eq!(
                (text(&t.stdout), neutral(&t), t.status.code()),
                (text(&a.stdout), neutral(&a), a.status.code()),
                "{tend_prog} {args:?} {} differs from {prog}",
                dir.display()
            );
            return t;
        }
    }
    panic!("{prog} {args:?} never gave the same answer twice");
}

pub const ALL_FIELDS: &str = "up,wantedup,normallyup,ready,paused,pid,exitcode,signal,signum,updownsince,readysince,updownfor,readyfor";

/// All but `updownsince`, which is "now" (to the nanosecond) for a stamp in the future.
pub const STABLE_FIELDS: &str =
    "up,wantedup,normallyup,ready,paused,pid,exitcode,signal,signum,readysince,updownfor,readyfor";

/// Every svstat format: legacy, -n, all fields, the short flags, and prefixes.
pub fn svstat_same_as_s6(dir: &Path) {
    for args in [
        &[][..],
        &["-n"][..],
        &["-o", ALL_FIELDS][..],
        &["-uwNrpest"][..],
        &["-o", "r,p,s,upd,readys,e,n,w"][..],
        &["-n", "-o", "signum,signal"][..],
    ] {
        same_as_s6("s6-svstat", args, dir);
    }
}

/// Every signal letter sent with `svc` reaches the service run by `supervisor`; p and c
/// stop and continue it; k kills it and it comes back.
pub fn signal_letters(supervisor: &str, svc: &str) {
    let s = Scratch::new("cl-signals");
    let run = "#!/bin/sh\nfor s in ALRM ABRT QUIT HUP TERM INT USR1 USR2 WINCH; do trap \"echo $s >> sigs\" $s; done\n: > started\nwhile :; do sleep 1 & wait $!; done\n";
    let dir = ServiceDir::new(s.join("sv")).run(run).path();
    let _sup = Supervised::start(supervisor, &dir);
    wait_until(PATIENCE, "run started", || {
        dir.join("started").exists().then_some(())
    });
    for (letter, name) in [
        ("a", "ALRM"),
        ("b", "ABRT"),
        ("q", "QUIT"),
        ("h", "HUP"),
        ("t", "TERM"),
        ("i", "INT"),
        ("1", "USR1"),
        ("2", "USR2"),
        ("y", "WINCH"),
    ] {
        let o = client(svc, &[&format!("-{letter}")], &dir);
        assert_code(&o, 0);
        assert!(o.stderr.is_empty());
        wait_until(PATIENCE, name, || {
            lines(&dir.join("sigs"))
                .iter()
                .any(|l| l == name)
                .then_some(())
        });
    }
    let pid = status(&dir).pid;
    assert_code(&client(svc, &["-p"], &dir), 0);
    wait_status(&dir, "paused", |r| r.paused);
    wait_until(PATIENCE, "stopped", || {
        (proc_state(pid) == 'T').then_some(())
    });
    assert_eq!(
        text(&client("tend-svstat", &["-o", "paused"], &dir).stdout),
        "true\n"
    );
    assert_code(&client(svc, &["-c"], &dir), 0);
    wait_status(&dir, "continued", |r| !r.paused);
    wait_until(PATIENCE, "running", || {
        (proc_state(pid) != 'T').then_some(())
    });
    let mut ev = Events::subscribe(&dir);
    assert_code(&client(svc, &["-k"], &dir), 0);
    ev.wait_for("dDu");
    let r = wait_status(&dir, "restarted", |r| is_up(r) && r.pid != pid);
    assert_eq!(r.wstat, 9, "killed by SIGKILL");
    assert_eq!(status(&dir).pid, r.pid);
}

/// A tend-svscan on `root/sd`; on drop it is stopped and every process whose cwd is
/// under `root` (services, listeners, probers) is killed.
pub struct Fleet {
    pub daemon: Option<Daemon>,
    pub root: PathBuf,
    pub dir: PathBuf,
}

impl Fleet {
    pub fn start(s: &Scratch) -> Fleet {
        let dir = s.join("sd");
        std::fs::create_dir_all(&dir).unwrap();
        let mut c = cmd("tend-svscan");
        c.arg(&dir)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(s.join("scanner.out")).unwrap())
            .stderr(std::fs::File::create(s.join("scanner.err")).unwrap());
        let f = Fleet {
            daemon: Some(Daemon::start(c)),
            root: s.path.clone(),
            dir,
        };
        wait_until(FLEET_PATIENCE, "the scanner", || {
            tend_proto::lock::is_held(&f.dir.join(".s6-svscan/lock"))
                .ok()
                .filter(|&b| b && f.dir.join(".s6-svscan/control").exists())
        });
        f
    }

    pub fn svc(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Wait until the service's supervisor runs.
    pub fn wait_supervised(&self, name: &str) {
        let lock = self.svc(name).join("supervise/lock");
        let status = self.svc(name).join("supervise/status");
        wait_until(FLEET_PATIENCE, &format!("a supervisor on {name}"), || {
            tend_proto::lock::is_held(&lock)
                .ok()
                .filter(|&b| b && status.exists())
        });
    }

    pub fn status(&self, name: &str) -> Option<tend_proto::StatusRecord> {
        tend_proto::StatusRecord::read(&self.svc(name)).ok()
    }

    /// `tend-svscanctl -a`, retried until the scanner listens (it opens its FIFO after
    /// taking the lock).
    pub fn rescan(&self) {
        wait_until(FLEET_PATIENCE, "the scanner to take a rescan", || {
            tend("tend-svscanctl", ["-a", self.dir.to_str().unwrap()])
                .status
                .success()
                .then_some(())
        });
    }

    pub fn scanner_stderr(&self) -> String {
        std::fs::read_to_string(self.root.join("scanner.err")).unwrap_or_default()
    }

    pub fn summary(&self, args: &[&str]) -> Output {
        let mut c = cmd("tend-summary");
        c.args(args).arg(&self.dir);
        run(c)
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        if let Some(mut d) = self.daemon.take() {
            d.signal(nix::sys::signal::Signal::SIGTERM);
            let _ = d.wait_exit(Duration::from_secs(5));
        }
        kill_under(&self.root);
    }
}

/// Pids of processes whose cwd is under `root`.
pub fn procs_under(root: &Path) -> Vec<i32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Ok(cwd) = std::fs::read_link(e.path().join("cwd"))
            && cwd.starts_with(root)
        {
            let zombie = std::fs::read_to_string(e.path().join("stat"))
                .map(|s| s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z')))
                .unwrap_or(true);
            if !zombie {
                v.push(pid);
            }
        }
    }
    v
}

/// Kills every process under a directory when dropped (also when a test panics).
pub struct KillUnder(pub PathBuf);

impl Drop for KillUnder {
    fn drop(&mut self) {
        kill_under(&self.0);
    }
}

pub fn kill_under(root: &Path) {
    for _ in 0..5 {
        let v = procs_under(root);
        if v.is_empty() {
            return;
        }
        for pid in v {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Parse Prometheus text with prometheus_client (pip install prometheus_client; CI does)
/// and check every sample has a service label.
pub fn prometheus_parses(exposition: &str) {
    require("python3");
    let script = r#"
import sys
from prometheus_client.parser import text_string_to_metric_families
n = 0
for fam in text_string_to_metric_families(sys.stdin.read()):
    assert fam.type == "gauge", fam
    for s in fam.samples:
        assert "service" in s.labels, s
        n += 1
print(n)
"#;
    let mut c = Command::new("python3");
    c.args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(exposition.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "prometheus_client refused the exposition (pip install prometheus_client):\n{}\n{}",
        text(&o.stderr),
        exposition
    );
    let n: usize = text(&o.stdout).trim().parse().unwrap();
    assert!(n > 0, "no samples parsed");
}

/// The [[bin]] names of the root package.
pub fn binaries() -> Vec<String> {
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    let mut names = Vec::new();
    let mut in_bin = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_bin = line == "[[bin]]";
        } else if in_bin && let Some(v) = line.strip_prefix("name = ") {
            names.push(v.trim_matches('"').to_string());
        }
    }
    assert!(names.len() >= 19, "{names:?}");
    names
}

pub fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

pub fn proc_state(pid: u64) -> char {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit(')')
        .next()
        .and_then(|s| s.trim().chars().next())
        .unwrap_or('?')
}

/// s6-svstat's and tend-svstat's lines for `dir`, taken between two s6-svstat runs that
/// agree (the seconds did not tick in between).
pub fn svstat_in_a_stable_second(dir: &Path) -> (String, String) {
    wait_until(PATIENCE, "a stable second", || {
        let a = text(&client("s6-svstat", &[], dir).stdout);
        let t = text(&client("tend-svstat", &[], dir).stdout);
        let b = text(&client("s6-svstat", &[], dir).stdout);
        (a == b).then_some((a, t))
    })
}

/// An HTTP server in Python: `server.py PORT [DELAY]` sleeps DELAY seconds, binds, writes
/// `bound`, then answers every GET with the status in `./code` (200 if absent), body
/// `ok` for 200.
pub const SERVER: &str = r#"
import http.server, sys, time
port = int(sys.argv[1])
time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 0)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        try:
            code = int(open("code").read())
        except Exception:
            code = 200
        body = b"ok\n" if code == 200 else b"failing\n"
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        if 300 <= code < 400:
            self.send_header("Location", "/elsewhere")
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", port), H)
open("bound", "w").close()
s.serve_forever()
"#;

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// xorshift64*: a small seedable PRNG for the random tests (argument fuzz, random
/// tend-log scripts), so a failure can be replayed from its printed seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// An index below `n`.
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.index(v.len())]
    }
}

/// Watch `f` for `d` (every few ms) and panic with `what` the first time it is false: the
/// "nothing happens" check (no restart, no second attempt, still up), written once instead
/// of a fixed sleep followed by one look.
#[track_caller]
pub fn stays_for(d: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let until = Instant::now() + d;
    loop {
        assert!(f(), "{what}: no longer true before {d:?} passed");
        if Instant::now() >= until {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The environment variable that makes a skip a failure (set by `.ci/run`, which
/// installs everything the tests need).
pub const REQUIRE_ALL: &str = "TEND_TEST_REQUIRE_ALL";

/// Say that a test cannot run here and why (`skipped: reason` on stderr); the caller then
/// returns. With `TEND_TEST_REQUIRE_ALL=1` it fails instead, so CI cannot pass by
/// skipping Docker, qemu or a Debian tool.
#[track_caller]
pub fn skip(reason: impl std::fmt::Display) {
    if std::env::var_os(REQUIRE_ALL).is_some_and(|v| v == "1") {
        panic!("skipped: {reason} ({REQUIRE_ALL}=1: a skip is a failure)");
    }
    eprintln!("skipped: {reason}");
}

/// The most common shape of a supervision test: a service directory `sv` in a scratch
/// directory, its supervisor running, and the handle to wait on it. Dropping it stops the
/// supervisor, then removes the scratch directory (kept if the test panicked).
pub struct Case {
    pub sup: Supervised,
    pub dir: PathBuf,
    pub scratch: Scratch,
}

impl Case {
    /// `tend-supervise` on `sv` with this run script (more files through [`Case::with`]).
    pub fn run(name: &str, run: &str) -> Case {
        Case::with(name, |d| d.run(run))
    }

    /// `tend-supervise` on a service directory built by `build`.
    pub fn with(name: &str, build: impl FnOnce(ServiceDir) -> ServiceDir) -> Case {
        Case::on("tend-supervise", name, build)
    }

    /// `supervisor` (tend-supervise or s6-supervise) on a service directory built by `build`.
    pub fn on(supervisor: &str, name: &str, build: impl FnOnce(ServiceDir) -> ServiceDir) -> Case {
        Case::prepared(supervisor, name, build, |_| ()).0
    }

    /// Like [`Case::on`], doing `before` on the directory just before the supervisor
    /// starts (subscribe to its events, plant a FIFO or a symlink), and returning what it
    /// returns.
    pub fn prepared<T>(
        supervisor: &str,
        name: &str,
        build: impl FnOnce(ServiceDir) -> ServiceDir,
        before: impl FnOnce(&Path) -> T,
    ) -> (Case, T) {
        let scratch = Scratch::new(name);
        let dir = build(ServiceDir::new(scratch.join("sv"))).path();
        let t = before(&dir);
        let sup = Supervised::start(supervisor, &dir);
        (Case { sup, dir, scratch }, t)
    }

    /// A file of the service directory, as text ("" if missing).
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.dir.join(rel)).unwrap_or_default()
    }
}

impl std::ops::Deref for Case {
    type Target = Supervised;
    fn deref(&self) -> &Supervised {
        &self.sup
    }
}

impl std::ops::DerefMut for Case {
    fn deref_mut(&mut self) -> &mut Supervised {
        &mut self.sup
    }
}

/// Remove a Docker image once this test process has exited (images are built once per
/// process and shared by its tests, so no test's end is the right time): a detached
/// `sh` waits for our pid to go, then runs `docker rmi -f`.
pub fn remove_image_at_exit(tag: &str) {
    let script = "tail --pid=\"$1\" -f /dev/null; exec docker rmi -f \"$2\"";
    let _ = Command::new("sh")
        .args(["-c", script, "sh", &std::process::id().to_string(), tag])
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
}

/// A directory under CARGO_TARGET_TMPDIR of this test process's own, made once and
/// shared by its tests, removed once the process has exited (as `remove_image_at_exit`).
/// A fixed name would be rebuilt under the feet of another test process running the same
/// tests (the flake sweep's parallel loops: `rm: ... Directory not empty`).
pub fn process_dir(name: &str) -> PathBuf {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-p{}", std::process::id()));
    let script = "tail --pid=\"$1\" -f /dev/null; exec rm -rf \"$2\"";
    let _ = Command::new("sh")
        .args(["-c", script, "sh", &std::process::id().to_string()])
        .arg(&dir)
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
    dir
}

/// Host mounts a test leaves (bpm's shared mount points made by tend-jail, mounts made
/// across them), detached on drop, last first, each as often as it is stacked.
pub struct Unmount(pub Vec<PathBuf>);

impl Drop for Unmount {
    fn drop(&mut self) {
        for p in self.0.iter().rev() {
            while Command::new("umount")
                .arg("-l")
                .arg(p)
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
            {}
        }
    }
}

/// Whether a Docker engine answers here (`docker info`).
pub fn docker_ok() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        Command::new("docker")
            .arg("info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

pub fn docker_out(args: &[&str]) -> Output {
    let mut c = Command::new("docker");
    c.args(args);
    run(c)
}

/// $1: the file list to write, $2: where to put a dpkg database ("" for none), then the
/// packages. Lists the files of those installed packages and of what they depend on
/// (recommends left out) relative to /, merged-/usr spelled out; the database holds their
/// status records and info files, so dpkg in the root knows them (and can remove them).
const HOST_ROOT: &str = r#"set -eu
out=$1 db=$2
shift 2
apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
    --no-replaces --no-enhances "$@" 2>/dev/null | grep '^[a-z0-9]' | sort -u |
while read -r p; do dpkg -s "$p" >/dev/null 2>&1 && echo "$p"; done >"$out.pkgs"
while read -r p; do dpkg -L "$p"; done <"$out.pkgs" | sort -u |
while read -r f; do
    if [ -f "$f" ] || [ -L "$f" ]; then echo "${f#/}"; fi
done | sed -E 's,^(bin|sbin|lib|lib64)/,usr/\1/,' |
    grep -vxE 'bin|sbin|lib|lib64|etc/passwd|etc/group|etc/machine-id' | sort -u >"$out"
[ -n "$db" ] || exit 0
mkdir -p "$db/info" "$db/updates" "$db/triggers"
: >"$db/available"
while read -r p; do dpkg-query -s "$p"; echo; done <"$out.pkgs" >"$db/status"
while read -r p; do
    for f in "/var/lib/dpkg/info/$p".* "/var/lib/dpkg/info/$p":*.*; do
        if [ -e "$f" ]; then cp -p "$f" "$db/info/"; fi
    done
done <"$out.pkgs"
"#;

/// A Debian root built from this host's installed packages (`pkgs` and their
/// dependencies), with `extra` (a directory tree the caller filled) laid over it, imported
/// as the Docker image `tag` (removed when the test process exits). With `dpkg_db`, the
/// root's dpkg database knows those packages. Needs apt-cache and dpkg on the host: there
/// is no Debian image or registry here to start from.
pub fn host_debian_image(
    dir: &Path,
    pkgs: &[&str],
    dpkg_db: bool,
    extra: &Path,
    tag: &str,
    changes: &[&str],
) {
    let list = dir.join("files");
    let db = extra.join("var/lib/dpkg");
    let mut c = Command::new("sh");
    c.args(["-c", HOST_ROOT, "sh"])
        .arg(&list)
        .arg(if dpkg_db {
            db.as_os_str()
        } else {
            OsStr::new("")
        })
        .args(pkgs);
    assert_code(&run(c), 0);
    for (l, t) in [
        ("bin", "usr/bin"),
        ("sbin", "usr/sbin"),
        ("lib", "usr/lib"),
        ("lib64", "usr/lib64"),
    ] {
        std::os::unix::fs::symlink(t, extra.join(l)).unwrap();
    }
    let tar = dir.join("root.tar");
    let mut c = Command::new("tar");
    c.args(["-C", "/", "--no-recursion", "-cf"])
        .arg(&tar)
        .arg("-T")
        .arg(&list);
    assert_code(&run(c), 0);
    let mut c = Command::new("tar");
    c.arg("-C").arg(extra).arg("-rf").arg(&tar).arg(".");
    assert_code(&run(c), 0);
    let mut v = vec!["import"];
    for ch in changes {
        v.extend(["--change", ch]);
    }
    v.extend([tar.to_str().unwrap(), tag]);
    assert_code(&docker_out(&v), 0);
    remove_image_at_exit(tag);
}

/// A running container, removed (killed first) with its anonymous volumes on drop.
pub struct Container(pub String);

impl Container {
    pub fn exec(&self, args: &[&str]) -> Output {
        let mut v = vec!["exec", self.0.as_str()];
        v.extend_from_slice(args);
        docker_out(&v)
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = Command::new("docker")
            .args(["rm", "-f", "-v", &self.0])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}
