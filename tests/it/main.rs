//! Integration tests: they run the real binaries in scratch directories.

mod chain;
mod check;
mod clients;
mod common;
mod compat;
mod docs;
mod fuzz;
mod guest;
mod init;
mod jobs;
mod log;
mod multicall;
mod packaging;
mod parity;
mod scan;
mod summary;
mod supervise;
mod svtools;
mod syslog;
mod syslogd;
mod ucspi;
