//! The account database: users, groups and supplementary groups, and what
//! s6-envuidgid exports from them (`UID`, `GID`, `GIDLIST`).

use crate::environ::{self, Env};
use crate::sys::Error;
use crate::userdb;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// A numeric id: decimal digits only, within `u32` (no sign, no spaces, no suffix).
pub fn parse_id(s: &[u8]) -> Option<u32> {
    if s.is_empty() || s.len() > 10 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

/// A comma-separated list of numeric ids; the empty string is the empty list.
pub fn parse_idlist(s: &[u8]) -> Option<Vec<u32>> {
    if s.is_empty() {
        return Some(Vec::new());
    }
    s.split(|&b| b == b',').map(parse_id).collect()
}

/// The list as s6 formats it: `1,2,3` (empty for no groups).
pub fn format_idlist(ids: &[u32]) -> String {
    ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// `-D uid:gid:gidlist`; missing or empty parts are 0 / the empty list.
pub fn parse_defaults(s: &[u8]) -> Option<(u32, u32, Vec<u32>)> {
    let mut parts = s.splitn(3, |&b| b == b':');
    let id = |p: Option<&[u8]>| match p {
        None | Some(b"") => Some(0),
        Some(p) => parse_id(p),
    };
    let uid = id(parts.next())?;
    let gid = id(parts.next())?;
    let list = parse_idlist(parts.next().unwrap_or(b""))?;
    Some((uid, gid, list))
}

/// A user found in the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub uid: u32,
    pub gid: u32,
    /// Supplementary groups from the group database, without the primary group.
    pub groups: Vec<u32>,
}

fn lookup_error(op: &'static str, name: &OsStr, e: &std::io::Error) -> Error {
    Error::io(op, std::path::Path::new(name), e)
}

const PASSWD: &str = "/etc/passwd";
const GROUP: &str = "/etc/group";

/// A user's ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct User {
    pub uid: u32,
    pub gid: u32,
}

/// Look a user up by name in /etc/passwd; `Ok(None)` if there is no such user.
pub fn user(name: &OsStr) -> Result<Option<User>, Error> {
    if name.is_empty() {
        return Ok(None);
    }
    let db = userdb::read(std::path::Path::new(PASSWD))
        .map_err(|e| lookup_error("read the user database for", name, &e))?;
    Ok(userdb::find_user(&db, name.as_bytes()).map(|u| User {
        uid: u.uid,
        gid: u.gid,
    }))
}

/// Look a group up by name in /etc/group; `Ok(None)` if there is no such group.
pub fn group(name: &OsStr) -> Result<Option<u32>, Error> {
    if name.is_empty() {
        return Ok(None);
    }
    let db = userdb::read(std::path::Path::new(GROUP))
        .map_err(|e| lookup_error("read the group database for", name, &e))?;
    Ok(userdb::find_group(&db, name.as_bytes()))
}

/// The primary group of the account with `uid` in /etc/passwd; `Ok(None)` if none.
pub fn primary_gid(uid: u32) -> Result<Option<u32>, Error> {
    let db =
        userdb::read(std::path::Path::new(PASSWD)).map_err(|e| Error::io("read", PASSWD, &e))?;
    Ok(userdb::primary_gid_of(&db, uid))
}

/// The name of group `gid` in /etc/group; `Ok(None)` if it has none.
pub fn group_name(gid: u32) -> Result<Option<OsString>, Error> {
    let db = userdb::read(std::path::Path::new(GROUP)).map_err(|e| Error::io("read", GROUP, &e))?;
    Ok(userdb::group_name(&db, gid).map(|n| OsString::from_vec(n.to_vec())))
}

/// A user with their supplementary groups; `Ok(None)` if unknown.
pub fn account(name: &OsStr) -> Result<Option<Account>, Error> {
    let Some(u) = user(name)? else {
        return Ok(None);
    };
    let db = userdb::read(std::path::Path::new(GROUP))
        .map_err(|e| lookup_error("get supplementary groups for", name, &e))?;
    Ok(Some(Account {
        uid: u.uid,
        gid: u.gid,
        groups: userdb::supplementary(&db, name.as_bytes(), u.gid),
    }))
}

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
        crate::account::account(os)?.map(Found::Account)
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
    fn ids() {
        assert_eq!(parse_id(b"0"), Some(0));
        assert_eq!(parse_id(b"4294967295"), Some(u32::MAX));
        assert_eq!(parse_id(b"4294967296"), None);
        assert_eq!(parse_id(b"77x"), None);
        assert_eq!(parse_id(b""), None);
        assert_eq!(parse_id(b"-1"), None);
        assert_eq!(parse_idlist(b""), Some(vec![]));
        assert_eq!(parse_idlist(b"3,4"), Some(vec![3, 4]));
        assert_eq!(parse_idlist(b"3,,4"), None);
        assert_eq!(format_idlist(&[3, 4]), "3,4");
        assert_eq!(format_idlist(&[]), "");
    }

    #[test]
    fn defaults_as_s6() {
        assert_eq!(parse_defaults(b"1:2:3,4"), Some((1, 2, vec![3, 4])));
        assert_eq!(parse_defaults(b"1:2"), Some((1, 2, vec![])));
        assert_eq!(parse_defaults(b"1"), Some((1, 0, vec![])));
        assert_eq!(parse_defaults(b"::5"), Some((0, 0, vec![5])));
        assert_eq!(parse_defaults(b"x"), None);
    }

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
