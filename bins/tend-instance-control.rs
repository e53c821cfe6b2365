//! tend-instance-control — send commands to an instance's supervisor, as s6-instance-control. See man/man8/tend-instance-control.8.
#![forbid(unsafe_code)]

use tend_cli::Program;
use tend_client::instance;

const PROG: Program = Program::new(
    "tend-instance-control",
    "tend-instance-control [ -wu | -wU | -wd | -wD | -wr | -wR ] [ -T timeout ] [ -abqhkti12pcyroduDUxO ] service instancename",
);

pub fn main() {
    let args: Vec<_> = tend_cli::args().collect();
    let p = PROG.parse(args.clone(), "abqhkti12pcyroduDUxOT:w:");
    let [servicedir, name] = &p.operands[..] else {
        PROG.usage_exit()
    };
    // The options as given (they come before the two operands).
    let options = &args[..args.len() - 2];
    match instance::pass_to("tend-svc", PROG.name, options, servicedir.as_ref(), name) {
        Ok((status, stderr)) => {
            let _ = tend_sys::fd::write_all(std::io::stderr(), &stderr);
            std::process::exit(status)
        }
        Err(e) => PROG.fatal(e.code(), e),
    }
}
