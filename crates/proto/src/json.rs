//! The one JSON string escaper (RFC 8259), for every program that prints JSON: tend-log's
//! `J` records, tend-socklog's JSON lines, tend-svstat's and tend-summary's objects.

/// How bytes that are not UTF-8 come out. Both spell the same JSON value (U+FFFD); each
/// program keeps the bytes it always wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Invalid {
    /// The escape `\ufffd` (tend-log, tend-socklog: their output stays ASCII for ASCII
    /// input whatever the bytes were).
    Escaped,
    /// The character U+FFFD itself, as UTF-8 (tend-svstat, tend-summary).
    Literal,
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Append `bytes` escaped as the inside of a JSON string (no quotes): `"` `\` and control
/// characters escaped, valid UTF-8 copied, each maximal invalid subsequence replaced by
/// one U+FFFD (Unicode's recommended practice, which `utf8_chunks` follows: a truncated
/// 4-byte sequence is one invalid chunk), spelled as `invalid` says.
///
/// `#[inline]`: tend-log calls this per line and is built at opt-level 3 (Cargo.toml,
/// `[profile.release.package.tend-log]`); inlined, it is compiled there, not at "s".
#[inline]
pub fn escape(out: &mut Vec<u8>, bytes: &[u8], invalid: Invalid) {
    for chunk in bytes.utf8_chunks() {
        let v = chunk.valid().as_bytes();
        let mut start = 0;
        for (i, &b) in v.iter().enumerate() {
            if b >= 0x20 && b != b'"' && b != b'\\' {
                continue;
            }
            out.extend_from_slice(&v[start..i]);
            match b {
                b'"' => out.extend_from_slice(b"\\\""),
                b'\\' => out.extend_from_slice(b"\\\\"),
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\t' => out.extend_from_slice(b"\\t"),
                b'\r' => out.extend_from_slice(b"\\r"),
                _ => {
                    out.extend_from_slice(b"\\u00");
                    out.push(HEX[(b >> 4) as usize]);
                    out.push(HEX[(b & 15) as usize]);
                }
            }
            start = i + 1;
        }
        out.extend_from_slice(&v[start..]);
        if !chunk.invalid().is_empty() {
            out.extend_from_slice(match invalid {
                Invalid::Escaped => b"\\ufffd",
                Invalid::Literal => "\u{fffd}".as_bytes(),
            });
        }
    }
}

/// Append `s` as a JSON string literal, quotes included, to text (U+FFFD literal for
/// bytes that are not UTF-8).
pub fn push_str(out: &mut String, s: &[u8]) {
    let mut b = Vec::with_capacity(s.len() + 2);
    b.push(b'"');
    escape(&mut b, s, Invalid::Literal);
    b.push(b'"');
    // Only whole UTF-8 sequences and ASCII were appended, so this never replaces.
    out.push_str(&String::from_utf8_lossy(&b));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_str_escapes() {
        let mut s = String::new();
        push_str(&mut s, b"a\"b\\c\nd\x01\xff");
        assert_eq!(s, "\"a\\\"b\\\\c\\nd\\u0001\u{fffd}\"");
    }

    #[test]
    fn replaces_each_maximal_invalid_sequence_once() {
        let cases: [(&[u8], &str); 7] = [
            // Truncated 4-byte sequence, then ASCII: one replacement.
            (b"a\xf0\x9f\x98b", "a\\ufffdb"),
            // Truncated 3-byte sequence.
            (b"\xe2\x82", "\\ufffd"),
            // Two lone continuation bytes: each is its own maximal subpart.
            (b"\x80\x80", "\\ufffd\\ufffd"),
            // A byte that can never start a sequence, then a valid char.
            (b"\xff\xc3\xa9", "\\ufffd\u{e9}"),
            // Overlong encoding: C0 is never valid, 80 a lone continuation.
            (b"\xc0\x80", "\\ufffd\\ufffd"),
            // A surrogate: ED A0 is invalid at its second byte.
            (b"\xed\xa0\x80", "\\ufffd\\ufffd\\ufffd"),
            // Truncated 4-byte sequence at the end.
            (b"x\xf4\x8f\xbf", "x\\ufffd"),
        ];
        for (input, want) in cases {
            let mut o = Vec::new();
            escape(&mut o, input, Invalid::Escaped);
            assert_eq!(String::from_utf8(o).unwrap(), want, "{input:?}");
            let mut l = String::new();
            push_str(&mut l, input);
            assert_eq!(l, format!("\"{}\"", want.replace("\\ufffd", "\u{fffd}")));
        }
    }
}
