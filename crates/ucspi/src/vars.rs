//! The UCSPI environment variables, each name written once. `PROTO` names the protocol,
//! and every other variable is that name followed by a suffix: tend's Unix-socket
//! programs set `PROTO=IPC` and so `IPCREMOTEEUID`, while tend-ipcserver-access reads
//! whatever `$PROTO` says (`TCPREMOTEEUID` under a TCP server).

use std::ffi::CStr;

/// One variable: its suffix after the protocol's name, and its full name under `PROTO=IPC`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Var {
    pub suffix: &'static str,
    pub ipc: &'static str,
}

macro_rules! ucspi_vars {
    ($proto:literal = $ipc:literal; $($name:ident = $suffix:literal),* $(,)?) => {
        /// The variable that names the protocol.
        pub const PROTO: &str = $proto;
        /// The protocol's name for Unix domain sockets.
        pub const IPC: &str = $ipc;
        /// `PROTO=IPC`, as a server's child gets it.
        pub const PROTO_IPC: &CStr =
            match CStr::from_bytes_with_nul(concat!($proto, "=", $ipc, "\0").as_bytes()) {
                Ok(c) => c,
                Err(_) => panic!("a UCSPI name holds a NUL"),
            };
        $(pub const $name: Var = Var { suffix: $suffix, ipc: concat!($ipc, $suffix) };)*
    };
}

ucspi_vars! {
    "PROTO" = "IPC";
    REMOTEEUID = "REMOTEEUID",
    REMOTEEGID = "REMOTEEGID",
    REMOTEPATH = "REMOTEPATH",
    CONNNUM = "CONNNUM",
    LOCALPATH = "LOCALPATH",
}

/// tend-vsockserver's: `PROTO=VSOCK`, the peer's context id and port, and ours.
pub const PROTO_VSOCK: &CStr = c"PROTO=VSOCK";
pub const VSOCK_REMOTECID: &str = "VSOCKREMOTECID";
pub const VSOCK_REMOTEPORT: &str = "VSOCKREMOTEPORT";
pub const VSOCK_LOCALPORT: &str = "VSOCKLOCALPORT";

/// What a server sets for each connection, besides `PROTO` (a client sets `LOCALPATH`).
pub const SERVER: [Var; 4] = [REMOTEEUID, REMOTEEGID, REMOTEPATH, CONNNUM];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(REMOTEEUID.ipc, "IPCREMOTEEUID");
        assert_eq!(LOCALPATH.suffix, "LOCALPATH");
        assert_eq!(PROTO_IPC, c"PROTO=IPC");
    }
}
