//! tend-svwait — wait until services are up, ready, down or restarted. See man/man8/tend-svwait.8.
#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tend_cli::{Program, code, parse_uint, shown};
use tend_client::{Outcome, SvwaitError, Target};

const USAGE: &str = "tend-svwait [ -U | -u | -d | -D | -r | -R ] [ -a | -o ] [ -t timeout ] [ -s scandir ] servicedir...";
const PROG: Program = Program::new("tend-svwait", USAGE);

struct Options {
    target: Target,
    any: bool,
    timeout_ms: u32,
    servicedirs: Vec<OsString>,
}

fn options(args: impl IntoIterator<Item = OsString>) -> Options {
    let parsed = PROG.parse(args, "UudDrRaot:s:");
    let mut o = Options {
        target: Target::UP,
        any: false,
        timeout_ms: 0,
        servicedirs: parsed.operands,
    };
    let mut scandir = None;
    for (opt, value) in &parsed.opts {
        match (opt, value) {
            ('s', v) => scandir = v.clone(),
            ('a', _) => o.any = false,
            ('o', _) => o.any = true,
            ('t', Some(v)) => o.timeout_ms = parse_uint(v).unwrap_or_else(|| PROG.usage_exit()),
            (c, _) => o.target = Target::from_letter(*c as u8).unwrap_or_else(|| PROG.usage_exit()),
        }
    }
    if o.servicedirs.is_empty() {
        PROG.usage_exit();
    }
    let scandir = tend_client::scandir_option(scandir.as_deref());
    for d in &mut o.servicedirs {
        *d = tend_client::service_path(d, scandir.as_deref());
    }
    o
}

pub fn main() {
    let o = options(tend_cli::args());
    let deadline =
        (o.timeout_ms > 0).then(|| Instant::now() + Duration::from_millis(o.timeout_ms.into()));
    let dirs: Vec<PathBuf> = o.servicedirs.iter().map(PathBuf::from).collect();
    match tend_client::svwait(&dirs, o.target, o.any, deadline) {
        Ok(Outcome::Reached { failures: 0 }) => std::process::exit(code::OK),
        // The exit code is the number of failed services, as s6-svwait 2.11's; kept
        // below 99 so it never reads as "timed out".
        Ok(Outcome::Reached { failures }) => PROG.fatal(
            failures.min(98) as i32,
            "some services reported permanent failure or their supervisor died",
        ),
        Ok(Outcome::TimedOut) => PROG.fatal(code::TIMEOUT, "timed out"),
        Err(SvwaitError { index, error }) => {
            PROG.fatal(error.code(), error.describe(&shown(&o.servicedirs[index])))
        }
    }
}
