//! s6 parity for the programs that stand in for s6's: tend-setlock against s6-setlock
//! holding the same file (both directions), and tend-svperms against s6-svperms, then who
//! may read, control and watch a service under tend-supervise and s6-supervise, with
//! tend's and s6's clients, as a throwaway user and group made by the test. Also the
//! newcomer's view: examples/demo.sh under SIGINT, and the README's list of the s6
//! programs tend lacks against `dpkg -L s6`.
//!
//! Not tested: a lock on a file of a filesystem without OFD locks (NFS before 3.x);
//! tend-setlock -t reaching its deadline at the same instant the holder releases (both
//! outcomes are correct); group names that exist only in NSS databases other than
//! /etc/group (tend reads the file, s6 asks NSS); s6-svperms's warning for an owner
//! without an account (needs a uid with no /etc/passwd line owning a service); the demo
//! on a real terminal (^C there reaches the whole foreground group; `timeout -s INT`
//! signals the group it made, which is the same set of processes).

use crate::common::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------- setlock

/// `prog [opts] file sh -c 'touch ready; exec sleep 100'`, once it holds the lock.
fn holder(prog: &str, opts: &[&str], file: &Path, ready: &Path) -> Daemon {
    let mut c = cmd(prog);
    c.args(opts).arg(file).args([
        "sh",
        "-c",
        &format!("touch {}; exec sleep 100", ready.display()),
    ]);
    let d = Daemon::start(c);
    wait_until(PATIENCE, "the holder to take the lock", || {
        ready.exists().then_some(())
    });
    d
}

/// `prog args... file rest...`, run to completion.
fn setlock(prog: &str, args: &[&str], file: &Path, rest: &[&str]) -> Output {
    let mut c = cmd(prog);
    c.args(args).arg(file).args(rest);
    run(c)
}

#[track_caller]
fn busy(o: &Output, prog: &str, file: &Path, why: &str) {
    assert_code(o, 1);
    assert_eq!(
        text(&o.stderr),
        format!("{prog}: fatal: unable to lock {}: {why}\n", file.display())
    );
    assert!(o.stdout.is_empty(), "prog ran: {}", text(&o.stdout));
}

/// Wait until `prog -n` can take the lock (the holder's death is asynchronous).
fn wait_free(prog: &str, file: &Path) {
    wait_until(PATIENCE, "the lock to be released", || {
        (setlock(prog, &["-n"], file, &["true"]).status.code() == Some(0)).then_some(())
    });
}

#[test]
fn setlock_and_s6_setlock_exclude_each_other() {
    require("s6-setlock");
    let s = Scratch::new("setlock-x");
    let mut n = 0;
    for (holds, takes) in [
        ("s6-setlock", "tend-setlock"),
        ("tend-setlock", "s6-setlock"),
    ] {
        // (holder's options, taker's options, whether the taker gets it)
        for (hold, take, gets) in [
            (&[][..], &["-n"][..], false),
            (&[], &["-n", "-r"], false),
            (&["-r"], &["-n", "-r"], true),
            (&["-r"], &["-n"], false),
            (&["-w"], &["-N", "-n", "-w"], false),
        ] {
            n += 1;
            let file = s.join(format!("lock{n}"));
            let h = holder(holds, hold, &file, &s.join(format!("ready{n}")));
            let o = setlock(takes, take, &file, &["echo", "GOT"]);
            if gets {
                assert_code(&o, 0);
                assert_eq!(text(&o.stdout), "GOT\n");
            } else {
                busy(&o, takes, &file, "Device or resource busy");
            }
            drop(h);
            wait_free(takes, &file);
        }
    }
}

#[test]
fn setlock_waits_for_s6_setlock_and_the_other_way() {
    require("s6-setlock");
    let s = Scratch::new("setlock-wait");
    for (n, (holds, waits, opts)) in [
        ("s6-setlock", "tend-setlock", &[][..]),
        ("s6-setlock", "tend-setlock", &["-t", "60000"]),
        ("tend-setlock", "s6-setlock", &[]),
        ("tend-setlock", "s6-setlock", &["-t", "60000"]),
    ]
    .into_iter()
    .enumerate()
    {
        let file = s.join(format!("lock{n}"));
        let got = s.join(format!("got{n}"));
        let h = holder(holds, &[], &file, &s.join(format!("ready{n}")));
        let mut c = cmd(waits);
        c.args(opts).arg(&file).args([
            "sh",
            "-c",
            &format!("touch {}; exec sleep 100", got.display()),
        ]);
        let _waiter = Daemon::start(c);
        // It waits while the lock is held...
        stays_for(
            Duration::from_millis(300),
            &format!("{waits} {opts:?} waiting while {holds} holds the lock"),
            || !got.exists(),
        );
        drop(h);
        // ...takes it when it is released, and holds it in the program it exec'd (for -t,
        // the lock a helper waited for).
        wait_until(PATIENCE, "the waiter to take the lock", || {
            got.exists().then_some(())
        });
        busy(
            &setlock(holds, &["-n"], &file, &["true"]),
            holds,
            &file,
            "Device or resource busy",
        );
    }
}

#[test]
fn setlock_times_out_with_exit_1() {
    require("s6-setlock");
    let s = Scratch::new("setlock-t");
    let file = s.join("lock");
    let _h = holder("s6-setlock", &[], &file, &s.join("ready"));
    for t in ["0", "300"] {
        let start = Instant::now();
        let o = setlock("tend-setlock", &["-t", t], &file, &["echo", "GOT"]);
        busy(&o, "tend-setlock", &file, "Connection timed out");
        assert!(start.elapsed() >= Duration::from_millis(t.parse().unwrap()));
    }
    // s6-setlock gives up too, with the same code.
    assert_code(&setlock("s6-setlock", &["-t", "300"], &file, &["true"]), 1);
}

#[test]
fn setlock_lock_lives_as_long_as_the_programs_children() {
    require("s6-setlock");
    let s = Scratch::new("setlock-children");
    let file = s.join("lock");
    let pidfile = s.join("pid");
    // The program leaves a child behind and exits: the child still holds the lock.
    let mut c = cmd("tend-setlock");
    c.arg(&file).args([
        "sh",
        "-c",
        &format!("sleep 100 & echo $! > {}", pidfile.display()),
    ]);
    let mut d = Daemon::start(c);
    assert_eq!(d.wait_exit(PATIENCE).and_then(|st| st.code()), Some(0));
    let pid: i32 = wait_until(PATIENCE, "the child's pid", || {
        std::fs::read_to_string(&pidfile).ok()?.trim().parse().ok()
    });
    busy(
        &setlock("s6-setlock", &["-n"], &file, &["true"]),
        "s6-setlock",
        &file,
        "Device or resource busy",
    );
    // The last holder gone, the lock is free.
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    );
    wait_free("s6-setlock", &file);
    drop(d);
}

#[test]
fn setlock_failures_as_s6_setlock() {
    require("s6-setlock");
    let s = Scratch::new("setlock-err");
    let missing = s.join("nonexistent/lock");
    let m = missing.display().to_string();
    let file = s.join("lock").display().to_string();
    let usage =
        "tend-setlock: usage: tend-setlock [ -r | -w ] [ -n | -N | -t timeout ] file prog...\n";
    for args in [
        &[][..],
        &[file.as_str()],
        &["-t", "x", &file, "true"],
        &["-x", &file, "true"],
    ] {
        let o = tend("tend-setlock", args);
        assert_code(&o, 100);
        assert_eq!(text(&o.stderr), usage, "{args:?}");
        assert_code(
            &run({
                let mut c = cmd("s6-setlock");
                c.args(args);
                c
            }),
            100,
        );
    }
    // Same code and message (program name aside) as s6-setlock.
    for args in [
        &[m.as_str(), "true"][..],
        &["-r", &m, "true"],
        &[&file, "/nonexistent/prog"],
    ] {
        let t = tend("tend-setlock", args);
        let e = run({
            let mut c = cmd("s6-setlock");
            c.args(args);
            c
        });
        assert_eq!(t.status.code(), e.status.code(), "{args:?}");
        assert!(matches!(t.status.code(), Some(111 | 127)), "{args:?}");
        assert_eq!(
            text(&t.stderr).replace("tend-setlock", "s6-setlock"),
            text(&e.stderr),
            "{args:?}"
        );
    }
    // -r creates a missing file, as s6-setlock does (mode 0666 minus the umask).
    let created = s.join("created");
    let o = setlock("tend-setlock", &["-r"], &created, &["true"]);
    assert_code(&o, 0);
    let t_mode = std::fs::metadata(&created).unwrap().mode() & 0o7777;
    let created2 = s.join("created2");
    assert_code(&setlock("s6-setlock", &["-r"], &created2, &["true"]), 0);
    assert_eq!(
        t_mode,
        std::fs::metadata(&created2).unwrap().mode() & 0o7777
    );
}

// ---------------------------------------------------------------- svperms

/// A service directory as a supervisor leaves it: supervise/ 0700, supervise/control
/// 0600, event/ 03730 (owner root, group root).
fn supervised_layout(s: &Scratch, name: &str) -> PathBuf {
    let d = s.join(name);
    std::fs::create_dir_all(d.join("supervise")).unwrap();
    std::fs::create_dir_all(d.join("event")).unwrap();
    nix::unistd::mkfifo(
        &d.join("supervise/control"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    for (p, mode) in [
        ("supervise", 0o700),
        ("supervise/control", 0o600),
        ("event", 0o3730),
    ] {
        std::fs::set_permissions(d.join(p), std::fs::Permissions::from_mode(mode)).unwrap();
    }
    d
}

/// Mode and group of supervise/, supervise/control, supervise/status (if any), event/.
fn perms_of(dir: &Path) -> Vec<(String, u32, u32)> {
    [
        "supervise",
        "supervise/control",
        "supervise/status",
        "event",
    ]
    .iter()
    .filter_map(|p| {
        let m = std::fs::metadata(dir.join(p)).ok()?;
        Some((p.to_string(), m.mode() & 0o7777, m.gid()))
    })
    .collect()
}

fn svperms(prog: &str, args: &[&str], dirs: &[&Path]) -> Output {
    let mut c = cmd(prog);
    c.args(args).args(dirs);
    run(c)
}

/// stdout, stderr (program name neutral, s6's doubled "fatal: : " single) and code.
fn svperms_neutral(o: &Output) -> String {
    format!(
        "{}|{}|{:?}",
        text(&o.stdout),
        text(&o.stderr)
            .replace("tend-svperms", "s6-svperms")
            .replace("fatal: : ", "fatal: "),
        o.status.code()
    )
}

#[test]
fn svperms_sets_and_reads_what_s6_svperms_does() {
    require("s6-svperms");
    let s = Scratch::new("svperms-s6");
    let by_s6 = supervised_layout(&s, "a");
    let by_tend = supervised_layout(&s, "b");
    for args in [
        &[][..],
        &["-g", "daemon"],
        &["-G", "daemon"],
        &["-o"],
        &["-O", "daemon"],
        &["-e"],
        &["-E", "daemon"],
        &["-u"],
        &["-v", "-G", ":5", "-e"],
        &["-v", "-o", "-E", ":0"],
        &["-g", "daemon", "-u", "-E", "daemon", "-e"],
        &["-v"],
    ] {
        let e = svperms("s6-svperms", args, &[&by_s6]);
        let t = svperms("tend-svperms", args, &[&by_tend]);
        assert_code(&t, 0);
        assert_eq!(
            svperms_neutral(&t).replace(by_tend.to_str().unwrap(), "DIR"),
            svperms_neutral(&e).replace(by_s6.to_str().unwrap(), "DIR"),
            "{args:?}"
        );
        assert_eq!(perms_of(&by_tend), perms_of(&by_s6), "{args:?}");
        // Each reads the other's settings.
        for dir in [&by_s6, &by_tend] {
            let e = svperms("s6-svperms", &[], &[dir]);
            let t = svperms("tend-svperms", &[], &[dir]);
            assert_eq!(svperms_neutral(&t), svperms_neutral(&e), "{args:?}");
            assert_code(&t, 0);
        }
    }
    let shown = svperms("tend-svperms", &[], &[&by_tend]);
    let d = by_tend.display();
    assert_eq!(
        text(&shown.stdout),
        format!("{d} status: owner\n{d} control: owner\n{d} events: public\n")
    );
}

#[test]
fn svperms_failures_as_s6_svperms() {
    require("s6-svperms");
    let s = Scratch::new("svperms-err");
    let missing = s.join("nonexistent");
    let broken = supervised_layout(&s, "broken");
    let nofifo = supervised_layout(&s, "nofifo");
    std::fs::remove_file(nofifo.join("supervise/control")).unwrap();
    std::fs::write(nofifo.join("supervise/control"), "").unwrap();
    let badctl = supervised_layout(&s, "badctl");
    std::fs::set_permissions(
        badctl.join("supervise/control"),
        std::fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    let good = supervised_layout(&s, "good");
    let setup_broken = || {
        std::fs::set_permissions(
            broken.join("supervise"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        std::fs::set_permissions(broken.join("event"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
    };
    setup_broken();
    for (args, dirs, code) in [
        (&[][..], vec![missing.as_path(), good.as_path()], 1),
        (&[], vec![broken.as_path()], 1),
        (&["-v"], vec![nofifo.as_path(), badctl.as_path()], 1),
        (&["-o"], vec![missing.as_path()], 111),
        (&["-E", "daemon"], vec![missing.as_path()], 111),
        (&["-g", "tend-no-such-group"], vec![good.as_path()], 100),
        (&["-g", ":x"], vec![good.as_path()], 100),
        (&["-g"], vec![good.as_path()], 100),
        (&[], vec![], 100),
    ] {
        let t = svperms("tend-svperms", args, &dirs);
        setup_broken();
        let e = svperms("s6-svperms", args, &dirs);
        setup_broken();
        assert_code(&t, code);
        assert_eq!(
            svperms_neutral(&t),
            svperms_neutral(&e),
            "{args:?} {dirs:?}"
        );
    }
}

/// A throwaway user in a throwaway group, both removed when dropped.
struct Account {
    user: String,
    group: String,
}

impl Account {
    fn new(tag: &str) -> Account {
        let a = Account {
            user: format!("tpu{}{tag}", std::process::id()),
            group: format!("tpg{}{tag}", std::process::id()),
        };
        // Retried: another test (or engineer) may hold the lock of /etc/passwd a moment.
        let ok = |args: &[&str]| {
            wait_until(PATIENCE, &format!("{args:?} to succeed"), || {
                let mut c = Command::new(args[0]);
                c.args(&args[1..])
                    .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
                run(c).status.success().then_some(())
            })
        };
        ok(&["groupadd", &a.group]);
        ok(&[
            "useradd",
            "-M",
            "-N",
            "-s",
            "/usr/sbin/nologin",
            "-G",
            &a.group,
            &a.user,
        ]);
        a
    }
}

impl Drop for Account {
    fn drop(&mut self) {
        let _ = Command::new("userdel").arg(&self.user).output();
        let _ = Command::new("groupdel").arg(&self.group).output();
    }
}

/// `prog args... dir` run as `user` (through tend-setuidgid, which takes the user's
/// groups from /etc/group).
fn as_user(user: &str, prog: &str, args: &[&str], dir: &Path) -> Output {
    let mut c = cmd("tend-setuidgid");
    c.arg(user).arg(prog).args(args).arg(dir);
    run(c)
}

#[track_caller]
fn denied(o: &Output, prog: &str, what: &str, dir: &Path) {
    assert_code(o, 111);
    assert_eq!(
        text(&o.stderr),
        format!(
            "{prog}: fatal: unable to {what} {}: Permission denied\n",
            dir.display()
        )
    );
}

/// The matrix of the issue for one supervisor and one family of clients.
fn who_may(cl: Clients, user: &str, group: &str, dir: &Path) {
    let set = |args: &[&str]| assert_code(&svperms("tend-svperms", args, &[dir]), 0);
    let pid = wait_status(dir, "up", is_up).pid;
    // The default: the owner only. The user's commands fail and change nothing.
    set(&["-u", "-E", "root"]);
    denied(&as_user(user, cl.svc, &["-d"], dir), cl.svc, "control", dir);
    denied(&as_user(user, cl.svstat, &[], dir), cl.svstat, "check", dir);
    denied(
        &as_user(user, cl.svwait, &["-u"], dir),
        cl.svwait,
        "subscribe to events for",
        dir,
    );
    let r = status(dir);
    assert!(is_up(&r) && r.pid == pid && r.want_up, "{r:?}");
    // -g: the group reads the status, and still may not control.
    set(&["-g", group]);
    let o = as_user(user, cl.svstat, &[], dir);
    assert_code(&o, 0);
    assert!(
        text(&o.stdout).starts_with(&format!("up (pid {pid}) ")),
        "{o:?}"
    );
    denied(&as_user(user, cl.svc, &["-d"], dir), cl.svc, "control", dir);
    denied(
        &as_user("nobody", cl.svstat, &[], dir),
        cl.svstat,
        "check",
        dir,
    );
    // -G: the group controls too.
    set(&["-G", group]);
    assert_code(&as_user(user, cl.svc, &["-d"], dir), 0);
    wait_status(dir, "down", |r| r.pid == 0 && !r.want_up);
    assert_code(&as_user(user, cl.svc, &["-u"], dir), 0);
    let pid = wait_status(dir, "up again", is_up).pid;
    denied(
        &as_user("nobody", cl.svc, &["-d"], dir),
        cl.svc,
        "control",
        dir,
    );
    // -o: everyone reads the status; control is the owner's again.
    set(&["-o"]);
    let o = as_user("nobody", cl.svstat, &[], dir);
    assert_code(&o, 0);
    assert!(
        text(&o.stdout).starts_with(&format!("up (pid {pid}) ")),
        "{o:?}"
    );
    denied(&as_user(user, cl.svc, &["-d"], dir), cl.svc, "control", dir);
    // -E / -e: who may subscribe to events.
    set(&["-E", group]);
    assert_code(&as_user(user, cl.svwait, &["-u"], dir), 0);
    denied(
        &as_user("nobody", cl.svwait, &["-u"], dir),
        cl.svwait,
        "subscribe to events for",
        dir,
    );
    set(&["-e"]);
    assert_code(&as_user("nobody", cl.svwait, &["-u"], dir), 0);
}

#[test]
fn svperms_decides_who_may_read_control_and_watch() {
    require("s6-supervise");
    require("s6-svc");
    require("s6-svperms");
    let s = Scratch::new("svperms-who");
    // The user must reach the service directories.
    std::fs::set_permissions(&s.path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let account = Account::new("w");
    for supervisor in ["tend-supervise", "s6-supervise"] {
        let dir = ServiceDir::new(s.join(format!("svc-{supervisor}")))
            .run("#!/bin/sh\nexec sleep 1000\n")
            .path();
        let sup = Supervised::start(supervisor, &dir);
        for cl in [TEND, S6] {
            who_may(cl, &account.user, &account.group, &dir);
        }
        // The supervisor keeps the permissions across its restarts.
        assert_code(
            &svperms("tend-svperms", &["-G", &account.group, "-e"], &[&dir]),
            0,
        );
        let before = perms_of(&dir);
        drop(sup);
        let _sup = Supervised::start(supervisor, &dir);
        wait_status(&dir, "up after the restart", is_up);
        assert_eq!(perms_of(&dir), before, "{supervisor} restarted");
        let o = svperms("s6-svperms", &[], &[&dir]);
        let d = dir.display();
        let g = &account.group;
        assert_eq!(
            text(&o.stdout),
            format!("{d} status: group {g}\n{d} control: group {g}\n{d} events: public\n")
        );
        assert_code(&as_user(&account.user, "tend-svc", &["-r"], &dir), 0);
    }
}

// ---------------------------------------------------------------- demo, README

/// Pids of processes whose command line or working directory is under `dir`.
fn processes_under(dir: &Path) -> Vec<i32> {
    let needle = dir.to_str().unwrap();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cwd = std::fs::read_link(e.path().join("cwd")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(needle) || cwd.starts_with(dir) {
            out.push(pid);
        }
    }
    out
}

/// Kills whatever still runs under a directory (only if a test failed half-way).
struct Leftovers<'a>(&'a Path);

impl Drop for Leftovers<'_> {
    fn drop(&mut self) {
        for pid in processes_under(self.0) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

#[test]
fn demo_shows_log_and_status_and_stops_on_sigint() {
    require("timeout");
    let s = Scratch::new("demo");
    let _leftovers = Leftovers(&s.path);
    let mut c = Command::new("timeout");
    c.args(["--preserve-status", "-s", "INT", "6", "sh"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo.sh"))
        .env("TMPDIR", &s.path)
        .env("TEND_BIN", bindir())
        .env("TEND_DEMO_EVERY", "1");
    let o = run(c);
    assert_code(&o, 0);
    let out = text(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("scan directory: "), "{out}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("status: tick: up (pid ")),
        "no status line: {out}"
    );
    // A log line of the service, its TAI64N label rendered as a local date.
    assert!(
        lines.iter().any(|l| {
            l.ends_with(" tick 0")
                && l.len() == "2026-11-30 10:47:54.192737822 tick 0".len()
                && l.as_bytes()[4] == b'-'
                && l.as_bytes()[19] == b'.'
        }),
        "no live log line: {out}"
    );
    assert!(lines.contains(&"stopping..."), "{out}");
    assert!(
        lines.last().unwrap().starts_with("stopped; logs kept in "),
        "{out}"
    );
    // Every daemon it started is gone, and the log is on disk.
    wait_until(PATIENCE, "the demo's processes to exit", || {
        processes_under(&s.path).is_empty().then_some(())
    });
    let work = std::fs::read_dir(&s.path)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("tend-demo."))
        .unwrap()
        .path();
    let current = std::fs::read_to_string(work.join("scan/tick/log/main/current")).unwrap();
    assert!(current.contains(" tick 0\n"), "{current}");
}

#[test]
fn readme_lists_every_s6_program_tend_lacks() {
    // Each program of Debian's s6 package has a tend-* counterpart or is listed in the
    // README's "not provided" section, and only then.
    require("dpkg");
    let o = run({
        let mut c = Command::new("dpkg");
        c.args(["-L", "s6"]);
        c
    });
    assert_code(&o, 0);
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let section = readme
        .split("### s6 programs tend does not provide (yet)")
        .nth(1)
        .expect("README section")
        .split("\n#")
        .next()
        .unwrap();
    let listed: Vec<&str> = section
        .split(|c: char| c.is_whitespace() || c == ',' || c == '(' || c == ')' || c == ';')
        .filter(|w| w.starts_with("s6") || *w == "ucspilogd")
        .collect();
    let mut programs: Vec<String> = text(&o.stdout)
        .lines()
        .filter(|l| l.starts_with("/usr/bin/"))
        .map(|l| l.rsplit('/').next().unwrap().to_string())
        .collect();
    programs.push("s6lockd-helper".into());
    assert!(programs.len() > 40, "{programs:?}");
    for p in &programs {
        // s6-svc → tend-svc, ucspilogd → tend-ucspilogd
        let ours = match p.strip_prefix("s6-") {
            Some(rest) => format!("tend-{rest}"),
            None => format!("tend-{p}"),
        };
        let provided = bin(&ours).exists();
        assert_eq!(
            listed.contains(&p.as_str()),
            !provided,
            "{p}: provided by tend: {provided}; listed in the README: {}",
            listed.contains(&p.as_str())
        );
    }
}
