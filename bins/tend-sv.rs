//! tend-sv — runit's sv: control and query services under tend, s6 or runit supervisors. See man/man8/tend-sv.8.
#![forbid(unsafe_code)]

use std::ffi::OsString;
use tend_cli::Program;
use tend_runit::sv::{self, Request, Sink};

const USAGE: &str = "tend-sv [ -v ] [ -V ] [ -w sec ] [ -l ] command service...";
const PROG: Program = Program::new("tend-sv", USAGE);
/// sv's LSB init-script mode: its usage line and exit codes.
const LSB_USAGE_EXIT: i32 = 2;
const DEFAULT_SVDIR: &str = "/etc/service";

struct Stdio;

impl Sink for Stdio {
    fn out(&mut self, line: &str) {
        let _ = tend_sys::fd::write_all(std::io::stdout(), line.as_bytes());
    }
    fn err(&mut self, line: &str) {
        tend_sys::warn::line(
            PROG.name,
            "warning",
            &line.trim_end().trim_start_matches("warning: "),
        );
    }
}

/// The name sv was called by, when it is not tend-sv's own (an /etc/init.d link).
fn script_name(argv0: &OsString) -> Option<OsString> {
    let base = std::path::Path::new(argv0).file_name()?.to_os_string();
    let own = base == "tend-sv" || base == "tend" || base == "sv";
    (!own).then_some(base)
}

pub fn main() {
    let (argv0, args) = tend_cli::argv0_and_args();
    let script = script_name(&argv0);
    let lsb = script.is_some();
    let usage = || -> ! {
        if let Some(name) = &script {
            let shown = tend_cli::shown(name);
            PROG.line("usage", format_args!("{shown} [ -w sec ] command"));
            std::process::exit(LSB_USAGE_EXIT)
        }
        PROG.usage_exit()
    };
    let p = match tend_cli::parse(args, "w:vVl") {
        Ok(p) => p,
        Err(_) => usage(),
    };
    let mut wait = std::env::var_os("SVWAIT")
        .and_then(|w| tend_runit::chpst::parse_number(w.as_encoded_bytes()))
        .unwrap_or(7);
    let (mut verbose, mut log) = (false, false);
    for (opt, value) in &p.opts {
        match opt {
            'w' => {
                let v = value.as_deref().unwrap_or_default().as_encoded_bytes();
                // sv's scan_ulong: the leading digits ("-w 1.5" is 1).
                let digits = v.iter().take_while(|b| b.is_ascii_digit()).count();
                wait = tend_runit::chpst::parse_number(&v[..digits]).unwrap_or(0);
                verbose = true;
            }
            'v' => verbose = true,
            'l' => log = true,
            _ => usage(),
        }
    }
    let mut operands = p.operands.into_iter();
    let Some(word) = operands.next() else { usage() };
    let services: Vec<OsString> = match &script {
        Some(name) => vec![name.clone()],
        None => operands.collect(),
    };
    if services.is_empty() {
        usage()
    }
    let Some(action) = sv::action(word.as_encoded_bytes(), verbose, lsb) else {
        usage()
    };
    let svdir = std::env::var_os("SVDIR")
        .or_else(|| tend_client::scandir_option(None))
        .unwrap_or_else(|| DEFAULT_SVDIR.into());
    let req = Request {
        action,
        services,
        svdir,
        wait,
        log,
        lsb,
    };
    std::process::exit(sv::run(&req, &mut Stdio))
}
