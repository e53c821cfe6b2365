//! tend-summary — one line (or JSON object, or Prometheus series) per service. See man/man8/tend-summary.8.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use tend_cli::{Program, code};
use tend_client::summary;

const USAGE: &str = "tend-summary [ -j | -p ] [ scandir | servicedir... ]";
const PROG: Program = Program::new("tend-summary", USAGE);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "jp");
    if p.has('j') && p.has('p') {
        PROG.usage_exit()
    }
    let mut operands: Vec<PathBuf> = p.operands.iter().map(PathBuf::from).collect();
    if operands.is_empty() {
        match std::env::var_os("TEND_SCANDIR") {
            Some(d) if !d.is_empty() => operands.push(PathBuf::from(d)),
            _ => PROG.usage_exit(),
        }
    }
    let dirs = summary::services(&operands).unwrap_or_else(|e| {
        PROG.fatal(
            code::SYSTEM,
            format_args!(
                "unable to list {}: {}",
                operands[0].display(),
                nix::errno::Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)).desc()
            ),
        )
    });
    let rows = summary::rows(&dirs);
    for r in &rows {
        if let Some(e) = &r.error {
            PROG.warn(format_args!("{}: {e}", r.name));
        }
    }
    let out = if p.has('j') {
        summary::json_array(&rows)
    } else if p.has('p') {
        summary::prometheus(&rows)
    } else {
        summary::table(&rows)
    };
    if let Err(e) = std::io::Write::write_all(&mut std::io::stdout().lock(), out.as_bytes()) {
        PROG.fatal(
            code::SYSTEM,
            format_args!(
                "unable to write to stdout: {}",
                nix::errno::Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)).desc()
            ),
        )
    }
    std::process::exit(if rows.iter().any(summary::Row::is_bad) {
        code::NO
    } else {
        code::OK
    })
}
