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
use std::os::unix::fs::PermissionsExt;
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

#[test]
fn chpst_changes_the_process_like_runit() {
    require("chpst");
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
    let busybox = Path::new("/bin/busybox");
    if !busybox.exists() {
        eprintln!("skipped: needs busybox-static for a root with a shell");
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
