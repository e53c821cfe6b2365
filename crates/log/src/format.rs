//! Rendering a line for an action: timestamps, prefix, plain or JSON form. Everything
//! writes into caller-owned buffers; nothing allocates per line.

use crate::script::Format;
use tend_proto::json::{self, Invalid};
use tend_proto::tai64n::{Tai64n, render_datetime, render_digits, utc_datetime};

/// The stamps of one line, rendered once and shared by every action.
pub struct Stamps {
    /// `@` + 24 hex + space.
    pub tai: [u8; 26],
    /// `YYYY-MM-DD HH:MM:SS.nnnnnnnnn` + two spaces.
    pub local: [u8; 31],
    /// `YYYY-MM-DDTHH:MM:SS.uuuuuuZ` + space.
    pub rfc3339: [u8; 28],
    // Per-second caches: the unix second each cached date part belongs to.
    local_sec: i64,
    utc_sec: i64,
    tai_sec: u64,
}

impl Default for Stamps {
    fn default() -> Self {
        Stamps {
            tai: [b' '; 26],
            local: [b' '; 31],
            rfc3339: [b' '; 28],
            local_sec: i64::MIN,
            utc_sec: i64::MIN,
            tai_sec: u64::MAX,
        }
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

impl Stamps {
    /// Render the requested stamps for unix time (`secs`, `nanos`).
    pub fn set(&mut self, secs: i64, nanos: u32, tai: bool, local: bool, rfc: bool) {
        if tai {
            let t = Tai64n::from_unix(secs.max(0) as u64, nanos);
            if t.secs != self.tai_sec {
                self.tai = [b' '; 26];
                self.tai[..25].copy_from_slice(&t.label());
                self.tai_sec = t.secs;
            } else {
                for (i, b) in nanos.to_be_bytes().iter().enumerate() {
                    self.tai[17 + 2 * i] = HEX[(b >> 4) as usize];
                    self.tai[18 + 2 * i] = HEX[(b & 15) as usize];
                }
            }
        }
        if local {
            if secs != self.local_sec {
                let d = tend_sys::localtime::local(secs).unwrap_or_else(|| utc_datetime(secs));
                self.local[..19].copy_from_slice(&render_datetime(&d, b' '));
                self.local[19] = b'.';
                self.local_sec = secs;
            }
            render_digits(&mut self.local[20..29], nanos);
        }
        if rfc {
            if secs != self.utc_sec {
                let d = utc_datetime(secs);
                self.rfc3339[..19].copy_from_slice(&render_datetime(&d, b'T'));
                self.rfc3339[19] = b'.';
                self.rfc3339[26] = b'Z';
                self.utc_sec = secs;
            }
            render_digits(&mut self.rfc3339[20..26], nanos / 1000);
        }
    }
}

/// Append the stamps and prefix an action asks for (the part before the line).
pub fn head(out: &mut Vec<u8>, f: &Format, s: &Stamps) {
    if f.tai {
        out.extend_from_slice(&s.tai);
    }
    if f.local {
        out.extend_from_slice(&s.local);
    }
    if f.rfc3339 {
        out.extend_from_slice(&s.rfc3339);
    }
    if let Some(p) = &f.prefix {
        out.extend_from_slice(p);
        out.push(b' ');
    }
}

/// Append one output record for `line` (without its newline): plain or JSON, ending in `\n`.
pub fn record(out: &mut Vec<u8>, f: &Format, s: &Stamps, line: &[u8]) {
    record_in(out, f, s, line, line.len());
}

/// `record` for the line `room[..len]` of a larger buffer: the bytes after it let the
/// copy run in whole blocks (`append_in`).
pub fn record_in(out: &mut Vec<u8>, f: &Format, s: &Stamps, room: &[u8], len: usize) {
    let len = len.min(room.len());
    if f.json {
        json(out, f, s, &room[..len]);
    } else {
        out.reserve(len + s.tai.len() + 1);
        head(out, f, s);
        append_in(out, room, len);
        out.push(b'\n');
    }
}

/// `out.extend_from_slice(src)` for a log line (tens to hundreds of bytes) without a call
/// to memcpy: musl's is `rep movsq`, whose start-up cost made the per-line copies about a
/// quarter of tend-log's own CPU time (bench/RESULTS.md, issue 39). Fixed-size pieces
/// compile to plain vector moves.
#[inline]
pub fn append(out: &mut Vec<u8>, src: &[u8]) {
    out.reserve(src.len());
    let big = src.chunks_exact(32);
    let rest = big.remainder();
    for c in big {
        if let Ok(c) = <&[u8; 32]>::try_from(c) {
            out.extend_from_slice(c);
        }
    }
    let mid = rest.chunks_exact(8);
    let rest = mid.remainder();
    for c in mid {
        if let Ok(c) = <&[u8; 8]>::try_from(c) {
            out.extend_from_slice(c);
        }
    }
    for &b in rest {
        out.push(b);
    }
}

/// `append(out, &room[..len])` in whole 32-byte blocks: the block that holds the line's
/// end also copies the bytes after it (the rest of the input buffer), cut off again by a
/// truncate, so a line costs a few fixed-size moves and no byte-by-byte tail, whose
/// varying length cost about two mispredicted branches a line (bench/RESULTS.md, issue
/// 39). Near the end of `room`, `append` copies the rest exactly.
#[inline]
pub fn append_in(out: &mut Vec<u8>, room: &[u8], len: usize) {
    let len = len.min(room.len());
    let start = out.len();
    out.reserve(len + 32);
    let mut blocks = room.chunks_exact(32);
    let mut done = 0;
    while done < len {
        match blocks.next().map(<&[u8; 32]>::try_from) {
            Some(Ok(c)) => out.extend_from_slice(c),
            _ => {
                append(out, &room[done..len]);
                break;
            }
        }
        done += 32;
    }
    out.truncate(start + len);
}

/// What `plain_lines` took: input bytes used (whole lines with their terminators), and
/// how many of the records it made end in a NUL (see `Logdir::soften_last`).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Taken {
    pub used: usize,
    pub soft: usize,
}

/// Line ends `plain_lines` collects before copying: a few kB on the stack.
const ENDS: usize = 256;

/// The plain records (`head` + line + terminator) of the complete lines at the front of
/// `input`, appended to `out`: the path of a script with one plain action and no
/// selections (`t s1000000 n20 ./main`). Two passes over up to `ENDS` lines at a time,
/// each without a branch whose outcome follows the line lengths: first the line ends of
/// whole 64-byte blocks as a bit mask (`tend_sys::bytes::eol_mask`), written out as
/// offsets two at a time whatever their number (a block with more takes a loop); then
/// each record as the head and a fixed 256 bytes from the line's start, cut back to the
/// line and its terminator (longer lines, and lines near the end of `input`, take
/// `append_in`). A search loop that stops at each line's end mispredicts its exit once a
/// line (bench/RESULTS.md, issue 39). The terminator is copied with the line: a `\n`, or
/// a NUL that the record keeps as its soft end, as `Logdir::soften_last` would make it.
/// `head` is `head_room[..head_len]`, with 32 more bytes of room after it.
///
/// Stops before a line whose end is not within the whole 64-byte blocks of `input`, or
/// that is longer than `limit` (0: no limit): `policy::next_line` takes those, and the
/// final fragment at EOF. (Not inlined: in a function of its own, the loops keep their
/// constants in registers.)
#[inline(never)]
pub fn plain_lines(
    out: &mut Vec<u8>,
    head_room: &[u8],
    head_len: usize,
    input: &[u8],
    limit: usize,
) -> Taken {
    let max = if limit == 0 { usize::MAX } else { limit };
    let mut taken = Taken::default();
    // A head of at most one block (the stamps alone: 26 bytes for `t`) is that block.
    let short_head = head_room.first_chunk::<32>().filter(|_| head_len <= 32);
    // Room for a last block's 64 ends after ENDS - 1, and one written past them.
    let mut ends = [0u32; ENDS + 65];
    // Offsets fit in u32 (a buffer of 4 GB is only a line without limit that long).
    let input = &input[..input.len().min(u32::MAX as usize)];
    loop {
        let from = taken.used;
        let mut n = 0;
        let mut scanned = from;
        for block in input[from..].chunks_exact(64) {
            if n >= ENDS {
                break;
            }
            let Some((lo, hi)) = block.split_first_chunk::<32>() else {
                break;
            };
            let Ok(hi) = <&[u8; 32]>::try_from(hi) else {
                break;
            };
            let mut m = u64::from(tend_sys::bytes::eol_mask(lo))
                | u64::from(tend_sys::bytes::eol_mask(hi)) << 32;
            let base = scanned as u32;
            // Two written whatever the count, each counted only if there (no popcnt in
            // the x86_64 baseline); a third and more take the loop.
            for _ in 0..2 {
                ends[n] = base + m.trailing_zeros();
                n += usize::from(m != 0);
                m &= m.wrapping_sub(1);
            }
            while m != 0 {
                ends[n] = base + m.trailing_zeros();
                n += 1;
                m &= m.wrapping_sub(1);
            }
            scanned += 64;
        }
        for &end in &ends[..n.min(ENDS + 64)] {
            let (start, end) = (taken.used, end as usize);
            let len = end - start;
            if len > max {
                return taken;
            }
            let mark = out.len();
            match short_head {
                Some(h) => {
                    out.extend_from_slice(h);
                    out.truncate(mark + head_len);
                }
                None => append_in(out, head_room, head_len),
            }
            match input[start..].first_chunk::<256>() {
                Some(line) if len < 256 => {
                    let (a, b) = line.split_at(128);
                    if let (Ok(a), Ok(b)) = (<&[u8; 128]>::try_from(a), <&[u8; 128]>::try_from(b)) {
                        out.extend_from_slice(a);
                        out.extend_from_slice(b);
                    }
                    out.truncate(mark + head_len + len + 1);
                }
                _ => append_in(out, &input[start..], len + 1),
            }
            taken.soft += usize::from(input[end] == 0);
            taken.used = end + 1;
        }
        if n < ENDS {
            return taken;
        }
    }
}

/// `{"time":"…Z","tai64n":"@…","local":"…","prefix":"…","line":"…"}` + `\n`; `time` is
/// always there, `tai64n`/`local` when `t`/`T` were given, `prefix` when one is set.
pub fn json(out: &mut Vec<u8>, f: &Format, s: &Stamps, line: &[u8]) {
    out.extend_from_slice(b"{\"time\":\"");
    out.extend_from_slice(&s.rfc3339[..27]);
    if f.tai {
        out.extend_from_slice(b"\",\"tai64n\":\"");
        out.extend_from_slice(&s.tai[..25]);
    }
    if f.local {
        out.extend_from_slice(b"\",\"local\":\"");
        out.extend_from_slice(&s.local[..29]);
    }
    if let Some(p) = &f.prefix {
        out.extend_from_slice(b"\",\"prefix\":\"");
        json::escape(out, p, Invalid::Escaped);
    }
    out.extend_from_slice(b"\",\"line\":\"");
    json::escape(out, line, Invalid::Escaped);
    out.extend_from_slice(b"\"}\n");
}

/// The bytes a status file gets: head + line + `\n`, cut to `size` (0 = as is). Returns
/// how many `\n` must follow to pad it to exactly `size` bytes (written without building
/// them in memory, since `size` may be large).
pub fn status(out: &mut Vec<u8>, f: &Format, s: &Stamps, line: &[u8], size: usize) -> usize {
    out.clear();
    record(out, f, s, line);
    if size == 0 {
        return 0;
    }
    if out.len() >= size {
        out.truncate(size);
        0
    } else {
        size - out.len()
    }
}

/// An alert line: `PROG: alert: ` + head + the line + `\n`; a line more than `limit` + 3
/// bytes long is cut to `limit` bytes followed by `...` (as s6-log: cutting fewer bytes
/// than the ellipsis adds would not shorten it).
pub fn alert(out: &mut Vec<u8>, prog: &[u8], f: &Format, s: &Stamps, line: &[u8], limit: usize) {
    out.extend_from_slice(prog);
    out.extend_from_slice(b": alert: ");
    if f.json {
        json(out, f, s, line);
        return;
    }
    head(out, f, s);
    if limit > 0 && line.len() > limit.saturating_add(3) {
        out.extend_from_slice(&line[..limit]);
        out.extend_from_slice(b"...");
    } else {
        append(out, line);
    }
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(tai: bool, local: bool, rfc: bool, json: bool, prefix: Option<&str>) -> Format {
        Format {
            tai,
            local,
            rfc3339: rfc,
            json,
            prefix: prefix.map(|p| p.as_bytes().to_vec()),
        }
    }

    #[test]
    fn plain_order_tai_local_rfc_prefix() {
        let mut s = Stamps::default();
        s.set(1_795_962_222, 123_456_789, true, false, true);
        let mut o = Vec::new();
        record(
            &mut o,
            &fmt(true, false, true, false, Some("svc")),
            &s,
            b"hello",
        );
        let t = String::from_utf8(o).unwrap();
        assert!(t.starts_with("@400000006b0"), "{t}");
        assert_eq!(&t[26..], "2026-11-29T14:23:42.123456Z svc hello\n");
        assert_eq!(&t[17..25], "075bcd15");
        // Same second, new nanos: only the nanosecond part changes.
        s.set(1_795_962_222, 1, true, false, true);
        let mut o = Vec::new();
        record(&mut o, &fmt(true, false, true, false, None), &s, b"x");
        assert_eq!(&o[17..25], b"00000001");
        assert_eq!(&o[26..], b"2026-11-29T14:23:42.000000Z x\n");
    }

    #[test]
    fn json_escapes_and_replaces() {
        let mut s = Stamps::default();
        s.set(1_795_962_222, 5_000, false, false, true);
        let mut o = Vec::new();
        record(
            &mut o,
            &fmt(false, false, false, true, Some("a\"b")),
            &s,
            b"q\"\\\t\x01\xffok\xc3\xa9",
        );
        assert_eq!(
            String::from_utf8(o).unwrap(),
            "{\"time\":\"2026-11-29T14:23:42.000005Z\",\"prefix\":\"a\\\"b\",\"line\":\"q\\\"\\\\\\t\\u0001\\ufffdok\u{e9}\"}\n"
        );
    }

    #[test]
    fn append_copies_every_length() {
        let src: Vec<u8> = (0..=255u8).collect();
        for n in 0..src.len() {
            let mut o = b"ab".to_vec();
            append(&mut o, &src[..n]);
            assert_eq!(&o[..2], b"ab");
            assert_eq!(&o[2..], &src[..n]);
        }
    }

    #[test]
    fn append_in_copies_only_the_line() {
        let room: Vec<u8> = (0..=255u8).collect();
        for end in [0, 1, 31, 32, 33, 100, 200, 224, 225, 255, 256] {
            for len in 0..=end {
                // The line is `room[..len]` of a buffer that ends at `end`.
                let mut o = b"ab".to_vec();
                append_in(&mut o, &room[..end], len);
                assert_eq!(&o[..2], b"ab");
                assert_eq!(&o[2..], &room[..len], "len {len} of {end}");
            }
        }
        // A length past the buffer copies the buffer.
        let mut o = Vec::new();
        append_in(&mut o, b"xyz", 5);
        assert_eq!(o, b"xyz");
    }

    /// A record as the general path makes it: head, line, and `\n`, or 0 for a line
    /// that a NUL ended or the limit cut (what `Logdir::soften_last` leaves).
    fn general(out: &mut Vec<u8>, head: &[u8], input: &[u8], limit: usize) -> Option<usize> {
        let (line, used) = crate::policy::next_line(input, limit, false)?;
        out.extend_from_slice(head);
        out.extend_from_slice(line);
        let soft = !(used > line.len() && input[line.len()] == b'\n');
        out.push(if soft { 0 } else { b'\n' });
        Some(used)
    }

    #[test]
    fn plain_lines_match_the_general_path() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..400 {
            // Lines of 0-300 bytes, ended by \n or (rarely) NUL, some with bytes that
            // look like terminators in the high bit.
            let mut input = Vec::new();
            while input.len() < 3000 {
                // Short lines too: more than ENDS of them in one call.
                let len = (next() % [301, 11][round % 2]) as usize;
                for _ in 0..len {
                    input.push(b"ab\x8a\x80 xyz"[(next() % 8) as usize]);
                }
                input.push(if next() % 8 == 0 { 0 } else { b'\n' });
            }
            let cut = input.len() - (next() % 200) as usize;
            let input = &input[..cut];
            let limit = [0, 48, 100, 8192][round / 2 % 4];
            let head: &[u8] = [
                &b""[..],
                b"@400000006b0c5a1b2a013136 ",
                b"0123456789 0123456789 0123456789 x ",
            ][round / 8 % 3];
            let mut room = head.to_vec();
            room.resize(head.len() + 32, 0);
            let mut want = Vec::new();
            let mut at = 0;
            while let Some(used) = general(&mut want, head, &input[at..], limit) {
                at += used;
            }
            let mut got = b"before".to_vec();
            let (mut gat, mut soft) = (0, 0);
            loop {
                let t = plain_lines(&mut got, &room, head.len(), &input[gat..], limit);
                gat += t.used;
                soft += t.soft;
                match general(&mut got, head, &input[gat..], limit) {
                    Some(used) => {
                        soft += usize::from(got.last() == Some(&0));
                        gat += used;
                    }
                    None => break,
                }
            }
            assert_eq!(gat, at, "round {round}");
            assert_eq!(&got[..6], b"before");
            assert_eq!(&got[6..], &want[..], "round {round}");
            let softs = want.iter().filter(|&&b| b == 0).count();
            // No line holds a 0 (a NUL ends it): every 0 is a soft end, and counted.
            assert_eq!(soft, softs, "round {round}");
        }
    }

    #[test]
    fn status_pads_and_truncates() {
        let s = Stamps::default();
        let mut o = Vec::new();
        assert_eq!(status(&mut o, &Format::default(), &s, b"hello", 8), 2);
        assert_eq!(o, b"hello\n");
        assert_eq!(status(&mut o, &Format::default(), &s, b"hello world", 5), 0);
        assert_eq!(o, b"hello");
        assert_eq!(status(&mut o, &Format::default(), &s, b"hello", 0), 0);
        assert_eq!(o, b"hello\n");
    }

    #[test]
    fn alert_truncates_line_only() {
        let s = Stamps::default();
        let mut o = Vec::new();
        alert(
            &mut o,
            b"tend-log",
            &fmt(false, false, false, false, Some("X")),
            &s,
            b"hello world",
            5,
        );
        assert_eq!(o, b"tend-log: alert: X hello...\n");
        o.clear();
        alert(&mut o, b"tend-log", &Format::default(), &s, b"abcdefgh", 5);
        assert_eq!(o, b"tend-log: alert: abcdefgh\n");
    }
}
