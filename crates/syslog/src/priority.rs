//! The `<N>` at the start of a syslog message: facility `N >> 3`, severity `N & 7`, named
//! as s6's lolsyslog names them with glibc's tables (the first name of a value wins, so
//! 4 is `warn`, 0 is `emerg`; facility 24 is glibc's internal `mark`; 12–15 and above 24
//! are `unknown`).

/// Severity names, by value.
pub const SEVERITIES: [&str; 8] = [
    "emerg", "alert", "crit", "err", "warn", "notice", "info", "debug",
];

/// Facility names, by value (`None`: no name, printed `unknown`).
const FACILITIES: [Option<&str>; 25] = [
    Some("kern"),
    Some("user"),
    Some("mail"),
    Some("daemon"),
    Some("auth"),
    Some("syslog"),
    Some("lpr"),
    Some("news"),
    Some("uucp"),
    Some("cron"),
    Some("authpriv"),
    Some("ftp"),
    None,
    None,
    None,
    None,
    Some("local0"),
    Some("local1"),
    Some("local2"),
    Some("local3"),
    Some("local4"),
    Some("local5"),
    Some("local6"),
    Some("local7"),
    Some("mark"),
];

/// A decoded priority value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Priority(pub u32);

impl Priority {
    /// The facility's name, or `unknown`.
    pub fn facility(self) -> &'static str {
        // Only 7 bits survive glibc's LOG_FACMASK (0x3f8).
        let f = ((self.0 & 0x3f8) >> 3) as usize;
        FACILITIES.get(f).copied().flatten().unwrap_or("unknown")
    }

    pub fn severity(self) -> &'static str {
        SEVERITIES[(self.0 & 7) as usize]
    }

    /// Append `facility.severity: `.
    pub fn write_names(self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.facility().as_bytes());
        out.push(b'.');
        out.extend_from_slice(self.severity().as_bytes());
        out.extend_from_slice(b": ");
    }
}

/// Decode a leading `<digits>`: the priority and how many bytes it takes. Digits that
/// do not fit 32 bits, no digits, or no closing `>` within `line` are no priority.
pub fn parse(line: &[u8]) -> Option<(Priority, usize)> {
    if line.first() != Some(&b'<') {
        return None;
    }
    let mut n: u32 = 0;
    let mut i = 1;
    while let Some(&c) = line.get(i) {
        if !c.is_ascii_digit() {
            break;
        }
        n = n.checked_mul(10)?.checked_add(u32::from(c - b'0'))?;
        i += 1;
    }
    if i == 1 || line.get(i) != Some(&b'>') {
        return None;
    }
    Some((Priority(n), i + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: u32) -> String {
        let mut o = Vec::new();
        Priority(v).write_names(&mut o);
        String::from_utf8(o).unwrap()
    }

    #[test]
    fn glibc_names() {
        assert_eq!(names(13), "user.notice: ");
        assert_eq!(names(0), "kern.emerg: ");
        assert_eq!(names(12), "user.warn: ");
        assert_eq!(names(87), "authpriv.debug: ");
        assert_eq!(names(96), "unknown.emerg: ");
        assert_eq!(names(191), "local7.debug: ");
        assert_eq!(names(192), "mark.emerg: ");
        assert_eq!(names(200), "unknown.emerg: ");
        assert_eq!(names(999), "unknown.debug: ");
        assert_eq!(names(u32::MAX), "unknown.debug: ");
    }

    #[test]
    fn prefixes() {
        assert_eq!(parse(b"<13>x"), Some((Priority(13), 4)));
        assert_eq!(parse(b"<05>"), Some((Priority(5), 4)));
        assert_eq!(parse(b"<4294967295>"), Some((Priority(u32::MAX), 12)));
        for bad in [
            &b"<4294967296>"[..],
            b"<12",
            b"<>",
            b"< 5>",
            b"<-1>",
            b"x<1>",
            b"",
            b"<",
        ] {
            assert_eq!(parse(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
