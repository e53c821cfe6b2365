//! A bump allocator for a program whose work is one short start: tend-jail (bench/jail.sh).
//!
//! musl's allocator maps a page for each new size class and unmaps it when its last piece
//! is freed: tend-jail's start, a few hundred small allocations spread over three
//! processes, paid ~40 mmap/munmap calls and their page faults for them. Here the pieces
//! come from one zeroed static buffer (.bss, so only the pages touched cost memory), one
//! after the other; a piece freed or grown while it is the last one is taken back or
//! grown in place (the common case: a temporary path or string), any other free is
//! ignored. When the buffer is full, the system allocator serves the rest, so a
//! long-lived process that keeps allocating (tend-jail's two waiting processes do not)
//! would only lose the arena's use, not grow without bound.

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// `N` bytes handed out in order; see the module's text.
#[repr(C, align(4096))]
pub struct Arena<const N: usize> {
    buf: UnsafeCell<[u8; N]>,
    /// Bytes of `buf` in use: every piece lies below it.
    used: AtomicUsize,
}

// SAFETY: the buffer is only handed out in disjoint pieces, each claimed by one
// compare-exchange of `used`; the arena never reads or writes a piece itself but to copy
// one the caller gave up (realloc).
unsafe impl<const N: usize> Sync for Arena<N> {}

impl<const N: usize> Default for Arena<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Arena<N> {
    pub const fn new() -> Self {
        Arena {
            buf: UnsafeCell::new([0; N]),
            used: AtomicUsize::new(0),
        }
    }

    /// Bytes handed out and not taken back.
    pub fn used(&self) -> usize {
        self.used.load(Relaxed)
    }

    fn base(&self) -> usize {
        self.buf.get() as usize
    }

    /// The offset of `p` in the buffer, if it is one of the arena's pieces.
    fn offset(&self, p: *mut u8) -> Option<usize> {
        (p as usize).checked_sub(self.base()).filter(|&off| off < N)
    }

    /// A piece for `layout` from the buffer, or None when it is full.
    fn claim(&self, layout: Layout) -> Option<*mut u8> {
        let base = self.base();
        let mut used = self.used.load(Relaxed);
        loop {
            let start = (base + used).checked_add(layout.align() - 1)? & !(layout.align() - 1);
            let end = (start - base).checked_add(layout.size())?;
            if end > N {
                return None;
            }
            match self.used.compare_exchange_weak(used, end, Relaxed, Relaxed) {
                Ok(_) => return Some(self.buf.get().cast::<u8>().wrapping_add(start - base)),
                Err(now) => used = now,
            }
        }
    }
}

// SAFETY: every pointer returned is either a disjoint piece of the buffer, aligned and of
// the size asked (claim), or the system allocator's; each is given back to the one that
// made it (offset tells them apart, the buffer's range being the arena's alone).
unsafe impl<const N: usize> GlobalAlloc for Arena<N> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match self.claim(layout) {
            Some(p) => p,
            // SAFETY: the caller's layout is valid and not zero-sized (alloc's contract).
            None => unsafe { System.alloc(layout) },
        }
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        match self.offset(p) {
            // The last piece is taken back; any other stays used.
            Some(off) => {
                let _ = self
                    .used
                    .compare_exchange(off + layout.size(), off, Relaxed, Relaxed);
            }
            // SAFETY: p came from System.alloc with this layout (not in the buffer).
            None => unsafe { System.dealloc(p, layout) },
        }
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Some(off) = self.offset(p) else {
            // SAFETY: p came from System.alloc with this layout; the caller's new size
            // is valid for it (realloc's contract).
            return unsafe { System.realloc(p, layout, new_size) };
        };
        // The last piece grows or shrinks where it is.
        let end = off + layout.size();
        if let Some(new_end) = off.checked_add(new_size).filter(|&e| e <= N)
            && self
                .used
                .compare_exchange(end, new_end, Relaxed, Relaxed)
                .is_ok()
        {
            return p;
        }
        if new_size <= layout.size() {
            return p;
        }
        // SAFETY: realloc's contract: the alignment is layout's (valid) and new_size,
        // rounded up to it, does not overflow isize.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: new_layout is valid and not zero-sized (new_size > layout.size()).
        let q = unsafe { self.alloc(new_layout) };
        if !q.is_null() {
            // SAFETY: p holds layout.size() bytes the caller gave up, q at least as many,
            // and they do not overlap (q is a new piece, or the system's).
            unsafe { std::ptr::copy_nonoverlapping(p, q, layout.size()) };
            // SAFETY: p is this arena's piece with this layout.
            unsafe { self.dealloc(p, layout) };
        }
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    #[test]
    fn pieces_in_order_aligned_and_the_last_taken_back() {
        let a: Box<Arena<4096>> = Box::default();
        // SAFETY: valid, non-zero layouts; each piece is given back with its layout.
        unsafe {
            let p = a.alloc(layout(3, 1));
            let q = a.alloc(layout(8, 8));
            assert_eq!(q as usize % 8, 0);
            assert_eq!(a.used(), 16);
            a.dealloc(p, layout(3, 1)); // not the last: stays used
            assert_eq!(a.used(), 16);
            a.dealloc(q, layout(8, 8)); // the last: taken back
            assert_eq!(a.used(), 8);
        }
    }

    #[test]
    fn the_last_piece_grows_in_place_and_others_move() {
        let a: Box<Arena<4096>> = Box::default();
        // SAFETY: valid, non-zero layouts; each pointer is used with its current layout.
        unsafe {
            let p = a.alloc(layout(4, 1));
            p.write_bytes(7, 4);
            let p2 = a.realloc(p, layout(4, 1), 100);
            assert_eq!(p, p2);
            assert_eq!(a.used(), 100);
            let q = a.alloc(layout(1, 1));
            let p3 = a.realloc(p2, layout(100, 1), 200);
            assert_ne!(p3, p2);
            assert_eq!(std::slice::from_raw_parts(p3, 4), &[7; 4]);
            assert!(a.used() >= 301);
            a.dealloc(q, layout(1, 1));
            a.dealloc(p3, layout(200, 1));
        }
    }

    #[test]
    fn a_full_arena_hands_over_to_the_system() {
        let a: Box<Arena<4096>> = Box::default();
        // SAFETY: valid, non-zero layouts; each piece is given back with its layout.
        unsafe {
            let p = a.alloc(layout(4000, 8));
            let q = a.alloc(layout(200, 8));
            assert!(!q.is_null());
            assert!(a.offset(q).is_none(), "the system's");
            q.write_bytes(1, 200);
            let q2 = a.realloc(q, layout(200, 8), 10_000);
            assert!(a.offset(q2).is_none());
            a.dealloc(q2, layout(10_000, 8));
            a.dealloc(p, layout(4000, 8));
            assert_eq!(a.used(), 0);
        }
    }
}
