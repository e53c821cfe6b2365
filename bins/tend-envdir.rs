//! tend-envdir — set environment variables from a directory's files, then exec. See man/man8/tend-envdir.8.
#![forbid(unsafe_code)]

use std::path::Path;
use tend_cli::{Program, code};
use tend_env::{envdir, sys};

const USAGE: &str = "tend-envdir [ -I | -i ] [ -n ] [ -f ] [ -L ] [ -c nullis ] dir prog...";
const PROG: Program = Program::new("tend-envdir", USAGE);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "IinfLc:");
    let mut opts = envdir::Options::default();
    let mut loose = false;
    for (opt, value) in &p.opts {
        match opt {
            'I' => loose = true,
            'i' => loose = false,
            'n' => opts.nochomp = true,
            'f' => opts.verbatim = true,
            'L' => opts.noclamp = true,
            'c' => match value.as_deref().and_then(envdir::nullis) {
                Some(c) => opts.nullis = c,
                None => PROG.fatal(code::USAGE, "the -c argument must not be empty"),
            },
            _ => PROG.usage_exit(),
        }
    }
    let [dir, argv @ ..] = p.operands.as_slice() else {
        PROG.usage_exit()
    };
    if argv.is_empty() {
        PROG.usage_exit()
    }
    let mut env = sys::exec::current_env();
    match envdir::read(Path::new(dir), &opts) {
        Ok(changes) => envdir::apply(&mut env, &changes),
        Err(e) if loose && envdir::is_missing(&e) => {}
        Err(e) => PROG.fatal(e.code(), e),
    }
    let e = tend_env::exec(argv, &env);
    PROG.fatal(e.code(), e)
}
