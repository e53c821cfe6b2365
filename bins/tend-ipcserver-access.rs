//! tend-ipcserver-access — accept or refuse a UCSPI client by uid and gid from a rules directory, as s6-ipcserver-access. See man/man8/tend-ipcserver-access.8.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use tend_cli::{Program, code, parse_uint};
use tend_ucspi::access::{self, Options};

const PROG: Program = Program::new(
    "tend-ipcserver-access",
    "tend-ipcserver-access [ -v verbosity ] [ -e | -E ] [ -l localname ] [ -i rulesdir | -x rulesfile ] prog...",
);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "v:eEl:i:x:");
    let mut o = Options {
        verbosity: 1,
        ..Options::default()
    };
    for (c, v) in &p.opts {
        match c {
            'v' => {
                o.verbosity = v
                    .as_deref()
                    .and_then(parse_uint)
                    .unwrap_or_else(|| PROG.usage_exit())
            }
            'e' => o.clear = false,
            'E' => o.clear = true,
            'l' => o.localname = v.clone(),
            'i' => o.rules = v.clone().map(PathBuf::from),
            'x' => PROG.fatal(
                code::USAGE,
                "cdb rules files are not supported: use -i rulesdir",
            ),
            _ => PROG.usage_exit(),
        }
    }
    if p.operands.is_empty() {
        PROG.usage_exit()
    }
    let mut env = tend_env::sys::exec::current_env();
    let mut argv = p.operands;
    match access::apply(&o, &mut env, &mut argv, &PROG) {
        Ok(true) => {}
        Ok(false) => std::process::exit(code::NO),
        Err(e) => PROG.fatal(e.code(), e),
    }
    let e = tend_env::exec(&argv, &env);
    PROG.fatal(e.code(), e)
}
