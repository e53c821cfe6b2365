//! Path patterns (`*`, `?`, `[…]` in any component) expanded against the file system, in
//! the two dialects tend reads:
//!
//! - [`Dialect::Posix`], glob(3)'s, for monit's `include`: a leading dot is matched only
//!   by a pattern that starts with one, `[!…]` or `[^…]` negates, an unclosed `[` is a
//!   literal `[`; an existing path is followed through links.
//! - [`Dialect::Go`], Go's `filepath.Glob`, for bpm's `unsafe.unrestricted_volumes`: `*`
//!   and `?` match a leading dot too, only `[^…]` negates, a malformed pattern (an unclosed
//!   or empty class, a range without an end, a trailing backslash) is an error before any
//!   directory is read, a name is matched by character (UTF-8) rather than by byte, and a
//!   last component is kept if it exists as a link, even a dangling one.
//!
//! Both sort the names of each directory, and a pattern that matches nothing gives an
//! empty list (not an error). Written here rather than called through libc so the
//! semantics are the same on glibc and musl; the directories are read, nothing else is
//! done to them.

use std::path::{Path, PathBuf};

/// Whose rules a pattern follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Posix,
    Go,
}

/// A pattern Go's `filepath.Match` calls malformed (its `ErrBadPattern`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadPattern(pub String);

impl std::fmt::Display for BadPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: syntax error in pattern", self.0)
    }
}

/// The paths `pattern` names, each directory's names sorted; a relative pattern is taken
/// from `base` (the empty path: the working directory).
pub fn expand(pattern: &str, base: &Path, dialect: Dialect) -> Result<Vec<PathBuf>, BadPattern> {
    if dialect == Dialect::Go {
        check(pattern)?;
        if !has_magic(pattern, dialect) {
            // Go returns such a pattern as written when lstat finds it.
            let p = base.join(pattern);
            return Ok(if std::fs::symlink_metadata(&p).is_ok() {
                vec![p]
            } else {
                Vec::new()
            });
        }
    }
    let (mut found, rest) = if let Some(r) = pattern.strip_prefix('/') {
        (vec![PathBuf::from("/")], r)
    } else {
        (vec![base.to_path_buf()], pattern)
    };
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    let exists = |p: &Path| match dialect {
        Dialect::Posix => p.exists(),
        Dialect::Go => std::fs::symlink_metadata(p).is_ok(),
    };
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let mut next = Vec::new();
        for dir in &found {
            if !has_magic(part, dialect) {
                let p = dir.join(part);
                if (last && exists(&p)) || p.is_dir() {
                    next.push(p);
                }
                continue;
            }
            // A relative pattern is read from the working directory.
            let at = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            let Ok(rd) = std::fs::read_dir(at) else {
                continue;
            };
            let mut names: Vec<String> = rd
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| matches(part, n, dialect))
                .collect();
            names.sort();
            for n in names {
                let p = dir.join(n);
                if last || p.is_dir() {
                    next.push(p);
                }
            }
        }
        found = next;
    }
    if parts.is_empty() {
        found.retain(|p| exists(p));
    }
    Ok(found)
}

/// Whether `s` holds a character that makes it a pattern (Go counts a backslash too).
pub fn has_magic(s: &str, dialect: Dialect) -> bool {
    match dialect {
        Dialect::Posix => s.contains(['*', '?', '[']),
        Dialect::Go => s.contains(['*', '?', '[', '\\']),
    }
}

/// Whether `name` matches the one-component pattern `pat`. A malformed Go pattern
/// matches nothing ([`check`] says why).
pub fn matches(pat: &str, name: &str, dialect: Dialect) -> bool {
    match dialect {
        Dialect::Posix => {
            let (pat, name) = (pat.as_bytes(), name.as_bytes());
            if name.first() == Some(&b'.') && pat.first() != Some(&b'.') {
                return false;
            }
            let p: Vec<u32> = pat.iter().map(|&b| b as u32).collect();
            let n: Vec<u32> = name.iter().map(|&b| b as u32).collect();
            wildcard(&p, &n, dialect)
        }
        Dialect::Go => {
            let p: Vec<u32> = pat.chars().map(u32::from).collect();
            let n: Vec<u32> = name.chars().map(u32::from).collect();
            wildcard(&p, &n, dialect)
        }
    }
}

/// Go's syntax check of a whole pattern (what `filepath.Match(pattern, "")` reports).
pub fn check(pattern: &str) -> Result<(), BadPattern> {
    let bad = || BadPattern(pattern.to_string());
    let p: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    // One class member (getEsc in Go): not `-` or `]` first, a backslash escapes, and
    // something must follow it.
    let member = |i: &mut usize| -> Result<(), BadPattern> {
        match p.get(*i) {
            None | Some('-' | ']') => return Err(bad()),
            Some('\\') => *i += 1,
            _ => {}
        }
        if p.get(*i).is_none() {
            return Err(bad());
        }
        *i += 1;
        if p.get(*i).is_none() {
            return Err(bad());
        }
        Ok(())
    };
    while i < p.len() {
        match p[i] {
            '\\' => {
                if i + 1 >= p.len() {
                    return Err(bad());
                }
                i += 2;
            }
            '[' => {
                i += 1;
                if p.get(i) == Some(&'^') {
                    i += 1;
                }
                let mut ranges = 0;
                loop {
                    if p.get(i) == Some(&']') && ranges > 0 {
                        i += 1;
                        break;
                    }
                    member(&mut i)?;
                    if p.get(i) == Some(&'-') {
                        i += 1;
                        member(&mut i)?;
                    }
                    ranges += 1;
                }
            }
            _ => i += 1,
        }
    }
    Ok(())
}

fn wildcard(pat: &[u32], name: &[u32], dialect: Dialect) -> bool {
    const STAR: u32 = b'*' as u32;
    const ANY: u32 = b'?' as u32;
    const OPEN: u32 = b'[' as u32;
    const ESC: u32 = b'\\' as u32;
    // Iterative with one backtrack point for the last `*`: linear in practice.
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        let step = match pat.get(p) {
            Some(&STAR) => {
                star = Some((p, n));
                p += 1;
                continue;
            }
            Some(&ANY) => Some(p + 1),
            Some(&OPEN) => class(&pat[p..], name[n], dialect)
                .map(|(ok, len)| (ok, p + len))
                .and_then(|(ok, next)| ok.then_some(next)),
            Some(&ESC) if p + 1 < pat.len() => (pat[p + 1] == name[n]).then_some(p + 2),
            Some(&c) => (c == name[n]).then_some(p + 1),
            None => None,
        };
        match step {
            Some(np) => {
                p = np;
                n += 1;
            }
            None => match star {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pat[p..].iter().all(|&c| c == STAR)
}

/// A `[…]` class at the start of `pat`: whether `c` is in it and the class's length;
/// `None` when the bracket is not closed (glob(3) then matches a literal `[`; for Go the
/// pattern was refused by [`check`], and it matches nothing).
fn class(pat: &[u32], c: u32, dialect: Dialect) -> Option<(bool, usize)> {
    let is = |x: Option<&u32>, b: u8| x == Some(&(b as u32));
    let mut i = 1;
    let negate = is(pat.get(i), b'^') || (dialect == Dialect::Posix && is(pat.get(i), b'!'));
    if negate {
        i += 1;
    }
    let mut hit = false;
    let mut first = true;
    // One member, a backslash escaping it in Go's dialect.
    let member = |i: &mut usize| -> Option<u32> {
        if dialect == Dialect::Go && is(pat.get(*i), b'\\') {
            *i += 1;
        }
        let x = *pat.get(*i)?;
        *i += 1;
        Some(x)
    };
    while let Some(&x) = pat.get(i) {
        if x == b']' as u32 && !first {
            return Some((hit != negate, i + 1));
        }
        first = false;
        let lo = member(&mut i)?;
        if is(pat.get(i), b'-') && pat.get(i + 1).is_some_and(|&e| e != b']' as u32) {
            i += 1;
            let hi = member(&mut i)?;
            hit |= lo <= c && c <= hi;
        } else {
            hit |= lo == c;
        }
    }
    (dialect == Dialect::Posix && c == b'[' as u32).then_some((true, 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn posix_patterns() {
        for (p, n, want) in [
            ("*.monitrc", "a.monitrc", true),
            ("*.monitrc", ".a.monitrc", false),
            ("*", "", true),
            ("a?c", "abc", true),
            ("a[b-d]c", "acc", true),
            ("a[!b]c", "abc", false),
            ("a[^b]c", "abc", false),
            ("*x*y", "axxy", true),
            ("*x*y", "axxz", false),
            ("a[b", "a[b", true),
        ] {
            assert_eq!(matches(p, n, Dialect::Posix), want, "{p} {n}");
        }
    }

    #[test]
    fn go_patterns() {
        for (p, n, want) in [
            ("*", ".hidden", true),
            ("?x", ".x", true),
            // `!` is a member in Go, not a negation.
            ("a[!b]c", "a!c", true),
            ("a[!b]c", "abc", true),
            ("a[!b]c", "axc", false),
            ("a[^b]c", "abc", false),
            ("a[^b]c", "axc", true),
            ("a[\\]]c", "a]c", true),
            ("a\\*", "a*", true),
            ("a\\*", "ab", false),
            ("é?", "éé", true),
            ("[a-cé]x", "éx", true),
        ] {
            assert_eq!(matches(p, n, Dialect::Go), want, "{p} {n}");
        }
    }

    /// Go's ErrBadPattern cases, and patterns it takes.
    #[test]
    fn go_syntax() {
        for bad in ["a[", "[]", "[a-]", "[-a]", "a\\", "[^]", "/x/[z"] {
            assert!(check(bad).is_err(), "{bad}");
        }
        for good in ["a", "[a]", "[^a-z]", "\\[", "*?", "[\\-]", "/var/vcap/*/x"] {
            assert!(check(good).is_ok(), "{good}");
        }
    }

    #[test]
    fn expansion_in_both_dialects() {
        let d = std::env::temp_dir().join(format!("tend-glob-{}", std::process::id()));
        for n in ["a1", "a2", ".hid", "b/x", "c/x"] {
            std::fs::create_dir_all(d.join(n)).unwrap();
        }
        std::os::unix::fs::symlink("nowhere", d.join("dangling")).unwrap();
        let names = |ps: Vec<PathBuf>| -> Vec<String> {
            ps.iter()
                .map(|p| p.strip_prefix(&d).unwrap().display().to_string())
                .collect()
        };
        let go = |p: &str| {
            names(expand(&format!("{}/{p}", d.display()), Path::new(""), Dialect::Go).unwrap())
        };
        let posix = |p: &str| {
            names(
                expand(
                    &format!("{}/{p}", d.display()),
                    Path::new(""),
                    Dialect::Posix,
                )
                .unwrap(),
            )
        };
        assert_eq!(go("*"), [".hid", "a1", "a2", "b", "c", "dangling"]);
        assert_eq!(posix("*"), ["a1", "a2", "b", "c", "dangling"]);
        assert_eq!(go("*/x"), ["b/x", "c/x"]);
        assert_eq!(go("dangling"), ["dangling"]);
        assert!(go("none/*").is_empty());
        assert!(expand("/x/[", Path::new(""), Dialect::Go).is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
