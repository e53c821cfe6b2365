//! monit's HTTP interface: what the BOSH agent and browsers talk to.
//!
//! `GET /_status2?format=xml` (5.2.5's layout, what the agent reads: `name` attributes,
//! `servicegroups`), `GET /_status?format=xml` (5.33's: a `<name>` element, no groups),
//! `GET /` and `GET /NAME` (an HTML table with buttons), `POST /NAME` with
//! `action=start|stop|restart|monitor|unmonitor`. Who may ask is decided once per
//! configuration (`Credentials`): host and net rules, Basic authentication from `allow
//! user:password` and `allow [cleartext|md5|crypt] FILE` (read the safe way when the
//! configuration is taken, never per request; hashes checked as monit does, `passwd`),
//! 401 otherwise; `read-only` users get 403 on a POST; a
//! GET never acts. It fails closed as monit 5.33: no rule anyone can pass, no server; a
//! PAM group (which tend-monit cannot check), 401 for all.
//!
//! Cross-site posts: the agent posts a bare `action=stop` with Basic credentials and
//! nothing else (monit 5.2.5 took it; 5.33 wants a CSRF token and answers 403). tend-monit
//! takes that request, and 5.33's double-submit (a `securitytoken` cookie equal to the
//! form's field), and refuses what a browser's cross-site form post looks like: an
//! `Origin` or `Referer` that is not this server, or a cookie or field without its twin.
//!
//! This module decides answers (`respond`) without doing I/O; `Server` is the
//! single-threaded, non-blocking connection handling the daemon's poll loop drives:
//! fixed buffers per connection, a deadline per connection, so a slow or hostile client
//! never holds the others up.

use crate::reader::model::{Allow, Control, Digest, Httpd};
use crate::runtime::passwd::Secret;
use std::io::{Read, Write};
use std::net::{IpAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};
use tend_sys::warn::Warn;

/// The most bytes of one request (headers and body): more is answered 431 or 413.
pub const MAX_REQUEST: usize = 16 * 1024;
/// The most connections served at once; more wait in the kernel's accept queue.
pub const MAX_CONNECTIONS: usize = 32;
/// How long a client may take to send its request and read the answer.
pub const CLIENT_DEADLINE: Duration = Duration::from_secs(10);

/// A request, as far as the answer depends on it.
#[derive(Debug, Default)]
pub struct Request<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub query: &'a str,
    pub authorization: Option<&'a [u8]>,
    pub origin: Option<&'a [u8]>,
    pub referer: Option<&'a [u8]>,
    pub host: Option<&'a [u8]>,
    pub cookie: Option<&'a [u8]>,
    pub body: &'a [u8],
}

/// An answer: status, content type, body, and whether to set the token cookie.
#[derive(Debug, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    pub set_token: bool,
    pub challenge: bool,
}

/// What the server needs to answer: the configuration, the services' states, and a way
/// to act.
pub trait Backend {
    fn control(&self) -> &Control;
    /// The 5.2.5 XML (`two`) or the 5.33 XML.
    fn xml(&mut self, two: bool) -> String;
    /// An HTML page for every service, or one.
    fn page(&mut self, name: Option<&str>, token: &str) -> String;
    /// Start an action; errors are the answer's text.
    fn act(&mut self, name: &str, action: &str) -> Result<(), String>;
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Payload Too Large",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

/// monit's error page.
fn error(status: u16, text: &str) -> Response {
    let r = reason(status);
    let body = format!(
        "<html><head><title>{status} {r}</title></head><body bgcolor=#FFFFFF><h2>{r}</h2>{}<hr><font size=-1>tend-monit</font></body></html>",
        escape(text)
    );
    Response {
        status,
        content_type: "text/html",
        body: body.into_bytes(),
        set_token: false,
        challenge: status == 401,
    }
}

pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '&' => o.push_str("&amp;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// Standard base64, as Basic credentials carry it.
pub fn base64_decode(s: &[u8]) -> Option<Vec<u8>> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let s: Vec<u8> = s.iter().copied().filter(|&c| c != b'=').collect();
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    for chunk in s.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= val(c)? << (18 - 6 * i);
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        match chunk.len() {
            4 => out.extend_from_slice(&bytes),
            3 => out.extend_from_slice(&bytes[..2]),
            2 => out.push(bytes[0]),
            _ => return None,
        }
    }
    Some(out)
}

/// Who may use the interface, read once from the `allow` rules and their files (at
/// start and at each reload, as monit reads them while parsing): a request never opens
/// a file.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Credentials {
    /// `allow HOST|NET`: only these peers, when there is one.
    hosts: Vec<String>,
    /// (user, password, read-only); a user's first entry is theirs, as in monit (which
    /// ignores the later ones).
    users: Vec<(String, Secret, bool)>,
    /// Some rule asks for a login (a user, a file with users, a group), even one nobody
    /// can pass: without one, the host rules alone decide, as in monit.
    login: bool,
    /// `allow cleartext` files without one `user:password` line: monit warns and takes
    /// nothing from them.
    empty_files: Vec<String>,
}

impl Credentials {
    /// The credentials of `h`'s rules; an `allow cleartext` file that cannot be read
    /// (missing, not a regular file, over `validate::MAX_HTPASSWD`) is an error, named with its path.
    pub fn of(h: &Httpd) -> Result<Credentials, String> {
        let mut c = Credentials::default();
        for a in &h.allow {
            match a {
                Allow::Host(x) => c.hosts.push(x.clone()),
                Allow::User {
                    user,
                    password,
                    read_only,
                } => {
                    c.login = true;
                    c.users
                        .push((user.clone(), Secret::Clear(password.clone()), *read_only));
                }
                // tend-monit has no PAM: such a rule asks for a login nobody can give.
                Allow::Group { .. } => c.login = true,
                Allow::File {
                    path,
                    users: only,
                    digest,
                } => {
                    let before = c.users.len();
                    for (u, p) in crate::reader::validate::htpasswd(path, *digest)? {
                        if only.is_empty() || only.contains(&u) {
                            let p = match digest {
                                Digest::Cleartext => Secret::Clear(p),
                                Digest::Md5 => Secret::Md5(p),
                                Digest::Crypt => Secret::Crypt(p),
                            };
                            c.users.push((u, p, false));
                        }
                    }
                    if c.users.len() == before {
                        c.empty_files.push(path.clone());
                    } else {
                        c.login = true;
                    }
                }
            }
        }
        Ok(c)
    }

    /// No rule lets anyone in (no `allow` at all, or only empty files): monit then does
    /// not start its httpd.
    pub fn nobody(&self) -> bool {
        self.hosts.is_empty() && !self.login
    }

    /// Rules nobody passes: every request gets 401.
    pub fn closed() -> Credentials {
        Credentials {
            login: true,
            ..Default::default()
        }
    }

    /// Whether a login is asked, and nobody can give one (groups, empty files).
    pub fn no_user(&self) -> bool {
        self.login && self.users.is_empty()
    }
}

/// Who a request authenticates as: Ok(read_only) or the answer that refuses it.
fn authenticate(c: &Credentials, req: &Request, peer: Option<IpAddr>) -> Result<bool, Response> {
    if !c.hosts.is_empty() {
        let ok = peer.is_some_and(|p| c.hosts.iter().any(|h| host_allows(h, p)));
        if !ok {
            return Err(error(403, "You are not authorized to access monit"));
        }
    }
    if !c.login {
        return Ok(false);
    }
    let given = req
        .authorization
        .and_then(|a| {
            a.strip_prefix(b"Basic ")
                .or_else(|| a.strip_prefix(b"basic "))
        })
        .and_then(|b| base64_decode(b.trim_ascii()))
        .and_then(|b| String::from_utf8(b).ok());
    let Some((u, p)) = given.as_deref().and_then(|g| g.split_once(':')) else {
        return Err(unauthorized());
    };
    match c.users.iter().find(|(uu, _, _)| uu == u) {
        Some((_, secret, ro)) if secret.admits(p) => Ok(*ro),
        _ => Err(unauthorized()),
    }
}

fn unauthorized() -> Response {
    error(
        401,
        "You are not authorized to access monit. Either you supplied the wrong credentials (e.g. bad password), or your browser doesn't understand how to supply the credentials required",
    )
}

fn host_allows(spec: &str, peer: IpAddr) -> bool {
    let loopback = peer.is_loopback()
        || matches!(peer, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()));
    if spec.eq_ignore_ascii_case("localhost") {
        return loopback;
    }
    let (addr, bits) = match spec.split_once('/') {
        Some((a, b)) => (a, b.parse::<u32>().ok()),
        None => (spec, None),
    };
    let Ok(a) = addr.parse::<IpAddr>() else {
        return false;
    };
    match (a, peer, bits) {
        (IpAddr::V4(a), IpAddr::V4(p), Some(b)) if b <= 32 => {
            let mask = u32::MAX.checked_shl(32 - b).unwrap_or(0);
            u32::from(a) & mask == u32::from(p) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(p), Some(b)) if b <= 128 => {
            let mask = u128::MAX.checked_shl(128 - b).unwrap_or(0);
            u128::from(a) & mask == u128::from(p) & mask
        }
        (_, _, Some(_)) => false,
        (a, p, None) => a == p,
    }
}

/// `key=value&…` (form encoding): the value of `key`, decoded.
pub fn form_value(body: &[u8], key: &str) -> Option<String> {
    for pair in body.split(|&b| b == b'&') {
        let (k, v) = match pair.iter().position(|&b| b == b'=') {
            Some(i) => (&pair[..i], &pair[i + 1..]),
            None => (pair, &[][..]),
        };
        if k == key.as_bytes() {
            return Some(percent_decode(v));
        }
    }
    None
}

fn percent_decode(v: &[u8]) -> String {
    let mut out = Vec::with_capacity(v.len());
    let mut i = 0;
    while i < v.len() {
        match v[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < v.len() => {
                let h = std::str::from_utf8(&v[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match h {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn cookie_token(cookie: &[u8]) -> Option<&[u8]> {
    cookie
        .split(|&b| b == b';')
        .map(<[u8]>::trim_ascii)
        .find_map(|c| c.strip_prefix(b"securitytoken="))
}

/// Whether a POST may act: not what a browser's cross-site form post looks like. A
/// foreign `Origin` or `Referer` is refused; so is a `securitytoken` cookie or form field
/// without its twin: monit 5.33's double-submit rule (the cookie equals the form's field,
/// whatever value the client chose, as curl scripts send it). A bare POST with neither
/// (the BOSH agent's, as 5.2.5 took it) acts.
fn same_site(req: &Request) -> Result<(), Response> {
    let host = req.host.unwrap_or(b"");
    let ours = |url: &[u8]| {
        let rest = url
            .strip_prefix(b"http://")
            .or_else(|| url.strip_prefix(b"https://"));
        rest.is_some_and(|r| {
            let end = r.iter().position(|&b| b == b'/').unwrap_or(r.len());
            !host.is_empty() && &r[..end] == host
        })
    };
    let refuse = || Err(error(403, "Invalid CSRF Token"));
    if req.origin.is_some_and(|o| !ours(o)) || req.referer.is_some_and(|r| !ours(r)) {
        return refuse();
    }
    let cookie = req.cookie.and_then(cookie_token);
    let form = form_value(req.body, "securitytoken");
    match (cookie, form.as_deref()) {
        (None, None) => Ok(()),
        (Some(c), Some(f)) if !c.is_empty() && c == f.as_bytes() => Ok(()),
        _ => refuse(),
    }
}

const ACTIONS: &[&str] = &["start", "stop", "restart", "monitor", "unmonitor"];

/// The answer to one request.
pub fn respond(
    b: &mut dyn Backend,
    who: &Credentials,
    req: &Request,
    peer: Option<IpAddr>,
    token: &str,
) -> Response {
    let read_only = match authenticate(who, req, peer) {
        Ok(ro) => ro,
        Err(r) => return r,
    };
    let ok = |content_type: &'static str, body: String, set_token: bool| Response {
        status: 200,
        content_type,
        body: body.into_bytes(),
        set_token,
        challenge: false,
    };
    let name = req.path.trim_start_matches('/');
    let known = |b: &dyn Backend, n: &str| b.control().checks.iter().any(|c| c.name == n);
    match req.method {
        "GET" | "HEAD" => match name {
            "_status2" | "_status" if req.query.split('&').any(|q| q == "format=xml") => {
                ok("text/xml", b.xml(name == "_status2"), false)
            }
            "" => ok("text/html", b.page(None, token), true),
            n if known(b, n) => ok("text/html", b.page(Some(n), token), true),
            n => error(404, &format!("There is no service named \"{n}\"")),
        },
        "POST" => {
            // As monit: an unknown name is 404 to whoever authenticated.
            if !known(b, name) {
                return error(404, &format!("There is no service named \"{name}\""));
            }
            if let Err(r) = same_site(req) {
                return r;
            }
            if read_only {
                return error(
                    403,
                    "You do not have sufficient privileges to access this page",
                );
            }
            let action = form_value(req.body, "action").unwrap_or_default();
            if !ACTIONS.contains(&action.as_str()) {
                return error(400, &format!("Invalid action \"{action}\""));
            }
            match b.act(name, &action) {
                Ok(()) => ok("text/html", b.page(Some(name), token), false),
                Err(e) => error(503, &e),
            }
        }
        _ => error(405, "Method not allowed"),
    }
}

/// One client connection: its request so far, then its answer being written.
struct Conn {
    stream: TcpStream,
    peer: Option<IpAddr>,
    buf: Vec<u8>,
    len: usize,
    out: Vec<u8>,
    sent: usize,
    deadline: Instant,
}

/// The listening socket and its connections, driven by the daemon's poll loop.
pub struct Server {
    listener: TcpListener,
    conns: Vec<Conn>,
    /// Buffers of closed connections, kept for the next ones (no allocation per request
    /// once warm).
    spare: Vec<(Vec<u8>, Vec<u8>)>,
    token: String,
    who: Credentials,
}

/// The rules of `h`, or None (and a warning, monit's) when they let nobody in.
fn allowed(h: &Httpd, report: &dyn Warn) -> Result<Option<Credentials>, String> {
    let who = Credentials::of(h)?;
    for f in &who.empty_files {
        report.warn(&format_args!("htpasswd file {f} has no usable credentials"));
    }
    if who.nobody() {
        report.warn(&format_args!(
            "httpd not started: no allow rule lets anyone in (allow user:password, allow [cleartext|md5|crypt] FILE, allow HOST)"
        ));
        return Ok(None);
    }
    if who.no_user() {
        report.warn(&format_args!(
            "httpd: no allow rule names a user tend-monit can check: every request gets 401"
        ));
    }
    Ok(Some(who))
}

/// A random token for the page's buttons, from the kernel's generator.
fn random_token() -> String {
    let mut b = [0u8; 16];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = f.read_exact(&mut b);
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

impl Server {
    /// Listen on the `set httpd` address (loopback when none is given) and port. Fails
    /// closed as monit: with no rule letting anyone in, no server (and a warning).
    pub fn bind(c: &Control, report: &dyn Warn) -> Result<Option<Server>, String> {
        let Some(h) = &c.httpd else { return Ok(None) };
        let Some(port) = h.port else { return Ok(None) };
        let Some(who) = allowed(h, report)? else {
            return Ok(None);
        };
        let addr = match h.address.as_deref() {
            None | Some("localhost") => "127.0.0.1".to_string(),
            Some(a) => a.to_string(),
        };
        let failed = |e: std::io::Error| {
            format!(
                "unable to listen on {addr}:{port}: {}",
                tend_sys::error::io_reason(&e)
            )
        };
        let listener = TcpListener::bind((addr.as_str(), port)).map_err(failed)?;
        listener.set_nonblocking(true).map_err(failed)?;
        Ok(Some(Server {
            listener,
            conns: Vec::with_capacity(MAX_CONNECTIONS),
            spare: Vec::new(),
            token: random_token(),
            who,
        }))
    }

    /// Take a reloaded control file's rules (the port stays: monit, too, keeps its
    /// listener over a reload). Rules that let nobody in shut the door until the next.
    pub fn reconfigure(&mut self, c: &Control, report: &dyn Warn) {
        let rules = c.httpd.as_ref().map(|h| allowed(h, report));
        self.who = match rules {
            Some(Ok(Some(who))) => who,
            Some(Err(e)) => {
                report.warn(&e);
                Credentials::closed()
            }
            _ => Credentials::closed(),
        };
    }

    /// The fds to poll: the listener (while there is room), then each connection.
    pub fn poll_fds(&self) -> Vec<(BorrowedFd<'_>, bool)> {
        let mut v = Vec::with_capacity(1 + self.conns.len());
        if self.conns.len() < MAX_CONNECTIONS {
            v.push((self.listener.as_fd(), false));
        }
        for c in &self.conns {
            v.push((c.stream.as_fd(), c.sent < c.out.len() && !c.out.is_empty()));
        }
        v
    }

    /// The earliest connection deadline.
    pub fn deadline(&self) -> Option<Instant> {
        self.conns.iter().map(|c| c.deadline).min()
    }

    /// Accept, read, answer, write, and drop what is done or late.
    pub fn service(&mut self, b: &mut dyn Backend) {
        while self.conns.len() < MAX_CONNECTIONS {
            match self.listener.accept() {
                Ok((stream, peer)) => {
                    if stream.set_nonblocking(true).is_err() {
                        continue;
                    }
                    let (buf, out) = self
                        .spare
                        .pop()
                        .unwrap_or_else(|| (vec![0; MAX_REQUEST], Vec::new()));
                    self.conns.push(Conn {
                        stream,
                        peer: Some(peer.ip()),
                        buf,
                        len: 0,
                        out,
                        sent: 0,
                        deadline: Instant::now() + CLIENT_DEADLINE,
                    });
                }
                Err(_) => break,
            }
        }
        let now = Instant::now();
        let mut i = 0;
        while i < self.conns.len() {
            let done = step(&mut self.conns[i], b, &self.who, &self.token)
                || now >= self.conns[i].deadline;
            if done {
                let mut c = self.conns.swap_remove(i);
                c.out.clear();
                self.spare
                    .push((std::mem::take(&mut c.buf), std::mem::take(&mut c.out)));
            } else {
                i += 1;
            }
        }
    }
}

/// Advance one connection; true when it is finished (answered or broken).
fn step(c: &mut Conn, b: &mut dyn Backend, who: &Credentials, token: &str) -> bool {
    if c.out.is_empty() {
        // A client may half-close once its request is sent: that request is answered.
        let mut ended = false;
        loop {
            if c.len == c.buf.len() {
                break;
            }
            match c.stream.read(&mut c.buf[c.len..]) {
                Ok(0) => {
                    ended = true;
                    break;
                }
                Ok(n) => c.len += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return true,
            }
        }
        match parse(&c.buf[..c.len], c.len == c.buf.len()) {
            Parsed::Partial => return ended,
            Parsed::Bad(status, why) => encode(&error(status, why), token, &mut c.out),
            Parsed::Done(req) => {
                let r = respond(b, who, &req, c.peer, token);
                let head_only = req.method == "HEAD";
                encode(&r, token, &mut c.out);
                if head_only && let Some(end) = c.out.windows(4).position(|w| w == b"\r\n\r\n") {
                    c.out.truncate(end + 4);
                }
            }
        }
    }
    while c.sent < c.out.len() {
        match c.stream.write(&c.out[c.sent..]) {
            Ok(0) => return true,
            Ok(n) => c.sent += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return true,
        }
    }
    true
}

enum Parsed<'a> {
    Partial,
    Bad(u16, &'static str),
    Done(Request<'a>),
}

fn parse(buf: &[u8], full: bool) -> Parsed<'_> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut req = httparse::Request::new(&mut headers);
    let head_len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if full => {
            return Parsed::Bad(431, "Request header too large");
        }
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(httparse::Error::TooManyHeaders) => return Parsed::Bad(431, "Too many headers"),
        Err(_) => return Parsed::Bad(400, "Malformed request"),
    };
    let mut r = Request {
        method: req.method.unwrap_or(""),
        ..Default::default()
    };
    let target = req.path.unwrap_or("/");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    r.path = path;
    r.query = query;
    let mut length: Option<usize> = None;
    for h in req.headers.iter() {
        let n = h.name;
        if n.eq_ignore_ascii_case("authorization") {
            r.authorization = Some(h.value);
        } else if n.eq_ignore_ascii_case("origin") {
            r.origin = Some(h.value);
        } else if n.eq_ignore_ascii_case("referer") {
            r.referer = Some(h.value);
        } else if n.eq_ignore_ascii_case("host") {
            r.host = Some(h.value);
        } else if n.eq_ignore_ascii_case("cookie") {
            r.cookie = Some(h.value);
        } else if n.eq_ignore_ascii_case("content-length") {
            // Digits only (no sign), and never more than usize: a number too big for
            // it is too big for the buffer anyway.
            let digits = h.value.trim_ascii();
            if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                return Parsed::Bad(400, "Bad Content-Length");
            }
            let l = std::str::from_utf8(digits)
                .ok()
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(usize::MAX);
            if length.is_some_and(|old| old != l) {
                return Parsed::Bad(400, "Conflicting Content-Length");
            }
            length = Some(l);
        } else if n.eq_ignore_ascii_case("transfer-encoding") {
            return Parsed::Bad(400, "Chunked requests are not taken");
        }
    }
    let length = length.unwrap_or(0);
    if length > MAX_REQUEST.saturating_sub(head_len) {
        return Parsed::Bad(413, "Request body too large");
    }
    let Some(body) = buf.get(head_len..head_len + length) else {
        return Parsed::Partial;
    };
    r.body = body;
    Parsed::Done(r)
}

fn encode(r: &Response, token: &str, out: &mut Vec<u8>) {
    out.clear();
    let _ = write!(
        out,
        "HTTP/1.0 {} {}\r\nServer: tend-monit\r\nContent-Length: {}\r\nConnection: close\r\nX-Frame-Options: SAMEORIGIN\r\nContent-Security-Policy: frame-ancestors 'self'\r\nContent-Type: {}\r\n",
        r.status,
        reason(r.status),
        r.body.len(),
        r.content_type
    );
    if r.challenge {
        out.extend_from_slice(b"WWW-Authenticate: Basic realm=\"monit\"\r\n");
    }
    if r.set_token {
        let _ = write!(
            out,
            "Set-Cookie: securitytoken={token}; Path=/; SameSite=Strict; HttpOnly\r\n"
        );
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&r.body);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64() {
        assert_eq!(base64_decode(b"YWRtaW46cHc=").unwrap(), b"admin:pw");
        assert_eq!(base64_decode(b"dmNhcDpzZWNyZXQ=").unwrap(), b"vcap:secret");
        assert!(base64_decode(b"!!").is_none());
    }

    #[test]
    fn forms() {
        assert_eq!(
            form_value(b"action=stop", "action").as_deref(),
            Some("stop")
        );
        assert_eq!(
            form_value(b"a=1&securitytoken=ab%20c", "securitytoken").as_deref(),
            Some("ab c")
        );
        assert_eq!(form_value(b"x=%", "x").as_deref(), Some("%"));
        assert_eq!(form_value(b"x", "action"), None);
    }

    /// The control file of the rows: two services, a user, a read-only user.
    const RC: &str = "set httpd port 2812\n  allow vcap:pw\n  allow ro:pw read-only\ncheck process web with pidfile /run/web.pid\ncheck process db with pidfile /run/db.pid\n";

    struct Fake {
        control: Control,
        acted: Vec<(String, String)>,
    }

    impl Backend for Fake {
        fn control(&self) -> &Control {
            &self.control
        }
        fn xml(&mut self, two: bool) -> String {
            format!("xml two={two}")
        }
        fn page(&mut self, name: Option<&str>, token: &str) -> String {
            format!("page of {name:?} token={token}")
        }
        fn act(&mut self, name: &str, action: &str) -> Result<(), String> {
            self.acted.push((name.into(), action.into()));
            Ok(())
        }
    }

    fn fake(rc: &str) -> (Fake, Credentials) {
        let (control, errors) = crate::read_source(std::path::Path::new("monitrc"), rc.as_bytes());
        assert!(errors.is_empty(), "{errors:?}");
        let who = Credentials::of(control.httpd.as_ref().unwrap()).unwrap();
        (
            Fake {
                control,
                acted: Vec::new(),
            },
            who,
        )
    }

    const VCAP: &[u8] = b"Basic dmNhcDpwdw=="; // vcap:pw
    const RO: &[u8] = b"Basic cm86cHc="; // ro:pw
    const WRONG: &[u8] = b"Basic dmNhcDp4"; // vcap:x
    const HOST: &[u8] = b"127.0.0.1:2812";

    fn req(method: &'static str, target: &'static str, auth: &'static [u8]) -> Request<'static> {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        Request {
            method,
            path,
            query,
            authorization: (!auth.is_empty()).then_some(auth),
            host: Some(HOST),
            ..Default::default()
        }
    }

    fn post(target: &'static str, auth: &'static [u8], body: &'static str) -> Request<'static> {
        Request {
            body: body.as_bytes(),
            ..req("POST", target, auth)
        }
    }

    fn cookie(r: Request<'static>, c: &'static str) -> Request<'static> {
        Request {
            cookie: Some(c.as_bytes()),
            ..r
        }
    }

    /// `respond`'s rows: a request with its credentials in; the status, a fragment of
    /// the body, and whether the backend was asked to act, out.
    #[test]
    fn respond_rows() {
        let stop = "action=stop";
        let pair = "securitytoken=x1&action=stop";
        let rows: Vec<(&str, Request, u16, &str, bool)> = vec![
            (
                "no credentials",
                req("GET", "/_status2?format=xml", b""),
                401,
                "not authorized",
                false,
            ),
            (
                "a wrong password",
                req("GET", "/_status2?format=xml", WRONG),
                401,
                "not authorized",
                false,
            ),
            (
                "not Basic",
                req("GET", "/", b"Digest abc"),
                401,
                "not authorized",
                false,
            ),
            (
                "5.2.5's XML",
                req("GET", "/_status2?format=xml", VCAP),
                200,
                "xml two=true",
                false,
            ),
            (
                "5.33's XML",
                req("GET", "/_status?format=xml&x=1", VCAP),
                200,
                "xml two=false",
                false,
            ),
            (
                "the read-only user reads",
                req("GET", "/_status?format=xml", RO),
                200,
                "xml",
                false,
            ),
            (
                "the page",
                req("GET", "/", VCAP),
                200,
                "page of None token=T",
                false,
            ),
            (
                "a GET never acts",
                req("GET", "/web?action=stop", VCAP),
                200,
                "page of Some(\"web\")",
                false,
            ),
            (
                "HEAD",
                req("HEAD", "/db", VCAP),
                200,
                "page of Some(\"db\")",
                false,
            ),
            (
                "no such page",
                req("GET", "/nosuch", VCAP),
                404,
                "no service named",
                false,
            ),
            (
                "another method",
                req("DELETE", "/web", VCAP),
                405,
                "not allowed",
                false,
            ),
            (
                "the agent's bare POST",
                post("/web", VCAP, stop),
                200,
                "page of Some(\"web\")",
                true,
            ),
            (
                "POST without credentials",
                post("/web", b"", stop),
                401,
                "not authorized",
                false,
            ),
            (
                "read-only",
                post("/web", RO, stop),
                403,
                "sufficient privileges",
                false,
            ),
            (
                "an unknown action",
                post("/web", VCAP, "action=explode"),
                400,
                "Invalid action &quot;explode&quot;",
                false,
            ),
            (
                "no action",
                post("/web", VCAP, ""),
                400,
                "Invalid action",
                false,
            ),
            (
                "no such service",
                post("/nosuch", VCAP, stop),
                404,
                "no service named",
                false,
            ),
            (
                "no such service, double-submit",
                cookie(post("/nosuch", VCAP, pair), "securitytoken=x1"),
                404,
                "no service named",
                false,
            ),
            (
                "double-submit, any value",
                cookie(post("/web", VCAP, pair), "a=b; securitytoken=x1"),
                200,
                "page",
                true,
            ),
            (
                "double-submit, the page's token",
                cookie(
                    post("/web", VCAP, "securitytoken=T&action=stop"),
                    "securitytoken=T",
                ),
                200,
                "page",
                true,
            ),
            (
                "two values",
                cookie(
                    post("/web", VCAP, "securitytoken=y2&action=stop"),
                    "securitytoken=x1",
                ),
                403,
                "Invalid CSRF Token",
                false,
            ),
            (
                "a cookie alone",
                cookie(post("/web", VCAP, stop), "securitytoken=x1"),
                403,
                "Invalid CSRF Token",
                false,
            ),
            (
                "an empty pair",
                cookie(
                    post("/web", VCAP, "securitytoken=&action=stop"),
                    "securitytoken=",
                ),
                403,
                "Invalid CSRF Token",
                false,
            ),
            (
                "a field alone",
                post("/web", VCAP, pair),
                403,
                "Invalid CSRF Token",
                false,
            ),
            (
                "a foreign Origin",
                Request {
                    origin: Some(b"http://evil.example"),
                    ..post("/web", VCAP, stop)
                },
                403,
                "Invalid CSRF Token",
                false,
            ),
            (
                "a foreign Referer",
                Request {
                    referer: Some(b"https://evil.example/x"),
                    ..post("/web", VCAP, stop)
                },
                403,
                "Invalid CSRF Token",
                false,
            ),
            (
                "an Origin without a Host",
                Request {
                    origin: Some(b"http://127.0.0.1:2812"),
                    host: None,
                    ..post("/web", VCAP, stop)
                },
                403,
                "Invalid CSRF Token",
                false,
            ),
            (
                "our own Origin",
                Request {
                    origin: Some(b"http://127.0.0.1:2812"),
                    ..cookie(post("/web", VCAP, pair), "securitytoken=x1")
                },
                200,
                "page",
                true,
            ),
        ];
        for (what, r, status, fragment, acts) in rows {
            let (mut b, who) = fake(RC);
            let got = respond(&mut b, &who, &r, Some([127, 0, 0, 1].into()), "T");
            let body = String::from_utf8_lossy(&got.body);
            assert_eq!(got.status, status, "{what}: {body}");
            assert!(body.contains(fragment), "{what}: {body}");
            assert_eq!(!b.acted.is_empty(), acts, "{what}: {:?}", b.acted);
            assert_eq!(got.challenge, status == 401, "{what}");
        }
    }

    /// Which rules let whom in: (what, allow lines, peer, credentials, status).
    #[test]
    fn allow_rows() {
        type Row = (&'static str, &'static str, [u8; 4], &'static [u8], u16);
        let rows: [Row; 8] = [
            (
                "a host alone: no login",
                "allow 127.0.0.1",
                [127, 0, 0, 1],
                b"",
                200,
            ),
            (
                "a host alone, another peer",
                "allow 127.0.0.1",
                [10, 0, 0, 1],
                b"",
                403,
            ),
            ("a net", "allow 10.0.0.0/8", [10, 9, 8, 7], b"", 200),
            (
                "a net, outside",
                "allow 10.0.0.0/8",
                [11, 0, 0, 1],
                b"",
                403,
            ),
            (
                "a host and a user",
                "allow localhost\n  allow vcap:pw",
                [127, 0, 0, 1],
                b"",
                401,
            ),
            (
                "a PAM group: nobody",
                "allow @admins",
                [127, 0, 0, 1],
                VCAP,
                401,
            ),
            (
                "a group and a user",
                "allow @admins\n  allow vcap:pw",
                [127, 0, 0, 1],
                VCAP,
                200,
            ),
            (
                "a host and a user: the host alone does not do",
                "allow localhost\n  allow vcap:pw",
                [127, 0, 0, 1],
                b"",
                401,
            ),
        ];
        for (what, allow, peer, auth, status) in rows {
            let rc = format!(
                "set httpd port 2812\n  {allow}\ncheck process web with pidfile /run/web.pid\n"
            );
            let (mut b, who) = fake(&rc);
            let r = req("GET", "/_status?format=xml", auth);
            let got = respond(&mut b, &who, &r, Some(peer.into()), "T");
            assert_eq!(got.status, status, "{what}");
        }
        let (_, who) = fake("set httpd port 2812\n");
        assert!(who.nobody(), "no allow line: no httpd");
        let (_, who) = fake("set httpd port 2812\n  allow @admins\n");
        assert!(!who.nobody() && who.no_user(), "a group: 401 for all");
        assert!(Credentials::closed().no_user());
    }

    /// `allow md5|crypt FILE [users]`: each user's hash checked with its method; a
    /// user's first line is theirs; a hash under the wrong method lets nobody in.
    #[test]
    fn hashed_files_as_monit_checks_them() {
        let dir = std::env::temp_dir().join(format!("tend-monit-hashed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let md5 = dir.join("md5");
        // vcap:pw in MD5-crypt, ro:pw in Apache's, then vcap again (ignored), a user in
        // DES crypt (wrong method here), a shadow-style tail, a comment.
        std::fs::write(
            &md5,
            "vcap:$1$abcdefgh$IQtUouv7y7Q9dRWkQEPCc.\nro:$apr1$Zz$dUceJQLt3F7/Cd9rDjHvS1:19000:0:99999:7:::\nvcap:x\ndes:abzlUXK5ed5rs\n# old:$1$abcdefgh$IQtUouv7y7Q9dRWkQEPCc.\n",
        )
        .unwrap();
        let crypt = dir.join("crypt");
        std::fs::write(
            &crypt,
            "vcap:abzlUXK5ed5rs\nro:$1$abcdefgh$IQtUouv7y7Q9dRWkQEPCc.\n",
        )
        .unwrap();
        let old = b"Basic b2xkOnB3"; // old:pw
        let des = b"Basic ZGVzOnB3"; // des:pw
        let (m, c) = (md5.display(), crypt.display());
        let rows: [(String, &[u8], u16); 11] = [
            (format!("allow md5 {m}"), VCAP, 200),
            (format!("allow md5 {m}"), RO, 200),
            (format!("allow md5 {m}"), WRONG, 401),
            (format!("allow md5 {m}"), old, 401),
            (format!("allow md5 {m}"), des, 401),
            (format!("allow md5 {m} ro"), VCAP, 401),
            (format!("allow md5 {m} ro"), RO, 200),
            (format!("allow crypt {c}"), VCAP, 200),
            (format!("allow crypt {c}"), WRONG, 401),
            (format!("allow crypt {c}"), RO, 401),
            (format!("allow cleartext {m}"), VCAP, 401),
        ];
        for (allow, auth, status) in rows {
            let rc = format!(
                "set httpd port 2812\n  {allow}\ncheck process web with pidfile /run/web.pid\n"
            );
            let (mut b, who) = fake(&rc);
            let r = req("GET", "/_status?format=xml", auth);
            let got = respond(&mut b, &who, &r, Some([127, 0, 0, 1].into()), "T");
            assert_eq!(
                got.status,
                status,
                "{allow} {}",
                String::from_utf8_lossy(auth)
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Content-Length and the head, as the server reads them.
    #[test]
    fn parse_rows() {
        let status = |raw: &[u8]| match parse(raw, false) {
            Parsed::Partial => 0,
            Parsed::Bad(s, _) => s,
            Parsed::Done(_) => 200,
        };
        let rows: [(&[u8], u16); 9] = [
            (
                b"POST /x HTTP/1.1\r\nContent-Length: 18446744073709551615\r\n\r\n",
                413,
            ),
            (
                b"POST /x HTTP/1.1\r\nContent-Length: 184467440737095516150000\r\n\r\n",
                413,
            ),
            (b"POST /x HTTP/1.1\r\nContent-Length: 16384\r\n\r\n", 413),
            (b"POST /x HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400),
            (b"POST /x HTTP/1.1\r\nContent-Length: \r\n\r\n", 400),
            (
                b"POST /x HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc",
                400,
            ),
            (
                b"POST /x HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
                200,
            ),
            (b"POST /x HTTP/1.1\r\nContent-Length: 5\r\n\r\nabc", 0),
            (
                b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
                400,
            ),
        ];
        for (raw, want) in rows {
            assert_eq!(status(raw), want, "{}", String::from_utf8_lossy(raw));
        }
    }

    /// Pieces of requests in random order never make the parser, the form reader or the
    /// answer panic (the seed is printed to replay one).
    #[test]
    fn hostile_pieces_never_panic() {
        let pieces: [&[u8]; 16] = [
            b"POST /web HTTP/1.1\r\n",
            b"GET /_status?format=xml HTTP/1.0\r\n",
            b"Content-Length: ",
            b"18446744073709551615",
            b"9",
            b"\r\n",
            b"Authorization: Basic ",
            b"dmNhcDpwdw==",
            b"=",
            b"Cookie: securitytoken=",
            b"securitytoken=%&action=stop",
            b"%",
            b"%f",
            b"\xff\x00",
            b":",
            b"Origin: http://",
        ];
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64 | 1);
        eprintln!("hostile_pieces_never_panic: seed {seed}");
        let mut x = seed;
        let mut next = |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as usize
        };
        let (mut b, who) = fake(RC);
        for _ in 0..20_000 {
            let mut raw = Vec::new();
            for _ in 0..next(14) {
                raw.extend_from_slice(pieces[next(pieces.len())]);
            }
            let full = next(2) == 0;
            if let Parsed::Done(r) = parse(&raw, full) {
                let _ = respond(&mut b, &who, &r, None, "T");
            }
            let _ = form_value(&raw, "securitytoken");
            let _ = base64_decode(&raw);
        }
    }

    #[test]
    fn hosts() {
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        assert!(host_allows("localhost", lo));
        assert!(host_allows("10.0.0.0/8", "10.1.2.3".parse().unwrap()));
        assert!(!host_allows("10.0.0.0/8", "11.1.2.3".parse().unwrap()));
        assert!(host_allows("0.0.0.0/0", "11.1.2.3".parse().unwrap()));
        assert!(!host_allows("10.0.0.0/99", "10.1.2.3".parse().unwrap()));
        assert!(host_allows("fd00::/8", "fd12::1".parse().unwrap()));
        assert!(!host_allows("fd00::/8", "fe12::1".parse().unwrap()));
        assert!(!host_allows("fd00::/8", "10.1.2.3".parse().unwrap()));
    }
}
