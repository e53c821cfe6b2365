//! The s6 that people run today beside tend, both ways (issue 35): Debian 12's s6 2.11.3
//! (installed), trixie's 2.13.1 and sid's 2.15.1 (unpacked by tests/s6-versions/fetch.sh
//! under /opt/s6-versions, or `$S6_VERSIONS_DIR`), each side a process of its own running
//! its own version's binaries with its own libraries. Debian's s6 execs its helpers by
//! absolute path (`/usr/bin/s6-svlisten1`, `/usr/bin/s6-supervise`), so a version's
//! programs run in a private mount namespace where those paths are its own.
//!
//! Not tested here: s6-rc and s6-overlay (tests/it/rc.rs, overlay.rs), 2.13.0 and 2.13.2
//! (only 2.13.1 is in Debian), the `forked` scanner feature's supervisors (they read the
//! scanner's own environment, not `--status-size`).

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;
use tend_proto::StatusRecord;

/// One side of the matrix: an s6 version or tend in one of its two status sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    S6v211,
    S6v213,
    S6v215,
    /// tend writing 35 bytes (the default).
    Tend35,
    /// tend writing 2.13's 43 bytes (`TEND_STATUS_SIZE=43`).
    Tend43,
}

use Side::*;

const SUPERVISORS: [Side; 5] = [S6v211, S6v213, S6v215, Tend35, Tend43];
/// tend's clients are one program whatever the size they read.
const CLIENTS: [Side; 4] = [S6v211, S6v213, S6v215, Tend35];

/// Where fetch.sh unpacked the Debian packages.
fn versions_dir() -> PathBuf {
    std::env::var_os("S6_VERSIONS_DIR")
        .map_or_else(|| PathBuf::from("/opt/s6-versions"), PathBuf::from)
}

/// Binds a version's helpers over the host's and lays its library directory over the
/// host's (helpers such as s6-ftrigrd are spawned without LD_LIBRARY_PATH, and 2.15 keeps
/// s6-ftrigrd in `/usr/lib/x86_64-linux-gnu/s6/`, which the host lacks), then execs the
/// program: `$1` is the version's root, the rest the command.
const IN_VERSION: &str = r#"r=$1; shift
for f in s6-svlisten1 s6-svlisten s6-svwait s6-svc s6-supervise s6-ftrigrd; do
  if [ -e "$r/usr/bin/$f" ] && [ -e "/usr/bin/$f" ]; then mount --bind "$r/usr/bin/$f" "/usr/bin/$f" || exit 111; fi
done
l=/usr/lib/x86_64-linux-gnu
mount -t overlay overlay -o "lowerdir=$r$l:$l" "$l" || exit 111
exec "$@""#;

impl Side {
    fn name(self) -> &'static str {
        match self {
            S6v211 => "s6-2.11",
            S6v213 => "s6-2.13",
            S6v215 => "s6-2.15",
            Tend35 => "tend-35",
            Tend43 => "tend-43",
        }
    }

    fn is_s6(self) -> bool {
        matches!(self, S6v211 | S6v213 | S6v215)
    }

    /// The status size this side writes, or (an s6 client) reads.
    fn size(self) -> usize {
        match self {
            S6v213 | Tend43 => 43,
            _ => 35,
        }
    }

    /// Whether this side has `l` (reload): s6-svc and s6-supervise from 2.15.1, tend.
    fn reloads(self) -> bool {
        !matches!(self, S6v211 | S6v213)
    }

    fn root(self) -> Option<PathBuf> {
        match self {
            S6v213 => Some(versions_dir().join("2.13.1")),
            S6v215 => Some(versions_dir().join("2.15.1")),
            _ => None,
        }
    }

    /// `prog` (`svc`, `svstat`, `supervise`, ...) of this side.
    fn command(self, prog: &str) -> Command {
        match self {
            S6v211 => Command::new(format!("s6-{prog}")),
            Tend35 | Tend43 => {
                let mut c = cmd(&format!("tend-{prog}"));
                if self == Tend43 {
                    c.env(tend_proto::status::LAYOUT_ENV, "43");
                }
                c
            }
            S6v213 | S6v215 => {
                let root = self.root().unwrap_or_default();
                let mut c = Command::new("unshare");
                c.args([
                    "-m",
                    "--propagation",
                    "private",
                    "sh",
                    "-c",
                    IN_VERSION,
                    "sh",
                ])
                .arg(&root)
                .arg(root.join(format!("usr/bin/s6-{prog}")))
                .env("LD_LIBRARY_PATH", root.join("usr/lib/x86_64-linux-gnu"));
                c
            }
        }
    }

    fn run(self, prog: &str, args: &[&str], dir: &Path) -> Output {
        let mut c = self.command(prog);
        c.args(args).arg(dir);
        run(c)
    }
}

/// Whether the three versions can run here; if not, say why (a skip).
fn versions_here() -> bool {
    if !nix::unistd::geteuid().is_root() {
        skip("the s6 versions run in a private mount namespace: needs root");
        return false;
    }
    for v in [S6v213, S6v215] {
        let sup = v.root().unwrap_or_default().join("usr/bin/s6-supervise");
        if !sup.is_file() {
            skip(format!(
                "{} absent: run tests/s6-versions/fetch.sh",
                sup.display()
            ));
            return false;
        }
    }
    require("s6-supervise");
    true
}

/// Up, ready (fd 3), a HUP trap that counts reloads; `d` ends it (exit 0).
const RUN: &str = "#!/bin/sh
trap 'echo hup >> hups' HUP
sleep 1000 & p=$!
trap 'kill $p; exit 0' TERM
echo >&3
while :; do wait; done
";

fn start_supervisor(sup: Side, dir: &Path) -> Daemon {
    let mut c = sup.command("supervise");
    c.arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.with_extension("stderr")).unwrap());
    Daemon::start(c)
}

fn record(dir: &Path) -> Option<StatusRecord> {
    StatusRecord::read(dir).ok()
}

/// Poll for a state; a failure names it instead of panicking in the cell's thread.
fn reach(what: &str, mut f: impl FnMut() -> bool) -> Result<(), String> {
    let deadline = std::time::Instant::now() + PATIENCE;
    while !f() {
        if std::time::Instant::now() > deadline {
            return Err(format!("never reached: {what}"));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

fn expect(o: &Output, code: i32, what: &str) -> Result<String, String> {
    if o.status.code() == Some(code) {
        Ok(text(&o.stdout))
    } else {
        Err(format!(
            "{what}: exit {:?}, not {code}; stdout {:?} stderr {:?}",
            o.status.code(),
            text(&o.stdout),
            text(&o.stderr)
        ))
    }
}

const FIELDS: &str = "up,wantedup,ready,exitcode";

/// One cell: `client`'s programs drive `sup`'s supervisor through every command.
fn cell(s: &Scratch, sup: Side, client: Side) -> Result<(), String> {
    let dir = ServiceDir::new(s.join(format!("{}-by-{}", sup.name(), client.name())))
        .run(RUN)
        .notification_fd(3)
        .path();
    let _cleanup = KillUnder(dir.clone());
    let _daemon = start_supervisor(sup, &dir);
    reach("up and ready", || {
        record(&dir).is_some_and(|r| r.is_up() && r.ready)
    })?;
    let pid = record(&dir).map_or(0, |r| r.pid);
    let bytes = std::fs::metadata(dir.join("supervise/status")).map_or(0, |m| m.len());
    if bytes != sup.size() as u64 {
        return Err(format!("status is {bytes} bytes, not {}", sup.size()));
    }
    let svstat = |args: &[&str]| client.run("svstat", args, &dir);
    if client.is_s6() && client.size() != sup.size() {
        // Upstream's own break, not tend's: 2.13's reader fails on 35 bytes, the others
        // misread 43. The reason for tend's switch (README, "s6 version -> what to do").
        let o = svstat(&["-o", FIELDS]);
        return match (client, o.status.code()) {
            (S6v213, Some(111)) if text(&o.stderr).contains("Broken pipe") => Ok(()),
            (S6v211 | S6v215, Some(0)) if text(&o.stdout) != "true true true -1\n" => Ok(()),
            _ => Err(format!("size mismatch read as {o:?}")),
        };
    }
    let human = expect(&svstat(&[]), 0, "svstat")?;
    if !human.starts_with(&format!("up (pid {pid}")) {
        return Err(format!("svstat said {human:?}"));
    }
    let fields = expect(&svstat(&["-o", FIELDS]), 0, "svstat -o")?;
    if fields != "true true true -1\n" {
        return Err(format!("svstat -o {FIELDS} said {fields:?}"));
    }
    if client.reloads() && sup.reloads() {
        expect(&client.run("svc", &["-l"], &dir), 0, "svc -l")?;
        reach("the HUP trap ran", || {
            std::fs::read_to_string(dir.join("hups")).is_ok_and(|h| h.contains("hup"))
        })?;
    }
    expect(&client.run("svc", &["-d"], &dir), 0, "svc -d")?;
    reach("down", || {
        record(&dir).is_some_and(|r| r.pid == 0 && !r.finishing && !r.want_up)
    })?;
    let fields = expect(&svstat(&["-o", FIELDS]), 0, "svstat -o after -d")?;
    if fields != "false false false 0\n" {
        return Err(format!("svstat -o {FIELDS} after -d said {fields:?}"));
    }
    expect(
        &client.run("svc", &["-wu", "-T", "3000", "-u"], &dir),
        0,
        "svc -wu -T 3000 -u",
    )?;
    if !record(&dir).is_some_and(|r| r.is_up()) {
        return Err("svc -wu returned before up".into());
    }
    expect(
        &client.run("svwait", &["-U", "-t", "5000"], &dir),
        0,
        "svwait -U",
    )?;
    expect(&client.run("svc", &["-Q"], &dir), 0, "svc -Q")?;
    if sup == S6v215 {
        // s6 2.15.1's own bug: its s6-supervise drops Q (its letter table grew to 25, its
        // bound stayed 24), so ./down never comes and the service stays wanted up.
        for _ in 0..40 {
            if dir.join("down").exists() || !record(&dir).is_some_and(|r| r.want_up) {
                return Err("2.15.1's s6-supervise obeyed Q: upstream fixed it?".into());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    } else {
        reach("-Q: ./down, wanted down, still up", || {
            dir.join("down").exists() && record(&dir).is_some_and(|r| !r.want_up && r.is_up())
        })?;
    }
    Ok(())
}

/// Every supervisor × client cell, run concurrently; all failures reported together.
#[test]
fn supervisor_by_client_matrix() {
    if !versions_here() {
        return;
    }
    let s = Scratch::new("versions-matrix");
    let failures: Vec<String> = std::thread::scope(|scope| {
        let cells: Vec<_> = SUPERVISORS
            .iter()
            .flat_map(|&sup| CLIENTS.iter().map(move |&cl| (sup, cl)))
            .map(|(sup, cl)| {
                let s = &s;
                (sup, cl, scope.spawn(move || cell(s, sup, cl)))
            })
            .collect();
        cells
            .into_iter()
            .filter_map(|(sup, cl, h)| {
                let r = h.join().unwrap_or_else(|_| Err("panicked".into()));
                r.err()
                    .map(|e| format!("supervisor {} x client {}: {e}", sup.name(), cl.name()))
            })
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The first status of a normally-down service is s6 2.13.2+'s "not started yet" mark
/// (paused, pid 0): 2.15.1's s6-svstat and tend-svstat say so, and neither calls it
/// paused.
#[test]
fn not_started_yet_as_2_15_reads_it() {
    if !versions_here() {
        return;
    }
    let s = Scratch::new("versions-notstarted");
    let dir = ServiceDir::new(s.join("sv")).run(SLEEPER).down().path();
    let _cleanup = KillUnder(dir.clone());
    let _d = start_supervisor(Tend35, &dir);
    wait_until(PATIENCE, "status", || record(&dir));
    let rec = record(&dir).unwrap();
    assert!(rec.paused && rec.pid == 0, "{rec:?}");
    for client in [S6v215, Tend35] {
        let o = client.run("svstat", &[], &dir);
        assert_code(&o, 0);
        assert_eq!(
            text(&o.stdout),
            "down (not started yet) \n",
            "{}",
            client.name()
        );
        let o = client.run("svstat", &["-o", "paused,up,exitcode"], &dir);
        assert_eq!(text(&o.stdout), "false false -1\n", "{}", client.name());
    }
    // After the first command the mark is gone, as in s6.
    assert_code(&tend("tend-svc", [Path::new("-o"), &dir]), 0);
    wait_status(&dir, "once: up", |r| r.is_up() && !r.paused);
}

/// A tree started with `tend-svscan --status-size 43` writes 2.13's layout in every
/// supervisor, with the pid in the pgid field; 2.13.1's clients read and drive it, and
/// tend's read it too.
#[test]
fn svscan_status_size_43_serves_2_13_clients() {
    if !versions_here() {
        return;
    }
    let s = Scratch::new("versions-tree43");
    let scan = s.join("scan");
    let dir = ServiceDir::new(scan.join("a")).run(SLEEPER).path();
    let _cleanup = KillUnder(scan.clone());
    let mut c = cmd("tend-svscan");
    // The option wins over an inherited TEND_STATUS_SIZE (the supervisor reads the last).
    c.args(["--status-size", "43"])
        .arg(&scan)
        .env(tend_proto::status::LAYOUT_ENV, "35")
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    let _tree = Daemon::start(c);
    let rec = wait_status(&dir, "a up", |r| r.is_up());
    let raw = std::fs::read(dir.join("supervise/status")).unwrap();
    assert_eq!(raw.len(), 43);
    assert_eq!(
        raw[32..40],
        rec.pid.to_be_bytes(),
        "the pgid field holds the pid"
    );
    let o = S6v213.run("svstat", &[], &dir);
    assert_code(&o, 0);
    let want = format!("up (pid {0} pgid {0}) ", rec.pid);
    assert!(text(&o.stdout).starts_with(&want), "{o:?}");
    // tend's runit front end reads it too.
    let o = tend("tend-sv", [Path::new("status"), &dir]);
    assert!(text(&o.stdout).starts_with("run: "), "{o:?}");
    assert_code(&S6v213.run("svc", &["-wd", "-T", "3000", "-d"], &dir), 0);
    // sleep killed by SIGTERM: no exit code.
    let o = tend("tend-svstat", [Path::new("-o"), Path::new(FIELDS), &dir]);
    assert_eq!(text(&o.stdout), "false false false -1\n");
    let o = cmd("tend-svscan")
        .args(["-S", "44"])
        .arg(&scan)
        .output()
        .unwrap();
    assert_code(&o, 100);
}

/// s6-svscanctl of each version drives tend-svscan, and tend-svscanctl drives each
/// version's s6-svscan: a new service is picked up (`-a`), then the scanner told to stop
/// (`-t`).
#[test]
fn scanners_and_scanctl_both_ways() {
    if !versions_here() {
        return;
    }
    let s = Scratch::new("versions-scan");
    let pairs = [
        (Tend35, S6v211),
        (Tend35, S6v213),
        (Tend35, S6v215),
        (S6v211, Tend35),
        (S6v213, Tend35),
        (S6v215, Tend35),
    ];
    let failures: Vec<String> = std::thread::scope(|scope| {
        let hs: Vec<_> = pairs
            .iter()
            .map(|&(scanner, ctl)| {
                let s = &s;
                (
                    scanner,
                    ctl,
                    scope.spawn(move || scan_pair(s, scanner, ctl)),
                )
            })
            .collect();
        hs.into_iter()
            .filter_map(|(a, b, h)| {
                let r = h.join().unwrap_or_else(|_| Err("panicked".into()));
                r.err()
                    .map(|e| format!("scanner {} x scanctl {}: {e}", a.name(), b.name()))
            })
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn scan_pair(s: &Scratch, scanner: Side, ctl: Side) -> Result<(), String> {
    let scan = s.join(format!("{}-by-{}", scanner.name(), ctl.name()));
    let a = ServiceDir::new(scan.join("a")).run(SLEEPER).path();
    let _cleanup = KillUnder(scan.clone());
    let mut c = scanner.command("svscan");
    c.arg(&scan)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut tree = Daemon::start(c);
    let up = |d: &Path| running(d) && record(d).is_some_and(|r| r.is_up());
    reach("a up", || up(&a))?;
    let b = ServiceDir::new(scan.join("b")).run(SLEEPER).path();
    expect(&ctl.run("svscanctl", &["-a"], &scan), 0, "svscanctl -a")?;
    reach("b up after -a", || up(&b))?;
    expect(&ctl.run("svscanctl", &["-t"], &scan), 0, "svscanctl -t")?;
    tree.wait_exit(PATIENCE)
        .map(|_| ())
        .ok_or_else(|| "the scanner did not exit after -t".to_string())
}

/// 2.15's s6-svscan options: -C and -L (clamped), the long forms; a name longer than
/// name_max is not started, with s6's warning.
#[test]
fn svscan_takes_2_15_options() {
    let s = Scratch::new("versions-svscan-opts");
    let scan = s.join("scan");
    let short = ServiceDir::new(scan.join("short")).run(SLEEPER).path();
    let second = ServiceDir::new(scan.join("second")).run(SLEEPER).path();
    let long = ServiceDir::new(scan.join("abcdefghijkl"))
        .run(SLEEPER)
        .path();
    let _cleanup = KillUnder(scan.clone());
    let err = s.join("stderr");
    let mut c = cmd("tend-svscan");
    c.args([
        "--services-max=10",
        "--name-max",
        "3",
        "-C",
        "1",
        "--timeout",
        "0",
    ])
    .arg(&scan)
    .stdin(Stdio::null())
    .stderr(std::fs::File::create(&err).unwrap());
    let _tree = Daemon::start(c);
    // -L 3 is raised to 11 (both short names start), -C 1 to 4 (both fit).
    wait_status(&short, "short up", |r| r.is_up());
    wait_status(&second, "second up", |r| r.is_up());
    wait_until(PATIENCE, "the warning", || {
        std::fs::read_to_string(&err)
            .ok()
            .filter(|e| e.contains("name too long - not spawning service: abcdefghijkl"))
    });
    assert!(!long.join("supervise").exists());
    let o = tend("tend-svscan", ["--nope", "x"]);
    assert_code(&o, 100);
}

/// The newer supervisor surface on tend-supervise, each by its real effect: P C K on the
/// process group, `l` with `reload-signal`, flag-timeout-killpg, finish's 4th argument.
#[test]
fn group_letters_reload_signal_killpg_and_finish_pid() {
    let c = Case::with("versions-surface", |d| {
        d.run("#!/bin/sh\ntrap 'echo usr1 >> reloads' USR1\ntrap '' TERM\nsleep 1000 & echo $! > child\nwhile :; do wait; done\n")
            .finish("#!/bin/sh\necho \"$4\" > finish-pid\n")
            .file("reload-signal", "USR1\n")
            .file("timeout-kill", "200\n")
            .file("flag-timeout-killpg", "")
    });
    let rec = c.sup.wait_up();
    let child: i32 = wait_until(PATIENCE, "child pid", || {
        std::fs::read_to_string(c.dir.join("child"))
            .ok()?
            .trim()
            .parse()
            .ok()
    });
    let svc = |l: &str| assert_code(&tend("tend-svc", [Path::new(l), &c.dir]), 0);
    svc("-P");
    wait_until(PATIENCE, "group stopped", || {
        (proc_state(child as u64) == 'T' && proc_state(rec.pid) == 'T').then_some(())
    });
    c.sup.wait_status("paused", |r| r.paused);
    svc("-C");
    wait_until(PATIENCE, "group continued", || {
        (proc_state(child as u64) != 'T' && proc_state(rec.pid) != 'T').then_some(())
    });
    c.sup.wait_status("not paused", |r| !r.paused);
    svc("-l");
    wait_until(PATIENCE, "USR1 trapped", || {
        std::fs::read_to_string(c.dir.join("reloads"))
            .ok()
            .filter(|r| r.contains("usr1"))
    });
    // TERM is ignored by run and its child: timeout-kill's SIGKILL reaches both.
    svc("-d");
    wait_until(PATIENCE, "child killed with its group", || {
        (proc_state(child as u64) == '?' || proc_state(child as u64) == 'Z').then_some(())
    });
    let pid4 = wait_until(PATIENCE, "finish's 4th argument", || {
        std::fs::read_to_string(c.dir.join("finish-pid"))
            .ok()
            .filter(|p| !p.is_empty())
    });
    assert_eq!(pid4.trim(), rec.pid.to_string());
}

/// `K` kills the whole process group.
#[test]
fn letter_k_kills_the_group() {
    let c = Case::run(
        "versions-K",
        "#!/bin/sh\nsleep 1000 & echo $! > child\nwhile :; do wait; done\n",
    );
    c.sup.wait_up();
    let child: i32 = wait_until(PATIENCE, "child pid", || {
        std::fs::read_to_string(c.dir.join("child"))
            .ok()?
            .trim()
            .parse()
            .ok()
    });
    assert_code(&tend("tend-svc", [Path::new("-dK"), &c.dir]), 0);
    wait_until(PATIENCE, "child killed", || {
        matches!(proc_state(child as u64), '?' | 'Z').then_some(())
    });
}

/// `flag-newpidns`: ./run is PID 1 of a new PID namespace, and when it dies what it left
/// in there is gone too.
#[test]
fn flag_newpidns_run_is_pid_1_and_takes_its_namespace_along() {
    if !nix::unistd::geteuid().is_root() {
        skip("flag-newpidns needs CAP_SYS_ADMIN");
        return;
    }
    let mut c = Case::with("versions-newpidns", |d| {
        d.run("#!/bin/sh\necho $$ > inner\nsleep 1000 &\nexec sleep 1001\n")
            .file("flag-newpidns", "")
            .file("down-signal", "KILL\n")
    });
    let rec = c.sup.wait_up();
    let inner = wait_until(PATIENCE, "inner pid", || {
        std::fs::read_to_string(c.dir.join("inner"))
            .ok()
            .filter(|p| !p.is_empty())
    });
    assert_eq!(inner.trim(), "1");
    let sup = c.sup.daemon().pid();
    let left = wait_until(PATIENCE, "the background sleep", || {
        let v: Vec<i32> = procs_under(&c.dir)
            .into_iter()
            .filter(|&p| p != sup && p as u64 != rec.pid)
            .collect();
        (!v.is_empty()).then_some(v)
    });
    assert_code(&tend("tend-svc", [Path::new("-d"), &c.dir]), 0);
    wait_until(PATIENCE, "the namespace emptied", || {
        left.iter()
            .all(|&p| matches!(proc_state(p as u64), '?' | 'Z'))
            .then_some(())
    });
    // The supervisor is back in its own namespace: ./run starts again, and so does
    // ./finish-less bookkeeping.
    assert_code(&tend("tend-svc", [Path::new("-u"), &c.dir]), 0);
    c.sup.wait_up();
}

/// tend-svc's option letters and its usage line are proto's LETTERS (issue 33: one fact,
/// one place).
#[test]
fn svc_letters_are_protos() {
    let o = tend("tend-svc", Vec::<&str>::new());
    assert_code(&o, 100);
    let usage = text(&o.stderr);
    let want = format!("[ -{} ]", tend_proto::control::LETTERS);
    assert!(usage.contains(&want), "{usage}");
    let s = Scratch::new("versions-letters");
    let missing = s.join("missing");
    for b in (b'0'..=b'9').chain(b'a'..=b'z').chain(b'A'..=b'Z') {
        let l = b as char;
        if "Tws".contains(l) {
            continue;
        }
        let o = tend("tend-svc", [Path::new(&format!("-{l}")), &missing]);
        let code = if tend_proto::control::LETTERS.contains(l) {
            111
        } else {
            100
        };
        assert_code(&o, code);
    }
}

/// tend-svscanctl's option letters and its usage line are proto's SCAN_LETTERS.
#[test]
fn svscanctl_letters_are_protos() {
    let o = tend("tend-svscanctl", Vec::<&str>::new());
    assert_code(&o, 100);
    let usage = text(&o.stderr);
    let want = format!("[ -{} ]", tend_proto::control::SCAN_LETTERS);
    assert!(usage.contains(&want), "{usage}");
    let s = Scratch::new("versions-scan-letters");
    let missing = s.join("missing");
    for b in (b'0'..=b'9').chain(b'a'..=b'z').chain(b'A'..=b'Z') {
        let l = b as char;
        let o = tend("tend-svscanctl", [Path::new(&format!("-{l}")), &missing]);
        let code = if tend_proto::control::SCAN_LETTERS.contains(l) {
            111
        } else {
            100
        };
        assert_code(&o, code);
    }
}

/// Several service directories in one call (s6 2.14): each gets the letters; a failure
/// is a warning and sets the exit code.
#[test]
fn svc_several_dirs() {
    let s = Scratch::new("versions-several");
    let a = ServiceDir::new(s.join("a")).run(SLEEPER).path();
    let b = ServiceDir::new(s.join("b")).run(SLEEPER).path();
    let sa = Supervised::start("tend-supervise", &a);
    let sb = Supervised::start("tend-supervise", &b);
    sa.wait_up();
    sb.wait_up();
    let o = tend("tend-svc", [Path::new("-d"), &a, &b]);
    assert_code(&o, 0);
    sa.wait_status("a down", |r| r.pid == 0 && !r.want_up);
    sb.wait_status("b down", |r| r.pid == 0 && !r.want_up);
    let nobody = ServiceDir::new(s.join("nobody")).run(SLEEPER).path();
    let o = tend("tend-svc", [Path::new("-u"), &nobody, &a]);
    assert_code(&o, 100);
    assert!(
        text(&o.stderr).contains("warning: unable to control"),
        "{o:?}"
    );
    sa.wait_up();
}

/// A status of a size neither layout has is named with both sizes (tend-summary), and
/// is s6's EPIPE for tend-svstat; 43 bytes read.
#[test]
fn other_status_sizes_are_refused() {
    let s = Scratch::new("versions-sizes");
    let scan = s.join("scan");
    let dir = ServiceDir::new(scan.join("sv")).run(SLEEPER).path();
    let sup = Supervised::start("tend-supervise", &dir);
    sup.wait_up();
    for (n, shown) in [
        (36usize, "36 bytes"),
        (42, "42 bytes"),
        (44, "more than 43 bytes"),
        (1, "1 byte"),
    ] {
        std::fs::write(dir.join("supervise/status"), vec![0u8; n]).unwrap();
        let o = tend("tend-summary", [&scan]);
        let want = format!("tend-summary: warning: sv: status: {shown}, expected 35 or 43\n");
        assert!(text(&o.stderr).contains(&want), "{n}: {o:?}");
        let o = tend("tend-svstat", [&dir]);
        assert_code(&o, 111);
        assert!(text(&o.stderr).ends_with("Broken pipe\n"), "{o:?}");
    }
    let mut rec = [0u8; 43];
    rec[38..40].copy_from_slice(&[0x12, 0x34]);
    rec[31] = 0x12;
    rec[30] = 0x34;
    rec[42] = 0x04;
    std::fs::write(dir.join("supervise/status"), rec).unwrap();
    let o = tend(
        "tend-svstat",
        ["-o", "pid,wantedup,exitcode"]
            .map(Path::new)
            .iter()
            .copied()
            .chain([dir.as_path()]),
    );
    assert_eq!(text(&o.stdout), "13330 true -1\n", "{o:?}");
}

/// The switch reaches a tree tend-init starts: with TEND_STATUS_SIZE=43 in its
/// environment, its scanner's supervisors write 2.13's 43 bytes, which tend's clients
/// read (and 2.13's s6-svstat, shown above for a scanner started with -S 43).
#[test]
fn tend_init_passes_the_status_size_to_its_tree() {
    let s = Scratch::new("versions-init43");
    s.write("services/a/run", "#!/bin/sh\nexec sleep 100\n", true);
    let mut c = cmd("tend-init");
    c.arg("-s")
        .arg(s.join("services"))
        .arg("-S")
        .arg(s.join("scan"))
        .args(["-e", "", "-i", "/nonexistent", "-f", "/nonexistent"])
        .args(["-g", "2000", "-k", "500", "sh", "-c"])
        .arg(format!(
            "while ! tend-svstat -o up {0} 2>/dev/null | grep -q true; do sleep 0.05; done; \
             wc -c < {1}/supervise/status",
            s.join("scan/a").display(),
            s.join("scan/a").display()
        ))
        .env(tend_proto::status::LAYOUT_ENV, "43")
        .env("PATH", path_env());
    let o = run(c);
    assert_code(&o, 0);
    assert_eq!(text(&o.stdout).trim(), "43", "{}", text(&o.stderr));
}
