//! The sd_notify bridge: a datagram socket whose address goes into `NOTIFY_SOCKET`, and a
//! listener process that turns the daemon's `READY=1` into s6's readiness notification (a
//! newline on the notification fd).
//!
//! The daemon keeps the pid the supervisor knows (it is the process that execs); the
//! listener is a grandchild, so the daemon never has to reap it. The listener waits on the
//! socket and on a pidfd of the daemon, so it leaves as soon as the daemon dies.
//! Datagrams are taken only from the daemon itself, root, and processes running as the
//! daemon's user (SCM_CREDENTIALS): an abstract socket is visible to the whole network
//! namespace.

use crate::sys::Error;
use crate::sys::process::{Forked, fork};
use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::socket::{
    AddressFamily, ControlMessageOwned, MsgFlags, SockFlag, SockType, UnixAddr, bind, getsockname,
    recvmsg, setsockopt, socket, sockopt,
};
use nix::sys::stat::Mode;
use std::ffi::OsString;
use std::io::IoSliceMut;
use std::io::Write as _;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, Instant};
use tend_proto::health;
use tend_proto::servicedir::within::{
    NOTIFY_STATE as NOTIFY_NAME, NOTIFY_STATE_NEW as NOTIFY_NEW, WATCHDOG_STATE as WATCHDOG_NAME,
    WATCHDOG_STATE_NEW as WATCHDOG_NEW,
};

/// Parse the contents of `notification-fd`: a decimal number, optionally followed by a
/// newline.
pub fn parse_fd(text: &[u8]) -> Option<RawFd> {
    let t = text.strip_suffix(b"\n").unwrap_or(text);
    if t.is_empty() || t.len() > 9 || !t.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(t).ok()?.parse().ok()
}

/// The fd number in `dir/notification-fd`.
pub fn fd_from_file(dir: &Path) -> Result<RawFd, Error> {
    let p = dir.join(tend_proto::servicedir::NOTIFICATION_FD);
    // Read the one safe way: a FIFO planted there must not hang the reader.
    let text = tend_sys::fd::read_regular(&p, 64).map_err(|e| match e {
        tend_sys::fd::NotRead::Sys(e) => Error::at("read", &p, e),
        tend_sys::fd::NotRead::NotAFile(_) => Error::at("parse", &p, Errno::EINVAL),
    })?;
    parse_fd(&text).ok_or(Error::at("parse", &p, Errno::EINVAL))
}

/// Whether an sd_notify datagram says the daemon is ready: one of its newline-separated
/// assignments is exactly `READY=1`.
pub fn is_ready(msg: &[u8]) -> bool {
    parse_message(msg).ready
}

/// The bound socket, before the fork.
#[derive(Debug)]
pub struct Socket {
    fd: OwnedFd,
    /// The value for NOTIFY_SOCKET (`@` + the abstract name).
    pub address: OsString,
}

/// Check that the notification fd is open, then create a close-on-exec datagram socket
/// with an autobound abstract address. The check comes first: the socket takes the lowest
/// free fd, which could be the very number the caller named.
pub fn socket_bind(notify_fd: RawFd) -> Result<Socket, Error> {
    crate::sys::fd::check_open(notify_fd).map_err(|e| Error::new("use the notification fd", e))?;
    let fd = socket(
        AddressFamily::Unix,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
    .map_err(|e| Error::new("create socket", e))?;
    setsockopt(&fd, sockopt::PassCred, &true).map_err(|e| Error::new("setsockopt", e))?;
    bind(fd.as_raw_fd(), &UnixAddr::new_unnamed()).map_err(|e| Error::new("bind socket", e))?;
    let addr: UnixAddr = getsockname(fd.as_raw_fd()).map_err(|e| Error::new("getsockname", e))?;
    let name = addr
        .as_abstract()
        .ok_or(Error::new("bind socket", Errno::EAFNOSUPPORT))?;
    let mut address = OsString::from("@");
    address.push(std::ffi::OsStr::new(
        std::str::from_utf8(name).map_err(|_| Error::new("bind socket", Errno::EINVAL))?,
    ));
    Ok(Socket { fd, address })
}

/// Which process we are after [`split`].
#[derive(Debug)]
pub enum Role {
    /// The original process: exec the daemon now.
    Daemon,
    /// The short-lived middle child: exit 0 at once.
    Intermediate,
    /// The grandchild that listens for the daemon's whole life.
    Listener(Listener),
}

/// The listener's state.
#[derive(Debug)]
pub struct Listener {
    socket: OwnedFd,
    daemon: Option<OwnedFd>,
    daemon_pid: i32,
    /// `/proc/PID` of the daemon: its owner is the daemon's effective uid.
    daemon_proc: std::path::PathBuf,
    notify_fd: Option<RawFd>,
    watchdog: Option<Duration>,
    /// `./supervise`, when the listener runs in a service directory.
    supervise: Option<OwnedFd>,
}

/// Fork the listener off. The daemon side closes the notification fd (the listener
/// alone writes to it) and keeps no copy of the socket (it is close-on-exec).
/// `watchdog`: kill the daemon with SIGABRT when WATCHDOG=1 pings stop for that long.
pub fn split(sock: Socket, notify_fd: RawFd, watchdog: Option<Duration>) -> Result<Role, Error> {
    crate::sys::fd::check_open(notify_fd).map_err(|e| Error::new("use the notification fd", e))?;
    let me = nix::unistd::getpid();
    let pidfd = rustix::process::Pid::from_raw(me.as_raw())
        .and_then(|p| rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).ok());
    match fork().map_err(|e| Error::new("fork", e))? {
        Forked::Parent(child) => {
            let _ = crate::sys::wait::wait(Some(child));
            drop(sock);
            drop(pidfd);
            let _ = nix::unistd::close(notify_fd);
            Ok(Role::Daemon)
        }
        Forked::Child => match fork() {
            Ok(Forked::Child) => {
                let supervise = crate::sys::fd::open(
                    tend_proto::servicedir::SUPERVISE,
                    OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
                    Mode::empty(),
                )
                .ok();
                Ok(Role::Listener(Listener {
                    socket: sock.fd,
                    daemon: pidfd,
                    daemon_pid: me.as_raw(),
                    daemon_proc: format!("/proc/{}", me.as_raw()).into(),
                    notify_fd: Some(notify_fd),
                    watchdog,
                    supervise,
                }))
            }
            _ => Ok(Role::Intermediate),
        },
    }
}

/// How the listener ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// READY=1 arrived and the newline was written, and the listener cannot watch the
    /// daemon's death (no pidfd), so it leaves rather than risk outliving it.
    Ready,
    /// The daemon exited.
    DaemonDied,
}

/// What one datagram asks for.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Message<'a> {
    pub ready: bool,
    pub status: Option<&'a [u8]>,
    pub watchdog_ping: bool,
    /// `WATCHDOG=trigger`: the daemon asks to be treated as hung.
    pub watchdog_trigger: bool,
}

/// Parse an sd_notify datagram; unknown assignments (STOPPING=1, MAINPID=...) are ignored.
pub fn parse_message(msg: &[u8]) -> Message<'_> {
    let mut m = Message::default();
    for line in msg.split(|&b| b == b'\n') {
        match line {
            b"READY=1" => m.ready = true,
            b"WATCHDOG=1" => m.watchdog_ping = true,
            b"WATCHDOG=trigger" => m.watchdog_trigger = true,
            _ => {
                if let Some(text) = line.strip_prefix(b"STATUS=") {
                    m.status = Some(text);
                }
            }
        }
    }
    m
}

impl Listener {
    /// Whether a sender is trusted: the daemon itself (whatever its uid now), root, or
    /// the daemon's current effective user (the owner of /proc/PID; the pid rule keeps a
    /// daemon that dropped privileges itself trusted even where a non-dumpable process's
    /// /proc entries show as root's).
    fn trusted(&self, pid: i32, uid: u32) -> bool {
        if pid == self.daemon_pid || uid == 0 {
            return true;
        }
        std::fs::metadata(&self.daemon_proc)
            .map(|m| m.uid() == uid)
            .unwrap_or(false)
    }

    /// Write the newline once, then close the fd so the reader sees the end.
    fn signal_ready(&mut self) -> Result<(), Error> {
        let Some(nfd) = self.notify_fd.take() else {
            return Ok(());
        };
        crate::sys::fd::write_all_raw(nfd, b"\n")
            .map_err(|e| Error::new("write to the notification fd", e))?;
        let _ = nix::unistd::close(nfd);
        Ok(())
    }

    /// Replace a state file under supervise/ (best effort: a failure must not stop the
    /// listener, the daemon matters more than the record).
    fn record(&self, tmp: &std::ffi::CStr, name: &std::ffi::CStr, data: &[u8]) {
        if let Some(dir) = &self.supervise {
            let _ = tend_proto::status::write_atomic_at(dir, tmp, name, data);
        }
    }

    fn record_status(&self, buf: &mut Vec<u8>, text: &[u8]) {
        buf.clear();
        health::put_num(buf, "pid", self.daemon_pid as u64);
        health::put(buf, "status", text);
        self.record(NOTIFY_NEW, NOTIFY_NAME, buf);
    }

    fn kill_daemon(&self, sig: rustix::process::Signal) {
        if let Some(pidfd) = &self.daemon {
            let _ = rustix::process::pidfd_send_signal(pidfd, sig);
        }
    }

    /// Listen until the daemon dies: READY=1 from a trusted sender writes the newline,
    /// STATUS= is recorded, WATCHDOG=1 rearms the watchdog. Allocation-free per datagram
    /// except the trust check's stat of a sender that is not the daemon.
    pub fn run(mut self) -> Result<Ended, Error> {
        let mut buf = [0u8; 4096];
        let mut out: Vec<u8> = Vec::with_capacity(buf.len() + 64);
        let mut cmsg = nix::cmsg_space!(nix::sys::socket::UnixCredentials);
        if self.daemon.is_none() {
            return self.run_until_ready(&mut buf, &mut cmsg);
        }
        // Like systemd, the watchdog runs from the start, not from READY=1.
        let mut deadline = self.watchdog.map(|d| Instant::now() + d);
        // After SIGABRT the daemon gets one more period before SIGKILL.
        let mut aborted = false;
        loop {
            let timeout = crate::sys::deadline::poll_timeout(deadline, Instant::now());
            let daemon_fd = self
                .daemon
                .as_ref()
                .map_or(self.socket.as_fd(), |d| d.as_fd());
            let mut fds = [
                PollFd::new(self.socket.as_fd(), PollFlags::POLLIN),
                PollFd::new(daemon_fd, PollFlags::POLLIN),
            ];
            let n = match poll(&mut fds, timeout) {
                Ok(n) => n,
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(Error::new("poll", e)),
            };
            let daemon_gone = fds[1].revents().is_some_and(|r| !r.is_empty());
            let readable = fds[0].revents().is_some_and(|r| !r.is_empty());
            if n == 0 {
                if let (Some(period), Some(_)) = (self.watchdog, deadline) {
                    if aborted {
                        self.kill_daemon(rustix::process::Signal::KILL);
                        deadline = None;
                    } else {
                        out.clear();
                        health::put_num(&mut out, "pid", self.daemon_pid as u64);
                        health::put_num(&mut out, "time", health::unix_now());
                        let _ = writeln!(
                            out,
                            "reason=no WATCHDOG=1 for {} ms: killed with SIGABRT",
                            period.as_millis()
                        );
                        self.record(WATCHDOG_NEW, WATCHDOG_NAME, &out);
                        self.kill_daemon(rustix::process::Signal::ABORT);
                        aborted = true;
                        deadline = Some(Instant::now() + period);
                    }
                }
                continue;
            }
            if readable {
                if let Some((len, pid, uid)) = receive(&self.socket, &mut buf, &mut cmsg)?
                    && self.trusted(pid, uid)
                {
                    let m = parse_message(&buf[..len]);
                    if let Some(text) = m.status {
                        self.record_status(&mut out, text);
                    }
                    if m.ready {
                        self.signal_ready()?;
                    }
                    if m.watchdog_ping && !aborted {
                        deadline = self.watchdog.map(|d| Instant::now() + d);
                    }
                    if m.watchdog_trigger && self.watchdog.is_some() && !aborted {
                        deadline = Some(Instant::now());
                    }
                }
                continue;
            }
            if daemon_gone {
                return Ok(Ended::DaemonDied);
            }
        }
    }

    /// Without a pidfd the daemon's death cannot be watched: the listener stays only
    /// until READY=1 (the old behaviour), so it never outlives the daemon for long.
    fn run_until_ready(mut self, buf: &mut [u8], cmsg: &mut Vec<u8>) -> Result<Ended, Error> {
        loop {
            let mut fds = [PollFd::new(self.socket.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) => {}
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(Error::new("poll", e)),
            }
            if let Some((len, pid, uid)) = receive(&self.socket, buf, cmsg)?
                && self.trusted(pid, uid)
                && parse_message(&buf[..len]).ready
            {
                self.signal_ready()?;
                return Ok(Ended::Ready);
            }
        }
    }
}

/// One datagram with its sender's credentials: (length, pid, uid). None when there was
/// nothing to read or the datagram carried no credentials.
fn receive(
    socket: &OwnedFd,
    buf: &mut [u8],
    cmsg: &mut Vec<u8>,
) -> Result<Option<(usize, i32, u32)>, Error> {
    let mut iov = [IoSliceMut::new(buf)];
    match recvmsg::<()>(
        socket.as_raw_fd(),
        &mut iov,
        Some(cmsg),
        MsgFlags::MSG_DONTWAIT,
    ) {
        Ok(msg) => {
            let mut sender = None;
            if let Ok(cmsgs) = msg.cmsgs() {
                for c in cmsgs {
                    if let ControlMessageOwned::ScmCredentials(cr) = c {
                        sender = Some((cr.pid(), cr.uid()));
                    }
                }
            }
            let n = msg.bytes;
            Ok(sender.map(|(pid, uid)| (n, pid, uid)))
        }
        Err(Errno::EINTR | Errno::EAGAIN) => Ok(None),
        Err(e) => Err(Error::new("receive from the notify socket", e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_lines() {
        assert!(is_ready(b"READY=1"));
        assert!(is_ready(b"STATUS=starting\nREADY=1\n"));
        assert!(!is_ready(b"READY=0"));
        assert!(!is_ready(b"READY=10"));
        assert!(!is_ready(b"STATUS=READY=1"));
        assert!(!is_ready(b"MAINPID=5\nWATCHDOG=1"));
        assert!(!is_ready(b""));
    }

    #[test]
    fn fd_file() {
        assert_eq!(parse_fd(b"3\n"), Some(3));
        assert_eq!(parse_fd(b"12"), Some(12));
        for bad in [&b""[..], b"\n", b"x", b"3 \n", b"-1", b"3\n\n"] {
            assert_eq!(parse_fd(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn messages() {
        let m = parse_message(b"STATUS=serving 3 clients\nWATCHDOG=1\nSTOPPING=1\nX=y");
        assert_eq!(m.status, Some(&b"serving 3 clients"[..]));
        assert!(m.watchdog_ping && !m.ready && !m.watchdog_trigger);
        let m = parse_message(b"READY=1\nWATCHDOG=trigger\n");
        assert!(m.ready && m.watchdog_trigger && m.status.is_none());
        assert_eq!(parse_message(b"MAINPID=5"), Message::default());
    }

    #[test]
    fn socket_has_abstract_address() {
        let s = socket_bind(2).unwrap();
        let a = s.address.to_str().unwrap();
        assert!(a.starts_with('@') && a.len() > 1, "{a}");
    }
}
