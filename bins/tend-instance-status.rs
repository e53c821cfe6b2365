//! tend-instance-status — print an instance's status, as s6-instance-status. See man/man8/tend-instance-status.8.
#![forbid(unsafe_code)]

use tend_cli::Program;
use tend_client::instance;

const PROG: Program = Program::new(
    "tend-instance-status",
    "tend-instance-status [ -uwNrpest | -o up,wantedup,normallyup,ready,paused,pid,exitcode,signal,signum,updownsince,readysince,updownfor,readyfor ] [ -n ] service instancename",
);

pub fn main() {
    let args: Vec<_> = tend_cli::args().collect();
    let p = PROG.parse(args.clone(), "no:uwNrpest");
    let [servicedir, name] = &p.operands[..] else {
        PROG.usage_exit()
    };
    // The options as given (they come before the two operands).
    let options = &args[..args.len() - 2];
    match instance::pass_to("tend-svstat", PROG.name, options, servicedir.as_ref(), name) {
        Ok((status, stderr)) => {
            let _ = tend_sys::fd::write_all(std::io::stderr(), &stderr);
            std::process::exit(status)
        }
        Err(e) => PROG.fatal(e.code(), e),
    }
}
