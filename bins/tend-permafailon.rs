//! tend-permafailon — exit 125 (permanent failure) if the service died too often, else exec, as s6-permafailon. See man/man8/tend-permafailon.8.
#![forbid(unsafe_code)]

use std::path::Path;
use tend_cli::{Program, code, parse_uint};
use tend_client::permafailon::{self, Causes};
use tend_proto::{Tai64n, death_tally};

const PROG: Program = Program::new(
    "tend-permafailon",
    "tend-permafailon seconds deathcount statuslist prog...",
);

/// s6-supervise's exit code for a finish script that means "do not restart".
const PERMANENT_FAILURE: i32 = 125;

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "");
    let [secs, count, list, prog @ ..] = &p.operands[..] else {
        PROG.usage_exit()
    };
    let secs: u64 = parse_uint(secs).unwrap_or_else(|| PROG.usage_exit());
    let count: usize = parse_uint(count)
        .filter(|&n| n > 0)
        .unwrap_or_else(|| PROG.usage_exit());
    if prog.is_empty() {
        PROG.usage_exit()
    }
    let causes =
        Causes::parse(&list.to_string_lossy()).unwrap_or_else(|e| PROG.fatal(code::USAGE, e));
    // Run from ./finish: the current directory is the service directory.
    match death_tally::read(Path::new(".")) {
        Ok(t) => {
            if let Some(d) = permafailon::triggered(&t.deaths, Tai64n::now(), secs, count, &causes)
            {
                PROG.line(
                    "info",
                    format_args!(
                        "PERMANENT FAILURE triggered after {count} events involving {} in the last {secs} seconds",
                        permafailon::cause(&d)
                    ),
                );
                std::process::exit(PERMANENT_FAILURE)
            }
        }
        Err(e) => PROG.warn(format_args!(
            "unable to read supervise/death_tally: {}",
            e.errno.desc()
        )),
    }
    let e = tend_env::exec(prog, &tend_env::sys::exec::current_env());
    PROG.fatal(e.code(), e)
}
