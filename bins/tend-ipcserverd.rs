//! tend-ipcserverd — accept on the Unix socket on fd 0, fork a program per connection, as s6-ipcserverd. See man/man8/tend-ipcserverd.8.
#![forbid(unsafe_code)]

use tend_cli::{Program, code, parse_uint};
use tend_ucspi::server::{self, MAXCONN_LIMIT, Options};

const PROG: Program = Program::new(
    "tend-ipcserverd",
    "tend-ipcserverd [ -1 ] [ -v verbosity ] [ -P | -p ] [ -c maxconn ] [ -C localmaxconn ] prog...",
);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "1v:Ppc:C:");
    let mut o = Options::default();
    for (c, v) in &p.opts {
        let num = || {
            v.as_deref()
                .and_then(parse_uint::<usize>)
                .unwrap_or_else(|| PROG.usage_exit())
        };
        match c {
            '1' => o.ready = true,
            'v' => o.verbosity = num().min(2) as u32,
            'P' => o.credentials = false,
            'p' => o.credentials = true,
            'c' => o.maxconn = num(),
            'C' => o.localmax = num(),
            _ => PROG.usage_exit(),
        }
    }
    if p.operands.is_empty() {
        PROG.usage_exit()
    }
    o.maxconn = o.maxconn.clamp(1, MAXCONN_LIMIT);
    o.localmax = o.localmax.clamp(1, o.maxconn);
    match server::serve_stdin(&p.operands, &o, &PROG) {
        Ok(()) => std::process::exit(code::OK),
        Err(e) => PROG.fatal(e.code(), e),
    }
}
