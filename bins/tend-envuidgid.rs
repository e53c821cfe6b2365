//! tend-envuidgid — export an account's UID, GID and GIDLIST, then exec. See man/man8/tend-envuidgid.8.
#![forbid(unsafe_code)]

use std::os::unix::ffi::OsStrExt;
use tend_cli::Program;
use tend_env::account::{self, Mode, Request};
use tend_env::sys;

const USAGE: &str = "tend-envuidgid [ -i | -D defaultuid:defaultgid:defaultgidlist ] [ -u | -g | -B ] [ -n ] account prog...";
const PROG: Program = Program::new("tend-envuidgid", USAGE);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "ugBniD:");
    let mut req = Request {
        mode: Mode::Account,
        numeric: false,
        defaults: None,
    };
    for (opt, value) in &p.opts {
        match (opt, value) {
            ('u', _) => req.mode = Mode::User,
            ('g', _) => req.mode = Mode::Group,
            ('B', _) => req.mode = Mode::Both,
            ('n', _) => req.numeric = true,
            ('i', _) => req.defaults = None,
            ('D', Some(v)) => match account::parse_defaults(v.as_bytes()) {
                Some(d) => req.defaults = Some(d),
                None => PROG.usage_exit(),
            },
            _ => PROG.usage_exit(),
        }
    }
    let [name, argv @ ..] = p.operands.as_slice() else {
        PROG.usage_exit()
    };
    if argv.is_empty() {
        PROG.usage_exit()
    }
    let vars = account::resolve(name, &req).unwrap_or_else(|e| PROG.fatal(e.code(), e));
    let mut env = sys::exec::current_env();
    vars.export(&mut env);
    let e = tend_env::exec(argv, &env);
    PROG.fatal(e.code(), e)
}
