//! runit compatibility: tend-chpst beside runit's chpst, tend-sv beside runit's sv (on
//! runsv, tend-supervise and s6-supervise services), and runit service directories under
//! tend-svscan. Every check runs the same arguments through runit 2.1.2's program and
//! tend's and compares what the program saw (ids, environment, limits, nice, session,
//! descriptors, lock) or what sv printed (pids and seconds masked).
//!
//! Not tested: `-/` with account names (the chroot has no /etc/passwd of its own here, so
//! only numeric ids are used inside it); sv's 7-second default wait (tests pass `-w`);
//! runit's quirk of writing the log's "runsv not running" line inside the status line.

use crate::common::*;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// A script that writes what the process looks like to `$OUT` (so closing stdout or
/// stderr does not hide it): ids, the environment variables tests set, limits, nice,
/// session and group leadership, cwd, and which of fds 0-2 are open.
const PROBE: &str = r#"#!/bin/sh
{
echo "argv0=$0"
echo "uid=$(id -u) gids=$(id -G)"
for v in UID GID A B C D E F PATH_X; do eval "printf '%s=%s\\n' $v \"\${$v-unset}\""; done
grep -E '^Max (cpu|file size|data|stack|core|resident|processes|open|locked|address)' /proc/self/limits
set -- $(sed 's/.*) //' /proc/$$/stat)
echo "nice=${17} pgrp_is_self=$([ "$3" = $$ ] && echo y || echo n) session_is_self=$([ "$4" = $$ ] && echo y || echo n)"
echo "cwd=$(pwd)"
for f in 0 1 2; do if [ -e /proc/$$/fd/$f ]; then echo "fd$f open"; else echo "fd$f closed"; fi; done
} > "$OUT"
"#;

struct Probe {
    s: Scratch,
    script: PathBuf,
}

impl Probe {
    fn new(name: &str) -> Probe {
        let s = Scratch::new(name);
        let script = s.write("probe", PROBE, true);
        // The probe writes its report as other accounts too.
        std::fs::set_permissions(&s.path, std::fs::Permissions::from_mode(0o1777)).unwrap();
        Probe { s, script }
    }

    /// Run `prog args... probe` with `$OUT` set; the probe's report and the output.
    fn run(&self, prog: &str, args: &[&str]) -> (String, Output) {
        let out = self.s.join(format!("{}.out", prog.replace('/', "_")));
        let _ = std::fs::remove_file(&out);
        let mut c = cmd(prog);
        c.args(args)
            .arg(&self.script)
            .env("OUT", &out)
            .env("B", "set-before")
            .current_dir(&self.s.path);
        let o = run(c);
        (std::fs::read_to_string(&out).unwrap_or_default(), o)
    }

    /// The same arguments through runit's chpst and tend-chpst: the same report.
    #[track_caller]
    fn same(&self, args: &[&str]) -> String {
        let (want, ro) = self.run("chpst", args);
        let (got, to) = self.run("tend-chpst", args);
        assert_code(&ro, 0);
        assert_code(&to, 0);
        assert!(!want.is_empty(), "chpst {args:?} wrote no report");
        assert_eq!(got, want, "tend-chpst {args:?} differs from chpst");
        got
    }
}

/// The chpst comparisons change credentials: they need root (CI runs as root).
fn root_or_skip() -> bool {
    let root = nix::unistd::geteuid().is_root();
    if !root {
        skip("needs root (chpst -u, -/, -n -2)");
    }
    root
}

#[test]
fn chpst_changes_the_process_like_runit() {
    require("chpst");
    if !root_or_skip() {
        return;
    }
    let p = Probe::new("chpst-same");
    let cases: &[&[&str]] = &[
        &[],
        &["-u", "nobody"],
        &["-u", "nobody:daemon:adm"],
        &["-u", ":1234:5678:90"],
        &["-U", "nobody:adm"],
        &["-U", ":5:6:7"],
        &["-U", "daemon", "-u", "nobody"],
        &["-n", "5"],
        &["-n", "+3"],
        &["-n", "-2"],
        &["-P"],
        &["-o", "77"],
        &["-m", "100000000"],
        &["-m", "100000000", "-d", "5000000"],
        &[
            "-f", "100000", "-c", "0", "-p", "50", "-r", "123456", "-t", "99",
        ],
        &["-o", "99999999999999999999999"],
        &["-o", "0100"],
        &["-b", "renamed"],
        &["-0"],
        &["-1", "-2"],
        &["-012", "-P", "-n", "1", "-u", "nobody"],
    ];
    for args in cases {
        p.same(args);
    }
    // Sanity: the probe sees what it should, so equality means something.
    let r = p.same(&[
        "-u",
        "nobody:daemon:adm",
        "-n",
        "5",
        "-o",
        "77",
        "-b",
        "renamed",
    ]);
    assert!(r.contains("uid=65534 gids=1 4"), "{r}");
    assert!(r.contains("nice=5"), "{r}");
    assert!(r.contains("Max open files            77"), "{r}");
    let r = p.same(&["-P"]);
    assert!(r.contains("pgrp_is_self=y session_is_self=y"), "{r}");
    // -b: busybox runs the applet its argv[0] names.
    if Path::new("/bin/busybox").exists() {
        let args = ["-b", "echo", "/bin/busybox", "hello"];
        let want = run({
            let mut c = Command::new("chpst");
            c.args(args);
            c
        });
        let got = tend("tend-chpst", args);
        assert_eq!(text(&want.stdout), "hello\n");
        assert_eq!(text(&got.stdout), text(&want.stdout));
    }
    let r = p.same(&["-0", "-2"]);
    assert!(r.contains("fd0 closed") && r.contains("fd1 open") && r.contains("fd2 closed"));
}

#[test]
fn chpst_envdir_reads_files_like_runit() {
    require("chpst");
    if !root_or_skip() {
        return;
    }
    let p = Probe::new("chpst-envdir");
    let e = p.s.join("env");
    std::fs::create_dir_all(e.join("E")).unwrap();
    std::fs::write(e.join("A"), "val \t \nsecond line\n").unwrap();
    std::fs::write(e.join("B"), "").unwrap();
    std::fs::write(e.join("C"), b"a\0b\n").unwrap();
    std::fs::write(e.join("D"), "cr\r\n").unwrap();
    std::fs::write(e.join("F"), "x".repeat(5000)).unwrap();
    std::fs::write(e.join(".PATH_X"), "hidden\n").unwrap();
    let dir = e.to_str().unwrap();
    let r = p.same(&["-e", dir]);
    assert!(
        r.contains("A=val\n") && r.contains("B=unset\n") && r.contains("C=a\nb\n"),
        "{r}"
    );
    assert!(r.contains("D=cr\r\n") && r.contains("PATH_X=unset"), "{r}");
    assert!(r.contains(&format!("F={}\n", "x".repeat(5000))), "{r}");
    p.same(&["-v", "-e", dir]);
    // -U after -e: the account's ids win over the directory's.
    std::fs::write(e.join("UID"), "77\n").unwrap();
    p.same(&["-e", dir, "-U", ":1:2"]);
}

#[test]
fn chpst_chroot_like_runit() {
    require("chpst");
    if !root_or_skip() {
        return;
    }
    let busybox = Path::new("/bin/busybox");
    if !busybox.exists() {
        skip("needs busybox-static for a root with a shell");
        return;
    }
    let s = Scratch::new("chpst-root");
    let root = s.join("root");
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::fs::copy(busybox, root.join("bin/busybox")).unwrap();
    for a in ["sh", "pwd", "id", "cat"] {
        std::os::unix::fs::symlink("busybox", root.join("bin").join(a)).unwrap();
    }
    let script = "pwd > /out; id -u >> /out; echo $PATH_X >> /out";
    let report = |prog: PathBuf| {
        let _ = std::fs::remove_file(root.join("out"));
        let mut c = Command::new(prog);
        c.args([
            "-/",
            root.to_str().unwrap(),
            "-u",
            ":4:5",
            "sh",
            "-c",
            script,
        ])
        .env("PATH", "/bin")
        .env("PATH_X", "kept");
        let o = run(c);
        assert_code(&o, 0);
        std::fs::read_to_string(root.join("out")).unwrap()
    };
    let want = report(PathBuf::from("/usr/bin/chpst"));
    assert_eq!(want, "/\n4\nkept\n");
    assert_eq!(report(bin("tend-chpst")), want);
}

/// A child holding a lock taken by `prog -L file`, until its stdin closes.
fn hold_lock(prog: &str, file: &Path, ready: &Path) -> std::process::Child {
    let mut c = if prog == "chpst" {
        Command::new("chpst")
    } else {
        Command::new(bin(prog))
    };
    c.args(["-L", file.to_str().unwrap(), "sh", "-c"])
        .arg(format!("touch {}; read x", ready.display()))
        .stdin(Stdio::piped());
    let child = c.spawn().unwrap();
    wait_until(PATIENCE, "the lock holder to start", || {
        ready.exists().then_some(())
    });
    child
}

#[test]
fn chpst_locks_are_runits_flock() {
    require("chpst");
    let s = Scratch::new("chpst-lock");
    let lk = s.join("lock");
    for (holder, other) in [("chpst", "tend-chpst"), ("tend-chpst", "chpst")] {
        let ready = s.join(format!("ready-{holder}"));
        let mut h = hold_lock(holder, &lk, &ready);
        // Held: -L fails at once with 111, whoever holds it.
        let mut c = if other == "chpst" {
            Command::new("chpst")
        } else {
            cmd(other)
        };
        c.args(["-L", lk.to_str().unwrap(), "true"]);
        let o = run(c);
        assert_code(&o, 111);
        let err = text(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        if other == "tend-chpst" {
            assert!(
                err.starts_with("tend-chpst: fatal: unable to lock "),
                "{err}"
            );
        }
        // -l waits for it: the waiter finishes only once the holder is gone.
        let done = s.join(format!("done-{other}"));
        let mut c = if other == "chpst" {
            Command::new("chpst")
        } else {
            cmd(other)
        };
        c.args(["-l", lk.to_str().unwrap(), "touch", done.to_str().unwrap()]);
        let mut waiter = Daemon::start(c);
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            !done.exists(),
            "{other} -l did not wait for {holder}'s lock"
        );
        drop(h.stdin.take());
        h.wait().unwrap();
        assert_eq!(waiter.wait_exit(PATIENCE).and_then(|s| s.code()), Some(0));
        assert!(done.exists());
    }
    // The same mode for a lock file it creates (runit: 0600).
    let (a, b) = (s.join("new-runit"), s.join("new-tend"));
    assert_code(&tend("tend-chpst", ["-l", b.to_str().unwrap(), "true"]), 0);
    let o = run({
        let mut c = Command::new("chpst");
        c.args(["-l", a.to_str().unwrap(), "true"]);
        c
    });
    assert_code(&o, 0);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(&b), mode(&a));
}

#[test]
fn chpst_bad_input_exits_like_runit() {
    require("chpst");
    if !root_or_skip() {
        return;
    }
    let s = Scratch::new("chpst-bad");
    std::fs::write(s.join("file"), "").unwrap();
    let missing = s.join("no-such-dir");
    let cases: &[&[&str]] = &[
        &["-u", "no-such-user-tend", "true"],
        &["-u", "nobody:no-such-group-tend", "true"],
        &["-u", ":abc", "true"],
        &["-u", ":1234", "true"],
        &["-U", "no-such-user-tend", "true"],
        &["-o", "1x", "true"],
        &["-m", "-1", "true"],
        &["-n", "x", "true"],
        &["-n", "--5", "true"],
        &["-e", missing.to_str().unwrap(), "true"],
        &["-/", missing.to_str().unwrap(), "true"],
        &["-l", "a", "-L", "b", "true"],
        &["no-such-program-tend"],
        &["-Z", "true"],
        &["-u"],
        &[],
        &["-u", "nobody", "chpst", "-n", "-5", "true"],
        &["-u", "nobody", "chpst", "-u", "root", "true"],
    ];
    for args in cases {
        let o_runit = run({
            let mut c = Command::new("chpst");
            c.args(*args).current_dir(&s.path);
            c
        });
        // Inside, tend's chain calls tend-chpst where runit's calls chpst.
        let targs: Vec<&str> = args
            .iter()
            .map(|a| if *a == "chpst" { "tend-chpst" } else { a })
            .collect();
        let mut c = cmd("tend-chpst");
        c.args(&targs).current_dir(&s.path);
        let o = run(c);
        assert_eq!(
            o.status.code(),
            o_runit.status.code(),
            "tend-chpst {args:?}: {}\nchpst: {}",
            text(&o.stderr),
            text(&o_runit.stderr)
        );
        let err = text(&o.stderr);
        assert_eq!(err.lines().count(), 1, "tend-chpst {args:?}: {err}");
        assert!(
            err.starts_with("tend-chpst: fatal: ") || err.starts_with("tend-chpst: usage: "),
            "tend-chpst {args:?}: {err}"
        );
    }
    let o = tend("tend-chpst", ["-u", "no-such-user-tend", "true"]);
    assert_eq!(
        text(&o.stderr),
        "tend-chpst: fatal: unknown user/group: no-such-user-tend\n"
    );
}

// ---------------------------------------------------------------------------------------
// tend-sv

/// A runit supervisor (runsv) on one service directory, killed with its group on drop.
struct Runsv {
    _daemon: Daemon,
}

/// Whether a runsv reads the service's `supervise/ok`.
fn runsv_listening(dir: &Path) -> bool {
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(dir.join("supervise/ok"))
        .is_ok()
}

/// runit's 20-byte status says the service runs.
fn runsv_up(dir: &Path) -> bool {
    std::fs::read(dir.join("supervise/status")).is_ok_and(|b| b.len() == 20 && b[19] == 1)
}

impl Runsv {
    /// A runsv whose service (and log service, if any) runs.
    fn start(dir: &Path) -> Runsv {
        let r = Runsv::start_any(dir);
        let log = dir.join("log");
        wait_until(PATIENCE, "runsv to run the service", || {
            (runsv_up(dir) && (!log.is_dir() || (runsv_listening(&log) && runsv_up(&log))))
                .then_some(())
        });
        r
    }
}

/// Digits masked (pids, seconds): `run: ./web: (pid N) Ns`.
fn masked(s: &str) -> String {
    let mut out = String::new();
    let mut digits = false;
    for c in s.chars() {
        if c.is_ascii_digit() {
            if !digits {
                out.push('N');
            }
            digits = true;
        } else {
            digits = false;
            out.push(c);
        }
    }
    out
}

/// Run runit's sv (`sv`) or tend-sv in `cwd`; masked stdout and the exit code.
fn sv(prog: &str, cwd: &Path, args: &[&str]) -> (String, i32) {
    let mut c = if prog == "sv" {
        Command::new("sv")
    } else {
        cmd(prog)
    };
    c.args(args)
        .current_dir(cwd)
        .env_remove("SVWAIT")
        .env_remove("TEND_SCANDIR")
        .env("SVDIR", cwd);
    let o = run(c);
    let code = o.status.code().unwrap_or(-1);
    assert!(
        prog == "sv" || o.stderr.is_empty() || code == 100,
        "{prog} {args:?} wrote on stderr: {}",
        text(&o.stderr)
    );
    (masked(&text(&o.stdout)), code)
}

/// The command sequence every supervisor is driven through, each step's outcome
/// deterministic whatever the timing: `(arguments, needs ./check to pass)`.
const STEPS: &[&[&str]] = &[
    &["status", "./web"],
    &["-w", "9", "down", "./web"],
    &["status", "./web"],
    &["-w", "9", "up", "./web"],
    &["-w", "9", "pause", "./web"],
    &["status", "./web"],
    &["-v", "cont", "./web"],
    // runit's sv takes a restart as done once the status is as new as its own start, in
    // whole seconds: on a run started in the same second it returned at once, before
    // runsv had acted, and the next steps met the restart half done (under load).
    &["settle"],
    &["-w", "9", "restart", "./web"],
    &["-w", "9", "once", "./web"],
    &["status", "./web"],
    &["-w", "9", "down", "./web"],
    &["-w", "9", "up", "./web"],
    // From here ./check exists, and fails until `ok` exists.
    &["install-check"],
    &["-w", "1", "check", "./web"],
    &["-w", "1", "up", "./web"],
    &["touch-ok"],
    &["-w", "9", "check", "./web"],
    &["settle"],
    &["-w", "9", "restart", "./web"],
    &["-w", "9", "force-stop", "./web"],
    &["-w", "9", "start", "./web"],
    &["frob", "./web"],
    &["status", "./web", "./no-such-service"],
    &["-w", "9", "shutdown", "./web"],
    &["status", "./web"],
];

const CHECK: &str = "#!/bin/sh\n[ -e ok ]\n";

/// Drive `prog` through STEPS in `cwd` (holding `web/`); the transcript.
fn transcript(prog: &str, cwd: &Path) -> Vec<(String, i32)> {
    STEPS
        .iter()
        .map(|args| {
            match args[0] {
                "touch-ok" => std::fs::write(cwd.join("web/ok"), "").unwrap(),
                "install-check" => {
                    ServiceDir::new(cwd.join("web")).script("check", CHECK);
                }
                // Until the run is a whole second old, as `status` says it.
                "settle" => {
                    wait_until(PATIENCE, "the run a second old", || {
                        let out = raw_status(prog, cwd);
                        let secs = out.split(") ").nth(1)?.split('s').next()?;
                        (secs.parse::<u64>().ok()? >= 1).then_some(())
                    });
                }
                _ => {}
            }
            if args.len() == 1 {
                return (String::new(), 0);
            }
            let (out, code) = sv(prog, cwd, args);
            (format!("{args:?}: {out}"), code)
        })
        .collect()
}

/// `prog status ./web` in `cwd`, digits kept.
fn raw_status(prog: &str, cwd: &Path) -> String {
    let mut c = if prog == "sv" {
        Command::new("sv")
    } else {
        cmd(prog)
    };
    c.args(["status", "./web"])
        .current_dir(cwd)
        .env_remove("SVWAIT")
        .env_remove("TEND_SCANDIR")
        .env("SVDIR", cwd);
    text(&run(c).stdout)
}

fn plain_service(dir: &Path) {
    ServiceDir::new(dir).run(SLEEPER);
}

#[test]
fn sv_drives_tend_and_s6_supervisors_as_runits_sv_drives_runsv() {
    require("sv");
    let s = Scratch::new("sv-same");
    let (r, t, s6) = (s.join("runit"), s.join("tend"), s.join("s6"));
    for d in [&r, &t, &s6] {
        plain_service(&d.join("web"));
    }
    let want = {
        let _runsv = Runsv::start(&r.join("web"));
        transcript("sv", &r)
    };
    // Sanity: the anchor's transcript is what sv(8) documents.
    let lines: Vec<&str> = want.iter().map(|(l, _)| l.as_str()).collect();
    assert!(
        lines[0].ends_with(": run: ./web: (pid N) Ns\n"),
        "{lines:?}"
    );
    assert!(
        lines[1].ends_with(": ok: down: ./web: Ns, normally up\n"),
        "{lines:?}"
    );
    let check = STEPS
        .iter()
        .position(|a| a == &["-w", "1", "check", "./web"])
        .unwrap();
    assert!(lines[check].contains(": timeout: run: ./web"), "{lines:?}");
    assert_eq!(
        (want[check].1, want[check + 1].1, want[check + 3].1),
        (1, 1, 0)
    );
    for (supervisor, dir) in [("tend-supervise", &t), ("s6-supervise", &s6)] {
        let sup = Supervised::start(supervisor, &dir.join("web"));
        sup.wait_up();
        let got = transcript("tend-sv", dir);
        for (i, (w, g)) in want.iter().zip(&got).enumerate() {
            assert_eq!(g, w, "step {i} under {supervisor}");
        }
    }
}

#[test]
fn sv_reads_runits_own_status_and_its_log_service() {
    require("sv");
    let s = Scratch::new("sv-runsv");
    ServiceDir::new(s.join("web"))
        .run(SLEEPER)
        .script("log/run", SLEEPER);
    let _runsv = Runsv::start(&s.join("web"));
    let runit = |args: &[&str]| sv("sv", &s.path, args);
    let tend = |args: &[&str]| sv("tend-sv", &s.path, args);
    let want = runit(&["status", "web"]);
    assert_eq!(
        want,
        ("run: web: (pid N) Ns; run: log: (pid N) Ns\n".into(), 0)
    );
    assert_eq!(tend(&["status", "web"]), want);
    // The pids are runsv's, read from its 20-byte record.
    let o = run({
        let mut c = cmd("tend-sv");
        c.args(["status", "./web"]).current_dir(&s.path);
        c
    });
    let b = std::fs::read(s.join("web/supervise/status")).unwrap();
    let pid = u32::from_le_bytes([b[12], b[13], b[14], b[15]]);
    assert!(text(&o.stdout).starts_with(&format!("run: ./web: (pid {pid}) ")));
    // The log service: by path as sv takes it, and with tend-sv's -l.
    let want = runit(&["-w", "9", "down", "web/log/"]);
    assert_eq!(want, ("ok: down: web/log/: Ns, normally up\n".into(), 0));
    assert_eq!(tend(&["-l", "-w", "9", "up", "web"]).1, 0);
    assert_eq!(
        tend(&["-l", "-w", "9", "down", "web"]),
        ("ok: down: web/log: Ns, normally up\n".into(), 0)
    );
    assert_eq!(runit(&["status", "web"]), tend(&["status", "web"]));
    assert_eq!(
        tend(&["status", "web"]).0,
        "run: web: (pid N) Ns; down: log: Ns, normally up\n"
    );
    // Control through runsv's own FIFO: a signal and a wait.
    assert_eq!(
        tend(&["-w", "9", "restart", "web"]),
        ("ok: run: web: (pid N) Ns\n".into(), 0)
    );
}

/// An init script: a symlink NAME to `target` in `dir`.
fn init_script(dir: &Path, name: &str, target: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let link = dir.join(name);
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(target, &link).unwrap();
    link
}

#[test]
fn sv_lsb_init_script_mode_exits_like_runits() {
    require("sv");
    let s = Scratch::new("sv-lsb");
    let svdir = s.join("service");
    // It ignores SIGHUP (`reload`), so it stays up whatever the timing.
    let hup_proof = "#!/bin/sh\ntrap '' HUP\nexec sleep 1000\n";
    ServiceDir::new(svdir.join("web")).run(hup_proof);
    ServiceDir::new(svdir.join("idle")).run(SLEEPER);
    // A service whose supervise/ is a file: status unknown (4).
    ServiceDir::new(svdir.join("broken"))
        .run(SLEEPER)
        .file("supervise", "");
    let runit_web = Runsv::start(&svdir.join("web"));
    let tend_web = ServiceDir::new(s.join("tend/web")).run(SLEEPER).path();
    let sup = Supervised::start("tend-supervise", &tend_web);
    sup.wait_up();
    let script = |kind: &str, name: &str| {
        let target = if kind == "runit" {
            PathBuf::from("/usr/bin/sv")
        } else {
            bin("tend-sv")
        };
        init_script(&s.join(format!("init-{kind}")), name, &target)
    };
    let call = |link: &Path, svdir: &Path, args: &[&str]| -> (String, i32) {
        let mut c = Command::new(link);
        c.args(args).env("SVDIR", svdir).env_remove("SVWAIT");
        let o = run(c);
        (masked(&text(&o.stdout)), o.status.code().unwrap_or(-1))
    };
    let cases: &[(&str, &[&str], i32)] = &[
        ("web", &["status"], 0),
        ("web", &["-w", "9", "stop"], 0),
        ("web", &["status"], 3),
        ("web", &["-w", "9", "start"], 0),
        ("web", &["-w", "9", "restart"], 0),
        ("web", &["reload"], 0),
        ("web", &["frob"], 2),
        ("web", &["sfoo"], 2),
        ("web", &[], 2),
        ("broken", &["status"], 4),
        ("idle", &["status"], 4),
        ("idle", &["start"], 1),
        ("missing", &["status"], 1),
        ("missing", &["-w", "1", "start"], 1),
    ];
    // runit's sv compares its start with the status time to the second only, so its
    // `-w restart` can return before runsv took the TERM: let runsv settle (no TERM
    // pending, up if wanted up) before the other sv runs, so each sees its own command.
    let settled = || {
        wait_until(Duration::from_secs(10), "runsv settled", || {
            let b = std::fs::read(svdir.join("web/supervise/status")).ok()?;
            let pid = u32::from_le_bytes(b.get(12..16)?.try_into().ok()?);
            (b[18] == 0 && (b[17] != b'u' || pid != 0)).then_some(())
        })
    };
    for (name, args, code) in cases {
        settled();
        let want = call(&script("runit", name), &svdir, args);
        settled();
        let got = call(&script("tend", name), &svdir, args);
        assert_eq!(want.1, *code, "sv as /etc/init.d/{name} {args:?}: {want:?}");
        assert_eq!(got, want, "tend-sv as /etc/init.d/{name} {args:?}");
    }
    // The same script over a tend-supervise service.
    let tend_dir = s.join("tend");
    let web = script("tend", "web");
    assert_eq!(call(&web, &tend_dir, &["status"]).1, 0);
    assert_eq!(call(&web, &tend_dir, &["-w", "9", "stop"]).1, 0);
    assert_eq!(
        call(&web, &tend_dir, &["status"]),
        ("down: web: Ns, normally up\n".into(), 3)
    );
    assert_eq!(call(&web, &tend_dir, &["-w", "9", "start"]).1, 0);
    drop(runit_web);
}

#[test]
fn sv_bad_input_counts_like_runits() {
    require("sv");
    let s = Scratch::new("sv-bad");
    ServiceDir::new(s.join("never")).run(SLEEPER);
    // A supervisor that is gone: its record stays, nobody listens.
    let gone = ServiceDir::new(s.join("gone")).run(SLEEPER).path();
    drop(Runsv::start(&gone));
    // Killed with its group, and waited for; until the rest of the group has died too,
    // supervise/ok can still have a reader (sv then said "run: gone", under load).
    wait_until(PATIENCE, "nobody reading gone/supervise/ok", || {
        (!runsv_listening(&gone)).then_some(())
    });
    let mut many: Vec<String> = (0..120).map(|i| format!("missing{i}")).collect();
    many.insert(0, "status".into());
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    let cases: &[&[&str]] = &[
        &["status", "gone"],
        &["up", "gone"],
        &["exit", "gone"],
        &["status", "missing", "gone", "never"],
        &["frob", "gone"],
        &["status"],
        &[],
        &["-Q", "status", "gone"],
        &many,
    ];
    for args in cases {
        let want = sv("sv", &s.path, args);
        let got = sv("tend-sv", &s.path, args);
        assert_eq!(got.1, want.1, "tend-sv {args:?}: {got:?}, sv: {want:?}");
        assert_eq!(got.0, want.0, "tend-sv {args:?}");
    }
    assert_eq!(sv("tend-sv", &s.path, &many).1, 99);
    // A directory no supervisor ever ran in: sv's words, whoever would supervise it.
    assert_eq!(
        sv("tend-sv", &s.path, &["status", "never"]),
        (
            "warning: never: unable to open supervise/ok: file does not exist\n".into(),
            1
        )
    );
    let o = tend("tend-sv", ["frob", "x"]);
    assert_code(&o, 100);
    assert!(text(&o.stderr).starts_with("tend-sv: usage: tend-sv "));
}

// ---------------------------------------------------------------------------------------
// runit service directories under tend's supervisors

/// A run script that records the signals it gets in `../events` (and its pid in `pid`).
const RECORDER: &str = r#"#!/bin/sh
echo $$ > pid
trap 'echo run-got-hup >> ../events' HUP
trap 'echo run-got-int >> ../events; exit 0' INT
trap 'echo run-got-term >> ../events; exit 0' TERM
while :; do sleep 1 & wait $!; done
"#;

/// runsv(8)'s control/ overrides, each recording itself: h lets the signal through
/// (exit 1), t replaces TERM by an INT of its own (exit 0), d and u only record.
fn runit_service_with_overrides(dir: &Path) {
    ServiceDir::new(dir)
        .run(RECORDER)
        .script(
            "control/h",
            "#!/bin/sh\necho control-h >> ../events\nexit 1\n",
        )
        .script(
            "control/t",
            "#!/bin/sh\necho control-t >> ../events\nkill -INT $(cat pid)\n",
        )
        .script("control/d", "#!/bin/sh\necho control-d >> ../events\n")
        .script("control/u", "#!/bin/sh\necho control-u >> ../events\n");
}

fn events(base: &Path) -> String {
    std::fs::read_to_string(base.join("events")).unwrap_or_default()
}

/// Drive the service in `base/web` through sv commands; the events it recorded.
fn drive_overrides(prog: &str, base: &Path) -> String {
    let web = base.join("web");
    let wait_for = |what: &str, n: usize| {
        wait_until(PATIENCE, what, || {
            (events(base).matches(what).count() >= n).then_some(())
        })
    };
    wait_for("control-u", 1);
    wait_until(PATIENCE, "the run script's pid", || {
        std::fs::read_to_string(web.join("pid"))
            .ok()
            .filter(|p| p.ends_with('\n'))
    });
    assert_eq!(sv(prog, base, &["hup", "./web"]).1, 0);
    wait_for("run-got-hup", 1);
    let pid = std::fs::read_to_string(web.join("pid")).unwrap();
    assert_eq!(sv(prog, base, &["-w", "9", "down", "./web"]).1, 0);
    wait_for("control-d", 1);
    assert!(!events(base).contains("run-got-term"), "{}", events(base));
    let _ = std::fs::remove_file(web.join("pid"));
    assert_eq!(sv(prog, base, &["-w", "9", "up", "./web"]).1, 0);
    wait_for("control-u", 2);
    wait_until(PATIENCE, "the new run script's pid", || {
        std::fs::read_to_string(web.join("pid"))
            .ok()
            .filter(|p| p.ends_with('\n') && *p != pid)
    });
    assert_eq!(sv(prog, base, &["term", "./web"]).1, 0);
    wait_for("run-got-int", 2);
    // Restarted (it wants up): control/u again.
    wait_for("control-u", 3);
    events(base)
}

#[test]
fn runit_control_overrides_run_under_tend_supervise_as_under_runsv() {
    require("runsv");
    let s = Scratch::new("runit-control");
    let (r, t) = (s.join("runit"), s.join("tend"));
    runit_service_with_overrides(&r.join("web"));
    runit_service_with_overrides(&t.join("web"));
    // The run script's trap lines are written by the run process itself, racing the
    // supervisor's next override script (runsv runs control/t, then control/d, without
    // waiting for the death: under load either comes first, with runsv as with tend).
    // Each is held to come after the control script that caused it.
    let settled = |events: String| -> String {
        let mut out: Vec<&str> = Vec::new();
        for l in events.lines() {
            if let Some(sig) = l.strip_prefix("run-got-") {
                let cause = if sig == "hup" {
                    "control-h"
                } else {
                    "control-t"
                };
                let at = out
                    .iter()
                    .rposition(|c| *c == cause)
                    .expect("a trap before its cause");
                out.insert(at + 1, l);
            } else {
                out.push(l);
            }
        }
        out.join("\n") + "\n"
    };
    let want = {
        let _runsv = Runsv::start(&r.join("web"));
        settled(drive_overrides("sv", &r))
    };
    assert_eq!(
        want,
        "control-u\ncontrol-h\nrun-got-hup\ncontrol-t\nrun-got-int\ncontrol-d\ncontrol-u\n\
         control-t\nrun-got-int\ncontrol-u\n"
    );
    let sup = Supervised::start("tend-supervise", &t.join("web"));
    assert_eq!(
        settled(drive_overrides("tend-sv", &t)),
        want,
        "under tend-supervise"
    );
    drop(sup);
}

#[test]
fn finish_arguments_runit_and_tend() {
    require("runsv");
    let s = Scratch::new("runit-finish");
    let finish = "#!/bin/sh\necho \"$1 $2\" >> ../finish-args\nexit 0\n";
    for (who, dir) in [("runit", s.join("runit/web")), ("tend", s.join("tend/web"))] {
        ServiceDir::new(&dir)
            .run("#!/bin/sh\n[ -e ../exited ] && echo $$ > ../second && exec sleep 1000\ntouch ../exited\nexit 3\n")
            .finish(finish);
        let base = dir.parent().unwrap().to_path_buf();
        let args = || std::fs::read_to_string(base.join("finish-args")).unwrap_or_default();
        let _sup: Box<dyn std::any::Any> = if who == "runit" {
            Box::new(Runsv::start_any(&dir))
        } else {
            Box::new(Supervised::start("tend-supervise", &dir))
        };
        wait_until(PATIENCE, "finish after exit 3", || {
            (!args().is_empty()).then_some(())
        });
        // Killed by a signal: runit says -1 and the signal, s6 and tend 256 and the signal.
        let prog = if who == "runit" { "sv" } else { "tend-sv" };
        wait_until(PATIENCE, "the second run", || {
            runs_again(&dir).then_some(())
        });
        assert_eq!(sv(prog, &base, &["kill", "./web"]).1, 0);
        wait_until(PATIENCE, "finish after SIGKILL", || {
            (args().lines().count() == 2).then_some(())
        });
        let expected = if who == "runit" {
            "3 0\n-1 9\n"
        } else {
            "3 0\n256 9\n"
        };
        assert_eq!(args(), expected, "{who}");
    }
}

/// The service's second ./run is up in its supervisor's record (runit's or s6's): its
/// pid, not only "up", which the first run's record still says until the supervisor
/// has seen it exit.
fn runs_again(dir: &Path) -> bool {
    let Some(second) = std::fs::read_to_string(dir.parent().unwrap().join("second"))
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
    else {
        return false;
    };
    match std::fs::read(dir.join("supervise/status")) {
        Ok(b) if b.len() == 20 => {
            b[19] == 1 && u64::from(u32::from_le_bytes([b[12], b[13], b[14], b[15]])) == second
        }
        Ok(b) => tend_proto::StatusRecord::decode(&b).is_some_and(|r| is_up(&r) && r.pid == second),
        Err(_) => false,
    }
}

impl Runsv {
    /// A runsv whose service may not be up yet.
    fn start_any(dir: &Path) -> Runsv {
        require("runsv");
        let mut c = Command::new("runsv");
        c.arg(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let d = Daemon::start(c);
        wait_until(PATIENCE, "runsv to listen", || {
            runsv_listening(dir).then_some(())
        });
        Runsv { _daemon: d }
    }
}

/// A baseimage-docker-style image: `/etc/service/NAME/run` written for runit (chpst in
/// the run script, svlogd as the logger, sv for the operator), run by tend-init with its
/// services directory there, and `chpst`/`sv` being links to tend.
#[test]
fn baseimage_style_etc_service_runs_unchanged_under_tend_init() {
    require("svlogd");
    let s = Scratch::new("runit-baseimage");
    let etc = s.join("etc/service");
    ServiceDir::new(etc.join("web"))
        .run("#!/bin/sh\nexec 2>&1\nexec chpst -u nobody sh -c 'echo \"web as $(id -u)\"; exec sleep 1000'\n")
        .script("log/run", "#!/bin/sh\nmkdir -p main\nexec svlogd -tt main\n");
    ServiceDir::new(etc.join("idle")).run(SLEEPER).down();
    // runit's program names as links to tend, first on PATH.
    let links = s.join("bin");
    std::fs::create_dir_all(&links).unwrap();
    for name in ["chpst", "sv"] {
        std::os::unix::fs::symlink(bin("tend"), links.join(name)).unwrap();
    }
    let scan = s.join("run/service");
    let command = format!(
        "for i in $(seq 400); do grep -q 'web as 65534' {}/web/log/main/current 2>/dev/null && break; sleep 0.05; done; sv status web idle; sv -w 9 up idle",
        scan.display()
    );
    let mut c = cmd("tend-init");
    c.env(
        "PATH",
        format!("{}:{}", links.display(), path_env().to_string_lossy()),
    )
    .env("SVDIR", &scan)
    .arg("-s")
    .arg(&etc)
    .arg("-S")
    .arg(&scan)
    .args(["-e", "", "-i"])
    .arg(s.join("none"))
    .arg("-f")
    .arg(s.join("none"))
    .args(["sh", "-c", &command]);
    let o = run(c);
    assert_code(&o, 0);
    let out = masked(&text(&o.stdout));
    assert_eq!(
        out,
        "run: web: (pid N) Ns; run: log: (pid N) Ns\ndown: idle: Ns\nok: run: idle: (pid N) Ns, normally down\n",
        "{}",
        text(&o.stderr)
    );
    let log = std::fs::read_to_string(scan.join("web/log/main/current")).unwrap();
    assert!(log.contains(" web as 65534\n"), "{log}");
}

/// A run script that records the signals sv's letter commands send.
const SIGNALS: &str = r#"#!/bin/sh
for s in ALRM INT QUIT USR1 USR2 HUP CONT; do trap "echo $s >> ../signals" $s; done
echo started >> ../signals
while :; do sleep 1 & wait $!; done
"#;

#[test]
fn sv_signal_commands_reach_the_service_like_runits() {
    require("runsv");
    let s = Scratch::new("sv-signals");
    let words = ["alarm", "interrupt", "quit", "1", "2", "hup", "cont"];
    let mut seen = Vec::new();
    for (prog, sup) in [
        ("sv", "runsv"),
        ("tend-sv", "tend-supervise"),
        ("tend-sv", "s6-supervise"),
    ] {
        let base = s.join(sup);
        let web = ServiceDir::new(base.join("web")).run(SIGNALS).path();
        let log = base.join("signals");
        let lines = || std::fs::read_to_string(&log).unwrap_or_default();
        let _guard: Box<dyn std::any::Any> = if sup == "runsv" {
            Box::new(Runsv::start(&web))
        } else {
            Box::new(Supervised::start(sup, &web))
        };
        wait_until(PATIENCE, "the service to start", || {
            lines().starts_with("started\n").then_some(())
        });
        for (i, w) in words.iter().enumerate() {
            assert_eq!(
                sv(prog, &base, &[w, "./web"]),
                (String::new(), 0),
                "{prog} {w}"
            );
            // One at a time: the shell runs one trap per wake-up.
            wait_until(PATIENCE, "the signal to be recorded", || {
                (lines().lines().count() == i + 2).then_some(())
            });
        }
        seen.push(lines());
    }
    assert_eq!(seen[0], "started\nALRM\nINT\nQUIT\nUSR1\nUSR2\nHUP\nCONT\n");
    assert_eq!(seen[1], seen[0], "tend-supervise");
    assert_eq!(seen[2], seen[0], "s6-supervise");
}

#[test]
fn sv_finds_services_in_svdir_else_tend_scandir() {
    let s = Scratch::new("sv-svdir");
    let web = ServiceDir::new(s.join("scan/web")).run(SLEEPER).path();
    let sup = Supervised::start("tend-supervise", &web);
    sup.wait_up();
    let status = |vars: &[(&str, &Path)]| {
        let mut c = cmd("tend-sv");
        c.args(["status", "web"])
            .current_dir(&s.path)
            .env_remove("SVDIR")
            .env_remove("TEND_SCANDIR");
        for (k, v) in vars {
            c.env(k, v);
        }
        let o = run(c);
        (masked(&text(&o.stdout)), o.status.code().unwrap_or(-1))
    };
    let up = ("run: web: (pid N) Ns\n".to_string(), 0);
    assert_eq!(status(&[("TEND_SCANDIR", &s.join("scan"))]), up);
    assert_eq!(status(&[("SVDIR", &s.join("scan"))]), up);
    // SVDIR wins.
    assert_eq!(
        status(&[
            ("SVDIR", &s.join("elsewhere")),
            ("TEND_SCANDIR", &s.join("scan"))
        ]),
        (
            "fail: web: unable to change to service directory: file does not exist\n".into(),
            1
        )
    );
}

#[test]
fn sv_force_stop_kills_a_stubborn_service_like_runits() {
    require("runsv");
    let s = Scratch::new("sv-force");
    // `ignoring` says the trap is set: "up" is the fork, and a TERM before the trap
    // would stop the shell (seen under load: tend's side then said "ok: down").
    let stubborn = "#!/bin/sh\ntrap '' TERM\n: > ignoring\nexec sleep 1000\n";
    let mut seen = Vec::new();
    for (prog, sup) in [("sv", "runsv"), ("tend-sv", "tend-supervise")] {
        let base = s.join(sup);
        let web = ServiceDir::new(base.join("web")).run(stubborn).path();
        let _guard: Box<dyn std::any::Any> = if sup == "runsv" {
            Box::new(Runsv::start(&web))
        } else {
            let g = Supervised::start(sup, &web);
            g.wait_up();
            Box::new(g)
        };
        wait_until(PATIENCE, "the TERM trap set", || {
            web.join("ignoring").exists().then_some(())
        });
        // TERM is ignored: the wait times out, `kill:` is reported and SIGKILL sent.
        let forced = sv(prog, &base, &["-w", "1", "force-stop", "./web"]);
        let after = sv(prog, &base, &["-w", "9", "down", "./web"]);
        seen.push((forced, after));
    }
    assert_eq!(
        seen[0],
        (
            (
                "kill: run: ./web: (pid N) Ns, want down, got TERM\n".into(),
                1
            ),
            ("ok: down: ./web: Ns, normally up\n".into(), 0)
        )
    );
    // s6's record has no "got TERM" flag: the one difference (tend-sv(8), NOTES).
    let mut want = seen[0].clone();
    want.0.0 = want.0.0.replace(", got TERM", "");
    assert_eq!(seen[1], want, "tend-sv on tend-supervise");
}

/// The stemcell's accounts the releases' run scripts name: vcap (primary group vcap, and in
/// adm too, so a stray initgroups would show) and syslog. Created once, left in place, as
/// a stemcell has them.
fn stemcell_accounts() {
    let sh = |script: &str| {
        wait_until(PATIENCE, "the stemcell accounts", || {
            let mut c = Command::new("sh");
            c.args(["-c", script])
                .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
            run(c).status.success().then_some(())
        })
    };
    sh("getent group vcap >/dev/null || groupadd vcap");
    sh("id vcap >/dev/null 2>&1 || useradd -M -N -g vcap -G adm -s /usr/sbin/nologin vcap");
    sh("id syslog >/dev/null 2>&1 || useradd --system -M -s /usr/sbin/nologin syslog");
}

#[test]
fn chpst_release_call_forms_like_runit() {
    require("chpst");
    if !root_or_skip() {
        return;
    }
    stemcell_accounts();
    let p = Probe::new("chpst-release-forms");
    let gid = |g: &str| {
        let o = run({
            let mut c = Command::new("getent");
            c.args(["group", g]);
            c
        });
        text(&o.stdout)
            .split(':')
            .nth(2)
            .unwrap_or_default()
            .to_string()
    };
    let (vcap, adm) = (gid("vcap"), gid("adm"));
    // The forms capi, diego, syslog and the other core releases call, then with an
    // envdir and limits as a run script combines them.
    let env = p.s.path.join("env");
    std::fs::create_dir_all(&env).unwrap();
    std::fs::write(env.join("A"), "from-envdir\n").unwrap();
    let env = env.to_str().unwrap().to_string();
    for args in [
        &["-u", "vcap:vcap"][..],
        &["-u", "syslog:vcap"],
        &["-u", "root:root"],
        &[],
        &["-u", "vcap"],
        &["-u", "vcap:vcap:adm"],
        &[
            "-U",
            "vcap:vcap",
            "-u",
            "vcap:vcap",
            "-e",
            &env,
            "-o",
            "4096",
            "-n",
            "1",
        ],
    ] {
        p.same(args);
    }
    // runit's -u user:group sets exactly the groups listed: vcap's adm membership is not
    // added.
    let r = p.same(&["-u", "vcap:vcap"]);
    assert!(r.contains(&format!(" gids={vcap}\n")), "{r}");
    let r = p.same(&["-u", "vcap:vcap:adm"]);
    assert!(r.contains(&format!(" gids={vcap} {adm}\n")), "{r}");
    let r = p.same(&["-u", "root:root"]);
    assert!(r.contains("uid=0 gids=0\n"), "{r}");
}

/// A directory of runit's names linked to tend's multi-call executable, as
/// `packaging/install.sh -r` installs them; PATH for it (tend's programs next).
fn runit_names(s: &Scratch) -> (PathBuf, std::ffi::OsString) {
    let dir = s.join("runit-bin");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["chpst", "sv", "runsvdir", "runsv"] {
        std::os::unix::fs::symlink(multicall(), dir.join(name)).unwrap();
    }
    let mut path = dir.clone().into_os_string();
    path.push(":");
    path.push(path_env());
    (dir, path)
}

#[test]
fn runsvdir_name_runs_a_runit_tree_as_stage_2_does() {
    if !root_or_skip() {
        return;
    }
    stemcell_accounts();
    let s = Scratch::new("runsvdir-name");
    // runsvdir's SIGTERM leaves the supervisors running: they go with the directory.
    let _kill = KillUnder(s.path.clone());
    std::fs::set_permissions(&s.path, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let (bin, path) = runit_names(&s);
    let scan = s.join("service");
    let out = s.join("ids");
    ServiceDir::new(scan.join("app")).run(&format!(
        "#!/bin/sh\nexec 2>&1\nexec chpst -u vcap:vcap sh -c 'echo \"$(id -un):$(id -gn) $(id -G)\" > {}; echo started; exec sleep 1000'\n",
        out.display()
    ));
    ServiceDir::new(scan.join("app/log")).run(&format!(
        "#!/bin/sh\nexec cat > {}\n",
        s.join("log.out").display()
    ));
    // Stage 2's command line, runit's log argument included.
    let mut c = Command::new(bin.join("runsvdir"));
    c.args(["-P", scan.to_str().unwrap(), "log: ......................."])
        .env("PATH", &path)
        .stderr(Stdio::piped());
    let mut d = Daemon::start(c);
    let ids = wait_until(PATIENCE, "the run script's chpst -u vcap:vcap", || {
        std::fs::read_to_string(&out)
            .ok()
            .filter(|t| t.ends_with('\n'))
    });
    let vcap_gid = text(
        &run({
            let mut c = Command::new("id");
            c.args(["-g", "vcap"]);
            c
        })
        .stdout,
    );
    assert_eq!(ids, format!("vcap:vcap {vcap_gid}"));
    wait_until(PATIENCE, "the log service's line", || {
        std::fs::read_to_string(s.join("log.out"))
            .ok()
            .filter(|t| t == "started\n")
    });
    // sv by runit's name, on SVDIR as a `service` wrapper calls it.
    let sv = |args: &[&str]| {
        let mut c = Command::new(bin.join("sv"));
        c.args(args).env("SVDIR", &scan).env("PATH", &path);
        run(c)
    };
    // The ids and the log line come from the run's exec chain; the supervisor says run
    // once it has seen ./run's exec, which under load can come later (sweep C34).
    wait_until(PATIENCE, "sv status app: run", || {
        text(&sv(&["status", "app"]).stdout)
            .starts_with("run: app: (pid ")
            .then_some(())
    });
    // -P: each supervisor leads a session of its own.
    let sup = wait_until(PATIENCE, "app's supervisor", || {
        let pid: i32 = text(&sv(&["status", "app"]).stdout)
            .split("(pid ")
            .nth(1)?
            .split(')')
            .next()?
            .parse()
            .ok()?;
        parent_of(pid)
    });
    let stat = std::fs::read_to_string(format!("/proc/{sup}/stat")).unwrap();
    let fields: Vec<&str> = stat.rsplit(") ").next().unwrap().split(' ').collect();
    assert_eq!(fields[3], sup.to_string(), "session of {sup}: {stat}");
    let o = sv(&["-w", "5", "down", "app"]);
    assert_code(&o, 0);
    assert!(text(&sv(&["status", "app"]).stdout).starts_with("down: app: "));
    // The log argument is said, once, not dropped silently.
    d.signal(nix::sys::signal::Signal::SIGTERM);
    assert!(d.wait_exit(PATIENCE).is_some(), "runsvdir did not stop");
    // Its supervisors, left running as runsvdir leaves them, hold its stderr open.
    kill_under(&s.path);
    let mut err = String::new();
    std::io::Read::read_to_string(d.child.stderr.as_mut().unwrap(), &mut err).unwrap();
    let said = "tend-svscan: warning: runsvdir's log argument is not kept: errors go to stderr";
    assert_eq!(err.lines().filter(|l| *l == said).count(), 1, "{err}");
}

#[test]
fn runsvdir_and_runsv_names_refuse_what_they_cannot_do() {
    let s = Scratch::new("runsv-name");
    let (bin, path) = runit_names(&s);
    ServiceDir::new(s.join("svc")).run(SLEEPER);
    ServiceDir::new(s.join("svc/log")).run(SLEEPER);
    let o = run({
        let mut c = Command::new(bin.join("runsv"));
        c.arg(s.join("svc")).env("PATH", &path);
        c
    });
    assert_code(&o, 100);
    assert_eq!(
        text(&o.stderr),
        format!(
            "tend-supervise: fatal: {}/log: runsv's log service needs runsvdir (tend-svscan) here\n",
            s.join("svc").display()
        )
    );
    for args in [&[][..], &["-P"], &["a", "b", "c"]] {
        let o = run({
            let mut c = Command::new(bin.join("runsvdir"));
            c.args(args).env("PATH", &path);
            c
        });
        assert_code(&o, 100);
        assert_eq!(
            text(&o.stderr),
            "tend-svscan: usage: runsvdir [ -P ] dir [ log ]\n"
        );
    }
}

/// The live processes whose working directory is under `dir` (supervisors and services),
/// but `not` (tend's runsvdir works in the directory).
fn alive_under(dir: &Path, not: i32) -> Vec<i32> {
    let mut v = procs_under(dir);
    v.retain(|&p| p != not);
    v.sort();
    v
}

/// What a runsvdir does on `sig` with one service (and its logger) running: its exit
/// status, and whether the supervisors and the service were still there a second later.
fn runsvdir_on(prog: &Path, path: &std::ffi::OsStr, sig: nix::sys::signal::Signal) -> (i32, bool) {
    let s = Scratch::new("runsvdir-signal");
    let _kill = KillUnder(s.path.clone());
    let scan = s.join("service");
    let pidfile = s.join("app.pid");
    ServiceDir::new(scan.join("app")).run(&format!(
        "#!/bin/sh\necho $$ > {}\nexec sleep 1000\n",
        pidfile.display()
    ));
    let logpid = s.join("log.pid");
    ServiceDir::new(scan.join("app/log")).run(&format!(
        "#!/bin/sh\necho $$ > {}\nexec cat > /dev/null\n",
        logpid.display()
    ));
    let mut c = Command::new(prog);
    c.args(["-P", scan.to_str().unwrap()]).env("PATH", path);
    let mut d = Daemon::start(c);
    let app: i32 = wait_until(PATIENCE, "the service running", || {
        std::fs::read_to_string(&pidfile).ok()?.trim().parse().ok()
    });
    let logger: i32 = wait_until(PATIENCE, "the logger running", || {
        std::fs::read_to_string(&logpid).ok()?.trim().parse().ok()
    });
    // The service, its supervisor, the logger and its supervisor (runit: one runsv for
    // both; tend: a supervisor each). Each supervisor is up before its child, so with
    // both children running the tree is whole (a count alone once caught tend's tree
    // with its logger's supervisor up and the logger not yet: the logger's start then
    // looked like a change, and the test waited for a tree that stays).
    let before = wait_until(PATIENCE, "the whole tree up", || {
        let v = alive_under(&scan, d.pid());
        (v.contains(&app) && v.contains(&logger) && v.len() >= 3).then_some(v)
    });
    d.signal(sig);
    let st = d.wait_exit(PATIENCE).expect("runsvdir exits on the signal");
    let code = st.code().unwrap_or(-1);
    let mut left = true;
    // Whatever it does to its supervisors, it has done it within a second.
    let t0 = std::time::Instant::now();
    while t0.elapsed() < Duration::from_secs(3) {
        if alive_under(&scan, d.pid()) != before {
            left = false;
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    if !left {
        wait_until(PATIENCE, "every supervisor and the service gone", || {
            alive_under(&scan, d.pid()).is_empty().then_some(())
        });
    }
    (code, left)
}

#[test]
fn runsvdir_term_and_hup_as_runits_runsvdir() {
    use nix::sys::signal::Signal;
    let s = Scratch::new("runsvdir-signal-names");
    let (bin, path) = runit_names(&s);
    let tend = [
        runsvdir_on(&bin.join("runsvdir"), &path, Signal::SIGTERM),
        runsvdir_on(&bin.join("runsvdir"), &path, Signal::SIGHUP),
    ];
    // runsvdir(8): TERM exits 0 at once (every runsv left running); HUP sends TERM to
    // every runsv and exits 111.
    assert_eq!(tend, [(0, true), (111, false)], "tend's runsvdir");
    if !have("runsvdir") || !have("runsv") {
        skip("runsvdir_term_and_hup_as_runits_runsvdir: runit is not installed");
        return;
    }
    let runit = std::ffi::OsString::from("/usr/bin:/bin");
    let theirs = [
        runsvdir_on(Path::new("/usr/bin/runsvdir"), &runit, Signal::SIGTERM),
        runsvdir_on(Path::new("/usr/bin/runsvdir"), &runit, Signal::SIGHUP),
    ];
    assert_eq!(theirs, tend, "runit's runsvdir, then tend's");
}
