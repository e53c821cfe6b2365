//! tend-svc — send commands to a service's supervisor, and optionally wait for a state. See man/man8/tend-svc.8.
#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tend_cli::{Program, code, parse_uint, shown};
use tend_client::{SvcOutcome, Target};

const USAGE: &str = "tend-svc [ -wu | -wU | -wd | -wD | -wr | -wR ] [ -T timeout ] [ -abqhkti12pcyrlPCKoduDUxOQ ] [ -s scandir ] servicedir...";
const PROG: Program = Program::new("tend-svc", USAGE);
/// s6-svc's limit: 62 letters in one call.
const MAX_LETTERS: usize = 62;

struct Options {
    letters: Vec<u8>,
    wait: Option<Target>,
    timeout_ms: u32,
    servicedirs: Vec<OsString>,
}

fn options(args: impl IntoIterator<Item = OsString>) -> Options {
    // The command letters are proto's, once (tests/it/versions.rs holds the usage line to
    // them).
    let spec = format!("{}T:w:s:", tend_proto::control::LETTERS);
    let parsed = PROG.parse(args, &spec);
    let mut o = Options {
        letters: Vec::new(),
        wait: None,
        timeout_ms: 0,
        servicedirs: Vec::new(),
    };
    let mut scandir = None;
    for (opt, value) in &parsed.opts {
        match (opt, value) {
            ('s', v) => scandir = v.clone(),
            ('T', Some(v)) => o.timeout_ms = parse_uint(v).unwrap_or_else(|| PROG.usage_exit()),
            ('w', Some(v)) => {
                let first = v.as_encoded_bytes().first().copied().unwrap_or(0);
                o.wait = Some(Target::from_letter(first).unwrap_or_else(|| PROG.usage_exit()));
            }
            (c, _) => {
                if o.letters.len() >= MAX_LETTERS {
                    PROG.fatal(code::USAGE, "too many commands");
                }
                o.letters.push(*c as u8);
            }
        }
    }
    if parsed.operands.is_empty() {
        PROG.usage_exit();
    }
    if parsed.operands.iter().any(|d| d.is_empty()) {
        PROG.fatal(code::USAGE, "invalid service path");
    }
    let scandir = tend_client::scandir_option(scandir.as_deref());
    o.servicedirs = parsed
        .operands
        .iter()
        .map(|d| tend_client::service_path(d, scandir.as_deref()))
        .collect();
    o
}

/// How one service directory's command ended.
enum Ended {
    Done,
    /// Exit code and message.
    Failed(i32, String),
}

/// Send the letters to one service directory and wait for `o.wait`, by `deadline`.
fn control_one(o: &Options, servicedir: &OsString, deadline: Option<Instant>) -> Ended {
    let dir = PathBuf::from(servicedir);
    let name = shown(servicedir);
    let mut wait = o.wait;
    if let Some(t) = wait.filter(|t| t.ready) {
        match tend_client::notifies_readiness(&dir) {
            Ok(true) => {}
            Ok(false) => {
                PROG.warn(format_args!(
                    "{name}/notification-fd not present - ignoring request for readiness notification"
                ));
                wait = Some(t.without_ready());
            }
            Err(e) => {
                return Ended::Failed(
                    code::SYSTEM,
                    format!("unable to access {name}/notification-fd: {}", e.desc()),
                );
            }
        }
    }
    match tend_client::svc(&dir, &o.letters, wait, deadline) {
        Ok(SvcOutcome::Sent | SvcOutcome::Reached) => Ended::Done,
        Ok(SvcOutcome::Failed) => Ended::Failed(
            code::NO,
            format!("{name} failed permanently or its supervisor died"),
        ),
        Ok(SvcOutcome::TimedOut) => Ended::Failed(code::TIMEOUT, "timed out".into()),
        Err(e) => Ended::Failed(e.code(), e.describe(&name).to_string()),
    }
}

pub fn main() {
    let o = options(tend_cli::args());
    let start = Instant::now();
    let deadline = (o.timeout_ms > 0).then(|| start + Duration::from_millis(o.timeout_ms.into()));
    // One directory: its failure is fatal, as s6-svc 2.11 says it. Several (s6 2.14): each
    // is done in turn, a failure is a warning, and the exit code is the last failure's.
    if let [only] = o.servicedirs.as_slice() {
        match control_one(&o, only, deadline) {
            Ended::Done => std::process::exit(code::OK),
            Ended::Failed(c, msg) => PROG.fatal(c, msg),
        }
    }
    let mut exit = code::OK;
    for dir in &o.servicedirs {
        if let Ended::Failed(c, msg) = control_one(&o, dir, deadline) {
            PROG.warn(msg);
            exit = c;
        }
    }
    std::process::exit(exit)
}
