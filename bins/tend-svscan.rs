//! tend-svscan — run one tend-supervise per service directory of a scan directory. See man/man8/tend-svscan.8.
#![forbid(unsafe_code)]

use std::time::Duration;
use tend_cli::{Program, code, parse_uint};
use tend_scan::scanner::{CRASH, DEFAULT_MAX, FINISH};
use tend_scan::{Ending, Options, exec_script};
use tend_sys::diagnose::describe;

const USAGE: &str =
    "tend-svscan [ -d notif ] [ -X consoleholder ] [ -c max ] [ -t rescan ] [ scandir ]";
const PROG: Program = Program::new("tend-svscan", USAGE);

fn options() -> Options {
    let p = PROG.parse(tend_cli::args(), "d:X:c:t:");
    let num = |c: char| -> Option<u64> {
        p.value(c)
            .map(|v| parse_uint(v).unwrap_or_else(|| PROG.usage_exit()))
    };
    Options {
        notify: num('d').map(|n| i32::try_from(n).unwrap_or(i32::MAX)),
        console: num('X').map(|n| i32::try_from(n).unwrap_or(i32::MAX)),
        max: num('c').map_or(DEFAULT_MAX, |n| usize::try_from(n).unwrap_or(usize::MAX)),
        rescan: num('t').filter(|&t| t > 0).map(Duration::from_millis),
        dir: p.operands.into_iter().next(),
    }
}

/// Exec `.s6-svscan/crash`; exit 111 if even that fails.
fn crash() -> ! {
    PROG.warn(format_args!("executing into {CRASH}"));
    let e = exec_script(CRASH);
    PROG.fatal(
        code::SYSTEM,
        format_args!("unable to exec {CRASH}: {}", describe(CRASH.as_ref(), e)),
    )
}

pub fn main() {
    let opts = options();
    match tend_scan::run(&opts, &PROG) {
        Err(e) => PROG.fatal(e.code(), e),
        Ok(Ending::Finish) => match exec_script(FINISH) {
            nix::errno::Errno::ENOENT
                if std::path::Path::new(FINISH).symlink_metadata().is_err() =>
            {
                std::process::exit(code::OK)
            }
            e => {
                let why = describe(FINISH.as_ref(), e);
                PROG.warn(format_args!("unable to exec {FINISH}: {why}"));
                crash()
            }
        },
        Ok(Ending::Crash(e)) => {
            PROG.warn(e);
            crash()
        }
    }
}
