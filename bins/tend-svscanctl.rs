//! tend-svscanctl — send commands to the scanner running on a scan directory. See man/man8/tend-svscanctl.8.
#![forbid(unsafe_code)]

use std::path::Path;
use tend_cli::{Program, code, shown};
use tend_client::scanctl::send_letters;
use tend_proto::servicedir::SVSCAN;

const USAGE: &str = "tend-svscanctl [ -zabhitqnN ] scandir";
const PROG: Program = Program::new("tend-svscanctl", USAGE);

pub fn main() {
    // The letters are proto's, once (tests/it/versions.rs holds the usage line to them).
    let p = PROG.parse(tend_cli::args(), tend_proto::control::SCAN_LETTERS);
    let Some(dir) = p.operands.first() else {
        PROG.usage_exit()
    };
    let letters: Vec<u8> = p.opts.iter().map(|(c, _)| *c as u8).collect();
    match send_letters(Path::new(dir), &letters) {
        Ok(()) => std::process::exit(code::OK),
        Err(e) => PROG.fatal(e.code(), e.describe(&shown(dir), SVSCAN)),
    }
}
