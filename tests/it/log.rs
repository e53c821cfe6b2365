//! tend-log, tend-tai64n, tend-tai64nlocal against the real binaries and against Debian's
//! s6-log / s6-tai64n / s6-tai64nlocal.
//!
//! Not tested here: that `current` is fsynced before the rename (not observable without
//! a crash of the machine); `-v` (no extra messages exist yet); a `!` processor when execlineb is missing; rotation
//! points when lines arrive in bursts (s6-log's then depend on its 8 KiB reads, see
//! tend-log(8) NOTES: the comparisons feed one line at a time, and
//! `bulk_input_rotates_at_the_same_points_as_line_by_line` shows tend does not depend on
//! it); the
//! plain-read fallback when tee(2) refuses a pipe; stdout reopened when it is a terminal;
//! a fragment taken out of the pipe after its 100 ms grace; where s6-log rotates inside a
//! line longer than its reads (tend-log(8) NOTES).
//! Needs root (tmpfs mounts) and Debian's s6, execline.

use crate::common::*;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SEC5: Duration = Duration::from_secs(5);
const SEC20: Duration = Duration::from_secs(20);

/// Replace every `@` + 24 hex digits with `@<TAI>`, and every `YYYY-MM-DD HH:MM:SS.n{9}`
/// with `<DATE>`.
fn mask(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'@' && i + 25 <= b.len() && b[i + 1..i + 25].iter().all(u8::is_ascii_hexdigit) {
            out.extend_from_slice(b"@<TAI>");
            i += 25;
            continue;
        }
        if i + 29 <= b.len() && is_date(&b[i..i + 29]) {
            out.extend_from_slice(b"<DATE>");
            i += 29;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

fn is_date(s: &[u8]) -> bool {
    let pat = b"dddd-dd-dd dd:dd:dd.ddddddddd";
    s.iter().zip(pat.iter()).all(|(c, p)| {
        if *p == b'd' {
            c.is_ascii_digit()
        } else {
            c == p
        }
    })
}

/// A logdir (or any dir) as (masked name, mode, masked content), sorted by real name.
/// Files that vanish while it is taken (a rotation in progress) are left out.
fn snapshot(dir: &Path) -> Vec<(String, u32, String)> {
    let mut names: Vec<_> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    names
        .into_iter()
        .filter_map(|n| {
            let p = dir.join(&n);
            let md = fs::metadata(&p).ok()?;
            let content = if md.is_file() {
                text(&mask(&fs::read(&p).ok()?))
            } else {
                "<dir>".into()
            };
            Some((
                text(&mask(n.to_string_lossy().as_bytes())),
                md.permissions().mode() & 0o7777,
                content,
            ))
        })
        .collect()
}

/// Sizes of the files that change when a line is written (not archives, which a
/// processor may write to at any time).
fn progress(root: &Path, watch: &[&str]) -> String {
    let mut s = String::new();
    for w in watch {
        let p = root.join(w);
        match fs::read(&p) {
            Ok(b) => s.push_str(&format!(
                "{w}:{}:{};",
                b.len(),
                b.iter().map(|&x| x as u64).sum::<u64>()
            )),
            Err(_) => s.push_str(&format!("{w}:-;")),
        }
    }
    s
}

/// Whether `pid` sleeps in poll/ppoll (its loop is idle).
fn in_poll(pid: i32) -> bool {
    let s = fs::read_to_string(format!("/proc/{pid}/syscall")).unwrap_or_default();
    s.starts_with("7 ") || s.starts_with("271 ")
}

/// Run `prog script` in `root`, feeding `lines` one at a time and waiting until each has
/// visibly been written and the logger is idle again with the pipe empty (so it sees
/// exactly one line per read), then close stdin and wait for exit.
/// Returns (exit code, stderr).
fn run_fed(
    prog: &str,
    root: &Path,
    args: &[&str],
    lines: &[Vec<u8>],
    watch: &[&str],
) -> (i32, String) {
    let (rd, wr) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
    let keep = rd.try_clone().unwrap();
    let mut c = cmd(prog);
    c.current_dir(root)
        .args(args)
        .stdin(Stdio::from(rd))
        .stdout(fs::File::create(root.join("stdout")).unwrap())
        .stderr(fs::File::create(root.join("stderr")).unwrap());
    let mut d = Daemon::start(c);
    let pid = d.pid();
    let mut stdin = fs::File::from(wr);
    let settled = || !pipe_has_data(&keep) && in_poll(pid);
    for l in lines {
        let before = progress(root, watch);
        stdin.write_all(l).unwrap();
        let deadline = Instant::now() + SEC5;
        loop {
            if progress(root, watch) != before && settled() {
                // Settled twice, 300 µs apart: one look can fall between two reads.
                std::thread::sleep(Duration::from_micros(300));
                if settled() {
                    break;
                }
            }
            assert!(
                Instant::now() < deadline,
                "{prog}: line {:?} never written",
                text(l)
            );
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    drop(stdin);
    drop(keep);
    let st = d
        .wait_exit(SEC20)
        .unwrap_or_else(|| panic!("{prog} did not exit"));
    (
        st.code().unwrap_or(-1),
        fs::read_to_string(root.join("stderr")).unwrap(),
    )
}

/// Lines of varied lengths, numbered.
fn numbered(n: usize, seed: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let len = 10 + (i * 37 + seed) % 90;
            let mut l =
                format!("{}{i:05} ", ["alpha", "beta", "gamma", "delta"][i % 4]).into_bytes();
            while l.len() < len {
                l.push(b'a' + (l.len() % 26) as u8);
            }
            l.push(b'\n');
            l
        })
        .collect()
}

/// Run s6-log and tend-log with the same script and input, each in its own dir, and
/// compare every directory and file named in `compare` (masked).
fn compare_with_s6(name: &str, args: &[&str], lines: &[Vec<u8>], watch: &[&str], compare: &[&str]) {
    require("s6-log");
    let sc = Scratch::new(name);
    let s6 = sc.join("s6");
    let td = sc.join("tend");
    fs::create_dir_all(&s6).unwrap();
    fs::create_dir_all(&td).unwrap();
    let (c1, e1) = run_fed("s6-log", &s6, args, lines, watch);
    let (c2, e2) = run_fed("tend-log", &td, args, lines, watch);
    assert_eq!(c1, 0, "s6-log: {e1}");
    assert_eq!(c2, 0, "tend-log: {e2}");
    for what in compare {
        let (a, b) = (s6.join(what), td.join(what));
        if a.is_dir() {
            assert_eq!(snapshot(&a), snapshot(&b), "{what} differs");
        } else {
            assert_eq!(
                text(&mask(&fs::read(&a).unwrap())),
                text(&mask(&fs::read(&b).unwrap())),
                "{what} differs"
            );
        }
    }
}

#[test]
fn same_as_s6_rotation_and_count_pruning() {
    compare_with_s6(
        "log-cmp-rot",
        &["t", "s4096", "n3", "./d"],
        &numbered(400, 1),
        &["d/current"],
        &["d", "stdout"],
    );
}

#[test]
fn same_as_s6_selection_status_stdout_and_size_pruning() {
    compare_with_s6(
        "log-cmp-sel",
        &[
            "-",
            "+^alpha",
            "s4096",
            "n20",
            "./a",
            "-",
            "+^beta",
            "^60",
            "t",
            "=./status",
            "pB:",
            "T",
            "1",
            "f",
            "p",
            "S7000",
            "s4096",
            "./rest",
        ],
        &numbered(500, 7),
        &["a/current", "rest/current", "status", "stdout"],
        &["a", "rest", "status", "stdout"],
    );
}

#[test]
fn same_as_s6_with_processor_and_state() {
    // Two logdirs: with one, s6-log 2.11 breaks the processor's fd 5 (see
    // processor_state_with_one_logdir for tend's fix).
    let proc_ = "?tr a-z A-Z; n=$(cat <&4); echo $((${n:-0}+1)) >&5";
    compare_with_s6(
        "log-cmp-proc",
        &[
            "s4096",
            "n5",
            proc_,
            "./p",
            "?",
            "+^gamma",
            "-^alpha",
            "./g",
            "-",
            "+^delta",
            "!tr a-z A-Z",
            "./x",
        ],
        &numbered(400, 3),
        &["p/current", "g/current", "x/current"],
        &["p", "g", "x"],
    );
}

#[test]
fn same_as_s6_line_limit_and_missing_final_newline() {
    let mut lines = numbered(20, 5);
    lines.push(vec![b'x'; 100]);
    lines.last_mut().unwrap().push(b'\n');
    lines.push(vec![b'y'; 48]);
    lines.last_mut().unwrap().push(b'\n');
    // A NUL byte ends a line in s6-log.
    lines.push(b"before\0after\n".to_vec());
    lines.push(b"\0\n".to_vec());
    compare_with_s6(
        "log-cmp-limit",
        &["-l", "48", "./d"],
        &lines,
        &["d/current"],
        &["d"],
    );
    // s6-log 2.11 drops a final line without newline; tend writes it (with a newline).
    let sc = Scratch::new("log-lastline");
    let mut c = cmd("tend-log");
    c.arg("1").stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut ch = c.spawn().unwrap();
    ch.stdin.take().unwrap().write_all(b"full\nshort").unwrap();
    let o = ch.wait_with_output().unwrap();
    assert_code(&o, 0);
    assert_eq!(o.stdout, b"full\nshort\n");
    drop(sc);
}

fn tend_in(root: &Path, args: &[&str], input: &[u8]) -> std::process::Output {
    let mut c = cmd("tend-log");
    c.current_dir(root)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut ch = c.spawn().unwrap();
    let mut si = ch.stdin.take().unwrap();
    let data = input.to_vec();
    let w = std::thread::spawn(move || {
        let _ = si.write_all(&data);
    });
    let o = ch.wait_with_output().unwrap();
    w.join().unwrap();
    o
}

#[test]
fn bulk_input_rotates_at_the_same_points_as_line_by_line() {
    let sc = Scratch::new("log-bulk");
    let lines = numbered(2000, 9);
    let all: Vec<u8> = lines.concat();
    let o = tend_in(&sc.path, &["s4096", "n1000", "./bulk"], &all);
    assert_code(&o, 0);
    fs::create_dir_all(sc.join("fed")).unwrap();
    let (c, e) = run_fed(
        "tend-log",
        &sc.join("fed"),
        &["s4096", "n1000", "./d"],
        &lines[..600],
        &["d/current"],
    );
    assert_eq!(c, 0, "{e}");
    let bulk = snapshot(&sc.join("bulk"));
    let fed = snapshot(&sc.join("fed/d"));
    // The archives of the first 600 lines are the same files.
    let arch = |v: &[(String, u32, String)]| -> Vec<String> {
        v.iter()
            .filter(|x| x.0.ends_with(".s"))
            .map(|x| x.2.clone())
            .collect()
    };
    let (b, f) = (arch(&bulk), arch(&fed));
    assert!(f.len() > 5);
    assert_eq!(&b[..f.len()], &f[..]);
    // And nothing is lost.
    let mut joined = String::new();
    for x in &bulk {
        if x.0.ends_with(".s") || x.0 == "current" {
            joined.push_str(&x.2);
        }
    }
    assert_eq!(joined.as_bytes(), &all[..]);
}

#[test]
fn usage_and_bad_scripts_exit_100() {
    let o = tend("tend-log", Vec::<&str>::new());
    assert_code(&o, 100);
    assert!(text(&o.stderr).starts_with("tend-log: usage: tend-log [ -d notif ]"));
    for (args, msg) in [
        (
            vec!["xyz"],
            "tend-log: fatal: unrecognized directive: xyz\n",
        ),
        (
            vec!["t", "n5"],
            "tend-log: fatal: no action directive specified\n",
        ),
        (
            vec!["tt", "1"],
            "tend-log: fatal: syntax error at directive: tt\n",
        ),
        (
            vec!["nfive", "1"],
            "tend-log: fatal: unrecognized directive: nfive\n",
        ),
        (
            vec!["s4096", "l3000", "1"],
            "tend-log: fatal: directive l3000 conflicts with previous s directive\n",
        ),
        (
            vec!["-d", "1", "1"],
            "tend-log: fatal: notification fd must be 3 or more\n",
        ),
        (
            vec!["-d", "9", "1"],
            "tend-log: fatal: invalid notification fd: EBADF\n",
        ),
    ] {
        let o = tend("tend-log", &args);
        assert_code(&o, 100);
        let msg = msg.replace("EBADF", nix::errno::Errno::EBADF.desc());
        assert_eq!(text(&o.stderr), msg, "{args:?}");
    }
    let o = tend("tend-log", ["+(unclosed", "1"]);
    assert_code(&o, 100);
    assert!(
        text(&o.stderr)
            .starts_with("tend-log: fatal: invalid regular expression in directive: +(unclosed: "),
        "{}",
        text(&o.stderr)
    );
    let o = tend("tend-log", ["-l", "x", "1"]);
    assert_code(&o, 100);
}

#[test]
fn huge_sizes_are_not_allocated_up_front() {
    let sc = Scratch::new("log-huge");
    let long = vec![b'z'; 300_000];
    let mut input = long.clone();
    input.extend_from_slice(b"\nend\n");
    let o = tend_in(
        &sc.path,
        &["-l", "4000000000", "^3000000", "=st", "1"],
        &input,
    );
    assert_code(&o, 0);
    assert_eq!(o.stdout, input);
    let st = fs::read(sc.join("st")).unwrap();
    assert_eq!(st.len(), 3_000_000);
    assert!(st.starts_with(b"end\n") && st[4..].iter().all(|&b| b == b'\n'));
    let o = tend_in(&sc.path, &["^4294967296", "=st"], b"");
    assert_code(&o, 100);
}

#[test]
fn unwritable_logdir_exits_111_naming_it() {
    let sc = Scratch::new("log-unwritable");
    sc.write("file", "x", false);
    let d = sc.join("file/sub");
    let o = tend("tend-log", [d.to_str().unwrap()]);
    assert_code(&o, 111);
    assert_eq!(
        text(&o.stderr),
        format!(
            "tend-log: fatal: unable to mkdir {}: Not a directory\n",
            d.display()
        )
    );
}

fn start_logger(prog: &str, root: &Path, args: &[&str]) -> (Daemon, std::process::ChildStdin) {
    let mut c = cmd(prog);
    c.current_dir(root)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(fs::File::create(root.join(format!("{prog}.out"))).unwrap())
        .stderr(fs::File::create(root.join(format!("{prog}.err"))).unwrap());
    let mut d = Daemon::start(c);
    let si = d.child.stdin.take().unwrap();
    (d, si)
}

fn file_len(p: &Path) -> u64 {
    fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

#[test]
fn second_logger_on_a_logdir_fails_on_the_lock() {
    require("s6-log");
    let sc = Scratch::new("log-lock");
    for first in ["tend-log", "s6-log"] {
        let dir = format!("./{first}-d");
        let (mut d, mut si) = start_logger(first, &sc.path, &[dir.as_str()]);
        si.write_all(b"one\n").unwrap();
        let cur = sc.join(&dir).join("current");
        wait_until(SEC5, "first line", || (file_len(&cur) == 4).then_some(()));
        let mut c = cmd("tend-log");
        c.current_dir(&sc.path).arg(&dir);
        let o = run(c);
        assert_code(&o, 111);
        assert_eq!(
            text(&o.stderr),
            format!("tend-log: fatal: unable to lock {dir}/lock: Device or resource busy\n")
        );
        assert_eq!(fs::read(&cur).unwrap(), b"one\n");
        drop(si);
        assert!(d.wait_exit(SEC5).unwrap().success());
    }
    // And s6-log refuses a logdir tend-log holds.
    let (mut d, si) = start_logger("tend-log", &sc.path, &["./x"]);
    wait_until(SEC5, "lock", || sc.join("x/current").exists().then_some(()));
    let mut c = Command::new("s6-log");
    c.current_dir(&sc.path).arg("./x");
    let o = run(c);
    assert_code(&o, 111);
    drop(si);
    d.wait_exit(SEC5).unwrap();
}

#[test]
fn crash_leaves_u_archive_and_restart_recovers() {
    let sc = Scratch::new("log-crash");
    let (d, mut si) = start_logger("tend-log", &sc.path, &["./d"]);
    si.write_all(b"before crash\n").unwrap();
    let cur = sc.join("d/current");
    wait_until(SEC5, "line", || (file_len(&cur) == 13).then_some(()));
    assert_eq!(fs::metadata(&cur).unwrap().permissions().mode() & 0o100, 0);
    drop(d); // SIGKILL
    drop(si);
    let o = tend_in(&sc.path, &["./d"], b"after\n");
    assert_code(&o, 0);
    let snap = snapshot(&sc.join("d"));
    let names: Vec<&str> = snap.iter().map(|x| x.0.as_str()).collect();
    assert_eq!(names, ["@<TAI>.u", "current", "lock", "state"]);
    assert_eq!(snap[0].2, "before crash\n");
    assert_eq!(snap[1].2, "after\n");
    assert_eq!(snap[1].1 & 0o100, 0o100, "current finalized");
    // Clean restart appends.
    let o = tend_in(&sc.path, &["./d"], b"again\n");
    assert_code(&o, 0);
    assert_eq!(fs::read(&cur).unwrap(), b"after\nagain\n");
}

#[test]
fn recovery_matches_s6_and_fixes_its_name_clash() {
    require("s6-log");
    let sc = Scratch::new("log-recover");
    // processed finalized (u+x): archived as .s, previous dropped, current as .u.
    for who in ["s6-log", "tend-log"] {
        let d = sc.join(format!("{who}-r"));
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join("state"), "st\n").unwrap();
        fs::write(d.join("current"), "cur\n").unwrap();
        fs::write(d.join("previous"), "prev\n").unwrap();
        fs::write(d.join("processed"), "proc\n").unwrap();
        fs::set_permissions(d.join("processed"), fs::Permissions::from_mode(0o744)).unwrap();
        let mut c = cmd(who);
        c.current_dir(&sc.path).arg(format!("./{who}-r"));
        let mut c2 = c;
        c2.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut ch = c2.spawn().unwrap();
        ch.stdin.take().unwrap().write_all(b"x\n").unwrap();
        let o = ch.wait_with_output().unwrap();
        assert_code(&o, 0);
    }
    let mut a = snapshot(&sc.join("s6-log-r"));
    let mut b = snapshot(&sc.join("tend-log-r"));
    a.sort();
    b.sort();
    assert_eq!(a, b);
    // previous and current both unfinished: s6-log 2.11 dies on a name clash
    // ("unable to finish current .u ... File exists"); tend keeps both as .u.
    let d = sc.join("clash");
    fs::create_dir_all(&d).unwrap();
    fs::write(d.join("current"), "cur\n").unwrap();
    fs::write(d.join("previous"), "prev\n").unwrap();
    let o = tend_in(&sc.path, &["./clash"], b"x\n");
    assert_code(&o, 0);
    let snap = snapshot(&d);
    let us: Vec<&str> = snap
        .iter()
        .filter(|x| x.0.ends_with(".u"))
        .map(|x| x.2.as_str())
        .collect();
    assert_eq!(us, ["prev\n", "cur\n"]);
}

#[test]
fn processor_state_with_one_logdir_and_sigalrm() {
    // s6-log 2.11 closes the processor's fd 5 when there is one logdir; tend does not.
    let sc = Scratch::new("log-proc1");
    let (mut d, mut si) = start_logger(
        "tend-log",
        &sc.path,
        &["?sed s/^/P:/; n=$(cat <&4); echo $((${n:-0}+1)) >&5", "./d"],
    );
    let dir = sc.join("d");
    for i in 1..=3 {
        si.write_all(format!("line {i}\n").as_bytes()).unwrap();
        wait_until(SEC5, "line", || {
            (file_len(&dir.join("current")) > 0).then_some(())
        });
        d.signal(nix::sys::signal::Signal::SIGALRM);
        wait_until(SEC5, "archive", || {
            let n = snapshot(&dir)
                .iter()
                .filter(|x| x.0.ends_with(".s"))
                .count();
            (n == i && !dir.join("previous").exists()).then_some(())
        });
    }
    drop(si);
    assert!(d.wait_exit(SEC5).unwrap().success());
    let snap = snapshot(&dir);
    let arch: Vec<&str> = snap
        .iter()
        .filter(|x| x.0.ends_with(".s"))
        .map(|x| x.2.as_str())
        .collect();
    assert_eq!(arch, ["P:line 1\n", "P:line 2\n", "P:line 3\n"]);
    assert_eq!(fs::read_to_string(dir.join("state")).unwrap(), "3\n");
    assert!(
        snap.iter()
            .all(|x| !x.0.ends_with(".s") || x.1 & 0o100 != 0)
    );
    let err = fs::read_to_string(sc.join("tend-log.err")).unwrap();
    assert_eq!(err, "");
}

#[test]
fn failing_processor_is_retried_and_nothing_is_lost() {
    let sc = Scratch::new("log-procfail");
    let (mut d, mut si) = start_logger(
        "tend-log",
        &sc.path,
        &["r100", "?test -e okflag && cat", "./d"],
    );
    let dir = sc.join("d");
    si.write_all(b"kept line\n").unwrap();
    wait_until(SEC5, "line", || {
        (file_len(&dir.join("current")) > 0).then_some(())
    });
    d.signal(nix::sys::signal::Signal::SIGALRM);
    let errf = sc.join("tend-log.err");
    wait_until(SEC5, "two failures", || {
        let e = fs::read_to_string(&errf).unwrap_or_default();
        (e.matches("processor failed").count() >= 2).then_some(())
    });
    assert_eq!(fs::read(dir.join("previous")).unwrap(), b"kept line\n");
    // Lines keep flowing into the new current meanwhile.
    si.write_all(b"during\n").unwrap();
    wait_until(SEC5, "during", || {
        (file_len(&dir.join("current")) == 7).then_some(())
    });
    fs::write(dir.join("okflag"), "").unwrap();
    wait_until(SEC5, "archive", || {
        snapshot(&dir)
            .iter()
            .find(|x| x.0.ends_with(".s"))
            .map(|x| x.2.clone())
    });
    assert!(!dir.join("previous").exists());
    drop(si);
    assert!(d.wait_exit(SEC5).unwrap().success());
    let snap = snapshot(&dir);
    assert_eq!(
        snap.iter().find(|x| x.0.ends_with(".s")).unwrap().2,
        "kept line\n"
    );
    assert_eq!(fs::read(dir.join("current")).unwrap(), b"during\n");
    let e = fs::read_to_string(&errf).unwrap();
    assert!(
        e.lines().all(|l| l.starts_with(
            "tend-log: warning: processor failed for logdir ./d (exit code 1), retrying in 100 ms"
        )),
        "{e}"
    );
}

/// Whether `pid` has no signal pending (it has read it from its signalfd).
fn signals_taken(pid: i32) -> bool {
    let s = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .filter(|l| l.starts_with("ShdPnd:") || l.starts_with("SigPnd:"))
        .all(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|v| v.bytes().all(|c| c == b'0'))
        })
}

/// Whether a pipe (by either end we hold) has unread data.
fn pipe_has_data(fd: &std::os::fd::OwnedFd) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    let mut f = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
    poll(&mut f, PollTimeout::ZERO).unwrap() > 0
}

#[test]
fn sigterm_finishes_the_current_line_and_leaves_the_rest_in_the_pipe() {
    let sc = Scratch::new("log-term");
    let (rd, wr) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
    let keep = rd.try_clone().unwrap();
    let mut c = cmd("tend-log");
    c.current_dir(&sc.path)
        .args(["./d"])
        .stdin(Stdio::from(rd))
        .stderr(Stdio::piped());
    let mut d = Daemon::start(c);
    let mut w = fs::File::from(wr);
    w.write_all(b"one\npar").unwrap();
    let cur = sc.join("d/current");
    wait_until(SEC5, "one", || (file_len(&cur) == 4).then_some(()));
    wait_until(SEC5, "\"par\" read", || {
        (!pipe_has_data(&keep)).then_some(())
    });
    d.signal(nix::sys::signal::Signal::SIGTERM);
    wait_until(SEC5, "SIGTERM taken", || {
        signals_taken(d.pid()).then_some(())
    });
    w.write_all(b"tial\nleft for the next logger\n").unwrap();
    let st = d.wait_exit(SEC5).expect("exit");
    assert!(st.success());
    assert_eq!(fs::read(&cur).unwrap(), b"one\npartial\n");
    assert_eq!(
        fs::metadata(&cur).unwrap().permissions().mode() & 0o100,
        0o100
    );
    drop(w);
    // The rest is still in the pipe. (Read what is there: tend-log made the pipe
    // non-blocking, and a sibling test's child may briefly hold a copy of the write end.)
    let mut rest = Vec::new();
    let mut keep = fs::File::from(keep);
    wait_until(SEC5, "the rest of the pipe", || {
        let mut b = [0u8; 256];
        if let Ok(n) = keep.read(&mut b) {
            rest.extend_from_slice(&b[..n]);
        }
        (rest.len() >= 25).then_some(())
    });
    assert_eq!(text(&rest), "left for the next logger\n");
}

#[test]
fn blocking_mode_stops_reading_while_data_is_unwritten() {
    let sc = Scratch::new("log-block");
    let mnt = Tmpfs::mount(sc.join("mnt"), "64k");
    let (rd, wr) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
    let keep = rd.try_clone().unwrap();
    let mut c = cmd("tend-log");
    c.current_dir(&sc.path)
        .args(["-b", "r20", "./mnt/d"])
        .stdin(Stdio::from(rd))
        .stderr(fs::File::create(sc.join("err")).unwrap());
    let mut d = Daemon::start(c);
    wait_until(SEC5, "logdir", || {
        mnt.0.join("d/current").exists().then_some(())
    });
    let filler = mnt.0.join("filler");
    let mut f = fs::File::create(&filler).unwrap();
    while f.write_all(&[b'F'; 1024]).is_ok() {}
    drop(f);
    let mut w = fs::File::from(wr);
    w.write_all(b"first\n").unwrap();
    let warnings = || {
        fs::read_to_string(sc.join("err"))
            .unwrap_or_default()
            .lines()
            .count()
    };
    wait_until(SEC5, "a warning", || (warnings() >= 1).then_some(()));
    w.write_all(b"second\n").unwrap();
    // Two more retry rounds pass while "second" stays in the pipe.
    let n = warnings();
    wait_until(SEC5, "two more retries", || {
        (warnings() >= n + 2).then_some(())
    });
    assert!(
        pipe_has_data(&keep),
        "-b read stdin while data was unwritten"
    );
    fs::remove_file(&filler).unwrap();
    drop(w);
    drop(keep);
    assert!(d.wait_exit(SEC5).expect("exit").success());
    assert_eq!(
        fs::read(mnt.0.join("d/current")).unwrap(),
        b"first\nsecond\n"
    );
}

#[test]
fn protect_ignores_sigterm_but_not_sighup() {
    let sc = Scratch::new("log-protect");
    let (mut d, mut si) = start_logger("tend-log", &sc.path, &["-p", "./d"]);
    si.write_all(b"a\n").unwrap();
    let cur = sc.join("d/current");
    wait_until(SEC5, "a", || (file_len(&cur) == 2).then_some(()));
    d.signal(nix::sys::signal::Signal::SIGTERM);
    wait_until(SEC5, "SIGTERM taken", || {
        signals_taken(d.pid()).then_some(())
    });
    si.write_all(b"b\n").unwrap();
    wait_until(SEC5, "b", || (file_len(&cur) == 4).then_some(()));
    assert!(d.child.try_wait().unwrap().is_none());
    d.signal(nix::sys::signal::Signal::SIGHUP);
    assert!(d.wait_exit(SEC5).expect("exit on HUP").success());
}

#[test]
fn rotates_as_soon_as_due_without_waiting_for_more_input() {
    let sc = Scratch::new("log-rot-now");
    let (mut d, mut si) = start_logger("tend-log", &sc.path, &["s4096", "./d"]);
    let line = [b'x'; 99];
    for _ in 0..21 {
        si.write_all(&line).unwrap();
        si.write_all(b"\n").unwrap();
    }
    let dir = sc.join("d");
    let arch = wait_until(SEC5, "an archive while stdin stays open", || {
        if !dir.join("current").exists() {
            return None;
        }
        snapshot(&dir).into_iter().find(|x| x.0 == "@<TAI>.s")
    });
    assert_eq!(arch.2.len(), 2100);
    assert_eq!(file_len(&dir.join("current")), 0);
    drop(si);
    assert!(d.wait_exit(SEC5).unwrap().success());
}

#[test]
fn quiet_silences_warnings() {
    let sc = Scratch::new("log-quiet");
    let (d, mut si) = start_logger(
        "tend-log",
        &sc.path,
        &["-q", "r20", "?echo x >> ../attempts; exit 1", "./d"],
    );
    si.write_all(b"a\n").unwrap();
    wait_until(SEC5, "a", || {
        (file_len(&sc.join("d/current")) == 2).then_some(())
    });
    d.signal(nix::sys::signal::Signal::SIGALRM);
    wait_until(SEC5, "three attempts", || {
        (fs::read_to_string(sc.join("attempts"))
            .unwrap_or_default()
            .lines()
            .count()
            >= 3)
            .then_some(())
    });
    assert_eq!(fs::read_to_string(sc.join("tend-log.err")).unwrap(), "");
    assert_eq!(fs::read(sc.join("d/previous")).unwrap(), b"a\n");
    drop(si);
}

#[test]
fn stdout_error_disables_1_and_keeps_logging() {
    let sc = Scratch::new("log-epipe");
    let mut c = cmd("tend-log");
    c.current_dir(&sc.path)
        .args(["1", "./d"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(fs::File::create(sc.join("err")).unwrap());
    let mut d = Daemon::start(c);
    drop(d.child.stdout.take()); // the reader goes away
    let mut si = d.child.stdin.take().unwrap();
    si.write_all(b"one\ntwo\n").unwrap();
    wait_until(SEC5, "two", || {
        (file_len(&sc.join("d/current")) == 8).then_some(())
    });
    si.write_all(b"three\n").unwrap();
    drop(si);
    assert!(d.wait_exit(SEC5).expect("exit").success());
    assert_eq!(
        fs::read(sc.join("d/current")).unwrap(),
        b"one\ntwo\nthree\n"
    );
    assert_eq!(
        fs::read_to_string(sc.join("err")).unwrap(),
        "tend-log: warning: unable to write to stdout: Broken pipe\n"
    );
}

#[test]
fn notification_fd_gets_a_newline_when_ready() {
    let sc = Scratch::new("log-notify");
    let mut c = cmd("sh");
    c.current_dir(&sc.path).arg("-c").arg(format!(
        "exec 3>notified; echo hi | exec {} -d 3 ./d",
        bin("tend-log").display()
    ));
    let o = run(c);
    assert_code(&o, 0);
    assert_eq!(fs::read(sc.join("notified")).unwrap(), b"\n");
    assert_eq!(fs::read(sc.join("d/current")).unwrap(), b"hi\n");
}

#[test]
fn extensions_rfc3339_json_and_prefix() {
    let sc = Scratch::new("log-ext");
    let o = tend_in(
        &sc.path,
        &["p[svc]", "1", "z", "1", "j", "1", "t", "j", "p", "1"],
        b"say \"hi\"\t\\ \xff\n",
    );
    assert_code(&o, 0);
    let out = o.stdout;
    let lines: Vec<&[u8]> = out.split(|&b| b == b'\n').collect();
    assert_eq!(lines[0], b"[svc] say \"hi\"\t\\ \xff");
    // z: 2026-11-29T14:37:02.123456Z + space
    let z = text(lines[1]);
    assert_eq!(z.len(), 27 + 1 + 6 + 14);
    let b = z.as_bytes();
    assert!(
        b[4] == b'-' && b[10] == b'T' && b[19] == b'.' && b[26] == b'Z' && b[27] == b' ',
        "{z}"
    );
    assert!(
        z.ends_with(" [svc] say \"hi\"\t\\ \u{fffd}")
            || lines[1].ends_with(b"[svc] say \"hi\"\t\\ \xff")
    );
    let j = text(lines[2]);
    assert!(
        j.starts_with("{\"time\":\"20")
            && j.ends_with("Z\",\"prefix\":\"[svc]\",\"line\":\"say \\\"hi\\\"\\t\\\\ \\ufffd\"}"),
        "{j}"
    );
    let j2 = text(lines[3]);
    assert!(
        j2.contains("\",\"tai64n\":\"@4000") && !j2.contains("prefix"),
        "{j2}"
    );
    assert_eq!(lines.len(), 5);
}

#[test]
fn alerts_and_status_render_like_s6() {
    require("s6-log");
    let sc = Scratch::new("log-alert");
    let args = ["E5", "pX", "2", "p", "^0", "=st"];
    let o = tend_in(&sc.path, &args, b"hello world\nsecond\n");
    assert_code(&o, 0);
    // Cut only when more than E + 3 bytes long.
    assert_eq!(
        text(&o.stderr),
        "tend-log: alert: X hello...\ntend-log: alert: X second\n"
    );
    assert_eq!(fs::read(sc.join("st")).unwrap(), b"second\n");
    let mut c = Command::new("s6-log");
    c.current_dir(&sc.path)
        .args(["E5", "pX", "2", "p", "^0", "=st6"]);
    c.stdin(Stdio::piped()).stderr(Stdio::piped());
    let mut ch = c.spawn().unwrap();
    ch.stdin
        .take()
        .unwrap()
        .write_all(b"hello world\nsecond\n")
        .unwrap();
    let o6 = ch.wait_with_output().unwrap();
    assert_eq!(
        text(&o6.stderr).replace("s6-log", "tend-log"),
        text(&o.stderr)
    );
    assert_eq!(
        fs::read(sc.join("st6")).unwrap(),
        fs::read(sc.join("st")).unwrap()
    );
}

/// A tmpfs of `size` mounted on a scratch dir, unmounted on drop.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: PathBuf, size: &str) -> Tmpfs {
        fs::create_dir_all(&dir).unwrap();
        let o = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "mount tmpfs (tests run as root): {}",
            text(&o.stderr)
        );
        Tmpfs(dir)
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn disk_full_waits_and_resumes_without_losing_a_line() {
    let sc = Scratch::new("log-full");
    let mnt = Tmpfs::mount(sc.join("mnt"), "1m");
    // Fill most of it.
    let filler = mnt.0.join("filler");
    let mut f = fs::File::create(&filler).unwrap();
    let block = vec![b'F'; 4096];
    while f.write_all(&block).is_ok() {}
    drop(f);
    let (mut d, mut si) =
        start_logger("tend-log", &sc.path, &["r50", "s100000", "n100", "./mnt/d"]);
    let lines = numbered(4000, 4); // ~220 KB: fits once the filler is gone
    let all = lines.concat();
    let writer = std::thread::spawn(move || {
        si.write_all(&all).unwrap();
        all
    });
    let errf = sc.join("tend-log.err");
    wait_until(SEC20, "a disk-full warning", || {
        let e = fs::read_to_string(&errf).unwrap_or_default();
        e.contains("No space left on device").then_some(())
    });
    let e = fs::read_to_string(&errf).unwrap();
    assert!(
        e.starts_with(
            "tend-log: warning: unable to write to ./mnt/d/current: No space left on device\n"
        ),
        "{e}"
    );
    assert!(d.child.try_wait().unwrap().is_none(), "still running");
    fs::remove_file(&filler).unwrap();
    let all = writer.join().unwrap();
    let st = d.wait_exit(SEC20).expect("exits once written");
    assert!(st.success());
    let dir = mnt.0.join("d");
    let mut names: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    let mut got = Vec::new();
    for n in &names {
        let s = n.to_string_lossy();
        if s.ends_with(".s") {
            got.extend(fs::read(dir.join(n)).unwrap());
        }
    }
    got.extend(fs::read(dir.join("current")).unwrap());
    assert!(
        got == all,
        "lost or reordered data: got {} bytes, sent {}",
        got.len(),
        all.len()
    );
}

#[test]
fn two_million_lines_arrive_complete_and_in_order() {
    let sc = Scratch::new("log-2m");
    let mnt = Tmpfs::mount(sc.join("mnt"), "600m");
    // 2,000,000 lines of 20..200 bytes of every value but \n (NUL included: like s6-log,
    // tend-log ends a line at NUL), every 100,000th line 20,000 bytes long (split at the
    // 8192-byte limit), no final newline.
    let mut input = Vec::with_capacity(230 << 20);
    let mut expected = Vec::with_capacity(232 << 20);
    let pool: Vec<u8> = (0..=255u8)
        .filter(|&b| b != b'\n')
        .cycle()
        .take(40_000)
        .collect();
    let long = vec![b'L'; 20_000];
    let last = 1_999_999;
    for i in 0..=last {
        let body = if i % 100_000 == 99_999 {
            &long[..]
        } else {
            let len = 20 + (i * 7919) % 181;
            let start = (i * 31) % 20_000;
            &pool[start..start + len]
        };
        input.extend_from_slice(body);
        if i != last {
            input.push(b'\n');
        }
        let segments: Vec<&[u8]> = body.split(|&b| b == 0).collect();
        for (k, seg) in segments.iter().enumerate() {
            if i == last && k == segments.len() - 1 && seg.is_empty() && k > 0 {
                break; // input ends right after a NUL: no further line
            }
            let mut rest = *seg;
            while rest.len() > 8192 {
                expected.extend_from_slice(&rest[..8192]);
                expected.push(b'\n');
                rest = &rest[8192..];
            }
            expected.extend_from_slice(rest);
            expected.push(b'\n');
        }
    }
    let input_path = mnt.0.join("input");
    fs::write(&input_path, &input).unwrap();
    drop(input);
    let mut c = cmd("tend-log");
    c.current_dir(&mnt.0)
        .args(["s10000000", "n1000", "./d"])
        .stdin(fs::File::open(&input_path).unwrap());
    let t0 = Instant::now();
    let o = c.output().unwrap();
    assert_code(&o, 0);
    let took = t0.elapsed();
    let dir = mnt.0.join("d");
    let mut names: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    // Compare file by file against the expected stream, in order.
    let mut off = 0;
    let mut archives = 0;
    for n in names
        .iter()
        .filter(|n| n.to_string_lossy().ends_with(".s"))
        .chain([&std::ffi::OsString::from("current")])
    {
        let b = fs::read(dir.join(n)).unwrap();
        assert!(
            off + b.len() <= expected.len(),
            "more output than input at {}",
            n.to_string_lossy()
        );
        assert!(
            b == expected[off..off + b.len()],
            "content differs in {}",
            n.to_string_lossy()
        );
        off += b.len();
        archives += 1;
    }
    assert!(archives > 10, "{archives} files");
    assert_eq!(off, expected.len(), "output is short");
    eprintln!("2,000,000 lines through tend-log (debug build) in {took:?}");
}

#[test]
fn tai64n_matches_s6_tai64n() {
    require("s6-tai64n");
    let input = b"a\n\nb c\nno newline";
    let run_filter = |prog: &str| {
        let mut c = cmd(prog);
        c.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut ch = c.spawn().unwrap();
        ch.stdin.take().unwrap().write_all(input).unwrap();
        let o = ch.wait_with_output().unwrap();
        assert_code(&o, 0);
        text(&mask(&o.stdout))
    };
    assert_eq!(run_filter("tend-tai64n"), run_filter("s6-tai64n"));
    assert_eq!(
        run_filter("tend-tai64n"),
        "@<TAI> a\n@<TAI> \n@<TAI> b c\n@<TAI> no newline\n"
    );
    let o = tend("tend-tai64n", ["x"]);
    assert_code(&o, 100);
    assert_eq!(text(&o.stderr), "tend-tai64n: usage: tend-tai64n\n");
}

#[test]
fn tai64nlocal_matches_s6_tai64nlocal() {
    require("s6-tai64nlocal");
    let input: &[u8] = b"@400000006b0c5a1b2a013136 x\n@400000006b0c5a1b2a01313 short\nplain\n@400000006b0c5a1b2a013136\n@4000000000000000000000ff old\n@400000000000002500000000 epoch\n@40000000259cdf1900000000 1990\n@ffffffffffffffff00000000 bad\n@7fffffffffffffff00000000 max\n@400000000000000000000000 tai0\n@4000000000000009ffffffff pre\n@400000000000000a00000000 zero\n@40000000000000003b9aca00 ns\n@4000000000000000ffffffff ns2\n@40000000ffffffff00000000 y2106\n@4000000fffffffff00000000 y4147\n@400000ffffffffff00000000 y36812\n@4000ffffffffffff00000000 y8m\n@40d529ae9e86002500000000 y2g\n@40f8b0a10e47002500000000 over\n@80000000000000000000000000 nine\n@400000006b0c5a1b2a013136tail";
    for (tz, flag) in [
        ("UTC", None),
        ("Europe/Paris", None),
        ("America/New_York", Some("-g")),
        ("Asia/Kolkata", None),
    ] {
        let run_filter = |prog: &str| {
            let mut c = cmd(prog);
            c.env("TZ", tz)
                .args(flag)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped());
            let mut ch = c.spawn().unwrap();
            ch.stdin.take().unwrap().write_all(input).unwrap();
            let o = ch.wait_with_output().unwrap();
            assert_code(&o, 0);
            text(&o.stdout)
        };
        // Near year 2^31 the C libraries part ways on daylight saving time: glibc (s6's)
        // stops applying the zone's rule there, musl (tend's) still applies it. Only
        // the date is compared on that line, outside UTC.
        let dst_blind = |out: String| -> String {
            out.lines()
                .map(|l| match l.strip_suffix(" y2g") {
                    Some(date) if tz != "UTC" => format!("{} y2g", &date[..date.len().min(16)]),
                    _ => l.to_string(),
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(
            dst_blind(run_filter("tend-tai64nlocal")),
            dst_blind(run_filter("s6-tai64nlocal")),
            "TZ={tz} {flag:?}"
        );
    }
    let o = tend("tend-tai64nlocal", ["-x"]);
    assert_code(&o, 100);
    assert_eq!(
        text(&o.stderr),
        "tend-tai64nlocal: usage: tend-tai64nlocal [ -g ]\n"
    );
}

#[test]
fn man_pages_are_clean_and_complete() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (prog, letters) in [
        ("tend-log", "dqvbpl"),
        ("tend-tai64n", ""),
        ("tend-tai64nlocal", "g"),
    ] {
        let page = root.join(format!("man/man8/{prog}.8"));
        let src = fs::read_to_string(&page).unwrap();
        for c in letters.chars() {
            assert!(src.contains(&format!("\\-{c}")), "{prog}.8 lacks -{c}");
        }
        let o = Command::new("groff")
            .args(["-man", "-ww", "-z"])
            .arg(&page)
            .output()
            .unwrap();
        assert_eq!(text(&o.stderr), "", "{prog}.8");
    }
}

#[test]
fn same_status_file_named_twice_keeps_the_last_line_like_s6() {
    require("s6-log");
    let sc = Scratch::new("log-status-twice");
    let script = [
        "--", "=./st", "-[^a-z]", "=./st", "^0", "=./u", "-", "+^line", "=./u",
    ];
    let mut got = Vec::new();
    for prog in ["s6-log", "tend-log"] {
        let dir = sc.join(prog);
        fs::create_dir_all(&dir).unwrap();
        let mut c = Command::new(bin_or_path(prog));
        c.current_dir(&dir).args(script).stdin(Stdio::piped());
        let mut ch = c.spawn().unwrap();
        // One write: tend-log sees both lines in one read.
        ch.stdin
            .take()
            .unwrap()
            .write_all(b"abc\nline 1\n")
            .unwrap();
        assert!(ch.wait().unwrap().success());
        got.push((
            fs::read(dir.join("st")).unwrap(),
            fs::read(dir.join("u")).unwrap(),
        ));
    }
    assert_eq!(got[0], got[1]);
    assert!(got[1].0.starts_with(b"line 1\n"), "{:?}", text(&got[1].0));
    assert_eq!(got[1].1, b"line 1\n");
}

fn bin_or_path(prog: &str) -> PathBuf {
    if prog.starts_with("tend-") {
        bin(prog)
    } else {
        PathBuf::from(prog)
    }
}

#[test]
fn a_fifo_in_place_of_lock_or_status_file_is_refused_not_waited_on() {
    let sc = Scratch::new("log-fifo");
    let mkfifo =
        |p: &Path| nix::unistd::mkfifo(p, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    // The logdir's lock: fatal, as any failure to lock.
    fs::create_dir_all(sc.join("d")).unwrap();
    mkfifo(&sc.join("d/lock"));
    let mut c = cmd("tend-log");
    c.current_dir(&sc.path)
        .arg("./d")
        .stderr(fs::File::create(sc.join("lock.err")).unwrap());
    let mut d = Daemon::start(c);
    let st = d.wait_exit(SEC20).expect("tend-log hangs on a FIFO lock");
    assert_eq!(st.code(), Some(111));
    assert_eq!(
        fs::read_to_string(sc.join("lock.err")).unwrap(),
        "tend-log: fatal: unable to use non-regular file ./d/lock: Invalid argument\n"
    );
    // A status file's .new: a warning naming it, and logging goes on.
    mkfifo(&sc.join("st.new"));
    // With a reader on the FIFO, open(2) would succeed: only fstat can refuse it.
    use std::os::unix::fs::OpenOptionsExt;
    let rd = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(sc.join("st.new"))
        .unwrap();
    let (mut d, mut si) = start_logger("tend-log", &sc.path, &["=./st", "./e"]);
    si.write_all(b"one\n").unwrap();
    let cur = sc.join("e/current");
    wait_until(SEC20, "line in current", || {
        (file_len(&cur) == 4).then_some(())
    });
    si.write_all(b"two\n").unwrap();
    wait_until(SEC20, "line in current", || {
        (file_len(&cur) == 8).then_some(())
    });
    drop(si);
    let st = d.wait_exit(SEC20).expect("tend-log did not exit");
    assert_eq!(st.code(), Some(0));
    let err = fs::read_to_string(sc.join("tend-log.err")).unwrap();
    let want = "tend-log: warning: unable to use non-regular file ./st.new: Invalid argument\n";
    assert!(err.lines().count() >= 1, "{err}");
    for l in err.lines() {
        assert_eq!(format!("{l}\n"), want);
    }
    assert!(!sc.join("st").exists());
    drop(rd);
}

/// Every file of a logdir that holds log lines, oldest first: archives by name, then
/// `previous` (a rotation cut short), then `current`. A SIGKILL can cut a write to
/// `current` short (the kernel stops a write between pages for a fatal signal): an
/// unfinished (`.u`) archive may end in part of a line, which the restarted logger
/// writes again whole. That part is left out.
fn logdir_lines(dir: &Path) -> Vec<u8> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('@'))
        .collect();
    names.sort();
    names.push("previous".into());
    names.push("current".into());
    let mut all = Vec::new();
    for n in names {
        if let Ok(mut b) = fs::read(dir.join(&n)) {
            if n.ends_with(".u") {
                let keep = b.iter().rposition(|&c| c == b'\n').map_or(0, |i| i + 1);
                b.truncate(keep);
            }
            all.extend_from_slice(&b);
        }
    }
    all
}

/// Check a log of decimal line numbers `0..n`: none missing, every repeat a replay of
/// recent lines (a step back, then forward again in order). Returns the bytes repeated.
fn check_numbered(log: &[u8], n: u64) -> u64 {
    let mut seen = vec![false; n as usize];
    let mut next = 0u64; // the highest number so far + 1
    let mut dups = 0;
    for l in log.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let v: u64 = std::str::from_utf8(l)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("garbled line {:?}", text(l)));
        assert!(v < n, "line {v} was never written");
        if seen[v as usize] {
            dups += l.len() as u64 + 1;
        } else {
            assert_eq!(v, next, "line {next} lost (or out of order)");
            seen[v as usize] = true;
            next = v + 1;
        }
    }
    assert_eq!(next, n, "lines from {next} on lost");
    dups
}

#[test]
fn sigkilled_at_full_speed_loses_nothing() {
    // A writer at full speed into a pipe held by the test (as tend-svscan holds a
    // service's), the logger SIGKILLed again and again and restarted on the same pipe.
    const LINES: u64 = 400_000;
    const KILLS: usize = 10;
    let sc = Scratch::new("log-killstorm");
    let (rd, wr) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
    let writer = std::thread::spawn(move || {
        // 4 KiB writes that cut lines anywhere, like stdio's full buffering.
        let mut w = fs::File::from(wr);
        let mut buf = Vec::with_capacity(8192);
        for i in 0..LINES {
            buf.extend_from_slice(format!("{i}\n").as_bytes());
            if buf.len() >= 4096 {
                w.write_all(&buf[..4096]).unwrap();
                buf.drain(..4096);
            }
        }
        w.write_all(&buf).unwrap();
    });
    let start = |err: &str| {
        let mut c = cmd("tend-log");
        c.current_dir(&sc.path)
            .args(["n1000", "s50000", "./d"])
            .stdin(Stdio::from(rd.try_clone().unwrap()))
            .stderr(fs::File::create(sc.join(err)).unwrap());
        Daemon::start(c)
    };
    let written = || {
        let d = sc.join("d");
        fs::read_dir(&d).map_or(0, |r| {
            r.flatten()
                .map(|e| e.metadata().map_or(0, |m| m.len()))
                .sum::<u64>()
        })
    };
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for k in 0..KILLS {
        let before = written();
        let mut d = start(&format!("err{k}"));
        // Let it log some, then kill it at a varying moment.
        wait_until(SEC20, "the logger to write", || {
            (written() > before).then_some(())
        });
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // A random moment to kill at: the test's input, not a wait.
        std::thread::sleep(Duration::from_micros(seed % 3000));
        d.signal(nix::sys::signal::Signal::SIGKILL);
        d.wait_exit(SEC20).unwrap();
    }
    // The last logger drains the pipe to EOF once the writer is done.
    let mut d = start("err-last");
    writer.join().unwrap();
    drop(rd);
    let st = d
        .wait_exit(Duration::from_secs(60))
        .expect("last logger did not finish");
    assert_eq!(st.code(), Some(0));
    let dups = check_numbered(&logdir_lines(&sc.join("d")), LINES);
    // At most one chunk (a pipeful, 64 KiB) repeated per kill.
    assert!(dups <= KILLS as u64 * 65536, "{dups} bytes repeated");
    eprintln!("{KILLS} kills: 0 lines lost, {dups} bytes repeated");
}

#[test]
fn shared_stdin_and_stdout_keep_their_flags() {
    // tend-log's stdout is the same file description an un-logged service writes to
    // (tend-svscan's stdout): its flags must not change, or the service's writes fail
    // with EAGAIN when the pipe is full.
    use std::os::fd::AsRawFd;
    let sc = Scratch::new("log-sharedfd");
    let (out_rd, out_wr) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
    let (in_rd, in_wr) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
    let mut c = cmd("tend-log");
    c.current_dir(&sc.path)
        .arg("1")
        .stdin(Stdio::from(in_rd.try_clone().unwrap()))
        .stdout(Stdio::from(out_wr.try_clone().unwrap()));
    let mut logger = Daemon::start(c);
    let mut feed = fs::File::from(in_wr);
    feed.write_all(b"hello\n").unwrap();
    let mut out = fs::File::from(out_rd);
    let mut got = [0u8; 6];
    out.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"hello\n");
    let nonblock = |fd: i32| {
        let fl = nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETFL).unwrap();
        fl & libc::O_NONBLOCK != 0
    };
    assert!(!nonblock(out_wr.as_raw_fd()), "stdout set non-blocking");
    assert!(!nonblock(in_rd.as_raw_fd()), "stdin set non-blocking");
    // A service on the same stdout writes while the logger forwards a flood and the
    // reader is slow: the pipe is often full, and no write of the service may fail.
    let mut c = Command::new("sh");
    c.args([
        "-c",
        "i=0; while [ $i -lt 2000 ]; do echo service$i || exit 3; i=$((i+1)); done",
    ])
    .stdout(Stdio::from(out_wr.try_clone().unwrap()))
    .stderr(fs::File::create(sc.join("service.err")).unwrap());
    let mut service = Daemon::start(c);
    drop(out_wr);
    let flood = std::thread::spawn(move || {
        for i in 0..20_000 {
            if feed.write_all(format!("logged{i}\n").as_bytes()).is_err() {
                break;
            }
        }
    });
    let reader = std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut b = [0u8; 4096];
        loop {
            match out.read(&mut b) {
                Ok(0) | Err(_) => break,
                Ok(n) => all.extend_from_slice(&b[..n]),
            }
            // The slow reader under test: it keeps the pipe full.
            std::thread::sleep(Duration::from_micros(300));
        }
        all
    });
    let st = service
        .wait_exit(Duration::from_secs(60))
        .expect("service hangs");
    assert_eq!(
        st.code(),
        Some(0),
        "{}",
        fs::read_to_string(sc.join("service.err")).unwrap()
    );
    flood.join().unwrap();
    drop(in_rd);
    assert!(logger.wait_exit(SEC20).unwrap().success());
    drop(logger);
    drop(service);
    let all = text(&reader.join().unwrap());
    // Each service line is one small, atomic write, but it can land inside one of the
    // logger's big writes: take them out, then what is left is the logged lines.
    let (mut rest, mut services) = (String::new(), Vec::new());
    let mut s = all.as_str();
    while let Some(i) = s.find("service") {
        rest.push_str(&s[..i]);
        let end = s[i..].find('\n').map_or(s.len(), |j| i + j + 1);
        services.push(s[i..end].to_string());
        s = &s[end..];
    }
    rest.push_str(s);
    let want: Vec<String> = (0..2000).map(|i| format!("service{i}\n")).collect();
    assert_eq!(services, want);
    let want: String = (0..20_000).map(|i| format!("logged{i}\n")).collect();
    assert!(rest == want, "the logged lines differ");
}

/// Lines with embedded NULs (each NUL ends a record, as in s6-log), of sizes around the
/// rotation threshold, one line per write.
fn nul_lines(n: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut x = seed;
    let mut rnd = move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    (0..n)
        .map(|i| {
            let len = 200 + rnd(900) as usize;
            let mut l: Vec<u8> = (0..len).map(|j| b'a' + ((i + j) % 26) as u8).collect();
            for _ in 0..1 + rnd(4) {
                let at = rnd(len as u64) as usize;
                l[at] = 0;
            }
            l.push(b'\n');
            l
        })
        .collect()
}

#[test]
fn same_as_s6_archive_boundaries_with_embedded_nuls() {
    for (k, script) in [
        &["s4096", "n100", "./d"][..],
        &["s4096", "l100", "n100", "./d"],
        &["s5000", "l2500", "n100", "./d"],
        &["-l", "300", "s4096", "l1000", "n100", "./d"],
    ]
    .iter()
    .enumerate()
    {
        compare_with_s6(
            &format!("log-cmp-nul{k}"),
            script,
            &nul_lines(60, 7 + k as u64),
            &["d/current"],
            &["d"],
        );
    }
}

/// A random valid s6-log script: (options before `--`, script words, logdirs, status
/// files). Never a trailing control directive (s6-log warns about it, tend does not).
fn random_script(r: &mut Rng) -> (Vec<String>, Vec<String>, Vec<String>, Vec<String>) {
    const RES: [&str; 10] = [
        "^a", "b", "[0-9]", "x$", "^$", "", ".", "^[^a-z]", "a.*b", "\t",
    ];
    let mut opts = Vec::new();
    if r.chance(30) {
        opts.push("-l".to_string());
        opts.push(r.pick(&["0", "48", "100", "300", "8192"]).to_string());
    }
    let mut words = Vec::new();
    let (mut dirs, mut stats) = (Vec::new(), Vec::new());
    let elements = 1 + r.below(4);
    for _ in 0..elements {
        for _ in 0..r.below(3) {
            match r.below(5) {
                0 => words.push("f".to_string()),
                1 | 2 => words.push(format!("+{}", r.pick(&RES))),
                _ => words.push(format!("-{}", r.pick(&RES))),
            }
        }
        for _ in 0..1 + r.below(3) {
            // Sticky control directives.
            if r.chance(30) {
                let s = 4096 + r.below(4000);
                words.push(format!("s{s}"));
                if r.chance(60) {
                    words.push(format!("l{}", r.below(s / 2 + 1)));
                }
            }
            if r.chance(25) {
                words.push(format!("n{}", r.below(6)));
            }
            if r.chance(15) {
                words.push(format!("S{}", r.pick(&[0, 5000, 12000])));
            }
            if r.chance(20) {
                words.push(format!("^{}", r.pick(&[0, 1, 10, 40])));
            }
            if r.chance(20) {
                words.push(r.pick(&["p", "pPFX:", "p[svc]"]).to_string());
            }
            if r.chance(8) {
                words.push(r.pick(&["!tr a-z A-Z", "!", "?tac", "?"]).to_string());
            }
            if r.chance(10) {
                words.push(format!("E{}", r.pick(&[0, 1, 20, 200])));
            }
            if r.chance(30) {
                words.push("t".to_string());
            }
            if r.chance(20) {
                words.push("T".to_string());
            }
            match r.below(10) {
                0..=4 => {
                    let d = format!("./d{}", dirs.len());
                    words.push(d.clone());
                    dirs.push(d);
                }
                5 if r.chance(40) => words.push("2".to_string()),
                5 | 6 => {
                    let f = format!("./st{}", r.below(2));
                    words.push(format!("={f}"));
                    if !stats.contains(&f) {
                        stats.push(f);
                    }
                }
                _ => words.push("1".to_string()),
            }
        }
    }
    (opts, words, dirs, stats)
}

/// Random input lines, each ending in a newline (s6-log 2.11 drops a final line
/// without one, a documented bug): NULs, CRs, tabs, high bytes, empty and long lines.
/// At most 4000 bytes: where s6-log rotates inside a longer line depends on how its
/// reads cut the line (see tend-log(8) NOTES), which tend does not copy.
fn random_lines(r: &mut Rng) -> Vec<Vec<u8>> {
    const BYTES: &[u8] = b"aaabbbxx0123456789 \t\r\0\x01\xff\xc3\xa9@:/";
    let n = 5 + r.below(40);
    (0..n)
        .map(|_| {
            let len = match r.below(20) {
                0 => 0,
                1 => 1000 + r.below(3000),
                2..=5 => r.below(3),
                _ => r.below(300),
            } as usize;
            let mut l: Vec<u8> = (0..len).map(|_| *r.pick(BYTES)).collect();
            l.push(b'\n');
            l
        })
        .collect()
}

/// Run `prog opts -- words` in `root`, one line per write, each time waiting until the
/// pipe is empty and the logger idle in poll (so each read holds exactly one line), then
/// EOF. Returns the exit code.
fn run_settled(
    prog: &str,
    root: &Path,
    opts: &[String],
    words: &[String],
    lines: &[Vec<u8>],
) -> i32 {
    let (rd, wr) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
    let keep = rd.try_clone().unwrap();
    let mut c = Command::new(bin_or_path(prog));
    c.current_dir(root)
        .args(opts)
        .arg("--")
        .args(words)
        .stdin(Stdio::from(rd))
        .stdout(fs::File::create(root.join("stdout")).unwrap())
        .stderr(fs::File::create(root.join("stderr")).unwrap());
    let mut d = Daemon::start(c);
    let pid = d.pid();
    let mut w = fs::File::from(wr);
    let settled = || !pipe_has_data(&keep) && in_poll(pid) && signals_taken(pid);
    for l in lines {
        w.write_all(l).unwrap();
        wait_until(SEC20, "the logger to take a line", || {
            (settled() && {
                // Settled twice, 500 µs apart: one look can fall between two reads.
                std::thread::sleep(Duration::from_micros(500));
                settled()
            })
            .then_some(())
        });
    }
    drop(w);
    drop(keep);
    let st = d
        .wait_exit(SEC20)
        .unwrap_or_else(|| panic!("{prog} did not exit"));
    st.code().unwrap_or(-1)
}

#[test]
fn random_scripts_same_as_s6() {
    // Seconds by default; TEND_FUZZ_SECS=600 for a long run, TEND_FUZZ_SEED to replay.
    require("s6-log");
    let secs: u64 = std::env::var("TEND_FUZZ_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let seed: u64 = std::env::var("TEND_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut case = 0u64;
    while case == 0 || Instant::now() < deadline {
        let case_seed = seed.wrapping_add(case.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1;
        let mut r = Rng(case_seed);
        let (opts, words, dirs, stats) = random_script(&mut r);
        let lines = random_lines(&mut r);
        let sc = Scratch::new("log-fuzz");
        let replay = format!(
            "TEND_FUZZ_SEED={seed} case {case} (seed {case_seed}): {opts:?} -- {words:?}, {} lines",
            lines.len()
        );
        let mut codes = Vec::new();
        for prog in ["s6-log", "tend-log"] {
            let root = sc.join(prog);
            fs::create_dir_all(&root).unwrap();
            codes.push(run_settled(prog, &root, &opts, &words, &lines));
        }
        assert_eq!(codes[0], codes[1], "{replay}: exit codes");
        let (s6, td) = (sc.join("s6-log"), sc.join("tend-log"));
        for d in &dirs {
            assert_eq!(
                snapshot(&s6.join(d)),
                snapshot(&td.join(d)),
                "{replay}: {d} differs"
            );
        }
        for f in stats.iter().map(String::as_str).chain(["stdout"]) {
            let read = |p: PathBuf| fs::read(p).map(|b| text(&mask(&b))).ok();
            assert_eq!(read(s6.join(f)), read(td.join(f)), "{replay}: {f} differs");
        }
        // Alerts, under each program's name (warnings differ in wording).
        let alerts = |p: PathBuf, name: &str| -> String {
            let b = fs::read(p).unwrap();
            let prefix = format!("{name}: alert: ");
            text(&mask(&b))
                .split_inclusive('\n')
                .filter_map(|l| l.strip_prefix(prefix.as_str()))
                .collect()
        };
        assert_eq!(
            alerts(s6.join("stderr"), "s6-log"),
            alerts(td.join("stderr"), "tend-log"),
            "{replay}: alerts differ"
        );
        case += 1;
    }
    eprintln!("random_scripts_same_as_s6: {case} cases from TEND_FUZZ_SEED={seed}");
}

#[test]
fn a_line_fragment_stays_in_the_pipe_across_a_kill() {
    // The start of a line sits in the pipe; the logger is SIGKILLed before the rest
    // comes (within the 100 ms grace): the next logger gets the whole line.
    let sc = Scratch::new("log-fragment");
    let (rd, wr) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
    let keep = rd.try_clone().unwrap();
    let start = || {
        let mut c = cmd("tend-log");
        c.current_dir(&sc.path)
            .arg("./d")
            .stdin(Stdio::from(keep.try_clone().unwrap()));
        Daemon::start(c)
    };
    let mut w = fs::File::from(wr);
    let d1 = start();
    w.write_all(b"one\n").unwrap();
    let cur = sc.join("d/current");
    wait_until(SEC20, "the first line", || {
        (file_len(&cur) == 4).then_some(())
    });
    w.write_all(b"frag").unwrap();
    // The fragment's time in the pipe, inside the 100 ms grace: the kill must land there.
    std::thread::sleep(Duration::from_millis(20));
    d1.signal(nix::sys::signal::Signal::SIGKILL);
    drop(d1);
    assert!(pipe_has_data(&keep), "the fragment left the pipe");
    w.write_all(b"ment\n").unwrap();
    let mut d2 = start();
    drop(w);
    drop(rd);
    drop(keep);
    assert!(d2.wait_exit(SEC20).expect("logger did not exit").success());
    let all = logdir_lines(&sc.join("d"));
    assert_eq!(text(&all), "one\nfragment\n");
}

fn vm_rss_kb(pid: i32) -> u64 {
    let s = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// A writer of `lines` decimal line numbers, in 4 KiB writes, into `wr`; the bytes it
/// has written so far are in the counter.
fn numbered_writer(
    wr: std::os::fd::OwnedFd,
    lines: u64,
) -> (
    std::thread::JoinHandle<()>,
    std::sync::Arc<std::sync::atomic::AtomicU64>,
) {
    use std::sync::atomic::{AtomicU64, Ordering};
    let sent = std::sync::Arc::new(AtomicU64::new(0));
    let counter = sent.clone();
    let h = std::thread::spawn(move || {
        let mut w = fs::File::from(wr);
        let mut buf = Vec::with_capacity(8192);
        for i in 0..lines {
            buf.extend_from_slice(format!("{i}\n").as_bytes());
            if buf.len() >= 4096 {
                w.write_all(&buf[..4096]).unwrap();
                buf.drain(..4096);
                counter.fetch_add(4096, Ordering::Relaxed);
            }
        }
        w.write_all(&buf).unwrap();
        counter.fetch_add(buf.len() as u64, Ordering::Relaxed);
    });
    (h, sent)
}

#[test]
fn disk_full_for_longer_than_memory_blocks_the_writer_and_loses_nothing() {
    // The logdir's own archives fill a 2 MB tmpfs, again and again, while a writer at
    // full speed offers 4.5 MB. While the disk is full, tend-log stops reading: the
    // writer blocks and the logger's memory stays flat. Each time the test moves the
    // archives away (as an operator freeing space would), tend-log resumes; at the end
    // every line is there once, in order, across the archives moved and those kept.
    use std::sync::atomic::Ordering;
    const LINES: u64 = 700_000;
    let sc = Scratch::new("log-longfull");
    let mnt = Tmpfs::mount(sc.join("mnt"), "2m");
    let moved = sc.join("moved");
    fs::create_dir_all(&moved).unwrap();
    let (rd, wr) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
    let mut c = cmd("tend-log");
    c.current_dir(&sc.path)
        .args(["n1000", "s100000", "./mnt/d"])
        .stdin(Stdio::from(rd))
        .stderr(fs::File::create(sc.join("err")).unwrap());
    let mut d = Daemon::start(c);
    let (writer, sent) = numbered_writer(wr, LINES);
    let dir = mnt.0.join("d");
    let warnings = || {
        fs::read_to_string(sc.join("err"))
            .unwrap_or_default()
            .matches("No space left on device")
            .count()
    };
    let mut outages = 0;
    let mut rss_growth = 0u64;
    while !writer.is_finished() {
        let seen = warnings();
        let full = wait_until(Duration::from_secs(60), "a full disk or the end", || {
            if warnings() > seen {
                Some(true)
            } else {
                writer.is_finished().then_some(false)
            }
        });
        if !full {
            break;
        }
        outages += 1;
        // Full: the writer must come to a stop, and stay stopped with flat memory.
        let mut last = sent.load(Ordering::Relaxed);
        wait_until(PATIENCE, "the writer to block", || {
            std::thread::sleep(Duration::from_millis(300));
            let now = sent.load(Ordering::Relaxed);
            let still = now == last;
            last = now;
            still.then_some(())
        });
        let rss0 = vm_rss_kb(d.pid());
        let at = sent.load(Ordering::Relaxed);
        stays_for(Duration::from_secs(2), "the writer blocked", || {
            sent.load(Ordering::Relaxed) == at
        });
        rss_growth = rss_growth.max(vm_rss_kb(d.pid()).saturating_sub(rss0));
        // Free the space: move the archives out, oldest first.
        let mut names: Vec<String> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('@'))
            .collect();
        names.sort();
        for n in names {
            fs::copy(dir.join(&n), moved.join(&n)).unwrap();
            fs::remove_file(dir.join(&n)).unwrap();
        }
    }
    writer.join().unwrap();
    let st = d.wait_exit(Duration::from_secs(60)).expect("exits at EOF");
    assert!(st.success(), "{st:?}");
    assert!(outages >= 2, "the disk was full only {outages} times");
    assert!(
        rss_growth <= 64,
        "memory grew by {rss_growth} kB while full"
    );
    let mut all = logdir_lines(&moved);
    all.extend(logdir_lines(&dir));
    let dups = check_numbered(&all, LINES);
    assert_eq!(dups, 0, "bytes written twice");
}

#[test]
fn stop_while_the_disk_is_full_is_obeyed_at_once_and_the_next_logger_loses_nothing() {
    // A pipe held by the test, as tend-svscan holds a logged service's. The disk is
    // full; SIGTERM must end the logger at once (s6-log, and tend-log before, retried
    // for ever), leaving what it could not write in the pipe: the next logger, once
    // space is back, writes every line, none cut in two.
    const LINES: u64 = 150_000;
    let sc = Scratch::new("log-fullstop");
    let mnt = Tmpfs::mount(sc.join("mnt"), "2m");
    let filler = mnt.0.join("filler");
    let mut f = fs::File::create(&filler).unwrap();
    let block = vec![b'F'; 4096];
    let mut filled = 0;
    // Leave ~200 kB: the logger writes some, then meets the full disk.
    while filled < (2 << 20) - 200_000 && f.write_all(&block).is_ok() {
        filled += block.len();
    }
    drop(f);
    let (rd, wr) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
    let start = |err: &str| {
        let mut c = cmd("tend-log");
        c.current_dir(&sc.path)
            .args(["n100", "s1000000", "./mnt/d"])
            .stdin(Stdio::from(rd.try_clone().unwrap()))
            .stderr(fs::File::create(sc.join(err)).unwrap());
        Daemon::start(c)
    };
    let mut first = start("err1");
    let (writer, _) = numbered_writer(wr, LINES);
    wait_until(SEC20, "a disk-full warning", || {
        let e = fs::read_to_string(sc.join("err1")).unwrap_or_default();
        e.contains("No space left on device").then_some(())
    });
    first.signal(nix::sys::signal::Signal::SIGTERM);
    let st = first
        .wait_exit(SEC5)
        .expect("SIGTERM obeyed while the disk is full");
    assert!(st.success(), "{st:?}");
    let e = fs::read_to_string(sc.join("err1")).unwrap();
    assert!(
        e.lines()
            .last()
            .is_some_and(|l| l.starts_with("tend-log: warning: stopping with ")
                && l.ends_with(" bytes unwritten: left in the pipe for the next reader")),
        "{e}"
    );
    fs::remove_file(&filler).unwrap();
    let mut second = start("err2");
    writer.join().unwrap();
    drop(rd);
    let st = second
        .wait_exit(Duration::from_secs(60))
        .expect("second logger finishes");
    assert!(st.success());
    // Nothing lost; what the first wrote of the pipe's front is written again (at most
    // the pipe), never a line in two (check_numbered panics on a garbled line).
    let dups = check_numbered(&logdir_lines(&mnt.0.join("d")), LINES);
    assert!(dups <= 4 * 65536, "{dups} bytes repeated");
}
