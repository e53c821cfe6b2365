//! tend-svlink — link a service into a live scan directory and wait for its supervisor, as s6-svlink. See man/man8/tend-svlink.8.
#![forbid(unsafe_code)]

use std::path::Path;
use std::time::{Duration, Instant};
use tend_cli::{Program, code, parse_uint};
use tend_client::link::{self, Down, LinkOptions, Waited};

const PROG: Program = Program::new(
    "tend-svlink",
    "tend-svlink [ -d | -D ] [ -f ] [ -P ] [ -t timeout ] scandir servicedir [ name ]",
);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "dDfPt:");
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
    let (scandir, servicedir, name) = match &p.operands[..] {
        [s, d] => (s, d, Path::new(d).file_name().map(|n| n.to_os_string())),
        [s, d, n] => (s, d, Some(n.clone())),
        _ => PROG.usage_exit(),
    };
    let name = name
        .filter(|n| !n.is_empty() && n != ".." && !n.as_encoded_bytes().contains(&b'/'))
        .unwrap_or_else(|| PROG.fatal(code::USAGE, "invalid service name"));
    match link::svlink(scandir.as_ref(), servicedir.as_ref(), &name, &o, &PROG) {
        Ok(Waited::Done) => std::process::exit(code::OK),
        Ok(Waited::TimedOut) => PROG.fatal(code::TIMEOUT, "timed out"),
        Err(e) => PROG.fatal(e.code(), e),
    }
}
