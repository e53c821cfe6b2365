//! tend-ucspilogd's filter: syslog records on stdin, each ended by a newline or a NUL (a
//! stream /dev/log behind a socket server, or /proc/kmsg), to decoded lines on stdout.
//!
//! As s6's ucspilogd: a leading TAI64N label (`@` + 24 hex digits + space) stays first,
//! then `VALUE: ` for each variable asked for, then the decoded priority and the text. A
//! last record without its terminator is still written, with a newline. Output is flushed
//! before every read that may wait, so lines go out as they come.

use crate::priority;
use nix::errno::Errno;
use std::os::fd::{AsRawFd, BorrowedFd};
use tend_sys::Error;

/// Flush once this much output is pending, even if more input is ready.
const OUT_HIGH: usize = 1 << 16;

/// Filter `input` to `output` until end of file. `prefixes` are the variables' values.
pub fn run(input: BorrowedFd<'_>, output: BorrowedFd<'_>, prefixes: &[&[u8]]) -> Result<(), Error> {
    let mut buf = vec![0u8; 1 << 16];
    let mut out = Vec::with_capacity(OUT_HIGH * 2);
    let (mut start, mut filled) = (0, 0);
    loop {
        while let Some(i) = buf[start..filled]
            .iter()
            .position(|&b| b == b'\n' || b == 0)
        {
            record(&mut out, &buf[start..start + i], prefixes);
            start += i + 1;
            if out.len() >= OUT_HIGH {
                flush(output, &mut out)?;
            }
        }
        if start > 0 {
            buf.copy_within(start..filled, 0);
            filled -= start;
            start = 0;
        }
        if filled == buf.len() {
            // One record longer than the buffer: keep all of it (no silent cap).
            buf.resize(buf.len() * 2, 0);
        }
        flush(output, &mut out)?;
        let n = loop {
            match nix::unistd::read(input.as_raw_fd(), &mut buf[filled..]) {
                Ok(n) => break n,
                Err(Errno::EINTR) => {}
                Err(e) => return Err(Error::new("read from stdin", e)),
            }
        };
        if n == 0 {
            if filled > 0 {
                record(&mut out, &buf[..filled], prefixes);
                flush(output, &mut out)?;
            }
            return Ok(());
        }
        filled += n;
    }
}

/// One record (without its terminator) as one line.
pub fn record(out: &mut Vec<u8>, rec: &[u8], prefixes: &[&[u8]]) {
    let mut pos = 0;
    if rec.len() >= 26 && rec[0] == b'@' && rec[..26].iter().position(|&b| b == b' ') == Some(25) {
        out.extend_from_slice(&rec[..26]);
        pos = 26;
    }
    for p in prefixes {
        out.extend_from_slice(p);
        out.extend_from_slice(b": ");
    }
    if let Some((pri, n)) = priority::parse(&rec[pos..]) {
        pri.write_names(out);
        pos += n;
    }
    out.extend_from_slice(&rec[pos..]);
    out.push(b'\n');
}

fn flush(fd: BorrowedFd<'_>, out: &mut Vec<u8>) -> Result<(), Error> {
    if !out.is_empty() {
        tend_sys::fd::write_all(fd, out).map_err(|e| Error::new("write to stdout", e))?;
        out.clear();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(r: &[u8], p: &[&[u8]]) -> String {
        let mut o = Vec::new();
        record(&mut o, r, p);
        String::from_utf8(o).unwrap()
    }

    #[test]
    fn records() {
        assert_eq!(rec(b"<13>hi", &[]), "user.notice: hi\n");
        assert_eq!(rec(b"", &[b"x"]), "x: \n");
        assert_eq!(rec(b"<12", &[]), "<12\n");
        assert_eq!(
            rec(
                b"@400000005f5e100000000000 <13>hi",
                &[b"1.2.3.4", b"<undefined>"]
            ),
            "@400000005f5e100000000000 1.2.3.4: <undefined>: user.notice: hi\n"
        );
    }
}
