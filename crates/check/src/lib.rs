//! Health checks: probes of a running service (exec, TCP, HTTP), readiness in
//! s6-notifyoncheck's shape, and the liveness watcher with its restart policy.
//!
//! What lives here: the probes (each attempt bounded by a deadline, a failure carried
//! with its reason), host name resolution without NSS, the readiness prober, and the
//! watcher's pure policy plus its loop. What does not: option parsing and messages (the
//! binary), the `key=value` state-file format (crates/proto's `health`). Nothing here
//! prints, exits or panics.

#![forbid(unsafe_code)]

pub mod probe;
pub mod readiness;
pub mod resolve;
pub mod watcher;

pub use tend_sys as sys;
