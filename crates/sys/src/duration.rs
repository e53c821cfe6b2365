//! The one duration grammar of tend's settings and options: a decimal number (at most 15
//! digits) with an optional unit `ms`, `s`, `m` or `h`. What a bare number means is the
//! only thing that differs between places, so the caller says it: milliseconds for
//! command-line options (`-t 250`), seconds for `restart-policy` and bpm.yml.

/// What a number without a unit counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bare {
    Millis,
    Seconds,
}

/// The duration in milliseconds; None for anything else (a sign, a space, a fraction, an
/// unknown unit) or on overflow.
pub fn parse_ms(s: &[u8], bare: Bare) -> Option<u64> {
    let digits = s.iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 || digits > 15 {
        return None;
    }
    let n: u64 = std::str::from_utf8(&s[..digits]).ok()?.parse().ok()?;
    let unit = match &s[digits..] {
        b"" => match bare {
            Bare::Millis => 1,
            Bare::Seconds => 1000,
        },
        b"ms" => 1,
        b"s" => 1000,
        b"m" => 60_000,
        b"h" => 3_600_000,
        _ => return None,
    };
    n.checked_mul(unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grammar() {
        let ms = |s: &str| parse_ms(s.as_bytes(), Bare::Millis);
        let secs = |s: &str| parse_ms(s.as_bytes(), Bare::Seconds);
        assert_eq!(ms("250"), Some(250));
        assert_eq!(secs("250"), Some(250_000));
        assert_eq!(secs("500ms"), Some(500));
        assert_eq!(ms("10s"), Some(10_000));
        assert_eq!(ms("2m"), Some(120_000));
        assert_eq!(ms("1h"), Some(3_600_000));
        for bad in [
            "",
            "s",
            "-1",
            "+1",
            "1.5s",
            "10 s",
            " 1",
            "1d",
            "1S",
            "9999999999999999h",
        ] {
            assert_eq!(ms(bad), None, "{bad}");
            assert_eq!(secs(bad), None, "{bad}");
        }
        assert_eq!(ms("999999999999999h"), None, "overflow");
    }
}
