//! tend-tree — the programs a running supervision tree runs, in one small executable,
//! chosen by the name it is run as (a hard link per program) or by its first argument.
//! See man/man8/tend-tree.8.
//!
//! The multi-call `tend` holds every program; a tree's scanner, supervisors and loggers
//! would map all of its text to run a small part of it. packaging/links.sh and
//! install.sh point these names at this executable instead, and tend-svscan starts the
//! tend-supervise beside its own executable: the whole tree runs from this file. `tend`
//! still answers these names too. Same entry point and dispatch as bins/tend.rs
//! (tend_cli::multicall); the programs are the same sources.
#![no_main]
#![deny(unsafe_code)]

use tend_cli::Program;
use tend_cli::help::{Page, pages};
use tend_cli::multicall::{Entry, Multicall};

#[path = "tend-log.rs"]
mod log;
#[path = "tend-supervise.rs"]
mod supervise;
#[path = "tend-svc.rs"]
mod svc;
#[path = "tend-svok.rs"]
mod svok;
#[path = "tend-svscan.rs"]
mod svscan;
#[path = "tend-svscanctl.rs"]
mod svscanctl;
#[path = "tend-svwait.rs"]
mod svwait;

/// One list makes both tables: each row is a program's name, its module and its man
/// page's `--help` (the executable carries only those pages).
macro_rules! programs {
    ($($name:literal => $module:ident, $page:ident;)*) => {
        const PROGRAMS: &[Entry] = &[$(($name, $module::main)),*];
        /// Its own page, its programs' and tend's (the last row of its --help).
        const PAGES: &[&Page] = &[&pages::TEND_TREE, $(&pages::$page,)* &pages::TEND];
    };
}

// The programs, sorted by name: the tree's three long-lived ones and the clients that run
// and finish scripts call on their neighbours (each measured: tend-svok and
// tend-svscanctl add under 1 kB of text, tend-svwait 8 kB, tend-svc 11 kB). tend-svstat
// is left in `tend`: an operator's report (JSON, spawn failures) that adds 19 kB of text
// (bench/RESULTS.md, "Disk: a tree's own executable"). Every row is also in bins/tend.rs
// (tests/it/multicall.rs checks it).
programs! {
    "tend-log" => log, TEND_LOG;
    "tend-supervise" => supervise, TEND_SUPERVISE;
    "tend-svc" => svc, TEND_SVC;
    "tend-svok" => svok, TEND_SVOK;
    "tend-svscan" => svscan, TEND_SVSCAN;
    "tend-svscanctl" => svscanctl, TEND_SVSCANCTL;
    "tend-svwait" => svwait, TEND_SVWAIT;
}

const TREE: Multicall = Multicall {
    prog: Program::new("tend-tree", "tend-tree -l | tend-tree prog [ args... ]"),
    programs: PROGRAMS,
    pages: PAGES,
    by_symlink: None,
    also: ("Every other program", &["tend"]),
    // A link of another program's name here is a packaging mistake: said, not guessed at.
    refuses_other_programs: true,
};

// The C runtime's call: straight into `run`, through tend_sys::entry (argv kept,
// SIGPIPE ignored; fds 0-2 left as they are).
tend_sys::c_main!(run);

/// The program named by argv[0] (a link) or by the first argument (tend_cli::multicall).
fn run() {
    TREE.run()
}
