//! Instanced services: tend-instance-maker, -create, -delete, -control, -status, -list
//! beside s6 2.11.3's s6-instance-* on the same template, each side's tools on the other's
//! trees, 100 instances under a watching client, and bad input.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A scanner on a fresh scan directory holding `service` (linked as `name`).
fn scanner(s: &Scratch, prog: &str, service: &Path) -> (Daemon, PathBuf) {
    let scan = s.join(format!("scan-{prog}"));
    std::fs::create_dir_all(&scan).unwrap();
    std::os::unix::fs::symlink(service, scan.join(service.file_name().unwrap())).unwrap();
    let mut c = cmd(prog);
    c.arg(&scan).current_dir(&s.path);
    c.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null());
    c.stderr(std::fs::File::create(s.join(format!("{prog}.err"))).unwrap());
    let d = Daemon::start(c);
    wait_until(PATIENCE, "the instance scanner", || {
        tend_proto::control::send_in(&service.join("instance"), ".s6-svscan", b"").ok()
    });
    (d, scan)
}

/// `tool` is "s6" or "tend": the program s6-instance-WHAT or tend-instance-WHAT.
fn tool(side: &str, what: &str) -> std::process::Command {
    cmd(&format!("{side}-instance-{what}"))
}

fn ok(mut c: std::process::Command, args: &[&dyn AsRef<std::ffi::OsStr>]) -> String {
    for a in args {
        c.arg(a);
    }
    let o = run(c);
    assert_code(&o, 0);
    text(&o.stdout)
}

/// Every path under `tree` with its type, leaving out what supervisors and scanners make
/// for themselves (supervise/, event/, .s6-svscan/) and the two top-level run scripts'
/// wording (each side calls its own programs).
fn layout(tree: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let rel = e
                .path()
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let n = e.file_name();
            if n == "supervise" || n == "event" || n == ".s6-svscan" {
                continue;
            }
            let ft = e.file_type().unwrap();
            if ft.is_symlink() {
                out.push(format!(
                    "{rel} -> {}",
                    std::fs::read_link(e.path()).unwrap().display()
                ));
            } else if ft.is_dir() {
                out.push(format!("{rel}/"));
                walk(root, &e.path(), out);
            } else {
                let body = std::fs::read_to_string(e.path()).unwrap_or_default();
                let body = if rel == "run" || rel == "log/run" {
                    ""
                } else {
                    &body
                };
                out.push(format!("{rel}: {body:?}"));
            }
        }
    }
    let mut v = Vec::new();
    walk(tree, tree, &mut v);
    v.sort();
    v
}

fn up(side: &str, tree: &Path, name: &str) -> Option<bool> {
    let mut c = tool(side, "status");
    c.arg("-u").arg(tree).arg(name);
    let o = run(c);
    (o.status.code() == Some(0)).then(|| text(&o.stdout).trim() == "true")
}

/// Make a tree with `maker`'s s6-instance-maker or tend-instance-maker, run it under that
/// side's scanner, and drive it with `tools`' programs; what the tree looks like after.
fn exercise(s: &Scratch, maker: &str, tools: &str) -> Vec<String> {
    let template = ServiceDir::new(s.join("template"))
        .run("#!/bin/sh\necho \"instance $1\"\nexec sleep 1000\n")
        .path();
    let tree = s.join(format!("svc-{maker}-{tools}"));
    ok(tool(maker, "maker"), &[&template, &tree]);
    let (_d, _scan) = scanner(s, &format!("{maker}-svscan"), &tree);
    ok(tool(tools, "create"), &[&"-t", &"20000", &tree, &"foo"]);
    ok(
        tool(tools, "create"),
        &[&"-D", &"-t", &"20000", &tree, &"bar"],
    );
    wait_until(PATIENCE, "foo up", || {
        up(tools, &tree, "foo").filter(|&u| u)
    });
    assert_eq!(up(tools, &tree, "bar"), Some(false), "{maker} {tools}");
    ok(
        tool(tools, "control"),
        &[&"-wu", &"-T", &"20000", &"-u", &tree, &"bar"],
    );
    assert_eq!(up(tools, &tree, "bar"), Some(true), "{maker} {tools}");
    ok(tool(tools, "create"), &[&"-t", &"20000", &tree, &"gone"]);
    ok(tool(tools, "delete"), &[&"-t", &"20000", &tree, &"gone"]);
    let mut listed: Vec<String> = ok(tool(tools, "list"), &[&tree])
        .lines()
        .map(str::to_owned)
        .collect();
    listed.sort();
    assert_eq!(listed, ["bar", "foo"], "{maker} {tools}");
    ok(
        tool(tools, "control"),
        &[&"-wd", &"-T", &"20000", &"-d", &tree, &"foo"],
    );
    assert_eq!(up(tools, &tree, "foo"), Some(false), "{maker} {tools}");
    layout(&tree)
}

#[test]
fn same_layout_and_states_as_s6_both_ways() {
    require("s6-instance-maker");
    let mut seen = Vec::new();
    for (maker, tools) in [
        ("s6", "s6"),
        ("s6", "tend"),
        ("tend", "tend"),
        ("tend", "s6"),
    ] {
        let s = Scratch::new(&format!("instance-{maker}-{tools}"));
        let _k = KillUnder(s.path.clone());
        seen.push(((maker, tools), exercise(&s, maker, tools)));
    }
    for (who, l) in &seen[1..] {
        assert_eq!(l, &seen[0].1, "{who:?} against s6's tools on s6's tree");
    }
}

/// Instance supervisors still running with a working directory under `instances`.
fn supervisors_under(instances: &Path) -> usize {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return 0;
    };
    procs
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_link(e.path().join("cwd")).ok())
        .filter(|cwd| cwd.starts_with(instances))
        .count()
}

#[test]
fn hundred_instances_created_and_deleted_under_a_watching_client() {
    let s = Scratch::new("instance-100");
    let _k = KillUnder(s.path.clone());
    let template = ServiceDir::new(s.join("template")).run(SLEEPER).path();
    let tree = s.join("svc");
    ok(tool("tend", "maker"), &[&template, &tree]);
    let (_d, _scan) = scanner(&s, "tend-svscan", &tree);
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (stop, tree) = (stop.clone(), tree.clone());
        std::thread::spawn(move || {
            let mut bad = Vec::new();
            let mut rounds = 0u64;
            while !stop.load(Ordering::Relaxed) {
                rounds += 1;
                let o = run({
                    let mut c = tool("tend", "list");
                    c.arg(&tree);
                    c
                });
                if o.status.code() != Some(0) {
                    bad.push(format!("list: {o:?}"));
                }
                for name in text(&o.stdout).lines() {
                    let mut c = tool("tend", "status");
                    c.arg(&tree).arg(name);
                    let o = run(c);
                    // 0, or 1/111 when the instance went between list and status; never
                    // a signal, never more than one line.
                    let lines = text(&o.stderr).lines().count();
                    if !matches!(o.status.code(), Some(0 | 1 | 111)) || lines > 1 {
                        bad.push(format!("status {name}: {o:?}"));
                    }
                }
            }
            (bad, rounds)
        })
    };
    for i in 0..100 {
        ok(
            tool("tend", "create"),
            &[&"-t", &"20000", &tree, &format!("i{i}")],
        );
    }
    let listed = ok(tool("tend", "list"), &[&tree]);
    assert_eq!(listed.lines().count(), 100);
    for i in 0..100 {
        ok(
            tool("tend", "delete"),
            &[&"-t", &"20000", &tree, &format!("i{i}")],
        );
    }
    stop.store(true, Ordering::Relaxed);
    let (bad, rounds) = watcher.join().unwrap();
    assert!(bad.is_empty(), "the watching client saw: {bad:#?}");
    assert!(rounds > 0);
    assert_eq!(ok(tool("tend", "list"), &[&tree]), "");
    let left: Vec<_> = std::fs::read_dir(tree.join("instances"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "left in instances/: {left:?}");
    wait_until(PATIENCE, "no instance supervisor left", || {
        (supervisors_under(&tree.join("instances")) == 0).then_some(())
    });
}

#[test]
fn bad_input_one_line_and_s6s_codes() {
    require("s6-instance-maker");
    let s = Scratch::new("instance-bad");
    let _k = KillUnder(s.path.clone());
    let template = ServiceDir::new(s.join("template")).run(SLEEPER).path();
    let tree = s.join("svc");
    ok(tool("tend", "maker"), &[&template, &tree]);
    let (_d, _scan) = scanner(&s, "tend-svscan", &tree);
    let code = |side: &str, what: &str, args: &[&dyn AsRef<std::ffi::OsStr>]| {
        let mut c = tool(side, what);
        for a in args {
            c.arg(a);
        }
        let o = run(c);
        (o.status.code(), text(&o.stderr))
    };
    // Names s6 refuses too: the same code (100) and tend's one line.
    for name in ["", "..", ".hidden", "a b"] {
        for what in ["create", "delete", "control", "status"] {
            let (c, err) = code("tend", what, &[&tree, &name]);
            assert_eq!(c, Some(100), "{what} {name:?}: {err}");
            assert_eq!(
                err,
                format!("tend-instance-{what}: fatal: invalid instance name\n")
            );
            assert_eq!(
                code("s6", what, &[&tree, &name]).0,
                Some(100),
                "s6 {what} {name:?}"
            );
        }
    }
    // A slash: s6 2.11.3 lets it through to the path; tend refuses it as a name.
    for what in ["create", "delete", "control", "status"] {
        let (c, err) = code("tend", what, &[&tree, &"a/b"]);
        assert_eq!(c, Some(100), "{what}: {err}");
        assert_eq!(
            err,
            format!("tend-instance-{what}: fatal: invalid instance name\n")
        );
    }
    // No such instance: s6's codes (control 111, status 1, delete 0), one line each.
    for (what, want) in [("control", 111), ("status", 1), ("delete", 0)] {
        let args: &[&dyn AsRef<std::ffi::OsStr>] = if what == "control" {
            &[&"-u", &tree, &"nope"]
        } else {
            &[&tree, &"nope"]
        };
        let (c, err) = code("tend", what, args);
        assert_eq!(c, Some(want), "{what}: {err}");
        assert_eq!(code("s6", what, args).0, Some(want), "s6 {what}");
        if want != 0 {
            assert!(
                err.starts_with(&format!("tend-instance-{what}: fatal: "))
                    && err.lines().count() == 1,
                "{what}: {err}"
            );
        }
    }
    // s6's names run tend's programs: a link called s6-instance-list to the multi-call tend.
    let link = s.join("s6-instance-list");
    std::os::unix::fs::symlink(multicall(), &link).unwrap();
    ok(tool("tend", "create"), &[&"-t", &"20000", &tree, &"one"]);
    let mut c = std::process::Command::new(&link);
    c.arg(&tree).env("PATH", path_env());
    let o = run(c);
    assert_code(&o, 0);
    assert_eq!(text(&o.stdout), "one\n");
    // Created twice: 100 on both sides (the second s6 call is on tend's tree).
    let (c, err) = code("tend", "create", &[&tree, &"one"]);
    assert_eq!(c, Some(100), "{err}");
    assert_eq!(
        err,
        format!(
            "tend-instance-create: fatal: instance appears to already exist at {}\n",
            tree.join("instances/one").display()
        )
    );
    assert_eq!(code("s6", "create", &[&tree, &"one"]).0, Some(100));
    // A missing template, and a dir that exists: 111 on both sides, one line.
    let missing = s.join("no-template");
    for (args, what) in [
        (vec![missing.clone(), s.join("new")], "missing template"),
        (vec![template.clone(), tree.clone()], "existing dir"),
    ] {
        let a: Vec<&dyn AsRef<std::ffi::OsStr>> = args.iter().map(|p| p as _).collect();
        let (c, err) = code("tend", "maker", &a);
        assert_eq!(c, Some(111), "{what}: {err}");
        assert!(err.starts_with("tend-instance-maker: fatal: ") && err.lines().count() == 1);
        assert_eq!(code("s6", "maker", &a).0, Some(111), "s6: {what}");
    }
    assert!(!s.join("new").exists() || std::fs::read_dir(s.join("new")).is_ok());
    // A service that is not an instanced one: 111 on both sides.
    let plain = ServiceDir::new(s.join("plain")).run(SLEEPER).path();
    let (c, err) = code("tend", "create", &[&plain, &"x"]);
    assert_eq!(c, Some(111), "{err}");
    assert!(err.starts_with("tend-instance-create: fatal: ") && err.lines().count() == 1);
    assert_eq!(code("s6", "create", &[&plain, &"x"]).0, Some(111));
    // A tree whose scanner has stopped: 1, "instanced service not running on", both sides.
    let stopped = s.join("stopped");
    ok(tool("tend", "maker"), &[&template, &stopped]);
    {
        let sub = Scratch::new("instance-stopped");
        let _k = KillUnder(sub.path.clone());
        let (_d, _scan) = scanner(&sub, "tend-svscan", &stopped);
        // Down: its supervisor stops the instance scanner and leaves it stopped.
        let mut c = cmd("tend-svc");
        c.args(["-wd", "-T", "20000", "-d"]).arg(&stopped);
        assert_code(&run(c), 0);
        wait_until(PATIENCE, "the instance scanner gone", || {
            let lock = stopped.join("instance/.s6-svscan/lock");
            (!tend_proto::lock::is_held(&lock).unwrap()).then_some(())
        });
    }
    for what in ["create", "list"] {
        let args: &[&dyn AsRef<std::ffi::OsStr>] = if what == "list" {
            &[&stopped]
        } else {
            &[&stopped, &"x"]
        };
        let (c, err) = code("tend", what, args);
        assert_eq!(c, Some(1), "{what}: {err}");
        assert_eq!(
            err,
            format!(
                "tend-instance-{what}: fatal: instanced service not running on {}\n",
                stopped.display()
            )
        );
        assert_eq!(code("s6", what, args).0, Some(1), "s6 {what}");
    }
    // Usage: 100 on both sides.
    for what in ["maker", "create", "delete", "control", "status", "list"] {
        let (c, err) = code("tend", what, &[]);
        assert_eq!(c, Some(100), "{what}");
        assert!(
            err.starts_with(&format!("tend-instance-{what}: usage: ")),
            "{err}"
        );
        assert_eq!(code("s6", what, &[]).0, Some(100), "s6 {what}");
    }
}

/// A logged template: each instance gets its own logger (run with `NAME/log`), create
/// waits for both supervisors, delete leaves neither; `-L` logs the scanner and the
/// instances' catch-all output. s6's tools on s6's tree, then tend's on tend's.
#[test]
fn logged_template_and_catch_all_logger_both_sides() {
    require("s6-instance-maker");
    for side in ["s6", "tend"] {
        let s = Scratch::new(&format!("instance-logged-{side}"));
        let _k = KillUnder(s.path.clone());
        let out = s.join("out");
        std::fs::create_dir(&out).unwrap();
        let template = ServiceDir::new(s.join("template"))
            .run("#!/bin/sh\necho \"instance $1\"\necho \"to stderr $1\" >&2\nexec sleep 1000\n")
            .script(
                "log/run",
                &format!(
                    "#!/bin/sh\nexec cat >> '{}'/\"$(echo \"$1\" | tr / _)\"\n",
                    out.display()
                ),
            )
            .path();
        let tree = s.join("svc");
        let logdir = s.join("catchall");
        ok(tool(side, "maker"), &[&"-L", &logdir, &template, &tree]);
        let (_d, _scan) = scanner(&s, &format!("{side}-svscan"), &tree);
        ok(tool(side, "create"), &[&"-t", &"20000", &tree, &"foo"]);
        assert!(running(&tree.join("instances/foo")), "{side}");
        assert!(running(&tree.join("instances/foo/log")), "{side}");
        wait_until(PATIENCE, "foo's own log", || {
            std::fs::read_to_string(out.join("foo_log"))
                .ok()
                .filter(|t| t.contains("instance foo"))
        });
        wait_until(PATIENCE, "the catch-all log", || {
            std::fs::read_to_string(logdir.join("current"))
                .ok()
                .filter(|t| t.contains("to stderr foo"))
        });
        // The supervisors, the service and its logger all run in instances/foo/...
        assert!(supervisors_under(&tree.join("instances")) >= 4, "{side}");
        ok(tool(side, "delete"), &[&"-t", &"20000", &tree, &"foo"]);
        assert!(!tree.join("instances/foo").exists(), "{side}");
        wait_until(PATIENCE, "no instance supervisor left", || {
            (supervisors_under(&tree.join("instances")) == 0).then_some(())
        });
    }
}

/// The reported scanner bug (a logged service removed from the scan directory, then
/// `svscanctl -an`: tend-svscan said to leave the logger's supervisor running where
/// s6-svscan stops both). Both scanners, a link and a real directory, loggers that exit at
/// end of input (cat, s6-log, tend-log): both supervisors go on each. A logger that ignores
/// end of input (sleep) stays on both scanners alike, so it is not part of the claim.
#[test]
fn removed_logged_service_loses_both_supervisors_on_both_scanners() {
    require("s6-svscan");
    for scan_prog in ["s6-svscan", "tend-svscan"] {
        for logger in ["cat > /dev/null", "s6-log -- ./logs", "tend-log -- ./logs"] {
            for linked in [true, false] {
                let s = Scratch::new("prune-logged");
                let _k = KillUnder(s.path.clone());
                let scan = s.join("scan");
                std::fs::create_dir(&scan).unwrap();
                let place = if linked {
                    s.join("sv")
                } else {
                    scan.join("sv")
                };
                let dir = ServiceDir::new(&place)
                    .run("#!/bin/sh\necho hello\nexec sleep 1000\n")
                    .script("log/run", &format!("#!/bin/sh\nexec {logger}\n"))
                    .path();
                if linked {
                    std::os::unix::fs::symlink(&dir, scan.join("sv")).unwrap();
                }
                let mut c = cmd(scan_prog);
                c.arg(&scan).current_dir(&s.path);
                c.stdin(std::process::Stdio::null());
                let _d = Daemon::start(c);
                let what = format!("{scan_prog} {logger} linked={linked}");
                wait_until(PATIENCE, &what, || {
                    (running(&dir) && running(&dir.join("log"))).then_some(())
                });
                // Both supervisors and both processes they run.
                wait_until(PATIENCE, &format!("{what}: 4 processes"), || {
                    (supervisors_under(&place) >= 4).then_some(())
                });
                if linked {
                    std::fs::remove_file(scan.join("sv")).unwrap();
                } else {
                    // Moved out rather than removed, so the processes can still be found.
                    std::fs::rename(&place, s.join("moved")).unwrap();
                }
                let mut c = cmd("s6-svscanctl");
                c.arg("-an").arg(&scan);
                assert_code(&run(c), 0);
                let gone_from = if linked {
                    place.clone()
                } else {
                    s.join("moved")
                };
                wait_until(PATIENCE, &format!("{what}: no supervisor left"), || {
                    (supervisors_under(&gone_from) == 0).then_some(())
                });
            }
        }
    }
}

/// `-r service[/logger[/pipeline]]`: s6-rc source definitions instead of a service
/// directory, the same files as s6-instance-maker's (the run scripts call each side's own
/// programs), and s6's usage errors for a logger without -L and -L without a logger.
#[test]
fn maker_r_writes_s6_rc_definitions_as_s6() {
    require("s6-instance-maker");
    let s = Scratch::new("instance-maker-r");
    let template = s.join("template");
    std::fs::create_dir(&template).unwrap();
    s.write("template/run", "#!/bin/sh\nexec sleep 100\n", true);
    let logdir = s.join("logs");
    let logdir = logdir.to_str().unwrap();
    let cases: &[&[&str]] = &[
        &["-r", "svc"],
        &["-r", "svc/lg", "-L", logdir],
        &["-r", "svc/lg/pl", "-L", logdir],
    ];
    let blank_runs = |v: Vec<String>| -> Vec<String> {
        v.into_iter()
            .map(|l| match l.split_once(": ") {
                Some((p, _)) if p.ends_with("run") && !p.contains("template") => {
                    format!("{p}: (run)")
                }
                _ => l,
            })
            .collect()
    };
    for (i, args) in cases.iter().enumerate() {
        let made = |side: &str| {
            let out = s.join(format!("{side}{i}"));
            let mut c = tool(side, "maker");
            c.args(*args).arg(&template).arg(&out);
            assert_code(&run(c), 0);
            blank_runs(layout(&out))
        };
        let ours = made("tend");
        assert_eq!(ours, made("s6"), "{args:?}");
        assert!(
            ours.iter().any(|l| l == "svc/type: \"longrun\\n\""),
            "{ours:?}"
        );
    }
    for args in [
        &["-r", "svc/lg"][..],
        &["-r", "svc", "-L", logdir][..],
        &["-r", "a/b/c/d"][..],
    ] {
        for side in ["s6", "tend"] {
            let mut c = tool(side, "maker");
            c.args(args)
                .arg(&template)
                .arg(s.join(format!("bad-{side}")));
            let o = run(c);
            assert_code(&o, 100);
            if side == "tend" {
                let e = text(&o.stderr);
                assert!(
                    e.starts_with("tend-instance-maker: ") && e.lines().count() == 1,
                    "{e}"
                );
            }
        }
    }
}
