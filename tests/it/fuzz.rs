//! Argument-vector fuzz: every program (each `[[bin]]` of Cargo.toml) run with hostile
//! and random argument vectors — none, empty strings, huge strings, invalid UTF-8,
//! options without their values, negative and huge numbers, odd option letters.
//!
//! Each run must end with an exit code its man page's EXIT STATUS lists (for
//! chain-loaders, also the status of the harmless program they exec: `true` or `false`),
//! never by a signal, within a deadline; a usage error or system failure (100, 111,
//! 126, 127) prints exactly one line that is not a warning, `PROG: usage: ...` or
//! `PROG: fatal: ...`. The long-lived daemons (tend-supervise, tend-svscan, tend-init, tend-socklog) may instead
//! still be running after a short while: they are then killed, which counts as "no crash".
//! Signals and loader errors that tend-softlimit's own limits cause in the exec (the
//! kernel's SIGSEGV after a failed exec, SIGXCPU...) are not counted; its abort is.
//!
//! Bounded: a deterministic pass over every program, then random vectors for
//! TEND_FUZZ_SECS seconds (default 2). TEND_FUZZ_SEED replays a run; the seed is printed
//! on failure.
//!
//! Kept harmless by construction: every run has a fresh empty working directory, the
//! only absolute paths are under /nonexistent, the only programs a chain-loader can find
//! are `true` and `false` (other words are not names of programs: they start with a
//! control byte, or are numbers), and tend-cgroup never gets a cgroup path it could create.
//! Not covered: tend-log scripts compared with s6-log (the log engineer's), and stdin
//! contents (stdin is /dev/null).

use crate::common::*;
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// What a program may exit with: its man page's EXIT STATUS, plus `true`'s and
/// `false`'s codes for a program that says it exits with its child's status.
fn documented_codes(prog: &str) -> Vec<i32> {
    let page = std::fs::read_to_string(root().join(format!("man/man8/{prog}.8")))
        .unwrap_or_else(|e| panic!("{prog}: no man page: {e}"));
    let mut codes = Vec::new();
    let mut in_exit = false;
    for line in page.lines() {
        if line.starts_with(".SH") {
            in_exit = line == ".SH EXIT STATUS";
            continue;
        }
        // "Otherwise prog's exit code" (tend-fghack, tend-permafailon...).
        if in_exit && line == ".IR prog 's" {
            codes.extend([0, 1]);
        }
        // A range, `.BR 1 ... 99` (tend-sv: one more for each service that failed).
        if in_exit
            && let Some(rest) = line.strip_prefix(".BR ")
            && let Some((a, b)) = rest.split_once("...")
            && let (Ok(a), Ok(b)) = (a.trim().parse::<i32>(), b.trim().parse::<i32>())
        {
            codes.extend(a..=b);
        }
        // Codes side by side, `.BR 126 ", " 127` (tend-with-contenv): a line that starts
        // with a number (never a cross-reference such as `.BR tend-svc (8)`).
        if in_exit
            && let Some(rest) = line.strip_prefix(".BR ")
            && !rest.contains("...")
            && rest
                .split_whitespace()
                .next()
                .is_some_and(|w| w.parse::<i32>().is_ok())
        {
            codes.extend(
                rest.split(|c: char| !c.is_ascii_digit())
                    .filter_map(|w| w.parse::<i32>().ok()),
            );
        }
        if in_exit && let Some(rest) = line.strip_prefix(".B ") {
            codes.extend(
                rest.split(|c: char| !c.is_ascii_digit())
                    .filter_map(|w| w.parse::<i32>().ok()),
            );
        }
    }
    // A chain-loader (it documents exec failures) exits with its program's status.
    if codes.contains(&126) {
        codes.extend([0, 1]);
    }
    assert!(
        !codes.is_empty(),
        "{prog}: no EXIT STATUS codes in its man page"
    );
    codes
}

/// Programs that run until told to stop when their arguments are valid.
fn is_daemon(prog: &str) -> bool {
    matches!(
        prog,
        "tend-supervise"
            | "tend-svscan"
            | "tend-init"
            | "tend-socklog"
            | "tend-ipcserver"
            | "tend-vsockserver"
    )
}

/// Letters few programs take as options.
const ODD_LETTERS: [char; 6] = ['x', 'Z', '0', '9', '?', ':'];

/// Option letters a program's usage line names.
fn usage_letters(prog: &str) -> Vec<char> {
    let o = tend(prog, ["-\u{1}"]);
    let usage = text(&o.stderr);
    usage
        .split(['[', ']', '|', ' '])
        .filter_map(|w| w.strip_prefix('-'))
        .flat_map(|w| w.chars())
        .filter(char::is_ascii_alphanumeric)
        .collect()
}

/// Option letters a program's usage line names, plus a few it does not.
fn letters(prog: &str) -> Vec<char> {
    let mut v = usage_letters(prog);
    v.extend(ODD_LETTERS);
    v.sort_unstable();
    v.dedup();
    v
}

/// A hostile word: never the name of a program other than `true`/`false`, never a path
/// outside the run's scratch directory or /nonexistent.
fn word(rng: &mut Rng, cgroup: bool) -> OsString {
    let fixed: &[&[u8]] = if cgroup {
        // No relative path without `..` (tend-cgroup would create it), no `--`/`-`.
        &[
            b"",
            b"/nonexistent/g",
            b"../up",
            b"a/../../b",
            b"/nonexistent/\xff\xfe",
            b"-c",
            b"-cmemory.max=1",
            b"-c=",
            b"-cpids.max=-1",
            b"-cmemory.max=99999999999999999999999",
            b"-x",
        ]
    } else {
        &[
            b"",
            b"-",
            b"--",
            b"true",
            b"false",
            b"/nonexistent/prog",
            b".",
            b"svc.d",
            b"0",
            b"1",
            b"-1",
            b"00",
            b"4294967296",
            b"2147483648",
            b"18446744073709551615",
            b"18446744073709551616",
            b"99999999999999999999999999",
            b"-9223372036854775808",
            b"0-9999999",
            b"0,1,",
            b"=",
            b"\xff\xfe",
            b"\xc3",
            b"root",
            b"nobody",
            b"0:0:0",
            b"::",
            b"1,2,3,",
            b"up,pid,nope",
            b"-wu",
            b"-T",
            b"-t",
            b"-d",
            b"-o",
        ]
    };
    match rng.index(10) {
        0 => {
            // huge: a long run of one byte (never on PATH: longer than NAME_MAX)
            let b = *rng.pick(b"a9-\xff/");
            let n = 300 + rng.index(100_000);
            let mut v = vec![b'\x01'];
            v.resize(n, b);
            if cgroup {
                v.splice(0..0, *b"/nonexistent/");
            }
            OsString::from_vec(v)
        }
        1 => {
            // random bytes, behind a control byte so no program has this name
            let n = rng.index(24);
            let mut v = vec![b'\x01'];
            v.extend((0..n).map(|_| {
                let b = (rng.next() >> 24) as u8;
                if b == 0 { 1 } else { b }
            }));
            if cgroup {
                v.splice(0..0, *b"/nonexistent/");
            }
            OsString::from_vec(v)
        }
        _ => OsString::from_vec(rng.pick(fixed).to_vec()),
    }
}

/// A random argument vector for `prog`: options (known and odd letters, bundled, with
/// and without values) then operands.
fn argv(rng: &mut Rng, prog: &str, letters: &[char]) -> Vec<OsString> {
    let cgroup = prog == "tend-cgroup";
    let mut v = Vec::new();
    for _ in 0..rng.index(5) {
        let n = 1 + rng.index(3);
        let mut opt = String::from("-");
        for _ in 0..n {
            opt.push(*rng.pick(letters));
        }
        if cgroup && !opt.starts_with("-c") {
            opt.insert(1, 'x'); // an unknown option: usage, never an operand
        }
        v.push(OsString::from(opt));
        if rng.index(2) == 0 {
            v.push(word(rng, cgroup));
        }
    }
    for _ in 0..rng.index(5) {
        v.push(word(rng, cgroup));
    }
    // The program a chain-loader runs: the harmless ones, mostly.
    if rng.index(3) > 0 && !cgroup {
        v.push(OsString::from(*rng.pick(&["true", "false"])));
    }
    v
}

/// The fixed hostile vectors every program gets.
fn fixed_vectors(prog: &str, letters: &[char]) -> Vec<Vec<OsString>> {
    let usage = usage_letters(prog);
    let os = |v: &[&[u8]]| -> Vec<OsString> {
        v.iter().map(|b| OsString::from_vec(b.to_vec())).collect()
    };
    let mut out = vec![
        vec![],
        os(&[b""]),
        os(&[b"--"]),
        os(&[b"-"]),
        os(&[b"\xff"]),
        os(&[b"-\xff"]),
        os(&[b"--", b"\xff"]),
    ];
    if prog == "tend-cgroup" {
        // Only vectors whose operands cannot name a cgroup to create.
        out.retain(|v| {
            v.iter()
                .all(|w| !matches!(w.as_bytes(), b"\xff" | b"-" | b"--"))
        });
    }
    for &l in letters {
        // an option alone (its value missing), and the usage's options with hostile values
        out.push(vec![OsString::from(format!("-{l}"))]);
        if usage.contains(&l) && (prog != "tend-cgroup" || l == 'c') {
            for val in ["", "-1", "18446744073709551616"] {
                let mut v = vec![OsString::from(format!("-{l}")), OsString::from(val)];
                if prog != "tend-cgroup" {
                    v.push(OsString::from("true"));
                }
                out.push(v);
            }
        }
    }
    out
}

/// Why one run was wrong, if it was.
fn check_run(prog: &str, args: &[OsString], codes: &[i32], scratch: &Path) -> Option<String> {
    let cwd = scratch.join("run");
    std::fs::create_dir_all(&cwd).unwrap();
    let mut c = cmd(prog);
    if prog == "tend-socklog" {
        // Its default socket is the machine's /dev/log: bind in this run's directory
        // instead (a later -x or -i in the vector still wins, and is relative or local).
        c.args(["-x", "sock"]);
    }
    c.args(args)
        .current_dir(&cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0);
    if prog == "tend-monit" {
        // With no command word it is monit's daemon, on the first control file of its
        // search order: make that a harmless one of this run's (~/.monitrc), never the
        // machine's /etc/monit/monitrc. Its scanner's directory is this run's too, not
        // the machine's /run/tend-monit (a scanner there outlived the run: it is in a
        // session of its own, out of reach of the killpg below).
        use std::os::unix::fs::PermissionsExt;
        let rc = cwd.join(".monitrc");
        std::fs::write(&rc, "set daemon 60\n").unwrap();
        std::fs::set_permissions(&rc, std::fs::Permissions::from_mode(0o600)).unwrap();
        c.env("HOME", &cwd);
        c.env("TEND_MONIT_SCANDIR", cwd.join("scan"));
    }
    if prog == "tend-init" {
        // Its defaults are the machine's /etc/tend and /run/tend: keep every path it
        // would touch inside this run's directory.
        for (k, v) in [
            ("TEND_INIT_DIR", "init.d"),
            ("TEND_SERVICES_DIR", "services"),
            ("TEND_FINISH_DIR", "finish.d"),
            ("TEND_ENV_DIR", "env"),
            ("TEND_SCAN_DIR", "scan"),
        ] {
            c.env(k, v);
        }
    }
    let mut child = c.spawn().unwrap();
    let pid = child.id() as i32;
    // A pipe (RLIMIT_FSIZE from tend-softlimit -f does not apply to it), drained by a
    // thread so a huge message never blocks the program while we poll.
    let mut pipe = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = std::io::Read::read_to_end(&mut pipe, &mut b);
        let _ = tx.send(b);
    });
    // tend-monit with no command word is a daemon (monit's `monit` alone, `-S DIR`...).
    const MONIT_WORDS: [&str; 12] = [
        "start",
        "stop",
        "restart",
        "monitor",
        "unmonitor",
        "reload",
        "status",
        "summary",
        "report",
        "quit",
        "validate",
        "procmatch",
    ];
    let daemon = is_daemon(prog)
        || prog == "tend-monit"
            && !args.iter().any(|a| {
                MONIT_WORDS
                    .iter()
                    .any(|w| a.as_encoded_bytes() == w.as_bytes())
            });
    let patience = if daemon {
        Duration::from_millis(300)
    } else {
        Duration::from_secs(20)
    };
    let deadline = Instant::now() + patience;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st);
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    // Whatever happened, nothing of this run survives it.
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    );
    let _ = child.wait();
    if daemon {
        // What a daemon started in a session of its own lives in this run's directory.
        kill_under(&cwd);
    }
    let _ = std::fs::remove_dir_all(&cwd);
    let stderr = text(&rx.recv_timeout(Duration::from_secs(5)).unwrap_or_default());
    let Some(status) = status else {
        return (!daemon).then(|| format!("still running after {patience:?}"));
    };
    // tend-softlimit's limits apply to its own exec and to the program: a limit too
    // small for them gets the kernel's SIGSEGV (exec failed past the point of no
    // return), SIGKILL, SIGXCPU, SIGXFSZ or SIGBUS, or the loader's complaint. Not its
    // own crash: an abort (a failed allocation) still counts.
    // tend-chpst's limits do the same to its program: -t (RLIMIT_CPU) 0, or the empty
    // string runit reads as 0, gets SIGXCPU at the first tick; -m or -d 0 leaves it no
    // memory (SIGSEGV at its exec, as `chpst -m '' true` under runit); -f SIGXFSZ.
    let chpst_limited = prog == "tend-chpst"
        && args.iter().any(|a| {
            let b = a.as_bytes();
            b.len() > 1
                && b[0] == b'-'
                && b[1] != b'-'
                && b[1..].iter().any(|c| b"mdft".contains(c))
        });
    let limited = prog == "tend-softlimit" || chpst_limited;
    if let Some(sig) = status.signal() {
        if limited && [7, 9, 11, 24, 25].contains(&sig) {
            return None;
        }
        return Some(format!("killed by signal {sig}; stderr: {stderr:?}"));
    }
    if limited && !stderr.is_empty() && !stderr.starts_with("tend-") {
        return None;
    }
    // tend-chpst takes what runit's chpst takes (an empty or overflowing number is a
    // number, `-1` after `-0` is an option), so without a message of its own the code is
    // the program's, or a failure it could not report because `-2` closed stderr.
    if prog == "tend-chpst" && !stderr.starts_with("tend-") {
        return None;
    }
    let code = status.code().unwrap_or(-1);
    // tend-init's -c (TEND_EXIT_CODE) replaces every code it documents.
    let init_code = prog == "tend-init"
        && args.iter().any(|a| {
            let a = a.as_encoded_bytes();
            a.starts_with(b"-") && a.contains(&b'c')
        });
    // tend-pty exits with its program's code: a program its hang-up (stdin at its end)
    // killed is 128+SIGHUP.
    let pty_hup = prog == "tend-pty" && code == 128 + libc::SIGHUP;
    if !(codes.contains(&code) || pty_hup || init_code && (0..=255).contains(&code)) {
        return Some(format!(
            "exit {code}, not one of {codes:?}; stderr: {stderr:?}"
        ));
    }
    if matches!(code, 100 | 111 | 126 | 127) {
        let lines: Vec<&str> = stderr
            .lines()
            .filter(|l| !l.contains(": warning: "))
            .collect();
        // `PROG: fatal:`, or `PROG NAME: fatal:` from a program that names the service it
        // runs for (tend-supervise, tend-monit's watcher), as s6-supervise does.
        let named_fatal = |l: &str| {
            l.strip_prefix(prog)
                .and_then(|rest| rest.strip_prefix(' '))
                .and_then(|rest| rest.split_once(": fatal: "))
                .is_some_and(|(name, _)| !name.is_empty() && !name.contains(' '))
        };
        // tend-svc on several service directories warns for each it cannot control (or
        // wait on) and exits with the last failure's code, as s6-svc 2.14+ does (checked
        // with 2.15.1: `s6-svc /nonexistent .` 102, `s6-svc . /nonexistent` 111): 111, or
        // 100 when the last has no supervisor listening (tend-svc keeps s6 2.11's 100 there).
        let each_warned = prog == "tend-svc"
            && matches!(code, 100 | 111)
            && lines.is_empty()
            && !stderr.is_empty();
        let ok = each_warned
            || lines.len() == 1
                && (lines[0].starts_with(&format!("{prog}: usage: "))
                    || lines[0].starts_with(&format!("{prog}: fatal: "))
                    || named_fatal(lines[0]));
        if !ok {
            return Some(format!(
                "exit {code} without exactly one usage or fatal line: {stderr:?}"
            ));
        }
    }
    None
}

fn shown_argv(args: &[OsString]) -> String {
    let parts: Vec<String> = args
        .iter()
        .map(|a| {
            let b = a.as_bytes();
            if b.len() > 60 {
                format!(
                    "{:?}...({} bytes)",
                    String::from_utf8_lossy(&b[..20]),
                    b.len()
                )
            } else {
                format!("{:?}", String::from_utf8_lossy(b))
            }
        })
        .collect();
    parts.join(" ")
}

#[test]
fn every_program_survives_hostile_argument_vectors() {
    let seed = std::env::var("TEND_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1
        });
    let secs: u64 = std::env::var("TEND_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let s = Scratch::new("fuzz");
    let progs: Vec<(String, Vec<i32>, Vec<char>)> = binaries()
        .into_iter()
        .map(|p| {
            let codes = documented_codes(&p);
            let l = letters(&p);
            (p, codes, l)
        })
        .collect();
    let mut failures = Vec::new();
    let mut runs = 0;
    for (prog, codes, l) in &progs {
        for args in fixed_vectors(prog, l) {
            runs += 1;
            if let Some(why) = check_run(prog, &args, codes, &s.path) {
                failures.push(format!("{prog} {}: {why}", shown_argv(&args)));
            }
        }
    }
    let mut rng = Rng(seed);
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end && failures.len() < 20 {
        let (prog, codes, l) = rng.pick(&progs);
        let args = argv(&mut rng, prog, l);
        runs += 1;
        if let Some(why) = check_run(prog, &args, codes, &s.path) {
            failures.push(format!("{prog} {}: {why}", shown_argv(&args)));
        }
    }
    eprintln!("fuzz: {runs} runs, TEND_FUZZ_SEED={seed}");
    assert!(
        failures.is_empty(),
        "TEND_FUZZ_SEED={seed}: {} of {runs} runs failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
