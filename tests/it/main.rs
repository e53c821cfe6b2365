//! Integration tests: they run the real binaries in scratch directories.

mod chain;
mod clients;
mod common;
mod compat;
mod docs;
mod log;
mod scan;
mod supervise;
mod syslog;
