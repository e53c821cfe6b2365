//! tend-monit's HTTP interface on what an adversary and a script send (issue 34 items 3,
//! 16, 17, 19, 22; issue 36 items 3 and 5), each beside Debian's monit 5.33 on the same
//! control file where 5.33 can serve it.
//!
//! Not tested here: a FIFO as monit 5.33's `allow cleartext` file (5.33 itself hangs
//! on it at `-t`).

use crate::common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The test daemon of tests/it/monit.rs: a start program that detaches a process which
/// writes its pid into the pidfile (after DELAY seconds) and sleeps.
const DAEMON: &str = r#"#!/bin/sh
# daemon PIDFILE DELAY
setsid sh -c 'sleep "$2"; echo $$ > "$1.tmp" && mv "$1.tmp" "$1" && exec sleep 100000' sh "$1" "$2" </dev/null >/dev/null 2>&1 &
"#;

fn check(name: &str, delay: u32, extra: &str) -> String {
    format!(
        "check process {name} with pidfile @ROOT@/run/{name}.pid\n  start program = \"@ROOT@/bin/daemon @ROOT@/run/{name}.pid {delay}\" with timeout 20 seconds\n  stop program = \"/bin/sh -c 'kill $(cat @ROOT@/run/{name}.pid)'\"\n  group vcap\n{extra}"
    )
}

/// Which program serves.
#[derive(Clone, Copy, PartialEq)]
enum Prog {
    Tend,
    Monit,
}

/// One daemon (tend-monit or monit 5.33) on a control file of its own, in a scratch
/// directory; everything under it killed at the end (fields drop in order).
struct Side {
    daemon: Option<Daemon>,
    _kill: KillUnder,
    s: Scratch,
    rc: PathBuf,
    port: u16,
    prog: Prog,
}

impl Side {
    /// `httpd` follows `set httpd port P and use address 127.0.0.1`; `@ROOT@` is the
    /// scratch directory.
    fn new(name: &str, prog: Prog, httpd: &str, checks: &str) -> Side {
        let s = Scratch::new(name);
        let root = s.path.display().to_string();
        s.write("bin/daemon", DAEMON, true);
        std::fs::create_dir_all(s.join("run")).unwrap();
        let port = free_port();
        let own = match prog {
            Prog::Tend => String::new(),
            Prog::Monit => format!(
                "set pidfile {root}/monit.pid\nset idfile {root}/monit.id\nset statefile {root}/monit.state\n"
            ),
        };
        let text = format!(
            "set daemon 10\n{own}set httpd port {port} and use address 127.0.0.1\n{httpd}\n{checks}"
        )
        .replace("@ROOT@", &root);
        let rc = s.write("monitrc", &text, false);
        std::fs::set_permissions(&rc, std::fs::Permissions::from_mode(0o600)).unwrap();
        let kill = KillUnder(s.path.clone());
        Side {
            daemon: None,
            _kill: kill,
            s,
            rc,
            port,
            prog,
        }
    }

    fn command(&self) -> Command {
        let mut c = match self.prog {
            Prog::Tend => {
                let mut c = cmd("tend-monit");
                c.arg("-S").arg(self.s.join("scan"));
                c
            }
            Prog::Monit => Command::new("monit"),
        };
        c.env("HOME", &self.s.path).current_dir(&self.s.path);
        c.arg("-c").arg(&self.rc);
        c
    }

    fn test(&self) -> Output {
        let mut c = self.command();
        c.arg("-t");
        run(c)
    }

    fn start(&mut self) {
        let mut c = self.command();
        c.arg("-I");
        c.stdout(std::fs::File::create(self.s.join("daemon.out")).unwrap());
        c.stderr(std::fs::File::create(self.s.join("daemon.log")).unwrap());
        self.daemon = Some(Daemon::start(c));
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.s.join("daemon.log")).unwrap_or_default()
            + &std::fs::read_to_string(self.s.join("daemon.out")).unwrap_or_default()
    }

    /// The daemon says it runs (monit: "started"; tend-monit: the daemon file written).
    fn wait_running(&self) {
        wait_until(PATIENCE, "the daemon running", || {
            let up = match self.prog {
                Prog::Tend => self.s.join("scan/.tend-monit/daemon").exists(),
                Prog::Monit => self.log().contains("started"),
            };
            up.then_some(())
        });
    }

    fn alive(&mut self) -> bool {
        let d = self.daemon.as_mut().unwrap();
        d.wait_exit(Duration::ZERO).is_none()
    }

    fn pid(&self, name: &str) -> Option<i32> {
        let t = std::fs::read_to_string(self.s.join(format!("run/{name}.pid"))).ok()?;
        t.trim().parse().ok()
    }
}

/// One exchange, or None when nothing listens.
fn exchange(port: u16, request: &[u8]) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    // A server that answers before reading everything may reset the rest: that is an
    // answer too, as long as its status came.
    let _ = s.write_all(request);
    let _ = s.shutdown(std::net::Shutdown::Write);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let t = text(&out);
    let status = t.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    Some((status, t))
}

/// One exchange with a server that may not listen yet.
fn http(port: u16, request: &[u8]) -> (u16, String) {
    wait_until(PATIENCE, "the HTTP server listening", || {
        exchange(port, request)
    })
}

fn basic(user_pw: &str) -> String {
    const T: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let b = user_pw.as_bytes();
    let mut o = String::new();
    for c in b.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            o.push(if i <= c.len() {
                T[(n >> (18 - 6 * i) & 63) as usize] as char
            } else {
                '='
            });
        }
    }
    o
}

/// A POST with `extra` header lines; `auth` empty: none.
fn post(port: u16, path: &str, auth: &str, extra: &str, body: &str) -> String {
    let auth = if auth.is_empty() {
        String::new()
    } else {
        format!("Authorization: Basic {}\r\n", basic(auth))
    };
    format!(
        "POST {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n{auth}Content-Type: application/x-www-form-urlencoded\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn status_xml(port: u16, auth: &str) -> String {
    get(port, "/_status2?format=xml", auth)
}

fn get(port: u16, path: &str, auth: &str) -> String {
    format!(
        "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Basic {}\r\n\r\n",
        basic(auth)
    )
}

/// Issue 34 item 16: numbers, sizes and encodings from the client bounded; after every
/// hostile request (and a seeded random batch), the daemon still answers.
#[test]
fn monit_http_hostile_requests_leave_it_serving() {
    let mut t = Side::new(
        "monit-http-hostile",
        Prog::Tend,
        "  allow vcap:pw",
        &check("db", 0, ""),
    );
    t.start();
    let port = t.port;
    assert_eq!(http(port, status_xml(port, "vcap:pw").as_bytes()).0, 200);
    let huge = "18446744073709551615";
    let many: String = (0..40).map(|i| format!("X-{i}: y\r\n")).collect();
    let rows: Vec<(&str, String, u16)> = vec![
        (
            "Content-Length of u64::MAX, no credentials",
            format!("POST /sl HTTP/1.1\r\nHost: x\r\nContent-Length: {huge}\r\n\r\n"),
            413,
        ),
        (
            "Content-Length past u64",
            "POST /db HTTP/1.1\r\nContent-Length: 99999999999999999999999999\r\n\r\n".into(),
            413,
        ),
        (
            "Content-Length of usize::MAX - 10",
            format!(
                "POST /db HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
                usize::MAX - 10
            ),
            413,
        ),
        (
            "negative",
            "POST /db HTTP/1.1\r\nContent-Length: -1\r\n\r\n".into(),
            400,
        ),
        (
            "signed",
            "POST /db HTTP/1.1\r\nContent-Length: +5\r\n\r\nabcde".into(),
            400,
        ),
        (
            "two lengths",
            "POST /db HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nabcdef".into(),
            400,
        ),
        (
            "chunked of a huge size",
            "POST /db HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffff\r\n"
                .into(),
            400,
        ),
        ("40 headers", format!("GET / HTTP/1.1\r\n{many}\r\n"), 431),
        (
            "bad escapes in the target",
            "GET /%zz%f%%%ff?format=%&%%= HTTP/1.1\r\n\r\n".into(),
            401,
        ),
        (
            "credentials not base64",
            "GET / HTTP/1.1\r\nAuthorization: Basic ====Aé\r\n\r\n".into(),
            401,
        ),
        (
            "credentials without a colon",
            format!(
                "GET / HTTP/1.1\r\nAuthorization: Basic {}\r\n\r\n",
                basic("vcappw")
            ),
            401,
        ),
        (
            "a form of bare escapes",
            post(
                port,
                "/db",
                "vcap:pw",
                "Cookie: securitytoken=%25\r\n",
                "securitytoken=%&action=%ZZ%",
            ),
            403,
        ),
        (
            "an unknown action",
            post(port, "/db", "vcap:pw", "", "action=%00%ff"),
            400,
        ),
    ];
    for (what, req, want) in &rows {
        let (st, answer) = http(port, req.as_bytes());
        assert_eq!(st, *want, "{what}: {answer}");
        assert!(t.alive(), "{what}: the daemon died: {}", t.log());
    }
    // A seeded random batch: pieces of requests, cut anywhere.
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    let mut rng = Rng(seed);
    let pieces: [&[u8]; 14] = [
        b"POST /db HTTP/1.1\r\n",
        b"GET /_status2?format=xml HTTP/1.0\r\n",
        b"Content-Length: ",
        b"18446744073709551616",
        b"4294967296",
        b"\r\n",
        b"\r\n\r\n",
        b"%",
        b"Authorization: Basic ",
        b"dmNhcDpwdw==",
        b"Cookie: securitytoken=",
        b"securitytoken=a&action=stop",
        b"\x00\xff\x80",
        b":",
    ];
    for _ in 0..150 {
        let mut req = Vec::new();
        for _ in 0..rng.below(12) {
            req.extend_from_slice(pieces[rng.below(pieces.len() as u64) as usize]);
        }
        exchange(port, &req);
    }
    assert!(t.alive(), "seed {seed}: the daemon died: {}", t.log());
    assert_eq!(
        http(port, status_xml(port, "vcap:pw").as_bytes()).0,
        200,
        "seed {seed}"
    );
}

/// What a credential-less `POST action=unmonitor` gets: None when nothing listens.
fn unmonitor_without_credentials(s: &Side) -> Option<u16> {
    exchange(
        s.port,
        post(s.port, "/db", "", "", "action=unmonitor").as_bytes(),
    )
    .map(|a| a.0)
}

/// Issue 34 items 17 and 19: an httpd without a rule anyone can pass fails closed, as
/// monit 5.33: no rule at all or only an empty file starts no httpd, a PAM group gets
/// 401, a cleartext file that cannot be read is refused at -t (a FIFO at once).
#[test]
fn monit_http_without_usable_credentials_fails_closed() {
    let monit = have("monit");
    if !monit {
        skip(
            "monit_http_without_usable_credentials_fails_closed: the monit 5.33 side (apt-get install monit)",
        );
    }
    // (what, allow lines, -t passes, what a credential-less POST gets: None: no httpd).
    let rows: [(&str, &str, bool, Option<u16>); 5] = [
        ("no allow line", "", true, None),
        ("a PAM group", "  allow @admins", true, Some(401)),
        (
            "an empty file",
            "  allow cleartext @ROOT@/empty",
            true,
            None,
        ),
        (
            "a missing file",
            "  allow cleartext @ROOT@/missing",
            false,
            None,
        ),
        // A user without a password: the server starts, nobody logs in.
        (
            "an md5 file without a hash",
            "  allow md5 @ROOT@/hashed",
            true,
            Some(401),
        ),
    ];
    for (what, allow, passes, answer) in rows {
        for prog in [Prog::Tend, Prog::Monit] {
            if prog == Prog::Monit && !monit {
                continue;
            }
            let name = format!("monit-http-closed-{}", what.replace(' ', "-"));
            let mut s = Side::new(&name, prog, allow, &check("db", 0, ""));
            s.s.write("empty", "", false);
            // Only a comment and a password-less user.
            s.s.write("hashed", "# vcap:$1$salt$notapassword\nro:\n", false);
            let side = if prog == Prog::Tend {
                "tend-monit"
            } else {
                "monit"
            };
            let o = s.test();
            assert_eq!(o.status.success(), passes, "{side}: {what}: -t: {o:?}");
            if !passes {
                assert!(text(&o.stderr).contains("missing"), "{side}: {what}: {o:?}");
                continue;
            }
            s.start();
            s.wait_running();
            wait_until(PATIENCE, "db started", || s.pid("db"));
            let got = match answer {
                // Never listening, while the daemon runs on.
                None => {
                    stays_for(
                        Duration::from_millis(500),
                        &format!("{side}: {what}: no httpd"),
                        || unmonitor_without_credentials(&s).is_none(),
                    );
                    assert!(s.alive(), "{side}: {what}: {}", s.log());
                    None
                }
                Some(_) => Some(wait_until(PATIENCE, "an answer", || {
                    unmonitor_without_credentials(&s)
                })),
            };
            assert_eq!(got, answer, "{side}: {what}: {}", s.log());
            if prog == Prog::Tend && answer.is_none() {
                assert!(s.log().contains("httpd not started"), "{what}: {}", s.log());
            }
        }
    }
    // A FIFO as the file (issue 34 item 19): refused at once, never opened blocking.
    let s = Side::new(
        "monit-http-closed-fifo",
        Prog::Tend,
        "  allow cleartext @ROOT@/fifo",
        &check("db", 0, ""),
    );
    nix::unistd::mkfifo(
        &s.s.join("fifo"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    let t0 = Instant::now();
    let o = s.test();
    assert_code(&o, 1);
    assert!(
        text(&o.stderr).contains("a FIFO, not a regular file"),
        "{o:?}"
    );
    assert!(t0.elapsed() < PATIENCE);
}

/// The hashes of the htpasswd files below: `pw` under each method, made by the tools
/// people use (`openssl passwd -1`, `-apr1`; DES through python's crypt module) when
/// they are here, else the same tools' output recorded once.
fn hashes() -> (String, String, String) {
    let openssl = |method: &str, fallback: &str| {
        let mut c = Command::new("openssl");
        c.args(["passwd", method, "pw"]);
        match c.output() {
            Ok(o) if o.status.success() => text(&o.stdout).trim().to_string(),
            _ => fallback.to_string(),
        }
    };
    let md5 = openssl("-1", "$1$abcdefgh$IQtUouv7y7Q9dRWkQEPCc.");
    let apr1 = openssl("-apr1", "$apr1$Zz$dUceJQLt3F7/Cd9rDjHvS1");
    let des = Command::new("python3")
        .args([
            "-W",
            "ignore",
            "-c",
            "import crypt, random, string; a = string.ascii_letters + string.digits + './'; print(crypt.crypt('pw', random.choice(a) + random.choice(a)))",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success() && o.stdout.len() == 14)
        .map(|o| text(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "abzlUXK5ed5rs".into());
    (md5, apr1, des)
}

/// Issue 34 item 17: `allow md5 FILE [users]` and `allow crypt FILE` let in the same
/// users as monit 5.33 on the same files: MD5-crypt (`$1$`) and Apache's (`$apr1$`,
/// with an /etc/shadow-style tail) under md5, DES under crypt; a wrong password, a
/// hash under the other method, a user not listed, a commented line, a user's second
/// line: 401. `allow sha1 FILE` is a syntax error for both.
#[test]
fn monit_http_hashed_htpasswd_files_as_monit_5_33() {
    let monit = have("monit");
    if !monit {
        skip(
            "monit_http_hashed_htpasswd_files_as_monit_5_33: the monit 5.33 side (apt-get install monit)",
        );
    }
    let (md5, apr1, des) = hashes();
    let md5_file =
        format!("vcap:{md5}\nro:{apr1}:19000:0:99999:7:::\nvcap:{des}\n#old:{md5}\ndes:{des}\n");
    let crypt_file = format!("vcap:{des}\nmd5:{md5}\n");
    // (allow line, [(credentials, status)]): "" is no credentials.
    let rows: [(&str, &[(&str, u16)]); 3] = [
        (
            "  allow md5 @ROOT@/md5",
            &[
                ("vcap:pw", 200),
                ("ro:pw", 200),
                ("vcap:px", 401),
                ("vcap:", 401),
                ("old:pw", 401),
                ("des:pw", 401),
                ("nobody:pw", 401),
                ("", 401),
            ],
        ),
        (
            "  allow md5 @ROOT@/md5 ro",
            &[("vcap:pw", 401), ("ro:pw", 200)],
        ),
        (
            "  allow crypt @ROOT@/crypt",
            &[
                ("vcap:pw", 200),
                ("vcap:pwx", 401),
                ("md5:pw", 401),
                ("", 401),
            ],
        ),
    ];
    for (i, (allow, cases)) in rows.iter().enumerate() {
        for prog in [Prog::Tend, Prog::Monit] {
            if prog == Prog::Monit && !monit {
                continue;
            }
            let side = if prog == Prog::Tend {
                "tend-monit"
            } else {
                "monit"
            };
            let mut s = Side::new(
                &format!("monit-http-hashed-{i}"),
                prog,
                allow,
                &check("db", 0, ""),
            );
            for (name, body) in [("md5", &md5_file), ("crypt", &crypt_file)] {
                let f = s.s.write(name, body, false);
                std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
            }
            let o = s.test();
            assert!(o.status.success(), "{side}: {allow}: -t: {o:?}");
            s.start();
            s.wait_running();
            for (cred, want) in cases.iter() {
                let req = if cred.is_empty() {
                    format!(
                        "GET /_status?format=xml HTTP/1.0\r\nHost: 127.0.0.1:{}\r\n\r\n",
                        s.port
                    )
                } else {
                    get(s.port, "/_status?format=xml", cred)
                };
                let (got, _) = http(s.port, req.as_bytes());
                assert_eq!(
                    got,
                    *want,
                    "{side}: {allow}: {cred:?} (md5 {md5}, apr1 {apr1}, des {des}): {}",
                    s.log()
                );
            }
            assert!(s.alive(), "{side}: {}", s.log());
        }
    }
    // monit 5.33 has no `allow sha1`.
    for prog in [Prog::Tend, Prog::Monit] {
        if prog == Prog::Monit && !monit {
            continue;
        }
        let s = Side::new(
            "monit-http-hashed-sha1",
            prog,
            "  allow sha1 @ROOT@/md5",
            &check("db", 0, ""),
        );
        s.s.write("md5", &md5_file, false);
        let o = s.test();
        assert_code(&o, 1);
        assert!(text(&o.stderr).contains("'sha1'"), "{o:?}");
    }
}

/// `set httpd unixsocket` is refused at -t with one line (tend-monit serves TCP only).
#[test]
fn monit_http_unixsocket_refused_by_t() {
    let s = Side::new(
        "monit-http-unixsocket",
        Prog::Tend,
        "  allow vcap:pw\nset httpd unixsocket @ROOT@/monit.sock uid 0 gid 0 permission 0660 allow vcap:pw",
        &check("db", 0, ""),
    );
    let o = s.test();
    assert_code(&o, 1);
    let e = text(&o.stderr);
    assert!(e.contains("unixsocket") && e.contains("TCP only"), "{e}");
}

/// Issue 34 item 3: monit 5.33's double-submit token (the cookie equals the form's
/// field, whatever its value) acts; a cookie or a field alone, two different values or
/// a foreign Origin do not; an unknown service is 404 after authentication. Both
/// programs on the same rows.
#[test]
fn monit_http_double_submit_token_as_monit_5_33() {
    let monit = have("monit");
    if !monit {
        skip(
            "monit_http_double_submit_token_as_monit_5_33: the monit 5.33 side (apt-get install monit)",
        );
    }
    let both = "Cookie: securitytoken=x1\r\n";
    // (what, path, cookie header, body, tend's status, monit's, acts).
    let rows: [(&str, &str, &str, &str, u16, u16, bool); 6] = [
        (
            "cookie and its field",
            "/db",
            both,
            "securitytoken=x1&action=unmonitor",
            200,
            302,
            true,
        ),
        (
            "two values",
            "/db",
            both,
            "securitytoken=y2&action=unmonitor",
            403,
            403,
            false,
        ),
        (
            "a cookie alone",
            "/db",
            both,
            "action=unmonitor",
            403,
            403,
            false,
        ),
        (
            "a field alone",
            "/db",
            "",
            "securitytoken=x1&action=unmonitor",
            403,
            403,
            false,
        ),
        (
            "no such service",
            "/nosuch",
            both,
            "securitytoken=x1&action=unmonitor",
            404,
            404,
            false,
        ),
        // monit 5.33 takes a foreign Origin with the pair (302); tend-monit does not.
        (
            "a foreign Origin",
            "/db",
            "Cookie: securitytoken=x1\r\nOrigin: http://evil.example\r\n",
            "securitytoken=x1&action=unmonitor",
            403,
            302,
            false,
        ),
    ];
    for prog in [Prog::Tend, Prog::Monit] {
        if prog == Prog::Monit && !monit {
            continue;
        }
        let mut s = Side::new(
            "monit-http-csrf",
            prog,
            "  allow vcap:pw",
            &check("db", 0, ""),
        );
        s.start();
        s.wait_running();
        let monitored = |s: &Side| {
            // 5.33's layout, which both serve.
            let (st, xml) = http(
                s.port,
                get(s.port, "/_status?format=xml", "vcap:pw").as_bytes(),
            );
            assert_eq!(st, 200, "{xml}");
            let body = &xml[xml.find("<name>db</name>").unwrap()..];
            !body[..body.find("</service>").unwrap()].contains("<monitor>0</monitor>")
        };
        wait_until(PATIENCE, "db monitored", || monitored(&s).then_some(()));
        for (what, path, cookie, body, tend_st, monit_st, acts) in rows {
            if prog == Prog::Monit && what == "a foreign Origin" {
                continue;
            }
            let want = if prog == Prog::Tend {
                tend_st
            } else {
                monit_st
            };
            let (st, answer) = http(
                s.port,
                post(s.port, path, "vcap:pw", cookie, body).as_bytes(),
            );
            assert_eq!(st, want, "{what}: {answer}");
            if acts {
                wait_until(PATIENCE, "db unmonitored", || {
                    (!monitored(&s)).then_some(())
                });
                let again = body.replace("unmonitor", "monitor");
                assert_eq!(
                    http(
                        s.port,
                        post(s.port, path, "vcap:pw", cookie, &again).as_bytes()
                    )
                    .0,
                    want
                );
                wait_until(PATIENCE, "db monitored", || monitored(&s).then_some(()));
            } else {
                assert!(monitored(&s), "{what}: acted");
            }
        }
    }
}

/// Issue 36 item 3: the status answers from the moment the port is bound, while a
/// service with a dependent takes seconds to write its pidfile.
#[test]
fn monit_http_answers_while_services_start() {
    let mut t = Side::new(
        "monit-http-starting",
        Prog::Tend,
        "  allow vcap:pw",
        &format!(
            "{}{}",
            check("slow", 5, ""),
            check("web", 0, "  depends on slow\n")
        ),
    );
    t.start();
    let port = t.port;
    // The moment the port is bound: a connection is taken.
    let bound = wait_until(PATIENCE, "the port bound", || {
        std::net::TcpStream::connect(("127.0.0.1", port))
            .ok()
            .map(|_| Instant::now())
    });
    let (st, xml) = http(port, status_xml(port, "vcap:pw").as_bytes());
    let took = bound.elapsed();
    assert_eq!(st, 200, "{xml}");
    assert!(xml.contains("<service name=\"slow\">"), "{xml}");
    assert!(
        took < Duration::from_millis(1500),
        "answered {took:?} after the port was bound"
    );
    assert!(
        t.pid("slow").is_none(),
        "slow was already up: the test proves nothing"
    );
    eprintln!("monit_http_answers_while_services_start: answered {took:?} after bind");
    // The dependent still starts after it.
    wait_until(Duration::from_secs(30), "web started", || t.pid("web"));
    assert!(t.pid("slow").is_some());
}

/// Issue 36 item 5: back-to-back restarts (the BOSH agent's reload) each give an
/// incarnation strictly greater than the last, even within one second.
#[test]
fn monit_http_incarnation_strictly_grows_back_to_back() {
    let mut t = Side::new(
        "monit-http-incarnation",
        Prog::Tend,
        "  allow vcap:pw",
        &check("db", 0, ""),
    );
    let mut last = 0u64;
    for round in 0..4 {
        t.start();
        let port = t.port;
        let (st, xml) = http(port, status_xml(port, "vcap:pw").as_bytes());
        assert_eq!(st, 200, "{xml}");
        let from = xml.find("incarnation=\"").unwrap() + "incarnation=\"".len();
        let inc: u64 = xml[from..from + xml[from..].find('"').unwrap()]
            .parse()
            .unwrap();
        assert!(inc > last, "round {round}: {inc} after {last}");
        last = inc;
        let d = t.daemon.as_mut().unwrap();
        d.signal(nix::sys::signal::Signal::SIGTERM);
        d.wait_exit(PATIENCE).expect("tend-monit ends on SIGTERM");
    }
}

/// A reload (SIGHUP) takes the new rules and the new file's users: the credentials are
/// read when the configuration is, never at a request.
#[test]
fn monit_http_reload_takes_new_credentials() {
    let mut t = Side::new(
        "monit-http-reload",
        Prog::Tend,
        "  allow cleartext @ROOT@/monit.user",
        &check("db", 0, ""),
    );
    t.s.write("monit.user", "vcap:old\n", false);
    t.start();
    let port = t.port;
    assert_eq!(http(port, status_xml(port, "vcap:old").as_bytes()).0, 200);
    // Changed on disk: not taken until the reload.
    t.s.write("monit.user", "vcap:new\n", false);
    assert_eq!(http(port, status_xml(port, "vcap:new").as_bytes()).0, 401);
    t.daemon
        .as_ref()
        .unwrap()
        .signal(nix::sys::signal::Signal::SIGHUP);
    wait_until(PATIENCE, "the new password taken", || {
        (http(port, status_xml(port, "vcap:new").as_bytes()).0 == 200).then_some(())
    });
    assert_eq!(http(port, status_xml(port, "vcap:old").as_bytes()).0, 401);
}
