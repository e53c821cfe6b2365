//! The live directory: what tend-rc records between runs, and the longruns' service
//! directories. Layout (tend-rc(8), FILES):
//!
//! ```text
//! LIVE/sources          the source directories, one absolute path a line
//! LIVE/scandir          the scan directory
//! LIVE/scanner          the scanner the tree was made under (PID@START_TICKS): a
//!                       live directory is in use while that scanner runs
//! LIVE/lock             held while a tend-rc runs
//! LIVE/defs             "TYPE FINGERPRINT NAME/DEP/DEP" a line: the definitions that
//!                       are live and what each depended on (removed ones go down in
//!                       that order)
//! LIVE/oneshots/NAME    present while the oneshot is up; holds its down script
//! LIVE/servicedirs/NAME a longrun's service directory (SCANDIR/NAME links to it, as
//!                       s6-rc-init links every longrun, a pipeline's consumers too)
//! LIVE/pipes/NAME       the FIFO a pipeline's consumer reads
//! ```
//!
//! A longrun's state is never recorded here: it is read from its supervisor each run,
//! so a tend-rc killed in the middle leaves nothing false behind.

use crate::graph::Graph;
use crate::source::{File, Kind};
use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use tend_proto::servicedir as sd;
use tend_sys::Error;

/// A definition as the live directory recorded it when it was last synced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveDef {
    /// `oneshot` or `longrun`.
    pub ty: String,
    pub fingerprint: u64,
    /// Its direct dependencies then (atoms).
    pub deps: Vec<String>,
}

pub struct Live {
    pub dir: PathBuf,
    pub sources: Vec<PathBuf>,
    pub scandir: PathBuf,
}

fn io(op: &'static str, path: &Path, e: std::io::Error) -> Error {
    Error::io(op, path, &e)
}

/// Write a file whole, through a temporary name and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<(), Error> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".new");
    let tmp = PathBuf::from(tmp);
    let _ = fs::remove_file(&tmp);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)
        .map_err(|e| io("create", &tmp, e))?;
    f.write_all(bytes).map_err(|e| io("write", &tmp, e))?;
    drop(f);
    fs::rename(&tmp, path).map_err(|e| io("rename", path, e))
}

impl Live {
    pub fn servicedir(&self, name: &str) -> PathBuf {
        self.dir.join("servicedirs").join(name)
    }

    pub fn oneshot_marker(&self, name: &str) -> PathBuf {
        self.dir.join("oneshots").join(name)
    }

    /// Open an existing live directory.
    pub fn open(dir: &Path) -> Result<Live, Error> {
        let read = |n: &str| -> Result<Vec<u8>, Error> {
            let p = dir.join(n);
            fs::read(&p).map_err(|e| io("read", &p, e))
        };
        let sources = read("sources")?
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| PathBuf::from(std::ffi::OsStr::from_bytes(l)))
            .collect();
        let sd = read("scandir")?;
        let sd = sd.strip_suffix(b"\n").unwrap_or(&sd);
        Ok(Live {
            dir: dir.to_path_buf(),
            sources,
            scandir: PathBuf::from(std::ffi::OsStr::from_bytes(sd)),
        })
    }

    /// The scan directory of a tend-rc live directory at `dir` whose scanner still runs:
    /// one that is in use.
    pub fn in_use(dir: &Path) -> Option<PathBuf> {
        let recorded = fs::read(dir.join("sources"))
            .ok()
            .and(fs::read(dir.join("scandir")).ok())?;
        let scandir = PathBuf::from(std::ffi::OsStr::from_bytes(
            recorded.strip_suffix(b"\n").unwrap_or(&recorded),
        ));
        tend_client::scanctl::send(&scandir, &[]).ok()?;
        // A scanner runs there, but it may be a new one (a container restarted with its
        // /run kept): then nothing of the tree runs any more, and it is not in use.
        let made_under = fs::read_to_string(dir.join("scanner")).ok();
        match (made_under, scanner_identity(&scandir)) {
            (Some(then), Some(now)) if then.trim() != now => None,
            _ => Some(scandir),
        }
    }

    /// Create the live directory (an old one of tend-rc's, whose scanner is gone, is
    /// replaced).
    pub fn create(dir: &Path, sources: &[PathBuf], scandir: &Path) -> Result<Live, Error> {
        if dir.join("sources").exists() && dir.join("scandir").exists() {
            fs::remove_dir_all(dir).map_err(|e| io("remove", dir, e))?;
        }
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(dir)
            .map_err(|e| io("create", dir, e))?;
        for sub in ["servicedirs", "oneshots"] {
            let p = dir.join(sub);
            fs::DirBuilder::new()
                .mode(0o755)
                .create(&p)
                .or_else(|e| {
                    if e.kind() == std::io::ErrorKind::AlreadyExists {
                        Ok(())
                    } else {
                        Err(e)
                    }
                })
                .map_err(|e| io("create", &p, e))?;
        }
        let mut sd = scandir.as_os_str().as_bytes().to_vec();
        sd.push(b'\n');
        write_atomic(&dir.join("scandir"), &sd, 0o644)?;
        let scanner = scanner_identity(scandir).unwrap_or_default();
        write_atomic(
            &dir.join("scanner"),
            format!("{scanner}\n").as_bytes(),
            0o644,
        )?;
        let live = Live {
            dir: dir.to_path_buf(),
            sources: sources.to_vec(),
            scandir: scandir.to_path_buf(),
        };
        live.write_sources()?;
        Ok(live)
    }

    /// Record the source directories (`tend-rc update -c` changes them).
    pub fn write_sources(&self) -> Result<(), Error> {
        let mut s = Vec::new();
        for src in &self.sources {
            s.extend_from_slice(src.as_os_str().as_bytes());
            s.push(b'\n');
        }
        write_atomic(&self.dir.join("sources"), &s, 0o644)
    }

    /// The recorded definitions, by name. A line is `TYPE FINGERPRINT NAME[/DEP]...`:
    /// a name holds no slash, so the dependencies (atoms, bundles expanded) follow it,
    /// each after one; a line of an older tend-rc has none.
    pub fn defs(&self) -> HashMap<String, LiveDef> {
        let mut out = HashMap::new();
        let Ok(data) = fs::read(self.dir.join("defs")) else {
            return out;
        };
        for line in data.split(|&b| b == b'\n') {
            let s = String::from_utf8_lossy(line);
            let mut it = s.splitn(3, ' ');
            if let (Some(t), Some(f), Some(rest)) = (it.next(), it.next(), it.next())
                && let Ok(f) = u64::from_str_radix(f, 16)
            {
                let mut names = rest.split('/');
                let name = names.next().unwrap_or_default().to_string();
                let deps = names
                    .filter(|d| !d.is_empty())
                    .map(str::to_string)
                    .collect();
                out.insert(
                    name,
                    LiveDef {
                        ty: t.to_string(),
                        fingerprint: f,
                        deps,
                    },
                );
            }
        }
        out
    }

    pub fn write_defs(&self, g: &Graph) -> Result<(), Error> {
        let mut s = String::new();
        for a in &g.atoms {
            s.push_str(&format!(
                "{} {:016x} {}",
                a.def.kind.word(),
                a.def.fingerprint,
                a.name()
            ));
            for &d in &a.deps {
                s.push('/');
                s.push_str(g.atoms[d].name());
            }
            s.push('\n');
        }
        write_atomic(&self.dir.join("defs"), s.as_bytes(), 0o644)
    }

    /// Whether a longrun's service directory stands on its own: linked into the scan
    /// directory, no logger, not a pipeline's FIFO end. Only such a one can be renamed
    /// under its running supervisor.
    pub fn stands_alone(&self, name: &str) -> bool {
        let dir = self.servicedir(name);
        fs::read_link(self.scandir.join(name)).ok().as_deref() == Some(dir.as_path())
            && fs::symlink_metadata(dir.join(sd::LOG)).is_err()
            && fs::symlink_metadata(dir.join("run.user")).is_err()
    }

    /// Whether the oneshot is recorded up.
    pub fn oneshot_up(&self, name: &str) -> bool {
        self.oneshot_marker(name).exists()
    }

    /// Every oneshot recorded up (also those no longer defined).
    pub fn oneshots_up(&self) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(self.dir.join("oneshots"))
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| !n.starts_with('.') && !n.ends_with(".new"))
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    /// Every longrun that has a service directory here.
    pub fn longruns(&self) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(self.dir.join("servicedirs"))
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| !n.starts_with('.'))
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    /// Write (or rewrite in place) a longrun's service directory: its files, `down` when
    /// new, a `run` that opens its pipes when it is in a pipeline. The supervisor re-reads
    /// run and settings at each start, so an up service is not restarted by this.
    pub fn write_servicedir(&self, g: &Graph, i: usize) -> Result<bool, Error> {
        let a = &g.atoms[i];
        let Kind::Longrun(l) = &a.def.kind else {
            return Ok(false);
        };
        let dir = self.servicedir(a.name());
        let fresh = !dir.exists();
        if fresh {
            fs::DirBuilder::new()
                .mode(0o755)
                .create(&dir)
                .map_err(|e| io("create", &dir, e))?;
            write_atomic(&dir.join(sd::DOWN), b"", 0o644)?;
        }
        let wrapped = a.fifo_in || a.fifo_out.is_some();
        for f in &l.files {
            if wrapped && f.path.as_os_str() == "run" {
                write_file(
                    &dir,
                    &File {
                        path: "run.user".into(),
                        ..f.clone()
                    },
                )?;
            } else {
                write_file(&dir, f)?;
            }
        }
        if wrapped {
            self.write_pipe_run(g, i, &dir)?;
        }
        // Files of an older definition no longer there go (not what the supervisor owns).
        for e in fs::read_dir(&dir)
            .map_err(|e| io("read", &dir, e))?
            .flatten()
        {
            let n = e.file_name();
            let b = n.as_bytes();
            if [sd::SUPERVISE, sd::EVENT, sd::DOWN, sd::LOG]
                .iter()
                .any(|own| own.as_bytes() == b)
                || (wrapped && matches!(b, b"run" | b"run.user"))
            {
                continue;
            }
            if !l.files.iter().any(|f| f.path.as_os_str() == n) {
                let p = dir.join(&n);
                let _ = fs::remove_dir_all(&p).or_else(|_| fs::remove_file(&p));
            }
        }
        // A consumer was once its producer's log/ (tend-rc before every longrun had its
        // own SCANDIR/NAME): that link goes.
        let log = dir.join(sd::LOG);
        if fs::symlink_metadata(&log).is_ok_and(|m| m.file_type().is_symlink()) {
            let _ = fs::remove_file(&log);
        }
        Ok(fresh)
    }

    /// The FIFO a consumer of a long pipeline or a funnel reads: `LIVE/pipes/NAME`.
    pub fn pipe(&self, consumer: &str) -> PathBuf {
        self.dir.join("pipes").join(consumer)
    }

    /// A `run` that opens the pipeline's FIFOs read-write (so the pipe outlives a restart
    /// of any side: neither end ever sees EOF or EPIPE, as under s6-rc's fd holder) and
    /// execs the definition's own `run`, kept as `run.user`.
    fn write_pipe_run(&self, g: &Graph, i: usize, dir: &Path) -> Result<(), Error> {
        let a = &g.atoms[i];
        let mut line = b"#!/bin/sh\n# Written by tend-rc: this service's pipes, then its run.\nexec ./run.user".to_vec();
        let mut redirect = |fd: &str, consumer: &str| -> Result<(), Error> {
            let fifo = self.pipe(consumer);
            make_fifo(&fifo)?;
            line.extend_from_slice(format!(" {fd}<>").as_bytes());
            line.extend_from_slice(&tend_sys::exec::shell_word(fifo.as_os_str().as_bytes()));
            Ok(())
        };
        if a.fifo_in {
            redirect("0", a.name())?;
        }
        if let Some(c) = a.fifo_out {
            redirect("1", g.atoms[c].name())?;
        }
        line.push(b'\n');
        write_file(
            dir,
            &File {
                path: "run".into(),
                bytes: Some(line),
                mode: 0o755,
            },
        )
    }

    /// SCANDIR/NAME → LIVE/servicedirs/NAME, for every longrun.
    pub fn link(&self, name: &str) -> Result<(), Error> {
        let link = self.scandir.join(name);
        let target = self.servicedir(name);
        match fs::read_link(&link) {
            Ok(t) if t == target => return Ok(()),
            Ok(_) => {
                let _ = fs::remove_file(&link);
            }
            Err(_) if fs::symlink_metadata(&link).is_ok() => {
                return Err(Error::at("link into", &link, nix::errno::Errno::EEXIST));
            }
            Err(_) => {}
        }
        std::os::unix::fs::symlink(&target, &link).map_err(|e| io("symlink", &link, e))
    }

    pub fn unlink(&self, name: &str) {
        let link = self.scandir.join(name);
        if fs::read_link(&link).ok().as_deref() == Some(self.servicedir(name).as_path()) {
            let _ = fs::remove_file(&link);
        }
    }
}

/// The scanner of `scandir` as a process a later one can be told from: the pid that
/// holds `.s6-svscan/lock` and its start time (clock ticks since boot, from
/// /proc/PID/stat), `PID@TICKS`. None when nobody holds the lock (s6-svscan 2.11 takes
/// none).
pub fn scanner_identity(scandir: &Path) -> Option<String> {
    use std::os::fd::AsRawFd;
    let lock = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(scandir.join(sd::svscan::LOCK))
        .ok()?;
    let mut fl = libc::flock {
        l_type: libc::F_WRLCK as i16,
        l_whence: libc::SEEK_SET as i16,
        l_start: 0,
        l_len: 0,
        l_pid: 0,
    };
    nix::fcntl::fcntl(lock.as_raw_fd(), nix::fcntl::FcntlArg::F_GETLK(&mut fl)).ok()?;
    if fl.l_type == libc::F_UNLCK as i16 || fl.l_pid <= 0 {
        return None;
    }
    let stat = fs::read_to_string(format!("/proc/{}/stat", fl.l_pid)).ok()?;
    // Field 22, the 20th after the command's closing parenthesis.
    let start = stat.rsplit_once(") ")?.1.split(' ').nth(19)?;
    Some(format!("{}@{start}", fl.l_pid))
}

/// A FIFO at `path` (kept when there is one: it may hold a live pipeline's lines).
fn make_fifo(path: &Path) -> Result<(), Error> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|e| io("create", parent, e))?;
    }
    match fs::symlink_metadata(path) {
        Ok(m) if std::os::unix::fs::FileTypeExt::is_fifo(&m.file_type()) => Ok(()),
        Ok(_) => Err(Error::at("make a FIFO at", path, nix::errno::Errno::EEXIST)),
        Err(_) => nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600))
            .map_err(|e| Error::at("make a FIFO at", path, e)),
    }
}

fn write_file(dir: &Path, f: &File) -> Result<(), Error> {
    let p = dir.join(&f.path);
    match &f.bytes {
        None => {
            if !p.is_dir() {
                let _ = fs::remove_file(&p);
                fs::DirBuilder::new()
                    .mode(f.mode)
                    .create(&p)
                    .map_err(|e| io("create", &p, e))?;
            }
            let _ = fs::set_permissions(&p, fs::Permissions::from_mode(f.mode));
            Ok(())
        }
        Some(b) => {
            if let Ok(m) = fs::symlink_metadata(&p)
                && m.is_file()
                && m.permissions().mode() & 0o7777 == f.mode
                && m.len() == b.len() as u64
                && fs::read(&p).ok().as_deref() == Some(&b[..])
            {
                return Ok(());
            }
            write_atomic(&p, b, f.mode)?;
            fs::set_permissions(&p, fs::Permissions::from_mode(f.mode))
                .map_err(|e| io("chmod", &p, e))
        }
    }
}
