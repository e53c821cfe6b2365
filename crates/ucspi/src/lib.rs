//! UCSPI over Unix domain sockets: the socket work of tend-ipcserver-socketbinder,
//! tend-ipcserverd, tend-ipcserver and tend-ipcclient, and of tend-socklog's bind.
//!
//! [`socket`] binds a Unix socket at a path the one way the toolkit does it: a stale
//! socket file (one nobody accepts or receives on) is replaced, anything else in the way
//! (a live socket, a regular file, a directory, a symlink) is refused, never unlinked.
//! It also connects a client. [`server`] is the super-server's loop: accept on a
//! listening socket, fork a program per connection with the connection as its stdin and
//! stdout and the UCSPI variables in its environment, with s6-ipcserverd's limits and
//! signals.
//!
//! It is not an access-control layer (tend-ipcserver-access, a separate program, reads
//! rules) and not a network server: TCP is not here. Like every tend library it never
//! prints or exits; messages go through a `tend_sys::warn::Warn` sink.

pub mod access;
pub mod pty;
pub mod server;
pub mod socket;
