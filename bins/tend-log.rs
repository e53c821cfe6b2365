//! tend-log — read lines on stdin, select, timestamp and write them into rotated logdirs, as s6-log. See man/man8/tend-log.8.
#![forbid(unsafe_code)]

use tend_cli::{Program, code, parse_uint};
use tend_log::Options;

const PROG: Program = Program::new(
    "tend-log",
    "tend-log [ -d notif ] [ -q | -v ] [ -b ] [ -p ] [ -l linelimit ] [ -- ] script",
);

fn options() -> (Options, Vec<std::ffi::OsString>) {
    let p = PROG.parse(tend_cli::args(), "d:qvbpl:");
    let mut o = Options::default();
    for (c, v) in &p.opts {
        match c {
            'd' => {
                let fd: i32 = v
                    .as_deref()
                    .and_then(parse_uint)
                    .unwrap_or_else(|| PROG.usage_exit());
                if fd < 3 {
                    PROG.fatal(code::USAGE, "notification fd must be 3 or more");
                }
                o.notify = Some(fd);
            }
            'q' => o.verbosity = 0,
            'v' => o.verbosity = 2,
            'b' => o.blocking = true,
            'p' => o.protect = true,
            'l' => {
                o.linelimit = v
                    .as_deref()
                    .and_then(parse_uint)
                    .unwrap_or_else(|| PROG.usage_exit())
            }
            _ => PROG.usage_exit(),
        }
    }
    if p.operands.is_empty() {
        PROG.usage_exit();
    }
    (o, p.operands)
}

pub fn main() {
    let (opts, script) = options();
    match tend_log::run(&opts, &script, &PROG) {
        Ok(()) => std::process::exit(code::OK),
        Err(e) => PROG.fatal(e.code(), e),
    }
}
