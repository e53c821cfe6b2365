//! tend-instance-delete — delete an instance of an instanced service, as s6-instance-delete. See man/man8/tend-instance-delete.8.
#![forbid(unsafe_code)]

use std::time::{Duration, Instant};
use tend_cli::{Program, code, parse_uint};
use tend_client::instance;

const PROG: Program = Program::new(
    "tend-instance-delete",
    "tend-instance-delete [ -X ] [ -t timeout ] service instancename",
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
    let [servicedir, name] = &p.operands[..] else {
        PROG.usage_exit()
    };
    // A destructor, as s6-instance-delete: a timeout is not an error.
    match instance::delete(servicedir.as_ref(), name, wait, deadline) {
        Ok(_) => std::process::exit(code::OK),
        Err(e) => PROG.fatal(e.code(), e),
    }
}
