//! The crate of tend that holds its `unsafe` code. Every other crate forbids it; the one
//! `unsafe` outside is the C `main` of the `#![no_main]` executables, which only the
//! executable can define: sys writes it once, as the [`c_main!`] macro beside
//! [`entry::start`] and its `# Safety`, and the two binaries (bins/tend.rs,
//! bins/tend-jobs.rs) invoke it.
//!
//! It wraps what nix leaves unsafe — `fork` (checked single-threaded), `sigaction`, the
//! child side of a spawn (named steps, each an `unsafe fn` with its `# Safety`), owning
//! and borrowing fds by number (0-2 safely, any other through an `unsafe fn`), POSIX
//! `regcomp`, `localtime_r`, `crypt`, a raw `write` — behind safe functions, one module each. It
//! also holds the system facts every program shares, each written once: the exit codes
//! ([`code`]), the wait-status bits ([`wait`]),
//! deadline → poll timeout ([`deadline`]), signal names and their parsing ([`signals`]),
//! the duration grammar ([`duration`]), exec failure →
//! 126/127 ([`exec::exit_code_for`]), and the toolkit's system error type.
//! Everything here is policy-free: no messages are printed and nothing exits, except the
//! child half of a spawn, which can only `_exit`.
//!
//! Exec'ing without allocating goes through [`exec::Ready`], which owns a program's
//! strings and the NULL-terminated pointer arrays into them, so no caller handles a raw
//! pointer; the one function taking raw arrays is crate-private and `unsafe`.
//!
//! [`diagnose`] is the one place that says why an exec failed (a CRLF `#!` line, a
//! missing interpreter or loader, a noexec mount...): every program that execs or
//! spawns a user's program calls `diagnose::describe(path, errno)` after a failure.

pub mod arena;
pub mod bytes;
pub mod code;
pub mod crypt;
pub mod deadline;
pub mod diagnose;
pub mod dm;
pub mod duration;
pub mod entry;
pub mod error;
pub mod exec;
pub mod fd;
pub mod glob;
pub mod localtime;
pub mod machine;
pub mod process;
pub mod random;
pub mod regex;
pub mod signals;
pub mod wait;
pub mod warn;

pub use error::Error;
pub use nix::errno::Errno;
