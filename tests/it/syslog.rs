//! tend-socklog and tend-ucspilogd against Debian's s6-socklog and ucspilogd (s6 2.11.3.2),
//! with real syslog clients, and the no-loss chain under tend-svscan.
//!
//! Every front end runs in a private mount namespace with a tmpfs over /dev (`private`),
//! so the machine's /dev/log is never touched, even by a test that forgets `-x`.
//!
//! Not tested here: dropping privileges to another uid (-u/-g/-G/-U with real ids; the
//! code is tend-env's, tested with tend-applyuidgid); the lame-duck timeout of 0 (for
//! ever) against a stuck logger; UDP throughput. The no-loss test restarts the logger with
//! SIGTERM: with SIGKILL it passed every time tried, but tend-log can still lose what it
//! had read and not yet written; switch to `-k` once tend-log reads SIGKILL-safely.

use crate::common::*;
use nix::sys::signal::Signal;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const T: Duration = Duration::from_secs(20);

/// `prog args...` in a new mount namespace where /dev is a tmpfs holding only null.
pub(crate) fn private(prog: &Path, args: &[&str]) -> Command {
    let mut c = cmd("unshare");
    c.args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg("mount -t tmpfs tend-syslog-test /dev && mknod -m 666 /dev/null c 1 3 && exec \"$@\"")
        .arg("sh")
        .arg(prog)
        .args(args);
    c
}

fn program(name: &str) -> PathBuf {
    if name.starts_with("tend-") {
        bin(name)
    } else {
        require(name);
        PathBuf::from(name)
    }
}

fn is_socket(p: &Path) -> bool {
    std::fs::symlink_metadata(p)
        .map(|m| m.file_type().is_socket())
        .unwrap_or(false)
}

/// A front end on a unix socket in the scratch dir, its stdout in a file.
struct Front {
    daemon: Daemon,
    sock: PathBuf,
    out: PathBuf,
    err: PathBuf,
}

impl Front {
    fn start(s: &Scratch, prog: &str, name: &str, args: &[&str]) -> Front {
        let sock = s.join(format!("{name}.sock"));
        let mut all = vec!["-x", sock.to_str().unwrap()];
        all.extend_from_slice(args);
        let f = Front::spawn(s, prog, name, &all, sock.clone());
        // Live, not merely there: a stale socket file may have been there first.
        wait_until(T, "the socket", || {
            let probe = UnixDatagram::unbound().unwrap();
            probe.connect(&f.sock).ok()
        });
        f
    }

    fn spawn(s: &Scratch, prog: &str, name: &str, args: &[&str], sock: PathBuf) -> Front {
        let (out, err) = (s.join(format!("{name}.out")), s.join(format!("{name}.err")));
        let mut c = private(&program(prog), args);
        c.stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap());
        Front {
            daemon: Daemon::start(c),
            sock,
            out,
            err,
        }
    }

    fn send(&self, msgs: &[&[u8]]) {
        let c = UnixDatagram::unbound().unwrap();
        for m in msgs {
            c.send_to(m, &self.sock).unwrap();
        }
    }

    fn output(&self) -> Vec<u8> {
        std::fs::read(&self.out).unwrap_or_default()
    }

    /// Wait until stdout holds `lines` lines.
    fn wait_lines(&self, lines: usize) -> Vec<u8> {
        wait_until(
            T,
            &format!("{lines} lines from {}", self.daemon.what),
            || {
                let o = self.output();
                (o.iter().filter(|&&b| b == b'\n').count() >= lines).then_some(o)
            },
        )
    }

    /// SIGTERM; the exit code, stdout and stderr.
    fn stop(mut self) -> (Option<i32>, Vec<u8>, String) {
        self.daemon.signal(Signal::SIGTERM);
        let st = self.daemon.wait_exit(T).expect("the front end exits");
        let err = std::fs::read_to_string(&self.err).unwrap_or_default();
        (st.code(), self.output(), err)
    }
}

/// What every front end gets: every priority, none, bad ones, NULs and newlines, sizes.
/// A message without `>` comes after a long plain one: s6-socklog reads past the
/// datagram into what the previous one left in its buffer (see `reads_only_the_datagram`).
fn cases() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = (0..200)
        .map(|i| format!("<{i}>m{i}").into_bytes())
        .collect();
    for m in [
        &b"<999>x"[..],
        b"xxxxxxxxxxxxxxxxxxxx",
        b"<12",
        b"<4294967295>z",
        b"<4294967296>z",
        b"<-1>w",
        b"< 5>v",
        b"<05>u",
        b"<>t",
        b"plain, no priority",
        b"\n\n",
        b"<13>\n",
        b"<0>a\0b\nc\n\0\n",
        b"<13>\ta\rb\x7f\xff\xfe",
        b"<13>1 2026-11-30T10:00:00Z host app 42 - - rfc5424 as it comes",
    ] {
        v.push(m.to_vec());
    }
    v.push([b"<13>".as_slice(), &[b'a'; 1020]].concat()); // exactly 1024: whole
    v.push([b"<13>".as_slice(), &[b'b'; 1021]].concat()); // 1025: cut
    v.push(vec![b'c'; 5000]);
    v
}

/// Run one front end over `msgs`; its stdout and exit code.
fn through(prog: &str, args: &[&str], msgs: &[Vec<u8>], lines: usize) -> (Vec<u8>, Option<i32>) {
    let s = Scratch::new(&format!("syslog-{prog}"));
    let f = Front::start(&s, prog, "front", args);
    let refs: Vec<&[u8]> = msgs.iter().map(Vec::as_slice).collect();
    f.send(&refs);
    f.wait_lines(lines);
    let (code, out, err) = f.stop();
    assert_eq!(err, "", "{prog} stderr");
    (out, code)
}

/// s6-socklog keeps linelen + 1 bytes of a cut datagram before its `...`; its page (and
/// tend) say linelen. Drop that byte from s6's lines so the rest compares byte for byte.
fn s6_cut_to_linelen(out: &[u8]) -> Vec<u8> {
    let mut fixed = Vec::new();
    for line in out.split_inclusive(|&b| b == b'\n') {
        if line.ends_with(b"...\n") {
            let n = line.len();
            fixed.extend_from_slice(&line[..n - 5]);
            fixed.extend_from_slice(b"...\n");
        } else {
            fixed.extend_from_slice(line);
        }
    }
    fixed
}

#[test]
fn socklog_same_as_s6() {
    let msgs = cases();
    for args in [&[][..], &["-r"], &["-l", "100"], &["-l", "5", "-t", "2000"]] {
        let (ours, code) = through("tend-socklog", args, &msgs, msgs.len());
        assert_eq!(code, Some(0));
        let (theirs, code) = through("s6-socklog", args, &msgs, msgs.len());
        assert_eq!(code, Some(0));
        assert_eq!(
            text(&ours),
            text(&s6_cut_to_linelen(&theirs)),
            "tend-socklog {args:?} vs s6-socklog"
        );
    }
}

#[test]
fn socklog_lines() {
    let msgs = cases();
    let (out, _) = through("tend-socklog", &[], &msgs, msgs.len());
    let out = text(&out);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "kern.emerg: m0");
    assert_eq!(lines[12], "user.warn: m12");
    assert_eq!(lines[13], "user.notice: m13");
    assert_eq!(lines[87], "authpriv.debug: m87");
    assert_eq!(lines[96], "unknown.emerg: m96");
    assert_eq!(lines[199], "mark.debug: m199");
    let rest = &lines[200..];
    assert_eq!(
        &rest[..14],
        &[
            "unknown.debug: x",
            "xxxxxxxxxxxxxxxxxxxx",
            "<12",
            "unknown.debug: z",
            "<4294967296>z",
            "<-1>w",
            "< 5>v",
            "kern.notice: u",
            "<>t",
            "plain, no priority",
            "",
            "user.notice: ",
            "kern.emerg: a~b~c",
            "user.notice: \ta\rb\u{7f}\u{fffd}\u{fffd}",
        ]
    );
    assert_eq!(rest[15], format!("user.notice: {}", "a".repeat(1020)));
    assert_eq!(rest[16], format!("user.notice: {}...", "b".repeat(1020)));
    assert_eq!(rest[17], format!("{}...", "c".repeat(1024)));
}

#[test]
fn socklog_reads_only_the_datagram() {
    // s6-socklog 2.11.3.2 decodes "<12" as "<129>" from the previous datagram's bytes
    // and then writes a negative length's worth of its stack.
    let (out, code) = through(
        "tend-socklog",
        &[],
        &[b"<999>x".to_vec(), b"<12".to_vec(), b"<1".to_vec()],
        3,
    );
    assert_eq!(code, Some(0));
    assert_eq!(text(&out), "unknown.debug: x\n<12\n<1\n");
}

#[test]
fn socklog_goes_on_after_an_empty_datagram() {
    // s6-socklog 2.11.3.2 dies on one: "unable to recv: Broken pipe", exit 111.
    let s = Scratch::new("syslog-empty");
    let f = Front::start(&s, "tend-socklog", "front", &[]);
    f.send(&[b"", b"<13>after", b""]);
    f.wait_lines(1);
    f.send(&[b"<13>still here"]);
    f.wait_lines(2);
    let (code, out, err) = f.stop();
    assert_eq!((code, err.as_str()), (Some(0), ""));
    assert_eq!(text(&out), "user.notice: after\nuser.notice: still here\n");
}

#[test]
fn socklog_udp_prefix() {
    for (server, client) in [("127.0.0.1", "127.0.0.1:0"), ("::1", "[::1]:0")] {
        let s = Scratch::new("syslog-udp");
        let probe = std::net::UdpSocket::bind(client).unwrap();
        let port = {
            // A free port for the server: bind, note, release.
            let p = std::net::UdpSocket::bind(client).unwrap();
            p.local_addr().unwrap().port()
        };
        let spec = format!("{server}_{port}");
        let f = Front::spawn(&s, "tend-socklog", "udp", &["-i", &spec], PathBuf::new());
        let target = std::net::SocketAddr::new(server.parse().unwrap(), port);
        // Resend until the server is bound (UDP to a closed port is just lost).
        let out = wait_until(T, "the UDP line", || {
            probe.send_to(b"<13>hi", target).unwrap();
            std::thread::sleep(Duration::from_millis(20));
            let o = f.output();
            (!o.is_empty()).then_some(o)
        });
        let me = probe.local_addr().unwrap().port();
        let want = format!("{server}_{me}: user.notice: hi\n");
        assert_eq!(text(&out[..want.len().min(out.len())]), want);
        let (code, out, _) = f.stop();
        assert_eq!(code, Some(0));
        assert!(
            text(&out).lines().all(|l| l == want.trim_end()),
            "{}",
            text(&out)
        );
    }
}

#[test]
fn socklog_json_with_sender_credentials() {
    let s = Scratch::new("syslog-json");
    let f = Front::start(&s, "tend-socklog", "json", &["-j"]);
    f.send(&[
        b"<14>Nov 30 10:46:53 app[12]: say \"hi\"",
        b"<165>1 2026-11-30T10:00:00Z host five 77 ID - \xef\xbb\xbfrfc 5424",
        b"bare",
    ]);
    let out = text(&f.wait_lines(3));
    let me = std::process::id();
    let creds = format!("\"sender_pid\":{me},\"sender_uid\":0,\"sender_gid\":0");
    assert_eq!(
        out,
        format!(
            "{{\"facility\":\"user\",\"severity\":\"info\",\"app\":\"app\",\"pid\":12,{creds},\"message\":\"say \\\"hi\\\"\"}}\n\
             {{\"facility\":\"local4\",\"severity\":\"notice\",\"app\":\"five\",\"pid\":77,{creds},\"message\":\"rfc 5424\"}}\n\
             {{{creds},\"message\":\"bare\"}}\n"
        )
    );
    assert_eq!(f.stop().0, Some(0));
}

/// The first datagram the socket can take already carries its sender: SO_PASSCRED is set
/// before the bind. Set after it, a datagram sent in between has none (pid 0, uid 65534;
/// seen once under load). strace holds tend-socklog's setsockopt for two seconds, so that
/// window, when there is one, is wide open while the test sends as soon as it can connect.
#[test]
fn socklog_json_credentials_from_the_first_datagram() {
    if !have("strace") {
        return skip("strace is not installed");
    }
    let s = Scratch::new("syslog-json-first");
    let sock = s.join("first.sock");
    let trace = s.join("trace");
    let (out, err) = (s.join("first.out"), s.join("first.err"));
    let mut c = private(
        Path::new("strace"),
        &[
            "-qq",
            "-e",
            "trace=setsockopt,bind",
            "-e",
            "inject=setsockopt:delay_enter=2000000",
            "-o",
            trace.to_str().unwrap(),
            bin("tend-socklog").to_str().unwrap(),
            "-j",
            "-x",
            sock.to_str().unwrap(),
        ],
    );
    c.stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap());
    let f = Front {
        daemon: Daemon::start(c),
        sock,
        out,
        err,
    };
    let probe = UnixDatagram::unbound().unwrap();
    wait_until(T, "the socket", || {
        probe.send_to(b"<13>first", &f.sock).ok()
    });
    let got = text(&f.wait_lines(1));
    let me = std::process::id();
    let trace = std::fs::read_to_string(&trace).unwrap_or_default();
    assert!(trace.contains("SO_PASSCRED"), "{trace}");
    assert_eq!(
        got,
        format!(
            "{{\"facility\":\"user\",\"severity\":\"notice\",\"sender_pid\":{me},\"sender_uid\":0,\"sender_gid\":0,\"message\":\"first\"}}\n"
        ),
        "{trace}"
    );
    // strace, not tend-socklog, would take a SIGTERM: the group is killed on drop.
    drop(f);
}

#[test]
fn socklog_readiness_and_lame_duck() {
    let s = Scratch::new("syslog-lameduck");
    // stdout: a FIFO that the test holds open and never reads.
    let fifo = s.join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let _held = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap();
    let (sock, notif) = (s.join("s"), s.join("notif"));
    let mut c = private(
        Path::new("sh"),
        &[
            "-c",
            "exec \"$0\" -d 3 -t 300 -x \"$1\" 3>\"$2\" >\"$3\"",
            bin("tend-socklog").to_str().unwrap(),
            sock.to_str().unwrap(),
            notif.to_str().unwrap(),
            fifo.to_str().unwrap(),
        ],
    );
    c.stderr(Stdio::piped());
    let mut d = Daemon::start(c);
    wait_until(T, "readiness", || {
        (std::fs::read(&notif).unwrap_or_default() == b"\n").then_some(())
    });
    assert!(is_socket(&sock), "bound before readiness");
    // Fill the pipe, the output buffer and the socket queue.
    let client = UnixDatagram::unbound().unwrap();
    client.set_nonblocking(true).unwrap();
    let msg = vec![b'x'; 1000];
    let mut stuck = 0;
    while stuck < 50 {
        if client.send_to(&msg, &sock).is_err() {
            stuck += 1;
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    d.signal(Signal::SIGTERM);
    let st = d.wait_exit(T).expect("exit after the lame-duck timeout");
    assert_eq!(st.code(), Some(99));
}

fn assert_fails(args: &[&str], code: i32, stderr: &str) {
    let o = run(private(&bin("tend-socklog"), args));
    assert_code(&o, code);
    assert_eq!(text(&o.stderr), stderr, "{args:?}");
    assert_eq!(text(&o.stdout), "");
}

#[test]
fn socklog_bad_input() {
    let s = Scratch::new("syslog-bad");
    let usage = "tend-socklog: usage: tend-socklog [ -d notif ] [ -r ] [ -R ] [ -j ] [ -U | -u uid -g gid -G gidlist ] [ -l linelen ] [ -t lameducktimeout ] [ -x unixsocket | -i ip_port ]\n";
    let sock = s.join("sock");
    let sock = sock.to_str().unwrap();
    let fatal = |why: &str| format!("tend-socklog: fatal: {why}\n");
    // (arguments, exit code, stderr): usage errors, then a notification fd refused.
    #[rustfmt::skip]
    let rows: [(&[&str], i32, String); 9] = [
        (&["-i", "1.2.3"], 100, usage.into()),
        (&["-i", "127.0.0.1_99999"], 100, usage.into()),
        (&["-i", "127.0.0.1_80x"], 100, usage.into()),
        (&["-i", "::1_"], 100, usage.into()),
        (&["-u", "x", "-x", sock], 100, usage.into()),
        (&["-l", "-5", "-x", sock], 100, usage.into()),
        (&["-z"], 100, usage.into()),
        (&["-d", "1", "-x", sock], 100, fatal("notification fd must be 3 or more")),
        (&["-d", "9", "-x", sock], 100, fatal("invalid notification fd: Bad file number")),
    ];
    for (args, code, stderr) in &rows {
        assert_fails(args, *code, stderr);
    }
    let o = run({
        let mut c = private(&bin("tend-socklog"), &["-U", "-x", sock]);
        c.env_remove("UID");
        c
    });
    assert_code(&o, 100);
    assert_eq!(text(&o.stderr), "tend-socklog: fatal: UID not set\n");
    assert!(
        !Path::new(sock).exists(),
        "nothing bound after a usage error"
    );

    let nodir = s.join("nodir/sock");
    assert_fails(
        &["-x", nodir.to_str().unwrap()],
        111,
        &format!(
            "tend-socklog: fatal: unable to bind socket to {}: No such file or directory\n",
            nodir.display()
        ),
    );
    // Not a socket: left alone (s6-socklog 2.11.3.2 unlinks it).
    let file = s.write("regular", "precious\n", false);
    assert_fails(
        &["-x", file.to_str().unwrap()],
        111,
        &format!(
            "tend-socklog: fatal: unable to bind socket to {}: File exists\n",
            file.display()
        ),
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "precious\n");
    // A directory the caller may not write to: run as nobody (root writes anywhere).
    let ro = s.join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::set_permissions(&s.path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&ro, std::os::unix::fs::PermissionsExt::from_mode(0o555)).unwrap();
    let in_ro = ro.join("sock");
    let o = run(private(
        &bin("tend-applyuidgid"),
        &[
            "-u",
            "65534",
            "-g",
            "65534",
            "-G",
            "",
            bin("tend-socklog").to_str().unwrap(),
            "-x",
            in_ro.to_str().unwrap(),
        ],
    ));
    assert_code(&o, 111);
    assert_eq!(
        text(&o.stderr),
        format!(
            "tend-socklog: fatal: unable to bind socket to {}: Permission denied\n",
            in_ro.display()
        )
    );
    assert!(!in_ro.exists());
    assert_fails(
        &["-i", "192.0.2.1_514"],
        111,
        "tend-socklog: fatal: unable to bind socket to ip 192.0.2.1 port 514: Cannot assign requested address\n",
    );
}

#[test]
fn socklog_replaces_only_a_stale_socket() {
    let s = Scratch::new("syslog-stale");
    let sock = s.join("live.sock");
    drop(UnixDatagram::bind(&sock).unwrap()); // a socket file nobody receives on
    let live = Front::start(&s, "tend-socklog", "live", &[]);
    live.send(&[b"<13>one"]);
    live.wait_lines(1);
    // A second one on the same path must not steal it.
    assert_fails(
        &["-x", sock.to_str().unwrap()],
        111,
        &format!(
            "tend-socklog: fatal: unable to bind socket to {}: Address already in use\n",
            sock.display()
        ),
    );
    live.send(&[b"<13>two"]);
    live.wait_lines(2);
    let (code, out, _) = live.stop();
    assert_eq!(code, Some(0));
    assert_eq!(text(&out), "user.notice: one\nuser.notice: two\n");
}

fn ucspilogd_input() -> Vec<u8> {
    let mut v = Vec::new();
    for i in (0..200).step_by(7) {
        v.extend_from_slice(format!("<{i}>m{i}\n").as_bytes());
    }
    v.extend_from_slice(
        b"<13>a\n<12\0\n\0<999>x\n@400000005f5e100000000000 <13>tai\n@40000000 short\n\
          no pri\r\n<4294967296>big\n<1\n<0>unterminated",
    );
    v
}

#[test]
fn ucspilogd_same_as_s6() {
    require("ucspilogd");
    let s = Scratch::new("ucspilogd");
    let input = s.join("in");
    std::fs::write(&input, ucspilogd_input()).unwrap();
    let go = |prog: &str, args: &[&str]| {
        let mut c = cmd(prog);
        c.args(args)
            .env("IP", "192.0.2.7")
            .env_remove("NOPE")
            .stdin(std::fs::File::open(&input).unwrap());
        c.output().unwrap()
    };
    for args in [&[][..], &["IP", "NOPE"], &["-D", "-", "NOPE", "IP"]] {
        let ours = go("tend-ucspilogd", args);
        let theirs = go("ucspilogd", args);
        assert_code(&ours, 0);
        assert_code(&theirs, 0);
        assert_eq!(text(&ours.stdout), text(&theirs.stdout), "{args:?}");
    }
    // The HTML page's -d works too.
    let o = go("tend-ucspilogd", &["-d", "?", "NOPE"]);
    assert!(text(&o.stdout).starts_with("?: kern.emerg: m0\n"));
    let o = go("tend-ucspilogd", &["-z"]);
    assert_code(&o, 100);
    assert_eq!(
        text(&o.stderr),
        "tend-ucspilogd: usage: tend-ucspilogd [ -D undef ] [ var... ]\n"
    );
}

/// Lines of every file (current and archives) of a logdir, TAI64N stamps removed.
fn logdir_lines(dir: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return lines;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name == "current" || name.ends_with(".s") || name.ends_with(".u") {
            let t = std::fs::read(e.path()).unwrap_or_default();
            for l in text(&t).lines() {
                lines.push(l.split_once(' ').map(|x| x.1).unwrap_or(l).to_string());
            }
        }
    }
    lines
}

/// A copy of examples/syslogd under tend-svscan; stopped (and its strays killed) on drop.
struct Syslogd {
    daemon: Daemon,
    root: PathBuf,
    scan: PathBuf,
}

impl Syslogd {
    /// `script` runs in sh with $SCAN set; tend-svscan runs from it.
    fn start(s: &Scratch, script: &str, env: &[(&str, &Path)]) -> Syslogd {
        let scan = s.join("scan");
        let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/syslogd/syslogd");
        let o = run({
            let mut c = Command::new("cp");
            c.arg("-R").arg(&example).arg(scan.join("syslogd"));
            std::fs::create_dir_all(&scan).unwrap();
            c
        });
        assert_code(&o, 0);
        let mut c = private(Path::new("sh"), &["-c", script]);
        c.env("SCAN", &scan).stdin(Stdio::null());
        c.stdout(std::fs::File::create(s.join("script.out")).unwrap());
        c.stderr(std::fs::File::create(s.join("script.err")).unwrap());
        for (k, v) in env {
            c.env(k, v);
        }
        Syslogd {
            daemon: Daemon::start(c),
            root: s.path.clone(),
            scan,
        }
    }

    fn logdir(&self, name: &str) -> Vec<String> {
        logdir_lines(&self.scan.join("syslogd/log").join(name))
    }
}

impl Drop for Syslogd {
    fn drop(&mut self) {
        let _ = tend("tend-svscanctl", ["-t", self.scan.to_str().unwrap()]);
        let _ = self.daemon.wait_exit(Duration::from_secs(5));
        // Supervisors run in sessions of their own: kill whatever still runs in the tree.
        for _ in 0..3 {
            for e in std::fs::read_dir("/proc").unwrap().flatten() {
                let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                    continue;
                };
                if std::fs::read_link(e.path().join("cwd")).is_ok_and(|c| c.starts_with(&self.root))
                {
                    let _ =
                        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[test]
fn real_clients_reach_the_logdirs() {
    for p in ["logger", "python3"] {
        require(p);
    }
    let s = Scratch::new("syslog-clients");
    let alt = s.join("alt.sock");
    // In the namespace: the example on /dev/log, a -R front end on a custom socket for
    // logger -u, then the clients; then wait (the test stops everything).
    let script = r#"
        tend-svscan "$SCAN" &
        tend-socklog -R -x "$ALT" > "$ALT.out" &
        i=0; until [ -S /dev/log ] && [ -S "$ALT" ]; do i=$((i+1)); [ $i -lt 400 ] || exit 1; sleep 0.05; done
        tend-svwait -U -t 20000 "$SCAN/syslogd" || exit 2
        logger --rfc3164 -p mail.err -t mta 'rfc3164 to mail'
        logger --rfc5424 -p local3.info -t app5424 'rfc5424 to local'
        logger -u "$ALT" --rfc5424 -p daemon.notice -t alt 'via -u'
        python3 -c '
import logging, logging.handlers
h = logging.handlers.SysLogHandler(address="/dev/log", facility=logging.handlers.SysLogHandler.LOG_AUTH)
log = logging.getLogger("py"); log.addHandler(h); log.warning("python handler to auth")'
        python3 -c '
import syslog
syslog.openlog("glibc", syslog.LOG_PID, syslog.LOG_LOCAL1)
syslog.syslog(syslog.LOG_CRIT, "glibc to local and errors")
syslog.openlog("plain", 0, syslog.LOG_USER)
syslog.syslog(syslog.LOG_INFO, "glibc to messages")'
        echo clients done
        wait
    "#;
    let d = Syslogd::start(&s, script, &[("ALT", &alt)]);
    let has = |dir: &str, want: &str| {
        wait_until(T, &format!("{want:?} in {dir}"), || {
            d.logdir(dir)
                .into_iter()
                .find(|l| l.contains(want))
                .map(|l| l.to_string())
        })
    };
    let mail = has("mail", "rfc3164 to mail");
    assert!(
        mail.starts_with("mail.err: ") && mail.ends_with("mta: rfc3164 to mail"),
        "{mail}"
    );
    assert_eq!(has("errors", "rfc3164 to mail"), mail);
    let local = has("local", "rfc5424 to local");
    assert!(local.starts_with("local3.info: 1 "), "{local}");
    let auth = has("auth", "python handler to auth");
    assert_eq!(auth, "auth.warn: python handler to auth");
    let glibc = has("local", "glibc to local");
    assert!(
        glibc.starts_with("local1.crit: ") && glibc.contains(" glibc["),
        "{glibc}"
    );
    has("errors", "glibc to local and errors");
    let plain = has("messages", "glibc to messages");
    assert!(plain.starts_with("user.info: ") && plain.ends_with(" plain: glibc to messages"));
    for dir in ["mail", "auth", "local", "errors"] {
        assert!(
            !d.logdir(dir)
                .iter()
                .any(|l| l.contains("glibc to messages")),
            "user.info sorted into {dir}"
        );
    }
    let alt_out = wait_until(T, "logger -u's line", || {
        let o = std::fs::read_to_string(s.join("alt.sock.out")).unwrap_or_default();
        (!o.is_empty()).then_some(o)
    });
    assert_eq!(alt_out, "daemon.notice: alt: via -u\n");
}

#[test]
fn no_loss_while_the_logger_restarts() {
    const N: usize = 100_000;
    let s = Scratch::new("syslog-noloss");
    let sock = s.join("log.sock");
    let d = Syslogd::start(
        &s,
        "exec tend-svscan \"$SCAN\"",
        &[("SYSLOG_SOCKET", &sock)],
    );
    let svc = d.scan.join("syslogd");
    let logsvc = svc.join("log");
    for dir in [&svc, &logsvc] {
        // The lock is taken before supervise/status is written: wait for both, or
        // tend-svwait can find no status (111), as s6-svwait would.
        wait_until(T, "the supervisors", || {
            (tend("tend-svok", [dir]).status.code() == Some(0)
                && dir.join("supervise/status").exists())
            .then_some(())
        });
    }
    let o = tend(
        "tend-svwait",
        [
            "-U",
            "-t",
            "20000",
            svc.to_str().unwrap(),
            logsvc.to_str().unwrap(),
        ],
    );
    assert_code(&o, 0);
    let logger_pid = || {
        let o = tend("tend-svstat", ["-p", logsvc.to_str().unwrap()]);
        text(&o.stdout).trim().parse::<i32>().unwrap_or(-1)
    };
    let client = UnixDatagram::unbound().unwrap();
    client
        .set_write_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut killed: Vec<i32> = Vec::new();
    for i in 0..N {
        if i == N / 3 || i == 2 * N / 3 {
            // Restart the logger (SIGTERM) once the previous restart has taken.
            let p = wait_until(T, "a new logger", || {
                let p = logger_pid();
                (p > 0 && !killed.contains(&p)).then_some(p)
            });
            let o = tend("tend-svc", ["-t", logsvc.to_str().unwrap()]);
            assert_code(&o, 0);
            killed.push(p);
        }
        let m = format!("<13>n {i:06}");
        // A blocking send with a timeout fails with EINTR after a signal handler, or
        // after a stop and SIGCONT even with no handler (signal(7)): nothing was sent,
        // so it is sent again.
        loop {
            match client.send_to(m.as_bytes(), &sock) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                r => {
                    r.unwrap_or_else(|e| panic!("send {i}: {e}"));
                    break;
                }
            }
        }
    }
    let lines = wait_until(
        Duration::from_secs(180),
        "every message in ./messages",
        || {
            let l = d.logdir("messages");
            (l.len() >= N).then_some(l)
        },
    );
    let mut seen = vec![0u32; N];
    for l in &lines {
        let n: usize = l
            .strip_prefix("user.notice: n ")
            .and_then(|x| x.parse().ok())
            .unwrap_or_else(|| panic!("unexpected line {l:?}"));
        seen[n] += 1;
    }
    let bad: Vec<usize> = (0..N).filter(|&i| seen[i] != 1).take(10).collect();
    assert!(
        bad.is_empty(),
        "not exactly once: {bad:?} (counts {:?})",
        bad.iter().map(|&i| seen[i]).collect::<Vec<_>>()
    );
    assert_eq!(lines.len(), N);
    assert_eq!(killed.len(), 2);
    assert!(!killed.contains(&logger_pid()), "the logger was restarted");
}

#[test]
fn socklog_binds_then_drops_privileges() {
    let s = Scratch::new("syslog-drop");
    let ids = |f: &Front| {
        let st = std::fs::read_to_string(format!("/proc/{}/status", f.daemon.pid())).unwrap();
        let field = |k: &str| {
            st.lines()
                .find_map(|l| l.strip_prefix(k))
                .map(|v| v.split_whitespace().next().unwrap_or("").to_string())
                .unwrap()
        };
        let groups = st
            .lines()
            .find_map(|l| l.strip_prefix("Groups:"))
            .unwrap()
            .trim()
            .to_string();
        (field("Uid:"), field("Gid:"), groups)
    };
    let f = Front::start(
        &s,
        "tend-socklog",
        "opts",
        &["-u", "65534", "-g", "65533", "-G", "7,8"],
    );
    f.send(&[b"<13>dropped"]);
    f.wait_lines(1);
    // The primary gid is in the list too, as skalibs' setgroups_and_gid puts it.
    assert_eq!(
        ids(&f),
        ("65534".into(), "65533".into(), "7 8 65533".into())
    );
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&f.sock).unwrap().permissions());
    assert_eq!(
        mode & 0o777,
        0o777,
        "socket mode, whatever the umask (as s6-socklog)"
    );
    assert_eq!(f.stop().0, Some(0));
    // -U takes UID, GID and GIDLIST; a later -g overrides GID.
    let mut c = private(
        &bin("tend-socklog"),
        &[
            "-U",
            "-g",
            "65532",
            "-x",
            s.join("env.sock").to_str().unwrap(),
        ],
    );
    c.env("UID", "65531").env("GID", "1").env("GIDLIST", "");
    c.stdout(Stdio::null()).stderr(Stdio::null());
    let d = Daemon::start(c);
    let f = Front {
        daemon: d,
        sock: s.join("env.sock"),
        out: s.join("none"),
        err: s.join("none"),
    };
    wait_until(T, "the -U socket", || {
        UnixDatagram::unbound().unwrap().connect(&f.sock).ok()
    });
    wait_until(T, "the ids of -U", || {
        let (u, g, _) = ids(&f);
        (u == "65531" && g == "65532").then_some(())
    });
    assert_eq!(f.stop().0, Some(0));
}

#[test]
fn ucspilogd_write_failure() {
    // A reader that went away: EPIPE (Rust programs ignore SIGPIPE), one line, 111.
    let (r, w) = nix::unistd::pipe().unwrap();
    drop(r);
    let mut c = cmd("tend-ucspilogd");
    c.stdin(Stdio::piped()).stdout(w).stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        let _ = stdin.write_all(b"<13>nobody reads this\n");
    }
    let o = child.wait_with_output().unwrap();
    assert_code(&o, 111);
    assert_eq!(
        text(&o.stderr),
        "tend-ucspilogd: fatal: unable to write to stdout: Broken pipe\n"
    );
}

#[test]
fn socklog_counts_the_datagrams_the_kernel_drops() {
    // UDP cannot make its senders wait: while the logger's pipe is full, tend-socklog
    // stops reading, its socket's queue fills and the kernel drops datagrams. Each one
    // is accounted for: lines received + drops reported == datagrams sent.
    use std::io::Read;
    const SENT: usize = 4000;
    let s = Scratch::new("syslog-drops");
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (rd, wr) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
    let err = s.join("err");
    let mut c = private(&bin("tend-socklog"), &["-i", &format!("127.0.0.1_{port}")]);
    c.stdin(Stdio::null())
        .stdout(Stdio::from(wr))
        .stderr(std::fs::File::create(&err).unwrap());
    let mut d = Daemon::start(c);
    let probe = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let target: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut pipe = std::fs::File::from(rd);
    // The first datagram that arrives, once bound: resent until one line comes back.
    let mut first = [0u8; 64];
    let mut got = Vec::new();
    {
        use std::os::fd::AsRawFd;
        let fd = pipe.as_raw_fd();
        let flags = nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETFL).unwrap();
        let nb = nix::fcntl::OFlag::from_bits_truncate(flags) | nix::fcntl::OFlag::O_NONBLOCK;
        nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_SETFL(nb)).unwrap();
        wait_until(T, "the server bound", || {
            probe.send_to(b"<13>first", target).unwrap();
            std::thread::sleep(Duration::from_millis(20));
            match pipe.read(&mut first) {
                Ok(n) if n > 0 => {
                    got.extend_from_slice(&first[..n]);
                    Some(())
                }
                _ => None,
            }
        });
        // Anything the resends left behind.
        wait_until(T, "the resends drained", || {
            std::thread::sleep(Duration::from_millis(100));
            match pipe.read(&mut first) {
                Ok(n) if n > 0 => {
                    got.extend_from_slice(&first[..n]);
                    None
                }
                _ => Some(()),
            }
        });
    }
    // The pipe is not read now: it fills, then the socket's queue, then the kernel drops.
    let body = vec![b'x'; 200];
    for i in 0..SENT {
        let mut m = format!("<13>{i:05} ").into_bytes();
        m.extend_from_slice(&body);
        probe.send_to(&m, target).unwrap();
    }
    // Counted from here: the resends before the bind went nowhere, and no queue was
    // full before the flood.
    // Every datagram sent from now on, whatever it says: the kernel may drop any.
    let mut sent = SENT;
    drop(got);
    // Read everything; one more datagram carries the final drop count.
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let total_dropped = || {
        let e = std::fs::read_to_string(&err).unwrap_or_default();
        e.lines()
            .filter_map(|l| {
                l.strip_prefix("tend-socklog: warning: the kernel dropped ")?
                    .split(" (")
                    .nth(1)?
                    .strip_suffix(" in all)")?
                    .parse::<usize>()
                    .ok()
            })
            .next_back()
    };
    let lines = wait_until(T, "every datagram accounted for", || {
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        let lines = out.iter().filter(|&&b| b == b'\n').count();
        if let Some(dropped) = total_dropped()
            && lines + dropped == sent
        {
            return Some((lines, dropped));
        }
        // One more datagram carries the kernel's count as it is now.
        probe.send_to(b"<13>last", target).unwrap();
        sent += 1;
        std::thread::sleep(Duration::from_millis(50));
        None
    });
    assert!(
        lines.1 > 0,
        "nothing was dropped: the test did not fill the queue"
    );
    d.signal(Signal::SIGTERM);
    d.wait_exit(T).expect("exits");
}
