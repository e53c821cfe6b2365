//! tend-svlisten — subscribe to services' events, run a program, wait for a state, as s6-svlisten. See man/man8/tend-svlisten.8.
#![forbid(unsafe_code)]

use std::time::{Duration, Instant};
use tend_cli::{Program, code, parse_uint, shown};
use tend_client::{Outcome, SvlistenError, Target};

const PROG: Program = Program::new(
    "tend-svlisten",
    "tend-svlisten [ -U | -u | -d | -D | -r | -R ] [ -a | -o ] [ -t timeout ] servicedir... \"\" prog...",
);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "UudDrRaot:");
    let (mut target, mut any, mut timeout) = (Target::UP, false, 0u32);
    for (c, v) in &p.opts {
        match (c, v) {
            ('a', _) => any = false,
            ('o', _) => any = true,
            ('t', Some(v)) => timeout = parse_uint(v).unwrap_or_else(|| PROG.usage_exit()),
            (c, _) => target = Target::from_letter(*c as u8).unwrap_or_else(|| PROG.usage_exit()),
        }
    }
    if p.operands.is_empty() {
        PROG.usage_exit()
    }
    let Some((dirs, prog)) = tend_client::split_block(&p.operands) else {
        PROG.fatal(code::USAGE, "unterminated servicedir block")
    };
    if dirs.is_empty() || prog.is_empty() {
        PROG.usage_exit()
    }
    // A restart is waited for on every service (s6: -r and -R imply -a).
    let any = any && !target.restart;
    let deadline = (timeout > 0).then(|| Instant::now() + Duration::from_millis(timeout.into()));
    match tend_client::svlisten(&dirs, prog, target, any, deadline) {
        Ok(Outcome::Reached { failures: 0 }) => std::process::exit(code::OK),
        // The number of failed services, as s6-svlisten 2.11 (below 99: never "timed out").
        Ok(Outcome::Reached { failures }) => PROG.fatal(
            failures.min(98) as i32,
            "some services reported permanent failure or their supervisor died",
        ),
        Ok(Outcome::TimedOut) => PROG.fatal(code::TIMEOUT, "timed out"),
        Err(SvlistenError::Watch(e)) => {
            PROG.fatal(e.error.code(), e.error.describe(&shown(&dirs[e.index])))
        }
        Err(SvlistenError::Spawn(name, e)) => PROG.fatal(
            code::SYSTEM,
            format_args!("unable to spawn {}: {}", shown(&name), e.desc()),
        ),
    }
}
