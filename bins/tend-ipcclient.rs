//! tend-ipcclient — connect to a Unix socket, exec a program with the connection on fds 6 and 7, as s6-ipcclient. See man/man8/tend-ipcclient.8.
#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::path::Path;
use tend_cli::{Program, code};
use tend_ucspi::{socket, vars};

const PROG: Program = Program::new(
    "tend-ipcclient",
    "tend-ipcclient [ -q | -Q | -v ] [ -p bindpath ] [ -l localname ] path prog...",
);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "qQvp:l:");
    let mut verbose = false;
    let (mut bindpath, mut localname) = (None, None);
    for (c, v) in &p.opts {
        match c {
            'q' | 'Q' => verbose = false,
            'v' => verbose = true,
            'p' => bindpath = v.clone(),
            'l' => localname = v.clone(),
            _ => PROG.usage_exit(),
        }
    }
    let [path, prog @ ..] = &p.operands[..] else {
        PROG.usage_exit()
    };
    if prog.is_empty() {
        PROG.usage_exit()
    }
    let fd = socket::connect(path.as_ref(), bindpath.as_deref().map(Path::new))
        .unwrap_or_else(|e| PROG.fatal(e.code(), e));
    if verbose {
        PROG.line(
            "info",
            format_args!("connected to {}", tend_cli::shown(path)),
        );
    }
    if let Err(e) = socket::hand_on(fd, &[6, 7]) {
        PROG.fatal(code::SYSTEM, e)
    }
    let mut env: Vec<(OsString, OsString)> = tend_env::sys::exec::current_env()
        .into_iter()
        .filter(|(k, _)| k != vars::PROTO && k != vars::LOCALPATH.ipc)
        .collect();
    env.push((vars::PROTO.into(), vars::IPC.into()));
    if let Some(local) = localname.or(bindpath) {
        env.push((vars::LOCALPATH.ipc.into(), local));
    }
    let e = tend_env::exec(prog, &env);
    PROG.fatal(e.code(), e)
}
