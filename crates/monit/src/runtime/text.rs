//! How tend-monit writes times, sizes and the host as monit writes them.

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// (year, month 1-12, day, weekday 0 = Sunday, seconds of the day) of a Unix time, UTC.
fn civil(t: u64) -> (i64, i64, i64, usize, u64) {
    let days = (t / 86400) as i64;
    let secs = t % 86400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    let wd = (days + 4).rem_euclid(7) as usize; // 1970-01-01 was a Thursday
    (y, m, d, wd, secs)
}

/// The time as monit 5.2.5 begins a log line with it: `[UTC Dec  2 20:14:54]`.
pub fn log_stamp(t: u64) -> String {
    let (_, m, d, _, secs) = civil(t);
    format!(
        "[UTC {} {d:>2} {:02}:{:02}:{:02}]",
        MONTHS[(m - 1) as usize],
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

/// RFC 2822 date in UTC, as mail wants it.
pub fn rfc2822(t: u64) -> String {
    let (y, m, d, wd, secs) = civil(t);
    const W: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const M: [&str; 12] = MONTHS;
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} +0000",
        W[wd],
        d,
        M[(m - 1) as usize],
        y,
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

/// The system service's name as monit makes it: `system_` and the host name.
pub fn system_name() -> String {
    // The kernel's host name, as gethostname(2) returns it.
    let h = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into());
    format!("system_{h}")
}

/// A size as monit 5.33 writes one: `1.6 MB`, `4 kB`, `512 B` (1024 a step, one
/// decimal unless it is .0).
pub fn bytes_533(bytes: u64) -> String {
    let units = ["B", "kB", "MB", "GB", "TB"];
    let mut v = bytes as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    let t = format!("{v:.1}");
    let t = t.strip_suffix(".0").unwrap_or(&t);
    format!("{t} {}", units[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(log_stamp(0), "[UTC Jan  1 00:00:00]");
        assert_eq!(log_stamp(1_796_162_610), "[UTC Dec  1 22:03:30]");
        assert_eq!(log_stamp(1_795_000_000), "[UTC Nov 18 11:06:40]");
        assert_eq!(rfc2822(0), "Thu, 01 Jan 1970 00:00:00 +0000");
        assert_eq!(rfc2822(1_796_162_610), "Tue, 01 Dec 2026 22:03:30 +0000");
    }
}
