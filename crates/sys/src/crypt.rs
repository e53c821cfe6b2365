//! crypt(3), for the traditional DES hashes of htpasswd files (tend-monit's `allow
//! crypt FILE`, which monit checks with the C library's crypt and a two-character salt).
//! musl's libc has it; glibc's lives in libcrypt (libxcrypt).

#![allow(unsafe_code)]

use std::ffi::{CStr, CString};
use std::sync::Mutex;

#[cfg_attr(target_env = "gnu", link(name = "crypt"))]
unsafe extern "C" {
    fn crypt(key: *const libc::c_char, setting: *const libc::c_char) -> *mut libc::c_char;
}

/// crypt(3) of `key` under `setting` (for DES, the two salt characters). None when the C
/// library refuses: a NUL in either, an invalid setting (NULL, or a `*` failure token,
/// which must never be taken for a hash).
pub fn crypt_hash(key: &[u8], setting: &[u8]) -> Option<Vec<u8>> {
    // crypt returns its own static buffer: one caller at a time, until it is copied.
    static ONE: Mutex<()> = Mutex::new(());
    let key = CString::new(key).ok()?;
    let setting = CString::new(setting).ok()?;
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: both arguments are NUL-terminated strings that outlive the call.
    let p = unsafe { crypt(key.as_ptr(), setting.as_ptr()) };
    if p.is_null() {
        return None;
    }
    // SAFETY: a non-NULL result is a NUL-terminated string in crypt's static buffer,
    // which the lock keeps unchanged until it is copied here.
    let out = unsafe { CStr::from_ptr(p) }.to_bytes().to_vec();
    (!out.starts_with(b"*")).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn des_as_the_c_library_computes_it() {
        // From `python3 -c 'import crypt; print(crypt.crypt("pw", "ab"))'` (glibc).
        assert_eq!(
            crypt_hash(b"pw", b"ab").as_deref(),
            Some(&b"abzlUXK5ed5rs"[..])
        );
        assert_eq!(crypt_hash(b"p\0w", b"ab"), None);
    }
}
