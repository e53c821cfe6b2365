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

use tend_cli::Program;
use tend_cli::multicall::{Entry, Multicall};

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
const PROGRAMS: &[Entry] = &[
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

const TEND: Multicall = Multicall {
    prog: Program::new("tend", "tend -l | tend prog [ args... ]"),
    programs: PROGRAMS,
    pages: tend_cli::help::pages::ALL,
    // An init script that is a symlink to tend-sv (/etc/init.d/NAME): sv's LSB mode, which
    // tend-sv takes from the name it was called by.
    by_symlink: Some(("tend-sv", sv::main)),
    also: (
        "Executables of their own (not in tend -l)",
        &["tend-jail", "tend-jobs", "tend-monit", "tend-tree"],
    ),
    // Under any other name (cargo's deps/tend-HASH, a renamed copy), the first argument
    // names the program.
    refuses_other_programs: false,
};

// The C runtime's call: straight into `run`, through tend_sys::entry (argv kept,
// SIGPIPE ignored; fds 0-2 left as they are).
tend_sys::c_main!(run);

/// The program named by argv[0] (a link) or by the first argument (tend_cli::multicall).
fn run() {
    TEND.run()
}
