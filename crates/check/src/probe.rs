//! The three probes: exec (a command that exits 0), TCP (a connect), HTTP (an HTTP/1.1 GET
//! whose status is in a range and whose body holds a text). Every attempt has a deadline;
//! a failure comes back with its reason as one short line, never a hang or a panic.

use crate::resolve;
use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::socket::{
    AddressFamily, SockFlag, SockType, SockaddrIn, SockaddrIn6, connect, getsockopt, socket,
    sockopt,
};
use std::ffi::OsString;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::time::{Duration, Instant};
use tend_sys::exec::Prepared;
use tend_sys::process::{SpawnOptions, spawn};
use tend_sys::wait::Ended;

/// Largest answer read from an HTTP server; a body text beyond it is not seen.
pub const HTTP_READ_MAX: usize = 64 * 1024;

/// What to probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// `/bin/sh -c COMMAND` exits 0.
    Exec(String),
    /// A TCP connect to host:port succeeds.
    Tcp(Target),
    /// An HTTP GET answers as expected.
    Http(HttpProbe),
}

/// A host (name or literal) and a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub host: String,
    pub port: u16,
}

/// An HTTP check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpProbe {
    pub target: Target,
    pub path: String,
    /// Accepted status codes, inclusive.
    pub status: (u16, u16),
    /// A text the body must contain.
    pub body: Option<Vec<u8>>,
    /// Extra request header lines (`Name: value`); a `Host:` one replaces the default.
    pub headers: Vec<String>,
}

/// Why an option value was refused (a usage error for the caller).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadValue(pub &'static str);

impl BadValue {
    /// An option value is the caller's input: 100.
    pub fn code(&self) -> i32 {
        tend_sys::code::USAGE
    }

    /// The message naming the value given: `invalid WHAT: VALUE`.
    pub fn describe(&self, value: &str) -> String {
        format!("invalid {}: {value}", self.0)
    }
}

/// Parse `host:port`, `[v6]:port`.
pub fn parse_target(s: &str) -> Result<Target, BadValue> {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (h, p) = rest.split_once("]:").ok_or(BadValue("host:port"))?;
        h.parse::<std::net::Ipv6Addr>()
            .map_err(|_| BadValue("IPv6 address"))?;
        (h, p)
    } else {
        s.rsplit_once(':').ok_or(BadValue("host:port"))?
    };
    if host.is_empty()
        || host.contains(['/', ' ', '[', ']'])
        || (host.contains(':') && !s.starts_with('['))
    {
        return Err(BadValue("host"));
    }
    let port = match port.parse::<u16>() {
        Ok(p) if p != 0 && port.bytes().all(|b| b.is_ascii_digit()) => p,
        _ => return Err(BadValue("port")),
    };
    Ok(Target {
        host: host.to_string(),
        port,
    })
}

/// Parse `http://host[:port][/path]` (no https, no user info).
pub fn parse_url(url: &str) -> Result<(Target, String), BadValue> {
    let rest = url.strip_prefix("http://").ok_or(BadValue("http:// URL"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if path.bytes().any(|b| b <= b' ' || b == 0x7f) || authority.contains('@') {
        return Err(BadValue("URL"));
    }
    let has_port = if authority.starts_with('[') {
        authority.contains("]:")
    } else {
        authority.contains(':')
    };
    let t = if has_port {
        parse_target(authority)?
    } else {
        parse_target(&format!("{authority}:80"))?
    };
    Ok((t, path.to_string()))
}

/// Parse `200`, `200-399`.
pub fn parse_status_range(s: &str) -> Result<(u16, u16), BadValue> {
    let code = |x: &str| -> Result<u16, BadValue> {
        match x.parse::<u16>() {
            Ok(c) if (100..=599).contains(&c) && x.len() == 3 => Ok(c),
            _ => Err(BadValue("status range")),
        }
    };
    match s.split_once('-') {
        Some((a, b)) => {
            let (a, b) = (code(a)?, code(b)?);
            if a > b {
                return Err(BadValue("status range"));
            }
            Ok((a, b))
        }
        None => code(s).map(|c| (c, c)),
    }
}

/// A header line: `Name: value`, printable, no CR/LF.
pub fn parse_header(s: &str) -> Result<String, BadValue> {
    let (name, _) = s.split_once(':').ok_or(BadValue("header"))?;
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        || s.bytes().any(|b| b < b' ' || b == 0x7f)
    {
        return Err(BadValue("header"));
    }
    Ok(s.to_string())
}

/// A failed attempt, with its reason.
pub type Failure = String;

/// Run one attempt with `timeout`; `close` lists fds the exec probe must not inherit.
/// `buf` is the HTTP answer buffer, kept by the caller so that a watcher does not
/// allocate it per attempt.
pub fn attempt(
    p: &Probe,
    timeout: Duration,
    close: &[i32],
    buf: &mut Vec<u8>,
) -> Result<(), Failure> {
    let deadline = Instant::now() + timeout;
    match p {
        Probe::Exec(cmd) => exec(cmd, deadline, timeout, close),
        Probe::Tcp(t) => tcp_connect(t, deadline, timeout).map(drop),
        Probe::Http(h) => http(h, deadline, timeout, buf),
    }
}

fn ms(d: Duration) -> u128 {
    d.as_millis()
}

/// How long poll may wait before `deadline`, by the one rounding rule (tend_sys::deadline);
/// None once it has passed.
fn left(deadline: Instant) -> Option<PollTimeout> {
    let now = Instant::now();
    (deadline > now).then(|| tend_sys::deadline::poll_timeout(Some(deadline), now))
}

fn exec(cmd: &str, deadline: Instant, timeout: Duration, close: &[i32]) -> Result<(), Failure> {
    let argv: Vec<OsString> = vec!["/bin/sh".into(), "-c".into(), cmd.into()];
    let prog =
        Prepared::with_current_env(&argv).map_err(|e| format!("exec /bin/sh: {}", e.desc()))?;
    let opts = SpawnOptions {
        setpgid: true,
        close: close.to_vec(),
        ..Default::default()
    };
    let pid = spawn(&prog, &opts).map_err(|e| match e {
        tend_sys::process::SpawnError::Fork(e) => format!("fork: {}", e.desc()),
        tend_sys::process::SpawnError::Exec(e) => format!("exec /bin/sh: {}", e.desc()),
    })?;
    let pidfd = rustix::process::Pid::from_raw(pid.as_raw())
        .and_then(|p| rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).ok());
    let exited = match &pidfd {
        Some(fd) => loop {
            let Some(t) = left(deadline) else { break false };
            let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, t) {
                Ok(0) => break false,
                Ok(_) => break true,
                Err(Errno::EINTR) => continue,
                Err(_) => break false,
            }
        },
        // No pidfd (old kernel): a blocking wait bounded by nothing is the one thing a
        // probe must not do, so treat it as a hang at the deadline.
        None => false,
    };
    if !exited {
        // The whole process group: a shell's children too.
        let _ = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGKILL);
    }
    let status = tend_sys::wait::wait(Some(pid));
    if !exited {
        return Err(format!("command timed out after {} ms", ms(timeout)));
    }
    match status.map(|(_, st)| st.ended()) {
        Ok(Ended::Exited(0)) => Ok(()),
        Ok(Ended::Exited(c)) => Err(format!("command exited {c}")),
        Ok(Ended::Signaled(s)) => Err(match tend_sys::signals::name(i32::from(s)) {
            Some(name) => format!("command killed by {name}"),
            None => format!("command killed by signal {s}"),
        }),
        Err(e) => Err(format!("wait: {}", e.desc())),
    }
}

fn addresses(t: &Target) -> Result<Vec<IpAddr>, Failure> {
    resolve::lookup(&t.host).map_err(|e| format!("cannot resolve {}: {e}", t.host))
}

/// Connect to the first address that accepts, within the deadline.
fn tcp_connect(t: &Target, deadline: Instant, timeout: Duration) -> Result<OwnedFd, Failure> {
    let addrs = addresses(t)?;
    let mut last = format!("no address for {}", t.host);
    for ip in addrs {
        let sa = SocketAddr::new(ip, t.port);
        match connect_one(sa, deadline) {
            Ok(fd) => return Ok(fd),
            Err(Errno::ETIMEDOUT) => {
                return Err(format!(
                    "connect to {sa} timed out after {} ms",
                    ms(timeout)
                ));
            }
            Err(e) => last = format!("connect to {sa}: {}", e.desc()),
        }
    }
    Err(last)
}

fn connect_one(sa: SocketAddr, deadline: Instant) -> Result<OwnedFd, Errno> {
    let family = if sa.is_ipv4() {
        AddressFamily::Inet
    } else {
        AddressFamily::Inet6
    };
    let fd = socket(
        family,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
        None,
    )?;
    let r = match sa {
        SocketAddr::V4(a) => connect(fd.as_raw_fd(), &SockaddrIn::from(a)),
        SocketAddr::V6(a) => connect(fd.as_raw_fd(), &SockaddrIn6::from(a)),
    };
    match r {
        Ok(()) => return Ok(fd),
        Err(Errno::EINPROGRESS | Errno::EINTR) => {}
        Err(e) => return Err(e),
    }
    loop {
        let t = left(deadline).ok_or(Errno::ETIMEDOUT)?;
        let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLOUT)];
        match poll(&mut fds, t) {
            Ok(0) => return Err(Errno::ETIMEDOUT),
            Ok(_) => break,
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e),
        }
    }
    match getsockopt(&fd, sockopt::SocketError)? {
        0 => Ok(fd),
        e => Err(Errno::from_raw(e)),
    }
}

/// Wait until `fd` is ready for `flags` or the deadline passes.
fn wait_fd(fd: &OwnedFd, flags: PollFlags, deadline: Instant) -> Result<(), ()> {
    loop {
        let t = left(deadline).ok_or(())?;
        let mut fds = [PollFd::new(fd.as_fd(), flags)];
        match poll(&mut fds, t) {
            Ok(0) => return Err(()),
            Ok(_) => return Ok(()),
            Err(Errno::EINTR) => continue,
            Err(_) => return Err(()),
        }
    }
}

/// The request bytes for an HTTP probe.
pub fn request(h: &HttpProbe) -> Vec<u8> {
    let mut r = format!("GET {} HTTP/1.1\r\n", h.path);
    let has_host = h.headers.iter().any(|l| {
        l.split(':')
            .next()
            .is_some_and(|n| n.eq_ignore_ascii_case("host"))
    });
    if !has_host {
        let host = if h.target.host.contains(':') {
            format!("[{}]", h.target.host)
        } else {
            h.target.host.clone()
        };
        if h.target.port == 80 {
            r.push_str(&format!("Host: {host}\r\n"));
        } else {
            r.push_str(&format!("Host: {host}:{}\r\n", h.target.port));
        }
    }
    for l in &h.headers {
        r.push_str(l);
        r.push_str("\r\n");
    }
    r.push_str("User-Agent: tend-check\r\nAccept: */*\r\nConnection: close\r\n\r\n");
    r.into_bytes()
}

fn http(
    h: &HttpProbe,
    deadline: Instant,
    timeout: Duration,
    buf: &mut Vec<u8>,
) -> Result<(), Failure> {
    let fd = tcp_connect(&h.target, deadline, timeout)?;
    let timed_out = || format!("no complete answer within {} ms", ms(timeout));
    let req = request(h);
    let mut sent = 0;
    while sent < req.len() {
        wait_fd(&fd, PollFlags::POLLOUT, deadline).map_err(|()| timed_out())?;
        match nix::sys::socket::send(
            fd.as_raw_fd(),
            &req[sent..],
            nix::sys::socket::MsgFlags::MSG_NOSIGNAL,
        ) {
            Ok(n) => sent += n,
            Err(Errno::EAGAIN | Errno::EINTR) => {}
            Err(e) => return Err(format!("send: {}", e.desc())),
        }
    }
    buf.resize(HTTP_READ_MAX, 0);
    let mut got = 0;
    loop {
        if got == buf.len() || answer_complete(&buf[..got]) {
            break;
        }
        wait_fd(&fd, PollFlags::POLLIN, deadline).map_err(|()| timed_out())?;
        match nix::unistd::read(fd.as_raw_fd(), &mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(Errno::EAGAIN | Errno::EINTR) => {}
            Err(Errno::ECONNRESET) if got == 0 => {
                return Err("connection reset without an answer".into());
            }
            Err(e) => {
                if got == 0 {
                    return Err(format!("read: {}", e.desc()));
                }
                break;
            }
        }
    }
    judge(h, &buf[..got])
}

/// Whether the answer read so far is whole: headers ended and Content-Length bytes of
/// body, or a chunked body's last chunk. Without either, the server's close ends it.
fn answer_complete(a: &[u8]) -> bool {
    let Some(end) = find(a, b"\r\n\r\n") else {
        return false;
    };
    let head = &a[..end];
    let body = &a[end + 4..];
    if let Some(v) = header_value(head, b"content-length") {
        return std::str::from_utf8(v)
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
            .is_some_and(|n| body.len() >= n);
    }
    if header_value(head, b"transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case(b"chunked"))
    {
        return body.starts_with(b"0\r\n") || find(body, b"\r\n0\r\n").is_some();
    }
    false
}

fn header_value<'a>(head: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    head.split(|&b| b == b'\n').skip(1).find_map(|l| {
        let l = l.strip_suffix(b"\r").unwrap_or(l);
        let i = l.iter().position(|&b| b == b':')?;
        l[..i]
            .eq_ignore_ascii_case(name)
            .then(|| l[i + 1..].trim_ascii())
    })
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Judge a whole answer: status line, status range, body text.
pub fn judge(h: &HttpProbe, answer: &[u8]) -> Result<(), Failure> {
    if answer.is_empty() {
        return Err("connection closed without an answer".into());
    }
    let line_end = find(answer, b"\r\n").ok_or("malformed status line")?;
    let line = &answer[..line_end];
    let code = parse_status_line(line).ok_or_else(|| {
        let shown: String = String::from_utf8_lossy(&line[..line.len().min(40)])
            .chars()
            .map(|c| if c.is_control() { '?' } else { c })
            .collect();
        format!("malformed status line {shown:?}")
    })?;
    if code < h.status.0 || code > h.status.1 {
        let what = if (300..400).contains(&code) {
            "redirect "
        } else {
            ""
        };
        return Err(format!(
            "{what}status {code} not in {}-{}",
            h.status.0, h.status.1
        ));
    }
    if let Some(text) = &h.body {
        let body = find(answer, b"\r\n\r\n").map_or(&answer[answer.len()..], |i| &answer[i + 4..]);
        if find(body, text).is_none() {
            return Err(format!("body lacks {:?}", String::from_utf8_lossy(text)));
        }
    }
    Ok(())
}

/// `HTTP/1.x NNN[ reason]` → NNN.
fn parse_status_line(line: &[u8]) -> Option<u16> {
    let rest = line
        .strip_prefix(b"HTTP/1.1 ")
        .or_else(|| line.strip_prefix(b"HTTP/1.0 "))?;
    if rest.len() < 3 || (rest.len() > 3 && rest[3] != b' ') {
        return None;
    }
    let d = &rest[..3];
    if !d.iter().all(u8::is_ascii_digit) || d[0] < b'1' || d[0] > b'5' {
        return None;
    }
    Some(u16::from(d[0] - b'0') * 100 + u16::from(d[1] - b'0') * 10 + u16::from(d[2] - b'0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe() -> HttpProbe {
        HttpProbe {
            target: Target {
                host: "127.0.0.1".into(),
                port: 8080,
            },
            path: "/health".into(),
            status: (200, 299),
            body: Some(b"ok".to_vec()),
            headers: vec![],
        }
    }

    #[test]
    fn targets_and_urls() {
        assert_eq!(
            parse_target("[::1]:80").unwrap(),
            Target {
                host: "::1".into(),
                port: 80
            }
        );
        assert_eq!(parse_target("db.local:5432").unwrap().port, 5432);
        for bad in [
            "x", "::1:80", "h:0", "h:65536", ":80", "[::1]80", "h:+1", "[zz]:1",
        ] {
            assert!(parse_target(bad).is_err(), "{bad}");
        }
        let (t, p) = parse_url("http://[::1]:81/a?b").unwrap();
        assert_eq!((t.host.as_str(), t.port, p.as_str()), ("::1", 81, "/a?b"));
        let (t, p) = parse_url("http://example.org").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, p.as_str()),
            ("example.org", 80, "/")
        );
        for bad in [
            "https://x/",
            "http://",
            "http://u@h/",
            "http://h/a b",
            "ftp://h",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ranges_and_headers() {
        assert_eq!(parse_status_range("200-399"), Ok((200, 399)));
        assert_eq!(parse_status_range("204"), Ok((204, 204)));
        for bad in ["", "99", "200-", "399-200", "2000", "600"] {
            assert!(parse_status_range(bad).is_err(), "{bad}");
        }
        assert!(parse_header("Host: x").is_ok());
        assert!(parse_header("Bad Name: x").is_err());
        assert!(parse_header("X: a\r\nY: b").is_err());
    }

    #[test]
    fn request_bytes() {
        let mut h = probe();
        assert_eq!(
            request(&h),
            b"GET /health HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: tend-check\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
        h.headers = vec!["host: web".into()];
        let r = String::from_utf8(request(&h)).unwrap();
        assert!(
            r.contains("\r\nhost: web\r\n") && !r.contains("Host: 127"),
            "{r}"
        );
    }

    #[test]
    fn answers() {
        let h = probe();
        assert_eq!(
            judge(&h, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
            Ok(())
        );
        assert_eq!(judge(&h, b"HTTP/1.0 204\r\n\r\nok"), Ok(()));
        assert_eq!(
            judge(&h, b"HTTP/1.1 500 Oops\r\n\r\nok").unwrap_err(),
            "status 500 not in 200-299"
        );
        assert_eq!(
            judge(&h, b"HTTP/1.1 302 Found\r\nLocation: /x\r\n\r\n").unwrap_err(),
            "redirect status 302 not in 200-299"
        );
        assert_eq!(
            judge(&h, b"HTTP/1.1 200 OK\r\n\r\nnope").unwrap_err(),
            "body lacks \"ok\""
        );
        assert_eq!(
            judge(&h, b"garbage\r\n\r\n").unwrap_err(),
            "malformed status line \"garbage\""
        );
        assert_eq!(
            judge(&h, b"HTTP/1.1 200 OK").unwrap_err(),
            "malformed status line"
        );
        assert_eq!(
            judge(&h, b"").unwrap_err(),
            "connection closed without an answer"
        );
        assert!(judge(&h, b"HTTP/1.1 2000 OK\r\n\r\n").is_err());
        assert!(answer_complete(
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        ));
        assert!(!answer_complete(
            b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok"
        ));
        assert!(answer_complete(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"
        ));
    }
}
