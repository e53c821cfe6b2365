//! tend-ipcserver-access — accept or refuse a UCSPI client by uid and gid from a rules directory, as s6-ipcserver-access. See man/man8/tend-ipcserver-access.8.
#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use tend_cli::{Program, code, parse_uint};
use tend_env::{envdir, environ};
use tend_ucspi::access::{self, Verdict};

const PROG: Program = Program::new(
    "tend-ipcserver-access",
    "tend-ipcserver-access [ -v verbosity ] [ -e | -E ] [ -l localname ] [ -i rulesdir | -x rulesfile ] prog...",
);

pub fn main() {
    let p = PROG.parse(tend_cli::args(), "v:eEl:i:x:");
    let (mut verbosity, mut clear, mut localname, mut rules) = (1u32, false, None, None);
    for (c, v) in &p.opts {
        match c {
            'v' => {
                verbosity = v
                    .as_deref()
                    .and_then(parse_uint)
                    .unwrap_or_else(|| PROG.usage_exit())
            }
            'e' => clear = false,
            'E' => clear = true,
            'l' => localname = v.clone(),
            'i' => rules = v.clone().map(PathBuf::from),
            'x' => PROG.fatal(
                code::USAGE,
                "cdb rules files are not supported: use -i rulesdir",
            ),
            _ => PROG.usage_exit(),
        }
    }
    if p.operands.is_empty() {
        PROG.usage_exit()
    }
    let mut env = tend_env::sys::exec::current_env();
    let proto = environ::get(&env, "PROTO")
        .map(|v| v.to_os_string())
        .unwrap_or_else(|| PROG.fatal(code::USAGE, "PROTO not set: not run under a UCSPI server"));
    let var = |suffix: &str| {
        let mut n = proto.clone();
        n.push(suffix);
        n
    };
    let id = |suffix: &str| -> u32 {
        let name = var(suffix);
        environ::get(&env, &name.to_string_lossy())
            .and_then(parse_uint)
            .unwrap_or_else(|| {
                PROG.fatal(
                    code::USAGE,
                    format_args!("bad or missing {}", name.to_string_lossy()),
                )
            })
    };
    let client = (id("REMOTEEUID"), id("REMOTEEGID"));
    let me = (
        nix::unistd::geteuid().as_raw(),
        nix::unistd::getegid().as_raw(),
    );
    let verdict = match &rules {
        Some(dir) => access::check(dir, client, me).unwrap_or_else(|e| PROG.fatal(e.code(), e)),
        None => {
            if verbosity >= 2 {
                PROG.warn("invoked without a ruleset");
            }
            Verdict::Allow(None)
        }
    };
    let pid = std::process::id();
    let rule = match verdict {
        Verdict::Deny => {
            if verbosity >= 2 {
                PROG.line(
                    "info",
                    format_args!("deny pid {pid} uid {} gid {}", client.0, client.1),
                );
            }
            std::process::exit(code::NO)
        }
        Verdict::Allow(rule) => rule,
    };
    if verbosity >= 1 {
        PROG.line(
            "info",
            format_args!("allow pid {pid} uid {} gid {}", client.0, client.1),
        );
    }
    if clear {
        for suffix in [
            "REMOTEEUID",
            "REMOTEEGID",
            "REMOTEPATH",
            "LOCALPATH",
            "CONNNUM",
        ] {
            environ::unset(&mut env, &var(suffix));
        }
        environ::unset(&mut env, std::ffi::OsStr::new("PROTO"));
    } else {
        let local = localname.unwrap_or_else(|| OsString::from_vec(access::local_path()));
        environ::set(&mut env, &var("LOCALPATH"), &local);
    }
    let mut argv = p.operands.clone();
    if let Some(rule) = rule {
        match envdir::read(&rule.join("env"), &envdir::Options::default()) {
            Ok(changes) => envdir::apply(&mut env, &changes),
            Err(e) if envdir::is_missing(&e) => {}
            Err(e) => PROG.fatal(e.code(), e),
        }
        if let Ok(newprog) = std::fs::read(rule.join("exec")) {
            let newprog: Vec<u8> = newprog.into_iter().take(4096).collect();
            argv = vec!["execlineb".into(), "-c".into(), OsString::from_vec(newprog)];
        }
    }
    let e = tend_env::exec(&argv, &env);
    PROG.fatal(e.code(), e)
}
