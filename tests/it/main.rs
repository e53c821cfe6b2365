//! Integration tests: they run the real binaries in scratch directories.

mod chain;
mod check;
mod clients;
mod common;
mod compat;
mod docs;
mod log;
mod scan;
mod summary;
mod supervise;
