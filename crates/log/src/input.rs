//! tend-log's stdin. When stdin is a pipe (a logged service's, held open by the
//! scanner), its data is copied out with tee(2) and consumed from the pipe only once the
//! lines it holds have been written: a logger killed at any point loses nothing, and the
//! restarted logger may write the last chunk a second time (at-least-once). Any other
//! stdin (a file, a tty, a socket) is read plainly.
//!
//! The inherited file description's flags are never changed (it is shared with the
//! scanner and other processes): reads happen only after poll reports data, and the pipe
//! calls ask for non-blocking behaviour per call (SPLICE_F_NONBLOCK).

use crate::policy;
use nix::errno::Errno;
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use rustix::pipe::{PipeFlags, SpliceFlags};
use std::ops::Range;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};
use tend_sys::Error;
use tend_sys::warn::Warn;

/// Largest read or copy from stdin (the buffer grows beyond it only for a longer line).
pub const CHUNK: usize = 1 << 16;

/// The size tend-log asks for stdin's pipe: four copies' worth.
const STDIN_PIPE: usize = 4 * CHUNK;

/// How long a line fragment may stay only in the pipe while no more data comes, before
/// tend-log takes it for real (a prompt without newline, a writer that stopped mid-line).
const GRACE: Duration = Duration::from_millis(100);
/// First and longest pause between two looks at a pipe that held only a fragment (the
/// process's timer slack is lowered so that short naps are short).
const NAP_MIN: Duration = Duration::from_micros(5);
const NAP_MAX: Duration = Duration::from_millis(10);

/// The private pipe tee(2) copies into, /dev/null to discard consumed bytes into, and an
/// edge-triggered epoll on stdin. While the pipe holds only a fragment already copied,
/// stdin itself is always readable, so tend-log waits on the epoll instead, which
/// reports the end of each write(2) into the pipe; a writer blocked in the middle of a
/// long write is not reported, so tend-log also looks again after short, doubling naps.
struct Tee {
    rd: OwnedFd,
    wr: OwnedFd,
    null: Option<OwnedFd>,
    /// Capacity of the private pipe: the most one tee can copy.
    cap: usize,
    edge: Epoll,
}

/// Buffered stdin: `buf[start..end]` holds data not yet split into lines. Of it, the
/// first `gone` bytes were already consumed from stdin; the other `held` bytes were
/// copied with tee and are still at the front of the pipe, behind `owed` bytes of lines
/// already dispatched (consumed by `settle` once their output is written).
pub struct Input {
    pub buf: Vec<u8>,
    start: usize,
    end: usize,
    pub eof: bool,
    /// SIGTERM/SIGHUP: finish the current line, then stop.
    pub stopping: bool,
    /// No more reading.
    pub done: bool,
    tee: Option<Tee>,
    gone: usize,
    held: usize,
    owed: usize,
    /// The pipe holds only a fragment already copied: wait for the next write (on the
    /// epoll, or until `retry`), and take the fragment for real at `grace` if none comes.
    waiting: bool,
    retry: Instant,
    nap: Duration,
    grace: Instant,
}

fn errno(e: rustix::io::Errno) -> Errno {
    Errno::from_raw(e.raw_os_error())
}

impl Input {
    /// Set up for `stdin`: the tee path if it is a pipe and a private pipe can be made.
    pub fn new(stdin: BorrowedFd<'_>) -> Input {
        let is_pipe = nix::sys::stat::fstat(stdin.as_raw_fd())
            .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFIFO);
        let tee = if is_pipe {
            Self::private_pipe(stdin)
        } else {
            None
        };
        Input {
            // Starts small (an idle logger stays small); doubles up to CHUNK when reads
            // fill it, and beyond only for a line longer than that.
            buf: vec![0; 1 << 14],
            start: 0,
            end: 0,
            eof: false,
            stopping: false,
            done: false,
            tee,
            gone: 0,
            held: 0,
            owed: 0,
            waiting: false,
            retry: Instant::now(),
            nap: NAP_MIN,
            grace: Instant::now(),
        }
    }

    fn private_pipe(stdin: BorrowedFd<'_>) -> Option<Tee> {
        let (rd, wr) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK).ok()?;
        let cap = rustix::pipe::fcntl_getpipe_size(&wr).ok()?;
        // Data copied but not yet written stays in stdin's pipe, taking room from the
        // writer: a pipe of a few chunks lets it write the next chunks while this one is
        // processed (with only one chunk of room, writer and logger would take turns).
        // This is the pipe's size, not a flag of the shared file description; when the
        // system refuses (pipe-max-size, per-user limits), the pipe stays as it is.
        if rustix::pipe::fcntl_getpipe_size(stdin).is_ok_and(|n| n < STDIN_PIPE) {
            let _ = rustix::pipe::fcntl_setpipe_size(stdin, STDIN_PIPE);
        }
        let null = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/null")
            .ok()
            .map(OwnedFd::from);
        let edge = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC).ok()?;
        edge.add(
            stdin,
            EpollEvent::new(EpollFlags::EPOLLIN | EpollFlags::EPOLLET, 0),
        )
        .ok()?;
        Some(Tee {
            rd,
            wr,
            null,
            cap,
            edge,
        })
    }

    /// SIGTERM/SIGHUP: stop at the end of the current line (at once between lines).
    pub fn stop(&mut self) {
        self.stopping = true;
        if self.start == self.end {
            self.done = true;
        }
    }

    /// What to poll for input: stdin, or the edge-triggered epoll while only a fragment
    /// sits in the pipe.
    pub fn poll_fd<'a>(&'a self, stdin: BorrowedFd<'a>) -> BorrowedFd<'a> {
        match &self.tee {
            Some(t) if self.waiting => t.edge.0.as_fd(),
            _ => stdin,
        }
    }

    /// When to look at the pipe again without a reported write.
    pub fn retry_at(&self) -> Option<Instant> {
        self.waiting.then_some(self.retry)
    }

    /// Whether that time has come.
    pub fn retry_due(&self, now: Instant) -> bool {
        self.waiting && now >= self.retry
    }

    /// Read what stdin has (poll said it is readable).
    pub fn fill(&mut self, stdin: BorrowedFd<'_>, now: Instant, warn: &dyn Warn) {
        // Keep room for a full read after any partial line.
        if self.start > 0 && self.buf.len() - self.end < self.buf.len() / 2 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.buf.len() - self.end < 4096 {
            // Only an unsplit line longer than the buffer gets here.
            let n = self.buf.len() * 2;
            self.buf.resize(n, 0);
        }
        if self.tee.is_some() {
            self.fill_tee(stdin, now, warn)
        } else {
            self.fill_read(stdin, warn)
        }
    }

    fn fill_read(&mut self, stdin: BorrowedFd<'_>, warn: &dyn Warn) {
        let want = if self.stopping {
            1
        } else {
            self.buf.len() - self.end
        };
        match nix::unistd::read(stdin.as_raw_fd(), &mut self.buf[self.end..self.end + want]) {
            Ok(0) => self.eof = true,
            Ok(n) => {
                self.end += n;
                self.gone += n;
                if n == want && self.buf.len() < CHUNK {
                    let len = self.buf.len() * 2;
                    self.buf.resize(len, 0);
                }
            }
            Err(Errno::EAGAIN | Errno::EINTR) => {}
            Err(e) => {
                warn.warn(&Error::at("read", "stdin", e));
                self.eof = true;
            }
        }
    }

    fn fill_tee(&mut self, stdin: BorrowedFd<'_>, now: Instant, warn: &dyn Warn) {
        let Some(t) = &self.tee else {
            return;
        };
        // The pipe's front is the held fragment (owed bytes were settled first): copy it
        // again over itself, with whatever follows.
        if self.waiting {
            // Clear the edge first: a write after this point wakes the epoll again. (Not
            // needed otherwise: an old edge only costs one more look when waiting starts.)
            let mut ev = [EpollEvent::empty()];
            let _ = t.edge.wait(&mut ev, EpollTimeout::ZERO);
        }
        let at = self.end - self.held;
        let want = (self.buf.len() - at).min(t.cap);
        let n = match rustix::pipe::tee(stdin, &t.wr, want, SpliceFlags::NONBLOCK) {
            Ok(0) => {
                self.eof = true;
                return;
            }
            Ok(n) => n,
            Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR) => return,
            Err(_) => {
                // tee(2) refused (a pipe it cannot copy): plain reads from now on.
                self.take_held(stdin);
                self.tee = None;
                return self.fill_read(stdin, warn);
            }
        };
        let mut got = 0;
        while got < n {
            match nix::unistd::read(t.rd.as_raw_fd(), &mut self.buf[at + got..at + n]) {
                Ok(0) => break,
                Ok(k) => got += k,
                Err(Errno::EINTR) => {}
                Err(_) => break,
            }
        }
        if got <= self.held {
            // Nothing after the fragment already held. Take it for real once the grace
            // is over, or at once if it fills the copy (the writer waits for room).
            let full = got == want || got >= t.cap;
            if full || (self.waiting && now >= self.grace) {
                self.take_held(stdin);
            } else {
                if self.waiting {
                    self.nap = (self.nap * 2).min(NAP_MAX);
                } else {
                    self.waiting = true;
                    self.nap = NAP_MIN;
                    self.grace = now + GRACE;
                }
                self.retry = now + self.nap;
            }
            return;
        }
        self.waiting = false;
        self.end = at + got;
        self.held = got;
        if got == want && self.buf.len() < CHUNK {
            let len = self.buf.len() * 2;
            self.buf.resize(len, 0);
        }
    }

    /// Consume the held fragment from the pipe: it now lives only in `buf`.
    fn take_held(&mut self, stdin: BorrowedFd<'_>) {
        self.waiting = false;
        let n = self.held;
        self.discard(stdin, n);
        self.gone += n;
        self.held = 0;
    }

    /// The next complete line (or, at EOF, the final fragment), as a range of `buf`, and
    /// whether something else than a newline ended it (a NUL, or the line limit).
    pub fn next_line(&mut self, limit: usize) -> Option<(Range<usize>, bool)> {
        let (line, used) = policy::next_line(&self.buf[self.start..self.end], limit, self.eof)?;
        let r = self.start..self.start + line.len();
        let soft = !(used > line.len() && self.buf[r.end] == b'\n');
        self.consume(used);
        Some((r, soft))
    }

    /// The data not yet split into lines.
    pub fn unsplit(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// The first `used` bytes of `unsplit()` are dispatched lines: those already taken
    /// from stdin are done with, and those still in the pipe are owed to it.
    pub fn consume(&mut self, used: usize) {
        let used = used.min(self.end - self.start);
        self.start += used;
        let g = used.min(self.gone);
        self.gone -= g;
        let rest = (used - g).min(self.held);
        self.held -= rest;
        self.owed += rest;
    }

    /// After a round of lines: reset an empty buffer, and decide whether reading is over.
    pub fn lines_done(&mut self, dispatched: bool) {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        if self.eof || (self.stopping && (dispatched || self.start == self.end)) {
            self.done = true;
        }
    }

    /// The output of every dispatched line is written (or, without `-b`, tend-log keeps
    /// it in memory as s6-log does): consume those lines from the pipe.
    pub fn settle(&mut self, stdin: BorrowedFd<'_>) {
        if self.owed > 0 {
            let n = self.owed;
            self.discard(stdin, n);
            self.owed = 0;
        }
    }

    /// Whether dispatched lines are still in the pipe, waiting for `settle`.
    pub fn owes(&self) -> bool {
        self.owed > 0
    }

    /// Remove exactly `n` bytes (known to be there) from the front of the pipe.
    fn discard(&mut self, stdin: BorrowedFd<'_>, n: usize) {
        let Some(t) = &mut self.tee else {
            return;
        };
        let mut left = n;
        let mut scratch = [0u8; 4096];
        while left > 0 {
            let r = match &t.null {
                Some(null) => {
                    rustix::pipe::splice(stdin, None, null, None, left, SpliceFlags::NONBLOCK)
                        .map_err(errno)
                }
                None => {
                    let k = left.min(scratch.len());
                    nix::unistd::read(stdin.as_raw_fd(), &mut scratch[..k])
                }
            };
            match r {
                Ok(0) => break,
                Ok(k) => left -= k,
                Err(Errno::EINTR) => {}
                Err(_) if t.null.is_some() => t.null = None,
                Err(_) => break,
            }
        }
    }

    /// Whether stdin is consumed through the tee path.
    pub fn tees(&self) -> bool {
        self.tee.is_some()
    }
}

/// A descriptor of its own for an inherited stdout that is a pipe, FIFO or terminal,
/// opened non-blocking through /proc/self/fd/1: the inherited description, shared with
/// the scanner and other services, keeps its flags. None: write to fd 1 itself, blocking
/// (a regular file never blocks; a socket may).
pub fn reopen_stdout(stdout: BorrowedFd<'_>) -> Option<OwnedFd> {
    use std::os::unix::fs::OpenOptionsExt;
    let st = nix::sys::stat::fstat(stdout.as_raw_fd()).ok()?;
    let kind = st.st_mode & libc::S_IFMT;
    if kind != libc::S_IFIFO && kind != libc::S_IFCHR {
        return None;
    }
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open("/proc/self/fd/1")
        .ok()
        .map(OwnedFd::from)
        .filter(|fd| {
            // Still the same pipe or terminal (not something else mounted over /proc).
            nix::sys::stat::fstat(fd.as_fd().as_raw_fd())
                .is_ok_and(|n| n.st_dev == st.st_dev && n.st_ino == st.st_ino)
        })
}
