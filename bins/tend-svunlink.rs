//! tend-svunlink — unlink a service from a live scan directory and wait for its supervisor to exit, as s6-svunlink. See man/man8/tend-svunlink.8.
#![forbid(unsafe_code)]

use std::time::{Duration, Instant};
use tend_cli::{Program, code, parse_uint};
use tend_client::link;

const PROG: Program = Program::new(
    "tend-svunlink",
    "tend-svunlink [ -X ] [ -t timeout ] scandir servicename",
);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "Xt:");
    let (mut wait, mut deadline) = (true, None);
    for (c, v) in &p.opts {
        match c {
            'X' => wait = false,
            't' => {
                let ms: u64 = v
                    .as_deref()
                    .and_then(parse_uint)
                    .unwrap_or_else(|| PROG.usage_exit());
                deadline = (ms > 0).then(|| Instant::now() + Duration::from_millis(ms));
            }
            _ => PROG.usage_exit(),
        }
    }
    let [scandir, name] = &p.operands[..] else {
        PROG.usage_exit()
    };
    if name.is_empty() || name == "." || name == ".." || name.as_encoded_bytes().contains(&b'/') {
        PROG.fatal(code::USAGE, "invalid service name")
    }
    // A destructor, as s6-svunlink: a timeout is not an error.
    match link::svunlink(scandir.as_ref(), name, wait, deadline) {
        Ok(_) => std::process::exit(code::OK),
        Err(e) => PROG.fatal(e.code(), e),
    }
}
