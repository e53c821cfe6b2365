//! CPU lists in the kernel's notation (`0-3,8`), the set of online CPUs, and pinning.

use crate::sys::Error;
use nix::sched::{CpuSet, sched_setaffinity};
use nix::unistd::Pid;
use std::fmt;

/// Where the kernel lists the online CPUs, in the same notation.
pub const ONLINE: &str = "/sys/devices/system/cpu/online";

/// Where the kernel lists every CPU it could ever bring online.
pub const POSSIBLE: &str = "/sys/devices/system/cpu/possible";

/// The most CPUs an affinity mask can name (glibc's CPU_SETSIZE): a list is checked
/// against a fixed-size bit set of this many CPUs, never expanded without bound.
pub const SET_SIZE: usize = 1024;

/// A sorted set of CPU numbers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CpuList(pub Vec<usize>);

/// Why a cpulist was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// Not the kernel's notation.
    Syntax,
    /// A CPU number at or beyond `limit`, the number of CPUs the kernel can have.
    Beyond { cpu: u64, limit: usize },
}

impl ParseError {
    /// A cpulist is the caller's input: 100.
    pub fn code(&self) -> i32 {
        crate::sys::code::USAGE
    }

    /// The message naming the list given: `invalid cpulist: LIST[: why]`.
    pub fn describe(&self, list: &str) -> String {
        match self {
            ParseError::Syntax => format!("invalid cpulist: {list}"),
            ParseError::Beyond { .. } => format!("invalid cpulist: {list}: {self}"),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Syntax => f.write_str("not a list of CPU numbers and ranges"),
            ParseError::Beyond { cpu, limit } => write!(
                f,
                "CPU {cpu} does not exist (the last possible CPU is {})",
                limit.saturating_sub(1)
            ),
        }
    }
}

/// Walk `0-3,8` as (first, last) pairs, checking syntax only.
fn ranges(s: &str) -> impl Iterator<Item = Result<(u64, u64), ParseError>> + '_ {
    let num = |t: &str| -> Result<u64, ParseError> {
        if t.is_empty() || t.len() > 19 || !t.bytes().all(|b| b.is_ascii_digit()) {
            return Err(ParseError::Syntax);
        }
        t.parse().map_err(|_| ParseError::Syntax)
    };
    s.split(',').map(move |part| match part.split_once('-') {
        Some((a, b)) => {
            let (a, b) = (num(a)?, num(b)?);
            if a > b {
                return Err(ParseError::Syntax);
            }
            Ok((a, b))
        }
        None => num(part).map(|n| (n, n)),
    })
}

/// Parse `0-3,8`: comma-separated numbers and inclusive ranges (`a-b` with a <= b), every
/// CPU below `limit` (at most [`SET_SIZE`]). Whitespace around the whole list (a trailing
/// newline from sysfs) is ignored. The memory used is bounded by `limit`, whatever the
/// numbers say.
pub fn parse_within(s: &str, limit: usize) -> Result<CpuList, ParseError> {
    let s = s.trim();
    if s.is_empty() {
        return Err(ParseError::Syntax);
    }
    let limit = limit.min(SET_SIZE);
    let mut set = [0u64; SET_SIZE / 64];
    for r in ranges(s) {
        let (a, b) = r?;
        if b >= limit as u64 {
            return Err(ParseError::Beyond { cpu: b, limit });
        }
        for c in a as usize..=b as usize {
            set[c / 64] |= 1 << (c % 64);
        }
    }
    Ok(CpuList(
        (0..limit)
            .filter(|&c| set[c / 64] & (1 << (c % 64)) != 0)
            .collect(),
    ))
}

/// [`parse_within`] the largest set an affinity mask can hold.
pub fn parse(s: &str) -> Option<CpuList> {
    parse_within(s, SET_SIZE).ok()
}

/// The highest CPU number of a list, without expanding it.
pub fn highest(s: &str) -> Option<u64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    ranges(s).try_fold(0, |m, r| r.ok().map(|(_, b)| m.max(b)))
}

/// How many CPUs the kernel can have: the last of [`POSSIBLE`] plus one, at most
/// [`SET_SIZE`] (which is also the answer when sysfs cannot tell).
pub fn possible() -> usize {
    std::fs::read_to_string(POSSIBLE)
        .ok()
        .and_then(|t| highest(&t))
        .and_then(|h| usize::try_from(h).ok())
        .map_or(SET_SIZE, |h| h.saturating_add(1).min(SET_SIZE))
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
    Sys(Error),
}

impl PinError {
    /// CPUs offline or a failed call: the system's state, 111.
    pub fn code(&self) -> i32 {
        crate::sys::code::SYSTEM
    }
}

impl fmt::Display for PinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PinError::Offline(l) => write!(f, "CPUs not online: {l}"),
            PinError::Sys(e) => e.fmt(f),
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
    let online = online().map_err(PinError::Sys)?;
    let missing = list.missing_from(&online);
    if !missing.0.is_empty() {
        return Err(PinError::Offline(missing));
    }
    let mut set = CpuSet::new();
    for &c in &list.0 {
        set.set(c)
            .map_err(|e| PinError::Sys(Error::new("build the CPU set", e)))?;
    }
    sched_setaffinity(Pid::from_raw(0), &set)
        .map_err(|e| PinError::Sys(Error::new("sched_setaffinity", e)))
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
            "",
            "a",
            "3-1",
            "1,",
            ",1",
            "1--2",
            "-1",
            "1-",
            "+1",
            "1 2",
            "99999999",
            "0-99999999999999999999",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn bounded_by_the_possible_cpus() {
        assert_eq!(
            parse_within("0-9999999", 8),
            Err(ParseError::Beyond {
                cpu: 9999999,
                limit: 8
            })
        );
        assert_eq!(
            parse_within("0-3,9999999999999999999", 8),
            Err(ParseError::Beyond {
                cpu: 9999999999999999999,
                limit: 8
            })
        );
        assert_eq!(parse_within("0-7", 8), Ok(CpuList((0..8).collect())));
        assert_eq!(
            parse_within("0-2000", 100_000),
            Err(ParseError::Beyond {
                cpu: 2000,
                limit: SET_SIZE
            })
        );
        assert_eq!(highest("0-3,8\n"), Some(8));
        assert_eq!(highest("0-9999999"), Some(9999999));
        assert_eq!(highest("x"), None);
        assert!((1..=SET_SIZE).contains(&possible()));
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
