//! The compatibility matrix: {s6-supervise, tend-supervise} × {s6 clients, tend clients}.
//!
//! One scripted sequence of commands is played in each cell on a fresh service
//! directory; after every step the cell records the client's exit code and messages,
//! svstat's human line and fields (pids and seconds masked), the `supervise/status`
//! bytes (stamps and pid masked, wstat and flags exact), `death_tally`'s size, `./down`,
//! and at the end every event byte a subscriber saw and the files the supervisor made.
//! Every cell must record exactly what s6-supervise driven by s6's clients records.
//!
//! Not covered here (see clients.rs and the supervisor's own tests): signals sent to the
//! supervisor, lock-fd, timeout-kill/timeout-finish, max-death-tally.

use crate::common::*;
use std::ffi::OsStr;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Output;
use std::sync::OnceLock;
use std::time::Duration;
use tend_proto::StatusRecord;

/// The supervisors of the matrix.
const SUPERVISORS: [&str; 2] = ["s6-supervise", "tend-supervise"];

/// "up (pid 123) 5 seconds, ready 3 seconds" → "up (pid P) N seconds, ready N seconds".
fn mask_human(line: &str) -> String {
    let words: Vec<&str> = line.split(' ').collect();
    let mut out = Vec::with_capacity(words.len());
    for (i, w) in words.iter().enumerate() {
        let digits = !w.is_empty() && w.trim_end_matches(')').chars().all(|c| c.is_ascii_digit());
        let after_pid = i > 0 && words[i - 1] == "(pid";
        let before_seconds = words.get(i + 1).is_some_and(|n| n.starts_with("seconds"));
        out.push(if digits && after_pid {
            "P)".to_string()
        } else if digits && before_seconds {
            "N".to_string()
        } else {
            w.to_string()
        });
    }
    out.join(" ")
}

/// The status file with what differs between runs masked.
fn mask_status(dir: &Path) -> String {
    let bytes = std::fs::read(dir.join("supervise/status")).unwrap_or_default();
    match StatusRecord::decode(&bytes) {
        None => format!("{} bytes, undecodable", bytes.len()),
        Some(r) => format!(
            "{} bytes, pid {}, wstat {:04x}, flags {:02x}",
            bytes.len(),
            if r.pid == 0 { "0" } else { "P" },
            r.wstat,
            bytes[34]
        ),
    }
}

/// Exit code and neutral messages, with the service directory's path as DIR.
fn outcome(o: &Output, dir: &Path) -> String {
    let stderr = text(&o.stderr).replace(&dir.display().to_string(), "DIR");
    format!("rc {:?} {:?}", o.status.code(), neutral_text(&stderr))
}

/// What one cell sees after a step.
fn observe(cl: &Clients, dir: &Path, step: &str, o: &Output) -> String {
    let human = client(cl.svstat, &[], dir);
    let fields = client(
        cl.svstat,
        &[
            "-o",
            "up,wantedup,normallyup,ready,paused,exitcode,signal,signum",
        ],
        dir,
    );
    let tally = std::fs::metadata(dir.join("supervise/death_tally")).map_or(0, |m| m.len());
    format!(
        "{step}: {} | {} {} | {} | {} | tally {} | down {}",
        outcome(o, dir),
        mask_human(&text(&human.stdout)).trim_end(),
        outcome(&human, dir),
        text(&fields.stdout).trim_end(),
        mask_status(dir),
        tally,
        dir.join("down").exists()
    )
}

/// Names, types and modes of what the supervisor created.
fn layout(dir: &Path) -> String {
    let mut out = Vec::new();
    for sub in ["supervise", "event"] {
        let m = std::fs::metadata(dir.join(sub)).unwrap();
        out.push(format!("{sub}/ {:o}", m.permissions().mode() & 0o7777));
    }
    let mut names: Vec<_> = std::fs::read_dir(dir.join("supervise"))
        .unwrap()
        .flatten()
        .map(|e| {
            let m = e.metadata().unwrap();
            format!(
                "{} {:o} {}",
                e.file_name().to_string_lossy(),
                m.mode() & 0o170777,
                if m.file_type().is_file() { m.len() } else { 0 }
            )
        })
        .collect();
    names.sort();
    out.extend(names);
    out.join(", ")
}

const T: &str = "10000";

/// Play the sequence with `supervisor` and `cl`; return what was seen.
fn scenario(supervisor: &str, cl: Clients) -> Vec<String> {
    let family = if cl.svc == S6.svc { "s6" } else { "tend" };
    let s = Scratch::new(&format!("compat-{supervisor}-{family}"));
    let dir = ServiceDir::new(s.join("sv"))
        .run("#!/bin/sh\nsleep 0.1\necho >&3\nexec sleep 1000\n")
        .finish("#!/bin/sh\nexit 0\n")
        .notification_fd(3)
        .path();
    let mut seen = Vec::new();
    let mut ev = Events::subscribe(&dir);
    let mut sup = Supervised::start(supervisor, &dir);
    let svc = |args: &[&str]| client(cl.svc, args, &dir);

    let o = client(cl.svwait, &["-U", "-t", T], &dir);
    seen.push(observe(&cl, &dir, "svwait -U", &o));
    seen.push(layout(&dir));
    let o = client(cl.svok, &[], &dir);
    seen.push(format!("svok: {}", outcome(&o, &dir)));

    for args in [&["-wD", "-T", T, "-d"][..], &["-wU", "-T", T, "-u"][..]] {
        let o = svc(args);
        seen.push(observe(&cl, &dir, &args.join(" "), &o));
    }
    let o = svc(&["-p"]);
    wait_status(&dir, "paused", |r| r.paused);
    seen.push(observe(&cl, &dir, "-p", &o));
    let o = svc(&["-c"]);
    wait_status(&dir, "continued", |r| !r.paused);
    seen.push(observe(&cl, &dir, "-c", &o));
    let o = svc(&["-O"]);
    wait_status(&dir, "want down", |r| !r.want_up);
    seen.push(observe(&cl, &dir, "-O", &o));
    for args in [
        &["-wD", "-T", T, "-k"][..],
        &["-wU", "-T", T, "-o"][..],
        &["-wD", "-T", T, "-t"][..],
    ] {
        let o = svc(args);
        seen.push(observe(&cl, &dir, &args.join(" "), &o));
    }
    let o = svc(&["-D"]);
    wait_until(PATIENCE, "./down", || {
        dir.join("down").exists().then_some(())
    });
    seen.push(observe(&cl, &dir, "-D", &o));
    let o = svc(&["-wU", "-T", T, "-U"]);
    seen.push(observe(&cl, &dir, "-wU -U", &o));
    let o = svc(&["-Q"]);
    wait_status(&dir, "Q", |r| !r.want_up);
    seen.push(observe(&cl, &dir, "-Q", &o));
    let o = svc(&["-u"]);
    wait_status(&dir, "want up", |r| r.want_up);
    seen.push(observe(&cl, &dir, "-u", &o));
    let o = svc(&["-wR", "-T", T, "-r"]);
    seen.push(observe(&cl, &dir, "-wR -r", &o));
    let o = svc(&["-wr", "-T", T, "-r"]);
    wait_status(&dir, "ready again", |r| is_up(r) && r.ready);
    seen.push(observe(&cl, &dir, "-wr -r", &o));
    // waiting without letters: already there, and a timeout
    let o = svc(&["-wu"]);
    seen.push(format!("-wu: {}", outcome(&o, &dir)));
    let o = svc(&["-wd", "-T", "600"]);
    seen.push(format!("-wd -T 600: rc {:?}", o.status.code()));
    let o = client(cl.svwait, &["-d", "-t", "600"], &dir);
    seen.push(format!("svwait -d -t 600: {}", outcome(&o, &dir)));
    // exit
    let o = svc(&["-wD", "-T", T, "-dx"]);
    let st = sup.wait_exit();
    seen.push(format!(
        "-wD -dx: {} then supervisor {:?}",
        outcome(&o, &dir),
        st.code()
    ));
    let o = client(cl.svok, &[], &dir);
    seen.push(format!("svok: {}", outcome(&o, &dir)));
    let o = client(cl.svstat, &[], &dir);
    seen.push(format!("svstat: {}", outcome(&o, &dir)));
    let o = svc(&["-u"]);
    seen.push(format!("-u: {}", outcome(&o, &dir)));
    seen.push(format!("status after exit: {}", mask_status(&dir)));
    seen.push(format!("events: {}", ev.text()));
    seen
}

fn reference() -> &'static Vec<String> {
    static REF: OnceLock<Vec<String>> = OnceLock::new();
    REF.get_or_init(|| scenario("s6-supervise", S6))
}

#[track_caller]
fn same(cell: Vec<String>, what: &str) {
    let want = reference();
    for (i, (got, exp)) in cell.iter().zip(want.iter()).enumerate() {
        assert_eq!(
            got, exp,
            "{what}: step {i} differs from s6-supervise + s6 clients"
        );
    }
    assert_eq!(cell.len(), want.len(), "{what}");
}

#[test]
fn matrix_s6_supervise_s6_clients_is_reproducible() {
    same(
        scenario(SUPERVISORS[0], S6),
        "s6-supervise + s6 clients (again)",
    );
}

#[test]
fn matrix_s6_supervise_tend_clients() {
    same(
        scenario(SUPERVISORS[0], TEND),
        "s6-supervise + tend clients",
    );
}

#[test]
fn matrix_tend_supervise_s6_clients() {
    same(scenario(SUPERVISORS[1], S6), "tend-supervise + s6 clients");
}

#[test]
fn matrix_tend_supervise_tend_clients() {
    same(
        scenario(SUPERVISORS[1], TEND),
        "tend-supervise + tend clients",
    );
}

#[test]
fn signal_letters_with_every_supervisor_and_client() {
    for supervisor in SUPERVISORS {
        for cl in [S6, TEND] {
            signal_letters(supervisor, cl.svc);
        }
    }
}

#[test]
fn masking() {
    assert_eq!(
        mask_human("up (pid 123) 5 seconds, ready 3 seconds\n"),
        "up (pid P) N seconds, ready N seconds\n"
    );
    assert_eq!(
        mask_human("down (exitcode 3) 12 seconds, normally up"),
        "down (exitcode 3) N seconds, normally up"
    );
}

/// tend-supervise writes `supervise/spawn-error` (its own file) when ./run cannot be
/// executed; tend-svstat shows it, s6-svstat ignores it, and a good spawn removes it.
#[test]
fn spawn_error_written_by_tend_supervise_is_shown() {
    let s = Scratch::new("compat-spawn-error");
    let dir = ServiceDir::new(s.join("sv"))
        .run("#!/bin/sh\nexec sleep 1000\n")
        .path();
    std::fs::set_permissions(dir.join("run"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let _sup = Supervised::start(SUPERVISORS[1], &dir);
    let record = wait_until(PATIENCE, "spawn-error", || {
        std::fs::read(dir.join("supervise/spawn-error"))
            .ok()
            .and_then(|b| tend_proto::spawn_error::SpawnRecord::decode(&b))
    });
    assert_eq!(
        (record.errno, &record.program[..], &record.why[..]),
        (13, &b"./run"[..], &b"not executable (mode 0644)"[..])
    );
    let (s6, human) = svstat_in_a_stable_second(&dir);
    assert_eq!(
        human,
        format!(
            "{}, spawn failed: ./run: not executable (mode 0644)\n",
            s6.trim_end()
        )
    );
    assert!(
        human.starts_with("down (exitcode 126) ") && human.contains(", normally up, want up"),
        "{human}"
    );
    let j = text(&client("tend-svstat", &["-j"], &dir).stdout);
    assert!(
        j.ends_with(&format!(
            "\"spawn_error\":{{\"since\":\"{}\",\"errno\":13,\"error\":\"not executable (mode 0644)\",\"program\":\"./run\"}}}}\n",
            text(&record.stamp.label())
        )),
        "{j}"
    );
    std::fs::set_permissions(dir.join("run"), std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_code(&client("tend-svc", &["-wu", "-T", "10000", "-du"], &dir), 0);
    assert!(!dir.join("supervise/spawn-error").exists());
    let j = text(&client("tend-svstat", &["-j"], &dir).stdout);
    assert!(
        j.starts_with("{\"up\":true,") && j.ends_with("\"spawn_error\":null}\n"),
        "{j}"
    );
}

/// down-signal is read as s6-supervise reads it: the first line exactly, the name in any
/// case with or without SIG, or a number; anything else (a trailing space, tab or CR) is
/// invalid, warned about, and SIGTERM is sent instead. Each value is tried under both
/// supervisors; the signal the service received must be the same.
#[test]
fn down_signal_is_parsed_as_s6_supervise_parses_it() {
    let values = [
        "HUP\n",
        "hup\n",
        "SigUsr1\n",
        "10\n",
        "HUP\nxx",
        "SIGHUP\r\n",
        "HUP \n",
        " HUP\n",
        "USR1\t\n",
        "2 \n",
        "HUPx\n",
    ];
    let s = Scratch::new("downsig");
    let received = |supervisor: &str, value: &str, n: usize| -> String {
        let dir = s.join(format!("{n}-{supervisor}"));
        std::fs::create_dir_all(&dir).unwrap();
        let run = "#!/bin/sh\nfor s in HUP INT TERM USR1; do trap \"echo $s > got; exit 0\" $s; done\n\
                   : > trapped\nwhile :; do sleep 0.05; done\n";
        std::fs::write(dir.join("run"), run).unwrap();
        std::fs::set_permissions(dir.join("run"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(dir.join("down-signal"), value).unwrap();
        let _sup = Supervised::start(supervisor, &dir);
        wait_status(&dir, "up", is_up);
        wait_until(Duration::from_secs(10), "the traps set", || {
            dir.join("trapped").exists().then_some(())
        });
        assert_code(&tend("tend-svc", [OsStr::new("-d"), dir.as_os_str()]), 0);
        wait_until(Duration::from_secs(10), "the trap's file", || {
            std::fs::read_to_string(dir.join("got"))
                .ok()
                .filter(|t| t.ends_with('\n'))
        })
    };
    for (n, value) in values.iter().enumerate() {
        let s6 = received("s6-supervise", value, n);
        let ours = received("tend-supervise", value, n);
        assert_eq!(ours, s6, "down-signal {value:?}");
    }
}
