//! runit's `control/` overrides (runsv(8), "CUSTOMIZE CONTROL"), so that a runit service
//! directory behaves under tend-supervise as under runsv.
//!
//! An executable `control/LETTER` is run (in the service directory, with the supervisor's
//! stdout, which is the log pipe under a scanner, and its environment) when the letter
//! arrives; the supervisor waits for it, as runsv does:
//!
//! - `t k p c a h i q 1 2`, while ./run is up: exit 0 means the script did the job, and
//!   the letter is dropped (no signal; for `p`/`c` the paused flag is not changed either,
//!   where runsv still changes it).
//! - `d`, `x`, while up: `control/t` stands in for the down-signal (exit 0: not sent);
//!   SIGCONT is sent as usual; then `control/d` (`control/x`) runs, its exit ignored.
//! - `u`: `control/u` runs before every start of ./run, its exit ignored.
//!
//! Only a file that exists and is executable (by its owner, as runsv checks) counts; the
//! check is one stat(2) of a literal path, so a directory without `control/` costs nothing
//! more per letter.

use crate::core::Action;
use nix::sys::stat::{Mode, SFlag};
use std::ffi::{CStr, CString};
use tend_sys::exec::Prepared;
use tend_sys::process::{self, SpawnOptions};

/// What the override scripts decided for one control letter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// No override: act on the letter.
    None,
    /// `control/LETTER` exited 0: drop the letter.
    Replaced,
    /// `control/t` exited 0 for `d`/`x`: act on the letter, without its down-signal.
    NoTerm,
}

const fn path(letter: u8) -> [u8; 10] {
    let mut p = *b"control/?\0";
    p[8] = letter;
    p
}

/// Run `control/LETTER` if it is an executable file; Some(exited 0), or None if absent.
fn run(letter: u8) -> Option<bool> {
    let p = path(letter);
    let c = CStr::from_bytes_with_nul(&p).ok()?;
    let st = nix::sys::stat::stat(c).ok()?;
    let kind = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT;
    if kind != SFlag::S_IFREG || st.st_mode & Mode::S_IXUSR.bits() == 0 {
        return None;
    }
    let prog = Prepared {
        candidates: vec![CString::from(c)],
        argv: vec![CString::from(c)],
        envp: Vec::new(),
        inherit_env: true,
    };
    let pid = process::spawn(&prog, &SpawnOptions::default()).ok()?;
    match tend_sys::wait::wait(Some(pid)) {
        Ok((_, w)) => Some(w.exit_code() == Some(0)),
        Err(_) => Some(false),
    }
}

/// Before a control letter is acted on: run the override that stands in for it.
pub fn before(letter: u8, up: bool) -> Hook {
    match letter {
        b't' | b'k' | b'p' | b'c' | b'a' | b'h' | b'i' | b'q' | b'1' | b'2' if up => {
            if run(letter) == Some(true) {
                Hook::Replaced
            } else {
                Hook::None
            }
        }
        b'd' | b'x' if up => {
            if run(b't') == Some(true) {
                Hook::NoTerm
            } else {
                Hook::None
            }
        }
        _ => Hook::None,
    }
}

/// After `d` or `x` took a running service down: `control/d` or `control/x`.
pub fn after(letter: u8, was_up: bool) {
    if was_up && matches!(letter, b'd' | b'x') {
        let _ = run(letter);
    }
}

/// Before ./run starts: `control/u`.
pub fn before_start() {
    let _ = run(b'u');
}

/// Whether an action of the letter's stays under `hook` (NoTerm drops the signals sent to
/// the service other than SIGCONT).
pub fn keeps(hook: Hook, a: &Action) -> bool {
    match (hook, a) {
        (Hook::NoTerm, Action::Kill { sig, .. } | Action::KillGroup { sig, .. }) => {
            *sig == nix::sys::signal::Signal::SIGCONT
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_filters() {
        assert_eq!(&path(b't'), b"control/t\0");
        let term = Action::Kill {
            pid: 5,
            sig: libc::SIGTERM,
        };
        let cont = Action::KillGroup {
            pid: 5,
            sig: libc::SIGCONT,
        };
        assert!(!keeps(Hook::NoTerm, &term));
        assert!(keeps(Hook::NoTerm, &cont));
        assert!(keeps(Hook::None, &term));
        assert!(keeps(Hook::NoTerm, &Action::WriteStatus));
        // Not up: nothing to override, nothing run.
        assert_eq!(before(b't', false), Hook::None);
    }
}
