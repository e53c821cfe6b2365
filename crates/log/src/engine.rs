//! tend-log's event loop: one thread, one ppoll on stdin (see `input`), stdout, a
//! signalfd and the logdirs' retry deadlines. Input arrives in large chunks, is split
//! into lines (ended by `\n` or NUL, as s6-log) with a word-at-a-time search, rendered
//! into per-destination buffers, and each buffer is written with one write per chunk;
//! only then is the chunk's data consumed from a stdin pipe.

use crate::format::{self, Stamps};
use crate::input::{Input, reopen_stdout};
use crate::logdir::{How, Logdir, openf};
use crate::script::{self, Script, Selection, Target};
use nix::errno::Errno;
use nix::fcntl::FcntlArg;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::Signal;
use std::ffi::{CStr, OsString};
use std::fmt::Display;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tend_sys::Error;
use tend_sys::wait;
use tend_sys::warn::Warn;

pub use crate::input::CHUNK;

/// Command-line options of tend-log.
#[derive(Debug, Clone)]
pub struct Options {
    /// `-d`: fd to write a newline to once ready.
    pub notify: Option<RawFd>,
    /// 0 quiet, 1 default, 2 verbose.
    pub verbosity: u8,
    /// `-b`: do not read while anything is unwritten.
    pub blocking: bool,
    /// `-p`: ignore SIGTERM.
    pub protect: bool,
    /// `-l`: split lines longer than this (0 = never).
    pub linelimit: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            notify: None,
            verbosity: 1,
            blocking: false,
            protect: false,
            linelimit: 8192,
        }
    }
}

/// Why tend-log could not run.
#[derive(Debug)]
pub enum RunError {
    /// The script is invalid (exit 100).
    Script(script::ScriptError),
    /// `-d` names a fd that is not open (exit 100).
    Notify(Errno),
    /// A system call failed at start-up (exit 111).
    Sys(Error),
}

impl RunError {
    pub fn code(&self) -> i32 {
        match self {
            RunError::Script(_) | RunError::Notify(_) => tend_sys::code::USAGE,
            RunError::Sys(e) => e.code(),
        }
    }
}

impl Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Script(e) => e.fmt(f),
            RunError::Notify(e) => write!(f, "invalid notification fd: {}", e.desc()),
            RunError::Sys(e) => e.fmt(f),
        }
    }
}

struct Status {
    path: PathBuf,
    new: PathBuf,
    buf: Vec<u8>,
    /// Newlines to add after `buf`.
    pad: usize,
    dirty: bool,
    /// When `buf` was last rendered (`Outputs::status_seq`): dirty files are written
    /// oldest first, so that of two actions naming the same file the later one's line
    /// wins, as with s6-log's write per line.
    seq: u64,
}

/// Everything a line can be sent to.
struct Outputs {
    logdirs: Vec<Logdir>,
    stdout: Vec<u8>,
    stdout_written: usize,
    stdout_on: bool,
    /// Our own non-blocking description of stdout, when it could be reopened.
    stdout_own: Option<OwnedFd>,
    alerts: Vec<u8>,
    statuses: Vec<Status>,
    status_seq: u64,
    /// The line being dispatched was ended by a NUL or cut at the line limit (see
    /// `Logdir::soften_last`).
    soft_end: bool,
    stamps: Stamps,
    /// The head (stamps, prefix) of the plain path's records for the current read:
    /// `head[..head_len]`, then 32 bytes of room.
    head: Vec<u8>,
    head_len: usize,
    /// The line plus a NUL, for regexec.
    cline: Vec<u8>,
    /// Lines were taken out of the pipe before their output was written (a slow
    /// output without -b): since the outputs were last all written, some data has
    /// lived in memory only.
    in_memory_only: bool,
}

/// Without -b, how far reading may run ahead of slow outputs (their data held in
/// memory only) before tend-log stops reading and lets the pipe fill.
const PENDING_MAX: usize = 16 * CHUNK;

/// Take the time once for the lines of one read: they arrived together. (s6-log reads
/// the clock for each line; a clock read per line was a tenth of tend-log's CPU time.
/// The man page's NOTES say so.)
fn stamp(script: &Script, out: &mut Outputs) {
    if script.needs_tai || script.needs_local || script.needs_rfc3339 {
        let d = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        out.stamps.set(
            d.as_secs() as i64,
            d.subsec_nanos(),
            script.needs_tai,
            script.needs_local,
            script.needs_rfc3339,
        );
    }
}

/// The logdir and format of a script's one action, when that action is plain (not JSON)
/// and goes to a logdir and the script selects nothing: its lines take
/// `format::plain_lines`.
fn plain_logdir(script: &Script) -> Option<(usize, &script::Format)> {
    if script.selects {
        return None;
    }
    let mut actions = script.elements.iter().flat_map(|e| &e.actions);
    let a = actions.next()?;
    if actions.next().is_some() || a.format.json {
        return None;
    }
    match a.target {
        Target::Logdir(i) => Some((i, &a.format)),
        _ => None,
    }
}

/// Send the line `room[..len]` (`room`: the input buffer from the line on) where the
/// script says.
fn dispatch(script: &Script, out: &mut Outputs, room: &[u8], len: usize) {
    if !script.selects {
        for e in &script.elements {
            for a in &e.actions {
                emit(out, a, room, len);
            }
        }
        return;
    }
    let line = &room[..len.min(room.len())];
    let mut cready = false;
    let mut selected = true;
    let mut acted = false;
    for e in &script.elements {
        for s in &e.selections {
            let re = match s {
                Selection::Default => {
                    selected = !acted;
                    continue;
                }
                Selection::Plus(re) if !selected => re,
                Selection::Minus(re) if selected => re,
                _ => continue,
            };
            if !cready {
                out.cline.clear();
                out.cline.extend_from_slice(line);
                out.cline.push(0);
                cready = true;
            }
            let c = CStr::from_bytes_until_nul(&out.cline).unwrap_or(c"");
            if re.is_match(c) {
                selected = !selected;
            }
        }
        if selected {
            acted = true;
            for a in &e.actions {
                emit(out, a, room, len);
            }
        }
    }
}

impl Outputs {
    /// Bytes rendered for an output and not yet written to it.
    fn unwritten(&self) -> usize {
        let logdirs: usize = self.logdirs.iter().map(Logdir::unwritten).sum();
        logdirs + (self.stdout.len() - self.stdout_written)
    }

    fn stdout_fd<'a>(&'a self, stdout: &'a std::io::Stdout) -> BorrowedFd<'a> {
        match &self.stdout_own {
            Some(fd) => fd.as_fd(),
            None => stdout.as_fd(),
        }
    }
}

fn emit(out: &mut Outputs, a: &script::Action, room: &[u8], len: usize) {
    let line = &room[..len.min(room.len())];
    match a.target {
        Target::Logdir(i) => {
            let l = &mut out.logdirs[i];
            format::record_in(&mut l.pending, &a.format, &out.stamps, room, len);
            if out.soft_end {
                l.soften_last();
            }
        }
        Target::Stdout => {
            if out.stdout_on {
                format::record_in(&mut out.stdout, &a.format, &out.stamps, room, len)
            }
        }
        Target::Alert(limit) => format::alert(
            &mut out.alerts,
            b"tend-log",
            &a.format,
            &out.stamps,
            line,
            limit,
        ),
        Target::Status(i, size) => {
            let st = &mut out.statuses[i];
            st.pad = format::status(&mut st.buf, &a.format, &out.stamps, line, size);
            st.dirty = true;
            out.status_seq += 1;
            st.seq = out.status_seq;
        }
    }
}

/// Run tend-log: parse the script, open the logdirs, then log stdin until EOF or a
/// signal says stop. `warn` receives every warning (already filtered by verbosity).
pub fn run(opts: &Options, args: &[OsString], warn_out: &dyn Warn) -> Result<(), RunError> {
    // As s6-log (skalibs' fd_sanitize): a closed stdin or stdout is /dev/null, so the
    // signalfd or a logdir's file cannot land on fd 0 and be read as the input (a closed
    // stdin reads as an empty one, and tend-log exits 0 as s6-log does).
    tend_sys::fd::open_closed_on_dev_null(&[0, 1])
        .map_err(|e| RunError::Sys(Error::at("open", "/dev/null", e)))?;
    let script = script::parse(args).map_err(RunError::Script)?;
    if let Some(fd) = opts.notify {
        // Is it open?
        nix::fcntl::fcntl(fd, FcntlArg::F_GETFD).map_err(RunError::Notify)?;
    }
    let verbosity = opts.verbosity;
    let warn = |m: &dyn Display| {
        if verbosity > 0 {
            warn_out.warn(m)
        }
    };
    let sigfd = trap_signals()?;
    let mut out = open_outputs(&script)?;
    if let Some(fd) = opts.notify {
        let _ = tend_sys::fd::write_raw(fd, b"\n");
        let _ = nix::unistd::close(fd);
    }
    let limit = match opts.linelimit {
        0 => 0,
        n => n.max(48),
    };
    let stdin = std::io::stdin();
    let mut input = Input::new(stdin.as_fd());
    while let Some(reading) = next_round(opts, &mut out, &mut input, &warn) {
        let (sig_ready, in_ready) = wait_ready(&sigfd, &mut out, &input, reading)?;
        if sig_ready {
            handle_signals(&sigfd, opts, &mut out, &mut input, &warn);
        }
        if in_ready && !input.done {
            let now = Instant::now();
            read_input(
                &mut input,
                stdin.as_fd(),
                now,
                limit,
                &script,
                &mut out,
                &warn,
            );
        }
    }
    for l in &mut out.logdirs {
        if let Err(e) = l.finalize() {
            warn.warn(&e);
        }
    }
    Ok(())
}

/// SIGPIPE ignored; SIGTERM, SIGHUP, SIGALRM and SIGCHLD taken through a signalfd.
fn trap_signals() -> Result<nix::sys::signalfd::SignalFd, RunError> {
    tend_sys::signals::ignore(Signal::SIGPIPE)
        .map_err(|e| RunError::Sys(Error::new("ignore SIGPIPE", e)))?;
    tend_sys::signals::signalfd(&[
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGALRM,
        Signal::SIGCHLD,
    ])
    .map_err(|e| RunError::Sys(Error::new("create signalfd", e)))
}

/// The script's logdirs (opened and locked), status files and stdout.
fn open_outputs(script: &Script) -> Result<Outputs, RunError> {
    let mut logdirs = Vec::with_capacity(script.logdirs.len());
    for spec in &script.logdirs {
        logdirs.push(Logdir::open(spec.clone()).map_err(RunError::Sys)?);
    }
    let statuses = script
        .statuses
        .iter()
        .map(|s| {
            let mut new = s.path.clone().into_os_string();
            new.push(".new");
            Status {
                path: s.path.clone(),
                new: PathBuf::from(new),
                buf: Vec::new(),
                pad: 0,
                dirty: false,
                seq: 0,
            }
        })
        .collect();
    Ok(Outputs {
        logdirs,
        stdout: Vec::new(),
        stdout_written: 0,
        stdout_on: true,
        stdout_own: reopen_stdout(std::io::stdout().as_fd()),
        alerts: Vec::new(),
        statuses,
        status_seq: 0,
        soft_end: false,
        stamps: Stamps::default(),
        head: Vec::with_capacity(128),
        head_len: 0,
        cline: Vec::with_capacity(512),
        in_memory_only: false,
    })
}

/// Write out what can be, settle the input, and say whether to go on: None when the
/// input is done and everything is written, else whether to read this round.
fn next_round(
    opts: &Options,
    out: &mut Outputs,
    input: &mut Input,
    warn: &dyn Warn,
) -> Option<bool> {
    let stdin = std::io::stdin();
    flush(out, &std::io::stderr(), Instant::now(), warn);
    let busy = out.logdirs.iter().any(|l| !l.idle())
        || (out.stdout_on && out.stdout_written < out.stdout.len());
    // A logdir waiting out an error (a full disk) may wait for ever: what is not
    // written stays in the pipe, so memory stays flat and the writer blocks, and a stop
    // can be obeyed at once without losing a line. Without -b a slow output (a
    // processor, stdout) lets reading go on, its data in memory only as with s6-log,
    // up to PENDING_MAX.
    let stalled = out.logdirs.iter().any(Logdir::stalled);
    let hold = busy && (opts.blocking || stalled || out.unwritten() >= PENDING_MAX);
    if !hold {
        if busy && input.owes() {
            out.in_memory_only = true;
        }
        input.settle(stdin.as_fd());
    }
    if !busy {
        out.in_memory_only = false;
    }
    if input.stopping && stalled && busy {
        give_up(out, !input.tees(), warn);
        return None;
    }
    if input.done && !busy && out.statuses.iter().all(|s| !s.dirty) {
        return None;
    }
    Some(!(input.done || hold))
}

/// SIGTERM or SIGHUP while a logdir cannot be written: leave now. What was not
/// written is still in the pipe for the next logger, unless a slow output had let
/// reading run ahead of it (then say how much is lost).
fn give_up(out: &mut Outputs, read_plainly: bool, warn: &dyn Warn) {
    for l in &mut out.logdirs {
        if let Err(e) = l.cut_partial_line() {
            warn.warn(&e);
        }
    }
    let left = out.unwritten();
    if out.in_memory_only || read_plainly {
        warn.warn(&format_args!(
            "stopping with {left} bytes unwritten that were only in memory: lost"
        ));
    } else {
        warn.warn(&format_args!(
            "stopping with {left} bytes unwritten: left in the pipe for the next reader"
        ));
    }
}

/// One ppoll on the signalfd, stdin (when `reading`) and stdout (when it has output),
/// until the earliest logdir or input retry deadline: (signals ready, input ready).
fn wait_ready(
    sigfd: &nix::sys::signalfd::SignalFd,
    out: &mut Outputs,
    input: &Input,
    reading: bool,
) -> Result<(bool, bool), RunError> {
    let (stdin, stdout) = (std::io::stdin(), std::io::stdout());
    let now = Instant::now();
    let want_out = out.stdout_on && out.stdout_written < out.stdout.len();
    let deadline = out
        .logdirs
        .iter()
        .filter_map(|l| l.deadline)
        .chain(input.retry_at().filter(|_| reading))
        .min();
    // ppoll: a fragment's retry (see input.rs) is due in microseconds.
    let timeout = deadline.map(|d| {
        let left = d
            .saturating_duration_since(now)
            .min(Duration::from_secs(60));
        nix::sys::time::TimeSpec::from(left)
    });
    // Only the fds we wait for: an fd polled for nothing still reports POLLHUP or
    // POLLERR, which would turn the loop into a spin.
    let mut fds = [PollFd::new(sigfd.as_fd(), PollFlags::POLLIN); 3];
    let mut nfds = 1;
    let mut in_slot = None;
    if reading {
        fds[nfds] = PollFd::new(input.poll_fd(stdin.as_fd()), PollFlags::POLLIN);
        in_slot = Some(nfds);
        nfds += 1;
    }
    if want_out {
        fds[nfds] = PollFd::new(out.stdout_fd(&stdout), PollFlags::POLLOUT);
        nfds += 1;
    }
    match nix::poll::ppoll(&mut fds[..nfds], timeout, None) {
        Ok(_) | Err(Errno::EINTR) => {}
        Err(e) => return Err(RunError::Sys(Error::new("poll", e))),
    }
    let ready = |i: usize| fds[i].revents().is_some_and(|r| !r.is_empty());
    // A fragment's retry is due even though no write was reported.
    let in_ready = in_slot.is_some_and(|i| ready(i) || input.retry_due(Instant::now()));
    Ok((ready(0), in_ready))
}

/// SIGTERM (unless -p) and SIGHUP: stop reading; SIGALRM: rotate; SIGCHLD: reap.
fn handle_signals(
    sigfd: &nix::sys::signalfd::SignalFd,
    opts: &Options,
    out: &mut Outputs,
    input: &mut Input,
    warn: &dyn Warn,
) {
    while let Ok(Some(si)) = sigfd.read_signal() {
        let now = Instant::now();
        match Signal::try_from(si.ssi_signo as i32) {
            Ok(Signal::SIGTERM) if !opts.protect => input.stop(),
            Ok(Signal::SIGHUP) => input.stop(),
            Ok(Signal::SIGALRM) => out.logdirs.iter_mut().for_each(Logdir::force_rotation),
            Ok(Signal::SIGCHLD) => reap(&mut out.logdirs, now, warn),
            _ => {}
        }
    }
}

fn reap(logdirs: &mut [Logdir], now: Instant, warn: &dyn Warn) {
    for l in logdirs.iter_mut() {
        if let Some(pid) = l.processor_pid() {
            match wait::reap(Some(pid)) {
                Ok(None) => {}
                Ok(Some((_, st))) => l.reaped(Ok(st), now, warn),
                Err(e) => l.reaped(Err(e), now, warn),
            }
        }
    }
}

/// Take what stdin has, and dispatch every complete line of it (only the first one
/// when stopping).
fn read_input(
    input: &mut Input,
    stdin: BorrowedFd<'_>,
    now: Instant,
    limit: usize,
    script: &Script,
    out: &mut Outputs,
    warn: &dyn Warn,
) {
    input.fill(stdin, now, warn);
    stamp(script, out);
    let plain = plain_logdir(script);
    if let Some((_, f)) = plain {
        // One head for every line of this read (they share the stamp), with a block of
        // room after it for `format::append_in`.
        out.head.clear();
        format::head(&mut out.head, f, &out.stamps);
        out.head_len = out.head.len();
        out.head.resize(out.head_len + 32, 0);
    }
    let mut dispatched = false;
    loop {
        if let Some((i, _)) = plain
            && !input.stopping
        {
            let l = &mut out.logdirs[i];
            let head = &out.head;
            let taken =
                format::plain_lines(&mut l.pending, head, out.head_len, input.unsplit(), limit);
            if taken.used > 0 {
                input.consume(taken.used);
                l.soft_records(taken.soft);
                dispatched = true;
            }
        }
        // Every line of other scripts; of a plain one, what `plain_lines` left: a line
        // over the limit, the buffer's tail, the EOF fragment, the one line after a stop.
        let Some((r, soft)) = input.next_line(limit) else {
            break;
        };
        out.soft_end = soft;
        dispatch(script, out, &input.buf[r.start..], r.len());
        dispatched = true;
        if input.stopping {
            break;
        }
    }
    // What one read delivered ends on a boundary, as with s6-log, which writes each
    // read's records at once and may rotate after them.
    for l in &mut out.logdirs {
        l.end_of_read();
    }
    input.lines_done(dispatched);
}

fn flush(out: &mut Outputs, stderr: &std::io::Stderr, now: Instant, warn: &dyn Warn) {
    for l in &mut out.logdirs {
        l.flush(now, warn);
    }
    if out.stdout_on {
        while out.stdout_written < out.stdout.len() {
            let so = std::io::stdout();
            let fd = out.stdout_fd(&so);
            match nix::unistd::write(fd, &out.stdout[out.stdout_written..]) {
                Ok(n) => out.stdout_written += n,
                Err(Errno::EINTR) => {}
                Err(Errno::EAGAIN) => break,
                Err(e) => {
                    warn.warn(&Error::at("write to", "stdout", e));
                    out.stdout_on = false;
                    break;
                }
            }
        }
        if out.stdout_written == out.stdout.len() || !out.stdout_on {
            out.stdout.clear();
            out.stdout_written = 0;
        }
    }
    if !out.alerts.is_empty() {
        let mut done = 0;
        while done < out.alerts.len() {
            match nix::unistd::write(stderr.as_fd(), &out.alerts[done..]) {
                Ok(n) => done += n,
                Err(Errno::EINTR) => {}
                Err(Errno::EAGAIN) => {
                    let mut f = [PollFd::new(stderr.as_fd(), PollFlags::POLLOUT)];
                    let _ = poll(&mut f, PollTimeout::from(1000u16));
                }
                Err(_) => break,
            }
        }
        out.alerts.clear();
    }
    // Oldest first (a handful of files: a scan per file, no allocation).
    while let Some(st) = out
        .statuses
        .iter_mut()
        .filter(|s| s.dirty)
        .min_by_key(|s| s.seq)
    {
        st.dirty = false;
        if let Err(e) = write_status(st) {
            warn.warn(&e);
        }
    }
}

fn write_status(st: &Status) -> Result<(), Error> {
    let fd = openf(&st.new, How::Trunc, 0o666)?;
    let err = |e| Error::at("write", &st.new, e);
    tend_sys::fd::write_all(fd.as_fd(), &st.buf).map_err(err)?;
    let nl = [b'\n'; 4096];
    let mut pad = st.pad;
    while pad > 0 {
        let n = pad.min(nl.len());
        tend_sys::fd::write_all(fd.as_fd(), &nl[..n]).map_err(err)?;
        pad -= n;
    }
    drop(fd);
    std::fs::rename(&st.new, &st.path).map_err(|e| Error::io("rename", &st.new, &e))
}
