//! Which bytes of a 32-byte block end a line (`\n` or NUL), as a bit mask: with SSE2,
//! part of every x86_64 CPU, that is two loads, four compares and two movemasks, against
//! about forty instructions for the same block eight bytes at a time (tend-log's line
//! splitting, bench/RESULTS.md, issue 39). Other architectures get the same answer from
//! a portable loop.

#![allow(unsafe_code)]

/// Whether `block` holds a `\n` or a 0: cheaper than `eol_mask` (a byte `b` is one of
/// them exactly when `min(b ^ b'\n', b)` is 0, so one compare serves the whole block),
/// for the blocks a line runs through before the one that ends it.
#[inline]
pub fn has_eol(block: &[u8; 32]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8,
            _mm_set1_epi8, _mm_setzero_si128, _mm_xor_si128,
        };
        let p = block.as_ptr().cast::<__m128i>();
        // SAFETY: as in `eol_mask`: SSE2 is in the x86_64 baseline, and the two
        // unaligned loads read bytes 0..16 and 16..32 of the borrowed 32-byte `block`.
        let hits = unsafe {
            let nl = _mm_set1_epi8(b'\n' as i8);
            let a = _mm_loadu_si128(p);
            let b = _mm_loadu_si128(p.add(1));
            let low = _mm_min_epu8(
                _mm_min_epu8(_mm_xor_si128(a, nl), a),
                _mm_min_epu8(_mm_xor_si128(b, nl), b),
            );
            _mm_movemask_epi8(_mm_cmpeq_epi8(low, _mm_setzero_si128()))
        };
        hits != 0
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        block.iter().any(|&b| b == b'\n' || b == 0)
    }
}

/// Bit `i` is set when `block[i]` is `\n` or 0.
#[inline]
pub fn eol_mask(block: &[u8; 32]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128,
            _mm_set1_epi8, _mm_setzero_si128,
        };
        let p = block.as_ptr().cast::<__m128i>();
        // SAFETY: SSE2 is in the x86_64 baseline, so every intrinsic here exists on any
        // CPU this code runs on; the two unaligned loads read bytes 0..16 and 16..32 of
        // `block`, which is 32 bytes long and borrowed for the call.
        let (lo, hi) = unsafe {
            let nl = _mm_set1_epi8(b'\n' as i8);
            let nul = _mm_setzero_si128();
            let a = _mm_loadu_si128(p);
            let b = _mm_loadu_si128(p.add(1));
            let ma = _mm_or_si128(_mm_cmpeq_epi8(a, nl), _mm_cmpeq_epi8(a, nul));
            let mb = _mm_or_si128(_mm_cmpeq_epi8(b, nl), _mm_cmpeq_epi8(b, nul));
            (_mm_movemask_epi8(ma), _mm_movemask_epi8(mb))
        };
        (lo as u32 & 0xffff) | ((hi as u32) << 16)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        block
            .iter()
            .enumerate()
            .fold(0, |m, (i, &b)| m | (u32::from(b == b'\n' || b == 0) << i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_every_terminator_and_nothing_else() {
        for at in 0..32 {
            for other in [0u8, b'\n', 0x8a, 0x0b, 0x80, 0xff, b'x'] {
                let mut b = [b'x'; 32];
                b[at] = other;
                let want = if other == 0 || other == b'\n' {
                    1 << at
                } else {
                    0
                };
                assert_eq!(eol_mask(&b), want, "byte {other:#x} at {at}");
            }
        }
        let mut b = [0x7fu8; 32];
        b[3] = 0;
        b[31] = b'\n';
        assert_eq!(eol_mask(&b), (1 << 3) | (1 << 31));
        assert!(has_eol(&b));
        for at in 0..32 {
            for byte in 0..=255u8 {
                let mut b = [b'x'; 32];
                b[at] = byte;
                assert_eq!(has_eol(&b), byte == 0 || byte == b'\n', "{byte:#x} at {at}");
            }
        }
    }
}
