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
//! [`access`] is tend-ipcserver-access, a separate program in the chain after the server:
//! the rules by uid and gid, and the environment it hands on. [`vars`] names the UCSPI
//! variables once, for the servers that set them and the programs that read them.
//! It is not a network server: TCP is not here. Like every tend library it never
//! prints or exits; messages go through a `tend_sys::warn::Warn` sink.

pub mod access;
pub mod pty;
pub mod server;
pub mod socket;
pub mod vars;
