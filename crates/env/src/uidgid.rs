//! Credentials: the supplementary groups, then the gid, then the uid, as s6-applyuidgid
//! sets them. An id of 0 means "leave it as it is" (s6's convention), so dropping to
//! root is never asked for and root can run the tools unchanged.

use crate::account::{parse_id, parse_idlist};
use crate::environ::{self, Env};
use crate::sys::Error;
use nix::unistd::{Gid, Uid};
use std::ffi::OsStr;
use std::fmt;
use std::os::unix::ffi::OsStrExt;

/// What to become. `groups: None` leaves the supplementary list alone.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Credentials {
    pub uid: u32,
    pub gid: u32,
    pub groups: Option<Vec<u32>>,
}

/// The list given to setgroups: the primary gid first, then the others without it
/// (as skalibs' setgroups_and_gid).
pub fn group_list(primary: u32, supplementary: &[u32]) -> Vec<u32> {
    let mut v = Vec::with_capacity(supplementary.len() + 1);
    v.push(primary);
    v.extend(supplementary.iter().copied().filter(|&g| g != primary));
    v
}

/// setgroups, setgid, setuid — the first failure stops everything.
pub fn apply(c: &Credentials) -> Result<(), Error> {
    if let Some(groups) = &c.groups {
        let primary = if c.gid != 0 {
            c.gid
        } else {
            nix::unistd::getegid().as_raw()
        };
        let list: Vec<Gid> = group_list(primary, groups)
            .into_iter()
            .map(Gid::from_raw)
            .collect();
        nix::unistd::setgroups(&list).map_err(|e| Error::new("set supplementary group list", e))?;
    }
    if c.gid != 0 {
        nix::unistd::setgid(Gid::from_raw(c.gid)).map_err(|e| Error::new("setgid", e))?;
    }
    if c.uid != 0 {
        nix::unistd::setuid(Uid::from_raw(c.uid)).map_err(|e| Error::new("setuid", e))?;
    }
    Ok(())
}

/// `uid:gid` as s6-setuidgid takes it (both numeric).
pub fn parse_uid_gid(s: &[u8]) -> Option<(u32, u32)> {
    let i = s.iter().position(|&b| b == b':')?;
    Some((parse_id(&s[..i])?, parse_id(&s[i + 1..])?))
}

/// A problem with the UID / GID / GIDLIST variables (`-U`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VarError {
    NotSet(&'static str),
    Invalid(&'static str),
}

impl VarError {
    /// The variables are the caller's input: 100.
    pub fn code(&self) -> i32 {
        crate::sys::code::USAGE
    }
}

impl fmt::Display for VarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VarError::NotSet(v) => write!(f, "{v} not set"),
            VarError::Invalid(v) => write!(f, "invalid ${v}"),
        }
    }
}

/// Credentials from UID, GID and GIDLIST, all three required.
pub fn from_env(env: &Env) -> Result<Credentials, VarError> {
    let var = |name: &'static str| environ::get(env, name).ok_or(VarError::NotSet(name));
    let uid = parse_id(var("UID")?.as_bytes()).ok_or(VarError::Invalid("UID"))?;
    let gid = parse_id(var("GID")?.as_bytes()).ok_or(VarError::Invalid("GID"))?;
    let groups = parse_idlist(var("GIDLIST")?.as_bytes()).ok_or(VarError::Invalid("GIDLIST"))?;
    Ok(Credentials {
        uid,
        gid,
        groups: Some(groups),
    })
}

/// Remove UID, GID and GIDLIST (`-z`).
pub fn unexport(env: &mut Env) {
    for v in ["UID", "GID", "GIDLIST"] {
        environ::unset(env, OsStr::new(v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primary_first_without_duplicate() {
        assert_eq!(group_list(5678, &[]), vec![5678]);
        assert_eq!(group_list(104, &[103]), vec![104, 103]);
        assert_eq!(group_list(104, &[103, 104, 7]), vec![104, 103, 7]);
    }

    #[test]
    fn uid_gid() {
        assert_eq!(parse_uid_gid(b"1234:5678"), Some((1234, 5678)));
        assert_eq!(parse_uid_gid(b"12:"), None);
        assert_eq!(parse_uid_gid(b":12"), None);
        assert_eq!(parse_uid_gid(b"1x:2"), None);
        assert_eq!(parse_uid_gid(b"12"), None);
    }

    #[test]
    fn targets() {
        assert_eq!(target(OsStr::new("")), Ok(Target::Unchanged));
        assert_eq!(
            target(OsStr::new("1234:5678")),
            Ok(Target::Ids(Credentials {
                uid: 1234,
                gid: 5678,
                groups: Some(vec![])
            }))
        );
        assert_eq!(
            target(OsStr::new("12:")),
            Err(TargetError::BadIds("12:".into()))
        );
        assert_eq!(
            target(OsStr::new("no-such-user-tend")),
            Err(TargetError::Unknown("no-such-user-tend".into()))
        );
        assert!(matches!(
            target(OsStr::new("root")),
            Ok(Target::Account(Credentials { uid: 0, gid: 0, .. }))
        ));
    }

    #[test]
    fn env_vars() {
        let mut env: Env = vec![
            ("UID".into(), "5".into()),
            ("GID".into(), "6".into()),
            ("GIDLIST".into(), "".into()),
        ];
        assert_eq!(
            from_env(&env),
            Ok(Credentials {
                uid: 5,
                gid: 6,
                groups: Some(vec![])
            })
        );
        env[2].1 = "x".into();
        assert_eq!(from_env(&env), Err(VarError::Invalid("GIDLIST")));
        env.remove(1);
        assert_eq!(from_env(&env), Err(VarError::NotSet("GID")));
        unexport(&mut env);
        assert!(env.is_empty());
    }
}

/// What tend-setuidgid's account argument asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The empty account: change nothing.
    Unchanged,
    /// `uid:gid`: those ids, no supplementary groups, environment untouched.
    Ids(Credentials),
    /// A user name: its ids and groups; UID, GID and GIDLIST leave the environment (as
    /// s6-setuidgid's `s6-envuidgid name s6-applyuidgid -Uz` chain does).
    Account(Credentials),
}

/// Why tend-setuidgid's account argument cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetError {
    /// A colon, but not two decimal ids around it.
    BadIds(String),
    /// No such user.
    Unknown(String),
    Sys(Error),
}

impl TargetError {
    /// 100 for bad ids, 1 for an unknown user, 111 for a failed lookup.
    pub fn code(&self) -> i32 {
        match self {
            TargetError::BadIds(_) => crate::sys::code::USAGE,
            TargetError::Unknown(_) => crate::sys::code::NO,
            TargetError::Sys(e) => e.code(),
        }
    }
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetError::BadIds(a) => write!(f, "invalid uid:gid: {a}"),
            TargetError::Unknown(a) => write!(f, "unknown user: {a}"),
            TargetError::Sys(e) => e.fmt(f),
        }
    }
}

/// Read tend-setuidgid's account argument: empty, `uid:gid`, or a user name.
pub fn target(account: &OsStr) -> Result<Target, TargetError> {
    let bytes = account.as_bytes();
    let shown = || String::from_utf8_lossy(bytes).into_owned();
    if bytes.is_empty() {
        return Ok(Target::Unchanged);
    }
    if bytes.contains(&b':') {
        let (uid, gid) = parse_uid_gid(bytes).ok_or_else(|| TargetError::BadIds(shown()))?;
        return Ok(Target::Ids(Credentials {
            uid,
            gid,
            groups: Some(Vec::new()),
        }));
    }
    match crate::account::account(account) {
        Ok(Some(a)) => Ok(Target::Account(Credentials {
            uid: a.uid,
            gid: a.gid,
            groups: Some(a.groups),
        })),
        Ok(None) => Err(TargetError::Unknown(shown())),
        Err(e) => Err(TargetError::Sys(e)),
    }
}
