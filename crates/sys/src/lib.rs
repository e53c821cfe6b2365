//! The only crate of tend with `unsafe` code.
//!
//! It wraps what nix leaves unsafe — `fork`, `sigaction`, the child side of a spawn —
//! behind safe functions, one module each, and carries the toolkit's system error type.
//! Everything here is policy-free: no messages are printed and nothing exits, except the
//! child half of a spawn, which can only `_exit`.
//!
//! [`diagnose`] is the one place that says why an exec failed (a CRLF `#!` line, a
//! missing interpreter or loader, a noexec mount...): every program that execs or
//! spawns a user's program calls `diagnose::describe(path, errno)` after a failure.

pub mod diagnose;
pub mod error;
pub mod exec;
pub mod fd;
pub mod localtime;
pub mod machine;
pub mod process;
pub mod regex;
pub mod signals;

pub use error::Error;
pub use nix::errno::Errno;
