//! The service-tree tools of issue 25 against s6 2.11.3's: tend-svdt and tend-svdt-clear
//! (on tallies written by tend-supervise and by s6-supervise), tend-permafailon,
//! tend-fghack, tend-svlisten1 and tend-svlisten.
//!
//! Not tested here: tend-svdt on a tally of more than 4096 records (the supervisors never
//! write one).

use crate::common::*;
use std::path::Path;

const SUPERVISORS: [&str; 2] = ["s6-supervise", "tend-supervise"];

fn tally_len(dir: &Path) -> usize {
    std::fs::metadata(dir.join("supervise/death_tally")).map_or(0, |m| m.len() as usize)
}

fn wait_deaths(dir: &Path, n: usize) {
    wait_until(PATIENCE, &format!("{n} deaths in the tally"), || {
        (tally_len(dir) == n * 14).then_some(())
    });
}

/// Kill the running service with `letter` and wait until it is recorded and up again.
fn kill_with(sv: &Supervised, letter: &str, deaths: usize) {
    let pid = sv.wait_up().pid;
    sv.send(letter);
    wait_deaths(&sv.dir, deaths);
    sv.wait_status("up again", |r| is_up(r) && r.pid != pid);
}

#[test]
fn svdt_same_as_s6_on_both_supervisors() {
    require("s6-svdt");
    let s = Scratch::new("svdt");
    for (i, supervisor) in SUPERVISORS.iter().enumerate() {
        let dir = ServiceDir::new(s.join(format!("sv{i}")))
            .run(SLEEPER)
            .path();
        let sv = Supervised::start(supervisor, &dir);
        kill_with(&sv, "t", 1);
        kill_with(&sv, "k", 2);
        kill_with(&sv, "a", 3);
        for args in [
            &[][..],
            &["-s"],
            &["-n", "2"],
            &["-S", "-n", "0"],
            &["-s", "-n", "9"],
        ] {
            let want = client("s6-svdt", args, &dir);
            let got = client("tend-svdt", args, &dir);
            assert_code(&got, 0);
            assert_eq!(
                text(&got.stdout),
                text(&want.stdout),
                "{supervisor} {args:?}"
            );
        }
        let lines = text(&client("tend-svdt", &["-s"], &dir).stdout);
        let causes: Vec<&str> = lines
            .lines()
            .map(|l| l.split_once(' ').unwrap().1)
            .collect();
        assert_eq!(
            causes,
            ["signal 15", "signal 9", "signal 14"],
            "{supervisor}"
        );
        // Cleared by the other toolkit's clear: the next death is the only one recorded.
        let clear = if i == 0 {
            "tend-svdt-clear"
        } else {
            "s6-svdt-clear"
        };
        let o = client(clear, &[], &dir);
        assert_code(&o, 0);
        assert_eq!(tally_len(&dir), 0);
        kill_with(&sv, "t", 1);
        let lines = text(&client("tend-svdt", &[], &dir).stdout);
        assert!(
            lines.ends_with(" signal SIGTERM\n") && lines.lines().count() == 1,
            "{supervisor}: {lines}"
        );
    }
}

#[test]
fn svdt_bad_input() {
    let s = Scratch::new("svdt-bad");
    let fails = |prog: &str, args: &[&str], dir: &Path, code: i32, err: &str| {
        let o = client(prog, args, dir);
        assert_code(&o, code);
        assert_eq!(text(&o.stderr), err, "{prog} {args:?}");
    };
    let none = s.join("none");
    fails(
        "tend-svdt",
        &[],
        &none,
        111,
        &format!(
            "tend-svdt: fatal: unable to read death tally for service {}: No such file or directory\n",
            none.display()
        ),
    );
    fails(
        "tend-svdt-clear",
        &[],
        &none,
        111,
        &format!(
            "tend-svdt-clear: fatal: unable to clear death tally for service {}: No such file or directory\n",
            none.display()
        ),
    );
    let usage = "tend-svdt: usage: tend-svdt [ -S | -s ] [ -n maxlines ] servicedir\n";
    fails("tend-svdt", &["-n", "x"], &none, 100, usage);
    let o = run(cmd("tend-svdt"));
    assert_code(&o, 100);
    let o = run(cmd("tend-svdt-clear"));
    assert_code(&o, 100);
    assert_eq!(
        text(&o.stderr),
        "tend-svdt-clear: usage: tend-svdt-clear servicedir\n"
    );
    // supervise/ without a tally: nothing to print (as s6-svdt), and clear creates it.
    let dir = s.join("sv");
    std::fs::create_dir_all(dir.join("supervise")).unwrap();
    let o = client("tend-svdt", &[], &dir);
    assert_code(&o, 0);
    assert_eq!(o.stdout, b"");
    // The wrong size: whole records printed, the tail named, the file left as it is
    // (s6-svdt empties the file and prints nothing).
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&[0x40, 0, 0, 0, 0x65, 0, 0, 0, 0, 0, 0, 0, 3, 0]);
    bytes.extend_from_slice(b"xyz");
    std::fs::write(dir.join("supervise/death_tally"), &bytes).unwrap();
    let o = client("tend-svdt", &[], &dir);
    assert_code(&o, 0);
    assert_eq!(text(&o.stdout), "@400000006500000000000000 exitcode 3\n");
    assert_eq!(
        text(&o.stderr),
        format!(
            "tend-svdt: warning: {}/supervise/death_tally ends with 3 bytes that are not a whole record: ignored\n",
            dir.display()
        )
    );
    assert_eq!(
        std::fs::read(dir.join("supervise/death_tally")).unwrap(),
        bytes
    );
    let o = client("tend-svdt-clear", &[], &dir);
    assert_code(&o, 0);
    assert_eq!(tally_len(&dir), 0);
}

/// Arguments, and the exit code and stderr expected.
type Case<'a> = (&'a [&'a str], (Option<i32>, &'a str));

/// Run `listener` (s6's or tend's) with `args`, return (code, stderr with the program
/// names made neutral).
fn listen(listener: &str, args: &[&str]) -> (Option<i32>, String) {
    let mut c = cmd(listener);
    c.args(args);
    let o = run(c);
    let err = text(&o.stderr)
        .replace("tend-svlisten1", "LISTENER")
        .replace("s6-svlisten1", "LISTENER")
        .replace("tend-svlisten", "LISTENER")
        .replace("s6-svlisten", "LISTENER");
    (o.status.code(), err)
}

#[test]
fn svlisten1_same_as_s6_on_both_supervisors() {
    require("s6-svlisten1");
    let s = Scratch::new("svlisten1");
    for (i, supervisor) in SUPERVISORS.iter().enumerate() {
        let dir = ServiceDir::new(s.join(format!("sv{i}")))
            .run(SLEEPER)
            .path();
        let d = dir.to_str().unwrap();
        let sv = Supervised::start(supervisor, &dir);
        sv.wait_up();
        for listener in ["s6-svlisten1", "tend-svlisten1"] {
            let cases: &[Case] = &[
                // The change is made by the program, while we listen: no race.
                (
                    &["-d", "-t", "20000", d, "tend-svc", "-d", d],
                    (Some(0), ""),
                ),
                (&["-D", "-t", "300", d, "true"], (Some(0), "")),
                (
                    &["-u", "-t", "3000", d, "true"],
                    (Some(99), "LISTENER: fatal: timed out\n"),
                ),
                (
                    &[
                        "-u",
                        "-t",
                        "20000",
                        d,
                        "sh",
                        "-c",
                        &format!("sleep 0.2; exec tend-svc -u {d}"),
                    ],
                    (Some(0), ""),
                ),
                (
                    &["-r", "-t", "20000", d, "tend-svc", "-r", d],
                    (Some(0), ""),
                ),
                (
                    &["-u", d, "/no/such/prog"],
                    (
                        Some(111),
                        "LISTENER: fatal: unable to spawn /no/such/prog: No such file or directory\n",
                    ),
                ),
            ];
            for (args, (code, err)) in cases {
                let got = listen(listener, args);
                assert_eq!(
                    (got.0, got.1.as_str()),
                    (*code, *err),
                    "{listener} {args:?} under {supervisor}"
                );
            }
        }
    }
}

#[test]
fn svlisten1_sees_the_supervisor_die() {
    let s = Scratch::new("svlisten1-x");
    for (i, supervisor) in SUPERVISORS.iter().enumerate() {
        for (j, listener) in ["s6-svlisten1", "tend-svlisten1"].iter().enumerate() {
            let dir = ServiceDir::new(s.join(format!("sv{i}-{j}")))
                .run(SLEEPER)
                .path();
            let d = dir.to_str().unwrap();
            let sv = Supervised::start(supervisor, &dir);
            sv.wait_up();
            // Waiting for up while the supervisor is told to stop and exit: it dies first.
            let got = listen(listener, &["-U", "-t", "20000", d, "tend-svc", "-dx", d]);
            assert_eq!(
                got,
                (
                    Some(1),
                    format!("LISTENER: fatal: {d} failed permanently or its supervisor died\n")
                ),
                "{listener} under {supervisor}"
            );
            drop(sv);
        }
    }
}

#[test]
fn svlisten_blocks_and_any() {
    require("s6-svlisten");
    let s = Scratch::new("svlisten");
    let a = ServiceDir::new(s.join("a")).run(SLEEPER).path();
    let b = ServiceDir::new(s.join("b")).run(SLEEPER).path();
    let (sa, sb) = (
        Supervised::start("tend-supervise", &a),
        Supervised::start("s6-supervise", &b),
    );
    sa.wait_up();
    sb.wait_up();
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let qa = format!(" {a}");
    let both_down = format!("tend-svc -d {a} && exec tend-svc -d {b}");
    for listener in ["s6-svlisten", "tend-svlisten"] {
        let cases: &[Case] = &[
            // Both down, with execline's quoting on one of them.
            (
                &["-d", "-t", "20000", &qa, b, "", "sh", "-c", &both_down],
                (Some(0), ""),
            ),
            (
                &["-o", "-u", "-t", "20000", a, b, "", "tend-svc", "-u", b],
                (Some(0), ""),
            ),
            (
                &["-a", "-u", "-t", "20000", a, b, "", "tend-svc", "-u", a],
                (Some(0), ""),
            ),
            (
                &["-d", "-t", "3000", a, b, "", "true"],
                (Some(99), "LISTENER: fatal: timed out\n"),
            ),
            (
                &["-d", a, b, "true"],
                (
                    Some(100),
                    "LISTENER: fatal: unterminated servicedir block\n",
                ),
            ),
        ];
        for (args, (code, err)) in cases {
            let got = listen(listener, args);
            assert_eq!(
                (got.0, got.1.as_str()),
                (*code, *err),
                "{listener} {args:?}"
            );
        }
    }
}

#[test]
fn svlisten_bad_input() {
    let s = Scratch::new("svlisten-bad");
    // A directory with no event fifodir and no supervisor: event/ is made (as s6 does),
    // then the status cannot be read.
    let bare = s.join("bare");
    std::fs::create_dir(&bare).unwrap();
    let d = bare.to_str().unwrap();
    let got = listen("tend-svlisten1", &["-u", d, "true"]);
    assert_eq!(
        got,
        (
            Some(111),
            format!("LISTENER: fatal: unable to read status for {d}: No such file or directory\n")
        )
    );
    assert_eq!(listen("s6-svlisten1", &["-u", d, "true"]).0, Some(111));
    let missing = s.join("missing");
    let m = missing.to_str().unwrap();
    let got = listen("tend-svlisten", &["-u", m, "", "true"]);
    assert_eq!(got.0, Some(111), "{got:?}");
    assert!(
        got.1.starts_with(&format!(
            "LISTENER: fatal: unable to subscribe to events for {m}: "
        )),
        "{got:?}"
    );
    for (prog, args) in [
        ("tend-svlisten1", &[][..]),
        ("tend-svlisten1", &["dir"][..]),
        ("tend-svlisten1", &["-t", "x", "dir", "true"][..]),
        ("tend-svlisten", &["dir", ""][..]),
        ("tend-svlisten", &["", "true"][..]),
    ] {
        let got = listen(prog, args);
        assert_eq!(got.0, Some(100), "{prog} {args:?}");
        assert!(
            got.1.starts_with("LISTENER: usage: "),
            "{prog} {args:?}: {}",
            got.1
        );
    }
}

/// A scanner (s6-svscan or tend-svscan) on a fresh scan directory, killed with the tree.
fn scanner(s: &Scratch, prog: &str) -> (Daemon, std::path::PathBuf) {
    let scan = s.join(format!("scan-{prog}"));
    std::fs::create_dir_all(&scan).unwrap();
    let mut c = cmd(prog);
    c.arg(&scan).current_dir(&s.path);
    c.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null());
    c.stderr(std::fs::File::create(s.join(format!("{prog}.err"))).unwrap());
    let d = Daemon::start(c);
    wait_until(PATIENCE, "the scanner", || {
        tend_proto::control::send_in(&scan, ".s6-svscan", b"").ok()
    });
    (d, scan)
}

#[test]
fn svlink_svunlink_on_both_scanners() {
    require("s6-svlink");
    let s = Scratch::new("svlink");
    let _k = KillUnder(s.path.clone());
    for scan_prog in ["s6-svscan", "tend-svscan"] {
        let (_d, scan) = scanner(&s, scan_prog);
        for (linker, unlinker) in [
            ("tend-svlink", "tend-svunlink"),
            ("s6-svlink", "tend-svunlink"),
            ("tend-svlink", "s6-svunlink"),
        ] {
            let name = format!("{scan_prog}-{linker}-{unlinker}");
            let dir = ServiceDir::new(s.join(&name))
                .run(SLEEPER)
                .script("log/run", SLEEPER)
                .path();
            let mut c = cmd(linker);
            c.args(["-t", "20000"]).arg(&scan).arg(&dir);
            let o = run(c);
            assert_code(&o, 0);
            // Both supervisors run when it returns: no waiting here.
            assert!(running(&dir) && running(&dir.join("log")), "{name}");
            assert_eq!(std::fs::read_link(scan.join(&name)).unwrap(), dir, "{name}");
            wait_status(&dir, "up", is_up);
            // s6-svunlink also waits for the logger's supervisor, which neither scanner
            // reliably stops after a prune: a short wait (it exits 0 either way).
            let t = if unlinker.starts_with("s6") {
                "3000"
            } else {
                "20000"
            };
            let mut c = cmd(unlinker);
            c.args(["-t", t]).arg(&scan).arg(&name);
            let o = run(c);
            assert_code(&o, 0);
            assert!(
                std::fs::symlink_metadata(scan.join(&name)).is_err(),
                "{name}"
            );
            // Its last event is written just before it exits and lets go of its lock.
            wait_until(PATIENCE, "the supervisor to go", || {
                (!running(&dir)).then_some(())
            });
        }
        // -D: the supervisor starts, the service stays down, ./down stays.
        let dir = ServiceDir::new(s.join(format!("{scan_prog}-down")))
            .run(SLEEPER)
            .path();
        let mut c = cmd("tend-svlink");
        c.args(["-D", "-t", "20000"])
            .arg(&scan)
            .arg(&dir)
            .arg("held");
        assert_code(&run(c), 0);
        assert!(running(&dir) && dir.join("down").exists());
        assert_eq!(status(&dir).pid, 0);
        // -d: down this once; ./down is gone afterwards.
        let dir = ServiceDir::new(s.join(format!("{scan_prog}-once")))
            .run(SLEEPER)
            .path();
        let mut c = cmd("tend-svlink");
        c.args(["-d", "-t", "20000"]).arg(&scan).arg(&dir);
        assert_code(&run(c), 0);
        assert!(running(&dir) && !dir.join("down").exists());
        assert_eq!(status(&dir).pid, 0);
        let _ = tend_proto::control::send_in(&scan, ".s6-svscan", b"t");
    }
}

#[test]
fn svlink_bad_input() {
    let s = Scratch::new("svlink-bad");
    let _k = KillUnder(s.path.clone());
    let fails = |prog: &str, args: &[&dyn AsRef<std::ffi::OsStr>], code: i32, err: &str| {
        let mut c = cmd(prog);
        for a in args {
            c.arg(a);
        }
        let o = run(c);
        assert_code(&o, code);
        assert_eq!(text(&o.stderr), err, "{prog}");
    };
    let noscan = s.join("noscan");
    std::fs::create_dir(&noscan).unwrap();
    let dir = ServiceDir::new(s.join("sv")).run(SLEEPER).path();
    fails(
        "tend-svlink",
        &[&noscan, &dir],
        100,
        &format!(
            "tend-svlink: fatal: unable to control {}: scanner not listening\n",
            noscan.display()
        ),
    );
    let (_d, scan) = scanner(&s, "tend-svscan");
    let norun = s.join("norun");
    std::fs::create_dir(&norun).unwrap();
    fails(
        "tend-svlink",
        &[&scan, &norun],
        111,
        &format!(
            "tend-svlink: fatal: unable to stat {}/run: No such file or directory\n",
            norun.display()
        ),
    );
    fails(
        "tend-svlink",
        &[&scan, &dir, &"a/b"],
        100,
        "tend-svlink: fatal: invalid service name\n",
    );
    fails(
        "tend-svlink",
        &[&scan, &dir, &".."],
        100,
        "tend-svlink: fatal: invalid service name\n",
    );
    fails(
        "tend-svunlink",
        &[&scan, &"../x"],
        100,
        "tend-svunlink: fatal: invalid service name\n",
    );
    // A private fifodir asked to be public, without -f: refused; with -f: changed.
    std::fs::create_dir(dir.join("event")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join("event"), std::fs::Permissions::from_mode(0o3730)).unwrap();
    fails(
        "tend-svlink",
        &[&"-P", &scan, &dir],
        100,
        &format!(
            "tend-svlink: fatal: {}/event exists and is private (use -f to change it)\n",
            dir.display()
        ),
    );
    let mut c = cmd("tend-svlink");
    c.args(["-P", "-f", "-t", "20000"]).arg(&scan).arg(&dir);
    assert_code(&run(c), 0);
    assert_eq!(
        std::fs::metadata(dir.join("event"))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777,
        0o1733
    );
    // Something that is not a link is not unlinked; a missing one is nothing to do.
    std::fs::write(scan.join("file"), "").unwrap();
    fails(
        "tend-svunlink",
        &[&scan, &"file"],
        111,
        &format!(
            "tend-svunlink: fatal: unable to unlink {}/file: Invalid argument\n",
            scan.display()
        ),
    );
    assert!(scan.join("file").exists());
    fails("tend-svunlink", &[&scan, &"missing"], 0, "");
    let _ = tend_proto::control::send_in(&scan, ".s6-svscan", b"t");
}

/// A death tally of records (seconds before now, exit code, signal), newest last.
fn write_tally(dir: &Path, deaths: &[(u64, u8, u8)]) {
    let now = tend_proto::Tai64n::now();
    let mut b = Vec::new();
    for &(ago, code, sig) in deaths {
        let d = tend_proto::death_tally::Death {
            stamp: tend_proto::Tai64n {
                secs: now.secs - ago,
                nanos: 0,
            },
            exitcode: code,
            signal: sig,
        };
        b.extend_from_slice(&d.encode());
    }
    std::fs::create_dir_all(dir.join("supervise")).unwrap();
    std::fs::write(dir.join("supervise/death_tally"), b).unwrap();
}

#[test]
fn permafailon_same_as_s6() {
    require("s6-permafailon");
    let s = Scratch::new("permafailon");
    let dir = s.join("sv");
    write_tally(
        &dir,
        &[
            (40, 1, 0),
            (30, 137, 9),
            (20, 102, 0),
            (10, 143, 15),
            (2, 1, 0),
        ],
    );
    for args in [
        &["60", "2", "1"][..],
        &["60", "3", "1"],
        &["60", "3", "1,SIGTERM"],
        &["60", "4", "1-102,sig9"],
        &["60", "5", "0-255"],
        &["5", "2", "1"],
        &["60", "1", "SIGKILL"],
        &["60", "1", "sigkill"],
        // One signal grammar (sys::signals::parse), as s6's: bare names, and SIGIO.
        &["60", "1", "KILL"],
        &["60", "2", "term,SIG9"],
        &["60", "1", "SIGIO"],
        &["60", "2", "SIGINT"],
        &["x", "1", "1"],
        &["60", "1", "300"],
        &["60", "1", "SIGFOO"],
        &["60", "0", "1"],
        &["60", "1"],
    ] {
        let mut outs = Vec::new();
        for prog in ["s6-permafailon", "tend-permafailon"] {
            let mut c = cmd(prog);
            c.args(args).args(["echo", "went on"]).current_dir(&dir);
            let o = run(c);
            let err = text(&o.stderr).replace(prog, "PROG");
            outs.push((o.status.code(), text(&o.stdout), err));
        }
        assert_eq!(outs[0], outs[1], "{args:?}: s6 then tend");
    }
    // No tally: a warning, then the program.
    let mut c = cmd("tend-permafailon");
    c.args(["60", "1", "1", "echo", "went on"])
        .current_dir(&s.path);
    let o = run(c);
    assert_code(&o, 0);
    assert_eq!(text(&o.stdout), "went on\n");
    assert_eq!(
        text(&o.stderr),
        "tend-permafailon: warning: unable to read supervise/death_tally: No such file or directory\n"
    );
}

#[test]
fn permafailon_in_finish_stops_both_supervisors() {
    let s = Scratch::new("permafailon-finish");
    for (i, supervisor) in SUPERVISORS.iter().enumerate() {
        let dir = ServiceDir::new(s.join(format!("sv{i}")))
            .run("#!/bin/sh\nexit 1\n")
            .finish("#!/bin/sh\nexec tend-permafailon 60 3 1 true\n")
            .path();
        let sv = Supervised::start(supervisor, &dir);
        // Three deaths, then no restart: the service stays down, wanted up no more.
        wait_deaths(&dir, 3);
        sv.wait_status("down for good", |r| {
            r.pid == 0 && !r.finishing && !r.want_up
        });
        assert_eq!(tally_len(&dir), 3 * 14, "{supervisor}");
    }
}

#[test]
fn fghack_same_as_s6() {
    require("s6-fghack");
    for args in [
        &["sh", "-c", "exit 5"][..],
        &["sh", "-c", "echo hi >&5"],
        &["sh", "-c", "kill -9 $$"],
        &["/no/such/prog"],
        &[],
    ] {
        let mut outs = Vec::new();
        for prog in ["s6-fghack", "tend-fghack"] {
            let mut c = cmd(prog);
            c.args(args);
            let o = run(c);
            // s6-fghack names argv[1] of a crashed program ("-c crashed"); tend names it.
            let err = text(&o.stderr)
                .replace(prog, "PROG")
                .replace("-c crashed", "sh crashed");
            outs.push((o.status.code(), err));
        }
        assert_eq!(outs[0], outs[1], "{args:?}: s6 then tend");
    }
}

#[test]
fn fghack_waits_for_the_daemon() {
    let s = Scratch::new("fghack");
    let gone = s.join("gone");
    // The program backgrounds a "daemon" that closes fds 0-9 (not the 32 copies), then
    // exits 4 at once; tend-fghack stays until the daemon is gone and exits 4.
    let daemon = format!(
        "exec 0<&- 1>&- 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-; sleep 1; touch {}",
        gone.display()
    );
    let mut c = cmd("tend-fghack");
    c.args(["sh", "-c", &format!("sh -c '{daemon}' & exit 4")]);
    let start = std::time::Instant::now();
    let o = run(c);
    assert_code(&o, 4);
    assert!(
        gone.exists(),
        "tend-fghack returned before the daemon ended"
    );
    assert!(start.elapsed() >= std::time::Duration::from_millis(900));
}
