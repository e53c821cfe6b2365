//! s6's on-disk protocol, written once for the supervisor and every client.
//!
//! What lives here: TAI64N stamps, the 35-byte `supervise/status` record, the
//! `supervise/control` and `.s6-svscan/control` letters, the fcntl lock that says "a supervisor is running", the
//! `event/` fifodir (subscribe and notify), `death_tally`, the service directory's
//! file names, and the one JSON string escaper. Fixed-size codecs and atomic writes; no policy, no printing.
//! What does not: the supervisor's state machine (crates/supervise) and anything that
//! forks (crates/sys).

#![forbid(unsafe_code)]

pub mod control;
pub mod death_tally;
pub mod fifodir;
pub mod health;
pub mod json;
pub mod lock;
pub mod orphan;
pub mod perms;
pub mod servicedir;
pub mod spawn_error;
pub mod status;
pub mod tai64n;

pub use control::{ControlCommand, ScanCommand};
pub use status::{StatusFile, StatusRecord};
pub use tai64n::Tai64n;
