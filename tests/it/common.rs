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

/// Programs built as executables of their own, outside the multi-call `tend` (Cargo.toml
/// says why for each).
pub const STANDALONE: &[&str] = &["tend-jobs"];

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
        for name in STANDALONE {
            let built = Path::new(env!("CARGO_BIN_EXE_tend-jobs")).with_file_name(name);
            let tmp = dir.join(format!(".{name}.{}", std::process::id()));
            let _ = std::fs::remove_file(&tmp);
            std::fs::hard_link(&built, &tmp)
                .or_else(|_| std::os::unix::fs::symlink(&built, &tmp))
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
