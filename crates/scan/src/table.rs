//! The scanner's memory and its decisions, without processes.
//!
//! One fixed record per service directory found in the scan directory, keyed by the
//! directory's (device, inode) so a rename does not restart anything. A record remembers
//! the pids of the service's supervisor and of its logger's supervisor, when each may be
//! (re)started, the pipe between them (held by the scanner for as long as either side is
//! in the tree), and whether the last scan saw the directory.
//!
//! Everything here is pure: the event loop (`crate::scanner`) does the system calls and
//! tells the table what it saw (a directory, a dead child); the table answers with what to
//! do (start this supervisor, close that pipe, signal those pids). The rules are s6-svscan
//! 2.11's:
//!
//! * a scan marks every record inactive, then reactivates the ones it finds; a new
//!   directory gets a record (and a pipe if it has a `log/` service directory), unless
//!   `max` records already exist;
//! * a supervisor whose record is active and whose restart time has come is started;
//! * a dead supervisor of an active record is restarted one second later; of an inactive
//!   logged record, the pipe is closed at once so the other side sees EOF or EPIPE, and the
//!   record goes once both supervisors are dead;
//! * a record whose pipe was closed that way is not reused while its other supervisor
//!   lives; if its directory comes back, a new scan is asked for once that supervisor dies.

use nix::sys::signal::Signal;
use std::collections::HashMap;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// Which of a record's two supervisors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The service's own supervisor (`tend-supervise foo`).
    Main = 0,
    /// The logger's supervisor (`tend-supervise foo/log`).
    Log = 1,
}

/// A directory's identity: (st_dev, st_ino).
pub type Key = (u64, u64);

/// The pipe from a service's stdout to its logger's stdin, as the scanner holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pipe {
    /// The service has no logger.
    None,
    /// Both ends held by the scanner.
    Open { read: RawFd, write: RawFd },
    /// Closed early because the directory went away and one supervisor died.
    Closed,
    /// Closed, and the directory has come back: scan again when the other side dies.
    ClosedComeback,
}

/// One service directory: a small fixed record (no name, no heap).
#[derive(Debug, Clone, Copy)]
pub struct Record {
    /// Supervisor pids, 0 when not running, indexed by `Side`.
    pub pid: [i32; 2],
    /// Do not (re)start a side before this instant.
    pub restart_after: [Instant; 2],
    pub pipe: Pipe,
    /// Seen by the last scan.
    pub active: bool,
}

impl Record {
    pub fn logged(&self) -> bool {
        self.pipe != Pipe::None
    }
}

/// What the table knows about a directory the scan found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// Already in the tree.
    Known,
    /// Leaving the tree (pipe closed); it is left alone until its last supervisor dies.
    Leaving,
    /// Not in the tree, and there is room for it.
    New,
    /// Not in the tree, and `max` services are already there.
    Full,
}

/// Which supervisors of a record to start now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Starts {
    pub log: bool,
    pub main: bool,
}

/// What a reaped pid meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reaped {
    /// Not one of our supervisors (a signal script, or an orphan when we are PID 1).
    Stranger,
    /// A supervisor of a service still in the tree: restart it in one second.
    Restart,
    /// A supervisor of a service leaving the tree. `close` is the pipe to close now, if
    /// any; `rescan` asks for a scan because the directory came back meanwhile.
    Left {
        close: Option<(RawFd, RawFd)>,
        rescan: bool,
    },
}

/// Who to signal, and with what (s6-svscan's `wantkill` bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kill {
    /// Include services still in the tree (else only those that left it).
    pub everyone: bool,
    /// Signal for a service's supervisor (SIGTERM = bring it down and exit).
    pub main: Signal,
    /// Signal for a logger's supervisor (SIGHUP = exit when the logger exits).
    pub log: Signal,
}

impl Kill {
    /// `-n`, `-h`, SIGHUP: prune, letting loggers drain.
    pub const PRUNE: Kill = Kill {
        everyone: false,
        main: Signal::SIGTERM,
        log: Signal::SIGHUP,
    };
    /// `-N`: prune, loggers too.
    pub const PRUNE_HARD: Kill = Kill {
        everyone: false,
        main: Signal::SIGTERM,
        log: Signal::SIGTERM,
    };
    /// `-t`, `-i`, SIGTERM, SIGINT: the whole tree, loggers drain.
    pub const TERMINATE: Kill = Kill {
        everyone: true,
        main: Signal::SIGTERM,
        log: Signal::SIGHUP,
    };
    /// `-q`, SIGQUIT: the whole tree, loggers too.
    pub const QUIT: Kill = Kill {
        everyone: true,
        main: Signal::SIGTERM,
        log: Signal::SIGTERM,
    };
}

/// Delay before a dead supervisor of an active service is started again.
pub const RESTART_DELAY: Duration = Duration::from_secs(1);
/// Delay before retrying after a failed stat/opendir/pipe (s6: DIR_RETRY_TIMEOUT).
pub const DIR_RETRY_DELAY: Duration = Duration::from_secs(3);
/// Delay before retrying a supervisor that could not be forked (s6: CHECK_RETRY_TIMEOUT).
pub const FORK_RETRY_DELAY: Duration = Duration::from_secs(4);

/// Every record, and when the loop must wake up next.
#[derive(Debug)]
pub struct Table {
    recs: HashMap<Key, Record>,
    max: usize,
    deadline: Option<Instant>,
}

impl Table {
    /// A table for at most `max` services; the space is reserved once, here.
    pub fn new(max: usize) -> Table {
        Table {
            recs: HashMap::with_capacity(max),
            max,
            deadline: None,
        }
    }

    pub fn len(&self) -> usize {
        self.recs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.recs.is_empty()
    }

    pub fn get(&self, key: Key) -> Option<&Record> {
        self.recs.get(&key)
    }

    /// When the loop must run a scan even without an event (restart times, `-t`).
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    fn wake_at(&mut self, t: Instant) {
        if self.deadline.is_none_or(|d| t < d) {
            self.deadline = Some(t);
        }
    }

    /// Start of a scan: nothing is active until seen; the next periodic scan is `rescan`
    /// from now (never if None).
    pub fn begin_scan(&mut self, now: Instant, rescan: Option<Duration>) {
        self.deadline = rescan.map(|d| now + d);
        for r in self.recs.values_mut() {
            r.active = false;
        }
    }

    /// Something failed while scanning: try again a little later.
    pub fn retry_later(&mut self, now: Instant) {
        self.wake_at(now + DIR_RETRY_DELAY);
    }

    /// A directory the scan found.
    pub fn lookup(&mut self, key: Key) -> Lookup {
        let full = self.recs.len() >= self.max;
        match self.recs.get_mut(&key) {
            Some(r) if matches!(r.pipe, Pipe::Closed | Pipe::ClosedComeback) => {
                r.pipe = Pipe::ClosedComeback;
                Lookup::Leaving
            }
            Some(_) => Lookup::Known,
            None if full => Lookup::Full,
            None => Lookup::New,
        }
    }

    /// Add a new directory (after `lookup` said `New`); `pipe` is `Open` if it is logged.
    pub fn insert(&mut self, key: Key, pipe: Pipe, now: Instant) {
        self.recs.insert(
            key,
            Record {
                pid: [0, 0],
                restart_after: [now, now],
                pipe,
                active: false,
            },
        );
    }

    /// Mark a found directory active and say which supervisors to start now. Those whose
    /// restart time has not come set the deadline instead.
    pub fn activate(&mut self, key: Key, now: Instant) -> Starts {
        let Some(r) = self.recs.get_mut(&key) else {
            return Starts::default();
        };
        r.active = true;
        let mut starts = Starts::default();
        let mut later: Option<Instant> = None;
        let logged = r.logged();
        for (side, want) in [(Side::Log, logged), (Side::Main, true)] {
            let i = side as usize;
            if !want || r.pid[i] != 0 {
                continue;
            }
            if r.restart_after[i] <= now {
                match side {
                    Side::Log => starts.log = true,
                    Side::Main => starts.main = true,
                }
            } else {
                let t = r.restart_after[i];
                later = Some(later.map_or(t, |l: Instant| l.min(t)));
            }
        }
        if let Some(t) = later {
            self.wake_at(t);
        }
        starts
    }

    /// A supervisor was started.
    pub fn started(&mut self, key: Key, side: Side, pid: i32) {
        if let Some(r) = self.recs.get_mut(&key) {
            r.pid[side as usize] = pid;
        }
    }

    /// A supervisor could not be started: retry after `delay`.
    pub fn start_failed(&mut self, key: Key, side: Side, now: Instant, delay: Duration) {
        if let Some(r) = self.recs.get_mut(&key) {
            r.restart_after[side as usize] = now + delay;
            self.wake_at(now + delay);
        }
    }

    /// End of a scan: records not seen whose supervisors are all dead go, and their pipes
    /// are handed to `close`.
    pub fn end_scan(&mut self, mut close: impl FnMut(RawFd, RawFd)) {
        self.recs.retain(|_, r| {
            if r.active || r.pid[0] != 0 || r.pid[1] != 0 {
                return true;
            }
            if let Pipe::Open { read, write } = r.pipe {
                close(read, write);
            }
            false
        });
    }

    /// A child died. Records of services that left the tree go once both sides are dead.
    pub fn reaped(&mut self, pid: i32, now: Instant) -> Reaped {
        if pid <= 0 {
            return Reaped::Stranger;
        }
        let found = self.recs.iter_mut().find_map(|(k, r)| {
            let side = if r.pid[0] == pid {
                0
            } else if r.pid[1] == pid {
                1
            } else {
                return None;
            };
            r.pid[side] = 0;
            r.restart_after[side] = now + RESTART_DELAY;
            Some(*k)
        });
        let Some(key) = found else {
            return Reaped::Stranger;
        };
        let Some(r) = self.recs.get_mut(&key) else {
            return Reaped::Stranger;
        };
        if r.active {
            self.wake_at(now + RESTART_DELAY);
            return Reaped::Restart;
        }
        let mut close = None;
        let mut rescan = false;
        match r.pipe {
            Pipe::Open { read, write } => {
                close = Some((read, write));
                r.pipe = Pipe::Closed;
            }
            Pipe::ClosedComeback => rescan = true,
            Pipe::Closed | Pipe::None => {}
        }
        if r.pid[0] == 0 && r.pid[1] == 0 {
            self.recs.remove(&key);
        }
        Reaped::Left { close, rescan }
    }

    /// Hand every supervisor `kill` selects to `send`.
    pub fn kill(&self, kill: Kill, mut send: impl FnMut(i32, Signal)) {
        for r in self.recs.values() {
            if r.active && !kill.everyone {
                continue;
            }
            if r.pid[0] != 0 {
                send(r.pid[0], kill.main);
            }
            if r.logged() && r.pid[1] != 0 {
                send(r.pid[1], kill.log);
            }
        }
    }

    /// Whether any supervisor is still alive.
    pub fn any_supervisor(&self) -> bool {
        self.recs.values().any(|r| r.pid[0] != 0 || r.pid[1] != 0)
    }

    /// Forget a dead supervisor without restart bookkeeping (shutdown).
    pub fn forget(&mut self, pid: i32) {
        for r in self.recs.values_mut() {
            for p in &mut r.pid {
                if *p == pid {
                    *p = 0;
                }
            }
        }
    }

    /// Shutdown: hand every held pipe to `close`.
    pub fn close_all(&mut self, mut close: impl FnMut(RawFd, RawFd)) {
        for r in self.recs.values_mut() {
            if let Pipe::Open { read, write } = r.pipe {
                close(read, write);
                r.pipe = Pipe::Closed;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Key = (1, 10);
    const B: Key = (1, 11);
    const PIPE: Pipe = Pipe::Open { read: 5, write: 6 };

    fn t0() -> Instant {
        Instant::now()
    }

    /// One scan that finds `found` (key, logged) at `now`; returns the starts, after
    /// recording fake pids (key.1 * 10 + side) for them.
    fn scan(tab: &mut Table, found: &[(Key, bool)], now: Instant) -> Vec<(Key, Side)> {
        tab.begin_scan(now, None);
        let mut out = Vec::new();
        for &(k, logged) in found {
            match tab.lookup(k) {
                Lookup::New => tab.insert(k, if logged { PIPE } else { Pipe::None }, now),
                Lookup::Known => {}
                Lookup::Leaving | Lookup::Full => continue,
            }
            let s = tab.activate(k, now);
            if s.log {
                tab.started(k, Side::Log, (k.1 * 10 + 1) as i32);
                out.push((k, Side::Log));
            }
            if s.main {
                tab.started(k, Side::Main, (k.1 * 10) as i32);
                out.push((k, Side::Main));
            }
        }
        tab.end_scan(|_, _| {});
        out
    }

    #[test]
    fn a_record_is_small_and_fixed() {
        // Two pids, two restart instants, the pipe, a flag: what the table grows by per
        // service (plus the key and hashbrown's control byte).
        assert!(
            std::mem::size_of::<Record>() <= 64,
            "{}",
            std::mem::size_of::<Record>()
        );
    }

    #[test]
    fn new_dirs_start_logger_first_then_service() {
        let mut tab = Table::new(10);
        let now = t0();
        let s = scan(&mut tab, &[(A, true), (B, false)], now);
        assert_eq!(s, vec![(A, Side::Log), (A, Side::Main), (B, Side::Main)]);
        assert_eq!(tab.get(A).unwrap().pid, [100, 101]);
        assert_eq!(tab.deadline(), None);
    }

    #[test]
    fn rescan_with_nothing_changed_starts_nothing() {
        let mut tab = Table::new(10);
        let now = t0();
        scan(&mut tab, &[(A, true), (B, false)], now);
        assert!(scan(&mut tab, &[(B, false), (A, true)], now).is_empty());
        assert_eq!(tab.len(), 2);
    }

    #[test]
    fn periodic_rescan_sets_deadline() {
        let mut tab = Table::new(10);
        let now = t0();
        tab.begin_scan(now, Some(Duration::from_millis(500)));
        assert_eq!(tab.deadline(), Some(now + Duration::from_millis(500)));
    }

    #[test]
    fn dead_active_supervisor_restarts_one_second_later() {
        let mut tab = Table::new(10);
        let now = t0();
        scan(&mut tab, &[(A, true)], now);
        assert_eq!(tab.reaped(100, now), Reaped::Restart);
        assert_eq!(tab.deadline(), Some(now + RESTART_DELAY));
        // A scan before the second is up starts nothing but keeps the deadline.
        let soon = now + Duration::from_millis(300);
        assert!(scan(&mut tab, &[(A, true)], soon).is_empty());
        assert_eq!(tab.deadline(), Some(now + RESTART_DELAY));
        // Once it has passed, only the dead side starts.
        let later = now + RESTART_DELAY;
        assert_eq!(scan(&mut tab, &[(A, true)], later), vec![(A, Side::Main)]);
        assert_eq!(tab.get(A).unwrap().pid, [100, 101]);
    }

    #[test]
    fn dead_logger_supervisor_restarts_and_pipe_stays() {
        let mut tab = Table::new(10);
        let now = t0();
        scan(&mut tab, &[(A, true)], now);
        assert_eq!(tab.reaped(101, now), Reaped::Restart);
        let later = now + RESTART_DELAY;
        assert_eq!(scan(&mut tab, &[(A, true)], later), vec![(A, Side::Log)]);
        assert_eq!(tab.get(A).unwrap().pipe, PIPE);
    }

    #[test]
    fn unknown_pids_are_strangers() {
        let mut tab = Table::new(10);
        scan(&mut tab, &[(A, false)], t0());
        assert_eq!(tab.reaped(4242, t0()), Reaped::Stranger);
        assert_eq!(tab.reaped(0, t0()), Reaped::Stranger);
        assert_eq!(tab.get(A).unwrap().pid, [100, 0]);
    }

    #[test]
    fn removed_dir_is_inactive_and_kept_while_supervised() {
        let mut tab = Table::new(10);
        let now = t0();
        scan(&mut tab, &[(A, false), (B, false)], now);
        assert!(scan(&mut tab, &[(B, false)], now).is_empty());
        let a = tab.get(A).unwrap();
        assert!(!a.active);
        assert_eq!(a.pid, [100, 0]);
        // Inactive and dead: gone, and never restarted.
        assert_eq!(
            tab.reaped(100, now),
            Reaped::Left {
                close: None,
                rescan: false
            }
        );
        assert!(tab.get(A).is_none());
        assert_eq!(tab.deadline(), None);
    }

    #[test]
    fn removed_logged_dir_closes_pipe_on_first_death_then_goes() {
        let mut tab = Table::new(10);
        let now = t0();
        scan(&mut tab, &[(A, true)], now);
        scan(&mut tab, &[], now);
        assert_eq!(
            tab.reaped(100, now),
            Reaped::Left {
                close: Some((5, 6)),
                rescan: false
            }
        );
        assert_eq!(tab.get(A).unwrap().pipe, Pipe::Closed);
        assert_eq!(
            tab.reaped(101, now),
            Reaped::Left {
                close: None,
                rescan: false
            }
        );
        assert!(tab.get(A).is_none());
    }

    #[test]
    fn comeback_while_leaving_waits_then_rescans() {
        let mut tab = Table::new(10);
        let now = t0();
        scan(&mut tab, &[(A, true)], now);
        scan(&mut tab, &[], now);
        tab.reaped(101, now); // logger side died: pipe closed
        // The directory is back: nothing starts, the pipe is not reused.
        assert!(scan(&mut tab, &[(A, true)], now).is_empty());
        assert_eq!(tab.get(A).unwrap().pipe, Pipe::ClosedComeback);
        // When the last side dies the record goes and a rescan is asked for, which
        // then starts a fresh pair with a fresh pipe.
        assert_eq!(
            tab.reaped(100, now),
            Reaped::Left {
                close: None,
                rescan: true
            }
        );
        assert!(tab.get(A).is_none());
        assert_eq!(
            scan(&mut tab, &[(A, true)], now),
            vec![(A, Side::Log), (A, Side::Main)]
        );
    }

    #[test]
    fn inactive_record_without_supervisors_is_dropped_and_pipe_closed() {
        let mut tab = Table::new(10);
        let now = t0();
        tab.begin_scan(now, None);
        assert_eq!(tab.lookup(A), Lookup::New);
        tab.insert(A, PIPE, now);
        tab.activate(A, now);
        // Both starts failed (no pids) and the directory vanished.
        tab.begin_scan(now, None);
        let mut closed = vec![];
        tab.end_scan(|r, w| closed.push((r, w)));
        assert_eq!(closed, vec![(5, 6)]);
        assert!(tab.is_empty());
    }

    #[test]
    fn max_is_enforced_and_a_logged_pair_counts_once() {
        let mut tab = Table::new(2);
        let now = t0();
        tab.begin_scan(now, None);
        for k in [A, B] {
            assert_eq!(tab.lookup(k), Lookup::New);
            tab.insert(k, PIPE, now);
            tab.activate(k, now);
        }
        assert_eq!(tab.lookup((1, 12)), Lookup::Full);
        assert_eq!(tab.lookup(A), Lookup::Known);
    }

    #[test]
    fn failed_start_is_retried_after_the_delay() {
        let mut tab = Table::new(10);
        let now = t0();
        tab.begin_scan(now, None);
        tab.lookup(A);
        tab.insert(A, Pipe::None, now);
        assert!(tab.activate(A, now).main);
        tab.start_failed(A, Side::Main, now, FORK_RETRY_DELAY);
        assert_eq!(tab.deadline(), Some(now + FORK_RETRY_DELAY));
        tab.end_scan(|_, _| {});
        assert!(scan(&mut tab, &[(A, false)], now + Duration::from_secs(1)).is_empty());
        assert_eq!(
            scan(&mut tab, &[(A, false)], now + FORK_RETRY_DELAY),
            vec![(A, Side::Main)]
        );
    }

    fn kills(tab: &Table, k: Kill) -> Vec<(i32, Signal)> {
        let mut v = vec![];
        tab.kill(k, |p, s| v.push((p, s)));
        v.sort_by_key(|x| x.0);
        v
    }

    #[test]
    fn kill_matrix() {
        use Signal::{SIGHUP, SIGTERM};
        let mut tab = Table::new(10);
        let now = t0();
        scan(&mut tab, &[(A, true), (B, true)], now);
        scan(&mut tab, &[(B, true)], now); // A left the tree
        assert_eq!(
            kills(&tab, Kill::PRUNE),
            vec![(100, SIGTERM), (101, SIGHUP)]
        );
        assert_eq!(
            kills(&tab, Kill::PRUNE_HARD),
            vec![(100, SIGTERM), (101, SIGTERM)]
        );
        assert_eq!(
            kills(&tab, Kill::TERMINATE),
            vec![(100, SIGTERM), (101, SIGHUP), (110, SIGTERM), (111, SIGHUP)]
        );
        assert_eq!(
            kills(&tab, Kill::QUIT),
            vec![
                (100, SIGTERM),
                (101, SIGTERM),
                (110, SIGTERM),
                (111, SIGTERM)
            ]
        );
    }

    #[test]
    fn shutdown_closes_every_pipe_and_tracks_survivors() {
        let mut tab = Table::new(10);
        let now = t0();
        scan(&mut tab, &[(A, true), (B, false)], now);
        let mut closed = vec![];
        tab.close_all(|r, w| closed.push((r, w)));
        assert_eq!(closed, vec![(5, 6)]);
        assert!(tab.any_supervisor());
        for p in [100, 101, 110] {
            tab.forget(p);
        }
        assert!(!tab.any_supervisor());
    }
}
