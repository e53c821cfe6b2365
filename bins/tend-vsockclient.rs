//! tend-vsockclient — connect to an AF_VSOCK port (or through a hybrid-vsock socket), exec a program with the connection on fds 6 and 7. See man/man8/tend-vsockclient.8.
#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::path::Path;
use tend_cli::{Program, code, parse_uint};
use tend_ucspi::socket;

const PROG: Program = Program::new(
    "tend-vsockclient",
    "tend-vsockclient [ -H path ] cid port prog...",
);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "H:");
    let mut hybrid = None;
    for (c, v) in &p.opts {
        match c {
            'H' => hybrid = v.clone(),
            _ => PROG.usage_exit(),
        }
    }
    let [cid, port, prog @ ..] = &p.operands[..] else {
        PROG.usage_exit()
    };
    let (Some(cid), Some(port)) = (parse_uint::<u32>(cid), parse_uint::<u32>(port)) else {
        PROG.usage_exit()
    };
    if prog.is_empty() {
        PROG.usage_exit()
    }
    let fd = match &hybrid {
        Some(path) => socket::connect_hybrid(Path::new(path), port),
        None => socket::connect_vsock(cid, port),
    }
    .unwrap_or_else(|e| PROG.fatal(e.code(), e));
    if let Err(e) = socket::hand_on(fd, &[6, 7]) {
        PROG.fatal(code::SYSTEM, e)
    }
    let mut env: Vec<(OsString, OsString)> = tend_env::sys::exec::current_env()
        .into_iter()
        .filter(|(k, _)| k != "PROTO" && k != "VSOCKREMOTECID" && k != "VSOCKREMOTEPORT")
        .collect();
    env.push(("PROTO".into(), "VSOCK".into()));
    env.push(("VSOCKREMOTECID".into(), cid.to_string().into()));
    env.push(("VSOCKREMOTEPORT".into(), port.to_string().into()));
    let e = tend_env::exec(prog, &env);
    PROG.fatal(e.code(), e)
}
