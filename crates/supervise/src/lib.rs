//! tend-supervise's library: one supervisor for one service directory, byte-compatible
//! with s6-supervise 2.11 on disk.
//!
//! `core` is the pure state machine (state × input → actions), tested without processes;
//! `policy` the pure restart policy, `time` the clock types both use (so neither imports
//! the other); `daemon` owns the files, fds and children and runs the event loop. tend-svscan execs tend-supervise;
//! it does not link this crate.

pub mod core;
pub mod daemon;
pub mod policy;
pub mod runit;
pub mod time;

pub use daemon::{Reporter, StartError, Supervisor};
