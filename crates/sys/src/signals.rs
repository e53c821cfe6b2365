//! Signals taken synchronously: block them, then read them from a signalfd in the event
//! loop. Also the two dispositions nix leaves unsafe: ignore and default.

#![allow(unsafe_code)]

use nix::errno::Errno;
use nix::sys::signal::{SigHandler, SigSet, SigmaskHow, Signal, sigprocmask};
use nix::sys::signalfd::{SfdFlags, SignalFd};

/// Block `signals` and return a non-blocking, close-on-exec signalfd that delivers them.
pub fn signalfd(signals: &[Signal]) -> Result<SignalFd, Errno> {
    let mut set = SigSet::empty();
    for s in signals {
        set.add(*s);
    }
    sigprocmask(SigmaskHow::SIG_BLOCK, Some(&set), None)?;
    SignalFd::with_flags(&set, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
}

/// Wait for one of `signals` (which must be blocked), at most `timeout` (None: forever):
/// the signal taken, None on timeout or EINTR. For a loop whose only source is its
/// signals: one system call per signal (rt_sigtimedwait), where poll then a signalfd read
/// costs two and a third for the EAGAIN that ends the drain.
pub fn wait_one(signals: &[Signal], timeout: Option<std::time::Duration>) -> Option<Signal> {
    let mut set = SigSet::empty();
    for s in signals {
        set.add(*s);
    }
    let ts = timeout.map(nix::sys::time::TimeSpec::from_duration);
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t.as_ref() as *const libc::timespec);
    // SAFETY: the set and the timespec live across the call; a null info pointer is
    // allowed (the signal number is the return value).
    let n = unsafe { libc::sigtimedwait(set.as_ref(), std::ptr::null_mut(), ts_ptr) };
    if n < 0 {
        return None;
    }
    Signal::try_from(n).ok()
}

/// Ignore a signal (typically SIGPIPE, so writes to closed pipes return EPIPE).
pub fn ignore(sig: Signal) -> Result<(), Errno> {
    // SAFETY: SIG_IGN installs no handler code, so no handler can run unsafely.
    unsafe { nix::sys::signal::signal(sig, SigHandler::SigIgn) }.map(|_| ())
}

/// Restore a signal's default disposition.
pub fn default(sig: Signal) -> Result<(), Errno> {
    // SAFETY: SIG_DFL installs no handler code.
    unsafe { nix::sys::signal::signal(sig, SigHandler::SigDfl) }.map(|_| ())
}

/// Unblock every signal (before exec'ing into another program).
pub fn unblock_all() -> Result<(), Errno> {
    sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None)
}

/// Signal names as s6 prints them (skalibs' table: `SIGPOLL` for 29, not `SIGIO`).
const NAMES: [&str; 32] = [
    "SIG0",
    "SIGHUP",
    "SIGINT",
    "SIGQUIT",
    "SIGILL",
    "SIGTRAP",
    "SIGABRT",
    "SIGBUS",
    "SIGFPE",
    "SIGKILL",
    "SIGUSR1",
    "SIGSEGV",
    "SIGUSR2",
    "SIGPIPE",
    "SIGALRM",
    "SIGTERM",
    "SIGSTKFLT",
    "SIGCHLD",
    "SIGCONT",
    "SIGSTOP",
    "SIGTSTP",
    "SIGTTIN",
    "SIGTTOU",
    "SIGURG",
    "SIGXCPU",
    "SIGXFSZ",
    "SIGVTALRM",
    "SIGPROF",
    "SIGWINCH",
    "SIGPOLL",
    "SIGPWR",
    "SIGSYS",
];

/// The signal's name as s6 prints it (`SIGTERM`), or None outside 1..=31.
pub fn name(signo: i32) -> Option<&'static str> {
    match signo {
        1..=31 => Some(NAMES[signo as usize]),
        _ => None,
    }
}

/// The number of a signal given by name, the one grammar every tend setting takes: with
/// or without `SIG`, in any case (`SIGTERM`, `TERM`, `term`), from the same table as
/// [`name`], plus `IO` for 29 (Linux's other name, nix's). None for anything else,
/// numbers included: callers that also take numbers say which (an exit code or a signal).
pub fn parse(s: &str) -> Option<i32> {
    let bare = match s.get(..3) {
        Some(p) if p.eq_ignore_ascii_case("SIG") => &s[3..],
        _ => s,
    };
    if bare.eq_ignore_ascii_case("IO") {
        return Some(29);
    }
    (1..=31).find(|&n| NAMES[n as usize][3..].eq_ignore_ascii_case(bare))
}

/// The name without `SIG` (`TERM`), or `???` outside 1..=31 (as s6-svstat prints it).
pub fn short(signo: i32) -> &'static str {
    name(signo).map_or("???", |n| &n[3..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_s6() {
        assert_eq!(name(15), Some("SIGTERM"));
        assert_eq!(short(15), "TERM");
        assert_eq!(short(9), "KILL");
        assert_eq!(short(29), "POLL");
        assert_eq!(short(31), "SYS");
        assert_eq!(short(32), "???");
        assert_eq!(short(0), "???");
        assert_eq!(name(-1), None);
        assert_eq!(parse("SIGTERM"), Some(15));
        assert_eq!(parse("term"), Some(15));
        assert_eq!(parse("SigUsr1"), Some(10));
        assert_eq!(parse("POLL"), Some(29));
        assert_eq!(parse("SIGIO"), Some(29));
        for bad in [
            "",
            "SIG",
            "SIG0",
            "0",
            "15",
            "SIGNOPE",
            "TERM ",
            "SIGSIGTERM",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
        for n in 1..=31 {
            assert_eq!(parse(name(n).unwrap()), Some(n));
        }
        // Every name but 29's is nix's (and the kernel's).
        for n in (1..=31).filter(|&n| n != 29) {
            assert_eq!(name(n), Signal::try_from(n).ok().map(|s| s.as_str()), "{n}");
        }
    }
}
