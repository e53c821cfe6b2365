//! The local account files, `/etc/passwd` and `/etc/group`, read directly.
//!
//! tend's executables are static (see .cargo/config.toml), and a static glibc cannot load
//! NSS modules safely: with `passwd: files systemd` an unknown name crashes inside
//! `getpwnam`. So, like the static s6 builds of s6-overlay (musl), tend reads the files
//! itself. Accounts that exist only in LDAP/sssd are not seen.

use std::io;
use std::path::Path;

/// A user's ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserEntry {
    pub uid: u32,
    pub gid: u32,
}

fn id(field: &[u8]) -> Option<u32> {
    if field.is_empty() || !field.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(field).ok()?.parse().ok()
}

/// Lines of a colon-separated database, split into fields; malformed lines are skipped
/// by the callers, comments (`#`) and blank lines here.
fn records(data: &[u8]) -> impl Iterator<Item = Vec<&[u8]>> {
    data.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty() && l[0] != b'#')
        .map(|l| l.split(|&b| b == b':').collect())
}

/// Find `name` in passwd-format data (name:passwd:uid:gid:gecos:home:shell).
pub fn find_user(passwd: &[u8], name: &[u8]) -> Option<UserEntry> {
    records(passwd)
        .filter(|f| f.len() >= 4 && f[0] == name)
        .find_map(|f| {
            Some(UserEntry {
                uid: id(f[2])?,
                gid: id(f[3])?,
            })
        })
}

/// The primary group of the first account with `uid` (getpwuid's pw_gid).
pub fn primary_gid_of(passwd: &[u8], uid: u32) -> Option<u32> {
    records(passwd)
        .filter(|f| f.len() >= 4 && id(f[2]) == Some(uid))
        .find_map(|f| id(f[3]))
}

/// The name of the first group with `gid` (getgrgid's gr_name).
pub fn group_name(group: &[u8], gid: u32) -> Option<&[u8]> {
    records(group)
        .find(|f| f.len() >= 3 && id(f[2]) == Some(gid))
        .map(|f| f[0])
}

/// Find `name` in group-format data (name:passwd:gid:members).
pub fn find_group(group: &[u8], name: &[u8]) -> Option<u32> {
    records(group)
        .filter(|f| f.len() >= 3 && f[0] == name)
        .find_map(|f| id(f[2]))
}

/// The groups listing `user` as a member, in file order, without duplicates and
/// without `primary` (getgrouplist's list minus the primary group).
pub fn supplementary(group: &[u8], user: &[u8], primary: u32) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::new();
    for f in records(group) {
        if f.len() < 4 {
            continue;
        }
        let Some(gid) = id(f[2]) else { continue };
        if gid != primary && !out.contains(&gid) && f[3].split(|&b| b == b',').any(|m| m == user) {
            out.push(gid);
        }
    }
    out
}

/// Read an account file; a missing file is an empty database.
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    match std::fs::read(path) {
        Ok(d) => Ok(d),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASSWD: &[u8] = b"root:x:0:0:root:/root:/bin/bash\n# comment\nbad line\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\nweird:x:1x:2:::\n";
    const GROUP: &[u8] = b"root:x:0:\nadm:x:4:syslog,app\nstaff:x:50:app\nnogroup:x:65534:\napp:x:1000:\nstaff2:x:50:app\n";

    #[test]
    fn users() {
        assert_eq!(
            find_user(PASSWD, b"nobody"),
            Some(UserEntry {
                uid: 65534,
                gid: 65534
            })
        );
        assert_eq!(
            find_user(PASSWD, b"root"),
            Some(UserEntry { uid: 0, gid: 0 })
        );
        assert_eq!(find_user(PASSWD, b"weird"), None);
        assert_eq!(find_user(PASSWD, b"nob"), None);
        assert_eq!(find_user(PASSWD, b""), None);
    }

    #[test]
    fn groups() {
        assert_eq!(find_group(GROUP, b"staff"), Some(50));
        assert_eq!(find_group(GROUP, b"nope"), None);
        assert_eq!(group_name(GROUP, 50), Some(&b"staff"[..]));
        assert_eq!(group_name(GROUP, 51), None);
        assert_eq!(primary_gid_of(PASSWD, 65534), Some(65534));
        assert_eq!(primary_gid_of(PASSWD, 7), None);
        assert_eq!(supplementary(GROUP, b"app", 1000), vec![4, 50]);
        assert_eq!(supplementary(GROUP, b"app", 4), vec![50]);
        assert_eq!(supplementary(GROUP, b"syslog", 0), vec![4]);
        assert_eq!(supplementary(GROUP, b"ap", 0), Vec::<u32>::new());
    }
}
