//! tend-ipcserver-access's rules: a rules directory (`-i`) as s6-ipcserver-access reads
//! one, by the client's uid and gid.
//!
//! The keys tried, in order (skalibs' `s6_accessrules_keycheck_uidgid`): `uid/self` (when
//! the client's uid is ours), `uid/UID`, `gid/self` (when its gid is ours), `gid/GID`,
//! `uid/default`. The first rule directory holding `allow` accepts (with its `env/`
//! and `exec`), one holding `deny` refuses; one with neither is passed over.

use std::path::{Path, PathBuf};
use tend_sys::Error;

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
    use std::os::unix::ffi::OsStrExt;
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
