//! tend-tai64nlocal — render leading TAI64N labels as local (or UTC) dates, as s6-tai64nlocal. See man/man8/tend-tai64nlocal.8.
#![forbid(unsafe_code)]

use tend_cli::{Program, code};

const PROG: Program = Program::new("tend-tai64nlocal", "tend-tai64nlocal [ -g ]");

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "g");
    if !p.operands.is_empty() {
        PROG.usage_exit();
    }
    match tend_log::filter::tai64nlocal(p.has('g')) {
        Ok(()) => std::process::exit(code::OK),
        Err(e) => PROG.fatal(e.code(), e),
    }
}
