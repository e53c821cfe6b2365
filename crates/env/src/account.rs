//! What s6-envuidgid exports from the account database (`UID`, `GID`, `GIDLIST`); the
//! lookups themselves are tend-account's, re-exported here.

use crate::environ::{self, Env};
use crate::sys::Error;
use std::ffi::OsStr;
use std::fmt;
use std::os::unix::ffi::OsStrExt;

// The lookups live one floor down (crates/account), where tend-client reaches them too;
// they stay nameable here as they always were.
pub use tend_account::{
    Account, User, account, format_idlist, group, group_name, parse_defaults, parse_id,
    parse_idlist, primary_gid, user,
};

/// How s6-envuidgid reads its account argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A user name: UID, GID and GIDLIST (the default).
    Account,
    /// `-u`: a user name, UID only.
    User,
    /// `-g`: a group name, GID only.
    Group,
    /// `-B`: `user:group`, UID and GID.
    Both,
}

/// What s6-envuidgid was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub mode: Mode,
    /// `-n`: an unknown name that is a number is taken as that number.
    pub numeric: bool,
    /// `-D`: values for an unknown account; `None` means insist (`-i`, the default).
    pub defaults: Option<(u32, u32, Vec<u32>)>,
}

/// The variables to export: each `Some` is set.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Vars {
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub gidlist: Option<Vec<u32>>,
}

impl Vars {
    /// Set the variables in `env`.
    pub fn export(&self, env: &mut Env) {
        if let Some(u) = self.uid {
            environ::set(env, OsStr::new("UID"), OsStr::new(&u.to_string()));
        }
        if let Some(g) = self.gid {
            environ::set(env, OsStr::new("GID"), OsStr::new(&g.to_string()));
        }
        if let Some(l) = &self.gidlist {
            environ::set(env, OsStr::new("GIDLIST"), OsStr::new(&format_idlist(l)));
        }
    }
}

/// Why an account could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupError {
    UnknownUser(String),
    UnknownGroup(String),
    Sys(Error),
}

impl LookupError {
    /// 1 for an unknown account (a negative answer), 111 for a failed lookup.
    pub fn code(&self) -> i32 {
        match self {
            LookupError::UnknownUser(_) | LookupError::UnknownGroup(_) => crate::sys::code::NO,
            LookupError::Sys(e) => e.code(),
        }
    }
}

impl fmt::Display for LookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LookupError::UnknownUser(u) => write!(f, "unknown user: {u}"),
            LookupError::UnknownGroup(g) => write!(f, "unknown group: {g}"),
            LookupError::Sys(e) => e.fmt(f),
        }
    }
}

impl From<Error> for LookupError {
    fn from(e: Error) -> LookupError {
        LookupError::Sys(e)
    }
}

/// Resolve `account` as s6-envuidgid does: the names it holds, then the group, then the
/// user (who, in account mode, brings their group and supplementary groups).
pub fn resolve(account: &OsStr, req: &Request) -> Result<Vars, LookupError> {
    let mode = effective_mode(req);
    let (mut uid, mut gid, mut list) = req.defaults.clone().unwrap_or((0, 0, Vec::new()));
    let (user_name, group_name) = split_names(mode, account.as_bytes());
    if let Some(g) = group_name
        && let Some(found) = resolve_group(g, req)?
    {
        gid = found;
    }
    if let Some(u) = user_name {
        match resolve_user(u, mode, req)? {
            Some(Found::Account(a)) => (uid, gid, list) = (a.uid, a.gid, a.groups),
            Some(Found::Uid(found)) => uid = found,
            None => {}
        }
    }
    Ok(vars(mode, uid, gid, list))
}

/// s6: -n turns the plain account mode into user:group mode.
fn effective_mode(req: &Request) -> Mode {
    if req.numeric && req.mode == Mode::Account {
        Mode::Both
    } else {
        req.mode
    }
}

/// The user and group names `account` holds in `mode` (`user:group` in both mode, where
/// either side may be empty).
fn split_names(mode: Mode, bytes: &[u8]) -> (Option<&[u8]>, Option<&[u8]>) {
    match mode {
        Mode::Account | Mode::User => (Some(bytes), None),
        Mode::Group => (None, Some(bytes)),
        Mode::Both => match bytes.iter().position(|&b| b == b':') {
            Some(i) => (
                Some(&bytes[..i]).filter(|u| !u.is_empty()),
                Some(&bytes[i + 1..]).filter(|g| !g.is_empty()),
            ),
            None => (Some(bytes), None),
        },
    }
}

/// A name not found is a number with -n, an error without defaults (-D), else nothing.
fn not_found(
    name: &[u8],
    req: &Request,
    unknown: fn(String) -> LookupError,
) -> Result<Option<u32>, LookupError> {
    match parse_id(name).filter(|_| req.numeric) {
        Some(n) => Ok(Some(n)),
        None if req.defaults.is_none() => Err(unknown(String::from_utf8_lossy(name).into_owned())),
        None => Ok(None),
    }
}

/// The group's gid (None: keep the default).
fn resolve_group(name: &[u8], req: &Request) -> Result<Option<u32>, LookupError> {
    match group(OsStr::from_bytes(name))? {
        Some(gid) => Ok(Some(gid)),
        None => not_found(name, req, LookupError::UnknownGroup),
    }
}

/// What a user name resolved to.
enum Found {
    /// Account mode: uid, primary group and supplementary groups.
    Account(Account),
    Uid(u32),
}

/// The user's account (account mode) or uid (None: keep the default).
fn resolve_user(name: &[u8], mode: Mode, req: &Request) -> Result<Option<Found>, LookupError> {
    let os = OsStr::from_bytes(name);
    let found = if mode == Mode::Account {
        account(os)?.map(Found::Account)
    } else {
        user(os)?.map(|u| Found::Uid(u.uid))
    };
    match found {
        Some(f) => Ok(Some(f)),
        None => Ok(not_found(name, req, LookupError::UnknownUser)?.map(Found::Uid)),
    }
}

/// The variables `mode` sets.
fn vars(mode: Mode, uid: u32, gid: u32, list: Vec<u32>) -> Vars {
    match mode {
        Mode::Account => Vars {
            uid: Some(uid),
            gid: Some(gid),
            gidlist: Some(list),
        },
        Mode::User => Vars {
            uid: Some(uid),
            ..Vars::default()
        },
        Mode::Group => Vars {
            gid: Some(gid),
            ..Vars::default()
        },
        Mode::Both => Vars {
            uid: Some(uid),
            gid: Some(gid),
            gidlist: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_and_defaults() {
        let req = |mode, numeric, defaults| Request {
            mode,
            numeric,
            defaults,
        };
        let nosuch = OsStr::new("no-such-user-tend");
        assert_eq!(
            resolve(nosuch, &req(Mode::Account, false, None)),
            Err(LookupError::UnknownUser("no-such-user-tend".into()))
        );
        assert_eq!(
            resolve(nosuch, &req(Mode::Account, false, Some((1, 2, vec![3])))),
            Ok(Vars {
                uid: Some(1),
                gid: Some(2),
                gidlist: Some(vec![3])
            })
        );
        assert_eq!(
            resolve(OsStr::new("123"), &req(Mode::Account, true, None)),
            Ok(Vars {
                uid: Some(123),
                gid: Some(0),
                gidlist: None
            })
        );
        assert_eq!(
            resolve(OsStr::new("5:6"), &req(Mode::Both, true, None)),
            Ok(Vars {
                uid: Some(5),
                gid: Some(6),
                gidlist: None
            })
        );
        assert_eq!(
            resolve(
                OsStr::new("5:no-such-group-tend"),
                &req(Mode::Both, false, None)
            ),
            Err(LookupError::UnknownGroup("no-such-group-tend".into()))
        );
        assert_eq!(
            resolve(OsStr::new("root"), &req(Mode::User, false, None)),
            Ok(Vars {
                uid: Some(0),
                ..Vars::default()
            })
        );
    }
}
