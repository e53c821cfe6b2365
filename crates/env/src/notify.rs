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
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::socket::{
    AddressFamily, ControlMessageOwned, MsgFlags, SockFlag, SockType, UnixAddr, bind, getsockname,
    recvmsg, setsockopt, socket, sockopt,
};
use std::ffi::OsString;
use std::io::IoSliceMut;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Where s6 keeps a service's notification fd number.
pub const NOTIFICATION_FD_FILE: &str = "notification-fd";

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
    let p = dir.join(NOTIFICATION_FD_FILE);
    let text = std::fs::read(&p).map_err(|e| Error::io("read", &p, &e))?;
    parse_fd(&text).ok_or(Error::at("parse", &p, Errno::EINVAL))
}

/// Whether an sd_notify datagram says the daemon is ready: one of its newline-separated
/// assignments is exactly `READY=1`.
pub fn is_ready(msg: &[u8]) -> bool {
    msg.split(|&b| b == b'\n').any(|l| l == b"READY=1")
}

/// The bound socket, before the fork.
#[derive(Debug)]
pub struct Socket {
    fd: OwnedFd,
    /// The value for NOTIFY_SOCKET (`@` + the abstract name).
    pub address: OsString,
}

/// Create a close-on-exec datagram socket with an autobound abstract address.
pub fn socket_bind() -> Result<Socket, Error> {
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
    /// The grandchild that waits for READY=1.
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
    notify_fd: RawFd,
}

/// Fork the listener off. The daemon side closes the notification fd (the listener
/// alone writes to it) and keeps no copy of the socket (it is close-on-exec).
pub fn split(sock: Socket, notify_fd: RawFd) -> Result<Role, Error> {
    crate::sys::fd::inherited(notify_fd).map_err(|e| Error::new("use the notification fd", e))?;
    let me = nix::unistd::getpid();
    let pidfd = rustix::process::Pid::from_raw(me.as_raw())
        .and_then(|p| rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).ok());
    match fork().map_err(|e| Error::new("fork", e))? {
        Forked::Parent(child) => {
            let _ = nix::sys::wait::waitpid(child, None);
            drop(sock);
            drop(pidfd);
            let _ = nix::unistd::close(notify_fd);
            Ok(Role::Daemon)
        }
        Forked::Child => match fork() {
            Ok(Forked::Child) => Ok(Role::Listener(Listener {
                socket: sock.fd,
                daemon: pidfd,
                daemon_pid: me.as_raw(),
                daemon_proc: format!("/proc/{}", me.as_raw()).into(),
                notify_fd,
            })),
            _ => Ok(Role::Intermediate),
        },
    }
}

/// How the listener ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// READY=1 arrived and the newline was written.
    Ready,
    /// The daemon exited first.
    DaemonDied,
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

    /// Wait for READY=1 from a trusted sender (then write the newline) or for the
    /// daemon's death. Allocation-free per datagram except the trust check's stat.
    pub fn run(self) -> Result<Ended, Error> {
        let mut buf = [0u8; 4096];
        let mut cmsg = nix::cmsg_space!(nix::sys::socket::UnixCredentials);
        let watched = if self.daemon.is_some() { 2 } else { 1 };
        let second = self
            .daemon
            .as_ref()
            .map_or(self.socket.as_fd(), |d| d.as_fd());
        loop {
            let mut fds = [
                PollFd::new(self.socket.as_fd(), PollFlags::POLLIN),
                PollFd::new(second, PollFlags::POLLIN),
            ];
            match poll(&mut fds[..watched], PollTimeout::NONE) {
                Ok(_) => {}
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(Error::new("poll", e)),
            }
            let daemon_gone = watched == 2 && fds[1].revents().is_some_and(|r| !r.is_empty());
            let readable = fds[0].revents().is_some_and(|r| !r.is_empty());
            if readable {
                let mut iov = [IoSliceMut::new(&mut buf)];
                let got = match recvmsg::<()>(
                    self.socket.as_raw_fd(),
                    &mut iov,
                    Some(&mut cmsg),
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
                        Some((msg.bytes, sender))
                    }
                    Err(Errno::EINTR | Errno::EAGAIN) => None,
                    Err(e) => return Err(Error::new("receive from the notify socket", e)),
                };
                if let Some((n, Some((pid, uid)))) = got
                    && is_ready(&buf[..n.min(buf.len())])
                    && self.trusted(pid, uid)
                {
                    let fd = crate::sys::fd::inherited(self.notify_fd)
                        .map_err(|e| Error::new("write to the notification fd", e))?;
                    nix::unistd::write(fd, b"\n")
                        .map_err(|e| Error::new("write to the notification fd", e))?;
                    return Ok(Ended::Ready);
                }
            }
            if daemon_gone && !readable {
                return Ok(Ended::DaemonDied);
            }
        }
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
    fn socket_has_abstract_address() {
        let s = socket_bind().unwrap();
        let a = s.address.to_str().unwrap();
        assert!(a.starts_with('@') && a.len() > 1, "{a}");
    }
}
