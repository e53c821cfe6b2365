//! tend-fghack — keep a self-backgrounding program in the foreground, as s6-fghack. See man/man8/tend-fghack.8.
#![forbid(unsafe_code)]

use tend_cli::{Program, code, shown};
use tend_env::fghack::{self, FghackError, Outcome};

const PROG: Program = Program::new("tend-fghack", "tend-fghack prog...");

/// s6-fghack's code for a program that wrote on the pipe.
const WROTE: i32 = 102;

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "");
    let Some(name) = p.operands.first() else {
        PROG.usage_exit()
    };
    match fghack::run(&p.operands) {
        Ok(Outcome::Exited(c)) => std::process::exit(c.into()),
        Ok(Outcome::Crashed(_)) => {
            PROG.fatal(code::SYSTEM, format_args!("{} crashed", shown(name)))
        }
        Ok(Outcome::Wrote) => PROG.fatal(WROTE, format_args!("{} wrote on hackpipe", shown(name))),
        Err(FghackError::Exec(e)) => PROG.fatal(
            code::SYSTEM,
            format_args!("unable to exec {}: {}", shown(name), e.desc()),
        ),
        Err(FghackError::Sys(e)) => PROG.fatal(e.code(), e),
    }
}
