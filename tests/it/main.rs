//! Integration tests: they run the real binaries in scratch directories.

mod chain;
mod common;
