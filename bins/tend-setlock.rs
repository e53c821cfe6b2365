//! tend-setlock — take a lock on a file, then exec with the lock held. See man/man8/tend-setlock.8.
#![forbid(unsafe_code)]

use std::path::Path;
use std::time::Duration;
use tend_cli::{Program, code};
use tend_proto::lock::{self, Kind, Wait};

const USAGE: &str = "tend-setlock [ -r | -w ] [ -n | -N | -t timeout ] file prog...";
const PROG: Program = Program::new("tend-setlock", USAGE);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "rwnNt:");
    let mut kind = Kind::Exclusive;
    let mut wait = Wait::Forever;
    for (opt, value) in &p.opts {
        match opt {
            'r' => kind = Kind::Shared,
            'w' => kind = Kind::Exclusive,
            'n' => wait = Wait::No,
            'N' => wait = Wait::Forever,
            't' => match value
                .as_deref()
                .and_then(|v| v.to_str()?.parse::<u64>().ok())
            {
                Some(ms) => wait = Wait::For(Duration::from_millis(ms)),
                None => PROG.usage_exit(),
            },
            _ => PROG.usage_exit(),
        }
    }
    let [file, argv @ ..] = p.operands.as_slice() else {
        PROG.usage_exit()
    };
    if argv.is_empty() {
        PROG.usage_exit()
    }
    let path = Path::new(file);
    // Kept open across exec: the lock lives as long as the fd in prog and its children.
    let held = match lock::open_inheritable(path, kind) {
        Ok(fd) => fd,
        // s6's wording: "unable to open FILE for writing: why".
        Err(e) => match e.op.strip_prefix("open ") {
            Some(how) => PROG.fatal(
                code::SYSTEM,
                format!(
                    "unable to open {} {how}: {}",
                    path.display(),
                    e.errno.desc()
                ),
            ),
            None => PROG.fatal(e.code(), e),
        },
    };
    if let Err(e) = lock::lock_ofd(&held, kind, wait) {
        PROG.fatal(e.code(), e.describe(path))
    }
    let e = tend_env::exec(argv, &tend_sys::exec::current_env());
    PROG.fatal(e.code(), e)
}
