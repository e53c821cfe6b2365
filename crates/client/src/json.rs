//! The little JSON tend-svstat needs: strings escaped per RFC 8259.

/// Append `s` as a JSON string literal (quotes included); bytes that are not UTF-8 are
/// replaced with U+FFFD.
pub fn push_str(out: &mut String, s: &[u8]) {
    out.push('"');
    for c in String::from_utf8_lossy(s).chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes() {
        let mut s = String::new();
        super::push_str(&mut s, b"a\"b\\c\nd\x01\xff");
        assert_eq!(s, "\"a\\\"b\\\\c\\nd\\u0001\u{fffd}\"");
    }
}
