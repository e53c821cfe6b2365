//! tend-ipcserver-socketbinder, tend-ipcserverd, tend-ipcserver and tend-ipcclient against
//! Debian's s6 2.11.3 programs: the same environment given to the same program, both ways
//! (a tend client on an s6 server, an s6 client on a tend server), the same limits, the
//! same messages and exit codes; and the hostile cases of issue 25.
//!
//! Not tested here: -G/-g/-u with real ids (tend-env's code, tested with
//! tend-applyuidgid; the syslogd chain test drops to nobody and syslog through
//! tend-applyuidgid); SIGHUP to tend-ipcserverd.

use crate::common::*;
use nix::sys::signal::Signal;
use std::io::{Read, Write};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(30);

/// `binder path server-args... prog...` as a daemon in the scratch dir, stderr to a file.
struct Server {
    daemon: Daemon,
    sock: PathBuf,
    err: PathBuf,
}

impl Server {
    fn start(s: &Scratch, name: &str, binder: &str, server: &[&str], prog: &[&str]) -> Server {
        let sock = s.join(format!("{name}.sock"));
        let err = s.join(format!("{name}.err"));
        let mut c = if binder.starts_with("tend") {
            cmd(binder)
        } else {
            require(binder);
            Command::new(binder)
        };
        c.arg(&sock).args(server).args(prog).current_dir(&s.path);
        c.stdin(Stdio::null()).stdout(Stdio::null());
        c.stderr(std::fs::File::create(&err).unwrap());
        let daemon = Daemon::start(c);
        // Not a probe connection: it would take one of the server's slots. Listening,
        // not only bound: a client run once (s6-ipcclient) is refused in between.
        wait_until(T, "the socket listening", || listening(&sock).then_some(()));
        Server { daemon, sock, err }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.err).unwrap_or_default()
    }

    /// Connect; refused only in the moment between the bind and the listen.
    fn connect(&self) -> UnixStream {
        let c = wait_until(T, "a connection", || UnixStream::connect(&self.sock).ok());
        c.set_read_timeout(Some(T)).unwrap();
        c
    }

    /// Everything the server's program writes to one connection until it closes it.
    fn ask(&self) -> String {
        let mut c = self.connect();
        let mut out = String::new();
        c.read_to_string(&mut out).unwrap();
        out
    }
}

/// Whether a Unix socket is bound at `path` and listens (its flags in /proc/net/unix
/// have __SO_ACCEPTCON).
fn listening(path: &Path) -> bool {
    let Some(want) = path.to_str() else {
        return false;
    };
    std::fs::read_to_string("/proc/net/unix").is_ok_and(|t| {
        t.lines().any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() >= 8 && f[7] == want && f[3] == "00010000"
        })
    })
}

/// The two stacks: (binder, server) program names.
const STACKS: [(&str, &str); 2] = [
    ("s6-ipcserver-socketbinder", "s6-ipcserverd"),
    ("tend-ipcserver-socketbinder", "tend-ipcserverd"),
];

const SHOW_ENV: &str = "env | grep -E '^(PROTO|IPC[A-Z]*)=' | sort";

#[test]
fn ucspi_environment_same_as_s6() {
    let s = Scratch::new("ucspi-env");
    let mut seen = Vec::new();
    for (binder, server) in STACKS {
        for flags in [&[][..], &["-P"][..]] {
            let mut args = vec![server];
            args.extend_from_slice(flags);
            let srv = Server::start(&s, server, binder, &args, &["sh", "-c", SHOW_ENV]);
            let plain = srv.ask();
            seen.push((server, flags.to_vec(), plain));
            drop(srv);
        }
    }
    let (s6, tend): (Vec<_>, Vec<_>) = seen.iter().partition(|(p, _, _)| p.starts_with("s6"));
    for (a, b) in s6.iter().zip(&tend) {
        assert_eq!(a.2, b.2, "flags {:?}: s6 then tend", a.1);
    }
    let uid = nix::unistd::geteuid();
    let gid = nix::unistd::getegid();
    assert_eq!(
        tend[0].2,
        format!(
            "IPCCONNNUM=1\nIPCREMOTEEGID={gid}\nIPCREMOTEEUID={uid}\nIPCREMOTEPATH=\nPROTO=IPC\n"
        )
    );
    assert_eq!(tend[1].2, "IPCCONNNUM=\nIPCREMOTEPATH=\nPROTO=IPC\n");
}

#[test]
fn ucspi_clients_both_ways() {
    let s = Scratch::new("ucspi-both");
    require("s6-ipcclient");
    // The server's program echoes what the client sends, then its own environment's
    // IPCREMOTEPATH; the client's program sends a line on fd 7, reads on fd 6.
    let serve = ["sh", "-c", "read l; echo \"got $l from [$IPCREMOTEPATH]\""];
    let client = "echo hello >&7; read r <&6; echo \"$r $PROTO $IPCLOCALPATH\"";
    for (binder, server) in STACKS {
        let srv = Server::start(&s, server, binder, &[server], &serve);
        let mut outs = Vec::new();
        for cl in ["s6-ipcclient", "tend-ipcclient"] {
            let bound = s.join(format!("{cl}.local"));
            let _ = std::fs::remove_file(&bound);
            let mut c = cmd(cl);
            c.args(["-l", "LOCALNAME", "-p"])
                .arg(&bound)
                .arg(&srv.sock)
                .args(["sh", "-c", client]);
            let o = run(c);
            assert_code(&o, 0);
            outs.push(text(&o.stdout).replace(bound.to_str().unwrap(), "BOUND"));
        }
        assert_eq!(
            outs[0], outs[1],
            "{server}: s6-ipcclient then tend-ipcclient"
        );
        assert_eq!(
            outs[1], "got hello from [BOUND] IPC LOCALNAME\n",
            "{server}"
        );
    }
}

/// Four clients at once against `-c maxconn -C localmax`: what each one reads within
/// a second (the program says its IPCCONNNUM then stays).
fn limits(s: &Scratch, binder: &str, server: &str, c: &str, cc: &str) -> Vec<String> {
    let srv = Server::start(
        s,
        &format!("{server}-{c}-{cc}"),
        binder,
        &[server, "-c", c, "-C", cc],
        &["sh", "-c", "echo $IPCCONNNUM; exec sleep 1000"],
    );
    let mut conns: Vec<UnixStream> = (0..4).map(|_| srv.connect()).collect();
    let mut got = Vec::new();
    for (i, conn) in conns.iter_mut().enumerate() {
        // The connections the server holds answer at once; the others get nothing until
        // a slot frees (never, here) or are closed: a generous second for the first ones.
        conn.set_read_timeout(Some(Duration::from_millis(if i < 2 {
            20_000
        } else {
            1500
        })))
        .unwrap();
        let mut b = [0u8; 16];
        got.push(match conn.read(&mut b) {
            Ok(n) => format!("{:?}", text(&b[..n])),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => "waiting".into(),
            Err(e) => format!("{:?}", e.kind()),
        });
    }
    got
}

#[test]
fn ucspi_limits_same_as_s6() {
    let s = Scratch::new("ucspi-limits");
    for (c, cc, want) in [
        ("2", "2", ["\"1\\n\"", "\"2\\n\"", "waiting", "waiting"]),
        ("3", "1", ["\"1\\n\"", "\"\"", "\"\"", "\"\""]),
    ] {
        let mut both = Vec::new();
        for (binder, server) in STACKS {
            both.push(limits(&s, binder, server, c, cc));
        }
        assert_eq!(both[0], both[1], "-c {c} -C {cc}: s6 then tend");
        assert_eq!(both[1], want, "-c {c} -C {cc}");
    }
}

/// A burst of short connections from one uid: `threads` clients at once, `each` in turn,
/// against `-C 40`; how many were refused (closed with nothing said).
fn refused_in_a_burst(srv: &Server, threads: usize, each: usize) -> usize {
    std::thread::scope(|scope| {
        let clients: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut refused = 0;
                    for _ in 0..each {
                        let mut out = String::new();
                        let _ = srv.connect().read_to_string(&mut out);
                        refused += usize::from(out.is_empty());
                    }
                    refused
                })
            })
            .collect();
        clients.into_iter().map(|c| c.join().unwrap()).sum()
    })
}

/// Issue 34 item 26: a connection whose child has ended no longer counts against its
/// uid's `-C` limit, even when its SIGCHLD is still pending behind the next accepts.
/// 16 clients of one uid never hold more than 16 connections, so `-c 1000 -C 40`
/// refuses none: 2 x 5000 connections, on s6's stack and on tend's.
#[test]
fn ipcserverd_burst_of_short_connections_within_localmax() {
    let _turn = TEN_THOUSAND.lock().unwrap_or_else(|e| e.into_inner());
    let s = Scratch::new("ucspi-burst");
    for (binder, server) in STACKS {
        let srv = Server::start(
            &s,
            server,
            binder,
            &[server, "-c", "1000", "-C", "40"],
            &["echo", "x"],
        );
        for round in 1..=2 {
            let refused = refused_in_a_burst(&srv, 16, 5000 / 16);
            assert_eq!(refused, 0, "{server}: round {round}: {}", srv.stderr());
        }
    }
}

#[test]
fn ipcserverd_verbose_lines() {
    let s = Scratch::new("ucspi-verbose");
    let srv = Server::start(
        &s,
        "v",
        "tend-ipcserver-socketbinder",
        &["tend-ipcserverd", "-v", "2", "-c", "3", "-C", "1"],
        &["sh", "-c", "exit 3"],
    );
    assert_eq!(srv.ask(), "");
    let uid = nix::unistd::geteuid();
    let gid = nix::unistd::getegid();
    let err = wait_until(T, "the end line", || {
        let e = srv.stderr();
        e.contains(" end pid ").then_some(e)
    });
    let masked: Vec<String> = err
        .lines()
        .map(|l| {
            l.split(' ')
                .map(|w| {
                    if w.parse::<u32>().is_ok_and(|n| n > 99) {
                        "PID"
                    } else {
                        w
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    assert_eq!(
        masked[..4],
        [
            "tend-ipcserverd: info: starting".to_string(),
            "tend-ipcserverd: info: status: 0/3".into(),
            format!("tend-ipcserverd: info: allow {uid}:{gid} pid PID count 1/1"),
            "tend-ipcserverd: info: status: 1/3".into(),
        ],
        "{err}"
    );
    assert!(
        masked[4] == format!("tend-ipcserverd: info: end pid PID uid {uid} exitcode 3"),
        "{err}"
    );
}

#[test]
fn ipcserverd_readiness_newline() {
    let s = Scratch::new("ucspi-ready");
    let sock = s.join("r.sock");
    let mut c = cmd("tend-ipcserver-socketbinder");
    c.arg(&sock)
        .args(["tend-ipcserverd", "-1", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut d = Daemon::start(c);
    let mut out = d.child.stdout.take().unwrap();
    let mut got = Vec::new();
    // fd 1 is closed after the newline: read to EOF.
    out.read_to_end(&mut got).unwrap();
    assert_eq!(got, b"\n");
    assert!(UnixStream::connect(&sock).is_ok());
    // tend-ipcserver's -1 says the same once bound.
    let sock2 = s.join("r2.sock");
    let mut c = cmd("tend-ipcserver");
    c.args(["-1"])
        .arg(&sock2)
        .arg("true")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut d2 = Daemon::start(c);
    let mut got = Vec::new();
    d2.child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut got)
        .unwrap();
    assert_eq!(got, b"\n");
    assert!(UnixStream::connect(&sock2).is_ok());
}

fn fails(mut c: Command, code: i32, stderr: &str) {
    c.stdin(Stdio::null());
    let o = run(c);
    assert_code(&o, code);
    assert_eq!(text(&o.stderr), stderr);
}

fn tend_cmd(prog: &str, args: &[&dyn AsRef<std::ffi::OsStr>]) -> Command {
    let mut c = cmd(prog);
    for a in args {
        c.arg(a);
    }
    c
}

#[test]
fn socketbinder_bad_input() {
    let s = Scratch::new("ucspi-bad");
    let b = "tend-ipcserver-socketbinder";
    let usage = "tend-ipcserver-socketbinder: usage: tend-ipcserver-socketbinder [ -d | -D ] [ -b backlog ] [ -M | -m ] [ -a perms ] [ -B ] path prog...\n";
    fails(tend_cmd(b, &[]), 100, usage);
    fails(tend_cmd(b, &[&"x"]), 100, usage);
    fails(tend_cmd(b, &[&"-a", &"999", &"x", &"true"]), 100, usage);
    // Longer than sun_path (s6 says "Protocol error"; the kernel's word is this one).
    let long = s.join("x".repeat(120));
    fails(
        tend_cmd(b, &[&long, &"true"]),
        111,
        &format!(
            "{b}: fatal: unable to bind to {}: File name too long\n",
            long.display()
        ),
    );
    let missing = s.join("no/such/dir/s");
    fails(
        tend_cmd(b, &[&missing, &"true"]),
        111,
        &format!(
            "{b}: fatal: unable to bind to {}: No such file or directory\n",
            missing.display()
        ),
    );
    // A file, a directory, a symlink in the way: refused and left as they are (s6
    // unlinks a file or a symlink there and binds).
    std::fs::write(s.join("file"), "keep").unwrap();
    std::fs::create_dir(s.join("dir")).unwrap();
    std::os::unix::fs::symlink("file", s.join("link")).unwrap();
    for name in ["file", "dir", "link"] {
        let p = s.join(name);
        fails(
            tend_cmd(b, &[&p, &"true"]),
            111,
            &format!(
                "{b}: fatal: unable to bind to {}: File exists\n",
                p.display()
            ),
        );
    }
    assert_eq!(std::fs::read_to_string(s.join("file")).unwrap(), "keep");
    assert!(
        std::fs::symlink_metadata(s.join("link"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    // A directory we cannot write (as nobody, in a root-owned 0755 directory).
    if nix::unistd::geteuid().is_root() {
        let ro = s.join("ro");
        std::fs::create_dir(&ro).unwrap();
        let p = ro.join("s");
        let mut c = cmd("tend-setuidgid");
        c.arg("nobody").arg(bin(b)).arg(&p).arg("true");
        fails(
            c,
            111,
            &format!(
                "{b}: fatal: unable to bind to {}: Permission denied\n",
                p.display()
            ),
        );
    } else {
        skip("the unwritable directory case needs root (to become nobody)");
    }
    // A live socket is refused; a stale one is replaced.
    let live = std::os::unix::net::UnixListener::bind(s.join("live")).unwrap();
    fails(
        tend_cmd(b, &[&s.join("live"), &"true"]),
        111,
        &format!(
            "{b}: fatal: unable to bind to {}: Address already in use\n",
            s.join("live").display()
        ),
    );
    drop(live);
    let o = run(tend_cmd(
        b,
        &[&s.join("live"), &"sh", &"-c", &"test -S /dev/stdin"],
    ));
    assert_code(&o, 0);
    assert!(
        std::fs::symlink_metadata(s.join("live"))
            .unwrap()
            .file_type()
            .is_socket()
    );
    let o = run(tend_cmd(b, &[&s.join("exec"), &"/no/such/prog"]));
    assert_code(&o, 127);
    assert!(
        text(&o.stderr).starts_with(&format!("{b}: fatal: unable to exec /no/such/prog: ")),
        "{}",
        text(&o.stderr)
    );
    // -m: a datagram socket, on fd 0.
    let o = run(tend_cmd(
        b,
        &[
            &"-m",
            &"-a",
            &"0700",
            &s.join("dg"),
            &"sh",
            &"-c",
            &"test -S /dev/stdin",
        ],
    ));
    assert_code(&o, 0);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::symlink_metadata(s.join("dg"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o700
    );
}

/// The listening socket handed to prog is non-blocking, and blocking with -B: the file
/// status flags of its fd 0 are s6-ipcserver-socketbinder's, with and without -B.
#[test]
fn socketbinder_blocking_flag_same_as_s6() {
    require("s6-ipcserver-socketbinder");
    let s = Scratch::new("ucspi-blocking");
    let flags = "grep flags /proc/self/fdinfo/0";
    for (i, opts) in [&[][..], &["-B"][..]].iter().enumerate() {
        let out = |prog: &str, n: &str| {
            let mut c = if prog.starts_with("tend") {
                cmd(prog)
            } else {
                Command::new(prog)
            };
            c.args(*opts)
                .arg(s.join(format!("{n}{i}")))
                .args(["sh", "-c", flags]);
            let o = run(c);
            assert_code(&o, 0);
            text(&o.stdout)
        };
        let ours = out("tend-ipcserver-socketbinder", "t");
        assert_eq!(ours, out("s6-ipcserver-socketbinder", "s"), "{opts:?}");
        let bits = u32::from_str_radix(ours.trim().trim_start_matches("flags:").trim(), 8).unwrap();
        assert_eq!(
            bits & 0o4000 != 0,
            opts.is_empty(),
            "O_NONBLOCK with {opts:?}: {ours}"
        );
    }
}

#[test]
fn ipcserverd_bad_input() {
    let d = "tend-ipcserverd";
    let usage = "tend-ipcserverd: usage: tend-ipcserverd [ -1 ] [ -v verbosity ] [ -P | -p ] [ -c maxconn ] [ -C localmaxconn ] prog...\n";
    fails(tend_cmd(d, &[]), 100, usage);
    fails(tend_cmd(d, &[&"-c", &"x", &"true"]), 100, usage);
    fails(
        tend_cmd(d, &[&"true"]),
        100,
        "tend-ipcserverd: fatal: stdin is not a socket\n",
    );
    let s = Scratch::new("ucspi-client-bad");
    let c = "tend-ipcclient";
    fails(
        tend_cmd(c, &[]),
        100,
        "tend-ipcclient: usage: tend-ipcclient [ -q | -Q | -v ] [ -p bindpath ] [ -l localname ] path prog...\n",
    );
    let nope = s.join("nope");
    fails(
        tend_cmd(c, &[&nope, &"true"]),
        111,
        &format!(
            "{c}: fatal: unable to connect to {}: No such file or directory\n",
            nope.display()
        ),
    );
    // A stale socket: refused, as s6-ipcclient says.
    drop(std::os::unix::net::UnixListener::bind(s.join("stale")).unwrap());
    fails(
        tend_cmd(c, &[&s.join("stale"), &"true"]),
        111,
        &format!(
            "{c}: fatal: unable to connect to {}: Connection refused\n",
            s.join("stale").display()
        ),
    );
    fails(
        tend_cmd("tend-ipcserver", &[&"-c"]),
        100,
        "tend-ipcserver: usage: tend-ipcserver [ -q | -Q | -v ] [ -d | -D ] [ -P | -p ] [ -1 ] [ -c maxconn ] [ -C localmaxconn ] [ -b backlog ] [ -a socketperms ] [ -G gid,gid,... ] [ -g gid ] [ -u uid ] [ -U ] path prog...\n",
    );
}

/// Open fds and resident memory of a process.
/// The fds a process holds, and its anonymous and file-backed resident memory in kB.
/// A leak grows the anonymous part (heap, stack); the file-backed part grows as code runs
/// for the first time, such as the path taken at the connection limit, which only a
/// loaded machine may reach.
fn footprint(pid: i32) -> (usize, u64, u64) {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb = |field: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
            .unwrap()
    };
    (fds, kb("RssAnon:"), kb("RssFile:"))
}

fn children_of(pid: i32) -> usize {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .map(|s| s.split_whitespace().count())
        .unwrap_or(0)
}

/// The two tests that open 10,000 connections take turns: run together on a loaded
/// machine, each one's children wait for CPU behind the other's and its waits run out.
static TEN_THOUSAND: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn ipcserverd_10000_connections_leave_nothing_behind() {
    let _turn = TEN_THOUSAND.lock().unwrap_or_else(|e| e.into_inner());
    let s = Scratch::new("ucspi-10000");
    let srv = Server::start(
        &s,
        "many",
        "tend-ipcserver-socketbinder",
        &["tend-ipcserverd", "-c", "1000", "-C", "1000"],
        &["true"],
    );
    let pid = srv.daemon.pid();
    // Idle, before any client: the fds the daemon holds. No children is not enough to be
    // settled: a connection accepted and not yet forked holds one more fd for a moment.
    // The socket exists once the binder has bound it, before it has exec'd into
    // tend-ipcserverd and that has made its signalfd: only then is the fd count the
    // daemon's own.
    let serving = || {
        std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|d| {
            d.flatten().any(|e| {
                std::fs::read_link(e.path()).is_ok_and(|l| l.as_os_str() == "anon_inode:[signalfd]")
            })
        })
    };
    let idle = wait_until(T, "the daemon idle", || {
        (serving() && children_of(pid) == 0).then(|| footprint(pid).0)
    });
    let settle = |what: &str| {
        wait_until(T, what, || {
            let f = footprint(pid);
            (children_of(pid) == 0 && f.0 == idle).then_some(f)
        })
    };
    for _ in 0..100 {
        drop(srv.connect());
    }
    let before = settle("the warm-up children to end");
    let start = Instant::now();
    for i in 0..10_000 {
        let mut c = srv.connect();
        if i % 2 == 0 {
            // Half of them say something first.
            let _ = c.write_all(b"x");
        }
    }
    let after = settle("10,000 children to end");
    assert_eq!(after.0, before.0, "fds before and after");
    assert!(
        after.1 <= before.1 + 64,
        "RssAnon grew from {} to {} kB (RssFile from {} to {} kB)",
        before.1,
        after.1,
        before.2,
        after.2
    );
    println!(
        "10,000 connections in {:?}; fds {}, RssAnon {} kB, RssFile {} to {} kB",
        start.elapsed(),
        after.0,
        after.1,
        before.2,
        after.2
    );
    assert!(srv.stderr().is_empty(), "{}", srv.stderr());
}

#[test]
fn ipcserverd_sigterm_lets_an_idle_client_finish() {
    let s = Scratch::new("ucspi-idle");
    let srv = Server::start(
        &s,
        "idle",
        "tend-ipcserver-socketbinder",
        &["tend-ipcserverd"],
        &["tend-ucspilogd"],
    );
    let pid = srv.daemon.pid();
    let mut idle = srv.connect();
    wait_until(T, "the child", || (children_of(pid) == 1).then_some(()));
    let (fds, _, _) = footprint(pid);
    srv.daemon.signal(Signal::SIGTERM);
    // It stops accepting at once...
    wait_until(T, "new clients refused", || {
        UnixStream::connect(&srv.sock).is_err().then_some(())
    });
    // ...and lives on while its child serves the idle client, which can still log. A
    // probe above that came before the SIGTERM was accepted and has a child too, which
    // ends as the probe has gone: wait for them, and the idle client's child stays.
    wait_until(T, "only the idle client's child", || {
        (children_of(pid) == 1).then_some(())
    });
    assert!(footprint(pid).0 < fds, "the listening socket is closed");
    idle.write_all(b"<13>late line\n").unwrap();
    let mut back = String::new();
    idle.shutdown(std::net::Shutdown::Write).unwrap();
    idle.read_to_string(&mut back).unwrap();
    assert_eq!(back, "user.notice: late line\n");
    drop(idle);
    let mut srv = srv;
    let st = srv.daemon.wait_exit(T).expect("tend-ipcserverd to exit");
    assert_eq!(st.code(), Some(0));
}

#[test]
fn ipcserver_in_one_process() {
    let s = Scratch::new("ucspi-server");
    let sock = s.join("one.sock");
    let mut c = cmd("tend-ipcserver");
    c.args(["-v", "-a", "0700", "-c", "5"])
        .arg(&sock)
        .args(["sh", "-c", "echo $PROTO $IPCCONNNUM"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(s.join("err")).unwrap());
    let _d = Daemon::start(c);
    let mut conn = wait_until(T, "tend-ipcserver's socket", || {
        UnixStream::connect(&sock).ok()
    });
    let mut out = String::new();
    conn.read_to_string(&mut out).unwrap();
    assert_eq!(out, "IPC 1\n");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::symlink_metadata(&sock)
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o700
    );
    let err = std::fs::read_to_string(s.join("err")).unwrap();
    assert!(err.starts_with("tend-ipcserver: info: starting\n"), "{err}");
}

/// What a root client and a nobody client read through `server access-prog ARGS sh -c`,
/// and the access program's stderr with pids masked.
fn through_access(s: &Scratch, stack: usize, args: &[&str]) -> (String, String, String) {
    let (binder, server) = STACKS[stack];
    let access = if stack == 0 {
        "s6-ipcserver-access"
    } else {
        "tend-ipcserver-access"
    };
    let mut srv_args = vec![server, access];
    srv_args.extend_from_slice(args);
    // A short name: the socket's path must fit in sun_path.
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let name = format!(
        "a{stack}-{}",
        N.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    );
    let srv = Server::start(
        s,
        &name,
        binder,
        &srv_args,
        &[
            "sh",
            "-c",
            "echo \"ok [$GREETING] [$IPCLOCALPATH] [$PROTO] [$IPCREMOTEEUID]\"",
        ],
    );
    let root = srv.ask().replace(srv.sock.to_str().unwrap(), "SOCK");
    let mut c = cmd("tend-setuidgid");
    c.arg("nobody")
        .arg(bin("tend-ipcclient"))
        .arg(&srv.sock)
        .args(["sh", "-c", "cat <&6"]);
    let nobody = text(&run(c).stdout).replace(srv.sock.to_str().unwrap(), "SOCK");
    let err = wait_until(T, "the access program's lines", || {
        let e = srv.stderr();
        (e.lines().count() >= 1 || args.starts_with(&["-v", "0"])).then_some(e)
    });
    let err = err
        .replace(access, "ACCESS")
        .split('\n')
        .map(|l| {
            l.split(' ')
                .enumerate()
                .map(|(i, w)| {
                    if i == 4 && w.parse::<u32>().is_ok() {
                        "PID"
                    } else {
                        w
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n");
    (root, nobody, err)
}

#[test]
fn ipcserver_access_same_as_s6() {
    if !nix::unistd::geteuid().is_root() {
        skip("needs root (a second client runs as nobody)");
        return;
    }
    require("s6-ipcserver-access");
    let s = Scratch::new("ucspi-access");
    let rules = s.join("rules");
    for (rule, file) in [
        ("uid/0/allow", ""),
        ("uid/0/env/GREETING", "hello\n"),
        ("uid/65534/deny", ""),
    ] {
        let p = rules.join(rule);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, file).unwrap();
    }
    let r = rules.to_str().unwrap();
    for args in [
        vec!["-i", r],
        vec!["-E", "-i", r],
        vec!["-l", "LOCAL", "-i", r],
        vec!["-v", "0", "-i", r],
    ] {
        let s6 = through_access(&s, 0, &args);
        let tend = through_access(&s, 1, &args);
        assert_eq!(
            (&s6.0, &s6.1),
            (&tend.0, &tend.1),
            "{args:?}: what the clients read, s6 then tend"
        );
        let first = |e: &str| e.lines().next().unwrap_or("").to_string();
        assert_eq!(first(&s6.2), first(&tend.2), "{args:?}: the allow line");
    }
    let tend = through_access(&s, 1, &["-i", r]);
    assert_eq!(tend.0, "ok [hello] [SOCK] [IPC] [0]\n");
    assert_eq!(tend.1, "", "nobody is denied");
    // A default rule after a uid's deny: the deny comes first.
    std::fs::create_dir_all(rules.join("uid/default")).unwrap();
    std::fs::write(rules.join("uid/default/allow"), "").unwrap();
    std::fs::remove_dir_all(rules.join("uid/0")).unwrap();
    let (s6, tend) = (
        through_access(&s, 0, &["-i", r]),
        through_access(&s, 1, &["-i", r]),
    );
    assert_eq!((&s6.0, &s6.1), (&tend.0, &tend.1));
    assert_eq!(tend.0, "ok [] [SOCK] [IPC] [0]\n");
    // Outside a UCSPI server.
    let o = run(cmd("tend-ipcserver-access"));
    assert_code(&o, 100);
    let mut c = cmd("tend-ipcserver-access");
    c.arg("true").env_remove("PROTO");
    let o = run(c);
    assert_code(&o, 100);
    assert_eq!(
        text(&o.stderr),
        "tend-ipcserver-access: fatal: PROTO not set: not run under a UCSPI server\n"
    );
}
