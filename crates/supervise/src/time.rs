//! The supervisor's clock types, used by the state machine (`core`) and the restart
//! policy (`policy`) alike: here so that neither imports the other for them.

use tend_proto::Tai64n;

/// Monotonic milliseconds.
pub type Ms = u64;

/// The current time, twice: monotonic for timers, wall clock for the status file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    pub mono: Ms,
    pub wall: Tai64n,
}
