//! `supervise/spawn-error`: tend's own record of why the last spawn of `./run` failed.
//! s6 ignores the file. The supervisor writes it when a spawn fails and removes it when
//! a spawn succeeds; tend-svstat shows it.
//!
//! Format: one line, `@<24 hex TAI64N of the failure> <errno, decimal> <program as tried>\n`,
//! e.g. `@400000006b0c39d111fe4f77 13 ./run`. The program is the rest of the line and may
//! contain spaces. A second line, when present, says why in words (tend_sys::diagnose),
//! e.g. `interpreter /bin/sh\r not found (the file has CRLF line endings)`: printable
//! text, what tend-svstat shows after `PROG: `; without it, the errno's strerror text.

use crate::Tai64n;

/// One recorded spawn failure.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SpawnRecord {
    /// When the spawn failed.
    pub stamp: Tai64n,
    /// The errno of the failure.
    pub errno: i32,
    /// The program as tried, e.g. `./run`.
    pub program: Vec<u8>,
    /// Why, in words (one line, no newline); empty when only the errno is known.
    pub why: Vec<u8>,
}

impl SpawnRecord {
    /// The file's bytes: one line ending in `\n`.
    pub fn encode(&self) -> Vec<u8> {
        let errno = self.errno.to_string();
        let mut out = Vec::with_capacity(
            25 + 1 + errno.len() + 1 + self.program.len() + 1 + self.why.len() + 1,
        );
        out.extend_from_slice(&self.stamp.label());
        out.push(b' ');
        out.extend_from_slice(errno.as_bytes());
        out.push(b' ');
        out.extend_from_slice(&self.program);
        out.push(b'\n');
        if !self.why.is_empty() {
            out.extend(self.why.iter().map(|&b| if b == b'\n' { b' ' } else { b }));
            out.push(b'\n');
        }
        out
    }

    /// The words after `PROG: `: the diagnosis, or the errno's text.
    pub fn reason(&self) -> String {
        if self.why.is_empty() {
            nix::errno::Errno::from_raw(self.errno).desc().to_string()
        } else {
            String::from_utf8_lossy(&self.why).into_owned()
        }
    }

    /// Parse the file's bytes; None unless it is one well-formed line, optionally followed
    /// by one line of diagnosis (a missing final newline is tolerated).
    pub fn decode(data: &[u8]) -> Option<SpawnRecord> {
        let data = data.strip_suffix(b"\n").unwrap_or(data);
        let (line, why) = match data.iter().position(|&b| b == b'\n') {
            Some(i) => (&data[..i], &data[i + 1..]),
            None => (data, &b""[..]),
        };
        if why.contains(&b'\n') || line.len() < 25 + 1 + 1 + 1 || line[0] != b'@' {
            return None;
        }
        let stamp = Tai64n::parse_hex(&line[1..25])?;
        if line[25] != b' ' {
            return None;
        }
        let rest = &line[26..];
        let sp = rest.iter().position(|&b| b == b' ')?;
        let digits = &rest[..sp];
        if digits.is_empty() || digits.len() > 9 || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let errno = std::str::from_utf8(digits).ok()?.parse().ok()?;
        let program = rest[sp + 1..].to_vec();
        if program.is_empty() {
            return None;
        }
        Some(SpawnRecord {
            stamp,
            errno,
            program,
            why: why.to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_line_and_round_trip() {
        let e = SpawnRecord {
            stamp: Tai64n {
                secs: 0x4000_0000_6b0c_39d1,
                nanos: 0x11fe_4f77,
            },
            errno: 13,
            program: b"./run".to_vec(),
            why: Vec::new(),
        };
        let b = e.encode();
        assert_eq!(b, b"@400000006b0c39d111fe4f77 13 ./run\n");
        assert_eq!(SpawnRecord::decode(&b), Some(e.clone()));
        assert_eq!(
            SpawnRecord::decode(b"@400000006b0c39d111fe4f77 13 ./run"),
            Some(e)
        );
        let spaced = SpawnRecord::decode(b"@400000006b0c39d111fe4f77 2 ./my run\n").unwrap();
        assert_eq!(spaced.program, b"./my run");
        assert_eq!(spaced.errno, 2);
        let why = SpawnRecord {
            why: b"interpreter /bin/sh\\r not found".to_vec(),
            ..spaced.clone()
        };
        let b = why.encode();
        assert_eq!(
            b,
            b"@400000006b0c39d111fe4f77 2 ./my run\ninterpreter /bin/sh\\r not found\n"
        );
        assert_eq!(SpawnRecord::decode(&b), Some(why.clone()));
        assert_eq!(why.reason(), "interpreter /bin/sh\\r not found");
        assert_eq!(spaced.reason(), "No such file or directory");
    }

    #[test]
    fn rejects_garbage() {
        for bad in [
            &b""[..],
            b"\n",
            b"garbage\n",
            b"@400000006b0c39d111fe4f77\n",
            b"@400000006b0c39d111fe4f77 13\n",
            b"@400000006b0c39d111fe4f77 13 \n",
            b"@400000006b0c39d111fe4f77 -3 ./run\n",
            b"@400000006b0c39d111fe4fzz 13 ./run\n",
            b"400000006b0c39d111fe4f77 13 ./run\n",
            b"@400000006b0c39d111fe4f77 13 ./run\nmore\nthan two\n",
            b"@400000006b0c39d111fe4f77x13 ./run\n",
        ] {
            assert_eq!(
                SpawnRecord::decode(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
