//! tend-permafailon's decision: has the service died at least `count` times in the last
//! `secs` seconds of a cause in the list? As s6-permafailon, from the death tally.

use tend_proto::Tai64n;
use tend_proto::death_tally::Death;

/// The causes that count: exit codes and signals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Causes {
    codes: [bool; 256],
    signals: [bool; 64],
}

/// Why a cause list was refused (s6-permafailon's two messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CausesError {
    /// A number outside 0..=255, or an interval upside down.
    BadCode,
    /// Anything else.
    BadSpec,
}

impl std::fmt::Display for CausesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CausesError::BadCode => "invalid exit code",
            CausesError::BadSpec => "invalid status list specification",
        })
    }
}

fn code(s: &str) -> Result<u8, CausesError> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(CausesError::BadSpec);
    }
    s.parse::<u8>().map_err(|_| CausesError::BadCode)
}

/// A signal: a name in the toolkit's one grammar (`SIGTERM`, `sigterm`, `TERM`,
/// [`tend_sys::signals::parse`]), or a number after `SIG` (`SIG15`, up to 63): bare
/// digits are an exit code.
fn signal(s: &str) -> Option<usize> {
    let number = s
        .get(..3)
        .filter(|p| p.eq_ignore_ascii_case("sig"))
        .and_then(|_| s[3..].parse::<usize>().ok());
    match number {
        Some(n) => (1..64).contains(&n).then_some(n),
        None => tend_sys::signals::parse(s).and_then(|n| usize::try_from(n).ok()),
    }
}

impl Causes {
    /// `1,101-103,SIGSEGV,sig11`: exit codes, intervals of them, signals.
    pub fn parse(list: &str) -> Result<Causes, CausesError> {
        let mut c = Causes {
            codes: [false; 256],
            signals: [false; 64],
        };
        for item in list.split(',') {
            if item.bytes().next().is_some_and(|b| b.is_ascii_digit()) {
                let (lo, hi) = match item.split_once('-') {
                    Some((a, b)) => (code(a)?, code(b)?),
                    None => (code(item)?, code(item)?),
                };
                if lo > hi {
                    return Err(CausesError::BadCode);
                }
                c.codes[lo as usize..=hi as usize]
                    .iter_mut()
                    .for_each(|b| *b = true);
            } else {
                c.signals[signal(item).ok_or(CausesError::BadSpec)?] = true;
            }
        }
        Ok(c)
    }

    /// Whether a death counts: its signal is listed, or its exit code (128 + n for a
    /// signal, as the tally records it) is.
    pub fn matches(&self, d: &Death) -> bool {
        (d.signal != 0 && self.signals[(d.signal & 63) as usize]) || self.codes[d.exitcode as usize]
    }
}

/// The death at which `count` deaths of a listed cause in the last `secs` seconds were
/// reached, counting from the oldest in the window as s6-permafailon does (its message
/// names that death's cause), if they were.
pub fn triggered(
    deaths: &[Death],
    now: Tai64n,
    secs: u64,
    count: usize,
    causes: &Causes,
) -> Option<Death> {
    let since = now.secs.saturating_sub(secs);
    deaths
        .iter()
        .filter(|d| d.stamp.secs >= since && causes.matches(d))
        .nth(count.checked_sub(1)?)
        .copied()
}

/// How s6-permafailon names the cause in its message: `exit code 1`, `signal 9`.
pub fn cause(d: &Death) -> String {
    if d.signal != 0 {
        format!("signal {}", d.signal)
    } else {
        format!("exit code {}", d.exitcode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64, exitcode: u8, signal: u8) -> Death {
        Death {
            stamp: Tai64n { secs, nanos: 0 },
            exitcode,
            signal,
        }
    }

    #[test]
    fn lists_as_s6() {
        let c = Causes::parse("1,101-103,SIGSEGV,sigbus,SIG9").unwrap();
        assert!(c.matches(&at(0, 1, 0)) && c.matches(&at(0, 102, 0)) && !c.matches(&at(0, 104, 0)));
        assert!(
            c.matches(&at(0, 139, 11)) && c.matches(&at(0, 137, 9)) && !c.matches(&at(0, 143, 15))
        );
        assert!(Causes::parse("0-255").unwrap().matches(&at(0, 143, 15)));
        assert_eq!(Causes::parse("300"), Err(CausesError::BadCode));
        assert_eq!(Causes::parse("5-3"), Err(CausesError::BadCode));
        assert_eq!(Causes::parse("SIGFOO"), Err(CausesError::BadSpec));
        let named = Causes::parse("KILL,SIGIO").unwrap();
        assert!(named.matches(&at(0, 137, 9)) && named.matches(&at(0, 157, 29)));
        assert_eq!(Causes::parse("1,"), Err(CausesError::BadSpec));
        assert_eq!(Causes::parse("1-x"), Err(CausesError::BadSpec));
    }

    #[test]
    fn counts_from_the_oldest_within_the_window() {
        let d = [at(90, 1, 0), at(100, 143, 15), at(110, 1, 0), at(120, 1, 0)];
        let c = Causes::parse("1").unwrap();
        let now = Tai64n {
            secs: 125,
            nanos: 0,
        };
        // As s6-permafailon: the death that made the count, oldest first.
        assert_eq!(triggered(&d, now, 20, 2, &c), Some(d[3]));
        assert_eq!(triggered(&d, now, 20, 3, &c), None);
        assert_eq!(triggered(&d, now, 60, 3, &c), Some(d[3]));
        assert_eq!(triggered(&d, now, 60, 1, &c), Some(d[0]));
        assert_eq!(triggered(&d, now, 60, 0, &c), None);
        assert_eq!(cause(&d[1]), "signal 15");
    }
}
