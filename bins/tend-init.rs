//! tend-init — PID 1 for a container: init scripts, supervised services, the command in the foreground. See man/man8/tend-init.8.
#![forbid(unsafe_code)]

use std::fmt;
use tend_cli::{Program, code};
use tend_init::settings::{SPEC, Settings, help};

const USAGE: &str = "tend-init [ -h ] [ -p ] [ -i initdir ] [ -s servicesdir ] [ -f finishdir ] [ -e envdir ] [ -S scandir ] [ -w maxtime ] [ -I stop|warn ] [ -U stop|warn ] [ -t finishtime ] [ -g servicesgrace ] [ -k killgrace ] [ -c exitcode ] [ prog... ]";
const PROG: Program = Program::new("tend-init", USAGE);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), SPEC);
    if p.has('h') {
        print!("usage: {USAGE}\n{}", help());
        std::process::exit(code::OK);
    }
    let env: Vec<_> = std::env::vars_os().collect();
    let settings = Settings::resolve(&p.opts, &env, !p.operands.is_empty())
        .unwrap_or_else(|e| PROG.fatal(code::USAGE, e));
    let mut say = |kind: &str, m: fmt::Arguments<'_>| PROG.line(kind, m);
    match tend_init::run(&settings, &p.operands, &mut say) {
        Ok(c) => std::process::exit(c),
        Err(e) => PROG.fatal(code::SYSTEM, e),
    }
}
