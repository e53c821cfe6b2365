//! tend-check (probes, readiness, liveness), tend-notify for the daemon's whole life
//! (STATUS, WATCHDOG, the notification fd checked first), through real servers and a
//! real tend-svscan tree.
//!
//! Not tested here: DNS over the network (the resolver's codec has unit tests; the
//! tests resolve `localhost` through /etc/hosts), tend-check without pidfd support.

use crate::common::*;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const T: Duration = Duration::from_secs(20);

fn stderr_is(o: &Output, line: &str) {
    assert_eq!(
        text(&o.stderr),
        format!("{line}\n"),
        "stdout: {}",
        text(&o.stdout)
    );
}

fn probe(args: &[&str]) -> Output {
    tend("tend-check", args)
}

/// A raw TCP server on a thread: accepts connections and does `what` with each.
fn raw_server(what: &'static str) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in l.incoming() {
            let Ok(mut c) = c else { return };
            let mut buf = [0u8; 1024];
            match what {
                "hang" => held.push(c),
                "close" => {
                    // Read the request first, so the close is a FIN, not a reset.
                    let _ = c.read(&mut buf);
                    drop(c)
                }
                _ => {
                    let _ = c.read(&mut buf);
                    let _ = c.write_all(what.as_bytes());
                }
            }
        }
    });
    port
}

// ---------------------------------------------------------------- probes

#[test]
fn probe_failures_have_reasons_and_never_hang() {
    let closed = free_port();
    let o = probe(&["-p", &format!("127.0.0.1:{closed}")]);
    assert_code(&o, 1);
    stderr_is(
        &o,
        &format!(
            "tend-check: fatal: probe failed: connect to 127.0.0.1:{closed}: Connection refused"
        ),
    );
    // Accepts and never answers: the attempt's timeout, not a hang.
    let hang = raw_server("hang");
    let start = Instant::now();
    let o = probe(&["-t", "300", "-u", &format!("http://127.0.0.1:{hang}/")]);
    assert_code(&o, 1);
    stderr_is(
        &o,
        "tend-check: fatal: probe failed: no complete answer within 300 ms",
    );
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    let garbage = raw_server("SSH-2.0-OpenSSH\r\n\r\n");
    let o = probe(&["-u", &format!("http://127.0.0.1:{garbage}/")]);
    assert_code(&o, 1);
    stderr_is(
        &o,
        "tend-check: fatal: probe failed: malformed status line \"SSH-2.0-OpenSSH\"",
    );
    let close = raw_server("close");
    let o = probe(&["-u", &format!("http://127.0.0.1:{close}/")]);
    assert_code(&o, 1);
    stderr_is(
        &o,
        "tend-check: fatal: probe failed: connection closed without an answer",
    );
    let redirect = raw_server("HTTP/1.1 301 Moved\r\nLocation: /x\r\nContent-Length: 0\r\n\r\n");
    let url = format!("http://localhost:{redirect}/");
    let o = probe(&["-u", &url]);
    assert_code(&o, 1);
    stderr_is(
        &o,
        "tend-check: fatal: probe failed: redirect status 301 not in 200-299",
    );
    // Allowed by --status, and the long option with '=' works too.
    assert_code(&probe(&["--http", &url, "--status=200-399"]), 0);
    // The TCP probe by name through /etc/hosts, and an IPv6 literal.
    assert_code(&probe(&["--tcp", &format!("localhost:{redirect}")]), 0);
    let v6 = TcpListener::bind("[::1]:0");
    if let Ok(v6) = v6 {
        let port = v6.local_addr().unwrap().port();
        assert_code(&probe(&["-p", &format!("[::1]:{port}")]), 0);
        assert_code(
            &probe(&["-u", &format!("http://[::1]:{port}/"), "-t", "300"]),
            1,
        );
    }
    // An exec probe that hangs is killed with its process group.
    let s = Scratch::new("check-exec");
    let start = Instant::now();
    let mut c = cmd("tend-check");
    c.current_dir(&s.path)
        .args(["-t", "300", "-c", "sleep 30 & echo $! > bg; wait"]);
    let o = run(c);
    assert_code(&o, 1);
    stderr_is(
        &o,
        "tend-check: fatal: probe failed: command timed out after 300 ms",
    );
    assert!(start.elapsed() < Duration::from_secs(5));
    let bg: i32 = std::fs::read_to_string(s.join("bg"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    wait_until(T, "the probe's background child to be killed", || {
        (!Path::new(&format!("/proc/{bg}")).exists()
            || std::fs::read_to_string(format!("/proc/{bg}/stat"))
                .is_ok_and(|st| st.contains(") Z")))
        .then_some(())
    });
    let o = probe(&["-c", "exit 3"]);
    assert_code(&o, 1);
    stderr_is(&o, "tend-check: fatal: probe failed: command exited 3");
    assert_code(&probe(&["-c", "true"]), 0);
}

#[test]
fn probe_answers_through_a_real_http_server() {
    require("python3");
    let s = Scratch::new("check-http");
    s.write("server.py", SERVER, false);
    let port = free_port();
    let _server = Daemon::start({
        let mut c = Command::new("python3");
        c.current_dir(&s.path)
            .args(["server.py", &port.to_string()]);
        c
    });
    wait_until(T, "the server", || s.join("bound").exists().then_some(()));
    let url = format!("http://127.0.0.1:{port}/health");
    assert_code(&probe(&["-u", &url, "-b", "ok", "-h", "Host: web"]), 0);
    let o = probe(&["-u", &url, "-b", "nope"]);
    assert_code(&o, 1);
    stderr_is(&o, "tend-check: fatal: probe failed: body lacks \"nope\"");
    std::fs::write(s.join("code"), "500").unwrap();
    let o = probe(&["-u", &url]);
    assert_code(&o, 1);
    stderr_is(
        &o,
        "tend-check: fatal: probe failed: status 500 not in 200-299",
    );
    assert_code(&probe(&["-u", &url, "-C", "500"]), 0);
}

#[test]
fn check_bad_options() {
    let usage = |o: &Output| {
        assert_code(o, 100);
        assert!(
            text(&o.stderr).starts_with("tend-check: usage: tend-check "),
            "{}",
            text(&o.stderr)
        );
    };
    for args in [
        &["--nope", "x"][..],
        &["-c", "true", "-p", "h:1"],
        &["-b", "x", "-p", "h:1"],
        &["-t", "1x", "-c", "true"],
        &["-L", "-c", "true"],
        &["-L", "-S", "x", "-c", "true", "prog"],
        &["-S", "x", "-c", "true", "prog"],
        &["-n", "-1", "-c", "true", "prog"],
        &["--interval"],
        &["-L", "-S", ".", "--interval", "0", "-c", "true"],
    ] {
        usage(&probe(args));
    }
    let o = probe(&["-L", "-S", "/nonexistent/svc", "-c", "true"]);
    assert_code(&o, 111);
    stderr_is(
        &o,
        "tend-check: fatal: unable to access /nonexistent/svc: No such file or directory",
    );
    for (args, line) in [
        (
            &["-u", "https://x/"][..],
            "tend-check: fatal: invalid http:// URL: https://x/",
        ),
        (
            &["-u", "http://h:99999/"],
            "tend-check: fatal: invalid port: http://h:99999/",
        ),
        (
            &["-p", "nocolon"],
            "tend-check: fatal: invalid host:port: nocolon",
        ),
        (
            &["-u", "http://h/", "-C", "200-1"],
            "tend-check: fatal: invalid status range: 200-1",
        ),
        (
            &["-u", "http://h/", "-h", "Bad Header"],
            "tend-check: fatal: invalid header: Bad Header",
        ),
    ] {
        let o = probe(args);
        assert_code(&o, 100);
        stderr_is(&o, line);
    }
}

// ---------------------------------------------------------------- readiness

/// A service whose daemon binds only after a delay; its run script wraps it in
/// tend-check with `probe`. svwait -u returns before the endpoint answers, -U after.
fn readiness_case(name: &str, probe: &str) {
    require("python3");
    let s = Scratch::new(&format!("check-ready-{name}"));
    let fleet = Fleet::start(&s);
    let port = free_port();
    let probe = probe.replace("PORT", &port.to_string());
    s.write("sd/web/server.py", SERVER, false);
    s.write("sd/web/notification-fd", "3\n", false);
    s.write(
        "sd/web/run",
        &format!("#!/bin/sh\nexec tend-check -n 0 -w 50 {probe} -- python3 server.py {port} 1.5\n"),
        true,
    );
    let svc = fleet.svc("web");
    fleet.rescan();
    fleet.wait_supervised("web");
    let o = tend("tend-svwait", ["-u", "-t", "20000", svc.to_str().unwrap()]);
    assert_code(&o, 0);
    assert!(
        !svc.join("bound").exists(),
        "{name}: up only after the bind?"
    );
    let o = tend("tend-svwait", ["-U", "-t", "20000", svc.to_str().unwrap()]);
    assert_code(&o, 0);
    assert!(
        svc.join("bound").exists(),
        "{name}: ready before the endpoint answered"
    );
    // The supervised pid is the daemon's (tend-check exec'd into it).
    let st = fleet.status("web").unwrap();
    let comm = std::fs::read_to_string(format!("/proc/{}/cmdline", st.pid)).unwrap();
    assert!(
        comm.contains("python3") && comm.contains("\0server.py\0"),
        "{comm:?}"
    );
}

#[test]
fn readiness_over_http() {
    readiness_case("http", "-u http://127.0.0.1:PORT/ -b ok");
}

#[test]
fn readiness_over_tcp() {
    readiness_case("tcp", "-d -p 127.0.0.1:PORT");
}

#[test]
fn readiness_over_exec() {
    readiness_case("exec", "-c 'test -e bound'");
}

#[test]
fn readiness_notification_fd_must_be_open() {
    let o = run({
        let mut c = Command::new("sh");
        c.env("PATH", path_env())
            .arg("-c")
            .arg("exec 3>&-; exec tend-check -3 3 -c true -- echo EXECUTED");
        c
    });
    assert_code(&o, 111);
    stderr_is(
        &o,
        "tend-check: fatal: unable to use the notification fd: Bad file number",
    );
    assert!(o.stdout.is_empty());
}

// ---------------------------------------------------------------- tend-notify

/// `tend-notify ARGS prog` in a shell where `setup` arranged the fds first; prog
/// appends EXECUTED to the returned file (the notification fd, whichever it is, is closed
/// in the daemon).
fn notify_with(setup: &str, args: &str) -> (Output, String) {
    let s = Scratch::new("notify-fd");
    let out = s.join("out");
    let o = run({
        let mut c = Command::new("sh");
        c.env("PATH", path_env())
            .env("OUT", &out)
            .arg("-c")
            .arg(format!(
                "{setup}; exec tend-notify {args} sh -c 'echo EXECUTED >> \"$OUT\"'"
            ));
        c
    });
    (o, std::fs::read_to_string(&out).unwrap_or_default())
}

#[test]
fn notify_checks_the_fd_before_creating_its_socket() {
    let refused = "tend-notify: fatal: unable to use the notification fd: Bad file number";
    // fd 3 closed and the lowest free one: the socket would take it (issue 17.2).
    for (setup, args) in [
        ("exec 3>&-", "-d 3"),
        ("exec 3>&- 4>&-", "-d 4"),
        ("exec 3>/dev/null 4>&- 5>&-", "-d 5"),
        ("exec 9>&-", "-d 9"),
        ("true", "-d 2147483647"),
    ] {
        let (o, out) = notify_with(setup, args);
        assert_code(&o, 111);
        stderr_is(&o, refused);
        assert_eq!(out, "", "{setup} {args}: exec'd anyway");
    }
    // The same through ./notification-fd.
    let s = Scratch::new("notify-fdfile");
    s.write("notification-fd", "3\n", false);
    let o = run({
        let mut c = Command::new("sh");
        c.current_dir(&s.path)
            .env("PATH", path_env())
            .arg("-c")
            .arg("exec 3>&-; exec tend-notify echo EXECUTED");
        c
    });
    assert_code(&o, 111);
    stderr_is(&o, refused);
    // Open fds are accepted, whatever their number: 0, 1 and 2 included.
    for (setup, args) in [
        ("exec 3>/dev/null", "-d 3"),
        ("exec 7>/dev/null", "-d 7"),
        ("true", "-d 0"),
        ("true", "-d 1"),
        ("true", "-d 2"),
    ] {
        let (o, out) = notify_with(setup, args);
        assert_code(&o, 0);
        assert_eq!(out, "EXECUTED\n", "{setup} {args}");
    }
    // Beyond a C int: usage.
    for args in ["-d 2147483648", "-w 1x -d 1", "-w 0", "-d -1"] {
        let (o, out) = notify_with("true", args);
        assert_code(&o, 100);
        assert_eq!(out, "");
    }
}

/// A systemd-style daemon: READY=1, then STATUS= and WATCHDOG=1 every 200 ms with a
/// plain sendto (an error kills it); pings stop once `./stop-pings` exists. It records
/// its WATCHDOG_USEC and WATCHDOG_PID in `./watchdog-env`.
const SD_DAEMON: &str = r#"
import os, socket, time
addr = os.environ["NOTIFY_SOCKET"]
if addr.startswith("@"):
    addr = "\0" + addr[1:]
with open("watchdog-env", "w") as f:
    f.write("%s %s %d\n" % (os.environ.get("WATCHDOG_USEC"), os.environ.get("WATCHDOG_PID"), os.getpid()))
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.sendto(b"READY=1\nSTATUS=starting", addr)
n = 0
while True:
    n += 1
    s.sendto(b"STATUS=serving request %d" % n, addr)
    if not os.path.exists("stop-pings"):
        s.sendto(b"WATCHDOG=1", addr)
    s.sendto(b"STOPPING=0\nX_UNKNOWN=1", addr)
    time.sleep(0.2)
"#;

#[test]
fn notify_lives_as_long_as_the_daemon_with_status_and_watchdog() {
    require("python3");
    let s = Scratch::new("notify-life");
    let fleet = Fleet::start(&s);
    s.write("sd/sd/daemon.py", SD_DAEMON, false);
    s.write("sd/sd/notification-fd", "3\n", false);
    s.write(
        "sd/sd/run",
        "#!/bin/sh\nexec tend-notify -w 1s python3 daemon.py\n",
        true,
    );
    fleet.rescan();
    fleet.wait_supervised("sd");
    let svc = fleet.svc("sd");
    assert_code(
        &tend("tend-svwait", ["-U", "-t", "20000", svc.to_str().unwrap()]),
        0,
    );
    let first = fleet.status("sd").unwrap().pid;
    // WATCHDOG_USEC and WATCHDOG_PID as systemd sets them: the pid is the daemon's.
    let env = wait_until(T, "watchdog-env", || {
        std::fs::read_to_string(svc.join("watchdog-env"))
            .ok()
            .filter(|s| s.ends_with('\n'))
    });
    assert_eq!(env, format!("1000000 {first} {first}\n"));
    // Past READY the daemon keeps sending (a refused sendto would kill it): it stays up
    // through several watchdog periods, and its STATUS text shows in tend-summary.
    stays_for(
        Duration::from_millis(2500),
        "the daemon up while it pings",
        || fleet.status("sd").is_some_and(|st| st.pid == first),
    );
    let o = fleet.summary(&[]);
    assert_code(&o, 0);
    let table = text(&o.stdout);
    let line = table.lines().find(|l| l.starts_with("sd ")).unwrap();
    assert!(
        line.contains("ready") && line.contains("serving request"),
        "{table}"
    );
    let j = text(&fleet.summary(&["-j"]).stdout);
    assert!(j.contains("\"status\":\"serving request"), "{j}");
    let j = text(&tend("tend-svstat", ["-j", svc.to_str().unwrap()]).stdout);
    assert!(j.contains(",\"notify_status\":\"serving request "), "{j}");
    // Pings stop: SIGABRT after 1 s, the supervisor restarts it, the reason is recorded.
    std::fs::write(svc.join("stop-pings"), "").unwrap();
    let new = wait_until(T, "a restart after the watchdog fired", || {
        fleet.status("sd").filter(|s| s.pid != 0 && s.pid != first)
    });
    let _ = new;
    let wd = std::fs::read_to_string(svc.join("supervise/tend-watchdog")).unwrap();
    assert!(
        wd.contains(&format!("pid={first}\n"))
            && wd.contains("reason=no WATCHDOG=1 for 1000 ms: killed with SIGABRT\n"),
        "{wd}"
    );
    let tally = std::fs::read(svc.join("supervise/death_tally")).unwrap();
    assert_eq!(tally.last(), Some(&6u8), "the daemon died of SIGABRT");
    let o = fleet.summary(&["-j"]);
    assert!(
        text(&o.stdout).contains("\"watchdog\":\"no WATCHDOG=1 for 1000 ms"),
        "{}",
        text(&o.stdout)
    );
    // Down: no tend-notify listener outlives the daemon.
    std::fs::remove_file(svc.join("stop-pings")).unwrap();
    assert_code(&tend("tend-svc", ["-d", svc.to_str().unwrap()]), 0);
    assert_code(
        &tend("tend-svwait", ["-D", "-t", "20000", svc.to_str().unwrap()]),
        0,
    );
    wait_until(T, "tend-notify and the daemon to leave", || {
        procs_under(&svc)
            .iter()
            .all(|pid| {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                let c = text(&cmdline);
                !c.contains("tend-notify") && !c.contains("daemon.py")
            })
            .then_some(())
    });
}

// ---------------------------------------------------------------- liveness

#[test]
fn liveness_restarts_then_gives_up_and_reports_unhealthy() {
    require("python3");
    let s = Scratch::new("check-live");
    let fleet = Fleet::start(&s);
    let port = free_port();
    s.write("sd/web/server.py", SERVER, false);
    // Readiness through tend-check too: the watcher judges the service once it is ready.
    s.write("sd/web/notification-fd", "3\n", false);
    s.write(
        "sd/web/run",
        &format!(
            "#!/bin/sh\nexec tend-check -n 0 -w 20 -p 127.0.0.1:{port} -- python3 server.py {port}\n"
        ),
        true,
    );
    let web = fleet.svc("web");
    s.write(
        "sd/web-check/run",
        &format!(
            "#!/bin/sh\nexec tend-check -L --http http://127.0.0.1:{port}/ -S ../web \
             --interval 100ms --failures 2 --max-restarts 2 --window 1h -t 500\n"
        ),
        true,
    );
    fleet.rescan();
    fleet.wait_supervised("web");
    let state = |k: &str| -> Option<String> {
        let d = std::fs::read(web.join("supervise/tend-check")).ok()?;
        tend_proto::health::get(&d, k).map(text)
    };
    wait_until(T, "healthy", || {
        (state("health")? == "healthy").then_some(())
    });
    let first = fleet.status("web").unwrap().pid;
    // Answers flip to 500: two failures → restart, twice; then no more restarts.
    std::fs::write(web.join("code"), "500").unwrap();
    wait_until(T, "unhealthy", || {
        (state("health")? == "unhealthy").then_some(())
    });
    assert_eq!(state("restarts").as_deref(), Some("2"));
    assert_eq!(
        state("reason").as_deref(),
        Some("status 500 not in 200-299")
    );
    let pid = fleet.status("web").unwrap().pid;
    assert_ne!(pid, first, "never restarted");
    let deaths = std::fs::metadata(web.join("supervise/death_tally"))
        .unwrap()
        .len()
        / 14;
    assert_eq!(deaths, 2);
    // It stays up, and is left alone.
    stays_for(
        Duration::from_millis(800),
        "up and not restarted after max-restarts",
        || {
            fleet
                .status("web")
                .is_some_and(|st| st.is_up() && st.pid == pid)
        },
    );
    let o = fleet.summary(&[]);
    assert_code(&o, 1);
    let t = text(&o.stdout);
    let line = t.lines().find(|l| l.starts_with("web ")).unwrap();
    assert!(
        line.contains(" unhealthy ") && line.contains("status 500"),
        "{t}"
    );
    let o = fleet.summary(&["-j"]);
    assert_code(&o, 1);
    let j = text(&o.stdout);
    assert!(
        j.contains("\"service\":\"web\",\"state\":\"unhealthy\",\"ok\":false"),
        "{j}"
    );
    let o = fleet.summary(&["-p"]);
    assert_code(&o, 1);
    let p = text(&o.stdout);
    assert!(
        p.contains("tend_service_state{service=\"web\",state=\"unhealthy\"} 1\n"),
        "{p}"
    );
    assert!(
        p.contains("tend_service_healthy{service=\"web\"} 0\n"),
        "{p}"
    );
    prometheus_parses(&p);
    // Back to 200: healthy, exit 0.
    std::fs::write(web.join("code"), "200").unwrap();
    wait_until(T, "healthy again", || {
        (state("health")? == "healthy").then_some(())
    });
    let o = fleet.summary(&[]);
    assert_code(&o, 0);
    let t = text(&o.stdout);
    let line = t.lines().find(|l| l.starts_with("web ")).unwrap();
    assert!(line.contains(" ready ") && line.contains(" healthy"), "{t}");
}

// ---------------------------------------------------------------- -s SCANDIR

#[test]
fn clients_name_services_in_a_scan_directory() {
    let s = Scratch::new("check-scandir");
    let fleet = Fleet::start(&s);
    s.write("sd/named/run", "#!/bin/sh\nexec sleep 1000\n", true);
    fleet.rescan();
    fleet.wait_supervised("named");
    let sd = fleet.dir.to_str().unwrap();
    assert_code(
        &tend("tend-svwait", ["-s", sd, "-u", "-t", "20000", "named"]),
        0,
    );
    assert_code(&tend("tend-svc", ["-s", sd, "-d", "named"]), 0);
    assert_code(
        &tend("tend-svwait", ["-t", "20000", "-D", "-s", sd, "named"]),
        0,
    );
    let o = tend("tend-svstat", ["-S", sd, "-o", "up,wantedup", "named"]);
    assert_code(&o, 0);
    assert_eq!(text(&o.stdout), "false false\n");
    // TEND_SCANDIR is the default; a name with a slash is a path as given.
    let with_env = |prog: &str, args: &[&str]| {
        let mut c = cmd(prog);
        c.env("TEND_SCANDIR", sd).current_dir(&s.path).args(args);
        run(c)
    };
    assert_code(&with_env("tend-svc", &["-u", "named"]), 0);
    assert_code(&with_env("tend-svwait", &["-u", "-t", "20000", "named"]), 0);
    let o = with_env("tend-svstat", &["-o", "up", "named"]);
    assert_eq!(text(&o.stdout), "true\n");
    let o = with_env("tend-svstat", &["-o", "up", "./named"]);
    assert_code(&o, 1);
    assert_eq!(
        text(&o.stderr),
        "tend-svstat: fatal: unable to read status for ./named: s6-supervise not running\n"
    );
    let o = with_env("tend-svc", &["-s", "/nonexistent", "-u", "named"]);
    assert_code(&o, 111);
    assert_eq!(
        text(&o.stderr),
        "tend-svc: fatal: unable to control /nonexistent/named: No such file or directory\n"
    );
}

// ---------------------------------------------------------------- restart-policy

/// Death stamps (TAI64N seconds + nanos as ms) from supervise/death_tally.
fn death_times_ms(svc: &Path) -> Vec<u64> {
    let d = std::fs::read(svc.join("supervise/death_tally")).unwrap_or_default();
    d.chunks_exact(14)
        .map(|r| {
            let mut t = [0u8; 12];
            t.copy_from_slice(&r[..12]);
            let t = tend_proto::Tai64n::decode(&t);
            let (secs, nanos) = t.to_unix();
            secs as u64 * 1000 + u64::from(nanos / 1_000_000)
        })
        .collect()
}

#[test]
fn restart_policy_stops_after_n_quick_deaths() {
    let s = Scratch::new("policy-stop");
    s.write("sd/crashy/run", "#!/bin/sh\nexit 3\n", true);
    s.write(
        "sd/crashy/restart-policy",
        "# three quick deaths and it stays down\ndeaths=3\nseconds=60\non=3,SIGSEGV\nthen=stop\n",
        false,
    );
    // Subscribed before the supervisor starts, to see the O (permanent failure) event.
    let svc = s.join("sd/crashy");
    tend_proto::fifodir::make_fifodir(&svc.join("event"), nix::unistd::getegid()).unwrap();
    let sub = tend_proto::fifodir::Subscription::new(&svc.join("event")).unwrap();
    let fleet = Fleet::start(&s);
    let mut events = String::new();
    wait_until(T, "the O event", || {
        let mut buf = [0u8; 64];
        if let Ok(n) = sub.read(&mut buf) {
            events.push_str(&text(&buf[..n]));
        }
        events.contains('O').then_some(())
    });
    // Three deaths (d D each), the third one permanent (O before its D).
    assert_eq!(events.matches('d').count(), 3, "{events}");
    assert!(events.ends_with("dOD"), "{events}");
    assert!(!fleet.status("crashy").unwrap().want_up);
    assert_eq!(death_times_ms(&svc).len(), 3);
    stays_for(
        Duration::from_millis(1500),
        "not restarted after a permanent failure",
        || death_times_ms(&svc).len() == 3,
    );
    let line = "3 deaths within 60 s (last: exit 3): permanent failure";
    let o = tend("tend-svstat", [svc.to_str().unwrap()]);
    assert!(
        text(&o.stdout).ends_with(&format!(", restart-policy: {line}\n")),
        "{}",
        text(&o.stdout)
    );
    let o = fleet.summary(&[]);
    assert_code(&o, 1);
    let t = text(&o.stdout);
    let row = t.lines().find(|l| l.starts_with("crashy ")).unwrap();
    assert!(
        row.contains(" permanently failed ") && row.ends_with(line),
        "{t}"
    );
    let o = fleet.summary(&["-p"]);
    assert!(
        text(&o.stdout)
            .contains("tend_service_state{service=\"crashy\",state=\"permanently_failed\"} 1\n")
    );
    let o = fleet.summary(&["-j"]);
    assert!(text(&o.stdout).contains("\"state\":\"permanently failed\",\"ok\":false"));
    let scan = fleet.scanner_stderr();
    assert!(scan.contains(&format!("restart-policy: {line}")), "{scan}");
}

#[test]
fn restart_policy_slows_restarts_down() {
    let s = Scratch::new("policy-slow");
    let fleet = Fleet::start(&s);
    s.write("sd/crashy/run", "#!/bin/sh\nexit 1\n", true);
    s.write(
        "sd/crashy/restart-policy",
        "deaths=2\nseconds=60\nthen=slow:3s\n",
        false,
    );
    // Exit 1 is counted; a policy for other codes only would leave the pace alone.
    fleet.rescan();
    let svc = fleet.svc("crashy");
    let t = wait_until(T, "four deaths", || {
        Some(death_times_ms(&svc)).filter(|t| t.len() >= 4)
    });
    // The pace counts from the previous start, and deaths are what the tally records:
    // two deaths are 3 s apart, give or take the difference of the two runs' lives (the
    // exec of a shell and its exit 1, a few hundred ms apart on a loaded machine), where
    // the normal pace gives 1 s.
    assert!(t[1] - t[0] < 2500, "{t:?}");
    assert!(t[2] - t[1] >= 2500, "not slowed: {t:?}");
    assert!(t[3] - t[2] >= 2500, "not slowed: {t:?}");
    assert!(fleet.status("crashy").unwrap().want_up);
    // The verdict is about the last death: shown while the service waits out its 3 s,
    // not once it runs again (briefly, here, or longer on a loaded machine).
    let line = ", restart-policy: 2 deaths within 60 s (last: exit 1): restarting every 3000 ms";
    wait_until(T, "svstat naming the policy", || {
        let o = tend("tend-svstat", [svc.to_str().unwrap()]);
        text(&o.stdout).contains(line).then_some(())
    });
}

#[test]
fn readiness_under_s6_supervise() {
    require("s6-supervise");
    require("s6-svwait");
    require("python3");
    let s = Scratch::new("check-ready-s6");
    let port = free_port();
    s.write("web/server.py", SERVER, false);
    s.write("web/notification-fd", "3\n", false);
    s.write(
        "web/run",
        &format!(
            "#!/bin/sh\nexec {} -n 0 -w 50 -u http://127.0.0.1:{port}/ -- python3 server.py {port} 1\n",
            bin("tend-check").display()
        ),
        true,
    );
    let svc = s.join("web");
    let _strays = KillUnder(s.path.clone());
    let _sup = Daemon::start({
        let mut c = cmd("s6-supervise");
        c.arg(&svc)
            .current_dir(&s.path)
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        c
    });
    // s6-svwait fails (111) if it runs before s6-supervise wrote supervise/status.
    wait_until(T, "supervise/status", || {
        svc.join("supervise/status").exists().then_some(())
    });
    let svwait = |flag: &str| {
        let mut c = cmd("s6-svwait");
        c.args([flag, "-t", "20000"]).arg(&svc);
        run(c)
    };
    assert_code(&svwait("-u"), 0);
    assert!(!svc.join("bound").exists(), "up only after the bind?");
    assert_code(&svwait("-U"), 0);
    assert!(
        svc.join("bound").exists(),
        "s6 saw readiness before the endpoint answered"
    );
    // s6-supervise runs the daemon in a session of its own: take it down before the
    // guard kills the supervisor, and kill what is left under the scratch dir.
    let mut c = cmd("s6-svc");
    c.args(["-dx"]).arg(&svc);
    let _ = run(c);
    wait_until(T, "the daemon to leave", || {
        procs_under(&svc)
            .iter()
            .all(|pid| {
                !text(&std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default())
                    .contains("server.py")
            })
            .then_some(())
    });
}

/// When the daemon cannot be executed, the prober leaves without probing: one fatal line,
/// exit 127, and nothing from the probe (the fuzz found a second line here).
#[test]
fn readiness_prober_quits_when_the_exec_fails() {
    let s = Scratch::new("check-exec-fails");
    let marker = s.join("probed");
    let probe = format!("touch {}; echo probed >&2", marker.display());
    let o = run({
        let mut c = cmd("tend-check");
        c.args(["-3", "1", "-c", &probe, "-w", "10", "/nonexistent/daemon"])
            .stdout(std::process::Stdio::null());
        c
    });
    assert_code(&o, 127);
    assert_eq!(
        text(&o.stderr),
        "tend-check: fatal: unable to exec /nonexistent/daemon: No such file or directory\n"
    );
    stays_for(
        std::time::Duration::from_millis(500),
        "no probe of a daemon that never ran",
        || !marker.exists(),
    );
}
