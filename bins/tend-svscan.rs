//! tend-svscan — run one tend-supervise per service directory of a scan directory. See man/man8/tend-svscan.8.
#![forbid(unsafe_code)]

use std::time::Duration;
use tend_cli::{Program, code, expand_long, parse_uint};
use tend_proto::status::Layout;
use tend_scan::scanner::{
    CRASH, DEFAULT_MAX, DEFAULT_NAME_MAX, FINISH, MAX_MAX, MIN_MAX, NAME_MAX_MAX, NAME_MAX_MIN,
    SERVICES_MAX, SERVICES_MIN,
};
use tend_scan::{Ending, Options, exec_script};
use tend_sys::diagnose::describe;

const USAGE: &str = "tend-svscan [ -C services_max ] [ -L name_max ] [ -t timeout ] [ -d notif ] [ -X consoleholder ] [ -c max ] [ -S 35|43 ] [ scandir ]";
const PROG: Program = Program::new("tend-svscan", USAGE);
const SPEC: &str = "C:L:d:X:c:t:S:";
/// s6-svscan 2.15's long options, and tend's `--status-size`.
const LONG: &[(&str, char)] = &[
    ("services-max", 'C'),
    ("name-max", 'L'),
    ("timeout", 't'),
    ("notification-fd", 'd'),
    ("console-holder", 'X'),
    ("status-size", 'S'),
];

fn options() -> Options {
    let p = PROG.parse(expand_long(tend_cli::args(), SPEC, LONG), SPEC);
    let num = |c: char| -> Option<usize> {
        p.value(c)
            .map(|v| parse_uint(v).unwrap_or_else(|| PROG.usage_exit()))
    };
    // -C (2.12+) wins over 2.11's -c; each clamped as its s6 clamps it.
    let max = match (num('C'), num('c')) {
        (Some(n), _) => n.clamp(SERVICES_MIN, SERVICES_MAX),
        (None, Some(n)) => n.clamp(MIN_MAX, MAX_MAX),
        (None, None) => DEFAULT_MAX,
    };
    let status_size = p.value('S').map(|v| {
        Layout::parse(v.as_encoded_bytes())
            .unwrap_or_else(|| PROG.fatal(code::USAGE, "the status size must be 35 or 43"))
    });
    Options {
        notify: num('d').map(|n| i32::try_from(n).unwrap_or(i32::MAX)),
        console: num('X').map(|n| i32::try_from(n).unwrap_or(i32::MAX)),
        max,
        name_max: num('L').map_or(DEFAULT_NAME_MAX, |n| n.clamp(NAME_MAX_MIN, NAME_MAX_MAX)),
        status_size,
        rescan: num('t')
            .filter(|&t| t > 0)
            .map(|t| Duration::from_millis(t as u64)),
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
