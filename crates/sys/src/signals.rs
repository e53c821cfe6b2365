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

/// The signal's name as s6 prints it (`SIGTERM`), or None for unknown numbers.
pub fn name(signo: i32) -> Option<&'static str> {
    Signal::try_from(signo).ok().map(|s| s.as_str())
}
