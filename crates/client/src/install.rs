//! Writing services into a scan directory: compare first, write only what changed, each
//! changed service built whole in a hidden directory beside its place and renamed in.
//! Shared by the programs that generate service directories from another format
//! (tend-jobs from bpm.yml, tend-monit from monit control files); each marks its
//! services with the name of the job (or owner) they belong to.

use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tend_proto::servicedir as sd;
use tend_proto::{ControlCommand, ScanCommand};
use tend_sys::warn::Warn;

/// One file of a service directory (`path` relative to it, `log/run` for instance).
#[derive(Debug, Clone, PartialEq)]
pub struct File {
    pub path: String,
    pub bytes: Vec<u8>,
    pub mode: u32,
}

/// A service directory to install: its name in the scan directory and its files.
#[derive(Debug, Clone, PartialEq)]
pub struct Service {
    pub name: String,
    pub files: Vec<File>,
}

/// The marker file naming the job a service directory belongs to (`remove`).
pub const MARKER: &str = "tend-job";

/// A failed system call or file operation while writing or removing services: what
/// failed, and why (exit 111).
#[derive(Debug)]
pub struct SysError(pub String);

impl SysError {
    pub fn code(&self) -> i32 {
        tend_sys::code::SYSTEM
    }
}

impl fmt::Display for SysError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What an apply did, service by service.
#[derive(Debug, Default, PartialEq)]
pub struct Outcome {
    pub unchanged: Vec<String>,
    pub added: Vec<String>,
    pub replaced: Vec<String>,
    pub removed: Vec<String>,
}

impl Outcome {
    pub fn changed(&self) -> bool {
        !(self.added.is_empty() && self.replaced.is_empty() && self.removed.is_empty())
    }
}

fn sys(what: impl std::fmt::Display, e: io::Error) -> SysError {
    SysError(format!("{what}: {}", tend_sys::error::io_reason(&e)))
}

/// Names of entries a supervisor, a logger or a service itself makes at run time: never
/// compared, never written (`monit-state`: tend-monit's watcher, the daemon's pid).
fn runtime(name: &str) -> bool {
    // `main`: the log directory the rendered log/run writes into when none is given;
    // `monit-state`: tend-monit's own record of a check's state.
    [sd::SUPERVISE, sd::EVENT, "main", sd::DATA, "monit-state"].contains(&name)
}

/// Does the directory hold exactly these files (bytes and mode), apart from what the
/// supervisor and logger make?
fn same(dir: &Path, svc: &Service) -> bool {
    for f in &svc.files {
        let p = dir.join(&f.path);
        let Ok(meta) = fs::symlink_metadata(&p) else {
            return false;
        };
        if !meta.is_file() || meta.permissions().mode() & 0o7777 != f.mode {
            return false;
        }
        if meta.len() != f.bytes.len() as u64 || fs::read(&p).ok().as_deref() != Some(&f.bytes[..])
        {
            return false;
        }
    }
    // Nothing of ours left over from an older description (a notification-fd, an env var).
    for sub in ["", sd::ENV, sd::LOG] {
        let d = if sub.is_empty() {
            dir.to_path_buf()
        } else {
            dir.join(sub)
        };
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let n = e.file_name();
            let Some(n) = n.to_str() else { return false };
            if runtime(n) || (sub.is_empty() && (n == sd::ENV || n == sd::LOG)) {
                continue;
            }
            let rel = if sub.is_empty() {
                n.to_string()
            } else {
                format!("{sub}/{n}")
            };
            if !svc.files.iter().any(|f| f.path == rel) {
                return false;
            }
        }
    }
    true
}

fn write_tree(dir: &Path, svc: &Service) -> Result<(), SysError> {
    fs::DirBuilder::new()
        .mode(0o755)
        .create(dir)
        .map_err(|e| sys(format_args!("unable to create {}", dir.display()), e))?;
    for f in &svc.files {
        let p = dir.join(&f.path);
        if let Some(parent) = p.parent()
            && !parent.exists()
        {
            fs::DirBuilder::new()
                .mode(0o755)
                .create(parent)
                .map_err(|e| sys(format_args!("unable to create {}", parent.display()), e))?;
        }
        let mut out = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(f.mode)
            .open(&p)
            .map_err(|e| sys(format_args!("unable to create {}", p.display()), e))?;
        out.write_all(&f.bytes)
            .and_then(|()| out.set_permissions(fs::Permissions::from_mode(f.mode)))
            .and_then(|()| out.sync_all())
            .map_err(|e| sys(format_args!("unable to write {}", p.display()), e))?;
    }
    Ok(())
}

/// The services of `job` already in `scandir` (by their marker file).
pub fn installed(scandir: &Path, job: &str) -> Result<Vec<String>, SysError> {
    let rd = fs::read_dir(scandir)
        .map_err(|e| sys(format_args!("unable to read {}", scandir.display()), e))?;
    let mut out = Vec::new();
    let want = format!("{job}\n");
    for e in rd.flatten() {
        let n = e.file_name();
        let Some(n) = n.to_str() else { continue };
        if n.starts_with('.') {
            continue;
        }
        // Non-blocking, regular files only: a FIFO planted as a marker must not hang us.
        if tend_sys::fd::read_regular(&e.path().join(MARKER), 4096)
            .ok()
            .as_deref()
            == Some(want.as_bytes())
        {
            out.push(n.to_string());
        }
    }
    out.sort();
    Ok(out)
}

/// Stop a service directory that has left the scan directory (and its logger), then
/// remove it; one left running after `patience` stays, with a warning.
fn retire(dir: &Path, patience: Duration, warn: &dyn Warn) {
    let log = dir.join(sd::LOG);
    // d: down (down-signal, then KILL after timeout-kill); x: the supervisor exits.
    let _ = crate::control::command(dir, &[ControlCommand::Down, ControlCommand::Exit]);
    let _ = crate::control::command(&log, &[ControlCommand::Exit]);
    let deadline = Instant::now() + patience;
    loop {
        let up = [dir, log.as_path()]
            .iter()
            .any(|d| crate::svok(d).unwrap_or(false));
        if !up {
            break;
        }
        if Instant::now() > deadline {
            warn.warn(&format_args!(
                "{}: its supervisor is still running: left in place",
                dir.display()
            ));
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    if let Err(e) = fs::remove_dir_all(dir) {
        warn.warn(&format_args!(
            "unable to remove {}: {}",
            dir.display(),
            tend_sys::error::io_reason(&e)
        ));
    }
}

/// tend-jobs' own entries of a scan directory start with this (the scanner skips dot
/// names): the plan, and services being written in or retired.
const PREFIX: &str = ".tend-jobs.";
/// What an apply is committed to doing, one `add|replace|remove NAME` line each: written
/// (atomically) once every new service is whole beside its place, removed once done. A
/// plan left by a killed apply is carried out by the next one.
const PLAN: &str = ".tend-jobs.plan";

fn hidden(scandir: &Path, kind: &str, name: &str) -> PathBuf {
    scandir.join(format!("{PREFIX}{kind}.{name}"))
}

/// The lock for one apply or remove at a time: flock(2) on the scan directory itself (no
/// file left behind; s6 locks nothing there), waited for `patience` at most, polling as
/// `retire` does (the holder is another short-lived tend-jobs).
pub fn lock(scandir: &Path, patience: Duration) -> Result<std::os::fd::OwnedFd, SysError> {
    use nix::fcntl::OFlag;
    use rustix::fs::{FlockOperation, flock};
    let fd = tend_sys::fd::open(
        scandir,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .map_err(|e| {
        SysError(format!(
            "unable to open {}: {}",
            scandir.display(),
            e.desc()
        ))
    })?;
    let deadline = Instant::now() + patience;
    loop {
        match flock(&fd, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(fd),
            Err(e) if e == rustix::io::Errno::WOULDBLOCK && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) if e == rustix::io::Errno::WOULDBLOCK => {
                return Err(SysError(format!(
                    "unable to lock {}: another tend-jobs is still at work there after {} ms",
                    scandir.display(),
                    patience.as_millis()
                )));
            }
            Err(e) => {
                let e = nix::errno::Errno::from_raw(e.raw_os_error());
                return Err(SysError(format!(
                    "unable to lock {}: {}",
                    scandir.display(),
                    e.desc()
                )));
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Step {
    Add,
    Replace,
    Remove,
}

impl Step {
    fn word(self) -> &'static str {
        match self {
            Step::Add => "add",
            Step::Replace => "replace",
            Step::Remove => "remove",
        }
    }
}

/// Write the plan: to a temporary file, synced, then renamed into place (the commit).
fn write_plan(scandir: &Path, plan: &[(Step, String)]) -> Result<(), SysError> {
    let mut text = String::new();
    for (step, name) in plan {
        text.push_str(step.word());
        text.push(' ');
        text.push_str(name);
        text.push('\n');
    }
    let tmp = scandir.join(format!("{PLAN}.new"));
    let path = scandir.join(PLAN);
    let _ = fs::remove_file(&tmp);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| sys(format_args!("unable to create {}", tmp.display()), e))?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .and_then(|()| fs::rename(&tmp, &path))
        .map_err(|e| sys(format_args!("unable to write {}", path.display()), e))
}

fn read_plan(scandir: &Path) -> Option<Vec<(Step, String)>> {
    let data = tend_sys::fd::read_regular(&scandir.join(PLAN), 1 << 20).ok()?;
    let text = String::from_utf8(data).ok()?;
    text.lines()
        .map(|l| {
            let (w, name) = l.split_once(' ')?;
            let step = match w {
                "add" => Step::Add,
                "replace" => Step::Replace,
                "remove" => Step::Remove,
                _ => return None,
            };
            (!name.is_empty() && !name.starts_with('.') && !name.contains('/'))
                .then(|| (step, name.to_string()))
        })
        .collect()
}

/// Carry out one step; idempotent, so a plan cut short by a kill can be run again.
fn carry_out(scandir: &Path, step: Step, name: &str) -> Result<(), SysError> {
    let target = scandir.join(name);
    let new = hidden(scandir, "new", name);
    let old = hidden(scandir, "old", name);
    let present = |p: &Path| fs::symlink_metadata(p).is_ok();
    let mv = |from: &Path, to: &Path| {
        fs::rename(from, to).map_err(|e| {
            sys(
                format_args!("unable to rename {} to {}", from.display(), to.display()),
                e,
            )
        })
    };
    match step {
        Step::Remove => {
            if present(&target) {
                mv(&target, &old)?;
            }
        }
        Step::Add | Step::Replace => {
            if !present(&new) {
                return Ok(()); // done already
            }
            if present(&target) {
                if present(&old) {
                    fs::remove_dir_all(&old)
                        .map_err(|e| sys(format_args!("unable to remove {}", old.display()), e))?;
                }
                mv(&target, &old)?;
            }
            mv(&new, &target)?;
        }
    }
    Ok(())
}

/// Undo the first `done` steps of a plan that failed, newest first: the old state back.
fn undo(scandir: &Path, plan: &[(Step, String)], done: usize) {
    for (step, name) in plan[..done].iter().rev() {
        let target = scandir.join(name);
        let old = hidden(scandir, "old", name);
        match step {
            Step::Remove => {
                let _ = fs::rename(&old, &target);
            }
            Step::Add => {
                let _ = fs::remove_dir_all(&target);
            }
            Step::Replace => {
                let _ = fs::remove_dir_all(&target);
                let _ = fs::rename(&old, &target);
            }
        }
    }
}

/// The scan directory's tend-jobs entries (names), as left there.
fn leftovers(scandir: &Path) -> Vec<String> {
    let Ok(rd) = fs::read_dir(scandir) else {
        return Vec::new();
    };
    let mut v: Vec<String> = rd
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(String::from))
        .filter(|n| n.starts_with(PREFIX))
        .collect();
    v.sort();
    v
}

/// Under the lock, before anything else: finish what a killed apply committed to (its
/// plan), drop what it had not (half-written services, a plan not yet renamed in), and
/// retire what it had moved aside (rescan, stop, remove), so that no name is in use.
fn recover(scandir: &Path, patience: Duration, warn: &dyn Warn) -> Result<(), SysError> {
    if let Some(plan) = read_plan(scandir) {
        for (step, name) in &plan {
            carry_out(scandir, *step, name)?;
        }
    }
    let mut retired = Vec::new();
    for n in leftovers(scandir) {
        let p = scandir.join(&n);
        if n.starts_with(&format!("{PREFIX}old.")) {
            retired.push(p);
        } else if let Err(e) = fs::remove_dir_all(&p).or_else(|_| fs::remove_file(&p)) {
            return Err(sys(format_args!("unable to remove {}", p.display()), e));
        }
    }
    if !retired.is_empty() {
        rescan(scandir, warn);
        for old in &retired {
            retire(old, patience, warn);
        }
    }
    Ok(())
}

/// Tell the scanner to rescan and prune; no scanner is not an error (services are picked
/// up when one starts).
pub fn rescan(scandir: &Path, warn: &dyn Warn) {
    match crate::scanctl::send(scandir, &[ScanCommand::Scan, ScanCommand::Prune]) {
        Ok(()) => {}
        Err(crate::scanctl::SendError::NotListening) => warn.warn(&format_args!(
            "no scanner listens on {}: the services start with the next scan",
            scandir.display()
        )),
        Err(e) => warn.warn(&format_args!(
            "unable to tell the scanner to rescan: {}",
            e.describe(&scandir.to_string_lossy(), sd::SVSCAN)
        )),
    }
}

/// Put `services` of `job` into `scandir`, all or nothing, one apply or remove at a time
/// (a lock on the scan directory, waited for `patience` at most): unchanged services are
/// not touched; new and changed ones are first written whole beside their places; then
/// the plan is committed and carried out (changed ones swapped, the old directory out,
/// the new one in; the job's services no longer described moved out); a failure puts the
/// old state back, a kill leaves the plan for the next apply or remove to finish. The
/// old directories' supervisors are then stopped and the directories removed.
pub fn apply(
    scandir: &Path,
    job: &str,
    services: &[Service],
    patience: Duration,
    warn: &dyn Warn,
) -> Result<Outcome, SysError> {
    let _lock = lock(scandir, patience)?;
    recover(scandir, patience, warn)?;
    let mut out = Outcome::default();
    let before = installed(scandir, job)?;
    let mut plan = Vec::new();
    for svc in services {
        let target = scandir.join(&svc.name);
        let exists = fs::symlink_metadata(&target).is_ok();
        if exists && same(&target, svc) {
            out.unchanged.push(svc.name.clone());
            continue;
        }
        if exists && !before.contains(&svc.name) {
            discard(scandir, &plan);
            return Err(SysError(format!(
                "{} exists and is not a service of job {job}: not replaced",
                target.display()
            )));
        }
        let tmp = hidden(scandir, "new", &svc.name);
        let _ = fs::remove_dir_all(&tmp);
        let step = if exists { Step::Replace } else { Step::Add };
        plan.push((step, svc.name.clone()));
        if let Err(e) = write_tree(&tmp, svc) {
            discard(scandir, &plan);
            return Err(e);
        }
    }
    for name in &before {
        if !services.iter().any(|s| &s.name == name) {
            plan.push((Step::Remove, name.clone()));
        }
    }
    if !plan.is_empty() {
        if let Err(e) = write_plan(scandir, &plan) {
            discard(scandir, &plan);
            return Err(e);
        }
        if let Err(e) = execute(scandir, &plan) {
            discard(scandir, &plan);
            return Err(e);
        }
    }
    let mut retired = Vec::new();
    for (step, name) in &plan {
        match step {
            Step::Add => out.added.push(name.clone()),
            Step::Replace => out.replaced.push(name.clone()),
            Step::Remove => out.removed.push(name.clone()),
        }
        if *step != Step::Add {
            retired.push(hidden(scandir, "old", name));
        }
    }
    if out.changed() {
        rescan(scandir, warn);
        for old in &retired {
            retire(old, patience, warn);
        }
    }
    Ok(out)
}

/// Carry out a committed plan, then drop it; on a failure, undo what was done (the plan
/// goes too, so no later recovery redoes it).
fn execute(scandir: &Path, plan: &[(Step, String)]) -> Result<(), SysError> {
    for (i, (step, name)) in plan.iter().enumerate() {
        if let Err(e) = carry_out(scandir, *step, name) {
            undo(scandir, plan, i);
            let _ = fs::remove_file(scandir.join(PLAN));
            return Err(e);
        }
    }
    fs::remove_file(scandir.join(PLAN)).map_err(|e| {
        sys(
            format_args!("unable to remove {}", scandir.join(PLAN).display()),
            e,
        )
    })
}

/// After a failure before or during the plan: the new services written so far go.
fn discard(scandir: &Path, plan: &[(Step, String)]) {
    for (_, name) in plan {
        let _ = fs::remove_dir_all(hidden(scandir, "new", name));
    }
}

/// Bring down and remove every service of `job` (under the same lock and plan as apply).
/// An empty list: the job has none here.
pub fn remove(
    scandir: &Path,
    job: &str,
    patience: Duration,
    warn: &dyn Warn,
) -> Result<Vec<String>, SysError> {
    let _lock = lock(scandir, patience)?;
    recover(scandir, patience, warn)?;
    let names = installed(scandir, job)?;
    if names.is_empty() {
        return Ok(names);
    }
    let plan: Vec<(Step, String)> = names.iter().map(|n| (Step::Remove, n.clone())).collect();
    write_plan(scandir, &plan)?;
    execute(scandir, &plan)?;
    rescan(scandir, warn);
    for name in &names {
        retire(&hidden(scandir, "old", name), patience, warn);
    }
    Ok(names)
}
