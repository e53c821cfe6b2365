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
//!   oneshots as its own children, longruns through their supervisors;
//! * `reload`: s6-rc 0.7's reload, beside the engine (it changes no state).
//!
//! What does not: a daemon. tend-rc computes, performs, records and exits; the tree's
//! long-lived processes are the scanner, the supervisors and the services. Nothing here
//! prints or exits: events go to the caller's callback, errors are returned.

#![forbid(unsafe_code)]

pub mod engine;
pub mod graph;
pub mod live;
pub mod plan;
pub mod reload;
pub mod script;
pub mod source;
pub mod update;

use engine::{Engine, Event, Outcome};
use graph::Graph;
use live::Live;
use plan::{Direction, Request};
use source::Problem;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tend_proto::ScanCommand;
use update::{Conversion, ConversionError, was_up};
pub use update::{Moves, Stop, Sync, moves, sync};

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
    /// A conversion file (tend-rc update -f) was refused; nothing was changed.
    Conversion(ConversionError),
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
    if let Some(running) = Live::in_use(&live_dir) {
        // As s6-rc-init 0.5 does: never reset a tree that runs (its oneshots' state
        // and its longruns are left as they are).
        return Err(Fail::Sys(format!(
            "unable to init {}: a live directory in use (its scanner on {} runs): tend-rc update changes its sources",
            live_dir.display(),
            running.display()
        )));
    }
    scanner_listens(&scandir)?;
    if let Ok(old) = Live::open(&live_dir) {
        // Left by a scanner that is gone: a new one may have picked its longruns up
        // through their old links. They leave before the directory is replaced.
        for name in old.longruns() {
            update::retire(&old, &name);
        }
    }
    let live = Live::create(&live_dir, &sources, &scandir)?;
    let _lock = lock(&live)?;
    let mut dirs = Vec::new();
    for i in 0..g.atoms.len() {
        if g.atoms[i].is_longrun() {
            live.write_servicedir(&g, i)?;
            live.link(g.atoms[i].name())?;
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
        match tend_client::scanctl::send(scandir, &[]) {
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

pub(crate) fn rescan_and_wait(live: &Live, dirs: &[PathBuf]) -> Result<(), Fail> {
    if dirs.is_empty() {
        return Ok(());
    }
    tend_client::scanctl::send(&live.scandir, &[ScanCommand::Scan]).map_err(|e| {
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
    open_with(live_dir, &[])
}

/// Open a live directory to read other sources than those recorded (`tend-rc update -c`):
/// they are recorded once the tree has moved to them. No sources: the recorded ones.
pub fn open_with(live_dir: &Path, sources: &[PathBuf]) -> Result<Opened, Fail> {
    let mut live = Live::open(live_dir).map_err(|e| {
        Fail::Live(format!(
            "{}: not a tend-rc live directory ({e})",
            live_dir.display()
        ))
    })?;
    let lock = lock(&live)?;
    if !sources.is_empty() {
        live.sources = sources.iter().map(|s| absolute(s)).collect();
    }
    let graph = check(&live.sources).map_err(Fail::Source)?;
    Ok(Opened {
        live,
        graph,
        _lock: lock,
    })
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

pub(crate) fn selection(g: &Graph, names: &[String]) -> Result<Vec<usize>, Fail> {
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
    change_with(o, ask, &Conversion::default(), report)
}

/// tend-rc update: move the live tree to the sources (`conv`: a conversion file's
/// instructions), then start again what was up and lives on, as s6-rc-update does.
pub fn update(
    o: &Opened,
    ask: &Ask,
    conv: &Conversion,
    report: &mut dyn FnMut(&Event, &Graph),
) -> Result<Changed, Fail> {
    let ask = Ask {
        direction: Direction::Up,
        prune: false,
        active: false,
        names: Vec::new(),
        ..ask.clone()
    };
    change_with(o, &ask, conv, report)
}

fn change_with(
    o: &Opened,
    ask: &Ask,
    conv: &Conversion,
    report: &mut dyn FnMut(&Event, &Graph),
) -> Result<Changed, Fail> {
    let start = Instant::now();
    let deadline = ask.timeout.map(|t| start + t);
    let g = &o.graph;
    let sel = selection(g, &ask.names)?;
    if ask.dry_run {
        return dry_run(o, ask, conv, sel);
    }
    let s = sync(o, conv)?;
    let (restart, mut restore) = (s.restart, s.restore);
    if !restore.is_empty() && ask.direction != Direction::Up {
        // What went down only because the definitions moved comes back first; then the
        // change asked for.
        let out = run_plan(
            o,
            &Request::up(std::mem::take(&mut restore)),
            &restart,
            deadline,
            ask,
            report,
        )?;
        if out != Outcome::default() {
            return Ok(Changed::Done(out));
        }
    }
    let mut req = Request {
        direction: ask.direction,
        prune: ask.prune,
        selection: sel,
        active: ask.active,
    };
    req.selection.extend(restore);
    Ok(Changed::Done(run_plan(
        o, &req, &restart, deadline, ask, report,
    )?))
}

fn run_plan(
    o: &Opened,
    req: &Request,
    restart: &[bool],
    deadline: Option<Instant>,
    ask: &Ask,
    report: &mut dyn FnMut(&Event, &Graph),
) -> Result<Outcome, Fail> {
    let g = &o.graph;
    // Starts go by what is up and ready; stops by what may be up (astir).
    let up = engine::current(g, &o.live);
    let astir = engine::astir(g, &o.live);
    let mut p = plan::plan(g, &up, req, restart);
    p.stop = plan::plan(g, &astir, req, restart).stop;
    let mut e = Engine::new(g, &o.live, astir, deadline)?;
    e.tick = ask.tick;
    e.strict = Some(up);
    Ok(e.run(&p, report)?)
}

/// The plan of a change, changing nothing: what the definitions' move would do first
/// (remove, restart, rename, add, update), then the stops and starts.
fn dry_run(o: &Opened, ask: &Ask, conv: &Conversion, sel: Vec<usize>) -> Result<Changed, Fail> {
    let (g, live) = (&o.graph, &o.live);
    let m = moves(live, g, conv)?;
    let mut lines = Vec::new();
    for stop in &m.stops {
        if !stop.lives_on {
            lines.push(format!("remove {}", stop.name));
        } else if was_up(live, &stop.name, stop.longrun) {
            lines.push(format!("restart {}", stop.name));
        }
    }
    for (from, to) in &m.renames {
        lines.push(format!("rename {from} {to}"));
    }
    for a in &g.atoms {
        match m.old.get(a.name()) {
            None => lines.push(format!("add {}", a.name())),
            Some(d) if d.ty == a.def.kind.word() && d.fingerprint != a.def.fingerprint => {
                lines.push(format!("update {}", a.name()))
            }
            _ => {}
        }
    }
    let up = engine::current(g, live);
    let astir = engine::astir(g, live);
    let req = Request {
        direction: ask.direction,
        prune: ask.prune,
        selection: sel,
        active: ask.active,
    };
    let no_restart = vec![false; g.atoms.len()];
    let mut p = plan::plan(g, &up, &req, &no_restart);
    p.stop = plan::plan(g, &astir, &req, &no_restart).stop;
    let order = plan::order(g);
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
    Ok(Changed::Plan(lines))
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
        let recorded_up = !dir.join(tend_proto::servicedir::DOWN).exists();
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
