//! Broken-down local time through libc's localtime_r (the time zone database is libc's).

#![allow(unsafe_code)]

/// A calendar date and time of day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DateTime {
    pub year: i32,
    pub month: u8,
    pub day: u8,
    pub hour: u8,
    pub minute: u8,
    pub second: u8,
}

/// Local time (TZ, /etc/localtime) for unix seconds `t`; None if libc cannot convert it.
pub fn local(t: i64) -> Option<DateTime> {
    // time_t is i64 on x86_64 for glibc and musl (naming the alias warns on musl).
    let tt = t;
    // SAFETY: tm is a plain C struct; all-zero is a valid value for localtime_r to fill.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the duration of the call; localtime_r is
    // reentrant and writes only into tm.
    let r = unsafe { libc::localtime_r(&tt, &mut tm) };
    if r.is_null() {
        return None;
    }
    Some(DateTime {
        year: tm.tm_year + 1900,
        month: (tm.tm_mon + 1) as u8,
        day: tm.tm_mday as u8,
        hour: tm.tm_hour as u8,
        minute: tm.tm_min as u8,
        // A leap second shows up as 60; keep it.
        second: tm.tm_sec as u8,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn converts_something_sane() {
        let d = super::local(1_795_910_400).unwrap();
        assert!(d.year == 2026 && d.month >= 11);
    }
}
