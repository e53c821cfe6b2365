//! tend-supervise — keep one service running and obey its control FIFO. See man/man8/tend-supervise.8.
#![forbid(unsafe_code)]

use tend_cli::Program;
use tend_supervise::{Reporter, Supervisor};

const PROG: Program = Program::new("tend-supervise", "tend-supervise servicedir");

pub fn main() {
    let (argv0, args) = tend_cli::argv0_and_args();
    let args = PROG.parse(args, "");
    let [dir] = args.operands.as_slice() else {
        PROG.usage_exit()
    };
    // Run as `runsv` (packaging/install.sh -r): runit's runsv also runs DIR/log with a
    // pipe from ./run; here that pipe is the scanner's, so a lone supervisor refuses it.
    let runsv = std::path::Path::new(&argv0)
        .file_name()
        .is_some_and(|b| b == "runsv");
    if runsv && std::path::Path::new(dir).join("log").is_dir() {
        PROG.fatal(
            tend_cli::code::USAGE,
            format_args!(
                "{}/log: runsv's log service needs runsvdir (tend-svscan) here",
                tend_cli::shown(dir)
            ),
        )
    }
    match Supervisor::new(dir, Reporter::new(dir)) {
        Ok(sup) => std::process::exit(sup.run()),
        Err(e) => PROG.fatal(e.code(), e),
    }
}
