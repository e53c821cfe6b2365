//! tend-notify — turn a daemon's sd_notify READY=1 into s6 readiness. See man/man8/tend-notify.8.
#![forbid(unsafe_code)]

use std::ffi::OsStr;
use std::path::Path;
use tend_cli::{Program, code, parse_uint};
use tend_env::notify::{self, Ended, Role};
use tend_env::{environ, sys};

const USAGE: &str = "tend-notify [ -d fd ] prog...";
const PROG: Program = Program::new("tend-notify", USAGE);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "d:");
    if p.operands.is_empty() {
        PROG.usage_exit()
    }
    let fd = match p.value('d') {
        Some(v) => parse_uint::<i32>(v).unwrap_or_else(|| PROG.usage_exit()),
        None => {
            notify::fd_from_file(Path::new(".")).unwrap_or_else(|e| PROG.fatal(code::SYSTEM, e))
        }
    };
    let socket = notify::socket_bind().unwrap_or_else(|e| PROG.fatal(code::SYSTEM, e));
    let mut env = sys::exec::current_env();
    environ::set(&mut env, OsStr::new("NOTIFY_SOCKET"), &socket.address);
    match notify::split(socket, fd) {
        Ok(Role::Daemon) => {
            let e = tend_env::exec(&p.operands, &env);
            PROG.fatal(e.code(), e)
        }
        Ok(Role::Intermediate) => sys::process::exit_now(code::OK),
        Ok(Role::Listener(listener)) => match listener.run() {
            Ok(Ended::Ready | Ended::DaemonDied) => sys::process::exit_now(code::OK),
            Err(e) => {
                PROG.warn(e);
                sys::process::exit_now(code::SYSTEM)
            }
        },
        Err(e) => PROG.fatal(code::SYSTEM, e),
    }
}
