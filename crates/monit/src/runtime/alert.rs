//! Alerts as monit sends them: one mail per event to every `set alert` (and the check's
//! own `alert`) address, through `set mailserver`, in `set mail-format`'s shape (monit's
//! default otherwise), with `$SERVICE`, `$EVENT`, `$ACTION`, `$DATE`, `$HOST` and
//! `$DESCRIPTION` filled in. A mail that cannot be sent is kept in `set eventqueue
//! basedir`, and sent before the next one. The BOSH agent receives these on its SMTP
//! listener (127.0.0.1:2825) and reads the `Service:`, `Event:`, `Action:`, `Date:` and
//! `Description:` lines of its own mail-format.

use crate::reader::model::{Check, Control};
use crate::runtime::text::{log_stamp, rfc2822};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

/// Where and how mail goes: what a watcher needs of the control file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mail {
    pub recipients: Vec<String>,
    /// `host:port` of each mail server, tried in order.
    pub servers: Vec<String>,
    pub from: Option<String>,
    pub subject: Option<String>,
    pub message: Option<String>,
    pub queue: Option<String>,
    /// `set logfile`: where every event is also a line (stderr without one, and for
    /// `syslog`, which the caller's stderr reaches).
    pub log: Option<String>,
}

const DEFAULT_SUBJECT: &str = "monit alert --  $EVENT $SERVICE";
const DEFAULT_MESSAGE: &str = "$EVENT Service $SERVICE \n\n\tDate:        $DATE\n\tAction:      $ACTION\n\tHost:        $HOST\n\tDescription: $DESCRIPTION\n\nYour faithful employee,\nMonit";

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// One event of one service, as monit posts one.
#[derive(Clone, Copy, Debug)]
pub struct Event<'a> {
    pub service: &'a str,
    /// monit's name for it: `Does not exist`, `Exists`, `Execution failed`,
    /// `Connection failed`, `Connection succeeded`, `Resource limit matched`,
    /// `Resource limit succeeded`, `Timeout`, `Action done`.
    pub event: &'a str,
    pub action: &'a str,
    pub description: &'a str,
}

/// One event's mail, headers and body, for one recipient, at time `t`.
pub fn compose(m: &Mail, to: &str, ev: &Event, host: &str, t: u64) -> String {
    let Event {
        service,
        event,
        action,
        description,
    } = *ev;
    let date = rfc2822(t);
    let fill = |s: &str| {
        s.replace("$SERVICE", service)
            .replace("$EVENT", event)
            .replace("$ACTION", action)
            .replace("$DATE", &date)
            .replace("$HOST", host)
            .replace("$DESCRIPTION", description)
    };
    let from = m.from.clone().unwrap_or_else(|| format!("monit@{host}"));
    let subject = fill(m.subject.as_deref().unwrap_or(DEFAULT_SUBJECT));
    let body = fill(m.message.as_deref().unwrap_or(DEFAULT_MESSAGE));
    // 5.2.5's headers, in its order and spelling: the BOSH agent takes the alert's id
    // with `^Message-id: <([^>]+)>$`, and its health monitor drops an id it has seen.
    format!(
        "From: {from}\r\nTo: {to}\r\nSubject: {subject}\r\nDate: {date}\r\nX-Mailer: monit 5.2.5\r\nMime-Version: 1.0\r\nContent-Type: text/plain; charset=\"iso-8859-1\"\r\nContent-Transfer-Encoding: 8bit\r\nMessage-id: <{t}.{}@{host}>\r\n\r\n{}\r\n",
        random(),
        body.replace('\n', "\r\n")
    )
}

/// A number no other mail of this or another daemon is likely to share: 64 bits of the
/// kernel's randomness, or (without /dev/urandom) the clock's nanoseconds, the pid and a
/// count within the process, mixed.
fn random() -> u64 {
    use std::io::Read;
    let mut b = [0u8; 8];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .is_ok()
    {
        return u64::from_ne_bytes(b);
    }
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    (u64::from(std::process::id()) << 32 ^ u64::from(nanos) ^ seq << 48)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

fn reply(r: &mut impl BufRead, want: u8) -> Result<(), String> {
    loop {
        let mut line = String::new();
        r.read_line(&mut line)
            .map_err(|e| tend_sys::error::io_reason(&e))?;
        if line.len() < 4 {
            return Err(format!("short SMTP reply '{}'", line.trim_end()));
        }
        if line.as_bytes()[3] == b'-' {
            continue;
        }
        return if line.as_bytes()[0] == want {
            Ok(())
        } else {
            Err(format!("SMTP: {}", line.trim_end()))
        };
    }
}

/// Send one mail over SMTP (no authentication, no TLS: BOSH's agent listens on loopback).
pub fn smtp(server: &str, from: &str, to: &str, mail: &str, host: &str) -> Result<(), String> {
    let addr = std::net::ToSocketAddrs::to_socket_addrs(server)
        .map_err(|e| format!("{server}: {}", tend_sys::error::io_reason(&e)))?
        .next()
        .ok_or_else(|| format!("{server}: no address"))?;
    let s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .map_err(|e| format!("{server}: {}", tend_sys::error::io_reason(&e)))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| tend_sys::error::io_reason(&e))?;
    s.set_write_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| tend_sys::error::io_reason(&e))?;
    let mut w = s.try_clone().map_err(|e| tend_sys::error::io_reason(&e))?;
    let mut r = BufReader::new(s);
    reply(&mut r, b'2')?;
    let mut say = |line: String, want: u8, r: &mut BufReader<TcpStream>| -> Result<(), String> {
        w.write_all(line.as_bytes())
            .map_err(|e| tend_sys::error::io_reason(&e))?;
        reply(r, want)
    };
    say(format!("HELO {host}\r\n"), b'2', &mut r)?;
    say(format!("MAIL FROM:<{from}>\r\n"), b'2', &mut r)?;
    say(format!("RCPT TO:<{to}>\r\n"), b'2', &mut r)?;
    say("DATA\r\n".into(), b'3', &mut r)?;
    // Dot-stuffing: a line that starts with a dot gets another.
    let body = mail.replace("\r\n.", "\r\n..");
    say(format!("{body}.\r\n"), b'2', &mut r)?;
    let _ = say("QUIT\r\n".into(), b'2', &mut r);
    Ok(())
}

/// Parse a queued mail file: recipient line, then the mail.
fn queued(path: &Path) -> Option<(String, String)> {
    let t = std::fs::read_to_string(path).ok()?;
    let (to, mail) = t.split_once('\n')?;
    Some((to.to_string(), mail.to_string()))
}

fn deliver(m: &Mail, to: &str, mail: &str, host: &str) -> Result<(), String> {
    let from = m.from.clone().unwrap_or_else(|| format!("monit@{host}"));
    let mut last = "no mail server".to_string();
    for s in &m.servers {
        match smtp(s, &from, to, mail, host) {
            Ok(()) => return Ok(()),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Send an event to every recipient; what could not be sent is queued (or reported).
/// The queue is flushed first, oldest first.
pub fn send(m: &Mail, service: &str, event: &str, action: &str, description: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if m.recipients.is_empty() {
        return problems;
    }
    let host = crate::runtime::text::system_name()
        .trim_start_matches("system_")
        .to_string();
    if let Some(q) = &m.queue {
        let mut files: Vec<_> = std::fs::read_dir(q)
            .map(|rd| rd.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        files.sort();
        for f in files
            .iter()
            .filter(|f| f.extension().is_some_and(|e| e == "mail"))
        {
            if let Some((to, mail)) = queued(f)
                && deliver(m, &to, &mail, &host).is_ok()
            {
                let _ = std::fs::remove_file(f);
            }
        }
    }
    let t = now();
    for (i, to) in m.recipients.iter().enumerate() {
        let ev = Event {
            service,
            event,
            action,
            description,
        };
        let mail = compose(m, to, &ev, &host, t);
        if let Err(e) = deliver(m, to, &mail, &host) {
            match &m.queue {
                Some(q) => {
                    let _ = std::fs::create_dir_all(q);
                    // Numbered within the process: two events of one second (a death,
                    // then the daemon running again) are two files, kept in order.
                    static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
                    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let f = Path::new(q).join(format!(
                        "{t:012}-{}-{seq:06}-{service}-{i}.mail",
                        std::process::id()
                    ));
                    match std::fs::write(&f, format!("{to}\n{mail}")) {
                        Ok(()) => problems.push(format!(
                            "alert to {to} not sent ({e}): queued in {}",
                            f.display()
                        )),
                        Err(w) => {
                            let w = tend_sys::error::io_reason(&w);
                            problems.push(format!("alert to {to} not sent ({e}) nor queued: {w}"))
                        }
                    }
                }
                None => problems.push(format!("alert to {to} not sent: {e}")),
            }
        }
    }
    problems
}

impl Event<'_> {
    /// A failure (logged as an error) rather than a recovery or a report.
    fn failed(&self) -> bool {
        matches!(
            self.event,
            "Does not exist"
                | "Execution failed"
                | "Connection failed"
                | "Resource limit matched"
                | "Timeout"
        )
    }
}

/// Post `ev` about the service in `servicedir`: one line in the log (`[UTC Dec  2
/// 20:14:54] error    : 'db' process is not running`, as monit writes it), the count in
/// the service's `supervise/tend-events` (what tend-summary reports), and a mail to every
/// recipient. What went wrong is said on `report`; the event is never lost for it.
pub fn post(m: &Mail, servicedir: &Path, ev: &Event, report: &dyn tend_sys::warn::Warn) {
    let t = now();
    let level = if ev.failed() { "error" } else { "info" };
    let text = format!("'{}' {}", ev.service, ev.description);
    match m.log.as_deref().filter(|l| *l != "syslog") {
        Some(path) => {
            let line = format!("{} {level:<9}: {text}\n", log_stamp(t));
            let w = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(path)
                .and_then(|mut f| f.write_all(line.as_bytes()));
            if let Err(e) = w {
                report.warn(&format_args!(
                    "unable to append to {path}: {}: {text}",
                    tend_sys::error::io_reason(&e)
                ));
            }
        }
        None if ev.failed() => report.warn(&text),
        None => report.say("info", &text),
    }
    count(servicedir, ev, t, report);
    for problem in send(m, ev.service, ev.event, ev.action, ev.description) {
        report.warn(&problem);
    }
}

/// One more event in `supervise/tend-events`: `events=N`, then the last one's `event=`,
/// `action=`, `description=` and `time=` (replaced whole, atomically).
fn count(servicedir: &Path, ev: &Event, t: u64, report: &dyn tend_sys::warn::Warn) {
    use tend_proto::health;
    use tend_proto::servicedir::{
        EVENTS_STATE, SUPERVISE,
        within::{EVENTS_STATE as NAME, EVENTS_STATE_NEW as NEW},
    };
    let before = tend_client::status::read_side_file(servicedir, EVENTS_STATE)
        .and_then(Result::ok)
        .and_then(|d| health::get_num(&d, "events"))
        .unwrap_or(0);
    let mut out = Vec::new();
    health::put_num(&mut out, "events", before + 1);
    health::put(&mut out, "event", ev.event.as_bytes());
    health::put(&mut out, "action", ev.action.as_bytes());
    health::put(&mut out, "description", ev.description.as_bytes());
    health::put_num(&mut out, "time", t);
    let dir = tend_sys::fd::open(
        &servicedir.join(SUPERVISE),
        nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_DIRECTORY | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    );
    if let Err(e) = dir.and_then(|d| tend_proto::status::write_atomic_at(&d, NEW, NAME, &out)) {
        report.warn(&format_args!(
            "unable to write {}/{EVENTS_STATE}: {}",
            servicedir.display(),
            e.desc()
        ));
    }
}

/// Where the check's alerts go: the global `set alert` addresses and its own.
pub fn mail(control: &Control, c: &Check) -> Mail {
    let mut recipients: Vec<String> = control.alerts.iter().map(|a| a.address.clone()).collect();
    recipients.extend(c.alerts.iter().map(|a| a.address.clone()));
    recipients.dedup();
    let f = &control.mail_format;
    Mail {
        recipients,
        servers: control
            .mailservers
            .iter()
            .map(|m| format!("{}:{}", m.host, m.port.unwrap_or(25)))
            .collect(),
        from: f.from.clone(),
        subject: f.subject.clone(),
        message: f.message.clone(),
        queue: control.eventqueue.as_ref().and_then(|q| q.basedir.clone()),
        log: control.logfile.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bosh_format() {
        let m = Mail {
            recipients: vec!["agent@local".into()],
            from: Some("monit@localhost".into()),
            subject: Some("Monit Alert".into()),
            message: Some("Service: $SERVICE\nEvent: $EVENT\nAction: $ACTION\nDate: $DATE\nDescription: $DESCRIPTION".into()),
            ..Default::default()
        };
        let ev = Event {
            service: "nats",
            event: "Does not exist",
            action: "restart",
            description: "process is not running",
        };
        let t = compose(&m, "agent@local", &ev, "vm", 0);
        assert!(t.contains("\r\n\r\nService: nats\r\nEvent: Does not exist\r\nAction: restart\r\nDate: Thu, 01 Jan 1970 00:00:00 +0000\r\nDescription: process is not running\r\n"), "{t}");
        assert!(
            t.starts_with("From: monit@localhost\r\nTo: agent@local\r\nSubject: Monit Alert\r\nDate: Thu, 01 Jan 1970 00:00:00 +0000\r\nX-Mailer: monit 5.2.5\r\nMime-Version: 1.0\r\nContent-Type: text/plain; charset=\"iso-8859-1\"\r\nContent-Transfer-Encoding: 8bit\r\nMessage-id: <0."),
            "{t}"
        );
        let id = |t: &str| {
            t.split("\r\n").find_map(|l| {
                l.strip_prefix("Message-id: <")?
                    .strip_suffix('>')
                    .map(String::from)
            })
        };
        let first = id(&t).expect("an id");
        assert!(first.ends_with("@vm"), "{first}");
        assert_ne!(Some(first), id(&compose(&m, "agent@local", &ev, "vm", 0)));
    }
}
