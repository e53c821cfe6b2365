//! tend-oom — set the OOM killer's score adjustment, then exec. See man/man8/tend-oom.8.
#![forbid(unsafe_code)]

use tend_cli::Program;
use tend_env::{oom, sys};

const PROG: Program = Program::new("tend-oom", "tend-oom -n adj prog...");

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "n:");
    let mut score = None;
    for (c, v) in &p.opts {
        match c {
            'n' => score = v.as_deref().and_then(oom::parse),
            _ => PROG.usage_exit(),
        }
    }
    let Some(score) = score else {
        PROG.usage_exit()
    };
    if p.operands.is_empty() {
        PROG.usage_exit()
    }
    if let Err(e) = oom::set(score) {
        PROG.fatal(e.code(), e)
    }
    let e = tend_env::exec(&p.operands, &sys::exec::current_env());
    PROG.fatal(e.code(), e)
}
