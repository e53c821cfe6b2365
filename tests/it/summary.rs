//! tend-summary on a mixed set of services (up, down, wanting up but failing, never
//! started, supervisor killed, s6-supervised), in all three formats; the Prometheus text
//! goes through the prometheus_client Python package's own parser.
//!
//! The unhealthy and permanently-failed states are tested with the watcher and the
//! restart policy in check.rs; "finishing" (a ./finish caught running) has its own test.

use crate::common::*;
use std::ffi::OsStr;
use std::process::Stdio;

fn line_of<'a>(table: &'a str, name: &str) -> &'a str {
    table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no line for {name}:\n{table}"))
}

/// Six services of every kind: up, down, wanting up but failing (sd/, under a tend-svscan
/// fleet), never supervised, a killed tend-supervise, and one under s6-supervise.
/// Fields drop in order: the s6-supervise, the fleet, then the scratch directory.
struct Mixed {
    _s6: Daemon,
    fleet: Fleet,
    dirs: Vec<String>,
    s: Scratch,
}

impl Mixed {
    fn start(name: &str) -> Mixed {
        require("s6-supervise");
        let s = Scratch::new(name);
        let fleet = Fleet::start(&s);
        s.write("sd/up/run", "#!/bin/sh\nexec sleep 1000\n", true);
        s.write("sd/down/run", "#!/bin/sh\nexec sleep 1000\n", true);
        s.write("sd/down/down", "", false);
        // Not executable: the supervisor wants it up and cannot start it.
        s.write("sd/failing/run", "#!/bin/sh\nexec sleep 1000\n", false);
        s.write("never/run", "#!/bin/sh\nexec sleep 1000\n", true);
        s.write("killed/run", "#!/bin/sh\nexec sleep 1000\n", true);
        s.write("s6svc/run", "#!/bin/sh\nexec sleep 1000\n", true);
        fleet.rescan();
        for n in ["up", "down", "failing"] {
            fleet.wait_supervised(n);
        }
        wait_until(FLEET_PATIENCE, "up to be up", || {
            fleet.status("up").filter(|s| s.is_up())
        });
        // A tend-supervise killed with SIGKILL (its service goes too).
        let mut killed = Daemon::start({
            let mut c = cmd("tend-supervise");
            c.arg(s.join("killed"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            c
        });
        let kpid = wait_until(FLEET_PATIENCE, "killed/ up", || {
            tend_proto::StatusRecord::read(&s.join("killed"))
                .ok()
                .filter(|r| r.is_up())
        })
        .pid;
        killed.signal(nix::sys::signal::Signal::SIGKILL);
        killed.wait_exit(FLEET_PATIENCE).unwrap();
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(kpid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        let s6 = Daemon::start({
            let mut c = cmd("s6-supervise");
            c.arg(s.join("s6svc"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            c
        });
        wait_until(FLEET_PATIENCE, "s6svc up", || {
            tend_proto::StatusRecord::read(&s.join("s6svc"))
                .ok()
                .filter(|r| r.is_up())
        });
        let dirs: Vec<String> = ["sd/up", "sd/down", "sd/failing", "never", "killed", "s6svc"]
            .iter()
            .map(|d| s.join(d).to_str().unwrap().to_string())
            .collect();
        Mixed {
            s,
            fleet,
            dirs,
            _s6: s6,
        }
    }

    fn summary(&self, flag: Option<&str>) -> std::process::Output {
        let mut c = cmd("tend-summary");
        c.args(flag).args(&self.dirs);
        run(c)
    }
}

#[test]
fn summary_table_for_every_kind_of_service() {
    let m = Mixed::start("summary-table");
    let fleet = &m.fleet;
    let o = m.summary(None);
    assert_code(&o, 1);
    let t = text(&o.stdout);
    assert!(t.starts_with("Service "), "{t}");
    let cols = |name: &str| -> Vec<String> {
        line_of(&t, name)
            .split_whitespace()
            .map(String::from)
            .collect()
    };
    let up = cols("up");
    assert_eq!(up[1], "up");
    assert_eq!(up[2], fleet.status("up").unwrap().pid.to_string());
    assert_eq!(cols("down")[1..3], ["down", "-"]);
    assert_eq!(cols("failing")[1], "down");
    assert!(
        line_of(&t, "never").contains("supervisor not running"),
        "{t}"
    );
    assert!(
        line_of(&t, "killed").contains("supervisor not running"),
        "{t}"
    );
    assert_eq!(cols("s6svc")[1], "up");
    // Header and rows aligned: every row's second column starts where "State" does.
    let at = t.lines().next().unwrap().find("State").unwrap();
    for l in t.lines().skip(1) {
        assert_eq!(&l[at - 2..at], "  ", "{t}");
        assert_ne!(&l[at..at + 1], " ", "{t}");
    }
}

#[test]
fn summary_json_for_every_kind_of_service() {
    let m = Mixed::start("summary-json");
    let o = m.summary(Some("-j"));
    assert_code(&o, 1);
    let j = text(&o.stdout);
    for (name, state, ok) in [
        ("up", "up", true),
        ("down", "down", true),
        ("failing", "down", false),
        ("never", "supervisor not running", false),
        ("killed", "supervisor not running", false),
        ("s6svc", "up", true),
    ] {
        let want = format!("{{\"service\":\"{name}\",\"state\":\"{state}\",\"ok\":{ok},");
        assert!(j.contains(&want), "{want}\n{j}");
    }
    assert!(j.starts_with("[\n{") && j.ends_with("}\n]\n"), "{j}");
}

#[test]
fn summary_prometheus_for_every_kind_of_service() {
    let m = Mixed::start("summary-prom");
    let o = m.summary(Some("-p"));
    assert_code(&o, 1);
    let p = text(&o.stdout);
    for l in [
        "tend_service_up{service=\"up\"} 1\n",
        "tend_service_up{service=\"failing\"} 0\n",
        "tend_service_wanted_up{service=\"failing\"} 1\n",
        "tend_service_supervised{service=\"never\"} 0\n",
        "tend_service_ok{service=\"down\"} 1\n",
        "tend_service_state{service=\"killed\",state=\"not_supervised\"} 1\n",
    ] {
        assert!(p.contains(l), "{l}{p}");
    }
    prometheus_parses(&p);
}

#[test]
fn summary_exits_0_when_all_are_healthy() {
    let m = Mixed::start("summary-exit");
    let (s, fleet) = (&m.s, &m.fleet);
    // Only the healthy ones: exit 0. The scan dir itself as the operand.
    let o = tend("tend-summary", [s.join("sd/up"), s.join("sd/down")]);
    assert_code(&o, 0);
    std::fs::remove_dir_all(s.join("sd/failing")).unwrap();
    let o = tend("tend-summary", [&fleet.dir]);
    let t = text(&o.stdout);
    assert_eq!(t.lines().count(), 3, "{t}");
    assert_code(&o, 0);
    let o = run({
        let mut c = cmd("tend-summary");
        c.env("TEND_SCANDIR", &fleet.dir);
        c
    });
    assert_code(&o, 0);
    assert_eq!(text(&o.stdout), t);
}

/// A service whose ./finish is running is "finishing" in every format, and not ok while
/// its supervisor still wants it up.
#[test]
fn summary_shows_a_service_caught_finishing() {
    let s = Scratch::new("summary-finishing");
    let fleet = Fleet::start(&s);
    s.write("sd/fin/run", "#!/bin/sh\nexec sleep 1000\n", true);
    s.write("sd/fin/finish", "#!/bin/sh\nexec sleep 30\n", true);
    s.write("sd/fin/timeout-finish", "60000\n", false);
    fleet.rescan();
    fleet.wait_supervised("fin");
    wait_until(FLEET_PATIENCE, "fin up", || {
        fleet.status("fin").filter(|r| r.is_up())
    });
    // -k: the service dies, ./finish runs (30 s), the supervisor still wants it up.
    assert_code(
        &tend("tend-svc", [OsStr::new("-k"), fleet.svc("fin").as_os_str()]),
        0,
    );
    wait_until(FLEET_PATIENCE, "fin finishing", || {
        fleet.status("fin").filter(|r| r.finishing)
    });
    let dir = fleet.svc("fin");
    let o = tend("tend-summary", [&dir]);
    assert_code(&o, 1);
    let t = text(&o.stdout);
    assert_eq!(
        line_of(&t, "fin").split_whitespace().nth(1),
        Some("finishing"),
        "{t}"
    );
    let o = tend("tend-summary", [OsStr::new("-j"), dir.as_os_str()]);
    assert!(
        text(&o.stdout).contains("{\"service\":\"fin\",\"state\":\"finishing\",\"ok\":false,"),
        "{}",
        text(&o.stdout)
    );
    let o = tend("tend-summary", [OsStr::new("-p"), dir.as_os_str()]);
    let p = text(&o.stdout);
    assert!(
        p.contains("tend_service_state{service=\"fin\",state=\"finishing\"} 1\n"),
        "{p}"
    );
    prometheus_parses(&p);
}

#[test]
fn summary_bad_usage_and_missing_dir() {
    let o = tend("tend-summary", ["-j", "-p", "x"]);
    assert_code(&o, 100);
    let o = run({
        let mut c = cmd("tend-summary");
        c.env_remove("TEND_SCANDIR");
        c
    });
    assert_code(&o, 100);
    let o = tend("tend-summary", ["/nonexistent/scan"]);
    assert_code(&o, 111);
    assert_eq!(
        text(&o.stderr),
        "tend-summary: fatal: unable to list /nonexistent/scan: No such file or directory\n"
    );
    // A name longer than any format width (the fuzz found a panic there): a row, no panic.
    let long = "n".repeat(70_000);
    let o = tend("tend-summary", [long.as_str(), "/nonexistent/other"]);
    assert_code(&o, 1);
    let t = text(&o.stdout);
    assert_eq!(t.lines().count(), 3, "{}", text(&o.stderr));
    // Its lock cannot be checked: an error row naming why (issue 23), not "not running".
    let row = line_of(&t, &long);
    assert!(row.contains(" error "), "{t}");
    assert!(row.ends_with(" supervise/lock: File name too long"), "{t}");
}
