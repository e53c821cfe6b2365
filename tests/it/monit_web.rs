//! tend-monit's web interface (`GET /`, the buttons that POST the actions) in Debian's
//! headless Chromium, driven over its DevTools pipe (tests/monit-files/chromium_press.py):
//! the page renders every service's state, a real click on a restart button restarts the
//! service, and the screenshot is kept (monit-web.png in Cargo's CARGO_TARGET_TMPDIR).

use crate::common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const PRESS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/monit-files/chromium_press.py"
);

/// The test daemon of tests/it/monit.rs: a start program that detaches a process which
/// writes its pid into the pidfile and sleeps.
const DAEMON: &str = r#"#!/bin/sh
# daemon PIDFILE LOG NAME
echo "start $3" >> "$2"
setsid sh -c 'echo $$ > "$1.tmp" && mv "$1.tmp" "$1" && exec sleep 100000' sh "$1" </dev/null >/dev/null 2>&1 &
"#;

fn check(root: &str, name: &str, extra: &str) -> String {
    format!(
        "check process {name} with pidfile {root}/run/{name}.pid\n  start program = \"{root}/bin/daemon {root}/run/{name}.pid {root}/log {name}\" with timeout 10 seconds\n  stop program = \"/bin/sh -c 'kill $(cat {root}/run/{name}.pid)'\"\n  group vcap\n{extra}"
    )
}

fn live_pid(root: &Path, name: &str) -> Option<i32> {
    let t = std::fs::read_to_string(root.join(format!("run/{name}.pid"))).ok()?;
    let pid: i32 = t.trim().parse().ok()?;
    (Path::new(&format!("/proc/{pid}")).exists() && proc_state(pid as u64) != 'Z').then_some(pid)
}

#[test]
fn monit_web_page_in_chromium_renders_states_and_restarts() {
    if !have("chromium") {
        skip(
            "monit_web_page_in_chromium_renders_states_and_restarts: chromium is not installed (apt-get install chromium)",
        );
        return;
    }
    require("python3");
    let s = Scratch::new("monit-web");
    let _kill = KillUnder(s.path.clone());
    let root = s.path.display().to_string();
    s.write("bin/daemon", DAEMON, true);
    std::fs::create_dir_all(s.join("run")).unwrap();
    let port = free_port();
    let rc = s.write(
        "monitrc",
        &format!(
            "set daemon 10\nset httpd port {port} and use address 127.0.0.1\n  allow admin:pw\n{}{}{}",
            check(&root, "db", ""),
            check(&root, "web", "  depends on db\n"),
            // Never started: the page must show a third, different state.
            check(&root, "worker", "  mode manual\n"),
        ),
        false,
    );
    std::fs::set_permissions(&rc, std::fs::Permissions::from_mode(0o600)).unwrap();
    let scan = s.join("scan");
    let monit = |args: &[&str]| {
        let mut c = cmd("tend-monit");
        c.current_dir(&s.path)
            .arg("-c")
            .arg(&rc)
            .arg("-S")
            .arg(&scan);
        c.args(args);
        run(c)
    };
    let mut c = cmd("tend-monit");
    c.current_dir(&s.path)
        .arg("-c")
        .arg(&rc)
        .arg("-S")
        .arg(&scan)
        .arg("-I");
    c.stderr(std::fs::File::create(s.join("tend-monit.log")).unwrap());
    let _daemon = Daemon::start(c);
    let state = |name: &str| {
        let head = format!("Process '{name}'");
        text(&monit(&["summary"]).stdout)
            .lines()
            .find(|l| l.starts_with(&head))
            .map(|l| l[36..].to_string())
    };
    for n in ["db", "web"] {
        wait_until(Duration::from_secs(30), &format!("{n} running"), || {
            (state(n).as_deref() == Some("running") && live_pid(&s.path, n).is_some()).then_some(())
        });
    }
    assert_eq!(state("worker").as_deref(), Some("not monitored"));
    let before = live_pid(&s.path, "web").unwrap();
    let db_before = live_pid(&s.path, "db").unwrap();
    wait_until(Duration::from_secs(10), "the HTTP server listening", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).ok()
    });

    let shot = s.join("monit-web.png");
    let mut c = Command::new("python3");
    c.arg(PRESS)
        .arg("chromium")
        .arg(s.join("chromium-profile"))
        .arg(format!("http://admin:pw@127.0.0.1:{port}/"))
        .arg(&shot)
        .arg("restart-web");
    let o = run(c);
    let log = std::fs::read_to_string(s.join("chromium-profile.log")).unwrap_or_default();
    assert!(o.status.success(), "{o:?}\nchromium's log:\n{log}");
    let out = text(&o.stdout);
    let rows: Vec<&str> = out.lines().collect();
    // Every service's state as the page rendered it, then the page the post answered.
    assert_eq!(
        rows,
        [
            "db running",
            "web running",
            "worker not monitored",
            "pressed tend-monit /web"
        ],
        "{out}"
    );

    // The screenshot: a PNG, kept past the run in the build's own directory (the
    // checkout has no target/ when CARGO_TARGET_DIR points elsewhere).
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    assert!(png.len() > 2000, "a blank screenshot: {} bytes", png.len());
    let kept = Path::new(env!("CARGO_TARGET_TMPDIR")).join("monit-web.png");
    std::fs::copy(&shot, &kept).unwrap();

    // The click restarted web: a new process, started again by its start program; db
    // (which web depends on, not the other way) untouched.
    let after = wait_until(Duration::from_secs(30), "web restarted", || {
        live_pid(&s.path, "web").filter(|&p| p != before)
    });
    assert!(!Path::new(&format!("/proc/{before}")).exists() || proc_state(before as u64) == 'Z');
    assert_ne!(after, before);
    let starts = lines(&s.join("log"));
    assert_eq!(
        starts.iter().filter(|l| *l == "start web").count(),
        2,
        "{starts:?}"
    );
    wait_until(Duration::from_secs(30), "web running again", || {
        (state("web").as_deref() == Some("running")).then_some(())
    });
    assert_eq!(live_pid(&s.path, "db"), Some(db_before));
}
