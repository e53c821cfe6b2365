//! The seed's syslogd over a stream socket (examples/syslogd/literal and
//! examples/syslogd/ucspi), with tend's programs and with s6's, in the same test: many
//! logger(1) and glibc syslog(3) clients at once, every message exactly once in the
//! logdir with its priority decoded, the front end running as nobody and the logger as
//! syslog.
//!
//! Each chain runs in a private mount namespace whose /dev is a tmpfs
//! (`crate::syslog::private`), so glibc's syslog(3), which only knows /dev/log, reaches
//! the chain under test and never the machine's.
//!
//! Not tested here: the datagram fallback of the stream chain (glibc tries a datagram
//! socket first and falls back to the stream one; that fallback is what every glibc
//! client here goes through; the datagram front end is tend-socklog, tests/it/syslog.rs).

use crate::common::*;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

const T: Duration = Duration::from_secs(60);
const GLIBC_CLIENTS: usize = 20;
const PER_CLIENT: usize = 25;
const LOGGERS: usize = 10;

/// The uid of the `syslog` account, created if missing (as root); None when it cannot be.
fn syslog_account() -> Option<u32> {
    static ONCE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _g = ONCE.lock().unwrap();
    let lookup = || {
        let o = std::process::Command::new("id")
            .args(["-u", "syslog"])
            .output()
            .ok()?;
        text(&o.stdout).trim().parse().ok()
    };
    if let Some(uid) = lookup() {
        return Some(uid);
    }
    if !nix::unistd::geteuid().is_root() {
        return None;
    }
    let _ = std::process::Command::new("useradd")
        .args([
            "--system",
            "--no-create-home",
            "--shell",
            "/usr/sbin/nologin",
            "syslog",
        ])
        .status();
    lookup()
}

/// The clients, run in the namespace once /dev/log accepts: glibc syslog(3) (Python's
/// syslog module is glibc's openlog/syslog) and logger -T (a stream), all at once.
const CLIENTS: &str = r#"
i=0; until [ -S /dev/log ] && logger -T -u /dev/log -p daemon.info -t probe up 2>/dev/null; do
  i=$((i+1)); [ $i -lt 1200 ] || exit 1; sleep 0.05; done
pids=
n=1; while [ $n -le $GLIBC ]; do
  python3 -c '
import syslog, sys
syslog.openlog("py", syslog.LOG_PID, syslog.LOG_LOCAL1)
for j in range(int(sys.argv[2])):
    syslog.syslog(syslog.LOG_WARNING, "glibc %s %d" % (sys.argv[1], j))' $n $PER &
  pids="$pids $!"; n=$((n+1)); done
n=1; while [ $n -le $LOGGERS ]; do
  logger -T -u /dev/log -p local3.err -t lg "logger $n" & pids="$pids $!"; n=$((n+1)); done
wait $pids
echo clients done
"#;

/// The logdir's lines (current and archives).
fn lines_of(dir: &Path) -> Vec<String> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if n == "current" || n.ends_with(".s") || n.ends_with(".u") {
            let t = std::fs::read(e.path()).unwrap_or_default();
            v.extend(text(&t).lines().map(str::to_string));
        }
    }
    v
}

/// (priority, message) of each client line: the decoded prefix and the text after the
/// tag, so timestamps and pids do not count.
fn messages(lines: &[String]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = lines
        .iter()
        .filter(|l| !l.contains("probe"))
        .filter_map(|l| {
            let (prio, rest) = l.split_once(": ")?;
            let msg = rest.rsplit_once(": ").map_or(rest, |x| x.1);
            Some((prio.to_string(), msg.to_string()))
        })
        .collect();
    v.sort();
    v
}

fn expected() -> Vec<(String, String)> {
    let mut v = Vec::new();
    for i in 1..=GLIBC_CLIENTS {
        for j in 0..PER_CLIENT {
            v.push(("local1.warn".to_string(), format!("glibc {i} {j}")));
        }
    }
    for n in 1..=LOGGERS {
        v.push(("local3.err".to_string(), format!("logger {n}")));
    }
    v.sort();
    v
}

/// The uid of each running process under `root` named `comm`.
fn uids_of(root: &Path, comm: &str) -> Vec<u32> {
    procs_under(root)
        .into_iter()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == comm)
        })
        .filter_map(|pid| {
            std::fs::metadata(format!("/proc/{pid}"))
                .ok()
                .map(|m| m.uid())
        })
        .collect()
}

/// A copy of `from` (a file or a tree) at `to`, with tend's names made s6's for `s6`.
fn copy_as(from: &Path, to: &Path, s6: bool) {
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap().flatten() {
            copy_as(&e.path(), &to.join(e.file_name()), s6);
        }
        return;
    }
    let mut t = std::fs::read_to_string(from).unwrap();
    if s6 {
        t = t
            .replace("tend-ucspilogd", "ucspilogd")
            .replace("tend-", "s6-");
    }
    std::fs::write(to, t).unwrap();
    std::fs::set_permissions(to, std::fs::metadata(from).unwrap().permissions()).unwrap();
}

struct Run {
    lines: Vec<(String, String)>,
}

/// Run the chain `start` (sh, in the namespace, in `s`) and the clients; wait for every
/// message, check who runs each half, and return what the logdir holds.
fn chain(s: &Scratch, stack: &str, start: &str, syslog_uid: u32, front: &str, logger: &str) -> Run {
    let logdir = s.join(format!("{stack}-logdir"));
    std::fs::create_dir_all(&logdir).unwrap();
    nix::unistd::chown(&logdir, Some(nix::unistd::Uid::from_raw(syslog_uid)), None).unwrap();
    let script = format!("{start}\n{CLIENTS}\nwait\n");
    let mut c = crate::syslog::private(Path::new("sh"), &["-c", &script]);
    c.current_dir(&s.path)
        .env("PATH", path_env())
        .env("SYSLOG_DIR", &logdir)
        .env("GLIBC", GLIBC_CLIENTS.to_string())
        .env("PER", PER_CLIENT.to_string())
        .env("LOGGERS", LOGGERS.to_string())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(s.join(format!("{stack}.out"))).unwrap())
        .stderr(std::fs::File::create(s.join(format!("{stack}.err"))).unwrap());
    let _kill = KillUnder(s.path.clone());
    let _d = Daemon::start(c);
    let want = expected().len();
    let got = wait_until(T, &format!("{want} messages in {stack}'s logdir"), || {
        let m = messages(&lines_of(&logdir));
        let done = std::fs::read_to_string(s.join(format!("{stack}.out")))
            .is_ok_and(|o| o.contains("clients done"));
        (done && m.len() >= want).then_some(m)
    });
    let nobody = nix::unistd::User::from_name("nobody")
        .unwrap()
        .unwrap()
        .uid
        .as_raw();
    assert_eq!(
        uids_of(&s.path, front),
        [nobody],
        "{stack}: {front} runs as nobody"
    );
    assert_eq!(
        uids_of(&s.path, logger),
        [syslog_uid],
        "{stack}: {logger} runs as syslog"
    );
    Run { lines: got }
}

fn example(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/syslogd")
        .join(rel)
}

fn prerequisites() -> Option<u32> {
    for p in [
        "logger",
        "python3",
        "execlineb",
        "unshare",
        "s6-ipcserverd",
        "ucspilogd",
    ] {
        require(p);
    }
    let uid = syslog_account();
    if uid.is_none() {
        skip("no syslog account, and not root to create one");
    }
    uid
}

#[test]
fn syslogd_literal_chain_same_as_s6() {
    let Some(uid) = prerequisites() else { return };
    let s = Scratch::new("syslogd-literal");
    let mut runs = Vec::new();
    for (stack, s6) in [("s6", true), ("tend", false)] {
        let script = s.join(format!("{stack}-syslogd"));
        copy_as(&example("literal/syslogd"), &script, s6);
        let (front, logger) = if s6 {
            ("s6-ipcserverd", "s6-log")
        } else {
            ("tend-ipcserverd", "tend-log")
        };
        let start = format!("{} &", script.display());
        runs.push(chain(&s, stack, &start, uid, front, logger));
    }
    assert_eq!(runs[1].lines, expected(), "tend: every message once");
    assert_eq!(runs[0].lines, runs[1].lines, "s6 then tend");
}

#[test]
fn syslogd_supervised_chain_same_as_s6() {
    let Some(uid) = prerequisites() else { return };
    require("s6-svscan");
    let s = Scratch::new("syslogd-supervised");
    let mut runs = Vec::new();
    for (stack, s6) in [("s6", true), ("tend", false)] {
        let scan = s.join(format!("{stack}-scan"));
        copy_as(&example("ucspi/syslogd"), &scan.join("syslogd"), s6);
        let (front, logger, svscan, svok, svwait) = if s6 {
            (
                "s6-ipcserverd",
                "s6-log",
                "s6-svscan",
                "s6-svok",
                "s6-svwait",
            )
        } else {
            (
                "tend-ipcserverd",
                "tend-log",
                "tend-svscan",
                "tend-svok",
                "tend-svwait",
            )
        };
        // Readiness: tend-ipcserverd -1 on the notification fd, once its supervisor runs.
        let start = format!(
            "{svscan} {scan} &\n\
             i=0; until {svok} {scan}/syslogd; do i=$((i+1)); [ $i -lt 1200 ] || exit 2; sleep 0.05; done\n\
             {svwait} -U -t 30000 {scan}/syslogd || exit 3",
            scan = scan.display()
        );
        runs.push(chain(&s, stack, &start, uid, front, logger));
    }
    assert_eq!(runs[1].lines, expected(), "tend: every message once");
    assert_eq!(runs[0].lines, runs[1].lines, "s6 then tend");
}
