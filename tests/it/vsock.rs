//! tend-vsockserver, tend-vsockclient and tend-pty (issue 38): a shell on a pty (echo, an
//! exit code, ^C reaching the foreground job), the hybrid-vsock CONNECT handshake against
//! a Unix-socket stub, the server's bind and readiness, and the UCSPI behaviour over real
//! vsock in a qemu guest that loads the loopback transport (CID 1), which this host's
//! kernel lacks.
//!
//! A real hybrid-vsock host socket, vhost-device-vsock's beside qemu, is tested in
//! tests/it/guest.rs (`slow_vm_agent_console_from_the_host_through_vhost_device_vsock`).
//! Not tested anywhere: Firecracker's or Cloud Hypervisor's own (the stub speaks the same
//! two lines).

use crate::common::*;
use crate::guest;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixListener;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};

/// A port of its own for each test (several test processes may run at once).
fn port(offset: u32) -> u32 {
    40_000 + (std::process::id() % 5_000) * 4 + offset
}

/// A vsock server with `-1`, waited for until bound.
fn server(s: &Scratch, args: &[&str]) -> Daemon {
    let mut c = cmd("tend-vsockserver");
    c.arg("-1").args(args).current_dir(&s.path);
    c.stdin(Stdio::null()).stdout(Stdio::piped());
    c.stderr(std::fs::File::create(s.join("server.err")).unwrap());
    let mut d = Daemon::start(c);
    let mut line = String::new();
    BufReader::new(d.child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "\n", "readiness: {}", s.join("server.err").display());
    d
}

#[test]
fn usage_errors_exit_100() {
    for (prog, args) in [
        ("tend-vsockserver", &["1026"][..]),
        ("tend-vsockserver", &["port", "cat"][..]),
        ("tend-vsockserver", &["-c", "x", "1026", "cat"][..]),
        ("tend-vsockclient", &["2", "1026"][..]),
        ("tend-vsockclient", &["cid", "1026", "cat"][..]),
        ("tend-pty", &[][..]),
    ] {
        let o = tend(prog, args);
        assert_code(&o, 100);
        assert!(
            text(&o.stderr).starts_with(&format!("{prog}: usage: {prog} ")),
            "{}",
            text(&o.stderr)
        );
    }
}

#[test]
fn server_says_ready_once_bound_and_a_taken_port_is_111() {
    let s = Scratch::new("vsock-bind");
    if std::fs::metadata("/dev/vsock").is_err() {
        return skip("no /dev/vsock: the kernel has no vsock transport");
    }
    let p = port(0).to_string();
    let _d = server(&s, &[&p, "cat"]);
    let o = tend("tend-vsockserver", [&p, "cat"]);
    assert_code(&o, 111);
    assert_eq!(
        text(&o.stderr),
        format!(
            "tend-vsockserver: fatal: unable to bind to vsock port {p}: Address already in use\n"
        )
    );
}

/// A hybrid-vsock host socket as Firecracker serves it: one `CONNECT port` line, then
/// `OK hostport` (or a close), then the guest's bytes.
fn hybrid_stub(
    s: &Scratch,
    answer: &'static str,
) -> (std::path::PathBuf, std::thread::JoinHandle<String>) {
    let path = s.join("v.sock");
    let l = UnixListener::bind(&path).unwrap();
    let t = std::thread::spawn(move || {
        let (c, _) = l.accept().unwrap();
        let mut r = BufReader::new(c.try_clone().unwrap());
        let mut req = String::new();
        r.read_line(&mut req).unwrap();
        let mut w = c;
        if answer.is_empty() {
            return req;
        }
        // The answer and the guest's first bytes in one write: the client must not eat them.
        w.write_all(format!("{answer}\nfrom guest\n").as_bytes())
            .unwrap();
        let mut back = String::new();
        let _ = r.read_line(&mut back);
        req + &back
    });
    (path, t)
}

#[test]
fn hybrid_client_sends_connect_and_hands_on_the_stream() {
    let s = Scratch::new("vsock-hybrid");
    let (path, stub) = hybrid_stub(&s, "OK 1073741824");
    let o = tend(
        "tend-vsockclient",
        [
            "-H",
            path.to_str().unwrap(),
            "3",
            "1024",
            "sh",
            "-c",
            "read l <&6; echo \"$l|$PROTO $VSOCKREMOTECID $VSOCKREMOTEPORT\"; echo back >&7",
        ],
    );
    assert_code(&o, 0);
    assert_eq!(text(&o.stdout), "from guest|VSOCK 3 1024\n");
    assert_eq!(stub.join().unwrap(), "CONNECT 1024\nback\n");
}

#[test]
fn hybrid_client_refused_is_111() {
    let s = Scratch::new("vsock-hybrid-no");
    for answer in ["", "NO such port"] {
        let (path, stub) = hybrid_stub(&s, answer);
        let o = tend(
            "tend-vsockclient",
            ["-H", path.to_str().unwrap(), "3", "1024", "true"],
        );
        assert_code(&o, 111);
        assert_eq!(
            text(&o.stderr),
            format!(
                "tend-vsockclient: fatal: unable to connect through {}: Connection refused\n",
                path.display()
            )
        );
        assert!(stub.join().unwrap().starts_with("CONNECT 1024\n"));
        std::fs::remove_file(&path).unwrap();
    }
}

/// The UCSPI behaviour over real vsock, in a qemu guest whose init loads
/// `vsock_loopback` (the host's kernel, and CI's, has no such transport): the guest
/// (tests/vm/ucspi-vsock.sh, busybox and tend's programs) is server and client of its own
/// ports on CID 1 and reports `@ key: value` lines on the console. One boot for all:
/// the variables on both sides; `-c 3` under a flood of 20 with an idle client holding a
/// slot; 10,000 connections, then the server's descriptors as they were.
/// Run as `guest::slow_vm_vsock_server_over_loopback` (below): libtest starts tests in name
/// order, and this one takes minutes under emulation, so it starts with the other guests,
/// not last of the suite.
pub(crate) fn server_over_vsock_loopback_in_a_guest() {
    let Some(host) = guest::vm() else { return };
    let s = Scratch::new("vsock-guest");
    let img = guest::Image::new(&s, host);
    if !img.vsock_loopback(host) {
        return skip(format!("no vsock modules for {}", host.kernel.display()));
    }
    img.link(&["tend-vsockserver", "tend-vsockclient"]);
    img.write(
        "bin/ucspi-vsock",
        include_str!("../vm/ucspi-vsock.sh"),
        true,
    );
    let initrd = img.pack();
    // Emulated, the guest's clock follows its instructions (as bench/guest.sh's does):
    // on a loaded host, qemu's thread may not run for seconds, and with the host's clock
    // the guest's own timers (vsock's 2 s connect timeout) then expire on work the
    // guest has not had the time to do.
    let icount: &[&str] = if host.accel == "tcg" {
        &["-icount", "shift=0,sleep=off"]
    } else {
        &[]
    };
    let mut q = guest::Qemu::boot(
        host,
        host.accel,
        &initrd,
        "tend.services_gracetime=1000 tend.kill_gracetime=1000 -- /bin/ucspi-vsock 10000",
        icount,
    )
    .unwrap();
    // 10,000 emulated connections (three execs each) on top of a boot: how long depends
    // on the host's load, so each stretch without console output (the boot's lines, a
    // report line, one per 200 connections) gets twice the one-boot limit, not the whole
    // run a total.
    let st = q.expect_exit_while_talking(guest::limit(host) * 2);
    let console = q.console();
    assert!(st.success(), "{st:?}\n{console}");
    let report: std::collections::HashMap<&str, &str> = console
        .lines()
        .filter_map(|l| l.split_once("@ ")?.1.split_once(": "))
        .collect();
    let get = |k: &str| {
        *report
            .get(k)
            .unwrap_or_else(|| panic!("no {k:?} in the report:\n{console}"))
    };
    assert_eq!(report.get("end"), Some(&"yes"), "{console}");
    // Server side: PROTO, the client's CID (1, the guest itself), our port, its port.
    let mut ports = Vec::new();
    for k in ["server env", "server env again"] {
        let f: Vec<&str> = get(k).split_whitespace().collect();
        assert_eq!(f[..3], ["VSOCK", "1", "5001"], "{k}: {console}");
        let p: u32 = f[3].parse().unwrap_or_else(|_| panic!("{k}: {console}"));
        // An automatically bound port is above the reserved range.
        assert!(p > 1023, "{k}: {console}");
        ports.push(p);
    }
    assert_ne!(ports[0], ports[1], "{console}");
    assert_eq!(get("client env"), "VSOCK 1 5001");
    assert_eq!(get("flood served beside the idle client"), "2");
    assert_eq!(get("flood children then"), "3");
    assert_eq!(get("flood served in all"), "20");
    assert_eq!(get("flood clients done"), "20");
    assert_eq!(get("flood most children at once"), "3");
    assert_eq!(get("leak connections failed"), "0");
    let fds: Vec<&str> = get("leak fds").split(" then ").collect();
    assert_eq!(fds.len(), 2, "{console}");
    assert_eq!(fds[0], fds[1], "{console}");
    assert_eq!(get("leak server alive"), "yes");
}

/// A program whose stdin the test writes and whose output a thread gathers: tend-pty
/// running /bin/sh here, the host's end of a guest's debug console in tests/it/guest.rs.
pub(crate) struct Console {
    pub(crate) child: Child,
    out: Arc<Mutex<Vec<u8>>>,
    patience: std::time::Duration,
}

impl Console {
    fn start() -> Console {
        let mut c = cmd("tend-pty");
        c.args(["/bin/sh"]).env("PS1", "$ ");
        Console::spawn(c, PATIENCE)
    }

    /// `c` started, each wait for its output failing after `patience`.
    pub(crate) fn spawn(mut c: std::process::Command, patience: std::time::Duration) -> Console {
        use std::os::unix::process::CommandExt;
        c.process_group(0);
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {c:?}: {e}"));
        let out = Arc::new(Mutex::new(Vec::new()));
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let o = out.clone();
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut b = [0u8; 1024];
                while let Ok(n) = stream.read(&mut b) {
                    if n == 0 {
                        break;
                    }
                    o.lock().unwrap().extend_from_slice(&b[..n]);
                }
            });
        }
        Console {
            child,
            out,
            patience,
        }
    }

    pub(crate) fn send(&mut self, bytes: &[u8]) {
        self.child.stdin.as_mut().unwrap().write_all(bytes).unwrap();
    }

    /// All it has said so far (stdout and stderr).
    pub(crate) fn said(&self) -> String {
        text(&self.out.lock().unwrap())
    }

    #[track_caller]
    pub(crate) fn wait_for(&self, what: &str) {
        let deadline = std::time::Instant::now() + self.patience;
        while !self.said().contains(what) {
            assert!(
                std::time::Instant::now() < deadline,
                "no {what:?} after {:?} in:\n{}",
                self.patience,
                self.said()
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Its exit status, waited for without closing its stdin.
    #[track_caller]
    pub(crate) fn wait_exit(&mut self) -> std::process::ExitStatus {
        let deadline = std::time::Instant::now() + self.patience;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "still running after {:?}:\n{}",
                self.patience,
                self.said()
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    fn shell(&self) -> i32 {
        let me = self.child.id() as i32;
        wait_until(PATIENCE, "the shell", || child_of(me, "sh"))
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        // The group: a client's background half (`cat <&6 &`) too.
        let pg = nix::unistd::Pid::from_raw(-(self.child.id() as i32));
        let _ = nix::sys::signal::kill(pg, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A child of `parent` named `comm`, from /proc.
fn child_of(parent: i32, comm: &str) -> Option<i32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let name = stat.split_once('(')?.1.rsplit_once(')')?.0;
        (name == comm && parent_of(pid) == Some(parent)).then_some(pid)
    })
}

/// (pgrp, tpgid) of a process: it is in its terminal's foreground when they are equal.
fn groups(pid: i32) -> Option<(i32, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let f: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some((f[2].parse().ok()?, f[5].parse().ok()?))
}

#[test]
fn pty_shell_echoes_and_exits_with_its_code() {
    let mut c = Console::start();
    c.send(b"echo hel''lo; tty\n");
    c.wait_for("hello");
    c.wait_for("/dev/pts/");
    c.send(b"exit 7\n");
    let st = wait_until(PATIENCE, "tend-pty to exit", || c.child.try_wait().unwrap());
    assert_eq!(st.code(), Some(7), "{}", c.said());
}

#[test]
fn pty_ctrl_c_reaches_the_foreground_job() {
    let mut c = Console::start();
    let sh = c.shell();
    c.send(b"sleep 1000\n");
    let sleep = wait_until(PATIENCE, "sleep in the foreground", || {
        let p = child_of(sh, "sleep")?;
        let (pg, fg) = groups(p)?;
        (pg == fg).then_some(p)
    });
    c.send(b"\x03");
    wait_until(PATIENCE, "sleep to end", || {
        std::fs::metadata(format!("/proc/{sleep}"))
            .is_err()
            .then_some(())
    });
    c.send(b"echo rc=$?\n");
    c.wait_for("rc=130");
    // The shell itself survived the ^C.
    assert!(std::fs::metadata(format!("/proc/{sh}")).is_ok());
}

#[test]
fn pty_hangs_up_when_its_input_ends_and_reports_exec_failure() {
    let mut c = Console::start();
    c.shell();
    drop(c.child.stdin.take());
    let st = wait_until(PATIENCE, "tend-pty to exit", || c.child.try_wait().unwrap());
    // The shell dies of the hang-up's SIGHUP.
    assert_eq!(st.code(), Some(128 + 1));
    let o = tend("tend-pty", ["/nonexistent/prog"]);
    assert_code(&o, 127);
    assert!(
        text(&o.stderr).starts_with("tend-pty: fatal: unable to exec /nonexistent/prog: "),
        "{}",
        text(&o.stderr)
    );
}

/// The debug console's shape behind the same accept loop over a Unix socket (vsock
/// cannot connect here): the connection is both fd 0 and fd 1 of tend-pty.
#[test]
fn pty_console_behind_a_ucspi_server() {
    let s = Scratch::new("pty-console");
    let sock = s.join("console");
    let mut c = cmd("tend-ipcserver");
    c.arg("-1").arg(&sock).args(["tend-pty", "/bin/sh"]);
    c.env("PS1", "$ ").current_dir(&s.path);
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut d = Daemon::start(c);
    let mut line = String::new();
    BufReader::new(d.child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let mut conn = std::os::unix::net::UnixStream::connect(&sock).unwrap();
    conn.write_all(b"echo hel''lo; tty; exit 3\n").unwrap();
    // The shell's exit ends tend-pty, which closes the connection: read to the end.
    let mut out = String::new();
    conn.set_read_timeout(Some(PATIENCE)).unwrap();
    conn.read_to_string(&mut out).unwrap();
    assert!(out.contains("hello\r\n"), "{out:?}");
    assert!(out.contains("/dev/pts/"), "{out:?}");
}
