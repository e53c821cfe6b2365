//! tend-applyuidgid — set uid, gid and supplementary groups, then exec. See man/man8/tend-applyuidgid.8.
#![forbid(unsafe_code)]

use std::os::unix::ffi::OsStrExt;
use tend_cli::Program;
use tend_env::account::{parse_id, parse_idlist};
use tend_env::{sys, uidgid};

const USAGE: &str = "tend-applyuidgid [ -z ] [ -u uid ] [ -g gid ] [ -G gidlist ] [ -U ] prog...";
const PROG: Program = Program::new("tend-applyuidgid", USAGE);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "zUu:g:G:");
    let mut env = sys::exec::current_env();
    let mut creds = uidgid::Credentials::default();
    let mut unexport = false;
    for (opt, value) in &p.opts {
        let v = value.as_deref().map(|v| v.as_bytes()).unwrap_or_default();
        match opt {
            'z' => unexport = true,
            'u' => creds.uid = parse_id(v).unwrap_or_else(|| PROG.usage_exit()),
            'g' => creds.gid = parse_id(v).unwrap_or_else(|| PROG.usage_exit()),
            'G' => creds.groups = Some(parse_idlist(v).unwrap_or_else(|| PROG.usage_exit())),
            'U' => match uidgid::from_env(&env) {
                Ok(c) => creds = c,
                Err(e) => PROG.fatal(e.code(), e),
            },
            _ => PROG.usage_exit(),
        }
    }
    if p.operands.is_empty() {
        PROG.usage_exit()
    }
    if let Err(e) = uidgid::apply(&creds) {
        PROG.fatal(e.code(), e)
    }
    if unexport {
        uidgid::unexport(&mut env);
    }
    let e = tend_env::exec(&p.operands, &env);
    PROG.fatal(e.code(), e)
}
