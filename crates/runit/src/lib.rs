//! runit's user-facing programs over tend: `chpst` (change a process's state, then exec)
//! and `sv` (control and query supervised services), as tend-chpst and tend-sv.
//!
//! What lives here: chpst's account grammar (`[:]user[:group...]`), its fixed order of
//! changes and its words; sv's command table, its checks and waits (with `./check`), its
//! output lines and both of its exit-code schemes (sv, and the LSB init-script mode), and a
//! reader for runit's own 20-byte `supervise/status`, so that tend-sv answers for a runsv
//! as well as for tend-supervise and s6-supervise (whose 35-byte record tend_client reads).
//!
//! What does not: the changes themselves (tend_env: envdir, credentials, limits, exec;
//! tend_proto: locks, control FIFOs), option parsing and exit (the binaries). Nothing here
//! prints to stderr or exits; sv's report lines are returned to the caller to write.

#![forbid(unsafe_code)]

pub mod chpst;
pub mod djb;
pub mod status;
pub mod sv;
