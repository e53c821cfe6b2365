//! tend-setuidgid — run a program as another account. See man/man8/tend-setuidgid.8.
#![forbid(unsafe_code)]

use tend_cli::Program;
use tend_env::sys;
use tend_env::uidgid::{self, Target};

const USAGE: &str = "tend-setuidgid account prog...";
const PROG: Program = Program::new("tend-setuidgid", USAGE);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "");
    let [account, argv @ ..] = p.operands.as_slice() else {
        PROG.usage_exit()
    };
    if argv.is_empty() {
        PROG.usage_exit()
    }
    let mut env = sys::exec::current_env();
    let creds = match uidgid::target(account) {
        Ok(Target::Unchanged) => None,
        Ok(Target::Ids(c)) => Some(c),
        Ok(Target::Account(c)) => {
            uidgid::unexport(&mut env);
            Some(c)
        }
        Err(e) => PROG.fatal(e.code(), e),
    };
    if let Some(c) = creds
        && let Err(e) = uidgid::apply(&c)
    {
        PROG.fatal(e.code(), e)
    }
    let e = tend_env::exec(argv, &env);
    PROG.fatal(e.code(), e)
}
