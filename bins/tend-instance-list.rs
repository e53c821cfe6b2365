//! tend-instance-list — list the instances of an instanced service, as s6-instance-list. See man/man8/tend-instance-list.8.
#![forbid(unsafe_code)]

use std::os::unix::ffi::OsStrExt;
use tend_cli::{Program, code};
use tend_client::instance;

const PROG: Program = Program::new("tend-instance-list", "tend-instance-list service");

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "");
    let [servicedir] = &p.operands[..] else {
        PROG.usage_exit()
    };
    let names = instance::list(servicedir.as_ref()).unwrap_or_else(|e| PROG.fatal(e.code(), e));
    let mut out = Vec::new();
    for n in names {
        out.extend_from_slice(n.as_bytes());
        out.push(b'\n');
    }
    if let Err(e) = tend_sys::fd::write_all(std::io::stdout(), &out) {
        PROG.fatal(
            code::SYSTEM,
            format_args!("unable to write to stdout: {}", e.desc()),
        )
    }
}
