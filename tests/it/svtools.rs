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
                    &["-u", "-t", "300", d, "true"],
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
                &["-d", "-t", "300", a, b, "", "true"],
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
