//! tend-instance-control — send commands to an instance's supervisor, as s6-instance-control. See man/man8/tend-instance-control.8.
#![forbid(unsafe_code)]

use tend_cli::{Program, code};
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
    let dir = instance::instance_dir(servicedir.as_ref(), name)
        .unwrap_or_else(|e| PROG.fatal(e.code(), e));
    // The options as given (they come before the operands), then the instance's directory.
    let mut argv = args[..args.len() - 2].to_vec();
    argv.push(dir.into_os_string());
    let exe = std::env::current_exe().unwrap_or_else(|e| {
        PROG.fatal(
            code::SYSTEM,
            format_args!("unable to find this executable: {e}"),
        )
    });
    match instance::run_program(&exe, "tend-svc", PROG.name, &argv) {
        Ok((status, stderr)) => {
            let _ = tend_sys::fd::write_all(std::io::stderr(), &stderr);
            std::process::exit(status)
        }
        Err(e) => PROG.fatal(e.code(), e),
    }
}
