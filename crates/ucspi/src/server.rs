//! The super-server's loop (tend-ipcserverd, and tend-ipcserver after its bind): accept
//! on a listening Unix stream socket, fork a program per connection with the connection
//! as its fds 0 and 1 and the UCSPI variables set, as s6-ipcserverd.
//!
//! One thread, one poll over a signalfd and the listening socket. Everything a
//! connection needs is allocated at start-up: the child table and the per-uid counts
//! (`maxconn` entries each), the argv and envp pointer arrays, and the buffers the five
//! UCSPI variables are written into before each fork. So a connection costs an accept, a
//! getsockopt, a getpeername, a fork and a close, and no allocation (at the default
//! verbosity; `-v 2`'s per-connection lines are formatted).
//!
//! Limits, as s6-ipcserverd's: at `maxconn` children the socket is not polled (clients
//! wait in the kernel's backlog until a child ends); a connection from a uid that already
//! has `localmax` children is closed at once. Signals: SIGTERM stops accepting (the
//! socket is closed, so new clients are refused) and the server exits when its last
//! child has ended (s6-ipcserverd exits at once, leaving them); SIGQUIT sends the children
//! SIGTERM and SIGCONT, then exits; SIGABRT sends them SIGKILL, then exits; SIGHUP sends
//! them SIGTERM and SIGCONT and goes on.
//!
//! The same loop serves tend-vsockserver's AF_VSOCK socket: the [`Family`] decides only
//! what is learnt about a peer and which variables say it (a vsock peer has no
//! credentials, so no per-uid count); limits, signals and fd handling are the same.

use crate::vars;
use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{Signal, kill};
use nix::sys::socket::{
    SockFlag, UnixAddr, VsockAddr, getpeername, getsockname, getsockopt, sockopt,
};
use nix::sys::stat::SFlag;
use nix::unistd::Pid;
use std::ffi::{CString, OsString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use tend_sys::Error;
use tend_sys::exec::{Prepared, Ready};
use tend_sys::process::{SpawnOptions, spawn_unreported};
use tend_sys::wait::{Ended, reap};
use tend_sys::warn::Warn;

/// s6-ipcserverd's defaults and ceiling.
pub const DEFAULT_MAXCONN: usize = 40;
pub const MAXCONN_LIMIT: usize = 1000;

/// The listening socket's address family: what a peer is and which variables say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// PROTO=IPC, IPCREMOTEEUID, IPCREMOTEEGID, IPCREMOTEPATH, IPCCONNNUM.
    Unix,
    /// PROTO=VSOCK, VSOCKREMOTECID, VSOCKREMOTEPORT, VSOCKLOCALPORT (no credentials).
    Vsock,
}

const UNIX_VARS: [&[u8]; 5] = [
    vars::PROTO.as_bytes(),
    vars::REMOTEEUID.ipc.as_bytes(),
    vars::REMOTEEGID.ipc.as_bytes(),
    vars::REMOTEPATH.ipc.as_bytes(),
    vars::CONNNUM.ipc.as_bytes(),
];
const VSOCK_VARS: [&[u8]; 4] = [
    vars::PROTO.as_bytes(),
    vars::VSOCK_REMOTECID.as_bytes(),
    vars::VSOCK_REMOTEPORT.as_bytes(),
    vars::VSOCK_LOCALPORT.as_bytes(),
];

impl Family {
    /// The variables the server sets; any inherited value is dropped.
    fn vars(self) -> &'static [&'static [u8]] {
        match self {
            Family::Unix => &UNIX_VARS,
            Family::Vsock => &VSOCK_VARS,
        }
    }

    /// The program named in a child's exec failure.
    fn server_name(self) -> &'static str {
        match self {
            Family::Unix => "tend-ipcserverd",
            Family::Vsock => "tend-vsockserver",
        }
    }
}

/// What the command line asks for.
#[derive(Debug, Clone)]
pub struct Options {
    /// The listening socket's family (Unix for tend-ipcserverd).
    pub family: Family,
    /// 0 quiet, 1 warnings and denials, 2 every connection.
    pub verbosity: u32,
    /// Look up the client's credentials (SO_PEERCRED); `-P` turns it off.
    pub credentials: bool,
    /// Most children at once (`-c`).
    pub maxconn: usize,
    /// Most children for one uid (`-C`).
    pub localmax: usize,
    /// Write a newline on fd 1, then close it, once accepting (`-1`).
    pub ready: bool,
}

impl Default for Options {
    /// s6-ipcserverd's defaults: warnings, credentials looked up, 40 children, 40 per uid.
    fn default() -> Options {
        Options {
            family: Family::Unix,
            verbosity: 1,
            credentials: true,
            maxconn: DEFAULT_MAXCONN,
            localmax: DEFAULT_MAXCONN,
            ready: false,
        }
    }
}

/// Why the server could not run.
#[derive(Debug)]
pub enum ServeError {
    /// fd 0 is not a socket (usage, as s6-ipcserverd: exit 100).
    NotASocket,
    Sys(Error),
}

impl From<Error> for ServeError {
    fn from(e: Error) -> ServeError {
        ServeError::Sys(e)
    }
}

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServeError::NotASocket => f.write_str("stdin is not a socket"),
            ServeError::Sys(e) => e.fmt(f),
        }
    }
}

impl ServeError {
    pub fn code(&self) -> i32 {
        match self {
            ServeError::NotASocket => tend_sys::code::USAGE,
            ServeError::Sys(e) => e.code(),
        }
    }
}

/// tend-ipcserverd's way in: the listening socket is fd 0. It is taken over (fd 0 then
/// reads /dev/null), so that closing it at SIGTERM really closes it.
pub fn serve_stdin(prog: &[OsString], o: &Options, say: &dyn Warn) -> Result<(), ServeError> {
    let fd0 = tend_sys::fd::stdio(0).map_err(|_| ServeError::NotASocket)?;
    let st = nix::sys::stat::fstat(0).map_err(|e| Error::new("stat stdin", e))?;
    if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT != SFlag::S_IFSOCK {
        return Err(ServeError::NotASocket);
    }
    let listen = fd0
        .try_clone_to_owned()
        .map_err(|e| Error::io("take over", "stdin", &e))?;
    let null = tend_sys::fd::open(
        "/dev/null",
        nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .map_err(|e| Error::at("open", "/dev/null", e))?;
    nix::unistd::dup2(null.as_raw_fd(), 0).map_err(|e| Error::new("replace stdin", e))?;
    serve(listen, prog, o, say)
}

/// Serve `listen` (a bound, listening stream socket) until a signal ends the server.
pub fn serve(
    listen: OwnedFd,
    prog: &[OsString],
    o: &Options,
    say: &dyn Warn,
) -> Result<(), ServeError> {
    let flags = nix::fcntl::fcntl(listen.as_raw_fd(), nix::fcntl::FcntlArg::F_GETFL)
        .map_err(|e| Error::new("get socket flags", e))?;
    let nonblocking = nix::fcntl::OFlag::from_bits_truncate(flags) | nix::fcntl::OFlag::O_NONBLOCK;
    nix::fcntl::fcntl(
        listen.as_raw_fd(),
        nix::fcntl::FcntlArg::F_SETFL(nonblocking),
    )
    .map_err(|e| Error::new("set socket non-blocking", e))?;
    tend_sys::signals::ignore(Signal::SIGPIPE).map_err(|e| Error::new("ignore SIGPIPE", e))?;
    let sigfd = tend_sys::signals::signalfd(&[
        Signal::SIGCHLD,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGQUIT,
        Signal::SIGABRT,
    ])
    .map_err(|e| Error::new("trap signals", e))?;
    let mut server = Server::new(listen, prog, o, say)?;
    if o.verbosity >= 2 {
        say.say("info", &"starting");
        server.status();
    }
    if o.ready {
        // A readiness reader that went away is its own problem; the server runs on.
        let _ = tend_sys::fd::write_raw(1, b"\n");
        if let Ok(null) = tend_sys::fd::open(
            "/dev/null",
            nix::fcntl::OFlag::O_WRONLY | nix::fcntl::OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        ) {
            let _ = nix::unistd::dup2(null.as_raw_fd(), 1);
        }
    }
    server.run(sigfd.as_fd())?;
    if o.verbosity >= 2 {
        say.say("info", &"exiting");
    }
    Ok(())
}

/// One child: its pid and the uid it counts against.
#[derive(Clone, Copy)]
struct Child {
    pid: Pid,
    uid: u32,
}

/// A `NAME=value` C string rewritten in place before each fork (its capacity is
/// reserved at start-up, so rewriting never allocates).
struct Slot(Vec<u8>);

impl Slot {
    fn new(name: &[u8], room: usize) -> Slot {
        let mut v = Vec::with_capacity(name.len() + 1 + room + 1);
        v.extend_from_slice(name);
        v.push(b'=');
        v.push(0);
        Slot(v)
    }

    fn name_len(&self) -> usize {
        self.0.iter().position(|&b| b == b'=').unwrap_or(0) + 1
    }

    /// Set the value to `bytes` (cut to the room reserved; NULs cannot be in a value).
    fn set(&mut self, bytes: &[u8]) {
        let keep = self.name_len();
        let room = self.0.capacity() - keep - 1;
        self.0.truncate(keep);
        self.0.extend(
            bytes
                .iter()
                .take(room)
                .map(|&b| if b == 0 { b'?' } else { b }),
        );
        self.0.push(0);
    }

    fn set_num(&mut self, n: u32) {
        let mut buf = [0u8; 10];
        let mut i = buf.len();
        let mut n = n;
        loop {
            i -= 1;
            buf[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.set(&buf[i..]);
    }

    /// `NAME=value`, without the NUL.
    fn text(&self) -> &[u8] {
        &self.0[..self.0.len() - 1]
    }
}

struct Server<'a> {
    listen: Option<OwnedFd>,
    o: &'a Options,
    say: &'a dyn Warn,
    children: Vec<Child>,
    /// (uid, live children of that uid).
    per_uid: Vec<(u32, u32)>,
    /// The program and the inherited environment without the UCSPI variables, which are
    /// set as its environment's tail before each spawn.
    ready: Ready,
    euid: Slot,
    egid: Slot,
    path: Slot,
    connnum: Slot,
    cid: Slot,
    rport: Slot,
    lport: Slot,
    proto: CString,
    spawn: SpawnOptions,
    exec_failed: [&'static str; 1],
    /// accept failed for lack of fds: do not poll the socket until a child ends (it would
    /// stay readable, and the loop would spin).
    starved: bool,
    stopping: bool,
}

impl<'a> Server<'a> {
    fn new(
        listen: OwnedFd,
        prog: &[OsString],
        o: &'a Options,
        say: &'a dyn Warn,
    ) -> Result<Server<'a>, Error> {
        let env: Vec<(OsString, OsString)> = std::env::vars_os()
            .filter(|(k, _)| !o.family.vars().contains(&k.as_bytes()))
            .collect();
        let prepared =
            Prepared::new(prog, &env).map_err(|e| Error::new("prepare the program", e))?;
        let mut ready = Ready::new(prepared);
        // Room for every UCSPI variable at once (the longest, IPCREMOTEPATH, is at most
        // 14 + 108 bytes), so no spawn grows the arrays or the strings.
        let room: &[&[u8]] = &[&[b'x'; 128]];
        ready.set_env_tail(&[room; 5][..o.family.vars().len()]);
        // The one message a child writes if its exec fails; leaked once, at start-up, so
        // the child can print it without allocating.
        let words: &'static str = Box::leak(
            format!(
                "{}: fatal: unable to exec {}: ",
                o.family.server_name(),
                String::from_utf8_lossy(prog.first().map_or(&b""[..], |p| p.as_bytes()))
            )
            .into_boxed_str(),
        );
        Ok(Server {
            listen: Some(listen),
            o,
            say,
            children: Vec::with_capacity(o.maxconn),
            per_uid: Vec::with_capacity(o.maxconn),
            ready,
            euid: Slot::new(vars::REMOTEEUID.ipc.as_bytes(), 10),
            egid: Slot::new(vars::REMOTEEGID.ipc.as_bytes(), 10),
            path: Slot::new(vars::REMOTEPATH.ipc.as_bytes(), 108),
            connnum: Slot::new(vars::CONNNUM.ipc.as_bytes(), 10),
            cid: Slot::new(vars::VSOCK_REMOTECID.as_bytes(), 10),
            rport: Slot::new(vars::VSOCK_REMOTEPORT.as_bytes(), 10),
            lport: Slot::new(vars::VSOCK_LOCALPORT.as_bytes(), 10),
            proto: match o.family {
                Family::Unix => vars::PROTO_IPC.to_owned(),
                Family::Vsock => vars::PROTO_VSOCK.to_owned(),
            },
            spawn: SpawnOptions {
                fds: vec![(-1, 0), (-1, 1)],
                ..Default::default()
            },
            exec_failed: [words],
            starved: false,
            stopping: false,
        })
    }

    fn run(&mut self, sigfd: BorrowedFd) -> Result<(), Error> {
        loop {
            if self.stopping && self.children.is_empty() {
                return Ok(());
            }
            let accepting = !self.starved && self.children.len() < self.o.maxconn;
            let mut fds = [
                PollFd::new(sigfd, PollFlags::POLLIN),
                PollFd::new(sigfd, PollFlags::empty()),
            ];
            let n = match (&self.listen, accepting) {
                (Some(l), true) => {
                    fds[1] = PollFd::new(l.as_fd(), PollFlags::POLLIN);
                    2
                }
                _ => 1,
            };
            match poll(&mut fds[..n], PollTimeout::NONE) {
                Ok(_) | Err(Errno::EINTR) => {}
                Err(e) => return Err(Error::new("poll", e)),
            }
            let readable = |f: &PollFd| f.revents().is_some_and(|r| !r.is_empty());
            let (sig, conn) = (readable(&fds[0]), n == 2 && readable(&fds[1]));
            if sig && self.signals(sigfd)? {
                return Ok(());
            }
            if conn {
                self.accept_all();
            }
        }
    }

    /// Take every pending signal; true when the server must exit now.
    fn signals(&mut self, sigfd: BorrowedFd) -> Result<bool, Error> {
        let mut buf = [0u8; std::mem::size_of::<libc::signalfd_siginfo>()];
        loop {
            match nix::unistd::read(sigfd.as_raw_fd(), &mut buf) {
                Ok(n) if n == buf.len() => {}
                Ok(_) | Err(Errno::EAGAIN) => return Ok(false),
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(Error::new("read signals", e)),
            }
            let signo = u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]) as i32;
            match Signal::try_from(signo) {
                Ok(Signal::SIGCHLD) => self.reap(),
                Ok(Signal::SIGTERM) => {
                    if self.o.verbosity >= 2 {
                        self.say.say(
                            "info",
                            &format_args!(
                                "received SIGTERM, waiting for {} children",
                                self.children.len()
                            ),
                        );
                    }
                    self.listen = None;
                    self.stopping = true;
                }
                Ok(Signal::SIGHUP) => self.signal_children(&[Signal::SIGTERM, Signal::SIGCONT]),
                Ok(Signal::SIGQUIT) => {
                    self.signal_children(&[Signal::SIGTERM, Signal::SIGCONT]);
                    return Ok(true);
                }
                Ok(Signal::SIGABRT) => {
                    self.signal_children(&[Signal::SIGKILL]);
                    return Ok(true);
                }
                _ => {}
            }
        }
    }

    fn signal_children(&self, sigs: &[Signal]) {
        for c in &self.children {
            for s in sigs {
                let _ = kill(c.pid, *s);
            }
        }
    }

    fn reap(&mut self) {
        while let Ok(Some((pid, wstat))) = reap(None) {
            let Some(i) = self.children.iter().position(|c| c.pid == pid) else {
                continue;
            };
            let child = self.children.swap_remove(i);
            self.starved = false;
            if self.o.credentials
                && let Some(j) = self.per_uid.iter().position(|(u, _)| *u == child.uid)
            {
                self.per_uid[j].1 -= 1;
                if self.per_uid[j].1 == 0 {
                    self.per_uid.swap_remove(j);
                }
            }
            if self.o.verbosity >= 2 {
                let uid = Uid(self.o.credentials.then_some(child.uid));
                let (what, n) = match wstat.ended() {
                    Ended::Exited(c) => ("exitcode", c),
                    Ended::Signaled(s) => ("signal", s),
                };
                self.say.say(
                    "info",
                    &format_args!("end pid {} uid {uid} {what} {n}", pid.as_raw()),
                );
                self.status();
            }
        }
    }

    fn status(&self) {
        self.say.say(
            "info",
            &format_args!("status: {}/{}", self.children.len(), self.o.maxconn),
        );
    }

    fn accept_all(&mut self) {
        while self.children.len() < self.o.maxconn {
            let Some(listen) = &self.listen else { return };
            match tend_sys::fd::accept(listen.as_fd(), SockFlag::SOCK_CLOEXEC) {
                Ok(conn) => self.connection(conn),
                Err(Errno::EAGAIN) => return,
                Err(Errno::EINTR | Errno::ECONNABORTED) => {}
                Err(e) => {
                    if matches!(
                        e,
                        Errno::EMFILE | Errno::ENFILE | Errno::ENOBUFS | Errno::ENOMEM
                    ) {
                        self.starved = !self.children.is_empty();
                    }
                    if self.o.verbosity >= 1 {
                        self.say
                            .warn(&format_args!("unable to accept: {}", e.desc()));
                    }
                    return;
                }
            }
        }
    }

    fn connection(&mut self, conn: OwnedFd) {
        if self.o.family == Family::Vsock {
            self.describe_vsock(&conn);
            let (proto, cid) = (self.proto.as_bytes(), self.cid.text());
            let (rport, lport) = (self.rport.text(), self.lport.text());
            self.ready
                .set_env_tail(&[&[proto], &[cid], &[rport], &[lport]]);
            self.start(&conn, None, None, None, 0);
            return;
        }
        let (uid, gid) = if self.o.credentials {
            match getsockopt(&conn, sockopt::PeerCredentials) {
                Ok(c) => (Some(c.uid()), Some(c.gid())),
                Err(e) => {
                    if self.o.verbosity >= 1 {
                        self.say.warn(&format_args!(
                            "unable to get the client's credentials: {}",
                            e.desc()
                        ));
                    }
                    return;
                }
            }
        } else {
            (None, None)
        };
        let mut slot = uid.and_then(|u| self.per_uid.iter().position(|(v, _)| *v == u));
        let mut count = slot.map_or(0, |j| self.per_uid[j].1) + 1;
        if uid.is_some() && count as usize > self.o.localmax {
            // Children that ended while this burst was being accepted still count until
            // reaped, and their SIGCHLD waits behind the accepts: reap them first, as
            // s6-ipcserverd takes its signals before each accept.
            self.reap();
            slot = uid.and_then(|u| self.per_uid.iter().position(|(v, _)| *v == u));
            count = slot.map_or(0, |j| self.per_uid[j].1) + 1;
        }
        if uid.is_some() && count as usize > self.o.localmax {
            if self.o.verbosity >= 1 {
                self.say.say(
                    "info",
                    &format_args!(
                        "deny {}:{} count {}/{}",
                        Uid(uid),
                        Uid(gid),
                        count - 1,
                        self.o.localmax
                    ),
                );
            }
            return;
        }
        match (uid, gid) {
            (Some(u), Some(g)) => {
                self.euid.set_num(u);
                self.egid.set_num(g);
                self.connnum.set_num(count);
            }
            _ => self.connnum.set(b""),
        }
        match getpeername::<UnixAddr>(conn.as_raw_fd()) {
            Ok(a) => match (a.path(), a.as_abstract()) {
                (Some(p), _) => self.path.set(p.as_os_str().as_bytes()),
                (None, Some(name)) => self.path.set(name),
                _ => self.path.set(b""),
            },
            Err(_) => self.path.set(b""),
        }
        let (proto, euid, egid) = (self.proto.as_bytes(), self.euid.text(), self.egid.text());
        let (path, connnum) = (self.path.text(), self.connnum.text());
        if uid.is_some() {
            self.ready
                .set_env_tail(&[&[proto], &[euid], &[egid], &[path], &[connnum]]);
        } else {
            self.ready.set_env_tail(&[&[proto], &[path], &[connnum]]);
        }
        self.start(&conn, uid, gid, slot, count);
    }

    /// Set the vsock variables from the peer's and the local address (empty when the
    /// kernel cannot say: the connection is still served).
    fn describe_vsock(&mut self, conn: &OwnedFd) {
        match getpeername::<VsockAddr>(conn.as_raw_fd()) {
            Ok(a) => {
                self.cid.set_num(a.cid());
                self.rport.set_num(a.port());
            }
            Err(_) => {
                self.cid.set(b"");
                self.rport.set(b"");
            }
        }
        match getsockname::<VsockAddr>(conn.as_raw_fd()) {
            Ok(a) => self.lport.set_num(a.port()),
            Err(_) => self.lport.set(b""),
        }
    }

    /// Fork the program on `conn` (its environment tail already set) and count the child.
    fn start(
        &mut self,
        conn: &OwnedFd,
        uid: Option<u32>,
        gid: Option<u32>,
        slot: Option<usize>,
        count: u32,
    ) {
        let raw = conn.as_raw_fd();
        self.spawn.fds[0].0 = raw;
        self.spawn.fds[1].0 = raw;
        match spawn_unreported(&self.ready, &self.spawn, &self.exec_failed) {
            Ok(pid) => {
                let uid_key = uid.unwrap_or(u32::MAX);
                self.children.push(Child { pid, uid: uid_key });
                if uid.is_some() {
                    match slot {
                        Some(j) => self.per_uid[j].1 = count,
                        None => self.per_uid.push((uid_key, 1)),
                    }
                }
                if self.o.verbosity >= 2 {
                    self.say.say(
                        "info",
                        &format_args!(
                            "allow {}:{} pid {} count {}/{}",
                            Uid(uid),
                            Uid(gid),
                            pid.as_raw(),
                            Uid(uid.map(|_| count)),
                            self.o.localmax
                        ),
                    );
                    self.status();
                }
            }
            Err(e) => {
                if self.o.verbosity >= 1 {
                    self.say.warn(&format_args!("unable to fork: {}", e.desc()));
                }
            }
        }
    }
}

/// A number, or `?` when credentials are not looked up (as s6-ipcserverd prints them).
struct Uid(Option<u32>);

impl std::fmt::Display for Uid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(n) => write!(f, "{n}"),
            None => f.write_str("?"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_rewrite_in_place() {
        let mut s = Slot::new(b"IPCCONNNUM", 10);
        let cap = s.0.capacity();
        s.set_num(0);
        assert_eq!(s.0, b"IPCCONNNUM=0\0");
        s.set_num(u32::MAX);
        assert_eq!(s.0, b"IPCCONNNUM=4294967295\0");
        s.set(b"");
        assert_eq!(s.0, b"IPCCONNNUM=\0");
        let mut p = Slot::new(b"IPCREMOTEPATH", 4);
        p.set(b"/a\0bcdefg");
        assert_eq!(p.0, b"IPCREMOTEPATH=/a?b\0");
        assert_eq!(s.0.capacity(), cap);
    }
}
