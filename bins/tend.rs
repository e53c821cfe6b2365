//! tend — every tend program in one executable, chosen by the name it is run as (a hard
//! link per program) or by its first argument. See man/man8/tend.8.
//!
//! One file for every program means one copy of the text in memory and on disk for a
//! whole supervision tree: the scanner, its supervisors and the loggers share pages.
//! Each program keeps its own source in bins/, its own usage, messages and exit codes.
//!
//! The executable has its own C `main` (`#![no_main]`): Rust's start-up would reopen
//! closed fds 0-2 on /dev/null before any program runs (tend_sys::entry says why that is
//! wrong for a chain tool, and what the entry point does instead). `tend_sys::c_main!`
//! defines it, with the one `unsafe` call and its proof written in sys: a `main` symbol
//! can only be defined in the executable itself.
#![no_main]
#![deny(unsafe_code)]

use std::os::unix::ffi::OsStrExt;
use tend_cli::{Program, code};

#[path = "tend-applyuidgid.rs"]
mod applyuidgid;
#[path = "tend-cgroup.rs"]
mod cgroup;
#[path = "tend-check.rs"]
mod check;
#[path = "tend-chpst.rs"]
mod chpst;
#[path = "tend-cpuset.rs"]
mod cpuset;
#[path = "tend-envdir.rs"]
mod envdir;
#[path = "tend-envuidgid.rs"]
mod envuidgid;
#[path = "tend-extension.rs"]
mod extension;
#[path = "tend-fghack.rs"]
mod fghack;
#[path = "tend-init.rs"]
mod init;
#[path = "tend-instance-control.rs"]
mod instance_control;
#[path = "tend-instance-create.rs"]
mod instance_create;
#[path = "tend-instance-delete.rs"]
mod instance_delete;
#[path = "tend-instance-list.rs"]
mod instance_list;
#[path = "tend-instance-maker.rs"]
mod instance_maker;
#[path = "tend-instance-status.rs"]
mod instance_status;
#[path = "tend-ipcclient.rs"]
mod ipcclient;
#[path = "tend-ipcserver.rs"]
mod ipcserver;
#[path = "tend-ipcserver-access.rs"]
mod ipcserver_access;
#[path = "tend-ipcserver-socketbinder.rs"]
mod ipcserver_socketbinder;
#[path = "tend-ipcserverd.rs"]
mod ipcserverd;
#[path = "tend-log.rs"]
mod log;
#[path = "tend-notify.rs"]
mod notify;
#[path = "tend-oom.rs"]
mod oom;
#[path = "tend-permafailon.rs"]
mod permafailon;
#[path = "tend-pty.rs"]
mod pty;
#[path = "tend-rc.rs"]
mod rc;
#[path = "tend-setlock.rs"]
mod setlock;
#[path = "tend-setsid.rs"]
mod setsid;
#[path = "tend-setuidgid.rs"]
mod setuidgid;
#[path = "tend-socklog.rs"]
mod socklog;
#[path = "tend-softlimit.rs"]
mod softlimit;
#[path = "tend-summary.rs"]
mod summary;
#[path = "tend-supervise.rs"]
mod supervise;
#[path = "tend-sv.rs"]
mod sv;
#[path = "tend-svc.rs"]
mod svc;
#[path = "tend-svdt.rs"]
mod svdt;
#[path = "tend-svdt-clear.rs"]
mod svdt_clear;
#[path = "tend-svlink.rs"]
mod svlink;
#[path = "tend-svlisten.rs"]
mod svlisten;
#[path = "tend-svlisten1.rs"]
mod svlisten1;
#[path = "tend-svok.rs"]
mod svok;
#[path = "tend-svperms.rs"]
mod svperms;
#[path = "tend-svscan.rs"]
mod svscan;
#[path = "tend-svscanctl.rs"]
mod svscanctl;
#[path = "tend-svstat.rs"]
mod svstat;
#[path = "tend-svunlink.rs"]
mod svunlink;
#[path = "tend-svwait.rs"]
mod svwait;
#[path = "tend-tai64n.rs"]
mod tai64n;
#[path = "tend-tai64nlocal.rs"]
mod tai64nlocal;
#[path = "tend-ucspilogd.rs"]
mod ucspilogd;
#[path = "tend-vsockclient.rs"]
mod vsockclient;
#[path = "tend-vsockserver.rs"]
mod vsockserver;
#[path = "tend-with-contenv.rs"]
mod with_contenv;

/// Every program and its `main`, sorted by name. Adding a program: one `mod` above and one
/// row here (README, "Adding a program"); tests/it/docs.rs checks that every [[bin]] is here.
/// s6 (and s6-overlay) names whose tend program is not `tend-` + the rest of the name.
const S6_NAMES: &[(&str, &str)] = &[
    ("with-contenv", "tend-with-contenv"),
    ("s6-notifyoncheck", "tend-check"),
];

const PROGRAMS: &[(&str, fn())] = &[
    ("tend-applyuidgid", applyuidgid::main),
    ("tend-cgroup", cgroup::main),
    ("tend-check", check::main),
    ("tend-chpst", chpst::main),
    ("tend-cpuset", cpuset::main),
    ("tend-envdir", envdir::main),
    ("tend-envuidgid", envuidgid::main),
    ("tend-extension", extension::main),
    ("tend-fghack", fghack::main),
    ("tend-init", init::main),
    ("tend-instance-control", instance_control::main),
    ("tend-instance-create", instance_create::main),
    ("tend-instance-delete", instance_delete::main),
    ("tend-instance-list", instance_list::main),
    ("tend-instance-maker", instance_maker::main),
    ("tend-instance-status", instance_status::main),
    ("tend-ipcclient", ipcclient::main),
    ("tend-ipcserver", ipcserver::main),
    ("tend-ipcserver-access", ipcserver_access::main),
    ("tend-ipcserver-socketbinder", ipcserver_socketbinder::main),
    ("tend-ipcserverd", ipcserverd::main),
    ("tend-log", log::main),
    ("tend-notify", notify::main),
    ("tend-oom", oom::main),
    ("tend-permafailon", permafailon::main),
    ("tend-pty", pty::main),
    ("tend-rc", rc::main),
    ("tend-setlock", setlock::main),
    ("tend-setsid", setsid::main),
    ("tend-setuidgid", setuidgid::main),
    ("tend-socklog", socklog::main),
    ("tend-softlimit", softlimit::main),
    ("tend-summary", summary::main),
    ("tend-supervise", supervise::main),
    ("tend-sv", sv::main),
    ("tend-svc", svc::main),
    ("tend-svdt", svdt::main),
    ("tend-svdt-clear", svdt_clear::main),
    ("tend-svlink", svlink::main),
    ("tend-svlisten", svlisten::main),
    ("tend-svlisten1", svlisten1::main),
    ("tend-svok", svok::main),
    ("tend-svperms", svperms::main),
    ("tend-svscan", svscan::main),
    ("tend-svscanctl", svscanctl::main),
    ("tend-svstat", svstat::main),
    ("tend-svunlink", svunlink::main),
    ("tend-svwait", svwait::main),
    ("tend-tai64n", tai64n::main),
    ("tend-tai64nlocal", tai64nlocal::main),
    ("tend-ucspilogd", ucspilogd::main),
    ("tend-vsockclient", vsockclient::main),
    ("tend-vsockserver", vsockserver::main),
    ("tend-with-contenv", with_contenv::main),
];

const PROG: Program = Program::new("tend", "tend -l | tend prog [ args... ]");

/// The program called `name`, with or without its `tend-` prefix.
fn find(name: &[u8]) -> Option<(&'static str, fn())> {
    let full = |n: &str| n.as_bytes() == name;
    let short = |n: &str| n.as_bytes().strip_prefix(b"tend-") == Some(name);
    PROGRAMS
        .iter()
        .find(|(n, _)| full(n))
        .or_else(|| PROGRAMS.iter().find(|(n, _)| short(n)))
        .copied()
}

/// `tend --help`: the usage, then every program with its man page's one-line summary.
fn help() -> ! {
    let own = tend_cli::help::page("tend").map_or("", |p| p.help);
    let mut text = own
        .lines()
        .take_while(|l| !l.starts_with("The manual"))
        .collect::<Vec<_>>()
        .join("\n");
    text.push_str("\nPrograms:\n");
    let width = PROGRAMS.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    for (name, _) in PROGRAMS {
        let summary = tend_cli::help::page(name).map_or("", |p| p.summary);
        text.push_str(&format!("  {name:width$}  {summary}\n"));
    }
    text.push_str("\nExecutables of their own (not in tend -l):\n");
    for name in ["tend-jail", "tend-jobs", "tend-monit"] {
        let summary = tend_cli::help::page(name).map_or("", |p| p.summary);
        text.push_str(&format!("  {name:width$}  {summary}\n"));
    }
    text.push_str("\nEach answers --help and --version; the manual: man 8 tend, man 8 tend-PROG\n");
    tend_cli::help::print("tend", &text)
}

fn list() -> ! {
    let mut text = String::new();
    for (name, _) in PROGRAMS {
        text.push_str(name);
        text.push('\n');
    }
    match tend_sys::fd::write_all(std::io::stdout(), text.as_bytes()) {
        Ok(()) => std::process::exit(code::OK),
        Err(e) => PROG.fatal(
            code::SYSTEM,
            format_args!("unable to write to stdout: {}", e.desc()),
        ),
    }
}

// The C runtime's call: straight into `run`, through tend_sys::entry (argv kept,
// SIGPIPE ignored; fds 0-2 left as they are).
tend_sys::c_main!(run);

/// The program named by argv[0] (a link) or by the first argument.
fn run() {
    let mut argv = tend_sys::entry::argv().into_iter();
    let argv0 = argv.next().unwrap_or_default();
    let base = argv0
        .as_bytes()
        .rsplit(|&b| b == b'/')
        .next()
        .unwrap_or_default();
    // Run through a link: argv[0] names the program (only full names: a link `svc` is not
    // ours). `init` too, for a kernel that runs /init or /sbin/init with no arguments.
    let base: &[u8] = match base {
        b"init" => b"tend-init",
        // runit's names, for run scripts and operators' commands written for runit.
        b"chpst" => b"tend-chpst",
        b"sv" => b"tend-sv",
        // s6-overlay's /run/s6/basedir/bin/halt, a link tend-init makes to this executable.
        b"halt" => b"tend-init",
        b"runsvdir" => b"tend-svscan",
        b"runsv" => b"tend-supervise",
        _ => base,
    };
    // s6-overlay images call s6's programs by name (packaging/install.sh -6 links them):
    // `s6-NAME` is tend-NAME, and the names in S6_NAMES are theirs.
    let from_s6;
    let base: &[u8] = match S6_NAMES.iter().find(|(s6, _)| s6.as_bytes() == base) {
        Some((_, ours)) => ours.as_bytes(),
        None => match base.strip_prefix(b"s6-") {
            Some(rest) => {
                from_s6 = [b"tend-", rest].concat();
                &from_s6
            }
            None => base,
        },
    };
    if let Some(&(name, main)) = PROGRAMS.iter().find(|(n, _)| n.as_bytes() == base) {
        tend_cli::running(name);
        return main();
    }
    // An init script that is a symlink to tend-sv (/etc/init.d/NAME): sv's LSB mode, which
    // tend-sv takes from the name it was called by.
    if let Ok(target) = std::fs::read_link(&argv0)
        && target.file_name().is_some_and(|n| n == "tend-sv")
    {
        // The script's own name has no page: its --help is its own usage, not ours.
        tend_cli::running("");
        return sv::main();
    }
    let first = argv.next().unwrap_or_else(|| PROG.usage_exit());
    match first.as_bytes() {
        b"-l" => list(),
        b"--help" => help(),
        b"--version" => tend_cli::help::print("tend", &tend_cli::help::version_line("tend")),
        [b'-', ..] => PROG.usage_exit(),
        name => match find(name) {
            Some((name, main)) => {
                tend_cli::named_by_first_argument();
                tend_cli::running(name);
                main()
            }
            None => PROG.fatal(
                code::USAGE,
                format_args!("unknown program: {}", tend_cli::shown(&first)),
            ),
        },
    }
}
