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

/// Run as `runsvdir` (packaging/install.sh -r): runit's command line, `runsvdir [-P] dir
/// [log]`. Only `-P` is an option there (anything else is the directory, as runit reads it);
/// runit's `log` argument (errors written into the process title) has no tend equivalent,
/// so it is said once, not dropped silently.
fn runsvdir_options(args: Vec<std::ffi::OsString>) -> Options {
    let mut args = args.into_iter().peekable();
    let new_session = args.next_if(|a| a == "-P").is_some();
    let (Some(dir), log) = (args.next(), args.next()) else {
        PROG.line("usage", RUNSVDIR_USAGE);
        std::process::exit(code::USAGE)
    };
    if args.next().is_some() {
        PROG.line("usage", RUNSVDIR_USAGE);
        std::process::exit(code::USAGE)
    }
    if log.is_some() {
        PROG.warn("runsvdir's log argument is not kept: errors go to stderr");
    }
    Options {
        dir: Some(dir),
        new_session,
        runsvdir: true,
        // runsvdir looks at its directory every 5 seconds.
        rescan: Some(Duration::from_secs(5)),
        ..Options::default()
    }
}

const RUNSVDIR_USAGE: &str = "runsvdir [ -P ] dir [ log ]";

fn options() -> Options {
    let (argv0, args) = tend_cli::argv0_and_args();
    let base = std::path::Path::new(&argv0).file_name();
    if base.is_some_and(|b| b == "runsvdir") {
        return runsvdir_options(args.collect());
    }
    let p = PROG.parse(expand_long(args, SPEC, LONG), SPEC);
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
        new_session: false,
        runsvdir: false,
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
        Ok(Ending::Exit(code)) => std::process::exit(code),
        Ok(Ending::Crash(e)) => {
            PROG.warn(e);
            crash()
        }
    }
}
