//! TAI64N timestamps: 8-byte big-endian label (2^62 + TAI seconds) and 4-byte big-endian
//! nanoseconds. s6 (skalibs) converts the UTC clock with the leap-second table, so today's
//! label is 2^62 + unix seconds + 37; daemontools and runit use +10.

use std::time::{SystemTime, UNIX_EPOCH};

/// TAI - UTC since 2017-01-01 (10 s at 1972 plus 27 leap seconds).
pub const LEAP_OFFSET: u64 = 37;
const BASE: u64 = 1 << 62;

/// A TAI64N timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct Tai64n {
    pub secs: u64,
    pub nanos: u32,
}

const HEX: &[u8; 16] = b"0123456789abcdef";

impl Tai64n {
    /// The current time, s6's way (+37 s).
    pub fn now() -> Tai64n {
        Tai64n::from_system(SystemTime::now())
    }

    pub fn from_system(t: SystemTime) -> Tai64n {
        let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
        Tai64n::from_unix(d.as_secs(), d.subsec_nanos())
    }

    pub fn from_unix(secs: u64, nanos: u32) -> Tai64n {
        Tai64n {
            secs: BASE + secs + LEAP_OFFSET,
            nanos,
        }
    }

    /// Unix seconds and nanoseconds (saturating for labels before the epoch).
    pub fn to_unix(self) -> (i64, u32) {
        let s = self.secs as i128 - BASE as i128 - LEAP_OFFSET as i128;
        (
            s.clamp(i64::MIN as i128, i64::MAX as i128) as i64,
            self.nanos,
        )
    }

    pub fn encode(self) -> [u8; 12] {
        let mut b = [0u8; 12];
        b[..8].copy_from_slice(&self.secs.to_be_bytes());
        b[8..].copy_from_slice(&self.nanos.to_be_bytes());
        b
    }

    pub fn decode(b: &[u8; 12]) -> Tai64n {
        let mut s = [0u8; 8];
        s.copy_from_slice(&b[..8]);
        let mut n = [0u8; 4];
        n.copy_from_slice(&b[8..]);
        Tai64n {
            secs: u64::from_be_bytes(s),
            nanos: u32::from_be_bytes(n),
        }
    }

    /// 24 lowercase hex digits, as in `@400000006b0c39d111fe4f77`.
    pub fn hex(self) -> [u8; 24] {
        let raw = self.encode();
        let mut out = [0u8; 24];
        for (i, b) in raw.iter().enumerate() {
            out[2 * i] = HEX[(b >> 4) as usize];
            out[2 * i + 1] = HEX[(b & 15) as usize];
        }
        out
    }

    /// `@` + 24 hex digits.
    pub fn label(self) -> [u8; 25] {
        let mut out = [b'@'; 25];
        out[1..].copy_from_slice(&self.hex());
        out
    }

    /// Parse 24 hex digits (either case).
    pub fn parse_hex(s: &[u8]) -> Option<Tai64n> {
        if s.len() != 24 {
            return None;
        }
        let mut raw = [0u8; 12];
        for i in 0..12 {
            let hi = hexval(s[2 * i])?;
            let lo = hexval(s[2 * i + 1])?;
            raw[i] = (hi << 4) | lo;
        }
        Some(Tai64n::decode(&raw))
    }

    /// Whole seconds from `self` to `later` (0 if `later` is earlier).
    pub fn secs_until(self, later: Tai64n) -> u64 {
        if later <= self {
            0
        } else {
            later.secs - self.secs - u64::from(later.nanos < self.nanos)
        }
    }
}

/// The UTC calendar date and time of unix seconds `t` (proleptic Gregorian, no leap
/// seconds), computed without libc.
pub fn utc_datetime(t: i64) -> tend_sys::localtime::DateTime {
    let days = t.div_euclid(86_400);
    let rem = t.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u8;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
    let year = (yoe + era * 400 + i64::from(month <= 2)) as i32;
    tend_sys::localtime::DateTime {
        year,
        month,
        day,
        hour: (rem / 3600) as u8,
        minute: (rem / 60 % 60) as u8,
        second: (rem % 60) as u8,
    }
}

fn two(out: &mut [u8], v: u8) {
    out[0] = b'0' + v / 10 % 10;
    out[1] = b'0' + v % 10;
}

/// `YYYY-MM-DD?HH:MM:SS` with `sep` between date and time (' ' for s6's T, 'T' for RFC 3339).
pub fn render_datetime(d: &tend_sys::localtime::DateTime, sep: u8) -> [u8; 19] {
    let mut o = *b"0000-00-00 00:00:00";
    let y = d.year.clamp(0, 9999) as u32;
    o[0] = b'0' + (y / 1000) as u8;
    o[1] = b'0' + (y / 100 % 10) as u8;
    o[2] = b'0' + (y / 10 % 10) as u8;
    o[3] = b'0' + (y % 10) as u8;
    two(&mut o[5..], d.month);
    two(&mut o[8..], d.day);
    o[10] = sep;
    two(&mut o[11..], d.hour);
    two(&mut o[14..], d.minute);
    two(&mut o[17..], d.second);
    o
}

/// Write `v` as exactly `out.len()` decimal digits (zero-padded, high digits dropped).
pub fn render_digits(out: &mut [u8], mut v: u32) {
    for b in out.iter_mut().rev() {
        *b = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

/// Unix times at which each leap second since 1972 took effect (TAI - UTC went from 10 to
/// 37 over these 27 steps).
const LEAPS: [i64; 27] = [
    78_796_800,
    94_694_400,
    126_230_400,
    157_766_400,
    189_302_400,
    220_924_800,
    252_460_800,
    283_996_800,
    315_532_800,
    362_793_600,
    394_329_600,
    425_865_600,
    489_024_000,
    567_993_600,
    631_152_000,
    662_688_000,
    709_948_800,
    741_484_800,
    773_020_800,
    820_454_400,
    867_715_200,
    915_148_800,
    1_136_073_600,
    1_230_768_000,
    1_341_100_800,
    1_435_708_800,
    1_483_228_800,
];

/// The unix (UTC) second of a TAI64 label, through the leap-second table as skalibs does;
/// None for labels before 1970 or outside TAI64's range (>= 2^63).
pub fn unix_from_label(secs: u64) -> Option<i64> {
    if !(BASE + 10..1 << 63).contains(&secs) {
        return None;
    }
    let x = (secs - BASE) as i64;
    let passed = LEAPS
        .iter()
        .enumerate()
        .filter(|(i, l)| x >= **l + 11 + *i as i64)
        .count() as i64;
    Some(x - 10 - passed)
}

fn hexval(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_label() {
        // 2026-11-29 00:00:00 UTC = 1795910400 unix
        let t = Tai64n::from_unix(1_795_910_400, 0x11fe4f77);
        assert_eq!(t.secs, 0x4000_0000_0000_0000 + 1_795_910_400 + 37);
        let hex = t.hex();
        assert_eq!(&hex[..8], b"40000000");
        assert_eq!(&hex[16..], b"11fe4f77");
        assert_eq!(Tai64n::parse_hex(&hex), Some(t));
        assert_eq!(Tai64n::decode(&t.encode()), t);
        assert_eq!(t.to_unix(), (1_795_910_400, 0x11fe4f77));
    }

    #[test]
    fn utc_calendar() {
        let d = utc_datetime(1_795_962_222);
        assert_eq!(&render_datetime(&d, b'T'), b"2026-11-29T14:23:42");
        assert_eq!(
            &render_datetime(&utc_datetime(0), b' '),
            b"1970-01-01 00:00:00"
        );
        assert_eq!(
            &render_datetime(&utc_datetime(951_782_400), b' '),
            b"2000-02-29 00:00:00"
        );
        assert_eq!(
            &render_datetime(&utc_datetime(-1), b' '),
            b"1969-12-31 23:59:59"
        );
        let mut n = [0u8; 9];
        render_digits(&mut n, 1234);
        assert_eq!(&n, b"000001234");
    }

    #[test]
    fn leap_table() {
        assert_eq!(unix_from_label(BASE + 37), Some(27));
        assert_eq!(unix_from_label(BASE + 9), None);
        assert_eq!(unix_from_label(u64::MAX), None);
        let now = Tai64n::from_unix(1_795_910_400, 0);
        assert_eq!(unix_from_label(now.secs), Some(1_795_910_400));
        // 1990-01-01: TAI - UTC was 25.
        assert_eq!(unix_from_label(BASE + 631_152_000 + 25), Some(631_152_000));
    }

    #[test]
    fn rejects_bad_hex() {
        assert_eq!(Tai64n::parse_hex(b"40000000000000000000000"), None);
        assert_eq!(Tai64n::parse_hex(b"4000000000000000000000zz"), None);
    }

    #[test]
    fn seconds_between() {
        let a = Tai64n {
            secs: 10,
            nanos: 500,
        };
        assert_eq!(
            a.secs_until(Tai64n {
                secs: 12,
                nanos: 400
            }),
            1
        );
        assert_eq!(
            a.secs_until(Tai64n {
                secs: 12,
                nanos: 500
            }),
            2
        );
        assert_eq!(a.secs_until(Tai64n { secs: 9, nanos: 0 }), 0);
    }
}
