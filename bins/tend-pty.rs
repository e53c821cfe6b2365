//! tend-pty — run a program on a new pseudo-terminal, relaying it to fds 0 and 1. See man/man8/tend-pty.8.
#![forbid(unsafe_code)]

use tend_cli::Program;
use tend_ucspi::pty;

const PROG: Program = Program::new("tend-pty", "tend-pty prog...");

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "");
    if p.operands.is_empty() {
        PROG.usage_exit()
    }
    match pty::run(&p.operands) {
        Ok(w) => std::process::exit(w.shell_code()),
        Err(e) => PROG.fatal(e.code(), e),
    }
}
