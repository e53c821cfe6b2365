//! Chain-loading tools: tend-setuidgid, tend-envuidgid, tend-applyuidgid, tend-envdir,
//! tend-softlimit, tend-setsid, tend-cpuset, tend-cgroup, tend-notify.
//!
//! Compatibility claims are checked against the Debian s6 binaries on the same inputs.
//! The tests run as root (CI does) and change real credentials, limits, affinity and
//! cgroups of the processes they start, never of the test process.
//!
//! Not tested: tend-setsid -f actually stopping on SIGTTOU (needs a job-control shell);
//! cgroup controllers the host does not offer in v2 (only their error is checked: on a
//! hybrid host with only hugetlb delegated, memory.max / pids.max take the error branch);
//! tend-notify without pidfd support (kernels before 5.3); an account whose supplementary
//! groups come from NSS rather than /etc/group.

use crate::common::*;
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

// ---------------------------------------------------------------- helpers

/// stdout + stderr + code, with the program prefix made neutral, to compare with s6.
fn neutral(o: &Output, tend_name: &str, s6_name: &str) -> String {
    let s = format!(
        "stdout:{}\nstderr:{}\ncode:{:?}",
        text(&o.stdout),
        text(&o.stderr),
        o.status.code()
    );
    s.replace(tend_name, "PROG").replace(s6_name, "PROG")
}

/// Run `tend-X args` and `s6-X args` (same args) and return both outputs.
fn both(name: &str, args: &[&str], envs: &[(&str, &str)]) -> (Output, Output) {
    let go = |prog: String| {
        let mut c = cmd(&prog);
        c.args(args);
        for (k, v) in envs {
            c.env(k, v);
        }
        run(c)
    };
    (go(format!("tend-{name}")), go(format!("s6-{name}")))
}

/// Compare tend-X and s6-X on the same arguments: identical output and exit code
/// (program names aside). Usage lines differ in the program name only.
#[track_caller]
fn chain_same_as_s6(name: &str, args: &[&str], envs: &[(&str, &str)]) {
    let (t, s) = both(name, args, envs);
    let (t, s) = (
        neutral(&t, &format!("tend-{name}"), &format!("s6-{name}")),
        neutral(&s, &format!("tend-{name}"), &format!("s6-{name}")),
    );
    assert_eq!(t, s, "tend-{name} vs s6-{name} {args:?} env {envs:?}");
}

/// The Uid, Gid and Groups lines of the exec'd program's /proc/self/status.
const STATUS: &[&str] = &["grep", "-E", "^(Uid|Gid|Groups):", "/proc/self/status"];

fn status_of(o: &Output) -> String {
    assert_code(o, 0);
    text(&o.stdout)
}

fn stderr_is(o: &Output, line: &str) {
    assert_eq!(text(&o.stderr), format!("{line}\n"), "{o:?}");
}

fn usage_of(o: &Output, prog: &str) {
    assert_code(o, 100);
    assert!(
        text(&o.stderr).starts_with(&format!("{prog}: usage: {prog} ")),
        "{}",
        text(&o.stderr)
    );
}

// ---------------------------------------------------------------- setuidgid

/// `nobody` from /etc/passwd. The test binary is static, like tend's programs, so it
/// must not go through NSS (a static getpwnam can crash on `passwd: files systemd`).
fn nobody() -> tend_env::account::User {
    tend_env::account::user(std::ffi::OsStr::new("nobody"))
        .unwrap()
        .expect("nobody in /etc/passwd")
}

#[test]
fn setuidgid_nobody_exact_status_and_root_groups_gone() {
    require("s6-setuidgid");
    let nobody = nobody();
    let (u, g) = (nobody.uid, nobody.gid);
    // Start with extra supplementary groups so that dropping them is visible.
    let mut args = vec!["-G", "4,5,6", "tend-setuidgid", "nobody"];
    args.extend(STATUS);
    let got = status_of(&tend("tend-applyuidgid", &args));
    assert_eq!(
        got,
        format!("Uid:\t{u}\t{u}\t{u}\t{u}\nGid:\t{g}\t{g}\t{g}\t{g}\nGroups:\t{g} \n")
    );
    let mut s6 = vec!["-G", "4,5,6", "s6-setuidgid", "nobody"];
    s6.extend(STATUS);
    assert_eq!(got, status_of(&tend("tend-applyuidgid", &s6)));
}

#[test]
fn setuidgid_uid_gid_without_passwd_entry() {
    require("s6-setuidgid");
    assert!(
        !std::fs::read_to_string("/etc/passwd")
            .unwrap()
            .lines()
            .any(|l| l.split(':').nth(2) == Some("1234")),
        "uid 1234 must have no passwd entry for this test"
    );
    let mut args = vec!["-G", "4,5", "tend-setuidgid", "1234:5678"];
    args.extend(STATUS);
    let got = status_of(&tend("tend-applyuidgid", &args));
    assert_eq!(
        got,
        "Uid:\t1234\t1234\t1234\t1234\nGid:\t5678\t5678\t5678\t5678\nGroups:\t5678 \n"
    );
    let mut s6 = vec!["-G", "4,5", "s6-setuidgid", "1234:5678"];
    s6.extend(STATUS);
    assert_eq!(got, status_of(&tend("tend-applyuidgid", &s6)));
}

#[test]
fn setuidgid_environment_as_s6() {
    require("s6-setuidgid");
    let envs = [("UID", "11"), ("GID", "12"), ("GIDLIST", "13,14")];
    for account in ["nobody", "1234:5678", "", "root"] {
        chain_same_as_s6(
            "setuidgid",
            &[
                account,
                "sh",
                "-c",
                "echo \"${UID-u} ${GID-g} ${GIDLIST-l}\"; id -u",
            ],
            &envs,
        );
    }
}

#[test]
fn setuidgid_bad_input() {
    require("s6-setuidgid");
    let o = tend("tend-setuidgid", ["no-such-user-tend", "echo", "EXECUTED"]);
    assert_code(&o, 1);
    stderr_is(&o, "tend-setuidgid: fatal: unknown user: no-such-user-tend");
    assert!(o.stdout.is_empty());
    let (_, s6) = both("setuidgid", &["no-such-user-tend", "true"], &[]);
    assert_code(&s6, 1);
    usage_of(&tend("tend-setuidgid", ["nobody"]), "tend-setuidgid");
    usage_of(&tend("tend-setuidgid", [] as [&str; 0]), "tend-setuidgid");
    usage_of(
        &tend("tend-setuidgid", ["-x", "nobody", "true"]),
        "tend-setuidgid",
    );
    let o = tend("tend-setuidgid", ["12:", "echo", "EXECUTED"]);
    assert_code(&o, 100);
    stderr_is(&o, "tend-setuidgid: fatal: invalid uid:gid: 12:");
    // An empty account changes nothing.
    let o = tend("tend-setuidgid", ["", "id", "-u"]);
    assert_eq!(text(&o.stdout), "0\n");
}

#[test]
fn setuidgid_fails_closed_when_unprivileged() {
    // nobody cannot become 1234: the step fails, nothing is exec'd.
    let o = tend(
        "tend-setuidgid",
        ["nobody", "tend-setuidgid", "1234:5678", "echo", "EXECUTED"],
    );
    assert_code(&o, 111);
    stderr_is(
        &o,
        "tend-setuidgid: fatal: unable to set supplementary group list: Operation not permitted",
    );
    assert!(o.stdout.is_empty());
}

// ---------------------------------------------------------------- envuidgid / applyuidgid

#[test]
fn envuidgid_as_s6() {
    require("s6-envuidgid");
    let show = "echo \"UID=${UID-unset} GID=${GID-unset} GIDLIST=${GIDLIST-unset}\"";
    let cases: &[&[&str]] = &[
        &["nobody"],
        &["root"],
        &["no-such-user-tend"],
        &["-n", "123"],
        &["-n", "no-such-user-tend"],
        &["-u", "nobody"],
        &["-g", "nogroup"],
        &["-g", "no-such-group-tend"],
        &["-B", "nobody:nogroup"],
        &["-B", ":nogroup"],
        &["-B", "nobody"],
        &["-B", "nobody:"],
        &["-nB", "5:6"],
        &["-B", "5:6"],
        &["-D", "1:2:3,4", "no-such-user-tend"],
        &["-D", "1:2", "no-such-user-tend"],
        &["-D", "1", "no-such-user-tend"],
        &["-D", "::5", "no-such-user-tend"],
        &["-D", "1:2:3,4", "-i", "no-such-user-tend"],
        &["-D", "1:2:3", "-B", "no-such-user-tend:no-such-group-tend"],
        &["-D", "1:2:3", "-u", "no-such-user-tend"],
        &["-n", "-u", "77"],
        &["-D", "1:2:3", ""],
    ];
    for c in cases {
        let mut args: Vec<&str> = c.to_vec();
        args.extend(["sh", "-c", show]);
        chain_same_as_s6(
            "envuidgid",
            &args,
            &[("UID", "9"), ("GID", "9"), ("GIDLIST", "9")],
        );
    }
    // Usage errors (the usage lines differ only by name).
    for bad in [
        &["-D", "x", "nobody", "true"][..],
        &["nobody"],
        &["-Z", "nobody", "true"],
    ] {
        let (t, s) = both("envuidgid", bad, &[]);
        assert_code(&t, 100);
        assert_code(&s, 100);
    }
}

#[test]
fn applyuidgid_as_s6() {
    require("s6-applyuidgid");
    let show = "grep -E '^(Uid|Gid|Groups):' /proc/self/status; echo \"UID=${UID-unset} GID=${GID-unset} GIDLIST=${GIDLIST-unset}\"";
    let cases: &[&[&str]] = &[
        &["-u", "5", "-g", "6"],
        &["-u", "5", "-g", "6", "-G", "7,8"],
        &["-G", ""],
        &["-G", "7,6"],
        &["-g", "6", "-G", "7,6"],
        &["-U"],
        &["-Uz"],
        &["-U", "-u", "9"],
        &["-u", "x"],
        &["-z", "-u", "3"],
        &[],
    ];
    let envs: &[&[(&str, &str)]] = &[
        &[("UID", "11"), ("GID", "12"), ("GIDLIST", "13,14")],
        &[("UID", "11"), ("GID", "12")],
        &[("UID", "11"), ("GID", "x"), ("GIDLIST", "")],
    ];
    for c in cases {
        for e in envs {
            let mut args: Vec<&str> = c.to_vec();
            args.extend(["sh", "-c", show]);
            chain_same_as_s6("applyuidgid", &args, e);
        }
    }
    usage_of(&tend("tend-applyuidgid", ["-u", "1"]), "tend-applyuidgid");
}

#[test]
fn applyuidgid_fails_closed() {
    let o = tend(
        "tend-setuidgid",
        [
            "nobody",
            "tend-applyuidgid",
            "-u",
            "1",
            "-g",
            "1",
            "echo",
            "EXECUTED",
        ],
    );
    assert_code(&o, 111);
    stderr_is(
        &o,
        "tend-applyuidgid: fatal: unable to setgid: Operation not permitted",
    );
    assert!(o.stdout.is_empty());
    let mut c = cmd("tend-applyuidgid");
    c.args(["-U", "true"])
        .env_remove("UID")
        .env("GID", "1")
        .env("GIDLIST", "");
    let o = run(c);
    assert_code(&o, 100);
    stderr_is(&o, "tend-applyuidgid: fatal: UID not set");
}

// ---------------------------------------------------------------- envdir

/// A directory with every case s6-envdir distinguishes.
fn envdir_fixture(s: &Scratch, all_end_in_newline: bool) -> PathBuf {
    let d = s.join(if all_end_in_newline { "envnl" } else { "env" });
    std::fs::create_dir_all(&d).unwrap();
    let mut files: Vec<(&str, Vec<u8>)> = vec![
        ("EMPTY", b"".to_vec()),
        ("PRESET", b"".to_vec()),
        ("NL", b"\n".to_vec()),
        ("BLANK", b"  \t \n".to_vec()),
        ("NUL", b"a\0b\nsecond\n".to_vec()),
        ("CR", b"x \r\x0b\x0c \t\n".to_vec()),
        ("MULTI", b"one\ntwo\n\n".to_vec()),
        ("TR", b"tr  \n  \n".to_vec()),
        (".dot", b"hidden\n".to_vec()),
        ("A=B", b"skipped\n".to_vec()),
        ("REPLACED", b"new\n".to_vec()),
    ];
    let mut big = vec![b'a'; 5000];
    big.push(b'\n');
    files.push(("BIGNL", big));
    let mut big2 = vec![b'b'; 4090];
    big2.extend(b"\nrest\n");
    files.push(("BIG2", big2));
    if !all_end_in_newline {
        files.push(("BIG", vec![b'c'; 5000]));
        files.push(("NOEOL", b"noeol  ".to_vec()));
        files.push(("LEAD", b" lead".to_vec()));
        files.push(("ALLNUL", b"\0\0".to_vec()));
    }
    for (name, contents) in files {
        std::fs::write(d.join(name), contents).unwrap();
    }
    d
}

/// The exec'd program's environment, as sorted NUL-separated entries.
fn env_after(prog: &str, opts: &[&str], dir: &Path) -> (Vec<Vec<u8>>, Output) {
    let mut c = Command::new(if prog.starts_with("tend-") {
        bin(prog)
    } else {
        PathBuf::from(prog)
    });
    c.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("PRESET", "gone")
        .env("REPLACED", "old")
        .env("KEPT", "kept")
        .args(opts)
        .arg(dir)
        .args(["/usr/bin/env", "-0"]);
    let o = run(c);
    let mut v: Vec<Vec<u8>> = o
        .stdout
        .split(|&b| b == 0)
        .filter(|e| !e.is_empty())
        .map(|e| e.to_vec())
        .collect();
    v.sort();
    (v, o)
}

#[test]
fn envdir_identical_to_s6_for_every_option() {
    require("s6-envdir");
    let s = Scratch::new("envdir-s6");
    let full = envdir_fixture(&s, false);
    let nl = envdir_fixture(&s, true);
    let sets: &[(&[&str], &Path)] = &[
        (&[], &full),
        (&["-n"], &full),
        (&["-f"], &full),
        (&["-fn"], &full),
        (&["-i"], &full),
        (&["-I"], &full),
        (&["-L"], &nl),
        (&["-nL"], &full),
        (&["-fL"], &full),
        (&["-fnL"], &full),
        (&["-c", "x"], &full),
        (&["-c", "xyz"], &full),
        (&["-f", "-c", "x"], &full),
        (&["-I", "-n", "-f", "-L", "-c", "_"], &full),
    ];
    for (opts, dir) in sets {
        let (t, to) = env_after("tend-envdir", opts, dir);
        let (e, eo) = env_after("s6-envdir", opts, dir);
        assert_code(&to, 0);
        assert_code(&eo, 0);
        assert_eq!(
            t.iter()
                .map(|x| String::from_utf8_lossy(x).into_owned())
                .collect::<Vec<_>>(),
            e.iter()
                .map(|x| String::from_utf8_lossy(x).into_owned())
                .collect::<Vec<_>>(),
            "options {opts:?}"
        );
        // The fixture's cases really are exercised.
        assert!(t.contains(&b"KEPT=kept".to_vec()));
        assert!(
            !t.iter()
                .any(|x| x.starts_with(b"PRESET=") || x.starts_with(b"EMPTY="))
        );
        assert!(t.iter().any(|x| x.starts_with(b"REPLACED=new")));
        assert!(
            !t.iter()
                .any(|x| x.starts_with(b"A=") || x.starts_with(b".dot"))
        );
    }
    // Spot checks of the values themselves (default options).
    let (t, _) = env_after("tend-envdir", &[], &full);
    for want in [
        &b"NUL=a\nb"[..],
        b"TR=tr",
        b"NL=",
        b"BLANK=",
        b"CR=x \r\x0b\x0c",
        b"NOEOL=noeol",
    ] {
        assert!(
            t.contains(&want.to_vec()),
            "{:?}",
            String::from_utf8_lossy(want)
        );
    }
    let big = t.iter().find(|x| x.starts_with(b"BIG=")).unwrap();
    assert_eq!(big.len(), 4 + 4095, "clamped to 4095 bytes");
}

/// tend-envdir sets the variables in the order of their names, whatever order the file
/// system lists them in (s6-envdir follows that order; man page, NOTES).
#[test]
fn envdir_sets_variables_in_name_order() {
    let s = Scratch::new("envdir-order");
    let names = ["K7", "B2", "Z9", "A1", "M5", "C3", "X8", "D4", "L6", "Q0"];
    for n in names {
        s.write(&format!("env/{n}"), "v\n", false);
    }
    let mut c = cmd("tend-envdir");
    c.env_clear()
        .arg(s.join("env"))
        .args(["/usr/bin/env", "-0"]);
    let o = run(c);
    assert_code(&o, 0);
    let got: Vec<String> = o
        .stdout
        .split(|&b| b == 0)
        .filter_map(|e| Some(String::from_utf8_lossy(e.split(|&b| b == b'=').next()?)))
        .filter(|n| names.contains(&n.as_ref()))
        .map(|n| n.into_owned())
        .collect();
    let mut sorted = names.map(String::from).to_vec();
    sorted.sort();
    assert_eq!(got, sorted);
}

#[test]
fn envdir_trailing_bytes_chomped_as_s6_does() {
    // Every byte value in trailing position, ended by a newline or by the end of the
    // file, with and without -n (and -f): the same environment as s6-envdir's.
    require("s6-envdir");
    let s = Scratch::new("envdir-bytes");
    let d = s.join("bytes");
    std::fs::create_dir_all(&d).unwrap();
    for b in 0..=255u8 {
        std::fs::write(d.join(format!("L{b:03}")), [b'v', b, b'\n']).unwrap();
        std::fs::write(d.join(format!("E{b:03}")), [b'v', b]).unwrap();
        std::fs::write(d.join(format!("M{b:03}")), [b'v', b' ', b, b'\t', b'\n']).unwrap();
    }
    for opts in [&[][..], &["-n"], &["-f"], &["-fn"]] {
        let (t, to) = env_after("tend-envdir", opts, &d);
        let (e, eo) = env_after("s6-envdir", opts, &d);
        assert_code(&to, 0);
        assert_code(&eo, 0);
        assert_eq!(t.len(), e.len(), "options {opts:?}");
        for (t, e) in t.iter().zip(&e) {
            assert_eq!(
                t,
                e,
                "options {opts:?}: tend {:?} s6 {:?}",
                String::from_utf8_lossy(t),
                String::from_utf8_lossy(e)
            );
        }
    }
    // What the comparison covers: \r goes, \v and \f stay, -n keeps all.
    let (t, _) = env_after("tend-envdir", &[], &d);
    for want in [
        &b"L013=v"[..],
        b"L011=v\x0b",
        b"L012=v\x0c",
        b"M013=v",
        b"E013=v",
    ] {
        assert!(
            t.contains(&want.to_vec()),
            "{:?}",
            String::from_utf8_lossy(want)
        );
    }
    let (t, _) = env_after("tend-envdir", &["-n"], &d);
    assert!(t.contains(&b"L013=v\r".to_vec()));
}

#[test]
fn envdir_noclamp_keeps_a_last_line_without_newline() {
    // s6-envdir 2.11.3 -L (without -n) empties a value whose line has no newline; tend
    // keeps it (documented in tend-envdir(8) NOTES).
    let s = Scratch::new("envdir-L");
    let full = envdir_fixture(&s, false);
    let (t, o) = env_after("tend-envdir", &["-L"], &full);
    assert_code(&o, 0);
    assert!(t.contains(&b"NOEOL=noeol".to_vec()));
    assert!(t.contains(&b"LEAD= lead".to_vec()));
    let big = t.iter().find(|x| x.starts_with(b"BIG=")).unwrap();
    assert_eq!(big.len(), 4 + 5000);
}

#[test]
fn envdir_errors() {
    require("s6-envdir");
    let s = Scratch::new("envdir-err");
    let missing = s.join("missing");
    let m = missing.to_str().unwrap();
    let o = tend("tend-envdir", [m, "echo", "EXECUTED"]);
    assert_code(&o, 111);
    stderr_is(
        &o,
        &format!("tend-envdir: fatal: unable to open directory {m}: No such file or directory"),
    );
    assert!(o.stdout.is_empty());
    let (_, so) = both("envdir", &[m, "true"], &[]);
    assert_code(&so, 111);
    // -I: a missing directory is fine.
    let o = tend("tend-envdir", ["-I", m, "echo", "EXECUTED"]);
    assert_code(&o, 0);
    assert_eq!(text(&o.stdout), "EXECUTED\n");
    // -I does not forgive a file where the directory should be.
    let f = s.write("file", "x\n", false);
    let o = tend(
        "tend-envdir",
        [OsStr::new("-I"), f.as_os_str(), OsStr::new("true")],
    );
    assert_code(&o, 111);
    // A subdirectory cannot be read as a variable.
    let d = s.join("withsub");
    std::fs::create_dir_all(d.join("SUB")).unwrap();
    let o = tend(
        "tend-envdir",
        [d.as_os_str(), OsStr::new("echo"), OsStr::new("EXECUTED")],
    );
    assert_code(&o, 111);
    assert!(
        text(&o.stderr).contains("Is a directory"),
        "{}",
        text(&o.stderr)
    );
    assert!(o.stdout.is_empty());
    // Usage.
    usage_of(&tend("tend-envdir", [m]), "tend-envdir");
    usage_of(&tend("tend-envdir", ["-x", m, "true"]), "tend-envdir");
    let o = tend("tend-envdir", ["-c", "", m, "true"]);
    assert_code(&o, 100);
    stderr_is(&o, "tend-envdir: fatal: the -c argument must not be empty");
}

// ---------------------------------------------------------------- exec failures, all nine

#[test]
fn exec_failure_codes_for_every_program() {
    let s = Scratch::new("execfail");
    let env = s.join("env");
    std::fs::create_dir_all(&env).unwrap();
    let e = env.to_str().unwrap().to_string();
    let notexec = s.write("notexec", "#!/bin/sh\n", false);
    let n = notexec.to_str().unwrap().to_string();
    let crlf = s.write("crlf", "#!/bin/sh\r\nexit 0\r\n", true);
    let c = crlf.to_str().unwrap().to_string();
    let bindir = s.join("bin");
    s.write("bin/crlf-prog", "#!/bin/sh\r\nexit 0\r\n", true);
    let prefixes: Vec<(&str, Vec<String>)> = vec![
        ("tend-setuidgid", vec!["nobody".into()]),
        ("tend-envuidgid", vec!["nobody".into()]),
        ("tend-applyuidgid", vec!["-u".into(), "0".into()]),
        ("tend-envdir", vec![e.clone()]),
        ("tend-softlimit", vec!["-o".into(), "=".into()]),
        ("tend-setsid", vec!["-q".into()]),
        ("tend-cpuset", vec!["0".into()]),
        // fd 1: the daemon side closes the notification fd, and stderr must stay.
        ("tend-notify", vec!["-d".into(), "1".into()]),
    ];
    for (prog, pre) in &prefixes {
        let o = tend(
            prog,
            pre.iter().map(String::as_str).chain(["/nonexistent/prog"]),
        );
        assert_code(&o, 127);
        stderr_is(
            &o,
            &format!("{prog}: fatal: unable to exec /nonexistent/prog: No such file or directory"),
        );
        let o = tend(prog, pre.iter().map(String::as_str).chain([n.as_str()]));
        assert_code(&o, 126);
        stderr_is(
            &o,
            &format!("{prog}: fatal: unable to exec {n}: not executable (mode 0644)"),
        );
        let o = tend(prog, pre.iter().map(String::as_str).chain([c.as_str()]));
        assert_code(&o, 127);
        stderr_is(
            &o,
            &format!(
                "{prog}: fatal: unable to exec {c}: interpreter /bin/sh\\r not found (the file has CRLF line endings)"
            ),
        );
        // Found by a PATH search: the path found is named before the diagnosis.
        let mut search = cmd(prog);
        search
            .args(pre)
            .arg("crlf-prog")
            .env("PATH", format!("/nonexistent:{}", bindir.display()));
        let o = run(search);
        assert_code(&o, 127);
        stderr_is(
            &o,
            &format!(
                "{prog}: fatal: unable to exec crlf-prog: {}/crlf-prog: interpreter /bin/sh\\r not found (the file has CRLF line endings)",
                bindir.display()
            ),
        );
    }
}

// ---------------------------------------------------------------- softlimit

/// Found by tests/it/fuzz.rs: with a data limit of 9 bytes, building the exec's strings
/// after setting the limit aborted (SIGABRT). Now they are built before, and the limits
/// are put back before the failure is reported.
#[test]
fn softlimit_tight_memory_still_reports_exec_failure() {
    let big = "x".repeat(35_000);
    let o = tend(
        "tend-softlimit",
        ["-m", "9", "/nonexistent/prog", big.as_str()],
    );
    assert_code(&o, 127);
    stderr_is(
        &o,
        "tend-softlimit: fatal: unable to exec /nonexistent/prog: No such file or directory",
    );
}

fn limits(o: &Output) -> String {
    assert_code(o, 0);
    text(&o.stdout)
}

#[test]
fn softlimit_same_limits_as_s6() {
    require("s6-softlimit");
    let cases: &[&[&str]] = &[
        &["-a", "100000000"],
        &["-c", "0"],
        &["-d", "200000000"],
        &["-f", "4096"],
        &["-l", "65536"],
        &["-m", "300000000"],
        &["-o", "100"],
        &["-p", "50"],
        &["-r", "1000000"],
        &["-s", "1048576"],
        &["-t", "30"],
        &["-o", "="],
        &["-c", "="],
        &["-o", "99999999999"],
        &["-o", "0100"],
        &["-c", "=", "-t", "5", "-o", "64", "-o", "65"],
    ];
    // Start from soft limits below the hard ones so '=' and clamping are visible.
    for c in cases {
        let run_with = |prog: &str| {
            let mut args = vec!["-o", "50", "-c", "0", "-t", "100", prog];
            args.extend(c.iter());
            args.extend(["cat", "/proc/self/limits"]);
            limits(&tend("tend-softlimit", &args))
        };
        let t = run_with("tend-softlimit");
        assert_eq!(t, run_with("s6-softlimit"), "{c:?}");
    }
    // Read back one value to show the comparison is not vacuous.
    let t = limits(&tend(
        "tend-softlimit",
        ["-o", "123", "cat", "/proc/self/limits"],
    ));
    let line = t.lines().find(|l| l.starts_with("Max open files")).unwrap();
    assert!(line.split_whitespace().nth(3) == Some("123"), "{line}");
}

#[test]
fn softlimit_bad_input() {
    require("s6-softlimit");
    for bad in [
        &["-o", "1k", "true"][..],
        &["-o", "unlimited", "true"],
        &["-o", "", "true"],
        &["-o", "-1", "true"],
        &["-o", "18446744073709551616", "true"],
        &["-o", "5"],
        &["-o"],
    ] {
        let (t, s) = both("softlimit", bad, &[]);
        usage_of(&t, "tend-softlimit");
        assert_code(&s, 100);
        assert!(t.stdout.is_empty());
    }
    // s6-softlimit ignores an unknown option (and then execs "5"); tend refuses it.
    usage_of(
        &tend("tend-softlimit", ["-x", "5", "true"]),
        "tend-softlimit",
    );
}

#[test]
fn softlimit_clamps_to_the_hard_limit() {
    // A soft limit above the hard one is clamped, never an error (as s6). A failing
    // setrlimit cannot be provoked here (soft <= hard always holds), so the 111 path is
    // not tested.
    let o = tend(
        "tend-softlimit",
        [
            "-o",
            "18446744073709551615",
            "sh",
            "-c",
            "ulimit -Sn; ulimit -Hn",
        ],
    );
    assert_code(&o, 0);
    let out = text(&o.stdout);
    let v: Vec<&str> = out.lines().collect();
    assert_eq!(v[0], v[1]);
}

// ---------------------------------------------------------------- setsid

/// pid, pgrp, sid, tpgid of the exec'd shell.
const STAT: &str = "read -r l < /proc/self/stat; set -- ${l##*)}; echo \"$$ $3 $4 $6\"";

fn ids(o: &Output) -> Vec<i64> {
    assert_code(o, 0);
    text(&o.stdout)
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect()
}

#[test]
fn setsid_session_and_group() {
    let me = nix::unistd::getsid(None).unwrap().as_raw() as i64;
    // Default -s: session and group leader.
    let v = ids(&tend("tend-setsid", ["sh", "-c", STAT]));
    assert_eq!((v[1], v[2]), (v[0], v[0]), "{v:?}");
    let v = ids(&tend("tend-setsid", ["-s", "sh", "-c", STAT]));
    assert_eq!((v[1], v[2]), (v[0], v[0]), "{v:?}");
    // -b: group leader in the same session.
    let v = ids(&tend("tend-setsid", ["-b", "sh", "-c", STAT]));
    assert_eq!(v[1], v[0]);
    assert_eq!(v[2], me);
    // Matches s6-setsid in the same situation.
    require("s6-setsid");
    let s = ids(&run({
        let mut c = cmd("s6-setsid");
        c.args(["-b", "sh", "-c", STAT]);
        c
    }));
    assert_eq!(s[2], v[2]);
}

#[test]
fn setsid_failure_modes() {
    // A session leader cannot setsid again: -I (default) warns and runs, -q is silent,
    // -i stops before exec.
    let o = tend("tend-setsid", ["tend-setsid", "echo", "EXECUTED"]);
    assert_code(&o, 0);
    stderr_is(
        &o,
        "tend-setsid: warning: unable to setsid: Operation not permitted",
    );
    assert_eq!(text(&o.stdout), "EXECUTED\n");
    let o = tend("tend-setsid", ["tend-setsid", "-q", "echo", "EXECUTED"]);
    assert_code(&o, 0);
    assert!(o.stderr.is_empty());
    let o = tend("tend-setsid", ["tend-setsid", "-i", "echo", "EXECUTED"]);
    assert_code(&o, 111);
    stderr_is(
        &o,
        "tend-setsid: fatal: unable to setsid: Operation not permitted",
    );
    assert!(o.stdout.is_empty());
    // -f without a terminal on fd 0: tcsetpgrp fails.
    let o = tend("tend-setsid", ["-if", "echo", "EXECUTED"]);
    assert_code(&o, 111);
    assert!(text(&o.stderr).starts_with("tend-setsid: fatal: unable to tcsetpgrp: "));
    assert!(o.stdout.is_empty());
    let o = tend("tend-setsid", ["-i", "-g", "-d", "9", "echo", "EXECUTED"]);
    assert_code(&o, 111);
    stderr_is(
        &o,
        "tend-setsid: fatal: unable to tcsetpgrp: Bad file number",
    );
    usage_of(&tend("tend-setsid", ["-d", "x", "true"]), "tend-setsid");
    usage_of(&tend("tend-setsid", ["-i"]), "tend-setsid");
}

#[test]
fn setsid_grab_takes_the_terminal() {
    require("script");
    // script(1) gives the shell a pty as controlling terminal; tend-setsid -g, a child of
    // that shell, makes a new group and grabs the terminal: tpgid == its pid.
    let inner = format!("{} -i -g sh -c '{}'; :", bin("tend-setsid").display(), STAT);
    let o = run({
        let mut c = Command::new("script");
        c.args(["-qec", &inner, "/dev/null"]);
        c
    });
    assert_code(&o, 0);
    let out = text(&o.stdout);
    let v: Vec<i64> = out
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    assert_eq!(v.len(), 4, "{out:?}");
    assert_eq!(v[1], v[0], "new process group");
    assert_eq!(v[3], v[0], "foreground group of the terminal");
    assert_ne!(v[2], v[0], "same session");
}

// ---------------------------------------------------------------- cpuset

fn online() -> Vec<usize> {
    let t = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let mut v = Vec::new();
    for part in t.trim().split(',') {
        match part.split_once('-') {
            Some((a, b)) => v.extend(a.parse::<usize>().unwrap()..=b.parse().unwrap()),
            None => v.push(part.parse().unwrap()),
        }
    }
    v
}

#[test]
fn cpuset_pins_and_reads_back() {
    let cpus = online();
    let last = *cpus.last().unwrap();
    let o = tend(
        "tend-cpuset",
        [
            &last.to_string(),
            "grep",
            "^Cpus_allowed_list:",
            "/proc/self/status",
        ],
    );
    assert_code(&o, 0);
    assert_eq!(text(&o.stdout), format!("Cpus_allowed_list:\t{last}\n"));
    if cpus.len() > 1 {
        let list = format!("{}-{}", cpus[0], cpus[1]);
        let o = tend(
            "tend-cpuset",
            [&list, "grep", "^Cpus_allowed_list:", "/proc/self/status"],
        );
        assert_eq!(text(&o.stdout), format!("Cpus_allowed_list:\t{list}\n"));
    }
}

fn last_possible() -> usize {
    let t = std::fs::read_to_string("/sys/devices/system/cpu/possible").unwrap();
    let last = t.trim().rsplit([',', '-']).next().unwrap();
    last.parse().unwrap()
}

#[test]
fn cpuset_rejects_offline_and_bad_lists() {
    let last = *online().last().unwrap();
    let possible = last_possible();
    // Possible but offline: only on machines that have such CPUs.
    if last < possible {
        let off = format!("{}", last + 1);
        let o = tend("tend-cpuset", [&format!("0,{off}"), "echo", "EXECUTED"]);
        assert_code(&o, 111);
        stderr_is(&o, &format!("tend-cpuset: fatal: CPUs not online: {off}"));
        assert!(o.stdout.is_empty());
    }
    // Beyond what the kernel can have: a usage error, at once.
    let beyond = possible + 1;
    let list = format!("0,{}-{}", beyond, beyond + 2);
    let o = tend("tend-cpuset", [&list, "echo", "EXECUTED"]);
    assert_code(&o, 100);
    stderr_is(
        &o,
        &format!(
            "tend-cpuset: fatal: invalid cpulist: {list}: CPU {} does not exist (the last possible CPU is {possible})",
            beyond + 2
        ),
    );
    assert!(o.stdout.is_empty());
}

/// 200 huge ranges once took 5 GB and died of SIGABRT: now a usage error in a small
/// address space.
#[test]
fn cpuset_huge_ranges_are_refused_without_allocating() {
    let list = vec!["0-9999999"; 200].join(",");
    let o = tend(
        "tend-softlimit",
        ["-a", "67108864", "tend-cpuset", &list, "echo", "EXECUTED"],
    );
    assert_code(&o, 100);
    let err = text(&o.stderr);
    assert!(
        err.starts_with("tend-cpuset: fatal: invalid cpulist: 0-9999999,0-9999999,")
            && err.ends_with(&format!(
                "0-9999999: CPU 9999999 does not exist (the last possible CPU is {})\n",
                last_possible()
            ))
            && err.lines().count() == 1,
        "{err}"
    );
    assert!(o.stdout.is_empty());
    let o = tend(
        "tend-cpuset",
        ["0-99999999999999999999999", "echo", "EXECUTED"],
    );
    assert_code(&o, 100);
    stderr_is(
        &o,
        "tend-cpuset: fatal: invalid cpulist: 0-99999999999999999999999",
    );
}

#[test]
fn cpuset_bad_lists() {
    for bad in ["3-1", "a", "", "1,", "1-", "0-2-3"] {
        let o = tend("tend-cpuset", [bad, "echo", "EXECUTED"]);
        assert_code(&o, 100);
        stderr_is(&o, &format!("tend-cpuset: fatal: invalid cpulist: {bad}"));
        assert!(o.stdout.is_empty());
    }
    usage_of(&tend("tend-cpuset", ["0"]), "tend-cpuset");
    usage_of(&tend("tend-cpuset", ["-x", "0", "true"]), "tend-cpuset");
}

// ---------------------------------------------------------------- cgroup

fn cgroup2_mount() -> PathBuf {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    for line in info.lines() {
        let (left, right) = line.split_once(" - ").unwrap();
        if right.starts_with("cgroup2 ") {
            return PathBuf::from(left.split(' ').nth(4).unwrap());
        }
    }
    panic!("no cgroup2 mount on this host");
}

/// The cgroup v1 mount holding a controller, read from mountinfo independently of tend.
fn v1_mount(controller: &str) -> Option<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    info.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let f: Vec<&str> = right.split(' ').collect();
        (f[0] == "cgroup" && f.get(2)?.split(',').any(|o| o == controller))
            .then(|| PathBuf::from(left.split(' ').nth(4).unwrap()))
    })
}

/// A cgroup subtree for one test, removed (leaves first) when dropped.
struct Group {
    top: PathBuf,
}

impl Group {
    fn new(name: &str) -> (Group, String) {
        let rel = format!("tend-it-{}-{name}", std::process::id());
        (
            Group {
                top: cgroup2_mount().join(&rel),
            },
            rel,
        )
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        fn rm(p: &Path) {
            if let Ok(rd) = std::fs::read_dir(p) {
                for e in rd.flatten() {
                    if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                        rm(&e.path());
                    }
                }
            }
            let _ = std::fs::remove_dir(p);
        }
        rm(&self.top);
    }
}

fn controllers(mount: &Path) -> Vec<String> {
    std::fs::read_to_string(mount.join("cgroup.controllers"))
        .unwrap()
        .split_whitespace()
        .map(String::from)
        .collect()
}

#[test]
fn cgroup_joins_and_writes_limits() {
    let mount = cgroup2_mount();
    let (g, rel) = Group::new("join");
    let path = format!("{rel}/svc");
    let dir = mount.join(&path);
    let mut args: Vec<String> = vec!["-c".into(), "cgroup.max.descendants=3".into()];
    let have = controllers(&mount);
    if have.iter().any(|c| c == "hugetlb") {
        args.extend(["-c".into(), "hugetlb.2MB.max=4M".into()]);
    }
    if have.iter().any(|c| c == "pids") {
        args.extend(["-c".into(), "pids.max=7".into()]);
    }
    if have.iter().any(|c| c == "memory") {
        args.extend(["-c".into(), "memory.max=512M".into()]);
    }
    args.extend([path.clone(), "cat".into(), "/proc/self/cgroup".into()]);
    let o = tend("tend-cgroup", &args);
    assert_code(&o, 0);
    assert!(
        text(&o.stdout).lines().any(|l| l == format!("0::/{path}")),
        "{}",
        text(&o.stdout)
    );
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    assert_eq!(read("cgroup.max.descendants"), "3\n");
    if have.iter().any(|c| c == "hugetlb") && dir.join("hugetlb.2MB.max").exists() {
        assert_eq!(read("hugetlb.2MB.max"), "4194304\n");
        let parent =
            std::fs::read_to_string(mount.join(&rel).join("cgroup.subtree_control")).unwrap();
        assert!(
            parent.split_whitespace().any(|c| c == "hugetlb"),
            "{parent}"
        );
    }
    if have.iter().any(|c| c == "pids") {
        assert_eq!(read("pids.max"), "7\n");
    }
    if have.iter().any(|c| c == "memory") {
        assert_eq!(read("memory.max"), "536870912\n");
    }
    // An absolute path inside the mount works too, and the group already exists.
    let o = tend(
        "tend-cgroup",
        [dir.to_str().unwrap(), "cat", "/proc/self/cgroup"],
    );
    assert_code(&o, 0);
    assert!(text(&o.stdout).contains(&format!("0::/{path}\n")));
    drop(g);
}

/// offered_controller, or None after saying on stderr why the test skips.
fn offered_or_skip(mount: &Path) -> Option<(&'static str, &'static str, &'static str)> {
    offered_controller(mount).map_err(skip).ok()
}

/// A controller the mount offers and a setting of it, or why there is none to test.
fn offered_controller(mount: &Path) -> Result<(&'static str, &'static str, &'static str), String> {
    let have = controllers(mount);
    [
        ("hugetlb", "hugetlb.2MB.max=4M", "4194304"),
        ("pids", "pids.max=7", "7"),
        ("memory", "memory.max=512M", "536870912"),
    ]
    .into_iter()
    .find(|(c, _, _)| have.iter().any(|h| h == c))
    .ok_or(format!(
        "{} offers none of hugetlb, pids, memory (cgroup.controllers: {have:?})",
        mount.display()
    ))
}

#[test]
fn cgroup_delegates_from_the_mount_down() {
    // The issue's case: an existing level (`app`) to which its parent does not delegate
    // the controller. tend-cgroup enables it on every level from the mount down to the
    // group's parent.
    let mount = cgroup2_mount();
    let Some((c, setting, want)) = offered_or_skip(&mount) else {
        return;
    };
    let (g, rel) = Group::new("deleg");
    std::fs::create_dir_all(g.top.join("app")).unwrap();
    let offered = std::fs::read_to_string(g.top.join("app/cgroup.controllers")).unwrap();
    assert!(!offered.split_whitespace().any(|x| x == c), "{offered}");
    let path = format!("{rel}/app/web");
    let o = tend(
        "tend-cgroup",
        ["-c", setting, &path, "cat", "/proc/self/cgroup"],
    );
    assert_code(&o, 0);
    assert!(text(&o.stdout).contains(&format!("0::/{path}\n")));
    let file = setting.split_once('=').unwrap().0;
    let value = std::fs::read_to_string(mount.join(&path).join(file)).unwrap();
    assert_eq!(value, format!("{want}\n"));
    for level in [mount.clone(), g.top.clone(), g.top.join("app")] {
        let enabled = std::fs::read_to_string(level.join("cgroup.subtree_control")).unwrap();
        assert!(
            enabled.split_whitespace().any(|x| x == c),
            "{} delegates {enabled:?}",
            level.display()
        );
    }
    // The root keeps delegating (systemd leaves it so too): other groups may use it now.
}

#[test]
fn cgroup_delegated_subtree_needs_no_write_above_it() {
    // As an administrator (or systemd) delegates a subtree to an unprivileged user: the
    // levels above it delegate the controller already, and the user may write only from
    // its own level down. tend-cgroup writes nothing where the controller is enabled, and
    // names the level above that refuses when one does not delegate it.
    let mount = cgroup2_mount();
    let Some((c, setting, want)) = offered_or_skip(&mount) else {
        return;
    };
    let (g, rel) = Group::new("delegated");
    let user = g.top.join("user");
    std::fs::create_dir_all(user.join("init")).unwrap();
    let nobody = Some(nix::unistd::Uid::from_raw(65534));
    for p in [
        user.clone(),
        user.join("cgroup.procs"),
        user.join("cgroup.subtree_control"),
        user.join("cgroup.threads"),
        user.join("init"),
        user.join("init/cgroup.procs"),
    ] {
        nix::unistd::chown(&p, nobody, None).unwrap();
    }
    let enable = |level: &Path| {
        std::fs::write(level.join("cgroup.subtree_control"), format!("+{c}")).unwrap()
    };
    enable(&mount);
    // The user's processes start in its own leaf; from there it may move them anywhere
    // below its level.
    let path = format!("{rel}/user/app/web");
    let as_nobody = || {
        run({
            let mut cmd = Command::new("sh");
            cmd.args([
                "-c",
                &format!(
                    "echo $$ > {init}/cgroup.procs && exec {su} nobody {tc} -c {setting} {path} cat /proc/self/cgroup",
                    init = user.join("init").display(),
                    su = bin("tend-setuidgid").display(),
                    tc = bin("tend-cgroup").display(),
                ),
            ]);
            cmd
        })
    };
    let o = as_nobody();
    assert_code(&o, 111);
    stderr_is(
        &o,
        &format!(
            "tend-cgroup: fatal: {t} refused to delegate controller {c}: unable to write +{c} \
             to {t}/cgroup.subtree_control: Permission denied",
            t = g.top.display()
        ),
    );
    enable(&g.top);
    let o = as_nobody();
    assert_code(&o, 0);
    assert!(text(&o.stdout).contains(&format!("0::/{path}\n")), "{o:?}");
    let file = setting.split_once('=').unwrap().0;
    let value = std::fs::read_to_string(mount.join(&path).join(file)).unwrap();
    assert_eq!(value, format!("{want}\n"));
    drop(g);
}

#[test]
fn cgroup_names_the_level_that_refuses() {
    // A level with processes of its own cannot delegate a domain controller (cgroup v2's
    // no-internal-process rule): the message says which one refused.
    let mount = cgroup2_mount();
    let Some((_, setting, _)) = offered_or_skip(&mount) else {
        return;
    };
    let c = setting.split('.').next().unwrap();
    let (g, rel) = Group::new("refuse");
    let busy = g.top.join("busy");
    std::fs::create_dir_all(&busy).unwrap();
    let sleeper = Daemon::start({
        let mut c = Command::new("sleep");
        c.arg("100");
        c
    });
    std::fs::write(busy.join("cgroup.procs"), sleeper.pid().to_string()).unwrap();
    let o = tend(
        "tend-cgroup",
        [
            "-c",
            setting,
            &format!("{rel}/busy/web"),
            "echo",
            "EXECUTED",
        ],
    );
    assert_code(&o, 111);
    stderr_is(
        &o,
        &format!(
            "tend-cgroup: fatal: {b} refused to delegate controller {c}: unable to write +{c} \
             to {b}/cgroup.subtree_control: Device or resource busy (it holds processes of \
             its own)",
            b = busy.display()
        ),
    );
    assert!(o.stdout.is_empty());
    // The sleeper leaves the group before it is removed.
    drop(sleeper);
    drop(g);
}

#[test]
fn cgroup_unavailable_controller_is_a_clear_error() {
    let mount = cgroup2_mount();
    let have = controllers(&mount);
    let (_g, rel) = Group::new("unavail");
    // A controller the kernel has no name for is never available; real ones that this
    // host does not delegate take the same path.
    let mut missing: Vec<&str> = ["memory", "pids", "cpu", "io", "cpuset"]
        .into_iter()
        .filter(|c| !have.iter().any(|h| h == c))
        .collect();
    missing.push("nosuchctl");
    for c in missing {
        let o = tend(
            "tend-cgroup",
            ["-c", &format!("{c}.max=1"), &rel, "echo", "EXECUTED"],
        );
        assert_code(&o, 111);
        // On a hybrid host the message also says which v1 hierarchy holds it.
        let v1 = v1_mount(c)
            .map(|m| {
                format!(
                    "; {c} is bound to the cgroup v1 hierarchy at {}",
                    m.display()
                )
            })
            .unwrap_or_default();
        stderr_is(
            &o,
            &format!(
                "tend-cgroup: fatal: controller {c} is not available in {} (available: {}{v1})",
                mount.display(),
                if have.is_empty() {
                    "none".to_string()
                } else {
                    have.join(" ")
                }
            ),
        );
        assert!(o.stdout.is_empty());
    }
    // A file the kernel does not offer.
    let o = tend(
        "tend-cgroup",
        ["-c", "cgroup.nosuch=1", &rel, "echo", "EXECUTED"],
    );
    assert_code(&o, 111);
    stderr_is(
        &o,
        &format!(
            "tend-cgroup: fatal: unable to write 1 to {}/cgroup.nosuch: No such file or directory",
            mount.join(&rel).display()
        ),
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn cgroup_not_writable_or_not_mounted() {
    let mount = cgroup2_mount();
    let (_g, rel) = Group::new("ro");
    // Unprivileged: cannot create the group.
    let o = tend(
        "tend-setuidgid",
        ["nobody", "tend-cgroup", &rel, "echo", "EXECUTED"],
    );
    assert_code(&o, 111);
    stderr_is(
        &o,
        &format!(
            "tend-cgroup: fatal: unable to create {}: Permission denied",
            mount.join(&rel).display()
        ),
    );
    assert!(o.stdout.is_empty());
    require("unshare");
    let m = mount.display().to_string();
    let tc = bin("tend-cgroup").display().to_string();
    // Read-only hierarchy, in a private mount namespace.
    let o = run({
        let mut c = Command::new("unshare");
        c.args([
            "-m",
            "sh",
            "-c",
            &format!("mount -o remount,bind,ro {m} && exec {tc} {rel} echo EXECUTED"),
        ]);
        c
    });
    assert_code(&o, 111);
    stderr_is(
        &o,
        &format!("tend-cgroup: fatal: unable to create {m}/{rel}: Read-only file system"),
    );
    assert!(o.stdout.is_empty());
    // No cgroup2 at all.
    let o = run({
        let mut c = Command::new("unshare");
        c.args([
            "-m",
            "sh",
            "-c",
            &format!("umount {m} && exec {tc} {rel} echo EXECUTED"),
        ]);
        c
    });
    assert_code(&o, 111);
    stderr_is(
        &o,
        "tend-cgroup: fatal: no cgroup2 filesystem is mounted (see /proc/self/mountinfo)",
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn cgroup_bad_input() {
    for (args, line) in [
        (
            &["-c", "bogus", "x", "true"][..],
            "tend-cgroup: fatal: invalid setting (controller.file=value expected): bogus",
        ),
        (
            &["-c", "memory.max=", "x", "true"],
            "tend-cgroup: fatal: invalid setting (controller.file=value expected): memory.max=",
        ),
        (
            &["../x", "true"],
            "tend-cgroup: fatal: invalid cgroup path: ../x",
        ),
        (
            &["/tmp/x", "true"],
            "tend-cgroup: fatal: /tmp/x is not under a cgroup2 mount",
        ),
        (
            &["-c", "memory.max=99999999999T", "x", "true"],
            "tend-cgroup: fatal: invalid value: 99999999999T",
        ),
    ] {
        let o = tend("tend-cgroup", args);
        assert_code(&o, 100);
        stderr_is(&o, line);
    }
    usage_of(&tend("tend-cgroup", ["x"]), "tend-cgroup");
    usage_of(&tend("tend-cgroup", ["-c"]), "tend-cgroup");
}

// ---------------------------------------------------------------- notify

/// A daemon speaking sd_notify: `daemon.py DELAY MODE [exit]`. After DELAY seconds it
/// sends other messages, then with MODE `ready` records that it is about to be ready and
/// sends READY=1 (`drop`: the same, after dropping to nobody itself); with `exit` it
/// leaves shortly after, otherwise it stays.
const DAEMON: &str = r#"
import os, socket, sys, time
time.sleep(float(sys.argv[1]))
addr = os.environ["NOTIFY_SOCKET"]
if addr.startswith("@"):
    addr = "\0" + addr[1:]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.sendto(b"STATUS=starting\nMAINPID=%d" % os.getpid(), addr)
s.sendto(b"WATCHDOG=1", addr)
if sys.argv[2] in ("ready", "drop"):
    try:
        open("about-to-be-ready", "w").close()
    except OSError:
        pass
    if sys.argv[2] == "drop":
        import pwd
        nobody = pwd.getpwnam("nobody")
        os.setgroups([])
        os.setgid(nobody.pw_gid)
        os.setuid(nobody.pw_uid)
    s.sendto(b"STATUS=up\nREADY=1\n", addr)
    sys.stderr.write("sent READY=1 as %d\n" % os.getuid())
    sys.stderr.flush()
    time.sleep(0.3 if sys.argv[3:] == ["exit"] else 1000)
"#;

#[test]
fn notify_readiness_under_s6_supervise() {
    require("s6-supervise");
    require("s6-svwait");
    require("python3");
    let s = Scratch::new("notify-sup");
    let svc = s.join("svc");
    s.write("svc/daemon.py", DAEMON, false);
    s.write(
        "svc/run",
        &format!(
            "#!/bin/sh\nexec {} python3 daemon.py 1 ready\n",
            bin("tend-notify").display()
        ),
        true,
    );
    s.write("svc/notification-fd", "3\n", false);
    let sup = Supervised::start("s6-supervise", &svc);
    let svwait = |flag: &str| {
        let mut c = cmd("s6-svwait");
        c.args([flag, "-t", "20000"]).arg(&svc);
        run(c)
    };
    assert_code(&svwait("-u"), 0);
    // Up is not ready: the daemon sleeps a second before READY=1.
    assert!(!svc.join("about-to-be-ready").exists());
    assert_code(&svwait("-U"), 0);
    assert!(
        svc.join("about-to-be-ready").exists(),
        "s6-svwait -U returned before the daemon sent READY=1"
    );
    let st = run({
        let mut c = cmd("s6-svstat");
        c.arg(&svc);
        c
    });
    assert!(text(&st.stdout).contains("ready"), "{}", text(&st.stdout));
    sup.stop();
}

/// Run `tend-notify -d 3 ...` with fd 3 the write end of a pipe we read to EOF: EOF
/// comes only when every holder (tend-notify's listener included) is gone.
fn notify_pipe(script: &str, dir: &Path) -> Vec<u8> {
    let mut c = Command::new("sh");
    c.current_dir(dir)
        .env("PATH", path_env())
        .args(["-c", &format!("exec 3>&1 >/dev/null; {script}")])
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        let _ = tx.send(v);
    });
    let v = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the notification fd was never closed: listener still running");
    let _ = child.wait();
    v
}

#[test]
fn notify_listener_writes_once_and_leaves() {
    require("python3");
    let s = Scratch::new("notify-pipe");
    s.write("daemon.py", DAEMON, false);
    // READY=1: exactly one newline, then the listener exits (and the daemon a little
    // later, so the pipe can close).
    let out = notify_pipe(
        "exec tend-notify -d 3 python3 daemon.py 0 ready exit",
        &s.path,
    );
    assert_eq!(out, b"\n");
    // The daemon dies without READY=1: nothing written, the listener leaves.
    let out = notify_pipe("exec tend-notify -d 3 python3 daemon.py 0 never", &s.path);
    assert_eq!(out, b"");
    // The daemon drops privileges itself, then says READY=1: still trusted.
    let out = notify_pipe(
        "exec tend-notify -d 3 python3 daemon.py 0 drop exit",
        &s.path,
    );
    assert_eq!(out, b"\n");
}

#[test]
fn notify_ignores_another_users_ready() {
    require("python3");
    // /usr/bin/python3: a python3 under /root (pyenv's) cannot be run by nobody.
    assert!(
        Path::new("/usr/bin/python3").exists(),
        "needs /usr/bin/python3"
    );
    let s = Scratch::new("notify-untrusted");
    s.write("daemon.py", DAEMON, false);
    // The daemon (root) runs a child as nobody that sends READY=1: ignored. The child
    // says on stderr that it did send, so the test cannot pass without a real attempt.
    let mut c = Command::new("sh");
    c.current_dir(&s.path).env("PATH", path_env()).args([
        "-c",
        "exec 3>&1 >/dev/null; exec tend-notify -d 3 sh -c \
         'tend-setuidgid nobody /usr/bin/python3 daemon.py 0 ready exit 2>sent'",
    ]);
    let o = run(c);
    assert_code(&o, 0);
    assert_eq!(text(&o.stdout), "");
    let sent = std::fs::read_to_string(s.join("sent")).unwrap();
    let nobody = nobody().uid;
    assert_eq!(sent, format!("sent READY=1 as {nobody}\n"));
}

#[test]
fn notify_bad_input() {
    let s = Scratch::new("notify-bad");
    let o = run({
        let mut c = cmd("tend-notify");
        c.current_dir(&s.path).args(["echo", "EXECUTED"]);
        c
    });
    assert_code(&o, 111);
    stderr_is(
        &o,
        "tend-notify: fatal: unable to read ./notification-fd: No such file or directory",
    );
    assert!(o.stdout.is_empty());
    s.write("notification-fd", "x\n", false);
    let o = run({
        let mut c = cmd("tend-notify");
        c.current_dir(&s.path).args(["true"]);
        c
    });
    assert_code(&o, 111);
    stderr_is(
        &o,
        "tend-notify: fatal: unable to parse ./notification-fd: Invalid argument",
    );
    let o = tend("tend-notify", ["-d", "9", "echo", "EXECUTED"]);
    assert_code(&o, 111);
    stderr_is(
        &o,
        "tend-notify: fatal: unable to use the notification fd: Bad file number",
    );
    assert!(o.stdout.is_empty());
    usage_of(&tend("tend-notify", ["-d", "x", "true"]), "tend-notify");
    usage_of(&tend("tend-notify", ["-d", "1"]), "tend-notify");
}

// ---------------------------------------------------------------- man pages

#[test]
fn chain_man_pages() {
    require("groff");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (prog, letters) in [
        ("tend-setuidgid", ""),
        ("tend-envuidgid", "iDugBn"),
        ("tend-applyuidgid", "zugGU"),
        ("tend-envdir", "IinfLc"),
        ("tend-softlimit", "acdflmoprst"),
        ("tend-setsid", "sbfgiIqd"),
        ("tend-cpuset", ""),
        ("tend-cgroup", "c"),
        ("tend-notify", "d"),
    ] {
        let page = root.join(format!("man/man8/{prog}.8"));
        let src = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{prog}: {e}"));
        for l in letters.chars() {
            assert!(
                src.contains(&format!("\\-{l}")) || src.contains(&format!("-{l}")),
                "{prog}: option -{l} missing from the page"
            );
        }
        // The usage line is the SYNOPSIS.
        let usage = run({
            let mut c = cmd(prog);
            c.arg("-?");
            c
        });
        let line = text(&usage.stderr);
        let synopsis = line.trim_end().split("usage: ").nth(1).unwrap().to_string();
        let rendered = run({
            let mut c = Command::new("sh");
            c.args([
                "-c",
                &format!("groff -man -Tascii -P-cbou {}", page.display()),
            ]);
            c
        });
        let squeeze = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            squeeze(&text(&rendered.stdout)).contains(&squeeze(&synopsis)),
            "{prog}: SYNOPSIS differs from usage {synopsis:?}"
        );
        let o = run({
            let mut c = Command::new("groff");
            c.args(["-man", "-ww", "-z"]).arg(&page);
            c
        });
        assert!(o.stderr.is_empty(), "{prog}: {}", text(&o.stderr));
        let _ = OsStr::new(prog).as_bytes();
    }
}

// ---------------------------------------------------------------- the example

#[test]
fn example_chain_service_runs_under_s6_supervise() {
    require("s6-supervise");
    require("python3");
    let s = Scratch::new("example-chain");
    let svc = s.join("chain");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/chain");
    assert_code(
        &run({
            let mut c = Command::new("cp");
            c.arg("-r").arg(&src).arg(&svc);
            c
        }),
        0,
    );
    // A cgroup of this test's own, so parallel runs do not meet.
    let (g, rel) = Group::new("example");
    let script = std::fs::read_to_string(svc.join("run")).unwrap();
    assert!(script.contains("tend-example/chain"));
    std::fs::write(
        svc.join("run"),
        script.replace("tend-example/chain", &format!("{rel}/chain")),
    )
    .unwrap();
    let sup = Supervised::start("s6-supervise", &svc);
    let o = run({
        let mut c = cmd("s6-svwait");
        c.args(["-U", "-t", "20000"]).arg(&svc);
        c
    });
    assert_code(&o, 0);
    let pid = text(
        &run({
            let mut c = cmd("s6-svstat");
            c.args(["-o", "pid"]).arg(&svc);
            c
        })
        .stdout,
    )
    .trim()
    .to_string();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let nobody = nobody().uid;
    assert!(
        status.contains(&format!("\nUid:\t{nobody}\t{nobody}\t{nobody}\t{nobody}\n")),
        "{status}"
    );
    assert!(status.contains("\nCpus_allowed_list:\t0\n"), "{status}");
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let nofile = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    assert_eq!(nofile.split_whitespace().nth(3), Some("4096"));
    let cg = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    assert!(cg.contains(&format!("0::/{rel}/chain\n")), "{cg}");
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    let vars: Vec<&[u8]> = environ.split(|&b| b == 0).collect();
    assert!(vars.contains(&&b"GREETING=hello from the chain"[..]));
    assert!(vars.iter().any(|v| v.starts_with(b"NOTIFY_SOCKET=@")));
    sup.stop();
    wait_until(
        Duration::from_secs(10),
        "the daemon to leave its cgroup",
        || {
            std::fs::read_to_string(g.top.join("chain/cgroup.procs"))
                .map(|p| p.trim().is_empty())
                .unwrap_or(true)
                .then_some(())
        },
    );
    drop(g);
}

// ---------------------------------------------------------------- usage, all nine

#[test]
fn every_program_refuses_a_bad_option_and_a_missing_prog() {
    let s = Scratch::new("usage");
    let d = s.join("env");
    std::fs::create_dir_all(&d).unwrap();
    let d = d.to_str().unwrap();
    // (program, arguments that are complete but for the program to run)
    let cases: &[(&str, &[&str])] = &[
        ("tend-setuidgid", &["nobody"]),
        ("tend-envuidgid", &["nobody"]),
        ("tend-applyuidgid", &["-u", "1"]),
        ("tend-envdir", &[d]),
        ("tend-softlimit", &["-o", "5"]),
        ("tend-setsid", &["-b"]),
        ("tend-cpuset", &["0"]),
        ("tend-cgroup", &["x"]),
        ("tend-notify", &["-d", "1"]),
    ];
    for (prog, args) in cases {
        let o = tend(prog, args.iter().copied());
        usage_of(&o, prog);
        assert!(o.stdout.is_empty());
        let o = tend(
            prog,
            ["-Z"]
                .iter()
                .chain(args.iter())
                .chain(&["echo", "EXECUTED"]),
        );
        usage_of(&o, prog);
        assert!(o.stdout.is_empty(), "{prog}");
        let o = tend(prog, [] as [&str; 0]);
        usage_of(&o, prog);
    }
}
