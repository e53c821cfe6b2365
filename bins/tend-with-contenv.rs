//! tend-with-contenv — run a program with the container's saved environment (s6-overlay's with-contenv). See man/man8/tend-with-contenv.8.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use tend_cli::Program;
use tend_env::{contenv, sys};

const USAGE: &str = "tend-with-contenv [ -d envdir ] prog...";
const PROG: Program = Program::new("tend-with-contenv", USAGE);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "d:");
    let mut dir = PathBuf::from(contenv::DIR);
    for (opt, value) in &p.opts {
        match (opt, value) {
            ('d', Some(v)) => dir = PathBuf::from(v),
            _ => PROG.usage_exit(),
        }
    }
    if p.operands.is_empty() {
        PROG.usage_exit()
    }
    let env = match contenv::environment(&dir, &sys::exec::current_env()) {
        Ok(env) => env,
        Err(e) => PROG.fatal(e.code(), e),
    };
    let e = tend_env::exec(&p.operands, &env);
    PROG.fatal(e.code(), e)
}
