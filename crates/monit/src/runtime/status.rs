//! What monit would say about each service, read from the supervisors' status files and
//! the watchers' `monit-state/`: the states of `summary` and of the XML, and 5.2.5's and
//! 5.33's summary layouts.

use crate::reader::model::{Control, Kind};
use crate::runtime::http::escape as xml_escape;
use crate::runtime::resource::Usage;
use crate::runtime::state::STATE_DIR;
use crate::runtime::text::{bytes_533, system_name};
use std::path::Path;

/// A running daemon's numbers as the XML gives them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Measured {
    pub usage: Usage,
    /// CPU percent of the daemon, and of its tree, since the previous sample (0 at the
    /// first, as in monit's first cycle).
    pub cpu: f64,
    pub cpu_total: f64,
}

/// A service's state as monit names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Running,
    NotMonitored,
    /// Started, the daemon not found yet (monit: `initializing`, monitor 2).
    Initializing,
    /// The daemon died and is being started again.
    DoesNotExist,
    /// The start program did not bring it up.
    ExecutionFailed,
    /// Being stopped.
    StopPending,
    /// Running, but its connection test fails (its `NAME-health` watcher says so).
    ConnectionFailed,
}

impl State {
    /// 5.2.5's word in `summary`.
    pub fn word_525(self) -> &'static str {
        match self {
            State::Running => "running",
            State::NotMonitored => "not monitored",
            State::Initializing => "initializing",
            State::DoesNotExist => "Does not exist",
            State::ExecutionFailed => "Execution failed",
            State::StopPending => "stop pending",
            State::ConnectionFailed => "Connection failed",
        }
    }

    /// 5.33's word in `summary`.
    pub fn word_533(self) -> &'static str {
        match self {
            State::Running => "OK",
            State::NotMonitored => "Not monitored",
            State::Initializing => "Initializing",
            State::DoesNotExist => "Does not exist",
            State::ExecutionFailed => "Execution failed",
            State::StopPending => "Stop pending",
            State::ConnectionFailed => "Connection failed",
        }
    }
}

/// A process check's state, with the daemon's pid when it runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Service {
    pub name: String,
    pub state: State,
    pub pid: Option<i32>,
    /// Seconds since the supervisor's last up/down transition.
    pub uptime: u64,
    /// That transition's time (a kept state's uptime is counted from it again).
    pub since: Option<tend_proto::Tai64n>,
}

/// The watcher's exit code when the start program failed (see `watch::Exit`).
pub const EXIT_START_FAILED: u8 = 2;

pub fn read(scandir: &Path, name: &str) -> Service {
    let dir = scandir.join(name);
    let mut s = Service {
        name: name.into(),
        state: State::NotMonitored,
        pid: None,
        uptime: 0,
        since: None,
    };
    if crate::runtime::state::is_unmonitored(&dir) || !tend_client::svok(&dir).unwrap_or(false) {
        return s;
    }
    let Ok(r) = tend_client::status::read_record(&dir) else {
        return s;
    };
    let now = tend_proto::Tai64n::now();
    s.uptime = r.stamp.secs_until(now);
    s.since = Some(r.stamp);
    let running = r.pid != 0 && !r.finishing;
    // Asked only of a daemon not ready yet: one file fewer per service of a report.
    let start_failed = || {
        dir.join(STATE_DIR)
            .join(crate::runtime::state::START_FAILED)
            .exists()
    };
    s.state = match (r.want_up, running, r.ready) {
        (true, true, true) => State::Running,
        (true, true, false) if start_failed() => State::ExecutionFailed,
        (true, true, false) => State::Initializing,
        (true, false, _) => {
            let code = tend_sys::wait::Wstat(i32::from(r.wstat)).exit_code();
            if code == Some(EXIT_START_FAILED) {
                State::ExecutionFailed
            } else {
                State::DoesNotExist
            }
        }
        (false, true, _) => State::StopPending,
        // Its daemon outlived the stop: not stopped, so not "not monitored".
        (false, false, _)
            if dir
                .join(STATE_DIR)
                .join(crate::runtime::state::STOP_FAILED)
                .exists() =>
        {
            State::ExecutionFailed
        }
        (false, false, _) => State::NotMonitored,
    };
    if s.state == State::Running && connection_verdict(&dir).is_some_and(|(failing, _)| failing) {
        s.state = State::ConnectionFailed;
    }
    if matches!(s.state, State::Running | State::ConnectionFailed) {
        // The daemon's pid, as the watcher found it (a few digits: a stack buffer).
        let mut b = [0u8; 24];
        s.pid = tend_sys::fd::read_regular_into(&dir.join(STATE_DIR).join("pid"), &mut b)
            .ok()
            .and_then(|n| std::str::from_utf8(&b[..n]).ok()?.trim().parse().ok());
    }
    s
}

/// The connection test's verdict, kept by tend-check in the service's supervise/:
/// failing or not, and why; None when there is none. Read as every status-side file is
/// (a FIFO there must not hang the report); its first lines (`health=`, `result=`,
/// `reason=`) are in its first KiB, read on the stack: no allocation per service of a
/// report, nor per verdict a watcher is woken for.
pub fn connection_verdict(dir: &Path) -> Option<(bool, String)> {
    let mut b = [0u8; 1024];
    let n = tend_sys::fd::read_regular_into(&dir.join(tend_proto::servicedir::CHECK_STATE), &mut b)
        .ok()?;
    let health = tend_proto::health::get(&b[..n], "health")?;
    let reason = tend_proto::health::get(&b[..n], "reason").unwrap_or_default();
    Some((
        matches!(health, b"failing" | b"unhealthy"),
        String::from_utf8_lossy(reason).into_owned(),
    ))
}

/// monit's uptime text: `[Nd ][Nh ]Nm ` (5.2.5 keeps the trailing blank).
pub fn uptime_525(secs: u64) -> String {
    let (d, h, m) = (secs / 86400, secs % 86400 / 3600, secs % 3600 / 60);
    let mut s = String::new();
    if d > 0 {
        s += &format!("{d}d ");
    }
    if d > 0 || h > 0 {
        s += &format!("{h}h ");
    }
    s += &format!("{m}m ");
    s
}

/// `monit summary` in 5.2.5's layout: the daemon line, a blank line, then one row per
/// process check (and the system) with the state at column 37.
pub fn summary_525(c: &Control, services: &[Service], daemon_uptime: u64) -> String {
    let mut out = format!(
        "The Monit daemon 5.2.5 uptime: {}\n\n",
        uptime_525(daemon_uptime)
    );
    for s in services {
        // 5.2.5's `%-35s %s`: a long name keeps its space before the state.
        out += &format!(
            "{:<35} {}\n",
            format!("Process '{}'", s.name),
            s.state.word_525()
        );
    }
    let system = c
        .checks
        .iter()
        .find(|ch| ch.kind == Kind::System)
        .map_or_else(system_name, |ch| ch.name.clone());
    out += &format!("{:<35} {}\n", format!("System '{system}'"), "running");
    out
}

/// `monit status` in 5.2.5's layout: a block per service, values at column 37.
pub fn status_525(services: &[Service], daemon_uptime: u64) -> String {
    let mut out = format!(
        "The Monit daemon 5.2.5 uptime: {}\n\n",
        uptime_525(daemon_uptime)
    );
    let row = |k: &str, v: &str| format!("  {k:<33} {v}\n");
    for s in services {
        out += &format!("Process '{}'\n", s.name);
        out += &row("status", s.state.word_525());
        let monitored = match s.state {
            State::NotMonitored => "not monitored",
            State::Initializing => "initializing",
            _ => "monitored",
        };
        out += &row("monitoring status", monitored);
        if let Some(pid) = s.pid {
            out += &row("pid", &pid.to_string());
            out += &row("uptime", uptime_525(s.uptime).trim_end());
        }
        out += "\n";
    }
    out
}

/// `status [name]` in 5.33's layout (`-N`): a block per service, values at column 31;
/// for a running daemon the rows monit measures from /proc that tend-monit measures
/// too (pid, parent pid, uid, effective uid, gid, uptime, threads, children, cpu,
/// memory); `data collected` in UTC.
pub fn status_533(services: &[Service], daemon_uptime: u64, now: u64) -> String {
    let mut out = format!(
        "Monit 5.33.0 uptime: {}\n\n",
        uptime_525(daemon_uptime).trim_end()
    );
    let row = |k: &str, v: &str| format!("  {k:<29}{v}\n");
    let collected = crate::runtime::text::rfc2822(now);
    let collected = collected.strip_suffix(" +0000").unwrap_or(&collected);
    let total = crate::runtime::resource::mem_total_kb().max(1);
    for s in services {
        out += &format!("Process '{}'\n", s.name);
        let status = match s.state {
            State::StopPending => "OK - stop pending".to_string(),
            st => st.word_533().to_string(),
        };
        out += &row("status", &status);
        out += &row(
            "monitoring status",
            match s.state {
                State::NotMonitored => "Not monitored",
                State::Initializing => "Initializing",
                _ => "Monitored",
            },
        );
        out += &row("monitoring mode", "active");
        out += &row("on reboot", "start");
        if let Some(pid) = s.pid.filter(|_| s.state != State::NotMonitored) {
            let st = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            let field = |k: &str, n: usize| {
                st.lines()
                    .find_map(|l| l.strip_prefix(k))
                    .and_then(|v| v.split_whitespace().nth(n).map(String::from))
                    .unwrap_or_else(|| "-".into())
            };
            let u = crate::runtime::resource::usage(pid);
            // A rate needs two samples, and this command makes one: 0, as monit's first
            // cycle (the daemon's XML gives rates between its cycles).
            let (cpu, cpu_total) = (0.0, 0.0);
            let pc = |kb: u64| kb as f64 * 100.0 / total as f64;
            out += &row("pid", &pid.to_string());
            out += &row("parent pid", &field("PPid:", 0));
            out += &row("uid", &field("Uid:", 0));
            out += &row("effective uid", &field("Uid:", 1));
            out += &row("gid", &field("Gid:", 0));
            out += &row("uptime", uptime_525(s.uptime).trim_end());
            out += &row("threads", &field("Threads:", 0));
            out += &row("children", &u.children.to_string());
            out += &row("cpu", &format!("{cpu:.1}%"));
            out += &row("cpu total", &format!("{cpu_total:.1}%"));
            out += &row(
                "memory",
                &format!("{:.1}% [{}]", pc(u.kb), bytes_533(u.kb * 1024)),
            );
            out += &row(
                "memory total",
                &format!("{:.1}% [{}]", pc(u.kb_total), bytes_533(u.kb_total * 1024)),
            );
        }
        out += &row("data collected", collected);
        out += "\n";
    }
    out
}

/// monit's event bits in `<status>`: what the agent reads as failing.
pub fn status_bits(st: State) -> u32 {
    match st {
        State::DoesNotExist => 0x200,
        State::ExecutionFailed => 0x1000,
        State::ConnectionFailed => 0x20,
        _ => 0,
    }
}

/// `<monitor>`: 0 not monitored, 1 monitored, 2 initializing.
pub fn monitor_value(st: State) -> u8 {
    match st {
        State::NotMonitored => 0,
        State::Initializing => 2,
        _ => 1,
    }
}

/// monit's action numbers in `<pendingaction>`.
pub fn action_number(action: &str) -> u8 {
    match action {
        "restart" => 2,
        "stop" => 3,
        "unmonitor" => 5,
        "start" => 6,
        "monitor" => 7,
        _ => 0,
    }
}

/// What the XML documents share: the daemon's identity and the services' rows.
pub struct Report<'a> {
    pub control: &'a Control,
    pub services: &'a [Service],
    /// Each running service's numbers, by the same index.
    pub measured: &'a [Option<crate::runtime::status::Measured>],
    /// (name, action) of actions still running.
    pub pending: &'a [(String, String)],
    pub id: &'a str,
    pub incarnation: u64,
    pub uptime: u64,
    pub controlfile: &'a str,
    pub now: u64,
}

impl Report<'_> {
    fn server(&self, out: &mut String, system: &str) {
        let h = self.control.httpd.as_ref();
        out.push_str(&format!(
            "<uptime>{}</uptime><poll>{}</poll><startdelay>{}</startdelay><localhostname>{}</localhostname><controlfile>{}</controlfile>",
            self.uptime,
            self.control.daemon.unwrap_or(30),
            self.control.start_delay,
            xml_escape(system.trim_start_matches("system_")),
            xml_escape(self.controlfile)
        ));
        if let Some(h) = h {
            out.push_str(&format!(
                "<httpd><address>{}</address><port>{}</port><ssl>0</ssl></httpd>",
                xml_escape(h.address.as_deref().unwrap_or("127.0.0.1")),
                h.port.unwrap_or(0)
            ));
        }
    }

    fn service_body(&self, i: usize, s: &Service, out: &mut String) {
        let pending = self
            .pending
            .iter()
            .find(|(n, _)| *n == s.name)
            .map_or(0, |(_, a)| action_number(a));
        out.push_str(&format!(
            "<collected_sec>{}</collected_sec><collected_usec>0</collected_usec><status>{}</status><status_hint>0</status_hint><monitor>{}</monitor><monitormode>0</monitormode><pendingaction>{pending}</pendingaction>",
            self.now,
            status_bits(s.state),
            monitor_value(s.state)
        ));
        if status_bits(s.state) != 0 {
            out.push_str(&format!(
                "<status_message>{}</status_message>",
                s.state.word_525()
            ));
        }
        if let (Some(pid), Some(m)) = (s.pid, self.measured.get(i).copied().flatten()) {
            let u = m.usage;
            let total = crate::runtime::resource::mem_total_kb().max(1);
            let pc = |kb: u64| kb as f64 * 100.0 / total as f64;
            out.push_str(&format!(
                "<pid>{pid}</pid><ppid>{}</ppid><uptime>{}</uptime><children>{}</children><memory><percent>{:.1}</percent><percenttotal>{:.1}</percenttotal><kilobyte>{}</kilobyte><kilobytetotal>{}</kilobytetotal></memory><cpu><percent>{:.1}</percent><percenttotal>{:.1}</percenttotal></cpu>",
                u.ppid,
                s.uptime,
                u.children,
                pc(u.kb),
                pc(u.kb_total),
                u.kb,
                u.kb_total,
                m.cpu,
                m.cpu_total
            ));
        }
    }

    fn system_body(&self, out: &mut String) {
        out.push_str(&format!(
            "<collected_sec>{}</collected_sec><collected_usec>0</collected_usec><status>0</status><status_hint>0</status_hint><monitor>1</monitor><monitormode>0</monitormode><pendingaction>0</pendingaction>",
            self.now
        ));
    }

    /// The groups and their members as 5.2.5 lists them: it puts each new group and each
    /// new member first, so both come out in the reverse of the order read; as the
    /// reader reads an include's matches last first, the members are in include order.
    fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut g: Vec<(String, Vec<String>)> = Vec::new();
        for ch in self.control.checks.iter().rev() {
            for name in &ch.groups {
                match g.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
                    Some((_, v)) => v.push(ch.name.clone()),
                    None => g.push((name.clone(), vec![ch.name.clone()])),
                }
            }
        }
        // A group comes out where it was first read (the last in `g`'s order).
        let firsts: Vec<String> = self
            .control
            .checks
            .iter()
            .flat_map(|ch| ch.groups.iter())
            .fold(Vec::new(), |mut seen: Vec<String>, n| {
                if !seen.iter().any(|s| s.eq_ignore_ascii_case(n)) {
                    seen.push(n.clone());
                }
                seen
            });
        g.sort_by_key(|(n, _)| {
            std::cmp::Reverse(firsts.iter().position(|f| f.eq_ignore_ascii_case(n)))
        });
        g
    }

    /// `/_status2?format=xml`: 5.2.5's layout (`<service name=…>`, `<servicegroups>`),
    /// what the BOSH agent reads.
    pub fn xml_525(&self) -> String {
        let mut out = format!(
            "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><monit id=\"{}\" incarnation=\"{}\" version=\"5.2.5\"><server>",
            self.id, self.incarnation
        );
        // Room for every service at once (about 600 bytes each): no regrowth.
        out.reserve(1024 + 640 * self.services.len());
        let system = system_name();
        self.server(&mut out, &system);
        out.push_str("</server>");
        out.push_str(crate::runtime::resource::platform_xml());
        out.push_str("<services>");
        for (i, s) in self.services.iter().enumerate() {
            out.push_str(&format!(
                "<service name=\"{}\"><type>3</type>",
                xml_escape(&s.name)
            ));
            self.service_body(i, s, &mut out);
            out.push_str("</service>");
        }
        out.push_str(&format!(
            "<service name=\"{}\"><type>5</type>",
            xml_escape(&system)
        ));
        self.system_body(&mut out);
        out.push_str("</service></services><servicegroups>");
        for (g, members) in self.groups() {
            out.push_str(&format!("<servicegroup name=\"{}\">", xml_escape(&g)));
            for m in members {
                out.push_str(&format!("<service>{}</service>", xml_escape(&m)));
            }
            out.push_str("</servicegroup>");
        }
        out.push_str("</servicegroups></monit>");
        out
    }

    /// `/_status?format=xml`: 5.33's layout (`<server>` with id and incarnation, a
    /// `<name>` element per service, no groups).
    pub fn xml_533(&self) -> String {
        let mut out = format!(
            "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><monit><server><id>{}</id><incarnation>{}</incarnation><version>5.33.0</version>",
            self.id, self.incarnation
        );
        // Room for every service at once (about 600 bytes each): no regrowth.
        out.reserve(1024 + 640 * self.services.len());
        let system = system_name();
        self.server(&mut out, &system);
        out.push_str("</server>");
        for (i, s) in self.services.iter().enumerate() {
            out.push_str(&format!(
                "<service type=\"3\"><name>{}</name>",
                xml_escape(&s.name)
            ));
            self.service_body(i, s, &mut out);
            out.push_str("</service>");
        }
        out.push_str(&format!(
            "<service type=\"5\"><name>{}</name>",
            xml_escape(&system)
        ));
        self.system_body(&mut out);
        out.push_str("</service></monit>");
        out
    }

    /// monit's web page: a table of services with buttons that post the actions, each
    /// form carrying the security token.
    pub fn html(&self, only: Option<&str>, token: &str) -> String {
        let mut out = String::from(
            "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>tend-monit</title></head><body><h1>tend-monit</h1><table border=1><tr><th>Process</th><th>Status</th><th>Actions</th></tr>",
        );
        for s in self
            .services
            .iter()
            .filter(|s| only.is_none_or(|o| o == s.name))
        {
            let n = xml_escape(&s.name);
            out.push_str(&format!(
                "<tr><td><a href=\"/{n}\">{n}</a></td><td class=\"state\">{}</td><td>",
                s.state.word_525()
            ));
            for a in ["start", "stop", "restart", "monitor", "unmonitor"] {
                out.push_str(&format!(
                    "<form method=\"post\" action=\"/{n}\" style=\"display:inline\"><input type=\"hidden\" name=\"securitytoken\" value=\"{token}\"><input type=\"hidden\" name=\"action\" value=\"{a}\"><button type=\"submit\" id=\"{a}-{n}\">{a}</button></form>"
                ));
            }
            out.push_str("</td></tr>");
        }
        out.push_str("</table></body></html>");
        out
    }
}

/// A 5.33 table cell: `width` columns, a longer text cut to `width - 5` and `...`.
fn cell(text: &str, width: usize) -> String {
    let t: String = if text.chars().count() > width - 2 {
        text.chars().take(width - 5).chain("...".chars()).collect()
    } else {
        text.to_string()
    };
    format!("{t:<width$}")
}

/// `monit summary` in 5.33's batch layout (what it prints when stdout is no terminal):
/// the daemon line, a header, the system row, then one row per process check.
pub fn summary_533(services: &[Service], daemon_uptime: u64, with_system: bool) -> String {
    let mut out = format!(
        "Monit 5.33.0 uptime: {}\n",
        uptime_525(daemon_uptime).trim_end()
    );
    let row = |name: &str, status: &str, kind: &str| {
        format!(
            " {}{}{}\n",
            cell(name, 33),
            cell(status, 28),
            cell(kind, 14)
        )
    };
    out += &row("Service Name", "Status", "Type");
    if with_system {
        out += &row(system_name().trim_start_matches("system_"), "OK", "System");
    }
    for s in services {
        out += &row(&s.name, s.state.word_533(), "Process");
    }
    out
}
