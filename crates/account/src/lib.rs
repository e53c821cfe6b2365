//! The account database: users, groups and supplementary groups, looked up by name or
//! id in the local files (see `userdb` for why the files are read directly), and the
//! numeric id grammar s6's programs share (`parse_id`, `-D uid:gid:gidlist`).
//!
//! A crate of its own, on the floor just above sys, because two floors use it: the
//! chain-loaders' crate (tend-env: s6-envuidgid's variables, setuidgid) and the clients'
//! crate (tend-client: svperms names groups). Neither should climb over the other for
//! it, and it is neither a system call (sys) nor s6's on-disk protocol (proto).
//! It never prints, exits or panics.

#![forbid(unsafe_code)]

pub mod userdb;

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use tend_sys::Error;

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
}
