//! tend-svscan and tend-svscanctl against their specification (s6-svscan 2.11): scanning,
//! the supervision tree, log pipes, control letters, signals, PID 1 duties, and the
//! s6 clients in both directions.
//!
//! Not tested here: `.s6-svscan/crash` (it needs a system call such as poll or wait to
//! fail, which cannot be provoked from outside); fork failure of a supervisor (4 s retry:
//! RLIMIT_NPROC is not reliable as root); `-c` above 90000; an entry unreadable for lack
//! of permission (the tests run as root, so a symlink loop stands in for it).

use crate::common::*;
use nix::sys::signal::Signal;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tend_proto::StatusRecord;

const T: Duration = Duration::from_secs(10);

/// A scanner (tend-svscan or s6-svscan) on a scan directory, with its stderr in a file.
/// On drop it is asked to terminate; if it does not, its process group is killed, and so
/// is anything left whose cwd is inside the scratch directory (services run in sessions
/// of their own).
struct Tree {
    daemon: Option<Daemon>,
    root: PathBuf,
    dir: PathBuf,
    stderr: PathBuf,
}

impl Tree {
    fn start(s: &Scratch, prog: &str, args: &[&str]) -> Tree {
        Tree::start_with(s, prog, args, |_| {})
    }

    fn start_with(s: &Scratch, prog: &str, args: &[&str], f: impl FnOnce(&mut Command)) -> Tree {
        let dir = s.join("sd");
        std::fs::create_dir_all(&dir).unwrap();
        let mut c = cmd(prog);
        c.args(args).arg(&dir);
        f(&mut c);
        Tree::spawn(s, c, dir)
    }

    /// Run `tend-svscan ARGS sd` with fd `fd` opened on `file` (through sh: tests may not
    /// use unsafe pre_exec hooks).
    fn start_with_fd(s: &Scratch, args: &[&str], fd: u32, file: &Path) -> Tree {
        let dir = s.join("sd");
        std::fs::create_dir_all(&dir).unwrap();
        let mut c = cmd("sh");
        c.arg("-c")
            .arg(format!("exec \"$0\" \"$@\" {fd}>\"$TEND_TEST_FD_FILE\""))
            .arg(bin("tend-svscan"))
            .args(args)
            .arg(&dir)
            .env("TEND_TEST_FD_FILE", file);
        Tree::spawn(s, c, dir)
    }

    fn spawn(s: &Scratch, mut c: Command, dir: PathBuf) -> Tree {
        let stderr = s.join("scanner.stderr");
        c.stdin(Stdio::null());
        c.stdout(std::fs::File::create(s.join("scanner.stdout")).unwrap());
        c.stderr(std::fs::File::create(&stderr).unwrap());
        let t = Tree {
            daemon: Some(Daemon::start(c)),
            root: s.path.clone(),
            dir,
            stderr,
        };
        wait_until(T, "the scanner's control FIFO", || {
            tend_proto::lock::is_held(&t.dir.join(".s6-svscan/lock"))
                .ok()
                .filter(|&b| b)
        });
        t
    }

    fn pid(&self) -> i32 {
        self.daemon.as_ref().unwrap().pid()
    }

    fn svc(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    fn wait_stderr(&self, what: &str) {
        wait_until(T, &format!("{what:?} on the scanner's stderr"), || {
            self.stderr().contains(what).then_some(())
        });
    }

    fn ctl(&self, letters: &str) {
        let o = tend("tend-svscanctl", [letters, self.dir.to_str().unwrap()]);
        assert_code(&o, 0);
    }

    /// Wait for the scanner to exit and return its status.
    fn wait_exit(&mut self, timeout: Duration) -> std::process::ExitStatus {
        let d = self.daemon.as_mut().unwrap();
        d.wait_exit(timeout)
            .unwrap_or_else(|| panic!("the scanner did not exit within {timeout:?}"))
    }

    fn alive(&self) -> bool {
        Path::new(&format!("/proc/{}", self.pid())).exists() && !is_zombie(self.pid())
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        if let Some(mut d) = self.daemon.take() {
            if d.child.try_wait().ok().flatten().is_none() {
                d.signal(Signal::SIGTERM);
                let _ = d.wait_exit(Duration::from_secs(5));
            }
            drop(d);
        }
        kill_strays(&self.root);
    }
}

/// SIGKILL every process whose cwd lies under `root`.
fn kill_strays(root: &Path) {
    for _ in 0..3 {
        let mut found = false;
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            if let Ok(cwd) = std::fs::read_link(e.path().join("cwd"))
                && cwd.starts_with(root)
            {
                found = true;
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
            }
        }
        if !found {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn is_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit_once(") ")
                .map(|(_, r)| r.starts_with('Z'))
                .unwrap_or(false)
        })
        .unwrap_or(false)
}

/// Children of `pid` (zombies included).
fn children(pid: i32) -> Vec<i32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

fn cmdline(pid: i32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            String::from_utf8_lossy(&b)
                .replace('\0', " ")
                .trim()
                .to_string()
        })
        .unwrap_or_default()
}

/// Whether a supervisor holds `dir/supervise/lock`.
fn supervised(dir: &Path) -> bool {
    tend_proto::lock::is_held(&dir.join("supervise/lock")).unwrap_or(false)
}

fn wait_supervised(dir: &Path) {
    wait_until(T, &format!("a supervisor on {}", dir.display()), || {
        supervised(dir).then_some(())
    });
}

fn wait_unsupervised(dir: &Path) {
    wait_until(T, &format!("no supervisor on {}", dir.display()), || {
        (!supervised(dir)).then_some(())
    });
}

fn status(dir: &Path) -> Option<StatusRecord> {
    StatusRecord::read(dir).ok()
}

/// Wait until the service in `dir` is up and return its pid.
fn wait_up(dir: &Path) -> i32 {
    wait_until(T, &format!("{} up", dir.display()), || {
        status(dir).filter(|s| s.is_up()).map(|s| s.pid as i32)
    })
}

/// Whether `pid` has a handler for `sig` (SigCgt in /proc/PID/status).
fn catches(pid: i32, sig: Signal) -> bool {
    in_signal_mask(pid, "SigCgt:", sig)
}

fn blocks(pid: i32, sig: Signal) -> bool {
    in_signal_mask(pid, "SigBlk:", sig)
}

/// Whether `sig` is in the mask `field` (SigCgt, SigBlk, …) of /proc/PID/status.
fn in_signal_mask(pid: i32, field: &str, sig: Signal) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|t| {
            let l = t.lines().find(|l| l.starts_with(field))?;
            u64::from_str_radix(l[field.len()..].trim(), 16).ok()
        })
        .is_some_and(|mask| mask & (1u64 << (sig as i32 - 1)) != 0)
}

fn pid_alive(pid: i32) -> bool {
    pid > 0 && Path::new(&format!("/proc/{pid}")).exists() && !is_zombie(pid)
}

/// The supervisor (a child of `scanner`) whose command line ends with ` name`.
fn supervisor_of(scanner: i32, name: &str) -> Option<i32> {
    children(scanner)
        .into_iter()
        .find(|&p| cmdline(p).ends_with(&format!(" {name}")) && !is_zombie(p))
}

fn writable_script(p: &Path, body: &str) {
    std::fs::write(p, body).unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

// ---------------------------------------------------------------------------------------
// Usage and start-up errors.

#[test]
fn usage_errors_exit_100() {
    for args in [
        &["-x"][..],
        &["-c"],
        &["-c", "abc"],
        &["-t", "-5"],
        &["-d", "x"],
    ] {
        let o = tend("tend-svscan", args);
        assert_code(&o, 100);
        assert_eq!(
            text(&o.stderr),
            "tend-svscan: usage: tend-svscan [ -C services_max ] [ -L name_max ] [ -t timeout ] [ -d notif ] [ -X consoleholder ] [ -c max ] [ -S 35|43 ] [ scandir ]\n"
        );
    }
    for args in [&["-x", "d"][..], &[], &["-a"]] {
        let o = tend("tend-svscanctl", args);
        assert_code(&o, 100);
        assert_eq!(
            text(&o.stderr),
            "tend-svscanctl: usage: tend-svscanctl [ -zabhitqnN ] scandir\n"
        );
    }
}

#[test]
fn start_up_failures() {
    let s = Scratch::new("scan-startfail");
    let o = tend("tend-svscan", [s.join("nope")]);
    assert_code(&o, 111);
    assert_eq!(
        text(&o.stderr),
        format!(
            "tend-svscan: fatal: unable to chdir {}: No such file or directory\n",
            s.join("nope").display()
        )
    );
    let o = tend("tend-svscan", ["-d", "1", s.path.to_str().unwrap()]);
    assert_code(&o, 100);
    assert_eq!(
        text(&o.stderr),
        "tend-svscan: fatal: notification fd must be 3 or more\n"
    );
    let o = tend("tend-svscan", ["-d", "9", s.path.to_str().unwrap()]);
    assert_code(&o, 100);
    assert_eq!(
        text(&o.stderr),
        "tend-svscan: fatal: invalid notification fd 9: Bad file number\n"
    );
    let o = tend("tend-svscan", ["-X", "2", s.path.to_str().unwrap()]);
    assert_code(&o, 100);
    assert_eq!(
        text(&o.stderr),
        "tend-svscan: fatal: console holder fd must be 3 or more\n"
    );
    s.write("plain/.s6-svscan", "", false);
    let o = tend("tend-svscan", [s.join("plain")]);
    assert_code(&o, 100);
    assert_eq!(
        text(&o.stderr),
        "tend-svscan: fatal: .s6-svscan exists and is not a directory\n"
    );
    s.write("nofifo/.s6-svscan/control", "", false);
    let o = tend("tend-svscan", [s.join("nofifo")]);
    assert_code(&o, 100);
    assert_eq!(
        text(&o.stderr),
        "tend-svscan: fatal: .s6-svscan/control is not a FIFO\n"
    );
}

#[test]
fn svscanctl_without_a_scanner() {
    let s = Scratch::new("scan-ctlnone");
    let o = tend("tend-svscanctl", ["-a", s.join("nope").to_str().unwrap()]);
    assert_code(&o, 111);
    assert_eq!(
        text(&o.stderr),
        format!(
            "tend-svscanctl: fatal: unable to control {}: No such file or directory\n",
            s.join("nope").display()
        )
    );
    // No .s6-svscan, then a FIFO nobody reads: "not running" (100), as s6-svscanctl.
    for _ in 0..2 {
        let o = tend("tend-svscanctl", ["-a", s.path.to_str().unwrap()]);
        assert_code(&o, 100);
        assert_eq!(
            text(&o.stderr),
            format!(
                "tend-svscanctl: fatal: unable to control {}: scanner not listening\n",
                s.path.display()
            )
        );
        let o = run({
            let mut c = cmd("s6-svscanctl");
            c.args(["-a", s.path.to_str().unwrap()]);
            c
        });
        assert_code(&o, 100);
        std::fs::create_dir_all(s.join(".s6-svscan")).unwrap();
        nix::unistd::mkfifo(
            &s.join(".s6-svscan/control"),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .ok();
    }
}

// ---------------------------------------------------------------------------------------
// The control directory, the lock, readiness.

#[test]
fn lock_control_dir_and_readiness() {
    require("s6-svscan");
    let s = Scratch::new("scan-lock");
    let notified = s.join("notified");
    let tree = Tree::start_with_fd(&s, &["-d", "3"], 3, &notified);
    wait_until(T, "the readiness newline", || {
        std::fs::read(&notified).ok().filter(|b| b == b"\n")
    });
    // The notification fd is not passed on: the scanner closed it.
    let fds = std::fs::read_dir(format!("/proc/{}/fd", tree.pid())).unwrap();
    for fd in fds.flatten() {
        let target = std::fs::read_link(fd.path()).unwrap_or_default();
        assert_ne!(target, notified, "fd {:?} still open", fd.file_name());
    }
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let m = |p: &str| std::fs::metadata(tree.dir.join(p)).unwrap();
    assert!(m(".s6-svscan").is_dir());
    assert_eq!(m(".s6-svscan").mode() & 0o7777, 0o700);
    assert_eq!(m(".s6-svscan/lock").mode() & 0o7777, 0o600);
    assert!(m(".s6-svscan/control").file_type().is_fifo());
    assert_eq!(m(".s6-svscan/control").mode() & 0o7777, 0o600);

    let o = tend("tend-svscan", [&tree.dir]);
    assert_code(&o, 100);
    assert_eq!(
        text(&o.stderr),
        "tend-svscan: fatal: another instance of tend-svscan is already running on the same directory\n"
    );
    let o = run({
        let mut c = cmd("s6-svscan");
        c.arg(&tree.dir);
        c
    });
    assert_code(&o, 100);
    assert!(text(&o.stderr).contains("another instance"), "{o:?}");
    assert!(tree.alive());
}

#[test]
fn tend_svscan_refuses_a_dir_held_by_s6_svscan() {
    require("s6-svscan");
    let s = Scratch::new("scan-lock-s6");
    let tree = Tree::start(&s, "s6-svscan", &[]);
    let o = tend("tend-svscan", [&tree.dir]);
    assert_code(&o, 100);
    assert!(text(&o.stderr).contains("another instance"), "{o:?}");
}

// ---------------------------------------------------------------------------------------
// Scanning.

#[test]
fn thousand_services_come_up_and_a_rescan_starts_nothing() {
    let s = Scratch::new("scan-1000");
    let n = 1000;
    for i in 0..n {
        ServiceDir::new(s.join(format!("sd/s{i:04}")))
            .run(SLEEPER)
            .path();
    }
    let t0 = Instant::now();
    let tree = Tree::start(&s, "tend-svscan", &["-c", "2000"]);
    let dirs: Vec<PathBuf> = (0..n).map(|i| tree.svc(&format!("s{i:04}"))).collect();
    wait_until(Duration::from_secs(60), "1000 services supervised", || {
        dirs.iter().all(|d| supervised(d)).then_some(())
    });
    eprintln!("1000 supervised after {:?}", t0.elapsed());
    wait_until(Duration::from_secs(60), "1000 services up", || {
        dirs.iter()
            .all(|d| status(d).is_some_and(|st| st.is_up()))
            .then_some(())
    });
    let mut before = children(tree.pid());
    before.sort();
    assert_eq!(before.len(), n, "one supervisor per service");
    // A rescan with nothing changed, then one that finds one new directory: only that
    // one gets a supervisor (the letters are handled in order).
    tree.ctl("-a");
    let extra = ServiceDir::new(s.join("sd/zzz")).run(SLEEPER).path();
    tree.ctl("-a");
    wait_supervised(&extra);
    let mut after = children(tree.pid());
    after.sort();
    let new: Vec<i32> = after
        .iter()
        .copied()
        .filter(|p| before.binary_search(p).is_err())
        .collect();
    assert_eq!(new.len(), 1, "{new:?}");
    assert!(cmdline(new[0]).ends_with(" zzz"), "{}", cmdline(new[0]));
    assert_eq!(after.len(), n + 1);
    assert!(!tree.stderr().contains("warning"), "{}", tree.stderr());
}

#[test]
fn max_services_warns_and_the_rest_runs() {
    let s = Scratch::new("scan-max");
    ServiceDir::new(s.join("sd/a")).run(SLEEPER).path();
    ServiceDir::new(s.join("sd/b")).run(SLEEPER).path();
    s.write("sd/a/log/run", "#!/bin/sh\nexec cat >/dev/null\n", true);
    let tree = Tree::start(&s, "tend-svscan", &["-c", "2"]);
    // A logged pair counts once: a, a/log and b make two services.
    for n in ["a", "a/log", "b"] {
        wait_up(&tree.svc(n));
    }
    let c = ServiceDir::new(s.join("sd/c")).run(SLEEPER).path();
    tree.ctl("-a");
    tree.wait_stderr("tend-svscan: warning: unable to start supervisor for c: too many services\n");
    assert!(!supervised(&c));
    assert!(!c.join("supervise").exists());
    assert_eq!(children(tree.pid()).len(), 3);
}

#[test]
fn periodic_rescan_with_t() {
    let s = Scratch::new("scan-t");
    let _tree = Tree::start(&s, "tend-svscan", &["-t", "200"]);
    let d = ServiceDir::new(s.join("sd/late")).run(SLEEPER).path();
    wait_supervised(&d);
    wait_up(&d);
}

#[test]
fn bad_entries_warn_and_the_rest_keeps_running() {
    let s = Scratch::new("scan-bad");
    let good = ServiceDir::new(s.join("sd/good")).run(SLEEPER).path();
    s.write("sd/plainfile", "not a service\n", false);
    std::os::unix::fs::symlink("nowhere", s.join("sd/dangling")).unwrap();
    std::os::unix::fs::symlink("loop", s.join("sd/loop")).unwrap();
    std::fs::create_dir_all(s.join("sd/norun")).unwrap();
    std::fs::create_dir_all(s.join("sd/.hidden")).unwrap();
    writable_script(&s.join("sd/.hidden/run"), SLEEPER);
    let t0 = Instant::now();
    let tree = Tree::start(&s, "tend-svscan", &[]);
    wait_up(&good);
    tree.wait_stderr("tend-svscan: warning: unable to stat dangling: No such file or directory\n");
    tree.wait_stderr(
        "tend-svscan: warning: unable to stat loop: Too many symbolic links encountered\n",
    );
    // A service without run is supervised (its supervisor complains), dot names are not.
    wait_supervised(&tree.svc("norun"));
    assert!(!tree.svc(".hidden/supervise").exists());
    assert!(!tree.svc("plainfile").is_dir());
    // Garbage on the control FIFO: one warning per unknown byte, nothing else changes.
    tend_proto::control::send(&tree.dir.join(".s6-svscan/control"), b"x\n\xffz").unwrap();
    tree.wait_stderr("tend-svscan: warning: received unknown control command: x\n");
    tree.wait_stderr("tend-svscan: warning: received unknown control command: \\n\n");
    tree.wait_stderr("tend-svscan: warning: received unknown control command: \\xff\n");
    assert!(!tree.stderr().contains(": z\n"));
    // Still in charge: a new service is picked up, the first one never restarted.
    let pid = wait_up(&good);
    let later = ServiceDir::new(s.join("sd/later")).run(SLEEPER).path();
    tree.ctl("-a");
    wait_up(&later);
    assert_eq!(wait_up(&good), pid);
    assert!(tree.alive());
    // The failing entries are retried (s6: every 3 s), not spun on.
    let warnings = tree.stderr().matches("unable to stat dangling").count() as u64;
    let bound = t0.elapsed().as_secs() / 3 + 3;
    assert!(warnings <= bound, "{warnings} warnings: {}", tree.stderr());
}

// ---------------------------------------------------------------------------------------
// Supervisors dying, pruning.

#[test]
fn sigkilled_supervisor_is_replaced_after_a_second() {
    let s = Scratch::new("scan-sigkill");
    let d = ServiceDir::new(s.join("sd/a")).run(SLEEPER).path();
    let tree = Tree::start(&s, "tend-svscan", &[]);
    let run1 = wait_up(&d);
    let sup1 = supervisor_of(tree.pid(), "a").expect("supervisor of a");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(sup1), Signal::SIGKILL).unwrap();
    let t = Instant::now();
    let sup2 = wait_until(T, "a new supervisor", || {
        supervisor_of(tree.pid(), "a").filter(|&p| p != sup1)
    });
    let waited = t.elapsed();
    assert!(
        waited >= Duration::from_millis(800),
        "restarted after {waited:?}"
    );
    // The new supervisor owns the lock and a fresh run; the status file agrees.
    wait_supervised(&d);
    let run2 = wait_until(T, "a fresh run", || {
        status(&d)
            .filter(|s| s.is_up() && s.pid as i32 != run1)
            .map(|s| s.pid as i32)
    });
    assert!(pid_alive(run2));
    let ppid = std::fs::read_to_string(format!("/proc/{run2}/stat")).unwrap();
    let ppid: i32 = ppid
        .rsplit_once(") ")
        .unwrap()
        .1
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(ppid, sup2);
    // The orphaned first run is not ours any more; s6 leaves it too.
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(run1), Signal::SIGKILL);
}

#[test]
fn removed_services_are_pruned_by_an_and_others_untouched() {
    let s = Scratch::new("scan-prune");
    let a = ServiceDir::new(s.join("sd/a")).run(SLEEPER).path();
    let b = ServiceDir::new(s.join("sd/b")).run(SLEEPER).path();
    ServiceDir::new(s.join("sd/c"))
        .run("#!/bin/sh\ntrap 'echo last; exit 0' TERM\necho first\nwhile :; do sleep 0.05; done\n")
        .path();
    s.write(
        "sd/c/log/run",
        &format!("#!/bin/sh\nexec cat >>{}\n", s.join("c.log").display()),
        true,
    );
    let tree = Tree::start(&s, "tend-svscan", &[]);
    let run_a = wait_up(&a);
    let run_b = wait_up(&b);
    wait_up(&tree.svc("c"));
    wait_up(&tree.svc("c/log"));
    let sup_b = supervisor_of(tree.pid(), "b").unwrap();
    // Removed but not pruned: nothing happens (the supervisor is inactive, not killed).
    std::fs::create_dir_all(s.join("gone")).unwrap();
    std::fs::rename(&a, s.join("gone/a")).unwrap();
    std::fs::rename(tree.svc("c"), s.join("gone/c")).unwrap();
    tree.ctl("-a");
    tree.ctl("-z");
    stays_for(Duration::from_millis(300), "a's service alive", || {
        pid_alive(run_a)
    });
    // -an: the removed ones go down and their supervisors exit; b is untouched.
    tree.ctl("-an");
    wait_unsupervised(&s.join("gone/a"));
    wait_unsupervised(&s.join("gone/c"));
    wait_unsupervised(&s.join("gone/c/log"));
    wait_until(T, "a's run gone", || (!pid_alive(run_a)).then_some(()));
    assert_eq!(wait_up(&b), run_b);
    assert_eq!(supervisor_of(tree.pid(), "b"), Some(sup_b));
    // The logger drained to EOF: the service's last words are in the log.
    assert_eq!(
        std::fs::read_to_string(s.join("c.log")).unwrap(),
        "first\nlast\n"
    );
    wait_until(T, "only b's supervisor left", || {
        (children(tree.pid()) == vec![sup_b]).then_some(())
    });
}

#[test]
fn sighup_prunes_and_sigterm_brings_the_tree_down() {
    let s = Scratch::new("scan-hup");
    let a = ServiceDir::new(s.join("sd/a")).run(SLEEPER).path();
    let b = ServiceDir::new(s.join("sd/b")).run(SLEEPER).path();
    s.write(
        "sd/.s6-svscan/finish",
        &format!(
            "#!/bin/sh\necho finished \"$#\" >{}\nexit 3\n",
            s.join("finish.out").display()
        ),
        true,
    );
    let mut tree = Tree::start(&s, "tend-svscan", &[]);
    let run_a = wait_up(&a);
    let run_b = wait_up(&b);
    std::fs::rename(&a, s.join("a-gone")).unwrap();
    tree.daemon.as_ref().unwrap().signal(Signal::SIGHUP);
    wait_unsupervised(&s.join("a-gone"));
    wait_until(T, "a's run gone", || (!pid_alive(run_a)).then_some(()));
    assert!(pid_alive(run_b));
    tree.daemon.as_ref().unwrap().signal(Signal::SIGTERM);
    let st = tree.wait_exit(T);
    // finish ran with no arguments, and its exit code is the scanner's.
    assert_eq!(st.code(), Some(3));
    assert_eq!(
        std::fs::read_to_string(s.join("finish.out")).unwrap(),
        "finished 0\n"
    );
    assert!(!pid_alive(run_b));
    assert!(!supervised(&b));
}

#[test]
fn signals_are_diverted_to_scripts() {
    let s = Scratch::new("scan-divert");
    let a = ServiceDir::new(s.join("sd/a")).run(SLEEPER).path();
    for sig in ["SIGUSR1", "SIGTERM", "SIGHUP"] {
        s.write(
            &format!("sd/.s6-svscan/{sig}"),
            &format!(
                "#!/bin/sh\necho {sig} \"$#\" >>{}\n",
                s.join("signals.out").display()
            ),
            true,
        );
    }
    let mut tree = Tree::start(&s, "tend-svscan", &[]);
    let run_a = wait_up(&a);
    let d = tree.daemon.as_ref().unwrap();
    d.signal(Signal::SIGUSR1);
    wait_until(T, "SIGUSR1 script", || {
        std::fs::read_to_string(s.join("signals.out"))
            .ok()
            .filter(|t| t.contains("SIGUSR1 0"))
    });
    d.signal(Signal::SIGTERM);
    d.signal(Signal::SIGHUP);
    wait_until(T, "SIGTERM and SIGHUP scripts", || {
        std::fs::read_to_string(s.join("signals.out"))
            .ok()
            .filter(|t| t.contains("SIGTERM 0") && t.contains("SIGHUP 0"))
    });
    // The scripts replaced the defaults: nothing was brought down.
    assert!(tree.alive());
    assert_eq!(wait_up(&a), run_a);
    // SIGUSR2 has no script and no default: ignored. SIGQUIT has no script: quit.
    tree.daemon.as_ref().unwrap().signal(Signal::SIGUSR2);
    stays_for(Duration::from_millis(100), "the scanner alive", || {
        tree.alive()
    });
    tree.daemon.as_ref().unwrap().signal(Signal::SIGQUIT);
    let st = tree.wait_exit(T);
    assert_eq!(st.code(), Some(0));
    assert!(!pid_alive(run_a));
    // Every spawned script was reaped: no zombie was left behind for long.
    assert!(!tree.stderr().contains("warning"), "{}", tree.stderr());
}

/// A signal script that exists but cannot be exec'd is not taken for a missing one: the
/// scanner says why (the diagnosis tend-supervise uses) and carries on.
#[test]
fn a_broken_signal_script_is_diagnosed() {
    let s = Scratch::new("scan-crlf-script");
    let a = ServiceDir::new(s.join("sd/a")).run(SLEEPER).path();
    s.write("sd/.s6-svscan/SIGUSR1", "#!/bin/sh\r\nexit 0\r\n", true);
    let mut tree = Tree::start(&s, "tend-svscan", &[]);
    let run_a = wait_up(&a);
    tree.daemon.as_ref().unwrap().signal(Signal::SIGUSR1);
    tree.wait_stderr(
        "tend-svscan: warning: unable to spawn .s6-svscan/SIGUSR1: interpreter /bin/sh\\r not found (the file has CRLF line endings)\n",
    );
    assert!(tree.alive());
    assert_eq!(wait_up(&a), run_a);
    tree.daemon.as_ref().unwrap().signal(Signal::SIGQUIT);
    assert_eq!(tree.wait_exit(T).code(), Some(0));
}

#[test]
fn abort_execs_finish_without_waiting() {
    let s = Scratch::new("scan-abort");
    let a = ServiceDir::new(s.join("sd/a")).run(SLEEPER).path();
    let mut tree = Tree::start(&s, "tend-svscan", &[]);
    let run_a = wait_up(&a);
    tree.ctl("-b");
    let st = tree.wait_exit(T);
    assert_eq!(st.code(), Some(0));
    // Nothing was killed: the supervisor and its service live on, reparented.
    assert!(pid_alive(run_a));
    assert!(supervised(&a));
}

#[test]
fn console_holder_is_the_catch_all_loggers_stderr() {
    let s = Scratch::new("scan-console");
    ServiceDir::new(s.join("sd/s6-svscan-log"))
        .run("#!/bin/sh\necho to-console >&2\nexec sleep 1000\n")
        .path();
    ServiceDir::new(s.join("sd/other"))
        .run("#!/bin/sh\necho to-stderr >&2\nexec sleep 1000\n")
        .path();
    let console = s.join("console");
    let tree = Tree::start_with_fd(&s, &["-X", "4"], 4, &console);
    tree.wait_stderr("to-stderr\n");
    wait_until(T, "console output", || {
        std::fs::read_to_string(&console)
            .ok()
            .filter(|t| t == "to-console\n")
    });
    assert!(!tree.stderr().contains("to-console"));
}

// ---------------------------------------------------------------------------------------
// No line lost.

const PRODUCER: &str = r#"
import os, signal, sys
counter = sys.argv[1]
try:
    n = int(open(counter).read())
except Exception:
    n = 0
stop = False
def on_term(s, f):
    global stop
    stop = True
signal.signal(signal.SIGTERM, on_term)
while not stop:
    n += 1
    os.write(1, b"%d\n" % n)
with open(counter + ".tmp", "w") as f:
    f.write(str(n))
os.rename(counter + ".tmp", counter)
"#;

/// A line-safe logger: it reads only when no SIGTERM is pending, and writes everything it
/// read before it exits.
const LOGGER: &str = r#"
import os, select, signal, sys
out = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
r, w = os.pipe()
os.set_blocking(w, False)
signal.set_wakeup_fd(w)
signal.signal(signal.SIGTERM, lambda s, f: None)
while True:
    ready, _, _ = select.select([0, r], [], [])
    if r in ready:
        break
    b = os.read(0, 65536)
    if not b:
        break
    while b:
        b = b[os.write(out, b):]
"#;

#[test]
fn logger_and_service_restarted_fifty_times_lose_no_line() {
    let s = Scratch::new("scan-lossless");
    let logger = s.write("logger.py", LOGGER, false);
    let out = s.join("out");
    let run = format!(
        "#!/bin/sh\nexec python3 {} {}\n",
        logger.display(),
        out.display()
    );
    lossless_restarts(&s, &run, &out);
}

/// The same with tend-log as the logger (`1` copies each line to stdout, appended to out):
/// on SIGTERM it finishes the line it is reading and leaves the rest in the pipe.
#[test]
fn tend_log_restarted_fifty_times_loses_no_line() {
    let s = Scratch::new("scan-lossless-tendlog");
    let out = s.join("out");
    let run = format!("#!/bin/sh\nexec tend-log 1 >> {}\n", out.display());
    lossless_restarts(&s, &run, &out);
}

/// How long one restart of the pair may take: only a bound that turns a hang into a
/// failure. At a load of 300 to 480 (the flake sweep), both tests below once waited over
/// 10 s for the producer's restart, from s6-svc -t to its new SIGTERM handler.
const RESTART: Duration = Duration::from_secs(120);

fn lossless_restarts(s: &Scratch, logger_run: &str, out: &Path) {
    require("s6-svc");
    let prod = s.write("producer.py", PRODUCER, false);
    let counter = s.join("counter");
    ServiceDir::new(s.join("sd/p"))
        .run(&format!(
            "#!/bin/sh\nexec python3 {} {}\n",
            prod.display(),
            counter.display()
        ))
        .path();
    s.write("sd/p/log/run", logger_run, true);
    let mut tree = Tree::start(s, "tend-svscan", &[]);
    let p = tree.svc("p");
    let l = tree.svc("p/log");
    let svc = |letters: &str, d: &Path| {
        let mut c = cmd("s6-svc");
        c.arg(letters).arg(d);
        assert_code(&run(c), 0);
    };
    // "Up" is "spawned": wait until each one has its SIGTERM handler in place (or, for
    // tend-log, SIGTERM blocked for its signalfd).
    let ready =
        |pid: i32| (catches(pid, Signal::SIGTERM) || blocks(pid, Signal::SIGTERM)).then_some(pid);
    let mut pp = wait_until(RESTART, "producer ready", || ready(wait_up(&p)));
    let mut lp = wait_until(RESTART, "logger ready", || ready(wait_up(&l)));
    for i in 0..50 {
        // Let the producer fill the pipe a little, then restart both: the varied pauses
        // are the test's input (restarts at different fill levels), not a wait.
        std::thread::sleep(Duration::from_millis(20 + (i % 5) * 10));
        svc("-t", &l);
        std::thread::sleep(Duration::from_millis((i % 3) * 15));
        svc("-t", &p);
        let (op, ol) = (pp, lp);
        pp = wait_until(RESTART, "producer restarted", || {
            status(&p)
                .filter(|s| s.is_up() && s.pid as i32 != op)
                .and_then(|s| ready(s.pid as i32))
        });
        lp = wait_until(RESTART, "logger restarted", || {
            status(&l)
                .filter(|s| s.is_up() && s.pid as i32 != ol)
                .and_then(|s| ready(s.pid as i32))
        });
    }
    // A last stretch of output through the restarted pair before the count is closed.
    std::thread::sleep(Duration::from_millis(100));
    svc("-d", &p);
    wait_until(T, "producer down", || {
        status(&p)
            .filter(|s| !s.is_up() && counter.exists())
            .map(|_| ())
    });
    let last: u64 = wait_until(T, "final counter", || {
        std::fs::read_to_string(&counter).ok()?.trim().parse().ok()
    });
    // A clean shutdown lets the logger drain the pipe to EOF.
    tree.ctl("-t");
    assert_eq!(tree.wait_exit(Duration::from_secs(20)).code(), Some(0));
    let got = std::fs::read_to_string(out).unwrap();
    assert!(last > 5000, "only {last} lines were written");
    let mut expect = 1u64;
    for line in got.lines() {
        assert_eq!(line, expect.to_string(), "line {expect} (of {last})");
        expect += 1;
    }
    assert_eq!(expect - 1, last, "lines logged vs written");
    assert!(got.ends_with('\n'));
}

// ---------------------------------------------------------------------------------------
// PID 1.

#[test]
fn pid1_reaps_orphans_and_sigterm_brings_the_tree_down() {
    require("unshare");
    let s = Scratch::new("scan-pid1");
    let marker = s.join("spawned");
    ServiceDir::new(s.join("sd/orphans")).run(&format!(
            "#!/bin/sh\nsh -c 'for i in $(seq 1000); do sleep 1 & done'\necho done >{}\nexec sleep 1000\n",
            marker.display()
        )).path();
    ServiceDir::new(s.join("sd/talker"))
        .run("#!/bin/sh\ntrap 'echo bye; exit 0' TERM\necho hello\nwhile :; do sleep 0.05; done\n")
        .path();
    s.write(
        "sd/talker/log/run",
        &format!("#!/bin/sh\nexec cat >>{}\n", s.join("talker.log").display()),
        true,
    );
    let dir = s.join("sd");
    std::fs::create_dir_all(&dir).unwrap();
    let mut c = cmd("unshare");
    c.args(["--pid", "--fork", "--mount-proc"])
        .arg(bin("tend-svscan"))
        .arg(&dir)
        .stdin(Stdio::null())
        .stderr(std::fs::File::create(s.join("scanner.stderr")).unwrap());
    let mut tree = Tree {
        daemon: Some(Daemon::start(c)),
        root: s.path.clone(),
        dir: dir.clone(),
        stderr: s.join("scanner.stderr"),
    };
    let scanner = wait_until(T, "tend-svscan as PID 1", || {
        children(tree.pid())
            .into_iter()
            .find(|&p| cmdline(p).contains("tend-svscan"))
    });
    let ns_pid = std::fs::read_to_string(format!("/proc/{scanner}/status"))
        .unwrap()
        .lines()
        .find(|l| l.starts_with("NSpid:"))
        .unwrap()
        .to_string();
    assert!(ns_pid.trim_end().ends_with("\t1"), "{ns_pid}");
    wait_until(Duration::from_secs(30), "1000 orphans spawned", || {
        marker.exists().then_some(())
    });
    let mut most = 0;
    // The orphans were handed to PID 1 (the scanner) and are all reaped as they die.
    wait_until(Duration::from_secs(30), "orphans reaped", || {
        let ch = children(scanner);
        most = most.max(ch.len());
        let zombies = ch.iter().filter(|&&p| is_zombie(p)).count();
        (ch.len() == 3 && zombies == 0).then_some(())
    });
    assert!(
        most > 100,
        "only {most} children seen: were the orphans reparented?"
    );
    wait_up(&dir.join("talker"));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(scanner), Signal::SIGTERM).unwrap();
    let st = tree.wait_exit(T);
    assert_eq!(st.code(), Some(0), "{}", tree.stderr());
    assert_eq!(
        std::fs::read_to_string(s.join("talker.log")).unwrap(),
        "hello\nbye\n"
    );
}

// ---------------------------------------------------------------------------------------
// The s6 tools, both directions.

fn ctl_drives(scanner: &str, ctl: &str) {
    require("s6-svscan");
    require("s6-svscanctl");
    let s = Scratch::new(&format!("scan-{scanner}-{ctl}"));
    let a = ServiceDir::new(s.join("sd/a")).run(SLEEPER).path();
    let mut tree = Tree::start(&s, scanner, &[]);
    let run_a = wait_up(&a);
    let send = |letters: &str| {
        let o = run({
            let mut c = cmd(ctl);
            c.arg(letters).arg(&tree.dir);
            c
        });
        assert_code(&o, 0);
    };
    let b = ServiceDir::new(s.join("sd/b")).run(SLEEPER).path();
    send("-a");
    let run_b = wait_up(&b);
    std::fs::rename(&a, s.join("a-gone")).unwrap();
    send("-an");
    wait_until(T, "a down", || (!pid_alive(run_a)).then_some(()));
    wait_unsupervised(&s.join("a-gone"));
    assert_eq!(wait_up(&b), run_b);
    send("-z");
    send("-t");
    assert_eq!(tree.wait_exit(T).code(), Some(0));
    assert!(!pid_alive(run_b));
    let o = run({
        let mut c = cmd(ctl);
        c.arg("-a").arg(&tree.dir);
        c
    });
    assert_code(&o, 100);
}

#[test]
fn s6_svscanctl_drives_tend_svscan() {
    ctl_drives("tend-svscan", "s6-svscanctl");
}

#[test]
fn tend_svscanctl_drives_s6_svscan() {
    ctl_drives("s6-svscan", "tend-svscanctl");
}

#[test]
fn s6_service_dirs_run_unchanged_with_s6_log() {
    require("s6-log");
    let s = Scratch::new("scan-s6log");
    ServiceDir::new(s.join("sd/tick")).run("#!/bin/sh\ni=0\nwhile [ $i -lt 5 ]; do echo tick $i; i=$((i+1)); done\nexec sleep 1000\n").path();
    s.write(
        "sd/tick/log/run",
        "#!/bin/sh\nexec s6-log -b n3 s100000 ./main\n",
        true,
    );
    let mut tree = Tree::start(&s, "tend-svscan", &[]);
    let cur = tree.svc("tick/log/main/current");
    wait_until(T, "five ticks logged", || {
        std::fs::read_to_string(&cur)
            .ok()
            .filter(|t| t.lines().count() == 5)
    });
    tree.ctl("-t");
    assert_eq!(tree.wait_exit(T).code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(&cur).unwrap(),
        "tick 0\ntick 1\ntick 2\ntick 3\ntick 4\n"
    );
}

#[test]
fn the_example_scan_directory_runs() {
    let s = Scratch::new("scan-example");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scandir");
    let o = run({
        let mut c = Command::new("cp");
        c.arg("-R").arg(&src).arg(s.join("sd"));
        c
    });
    assert_code(&o, 0);
    let mut tree = Tree::start(&s, "tend-svscan", &[]);
    let cur = tree.svc("tick/log/main/current");
    wait_until(T, "two ticks logged", || {
        std::fs::read_to_string(&cur)
            .ok()
            .filter(|t| t.contains(" tick 1\n"))
    });
    tree.ctl("-t");
    assert_eq!(tree.wait_exit(T).code(), Some(0));
    let log = std::fs::read_to_string(&cur).unwrap();
    assert!(log.starts_with('@') && log.contains(" tick 0\n"), "{log}");
}

#[test]
fn missing_supervisor_is_reported_and_retried() {
    let s = Scratch::new("scan-nosup");
    // The service inherits the scanner's PATH, which finds nothing: its sleep is named
    // in full (with SLEEPER it died at once, and was up for 2 ms a second).
    let d = ServiceDir::new(s.join("sd/a"))
        .run("#!/bin/sh\nexec /bin/sleep 1000\n")
        .path();
    std::fs::create_dir_all(s.join("bin")).unwrap();
    std::fs::copy(bin("tend-svscan"), s.join("bin/tend-svscan")).unwrap();
    let mut c = Command::new(s.join("bin/tend-svscan"));
    c.arg(s.join("sd")).env("PATH", "/nonexistent");
    let tree = Tree::spawn(&s, c, s.join("sd"));
    let msg =
        "tend-svscan (child): fatal: unable to exec tend-supervise: No such file or directory\n";
    wait_until(T, "two failed attempts", || {
        (tree.stderr().matches(msg).count() >= 2).then_some(())
    });
    assert!(tree.alive());
    // Once tend-supervise is beside tend-svscan, the next attempt (a second later) works.
    std::os::unix::fs::symlink(bin("tend-supervise"), s.join("bin/tend-supervise")).unwrap();
    let pid = wait_up(&d);
    stays_for(
        Duration::from_millis(200),
        "the same supervised service up",
        || status(&d).map(|s| (s.is_up(), s.pid as i32)) == Some((true, pid)),
    );
}

#[test]
fn closed_stdin_and_stdout_do_not_break_log_pipes() {
    let s = Scratch::new("scan-closedio");
    ServiceDir::new(s.join("sd/a"))
        .run("#!/bin/sh\necho one\necho two\nexec sleep 1000\n")
        .path();
    s.write(
        "sd/a/log/run",
        &format!("#!/bin/sh\nexec cat >>{}\n", s.join("a.log").display()),
        true,
    );
    let mut c = cmd("sh");
    c.arg("-c")
        .arg("exec \"$0\" \"$1\" <&- >&-")
        .arg(bin("tend-svscan"))
        .arg(s.join("sd"));
    let _tree = Tree::spawn(&s, c, s.join("sd"));
    wait_until(T, "both lines logged", || {
        std::fs::read_to_string(s.join("a.log"))
            .ok()
            .filter(|t| t == "one\ntwo\n")
    });
}

#[test]
fn sigalrm_scans_and_sigabrt_aborts() {
    let s = Scratch::new("scan-alrm");
    let a = ServiceDir::new(s.join("sd/a")).run(SLEEPER).path();
    let mut tree = Tree::start(&s, "tend-svscan", &[]);
    let run_a = wait_up(&a);
    let b = ServiceDir::new(s.join("sd/b")).run(SLEEPER).path();
    tree.daemon.as_ref().unwrap().signal(Signal::SIGALRM);
    let run_b = wait_up(&b);
    tree.daemon.as_ref().unwrap().signal(Signal::SIGABRT);
    assert_eq!(tree.wait_exit(T).code(), Some(0));
    // Abort kills nothing and waits for nothing.
    assert!(pid_alive(run_a) && pid_alive(run_b));
    assert!(supervised(&a) && supervised(&b));
}

#[test]
fn svscanctl_on_a_broken_control_dir_says_so_as_s6() {
    let s = Scratch::new("scan-broken-ctl");
    std::fs::create_dir_all(s.join(".s6-svscan")).unwrap();
    let o = tend("tend-svscanctl", ["-a", s.path.to_str().unwrap()]);
    assert_code(&o, 100);
    assert_eq!(
        text(&o.stderr),
        format!(
            "tend-svscanctl: fatal: something is wrong with the {}/.s6-svscan directory: No such file or directory\n",
            s.path.display()
        )
    );
    let o = run({
        let mut c = cmd("s6-svscanctl");
        c.args(["-a", s.path.to_str().unwrap()]);
        c
    });
    assert_code(&o, 100);
    assert!(text(&o.stderr).contains("something is wrong with the"));
}

/// issue 34 item 25: a service directory named like an option (`-x`) is supervised, and
/// so is its logger: the scanner passes the name as `./-x`.
#[test]
fn a_service_named_like_an_option_is_supervised() {
    let s = Scratch::new("dash-name");
    let f = Fleet::start(&s);
    let out = s.join("logged");
    let dir = f.svc("-x");
    // Made whole, then moved in: a scan between the service and its log/ (the
    // scanner's first one may still come) would supervise it without a logger.
    let staged = s.join("staged");
    ServiceDir::new(&staged).run("#!/bin/sh\necho hello\nexec sleep 1000\n");
    ServiceDir::new(staged.join("log"))
        .run(&format!("#!/bin/sh\nexec cat > '{}'\n", out.display()));
    std::fs::rename(&staged, &dir).unwrap();
    f.rescan();
    f.wait_supervised("-x");
    f.wait_supervised("-x/log");
    wait_until(PATIENCE, "the logger to get the line", || {
        (std::fs::read_to_string(&out).ok()? == "hello\n").then_some(())
    });
    let r = wait_status(&dir, "-x up", is_up);
    assert!(r.pid > 0);
    assert!(
        !f.scanner_stderr().contains("usage"),
        "{}",
        f.scanner_stderr()
    );
}

/// The scanner starts a supervisor with a vfork-style clone (CLONE_VM | CLONE_VFORK), not
/// a fork: a fork copies the page tables of a scanner with 1000 children (issue 39). The
/// scanner's own system calls, traced without -f.
#[test]
fn supervisors_are_started_with_a_vfork_style_clone() {
    if !have("strace") {
        return skip("strace is not installed");
    }
    let s = Scratch::new("scan-vfork");
    let dirs: Vec<PathBuf> = (0..2)
        .map(|i| {
            ServiceDir::new(s.join(format!("sd/s{i}")))
                .run(SLEEPER)
                .path()
        })
        .collect();
    let trace = s.join("trace");
    let mut c = Command::new("strace");
    c.arg("-qq")
        .arg("-e")
        .arg("trace=fork,vfork,clone,clone3")
        .arg("-o")
        .arg(&trace)
        .arg(bin("tend-svscan"))
        .arg(s.join("sd"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut d = Daemon::start(c);
    for dir in &dirs {
        wait_supervised(dir);
    }
    let sd = s.join("sd");
    assert_code(&tend("tend-svscanctl", [Path::new("-t"), &sd]), 0);
    assert!(d.wait_exit(PATIENCE).is_some(), "the scanner did not exit");
    let got = std::fs::read_to_string(&trace).unwrap();
    let clones = got
        .lines()
        .filter(|l| l.contains("CLONE_VM|CLONE_VFORK"))
        .count();
    assert!(clones >= 2, "{got}");
    assert!(!got.lines().any(|l| l.starts_with("fork(")), "{got}");
}
