//! The crash-restart policy: `restart-policy` in the service directory (tend's own file,
//! s6 ignores it) says what to do when ./run keeps dying, as s6-permafailon does with the
//! death tally. Pure: the file's grammar, the recent deaths and the verdict; the daemon
//! reads the file (at each start of ./run, like the other settings) and records a
//! verdict in `supervise/tend-policy`.
//!
//! ```text
//! deaths=5          # this many deaths…
//! seconds=60        # …within this many seconds (a sliding window)
//! on=1,2,SIGSEGV    # optional: count only these exit codes and signals (default: all)
//! then=stop         # stop: permanent failure (event O, as ./finish exiting 125)
//! then=slow:30s     # or: keep restarting, at most once per 30 s, while it lasts
//! ```
//!
//! Without the file nothing changes (s6's one-second pacing, restart forever).

use crate::time::Ms;
use tend_sys::wait::{Ended, Wstat};

/// Most deaths a policy may count (the ring below is this big, allocated with the core).
pub const MAX_DEATHS: usize = 64;

/// What happens when the policy fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Then {
    /// Stop restarting: want down, event `O`.
    Stop,
    /// Keep restarting, no sooner than this many ms after the last start.
    Slow(Ms),
}

/// A parsed `restart-policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    pub deaths: usize,
    pub within_ms: Ms,
    /// Exit codes counted (all when `any`).
    codes: [bool; 256],
    /// Signals counted (all when `any`).
    signals: [bool; 65],
    any: bool,
    pub then: Then,
}

/// A duration in `restart-policy`: a bare number counts seconds (the one grammar).
fn duration_ms(v: &str) -> Option<Ms> {
    tend_sys::duration::parse_ms(v.as_bytes(), tend_sys::duration::Bare::Seconds)
}

impl Policy {
    /// Parse the file; the error names the bad line's key.
    pub fn parse(text: &str) -> Result<Policy, &'static str> {
        let mut p = Policy {
            deaths: 0,
            within_ms: 0,
            codes: [false; 256],
            signals: [false; 65],
            any: true,
            then: Then::Stop,
        };
        let mut then_given = false;
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let (k, v) = line.split_once('=').ok_or("line without =")?;
            let (k, v) = (k.trim(), v.trim());
            match k {
                "deaths" => {
                    p.deaths = v.parse().map_err(|_| "deaths")?;
                    if p.deaths == 0 || p.deaths > MAX_DEATHS {
                        return Err("deaths");
                    }
                }
                "seconds" => p.within_ms = duration_ms(v).filter(|&m| m > 0).ok_or("seconds")?,
                "on" => {
                    p.any = false;
                    for item in v.split(',').map(str::trim) {
                        if let Ok(c) = item.parse::<u8>() {
                            p.codes[usize::from(c)] = true;
                        } else if let Some(s) = tend_sys::signals::parse(item) {
                            p.signals[s as usize] = true;
                        } else if let Some(n) = item
                            .strip_prefix("SIG")
                            .and_then(|n| n.parse::<usize>().ok())
                            .filter(|&n| (1..=64).contains(&n))
                        {
                            p.signals[n] = true;
                        } else {
                            return Err("on");
                        }
                    }
                }
                "then" => {
                    then_given = true;
                    p.then = match v {
                        "stop" => Then::Stop,
                        _ => Then::Slow(
                            v.strip_prefix("slow:")
                                .and_then(duration_ms)
                                .filter(|&m| m > 0)
                                .ok_or("then")?,
                        ),
                    };
                }
                _ => return Err("unknown key"),
            }
        }
        if p.deaths == 0 || p.within_ms == 0 || !then_given {
            return Err("deaths, seconds and then are required");
        }
        Ok(p)
    }

    /// Whether a death with this wait status counts.
    pub fn counts(&self, wstat: Wstat) -> bool {
        if self.any {
            return true;
        }
        match wstat.ended() {
            Ended::Exited(code) => self.codes[usize::from(code)],
            Ended::Signaled(sig) => self.signals.get(usize::from(sig)).copied().unwrap_or(false),
        }
    }
}

/// The monotonic times of the last counted deaths (a fixed ring, no allocation).
#[derive(Debug, Clone, Copy)]
pub struct Tally {
    at: [Ms; MAX_DEATHS],
    len: usize,
    next: usize,
}

impl Default for Tally {
    fn default() -> Tally {
        Tally {
            at: [0; MAX_DEATHS],
            len: 0,
            next: 0,
        }
    }
}

impl Tally {
    pub fn push(&mut self, t: Ms) {
        self.at[self.next] = t;
        self.next = (self.next + 1) % MAX_DEATHS;
        self.len = (self.len + 1).min(MAX_DEATHS);
    }

    /// Deaths at or after `since`.
    pub fn since(&self, since: Ms) -> usize {
        self.at[..self.len].iter().filter(|&&t| t >= since).count()
    }

    pub fn clear(&mut self) {
        self.len = 0;
        self.next = 0;
    }
}

/// Take a death: whether the policy fires now.
pub fn on_death(p: &Policy, tally: &mut Tally, wstat: Wstat, now: Ms) -> Option<Then> {
    if !p.counts(wstat) {
        return None;
    }
    tally.push(now);
    let n = tally.since(now.saturating_sub(p.within_ms - 1));
    if n < p.deaths {
        return None;
    }
    if p.then == Then::Stop {
        // A fresh count after the operator brings it back up.
        tally.clear();
    }
    Some(p.then)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grammar() {
        let p = Policy::parse("deaths=3\nseconds=10\nthen=stop\n").unwrap();
        assert_eq!((p.deaths, p.within_ms, p.then), (3, 10_000, Then::Stop));
        assert!(p.counts(Wstat(1 << 8)) && p.counts(Wstat(11)));
        let p = Policy::parse("# c\ndeaths = 2\nseconds=500ms\non=1, SIGSEGV,SIG6\nthen=slow:30s")
            .unwrap();
        assert_eq!(p.then, Then::Slow(30_000));
        assert!(p.counts(Wstat(1 << 8)) && p.counts(Wstat(11)) && p.counts(Wstat(6)));
        assert!(!p.counts(Wstat(0)) && !p.counts(Wstat(2 << 8)) && !p.counts(Wstat(15)));
        for bad in [
            "",
            "deaths=3\nseconds=10",
            "deaths=0\nseconds=1\nthen=stop",
            "deaths=65\nseconds=1\nthen=stop",
            "deaths=2\nseconds=1\nthen=later",
            "deaths=2\nseconds=1\nthen=slow:0",
            "deaths=2\nseconds=1\nthen=stop\non=SIGNOPE",
            "deaths=2\nseconds=1\nthen=stop\nfoo=1",
            "deaths",
        ] {
            assert!(Policy::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn fires_on_the_nth_death_inside_the_window() {
        let p = Policy::parse("deaths=3\nseconds=10\nthen=stop").unwrap();
        let mut t = Tally::default();
        assert_eq!(on_death(&p, &mut t, Wstat(256), 0), None);
        assert_eq!(on_death(&p, &mut t, Wstat(256), 4000), None);
        // The first death leaves the window: still two.
        assert_eq!(on_death(&p, &mut t, Wstat(256), 10_500), None);
        assert_eq!(on_death(&p, &mut t, Wstat(256), 11_000), Some(Then::Stop));
        // Cleared after a stop.
        assert_eq!(on_death(&p, &mut t, Wstat(256), 11_100), None);
        let p = Policy::parse("deaths=2\nseconds=60\non=SIGSEGV\nthen=slow:5s").unwrap();
        let mut t = Tally::default();
        assert_eq!(on_death(&p, &mut t, Wstat(256), 0), None);
        assert_eq!(on_death(&p, &mut t, Wstat(256), 1), None);
        assert_eq!(on_death(&p, &mut t, Wstat(11), 2), None);
        assert_eq!(on_death(&p, &mut t, Wstat(11), 3), Some(Then::Slow(5000)));
        assert_eq!(on_death(&p, &mut t, Wstat(11), 4), Some(Then::Slow(5000)));
    }
}
