//! Joining a cgroup v2 group: find the cgroup2 mount, create the group, enable the
//! controllers its limits need in every ancestor's `cgroup.subtree_control` from the
//! mount down (as systemd does for a delegated subtree), write the limits, and move the
//! process in.
//!
//! The mount is found in `/proc/self/mountinfo` (hybrid hosts mount cgroup2 at
//! `/sys/fs/cgroup/unified`, not `/sys/fs/cgroup`). Byte-sized limits accept unit
//! suffixes (`512M`), converted here because the kernel only takes bytes.

#![forbid(unsafe_code)]

use nix::errno::Errno;
use std::ffi::OsStr;
use std::fmt;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use tend_sys::Error;

pub const MOUNTINFO: &str = "/proc/self/mountinfo";

/// The cgroup2 mount points listed in a mountinfo text, in order.
pub fn cgroup2_mounts(mountinfo: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for line in mountinfo.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        if right.split(' ').next() != Some("cgroup2") {
            continue;
        }
        if let Some(mp) = left.split(' ').nth(4) {
            out.push(PathBuf::from(OsStr::from_bytes(&unescape(mp))));
        }
    }
    out
}

/// The cgroup v1 mount point that holds `controller`, if any (on hybrid hosts most
/// controllers are bound to v1 and so cannot be enabled in v2).
pub fn v1_mount_of(mountinfo: &str, controller: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let mut f = right.split(' ');
        if f.next() != Some("cgroup") {
            return None;
        }
        let opts = f.nth(1)?;
        let mp = left.split(' ').nth(4)?;
        opts.split(',')
            .any(|o| o == controller)
            .then(|| PathBuf::from(OsStr::from_bytes(&unescape(mp))))
    })
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// One `-c file=value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    pub file: String,
    pub value: String,
}

/// Parse `controller.file=value`: the file is a plain name with a dot, the value is not
/// empty.
pub fn parse_setting(s: &str) -> Option<Setting> {
    let (file, value) = s.split_once('=')?;
    let (prefix, rest) = file.split_once('.')?;
    if prefix.is_empty() || rest.is_empty() || file.contains('/') || value.is_empty() {
        return None;
    }
    Some(Setting {
        file: file.to_string(),
        value: value.to_string(),
    })
}

/// The controller a file belongs to; `None` for the core `cgroup.*` files.
pub fn controller_of(file: &str) -> Option<&str> {
    let c = file.split('.').next()?;
    (c != "cgroup").then_some(c)
}

/// Whether a file takes a byte count (and so accepts a unit suffix here).
fn takes_bytes(file: &str) -> bool {
    const MEMORY: &[&str] = &[
        "memory.min",
        "memory.low",
        "memory.high",
        "memory.max",
        "memory.swap.high",
        "memory.swap.max",
        "memory.zswap.max",
    ];
    MEMORY.contains(&file)
        || (file.starts_with("hugetlb.") && (file.ends_with(".max") || file.ends_with(".rsvd.max")))
}

/// `512M` → `536870912` (K, M, G, T are powers of 1024, either case); anything else
/// unchanged. `None` if the number overflows.
pub fn bytes(v: &str) -> Option<String> {
    let (digits, unit) = match v.as_bytes().last() {
        Some(b'k' | b'K') => (&v[..v.len() - 1], 1u64 << 10),
        Some(b'm' | b'M') => (&v[..v.len() - 1], 1 << 20),
        Some(b'g' | b'G') => (&v[..v.len() - 1], 1 << 30),
        Some(b't' | b'T') => (&v[..v.len() - 1], 1 << 40),
        _ => return Some(v.to_string()),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Some(v.to_string());
    }
    let n: u64 = digits.parse().ok()?;
    n.checked_mul(unit).map(|b| b.to_string())
}

/// The text written for a setting: unit sizes converted where the kernel takes bytes
/// (also `rbps=`/`wbps=` in io.max).
pub fn kernel_value(s: &Setting) -> Option<String> {
    if takes_bytes(&s.file) {
        return bytes(&s.value);
    }
    if s.file == "io.max" {
        let mut out = Vec::new();
        for tok in s.value.split(' ') {
            match tok.split_once('=') {
                Some((k @ ("rbps" | "wbps"), v)) => out.push(format!("{k}={}", bytes(v)?)),
                _ => out.push(tok.to_string()),
            }
        }
        return Some(out.join(" "));
    }
    Some(s.value.clone())
}

/// Why joining failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CgroupError {
    /// No cgroup2 filesystem in /proc/self/mountinfo.
    NotMounted,
    /// An absolute path outside every cgroup2 mount.
    NotUnder(PathBuf),
    /// An empty path or one with `.`/`..` components.
    BadPath(PathBuf),
    /// A value with a unit that overflows.
    BadValue(String),
    /// A controller the group's parent does not offer.
    Unavailable {
        controller: String,
        at: PathBuf,
        available: String,
        /// Where a cgroup v1 hierarchy holds the controller instead.
        v1: Option<PathBuf>,
    },
    /// A level would not delegate a controller to its children.
    Refused {
        controller: String,
        level: PathBuf,
        errno: Errno,
    },
    /// A write to a cgroup file failed.
    Write {
        value: String,
        file: PathBuf,
        errno: Errno,
    },
    Sys(Error),
}

impl CgroupError {
    /// 100 for a path or value the caller gave wrong, 111 for what the system refused.
    pub fn code(&self) -> i32 {
        match self {
            CgroupError::BadPath(_) | CgroupError::NotUnder(_) | CgroupError::BadValue(_) => {
                tend_sys::code::USAGE
            }
            CgroupError::NotMounted
            | CgroupError::Unavailable { .. }
            | CgroupError::Refused { .. }
            | CgroupError::Write { .. }
            | CgroupError::Sys(_) => tend_sys::code::SYSTEM,
        }
    }
}

impl fmt::Display for CgroupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CgroupError::NotMounted => {
                write!(f, "no cgroup2 filesystem is mounted (see {MOUNTINFO})")
            }
            CgroupError::NotUnder(p) => {
                write!(f, "{} is not under a cgroup2 mount", p.display())
            }
            CgroupError::BadPath(p) => write!(f, "invalid cgroup path: {}", p.display()),
            CgroupError::BadValue(v) => write!(f, "invalid value: {v}"),
            CgroupError::Unavailable {
                controller,
                at,
                available,
                v1,
            } => {
                let available = if available.is_empty() {
                    "none"
                } else {
                    available
                };
                write!(
                    f,
                    "controller {controller} is not available in {} (available: {available}",
                    at.display(),
                )?;
                if let Some(v1) = v1 {
                    write!(
                        f,
                        "; {controller} is bound to the cgroup v1 hierarchy at {}",
                        v1.display()
                    )?;
                }
                f.write_str(")")
            }
            CgroupError::Refused {
                controller,
                level,
                errno,
            } => write!(
                f,
                "{} refused to delegate controller {controller}: unable to write +{controller} to {}: {}{}",
                level.display(),
                level.join("cgroup.subtree_control").display(),
                errno.desc(),
                if *errno == Errno::EBUSY {
                    " (it holds processes of its own)"
                } else {
                    ""
                }
            ),
            CgroupError::Write { value, file, errno } => write!(
                f,
                "unable to write {value} to {}: {}",
                file.display(),
                errno.desc()
            ),
            CgroupError::Sys(e) => e.fmt(f),
        }
    }
}

/// The cgroup2 mount and the group's directory for `path`: relative to the first cgroup2
/// mount, or an absolute path inside one.
pub fn resolve(mounts: &[PathBuf], path: &Path) -> Result<(PathBuf, PathBuf), CgroupError> {
    let first = mounts.first().ok_or(CgroupError::NotMounted)?;
    let (mount, rel) = if path.is_absolute() {
        let m = mounts
            .iter()
            .find(|m| path.starts_with(m))
            .ok_or_else(|| CgroupError::NotUnder(path.to_path_buf()))?;
        (m, path.strip_prefix(m).unwrap_or(Path::new("")))
    } else {
        if path.as_os_str().is_empty() {
            return Err(CgroupError::BadPath(path.to_path_buf()));
        }
        (first, path)
    };
    if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(CgroupError::BadPath(path.to_path_buf()));
    }
    Ok((mount.clone(), mount.join(rel)))
}

fn read(p: &Path) -> Result<String, CgroupError> {
    std::fs::read_to_string(p).map_err(|e| CgroupError::Sys(Error::io("read", p, &e)))
}

/// Write `value` to an existing cgroup file in one write(2).
fn write(file: &Path, value: &str) -> Result<(), CgroupError> {
    let err = |e: std::io::Error| CgroupError::Write {
        value: value.to_string(),
        file: file.to_path_buf(),
        errno: e.raw_os_error().map(Errno::from_raw).unwrap_or(Errno::EIO),
    };
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(file)
        .map_err(err)?;
    f.write_all(value.as_bytes()).map_err(err)
}

fn words(s: &str) -> impl Iterator<Item = &str> {
    s.split_whitespace()
}

/// Enable `controllers` in `level`'s `cgroup.subtree_control` where they are not yet.
/// A level that already delegates them is not written to, so levels above the first one
/// this process may write are fine as long as they delegate. `level` offers every
/// controller: the mount was checked, and each level below was just delegated to.
fn delegate(level: &Path, controllers: &[&str]) -> Result<(), CgroupError> {
    let file = level.join("cgroup.subtree_control");
    let enabled = read(&file)?;
    for c in controllers {
        if words(&enabled).any(|a| a == *c) {
            continue;
        }
        write(&file, &format!("+{c}")).map_err(|e| match e {
            CgroupError::Write { errno, .. } => CgroupError::Refused {
                controller: c.to_string(),
                level: level.to_path_buf(),
                errno,
            },
            other => other,
        })?;
    }
    Ok(())
}

/// Create and configure the group for `path`, move this process into it, and return its
/// directory.
pub fn join(path: &Path, settings: &[Setting]) -> Result<PathBuf, CgroupError> {
    let info = read(Path::new(MOUNTINFO))?;
    let (mount, group) = resolve(&cgroup2_mounts(&info), path)?;
    let values = settings
        .iter()
        .map(|s| kernel_value(s).ok_or_else(|| CgroupError::BadValue(s.value.clone())))
        .collect::<Result<Vec<_>, _>>()?;
    let mut controllers: Vec<&str> = settings
        .iter()
        .filter_map(|s| controller_of(&s.file))
        .collect();
    controllers.sort_unstable();
    controllers.dedup();

    // As systemd does for a delegated subtree: every level from the mount down to the
    // group's parent delegates each controller to its children. The mount must offer it;
    // a level below offers what the level above delegates, so it is enabled top-down.
    let available = read(&mount.join("cgroup.controllers"))?;
    for c in &controllers {
        if !words(&available).any(|a| a == *c) {
            return Err(CgroupError::Unavailable {
                controller: c.to_string(),
                at: mount.clone(),
                available: words(&available).collect::<Vec<_>>().join(" "),
                v1: v1_mount_of(&info, c),
            });
        }
    }
    let rel = group.strip_prefix(&mount).unwrap_or(Path::new(""));
    let mut dir = mount.clone();
    for c in rel.components() {
        delegate(&dir, &controllers)?;
        dir.push(c);
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(CgroupError::Sys(Error::io("create", &dir, &e))),
        }
    }
    for (s, v) in settings.iter().zip(&values) {
        write(&group.join(&s.file), v)?;
    }
    write(&group.join("cgroup.procs"), &std::process::id().to_string())?;
    Ok(group)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "\
25 1 0:23 / /sys rw,nosuid - sysfs sysfs rw
31 25 0:27 / /sys/fs/cgroup ro - tmpfs tmpfs ro,mode=755
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
42 31 0:39 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
50 1 0:40 / /mnt/my\\040cg rw shared:3 - cgroup2 none rw
";

    #[test]
    fn finds_cgroup2_mounts_only() {
        assert_eq!(
            cgroup2_mounts(HYBRID),
            vec![
                PathBuf::from("/sys/fs/cgroup/unified"),
                PathBuf::from("/mnt/my cg")
            ]
        );
        assert!(cgroup2_mounts("41 31 0:38 / /sys/fs/cgroup rw - cgroup cgroup rw\n").is_empty());
    }

    #[test]
    fn v1_controllers_found() {
        assert_eq!(
            v1_mount_of(HYBRID, "memory"),
            Some(PathBuf::from("/sys/fs/cgroup/memory"))
        );
        assert_eq!(v1_mount_of(HYBRID, "pids"), None);
        let e = CgroupError::Unavailable {
            controller: "memory".into(),
            at: "/sys/fs/cgroup/unified".into(),
            available: "hugetlb".into(),
            v1: v1_mount_of(HYBRID, "memory"),
        };
        assert_eq!(
            e.to_string(),
            "controller memory is not available in /sys/fs/cgroup/unified (available: hugetlb; \
             memory is bound to the cgroup v1 hierarchy at /sys/fs/cgroup/memory)"
        );
    }

    #[test]
    fn refusal_names_the_level() {
        let e = CgroupError::Refused {
            controller: "hugetlb".into(),
            level: "/sys/fs/cgroup/unified/app".into(),
            errno: Errno::EBUSY,
        };
        assert_eq!(
            e.to_string(),
            "/sys/fs/cgroup/unified/app refused to delegate controller hugetlb: unable to \
             write +hugetlb to /sys/fs/cgroup/unified/app/cgroup.subtree_control: Device or \
             resource busy (it holds processes of its own)"
        );
    }

    #[test]
    fn settings() {
        assert_eq!(
            parse_setting("memory.max=512M"),
            Some(Setting {
                file: "memory.max".into(),
                value: "512M".into()
            })
        );
        assert_eq!(
            parse_setting("cpu.max=50000 100000").unwrap().value,
            "50000 100000"
        );
        for bad in [
            "memory.max",
            "max=1",
            ".max=1",
            "memory.=1",
            "memory.max=",
            "a/b.c=1",
        ] {
            assert_eq!(parse_setting(bad), None, "{bad}");
        }
        assert_eq!(controller_of("memory.swap.max"), Some("memory"));
        assert_eq!(controller_of("cgroup.max.descendants"), None);
    }

    #[test]
    fn units_only_where_bytes() {
        let k = |f: &str, v: &str| {
            kernel_value(&Setting {
                file: f.into(),
                value: v.into(),
            })
        };
        assert_eq!(k("memory.max", "512M").as_deref(), Some("536870912"));
        assert_eq!(k("memory.high", "2g").as_deref(), Some("2147483648"));
        assert_eq!(k("memory.max", "max").as_deref(), Some("max"));
        assert_eq!(k("memory.max", "100").as_deref(), Some("100"));
        assert_eq!(k("hugetlb.2MB.max", "4M").as_deref(), Some("4194304"));
        assert_eq!(k("pids.max", "10K").as_deref(), Some("10K"));
        assert_eq!(
            k("io.max", "8:0 rbps=1M wiops=10").as_deref(),
            Some("8:0 rbps=1048576 wiops=10")
        );
        assert_eq!(k("memory.max", "99999999999T"), None);
    }

    #[test]
    fn paths() {
        let m = vec![PathBuf::from("/sys/fs/cgroup/unified")];
        assert_eq!(
            resolve(&m, Path::new("a/b")).unwrap().1,
            PathBuf::from("/sys/fs/cgroup/unified/a/b")
        );
        assert_eq!(
            resolve(&m, Path::new("/sys/fs/cgroup/unified/x"))
                .unwrap()
                .1,
            PathBuf::from("/sys/fs/cgroup/unified/x")
        );
        assert!(matches!(
            resolve(&m, Path::new("/tmp/x")),
            Err(CgroupError::NotUnder(_))
        ));
        assert!(matches!(
            resolve(&m, Path::new("a/../b")),
            Err(CgroupError::BadPath(_))
        ));
        assert!(matches!(
            resolve(&m, Path::new("")),
            Err(CgroupError::BadPath(_))
        ));
        assert_eq!(resolve(&[], Path::new("a")), Err(CgroupError::NotMounted));
    }
}
