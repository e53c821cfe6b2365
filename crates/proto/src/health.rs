//! tend's own files under `supervise/` for health and sd_notify state: small `key=value`
//! line files, replaced atomically (s6 ignores files it does not know).
//!
//! - `tend-check`: the liveness watcher's verdict (health, last result and reason, time,
//!   consecutive failures, restarts in the window).
//! - `tend-notify`: the daemon's pid and its last sd_notify `STATUS=` text.
//! - `tend-watchdog`: the last time tend-notify killed the daemon for missing
//!   `WATCHDOG=1` pings, and why.
//! - `tend-policy`: written by the supervisor when the crash-restart policy fired.
//!
//! Values are single lines; a newline in a value is written as a space.

use std::io::Write;

// The files' names: crate::servicedir (CHECK_STATE, NOTIFY_STATE, WATCHDOG_STATE,
// POLICY_VERDICT).

/// Append `key=value\n` to `out`, flattening newlines in the value.
pub fn put(out: &mut Vec<u8>, key: &str, value: &[u8]) {
    out.extend_from_slice(key.as_bytes());
    out.push(b'=');
    out.extend(value.iter().map(|&b| if b == b'\n' { b' ' } else { b }));
    out.push(b'\n');
}

/// Append `key=number\n` without allocating.
pub fn put_num(out: &mut Vec<u8>, key: &str, value: u64) {
    out.extend_from_slice(key.as_bytes());
    out.push(b'=');
    // Writing into a Vec cannot fail.
    let _ = write!(out, "{value}");
    out.push(b'\n');
}

/// The value of `key` in a `key=value` file, if present.
pub fn get<'a>(data: &'a [u8], key: &str) -> Option<&'a [u8]> {
    data.split(|&b| b == b'\n').find_map(|line| {
        line.strip_prefix(key.as_bytes())
            .and_then(|rest| rest.strip_prefix(b"="))
    })
}

/// The numeric value of `key`.
pub fn get_num(data: &[u8], key: &str) -> Option<u64> {
    let v = get(data, key)?;
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

/// Seconds since the epoch, now.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut v = Vec::new();
        put(&mut v, "status", b"two\nlines");
        put_num(&mut v, "pid", 42);
        put(&mut v, "empty", b"");
        assert_eq!(v, b"status=two lines\npid=42\nempty=\n");
        assert_eq!(get(&v, "status"), Some(&b"two lines"[..]));
        assert_eq!(get_num(&v, "pid"), Some(42));
        assert_eq!(get(&v, "empty"), Some(&b""[..]));
        assert_eq!(get(&v, "pi"), None);
        assert_eq!(get_num(&v, "status"), None);
    }
}
