//! tend-scan — the supervision tree's root: what tend-svscan does.
//!
//! What lives here:
//! * `table`: the pure reconciliation of what a scan of the directory found against the
//!   supervisors running, one small fixed record per service (tested as a matrix, no
//!   processes);
//! * `command`: control letters and signals, turned into the scanner's wishes (pure);
//! * `scanner`: the single-threaded event loop that spawns `tend-supervise DIR` per
//!   service, holds the service→logger pipes, reaps every child, diverts signals to
//!   `.s6-svscan/SIGxxx`, and stops cleanly.
//!
//! What does not: the supervisor itself (crates/supervise), the client side writing
//! letters to `.s6-svscan/control` (crates/client, `scanctl`), anything that prints or exits
//! (the binaries do), unsafe code (crates/sys).
//!
//! The on-disk interface is s6-svscan 2.11's: a scan directory run by s6-svscan runs
//! unchanged here, and s6-svscanctl drives tend-svscan (and tend-svscanctl s6-svscan).

#![forbid(unsafe_code)]

pub mod command;
pub mod scanner;
pub mod table;

pub use scanner::{Ending, Options, StartError, Warn, exec_script, run};
