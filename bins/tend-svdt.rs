//! tend-svdt — print a service's death tally, as s6-svdt. See man/man8/tend-svdt.8.
#![forbid(unsafe_code)]

use std::io::Write;
use std::path::Path;
use tend_cli::{Program, code, parse_uint};
use tend_proto::death_tally;

const PROG: Program = Program::new(
    "tend-svdt",
    "tend-svdt [ -S | -s ] [ -n maxlines ] servicedir",
);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "Ssn:");
    let (mut numeric, mut max) = (false, None);
    for (c, v) in &p.opts {
        match c {
            'S' => numeric = false,
            's' => numeric = true,
            'n' => {
                max = Some(
                    v.as_deref()
                        .and_then(parse_uint)
                        .unwrap_or_else(|| PROG.usage_exit()),
                )
            }
            _ => PROG.usage_exit(),
        }
    }
    let [dir] = &p.operands[..] else {
        PROG.usage_exit()
    };
    let dir = Path::new(dir);
    let tally = death_tally::read(dir).unwrap_or_else(|e| PROG.fatal(e.code(), e));
    if tally.trailing != 0 {
        PROG.warn(format_args!(
            "{}/supervise/death_tally ends with {} bytes that are not a whole record: ignored",
            dir.display(),
            tally.trailing
        ));
    }
    let out = tend_client::dtally::lines(&tally.deaths, numeric, max);
    if let Err(e) = std::io::stdout().write_all(out.as_bytes()) {
        PROG.fatal(
            code::SYSTEM,
            format_args!(
                "unable to write to stdout: {}",
                tend_sys::error::io_reason(&e)
            ),
        )
    }
}
