//! tend-socklog's daemon: bind a datagram socket, drop privileges, then turn each datagram
//! into one line on stdout, until SIGTERM.
//!
//! One thread, one poll over the signalfd, stdout and the socket. The receive buffer, the
//! control-message buffer and the output buffer are allocated once, sized for the worst
//! case of a batch, so no datagram allocates. The socket is read only while the output
//! buffer has room for one more line: when the logger is gone (its pipe full), we stop
//! reading, the socket's queue fills, and local senders block instead of losing messages.

use crate::shape::{self, Origin, Sender, Style};
use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::Signal;
use nix::sys::socket::{
    AddressFamily, ControlMessageOwned, MsgFlags, SockFlag, SockType, SockaddrIn, SockaddrIn6,
    SockaddrStorage, UnixCredentials, bind, recvmsg, setsockopt, socket, sockopt,
};
use nix::sys::stat::{Mode, SFlag};
use std::io::IoSliceMut;
use std::net::{SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tend_env::uidgid::{self, Credentials};
use tend_sys::Error;
use tend_sys::warn::Warn;
use tend_ucspi::socket::{BindOptions, Kind};

/// Where to listen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bind {
    /// A unix datagram socket (default /dev/log).
    Unix(PathBuf),
    /// A UDP socket; lines get the `ip_port: ` of their sender.
    Udp(SocketAddr),
}

/// What the command line asks for.
#[derive(Debug, Clone)]
pub struct Options {
    pub style: Style,
    /// Longest datagram kept whole (76 to 1048576); longer ones are cut and end in `...`.
    pub linelen: usize,
    /// How long to try flushing after SIGTERM (None: for ever).
    pub lameduck: Option<Duration>,
    pub bind: Bind,
    pub creds: Credentials,
    /// Readiness: a newline written there once bound, then closed.
    pub notify: Option<RawFd>,
}

/// Shortest and longest line lengths (s6-socklog's clamps).
pub const LINELEN_MIN: usize = 76;
pub const LINELEN_MAX: usize = 1_048_576;

/// How the daemon ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// SIGTERM, everything written.
    Flushed,
    /// SIGTERM, but the lame-duck timeout expired with lines unwritten.
    TimedOut,
}

/// Parse s6-socklog's `-i` argument: an IPv4 or IPv6 address, then optionally `_port`
/// (or `:port` after IPv4); the port defaults to 514. The whole argument must parse.
pub fn parse_ip_port(s: &str) -> Option<SocketAddr> {
    if let Ok(ip) = s.parse::<std::net::IpAddr>() {
        return Some(SocketAddr::new(ip, 514));
    }
    let (ip, port) = s.rsplit_once('_').or_else(|| {
        let (ip, port) = s.rsplit_once(':')?;
        ip.parse::<std::net::Ipv4Addr>().ok().map(|_| (ip, port))
    })?;
    if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(SocketAddr::new(ip.parse().ok()?, port.parse().ok()?))
}

/// Bind, drop privileges, announce readiness, then serve until SIGTERM.
/// `warn` hears of datagrams the kernel dropped (UDP only: a full Unix socket makes its
/// senders wait instead).
pub fn run(opts: &Options, warn: &dyn Warn) -> Result<Outcome, Error> {
    let sock = match &opts.bind {
        Bind::Unix(path) => bind_unix(path, opts.style.json)?,
        Bind::Udp(addr) => bind_udp(*addr)?,
    };
    uidgid::apply(&opts.creds)?;
    tend_sys::signals::ignore(Signal::SIGPIPE).map_err(|e| Error::new("ignore SIGPIPE", e))?;
    let sigfd = tend_sys::signals::signalfd(&[Signal::SIGTERM])
        .map_err(|e| Error::new("trap signals", e))?;
    let stdout = Stdout::open()?;
    if let Some(fd) = opts.notify {
        // A reader that went away is its own problem; the daemon runs on.
        let _ = tend_sys::fd::write_raw(fd, b"\n");
        let _ = nix::unistd::close(fd);
    }
    Loop::new(opts, sock.as_fd(), stdout, sigfd.as_fd()).serve(opts, warn)
}

/// Bind a unix datagram socket at `path` as every tend server binds one
/// (`tend_ucspi::socket::bind`: a stale socket is replaced, nothing else is), writable by
/// anyone as s6-socklog's, whatever the umask.
fn bind_unix(path: &Path, credentials: bool) -> Result<OwnedFd, Error> {
    let o = BindOptions {
        kind: Kind::Datagram,
        perms: 0o777,
        backlog: None,
        blocking: false,
        cloexec: true,
        // Before the bind: every datagram that reaches the socket carries its sender.
        pass_credentials: credentials,
    };
    // tend-socklog's messages say "bind socket to", as they always have.
    tend_ucspi::socket::bind(path, &o).map_err(|e| match e.op {
        "bind to" | "create socket" => Error {
            op: "bind socket to",
            ..e
        },
        _ => e,
    })
}

fn bind_udp(addr: SocketAddr) -> Result<OwnedFd, Error> {
    let family = match addr {
        SocketAddr::V4(_) => AddressFamily::Inet,
        SocketAddr::V6(_) => AddressFamily::Inet6,
    };
    let fd = socket(
        family,
        SockType::Datagram,
        SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
        None,
    )
    .map_err(|e| Error::new("create socket", e))?;
    let where_ = || PathBuf::from(format!("ip {} port {}", addr.ip(), addr.port()));
    setsockopt(&fd, sockopt::ReuseAddr, &true)
        .map_err(|e| Error::at("bind socket to", where_(), e))?;
    // The kernel drops what a full receive queue cannot take; with this it says how
    // many, on the next datagram received.
    setsockopt(&fd, sockopt::RxqOvfl, &1).map_err(|e| Error::new("ask for the drop count", e))?;
    let r = match addr {
        SocketAddr::V4(a) => bind(fd.as_raw_fd(), &SockaddrIn::from(a)),
        SocketAddr::V6(a) => bind(fd.as_raw_fd(), &SockaddrIn6::from(a)),
    };
    r.map_err(|e| Error::at("bind socket to", where_(), e))?;
    Ok(fd)
}

/// Our stdout. A pipe is reopened non-blocking through /proc (a new open file description,
/// so the logger's end and tend-svscan's copy keep their flags): a write then never
/// blocks the loop, and SIGTERM's lame-duck timeout holds even against a stuck logger.
struct Stdout {
    own: Option<OwnedFd>,
    fd1: BorrowedFd<'static>,
    /// Writes cannot block: try them as soon as there is output, without polling first.
    nonblocking: bool,
}

impl Stdout {
    fn open() -> Result<Stdout, Error> {
        let fd1 = tend_sys::fd::stdio(1).map_err(|e| Error::new("use stdout", e))?;
        let st = nix::sys::stat::fstat(1).map_err(|e| Error::new("stat stdout", e))?;
        let kind = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT;
        if kind == SFlag::S_IFIFO {
            let flags = nix::fcntl::OFlag::O_WRONLY
                | nix::fcntl::OFlag::O_NONBLOCK
                | nix::fcntl::OFlag::O_CLOEXEC;
            if let Ok(fd) = tend_sys::fd::open("/proc/self/fd/1", flags, Mode::empty()) {
                return Ok(Stdout {
                    own: Some(fd),
                    fd1,
                    nonblocking: true,
                });
            }
        }
        Ok(Stdout {
            own: None,
            fd1,
            nonblocking: kind == SFlag::S_IFREG,
        })
    }

    fn fd(&self) -> BorrowedFd<'_> {
        match &self.own {
            Some(fd) => fd.as_fd(),
            None => self.fd1,
        }
    }
}

struct Loop<'a> {
    sock: BorrowedFd<'a>,
    stdout: Stdout,
    sigfd: BorrowedFd<'a>,
    /// One datagram: exactly linelen bytes, so MSG_TRUNC says "longer than linelen".
    datagram: Vec<u8>,
    control: Vec<u8>,
    out: Vec<u8>,
    /// The most one datagram can add to `out`.
    worst: usize,
    udp: bool,
    /// The kernel's count of datagrams dropped on a full queue, as last reported.
    dropped: u32,
}

impl<'a> Loop<'a> {
    fn new(opts: &Options, sock: BorrowedFd<'a>, stdout: Stdout, sigfd: BorrowedFd<'a>) -> Self {
        // JSON may escape every byte as \u00XX; the rest is names, numbers and an address.
        let worst = if opts.style.json {
            opts.linelen * 6 + 320
        } else {
            opts.linelen + 160
        };
        Loop {
            sock,
            stdout,
            sigfd,
            datagram: vec![0; opts.linelen],
            control: nix::cmsg_space!(UnixCredentials, u32),
            out: Vec::with_capacity((worst * 4).max(1 << 16)),
            worst,
            udp: matches!(opts.bind, Bind::Udp(_)),
            dropped: 0,
        }
    }

    fn serve(mut self, opts: &Options, warn: &dyn Warn) -> Result<Outcome, Error> {
        let mut deadline: Option<Instant> = None;
        let mut running = true;
        loop {
            if !running && self.out.is_empty() {
                return Ok(Outcome::Flushed);
            }
            let room = running && self.room();
            let timeout = match (running, deadline) {
                (false, Some(d)) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Ok(Outcome::TimedOut);
                    }
                    tend_sys::deadline::ms_rounded_up(left)
                }
                _ => PollTimeout::NONE,
            };
            // Only the fds waited for are polled: a pipe with no reader left reports
            // POLLERR whatever was asked, and polling it with nothing to write would spin.
            let pending = !self.out.is_empty();
            let mut fds = [PollFd::new(self.sigfd, PollFlags::POLLIN); 3];
            let (mut n, mut out_at, mut in_at) = (1, None, None);
            if pending {
                fds[n] = PollFd::new(self.stdout.fd(), PollFlags::POLLOUT);
                out_at = Some(n);
                n += 1;
            }
            if room {
                fds[n] = PollFd::new(self.sock, PollFlags::POLLIN);
                in_at = Some(n);
                n += 1;
            }
            match poll(&mut fds[..n], timeout) {
                Ok(_) => {}
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(Error::new("poll", e)),
            }
            let ready = |at: Option<usize>| {
                at.and_then(|i| fds[i].revents())
                    .is_some_and(|r| !r.is_empty())
            };
            let (sig, out, inp) = (ready(Some(0)), ready(out_at), ready(in_at));
            if sig && self.sigterm()? && running {
                running = false;
                deadline = opts.lameduck.map(|t| Instant::now() + t);
            }
            if out {
                self.flush()?;
            }
            if inp {
                self.read_batch(opts.style, warn)?;
                if self.stdout.nonblocking {
                    self.flush()?;
                }
            }
        }
    }

    fn room(&self) -> bool {
        self.out.len() + self.worst <= self.out.capacity()
    }

    /// Drain the signalfd; whether SIGTERM was among what it held.
    fn sigterm(&mut self) -> Result<bool, Error> {
        let mut term = false;
        let mut buf = [0u8; 128];
        loop {
            match nix::unistd::read(self.sigfd.as_raw_fd(), &mut buf) {
                Ok(n) if n >= 4 => {
                    let signo = u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]);
                    term |= signo == Signal::SIGTERM as u32;
                }
                Ok(_) | Err(Errno::EAGAIN) => return Ok(term),
                Err(Errno::EINTR) => {}
                Err(e) => return Err(Error::new("read signals", e)),
            }
        }
    }

    /// Write what the pipe takes now.
    fn flush(&mut self) -> Result<(), Error> {
        while !self.out.is_empty() {
            match nix::unistd::write(self.stdout.fd(), &self.out) {
                Ok(n) => {
                    self.out.drain(..n);
                }
                Err(Errno::EAGAIN) => return Ok(()),
                Err(Errno::EINTR) => {}
                Err(e) => return Err(Error::new("write to stdout", e)),
            }
            if !self.stdout.nonblocking {
                // A blocking fd: one write per POLLOUT, so the loop never waits in write.
                return Ok(());
            }
        }
        Ok(())
    }

    /// Read datagrams until the socket is empty or the output buffer full.
    fn read_batch(&mut self, style: Style, warn: &dyn Warn) -> Result<(), Error> {
        while self.room() {
            let got = if self.udp {
                self.recv_udp(warn)
            } else {
                self.recv_unix()
            };
            let (len, cut, origin) = match got {
                Ok(Some(r)) => r,
                Ok(None) => return Ok(()),
                Err(e) => return Err(Error::new("recv", e)),
            };
            // An empty datagram is no message (s6-socklog 2.11.3.2 dies on one).
            if len == 0 && !cut {
                continue;
            }
            shape::datagram(
                &mut self.out,
                &mut self.datagram[..len],
                cut,
                style,
                &origin,
            );
        }
        Ok(())
    }

    fn recv_unix(&mut self) -> Result<Option<(usize, bool, Origin)>, Errno> {
        let mut iov = [IoSliceMut::new(&mut self.datagram)];
        let msg = match recvmsg::<()>(
            self.sock.as_raw_fd(),
            &mut iov,
            Some(&mut self.control),
            MsgFlags::MSG_DONTWAIT,
        ) {
            Ok(m) => m,
            Err(Errno::EAGAIN) => return Ok(None),
            Err(Errno::EINTR) => return Ok(Some((0, false, Origin::default()))),
            Err(e) => return Err(e),
        };
        let mut origin = Origin::default();
        if let Ok(cmsgs) = msg.cmsgs() {
            for c in cmsgs {
                if let ControlMessageOwned::ScmCredentials(c) = c {
                    origin.sender = Some(Sender {
                        pid: c.pid(),
                        uid: c.uid(),
                        gid: c.gid(),
                    });
                }
            }
        }
        Ok(Some((
            msg.bytes,
            msg.flags.contains(MsgFlags::MSG_TRUNC),
            origin,
        )))
    }

    fn recv_udp(&mut self, warn: &dyn Warn) -> Result<Option<(usize, bool, Origin)>, Errno> {
        let mut iov = [IoSliceMut::new(&mut self.datagram)];
        let msg = match recvmsg::<SockaddrStorage>(
            self.sock.as_raw_fd(),
            &mut iov,
            Some(&mut self.control),
            MsgFlags::MSG_DONTWAIT,
        ) {
            Ok(m) => m,
            Err(Errno::EAGAIN) => return Ok(None),
            Err(Errno::EINTR) => return Ok(Some((0, false, Origin::default()))),
            Err(e) => return Err(e),
        };
        if let Ok(cmsgs) = msg.cmsgs() {
            for c in cmsgs {
                if let ControlMessageOwned::RxqOvfl(n) = c
                    && n != self.dropped
                {
                    let new = n.wrapping_sub(self.dropped);
                    self.dropped = n;
                    warn.warn(&format_args!(
                        "the kernel dropped {new} datagrams on a full socket queue ({n} in all)"
                    ));
                }
            }
        }
        let client = msg.address.and_then(|a| {
            if let Some(v4) = a.as_sockaddr_in() {
                Some(SocketAddr::V4(SocketAddrV4::from(*v4)))
            } else {
                a.as_sockaddr_in6()
                    .map(|v6| SocketAddr::V6(SocketAddrV6::from(*v6)))
            }
        });
        Ok(Some((
            msg.bytes,
            msg.flags.contains(MsgFlags::MSG_TRUNC),
            Origin {
                client,
                sender: None,
            },
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_ports() {
        let p = |s: &str| parse_ip_port(s).map(|a| a.to_string());
        assert_eq!(p("127.0.0.1"), Some("127.0.0.1:514".into()));
        assert_eq!(p("127.0.0.1_5514"), Some("127.0.0.1:5514".into()));
        assert_eq!(p("127.0.0.1:5514"), Some("127.0.0.1:5514".into()));
        assert_eq!(p("::1"), Some("[::1]:514".into()));
        assert_eq!(p("::1_99"), Some("[::1]:99".into()));
        assert_eq!(p("::1:99"), Some("[::1:99]:514".into()));
        for bad in [
            "1.2.3",
            "127.0.0.1_99999",
            "127.0.0.1_",
            "127.0.0.1_80x",
            "x",
            "",
        ] {
            assert_eq!(p(bad), None, "{bad}");
        }
    }
}
