//! tend-setsid — become a session or process group leader, then exec. See man/man8/tend-setsid.8.
#![forbid(unsafe_code)]

use tend_cli::{Program, parse_uint};
use tend_env::session::{self, Mode};
use tend_env::sys;

const USAGE: &str = "tend-setsid [ -s | -b | -f | -g ] [ -i | -I | -q ] [ -d ctty ] prog...";
const PROG: Program = Program::new("tend-setsid", USAGE);

/// What to do when a step fails.
#[derive(PartialEq)]
enum OnError {
    Die,
    Warn,
    Quiet,
}

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "sbfgiIqd:");
    let mut mode = Mode::Session;
    let mut on_error = OnError::Warn;
    let mut ctty = 0;
    for (opt, value) in &p.opts {
        match opt {
            's' => mode = Mode::Session,
            'b' => mode = Mode::Background,
            'f' => mode = Mode::Foreground,
            'g' => mode = Mode::Grab,
            'i' => on_error = OnError::Die,
            'I' => on_error = OnError::Warn,
            'q' => on_error = OnError::Quiet,
            'd' => match value.as_deref().and_then(parse_uint::<i32>) {
                Some(fd) => ctty = fd,
                None => PROG.usage_exit(),
            },
            _ => PROG.usage_exit(),
        }
    }
    if p.operands.is_empty() {
        PROG.usage_exit()
    }
    for e in session::apply(mode, ctty) {
        match on_error {
            OnError::Die => PROG.fatal(e.code(), e),
            OnError::Warn => PROG.warn(e),
            OnError::Quiet => {}
        }
    }
    let e = tend_env::exec(&p.operands, &sys::exec::current_env());
    PROG.fatal(e.code(), e)
}
