//! tend-svlisten1 — subscribe to a service's events, run a program, wait for a state, as s6-svlisten1. See man/man8/tend-svlisten1.8.
#![forbid(unsafe_code)]

use std::path::Path;
use std::time::{Duration, Instant};
use tend_cli::{Program, code, parse_uint, shown};
use tend_client::{Outcome, SvlistenError, Target};

const PROG: Program = Program::new(
    "tend-svlisten1",
    "tend-svlisten1 [ -U | -u | -d | -D | -r | -R ] [ -t timeout ] servicedir prog...",
);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "UudDrRt:");
    let (mut target, mut timeout) = (Target::UP, 0u32);
    for (c, v) in &p.opts {
        match (c, v) {
            ('t', Some(v)) => timeout = parse_uint(v).unwrap_or_else(|| PROG.usage_exit()),
            (c, _) => target = Target::from_letter(*c as u8).unwrap_or_else(|| PROG.usage_exit()),
        }
    }
    let [dir, prog @ ..] = &p.operands[..] else {
        PROG.usage_exit()
    };
    if prog.is_empty() {
        PROG.usage_exit()
    }
    let deadline = (timeout > 0).then(|| Instant::now() + Duration::from_millis(timeout.into()));
    match tend_client::svlisten(&[Path::new(dir)], prog, target, false, deadline) {
        Ok(Outcome::Reached { failures: 0 }) => std::process::exit(code::OK),
        Ok(Outcome::Reached { .. }) => PROG.fatal(
            code::NO,
            format_args!("{} failed permanently or its supervisor died", shown(dir)),
        ),
        Ok(Outcome::TimedOut) => PROG.fatal(code::TIMEOUT, "timed out"),
        Err(SvlistenError::Watch(e)) => PROG.fatal(e.error.code(), e.error.describe(&shown(dir))),
        Err(SvlistenError::Spawn(name, e)) => PROG.fatal(
            code::SYSTEM,
            format_args!("unable to spawn {}: {}", shown(&name), e.desc()),
        ),
    }
}
