//! tend-init — PID 1 for a container or a VM guest: init scripts, supervised services, the command. See man/man8/tend-init.8.
#![forbid(unsafe_code)]

use tend_cli::{Program, code};
use tend_init::Action;
use tend_init::settings::{SPEC, help};

const USAGE: &str = "tend-init [ -h ] [ -p ] [ -i initdir ] [ -s servicesdir|poweroff|reboot|halt ] [ -f finishdir ] [ -e envdir ] [ -S scandir ] [ -w maxtime ] [ -I stop|warn ] [ -U stop|warn ] [ -t finishtime ] [ -g servicesgrace ] [ -k killgrace ] [ -c exitcode ] [ -m auto|container|guest ] [ -n hostname ] [ -C tty ] [ -o auto|on|off ] [ -M main ] [ -r restarts ] [ -N nofile ] [ -O oomadj ] [ -A all|none|services ] [ -a poweroff|reboot|halt ] [ prog... ]";
const PROG: Program = Program::new("tend-init", USAGE);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), SPEC);
    if p.has('h') {
        print!("usage: {USAGE}\n{}", help());
        std::process::exit(code::OK);
    }
    // The request may also be written `-s poweroff|reboot|halt`: those three words are
    // never taken as a services directory (a directory of that name is given as ./halt).
    let request = match p.value('a') {
        Some(a) => Some(Action::parse(a).unwrap_or_else(|| PROG.usage_exit())),
        None => p.value('s').and_then(Action::parse),
    };
    if let Some(action) = request {
        match tend_init::guest::request(action) {
            Ok(()) => std::process::exit(code::OK),
            Err(e) => PROG.fatal(e.code(), e),
        }
    }
    let env: Vec<_> = std::env::vars_os().collect();
    // std::env::args_os is empty under tend's own C entry on musl: argv as the C runtime gave it.
    let argv0 = tend_sys::entry::argv()
        .into_iter()
        .next()
        .unwrap_or_default();
    // Run as s6-overlay's /run/s6/basedir/bin/halt: stop the container.
    if std::path::Path::new(&argv0).file_name() == Some(std::ffi::OsStr::new("halt")) {
        match tend_init::overlay::halt(&env) {
            Ok(()) => std::process::exit(code::OK),
            Err(e) => PROG.fatal(code::SYSTEM, e),
        }
    }
    match tend_init::start(&argv0, &p.opts, &p.operands, &env, &PROG) {
        Ok(c) => std::process::exit(c),
        Err(e) => PROG.fatal(e.code(), e),
    }
}
