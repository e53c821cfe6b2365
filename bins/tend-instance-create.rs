//! tend-instance-create — create an instance of an instanced service and wait for its supervisor, as s6-instance-create. See man/man8/tend-instance-create.8.
#![forbid(unsafe_code)]

use std::time::{Duration, Instant};
use tend_cli::{Program, code, parse_uint};
use tend_client::instance;
use tend_client::link::{Down, LinkOptions, Waited};

const PROG: Program = Program::new(
    "tend-instance-create",
    "tend-instance-create [ -d | -D ] [ -P ] [ -f ] [ -t timeout ] service instancename",
);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "dDPft:");
    let mut o = LinkOptions {
        down: Down::Up,
        public: false,
        force: false,
        deadline: None,
    };
    for (c, v) in &p.opts {
        match c {
            'd' => o.down = Down::Once,
            'D' => o.down = Down::Stay,
            'f' => o.force = true,
            'P' => o.public = true,
            't' => {
                let ms: u64 = v
                    .as_deref()
                    .and_then(parse_uint)
                    .unwrap_or_else(|| PROG.usage_exit());
                o.deadline = (ms > 0).then(|| Instant::now() + Duration::from_millis(ms));
            }
            _ => PROG.usage_exit(),
        }
    }
    let [servicedir, name] = &p.operands[..] else {
        PROG.usage_exit()
    };
    match instance::create(servicedir.as_ref(), name, &o, &PROG) {
        Ok(Waited::Done) => std::process::exit(code::OK),
        Ok(Waited::TimedOut) => PROG.fatal(code::TIMEOUT, "timed out"),
        Err(e) => PROG.fatal(e.code(), e),
    }
}
