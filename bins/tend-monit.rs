//! tend-monit — read monit control files and answer as monit does. See
//! man/man8/tend-monit.8.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use tend_cli::{Program, code, shown};
use tend_monit::model::Control;

const USAGE: &str = "tend-monit [ -c file ] [ -tV ] [ validate ]";
const PROG: Program = Program::new("tend-monit", USAGE);
const SPEC: &str = "c:tV";
/// The version monit's `-V` prints first; tend's own follows.
const VERSION: &str = concat!(
    "This is tend-monit version ",
    env!("CARGO_PKG_VERSION"),
    " (speaks monit 5.2.5 and 5.33)"
);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), SPEC);
    if p.has('V') {
        println!("{VERSION}");
        std::process::exit(code::OK)
    }
    let ops: Vec<_> = p.operands.iter().map(|o| o.to_str()).collect();
    match ops.as_slice() {
        [] if p.has('t') => test(control_file(&p)),
        [Some("validate")] if p.has('t') => test(control_file(&p)),
        _ => PROG.usage_exit(),
    }
}

/// `-c FILE`, or the first of monit's search order that exists.
fn control_file(p: &tend_cli::Parsed) -> PathBuf {
    if let Some(c) = p.value('c') {
        return PathBuf::from(c);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    tend_monit::find_control_file(home.as_deref()).unwrap_or_else(|| {
        let tried: Vec<String> = tend_monit::search_order(home.as_deref())
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        PROG.fatal(
            code::SYSTEM,
            format_args!("no control file: none of {}", tried.join(", ")),
        )
    })
}

/// Read the file and everything it includes; every problem on stderr. The configuration
/// when it is valid; otherwise exit 1 (monit's code for a bad control file).
fn read(file: &std::path::Path) -> Control {
    match tend_monit::check_file_mode(file) {
        Ok(()) => {}
        Err(tend_monit::ModeError::Io(e)) => PROG.fatal(
            code::NO,
            format_args!("unable to read {}: {e}", shown(file.as_os_str())),
        ),
        Err(e) => PROG.fatal(code::NO, format_args!("{}: {e}", shown(file.as_os_str()))),
    }
    let (control, errors) = tend_monit::read(file).unwrap_or_else(|e| {
        PROG.fatal(
            code::NO,
            format_args!("unable to read {}: {}", e.path.display(), e.err),
        )
    });
    for (loc, pattern) in &control.empty_includes {
        PROG.warn(format_args!("{loc}: include {pattern}: no file matches"));
    }
    for w in tend_monit::validate::warnings(&control) {
        PROG.warn(w);
    }
    for e in &errors {
        PROG.line("error", e);
    }
    if !errors.is_empty() {
        let n = errors.len();
        PROG.fatal(
            code::NO,
            format_args!(
                "{}: {n} error{} in the control file",
                file.display(),
                if n == 1 { "" } else { "s" }
            ),
        )
    }
    control
}

/// `-t`: validate; list what would be ignored.
fn test(file: PathBuf) -> ! {
    let control = read(&file);
    for i in &control.ignored {
        PROG.line("ignored", format_args!("{}: {}: {}", i.loc, i.what, i.why));
    }
    println!("Control file syntax OK");
    std::process::exit(code::OK)
}
