//! tend-notify — bridge a daemon's sd_notify (READY, STATUS, WATCHDOG) to s6 readiness for its whole life. See man/man8/tend-notify.8.
#![forbid(unsafe_code)]

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::time::Duration;
use tend_cli::{Program, code, parse_duration_ms, parse_uint};
use tend_env::notify::{self, Ended, Role};
use tend_env::{environ, sys};

const USAGE: &str = "tend-notify [ -d fd ] [ -w watchdog ] prog...";
const PROG: Program = Program::new("tend-notify", USAGE);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "d:w:");
    if p.operands.is_empty() {
        PROG.usage_exit()
    }
    let given = p
        .value('d')
        .map(|v| parse_uint::<i32>(v).unwrap_or_else(|| PROG.usage_exit()));
    let watchdog = p.value('w').map(|v| match parse_duration_ms(v) {
        Some(ms) if ms > 0 => Duration::from_millis(ms),
        _ => PROG.usage_exit(),
    });
    let fd = match given {
        Some(fd) => fd,
        None => notify::fd_from_file(Path::new(".")).unwrap_or_else(|e| PROG.fatal(e.code(), e)),
    };
    let socket = notify::socket_bind(fd).unwrap_or_else(|e| PROG.fatal(e.code(), e));
    let mut env = sys::exec::current_env();
    environ::set(&mut env, OsStr::new("NOTIFY_SOCKET"), &socket.address);
    if let Some(w) = watchdog {
        let usec = OsString::from(w.as_micros().to_string());
        let pid = OsString::from(std::process::id().to_string());
        environ::set(&mut env, OsStr::new("WATCHDOG_USEC"), &usec);
        environ::set(&mut env, OsStr::new("WATCHDOG_PID"), &pid);
    }
    match notify::split(socket, fd, watchdog) {
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
        Err(e) => PROG.fatal(e.code(), e),
    }
}
