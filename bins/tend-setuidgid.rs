//! tend-setuidgid — run a program as another account. See man/man8/tend-setuidgid.8.
#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use tend_cli::{Program, code, shown};
use tend_env::{account, sys, uidgid};

const USAGE: &str = "tend-setuidgid account prog...";
const PROG: Program = Program::new("tend-setuidgid", USAGE);

fn main() {
    let p = PROG.parse(std::env::args_os().skip(1), "");
    let [account, argv @ ..] = p.operands.as_slice() else {
        PROG.usage_exit()
    };
    if argv.is_empty() {
        PROG.usage_exit()
    }
    let mut env = sys::exec::current_env();
    if !account.is_empty() {
        let creds = credentials(account, &mut env);
        if let Err(e) = uidgid::apply(&creds) {
            PROG.fatal(code::SYSTEM, e)
        }
    }
    let e = tend_env::exec(argv, &env);
    PROG.fatal(e.code(), e)
}

/// `uid:gid` (no supplementary groups, environment untouched) or an account name (its
/// groups; UID, GID and GIDLIST removed from the environment, as s6's `-Uz` chain does).
fn credentials(account: &OsString, env: &mut tend_env::environ::Env) -> uidgid::Credentials {
    let bytes = account.as_bytes();
    if bytes.contains(&b':') {
        let Some((uid, gid)) = uidgid::parse_uid_gid(bytes) else {
            PROG.fatal(code::USAGE, format!("invalid uid:gid: {}", shown(account)))
        };
        return uidgid::Credentials {
            uid,
            gid,
            groups: Some(Vec::new()),
        };
    }
    match account::account(account) {
        Ok(Some(a)) => {
            uidgid::unexport(env);
            uidgid::Credentials {
                uid: a.uid,
                gid: a.gid,
                groups: Some(a.groups),
            }
        }
        Ok(None) => PROG.fatal(code::NO, format!("unknown user: {}", shown(account))),
        Err(e) => PROG.fatal(code::SYSTEM, e),
    }
}
