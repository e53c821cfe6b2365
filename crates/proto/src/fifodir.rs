//! The `event/` fifodir (s6's ftrig protocol). A listener creates a FIFO named
//! `ftrig1:@<24 hex TAI64N>:<6 chars>` (39 characters) in the directory and reads event
//! bytes from it; the supervisor writes each event to every such FIFO.

use crate::Tai64n;
use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;
use nix::unistd::{UnlinkatFlags, unlinkat};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use tend_sys::Error;
use tend_sys::fd::{open, openat};

/// Length of a listener FIFO's name.
pub const FIFO_NAME_LEN: usize = 39;
const PREFIX: &[u8] = b"ftrig1:@";

/// Whether `name` is a listener FIFO (2.11 BUG avoided: s6 2.11's cleaner looked for 49).
pub fn is_listener_name(name: &[u8]) -> bool {
    name.len() == FIFO_NAME_LEN && name.starts_with(PREFIX)
}

/// Create `eventdir` as s6 does when it is missing: mkdir 0700, chown to `gid`, chmod
/// 03730. An existing directory is left exactly as it is.
pub fn make_fifodir(eventdir: &Path, gid: nix::unistd::Gid) -> Result<(), Errno> {
    match nix::unistd::mkdir(eventdir, Mode::from_bits_truncate(0o700)) {
        Ok(()) => {}
        Err(Errno::EEXIST) => {
            let st = nix::sys::stat::stat(eventdir)?;
            return if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
                Ok(())
            } else {
                Err(Errno::ENOTDIR)
            };
        }
        Err(e) => return Err(e),
    }
    nix::unistd::chown(eventdir, None, Some(gid))?;
    nix::sys::stat::fchmodat(
        None,
        eventdir,
        Mode::from_bits_truncate(0o3730),
        nix::sys::stat::FchmodatFlags::FollowSymlink,
    )
}

/// A listener's FIFO in a fifodir; unlinked when dropped.
pub struct Subscription {
    reader: OwnedFd,
    _writer: OwnedFd,
    path: PathBuf,
}

fn random_suffix() -> [u8; 6] {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    // Never /dev/urandom: early in a guest's boot it blocks until the entropy pool is
    // ready (a second before tend-init's first service started, issue 38). The name only
    // has to differ from other listeners', which the clock and the pid see to.
    let mut raw = [0u8; 6];
    tend_sys::random::fill_nonblocking(&mut raw);
    let t = Tai64n::now();
    let mix = (std::process::id() as u64) ^ u64::from(t.nanos) << 7;
    let mut out = [0u8; 6];
    for i in 0..6 {
        out[i] = ALPHABET[((raw[i] as u64 ^ (mix >> (i * 6))) & 63) as usize];
    }
    out
}

impl Subscription {
    /// Subscribe to `eventdir`: create the FIFO under a dot name, open it for reading and
    /// writing (so it never reports EOF), then rename it into view.
    pub fn new(eventdir: &Path) -> Result<Subscription, Error> {
        let mut name = Vec::with_capacity(FIFO_NAME_LEN + 1);
        name.push(b'.');
        name.extend_from_slice(PREFIX);
        name.extend_from_slice(&Tai64n::now().hex());
        name.push(b':');
        name.extend_from_slice(&random_suffix());
        let hidden = eventdir.join(std::ffi::OsStr::from_bytes(&name));
        let path = eventdir.join(std::ffi::OsStr::from_bytes(&name[1..]));
        nix::unistd::mkfifo(&hidden, Mode::from_bits_truncate(0o600))
            .map_err(|e| Error::at("mkfifo", &hidden, e))?;
        let opened = (|| {
            let r = open(
                &hidden,
                OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
                Mode::empty(),
            )?;
            let w = open(
                &hidden,
                OFlag::O_WRONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
                Mode::empty(),
            )?;
            std::fs::rename(&hidden, &path)
                .map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)))?;
            Ok::<_, Errno>((r, w))
        })();
        match opened {
            Ok((reader, writer)) => Ok(Subscription {
                reader,
                _writer: writer,
                path,
            }),
            Err(e) => {
                let _ = std::fs::remove_file(&hidden);
                Err(Error::at("subscribe to", eventdir, e))
            }
        }
    }

    /// The fd to poll for readability.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.reader.as_fd()
    }

    /// Read available event bytes (non-blocking; EAGAIN when none).
    pub fn read(&self, buf: &mut [u8]) -> Result<usize, Errno> {
        nix::unistd::read(self.reader.as_raw_fd(), buf)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The writer side: an open `event/` directory.
pub struct EventDir {
    dir: OwnedFd,
}

impl EventDir {
    pub fn open(eventdir: &Path) -> Result<EventDir, Error> {
        let fd = open(
            eventdir,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| Error::at("open", eventdir, e))?;
        Ok(EventDir { dir: fd })
    }

    /// Call `f` with the name of every listener FIFO. Reads the directory with a stack
    /// buffer (getdents64), so notifying allocates nothing.
    fn each_listener(&self, mut f: impl FnMut(&std::ffi::CStr)) {
        let Ok(fd) = openat(
            &self.dir,
            ".",
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        ) else {
            return;
        };
        let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 2048];
        let mut dir = rustix::fs::RawDir::new(&fd, &mut buf);
        while let Some(Ok(entry)) = dir.next() {
            let name = entry.file_name();
            if is_listener_name(name.to_bytes()) {
                f(name);
            }
        }
    }

    /// Write `events` to every listener. Dead listeners (ENXIO on open, EPIPE on write)
    /// are unlinked; a full FIFO (EAGAIN) is skipped. Needs SIGPIPE ignored.
    pub fn notify(&self, events: &[u8]) {
        let dfd = self.dir.as_raw_fd();
        self.each_listener(|name| {
            match openat(
                &self.dir,
                name,
                OFlag::O_WRONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
                Mode::empty(),
            ) {
                Ok(fd) => {
                    if let Err(Errno::EPIPE) = nix::unistd::write(&fd, events) {
                        let _ = unlinkat(Some(dfd), name, UnlinkatFlags::NoRemoveDir);
                    }
                }
                Err(Errno::ENXIO) => {
                    let _ = unlinkat(Some(dfd), name, UnlinkatFlags::NoRemoveDir);
                }
                Err(_) => {}
            }
        });
    }

    /// Remove listener FIFOs nobody reads any more (at supervisor start).
    pub fn clean(&self) {
        let dfd = self.dir.as_raw_fd();
        self.each_listener(|name| {
            if let Err(Errno::ENXIO) = openat(
                &self.dir,
                name,
                OFlag::O_WRONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
                Mode::empty(),
            ) {
                let _ = unlinkat(Some(dfd), name, UnlinkatFlags::NoRemoveDir);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(is_listener_name(b"ftrig1:@400000006b0c39d111fe4f77:K-qrgh"));
        assert!(!is_listener_name(
            b".ftrig1:@400000006b0c39d111fe4f77:K-qrg"
        ));
        assert!(!is_listener_name(
            b"ftrig1:@400000006b0c39d111fe4f77:K-qrghx"
        ));
    }

    #[test]
    fn subscribe_notify_unsubscribe() {
        let dir = std::env::temp_dir().join(format!("tend-fifodir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        make_fifodir(&dir, nix::unistd::getegid()).unwrap();
        let sub = Subscription::new(&dir).unwrap();
        assert!(is_listener_name(sub.path().file_name().unwrap().as_bytes()));
        let ev = EventDir::open(&dir).unwrap();
        ev.notify(b"ud");
        let mut buf = [0u8; 8];
        assert_eq!(sub.read(&mut buf), Ok(2));
        assert_eq!(&buf[..2], b"ud");
        let p = sub.path().to_path_buf();
        drop(sub);
        assert!(!p.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
