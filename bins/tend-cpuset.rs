//! tend-cpuset — pin the process to a list of CPUs, then exec. See man/man8/tend-cpuset.8.
#![forbid(unsafe_code)]

use tend_cli::{Program, shown};
use tend_env::{cpulist, sys};

const USAGE: &str = "tend-cpuset cpulist prog...";
const PROG: Program = Program::new("tend-cpuset", USAGE);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "");
    let [list, argv @ ..] = p.operands.as_slice() else {
        PROG.usage_exit()
    };
    if argv.is_empty() {
        PROG.usage_exit()
    }
    let parsed = list
        .to_str()
        .ok_or(cpulist::ParseError::Syntax)
        .and_then(|text| cpulist::parse_within(text, cpulist::possible()));
    let cpus = parsed.unwrap_or_else(|e| PROG.fatal(e.code(), e.describe(&shown(list))));
    if let Err(e) = cpulist::pin(&cpus) {
        PROG.fatal(e.code(), e)
    }
    let e = tend_env::exec(argv, &sys::exec::current_env());
    PROG.fatal(e.code(), e)
}
