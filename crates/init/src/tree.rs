//! The file-system side of init: the saved environment, the copy of the service
//! directories into the writable scan directory, the services to wait for, and the
//! processes descended from init (read from /proc).

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use tend_proto::servicedir::NOTIFICATION_FD;
use tend_sys::Error;

/// The names in a directory, without those starting with a dot.
pub fn list(dir: &Path) -> Result<Vec<OsString>, Error> {
    let rd = std::fs::read_dir(dir).map_err(|e| Error::io("read directory", dir, &e))?;
    let mut names = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| Error::io("read directory", dir, &e))?;
        let name = entry.file_name();
        if !name.as_bytes().starts_with(b".") {
            names.push(name);
        }
    }
    Ok(names)
}

/// Save `env` as an envdir: one file per variable, holding the value as it is (read it
/// back exactly with `tend-envdir -fnL`). Names an envdir cannot hold (`=`, `/`, a leading dot) are
/// skipped.
pub fn save_env(dir: &Path, env: &[(OsString, OsString)]) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io("create", dir, &e))?;
    for (k, v) in env {
        let b = k.as_bytes();
        if b.is_empty() || b[0] == b'.' || b.contains(&b'/') || b.contains(&b'=') {
            continue;
        }
        let path = dir.join(k);
        std::fs::write(&path, v.as_bytes()).map_err(|e| Error::io("write", &path, &e))?;
    }
    Ok(())
}

/// Mirror a directory tree: directories are made, each file becomes a symlink to the
/// original (absolute), symlinks are copied. The mirror is writable (supervise/, event/,
/// down) while the scripts stay where they are: /run is often a `noexec` tmpfs
/// (`docker run --tmpfs /run`), where copied scripts could not be executed.
pub fn mirror(src: &Path, dst: &Path) -> Result<(), Error> {
    let src = std::fs::canonicalize(src).map_err(|e| Error::io("resolve", src, &e))?;
    mirror_dir(&src, dst)
}

fn mirror_dir(src: &Path, dst: &Path) -> Result<(), Error> {
    let meta = std::fs::metadata(src).map_err(|e| Error::io("stat", src, &e))?;
    std::fs::create_dir_all(dst).map_err(|e| Error::io("create", dst, &e))?;
    let _ = std::fs::set_permissions(dst, meta.permissions());
    let rd = std::fs::read_dir(src).map_err(|e| Error::io("read directory", src, &e))?;
    for entry in rd {
        let entry = entry.map_err(|e| Error::io("read directory", src, &e))?;
        let from = entry.path();
        let to = dst.join(entry.file_name());
        let ft = entry
            .file_type()
            .map_err(|e| Error::io("stat", &from, &e))?;
        let target = if ft.is_dir() {
            mirror_dir(&from, &to)?;
            continue;
        } else if ft.is_symlink() {
            std::fs::read_link(&from).map_err(|e| Error::io("read link", &from, &e))?
        } else {
            from.clone()
        };
        let link = || std::os::unix::fs::symlink(&target, &to);
        match link() {
            // A mirror made by an earlier run (a restarted container keeps /run).
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                if std::fs::symlink_metadata(&to).is_ok_and(|m| !m.is_dir()) {
                    let _ = std::fs::remove_file(&to);
                }
                link()
            }
            r => r,
        }
        .map_err(|e| Error::io("create link", &to, &e))?;
    }
    Ok(())
}

/// A service directory to wait for.
pub struct Service {
    /// Its name in the scan directory (`app`, `app/log`).
    pub name: String,
    pub dir: PathBuf,
    /// It has a notification-fd: wait for ready, not only up.
    pub notifies: bool,
}

impl Service {
    pub fn wanted(&self) -> &'static str {
        if self.notifies { "ready" } else { "up" }
    }
}

/// Every service of a scan directory, and its logger.
pub fn services(scan_dir: &Path) -> Vec<Service> {
    let mut names = list(scan_dir).unwrap_or_default();
    names.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    let mut out = Vec::new();
    for name in names {
        let dir = scan_dir.join(&name);
        if !dir.is_dir() {
            continue;
        }
        let shown = String::from_utf8_lossy(name.as_bytes()).into_owned();
        let log = dir.join(tend_proto::servicedir::LOG);
        let has_log = log.is_dir();
        out.push(Service {
            notifies: dir.join(NOTIFICATION_FD).exists(),
            name: shown.clone(),
            dir,
        });
        if has_log {
            out.push(Service {
                notifies: log.join(NOTIFICATION_FD).exists(),
                name: format!("{shown}/log"),
                dir: log,
            });
        }
    }
    out
}

/// The processes below `root`, from the parent links in /proc/PID/stat.
pub fn descendants(root: i32) -> Vec<i32> {
    let mut links: Vec<(i32, i32)> = Vec::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for entry in rd.flatten() {
            let name = entry.file_name();
            let Some(pid) = number(&name) else { continue };
            if let Ok(stat) = std::fs::read(entry.path().join("stat"))
                && let Some(ppid) = parent_of(&stat)
            {
                links.push((pid, ppid));
            }
        }
    }
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        out.extend(links.iter().filter(|l| l.1 == p).map(|l| l.0));
        i += 1;
    }
    out.remove(0);
    out
}

fn number(s: &OsStr) -> Option<i32> {
    let b = s.as_bytes();
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(b).ok()?.parse().ok()
}

/// The 4th field of /proc/PID/stat, after the command name (which may hold spaces and
/// parentheses, hence the last `)`).
fn parent_of(stat: &[u8]) -> Option<i32> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    let mut fields = stat[close + 1..]
        .split(|&b| b == b' ')
        .filter(|f| !f.is_empty());
    fields.next()?;
    number(OsStr::from_bytes(fields.next()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parent_from_stat() {
        assert_eq!(parent_of(b"42 (a) b) S 7 42 42 0"), Some(7));
        assert_eq!(parent_of(b"garbage"), None);
    }

    /// A second mirror into the same place (a restarted container keeps /run) replaces
    /// stale links and files, keeps what supervise made, and refuses nothing.
    #[test]
    fn mirror_again_over_an_earlier_one() {
        let base = std::env::temp_dir().join(format!("tend-mirror-{}", std::process::id()));
        let (src, dst) = (base.join("src"), base.join("dst"));
        std::fs::create_dir_all(src.join("app/log")).unwrap();
        std::fs::write(src.join("app/run"), "#!/bin/sh\n").unwrap();
        std::fs::write(src.join("app/log/run"), "#!/bin/sh\n").unwrap();
        mirror(&src, &dst).unwrap();
        std::fs::create_dir_all(dst.join("app/supervise")).unwrap();
        std::fs::remove_file(dst.join("app/run")).unwrap();
        std::fs::write(dst.join("app/run"), "stale").unwrap();
        std::fs::remove_file(dst.join("app/log/run")).unwrap();
        std::os::unix::fs::symlink("/nowhere", dst.join("app/log/run")).unwrap();
        mirror(&src, &dst).unwrap();
        let src = std::fs::canonicalize(&src).unwrap();
        for f in ["app/run", "app/log/run"] {
            assert_eq!(std::fs::read_link(dst.join(f)).unwrap(), src.join(f));
        }
        assert!(dst.join("app/supervise").is_dir());
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn descendants_of_this_test() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let d = descendants(std::process::id() as i32);
        let _ = child.kill();
        let _ = child.wait();
        assert!(d.contains(&(child.id() as i32)), "{d:?}");
    }
}
