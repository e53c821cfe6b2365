//! `supervise/control`: a FIFO the supervisor reads one byte at a time. Each byte is a
//! command letter; unknown bytes are ignored. The letters are s6 2.15.1's: 2.11's, with
//! 2.13's `P C K` (the process group) and 2.15.1's `l` (reload). A scanner's
//! `.s6-svscan/control` works the same way with s6-svscanctl's letters ([`ScanCommand`]).

use crate::servicedir;
use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::sys::stat::Mode;
use std::ffi::OsStr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use tend_sys::fd::{open, write_all};

/// A command to a supervisor, one letter on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlCommand {
    /// Send a signal to ./run (letters a b q h k t i 1 2 y).
    Signal(nix::sys::signal::Signal),
    /// p: SIGSTOP and mark paused.
    Pause,
    /// c: SIGCONT and clear paused.
    Continue,
    /// P: SIGSTOP to ./run's process group and mark paused (s6 2.13).
    PauseGroup,
    /// C: SIGCONT to ./run's process group and clear paused (s6 2.13).
    ContinueGroup,
    /// K: SIGKILL to ./run's process group (s6 2.13).
    KillGroup,
    /// l: send the `reload-signal` file's signal (default SIGHUP) to ./run (s6 2.15.1).
    Reload,
    /// r: send the down-signal; restart follows if wanted up.
    Restart,
    /// o: run once (down: start it; up: do not restart).
    Once,
    /// d: want down, send the down-signal then SIGCONT.
    Down,
    /// u: want up.
    Up,
    /// D: as d, and create ./down.
    DownPermanent,
    /// U: as u, and remove ./down.
    UpPermanent,
    /// x: exit once the service is down.
    Exit,
    /// O: want down, do not start.
    OnceNoStart,
    /// Q: as O and create ./down, without killing.
    QuitKeep,
}

impl ControlCommand {
    /// Decode one byte; None for bytes s6-supervise ignores.
    pub fn from_byte(b: u8) -> Option<ControlCommand> {
        use ControlCommand::*;
        use nix::sys::signal::Signal as S;
        Some(match b {
            b'a' => Signal(S::SIGALRM),
            b'b' => Signal(S::SIGABRT),
            b'q' => Signal(S::SIGQUIT),
            b'h' => Signal(S::SIGHUP),
            b'k' => Signal(S::SIGKILL),
            b't' => Signal(S::SIGTERM),
            b'i' => Signal(S::SIGINT),
            b'1' => Signal(S::SIGUSR1),
            b'2' => Signal(S::SIGUSR2),
            b'y' => Signal(S::SIGWINCH),
            b'p' => Pause,
            b'c' => Continue,
            b'P' => PauseGroup,
            b'C' => ContinueGroup,
            b'K' => KillGroup,
            b'l' => Reload,
            b'r' => Restart,
            b'o' => Once,
            b'd' => Down,
            b'u' => Up,
            b'D' => DownPermanent,
            b'U' => UpPermanent,
            b'x' => Exit,
            b'O' => OnceNoStart,
            b'Q' => QuitKeep,
            _ => return None,
        })
    }

    /// The letter on the wire (`from_byte`'s inverse); None for a signal no letter
    /// names.
    pub fn byte(self) -> Option<u8> {
        use ControlCommand::*;
        use nix::sys::signal::Signal as S;
        Some(match self {
            Signal(S::SIGALRM) => b'a',
            Signal(S::SIGABRT) => b'b',
            Signal(S::SIGQUIT) => b'q',
            Signal(S::SIGHUP) => b'h',
            Signal(S::SIGKILL) => b'k',
            Signal(S::SIGTERM) => b't',
            Signal(S::SIGINT) => b'i',
            Signal(S::SIGUSR1) => b'1',
            Signal(S::SIGUSR2) => b'2',
            Signal(S::SIGWINCH) => b'y',
            Signal(_) => return None,
            Pause => b'p',
            Continue => b'c',
            PauseGroup => b'P',
            ContinueGroup => b'C',
            KillGroup => b'K',
            Reload => b'l',
            Restart => b'r',
            Once => b'o',
            Down => b'd',
            Up => b'u',
            DownPermanent => b'D',
            UpPermanent => b'U',
            Exit => b'x',
            OnceNoStart => b'O',
            QuitKeep => b'Q',
        })
    }
}

/// Letters a client may send: s6-svc 2.15.1's set (2.11's, with `l P C K`), in its usage
/// line's order (signals, then the rest).
pub const LETTERS: &str = "abqhkti12pcyrlPCKoduDUxOQ";

/// A command to a scanner (`.s6-svscan/control`), one letter on the wire: the letters
/// s6-svscanctl takes (its `-i` is `-t`'s twin, so `i` decodes as [`Terminate`]).
///
/// [`Terminate`]: ScanCommand::Terminate
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanCommand {
    /// `z`: reap dead children now.
    Reap,
    /// `a`: scan now.
    Scan,
    /// `b`: stop now: exec finish without waiting for anything.
    Abort,
    /// `h`: scan, then prune the services that left the tree.
    Reload,
    /// `t`, `i`: bring the whole tree down (loggers drain), wait, then finish.
    Terminate,
    /// `q`: as terminate, but loggers are told to stop too.
    Quit,
    /// `n`: prune the services that left the tree (loggers drain).
    Prune,
    /// `N`: prune, loggers too.
    PruneHard,
}

/// The letters a scanner takes, in s6-svscanctl's usage order.
pub const SCAN_LETTERS: &str = "zabhitqnN";

impl ScanCommand {
    /// Decode one byte; None for bytes a scanner does not take.
    pub fn from_byte(b: u8) -> Option<ScanCommand> {
        use ScanCommand::*;
        Some(match b {
            b'z' => Reap,
            b'a' => Scan,
            b'b' => Abort,
            b'h' => Reload,
            b'i' | b't' => Terminate,
            b'q' => Quit,
            b'n' => Prune,
            b'N' => PruneHard,
            _ => return None,
        })
    }

    /// The letter on the wire (`t` for [`ScanCommand::Terminate`]).
    pub fn byte(self) -> u8 {
        use ScanCommand::*;
        match self {
            Reap => b'z',
            Scan => b'a',
            Abort => b'b',
            Reload => b'h',
            Terminate => b't',
            Quit => b'q',
            Prune => b'n',
            PruneHard => b'N',
        }
    }
}

/// Send typed commands to the supervisor of `servicedir` in one write (at most 8; a
/// signal no letter names is left out); none only checks that a supervisor listens.
/// Errors as [`send_in`]'s.
pub fn send_commands(servicedir: &Path, cmds: &[ControlCommand]) -> Result<(), SendError> {
    let (buf, n) = letters(cmds.iter().filter_map(|c| c.byte()));
    send_in(servicedir, servicedir::SUPERVISE, &buf[..n])
}

/// Send `cmds` to the scanner running on `scandir` in one write (at most 8); none only
/// checks that a scanner listens. Errors as [`send_in`]'s.
pub fn send_scan(scandir: &Path, cmds: &[ScanCommand]) -> Result<(), SendError> {
    let (buf, n) = letters(cmds.iter().map(|c| c.byte()));
    send_in(scandir, servicedir::SVSCAN, &buf[..n])
}

/// The first 8 letters in a buffer: a few commands go in one write, without allocating.
fn letters(bytes: impl Iterator<Item = u8>) -> ([u8; 8], usize) {
    let mut buf = [0u8; 8];
    let mut n = 0;
    for (slot, b) in buf.iter_mut().zip(bytes) {
        *slot = b;
        n += 1;
    }
    (buf, n)
}

/// Open a control FIFO for writing without blocking. ENXIO means nobody reads it:
/// the supervisor is not running.
pub fn open_writer(fifo: &Path) -> Result<OwnedFd, Errno> {
    let fd = open(
        fifo,
        OFlag::O_WRONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    let flags = OFlag::from_bits_truncate(fcntl(fd.as_raw_fd(), FcntlArg::F_GETFL)?);
    fcntl(
        fd.as_raw_fd(),
        FcntlArg::F_SETFL(flags & !OFlag::O_NONBLOCK),
    )?;
    Ok(fd)
}

/// Write all `letters` in one write(2) (FIFO writes up to PIPE_BUF are atomic).
pub fn send(fifo: &Path, letters: &[u8]) -> Result<(), Errno> {
    write_all(open_writer(fifo)?, letters)
}

/// Why letters could not be delivered to a daemon's control FIFO.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendError {
    /// No process reads the FIFO, or the control subdirectory does not exist (the daemon
    /// never ran there).
    NotListening,
    /// The control subdirectory exists but its FIFO cannot be opened (s6: "something is
    /// wrong with the DIR/supervise directory").
    Broken(Errno),
    /// Any other failure (a nonexistent directory, a write error).
    Sys(Errno),
}

impl SendError {
    /// s6-svc 2.11's exit codes: 100 when nobody listens or the control directory is
    /// broken, 111 for any other failure.
    pub fn code(&self) -> i32 {
        match self {
            SendError::NotListening | SendError::Broken(_) => tend_sys::code::USAGE,
            SendError::Sys(_) => tend_sys::code::SYSTEM,
        }
    }

    /// s6-svc's (or s6-svscanctl's) message for `dir` (as shown), whose daemon keeps its
    /// control FIFO in `subdir` (`supervise` or `.s6-svscan`).
    pub fn describe<'a>(&'a self, dir: &'a str, subdir: &'a str) -> impl std::fmt::Display + 'a {
        Described(self, dir, subdir)
    }
}

struct Described<'a>(&'a SendError, &'a str, &'a str);

impl std::fmt::Display for Described<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Described(e, dir, subdir) = *self;
        let daemon = if subdir == crate::servicedir::SUPERVISE {
            "supervisor"
        } else {
            "scanner"
        };
        match e {
            SendError::NotListening => write!(f, "unable to control {dir}: {daemon} not listening"),
            SendError::Broken(e) => write!(
                f,
                "something is wrong with the {dir}/{subdir} directory: {}",
                e.desc()
            ),
            SendError::Sys(e) => write!(f, "unable to control {dir}: {}", e.desc()),
        }
    }
}

fn open_dir(p: &Path) -> Result<OwnedFd, Errno> {
    open(
        p,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
}

/// Write `letters` to `dir/subdir/control` in one write(2), with s6's diagnosis
/// (`s6_svc_writectl`) when that fails: ENXIO means nobody reads the FIFO; ENOENT,
/// ENOTDIR or EISDIR mean the path is wrong somewhere, so `dir` is opened (failing: a
/// plain system error), then `dir/subdir` (missing: not listening; else broken). An empty
/// `letters` still opens the FIFO, so it checks that a daemon listens. `subdir` is
/// `supervise` for a supervisor, `.s6-svscan` for a scanner.
pub fn send_in(dir: &Path, subdir: &str, letters: &[u8]) -> Result<(), SendError> {
    let sub = dir.join(subdir);
    let fd = match open_writer(&sub.join(OsStr::from_bytes(servicedir::within::CONTROL.to_bytes())))
    {
        Ok(fd) => fd,
        Err(Errno::ENXIO) => return Err(SendError::NotListening),
        Err(e @ (Errno::ENOENT | Errno::ENOTDIR | Errno::EISDIR)) => {
            open_dir(dir).map_err(SendError::Sys)?;
            return match open_dir(&sub) {
                Err(Errno::ENOENT) => Err(SendError::NotListening),
                Err(e2) => Err(SendError::Broken(e2)),
                Ok(_) => Err(SendError::Broken(e)),
            };
        }
        Err(e) => return Err(SendError::Sys(e)),
    };
    write_all(fd, letters).map_err(SendError::Sys)
}

/// Create `fifo` (mode 0600) unless a FIFO is already there; EEXIST with another file
/// type is reported as ENOTDIR-like misuse by the caller.
pub fn make_fifo(fifo: &Path) -> Result<(), Errno> {
    match nix::unistd::mkfifo(fifo, Mode::from_bits_truncate(0o600)) {
        Ok(()) => Ok(()),
        Err(Errno::EEXIST) => {
            let st = nix::sys::stat::lstat(fifo)?;
            if st.st_mode & libc::S_IFMT == libc::S_IFIFO {
                Ok(())
            } else {
                Err(Errno::EEXIST)
            }
        }
        Err(e) => Err(e),
    }
}

/// Open our own FIFO for reading (non-blocking) and keep a writer too, so we never see EOF
/// and clients can always tell "running" (a reader exists) from "dead" (ENXIO).
pub fn open_reader(fifo: &Path) -> Result<(OwnedFd, OwnedFd), Errno> {
    let r = open(
        fifo,
        OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    let w = open(
        fifo,
        OFlag::O_WRONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    Ok((r, w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_letter_decodes_and_others_are_ignored() {
        for b in LETTERS.bytes() {
            assert!(ControlCommand::from_byte(b).is_some(), "{}", b as char);
        }
        for b in [b'z', b'T', b'w', 0u8, b'\n', 0xff] {
            assert_eq!(ControlCommand::from_byte(b), None);
        }
    }

    #[test]
    fn scan_letters_decode_and_encode_back() {
        for b in SCAN_LETTERS.bytes() {
            let cmd = ScanCommand::from_byte(b).unwrap();
            let back = if b == b'i' { b't' } else { b };
            assert_eq!(cmd.byte(), back, "{}", b as char);
        }
        for b in [b'A', b'u', b'd', b'T', 0u8, b'\n', 0xff] {
            assert_eq!(ScanCommand::from_byte(b), None, "{b}");
        }
    }

    #[test]
    fn byte_is_from_byte_inverse() {
        for b in LETTERS.bytes() {
            let cmd = ControlCommand::from_byte(b).unwrap();
            assert_eq!(cmd.byte(), Some(b), "{}", b as char);
        }
        let no_letter = ControlCommand::Signal(nix::sys::signal::Signal::SIGPIPE);
        assert_eq!(no_letter.byte(), None);
    }
}
