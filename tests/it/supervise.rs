//! tend-supervise against its specification (s6-supervise 2.11): files and modes, status
//! bytes, events, control letters, signals, settings files, failure handling.
//!
//! Not tested here: fork failure (60 s retry) — it needs RLIMIT_NPROC games that are
//! unreliable as root; the s6-client × tend-supervise matrix lives in compat.rs.

use crate::common::*;
use nix::sys::signal::Signal;
use std::ffi::OsStr;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tend_proto::StatusRecord;
use tend_proto::fifodir::{Subscription, make_fifodir};

const T: Duration = Duration::from_secs(10);

/// Subscribe to DIR/event (creating it as s6-svwait does) before the supervisor starts.
fn subscribe(dir: &Path) -> Subscription {
    make_fifodir(&dir.join("event"), nix::unistd::getegid()).unwrap();
    Subscription::new(&dir.join("event")).unwrap()
}

/// tend-supervise on a service directory built by `build`, subscribed to its events
/// before it starts.
fn watched(name: &str, build: impl FnOnce(ServiceDir) -> ServiceDir) -> (Case, Subscription) {
    Case::prepared("tend-supervise", name, build, subscribe)
}

/// Read events until `want` has been seen as a suffix-free prefix match, or time out.
fn events_until(sub: &Subscription, want: &str) -> String {
    let mut got = String::new();
    let deadline = Instant::now() + T;
    while !got.contains(want) {
        assert!(
            Instant::now() < deadline,
            "events: wanted {want:?}, got {got:?}"
        );
        let mut buf = [0u8; 64];
        match sub.read(&mut buf) {
            Ok(n) => got.push_str(&String::from_utf8_lossy(&buf[..n])),
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
    got
}

#[test]
fn creates_s6_layout_and_holds_the_lock() {
    let sup = Case::run("sup-layout", SLEEPER);
    let dir = &sup.dir;
    sup.wait_up();
    let md = |p: &str| std::fs::symlink_metadata(dir.join(p)).unwrap();
    assert_eq!(md("supervise").permissions().mode() & 0o7777, 0o700);
    assert_eq!(md("event").permissions().mode() & 0o7777, 0o3730);
    assert_eq!(md("event").gid(), nix::unistd::getegid().as_raw());
    assert!(md("supervise/control").file_type().is_fifo());
    assert_eq!(md("supervise/control").permissions().mode() & 0o777, 0o600);
    assert_eq!(md("supervise/lock").len(), 0);
    assert_eq!(md("supervise/status").len(), 35);
    assert_eq!(md("supervise/death_tally").len(), 0);
    assert!(tend_proto::lock::is_held(&dir.join("supervise/lock")).unwrap());
    // /proc/locks shows a POSIX lock (not flock), visible to s6's clients.
    let locks = std::fs::read_to_string("/proc/locks").unwrap();
    let ino = md("supervise/lock").ino();
    assert!(
        locks
            .lines()
            .any(|l| l.contains("POSIX") && l.contains("WRITE") && l.contains(&format!(":{ino} "))),
        "{locks}"
    );
    // a second supervisor on the same dir: exit 100, clear message
    let o = tend("tend-supervise", [dir]);
    assert_code(&o, 100);
    assert_eq!(
        text(&o.stderr),
        "tend-supervise: fatal: another instance of tend-supervise is already running\n"
    );
    let r = sup.status();
    assert!(r.want_up && !r.ready && !r.finishing && !r.paused && r.pid > 0);
}

#[test]
fn events_for_a_whole_life() {
    let (sup, sub) = watched("sup-events", |d| {
        d.run(SLEEPER)
            .finish("#!/bin/sh\necho \"$@\" > finish.args\n")
    });
    assert_eq!(events_until(&sub, "su"), "su");
    let run_pid = sup.wait_up().pid;
    sup.send("d");
    assert_eq!(events_until(&sub, "dD"), "dD");
    let r = sup.wait_status("down", |r| r.pid == 0 && r.ready);
    assert_eq!((r.wstat, r.want_up, r.finishing), (15, false, false));
    // s6 2.14+'s four arguments: the fourth is the pid of the ./run that died.
    assert_eq!(
        sup.read("finish.args"),
        format!("256 15 {} {run_pid}\n", sup.dir.display())
    );
    sup.send("u");
    assert_eq!(events_until(&sub, "u"), "u");
    sup.wait_up();
    sup.send("x");
    // x while up: the supervisor waits for the service to die
    stays_for(Duration::from_millis(100), "up after x", || {
        sup.status().is_up()
    });
    sup.send("k");
    assert_eq!(events_until(&sub, "dDx"), "dDx");
    let mut sup = sup;
    let st = sup.daemon().wait_exit(T).expect("supervisor exits after x");
    assert_eq!(st.code(), Some(0));
    assert_eq!(sup.status().wstat, 9);
    assert!(!tend_proto::lock::is_held(&sup.dir.join("supervise/lock")).unwrap());
}

/// Each plain start of ./run is a vfork-style clone on one stack that the supervisor
/// keeps and empties after every start: start after start, a new ./run runs.
#[test]
fn plain_starts_again_and_again() {
    let sup = Case::run("sup-restarts", SLEEPER);
    let mut pids = vec![sup.wait_up().pid];
    for _ in 0..5 {
        sup.send("d");
        sup.wait_status("down", |r| r.pid == 0 && !r.finishing);
        sup.send("u");
        let r = sup.wait_up();
        assert!(!pids.contains(&r.pid), "{} again in {pids:?}", r.pid);
        pids.push(r.pid);
    }
}

#[test]
fn down_file_keeps_it_down_and_once_runs_once() {
    let (sup, sub) = watched("sup-once", |d| {
        d.run("#!/bin/sh\necho ran >> runs\nexit 3\n").down()
    });
    let dir = &sup.dir;
    assert_eq!(events_until(&sub, "s"), "s");
    let r = sup.status();
    assert_eq!((r.pid, r.want_up, r.ready, r.wstat), (0, false, true, 0));
    assert_eq!(r.stamp, r.readystamp);
    sup.send("o");
    assert_eq!(events_until(&sub, "udD"), "udD");
    // Past the one-second pacing a restart would wait for.
    stays_for(Duration::from_millis(1300), "o runs once only", || {
        std::fs::read_to_string(dir.join("runs")).unwrap() == "ran\n"
    });
    let r = sup.status();
    assert_eq!((r.exitcode(), r.want_up), (Some(3), false));
    // U removes ./down and starts; D creates it and stops
    sup.send("O");
    sup.send("U");
    wait_until(T, "./down removed", || {
        (!dir.join("down").exists()).then_some(())
    });
    sup.send("D");
    wait_until(T, "./down created", || {
        dir.join("down").exists().then_some(())
    });
    sup.wait_status("want down", |r| !r.want_up);
}

#[test]
fn notification_fd_readiness() {
    let (sup, sub) = watched("sup-ready", |d| {
        d.run("#!/bin/sh\nsleep 0.2\necho ready >&5\nexec sleep 300\n")
            .notification_fd(5)
    });
    assert_eq!(events_until(&sub, "suU"), "suU");
    let r = sup.status();
    assert!(r.is_up() && r.ready);
    assert!(r.readystamp >= r.stamp);
}

#[test]
fn finish_125_is_a_permanent_failure() {
    let (sup, sub) = watched("sup-125", |d| {
        d.run("#!/bin/sh\nexit 7\n").finish("#!/bin/sh\nexit 125\n")
    });
    assert_eq!(events_until(&sub, "sudOD"), "sudOD");
    // Past the one-second pacing a restart would wait for.
    let mut buf = [0u8; 8];
    stays_for(Duration::from_millis(1300), "no restart after 125", || {
        let r = sup.status();
        (r.pid, r.want_up, r.exitcode()) == (0, false, Some(7)) && sub.read(&mut buf).is_err()
    });
}

#[test]
fn timeout_kill_and_down_signal() {
    let sup = Case::with("sup-tkill", |d| {
        d.run("#!/bin/sh\ntrap '' TERM HUP\n: > trapped\nwhile :; do sleep 1; done\n")
            .file("timeout-kill", "200\n")
            .file("down-signal", "SIGHUP\n")
    });
    sup.wait_up();
    wait_until(T, "the traps set", || {
        sup.dir.join("trapped").exists().then_some(())
    });
    let t0 = Instant::now();
    sup.send("d");
    let r = sup.wait_status("killed after timeout-kill", |r| r.pid == 0 && r.ready);
    assert_eq!(r.signal(), Some(9), "SIGHUP ignored, then SIGKILL");
    assert!(t0.elapsed() >= Duration::from_millis(190));
}

#[test]
fn timeout_finish_kills_a_slow_finish() {
    let (sup, sub) = watched("sup-tfinish", |d| {
        d.run("#!/bin/sh\nexec sleep 300\n")
            .finish("#!/bin/sh\nexec sleep 300\n")
            .file("timeout-finish", "300\n")
    });
    events_until(&sub, "su");
    sup.send("d");
    let r = sup.wait_status("finishing", |r| r.finishing);
    assert!(r.pid > 0 && !r.ready);
    events_until(&sub, "dD");
    let r = sup.status();
    assert!(!r.finishing && r.pid == 0 && r.ready);
}

#[test]
fn missing_run_retries_slowly_and_says_why() {
    let mut sup = Case::with("sup-norun", |d| d);
    let dir = sup.dir.clone();
    let r = sup.wait_status("exitcode 127", |r| r.exitcode() == Some(127));
    assert_eq!((r.pid, r.want_up), (0, true));
    let err = std::fs::read_to_string(dir.join("supervise/spawn-error")).unwrap();
    assert!(
        err.starts_with("@4000") && err.ends_with(" 2 ./run\n"),
        "{err:?}"
    );
    wait_until(T, "the warning", || {
        (!sup.stderr().is_empty()).then_some(())
    });
    stays_for(Duration::from_millis(1500), "one attempt in 1.5 s", || {
        sup.stderr().lines().count() == 1
    });
    let stderr = sup.stderr();
    assert!(
        stderr.contains("unable to spawn ./run") && stderr.contains("No such file or directory"),
        "{stderr}"
    );
    assert!(
        cpu_ticks(sup.daemon().pid()) < 20,
        "supervisor must not spin"
    );
    // fix it, then `u` starts it at once and the record is cleared
    ServiceDir::new(&dir).run(SLEEPER);
    sup.send("u");
    sup.wait_up();
    assert!(!dir.join("supervise/spawn-error").exists());
}

#[test]
fn run_not_executable_is_exitcode_126() {
    let sup = Case::with("sup-noexec", |d| d.file("run", SLEEPER));
    sup.wait_status("exitcode 126", |r| r.exitcode() == Some(126));
    let err = sup.read("supervise/spawn-error");
    assert!(
        err.ends_with(" 13 ./run\nnot executable (mode 0644)\n"),
        "{err:?}"
    );
    wait_until(T, "warning", || {
        sup.stderr()
            .contains("unable to spawn ./run (retrying in 10 s): not executable (mode 0644)")
            .then_some(())
    });
}

/// Start a supervisor on `dir` whose ./run cannot be exec'd; the status line, the JSON
/// field, the spawn-error record and the stderr warning all say `why`, with exit `code`.
fn assert_spawn_diagnosed(dir: &Path, code: u8, why: &str) {
    let sup = Supervised::start("tend-supervise", dir);
    sup.wait_status("spawn failure recorded", |r| r.exitcode() == Some(code));
    let record = wait_until(T, "supervise/spawn-error", || {
        std::fs::read_to_string(dir.join("supervise/spawn-error")).ok()
    });
    assert!(record.ends_with(&format!(" ./run\n{why}\n")), "{record:?}");
    let o = tend("tend-svstat", [dir]);
    assert_code(&o, 0);
    let line = text(&o.stdout);
    assert!(
        line.starts_with(&format!("down (exitcode {code}) "))
            && line.contains(", want up")
            && line.ends_with(&format!(", spawn failed: ./run: {why}\n")),
        "{line:?}"
    );
    let o = tend("tend-svstat", [OsStr::new("-j"), dir.as_os_str()]);
    assert_code(&o, 0);
    let json = text(&o.stdout);
    let escaped = why.replace('\\', "\\\\");
    assert!(
        json.contains(&format!("\"error\":\"{escaped}\",\"program\":\"./run\"")),
        "{json}"
    );
    let warning = format!("unable to spawn ./run (retrying in 10 s): {why}\n");
    wait_until(T, "the warning", || {
        sup.stderr().contains(&warning).then_some(())
    });
}

#[test]
fn spawn_error_crlf_shebang() {
    let s = Scratch::new("sup-crlf");
    let dir = ServiceDir::new(s.join("svc"))
        .run("#!/bin/sh\r\nexec sleep 300\r\n")
        .path();
    assert_spawn_diagnosed(
        &dir,
        127,
        "interpreter /bin/sh\\r not found (the file has CRLF line endings)",
    );
}

#[test]
fn spawn_error_missing_interpreter() {
    let s = Scratch::new("sup-nointerp");
    let dir = ServiceDir::new(s.join("svc"))
        .run("#!/nonexistent/interp\nexit 0\n")
        .path();
    assert_spawn_diagnosed(&dir, 127, "interpreter /nonexistent/interp not found");
}

#[test]
fn spawn_error_neither_elf_nor_script() {
    let s = Scratch::new("sup-noformat");
    let dir = ServiceDir::new(s.join("svc"))
        .run("exec sleep 300\n")
        .path();
    assert_spawn_diagnosed(&dir, 126, "neither an ELF executable nor a #! script");
}

#[test]
fn spawn_error_run_is_a_directory() {
    let s = Scratch::new("sup-rundir");
    std::fs::create_dir_all(s.join("svc/run")).unwrap();
    assert_spawn_diagnosed(&s.join("svc"), 126, "is a directory");
}

#[test]
fn spawn_error_dangling_symlink() {
    let s = Scratch::new("sup-dangling");
    std::fs::create_dir_all(s.join("svc")).unwrap();
    std::os::unix::fs::symlink("/nonexistent/run-target", s.join("svc/run")).unwrap();
    assert_spawn_diagnosed(
        &s.join("svc"),
        127,
        "dangling symlink to /nonexistent/run-target",
    );
}

/// A 64-bit little-endian ELF header for `machine`, with a PT_INTERP naming `interp`.
fn elf_image(machine: u16, interp: &[u8]) -> Vec<u8> {
    let mut h = vec![0u8; 64];
    h[..4].copy_from_slice(b"\x7fELF");
    h[4] = 2;
    h[5] = 1;
    h[6] = 1;
    h[16..18].copy_from_slice(&2u16.to_le_bytes());
    h[18..20].copy_from_slice(&machine.to_le_bytes());
    h[20..24].copy_from_slice(&1u32.to_le_bytes());
    h[32..40].copy_from_slice(&64u64.to_le_bytes());
    h[52..54].copy_from_slice(&64u16.to_le_bytes());
    h[54..56].copy_from_slice(&56u16.to_le_bytes());
    h[56..58].copy_from_slice(&1u16.to_le_bytes());
    let mut ph = vec![0u8; 56];
    ph[0..4].copy_from_slice(&3u32.to_le_bytes());
    ph[4..8].copy_from_slice(&4u32.to_le_bytes());
    ph[8..16].copy_from_slice(&120u64.to_le_bytes());
    ph[32..40].copy_from_slice(&(interp.len() as u64 + 1).to_le_bytes());
    ph[40..48].copy_from_slice(&(interp.len() as u64 + 1).to_le_bytes());
    h.extend_from_slice(&ph);
    h.extend_from_slice(interp);
    h.push(0);
    h
}

fn write_run(dir: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("run"), bytes).unwrap();
    std::fs::set_permissions(dir.join("run"), std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn spawn_error_foreign_architecture() {
    let s = Scratch::new("sup-foreign");
    // AArch64 on an x86-64 host, x86-64 elsewhere.
    let (machine, name) = if cfg!(target_arch = "aarch64") {
        (62, "x86-64")
    } else {
        (183, "AArch64")
    };
    let native = if cfg!(target_arch = "aarch64") {
        "AArch64"
    } else {
        "x86-64"
    };
    write_run(&s.join("svc"), &elf_image(machine, b"/lib/ld-linux.so.2"));
    assert_spawn_diagnosed(
        &s.join("svc"),
        126,
        &format!("ELF executable for {name} (e_machine {machine}), not {native}"),
    );
}

#[test]
fn spawn_error_missing_dynamic_loader() {
    if !cfg!(target_arch = "x86_64") {
        skip("the test's ELF image is x86-64");
        return;
    }
    let s = Scratch::new("sup-noloader");
    write_run(
        &s.join("svc"),
        &elf_image(62, b"/lib/ld-musl-x86_64.so.404"),
    );
    assert_spawn_diagnosed(
        &s.join("svc"),
        127,
        "ELF interpreter /lib/ld-musl-x86_64.so.404 not found (the dynamic loader it was linked for)",
    );
}

/// A tmpfs mounted noexec for the test's lifetime (lazily unmounted on drop).
struct NoexecMount(PathBuf);

impl Drop for NoexecMount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

#[test]
fn spawn_error_noexec_mount() {
    let s = Scratch::new("sup-noexecmnt");
    let mnt = s.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "noexec,nosuid,size=1m", "tmpfs"])
        .arg(&mnt)
        .stderr(Stdio::piped())
        .output();
    match mounted {
        Ok(o) if o.status.success() => {}
        other => {
            skip(format!(
                "cannot mount a noexec tmpfs (needs root): {other:?}"
            ));
            return;
        }
    }
    let _mount = NoexecMount(mnt.clone());
    let dir = mnt.join("svc");
    write_run(&dir, SLEEPER.as_bytes());
    let real = std::fs::canonicalize(&mnt).unwrap();
    assert_spawn_diagnosed(
        &dir,
        126,
        &format!("on a filesystem mounted noexec ({})", real.display()),
    );
}

#[test]
fn crash_loop_is_paced_at_one_spawn_per_second() {
    let mut sup = Case::run("sup-crash", "#!/bin/sh\necho x >> runs\nexit 1\n");
    let dir = sup.dir.clone();
    // A measuring window: the spawns counted in it are the pacing under test.
    std::thread::sleep(Duration::from_millis(2500));
    let runs = std::fs::read_to_string(dir.join("runs"))
        .unwrap_or_default()
        .lines()
        .count();
    assert!((2..=4).contains(&runs), "{runs} spawns in 2.5 s");
    let stderr = sup.stderr();
    assert!(
        stderr
            .lines()
            .filter(|l| l.contains("./run died after") && l.contains("exitcode 1"))
            .count()
            >= 2,
        "{stderr}"
    );
    assert!(cpu_ticks(sup.daemon().pid()) < 20);
    let tally = std::fs::read(dir.join("supervise/death_tally")).unwrap();
    assert_eq!(tally.len() % 14, 0);
    assert!(tally.len() >= 28);
    assert_eq!(&tally[12..14], &[1, 0]);
}

#[test]
fn restart_of_a_long_lived_service_is_immediate() {
    let sup = Case::run("sup-restart", SLEEPER);
    let first = sup.wait_up().pid;
    // Past the one-second pacing, which is what would delay a restart.
    std::thread::sleep(Duration::from_millis(1100));
    let t0 = Instant::now();
    sup.send("r");
    let r = sup.wait_status("new pid", |r| r.is_up() && r.pid != first);
    assert!(
        t0.elapsed() < Duration::from_millis(800),
        "restart took {:?}",
        t0.elapsed()
    );
    assert_eq!(r.wstat, 15);
}

#[test]
fn max_death_tally_keeps_the_last_records() {
    let sup = Case::with("sup-tally", |d| {
        d.run(SLEEPER).file("max-death-tally", "2\n")
    });
    for sig in ["t", "k", "1"] {
        let pid = sup.wait_up().pid;
        // Past the one-second pacing, so each restart is prompt.
        std::thread::sleep(Duration::from_millis(1050));
        sup.send(sig);
        sup.wait_status("restarted", |r| r.is_up() && r.pid != pid);
    }
    let tally = std::fs::read(sup.dir.join("supervise/death_tally")).unwrap();
    assert_eq!(tally.len(), 28);
    assert_eq!(
        (&tally[12..14], &tally[26..28]),
        (&[137u8, 9][..], &[138u8, 10][..])
    );
}

#[test]
fn pause_and_continue_set_the_paused_bit() {
    let sup = Case::run("sup-pause", SLEEPER);
    let pid = sup.wait_up().pid;
    sup.send("p");
    sup.wait_status("paused", |r| r.paused);
    let state = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap()
            .split(' ')
            .nth(2)
            .unwrap()
            .to_string()
    };
    wait_until(T, "stopped", || (state() == "T").then_some(()));
    sup.send("c");
    sup.wait_status("continued", |r| !r.paused);
    wait_until(T, "running", || (state() != "T").then_some(()));
}

#[test]
fn garbage_on_control_is_ignored() {
    let sup = Case::run("sup-garbage", SLEEPER);
    let dir = &sup.dir;
    let pid = sup.wait_up().pid;
    let garbage: Vec<u8> = (0u8..=255)
        .filter(|b| !tend_proto::control::LETTERS.as_bytes().contains(b))
        .collect();
    tend_proto::control::send(&dir.join("supervise/control"), &garbage).unwrap();
    stays_for(Duration::from_millis(200), "the same service up", || {
        let r = sup.status();
        (r.pid, r.is_up()) == (pid, true)
    });
    assert!(tend_proto::lock::is_held(&dir.join("supervise/lock")).unwrap());
    assert_eq!(sup.stderr(), "");
}

#[test]
fn sigterm_brings_down_and_exits() {
    let (mut sup, sub) = watched("sup-term", |d| d.run(SLEEPER));
    events_until(&sub, "su");
    sup.daemon().signal(Signal::SIGTERM);
    assert_eq!(events_until(&sub, "dDx"), "dDx");
    assert_eq!(sup.daemon().wait_exit(T).unwrap().code(), Some(0));
    assert_eq!(sup.status().pid, 0);
}

#[test]
fn sigquit_leaves_the_service_running() {
    let mut sup = Case::run("sup-quit", SLEEPER);
    let pid = sup.wait_up().pid as i32;
    sup.daemon().signal(Signal::SIGQUIT);
    assert_eq!(sup.daemon().wait_exit(T).unwrap().code(), Some(0));
    let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok();
    // Nobody supervises it now: the test ends it, so no sleeper outlives the suite.
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
    assert!(alive, "service survives");
}

#[test]
fn sighup_exits_when_the_service_dies() {
    let mut sup = Case::run("sup-hup", SLEEPER);
    let pid = sup.wait_up().pid as i32;
    sup.daemon().signal(Signal::SIGHUP);
    stays_for(
        Duration::from_millis(200),
        "still waiting for the service",
        || sup.daemon().child.try_wait().unwrap().is_none(),
    );
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGTERM);
    assert_eq!(sup.daemon().wait_exit(T).unwrap().code(), Some(0));
}

#[test]
fn sigint_interrupts_the_process_group() {
    let mut sup = Case::run(
        "sup-int",
        "#!/bin/sh\n# a non-interactive shell's background jobs ignore SIGINT; perl resets it\nperl -e '$SIG{INT}=\"DEFAULT\"; open F, \">c.tmp\"; print F \"$$\\n\"; close F; rename \"c.tmp\", \"child\"; sleep 300' &\nwait\n",
    );
    let dir = sup.dir.clone();
    sup.wait_up();
    let child: i32 = wait_until(T, "child pid", || {
        std::fs::read_to_string(dir.join("child"))
            .ok()?
            .trim()
            .parse()
            .ok()
    });
    sup.daemon().signal(Signal::SIGINT);
    assert_eq!(sup.daemon().wait_exit(T).unwrap().code(), Some(0));
    // dead (maybe a zombie: this machine's pid 1 reaps lazily)
    let dead = || match std::fs::read_to_string(format!("/proc/{child}/stat")) {
        Ok(st) => st[st.rfind(')').unwrap() + 2..].starts_with('Z'),
        Err(_) => true,
    };
    wait_until(T, "group got SIGINT", || dead().then_some(()));
}

#[test]
fn service_is_a_session_leader_with_its_dir_as_argument() {
    let sup = Case::run(
        "sup-session",
        "#!/bin/sh\necho \"$1 $$ $(ps -o sid= -p $$)\" > info\nexec sleep 300\n",
    );
    sup.wait_up();
    let info = wait_until(T, "info", || {
        Some(sup.read("info")).filter(|s| s.ends_with('\n'))
    });
    let f: Vec<&str> = info.split_whitespace().collect();
    assert_eq!(f[0], sup.dir.to_str().unwrap());
    assert_eq!(f[1], f[2], "pid == sid");
}

#[test]
fn lock_fd_really_locks_for_descendants() {
    let s = Scratch::new("sup-lockfd");
    // run leaves a background child holding the lock fd, then dies
    let dir = ServiceDir::new(s.join("svc"))
        .run("#!/bin/sh\necho start >> starts\nsleep 2 &\nexec sleep 300\n")
        .path();
    s.write("svc/lock-fd", "7\n", false);
    let sup = Supervised::start("tend-supervise", &dir);
    let pid = sup.wait_up().pid;
    // Past the one-second pacing: the restart is at once, so it meets the held lock.
    std::thread::sleep(Duration::from_millis(1100));
    // kill only run (not its group): the background sleep keeps the lock for ~1 s more
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), Signal::SIGKILL);
    wait_until(T, "lock warning", || {
        sup.stderr().contains("service lock is held").then_some(())
    });
    stays_for(Duration::from_millis(300), "the new instance waits", || {
        std::fs::read_to_string(dir.join("starts"))
            .unwrap()
            .lines()
            .count()
            == 1
    });
    wait_until(T, "second start", || {
        (std::fs::read_to_string(dir.join("starts"))
            .ok()?
            .lines()
            .count()
            == 2)
            .then_some(())
    });
}

#[test]
fn bad_invocations() {
    let o = tend("tend-supervise", Vec::<&str>::new());
    assert_code(&o, 100);
    assert_eq!(
        text(&o.stderr),
        "tend-supervise: usage: tend-supervise servicedir\n"
    );
    let o = tend("tend-supervise", ["-z", "x"]);
    assert_code(&o, 100);
    let o = tend("tend-supervise", ["/nonexistent/svc"]);
    assert_code(&o, 111);
    assert_eq!(
        text(&o.stderr),
        "tend-supervise: fatal: unable to chdir to /nonexistent/svc: No such file or directory\n"
    );
    let s = Scratch::new("sup-bad");
    s.write("svc/run", SLEEPER, true);
    s.write("svc/supervise", "not a dir", false);
    let o = tend("tend-supervise", [s.join("svc")]);
    assert_code(&o, 100);
    assert!(text(&o.stderr).contains("supervise exists and is not a directory"));
    s.write("svc2/run", SLEEPER, true);
    std::fs::create_dir_all(s.join("svc2/supervise")).unwrap();
    s.write("svc2/supervise/control", "", false);
    let o = tend("tend-supervise", [s.join("svc2")]);
    assert_code(&o, 100);
    assert!(text(&o.stderr).contains("supervise/control exists and is not a fifo"));
}

#[test]
fn dangling_supervise_symlink_gets_its_target() {
    let s = Scratch::new("sup-symlink");
    let dir = ServiceDir::new(s.join("svc")).run(SLEEPER).path();
    std::os::unix::fs::symlink(s.join("state"), dir.join("supervise")).unwrap();
    let sup = Supervised::start("tend-supervise", &dir);
    sup.wait_up();
    assert!(s.join("state/status").exists());
}

/// utime + stime of a process, in clock ticks.
fn cpu_ticks(pid: i32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after.split(' ').collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

/// A FIFO where a settings or state file belongs is refused with a warning naming it
/// (and the setting's default applies); nothing blocks: the service starts, and
/// tend-svc -d and -x still work.
#[test]
fn fifos_in_place_of_settings_files_do_not_hang() {
    let s = Scratch::new("sup-fifos");
    let dir = ServiceDir::new(s.join("svc")).run(SLEEPER).path();
    let fifo = |rel: &str| {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        nix::unistd::mkfifo(&p, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    };
    let settings = [
        "notification-fd",
        "timeout-kill",
        "timeout-finish",
        "down-signal",
        "lock-fd",
        "max-death-tally",
    ];
    for name in settings {
        fifo(name);
    }
    // State files the supervisor writes: replaced, never opened where they stand.
    fifo("supervise/death_tally");
    fifo("supervise/status.new");
    let sup = Supervised::start("tend-supervise", &dir);
    let r = sup.wait_up();
    assert!(!r.ready, "no notification-fd in effect");
    for name in settings {
        let warning = format!(
            "tend-supervise {}: warning: {name} is a FIFO, not a regular file: using the default\n",
            dir.display()
        );
        wait_until(T, &warning, || {
            sup.stderr().contains(&warning).then_some(())
        });
    }
    let o = tend("tend-svc", [OsStr::new("-d"), dir.as_os_str()]);
    assert_code(&o, 0);
    sup.wait_status("down", |r| !r.is_up() && !r.want_up);
    let o = tend("tend-svc", [OsStr::new("-x"), dir.as_os_str()]);
    assert_code(&o, 0);
    let mut sup = sup;
    let st = sup
        .daemon()
        .wait_exit(T)
        .expect("tend-supervise exits on -x");
    assert_eq!(st.code(), Some(0));
}

#[test]
fn notification_fd_beyond_an_int_warns() {
    let sup = Case::with("sup-bigfd", |d| {
        d.run(SLEEPER).file("notification-fd", "4294967299\n")
    });
    sup.wait_up();
    let warning = format!(
        "tend-supervise {}: warning: invalid notification-fd: 4294967299 is not an fd number: ignoring it\n",
        sup.dir.display()
    );
    wait_until(T, &warning, || {
        sup.stderr().contains(&warning).then_some(())
    });
}

/// tend-svstat reads supervise/lock, supervise/status and supervise/spawn-error without
/// blocking: FIFOs planted there give an answer (or an error), never a hang.
#[test]
fn svstat_never_blocks_on_fifos_in_supervise() {
    let s = Scratch::new("svstat-fifos");
    let dir = s.join("svc");
    std::fs::create_dir_all(dir.join("supervise")).unwrap();
    let fifo = |rel: &str| {
        nix::unistd::mkfifo(
            &dir.join(rel),
            nix::sys::stat::Mode::from_bits_truncate(0o644),
        )
        .unwrap()
    };
    // Run as a Daemon so that a hang (the bug) is killed when the test fails.
    let svstat = |dir: &Path| {
        let (out, err) = (s.join("out"), s.join("err"));
        let mut c = cmd("tend-svstat");
        c.arg(dir)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap());
        let mut d = Daemon::start(c);
        let st = d.wait_exit(T).expect("tend-svstat must not block");
        let read = |p: &Path| text(&std::fs::read(p).unwrap());
        (st.code(), read(&out), read(&err))
    };
    // The lock itself a FIFO: nobody can hold it, so no supervisor.
    fifo("supervise/lock");
    let (code, _, err) = svstat(&dir);
    assert_eq!(code, Some(1), "{err}");
    // A held lock, and the status a FIFO: unreadable, not a hang.
    std::fs::remove_file(dir.join("supervise/lock")).unwrap();
    let _lock = tend_proto::lock::acquire(&dir.join("supervise/lock"), 0o644).unwrap();
    fifo("supervise/status");
    let (code, _, err) = svstat(&dir);
    assert_eq!(code, Some(111), "{err}");
    // A good status, and spawn-error a FIFO: ignored.
    std::fs::remove_file(dir.join("supervise/status")).unwrap();
    std::fs::write(
        dir.join("supervise/status"),
        StatusRecord::default().encode(),
    )
    .unwrap();
    fifo("supervise/spawn-error");
    let (code, out, err) = svstat(&dir);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.starts_with("down (exitcode 0) ") && !out.contains("spawn failed"),
        "{out}"
    );
}

#[test]
fn finish_exec_failure_is_diagnosed() {
    let sup = Case::with("sup-finish-crlf", |d| {
        d.run("#!/bin/sh\nexec sleep 300\n")
            .finish("#!/bin/sh\r\nexit 0\r\n")
    });
    sup.wait_up();
    sup.send("d");
    let warning = format!(
        "tend-supervise {}: warning: unable to spawn ./finish: interpreter /bin/sh\\r not found (the file has CRLF line endings)\n",
        sup.dir.display()
    );
    wait_until(T, &warning, || {
        sup.stderr().contains(&warning).then_some(())
    });
    sup.wait_status("down", |r| !r.is_up() && !r.finishing);
}
