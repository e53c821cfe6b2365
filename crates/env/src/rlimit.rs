//! Soft resource limits as s6-softlimit sets them: each option names one or more
//! resources; a value is a decimal number (clamped to the hard limit) or `=` (the hard
//! limit itself). Hard limits are never changed.

use crate::sys::Error;
use nix::sys::resource::{Resource, getrlimit, setrlimit};

/// A limit value from the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    /// `=`: raise the soft limit to the hard limit.
    Hard,
    /// A number (bytes, files, processes or seconds).
    Exactly(u64),
}

/// Parse a value: `=` or decimal digits that fit in 64 bits.
pub fn parse_value(s: &[u8]) -> Option<Value> {
    if s == b"=" {
        return Some(Value::Hard);
    }
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s)
        .ok()?
        .parse()
        .ok()
        .map(Value::Exactly)
}

/// The resources an option letter sets, in s6's order.
pub fn resources(letter: char) -> &'static [Resource] {
    match letter {
        'a' => &[Resource::RLIMIT_AS],
        'c' => &[Resource::RLIMIT_CORE],
        'd' => &[Resource::RLIMIT_DATA],
        'f' => &[Resource::RLIMIT_FSIZE],
        'l' => &[Resource::RLIMIT_MEMLOCK],
        'm' => &[
            Resource::RLIMIT_DATA,
            Resource::RLIMIT_STACK,
            Resource::RLIMIT_MEMLOCK,
            Resource::RLIMIT_AS,
        ],
        'o' => &[Resource::RLIMIT_NOFILE],
        'p' => &[Resource::RLIMIT_NPROC],
        'r' => &[Resource::RLIMIT_RSS],
        's' => &[Resource::RLIMIT_STACK],
        't' => &[Resource::RLIMIT_CPU],
        _ => &[],
    }
}

/// The new soft limit given the value and the hard limit.
pub fn soft(value: Value, hard: u64) -> u64 {
    match value {
        Value::Hard => hard,
        Value::Exactly(n) => n.min(hard),
    }
}

/// Set one resource's soft limit.
pub fn set(resource: Resource, value: Value) -> Result<(), Error> {
    let (_, hard) = getrlimit(resource).map_err(|e| Error::new("getrlimit", e))?;
    setrlimit(resource, soft(value, hard), hard).map_err(|e| Error::new("setrlimit", e))
}

/// The soft limits before [`apply`], to put back if the exec fails.
pub struct Saved(Vec<(Resource, u64, u64)>);

/// Apply every (option letter, value) in order; returns what to [`restore`].
pub fn apply(limits: &[(char, Value)]) -> Result<Saved, Error> {
    let mut saved = Vec::with_capacity(limits.len() * 4);
    for (letter, _) in limits {
        for r in resources(*letter) {
            let (soft, hard) = getrlimit(*r).map_err(|e| Error::new("getrlimit", e))?;
            saved.push((*r, soft, hard));
        }
    }
    let saved = Saved(saved);
    for (letter, value) in limits {
        for r in resources(*letter) {
            if let Err(e) = set(*r, *value) {
                restore(&saved);
                return Err(e);
            }
        }
    }
    Ok(saved)
}

/// Put the soft limits back (raising a soft limit up to the hard one needs no privilege),
/// so a failed exec can still be reported under limits that left no room to do so.
pub fn restore(saved: &Saved) {
    for &(r, soft, hard) in saved.0.iter().rev() {
        let _ = setrlimit(r, soft, hard);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        assert_eq!(parse_value(b"="), Some(Value::Hard));
        assert_eq!(parse_value(b"0100"), Some(Value::Exactly(100)));
        assert_eq!(
            parse_value(b"18446744073709551615"),
            Some(Value::Exactly(u64::MAX))
        );
        assert_eq!(parse_value(b"18446744073709551616"), None);
        for bad in [&b""[..], b"1k", b"unlimited", b"-1", b"==", b" 1"] {
            assert_eq!(parse_value(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn clamped_to_hard() {
        assert_eq!(soft(Value::Exactly(99999999), 20000), 20000);
        assert_eq!(soft(Value::Exactly(100), 20000), 100);
        assert_eq!(soft(Value::Hard, 20000), 20000);
        assert_eq!(soft(Value::Hard, u64::MAX), u64::MAX);
    }

    #[test]
    fn memory_sets_four() {
        assert_eq!(resources('m').len(), 4);
        assert_eq!(resources('o'), &[Resource::RLIMIT_NOFILE]);
        assert!(resources('x').is_empty());
    }
}
