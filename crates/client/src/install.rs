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
    matches!(
        name,
        "supervise" | "event" | "main" | "data" | "monit-state"
    )
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
    for sub in ["", "env", "log"] {
        let d = if sub.is_empty() {
            dir.to_path_buf()
        } else {
            dir.join(sub)
        };
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let n = e.file_name();
            let Some(n) = n.to_str() else { return false };
            if runtime(n) || (sub.is_empty() && (n == "env" || n == "log")) {
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
        if fs::read(e.path().join(MARKER)).ok().as_deref() == Some(want.as_bytes()) {
            out.push(n.to_string());
        }
    }
    out.sort();
    Ok(out)
}

/// Stop a service directory that has left the scan directory (and its logger), then
/// remove it; one left running after `patience` stays, with a warning.
fn retire(dir: &Path, patience: Duration, warn: &dyn Warn) {
    let log = dir.join("log");
    // d: down (down-signal, then KILL after timeout-kill); x: the supervisor exits.
    let _ = crate::control::send(dir, b"dx");
    let _ = crate::control::send(&log, b"x");
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

fn hidden(scandir: &Path, kind: &str, name: &str) -> PathBuf {
    scandir.join(format!(".tend-jobs.{kind}.{name}.{}", std::process::id()))
}

/// Tell the scanner to rescan and prune; no scanner is not an error (services are picked
/// up when one starts).
pub fn rescan(scandir: &Path, warn: &dyn Warn) {
    match tend_proto::control::send_in(scandir, tend_proto::servicedir::SVSCAN, b"an") {
        Ok(()) => {}
        Err(tend_proto::control::SendError::NotListening) => warn.warn(&format_args!(
            "no scanner listens on {}: the services start with the next scan",
            scandir.display()
        )),
        Err(e) => warn.warn(&format_args!(
            "unable to tell the scanner on {} to rescan: {e:?}",
            scandir.display()
        )),
    }
}

/// Put `services` of `job` into `scandir`: unchanged ones are not touched, new ones
/// renamed in whole, changed ones swapped (the old directory out, the new one in) and the
/// old one's supervisor stopped; the job's services no longer described are removed.
pub fn apply(
    scandir: &Path,
    job: &str,
    services: &[Service],
    patience: Duration,
    warn: &dyn Warn,
) -> Result<Outcome, SysError> {
    let mut out = Outcome::default();
    let before = installed(scandir, job)?;
    let mut retired = Vec::new();
    for svc in services {
        let target = scandir.join(&svc.name);
        let exists = fs::symlink_metadata(&target).is_ok();
        if exists && same(&target, svc) {
            out.unchanged.push(svc.name.clone());
            continue;
        }
        if exists && !before.contains(&svc.name) {
            return Err(SysError(format!(
                "{} exists and is not a service of job {job}: not replaced",
                target.display()
            )));
        }
        let tmp = hidden(scandir, "new", &svc.name);
        let _ = fs::remove_dir_all(&tmp);
        if let Err(e) = write_tree(&tmp, svc) {
            let _ = fs::remove_dir_all(&tmp);
            return Err(e);
        }
        if exists {
            let old = hidden(scandir, "old", &svc.name);
            let _ = fs::remove_dir_all(&old);
            fs::rename(&target, &old)
                .map_err(|e| sys(format_args!("unable to move {} aside", target.display()), e))?;
            if let Err(e) = fs::rename(&tmp, &target) {
                // Put the old one back: never no service at all.
                let _ = fs::rename(&old, &target);
                let _ = fs::remove_dir_all(&tmp);
                return Err(sys(
                    format_args!("unable to rename into {}", target.display()),
                    e,
                ));
            }
            retired.push(old);
            out.replaced.push(svc.name.clone());
        } else {
            fs::rename(&tmp, &target).map_err(|e| {
                sys(
                    format_args!("unable to rename into {}", target.display()),
                    e,
                )
            })?;
            out.added.push(svc.name.clone());
        }
    }
    for name in &before {
        if !services.iter().any(|s| &s.name == name) {
            let old = hidden(scandir, "old", name);
            let _ = fs::remove_dir_all(&old);
            fs::rename(scandir.join(name), &old)
                .map_err(|e| sys(format_args!("unable to move {name} aside"), e))?;
            retired.push(old);
            out.removed.push(name.clone());
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

/// Bring down and remove every service of `job`. Ok(false): the job has none here.
pub fn remove(
    scandir: &Path,
    job: &str,
    patience: Duration,
    warn: &dyn Warn,
) -> Result<Vec<String>, SysError> {
    let names = installed(scandir, job)?;
    let mut retired = Vec::new();
    for name in &names {
        let old = hidden(scandir, "old", name);
        let _ = fs::remove_dir_all(&old);
        fs::rename(scandir.join(name), &old)
            .map_err(|e| sys(format_args!("unable to move {name} aside"), e))?;
        retired.push(old);
    }
    if !names.is_empty() {
        rescan(scandir, warn);
        for old in &retired {
            retire(old, patience, warn);
        }
    }
    Ok(names)
}
