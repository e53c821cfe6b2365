//! tend-svc — send commands to a service's supervisor, and optionally wait for a state. See man/man8/tend-svc.8.
#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tend_cli::{Program, code, parse_uint, shown};
use tend_client::{SvcOutcome, Target};

const USAGE: &str = "tend-svc [ -wu | -wU | -wd | -wD | -wr | -wR ] [ -T timeout ] [ -abqhkti12pcyroduDUxOQ ] [ -s scandir ] servicedir";
const PROG: Program = Program::new("tend-svc", USAGE);
/// s6-svc's limit: 62 letters in one call.
const MAX_LETTERS: usize = 62;

struct Options {
    letters: Vec<u8>,
    wait: Option<Target>,
    timeout_ms: u32,
    servicedir: OsString,
}

fn options(args: impl IntoIterator<Item = OsString>) -> Options {
    let parsed = PROG.parse(args, "abqhkti12pcyroduDUxOQT:w:s:");
    let mut o = Options {
        letters: Vec::new(),
        wait: None,
        timeout_ms: 0,
        servicedir: OsString::new(),
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
    let mut operands = parsed.operands.into_iter();
    o.servicedir = operands.next().unwrap_or_else(|| PROG.usage_exit());
    if operands.next().is_some() {
        PROG.warn("ignoring extra arguments");
    }
    if o.servicedir.is_empty() {
        PROG.fatal(code::USAGE, "invalid service path");
    }
    let scandir = tend_client::scandir_option(scandir.as_deref());
    o.servicedir = tend_client::service_path(&o.servicedir, scandir.as_deref());
    o
}

pub fn main() {
    let o = options(tend_cli::args());
    let start = Instant::now();
    let dir = PathBuf::from(&o.servicedir);
    let name = shown(&o.servicedir);
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
            Err(e) => PROG.fatal(
                code::SYSTEM,
                format_args!("unable to access {name}/notification-fd: {}", e.desc()),
            ),
        }
    }
    let deadline = (o.timeout_ms > 0).then(|| start + Duration::from_millis(o.timeout_ms.into()));
    match tend_client::svc(&dir, &o.letters, wait, deadline) {
        Ok(SvcOutcome::Sent | SvcOutcome::Reached) => std::process::exit(code::OK),
        Ok(SvcOutcome::Failed) => PROG.fatal(
            code::NO,
            format_args!("{name} failed permanently or its supervisor died"),
        ),
        Ok(SvcOutcome::TimedOut) => PROG.fatal(code::TIMEOUT, "timed out"),
        Err(e) => PROG.fatal(e.code(), e.describe(&name)),
    }
}
