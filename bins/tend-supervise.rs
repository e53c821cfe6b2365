//! tend-supervise — keep one service running and obey its control FIFO. See man/man8/tend-supervise.8.
#![forbid(unsafe_code)]

use tend_cli::Program;
use tend_supervise::{Reporter, Supervisor};

const PROG: Program = Program::new("tend-supervise", "tend-supervise servicedir");

pub fn main() {
    let args = PROG.parse(tend_cli::args(), "");
    let [dir] = args.operands.as_slice() else {
        PROG.usage_exit()
    };
    match Supervisor::new(dir, Reporter::new(dir)) {
        Ok(sup) => std::process::exit(sup.run()),
        Err(e) => PROG.fatal(e.code(), e),
    }
}
