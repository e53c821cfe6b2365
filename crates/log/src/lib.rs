//! The log engine behind tend-log, tend-tai64n and tend-tai64nlocal.
//!
//! What it is: s6-log 2.11.3's script language (`script`), the pure rotation and
//! line-splitting decisions (`policy`), line rendering with TAI64N / local / RFC 3339
//! stamps and a JSON-lines form (`format`), a logdir on disk with locking, recovery,
//! rotation, processors and trimming (`logdir`), tend-log's stdin, consumed from a pipe
//! only once written (`input`), its single-threaded event loop (`engine`), and the two
//! timestamp filters (`filter`).
//! What it is not: option parsing or printing (the binaries do that); TAI64N itself
//! (crates/proto); anything unsafe (crates/sys).

#![forbid(unsafe_code)]

pub mod engine;
pub mod filter;
pub mod format;
pub mod input;
pub mod logdir;
pub mod policy;
pub mod script;

pub use engine::{Options, RunError, run};
