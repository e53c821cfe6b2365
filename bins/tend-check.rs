//! tend-check — probe a service (exec, TCP, HTTP) for readiness or liveness. See man/man8/tend-check.8.
#![forbid(unsafe_code)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tend_check::probe::{self, HttpProbe, Probe};
use tend_check::readiness::{self, Ended, Readiness, Role};
use tend_check::watcher::{self, Liveness};
use tend_cli::{Program, code, expand_long, parse_duration_ms, parse_uint};

const USAGE: &str = "tend-check [ -d ] [ -3 fd ] [ -s sleep ] [ -T timeout ] [ -t timeout ] [ -w wait ] [ -n tries ] [ -L -S servicedir ] [ -i interval ] [ -f failures ] [ -m max-restarts ] [ -W window ] [ -c command | -p host:port | -u url ] [ -C status ] [ -b text ] [ -h header ] [ prog... ]";
const PROG: Program = Program::new("tend-check", USAGE);
const SPEC: &str = "d3:s:T:t:w:n:LS:i:f:m:W:c:p:u:C:b:h:";
const LONG: &[(&str, char)] = &[
    ("tcp", 'p'),
    ("http", 'u'),
    ("status", 'C'),
    ("body", 'b'),
    ("header", 'h'),
    ("interval", 'i'),
    ("failures", 'f'),
    ("max-restarts", 'm'),
    ("window", 'W'),
];

fn duration(p: &tend_cli::Parsed, c: char, default: Duration) -> Duration {
    match p.value(c) {
        None => default,
        Some(v) => Duration::from_millis(parse_duration_ms(v).unwrap_or_else(|| PROG.usage_exit())),
    }
}

fn text(v: &OsStr) -> &str {
    v.to_str().unwrap_or_else(|| PROG.usage_exit())
}

fn bad(e: probe::BadValue, v: &OsStr) -> ! {
    PROG.fatal(e.code(), e.describe(&tend_cli::shown(v)))
}

fn the_probe(p: &tend_cli::Parsed) -> Probe {
    let kinds = ['c', 'p', 'u'].iter().filter(|&&c| p.has(c)).count();
    if kinds > 1 || (!p.has('u') && (p.has('C') || p.has('b') || p.has('h'))) {
        PROG.usage_exit()
    }
    if let Some(v) = p.value('c') {
        return Probe::Exec(text(v).to_string());
    }
    if let Some(v) = p.value('p') {
        return Probe::Tcp(probe::parse_target(text(v)).unwrap_or_else(|e| bad(e, v)));
    }
    if let Some(v) = p.value('u') {
        let (target, path) = probe::parse_url(text(v)).unwrap_or_else(|e| bad(e, v));
        let status = p.value('C').map_or((200, 299), |s| {
            probe::parse_status_range(text(s)).unwrap_or_else(|e| bad(e, s))
        });
        let headers = p
            .opts
            .iter()
            .filter(|(c, _)| *c == 'h')
            .filter_map(|(_, v)| v.as_deref())
            .map(|h| probe::parse_header(text(h)).unwrap_or_else(|e| bad(e, h)))
            .collect();
        let body = p.value('b').map(|b| {
            use std::os::unix::ffi::OsStrExt;
            b.as_bytes().to_vec()
        });
        return Probe::Http(HttpProbe {
            target,
            path,
            status,
            body,
            headers,
        });
    }
    // s6-notifyoncheck's default.
    Probe::Exec("exec ./data/check".into())
}

fn count(p: &tend_cli::Parsed, c: char, default: u32) -> u32 {
    p.value(c).map_or(default, |v| {
        parse_uint(v).unwrap_or_else(|| PROG.usage_exit())
    })
}

pub fn main() {
    let args = expand_long(tend_cli::args(), SPEC, LONG);
    let p = PROG.parse(args, SPEC);
    let probe = the_probe(&p);
    let attempt_timeout = match duration(&p, 't', Duration::ZERO) {
        d if d.is_zero() => Duration::from_secs(2),
        d => d,
    };
    match (p.has('L'), p.operands.is_empty()) {
        (true, true) => liveness(&p, probe, attempt_timeout),
        (false, true) if !p.has('S') => one_attempt(&probe, attempt_timeout),
        (false, false) if !p.has('S') => readiness(&p, probe, attempt_timeout),
        _ => PROG.usage_exit(),
    }
}

/// Watch a service for ever (`-L`).
fn liveness(p: &tend_cli::Parsed, probe: Probe, attempt_timeout: Duration) -> ! {
    let Some(dir) = p.value('S') else {
        PROG.usage_exit()
    };
    let l = Liveness {
        probe,
        servicedir: PathBuf::from(dir),
        interval: match duration(p, 'i', Duration::from_secs(10)) {
            d if d.is_zero() => PROG.usage_exit(),
            d => d,
        },
        attempt_timeout,
        failures: count(p, 'f', 3).max(1),
        max_restarts: count(p, 'm', 10).min(100_000),
        window: duration(p, 'W', Duration::from_secs(3600)),
        // -T, the readiness prober's limit, is the watcher's grace for a service that
        // announces readiness (30 s unless given; 0: never judged while not ready).
        grace: duration(p, 'T', Duration::from_secs(30)),
    };
    match watcher::run(&l, &PROG) {
        Err(e) => PROG.fatal(e.code(), e),
        Ok(never) => match never {},
    }
}

/// One attempt, as a script's or a HEALTHCHECK's test.
fn one_attempt(probe: &Probe, attempt_timeout: Duration) -> ! {
    let mut buf = Vec::new();
    match probe::attempt(probe, attempt_timeout, &[], &mut buf) {
        Ok(()) => std::process::exit(code::OK),
        Err(why) => PROG.fatal(code::NO, format_args!("probe failed: {why}")),
    }
}

/// Fork the prober and exec into prog (s6-notifyoncheck's shape).
fn readiness(p: &tend_cli::Parsed, probe: Probe, attempt_timeout: Duration) -> ! {
    let given_fd = p
        .value('3')
        .map(|v| parse_uint::<i32>(v).unwrap_or_else(|| PROG.usage_exit()));
    let mut r = Readiness {
        probe,
        notify_fd: -1,
        double_fork: p.has('d'),
        initial_sleep: duration(p, 's', Duration::ZERO),
        global_timeout: Some(duration(p, 'T', Duration::ZERO)).filter(|d| !d.is_zero()),
        attempt_timeout,
        wait: duration(p, 'w', Duration::from_secs(1)),
        tries: count(p, 'n', 7),
    };
    // Read only once every option is known good, so usage errors come first.
    r.notify_fd = match given_fd {
        Some(fd) => fd,
        None => tend_env::notify::fd_from_file(Path::new("."))
            .unwrap_or_else(|e| PROG.fatal(e.code(), e)),
    };
    match readiness::split(r) {
        Ok(Role::Daemon(gate)) => {
            let e = tend_env::exec(&p.operands, &tend_sys::exec::current_env());
            gate.failed();
            PROG.fatal(e.code(), e)
        }
        Ok(Role::Intermediate) => tend_sys::process::exit_now(code::OK),
        Ok(Role::Prober(prober)) => match prober.run() {
            Ok(Ended::Ready | Ended::DaemonDied) => tend_sys::process::exit_now(code::OK),
            Ok(Ended::GaveUp(why)) => {
                PROG.warn(format_args!("giving up on readiness: {why}"));
                tend_sys::process::exit_now(code::NO)
            }
            Err(e) => {
                PROG.warn(&e);
                tend_sys::process::exit_now(e.code())
            }
        },
        Err(e) => PROG.fatal(e.code(), e),
    }
}
