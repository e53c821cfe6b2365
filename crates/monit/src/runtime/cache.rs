//! What the daemon answers the HTTP interface from: each service's state as last read,
//! read again only once inotify has said one of its files changed (the supervisor's
//! `supervise/`: status, lock, tend-check's verdict; the watcher's `monit-state/`: pid,
//! start-failed, unmonitored), and its /proc numbers sampled at most once a cycle, as
//! monit's own numbers are a cycle old. An XML of 100 unchanged services reads no
//! file but the inotify queue, which is drained when asked: nothing wakes the daemon
//! while services change and nobody asks.

use crate::runtime::status::Measured;
use crate::runtime::status::Service;
use rustix::fs::inotify;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::time::{Duration, Instant};

struct Sample {
    at: Instant,
    pid: i32,
    measured: Measured,
}

struct Entry {
    name: String,
    /// The watches on `supervise/` and `monit-state/`: while either is missing the
    /// service is read at every request.
    watches: [Option<i32>; 2],
    /// Its state as last read, until one of its files changes.
    kept: Option<Service>,
    sample: Option<Sample>,
}

const WATCHED: [&str; 2] = [
    tend_proto::servicedir::SUPERVISE,
    crate::runtime::state::STATE_DIR,
];

pub struct StateCache {
    inotify: Option<OwnedFd>,
    /// The watch on the scan directory: a service directory renamed or removed there (a
    /// reload replacing it) drops what was kept of it.
    scan_watch: Option<i32>,
    entries: Vec<Entry>,
    /// How long /proc numbers are kept: monit's cycle.
    cycle: Duration,
}

impl StateCache {
    /// A cache keeping /proc numbers for one `set daemon` cycle (monit's 30 s without
    /// one). Without inotify (no more instances allowed) every request reads every
    /// service, as before there was a cache.
    pub fn new(c: &crate::reader::model::Control) -> StateCache {
        let cycle = Duration::from_secs(u64::from(c.daemon.unwrap_or(30).max(1)));
        StateCache {
            inotify: inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK)
                .ok(),
            scan_watch: None,
            entries: Vec::new(),
            cycle,
        }
    }

    /// The states of `names` (in that order), read from `scandir` where something
    /// changed since the last time.
    pub fn services(&mut self, scandir: &Path, names: &[String]) -> Vec<Service> {
        if let (Some(fd), None) = (&self.inotify, self.scan_watch) {
            use inotify::WatchFlags as W;
            let names = W::MOVED_FROM | W::MOVED_TO | W::CREATE | W::DELETE;
            self.scan_watch = inotify::add_watch(fd, scandir, names).ok();
        }
        self.drain();
        self.forget_all_but(names);
        let now = tend_proto::Tai64n::now();
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            let i = match self.entries.iter().position(|e| e.name == *name) {
                Some(i) => i,
                None => {
                    self.entries.push(Entry {
                        name: name.clone(),
                        watches: [None, None],
                        kept: None,
                        sample: None,
                    });
                    self.entries.len() - 1
                }
            };
            // Watch first, then read: a change after the read is always seen.
            if let Some(fd) = &self.inotify {
                for (slot, sub) in self.entries[i].watches.iter_mut().zip(WATCHED) {
                    if slot.is_none() {
                        *slot = inotify::add_watch(fd, scandir.join(name).join(sub), mask()).ok();
                    }
                }
            }
            let e = &mut self.entries[i];
            let watched = e.watches.iter().all(Option::is_some);
            let s = match e.kept.take().filter(|_| watched) {
                Some(mut s) => {
                    if let Some(since) = s.since {
                        s.uptime = since.secs_until(now);
                    }
                    s
                }
                None => crate::runtime::status::read(scandir, name),
            };
            if watched {
                e.kept = Some(s.clone());
            }
            out.push(s);
        }
        out
    }

    /// The numbers of `s`'s daemon: measured again when its cycle has passed or the
    /// pid changed.
    pub fn measure(&mut self, s: &Service) -> Option<Measured> {
        let pid = s.pid?;
        let e = self.entries.iter_mut().find(|e| e.name == s.name)?;
        let now = Instant::now();
        if let Some(last) = &e.sample
            && last.pid == pid
            && now.duration_since(last.at) < self.cycle
        {
            return Some(last.measured);
        }
        let usage = crate::runtime::resource::usage(pid);
        let (cpu, cpu_total) = match &e.sample {
            Some(last) if last.pid == pid && usage.ticks >= last.measured.usage.ticks => {
                let secs = now.duration_since(last.at).as_secs_f64();
                (
                    crate::runtime::resource::cpu_percent(
                        usage.ticks - last.measured.usage.ticks,
                        secs,
                    ),
                    crate::runtime::resource::cpu_percent(
                        usage
                            .ticks_total
                            .saturating_sub(last.measured.usage.ticks_total),
                        secs,
                    ),
                )
            }
            _ => (0.0, 0.0),
        };
        let measured = Measured {
            usage,
            cpu,
            cpu_total,
        };
        e.sample = Some(Sample {
            at: now,
            pid,
            measured,
        });
        Some(measured)
    }

    /// Take the queued events: each marks its service changed; a watch the kernel
    /// dropped (its directory removed or moved: a service replaced) is set again at
    /// the next request; a queue that overflowed marks every service changed.
    fn drain(&mut self) {
        let Some(fd) = &self.inotify else { return };
        let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 4096];
        let mut reader = inotify::Reader::new(fd, &mut buf);
        let mut gone = Vec::new();
        loop {
            let ev = match reader.next() {
                Ok(ev) => ev,
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => break,
            };
            let flags = ev.events();
            if flags.contains(inotify::ReadFlags::QUEUE_OVERFLOW) {
                for e in &mut self.entries {
                    e.kept = None;
                }
                continue;
            }
            let wd = ev.wd();
            if Some(wd) == self.scan_watch {
                if flags.contains(inotify::ReadFlags::IGNORED) {
                    self.scan_watch = None;
                    for e in &mut self.entries {
                        e.kept = None;
                    }
                }
                let name = ev.file_name().map(|n| n.to_bytes());
                for e in &mut self.entries {
                    if Some(e.name.as_bytes()) == name {
                        e.kept = None;
                        gone.extend(e.watches.iter_mut().filter_map(Option::take));
                    }
                }
                continue;
            }
            for e in &mut self.entries {
                for slot in &mut e.watches {
                    if *slot == Some(wd) {
                        e.kept = None;
                        if flags.intersects(
                            inotify::ReadFlags::IGNORED
                                | inotify::ReadFlags::DELETE_SELF
                                | inotify::ReadFlags::MOVE_SELF,
                        ) {
                            *slot = None;
                            if !flags.contains(inotify::ReadFlags::IGNORED) {
                                gone.push(wd);
                            }
                        }
                    }
                }
            }
        }
        for wd in gone {
            let _ = inotify::remove_watch(fd, wd);
        }
    }

    /// Drop the services no longer configured, with their watches.
    fn forget_all_but(&mut self, names: &[String]) {
        let fd = self.inotify.as_ref();
        self.entries.retain(|e| {
            let keep = names.contains(&e.name);
            if !keep && let Some(fd) = fd {
                for wd in e.watches.iter().flatten() {
                    let _ = inotify::remove_watch(fd, *wd);
                }
            }
            keep
        });
    }
}

/// What changes a service's state: a file written and closed (the lock, at the
/// supervisor's death, too), renamed in or out, created or removed; the directory
/// itself removed or moved.
fn mask() -> inotify::WatchFlags {
    use inotify::WatchFlags as W;
    W::CLOSE_WRITE
        | W::MOVED_TO
        | W::MOVED_FROM
        | W::CREATE
        | W::DELETE
        | W::DELETE_SELF
        | W::MOVE_SELF
}
