//! tend-rc — services that depend on each other, from s6-rc source directories read
//! directly (no compile step).
//!
//! What lives here, in the order the data flows:
//! * `source`: reading definition directories as s6-rc-compile reads them, every problem
//!   collected with its path;
//! * `script`: a oneshot's `up`/`down`, lexed as execlineb lexes it, run as plain
//!   commands and `if`/`foreground` chains by tend-rc itself;
//! * `graph`: the checked graph (bundles expanded, cycles named, pipelines paired);
//! * `plan`: the pure transition planner, tested as a table;
//! * `live`: the live directory (what is recorded between runs, the longruns' service
//!   directories linked into the scan directory);
//! * `engine`: the single-threaded executor (poll on a signalfd and `event/` fifodirs),
//!   oneshots as its own children, longruns through their supervisors.
//!
//! What does not: a daemon. tend-rc computes, performs, records and exits; the tree's
//! long-lived processes are the scanner, the supervisors and the services. Nothing here
//! prints or exits: events go to the caller's callback, errors are returned.

#![forbid(unsafe_code)]

pub mod engine;
pub mod graph;
pub mod live;
pub mod plan;
pub mod script;
pub mod source;

use engine::{Engine, Event, Outcome};
use graph::Graph;
use live::Live;
use plan::{Direction, Request};
use source::{Kind, Problem};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Why an operation could not be done (the binary maps each to an exit code).
#[derive(Debug)]
pub enum Fail {
    /// The sources do not check: every problem.
    Source(Vec<Problem>),
    /// A name on the command line is not defined.
    Unknown(String),
    /// The live directory is not usable (not tend-rc's, or in use).
    Live(String),
    /// A system call failed, or the tree did not answer.
    Sys(String),
}

impl From<tend_sys::Error> for Fail {
    fn from(e: tend_sys::Error) -> Fail {
        Fail::Sys(e.to_string())
    }
}

/// Read and check the sources.
pub fn check(sources: &[PathBuf]) -> Result<Graph, Vec<Problem>> {
    graph::load(sources)
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    }
}

/// tend-rc init: create the live directory over a running scanner; every service down.
pub fn init(live_dir: &Path, sources: &[PathBuf], scandir: &Path) -> Result<Graph, Fail> {
    let sources: Vec<PathBuf> = sources.iter().map(|s| absolute(s)).collect();
    let scandir = absolute(scandir);
    let live_dir = absolute(live_dir);
    let g = check(&sources).map_err(Fail::Source)?;
    scanner_listens(&scandir)?;
    let live = Live::create(&live_dir, &sources, &scandir)?;
    let _lock = lock(&live)?;
    let mut dirs = Vec::new();
    for i in 0..g.atoms.len() {
        if g.atoms[i].is_longrun() {
            live.write_servicedir(&g, i)?;
            if g.atoms[i].producer.is_none() {
                live.link(g.atoms[i].name())?;
            }
            dirs.push(live.servicedir(g.atoms[i].name()));
        }
    }
    live.write_defs(&g)?;
    rescan_and_wait(&live, &dirs)?;
    Ok(g)
}

/// Wait (a few seconds at most) until a scanner listens on `scandir`: one started just
/// before tend-rc init takes its lock before it opens its control FIFO.
fn scanner_listens(scandir: &Path) -> Result<(), Fail> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut pause = Duration::from_millis(1);
    loop {
        match tend_client::scanctl::send(scandir, b"") {
            Err(tend_proto::control::SendError::NotListening)
                if Instant::now() < deadline
                    && scandir.join(tend_proto::servicedir::SVSCAN).exists() =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            r => return scanner_answer(scandir, r),
        }
    }
}

fn scanner_answer(
    scandir: &Path,
    r: Result<(), tend_proto::control::SendError>,
) -> Result<(), Fail> {
    match r {
        Ok(()) => Ok(()),
        Err(e) => Err(Fail::Sys(format!(
            "no scanner runs on {}: {}",
            scandir.display(),
            e.describe(
                &scandir.display().to_string(),
                tend_proto::servicedir::SVSCAN
            )
        ))),
    }
}

fn rescan_and_wait(live: &Live, dirs: &[PathBuf]) -> Result<(), Fail> {
    if dirs.is_empty() {
        return Ok(());
    }
    tend_client::scanctl::send(&live.scandir, b"a").map_err(|e| {
        Fail::Sys(format!(
            "unable to tell the scanner on {} to rescan: {}",
            live.scandir.display(),
            e.describe(
                &live.scandir.display().to_string(),
                tend_proto::servicedir::SVSCAN
            )
        ))
    })?;
    engine::wait_supervisors(dirs, &live.scandir, None).map_err(Fail::Sys)
}

/// Hold LIVE/lock for the run: a second tend-rc on the same live directory fails.
fn lock(live: &Live) -> Result<OwnedFd, Fail> {
    let p = live.dir.join("lock");
    tend_proto::lock::acquire(&p, 0o644).map_err(|e| match e {
        tend_proto::lock::LockError::Busy => Fail::Live(format!(
            "{} is in use by another tend-rc",
            live.dir.display()
        )),
        tend_proto::lock::LockError::Sys(e) => {
            Fail::Sys(format!("unable to lock {}: {}", p.display(), e.desc()))
        }
    })
}

/// A live directory opened for a run: the sources re-read and checked, the lock held.
pub struct Opened {
    pub live: Live,
    pub graph: Graph,
    _lock: OwnedFd,
}

pub fn open(live_dir: &Path) -> Result<Opened, Fail> {
    let live = Live::open(live_dir).map_err(|e| {
        Fail::Live(format!(
            "{}: not a tend-rc live directory ({e})",
            live_dir.display()
        ))
    })?;
    let lock = lock(&live)?;
    let graph = check(&live.sources).map_err(Fail::Source)?;
    Ok(Opened {
        live,
        graph,
        _lock: lock,
    })
}

/// What moving the live tree to the current sources did.
#[derive(Debug, Default)]
pub struct Sync {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub changed: Vec<String>,
    /// Atoms to stop and start again (a new dependency that is down).
    pub restart: Vec<bool>,
    /// Atoms whose type changed while up: started again under their new type.
    pub restore: Vec<usize>,
}

/// The live definitions no longer in the source (or of another type now), with their
/// recorded type.
fn gone<'o>(
    g: &Graph,
    old: &'o std::collections::HashMap<String, (String, u64)>,
) -> Vec<(&'o String, &'o str)> {
    let mut v: Vec<_> = old
        .iter()
        .filter(|(name, (ty, _))| {
            g.atom(name)
                .is_none_or(|i| g.atoms[i].def.kind.word() != ty)
        })
        .map(|(name, (ty, _))| (name, ty.as_str()))
        .collect();
    v.sort();
    v
}

/// Move the live tree to the definitions just read: new longruns get their service
/// directories (down), removed services are brought down and removed, changed longruns
/// are rewritten in place (no restart, as s6-rc-update), what is unchanged is untouched.
pub fn sync(o: &Opened) -> Result<Sync, Fail> {
    let (live, g) = (&o.live, &o.graph);
    let old = live.defs();
    let mut s = Sync {
        restart: vec![false; g.atoms.len()],
        ..Default::default()
    };
    // Gone, or of another type now: down first.
    let mut gone_longruns = Vec::new();
    let mut gone_oneshots = Vec::new();
    for (name, ty) in gone(g, &old) {
        let was_up = match ty {
            "longrun" => {
                let up = engine::longrun_up(&live.servicedir(name), false);
                gone_longruns.push(name.clone());
                up
            }
            _ => {
                let up = live.oneshot_up(name);
                if up {
                    gone_oneshots.push(name.clone());
                }
                up
            }
        };
        if let Some(i) = g.atom(name)
            && was_up
        {
            s.restore.push(i);
        }
        s.removed.push(name.clone());
    }
    // Oneshots still recorded up but never recorded in defs (an interrupted run).
    for name in live.oneshots_up() {
        if g.atom(&name).is_none() && !gone_oneshots.contains(&name) && !old.contains_key(&name) {
            gone_oneshots.push(name);
        }
    }
    for name in &gone_oneshots {
        run_recorded_down(live, name);
        let _ = std::fs::remove_file(live.oneshot_marker(name));
    }
    for name in &gone_longruns {
        retire(live, name);
    }
    let mut fresh = Vec::new();
    for i in 0..g.atoms.len() {
        let a = &g.atoms[i];
        let before = old.get(a.name());
        let same = before.is_some_and(|(t, f)| t == a.def.kind.word() && *f == a.def.fingerprint);
        match &a.def.kind {
            Kind::Longrun(_) => {
                let dir = live.servicedir(a.name());
                if !same || !dir.exists() {
                    if live.write_servicedir(g, i)? {
                        fresh.push(dir);
                        s.added.push(a.name().to_string());
                    } else {
                        s.changed.push(a.name().to_string());
                    }
                }
                if a.producer.is_none() {
                    live.link(a.name())?;
                } else {
                    live.unlink(a.name());
                }
            }
            Kind::Oneshot { .. } => {
                if before.is_none() {
                    s.added.push(a.name().to_string());
                } else if !same {
                    s.changed.push(a.name().to_string());
                    if live.oneshot_up(a.name()) {
                        let text = std::fs::read(a.def.dir.join("down")).unwrap_or_default();
                        live::write_atomic(&live.oneshot_marker(a.name()), &text, 0o644)?;
                    }
                }
            }
            Kind::Bundle { .. } => {}
        }
    }
    if !fresh.is_empty() || !gone_longruns.is_empty() {
        rescan_and_wait(live, &fresh)?;
    }
    live.write_defs(g)?;
    let up = engine::current(g, live);
    for i in 0..g.atoms.len() {
        let touched = s
            .changed
            .iter()
            .chain(&s.added)
            .any(|n| n == g.atoms[i].name());
        if touched && up[i] && g.atoms[i].deps.iter().any(|&j| !up[j]) {
            s.restart[i] = true;
        }
    }
    Ok(s)
}

/// Bring a longrun that left the definitions down and remove it.
fn retire(live: &Live, name: &str) {
    let dir = live.servicedir(name);
    let _ = std::fs::write(dir.join("down"), b"");
    live.unlink(name);
    let _ = tend_client::control::send(&dir, b"dx");
    let deadline = Instant::now() + Duration::from_secs(30);
    while tend_client::svok(&dir).unwrap_or(false) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Run the down script a removed oneshot recorded when it came up.
fn run_recorded_down(live: &Live, name: &str) {
    let Ok(text) = std::fs::read(live.oneshot_marker(name)) else {
        return;
    };
    let Ok(script) = script::parse(&text) else {
        return;
    };
    for step in &script.steps {
        let Some((prog, args)) = step.argv.split_first() else {
            continue;
        };
        let ok = std::process::Command::new(prog)
            .args(args)
            .current_dir(&live.dir)
            .stdin(std::process::Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !ok && step.kind == script::StepKind::If {
            return;
        }
    }
}

/// What `change`, `list` and the others were asked.
#[derive(Debug, Clone)]
pub struct Ask {
    pub direction: Direction,
    pub prune: bool,
    pub active: bool,
    pub names: Vec<String>,
    pub dry_run: bool,
    pub timeout: Option<Duration>,
    /// Report progress this often (for a terminal's progress line).
    pub tick: Option<Duration>,
}

fn selection(g: &Graph, names: &[String]) -> Result<Vec<usize>, Fail> {
    let mut sel = Vec::new();
    for n in names {
        sel.extend(g.resolve(n).ok_or_else(|| Fail::Unknown(n.clone()))?);
    }
    Ok(sel)
}

/// The result of `change`.
pub enum Changed {
    /// A dry run: the plan, one line per transition, in dependency order.
    Plan(Vec<String>),
    Done(Outcome),
}

/// tend-rc change.
pub fn change(
    o: &Opened,
    ask: &Ask,
    report: &mut dyn FnMut(&Event, &Graph),
) -> Result<Changed, Fail> {
    let start = Instant::now();
    let g = &o.graph;
    let sel = selection(g, &ask.names)?;
    let (restart, restore) = if ask.dry_run {
        (vec![false; g.atoms.len()], Vec::new())
    } else {
        let s = sync(o)?;
        (s.restart, s.restore)
    };
    // Starts go by what is up and ready; stops by what may be up (astir).
    let up = engine::current(g, &o.live);
    let astir = engine::astir(g, &o.live);
    let mut req = Request {
        direction: ask.direction,
        prune: ask.prune,
        selection: sel,
        active: ask.active,
    };
    if !restore.is_empty() && ask.direction == Direction::Up {
        req.selection.extend(restore);
    }
    let mut p = plan::plan(g, &up, &req, &restart);
    p.stop = plan::plan(g, &astir, &req, &restart).stop;
    if ask.dry_run {
        let order = plan::order(g);
        // What the source changes would do first (sync, skipped by a dry run).
        let old = o.live.defs();
        let mut lines: Vec<String> = gone(g, &old)
            .into_iter()
            .map(|(name, _)| format!("remove {name}"))
            .collect();
        for a in &g.atoms {
            match old.get(a.name()) {
                None => lines.push(format!("add {}", a.name())),
                Some((t, f)) if t == a.def.kind.word() && *f != a.def.fingerprint => {
                    lines.push(format!("update {}", a.name()))
                }
                _ => {}
            }
        }
        for &i in order.iter().rev() {
            if p.stop[i] {
                lines.push(format!("stop {}", g.atoms[i].name()));
            }
        }
        for &i in &order {
            if p.start[i] {
                lines.push(format!("start {}", g.atoms[i].name()));
            }
        }
        return Ok(Changed::Plan(lines));
    }
    let deadline = ask.timeout.map(|t| start + t);
    let mut e = Engine::new(g, &o.live, astir, deadline)?;
    e.tick = ask.tick;
    e.strict = Some(up);
    Ok(Changed::Done(e.run(&p, report)?))
}

/// tend-rc list: the selection (with -a the services up; with -d inverted), sorted.
pub fn list(o: &Opened, ask: &Ask) -> Result<Vec<String>, Fail> {
    let g = &o.graph;
    let up = engine::current(g, &o.live);
    let sel = plan::selection(
        &Request {
            direction: ask.direction,
            prune: false,
            selection: selection(g, &ask.names)?,
            active: ask.active,
        },
        &up,
    );
    let mut inset = vec![false; g.atoms.len()];
    for i in sel {
        inset[i] = true;
    }
    let down = ask.direction != Direction::Up;
    Ok(sorted(g, |i| inset[i] != down))
}

fn sorted(g: &Graph, keep: impl Fn(usize) -> bool) -> Vec<String> {
    let mut v: Vec<String> = (0..g.atoms.len())
        .filter(|&i| keep(i))
        .map(|i| g.atoms[i].name().to_string())
        .collect();
    v.sort();
    v
}

/// tend-rc listall: the selection closed over dependencies (-d: dependents).
pub fn listall(o: &Opened, ask: &Ask) -> Result<Vec<String>, Fail> {
    let g = &o.graph;
    let up = engine::current(g, &o.live);
    let sel = plan::selection(
        &Request {
            direction: ask.direction,
            prune: false,
            selection: selection(g, &ask.names)?,
            active: ask.active,
        },
        &up,
    );
    let c = g.closure(&sel, ask.direction == Direction::Up);
    Ok(sorted(g, |i| c[i]))
}

/// tend-rc diff: longruns whose supervisor disagrees with the live state (`+NAME`: up
/// though recorded down; `-NAME`: not up though recorded up).
pub fn diff(o: &Opened) -> Vec<String> {
    let g = &o.graph;
    let mut out = Vec::new();
    for a in &g.atoms {
        if !a.is_longrun() {
            continue;
        }
        let dir = o.live.servicedir(a.name());
        let recorded_up = !dir.join("down").exists();
        let want_up = tend_proto::StatusRecord::read(&dir)
            .map(|r| r.want_up || r.is_up())
            .unwrap_or(false);
        if want_up && !recorded_up {
            out.push(format!("+{}", a.name()));
        } else if !want_up && recorded_up {
            out.push(format!("-{}", a.name()));
        }
    }
    out
}
