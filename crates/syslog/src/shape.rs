//! One syslog message to one log line, as s6-socklog and ucspilogd shape it, plus tend's
//! RFC 5424 decoding and JSON-lines form.
//!
//! s6's rules: trailing NULs and newlines go, embedded ones become `~`, a leading `<N>`
//! becomes `facility.severity: ` (unless raw), a cut datagram ends in `...`. Everything
//! here appends to a caller's buffer and allocates nothing.

use crate::priority::{self, Priority};
use std::io::Write;
use std::net::SocketAddr;
use tend_proto::json::Invalid;

/// How lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Style {
    /// `-r`: leave `<N>` as it is.
    pub raw: bool,
    /// `-R`: decode RFC 5424 headers into `APP[PROCID]: MSG`.
    pub rfc5424: bool,
    /// `-j`: one JSON object per message.
    pub json: bool,
}

/// The sending process, from SCM_CREDENTIALS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sender {
    pub pid: i32,
    pub uid: u32,
    pub gid: u32,
}

/// Where a datagram came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Origin {
    /// The UDP client (`-i`).
    pub client: Option<SocketAddr>,
    /// The local sender (unix socket, `-j`).
    pub sender: Option<Sender>,
}

/// Strip trailing NULs and newlines, turn embedded ones into `~`; returns the kept length.
pub fn clean(msg: &mut [u8]) -> usize {
    let mut n = msg.len();
    while n > 0 && (msg[n - 1] == 0 || msg[n - 1] == b'\n') {
        n -= 1;
    }
    for b in &mut msg[..n] {
        if *b == 0 || *b == b'\n' {
            *b = b'~';
        }
    }
    n
}

/// Append the line for one datagram (its kept bytes; `cut` if it was longer than the
/// line length) to `out`, newline included.
pub fn datagram(out: &mut Vec<u8>, msg: &mut [u8], cut: bool, style: Style, origin: &Origin) {
    let n = clean(msg);
    let line = &msg[..n];
    if style.json {
        json(out, line, cut, origin);
        return;
    }
    if let Some(addr) = origin.client {
        client(out, addr);
        out.extend_from_slice(b": ");
    }
    body(out, line, style);
    if cut {
        out.extend_from_slice(b"...");
    }
    out.push(b'\n');
}

/// The decoded line without its newline: names, then the message (RFC 5424 headers
/// reduced to `APP[PROCID]: ` if asked).
pub fn body(out: &mut Vec<u8>, line: &[u8], style: Style) {
    if style.raw {
        out.extend_from_slice(line);
        return;
    }
    let Some((pri, n)) = priority::parse(line) else {
        out.extend_from_slice(line);
        return;
    };
    pri.write_names(out);
    let rest = &line[n..];
    match style.rfc5424.then(|| rfc5424(rest)).flatten() {
        Some(f) => {
            if let Some(app) = f.app {
                out.extend_from_slice(app);
                if let Some(pid) = f.procid {
                    out.push(b'[');
                    out.extend_from_slice(pid);
                    out.push(b']');
                }
                out.extend_from_slice(b": ");
            }
            out.extend_from_slice(f.msg);
        }
        None => out.extend_from_slice(rest),
    }
}

/// `ip_port`, IPv6 in its short form (`::1_514`).
pub fn client(out: &mut Vec<u8>, addr: SocketAddr) {
    // Writing into a Vec cannot fail.
    let _ = write!(out, "{}_{}", addr.ip(), addr.port());
}

/// The parts of a message a log reader wants apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fields<'a> {
    pub app: Option<&'a [u8]>,
    pub procid: Option<&'a [u8]>,
    pub msg: &'a [u8],
}

fn token(s: &[u8]) -> Option<(&[u8], &[u8])> {
    let i = s.iter().position(|&b| b == b' ')?;
    if i == 0 {
        return None;
    }
    Some((&s[..i], &s[i + 1..]))
}

fn nil(t: &[u8]) -> Option<&[u8]> {
    (t != b"-").then_some(t)
}

/// An RFC 5424 message after its `<PRI>`: `1 TIMESTAMP HOST APP PROCID MSGID SD [MSG]`.
/// None if it is not one (then it is shown as it came).
pub fn rfc5424(s: &[u8]) -> Option<Fields<'_>> {
    let s = s.strip_prefix(b"1 ")?;
    let (_time, s) = token(s)?;
    let (_host, s) = token(s)?;
    let (app, s) = token(s)?;
    let (procid, s) = token(s)?;
    let (_msgid, s) = token(s)?;
    let s = skip_structured_data(s)?;
    let msg = match s {
        [] => s,
        [b' ', m @ ..] => m.strip_prefix("\u{feff}".as_bytes()).unwrap_or(m),
        _ => return None,
    };
    Some(Fields {
        app: nil(app),
        procid: nil(procid),
        msg,
    })
}

/// Skip `-` or one or more `[id param="value"...]` elements (`\"`, `\]`, `\\` escaped
/// inside values).
fn skip_structured_data(s: &[u8]) -> Option<&[u8]> {
    if let Some(r) = s.strip_prefix(b"-") {
        return Some(r);
    }
    let mut i = 0;
    if s.first() != Some(&b'[') {
        return None;
    }
    while s.get(i) == Some(&b'[') {
        i += 1;
        let mut quoted = false;
        loop {
            match *s.get(i)? {
                b'\\' if quoted => i += 1,
                b'"' => quoted = !quoted,
                b']' if !quoted => break,
                _ => {}
            }
            i += 1;
        }
        i += 1;
    }
    Some(&s[i..])
}

/// An RFC 3164 (BSD, glibc) message after its `<PRI>`: `[Mmm dd hh:mm:ss ][HOST ]TAG[PID]: MSG`.
/// Without a recognisable tag the whole text is the message.
pub fn rfc3164(s: &[u8]) -> Fields<'_> {
    let stamped = s.len() >= 16
        && s[3] == b' '
        && s[6] == b' '
        && s[9] == b':'
        && s[12] == b':'
        && s[15] == b' ';
    let after = if stamped { &s[16..] } else { s };
    if let Some(f) = tag(after) {
        return f;
    }
    if stamped && let Some(f) = token(after).and_then(|(_host, r)| tag(r)) {
        return f;
    }
    Fields {
        app: None,
        procid: None,
        msg: after,
    }
}

/// `TAG: MSG` or `TAG[PID]: MSG`, the tag without spaces.
fn tag(s: &[u8]) -> Option<Fields<'_>> {
    let end = s
        .iter()
        .position(|&b| b == b' ' || b == b':' || b == b'[')?;
    if end == 0 {
        return None;
    }
    let app = &s[..end];
    let (procid, rest) = match s[end] {
        b'[' => {
            let close = s[end..].iter().position(|&b| b == b']')? + end;
            (Some(&s[end + 1..close]), &s[close + 1..])
        }
        b':' => (None, &s[end..]),
        _ => return None,
    };
    let msg = rest.strip_prefix(b":")?;
    let msg = msg.strip_prefix(b" ").unwrap_or(msg);
    Some(Fields {
        app: Some(app),
        procid,
        msg,
    })
}

/// `{"client":…,"facility":…,"severity":…,"app":…,"pid":…,"sender_pid":…,"sender_uid":…,
/// "sender_gid":…,"truncated":true,"message":…}` + `\n`; absent parts are left out.
pub fn json(out: &mut Vec<u8>, line: &[u8], cut: bool, origin: &Origin) {
    out.push(b'{');
    if let Some(addr) = origin.client {
        out.extend_from_slice(b"\"client\":\"");
        client(out, addr);
        out.extend_from_slice(b"\",");
    }
    let fields = match priority::parse(line) {
        Some((pri, n)) => {
            json_names(out, pri);
            let rest = &line[n..];
            rfc5424(rest).unwrap_or_else(|| rfc3164(rest))
        }
        None => Fields {
            app: None,
            procid: None,
            msg: line,
        },
    };
    if let Some(app) = fields.app {
        out.extend_from_slice(b"\"app\":\"");
        tend_proto::json::escape(out, app, Invalid::Escaped);
        out.extend_from_slice(b"\",");
    }
    if let Some(pid) = fields.procid.and_then(number) {
        let _ = write!(out, "\"pid\":{pid},");
    }
    if let Some(s) = origin.sender {
        let _ = write!(
            out,
            "\"sender_pid\":{},\"sender_uid\":{},\"sender_gid\":{},",
            s.pid, s.uid, s.gid
        );
    }
    if cut {
        out.extend_from_slice(b"\"truncated\":true,");
    }
    out.extend_from_slice(b"\"message\":\"");
    tend_proto::json::escape(out, fields.msg, Invalid::Escaped);
    out.extend_from_slice(b"\"}\n");
}

fn json_names(out: &mut Vec<u8>, pri: Priority) {
    out.extend_from_slice(b"\"facility\":\"");
    out.extend_from_slice(pri.facility().as_bytes());
    out.extend_from_slice(b"\",\"severity\":\"");
    out.extend_from_slice(pri.severity().as_bytes());
    out.extend_from_slice(b"\",");
}

fn number(s: &[u8]) -> Option<u32> {
    if s.is_empty() || s.len() > 10 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(msg: &[u8], cut: bool, style: Style, origin: Origin) -> String {
        let mut m = msg.to_vec();
        let mut out = Vec::new();
        datagram(&mut out, &mut m, cut, style, &origin);
        String::from_utf8(out).unwrap()
    }

    fn plain(msg: &[u8]) -> String {
        line(msg, false, Style::default(), Origin::default())
    }

    #[test]
    fn s6_shape() {
        assert_eq!(plain(b"<13>hello"), "user.notice: hello\n");
        assert_eq!(plain(b"no pri"), "no pri\n");
        assert_eq!(plain(b"<0>a\0b\nc\n\0\n"), "kern.emerg: a~b~c\n");
        assert_eq!(plain(b"\n\n"), "\n");
        assert_eq!(plain(b"<12"), "<12\n");
        assert_eq!(plain(b"<12>"), "user.warn: \n");
        assert_eq!(plain(b"<1\n3>x"), "<1~3>x\n");
        assert_eq!(
            line(b"<13>abc", true, Style::default(), Origin::default()),
            "user.notice: abc...\n"
        );
        let raw = Style {
            raw: true,
            ..Style::default()
        };
        assert_eq!(line(b"<13>x\n", false, raw, Origin::default()), "<13>x\n");
    }

    #[test]
    fn client_prefix() {
        let o = |a: &str| Origin {
            client: Some(a.parse().unwrap()),
            sender: None,
        };
        assert_eq!(
            line(b"<13>hi", false, Style::default(), o("127.0.0.1:40001")),
            "127.0.0.1_40001: user.notice: hi\n"
        );
        assert_eq!(
            line(b"<13>hi", false, Style::default(), o("[::1]:514")),
            "::1_514: user.notice: hi\n"
        );
    }

    #[test]
    fn rfc5424_headers() {
        let s = Style {
            rfc5424: true,
            ..Style::default()
        };
        let l = |m: &[u8]| line(m, false, s, Origin::default());
        assert_eq!(
            l(b"<165>1 2003-10-11T22:14:15.003Z host app 4242 ID47 - hello"),
            "local4.notice: app[4242]: hello\n"
        );
        assert_eq!(
            l(b"<13>1 2003-10-11T22:14:15Z h app - - [a x=\"1\\]\"][b] \xef\xbb\xbfmsg"),
            "user.notice: app: msg\n"
        );
        assert_eq!(l(b"<13>1 - - - - - -"), "user.notice: \n");
        assert_eq!(l(b"<13>1 - - - - - [x"), "user.notice: 1 - - - - - [x\n");
        assert_eq!(
            l(b"<13>Nov 30 10:00:00 su: x"),
            "user.notice: Nov 30 10:00:00 su: x\n"
        );
        // Not decoded without -R.
        assert_eq!(
            plain(b"<13>1 - h a 1 - - m"),
            "user.notice: 1 - h a 1 - - m\n"
        );
    }

    #[test]
    fn bsd_fields() {
        let f = rfc3164(b"Nov 30 10:46:53 groupadd[4699]: group added");
        assert_eq!(f.app, Some(&b"groupadd"[..]));
        assert_eq!(f.procid, Some(&b"4699"[..]));
        assert_eq!(f.msg, b"group added");
        let f = rfc3164(b"Nov 30 10:46:53 myhost root: hi");
        assert_eq!(
            (f.app, f.procid, f.msg),
            (Some(&b"root"[..]), None, &b"hi"[..])
        );
        let f = rfc3164(b"just text here");
        assert_eq!((f.app, f.msg), (None, &b"just text here"[..]));
    }

    #[test]
    fn json_lines() {
        let s = Style {
            json: true,
            ..Style::default()
        };
        let o = Origin {
            client: None,
            sender: Some(Sender {
                pid: 7,
                uid: 1000,
                gid: 100,
            }),
        };
        assert_eq!(
            line(b"<14>Nov 30 10:46:53 app[12]: say \"hi\"\n", false, s, o),
            "{\"facility\":\"user\",\"severity\":\"info\",\"app\":\"app\",\"pid\":12,\
             \"sender_pid\":7,\"sender_uid\":1000,\"sender_gid\":100,\"message\":\"say \\\"hi\\\"\"}\n"
        );
        assert_eq!(
            line(b"plain", true, s, Origin::default()),
            "{\"truncated\":true,\"message\":\"plain\"}\n"
        );
        assert_eq!(
            line(b"<165>1 - h app x - - m", false, s, Origin::default()),
            "{\"facility\":\"local4\",\"severity\":\"notice\",\"app\":\"app\",\"message\":\"m\"}\n"
        );
    }
}
