//! One logdir on disk: lock, start-up recovery, appending to `current`, rotation with or
//! without a processor, archive trimming, and clean finalization. Every step that can fail
//! is retried after the logdir's cooldown; data waiting to be written stays in `pending`.

use crate::policy;
use crate::script::LogdirSpec;
use nix::errno::Errno;
use nix::sys::stat::{Mode, fchmod, fstat, stat};
use nix::unistd::{Pid, fsync, unlink};
use std::ffi::CString;
use std::fs::OpenOptions;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tend_proto::Tai64n;
use tend_proto::lock::LockError;
use tend_sys::Error;
use tend_sys::exec::Prepared;
use tend_sys::process::{SpawnError, SpawnOptions, spawn};
use tend_sys::wait::{Ended, Wstat};
use tend_sys::warn::Warn;

/// Where a rotation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Appending to `current`.
    Idle,
    /// `current` was renamed to `previous`; a new `current` must be opened.
    NoCurrent,
    /// `previous` is ready: run the processor, or archive it.
    Archive,
    /// The processor runs.
    Running(Pid),
    /// The processor succeeded: move `processed` and `newstate` into place.
    Finish,
}

struct Paths {
    lock: PathBuf,
    current: PathBuf,
    previous: PathBuf,
    processed: PathBuf,
    state: PathBuf,
    newstate: PathBuf,
}

/// An open, locked logdir.
pub struct Logdir {
    pub spec: LogdirSpec,
    paths: Paths,
    _lock: OwnedFd,
    current: Option<OwnedFd>,
    /// Bytes in `current`.
    pub size: u64,
    /// Rendered records not yet written (always whole lines).
    pub pending: Vec<u8>,
    /// How much of `pending` is already in `current`.
    pub written: usize,
    /// Records in `pending` that end with a soft terminator (see `soften_last`).
    soft: usize,
    pub phase: Phase,
    /// Retry time after a failure.
    pub deadline: Option<Instant>,
    /// A rotation is wanted at the next line boundary (size reached, or SIGALRM).
    pub rotate_due: bool,
    processor: Option<Prepared>,
    cwd: CString,
}

fn io_err<'a>(op: &'static str, p: &'a Path) -> impl FnOnce(Errno) -> Error + 'a {
    move |e| Error::at(op, p, e)
}

/// How a file is opened (always close-on-exec).
#[derive(Clone, Copy)]
pub enum How {
    Read,
    ReadCreate,
    Write,
    Append,
    Trunc,
}

/// Open `p` for tend-log's own use. O_NONBLOCK so that a FIFO (or a device) put where a
/// file belongs cannot hang the logger in open(2); anything but a regular file is then
/// refused, naming it. O_NONBLOCK has no effect on a regular file's reads and writes.
pub fn openf(p: &Path, how: How, mode: u32) -> Result<OwnedFd, Error> {
    let mut o = OpenOptions::new();
    match how {
        How::Read => o.read(true),
        How::ReadCreate => o.read(true).write(true).create(true),
        How::Write => o.write(true),
        How::Append => o.append(true).create(true),
        How::Trunc => o.write(true).create(true).truncate(true),
    };
    let fd = o
        .mode(mode)
        .custom_flags(libc::O_NONBLOCK)
        .open(p)
        .map(OwnedFd::from)
        .map_err(|e| match e.raw_os_error() {
            // A FIFO without a reader, opened for writing.
            Some(libc::ENXIO) => Error::at("use non-regular file", p, Errno::EINVAL),
            _ => Error::io("open", p, &e),
        })?;
    let st = fstat(fd.as_raw_fd()).map_err(io_err("stat", p))?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(Error::at("use non-regular file", p, Errno::EINVAL));
    }
    Ok(fd)
}

fn unlink_quiet(p: &Path) -> Result<(), Error> {
    match unlink(p) {
        Ok(()) | Err(Errno::ENOENT) => Ok(()),
        Err(e) => Err(Error::at("unlink", p, e)),
    }
}

fn exists(p: &Path) -> Result<Option<nix::sys::stat::FileStat>, Error> {
    match stat(p) {
        Ok(s) => Ok(Some(s)),
        Err(Errno::ENOENT) => Ok(None),
        Err(e) => Err(Error::at("stat", p, e)),
    }
}

impl Logdir {
    /// mkdir, lock, recover what a crash left, open `current`.
    pub fn open(spec: LogdirSpec) -> Result<Logdir, Error> {
        let dir = spec.path.clone();
        match nix::unistd::mkdir(&dir, Mode::from_bits_truncate(0o700)) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(Error::at("mkdir", &dir, e)),
        }
        let paths = Paths {
            lock: dir.join("lock"),
            current: dir.join("current"),
            previous: dir.join("previous"),
            processed: dir.join("processed"),
            state: dir.join("state"),
            newstate: dir.join("newstate"),
        };
        // The same fcntl lock as supervise/lock; s6-log reports a held lock as EBUSY.
        let lock = openf(&paths.lock, How::Append, 0o644)?;
        match tend_proto::lock::try_lock(&lock) {
            Ok(()) => {}
            Err(LockError::Busy) => return Err(Error::at("lock", &paths.lock, Errno::EBUSY)),
            Err(LockError::Sys(e)) => return Err(Error::at("lock", &paths.lock, e)),
        }
        let processor = match &spec.processor {
            Some(p) => Some(
                Prepared::with_current_env(&p.argv())
                    .map_err(|e| Error::at("prepare processor for", &dir, e))?,
            ),
            None => None,
        };
        let cwd = CString::new(dir.as_os_str().as_bytes())
            .map_err(|_| Error::at("use", &dir, Errno::EINVAL))?;
        let mut ld = Logdir {
            spec,
            paths,
            _lock: lock,
            current: None,
            size: 0,
            pending: Vec::new(),
            written: 0,
            soft: 0,
            phase: Phase::Idle,
            deadline: None,
            rotate_due: false,
            processor,
            cwd,
        };
        ld.recover()?;
        Ok(ld)
    }

    fn recover(&mut self) -> Result<(), Error> {
        let clean = matches!(exists(&self.paths.current)?, Some(s) if s.st_mode & 0o100 != 0);
        if !clean {
            unlink_quiet(&self.paths.state)?;
            unlink_quiet(&self.paths.newstate)?;
            if let Some(s) = exists(&self.paths.processed)? {
                if s.st_mode & 0o100 != 0 {
                    unlink_quiet(&self.paths.previous)?;
                    let p = self.paths.processed.clone();
                    self.archive(&p, b's')?;
                } else {
                    unlink_quiet(&self.paths.processed)?;
                }
            }
            if exists(&self.paths.previous)?.is_some() {
                let p = self.paths.previous.clone();
                self.archive(&p, b'u')?;
            }
            if exists(&self.paths.current)?.is_some() {
                let p = self.paths.current.clone();
                self.archive(&p, b'u')?;
            }
            openf(&self.paths.state, How::Trunc, 0o644)?;
        }
        self.open_current()
    }

    fn open_current(&mut self) -> Result<(), Error> {
        let fd = openf(&self.paths.current, How::Append, 0o666)?;
        let st = fstat(fd.as_raw_fd()).map_err(io_err("stat", &self.paths.current))?;
        if st.st_mode & 0o100 != 0 {
            fchmod(
                fd.as_raw_fd(),
                Mode::from_bits_truncate(st.st_mode & 0o7777 & !0o100),
            )
            .map_err(io_err("chmod", &self.paths.current))?;
        }
        self.size = st.st_size as u64;
        self.current = Some(fd);
        Ok(())
    }

    /// Hard-link `src` to a fresh `@now.KIND` and unlink `src`. If `src` already has a
    /// second link (a crash between link and unlink), only unlink it: never lose, never
    /// duplicate.
    fn archive(&self, src: &Path, kind: u8) -> Result<(), Error> {
        let st = stat(src).map_err(io_err("stat", src))?;
        if st.st_nlink > 1 {
            return unlink_quiet(src);
        }
        let mut t = Tai64n::now();
        loop {
            let name = policy::archive_name(&t.label(), kind);
            let dst = self.spec.path.join(std::ffi::OsStr::from_bytes(&name));
            match std::fs::hard_link(src, &dst) {
                Ok(()) => break,
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                    t.nanos = (t.nanos + 1) % 1_000_000_000;
                }
                Err(e) => return Err(Error::io("link", &dst, &e)),
            }
        }
        unlink_quiet(src)
    }

    /// Delete the oldest archives beyond `n` / `S`.
    fn trim(&self) -> Result<(), Error> {
        let dir = &self.spec.path;
        let rd = std::fs::read_dir(dir).map_err(|e| Error::io("read directory", dir, &e))?;
        let mut archives: Vec<(Vec<u8>, u64)> = Vec::new();
        for ent in rd.flatten() {
            let name = ent.file_name();
            if policy::is_archive(name.as_bytes()) {
                // Names are TAI64N labels, so their order is their age: a stat per
                // archive is needed only for a total size limit (S).
                let size = if self.spec.total > 0 {
                    ent.metadata().map(|m| m.len()).unwrap_or(0)
                } else {
                    0
                };
                archives.push((name.as_bytes().to_vec(), size));
            }
        }
        archives.sort();
        let del = policy::trim(&archives, self.spec.count, self.spec.total);
        for (name, _) in &archives[..del] {
            unlink_quiet(&dir.join(std::ffi::OsStr::from_bytes(name)))?;
        }
        Ok(())
    }

    /// The record just added to `pending` came from a line that a NUL ended or the line
    /// limit cut: s6-log writes all that one read delivered at once and may rotate only
    /// after it, so it never rotates between such parts and the rest of their line. The
    /// record's newline becomes a 0 byte (no line holds one: NUL ends lines), which the
    /// boundary searches do not see, turned back into a newline when written.
    pub fn soften_last(&mut self) {
        if let Some(b) = self.pending.last_mut() {
            *b = 0;
            self.soft += 1;
        }
    }

    /// `n` records just added to `pending` end with a 0 byte in place of their newline
    /// (`format::plain_lines` copies a NUL terminator as it is).
    pub fn soft_records(&mut self, n: usize) {
        self.soft += n;
    }

    /// The end of what one read delivered is a boundary again.
    pub fn end_of_read(&mut self) {
        if self.soft > 0
            && self.pending.len() > self.written
            && let Some(b) = self.pending.last_mut()
            && *b == 0
        {
            *b = b'\n';
            self.soft -= 1;
        }
    }

    /// Whether everything written so far ends on a line boundary.
    fn at_boundary(&self) -> bool {
        self.written == 0 || self.pending[self.written - 1] == b'\n'
    }

    /// Nothing left to do: every byte written and no rotation under way or wanted.
    pub fn idle(&self) -> bool {
        self.written == self.pending.len() && self.phase == Phase::Idle && !self.rotate_due
    }

    /// Waiting out an error (a write or rotation that failed, a processor that
    /// failed) before trying again.
    pub fn stalled(&self) -> bool {
        self.deadline.is_some()
    }

    /// Leaving on a stop before the rest of a line could be written (a full disk):
    /// take its start back out of `current`, so that the next logger, which reads the
    /// line again from the pipe, appends it whole after a whole line.
    pub fn cut_partial_line(&mut self) -> Result<(), Error> {
        let Some(fd) = &self.current else {
            return Ok(());
        };
        if self.at_boundary() {
            return Ok(());
        }
        // `pending` starts on a record boundary, so the part is what follows its last
        // newline among the bytes written.
        let whole = self.pending[..self.written]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let part = (self.written - whole) as u64;
        let keep = self.size.saturating_sub(part);
        nix::unistd::ftruncate(fd, keep as i64).map_err(io_err("truncate", &self.paths.current))?;
        self.size = keep;
        self.written = whole;
        Ok(())
    }

    /// Bytes of `pending` not yet in `current`.
    pub fn unwritten(&self) -> usize {
        self.pending.len() - self.written
    }

    /// SIGALRM: rotate at the next line boundary if `current` is not empty and no
    /// rotation is already under way.
    pub fn force_rotation(&mut self) {
        if self.phase == Phase::Idle && (self.size > 0 || self.written < self.pending.len()) {
            self.rotate_due = true;
        }
    }

    fn fail(&mut self, now: Instant, e: Error, warn: &dyn Warn) {
        warn.warn(&e);
        self.deadline = Some(now + Duration::from_millis(self.spec.cooldown_ms));
    }

    /// Do whatever can be done now: rotation steps, then write pending data.
    pub fn flush(&mut self, now: Instant, warn: &dyn Warn) {
        loop {
            if let Some(d) = self.deadline {
                if now < d {
                    return;
                }
                self.deadline = None;
            }
            let step = match self.phase {
                Phase::NoCurrent => self.open_current().map(|()| Phase::Archive),
                Phase::Archive => self.process_or_archive(),
                Phase::Finish => self.finish().map(|()| Phase::Idle),
                Phase::Idle if self.rotate_due && self.at_boundary() => {
                    self.rotate_due = false;
                    if self.size == 0 {
                        continue;
                    }
                    self.start_rotation()
                }
                p => Ok(p),
            };
            match step {
                Ok(p) if p != self.phase => {
                    if p == Phase::Idle
                        && policy::due(self.size, self.spec.size, self.spec.tolerance)
                        && self.at_boundary()
                    {
                        self.rotate_due = true;
                    }
                    self.phase = p;
                    continue;
                }
                Ok(_) => {}
                Err(e) => return self.fail(now, e, warn),
            }
            if self.phase == Phase::NoCurrent {
                return;
            }
            if self.rotate_due && self.at_boundary() {
                if self.phase == Phase::Idle {
                    continue;
                }
                // A processor still works on the previous rotation: hold the data (as
                // s6-log does) rather than let current grow past its size.
                return;
            }
            if self.written == self.pending.len() {
                self.pending.clear();
                self.written = 0;
                return;
            }
            let rest = &mut self.pending[self.written..];
            let n = policy::write_bound(rest, self.size, self.spec.size, self.spec.tolerance);
            if self.soft > 0 {
                for b in rest[..n].iter_mut().filter(|b| **b == 0) {
                    *b = b'\n';
                    self.soft -= 1;
                }
            }
            let rest = &self.pending[self.written..];
            let Some(fd) = self.current.as_ref() else {
                return;
            };
            match nix::unistd::write(fd, &rest[..n]) {
                Ok(0) => {
                    let p = self.paths.current.clone();
                    return self.fail(now, Error::at("write to", p, Errno::EIO), warn);
                }
                Ok(w) => {
                    self.written += w;
                    self.size += w as u64;
                    if self.at_boundary()
                        && policy::due(self.size, self.spec.size, self.spec.tolerance)
                    {
                        self.rotate_due = true;
                    }
                }
                Err(Errno::EINTR) => {}
                Err(Errno::EAGAIN) => return,
                Err(e) => {
                    let p = self.paths.current.clone();
                    return self.fail(now, Error::at("write to", p, e), warn);
                }
            }
        }
    }

    /// fsync and rename `current` to `previous`.
    fn start_rotation(&mut self) -> Result<Phase, Error> {
        if let Some(fd) = &self.current {
            fsync(fd.as_raw_fd()).map_err(io_err("fsync", &self.paths.current))?;
        }
        std::fs::rename(&self.paths.current, &self.paths.previous)
            .map_err(|e| Error::io("rename", &self.paths.current, &e))?;
        self.current = None;
        self.size = 0;
        // Drop what was written; keep the rest for the new current.
        self.pending.drain(..self.written);
        self.written = 0;
        Ok(Phase::NoCurrent)
    }

    fn process_or_archive(&mut self) -> Result<Phase, Error> {
        let st = stat(&self.paths.previous).map_err(io_err("stat", &self.paths.previous))?;
        nix::sys::stat::fchmodat(
            None,
            &self.paths.previous,
            Mode::from_bits_truncate((st.st_mode & 0o7777) | 0o100),
            nix::sys::stat::FchmodatFlags::FollowSymlink,
        )
        .map_err(io_err("chmod", &self.paths.previous))?;
        let Some(prog) = &self.processor else {
            let p = self.paths.previous.clone();
            self.archive(&p, b's')?;
            self.trim()?;
            return Ok(Phase::Idle);
        };
        let prev = openf(&self.paths.previous, How::Read, 0)?;
        let processed = openf(&self.paths.processed, How::Trunc, 0o666)?;
        let state = openf(&self.paths.state, How::ReadCreate, 0o644)?;
        let newstate = openf(&self.paths.newstate, How::Trunc, 0o644)?;
        let opts = SpawnOptions {
            cwd: Some(self.cwd.clone()),
            fds: vec![
                (prev.as_raw_fd(), 0),
                (processed.as_raw_fd(), 1),
                (state.as_raw_fd(), 4),
                (newstate.as_raw_fd(), 5),
            ],
            ..Default::default()
        };
        match spawn(prog, &opts) {
            Ok(pid) => Ok(Phase::Running(pid)),
            Err(SpawnError::Fork(e)) => Err(Error::at("fork processor for", &self.spec.path, e)),
            Err(SpawnError::Exec(e)) => Err(Error::at("spawn processor for", &self.spec.path, e)),
        }
    }

    /// The processor of this logdir ended with `st` (or could not be waited for).
    pub fn reaped(&mut self, st: Result<Wstat, Errno>, now: Instant, warn: &dyn Warn) {
        match st.map(Wstat::ended) {
            Ok(Ended::Exited(0)) => self.phase = Phase::Finish,
            other => {
                let why = match other {
                    Ok(Ended::Exited(c)) => format!("exit code {c}"),
                    Ok(Ended::Signaled(s)) => match tend_sys::signals::name(i32::from(s)) {
                        Some(name) => format!("signal {name}"),
                        None => format!("signal {s}"),
                    },
                    // As before: a wait failure reads as exit code 256 + errno.
                    Err(e) => format!("exit code {}", 256 + e as i32),
                };
                warn.warn(&format_args!(
                    "processor failed for logdir {} ({why}), retrying in {} ms",
                    self.spec.path.display(),
                    self.spec.cooldown_ms
                ));
                self.phase = Phase::Archive;
                self.deadline = Some(now + Duration::from_millis(self.spec.cooldown_ms));
            }
        }
    }

    fn finish(&mut self) -> Result<(), Error> {
        let p = &self.paths;
        if exists(&p.processed)?.is_some() {
            let fd = openf(&p.processed, How::Write, 0)?;
            fsync(fd.as_raw_fd()).map_err(io_err("fsync", &p.processed))?;
            let st = fstat(fd.as_raw_fd()).map_err(io_err("stat", &p.processed))?;
            fchmod(
                fd.as_raw_fd(),
                Mode::from_bits_truncate((st.st_mode & 0o7777) | 0o100),
            )
            .map_err(io_err("chmod", &p.processed))?;
        }
        if exists(&p.newstate)?.is_some() {
            let fd = openf(&p.newstate, How::Write, 0)?;
            fsync(fd.as_raw_fd()).map_err(io_err("fsync", &p.newstate))?;
        }
        unlink_quiet(&p.previous)?;
        if exists(&p.newstate)?.is_some() {
            std::fs::rename(&p.newstate, &p.state)
                .map_err(|e| Error::io("rename", &p.newstate, &e))?;
        }
        if exists(&p.processed)?.is_some() {
            let src = p.processed.clone();
            self.archive(&src, b's')?;
        }
        self.trim()
    }

    pub fn processor_pid(&self) -> Option<Pid> {
        match self.phase {
            Phase::Running(pid) => Some(pid),
            _ => None,
        }
    }

    /// Clean exit: fsync `current` and mark it finalized (u+x).
    pub fn finalize(&mut self) -> Result<(), Error> {
        if let Some(fd) = &self.current {
            fsync(fd.as_raw_fd()).map_err(io_err("fsync", &self.paths.current))?;
            let st = fstat(fd.as_raw_fd()).map_err(io_err("stat", &self.paths.current))?;
            fchmod(
                fd.as_raw_fd(),
                Mode::from_bits_truncate((st.st_mode & 0o7777) | 0o100),
            )
            .map_err(io_err("chmod", &self.paths.current))?;
        }
        Ok(())
    }
}
