//! tend-jail — bpm's isolation (namespaces, a new root, capabilities, no_new_privs,
//! rlimits, a cgroup, seccomp) for one program, then exec. See man/man8/tend-jail.8.
//!
//! Its own C `main`, as tend-jobs: Rust's start-up would reopen closed fds 0-2 on
//! /dev/null, and a chain tool passes them on as it got them.
#![no_main]
#![deny(unsafe_code)]

use std::ffi::OsString;
use tend_cli::{Program, code, shown};
use tend_jail::plan::{OPTIONS, Plan};

const USAGE: &str = "tend-jail [ -f file ] -j job [ -u user ] [ -c cap ]... [ -v path[:wxms] ]... [ -V pattern[:wxm] ]... [ -P ] [ -H ] [ -e ] [ -p ] [ -n files ] [ -C bytes ] [ -m bytes ] [ -t tasks ] [ -g cgroup ] [ -d workdir ] [ -s signal ] [ -R vcaproot ] [ -r rootdir ] prog...";
const PROG: Program = Program::new("tend-jail", USAGE);

/// The start's allocations from one buffer, not musl's page per size class
/// (tend_sys::arena; bench/RESULTS.md, "tend-jail's start, cut").
#[global_allocator]
static ARENA: tend_sys::arena::Arena<{ 256 * 1024 }> = tend_sys::arena::Arena::new();

#[allow(unsafe_code)]
// SAFETY: `main` is the symbol the C runtime calls; nothing else in the program defines
// it (`#![no_main]`), and its signature is C's.
#[unsafe(no_mangle)]
extern "C" fn main(argc: std::ffi::c_int, argv: *const *const std::ffi::c_char) -> std::ffi::c_int {
    // SAFETY: the C runtime passes main its argc and argv, valid for the whole run.
    unsafe { tend_sys::entry::start(argc, argv, run) }
}

/// `-f FILE`'s words, one a line, go before the command line's own options.
fn with_file(args: Vec<OsString>) -> Vec<OsString> {
    let p = PROG.parse(args.clone(), OPTIONS);
    let Some(file) = p.value('f') else {
        return args;
    };
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| {
        PROG.fatal(
            code::SYSTEM,
            format_args!(
                "unable to read {}: {}",
                shown(file),
                tend_sys::error::io_reason(&e)
            ),
        )
    });
    text.lines()
        .filter(|l| !l.is_empty())
        .map(OsString::from)
        .chain(args)
        .collect()
}

fn run() {
    tend_cli::help::holds(const { &[&tend_cli::help::pages::TEND_JAIL] });
    let p = PROG.parse(with_file(tend_cli::args().collect()), OPTIONS);
    let Some(job) = p.value('j').and_then(|j| j.to_str()) else {
        PROG.usage_exit()
    };
    if p.operands.is_empty() || job.is_empty() || job.contains('/') || job.starts_with('.') {
        PROG.usage_exit()
    }
    let mut plan = Plan::new(job);
    for (c, v) in &p.opts {
        if matches!(c, 'f' | 'j') {
            continue;
        }
        let v = v.as_deref().map(|v| {
            v.to_str()
                .unwrap_or_else(|| PROG.fatal(code::USAGE, format_args!("not UTF-8: {}", shown(v))))
        });
        if let Err(e) = plan.take(*c, v) {
            PROG.fatal(code::USAGE, e)
        }
    }
    let env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    match tend_jail::run(&plan, &p.operands, &env) {
        Ok(code) => std::process::exit(code),
        Err(f) => PROG.fatal(f.code, f),
    }
}
