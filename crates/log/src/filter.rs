//! The two timestamp filters: tend-tai64n (prefix each line with `@` + TAI64N + space) and
//! tend-tai64nlocal (render a leading TAI64N label as a local or UTC date). Both read big
//! chunks and write once per chunk, before blocking on the next read.

use crate::policy::find_newline;
use nix::errno::Errno;
use std::os::fd::{AsFd, AsRawFd};
use tend_proto::Tai64n;
use tend_proto::tai64n::{render_datetime, render_digits, utc_datetime};
use tend_sys::Error;

const CHUNK: usize = 1 << 16;

fn read_stdin(buf: &mut [u8]) -> Result<usize, Error> {
    loop {
        match nix::unistd::read(std::io::stdin().as_fd().as_raw_fd(), buf) {
            Err(Errno::EINTR) => continue,
            Err(Errno::EAGAIN) => {
                let stdin = std::io::stdin();
                let mut f = [nix::poll::PollFd::new(
                    stdin.as_fd(),
                    nix::poll::PollFlags::POLLIN,
                )];
                let _ = nix::poll::poll(&mut f, nix::poll::PollTimeout::NONE);
            }
            r => return r.map_err(|e| Error::at("read from", "stdin", e)),
        }
    }
}

fn write_stdout(mut buf: &[u8]) -> Result<(), Error> {
    let out = std::io::stdout();
    while !buf.is_empty() {
        match nix::unistd::write(out.as_fd(), buf) {
            Ok(n) => buf = &buf[n..],
            Err(Errno::EINTR) => {}
            Err(Errno::EAGAIN) => {
                let mut f = [nix::poll::PollFd::new(
                    out.as_fd(),
                    nix::poll::PollFlags::POLLOUT,
                )];
                let _ = nix::poll::poll(&mut f, nix::poll::PollTimeout::NONE);
            }
            Err(e) => return Err(Error::at("write to", "stdout", e)),
        }
    }
    Ok(())
}

/// Stamp every line of `input` into `out`; `at_start` carries "the next byte begins a
/// line" across chunks. The stamp is the time the line's first byte was read.
pub fn stamp_chunk(input: &[u8], out: &mut Vec<u8>, at_start: &mut bool, label: &[u8; 25]) {
    let mut rest = input;
    while !rest.is_empty() {
        if *at_start {
            out.extend_from_slice(label);
            out.push(b' ');
        }
        match find_newline(rest) {
            Some(i) => {
                out.extend_from_slice(&rest[..=i]);
                rest = &rest[i + 1..];
                *at_start = true;
            }
            None => {
                out.extend_from_slice(rest);
                rest = &[];
                *at_start = false;
            }
        }
    }
}

/// tend-tai64n: stdin to stdout with a TAI64N label on each line; a final line without a
/// newline gets one.
pub fn tai64n() -> Result<(), Error> {
    let mut inb = vec![0u8; CHUNK];
    let mut out = Vec::with_capacity(CHUNK * 2);
    let mut at_start = true;
    loop {
        let n = read_stdin(&mut inb)?;
        if n == 0 {
            if !at_start {
                out.push(b'\n');
            }
            return write_stdout(&out);
        }
        let label = Tai64n::now().label();
        stamp_chunk(&inb[..n], &mut out, &mut at_start, &label);
        write_stdout(&out)?;
        out.clear();
    }
}

/// Unix seconds past which a label is left unchanged. s6-tai64nlocal renders a date as
/// long as localtime_r can (years up to i32::MAX; beyond, it prints a wrapped year or
/// leaves the label); tend stops two days before the end of year 2147483647 in any time
/// zone, so the year always fits the i32 of `localtime::DateTime`.
const LAST_RENDERED: i64 = 67_767_976_233_316_800 - 2 * 86_400;

/// Append `YYYY-MM-DD HH:MM:SS.nnnnnnnnn` for a TAI64N label (local time unless `utc`;
/// a year past 9999 gets more digits, as s6-tai64nlocal). False, with nothing appended,
/// for labels before 1970, nanoseconds of 10^9 or more, or past `LAST_RENDERED`: those
/// pass through unchanged, as s6-tai64nlocal leaves them.
pub fn render_label(out: &mut Vec<u8>, t: Tai64n, utc: bool) -> bool {
    let Some(secs) = tend_proto::tai64n::unix_from_label(t.secs) else {
        return false;
    };
    if secs > LAST_RENDERED || t.nanos >= 1_000_000_000 {
        return false;
    }
    let d = if utc {
        utc_datetime(secs)
    } else {
        tend_sys::localtime::local(secs).unwrap_or_else(|| utc_datetime(secs))
    };
    if d.year > 9999 {
        let mut y = [0u8; 10];
        let mut n = d.year;
        let mut i = y.len();
        while n > 0 {
            i -= 1;
            y[i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
        out.extend_from_slice(&y[i..]);
    } else {
        out.extend_from_slice(&render_datetime(&d, b' ')[..4]);
    }
    let mut o = [b'.'; 25];
    o[..15].copy_from_slice(&render_datetime(&d, b' ')[4..]);
    render_digits(&mut o[16..], t.nanos);
    out.extend_from_slice(&o);
    true
}

/// Rewrite one line (with or without its newline): a leading `@` + 24 hex digits becomes
/// a date; anything else passes unchanged.
pub fn localize_line(line: &[u8], out: &mut Vec<u8>, utc: bool) {
    if line.len() >= 25
        && line[0] == b'@'
        && let Some(t) = Tai64n::parse_hex(&line[1..25])
        && render_label(out, t, utc)
    {
        out.extend_from_slice(&line[25..]);
    } else {
        out.extend_from_slice(line);
    }
}

/// tend-tai64nlocal: stdin to stdout, leading labels rendered as dates.
pub fn tai64nlocal(utc: bool) -> Result<(), Error> {
    let mut inb = vec![0u8; CHUNK];
    let (mut start, mut end) = (0, 0);
    let mut out = Vec::with_capacity(CHUNK * 2);
    loop {
        if start > 0 {
            inb.copy_within(start..end, 0);
            end -= start;
            start = 0;
        }
        if end == inb.len() {
            inb.resize(inb.len() * 2, 0);
        }
        let n = read_stdin(&mut inb[end..])?;
        end += n;
        while let Some(i) = find_newline(&inb[start..end]) {
            localize_line(&inb[start..start + i + 1], &mut out, utc);
            start += i + 1;
        }
        if n == 0 {
            localize_line(&inb[start..end], &mut out, utc);
            return write_stdout(&out);
        }
        write_stdout(&out)?;
        out.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_across_chunks() {
        let label = *b"@400000006b0c5a1b2a013136";
        let mut out = Vec::new();
        let mut at = true;
        stamp_chunk(b"ab\ncd", &mut out, &mut at, &label);
        stamp_chunk(b"ef\n\n", &mut out, &mut at, &label);
        assert_eq!(
            out,
            b"@400000006b0c5a1b2a013136 ab\n@400000006b0c5a1b2a013136 cdef\n@400000006b0c5a1b2a013136 \n"
        );
        assert!(at);
    }

    #[test]
    fn localizes_only_full_labels() {
        let mut out = Vec::new();
        localize_line(b"@400000006b0c5a1b2a013136 x\n", &mut out, true);
        localize_line(b"@400000006b0c5a1b2a01313 y\n", &mut out, true);
        localize_line(b"@400000006b0c5a1b2a013136z", &mut out, true);
        assert_eq!(
            out,
            b"2026-11-29 16:59:34.704721206 x\n@400000006b0c5a1b2a01313 y\n2026-11-29 16:59:34.704721206z"
        );
    }

    #[test]
    fn out_of_range_labels_pass_unchanged_and_big_years_widen() {
        let mut out = Vec::new();
        for l in [
            &b"@7fffffffffffffff00000000 a\n"[..],
            b"@40000000000000003b9aca00 b\n",
            b"@40f8b0a10e47002500000000 c\n",
        ] {
            out.clear();
            localize_line(l, &mut out, true);
            assert_eq!(out, l);
        }
        out.clear();
        localize_line(b"@400000ffffffffff00000000 d\n", &mut out, true);
        assert_eq!(out, b"36812-02-20 00:35:38.000000000 d\n");
        out.clear();
        localize_line(b"@40f0c29d8688b1e500000000 e\n", &mut out, true);
        assert_eq!(out, b"@40f0c29d8688b1e500000000 e\n");
        out.clear();
        localize_line(b"@40d529ae9e86002500000000 f\n", &mut out, true);
        assert_eq!(out, b"1901326280-05-29 10:40:00.000000000 f\n");
    }
}
