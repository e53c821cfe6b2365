//! tend-svdt-clear — clear a service's death tally, as s6-svdt-clear. See man/man8/tend-svdt-clear.8.
#![forbid(unsafe_code)]

use std::path::Path;
use tend_cli::{Program, code};

const PROG: Program = Program::new("tend-svdt-clear", "tend-svdt-clear servicedir");

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "");
    let [dir] = &p.operands[..] else {
        PROG.usage_exit()
    };
    match tend_proto::death_tally::clear(Path::new(dir)) {
        Ok(()) => std::process::exit(code::OK),
        Err(e) => PROG.fatal(e.code(), e),
    }
}
