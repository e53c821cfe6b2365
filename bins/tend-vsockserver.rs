//! tend-vsockserver — bind an AF_VSOCK port, fork a program per connection with the UCSPI variables. See man/man8/tend-vsockserver.8.
#![forbid(unsafe_code)]

use tend_cli::{Program, code, parse_uint};
use tend_ucspi::server::{self, Family, MAXCONN_LIMIT, Options};
use tend_ucspi::socket;

const PROG: Program = Program::new(
    "tend-vsockserver",
    "tend-vsockserver [ -1 ] [ -v verbosity ] [ -c maxconn ] [ -b backlog ] port prog...",
);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "1v:c:b:");
    let mut o = Options {
        family: Family::Vsock,
        credentials: false,
        ..Options::default()
    };
    let mut backlog = 20;
    for (c, v) in &p.opts {
        let num = || {
            v.as_deref()
                .and_then(parse_uint::<usize>)
                .unwrap_or_else(|| PROG.usage_exit())
        };
        match c {
            '1' => o.ready = true,
            'v' => o.verbosity = num().min(2) as u32,
            'c' => o.maxconn = num(),
            'b' => backlog = num().min(i32::MAX as usize) as i32,
            _ => PROG.usage_exit(),
        }
    }
    let [port, prog @ ..] = &p.operands[..] else {
        PROG.usage_exit()
    };
    let port = parse_uint::<u32>(port).unwrap_or_else(|| PROG.usage_exit());
    if prog.is_empty() {
        PROG.usage_exit()
    }
    o.maxconn = o.maxconn.clamp(1, MAXCONN_LIMIT);
    o.localmax = o.maxconn;
    let listen = socket::bind_vsock(port, backlog).unwrap_or_else(|e| PROG.fatal(e.code(), e));
    match server::serve(listen, prog, &o, &PROG) {
        Ok(()) => std::process::exit(code::OK),
        Err(e) => PROG.fatal(e.code(), e),
    }
}
