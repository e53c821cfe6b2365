//! What the scanner is asked to do: control letters (`.s6-svscan/control`, written by
//! tend-svscanctl or s6-svscanctl) and signals, both turned into the same few wishes.

use crate::table::Kill;
use nix::sys::signal::Signal;
use tend_proto::servicedir::svscan;

/// One command, as s6-svscanctl's letters name them: the wire's own type, in proto.
pub use tend_proto::control::{SCAN_LETTERS as LETTERS, ScanCommand as Command};

/// The scanner's pending wishes, applied once per turn of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wants {
    pub reap: bool,
    pub scan: bool,
    pub kill: Option<Kill>,
    /// Keep running (false once told to stop).
    pub run: bool,
    /// When stopping, wait for every supervisor to exit first (false after abort).
    pub wait: bool,
}

impl Default for Wants {
    /// At start: reap and scan once.
    fn default() -> Wants {
        Wants {
            reap: true,
            scan: true,
            kill: None,
            run: true,
            wait: true,
        }
    }
}

impl Wants {
    /// Take one command into account (a later kill replaces an earlier one, as in s6).
    pub fn apply(&mut self, c: Command) {
        match c {
            Command::Reap => self.reap = true,
            Command::Scan => self.scan = true,
            Command::Abort => {
                self.run = false;
                self.wait = false;
            }
            Command::Reload => {
                self.kill = Some(Kill::PRUNE);
                self.scan = true;
            }
            Command::Terminate => {
                self.run = false;
                self.wait = true;
                self.kill = Some(Kill::TERMINATE);
            }
            Command::Quit => {
                self.run = false;
                self.wait = true;
                self.kill = Some(Kill::QUIT);
            }
            Command::Prune => self.kill = Some(Kill::PRUNE),
            Command::PruneHard => self.kill = Some(Kill::PRUNE_HARD),
        }
    }
}

/// Signals the scanner takes: SIGCHLD, SIGALRM and SIGABRT are fixed; the others run
/// `.s6-svscan/SIGNAME` if it can be spawned, else fall back to their default.
pub const SIGNALS: [Signal; 11] = [
    Signal::SIGCHLD,
    Signal::SIGALRM,
    Signal::SIGABRT,
    Signal::SIGHUP,
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
    Signal::SIGPWR,
    Signal::SIGWINCH,
];

/// What a received signal means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnSignal {
    /// A fixed meaning.
    Fixed(Command),
    /// Run `.s6-svscan/<name>`; if that cannot be spawned, apply the fallback (if any).
    Divert {
        script: &'static str,
        fallback: Option<Command>,
    },
    /// Not one of ours.
    Ignore,
}

/// Map a signal to its meaning.
pub fn on_signal(sig: Signal) -> OnSignal {
    use Signal::*;
    let divert = |script, fallback| OnSignal::Divert { script, fallback };
    match sig {
        SIGCHLD => OnSignal::Fixed(Command::Reap),
        SIGALRM => OnSignal::Fixed(Command::Scan),
        SIGABRT => OnSignal::Fixed(Command::Abort),
        SIGHUP => divert(svscan::SIGHUP, Some(Command::Reload)),
        SIGINT => divert(svscan::SIGINT, Some(Command::Terminate)),
        SIGTERM => divert(svscan::SIGTERM, Some(Command::Terminate)),
        SIGQUIT => divert(svscan::SIGQUIT, Some(Command::Quit)),
        SIGUSR1 => divert(svscan::SIGUSR1, None),
        SIGUSR2 => divert(svscan::SIGUSR2, None),
        SIGPWR => divert(svscan::SIGPWR, None),
        SIGWINCH => divert(svscan::SIGWINCH, None),
        _ => OnSignal::Ignore,
    }
}

/// runsvdir(8)'s meaning of `sig`, where it differs from s6-svscan's: what to send the
/// supervisors, then the exit code. SIGTERM exits 0 at once, every supervisor left running
/// (a new runsvdir finds them holding their locks); SIGHUP sends SIGTERM to every
/// supervisor (loggers drain, as after `-t`) and exits 111 without waiting.
pub fn on_signal_runsvdir(sig: Signal) -> Option<(Option<Kill>, i32)> {
    match sig {
        Signal::SIGTERM => Some((None, 0)),
        Signal::SIGHUP => Some((Some(Kill::TERMINATE), 111)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_letter_decodes_and_nothing_else() {
        for b in LETTERS.bytes() {
            assert!(Command::from_byte(b).is_some(), "{}", b as char);
        }
        assert_eq!(Command::from_byte(b'i'), Some(Command::Terminate));
        for b in (0u8..=255).filter(|b| !b"zabhitqnN".contains(b)) {
            assert_eq!(Command::from_byte(b), None, "{b}");
        }
    }

    fn after(letters: &str) -> Wants {
        let mut w = Wants {
            reap: false,
            scan: false,
            ..Wants::default()
        };
        for b in letters.bytes() {
            w.apply(Command::from_byte(b).unwrap());
        }
        w
    }

    #[test]
    fn letter_matrix() {
        let base = after("");
        assert_eq!(after("z"), Wants { reap: true, ..base });
        assert_eq!(after("a"), Wants { scan: true, ..base });
        assert_eq!(
            after("b"),
            Wants {
                run: false,
                wait: false,
                ..base
            }
        );
        assert_eq!(
            after("h"),
            Wants {
                scan: true,
                kill: Some(Kill::PRUNE),
                ..base
            }
        );
        let term = Wants {
            run: false,
            kill: Some(Kill::TERMINATE),
            ..base
        };
        assert_eq!(after("t"), term);
        assert_eq!(after("i"), term);
        assert_eq!(
            after("q"),
            Wants {
                run: false,
                kill: Some(Kill::QUIT),
                ..base
            }
        );
        assert_eq!(
            after("n"),
            Wants {
                kill: Some(Kill::PRUNE),
                ..base
            }
        );
        assert_eq!(
            after("N"),
            Wants {
                kill: Some(Kill::PRUNE_HARD),
                ..base
            }
        );
        // -an: scan, then prune; "tb": kill everyone but do not wait.
        assert_eq!(
            after("an"),
            Wants {
                scan: true,
                kill: Some(Kill::PRUNE),
                ..base
            }
        );
        assert_eq!(
            after("tb"),
            Wants {
                run: false,
                wait: false,
                kill: Some(Kill::TERMINATE),
                ..base
            }
        );
    }

    #[test]
    fn signal_matrix() {
        use Signal::*;
        assert_eq!(on_signal(SIGCHLD), OnSignal::Fixed(Command::Reap));
        assert_eq!(on_signal(SIGALRM), OnSignal::Fixed(Command::Scan));
        assert_eq!(on_signal(SIGABRT), OnSignal::Fixed(Command::Abort));
        for (s, f) in [
            (SIGHUP, Some(Command::Reload)),
            (SIGINT, Some(Command::Terminate)),
            (SIGTERM, Some(Command::Terminate)),
            (SIGQUIT, Some(Command::Quit)),
            (SIGUSR1, None),
            (SIGUSR2, None),
            (SIGPWR, None),
            (SIGWINCH, None),
        ] {
            match on_signal(s) {
                OnSignal::Divert { script, fallback } => {
                    assert_eq!(
                        script,
                        format!("{}/{}", tend_proto::servicedir::SVSCAN, s.as_str())
                    );
                    assert_eq!(fallback, f);
                }
                other => panic!("{s}: {other:?}"),
            }
        }
        assert_eq!(on_signal(SIGUSR1 as Signal), on_signal(SIGUSR1));
        assert_eq!(on_signal(SIGSEGV), OnSignal::Ignore);
        for s in SIGNALS {
            assert_ne!(on_signal(s), OnSignal::Ignore);
        }
    }
}
