//! POSIX extended regular expressions through libc's regcomp/regexec, as s6-log uses them:
//! `REG_EXTENDED | REG_NOSUB | REG_NEWLINE`, unanchored, matched against a C string (so a
//! line is matched up to its first NUL byte).

#![allow(unsafe_code)]

use std::ffi::{CStr, CString};

/// A compiled regular expression; freed with regfree on drop.
pub struct Regex {
    // Boxed so the regex_t never moves after regcomp filled it in.
    re: Box<libc::regex_t>,
}

impl std::fmt::Debug for Regex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Regex")
    }
}

impl Regex {
    /// Compile `pattern` (without NUL bytes). On failure, regerror's text.
    pub fn new(pattern: &[u8]) -> Result<Regex, String> {
        let pat = CString::new(pattern).map_err(|_| "pattern contains a NUL byte".to_string())?;
        // SAFETY: regex_t is a plain C struct; all-zero is a valid "not yet compiled" value.
        let mut re: Box<libc::regex_t> = Box::new(unsafe { std::mem::zeroed() });
        let flags = libc::REG_EXTENDED | libc::REG_NOSUB | libc::REG_NEWLINE;
        // SAFETY: re points to writable memory for a regex_t; pat is NUL-terminated.
        let rc = unsafe { libc::regcomp(&mut *re, pat.as_ptr(), flags) };
        if rc == 0 {
            return Ok(Regex { re });
        }
        let mut buf = [0u8; 256];
        // SAFETY: buf is writable for its length; regerror NUL-terminates within it.
        unsafe { libc::regerror(rc, &*re, buf.as_mut_ptr().cast(), buf.len()) };
        let text = CStr::from_bytes_until_nul(&buf)
            .map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_else(|_| "invalid regular expression".to_string());
        Err(text)
    }

    /// Whether the expression matches anywhere in `text`.
    pub fn is_match(&self, text: &CStr) -> bool {
        // SAFETY: self.re was compiled by regcomp; text is NUL-terminated; REG_NOSUB means
        // no match array is written (nmatch 0, null pmatch).
        unsafe { libc::regexec(&*self.re, text.as_ptr(), 0, std::ptr::null_mut(), 0) == 0 }
    }
}

impl Drop for Regex {
    fn drop(&mut self) {
        // SAFETY: self.re holds a successfully compiled expression, freed exactly once.
        unsafe { libc::regfree(&mut *self.re) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_unanchored_extended() {
        let r = Regex::new(b"fo+|bar$").unwrap();
        assert!(r.is_match(c"xx foo yy"));
        assert!(r.is_match(c"a bar"));
        assert!(!r.is_match(c"bar a"));
        assert!(!r.is_match(c"f"));
        let empty = Regex::new(b"").unwrap();
        assert!(empty.is_match(c"anything"));
    }

    #[test]
    fn reports_bad_pattern() {
        let e = Regex::new(b"(").unwrap_err();
        assert!(!e.is_empty());
        assert!(Regex::new(b"a\0b").is_err());
    }
}
