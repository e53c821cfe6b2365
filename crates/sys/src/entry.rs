//! The C entry point's half of an executable's start, for executables built with
//! `#![no_main]`.
//!
//! Rust's own start-up (`lang_start`, before `main`) reopens any of fds 0, 1 and 2 that
//! is closed on /dev/null, and aborts where there is no /dev/null (a guest before devtmpfs
//! is mounted). A chain tool must hand its program the fds exactly as it got them (s6's
//! do: `s6-envdir D prog >&-` gives prog a closed fd 1, whose writes fail with EBADF), and
//! a program that needs an output must see that it has none (s6-socklog: "invalid
//! stdout", exit 100). So tend's executables define the C `main` themselves and call
//! [`start`], which does what lang_start did that tend relies on, and nothing else:
//!
//! - argv, kept here ([`argv`]): std reads it without lang_start only on glibc (through
//!   `.init_array`); on musl, tend's build, `std::env::args_os` would be empty.
//! - SIGPIPE ignored, so a write to a closed pipe is EPIPE, not death (std's default).
//!   Unlike std, the disposition the process inherited is remembered, and a chain tool's
//!   exec ([`restore_sigpipe`], called by `exec::exec` and `tend_env::Ready::exec`) puts
//!   it back: s6's chain tools pass SIGPIPE on as they got it (std's start-up handed the
//!   next program an ignored SIGPIPE). Spawned children get their own reset (`process`).
//! - `std::process::exit` when the program returns, which flushes stdout as lang_start's
//!   return would.
//!
//! Not done: std's stack-overflow message (an overflow is then a plain SIGSEGV) and the
//! main thread's name "main" in panic messages (tend's programs do not panic by design).

#![allow(unsafe_code)]

use std::ffi::{CStr, OsString, c_char, c_int};
use std::os::unix::ffi::OsStringExt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};

static ARGV: OnceLock<Vec<OsString>> = OnceLock::new();

/// SIGPIPE as the process got it: unknown (std's start-up ran), default, or ignored.
static SIGPIPE_AT_START: AtomicU8 = AtomicU8::new(UNKNOWN);
const UNKNOWN: u8 = 0;
const DEFAULT: u8 = 1;
const IGNORED: u8 = 2;

/// The program's argv: what the C runtime gave `main` when it went through [`start`], else
/// std's (a test harness, a glibc build with std's own `main`).
pub fn argv() -> Vec<OsString> {
    match ARGV.get() {
        Some(v) => v.clone(),
        // The one place std's argv is right: std's own main ran (a test harness).
        #[allow(clippy::disallowed_methods)]
        None => std::env::args_os().collect(),
    }
}

/// Run `program` as the executable's `main`, then exit 0 (a program exits with its own
/// code through `std::process::exit` before that).
///
/// # Safety
/// `argv` must point to `argc` pointers, each to a NUL-terminated string that stays valid
/// for the whole run: the arguments the C runtime passes to `main`.
pub unsafe fn start(argc: c_int, argv: *const *const c_char, program: fn()) -> c_int {
    let n = usize::try_from(argc).unwrap_or(0);
    let args = (0..n)
        .map(|i| {
            // SAFETY: the caller guarantees argv holds argc valid string pointers.
            let arg = unsafe { CStr::from_ptr(*argv.add(i)) };
            OsString::from_vec(arg.to_bytes().to_vec())
        })
        .collect();
    let _ = ARGV.set(args);
    use nix::sys::signal::{SigHandler, Signal, signal};
    // SAFETY: SIG_IGN installs no handler code, so no handler can run unsafely.
    let before = unsafe { signal(Signal::SIGPIPE, SigHandler::SigIgn) };
    let at_start = match before {
        Ok(SigHandler::SigIgn) => IGNORED,
        Ok(_) => DEFAULT,
        Err(_) => UNKNOWN,
    };
    SIGPIPE_AT_START.store(at_start, Ordering::Relaxed);
    program();
    std::process::exit(0)
}

/// Define the executable's C `main` as a call of [`start`] with `$program`, for a binary
/// built with `#![no_main]`: `tend_sys::c_main!(run);`.
///
/// A macro because the `main` symbol can only be defined in the executable itself; the
/// one `unsafe` it expands to is [`start`]'s, whose `# Safety` it meets: argc and argv are
/// exactly what the C runtime passes to `main`.
#[macro_export]
macro_rules! c_main {
    ($program:path) => {
        #[allow(unsafe_code)]
        // SAFETY: `main` is the symbol the C runtime calls; nothing else in the program
        // defines it (`#![no_main]`), and its signature is C's.
        #[unsafe(no_mangle)]
        extern "C" fn main(
            argc: ::std::ffi::c_int,
            argv: *const *const ::std::ffi::c_char,
        ) -> ::std::ffi::c_int {
            // SAFETY: the C runtime passes main its argc and argv, valid for the whole run.
            unsafe { $crate::entry::start(argc, argv, $program) }
        }
    };
}

/// Put SIGPIPE back as the process got it, before a chain tool's exec. Async-signal-safe
/// and allocation-free. Without [`start`] (std's start-up), nothing is known: unchanged.
pub fn restore_sigpipe() {
    if SIGPIPE_AT_START.load(Ordering::Relaxed) == DEFAULT {
        let _ = crate::signals::default(nix::sys::signal::Signal::SIGPIPE);
    }
}
