//! Sessions and process groups, as s6-setsid changes them.

use crate::sys::Error;
use nix::sys::signal::Signal;
use nix::unistd::{Pid, getpid, setpgid, setsid};

/// What to become.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `-s`: leader of a new session (the default).
    Session,
    /// `-b`: leader of a new process group, in the background.
    Background,
    /// `-f`: leader of a new process group made the terminal's foreground group.
    Foreground,
    /// `-g`: as `-f`, grabbing the terminal even from a running foreground group.
    Grab,
}

/// Make the change. Every step is tried even if an earlier one failed (as s6 does); the
/// failures are returned in order, so the caller can warn about each or stop at the first.
pub fn apply(mode: Mode, ctty: i32) -> Vec<Error> {
    let mut failed = Vec::new();
    match mode {
        Mode::Session => {
            if let Err(e) = setsid() {
                failed.push(Error::new("setsid", e));
            }
        }
        _ => {
            if let Err(e) = setpgid(Pid::from_raw(0), Pid::from_raw(0)) {
                failed.push(Error::new("setpgid", e));
            }
            if matches!(mode, Mode::Foreground | Mode::Grab) {
                // tcsetpgrp from a background group raises SIGTTOU unless it is ignored.
                let grab = mode == Mode::Grab;
                if grab && let Err(e) = crate::sys::signals::ignore(Signal::SIGTTOU) {
                    failed.push(Error::new("ignore SIGTTOU", e));
                }
                let result = crate::sys::fd::set_foreground(ctty, getpid());
                if let Err(e) = result {
                    failed.push(Error::new("tcsetpgrp", e));
                }
                if grab && let Err(e) = crate::sys::signals::default(Signal::SIGTTOU) {
                    failed.push(Error::new("restore SIGTTOU", e));
                }
            }
        }
    }
    failed
}
