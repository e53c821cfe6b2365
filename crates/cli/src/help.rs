//! `--help` and `--version`, answered the same way by every program.
//!
//! The text comes from the man pages, read at build time (crates/cli/build.rs): the
//! SYNOPSIS as the usage, one line per entry of OPTIONS, the NAME line as the summary.
//! Only the first argument is looked at: `tend-setsid prog --help` runs `prog --help`,
//! and an option's value (`tend-log -d --help`) is never taken for one.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::OnceLock;

use crate::code;

/// One man page, as `--help` shows it.
pub struct Page {
    pub name: &'static str,
    /// The NAME line's description.
    pub summary: &'static str,
    /// The whole `--help` text.
    pub help: &'static str,
}

/// Every man page's `--help`, one static each (`pages::TEND_SVC` is tend-svc's), and
/// `pages::ALL`. An executable names the pages of the programs it holds ([`holds`]), so
/// that it carries only those texts.
pub mod pages {
    use super::Page;
    include!(concat!(env!("OUT_DIR"), "/help.rs"));
}

/// The toolkit's version (the workspace's).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

static RUNNING: OnceLock<&'static str> = OnceLock::new();

/// The pages of the programs this executable holds.
static HERE: OnceLock<&'static [&'static Page]> = OnceLock::new();

pub(crate) fn running(name: &'static str) {
    let _ = RUNNING.set(name);
}

/// Name the pages of the programs this executable holds, before a program reads its
/// arguments (the multi-call entry point does it with its table's; an executable of one
/// program, with its own). The first call counts.
pub fn holds(pages: &'static [&'static Page]) {
    let _ = HERE.set(pages);
}

/// The pages this executable holds: what [`holds`] named. Without that, none; or, in a
/// build with the `all-pages` feature (`--features separate`, where every program is its
/// own executable and none says), every page.
fn here() -> &'static [&'static Page] {
    match HERE.get() {
        Some(pages) => pages,
        #[cfg(feature = "all-pages")]
        None => pages::ALL,
        #[cfg(not(feature = "all-pages"))]
        None => &[],
    }
}

/// The page of the program called `name` (`tend-svc`, `tend`), if this executable holds it.
pub fn page(name: &str) -> Option<&'static Page> {
    here().iter().copied().find(|p| p.name == name)
}

/// Whether a first argument asks for help or the version (checked at every start, so
/// inline and allocation-free; the answer is out of line).
#[inline]
pub(crate) fn asks(first: &OsStr) -> bool {
    matches!(first.as_bytes(), b"--help" | b"--version")
}

/// Answer `--help` or `--version` on stdout and exit 0 (111 if stdout cannot take it).
/// The program is the one the multi-call entry point named, else argv[0]'s last component
/// (`tend-monit`, or `monit`, the link packaging/install.sh makes); a name with no page
/// is left to the program (this returns).
#[cold]
pub(crate) fn answer(argv0: &OsStr, first: &OsStr) {
    let page = match RUNNING.get() {
        Some(name) => page(name),
        None => {
            let base = argv0
                .as_bytes()
                .rsplit(|&b| b == b'/')
                .next()
                .unwrap_or_default();
            here().iter().copied().find(|p| {
                let name = p.name.as_bytes();
                name == base || name.strip_prefix(b"tend-") == Some(base)
            })
        }
    };
    let Some(p) = page else { return };
    match first.as_bytes() {
        b"--help" => print(p.name, p.help),
        _ => print(p.name, &version_line(p.name)),
    }
}

/// `tend-svc (tend) 0.1.0`
pub fn version_line(name: &str) -> String {
    format!("{name} (tend) {VERSION}\n")
}

/// Write `text` to stdout and exit 0, or exit 111 with the reason.
pub fn print(name: &str, text: &str) -> ! {
    match tend_sys::fd::write_all(std::io::stdout(), text.as_bytes()) {
        Ok(()) => std::process::exit(code::OK),
        Err(e) => {
            tend_sys::warn::line(
                name,
                "fatal",
                &format_args!("unable to write to stdout: {}", e.desc()),
            );
            std::process::exit(code::SYSTEM)
        }
    }
}
