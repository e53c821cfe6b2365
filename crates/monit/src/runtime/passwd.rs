//! The passwords of `allow [cleartext|md5|crypt] FILE`, checked as monit 5.33 checks them
//! (its `Util_checkCredentials`): cleartext compared as is; `md5` a `$ID$SALT$DIGEST`
//! hash, recomputed with MD5-crypt under the same ID and salt (`$1$` as crypt(3) makes
//! it, `$apr1$` as Apache's htpasswd does: the algorithm is one, the ID is mixed in);
//! `crypt` a traditional DES hash, recomputed by the C library with the hash's first two
//! characters as the salt. Every comparison runs in constant time.

/// One user's password as its rule stores it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Secret {
    Clear(String),
    Md5(String),
    Crypt(String),
}

impl Secret {
    /// Whether `given` (the Basic password) is this password.
    pub fn admits(&self, given: &str) -> bool {
        match self {
            // monit lets in an empty password; an empty line's user is more likely a
            // mistake than a wish to let everyone in.
            Secret::Clear(p) => !p.is_empty() && constant_eq(p.as_bytes(), given.as_bytes()),
            Secret::Md5(h) => md5_hash_of(h, given.as_bytes())
                .is_some_and(|mine| constant_eq(mine.as_bytes(), h.as_bytes())),
            Secret::Crypt(h) => {
                // monit takes two characters of the hash, whatever it holds: a hash made
                // by another method does not come out the same, so nobody passes.
                let salt = h.as_bytes().get(..2).unwrap_or(h.as_bytes());
                tend_sys::crypt::crypt_hash(given.as_bytes(), salt)
                    .is_some_and(|mine| constant_eq(&mine, h.as_bytes()))
            }
        }
    }
}

/// Compare without stopping at the first difference (no timing hint about the password).
pub fn constant_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `given`'s MD5-crypt under the ID and salt of `stored` (`$ID$SALT$…`); None when
/// `stored` has no such form (monit: "Password not in MD5 format").
fn md5_hash_of(stored: &str, given: &[u8]) -> Option<String> {
    let rest = stored.get(1..)?;
    let end = rest.find('$')? + 2;
    let (id, rest) = stored.split_at(end);
    let salt = &rest[..rest.find('$')?];
    Some(md5_crypt(given, id.as_bytes(), salt.as_bytes()))
}

const ITOA64: &[u8; 64] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Poul-Henning Kamp's MD5-crypt of `pw` with `magic` (`$1$`, `$apr1$`) and `salt` (at
/// most 8 bytes count): `MAGIC SALT $ 22 characters`.
pub fn md5_crypt(pw: &[u8], magic: &[u8], salt: &[u8]) -> String {
    let salt = &salt[..salt.len().min(8)];
    let alt = Md5::new().chain(pw).chain(salt).chain(pw).finish();
    let mut ctx = Md5::new().chain(pw).chain(magic).chain(salt);
    let mut left = pw.len();
    while left > 0 {
        let n = left.min(16);
        ctx.update(&alt[..n]);
        left -= n;
    }
    // The original's quirk, kept by every implementation: a zero byte for each set bit of
    // the length, the password's first byte for each clear one.
    let mut i = pw.len();
    while i != 0 {
        if i & 1 == 1 {
            ctx.update(&[0]);
        } else {
            ctx.update(&pw[..1]);
        }
        i >>= 1;
    }
    let mut f = ctx.finish();
    // A thousand rounds, to make guessing slow.
    for i in 0..1000 {
        let mut c = Md5::new();
        if i & 1 == 1 {
            c.update(pw);
        } else {
            c.update(&f);
        }
        if i % 3 != 0 {
            c.update(salt);
        }
        if i % 7 != 0 {
            c.update(pw);
        }
        if i & 1 == 1 {
            c.update(&f);
        } else {
            c.update(pw);
        }
        f = c.finish();
    }
    let mut out = String::with_capacity(magic.len() + salt.len() + 23);
    out.push_str(&String::from_utf8_lossy(magic));
    out.push_str(&String::from_utf8_lossy(salt));
    out.push('$');
    let mut to64 = |mut v: u32, n: usize| {
        for _ in 0..n {
            out.push(ITOA64[(v & 0x3f) as usize] as char);
            v >>= 6;
        }
    };
    let b = |i: usize| u32::from(f[i]);
    for (x, y, z) in [(0, 6, 12), (1, 7, 13), (2, 8, 14), (3, 9, 15), (4, 10, 5)] {
        to64((b(x) << 16) | (b(y) << 8) | b(z), 4);
    }
    to64(b(11), 2);
    out
}

/// MD5 (RFC 1321), for MD5-crypt only: a few short inputs per login.
struct Md5 {
    state: [u32; 4],
    buf: Vec<u8>,
    len: u64,
}

impl Md5 {
    fn new() -> Md5 {
        Md5 {
            state: [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476],
            buf: Vec::with_capacity(64),
            len: 0,
        }
    }

    fn chain(mut self, data: &[u8]) -> Md5 {
        self.update(data);
        self
    }

    fn update(&mut self, data: &[u8]) {
        self.len = self.len.wrapping_add(data.len() as u64);
        for &byte in data {
            self.buf.push(byte);
            if self.buf.len() == 64 {
                let block: [u8; 64] = self.buf[..].try_into().unwrap_or([0; 64]);
                self.block(&block);
                self.buf.clear();
            }
        }
    }

    fn finish(mut self) -> [u8; 16] {
        let bits = self.len.wrapping_mul(8);
        self.update(&[0x80]);
        while self.buf.len() != 56 {
            self.update(&[0]);
        }
        self.update(&bits.to_le_bytes());
        let mut out = [0u8; 16];
        for (o, s) in out.chunks_mut(4).zip(self.state) {
            o.copy_from_slice(&s.to_le_bytes());
        }
        out
    }

    fn block(&mut self, block: &[u8; 64]) {
        const SHIFT: [[u32; 4]; 4] = [
            [7, 12, 17, 22],
            [5, 9, 14, 20],
            [4, 11, 16, 23],
            [6, 10, 15, 21],
        ];
        let m: Vec<u32> = block
            .chunks(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let [mut a, mut b, mut c, mut d] = self.state;
        for i in 0..64 {
            let (f, g) = match i / 16 {
                0 => ((b & c) | (!b & d), i),
                1 => ((d & b) | (!d & c), (5 * i + 1) % 16),
                2 => (b ^ c ^ d, (3 * i + 5) % 16),
                _ => (c ^ (b | !d), (7 * i) % 16),
            };
            let t = d;
            d = c;
            c = b;
            b = b.wrapping_add(
                a.wrapping_add(f)
                    .wrapping_add(K[i])
                    .wrapping_add(m[g])
                    .rotate_left(SHIFT[i / 16][i % 4]),
            );
            a = t;
        }
        for (s, v) in self.state.iter_mut().zip([a, b, c, d]) {
            *s = s.wrapping_add(v);
        }
    }
}

/// MD5's round constants: the integer part of 2^32 × |sin(i + 1)|.
const K: [u32; 64] = [
    0xd76a_a478,
    0xe8c7_b756,
    0x2420_70db,
    0xc1bd_ceee,
    0xf57c_0faf,
    0x4787_c62a,
    0xa830_4613,
    0xfd46_9501,
    0x6980_98d8,
    0x8b44_f7af,
    0xffff_5bb1,
    0x895c_d7be,
    0x6b90_1122,
    0xfd98_7193,
    0xa679_438e,
    0x49b4_0821,
    0xf61e_2562,
    0xc040_b340,
    0x265e_5a51,
    0xe9b6_c7aa,
    0xd62f_105d,
    0x0244_1453,
    0xd8a1_e681,
    0xe7d3_fbc8,
    0x21e1_cde6,
    0xc337_07d6,
    0xf4d5_0d87,
    0x455a_14ed,
    0xa9e3_e905,
    0xfcef_a3f8,
    0x676f_02d9,
    0x8d2a_4c8a,
    0xfffa_3942,
    0x8771_f681,
    0x6d9d_6122,
    0xfde5_380c,
    0xa4be_ea44,
    0x4bde_cfa9,
    0xf6bb_4b60,
    0xbebf_bc70,
    0x289b_7ec6,
    0xeaa1_27fa,
    0xd4ef_3085,
    0x0488_1d05,
    0xd9d4_d039,
    0xe6db_99e5,
    0x1fa2_7cf8,
    0xc4ac_5665,
    0xf429_2244,
    0x432a_ff97,
    0xab94_23a7,
    0xfc93_a039,
    0x655b_59c3,
    0x8f0c_cc92,
    0xffef_f47d,
    0x8584_5dd1,
    0x6fa8_7e4f,
    0xfe2c_e6e0,
    0xa301_4314,
    0x4e08_11a1,
    0xf753_7e82,
    0xbd3a_f235,
    0x2ad7_d2bb,
    0xeb86_d391,
];

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(d: [u8; 16]) -> String {
        d.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn md5_as_rfc_1321() {
        let h = |s: &[u8]| hex(Md5::new().chain(s).finish());
        assert_eq!(h(b""), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(
            h(b"The quick brown fox jumps over the lazy dog"),
            "9e107d9d372bb6826bd81d3542a419d6"
        );
        // Several blocks, fed in pieces that straddle them.
        let mut m = Md5::new();
        for _ in 0..8 {
            m.update(&[b'a'; 25]);
        }
        assert_eq!(hex(m.finish()), "887f30b43b2867f4a9accceee7d16e6c");
    }

    #[test]
    fn md5_crypt_as_openssl_passwd() {
        // From `openssl passwd -1|-apr1 -salt SALT PASSWORD` (OpenSSL 3.0).
        let rows: [(&str, &str, &str, &str); 4] = [
            (
                "password",
                "$1$",
                "saltsalt",
                "$1$saltsalt$qjXMvbEw8oaL.CzflDtaK/",
            ),
            (
                "password",
                "$apr1$",
                "saltsalt",
                "$apr1$saltsalt$yAAkm4libquA.ZWLHbSBq/",
            ),
            ("", "$1$", "ab", "$1$ab$rn6aQS/o7141mj179E/zA."),
            (
                "a much longer password than sixteen bytes",
                "$apr1$",
                "x",
                "$apr1$x$eVg/QpGhpgNiDA46nGsav0",
            ),
        ];
        for (pw, magic, salt, want) in rows {
            let got = md5_crypt(pw.as_bytes(), magic.as_bytes(), salt.as_bytes());
            assert_eq!(got, want);
            assert!(Secret::Md5(want.into()).admits(pw));
        }
    }

    #[test]
    fn who_each_secret_admits() {
        let md5 = Secret::Md5("$1$saltsalt$qjXMvbEw8oaL.CzflDtaK/".into());
        assert!(!md5.admits("Password"));
        assert!(!md5.admits(""));
        // Not `$ID$SALT$…`: nobody.
        for h in ["{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=", "plain", "$1", ""] {
            assert!(!Secret::Md5(h.into()).admits(h), "{h}");
        }
        let des = Secret::Crypt("abzlUXK5ed5rs".into());
        assert!(des.admits("pw"));
        assert!(!des.admits("px"));
        // An MD5-crypt hash under `crypt`: monit salts DES with "$1", which never
        // gives it back.
        let wrong = Secret::Crypt("$1$saltsalt$qjXMvbEw8oaL.CzflDtaK/".into());
        assert!(!wrong.admits("password"));
        assert!(Secret::Clear("pw".into()).admits("pw"));
        assert!(!Secret::Clear("pw".into()).admits("pw "));
        assert!(!Secret::Clear(String::new()).admits(""));
    }
}
