//! Deadlines to poll(2) timeouts, with one rounding rule for every event loop.

use nix::poll::PollTimeout;
use std::time::{Duration, Instant};

/// How long `poll` may sleep to wake at `deadline` (none: forever). Rounded up to the
/// next millisecond, so a loop never wakes a hair early and spins on a zero timeout;
/// capped at poll's largest timeout (about 24 days), after which the loop just polls
/// again.
pub fn poll_timeout(deadline: Option<Instant>, now: Instant) -> PollTimeout {
    match deadline {
        None => PollTimeout::NONE,
        Some(d) => ms_rounded_up(d.saturating_duration_since(now)),
    }
}

/// `left` in milliseconds rounded up, as a poll timeout (capped at its largest value).
pub fn ms_rounded_up(left: Duration) -> PollTimeout {
    let ms = left.as_nanos().div_ceil(1_000_000);
    i32::try_from(ms)
        .ok()
        .and_then(|ms| PollTimeout::try_from(ms).ok())
        .unwrap_or(PollTimeout::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_up_and_caps() {
        let now = Instant::now();
        let at = |d: Duration| poll_timeout(Some(now + d), now);
        assert_eq!(poll_timeout(None, now), PollTimeout::NONE);
        assert_eq!(at(Duration::ZERO), PollTimeout::ZERO);
        assert_eq!(at(Duration::from_nanos(1)), PollTimeout::from(1u16));
        assert_eq!(at(Duration::from_micros(1500)), PollTimeout::from(2u16));
        assert_eq!(at(Duration::from_millis(7)), PollTimeout::from(7u16));
        assert_eq!(at(Duration::from_secs(100 * 86400)), PollTimeout::MAX);
        assert_eq!(
            poll_timeout(Some(now), now + Duration::from_secs(1)),
            PollTimeout::ZERO
        );
    }
}
