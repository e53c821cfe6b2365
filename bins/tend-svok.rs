//! tend-svok — tell whether a supervisor is running on a service directory. See man/man8/tend-svok.8.
#![forbid(unsafe_code)]

use std::path::Path;
use tend_cli::{Program, code, shown};

const USAGE: &str = "tend-svok servicedir";
const PROG: Program = Program::new("tend-svok", USAGE);

pub fn main() {
    let parsed = PROG.parse(tend_cli::args(), "");
    let Some(dir) = parsed.operands.first() else {
        PROG.usage_exit()
    };
    match tend_client::svok(Path::new(dir)) {
        Ok(true) => std::process::exit(code::OK),
        Ok(false) => std::process::exit(code::NO),
        Err(e) => PROG.fatal(
            code::SYSTEM,
            format_args!("unable to check {}: {}", shown(dir), e.desc()),
        ),
    }
}
