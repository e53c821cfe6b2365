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
    read_answer(&fd, deadline, buf, &timed_out)
        .and_then(|(code, body)| judge_parts(h, code, &buf[body.0..body.1]))
}

/// Read one answer into `buf` (HTTP_READ_MAX bytes): its head, then its body as the head
/// frames it (Content-Length, chunked, or until the server closes), the body decoded and
/// kept up to what fits (the rest read and counted, not kept). Returns the head's length
/// and the kept body's range. A head that does not end within HTTP_READ_MAX, a body
/// shorter than its length or a chunked body without its last chunk is a failure; line
/// ends are CRLF or a bare LF (RFC 9112 lets a recipient take either, as curl does).
fn read_answer(
    fd: &OwnedFd,
    deadline: Instant,
    buf: &mut Vec<u8>,
    timed_out: &dyn Fn() -> Failure,
) -> Result<(u16, (usize, usize)), Failure> {
    buf.resize(HTTP_READ_MAX, 0);
    let mut got = 0;
    // The head, parsed by httparse once it is whole.
    let head = loop {
        if got > 0
            && let Some(head) = parse_head(&buf[..got])?
        {
            break head;
        }
        if got == buf.len() {
            return Err(format!("headers longer than {} KiB", HTTP_READ_MAX / 1024));
        }
        match read_some(fd, &mut buf[got..], deadline).map_err(|()| timed_out())? {
            Read::Data(n) => got += n,
            Read::End | Read::Reset if got == 0 => {
                return Err("connection closed without an answer".into());
            }
            Read::End | Read::Reset => return Err("connection closed inside the headers".into()),
            Read::Failed(e) => return Err(format!("read: {}", e.desc())),
        }
    };
    let (code, body_start) = (head.code, head.len);
    let mut body = head.body;
    // What came with the head, then the rest, through the body's framing: decoded bytes
    // are kept from body_start on (never past what was read, so in place is safe).
    let mut kept = body_start;
    let mut scratch = [0u8; 4096];
    let mut at = body_start;
    while at < got && !body.done() {
        let n = (got - at).min(scratch.len());
        scratch[..n].copy_from_slice(&buf[at..at + n]);
        at += n;
        body.feed(&scratch[..n], buf, &mut kept)?;
    }
    while !body.done() {
        match read_some(fd, &mut scratch, deadline).map_err(|()| timed_out())? {
            Read::Data(n) => body.feed(&scratch[..n], buf, &mut kept)?,
            Read::End => return body.at_close(false).map(|()| (code, (body_start, kept))),
            Read::Reset => return body.at_close(true).map(|()| (code, (body_start, kept))),
            Read::Failed(e) => return Err(format!("read: {}", e.desc())),
        }
    }
    Ok((code, (body_start, kept)))
}

/// What one read gave.
enum Read {
    Data(usize),
    End,
    Reset,
    Failed(Errno),
}

/// Read what is there, waiting for it until the deadline (Err then).
fn read_some(fd: &OwnedFd, into: &mut [u8], deadline: Instant) -> Result<Read, ()> {
    loop {
        wait_fd(fd, PollFlags::POLLIN, deadline)?;
        match nix::unistd::read(fd.as_raw_fd(), into) {
            Ok(0) => return Ok(Read::End),
            Ok(n) => return Ok(Read::Data(n)),
            Err(Errno::EAGAIN | Errno::EINTR) => {}
            Err(Errno::ECONNRESET) => return Ok(Read::Reset),
            Err(e) => return Ok(Read::Failed(e)),
        }
    }
}

/// Header fields parsed without allocating; an answer with more gets room for as many as
/// its bytes can hold (a field is at least `x:` and a line end), so the only limit on
/// fields is the head's 64 KiB, as it was before httparse.
const STACK_HEADERS: usize = 64;

/// A parsed head: the status code, the head's length (with its blank line), the body's
/// framing.
struct Head {
    code: u16,
    len: usize,
    body: Body,
}

/// Parse an answer's head with httparse: None while it is incomplete; a status line that
/// is not HTTP/1.x NNN, a malformed header or an unreadable framing is a failure. Line
/// ends are CRLF or a bare LF; an obs-fold continuation line is taken as part of the
/// field before it (RFC 9112 5.2: a user agent replaces it with a space).
fn parse_head(a: &[u8]) -> Result<Option<Head>, Failure> {
    let mut headers = [httparse::EMPTY_HEADER; STACK_HEADERS];
    match parse_head_into(a, &mut headers) {
        Err(None) => {
            let mut many = vec![httparse::EMPTY_HEADER; a.len() / 3 + 1];
            parse_head_into(a, &mut many)
                .map_err(|e| e.unwrap_or_else(|| "too many header fields".into()))
        }
        r => r.map_err(Option::unwrap_or_default),
    }
}

/// One parse into `headers`; `Err(None)`: more fields than `headers` holds.
fn parse_head_into<'a>(
    a: &'a [u8],
    headers: &mut [httparse::Header<'a>],
) -> Result<Option<Head>, Option<Failure>> {
    let mut r = httparse::Response::new(headers);
    let mut config = httparse::ParserConfig::default();
    config.allow_obsolete_multiline_headers_in_responses(true);
    let len = match config.parse_response(&mut r, a) {
        Ok(httparse::Status::Complete(n)) => n,
        // httparse reads the status line first: one that cannot be HTTP/1.x NNN is an
        // error as soon as it is seen, not a wait for more.
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(None),
        Err(httparse::Error::Version | httparse::Error::Status) => {
            let line = a.split(|&b| b == b'\n').next().unwrap_or_default();
            return Err(Some(malformed(line)));
        }
        Err(e) => return Err(Some(format!("malformed header: {e}"))),
    };
    let code = r.code.unwrap_or(0);
    if !(100..600).contains(&code) {
        let line = a.split(|&b| b == b'\n').next().unwrap_or_default();
        return Err(Some(malformed(line)));
    }
    let body = Body::new(code, r.headers).map_err(Some)?;
    Ok(Some(Head { code, len, body }))
}

fn malformed(line: &[u8]) -> Failure {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let shown: String = String::from_utf8_lossy(&line[..line.len().min(40)])
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    format!("malformed status line {shown:?}")
}

/// How a body is framed, and how far it has come.
enum Body {
    /// Bytes still due (Content-Length); `of` the length.
    Length {
        left: u64,
        of: u64,
    },
    Chunked(Chunk),
    /// Until the server closes (no length, not chunked).
    UntilClose,
}

/// Where a chunked body's decoder stands.
#[derive(Clone, Copy, PartialEq)]
enum Chunk {
    /// In a chunk-size line: the size so far and how many digits.
    Size {
        size: u64,
        digits: u8,
    },
    /// After the size: an extension or spaces, up to the line end.
    SizeRest {
        size: u64,
        len: u16,
    },
    /// Data bytes still due.
    Data(u64),
    /// The line end after a chunk's data (`cr`: its CR seen).
    DataEnd {
        cr: bool,
    },
    /// At the start of a trailer line (after the last chunk), or within one.
    Trailer {
        at_start: bool,
        cr: bool,
        len: u32,
    },
    Done,
}

impl Body {
    /// The framing the head says; an unreadable Content-Length is a failure.
    fn new(code: u16, headers: &[httparse::Header]) -> Result<Body, Failure> {
        if matches!(code, 204 | 304 | 100..=199) {
            return Ok(Body::Length { left: 0, of: 0 });
        }
        let value = |name: &str| {
            headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .map(|h| h.value.trim_ascii())
        };
        let chunked = value("transfer-encoding").is_some_and(|v| {
            v.rsplit(|&b| b == b',')
                .next()
                .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"))
        });
        if chunked {
            return Ok(Body::Chunked(Chunk::Size { size: 0, digits: 0 }));
        }
        match value("content-length") {
            None => Ok(Body::UntilClose),
            Some(v) => {
                let n = std::str::from_utf8(v)
                    .ok()
                    .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|s| s.parse::<u64>().ok())
                    .ok_or_else(|| {
                        format!("invalid Content-Length {:?}", String::from_utf8_lossy(v))
                    })?;
                Ok(Body::Length { left: n, of: n })
            }
        }
    }

    fn done(&self) -> bool {
        matches!(
            self,
            Body::Length { left: 0, .. } | Body::Chunked(Chunk::Done)
        )
    }

    /// Take `raw` bytes of the body as sent; what they carry is appended to
    /// `buf[..*kept]` while it fits.
    fn feed(&mut self, raw: &[u8], buf: &mut [u8], kept: &mut usize) -> Result<(), Failure> {
        let mut keep = |data: &[u8]| {
            let n = data.len().min(buf.len() - *kept);
            buf[*kept..*kept + n].copy_from_slice(&data[..n]);
            *kept += n;
        };
        match self {
            Body::UntilClose => keep(raw),
            Body::Length { left, .. } => {
                let n = raw.len().min(usize::try_from(*left).unwrap_or(usize::MAX));
                keep(&raw[..n]);
                *left -= n as u64;
            }
            Body::Chunked(state) => {
                let mut i = 0;
                while i < raw.len() && *state != Chunk::Done {
                    if let Chunk::Data(left) = *state {
                        let n = (raw.len() - i).min(usize::try_from(left).unwrap_or(usize::MAX));
                        keep(&raw[i..i + n]);
                        i += n;
                        *state = match left - n as u64 {
                            0 => Chunk::DataEnd { cr: false },
                            l => Chunk::Data(l),
                        };
                        continue;
                    }
                    *state = chunk_step(*state, raw[i]).ok_or("malformed chunked body")?;
                    i += 1;
                }
            }
        }
        Ok(())
    }

    /// The server closed (`reset`: with a reset) before `done`: a failure unless the body
    /// runs until the close.
    fn at_close(&self, reset: bool) -> Result<(), Failure> {
        let how = if reset { " (connection reset)" } else { "" };
        match self {
            Body::UntilClose if reset => Err("connection reset inside the body".into()),
            Body::UntilClose => Ok(()),
            Body::Length { left, of } => {
                Err(format!("body cut short: {} of {of} bytes{how}", of - left))
            }
            Body::Chunked(_) => Err(format!("chunked body cut short{how}")),
        }
    }
}

/// One byte of a chunked body's framing (data bytes are taken by the caller). None: the
/// framing is broken.
fn chunk_step(state: Chunk, b: u8) -> Option<Chunk> {
    let line_end = |size: u64| {
        if size == 0 {
            Chunk::Trailer {
                at_start: true,
                cr: false,
                len: 0,
            }
        } else {
            Chunk::Data(size)
        }
    };
    Some(match state {
        Chunk::Size { size, digits } => match b {
            b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' if digits < 15 => Chunk::Size {
                size: size * 16 + u64::from((b as char).to_digit(16)?),
                digits: digits + 1,
            },
            _ if digits == 0 => return None,
            b'\n' => line_end(size),
            b'\r' | b';' | b' ' | b'\t' => Chunk::SizeRest { size, len: 1 },
            _ => return None,
        },
        Chunk::SizeRest { size, len } => match b {
            b'\n' => line_end(size),
            _ if len >= 4096 => return None,
            _ => Chunk::SizeRest { size, len: len + 1 },
        },
        Chunk::DataEnd { cr } => match b {
            b'\r' if !cr => Chunk::DataEnd { cr: true },
            b'\n' => Chunk::Size { size: 0, digits: 0 },
            _ => return None,
        },
        Chunk::Trailer { at_start, cr, len } => match b {
            b'\n' if at_start || cr && len == 0 => Chunk::Done,
            b'\n' => Chunk::Trailer {
                at_start: true,
                cr: false,
                len: 0,
            },
            b'\r' if at_start => Chunk::Trailer {
                at_start: false,
                cr: true,
                len: 0,
            },
            _ if len >= 65536 => return None,
            _ => Chunk::Trailer {
                at_start: false,
                cr: false,
                len: len + 1,
            },
        },
        Chunk::Data(_) | Chunk::Done => state,
    })
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Judge a whole answer as bytes (its head, then its body as sent, not chunked).
pub fn judge(h: &HttpProbe, answer: &[u8]) -> Result<(), Failure> {
    if answer.is_empty() {
        return Err("connection closed without an answer".into());
    }
    match parse_head(answer)? {
        Some(head) => judge_parts(h, head.code, &answer[head.len..]),
        None if !answer.contains(&b'\n') => Err("malformed status line".into()),
        None => Err("connection closed inside the headers".into()),
    }
}

/// Judge an answer's status (its range) and decoded body (its text).
fn judge_parts(h: &HttpProbe, code: u16, body: &[u8]) -> Result<(), Failure> {
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
    if let Some(text) = &h.body
        && find(body, text).is_none()
    {
        return Err(format!("body lacks {:?}", String::from_utf8_lossy(text)));
    }
    Ok(())
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
        assert_eq!(judge(&h, b"HTTP/1.1 200 OK\nX: y\n\nok"), Ok(()));
        let len = |a: &[u8]| parse_head(a).unwrap().map(|h| h.len);
        assert_eq!(len(b"HTTP/1.1 200 OK\r\nA: b\r\n\r\nok"), Some(25));
        assert_eq!(len(b"HTTP/1.1 200 OK\nA: b\n\nok"), Some(22));
        assert_eq!(len(b"HTTP/1.1 200 OK\r\nA: b\r\n"), None);
        // More fields than the stack array: parsed all the same (the limit is 64 KiB).
        let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..500 {
            many.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
        }
        let head_len = many.len() + 2;
        many.extend_from_slice(b"Content-Length: 2\r\n\r\nok");
        assert_eq!(len(&many), Some(head_len + 19));
        assert_eq!(
            len(&many[..many.len() - 30]),
            None,
            "incomplete, more fields to come"
        );
        // The edges hand parsing got wrong, through httparse.
        let framing = |a: &[u8]| match parse_head(a).unwrap().unwrap().body {
            Body::Length { of, .. } => format!("length {of}"),
            Body::Chunked(_) => "chunked".into(),
            Body::UntilClose => "until close".into(),
        };
        // obs-fold: the continuation belongs to the field before it.
        assert_eq!(
            framing(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip,\r\n chunked\r\n\r\n"),
            "chunked"
        );
        assert_eq!(
            framing(b"HTTP/1.1 200 OK\r\nX: a\r\n b: c\r\nContent-Length: 3\r\n\r\n"),
            "length 3"
        );
        // Names in any case.
        assert_eq!(
            framing(b"HTTP/1.1 200 OK\r\ncOnTeNt-LeNgTh: 4\r\n\r\n"),
            "length 4"
        );
        // HTTP/1.0, no length: until the close; no reason phrase.
        assert_eq!(framing(b"HTTP/1.0 200 OK\r\n\r\n"), "until close");
        assert_eq!(framing(b"HTTP/1.1 200\r\n\r\n"), "until close");
        assert_eq!(
            parse_head(b"HTTP/1.1 418\r\n\r\n").unwrap().unwrap().code,
            418
        );
        // Split anywhere: incomplete until the blank line, then the same head.
        let whole = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        for cut in 1..whole.len() - 2 {
            assert!(parse_head(&whole[..cut]).unwrap().is_none(), "{cut}");
        }
        assert_eq!(framing(whole), "length 2");
        // Garbage, named as soon as its line ends; a status line still coming is not.
        assert_eq!(
            parse_head(b"SSH-2.0-OpenSSH\r\n").err().unwrap(),
            "malformed status line \"SSH-2.0-OpenSSH\""
        );
        assert!(parse_head(b"HTTP/1.1 20").unwrap().is_none());
        assert!(parse_head(b"HTTP/1.1 600 X\r\n\r\n").is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n").is_err());
        assert_eq!(
            parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n")
                .err()
                .unwrap(),
            "invalid Content-Length \"1x\""
        );
        // Chunked framing, byte by byte: sizes, extensions, data ends, trailers.
        let mut b = Body::Chunked(Chunk::Size { size: 0, digits: 0 });
        let mut out = [0u8; 16];
        let mut kept = 0;
        for byte in b"2;e\r\nok\r\n1\nk\n0\r\nT: v\r\n\r\n" {
            b.feed(&[*byte], &mut out, &mut kept).unwrap();
        }
        assert!(b.done());
        assert_eq!(&out[..kept], b"okk");
        let mut b = Body::Chunked(Chunk::Size { size: 0, digits: 0 });
        assert!(b.feed(b"2\r\nokX", &mut out, &mut kept).is_err());
        let b = Body::Length { left: 3, of: 5 };
        assert_eq!(
            b.at_close(false).unwrap_err(),
            "body cut short: 2 of 5 bytes"
        );
    }
}
