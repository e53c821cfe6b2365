//! Integration tests: they run the real binaries in scratch directories.

mod common;
mod scan;
mod supervise;
