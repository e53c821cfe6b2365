//! tend-softlimit — set soft resource limits, then exec. See man/man8/tend-softlimit.8.
#![forbid(unsafe_code)]

use std::os::unix::ffi::OsStrExt;
use tend_cli::Program;
use tend_env::{rlimit, sys};

const USAGE: &str = "tend-softlimit [ -a allbytes ] [ -c corebytes ] [ -d databytes ] [ -f filebytes ] [ -l lockbytes ] [ -m membytes ] [ -o openfiles ] [ -p processes ] [ -r residentbytes ] [ -s stackbytes ] [ -t cpusecs ] prog...";
const PROG: Program = Program::new("tend-softlimit", USAGE);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "a:c:d:f:l:m:o:p:r:s:t:");
    let limits: Vec<(char, rlimit::Value)> = p
        .opts
        .iter()
        .map(|(opt, value)| {
            let v = value.as_deref().map(|v| v.as_bytes()).unwrap_or_default();
            match rlimit::parse_value(v) {
                Some(v) => (*opt, v),
                None => PROG.usage_exit(),
            }
        })
        .collect();
    if p.operands.is_empty() {
        PROG.usage_exit()
    }
    // Everything exec needs is built before the limits can make allocation fail.
    let ready = match tend_env::Ready::new(&p.operands, &sys::exec::current_env()) {
        Ok(r) => r,
        Err(e) => PROG.fatal(e.code(), e),
    };
    let saved = match rlimit::apply(&limits) {
        Ok(s) => s,
        Err(e) => PROG.fatal(e.code(), e),
    };
    let errno = ready.exec();
    rlimit::restore(&saved);
    let e = ready.error(errno);
    PROG.fatal(e.code(), e)
}
