//! The syslog front ends behind tend-socklog and tend-ucspilogd.
//!
//! What it is: the `<N>` priority prefix decoded as s6's lolsyslog does (`priority`), the
//! shaping of one datagram or stream record into one log line, with RFC 5424 decoding and
//! a JSON-lines form (`shape`), tend-socklog's single-threaded event loop over a datagram
//! socket (`socklog`), and tend-ucspilogd's stream filter (`ucspilogd`).
//! What it is not: the logger (tend-log reads our stdout), option parsing or printing
//! (the binaries do that), anything unsafe (crates/sys).

#![forbid(unsafe_code)]

pub mod priority;
pub mod shape;
pub mod socklog;
pub mod ucspilogd;
