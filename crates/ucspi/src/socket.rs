//! Binding and connecting Unix domain sockets.

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, FdFlag};
use nix::sys::socket::{
    AddressFamily, Backlog, SockFlag, SockType, UnixAddr, VsockAddr, bind as sys_bind,
    connect as sys_connect, listen, setsockopt, socket, sockopt,
};
use nix::sys::stat::{Mode, SFlag};
use std::os::fd::{AsRawFd, IntoRawFd, OwnedFd, RawFd};
use std::path::Path;
use tend_sys::Error;

/// The kind of socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Stream,
    Datagram,
}

impl Kind {
    fn sock_type(self) -> SockType {
        match self {
            Kind::Stream => SockType::Stream,
            Kind::Datagram => SockType::Datagram,
        }
    }
}

/// How to bind.
#[derive(Debug, Clone, Copy)]
pub struct BindOptions {
    pub kind: Kind,
    /// The socket file's mode (s6's default 0777: anyone may connect, whatever the umask).
    pub perms: u32,
    /// listen(2)'s backlog; None: do not listen (a datagram socket, or `-b 0`).
    pub backlog: Option<i32>,
    /// Leave the socket blocking (it is non-blocking otherwise).
    pub blocking: bool,
    /// Close the socket on exec (a daemon that serves it itself), or hand it on.
    pub cloexec: bool,
    /// SO_PASSCRED, set before the bind: a datagram sent between a bind and a later
    /// setsockopt carries no credentials (pid 0, the overflow uid and gid).
    pub pass_credentials: bool,
}

/// The longest path a `sockaddr_un` holds (without its NUL).
pub const PATH_MAX: usize = 107;

/// Bind a Unix socket at `path`, replacing a stale socket there (one nobody accepts or
/// receives on) but nothing else: a live socket is EADDRINUSE, any other file EEXIST. A
/// path longer than `sun_path` is ENAMETOOLONG. Errors read `unable to bind to PATH: why`.
pub fn bind(path: &Path, o: &BindOptions) -> Result<OwnedFd, Error> {
    let fail = |e| Error::at("bind to", path, e);
    let mut flags = SockFlag::empty();
    if !o.blocking {
        flags |= SockFlag::SOCK_NONBLOCK;
    }
    if o.cloexec {
        flags |= SockFlag::SOCK_CLOEXEC;
    }
    let addr = UnixAddr::new(path).map_err(fail)?;
    let fd = socket(AddressFamily::Unix, o.kind.sock_type(), flags, None)
        .map_err(|e| Error::new("create socket", e))?;
    if o.pass_credentials {
        setsockopt(&fd, sockopt::PassCred, &true)
            .map_err(|e| Error::new("ask for sender credentials", e))?;
    }
    match nix::sys::stat::lstat(path) {
        Ok(st) if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFSOCK => {
            if is_live(&addr, o.kind).map_err(fail)? {
                return Err(fail(Errno::EADDRINUSE));
            }
            nix::unistd::unlink(path).map_err(fail)?;
        }
        Ok(_) => return Err(fail(Errno::EEXIST)),
        Err(Errno::ENOENT) => {}
        Err(e) => return Err(fail(e)),
    }
    sys_bind(fd.as_raw_fd(), &addr).map_err(fail)?;
    // The mode is set on the path just bound: lstat showed nothing there but our socket.
    nix::sys::stat::fchmodat(
        None,
        path,
        Mode::from_bits_truncate(o.perms),
        nix::sys::stat::FchmodatFlags::FollowSymlink,
    )
    .map_err(fail)?;
    if let Some(backlog) = o.backlog {
        // The kernel caps a larger backlog at its somaxconn; nix refuses one above libc's.
        let b = Backlog::new(backlog).unwrap_or(Backlog::MAXCONN);
        listen(&fd, b).map_err(|e| Error::at("listen on", path, e))?;
    }
    Ok(fd)
}

/// Whether a socket file has a server: connect succeeds on a live one and is refused on
/// a stale one (the same for stream and datagram sockets).
fn is_live(addr: &UnixAddr, kind: Kind) -> Result<bool, Errno> {
    let probe = socket(
        AddressFamily::Unix,
        kind.sock_type(),
        SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    match sys_connect(probe.as_raw_fd(), addr) {
        Ok(()) => Ok(true),
        Err(Errno::ECONNREFUSED) => Ok(false),
        // A datagram socket whose queue is full is alive.
        Err(Errno::EAGAIN) => Ok(true),
        Err(e) => Err(e),
    }
}

/// Connect a blocking stream socket to `path`, first bound to `local` if given.
/// Errors read `unable to connect to PATH: why` (or `unable to bind to LOCAL: why`).
pub fn connect(path: &Path, local: Option<&Path>) -> Result<OwnedFd, Error> {
    let fail = |e| Error::at("connect to", path, e);
    let addr = UnixAddr::new(path).map_err(fail)?;
    let fd = socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
    .map_err(|e| Error::new("create socket", e))?;
    if let Some(local) = local {
        let la = UnixAddr::new(local).map_err(|e| Error::at("bind to", local, e))?;
        sys_bind(fd.as_raw_fd(), &la).map_err(|e| Error::at("bind to", local, e))?;
    }
    loop {
        match sys_connect(fd.as_raw_fd(), &addr) {
            Ok(()) => return Ok(fd),
            Err(Errno::EINTR) => {}
            Err(e) => return Err(fail(e)),
        }
    }
}

/// Bind a listening AF_VSOCK stream socket to `VMADDR_CID_ANY:port`, non-blocking and
/// close-on-exec (the server accepts on it itself). Errors read
/// `unable to bind to vsock port PORT: why`.
pub fn bind_vsock(port: u32, backlog: i32) -> Result<OwnedFd, Error> {
    let at = format!("vsock port {port}");
    let fd = socket(
        AddressFamily::Vsock,
        SockType::Stream,
        SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
        None,
    )
    .map_err(|e| Error::new("create vsock socket", e))?;
    let addr = VsockAddr::new(libc::VMADDR_CID_ANY, port);
    sys_bind(fd.as_raw_fd(), &addr).map_err(|e| Error::at("bind to", &at, e))?;
    let b = Backlog::new(backlog).unwrap_or(Backlog::MAXCONN);
    listen(&fd, b).map_err(|e| Error::at("listen on", &at, e))?;
    Ok(fd)
}

/// Connect a blocking AF_VSOCK stream socket to `cid:port`. Errors read
/// `unable to connect to vsock CID:PORT: why`.
pub fn connect_vsock(cid: u32, port: u32) -> Result<OwnedFd, Error> {
    let fd = socket(
        AddressFamily::Vsock,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
    .map_err(|e| Error::new("create vsock socket", e))?;
    let addr = VsockAddr::new(cid, port);
    let at = format!("vsock {cid}:{port}");
    loop {
        match sys_connect(fd.as_raw_fd(), &addr) {
            Ok(()) => return Ok(fd),
            Err(Errno::EINTR) => {}
            Err(e) => return Err(Error::at("connect to", Path::new(&at), e)),
        }
    }
}

/// The longest answer line a hybrid-vsock socket may give (Firecracker's is
/// `OK <port>\n`); a longer one is refused, never truncated silently.
pub const HYBRID_LINE_MAX: usize = 64;

/// Connect to guest vsock `port` through a hybrid-vsock Unix socket at `path`, as
/// Firecracker and Cloud Hypervisor expose it: send `CONNECT port\n`, read one line,
/// which must begin `OK `. The line is read a byte at a time so that nothing the guest
/// sends after it is consumed here. A refusal is ECONNREFUSED.
pub fn connect_hybrid(path: &Path, port: u32) -> Result<OwnedFd, Error> {
    let fd = connect(path, None)?;
    let fail = |e| Error::at("connect through", path, e);
    let mut request = [0u8; 32];
    let n = {
        use std::io::Write;
        let mut w = &mut request[..];
        // 8 + 10 + 1 bytes: always fits.
        let _ = writeln!(w, "CONNECT {port}");
        32 - w.len()
    };
    tend_sys::fd::write_all(&fd, &request[..n]).map_err(fail)?;
    let mut line = [0u8; HYBRID_LINE_MAX];
    let mut len = 0;
    loop {
        let mut b = [0u8; 1];
        match nix::unistd::read(fd.as_raw_fd(), &mut b) {
            Ok(0) => return Err(fail(Errno::ECONNREFUSED)),
            Ok(_) if b[0] == b'\n' => break,
            Ok(_) if len == line.len() => return Err(fail(Errno::EPROTO)),
            Ok(_) => {
                line[len] = b[0];
                len += 1;
            }
            Err(Errno::EINTR) => {}
            Err(e) => return Err(fail(e)),
        }
    }
    if line[..len].starts_with(b"OK ") || &line[..len] == b"OK" {
        Ok(fd)
    } else {
        Err(fail(Errno::ECONNREFUSED))
    }
}

/// Put `fd` on each of `targets` (inherited across exec), and close it unless it is one
/// of them (a socket created on a closed fd 0 is already in place).
pub fn hand_on(fd: OwnedFd, targets: &[RawFd]) -> Result<(), Error> {
    let raw = fd.into_raw_fd();
    for &t in targets {
        if t == raw {
            nix::fcntl::fcntl(raw, FcntlArg::F_SETFD(FdFlag::empty()))
                .map_err(|e| Error::new("clear close-on-exec", e))?;
        } else {
            nix::unistd::dup2(raw, t).map_err(|e| Error::new("dup2", e))?;
        }
    }
    if !targets.contains(&raw) {
        let _ = nix::unistd::close(raw);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("tend-ucspi-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    const STREAM: BindOptions = BindOptions {
        kind: Kind::Stream,
        perms: 0o777,
        backlog: Some(16),
        blocking: false,
        cloexec: true,
        pass_credentials: false,
    };

    /// The first datagram the bound socket takes already carries its sender: the
    /// socket asked for credentials before it had an address anyone could send to.
    #[test]
    fn credentials_from_the_first_datagram() {
        use nix::cmsg_space;
        use nix::sys::socket::{ControlMessageOwned, MsgFlags, UnixCredentials, recvmsg};
        let d = scratch("cred");
        let p = d.join("s");
        let o = BindOptions {
            kind: Kind::Datagram,
            backlog: None,
            blocking: true,
            pass_credentials: true,
            ..STREAM
        };
        let fd = bind(&p, &o).unwrap();
        let tx = std::os::unix::net::UnixDatagram::unbound().unwrap();
        tx.send_to(b"x", &p).unwrap();
        let mut buf = [0u8; 4];
        let mut iov = [std::io::IoSliceMut::new(&mut buf)];
        let mut space = cmsg_space!(UnixCredentials);
        let m = recvmsg::<()>(
            fd.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::empty(),
        )
        .unwrap();
        let pid = m.cmsgs().unwrap().find_map(|c| match c {
            ControlMessageOwned::ScmCredentials(c) => Some(c.pid()),
            _ => None,
        });
        assert_eq!(pid, Some(std::process::id() as i32));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn stale_replaced_live_and_files_refused() {
        let d = scratch("bind");
        let p = d.join("s");
        let live = bind(&p, &STREAM).unwrap();
        assert_eq!(bind(&p, &STREAM).unwrap_err().errno, Errno::EADDRINUSE);
        drop(live);
        let again = bind(&p, &STREAM).unwrap();
        let c = connect(&p, None).unwrap();
        drop((c, again));
        std::fs::write(d.join("f"), "x").unwrap();
        assert_eq!(
            bind(&d.join("f"), &STREAM).unwrap_err().errno,
            Errno::EEXIST
        );
        assert_eq!(std::fs::read(d.join("f")).unwrap(), b"x");
        std::os::unix::fs::symlink("nowhere", d.join("l")).unwrap();
        assert_eq!(
            bind(&d.join("l"), &STREAM).unwrap_err().errno,
            Errno::EEXIST
        );
        let long = d.join("x".repeat(PATH_MAX + 1));
        let e = bind(&long, &STREAM).unwrap_err();
        assert_eq!(e.errno, Errno::ENAMETOOLONG);
        assert!(e.to_string().starts_with("unable to bind to "), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
