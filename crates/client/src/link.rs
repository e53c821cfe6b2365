//! tend-svlink and tend-svunlink: add a service to a live scan directory and wait until
//! its supervisor runs, or remove it and wait until the supervisor is gone, as
//! s6-svlink and s6-svunlink.
//!
//! No polling and no race: the service's `event/` fifodir (and its logger's) is
//! subscribed to before the link is made (or removed) and the scanner told to rescan
//! (`a`; `an` to also drop what is gone), and the supervisor's first event (`s`) or last
//! (`x`) is what we wait for.

use crate::svok;
use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, poll};
use nix::sys::stat::Mode;
use std::path::{Path, PathBuf};
use std::time::Instant;
use tend_proto::ScanCommand;
use tend_proto::control::{SendError, send_scan};
use tend_proto::fifodir::Subscription;
use tend_proto::servicedir::{DOWN, EVENT, RUN, SVSCAN};
use tend_sys::Error;

/// What tend-svlink does with `./down`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Down {
    /// The service starts as soon as its supervisor runs.
    Up,
    /// `-d`: the supervisor starts it down; `./down` is gone afterwards.
    Once,
    /// `-D`: down, and `./down` stays.
    Stay,
}

#[derive(Debug, Clone, Copy)]
pub struct LinkOptions {
    pub down: Down,
    /// `-P`: a fifodir made here is public (01733), not private to our gid (03730).
    pub public: bool,
    /// `-f`: make an existing fifodir's mode what `public` says.
    pub force: bool,
    pub deadline: Option<Instant>,
}

/// Why a link or an unlink failed.
#[derive(Debug)]
pub enum LinkError {
    /// No scanner listens on the scan directory (exit 100, as s6-svscanctl).
    NoScanner(PathBuf),
    /// The fifodir exists with the other visibility, and `-f` was not given.
    Visibility(PathBuf, bool),
    Sys(Error),
    /// The scanner could not be told.
    Control(PathBuf, SendError),
}

impl LinkError {
    pub fn code(&self) -> i32 {
        match self {
            LinkError::NoScanner(_) | LinkError::Visibility(..) => tend_sys::code::USAGE,
            LinkError::Sys(e) => e.code(),
            LinkError::Control(_, e) => e.code(),
        }
    }
}

impl std::fmt::Display for LinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinkError::NoScanner(d) => SendError::NotListening
                .describe(&d.to_string_lossy(), SVSCAN)
                .fmt(f),
            LinkError::Visibility(d, public) => write!(
                f,
                "{} exists and is {} (use -f to change it)",
                d.display(),
                if *public { "private" } else { "public" }
            ),
            LinkError::Sys(e) => e.fmt(f),
            LinkError::Control(d, e) => e.describe(&d.to_string_lossy(), SVSCAN).fmt(f),
        }
    }
}

impl From<Error> for LinkError {
    fn from(e: Error) -> LinkError {
        LinkError::Sys(e)
    }
}

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    Done,
    TimedOut,
}

/// The service and, if it has one, its logger (`log/` with a `run`).
fn with_logger(servicedir: &Path) -> Vec<PathBuf> {
    let mut v = vec![servicedir.to_path_buf()];
    let log = servicedir.join(tend_proto::servicedir::LOG);
    if log.join(RUN).exists() {
        v.push(log);
    }
    v
}

fn scanner(scandir: &Path, cmds: &[ScanCommand]) -> Result<(), LinkError> {
    match send_scan(scandir, cmds) {
        Ok(()) => Ok(()),
        Err(SendError::NotListening) => Err(LinkError::NoScanner(scandir.to_path_buf())),
        Err(e) => Err(LinkError::Control(scandir.to_path_buf(), e)),
    }
}

/// Make `eventdir` public or private as asked, or check it already is.
fn fifodir(eventdir: &Path, o: &LinkOptions) -> Result<(), LinkError> {
    let mode = if o.public { 0o1733 } else { 0o3730 };
    let fail = |op, e| LinkError::Sys(Error::at(op, eventdir, e));
    match nix::unistd::mkdir(eventdir, Mode::from_bits_truncate(0o700)) {
        Ok(()) => {
            nix::unistd::chown(eventdir, None, Some(nix::unistd::getegid()))
                .map_err(|e| fail("chown", e))?;
        }
        Err(Errno::EEXIST) => {
            let st = nix::sys::stat::stat(eventdir).map_err(|e| fail("stat", e))?;
            // Public (01733) lets others write into it; private (03730) does not.
            let public = st.st_mode & 0o003 != 0;
            if public == o.public {
                return Ok(());
            }
            if !o.force {
                return Err(LinkError::Visibility(eventdir.to_path_buf(), o.public));
            }
        }
        Err(e) => return Err(fail("mkdir", e)),
    }
    nix::sys::stat::fchmodat(
        None,
        eventdir,
        Mode::from_bits_truncate(mode),
        nix::sys::stat::FchmodatFlags::FollowSymlink,
    )
    .map_err(|e| fail("chmod", e))
}

/// Wait until each subscription has seen `byte` (or `done[i]` is already set).
pub(crate) fn wait_for(
    subs: &[Subscription],
    done: &mut [bool],
    byte: u8,
    deadline: Option<Instant>,
) -> Result<Waited, LinkError> {
    let mut buf = [0u8; 64];
    loop {
        if done.iter().all(|&d| d) {
            return Ok(Waited::Done);
        }
        let timeout = tend_sys::deadline::poll_timeout(deadline, Instant::now());
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(Waited::TimedOut);
        }
        let mut fds: Vec<PollFd> = subs
            .iter()
            .map(|s| PollFd::new(s.fd(), PollFlags::POLLIN))
            .collect();
        match poll(&mut fds, timeout) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => return Err(LinkError::Sys(Error::new("poll", e))),
        }
        for (i, s) in subs.iter().enumerate() {
            loop {
                match s.read(&mut buf) {
                    Ok(0) | Err(Errno::EAGAIN) => break,
                    Ok(n) => done[i] |= buf[..n].contains(&byte),
                    Err(Errno::EINTR) => {}
                    Err(e) => return Err(LinkError::Sys(Error::at("read", s.path(), e))),
                }
            }
        }
    }
}

pub(crate) fn subscribe(dirs: &[PathBuf]) -> Result<Vec<Subscription>, LinkError> {
    dirs.iter()
        .map(|d| Subscription::new(&d.join(EVENT)).map_err(LinkError::Sys))
        .collect()
}

/// Link `servicedir` into `scandir` as `name`, have the scanner pick it up, and wait for
/// its supervisor (and its logger's) to start. `warn` hears about a supervisor that
/// already ran.
pub fn svlink(
    scandir: &Path,
    servicedir: &Path,
    name: &std::ffi::OsStr,
    o: &LinkOptions,
    warn: &dyn tend_sys::warn::Warn,
) -> Result<Waited, LinkError> {
    svlink_as(scandir, servicedir, None, name, o, warn)
}

/// svlink, with the link's text given (`../instances/NAME` for an instance, as
/// s6-instance-create makes it) instead of the service directory's absolute path.
pub fn svlink_as(
    scandir: &Path,
    servicedir: &Path,
    link_text: Option<&Path>,
    name: &std::ffi::OsStr,
    o: &LinkOptions,
    warn: &dyn tend_sys::warn::Warn,
) -> Result<Waited, LinkError> {
    scanner(scandir, &[])?;
    let target =
        std::fs::canonicalize(servicedir).map_err(|e| Error::io("resolve", servicedir, &e))?;
    let dirs = with_logger(&target);
    for d in &dirs {
        nix::sys::stat::stat(&d.join(RUN)).map_err(|e| Error::at("stat", d.join(RUN), e))?;
        fifodir(&d.join(EVENT), o)?;
    }
    if o.down != Down::Up {
        std::fs::write(target.join(DOWN), b"")
            .map_err(|e| Error::io("create", target.join(DOWN), &e))?;
    }
    let subs = subscribe(&dirs)?;
    let mut done: Vec<bool> = dirs.iter().map(|d| svok(d).unwrap_or(false)).collect();
    for (d, _) in dirs.iter().zip(&done).filter(|(_, r)| **r) {
        warn.warn(&format_args!(
            "supervisor already running on {}",
            d.display()
        ));
    }
    let link = scandir.join(name);
    std::os::unix::fs::symlink(link_text.unwrap_or(&target), &link)
        .map_err(|e| Error::io("symlink to", &link, &e))?;
    scanner(scandir, &[ScanCommand::Scan])?;
    let waited = wait_for(&subs, &mut done, b's', o.deadline)?;
    if o.down == Down::Once && waited == Waited::Done {
        match std::fs::remove_file(target.join(DOWN)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("unlink", target.join(DOWN), &e).into()),
        }
    }
    Ok(waited)
}

/// Remove the link `scandir/name`, have the scanner drop it, and (with `wait`) wait for
/// its supervisor to exit. A missing link is nothing to do; anything but a symlink is
/// refused.
pub fn svunlink(
    scandir: &Path,
    name: &std::ffi::OsStr,
    wait: bool,
    deadline: Option<Instant>,
) -> Result<Waited, LinkError> {
    let link = scandir.join(name);
    match std::fs::symlink_metadata(&link) {
        Ok(m) if m.file_type().is_symlink() => {}
        Ok(_) => return Err(Error::at("unlink", &link, Errno::EINVAL).into()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Waited::Done),
        Err(e) => return Err(Error::io("unlink", &link, &e).into()),
    }
    let target = std::fs::canonicalize(&link).map_err(|e| Error::io("resolve", &link, &e))?;
    // The service's supervisor only, as s6-svunlink: its logger's goes when the scanner
    // says (s6-svscan 2.11 and tend-svscan may leave it running after a prune).
    let dirs = [target];
    let subs = if wait { subscribe(&dirs)? } else { Vec::new() };
    let mut done: Vec<bool> = dirs.iter().map(|d| !svok(d).unwrap_or(false)).collect();
    std::fs::remove_file(&link).map_err(|e| Error::io("unlink", &link, &e))?;
    scanner(scandir, &[ScanCommand::Scan, ScanCommand::Prune])?;
    if !wait {
        return Ok(Waited::Done);
    }
    wait_for(&subs, &mut done, b'x', deadline)
}
