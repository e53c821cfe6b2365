//! tend-tai64n — prefix every line of stdin with a TAI64N timestamp, as s6-tai64n. See man/man8/tend-tai64n.8.
#![forbid(unsafe_code)]

use tend_cli::{Program, code};

const PROG: Program = Program::new("tend-tai64n", "tend-tai64n");

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "");
    if !p.operands.is_empty() {
        PROG.usage_exit();
    }
    match tend_log::filter::tai64n() {
        Ok(()) => std::process::exit(code::OK),
        Err(e) => PROG.fatal(e.code(), e),
    }
}
