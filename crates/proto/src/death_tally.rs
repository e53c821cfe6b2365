//! `supervise/death_tally`: 14-byte records (TAI64N stamp, exit code, signal), oldest
//! first, the last `max-death-tally` deaths.

use crate::Tai64n;
use tend_sys::wait::{Ended, Wstat};

pub const RECORD_SIZE: usize = 14;
pub const DEFAULT_MAX: usize = 100;
pub const LIMIT: usize = 4096;

/// One death.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Death {
    pub stamp: Tai64n,
    /// Exit code, or 128 + signal.
    pub exitcode: u8,
    /// Signal number, 0 if it exited.
    pub signal: u8,
}

impl Death {
    /// From a raw wait status.
    pub fn from_wstat(stamp: Tai64n, wstat: Wstat) -> Death {
        match wstat.ended() {
            Ended::Exited(exitcode) => Death {
                stamp,
                exitcode,
                signal: 0,
            },
            Ended::Signaled(sig) => Death {
                stamp,
                exitcode: 128u8.wrapping_add(sig),
                signal: sig,
            },
        }
    }

    pub fn encode(&self) -> [u8; RECORD_SIZE] {
        let mut b = [0u8; RECORD_SIZE];
        b[..12].copy_from_slice(&self.stamp.encode());
        b[12] = self.exitcode;
        b[13] = self.signal;
        b
    }

    pub fn decode(b: &[u8]) -> Option<Death> {
        if b.len() < RECORD_SIZE {
            return None;
        }
        let mut t = [0u8; 12];
        t.copy_from_slice(&b[..12]);
        Some(Death {
            stamp: Tai64n::decode(&t),
            exitcode: b[12],
            signal: b[13],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records() {
        let t = Tai64n {
            secs: 0x4000_0000_0000_0001,
            nanos: 2,
        };
        let d = Death::from_wstat(t, Wstat(15));
        assert_eq!((d.exitcode, d.signal), (143, 15));
        let d2 = Death::from_wstat(t, Wstat(3 << 8));
        assert_eq!((d2.exitcode, d2.signal), (3, 0));
        let mut file = d.encode().to_vec();
        file.extend_from_slice(&d2.encode());
        file.push(0);
        let decoded: Vec<Death> = file
            .chunks_exact(RECORD_SIZE)
            .filter_map(Death::decode)
            .collect();
        assert_eq!(decoded, vec![d, d2]);
    }
}
