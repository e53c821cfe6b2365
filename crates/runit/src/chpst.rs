//! chpst(8): change the process state as the options say, in runit's fixed order, then
//! exec. The order is runit 2.1.2's: new session (`-P`), envdir (`-e`), chroot (`-/`),
//! nice (`-n`), account variables (`-U`), credentials (`-u`), lock (`-l`/`-L`), close
//! stdin/stdout/stderr (`-0 -1 -2`), resource limits, exec (with `-b` as argv[0]). Account
//! names are looked up after the chroot, in the new root's files, as runit does.

use nix::errno::Errno;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use tend_env::environ::{self, Env};
use tend_env::{envdir, rlimit, uidgid};
use tend_proto::lock;

/// Everything the options asked for.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// `-P`: setsid (its failure is ignored, as runit ignores it).
    pub setsid: bool,
    pub envdir: Option<PathBuf>,
    /// `-/ root`.
    pub root: Option<PathBuf>,
    /// `-n inc` (0: nice is not called).
    pub nice: i32,
    /// `-U account`.
    pub env_user: Option<OsString>,
    /// `-u account`.
    pub set_user: Option<OsString>,
    /// `-l` (wait: true) or `-L` (fail at once).
    pub lock: Option<(PathBuf, bool)>,
    /// `-0 -1 -2`.
    pub close: [bool; 3],
    /// (tend_env::rlimit letter, value) in the order given.
    pub limits: Vec<(char, u64)>,
    /// `-b argv0`.
    pub argv0: Option<OsString>,
    /// `-v`: warn about what is skipped.
    pub verbose: bool,
}

/// A limit or id value as runit's scan_ulong takes it: digits only, the empty string is
/// 0; a number past 2^64 saturates (it is then the hard limit, as a value above the hard
/// limit is).
pub fn parse_number(s: &[u8]) -> Option<u64> {
    if !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0u64, |n, d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    }))
}

/// `-n`'s argument: digits, optionally after `-` or `+`. Out of `i32` range is refused.
pub fn parse_nice(s: &[u8]) -> Option<i32> {
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let n = i32::try_from(parse_number(digits)?).ok()?;
    Some(if neg { -n } else { n })
}

/// A uid and its group ids (the first is the primary group).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ids {
    pub uid: u32,
    pub gids: Vec<u32>,
}

/// Why an account argument gave no ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccountError {
    /// `:uid:gid...` that is not numbers (runit: "invalid uid/gids").
    Invalid(String),
    /// No such user or group (runit: "unknown user/group").
    Unknown(String),
    /// Reading the databases failed.
    Sys(tend_env::sys::Error),
}

impl fmt::Display for AccountError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AccountError::Invalid(s) => write!(f, "invalid uid/gids: {s}"),
            AccountError::Unknown(s) => write!(f, "unknown user/group: {s}"),
            AccountError::Sys(e) => e.fmt(f),
        }
    }
}

fn id(s: &[u8]) -> Option<u32> {
    u32::try_from(parse_number(s)?).ok()
}

/// `[:]user[:group[:group...]]`: with a leading colon, `uid:gid[:gid...]` as numbers;
/// otherwise a user name and optionally group names (without them, the user's own
/// primary group alone: chpst drops every supplementary group).
pub fn lookup(account: &OsStr) -> Result<Ids, AccountError> {
    let b = account.as_bytes();
    let shown = |s: &[u8]| String::from_utf8_lossy(s).into_owned();
    if let Some(numeric) = b.strip_prefix(b":") {
        let bad = || AccountError::Invalid(shown(numeric));
        let mut parts = numeric.split(|&c| c == b':');
        let uid = id(parts.next().unwrap_or_default()).ok_or_else(bad)?;
        let gids: Vec<u32> = parts.map(id).collect::<Option<_>>().ok_or_else(bad)?;
        if gids.is_empty() {
            return Err(bad());
        }
        return Ok(Ids { uid, gids });
    }
    let unknown = || AccountError::Unknown(shown(b));
    let mut parts = b.split(|&c| c == b':');
    let user = parts.next().unwrap_or_default();
    let u = tend_env::account::user(OsStr::from_bytes(user))
        .map_err(AccountError::Sys)?
        .ok_or_else(unknown)?;
    let mut gids = Vec::new();
    for g in parts {
        let gid = tend_env::account::group(OsStr::from_bytes(g))
            .map_err(AccountError::Sys)?
            .ok_or_else(unknown)?;
        gids.push(gid);
    }
    if gids.is_empty() {
        gids.push(u.gid);
    }
    Ok(Ids { uid: u.uid, gids })
}

/// Why chpst stopped before (or at) the exec. Every one is exit 111, as runit's.
#[derive(Debug)]
pub enum Failure {
    Account(AccountError),
    Sys(tend_env::sys::Error),
    /// The lock is held elsewhere (`-L`), or locking failed.
    Lock(PathBuf, Errno),
    Exec(tend_env::ExecError),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Account(e) => e.fmt(f),
            Failure::Sys(e) => e.fmt(f),
            Failure::Lock(p, e) => write!(f, "unable to lock {}: {}", p.display(), e.desc()),
            Failure::Exec(e) => e.fmt(f),
        }
    }
}

impl Failure {
    /// chpst exits 111 on every failure to change the state or to run the program.
    pub fn code(&self) -> i32 {
        tend_env::sys::code::SYSTEM
    }
}

fn sys(op: &'static str, e: Errno) -> Failure {
    Failure::Sys(tend_env::sys::Error::new(op, e))
}

fn sys_at(op: &'static str, path: &Path, e: Errno) -> Failure {
    Failure::Sys(tend_env::sys::Error::at(op, path, e))
}

/// A warning the caller prints (only with `-v`).
pub type Warn<'a> = &'a mut dyn FnMut(&dyn fmt::Display);

/// Make every change, then exec `argv`. Returns only on failure.
pub fn run(plan: &Plan, argv: &[OsString], warn: Warn<'_>) -> Failure {
    match prepare(plan, argv, warn) {
        Err(f) => f,
        Ok(ready) => {
            let saved = match rlimit::apply(
                &plan
                    .limits
                    .iter()
                    .map(|&(c, n)| (c, rlimit::Value::Exactly(n)))
                    .collect::<Vec<_>>(),
            ) {
                Ok(s) => s,
                Err(e) => return Failure::Sys(e),
            };
            let errno = ready.exec();
            rlimit::restore(&saved);
            Failure::Exec(ready.error(errno))
        }
    }
}

/// Every change but the limits, and the exec made ready (PATH searched in the final
/// root, with the final environment).
fn prepare(plan: &Plan, argv: &[OsString], warn: Warn<'_>) -> Result<tend_env::Ready, Failure> {
    if plan.setsid {
        // runit ignores a failure (the process already leads a group).
        let _ = tend_env::session::apply(tend_env::session::Mode::Session, 0);
    }
    let mut env: Env = tend_env::sys::exec::current_env();
    if let Some(dir) = &plan.envdir {
        let opts = envdir::Options {
            rules: envdir::Rules::Runit,
            ..envdir::Options::default()
        };
        if plan.verbose {
            skipped_subdirectories(dir, warn);
        }
        let changes = envdir::read(dir, &opts).map_err(Failure::Sys)?;
        envdir::apply(&mut env, &changes);
    }
    if let Some(root) = &plan.root {
        nix::unistd::chdir(root).map_err(|e| sys_at("change directory to", root, e))?;
        nix::unistd::chroot(".").map_err(|e| sys("change root directory", e))?;
    }
    if plan.nice != 0 {
        rustix::process::nice(plan.nice)
            .map_err(|e| sys("set nice level", Errno::from_raw(e.raw_os_error())))?;
    }
    if let Some(account) = &plan.env_user {
        let ids = lookup(account).map_err(Failure::Account)?;
        environ::set(
            &mut env,
            OsStr::new("GID"),
            OsStr::new(&ids.gids[0].to_string()),
        );
        environ::set(
            &mut env,
            OsStr::new("UID"),
            OsStr::new(&ids.uid.to_string()),
        );
    }
    if let Some(account) = &plan.set_user {
        let ids = lookup(account).map_err(Failure::Account)?;
        let creds = uidgid::Credentials {
            uid: ids.uid,
            gid: ids.gids[0],
            groups: Some(ids.gids[1..].to_vec()),
        };
        uidgid::apply(&creds).map_err(Failure::Sys)?;
    }
    if let Some((path, wait)) = &plan.lock {
        // Kept open across exec: the program holds the lock.
        let fd = lock::open_inheritable_mode(path, lock::Kind::Exclusive, 0o600)
            .map_err(|e| sys_at("open lock", path, e.errno))?;
        let how = if *wait {
            lock::Wait::Forever
        } else {
            lock::Wait::No
        };
        match lock::lock(&fd, lock::Kind::Exclusive, how, lock::Style::Flock) {
            Ok(()) => std::mem::forget(fd),
            Err(lock::OfdError::Sys(e)) => return Err(Failure::Lock(path.clone(), e)),
            Err(_) => return Err(Failure::Lock(path.clone(), Errno::EWOULDBLOCK)),
        }
    }
    const STDIO: [&str; 3] = ["close stdin", "close stdout", "close stderr"];
    for (fd, op) in STDIO.iter().enumerate() {
        if plan.close[fd] {
            nix::unistd::close(fd as i32).map_err(|e| sys(op, e))?;
        }
    }
    let mut ready = tend_env::Ready::new(argv, &env).map_err(Failure::Exec)?;
    if let Some(a) = &plan.argv0 {
        ready.set_argv0(a).map_err(Failure::Exec)?;
    }
    Ok(ready)
}

/// `-v`: name each subdirectory of the envdir, which chpst skips.
fn skipped_subdirectories(dir: &Path, warn: Warn<'_>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        if envdir::is_variable(name.as_bytes()) && e.path().is_dir() {
            warn(&format_args!(
                "unable to read {}: {}",
                e.path().display(),
                Errno::EISDIR.desc()
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_as_scan_ulong() {
        assert_eq!(parse_number(b""), Some(0));
        assert_eq!(parse_number(b"0100"), Some(100));
        assert_eq!(parse_number(b"99999999999999999999999"), Some(u64::MAX));
        assert_eq!(parse_number(b"1k"), None);
        assert_eq!(parse_number(b"-1"), None);
    }

    #[test]
    fn nice_values() {
        assert_eq!(parse_nice(b"5"), Some(5));
        assert_eq!(parse_nice(b"+5"), Some(5));
        assert_eq!(parse_nice(b"-5"), Some(-5));
        assert_eq!(parse_nice(b"x"), None);
        assert_eq!(parse_nice(b"--5"), None);
        assert_eq!(parse_nice(b"99999999999"), None);
    }

    #[test]
    fn numeric_accounts() {
        let ids = |s: &str| lookup(OsStr::new(s));
        assert_eq!(
            ids(":1000:1001:27"),
            Ok(Ids {
                uid: 1000,
                gids: vec![1001, 27]
            })
        );
        assert_eq!(
            ids(":5:"),
            Ok(Ids {
                uid: 5,
                gids: vec![0]
            })
        );
        assert_eq!(ids(":1000"), Err(AccountError::Invalid("1000".into())));
        assert_eq!(ids(":x:1"), Err(AccountError::Invalid("x:1".into())));
        assert_eq!(
            ids("no-such-user-tend"),
            Err(AccountError::Unknown("no-such-user-tend".into()))
        );
        assert_eq!(
            ids("root"),
            Ok(Ids {
                uid: 0,
                gids: vec![0]
            })
        );
        assert_eq!(
            ids("root:no-such-group-tend"),
            Err(AccountError::Unknown("root:no-such-group-tend".into()))
        );
    }
}
