//! tend-summary: every service's state in one table, JSON or Prometheus text, read from
//! the files directly (no supervisor round trip), s6-supervised services included (the
//! tend-only columns are then empty).

use crate::status::{self, ReadError, Snapshot};
use nix::errno::Errno;
use nix::fcntl::OFlag;
use std::fmt::Write as _;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use tend_proto::death_tally::RECORD_SIZE;
use tend_proto::health;
use tend_proto::json;
use tend_proto::{Tai64n, servicedir};
use tend_sys::signals::short;

/// What a service is doing, as one word or phrase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Up,
    Ready,
    Down,
    Finishing,
    Unhealthy,
    PermanentlyFailed,
    NotSupervised,
    /// A supervisor's files that say nothing sure (a status that is no record, a
    /// `supervise` that is no directory): the row's `error` says what is wrong.
    Error,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::Up => "up",
            State::Ready => "ready",
            State::Down => "down",
            State::Finishing => "finishing",
            State::Unhealthy => "unhealthy",
            State::PermanentlyFailed => "permanently failed",
            State::NotSupervised => "supervisor not running",
            State::Error => "error",
        }
    }

    const ALL: [State; 8] = [
        State::Up,
        State::Ready,
        State::Down,
        State::Finishing,
        State::Unhealthy,
        State::PermanentlyFailed,
        State::NotSupervised,
        State::Error,
    ];

    fn metric_name(self) -> &'static str {
        match self {
            State::PermanentlyFailed => "permanently_failed",
            State::NotSupervised => "not_supervised",
            s => s.name(),
        }
    }
}

/// One service's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub name: String,
    pub state: State,
    pub supervised: bool,
    pub want_up: Option<bool>,
    pub normally_up: bool,
    pub pid: Option<i32>,
    /// Seconds in the current state, up or down (s6's updownfor).
    pub uptime: Option<u64>,
    /// Milliseconds from start to readiness.
    pub ready_after_ms: Option<u64>,
    /// Deaths recorded in `supervise/death_tally`.
    pub deaths: Option<u64>,
    pub last_exit: Option<u32>,
    pub last_signal: Option<u32>,
    /// The liveness watcher's verdict (`supervise/tend-check`).
    pub health: Option<String>,
    pub health_reason: Option<String>,
    pub check_restarts: Option<u64>,
    /// The daemon's sd_notify `STATUS=` text, when it is the running pid's.
    pub status_text: Option<String>,
    /// The last watchdog kill's reason (`supervise/tend-watchdog`).
    pub watchdog: Option<String>,
    /// The crash-restart policy's verdict (`supervise/tend-policy`).
    pub policy: Option<String>,
    /// Events posted about the service (tend-monit's alerts, `supervise/tend-events`),
    /// and the last one's name.
    pub events: Option<u64>,
    pub last_event: Option<String>,
    /// What could not be read, one line (`status: 0 bytes, expected 35 or 43`,
    /// `supervise/tend-check: a FIFO, not a regular file`); the other fields stand.
    pub error: Option<String>,
}

impl Row {
    /// Whether this row makes the summary's exit status 1: a service that should be up
    /// and is not, one judged unhealthy, or one whose files could not be read.
    pub fn is_bad(&self) -> bool {
        if self.error.is_some() {
            return true;
        }
        match self.state {
            State::Unhealthy | State::PermanentlyFailed | State::Error => true,
            State::NotSupervised => self.normally_up,
            State::Down | State::Finishing => self.want_up == Some(true),
            State::Up | State::Ready => false,
        }
    }
}

/// The services to summarise: a single operand that is not a service directory (no
/// `run`) is a scan directory, whose entries (sorted, dot-files skipped) are the services.
pub fn services(operands: &[PathBuf]) -> std::io::Result<Vec<PathBuf>> {
    if let [one] = operands
        && !one.join(servicedir::RUN).exists()
    {
        // d_type says "directory" without a stat; a symlink is followed.
        let mut v: Vec<PathBuf> = std::fs::read_dir(one)?
            .filter_map(Result::ok)
            .filter(|e| !e.file_name().as_encoded_bytes().starts_with(b"."))
            .filter(|e| {
                e.file_type()
                    .is_ok_and(|t| t.is_dir() || (t.is_symlink() && e.path().is_dir()))
            })
            .map(|e| e.path())
            .collect();
        v.sort();
        return Ok(v);
    }
    Ok(operands.to_vec())
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Build one row at `now`.
pub fn row(dir: &Path, now: Tai64n) -> Row {
    let name = dir.file_name().map_or_else(
        || text(dir.as_os_str().as_encoded_bytes()),
        |n| text(n.as_encoded_bytes()),
    );
    // status::read checks ./down itself when a supervisor runs.
    let normally_up = || !dir.join(servicedir::DOWN).exists();
    let mut problems = Vec::new();
    let mut side = |name| match status::read_side_file(dir, name) {
        Some(Ok(d)) => Some(d),
        Some(Err(why)) => {
            problems.push(why);
            None
        }
        None => None,
    };
    let check = side(servicedir::CHECK_STATE);
    let notify = side(servicedir::NOTIFY_STATE);
    let watchdog = side(servicedir::WATCHDOG_STATE);
    let events = side(servicedir::EVENTS_STATE);
    let field =
        |d: &Option<Vec<u8>>, k: &str| d.as_deref().and_then(|d| health::get(d, k)).map(text);
    let mut r = Row {
        name,
        state: State::NotSupervised,
        supervised: false,
        want_up: None,
        normally_up: true,
        pid: None,
        uptime: None,
        ready_after_ms: None,
        deaths: None,
        last_exit: None,
        last_signal: None,
        health: field(&check, "health"),
        health_reason: field(&check, "reason").filter(|s| !s.is_empty()),
        check_restarts: check
            .as_deref()
            .and_then(|d| health::get_num(d, "restarts")),
        status_text: None,
        watchdog: field(&watchdog, "reason"),
        policy: None,
        events: events.as_deref().and_then(|d| health::get_num(d, "events")),
        last_event: field(&events, "event"),
        error: None,
    };
    let snap = match status::read(dir) {
        Ok(s) => s,
        Err(e) => {
            r.normally_up = normally_up();
            if e != ReadError::NotRunning {
                r.state = State::Error;
                // The lock is held: a supervisor runs, its status says nothing sure.
                r.supervised = matches!(e, ReadError::Status(_) | ReadError::Down(_));
                if let ReadError::Check(_) = e {
                    // The directory itself is out of reach: its files say the same.
                    problems.clear();
                }
                problems.insert(0, e.detail(dir));
            }
            r.error = join(problems);
            return r;
        }
    };
    for p in &snap.problems {
        // tend-notify is read by both (status::read matches it to the pid).
        if !problems.contains(p) {
            problems.push(p.clone());
        }
    }
    r.error = join(problems);
    fill(&mut r, &snap, now);
    if r.is_up_state()
        && let Some(n) = &notify
        && health::get_num(n, "pid") == Some(snap.pid() as u64)
    {
        r.status_text = health::get(n, "status").map(text);
    }
    if r.is_up_state() && r.health.as_deref() == Some("unhealthy") {
        r.state = State::Unhealthy;
    }
    if let Some((stop, reason)) = &snap.policy {
        r.policy = Some(text(reason));
        if *stop && !r.is_up_state() && !snap.record.want_up {
            r.state = State::PermanentlyFailed;
        }
    }
    r
}

/// Several problems as one line.
fn join(problems: Vec<String>) -> Option<String> {
    (!problems.is_empty()).then(|| problems.join("; "))
}

impl Row {
    fn is_up_state(&self) -> bool {
        matches!(self.state, State::Up | State::Ready | State::Unhealthy)
    }
}

fn fill(r: &mut Row, s: &Snapshot, now: Tai64n) {
    r.supervised = true;
    r.normally_up = s.normally_up;
    r.want_up = Some(s.record.want_up);
    r.uptime = Some(now.secs.saturating_sub(s.record.stamp.secs));
    if s.is_up() {
        r.pid = Some(s.pid());
        r.state = if s.ready_field() {
            State::Ready
        } else {
            State::Up
        };
        if s.ready_field() && s.record.readystamp >= s.record.stamp {
            let ns = |t: Tai64n| u128::from(t.secs) * 1_000_000_000 + u128::from(t.nanos);
            r.ready_after_ms =
                Some(((ns(s.record.readystamp) - ns(s.record.stamp)) / 1_000_000) as u64);
        }
    } else {
        r.state = if s.record.finishing {
            State::Finishing
        } else {
            State::Down
        };
    }
    // The last death: the status record's when down, death_tally's last when up.
    if !s.is_up() {
        r.last_exit = s.exitcode();
        r.last_signal = s.signum();
    }
}

/// The death count from `supervise/death_tally`, and for an up service the last exit
/// code or signal from its last record.
fn last_death(dir: &Path, r: &mut Row) {
    use std::os::unix::fs::FileExt;
    // The size gives the count; only the last record is read. Opened non-blocking and
    // checked before any read, as every status-side file (a FIFO must not hang us).
    let f = match tend_sys::fd::open(
        &dir.join(servicedir::DEATH_TALLY),
        OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    ) {
        Ok(fd) => std::fs::File::from(fd),
        Err(Errno::ENOENT) => return,
        Err(e) => return r.add_error(format!("{}: {}", servicedir::DEATH_TALLY, e.desc())),
    };
    let len = match nix::sys::stat::fstat(f.as_raw_fd()) {
        Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFREG => st.st_size as u64,
        Ok(st) => {
            let kind = tend_sys::diagnose::kind_of(st.st_mode);
            return r.add_error(format!(
                "{}: {kind}, not a regular file",
                servicedir::DEATH_TALLY
            ));
        }
        Err(e) => return r.add_error(format!("{}: {}", servicedir::DEATH_TALLY, e.desc())),
    };
    let count = len / RECORD_SIZE as u64;
    r.deaths = Some(count);
    if count == 0 || r.last_exit.is_some() || r.last_signal.is_some() {
        return;
    }
    let mut last = [0u8; RECORD_SIZE];
    if f.read_exact_at(&mut last, (count - 1) * RECORD_SIZE as u64)
        .is_err()
    {
        return;
    }
    if let Some(d) = tend_proto::death_tally::Death::decode(&last) {
        if d.signal != 0 {
            r.last_signal = Some(u32::from(d.signal));
        } else {
            r.last_exit = Some(u32::from(d.exitcode));
        }
    }
}

impl Row {
    fn add_error(&mut self, e: String) {
        self.error = Some(match self.error.take() {
            Some(prev) => format!("{prev}; {e}"),
            None => e,
        });
    }
}

/// Rows for every service, in order.
pub fn rows(dirs: &[PathBuf]) -> Vec<Row> {
    let now = Tai64n::now();
    dirs.iter()
        .map(|d| {
            let mut r = row(d, now);
            if r.supervised {
                last_death(d, &mut r);
            }
            r
        })
        .collect()
}

/// `1h02m`-style durations.
pub fn human_duration(s: u64) -> String {
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        3600..86400 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d{:02}h", s / 86400, s % 86400 / 3600),
    }
}

fn last_text(r: &Row) -> String {
    match (r.last_exit, r.last_signal) {
        (_, Some(s)) => format!("SIG{}", short(s as i32)),
        (Some(c), None) => format!("exit {c}"),
        (None, None) => "-".into(),
    }
}

fn or_dash(v: Option<String>) -> String {
    v.unwrap_or_else(|| "-".into())
}

/// The table, aligned like `monit summary`.
pub fn table(rows: &[Row]) -> String {
    let header = [
        "Service", "State", "PID", "Uptime", "Ready", "Restarts", "Last", "Health", "Status",
    ];
    let cells: Vec<[String; 9]> = rows
        .iter()
        .map(|r| {
            let mut status = r.status_text.clone().unwrap_or_default();
            if let Some(e) = &r.error {
                status = e.clone();
            } else if let Some(p) = &r.policy
                && (r.state == State::PermanentlyFailed || status.is_empty())
            {
                status = p.clone();
            } else if status.is_empty()
                && r.state == State::Unhealthy
                && let Some(h) = &r.health_reason
            {
                status = h.clone();
            } else if status.is_empty()
                && let Some(w) = &r.watchdog
            {
                status = w.clone();
            }
            [
                r.name.clone(),
                r.state.name().to_string(),
                or_dash(r.pid.map(|p| p.to_string())),
                or_dash(r.uptime.filter(|_| r.pid.is_some()).map(human_duration)),
                or_dash(
                    r.ready_after_ms
                        .map(|ms| format!("{}.{:03}s", ms / 1000, ms % 1000)),
                ),
                or_dash(r.deaths.map(|d| d.to_string())),
                last_text(r),
                or_dash(r.health.clone()),
                status,
            ]
        })
        .collect();
    let mut width = header.map(str::len);
    for c in &cells {
        for (w, s) in width.iter_mut().zip(c.iter()) {
            *w = (*w).max(s.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cols: &[&str]| {
        let mut l = String::new();
        for (i, (s, w)) in cols.iter().zip(width.iter()).enumerate() {
            if i + 1 == cols.len() {
                l.push_str(s);
            } else {
                // Padded by hand: a format width is capped at u16::MAX, a name is not.
                l.push_str(s);
                let pad = w.saturating_sub(s.chars().count()) + 2;
                l.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(&header);
    for c in &cells {
        let v: Vec<&str> = c.iter().map(String::as_str).collect();
        line(&v);
    }
    out
}

fn jstr(o: &mut String, v: &Option<String>) {
    match v {
        Some(s) => json::push_str(o, s.as_bytes()),
        None => o.push_str("null"),
    }
}

fn jnum<T: std::fmt::Display>(o: &mut String, v: Option<T>) {
    match v {
        Some(n) => {
            let _ = write!(o, "{n}");
        }
        None => o.push_str("null"),
    }
}

/// A JSON array, one object per service with every field.
pub fn json_array(rows: &[Row]) -> String {
    let mut o = String::from("[");
    for (i, r) in rows.iter().enumerate() {
        o.push_str(if i == 0 { "\n" } else { ",\n" });
        o.push_str("{\"service\":");
        json::push_str(&mut o, r.name.as_bytes());
        o.push_str(",\"state\":");
        json::push_str(&mut o, r.state.name().as_bytes());
        let _ = write!(
            o,
            ",\"ok\":{},\"supervised\":{},\"wantedup\":",
            !r.is_bad(),
            r.supervised
        );
        jnum(&mut o, r.want_up);
        let _ = write!(o, ",\"normallyup\":{},\"pid\":", r.normally_up);
        jnum(&mut o, r.pid);
        o.push_str(",\"uptime\":");
        jnum(&mut o, r.uptime.filter(|_| r.pid.is_some()));
        o.push_str(",\"updownfor\":");
        jnum(&mut o, r.uptime);
        o.push_str(",\"ready_after_ms\":");
        jnum(&mut o, r.ready_after_ms);
        o.push_str(",\"restarts\":");
        jnum(&mut o, r.deaths);
        o.push_str(",\"exitcode\":");
        jnum(&mut o, r.last_exit);
        o.push_str(",\"signal\":");
        jstr(
            &mut o,
            &r.last_signal.map(|s| format!("SIG{}", short(s as i32))),
        );
        o.push_str(",\"health\":");
        jstr(&mut o, &r.health);
        o.push_str(",\"health_reason\":");
        jstr(&mut o, &r.health_reason);
        o.push_str(",\"check_restarts\":");
        jnum(&mut o, r.check_restarts);
        o.push_str(",\"status\":");
        jstr(&mut o, &r.status_text);
        o.push_str(",\"watchdog\":");
        jstr(&mut o, &r.watchdog);
        o.push_str(",\"policy\":");
        jstr(&mut o, &r.policy);
        o.push_str(",\"events\":");
        jnum(&mut o, r.events);
        o.push_str(",\"last_event\":");
        jstr(&mut o, &r.last_event);
        o.push_str(",\"error\":");
        jstr(&mut o, &r.error);
        o.push('}');
    }
    o.push_str("\n]\n");
    o
}

/// A Prometheus label value, escaped.
fn label(o: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            '"' => o.push_str("\\\""),
            '\n' => o.push_str("\\n"),
            c => o.push(c),
        }
    }
}

/// How one figure of a row reads, if the row has it.
type Get = fn(&Row) -> Option<f64>;

fn flag(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

/// The metric families of `prometheus`, one per figure: name, help text, the figure.
const FAMILIES: [(&str, &str, Get); 11] = [
    (
        "tend_service_up",
        "Whether the service's process is running.",
        |r| {
            Some(flag(matches!(
                r.state,
                State::Up | State::Ready | State::Unhealthy
            )))
        },
    ),
    (
        "tend_service_ready",
        "Whether the service is up and ready.",
        |r| Some(flag(r.ready_after_ms.is_some() && r.pid.is_some())),
    ),
    (
        "tend_service_wanted_up",
        "Whether the supervisor wants the service up.",
        |r| r.want_up.map(flag),
    ),
    (
        "tend_service_supervised",
        "Whether a supervisor is running on the service.",
        |r| Some(flag(r.supervised)),
    ),
    (
        "tend_service_ok",
        "Whether the service is as it should be (tend-summary's exit status).",
        |r| Some(flag(!r.is_bad())),
    ),
    (
        "tend_service_healthy",
        "The liveness watcher's verdict: 1 healthy, 0 failing or unhealthy.",
        |r| match r.health.as_deref() {
            Some("healthy") => Some(1.0),
            Some("failing" | "unhealthy") => Some(0.0),
            _ => None,
        },
    ),
    (
        "tend_service_uptime_seconds",
        "Seconds since the service last went up or down.",
        |r| r.uptime.map(|u| u as f64),
    ),
    (
        "tend_service_ready_after_seconds",
        "Seconds from start to readiness.",
        |r| r.ready_after_ms.map(|m| m as f64 / 1000.0),
    ),
    (
        "tend_service_deaths",
        "Deaths recorded in the death tally.",
        |r| r.deaths.map(|d| d as f64),
    ),
    (
        "tend_service_check_restarts",
        "Restarts by the liveness watcher inside its window.",
        |r| r.check_restarts.map(|d| d as f64),
    ),
    (
        "tend_service_events",
        "Events posted about the service (tend-monit's alerts).",
        |r| r.events.map(|d| d as f64),
    ),
];

/// Prometheus text exposition format: one metric family per figure, a `service` label.
pub fn prometheus(rows: &[Row]) -> String {
    let mut o = String::new();
    for (name, help, get) in FAMILIES {
        let _ = write!(o, "# HELP {name} {help}\n# TYPE {name} gauge\n");
        for r in rows {
            if let Some(v) = get(r) {
                o.push_str(name);
                o.push_str("{service=\"");
                label(&mut o, &r.name);
                let _ = writeln!(o, "\"}} {v}");
            }
        }
    }
    let _ = write!(
        o,
        "# HELP tend_service_state The service's state, one series per possible state.\n# TYPE tend_service_state gauge\n"
    );
    for r in rows {
        for s in State::ALL {
            o.push_str("tend_service_state{service=\"");
            label(&mut o, &r.name);
            let _ = writeln!(
                o,
                "\",state=\"{}\"}} {}",
                s.metric_name(),
                u8::from(r.state == s)
            );
        }
    }
    let _ = write!(
        o,
        "# HELP tend_service_error What could not be read of the service's files (1 while it lasts).\n# TYPE tend_service_error gauge\n"
    );
    for r in rows {
        if let Some(e) = &r.error {
            o.push_str("tend_service_error{service=\"");
            label(&mut o, &r.name);
            o.push_str("\",error=\"");
            label(&mut o, e);
            o.push_str("\"} 1\n");
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Row {
        Row {
            name: "we\"b".into(),
            state: State::Ready,
            supervised: true,
            want_up: Some(true),
            normally_up: true,
            pid: Some(42),
            uptime: Some(3725),
            ready_after_ms: Some(1250),
            deaths: Some(2),
            last_exit: Some(1),
            last_signal: None,
            health: Some("healthy".into()),
            health_reason: None,
            check_restarts: Some(0),
            status_text: Some("serving".into()),
            watchdog: None,
            policy: None,
            events: None,
            last_event: None,
            error: None,
        }
    }

    #[test]
    fn durations() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(65), "1m05s");
        assert_eq!(human_duration(3725), "1h02m");
        assert_eq!(human_duration(90000), "1d01h");
    }

    #[test]
    fn bad_rows() {
        let mut r = sample();
        assert!(!r.is_bad());
        r.state = State::Down;
        assert!(r.is_bad());
        r.want_up = Some(false);
        assert!(!r.is_bad());
        r.state = State::NotSupervised;
        assert!(r.is_bad());
        r.normally_up = false;
        assert!(!r.is_bad());
        r.state = State::Unhealthy;
        assert!(r.is_bad());
    }

    #[test]
    fn formats() {
        let r = sample();
        let t = table(std::slice::from_ref(&r));
        assert_eq!(
            t,
            "Service  State  PID  Uptime  Ready   Restarts  Last    Health   Status\n\
             we\"b     ready  42   1h02m   1.250s  2         exit 1  healthy  serving\n"
        );
        let j = json_array(std::slice::from_ref(&r));
        assert!(
            j.starts_with("[\n{\"service\":\"we\\\"b\",\"state\":\"ready\",\"ok\":true"),
            "{j}"
        );
        let p = prometheus(&[r]);
        assert!(
            p.contains("tend_service_up{service=\"we\\\"b\"} 1\n"),
            "{p}"
        );
        assert!(p.contains("tend_service_state{service=\"we\\\"b\",state=\"ready\"} 1\n"));
    }
}
