//! The OOM killer's adjustment of the calling process, as util-linux's choom sets it and
//! NVIDIA's NVRC sets it for a guest's agent: a number from -1000 (never chosen) to 1000
//! (chosen first) written to `/proc/self/oom_score_adj`. It is inherited across fork and
//! exec, so a chain tool sets it for everything it runs. Lowering it needs
//! CAP_SYS_RESOURCE; the kernel says EACCES otherwise.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use tend_sys::Error;

/// Where the adjustment is written.
pub const PATH: &str = "/proc/self/oom_score_adj";

/// The kernel's bounds (OOM_SCORE_ADJ_MIN, OOM_SCORE_ADJ_MAX).
pub const MIN: i32 = -1000;
pub const MAX: i32 = 1000;

/// A score: an optional `-` or `+` and decimal digits, within [`MIN`, `MAX`].
pub fn parse(s: &OsStr) -> Option<i32> {
    let b = s.as_bytes();
    let (neg, digits) = match b.first()? {
        b'-' => (true, &b[1..]),
        b'+' => (false, &b[1..]),
        _ => (false, b),
    };
    if digits.is_empty() || digits.len() > 4 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = digits
        .iter()
        .fold(0i32, |n, d| n * 10 + i32::from(d - b'0'));
    let n = if neg { -n } else { n };
    (MIN..=MAX).contains(&n).then_some(n)
}

/// Write `score` to /proc/self/oom_score_adj. Errors read
/// `unable to write /proc/self/oom_score_adj: why`.
pub fn set(score: i32) -> Result<(), Error> {
    let mut buf = [0u8; 8];
    let text = {
        use std::io::Write;
        let mut w = &mut buf[..];
        // At most 5 characters: always fits.
        let _ = write!(w, "{score}");
        let n = 8 - w.len();
        &buf[..n]
    };
    let fd = tend_sys::fd::open(
        PATH,
        nix::fcntl::OFlag::O_WRONLY | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .map_err(|e| Error::at("write", PATH, e))?;
    tend_sys::fd::write_all(&fd, text).map_err(|e| Error::at("write", PATH, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores() {
        for (s, want) in [
            ("-997", Some(-997)),
            ("0", Some(0)),
            ("+5", Some(5)),
            ("1000", Some(1000)),
            ("-1000", Some(-1000)),
            ("1001", None),
            ("-1001", None),
            ("", None),
            ("-", None),
            ("1e3", None),
            ("99999999999", None),
            (" 1", None),
        ] {
            assert_eq!(parse(OsStr::new(s)), want, "{s:?}");
        }
    }
}
