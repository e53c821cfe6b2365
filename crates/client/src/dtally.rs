//! tend-svdt's lines: one per recorded death, as s6-svdt prints them.

use tend_proto::death_tally::Death;

/// `@TAI64N signal SIGTERM` (or `signal 15` when `numeric`) / `@TAI64N exitcode 3`, for
/// the last `max` deaths (all when None), oldest first.
pub fn lines(deaths: &[Death], numeric: bool, max: Option<usize>) -> String {
    let skip = max.map_or(0, |m| deaths.len().saturating_sub(m));
    let mut out = String::with_capacity((deaths.len() - skip) * 48);
    for d in &deaths[skip..] {
        out.push_str(std::str::from_utf8(&d.stamp.label()).unwrap_or("@"));
        if d.signal != 0 {
            out.push_str(" signal ");
            match tend_sys::signals::name(i32::from(d.signal)) {
                Some(name) if !numeric => out.push_str(name),
                _ => out.push_str(&d.signal.to_string()),
            }
        } else {
            out.push_str(" exitcode ");
            out.push_str(&d.exitcode.to_string());
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tend_proto::Tai64n;
    use tend_sys::wait::Wstat;

    #[test]
    fn as_s6_svdt() {
        let t = |n: u64| Tai64n {
            secs: 0x4000_0000_6500_0000 + n,
            nanos: 5000 * n as u32,
        };
        let d = [
            Death::from_wstat(t(0), Wstat(15)),
            Death::from_wstat(t(1), Wstat(3 << 8)),
        ];
        assert_eq!(
            lines(&d, false, None),
            "@400000006500000000000000 signal SIGTERM\n@400000006500000100001388 exitcode 3\n"
        );
        assert_eq!(
            lines(&d, true, Some(1)),
            "@400000006500000100001388 exitcode 3\n"
        );
        assert_eq!(lines(&d, true, Some(0)), "");
        assert_eq!(
            lines(&d[..1], true, Some(5)),
            "@400000006500000000000000 signal 15\n"
        );
    }
}
