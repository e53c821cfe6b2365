//! `include` patterns: `*`, `?` and `[…]` in any path component, as glob(3) matches
//! them for monit (a leading dot is matched only by a pattern that starts with one), the
//! matches sorted. Written here rather than called through libc so that this crate stays
//! free of `unsafe`; the directories are read, nothing else is done to them.

use std::path::{Path, PathBuf};

/// The files (and directories) `pattern` names, sorted; a relative pattern is taken from
/// `base` (the empty path: the working directory, as monit takes it).
pub fn expand(pattern: &str, base: &Path) -> std::io::Result<Vec<PathBuf>> {
    let (mut found, rest) = if let Some(r) = pattern.strip_prefix('/') {
        (vec![PathBuf::from("/")], r)
    } else {
        (vec![base.to_path_buf()], pattern)
    };
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let mut next = Vec::new();
        for dir in &found {
            if !has_magic(part) {
                let p = dir.join(part);
                if (last && p.exists()) || p.is_dir() {
                    next.push(p);
                }
                continue;
            }
            // A relative pattern is taken from the working directory, as monit does.
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
                .filter(|n| matches(part.as_bytes(), n.as_bytes()))
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
        found.retain(|p| p.exists());
    }
    Ok(found)
}

fn has_magic(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// Whether `name` matches the one-component pattern `pat` (fnmatch without flags but
/// FNM_PERIOD: a leading dot must be matched by a dot).
pub fn matches(pat: &[u8], name: &[u8]) -> bool {
    if name.first() == Some(&b'.') && pat.first() != Some(&b'.') {
        return false;
    }
    fnmatch(pat, name)
}

fn fnmatch(pat: &[u8], name: &[u8]) -> bool {
    // Iterative with one backtrack point for the last `*`: linear in practice.
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        let step = match pat.get(p) {
            Some(b'*') => {
                star = Some((p, n));
                p += 1;
                continue;
            }
            Some(b'?') => Some(p + 1),
            Some(b'[') => class(&pat[p..], name[n])
                .map(|(ok, len)| (ok, p + len))
                .and_then(|(ok, next)| ok.then_some(next)),
            Some(b'\\') if p + 1 < pat.len() => (pat[p + 1] == name[n]).then_some(p + 2),
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
    pat[p..].iter().all(|&c| c == b'*')
}

/// A `[…]` class at the start of `pat`: whether `c` is in it and the class's length;
/// `None` when the bracket is not closed (then it matches a literal `[`).
fn class(pat: &[u8], c: u8) -> Option<(bool, usize)> {
    let mut i = 1;
    let negate = matches!(pat.get(i), Some(b'!' | b'^'));
    if negate {
        i += 1;
    }
    let mut hit = false;
    let mut first = true;
    while let Some(&x) = pat.get(i) {
        if x == b']' && !first {
            return Some((hit != negate, i + 1));
        }
        first = false;
        if pat.get(i + 1) == Some(&b'-') && pat.get(i + 2).is_some_and(|&e| e != b']') {
            hit |= x <= c && c <= pat[i + 2];
            i += 3;
        } else {
            hit |= x == c;
            i += 1;
        }
    }
    (c == b'[').then_some((true, 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        for (p, n, want) in [
            ("*.monitrc", "a.monitrc", true),
            ("*.monitrc", ".a.monitrc", false),
            ("*", "", true),
            ("a?c", "abc", true),
            ("a[b-d]c", "acc", true),
            ("a[!b]c", "abc", false),
            ("*x*y", "axxy", true),
            ("*x*y", "axxz", false),
        ] {
            assert_eq!(matches(p.as_bytes(), n.as_bytes()), want, "{p} {n}");
        }
    }
}
