//! tend-ipcserver-access's rules: a rules directory (`-i`) as s6-ipcserver-access reads
//! one, by the client's uid and gid.
//!
//! The keys tried, in order (skalibs' `s6_accessrules_keycheck_uidgid`): `uid/self` (when
//! the client's uid is ours), `uid/UID`, `gid/self` (when its gid is ours), `gid/GID`,
//! `uid/default`. The first rule directory holding `allow` accepts (with its `env/`
//! and `exec`), one holding `deny` refuses; one with neither is passed over.

//!
//! [`apply`] is the whole of the program after its options: read the client's ids from the
//! UCSPI variables, ask the rules, then edit the environment and the command line the
//! program execs (the rule's `env/` and `exec`, `-E`'s clearing, `-l`'s local name).

use crate::vars::{self, PROTO};
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use tend_env::envdir;
use tend_env::environ::{self, Env};
use tend_sys::Error;
use tend_sys::warn::Warn;

/// What s6-ipcserver-access was asked for (its options).
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `-v`: 0 says nothing, 1 (the default) says "allow", 2 also "deny" and "no ruleset".
    pub verbosity: u32,
    /// `-E`: unset the UCSPI variables instead of adding the local path (`-e`).
    pub clear: bool,
    /// `-l`: the local path to announce instead of the socket's own.
    pub localname: Option<OsString>,
    /// `-i`: the rules directory; None allows every client.
    pub rules: Option<PathBuf>,
}

/// Why the access check could not be made; each is the program's fatal line.
#[derive(Debug)]
pub enum Failure {
    /// `PROTO` is not set: the program does not run under a UCSPI server (100).
    NoProto,
    /// The client's uid or gid variable (named) is missing or not a number (100).
    BadId(OsString),
    /// The rules or a rule's `env/` could not be read.
    Sys(Error),
}

impl Failure {
    pub fn code(&self) -> i32 {
        match self {
            Failure::NoProto | Failure::BadId(_) => tend_sys::code::USAGE,
            Failure::Sys(e) => e.code(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::NoProto => write!(f, "{PROTO} not set: not run under a UCSPI server"),
            Failure::BadId(name) => write!(f, "bad or missing {}", name.to_string_lossy()),
            Failure::Sys(e) => e.fmt(f),
        }
    }
}

/// Check the client named by `env`'s UCSPI variables. Allowed: `env` and `argv` are
/// edited into what to exec, and `true` is returned; refused: `false` (exit 1).
/// `say` gets the `info` lines `-v` asks for.
pub fn apply(
    o: &Options,
    env: &mut Env,
    argv: &mut Vec<OsString>,
    say: &dyn Warn,
) -> Result<bool, Failure> {
    let proto = environ::get(env, PROTO)
        .ok_or(Failure::NoProto)?
        .to_os_string();
    let var = |suffix: &str| {
        let mut n = proto.clone();
        n.push(suffix);
        n
    };
    let id = |suffix: &str| -> Result<u32, Failure> {
        let name = var(suffix);
        environ::get(env, &name.to_string_lossy())
            .and_then(|v| tend_account::parse_id(v.as_bytes()))
            .ok_or(Failure::BadId(name))
    };
    let client = (id(vars::REMOTEEUID.suffix)?, id(vars::REMOTEEGID.suffix)?);
    let me = (
        nix::unistd::geteuid().as_raw(),
        nix::unistd::getegid().as_raw(),
    );
    let verdict = match &o.rules {
        Some(dir) => check(dir, client, me).map_err(Failure::Sys)?,
        None => {
            if o.verbosity >= 2 {
                say.warn(&"invoked without a ruleset");
            }
            Verdict::Allow(None)
        }
    };
    let pid = std::process::id();
    let rule = match verdict {
        Verdict::Deny => {
            if o.verbosity >= 2 {
                let (uid, gid) = client;
                say.say("info", &format_args!("deny pid {pid} uid {uid} gid {gid}"));
            }
            return Ok(false);
        }
        Verdict::Allow(rule) => rule,
    };
    if o.verbosity >= 1 {
        let (uid, gid) = client;
        say.say("info", &format_args!("allow pid {pid} uid {uid} gid {gid}"));
    }
    if o.clear {
        for v in vars::SERVER.iter().chain([&vars::LOCALPATH]) {
            environ::unset(env, &var(v.suffix));
        }
        environ::unset(env, OsStr::new(PROTO));
    } else {
        let local = match &o.localname {
            Some(l) => l.clone(),
            None => OsString::from_vec(local_path()),
        };
        environ::set(env, &var(vars::LOCALPATH.suffix), &local);
    }
    if let Some(rule) = rule {
        match envdir::read(&rule.join("env"), &envdir::Options::default()) {
            Ok(changes) => envdir::apply(env, &changes),
            Err(e) if envdir::is_missing(&e) => {}
            Err(e) => return Err(Failure::Sys(e)),
        }
        if let Ok(newprog) = std::fs::read(rule.join("exec")) {
            // s6 reads at most 4 KiB of a rule's exec.
            let newprog: Vec<u8> = newprog.into_iter().take(4096).collect();
            *argv = vec!["execlineb".into(), "-c".into(), OsString::from_vec(newprog)];
        }
    }
    Ok(true)
}

/// What the rules say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Accepted by the rule in this directory (None: no rules were given).
    Allow(Option<PathBuf>),
    Deny,
}

/// The rule directories to try for a client, in order.
pub fn keys(client: (u32, u32), me: (u32, u32)) -> Vec<String> {
    let mut k = Vec::with_capacity(5);
    if client.0 == me.0 {
        k.push("uid/self".to_string());
    }
    k.push(format!("uid/{}", client.0));
    if client.1 == me.1 {
        k.push("gid/self".to_string());
    }
    k.push(format!("gid/{}", client.1));
    k.push("uid/default".to_string());
    k
}

fn exists(p: &Path) -> Result<bool, Error> {
    match std::fs::symlink_metadata(p) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => Ok(false),
        Err(e) => Err(Error::io("stat", p, &e)),
    }
}

/// Check a client against `rules` (a rules directory). No matching rule denies.
pub fn check(rules: &Path, client: (u32, u32), me: (u32, u32)) -> Result<Verdict, Error> {
    for key in keys(client, me) {
        let rule = rules.join(&key);
        if exists(&rule.join("allow"))? {
            return Ok(Verdict::Allow(Some(rule)));
        }
        if exists(&rule.join("deny"))? {
            return Ok(Verdict::Deny);
        }
    }
    Ok(Verdict::Deny)
}

/// The path the socket on fd 0 is bound to (s6: at most 99 characters), or empty.
pub fn local_path() -> Vec<u8> {
    match nix::sys::socket::getsockname::<nix::sys::socket::UnixAddr>(0) {
        Ok(a) => a
            .path()
            .map(|p| p.as_os_str().as_bytes().iter().take(99).copied().collect())
            .unwrap_or_default(),
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_order() {
        assert_eq!(
            keys((0, 0), (0, 0)),
            ["uid/self", "uid/0", "gid/self", "gid/0", "uid/default"]
        );
        assert_eq!(
            keys((5, 7), (0, 7)),
            ["uid/5", "gid/self", "gid/7", "uid/default"]
        );
    }

    #[test]
    fn first_rule_wins() {
        let d = std::env::temp_dir().join(format!("tend-access-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        for (rule, file) in [("uid/5", "deny"), ("uid/default", "allow"), ("gid/9", "")] {
            std::fs::create_dir_all(d.join(rule)).unwrap();
            if !file.is_empty() {
                std::fs::write(d.join(rule).join(file), "").unwrap();
            }
        }
        assert_eq!(check(&d, (5, 1), (0, 0)).unwrap(), Verdict::Deny);
        assert_eq!(
            check(&d, (6, 9), (0, 0)).unwrap(),
            Verdict::Allow(Some(d.join("uid/default")))
        );
        let _ = std::fs::remove_dir_all(&d);
        assert_eq!(check(&d, (6, 9), (0, 0)).unwrap(), Verdict::Deny);
    }
}
