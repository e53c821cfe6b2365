//! Faults that used to leave a service down: a supervisor SIGKILLed while its service
//! runs (issue 40). The service outlives it, unsupervised, holding what it holds (a lock,
//! a logdir); the scanner starts a new supervisor, which finds the survivor through
//! `supervise/status` (pid and start stamp checked against /proc) and stops it before
//! starting afresh (tend-supervise(8), "A supervisor that died"). Under tend-svscan and
//! under Debian's s6-svscan running tend-supervise.

use crate::common::*;
use nix::sys::signal::Signal;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const T: Duration = Duration::from_secs(20);

/// Processes (not supervisors) whose cwd is `dir` and whose command line holds `needle`.
fn procs(dir: &Path, needle: &str) -> Vec<i32> {
    // (pid, parent pid), the parent read in the same pass: a shell's child read later
    // may have exec'd `sleep 0.02` and gone, and would count as a second shell.
    let mut found: Vec<(i32, i32)> = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let (Ok(cwd), Ok(cmd), Ok(stat)) = (
            std::fs::read_link(e.path().join("cwd")),
            std::fs::read(e.path().join("cmdline")),
            std::fs::read_to_string(e.path().join("stat")),
        ) else {
            continue;
        };
        let cmd = text(&cmd).replace('\0', " ");
        if cwd == dir && cmd.contains(needle) && !cmd.contains("supervise") {
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, r)| r.split_whitespace().nth(1)?.parse().ok())
                .unwrap_or(0);
            found.push((pid, ppid));
        }
    }
    // A shell's child between its fork and its exec has the shell's command line: count
    // the shell once.
    let all: Vec<i32> = found.iter().map(|&(p, _)| p).collect();
    found
        .into_iter()
        .filter(|&(_, ppid)| !all.contains(&ppid))
        .map(|(p, _)| p)
        .collect()
}

/// The supervisor of `name` (`NAME` or `NAME/log`) under `scanner`.
fn supervisor(scanner: i32, name: &str) -> Option<i32> {
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let ppid: i32 = stat
            .rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().nth(1)?.parse().ok())
            .unwrap_or(0);
        if ppid != scanner {
            continue;
        }
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let argv: Vec<&[u8]> = cmd.split(|&b| b == 0).collect();
        if argv.len() >= 2 && argv[0].ends_with(b"supervise") && argv[1] == name.as_bytes() {
            return Some(pid);
        }
    }
    None
}

struct Services {
    scan: PathBuf,
    lockfile: PathBuf,
    marker: u32,
}

impl Services {
    fn build(s: &Scratch) -> Services {
        let scan = s.join("sd");
        let lockfile = s.join("lockfile");
        std::fs::write(&lockfile, "").unwrap();
        let marker = 100_000 + std::process::id() % 800_000;
        let setlock = bin("tend-setlock");
        let log = bin("tend-log");
        ServiceDir::new(scan.join("lockholder")).run(&format!(
            "#!/bin/sh\nexec {} -n {} sleep {marker}\n",
            setlock.display(),
            lockfile.display()
        ));
        ServiceDir::new(scan.join("plain")).run(&format!("#!/bin/sh\nexec sleep {}\n", marker + 1));
        ServiceDir::new(scan.join("producer")).run(
            "#!/bin/sh\nt=$$; i=0\nwhile :; do echo \"$t $i\"; i=$((i+1)); \
             [ $((i % 100)) = 0 ] && sleep 0.02; done\n",
        );
        ServiceDir::new(scan.join("producer/log")).run(&format!(
            "#!/bin/sh\nexec {} n1000 s200000 ./main\n",
            log.display()
        ));
        Services {
            scan,
            lockfile,
            marker,
        }
    }

    /// How many processes each service has (its one long-lived process each).
    fn counts(&self) -> [usize; 4] {
        let m = self.marker;
        [
            procs(&self.scan.join("lockholder"), &format!("sleep {m}")).len(),
            procs(&self.scan.join("plain"), &format!("sleep {}", m + 1)).len(),
            procs(&self.scan.join("producer"), "./run").len(),
            procs(&self.scan.join("producer/log"), "tend-log").len(),
        ]
    }

    fn one_each(&self) -> bool {
        self.counts() == [1; 4]
    }
}

fn up_pid(dir: &Path) -> Option<i32> {
    let r = tend_proto::StatusRecord::read(dir).ok()?;
    (r.is_up()).then_some(r.pid as i32)
}

/// SIGKILL a random supervisor `kills` times; after each, wait until its service runs
/// again under a new supervisor with one process. Then check every line of the producer.
fn kill_supervisors(scanner_prog: &str, kills: usize) {
    let s = Scratch::new(&format!("faults-{scanner_prog}"));
    let svcs = Services::build(&s);
    let mut c = Command::new(match scanner_prog {
        "s6-svscan" => {
            require("s6-svscan");
            // s6-svscan runs `s6-supervise` from PATH: make that tend-supervise.
            let wrap = s.join("path");
            std::fs::create_dir_all(&wrap).unwrap();
            let w = wrap.join("s6-supervise");
            std::fs::write(
                &w,
                format!(
                    "#!/bin/sh\nexec {} \"$@\"\n",
                    bin("tend-supervise").display()
                ),
            )
            .unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&w, std::fs::Permissions::from_mode(0o755)).unwrap();
            // s6-svscan runs /usr/bin/s6-supervise: in a mount namespace of its own, that
            // path is the wrapper.
            let mut c = Command::new("unshare");
            c.args(["--mount", "--propagation", "private", "sh", "-c"])
                .arg("mount --bind \"$0\" /usr/bin/s6-supervise && exec s6-svscan \"$1\"")
                .arg(&w)
                .arg(&svcs.scan);
            return run_kills(c, &s, &svcs, kills, Some("s6-svscanctl"));
        }
        _ => bin("tend-svscan"),
    });
    c.arg(&svcs.scan);
    run_kills(c, &s, &svcs, kills, None)
}

fn run_kills(mut c: Command, s: &Scratch, svcs: &Services, kills: usize, rescan: Option<&str>) {
    c.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(s.join("scanner.err")).unwrap());
    let mut scanner = Daemon::start(c);
    let names = ["lockholder", "plain", "producer", "producer/log"];
    wait_until(T, "every service up, one process each", || {
        svcs.one_each().then_some(())
    });
    // Each round SIGKILLs every supervisor at once: the scanner starts four new ones,
    // each of which must stop its service's survivor (a logger holding its logdir's
    // lock, a process holding a lock file) before starting it again.
    for round in 0..kills / names.len() {
        let mut old = Vec::new();
        for name in names {
            let sup = wait_until(T, &format!("the supervisor of {name}"), || {
                supervisor(scanner.pid(), name)
            });
            old.push((name, sup, up_pid(&svcs.scan.join(name))));
        }
        for &(_, sup, _) in &old {
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(sup), Signal::SIGKILL).unwrap();
        }
        if let Some(ctl) = &rescan {
            // s6-svscan starts a supervisor again only at its next scan.
            let mut c = Command::new(ctl);
            c.args(["-a", svcs.scan.to_str().unwrap()]);
            assert_code(&run(c), 0);
        }
        wait_until(
            T,
            &format!("round {round}: every service up again under a new supervisor, alone"),
            || {
                for &(name, sup, before) in &old {
                    supervisor(scanner.pid(), name).filter(|&p| p != sup)?;
                    up_pid(&svcs.scan.join(name)).filter(|&p| Some(p) != before)?;
                }
                svcs.one_each().then_some(())
            },
        );
    }
    // Nothing fails in a loop afterwards: the lock holder stays up with the same pid.
    let lock_pid = up_pid(&svcs.scan.join("lockholder")).unwrap();
    stays_for(Duration::from_secs(2), "the lock holder stays up", || {
        let up = up_pid(&svcs.scan.join("lockholder"));
        let counts = svcs.counts();
        if up != Some(lock_pid) || counts != [1; 4] {
            eprintln!("lock holder {up:?} (was {lock_pid}), processes {counts:?}");
            return false;
        }
        true
    });
    // Stop the producer, let the logger drain, then count every line.
    let o = tend(
        "tend-svc",
        [
            "-wD",
            "-T",
            "20000",
            "-d",
            svcs.scan.join("producer").to_str().unwrap(),
        ],
    );
    assert_code(&o, 0);
    let main = svcs.scan.join("producer/log/main");
    let size = || {
        std::fs::read_dir(&main)
            .map(|r| {
                r.flatten()
                    .filter_map(|e| e.metadata().ok())
                    .map(|m| m.len())
                    .sum::<u64>()
            })
            .unwrap_or(0)
    };
    let mut last = size();
    wait_until(T, "the logger to drain the pipe", || {
        std::thread::sleep(Duration::from_millis(300));
        let now = size();
        let still = now == last;
        last = now;
        still.then_some(())
    });
    let (lines, dup_bytes) = check_tagged(&main);
    // At most one pipeful (the logger asks for 256 KiB) written again per logger kill.
    assert!(
        dup_bytes <= kills as u64 * 262_144,
        "{dup_bytes} bytes repeated"
    );
    assert!(lines > 1000, "only {lines} lines");
    scanner.signal(Signal::SIGTERM);
    let _ = scanner.wait_exit(T);
    let _ = svcs.lockfile.exists();
}

/// Lines `TAG N` from producers each numbering from 0: for every tag, every number from
/// 0 to its highest, in order, repeats allowed (a logger killed re-reads what it had not
/// consumed). Returns (distinct lines, bytes repeated).
fn check_tagged(logdir: &Path) -> (u64, u64) {
    let mut names: Vec<String> = std::fs::read_dir(logdir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('@'))
        .collect();
    names.sort();
    names.push("current".into());
    let mut next: std::collections::HashMap<String, u64> = Default::default();
    let (mut lines, mut dups) = (0, 0);
    for n in names {
        let Ok(mut b) = std::fs::read(logdir.join(&n)) else {
            continue;
        };
        if n.ends_with(".u") {
            let keep = b.iter().rposition(|&c| c == b'\n').map_or(0, |i| i + 1);
            b.truncate(keep);
        }
        for l in text(&b).lines() {
            let (tag, num) = l
                .split_once(' ')
                .unwrap_or_else(|| panic!("garbled line {l:?} in {n}"));
            let num: u64 = num
                .parse()
                .unwrap_or_else(|_| panic!("garbled line {l:?} in {n}"));
            let want = next.entry(tag.to_string()).or_insert(0);
            if num < *want {
                dups += l.len() as u64 + 1;
            } else {
                assert_eq!(
                    num, *want,
                    "producer {tag}: line {want} lost (found {num} in {n})"
                );
                *want += 1;
                lines += 1;
            }
        }
    }
    (lines, dups)
}

#[test]
fn supervisors_sigkilled_100_times_leave_no_orphan_and_lose_no_line() {
    kill_supervisors("tend-svscan", 100);
}

#[test]
fn the_same_under_s6_svscan() {
    kill_supervisors("s6-svscan", 100);
}
