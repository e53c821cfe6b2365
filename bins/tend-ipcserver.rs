//! tend-ipcserver — a Unix super-server: bind, drop privileges, accept, fork a program per connection, as s6-ipcserver. See man/man8/tend-ipcserver.8.
#![forbid(unsafe_code)]

use std::os::unix::ffi::OsStrExt;
use tend_cli::{Program, code, parse_uint};
use tend_env::account::{parse_id, parse_idlist};
use tend_env::uidgid::{self, Credentials};
use tend_ucspi::server::{self, MAXCONN_LIMIT, Options};
use tend_ucspi::socket::{self, BindOptions, Kind};

const PROG: Program = Program::new(
    "tend-ipcserver",
    "tend-ipcserver [ -q | -Q | -v ] [ -d | -D ] [ -P | -p ] [ -1 ] [ -c maxconn ] [ -C localmaxconn ] [ -b backlog ] [ -a socketperms ] [ -G gid,gid,... ] [ -g gid ] [ -u uid ] [ -U ] path prog...",
);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "qQvdDPp1c:C:b:a:G:g:u:U");
    let mut o = Options::default();
    let mut b = BindOptions {
        kind: Kind::Stream,
        perms: 0o777,
        backlog: Some(libc::SOMAXCONN),
        blocking: false,
        cloexec: true,
        pass_credentials: false,
    };
    let mut creds = Credentials::default();
    for (c, v) in &p.opts {
        let v = v.as_deref().unwrap_or_default();
        let num = || parse_uint::<usize>(v).unwrap_or_else(|| PROG.usage_exit());
        let id = || parse_id(v.as_bytes()).unwrap_or_else(|| PROG.usage_exit());
        match c {
            'q' => o.verbosity = 0,
            'Q' => o.verbosity = 1,
            'v' => o.verbosity = 2,
            'd' | 'D' => {}
            'P' => o.credentials = false,
            'p' => o.credentials = true,
            '1' => o.ready = true,
            'c' => o.maxconn = num(),
            'C' => o.localmax = num(),
            'b' => b.backlog = Some(num().min(i32::MAX as usize) as i32).filter(|&n| n > 0),
            'a' => {
                b.perms = v
                    .to_str()
                    .and_then(|s| u32::from_str_radix(s, 8).ok())
                    .filter(|&m| m <= 0o777)
                    .unwrap_or_else(|| PROG.usage_exit())
            }
            'G' => {
                creds.groups = Some(parse_idlist(v.as_bytes()).unwrap_or_else(|| PROG.usage_exit()))
            }
            'g' => creds.gid = id(),
            'u' => creds.uid = id(),
            'U' => match uidgid::from_env(&tend_env::sys::exec::current_env()) {
                Ok(c) => creds = c,
                Err(e) => PROG.fatal(e.code(), e),
            },
            _ => PROG.usage_exit(),
        }
    }
    let [path, prog @ ..] = &p.operands[..] else {
        PROG.usage_exit()
    };
    if prog.is_empty() {
        PROG.usage_exit()
    }
    o.maxconn = o.maxconn.clamp(1, MAXCONN_LIMIT);
    o.localmax = o.localmax.clamp(1, o.maxconn);
    // s6-ipcserver's chain in one process: bind, drop privileges, serve.
    let listen = socket::bind(path.as_ref(), &b).unwrap_or_else(|e| PROG.fatal(e.code(), e));
    uidgid::apply(&creds).unwrap_or_else(|e| PROG.fatal(e.code(), e));
    match server::serve(listen, prog, &o, &PROG) {
        Ok(()) => std::process::exit(code::OK),
        Err(e) => PROG.fatal(e.code(), e),
    }
}
