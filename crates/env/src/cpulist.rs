//! CPU lists in the kernel's notation (`0-3,8`), the set of online CPUs, and pinning.

use crate::sys::Error;
use nix::sched::{CpuSet, sched_setaffinity};
use nix::unistd::Pid;
use std::fmt;

/// Where the kernel lists the online CPUs, in the same notation.
pub const ONLINE: &str = "/sys/devices/system/cpu/online";

/// A sorted set of CPU numbers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CpuList(pub Vec<usize>);

/// Parse `0-3,8`: comma-separated numbers and inclusive ranges (`a-b` with a <= b).
/// Whitespace around the whole list (a trailing newline from sysfs) is ignored.
pub fn parse(s: &str) -> Option<CpuList> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let num = |t: &str| -> Option<usize> {
        if t.is_empty() || t.len() > 7 || !t.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        t.parse().ok()
    };
    let mut v = Vec::new();
    for part in s.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    return None;
                }
                v.extend(a..=b);
            }
            None => v.push(num(part)?),
        }
    }
    v.sort_unstable();
    v.dedup();
    Some(CpuList(v))
}

impl fmt::Display for CpuList {
    /// The shortest kernel notation: runs of consecutive CPUs become ranges.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut i = 0;
        let v = &self.0;
        while i < v.len() {
            let mut j = i;
            while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
                j += 1;
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if j > i {
                write!(f, "{}-{}", v[i], v[j])?;
            } else {
                write!(f, "{}", v[i])?;
            }
            i = j + 1;
        }
        Ok(())
    }
}

impl CpuList {
    /// The CPUs of `self` that are not in `online`.
    pub fn missing_from(&self, online: &CpuList) -> CpuList {
        CpuList(
            self.0
                .iter()
                .copied()
                .filter(|c| online.0.binary_search(c).is_err())
                .collect(),
        )
    }
}

/// Why pinning failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PinError {
    /// Some CPUs asked for are not online.
    Offline(CpuList),
    System(Error),
}

impl fmt::Display for PinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PinError::Offline(l) => write!(f, "CPUs not online: {l}"),
            PinError::System(e) => e.fmt(f),
        }
    }
}

/// The online CPUs, from sysfs.
pub fn online() -> Result<CpuList, Error> {
    let text = std::fs::read_to_string(ONLINE).map_err(|e| Error::io("read", ONLINE, &e))?;
    parse(&text).ok_or(Error::at("parse", ONLINE, nix::errno::Errno::EINVAL))
}

/// Check every CPU is online, then set this process's affinity to exactly the list.
pub fn pin(list: &CpuList) -> Result<(), PinError> {
    let online = online().map_err(PinError::System)?;
    let missing = list.missing_from(&online);
    if !missing.0.is_empty() {
        return Err(PinError::Offline(missing));
    }
    let mut set = CpuSet::new();
    for &c in &list.0 {
        set.set(c)
            .map_err(|e| PinError::System(Error::new("build the CPU set", e)))?;
    }
    sched_setaffinity(Pid::from_raw(0), &set)
        .map_err(|e| PinError::System(Error::new("sched_setaffinity", e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kernel_notation() {
        assert_eq!(parse("0-3,8"), Some(CpuList(vec![0, 1, 2, 3, 8])));
        assert_eq!(parse("1\n"), Some(CpuList(vec![1])));
        assert_eq!(parse("3,1,1-2"), Some(CpuList(vec![1, 2, 3])));
        for bad in [
            "", "a", "3-1", "1,", ",1", "1--2", "-1", "1-", "+1", "1 2", "99999999",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn formats_runs() {
        assert_eq!(parse("0-3,8,10-11").unwrap().to_string(), "0-3,8,10-11");
        assert_eq!(CpuList(vec![5]).to_string(), "5");
        assert_eq!(CpuList(vec![]).to_string(), "");
    }

    #[test]
    fn offline_named() {
        let online = parse("0-1").unwrap();
        assert_eq!(
            parse("0-3,8").unwrap().missing_from(&online).to_string(),
            "2-3,8"
        );
        assert!(parse("1").unwrap().missing_from(&online).0.is_empty());
    }
}
