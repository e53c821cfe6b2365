//! The client side of a supervisor: what tend-svc, tend-svstat, tend-svwait and tend-svok
//! do, written once.
//!
//! What lives here: sending control letters with s6-svc's checks (which failure means
//! "supervisor not listening", which means "something is wrong with supervise/"), reading
//! a service's status and computing every field s6-svstat prints (the legacy human line,
//! `-o` field lists, and tend's JSON object), and waiting for states through the `event/`
//! fifodir, subscribed to directly (no helper process). Every answer matches s6 2.11.3's
//! clients byte for byte where s6 has one; the differences are listed in the man pages.
//!
//! What does not: option parsing, messages and exit codes (the binaries), the wire
//! formats themselves (crates/proto). Nothing here prints, exits or panics.

#![forbid(unsafe_code)]

pub mod control;
mod json;
pub mod signame;
pub mod status;
pub mod wait;

pub use control::ControlError;
pub use status::{Field, FieldError, ReadError, Snapshot};
pub use wait::{Target, WaitError, Watch};
