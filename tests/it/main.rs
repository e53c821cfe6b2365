//! Integration tests: they run the real binaries in scratch directories.

mod chain;
mod clients;
mod common;
mod compat;
mod docs;
mod guest;
mod init;
mod log;
mod parity;
mod scan;
mod supervise;
