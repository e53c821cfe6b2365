//! Pure decisions: where lines end, how much to write before a rotation, which archives
//! to delete, what an archive file is called. No system calls; unit-tested.

/// Index of the first `\n` in `hay`, eight bytes at a time (the hot path of every
/// program here; no per-call setup, no allocation).
pub fn find_newline(hay: &[u8]) -> Option<usize> {
    find_terminator::<false>(hay)
}

/// Index of the first line terminator of tend-log's input: `\n`, or a NUL byte (s6-log
/// ends lines at NUL too, since it handles lines as C strings).
pub fn find_eol(hay: &[u8]) -> Option<usize> {
    find_terminator::<true>(hay)
}

/// The word-at-a-time search behind both: a byte equal to `\n` (or, with `NUL`, zero)
/// makes `(x - 0x01..) & !x & 0x80..` non-zero in that byte's lane. The lowest flagged
/// byte is the first match (false flags only appear above a true one), so OR-ing the two
/// masks still gives the first terminator.
#[inline(always)]
fn find_terminator<const NUL: bool>(hay: &[u8]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    const NL: u64 = LO * b'\n' as u64;
    let mut chunks = hay.chunks_exact(8);
    let mut base = 0;
    for c in &mut chunks {
        let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        let n = w ^ NL;
        let mut z = n.wrapping_sub(LO) & !n & HI;
        if NUL {
            z |= w.wrapping_sub(LO) & !w & HI;
        }
        if z != 0 {
            return Some(base + (z.trailing_zeros() / 8) as usize);
        }
        base += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| b == b'\n' || (NUL && b == 0))
        .map(|i| base + i)
}

fn is_eol(b: u8) -> bool {
    b == b'\n' || b == 0
}

/// The next line of `buf`: `(line, consumed)` where `line` excludes its terminator
/// (`\n` or NUL, see `find_eol`). A line
/// longer than `limit` (0 = no limit) is cut after `limit` bytes; the rest is the next
/// line. `eof`: a final fragment without a newline is a line too. None: need more input.
pub fn next_line(buf: &[u8], limit: usize, eof: bool) -> Option<(&[u8], usize)> {
    if buf.is_empty() {
        return None;
    }
    let window = if limit > 0 && buf.len() > limit {
        &buf[..limit]
    } else {
        buf
    };
    match find_eol(window) {
        Some(i) => Some((&buf[..i], i + 1)),
        None if limit > 0 && buf.len() >= limit => {
            // Exactly `limit` bytes then a terminator: s6 keeps it one line.
            if buf.len() > limit && is_eol(buf[limit]) {
                Some((&buf[..limit], limit + 1))
            } else if buf.len() > limit || eof {
                Some((&buf[..limit], limit))
            } else {
                None
            }
        }
        None if eof => Some((buf, buf.len())),
        None => None,
    }
}

/// How many bytes of `pending` to write now so that the write ends at the first line
/// boundary where `current` reaches the rotation threshold (`size - tolerance`), given
/// that `current` already holds `have` bytes. Returns `pending.len()` when no boundary in
/// `pending` reaches it.
pub fn write_bound(pending: &[u8], have: u64, size: u64, tolerance: u64) -> usize {
    let threshold = size.saturating_sub(tolerance);
    if have >= threshold {
        // Already due: the first line ends the write.
        return find_newline(pending).map_or(pending.len(), |i| i + 1);
    }
    let need = (threshold - have) as usize; // bytes to write before we are due
    if need > pending.len() {
        return pending.len();
    }
    match find_newline(&pending[need - 1..]) {
        Some(i) => need + i,
        None => pending.len(),
    }
}

/// Whether `current` is due for rotation after a write that ended on a line boundary.
pub fn due(have: u64, size: u64, tolerance: u64) -> bool {
    have + tolerance >= size
}

/// Whether a directory entry is an archive: `@` + 24 hex digits + `.s` or `.u`.
pub fn is_archive(name: &[u8]) -> bool {
    name.len() == 27
        && name[0] == b'@'
        && name[25] == b'.'
        && (name[26] == b's' || name[26] == b'u')
        && name[1..25].iter().all(u8::is_ascii_hexdigit)
}

/// Given archives `(name, size)` sorted oldest first, how many of the oldest to delete so
/// that at most `count` remain and (if `total` > 0) their sizes add up to at most `total`.
pub fn trim(archives: &[(Vec<u8>, u64)], count: u64, total: u64) -> usize {
    let mut n = archives.len() as u64;
    let mut sum: u64 = archives.iter().map(|a| a.1).sum();
    let mut del = 0;
    while del < archives.len() && (n > count || (total > 0 && sum > total)) {
        n -= 1;
        sum -= archives[del].1;
        del += 1;
    }
    del
}

/// `@<24 hex>.<kind>`.
pub fn archive_name(label: &[u8; 25], kind: u8) -> [u8; 27] {
    let mut n = [0u8; 27];
    n[..25].copy_from_slice(label);
    n[25] = b'.';
    n[26] = kind;
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newline_search_everywhere() {
        for len in 0..40 {
            for at in 0..len {
                let mut v = vec![b'x'; len];
                v[at] = b'\n';
                assert_eq!(find_newline(&v), Some(at));
                v[at] = 0x8a; // high bit set with the low bits of \n
                assert_eq!(find_newline(&v), None);
            }
        }
        assert_eq!(find_newline(b"ab\ncd\n"), Some(2));
        assert_eq!(find_newline(&[0x0b; 17]), None);
    }

    #[test]
    fn nul_ends_a_line_too() {
        for len in 0..40 {
            for at in 0..len {
                let mut v = vec![b'x'; len];
                v[at] = 0;
                assert_eq!(find_eol(&v), Some(at));
                v[at] = b'\n';
                assert_eq!(find_eol(&v), Some(at));
                if at + 1 < len {
                    v[at + 1] = 0;
                    assert_eq!(find_eol(&v), Some(at));
                }
            }
        }
        assert_eq!(
            find_eol(&[0x80, 0x01, 0x0b, 0xff, 0x8a, 0x7f, 0x81, 0x09, 0x0a]),
            Some(8)
        );
        assert_eq!(next_line(b"a\0b\n", 0, false), Some((&b"a"[..], 2)));
        assert_eq!(next_line(b"abcd\0", 4, false), Some((&b"abcd"[..], 5)));
    }

    #[test]
    fn lines_and_limits() {
        assert_eq!(next_line(b"ab\ncd", 0, false), Some((&b"ab"[..], 3)));
        assert_eq!(next_line(b"cd", 0, false), None);
        assert_eq!(next_line(b"cd", 0, true), Some((&b"cd"[..], 2)));
        assert_eq!(next_line(b"abcdef", 4, false), Some((&b"abcd"[..], 4)));
        assert_eq!(next_line(b"abcd", 4, false), None);
        assert_eq!(next_line(b"abcd", 4, true), Some((&b"abcd"[..], 4)));
        assert_eq!(next_line(b"abcd\nx", 4, false), Some((&b"abcd"[..], 5)));
        assert_eq!(next_line(b"ab\n", 4, false), Some((&b"ab"[..], 3)));
        assert_eq!(next_line(b"", 4, true), None);
    }

    #[test]
    fn bound_stops_at_first_line_reaching_threshold() {
        // threshold 10 - 2 = 8; current has 3: need 5 more bytes.
        let p = b"aa\nbb\ncc\ndd\n";
        assert_eq!(write_bound(p, 3, 10, 2), 6); // 3 + 6 = 9 >= 8 after "bb\n"
        assert_eq!(write_bound(p, 0, 10, 2), 9);
        assert_eq!(write_bound(p, 8, 10, 2), 3);
        assert_eq!(write_bound(p, 0, 100, 2), p.len());
        assert_eq!(write_bound(b"abcdefgh\n", 0, 10, 2), 9);
        assert!(due(8, 10, 2));
        assert!(!due(7, 10, 2));
    }

    #[test]
    fn trims_oldest_by_count_and_size() {
        let a = |s: u64| (b"@x".to_vec(), s);
        let v = vec![a(10), a(10), a(10), a(10)];
        assert_eq!(trim(&v, 10, 0), 0);
        assert_eq!(trim(&v, 3, 0), 1);
        assert_eq!(trim(&v, 0, 0), 4);
        assert_eq!(trim(&v, 10, 25), 2);
        assert_eq!(trim(&v, 10, 40), 0);
    }

    #[test]
    fn archive_names() {
        assert!(is_archive(b"@400000006b0c5a1b2a013136.u"));
        assert!(is_archive(b"@400000006b0c5a1b2a013136.s"));
        assert!(!is_archive(b"@400000006b0c5a1b2a013136.x"));
        assert!(!is_archive(b"current"));
        let l = *b"@400000006b0c5a1b2a013136";
        assert_eq!(&archive_name(&l, b's'), b"@400000006b0c5a1b2a013136.s");
    }
}
