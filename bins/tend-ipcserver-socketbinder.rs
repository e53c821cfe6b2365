//! tend-ipcserver-socketbinder — bind a Unix socket, make it fd 0, exec a program, as s6-ipcserver-socketbinder. See man/man8/tend-ipcserver-socketbinder.8.
#![forbid(unsafe_code)]

use tend_cli::{Program, code, parse_uint};
use tend_ucspi::socket::{self, BindOptions, Kind};

const PROG: Program = Program::new(
    "tend-ipcserver-socketbinder",
    "tend-ipcserver-socketbinder [ -d | -D ] [ -b backlog ] [ -M | -m ] [ -a perms ] [ -B ] path prog...",
);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "dDb:Mma:B");
    let mut o = BindOptions {
        kind: Kind::Stream,
        perms: 0o777,
        backlog: Some(libc::SOMAXCONN),
        blocking: false,
        cloexec: true,
        pass_credentials: false,
    };
    for (c, v) in &p.opts {
        let v = v.as_deref().unwrap_or_default();
        match c {
            // SO_REUSEADDR means nothing for a Unix socket on Linux; a stale socket is
            // replaced either way.
            'd' | 'D' => {}
            'b' => {
                let n = parse_uint::<i32>(v).unwrap_or_else(|| PROG.usage_exit());
                o.backlog = (n > 0).then_some(n);
            }
            'M' => o.kind = Kind::Stream,
            'm' => o.kind = Kind::Datagram,
            'a' => {
                o.perms = v
                    .to_str()
                    .and_then(|s| u32::from_str_radix(s, 8).ok())
                    .filter(|&m| m <= 0o777)
                    .unwrap_or_else(|| PROG.usage_exit())
            }
            'B' => o.blocking = true,
            _ => PROG.usage_exit(),
        }
    }
    if o.kind == Kind::Datagram {
        // listen(2) fails on a datagram socket; s6 asks for -b 0 with -m, tend implies it.
        o.backlog = None;
    }
    let [path, prog @ ..] = &p.operands[..] else {
        PROG.usage_exit()
    };
    if prog.is_empty() {
        PROG.usage_exit()
    }
    let fd = socket::bind(path.as_ref(), &o).unwrap_or_else(|e| PROG.fatal(e.code(), e));
    if let Err(e) = tend_ucspi::socket::hand_on(fd, &[0]) {
        PROG.fatal(code::SYSTEM, e)
    }
    let e = tend_env::exec(prog, &tend_env::sys::exec::current_env());
    PROG.fatal(e.code(), e)
}
