//! tend-ucspilogd — decode syslog priorities in a stream of NUL- or newline-ended records, as ucspilogd. See man/man8/tend-ucspilogd.8.
#![forbid(unsafe_code)]

use std::os::fd::AsFd;
use std::os::unix::ffi::OsStringExt;
use tend_cli::Program;

const PROG: Program = Program::new("tend-ucspilogd", "tend-ucspilogd [ -D undef ] [ var... ]");

pub fn main() {
    // -d is what s6's HTML page says, -D what its 2.11.3.2 binary takes: both work.
    let p = PROG.parse(tend_cli::args(), "D:d:");
    let undef = p
        .opts
        .last()
        .and_then(|(_, v)| v.clone())
        .map(OsStringExt::into_vec)
        .unwrap_or_else(|| b"<undefined>".to_vec());
    let values: Vec<Vec<u8>> = p
        .operands
        .iter()
        .map(|name| {
            std::env::var_os(name)
                .map(OsStringExt::into_vec)
                .unwrap_or_else(|| undef.clone())
        })
        .collect();
    let prefixes: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
    let (stdin, stdout) = (std::io::stdin(), std::io::stdout());
    if let Err(e) = tend_syslog::ucspilogd::run(stdin.as_fd(), stdout.as_fd(), &prefixes) {
        PROG.fatal(e.code(), e)
    }
}
