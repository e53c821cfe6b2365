//! Reading s6-rc source directories as s6-rc-compile reads them: one directory per
//! definition; `type`; `dependencies.d/` (winning over `dependencies`); `contents.d/` or
//! `contents`; timeouts in milliseconds; `flag-essential`; a oneshot's `up`/`down`; a
//! longrun's files (what its service directory will hold) and pipeline files. Every
//! problem is collected with its path, not just the first; nothing here follows a FIFO
//! or reads more than a bound of any file.

use crate::script::{self, Script};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use tend_proto::servicedir as sd;

/// One error in a source, with the path it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub path: PathBuf,
    pub what: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.what)
    }
}

fn problem(path: impl Into<PathBuf>, what: impl Into<String>) -> Problem {
    Problem {
        path: path.into(),
        what: what.into(),
    }
}

/// A file of a longrun's service directory, as it will be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// Relative to the service directory.
    pub path: PathBuf,
    pub mode: u32,
    /// None: a directory.
    pub bytes: Option<Vec<u8>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Longrun {
    pub files: Vec<File>,
    /// `notification-fd` present: up means ready.
    pub notify: bool,
    pub producer_for: Option<String>,
    pub consumer_for: Vec<String>,
    pub pipeline_name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// `reload` is s6-rc 0.7's (empty when the definition has none).
    Oneshot {
        up: Script,
        down: Script,
        reload: Script,
    },
    Longrun(Longrun),
    Bundle {
        contents: Vec<String>,
    },
}

impl Kind {
    pub fn word(&self) -> &'static str {
        match self {
            Kind::Oneshot { .. } => "oneshot",
            Kind::Longrun(_) => "longrun",
            Kind::Bundle { .. } => "bundle",
        }
    }
}

/// One service definition as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Def {
    pub name: String,
    pub dir: PathBuf,
    pub kind: Kind,
    pub deps: Vec<String>,
    /// Milliseconds; 0: no limit.
    pub timeout_up: u64,
    pub timeout_down: u64,
    pub essential: bool,
    /// A hash of everything that makes the service what it is (tells a changed
    /// definition from an unchanged one across runs).
    pub fingerprint: u64,
}

/// The most a setting file (type, a timeout, a name list) may hold.
/// A oneshot's scripts in an s6-rc source definition (not service-directory files:
/// a oneshot has none).
pub const UP_SCRIPT: &str = "up";
pub const DOWN_SCRIPT: &str = "down";

const SMALL: usize = 64 * 1024;
/// The most a script or a copied file may hold.
const LARGE: usize = 16 * 1024 * 1024;

/// What looking at one entry gave.
enum Got {
    Absent,
    Regular(Vec<u8>),
    Dir,
}

/// Read a regular file of at most `max` bytes; a directory is reported as such; a FIFO,
/// a device or a socket is a problem, never opened.
fn look(path: &Path, max: usize) -> Result<Got, Problem> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Got::Absent),
        Err(e) => return Err(problem(path, tend_sys::error::io_reason(&e))),
    };
    if meta.is_dir() {
        return Ok(Got::Dir);
    }
    if !meta.is_file() {
        return Err(problem(
            path,
            format!(
                "not a regular file but {}",
                tend_sys::diagnose::kind_of(meta.permissions().mode())
            ),
        ));
    }
    if meta.len() > max as u64 {
        return Err(problem(
            path,
            format!("too large ({} bytes, at most {max})", meta.len()),
        ));
    }
    // The buffer is as large as asked: ask for what the file holds (plus one byte, to see
    // a file that grew since).
    match tend_sys::fd::read_regular(path, (meta.len() as usize).min(max) + 1) {
        Ok(b) if b.len() > max => Err(problem(path, format!("too large (at most {max} bytes)"))),
        Ok(b) => Ok(Got::Regular(b)),
        Err(e) => Err(problem(path, e.describe())),
    }
}

fn file(path: &Path, max: usize, problems: &mut Vec<Problem>) -> Option<Vec<u8>> {
    match look(path, max) {
        Ok(Got::Regular(b)) => Some(b),
        Ok(Got::Absent) => None,
        Ok(Got::Dir) => {
            problems.push(problem(path, "a directory, not a file"));
            None
        }
        Err(p) => {
            problems.push(p);
            None
        }
    }
}

/// Whether `name` may name a service: not empty, no slash or newline, no leading dot
/// (dot entries are never definitions), not one of s6-rc's reserved prefixes.
pub fn name_problem(name: &[u8]) -> Option<&'static str> {
    if name.is_empty() {
        Some("an empty name")
    } else if name.contains(&b'/') {
        Some("a name with a slash")
    } else if name.contains(&b'\n') {
        Some("a name with a newline")
    } else if name[0] == b'.' {
        Some("a name starting with a dot")
    } else if name.starts_with(b"s6rc-") || name.starts_with(b"s6-rc-") {
        Some("a name with a reserved prefix (s6rc- or s6-rc-)")
    } else if std::str::from_utf8(name).is_err() {
        Some("a name that is not UTF-8")
    } else {
        None
    }
}

/// Names from a `.d` directory (every entry but dot entries is a name) or, without it,
/// from a list file (one a line, leading blanks and `#` lines ignored).
fn names(dir: &Path, base: &str, problems: &mut Vec<Problem>) -> Option<Vec<String>> {
    let d = dir.join(format!("{base}.d"));
    let mut out = Vec::new();
    match look(&d, SMALL) {
        Ok(Got::Dir) => {
            let rd = match std::fs::read_dir(&d) {
                Ok(rd) => rd,
                Err(e) => {
                    problems.push(problem(&d, tend_sys::error::io_reason(&e)));
                    return Some(out);
                }
            };
            for e in rd.flatten() {
                let n = e.file_name();
                let b = n.as_bytes();
                if b.first() == Some(&b'.') {
                    continue;
                }
                push_name(&d.join(&n), b, &mut out, problems);
            }
            out.sort();
            return Some(out);
        }
        Ok(Got::Regular(_)) => {
            problems.push(problem(&d, "not a directory"));
            return Some(out);
        }
        Ok(Got::Absent) => {}
        Err(p) => {
            problems.push(p);
            return Some(out);
        }
    }
    let f = dir.join(base);
    let data = file(&f, SMALL, problems)?;
    for line in data.split(|&b| b == b'\n') {
        let line = &line[line
            .iter()
            .take_while(|b| **b == b' ' || **b == b'\t')
            .count()..];
        if line.is_empty() || line[0] == b'#' {
            continue;
        }
        push_name(&f, line, &mut out, problems);
    }
    Some(out)
}

fn push_name(at: &Path, name: &[u8], out: &mut Vec<String>, problems: &mut Vec<Problem>) {
    match name_problem(name) {
        Some(why) => problems.push(problem(
            at,
            format!("{why}: {}", String::from_utf8_lossy(name)),
        )),
        None => {
            let s = String::from_utf8_lossy(name).into_owned();
            if !out.contains(&s) {
                out.push(s);
            }
        }
    }
}

/// A timeout file: absent 0, else digits (one trailing newline allowed).
fn timeout(dir: &Path, name: &str, problems: &mut Vec<Problem>) -> u64 {
    let p = dir.join(name);
    let Some(data) = file(&p, SMALL, problems) else {
        return 0;
    };
    let t = data.strip_suffix(b"\n").unwrap_or(&data);
    match std::str::from_utf8(t)
        .ok()
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|s| s.parse().ok())
    {
        Some(v) => v,
        None => {
            problems.push(problem(&p, "not a number of milliseconds"));
            0
        }
    }
}

/// One name in a file (producer-for, pipeline-name): one line.
fn one_name(path: &Path, problems: &mut Vec<Problem>) -> Option<String> {
    let data = file(path, SMALL, problems)?;
    let t = data.strip_suffix(b"\n").unwrap_or(&data);
    match name_problem(t) {
        Some(why) => {
            problems.push(problem(
                path,
                format!("{why}: {}", String::from_utf8_lossy(t)),
            ));
            None
        }
        None => Some(String::from_utf8_lossy(t).into_owned()),
    }
}

/// Files of a definition that are s6-rc's and never part of the service directory.
fn rc_own(name: &[u8]) -> bool {
    // What the supervisor owns in a service directory is never copied from the source.
    [sd::LOG, sd::DOWN, sd::SUPERVISE, sd::EVENT]
        .iter()
        .any(|own| own.as_bytes() == name)
        || matches!(
            name,
            b"type"
                | b"dependencies"
                | b"dependencies.d"
                | b"timeout-up"
                | b"timeout-down"
                | b"flag-essential"
                | b"flag-recommended"
                | b"producer-for"
                | b"consumer-for"
                | b"pipeline-name"
                | b"contents"
                | b"contents.d"
                | b"up"
        )
}

/// The most a longrun's copied files may hold in all, and how many there may be: a tree
/// of links or a huge `data/` is a problem named once, never an exhausted memory.
const COPY_BYTES: usize = 64 * 1024 * 1024;
const COPY_FILES: usize = 10_000;

/// What a longrun's copy has read so far.
#[derive(Default)]
struct Copied {
    files: Vec<File>,
    bytes: usize,
    over: bool,
}

/// Copy a longrun's files (everything but s6-rc's own), directories recursively. A
/// symbolic link to a directory is not followed (three links to `.` would loop: s6-rc-
/// compile never follows one either); `run` and `finish` are copied 0755, as
/// s6-rc-compile copies them, whatever their mode in the source.
fn copy_files(dir: &Path, rel: &Path, out: &mut Copied, problems: &mut Vec<Problem>, depth: u32) {
    let here = dir.join(rel);
    let rd = match std::fs::read_dir(&here) {
        Ok(rd) => rd,
        Err(e) => {
            problems.push(problem(&here, tend_sys::error::io_reason(&e)));
            return;
        }
    };
    let mut entries: Vec<_> = rd.flatten().map(|e| e.file_name()).collect();
    entries.sort();
    for n in entries {
        let top = rel.as_os_str().is_empty();
        if top && rc_own(n.as_bytes()) {
            continue;
        }
        let p = here.join(&n);
        let r = rel.join(&n);
        if out.files.len() >= COPY_FILES || out.bytes > COPY_BYTES {
            if !out.over {
                out.over = true;
                problems.push(problem(
                    dir,
                    format!(
                        "more than {COPY_FILES} files or {} MiB to copy",
                        COPY_BYTES >> 20
                    ),
                ));
            }
            return;
        }
        let linked = std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink());
        let meta = match std::fs::metadata(&p) {
            Ok(m) => m,
            Err(e) => {
                problems.push(problem(&p, tend_sys::error::io_reason(&e)));
                continue;
            }
        };
        let mode = if top && matches!(n.as_bytes(), b"run" | b"finish") {
            0o755
        } else {
            meta.permissions().mode() & 0o7777
        };
        if meta.is_dir() {
            if linked {
                continue;
            }
            if depth > 16 {
                problems.push(problem(&p, "nested too deep"));
                continue;
            }
            out.files.push(File {
                path: r.clone(),
                mode,
                bytes: None,
            });
            copy_files(dir, &r, out, problems, depth + 1);
        } else if let Some(b) = file(&p, LARGE, problems) {
            out.bytes += b.len();
            out.files.push(File {
                path: r,
                mode,
                bytes: Some(b),
            });
        }
    }
}

/// FNV-1a, 64 bits: a fingerprint, not a defence.
pub struct Hash(u64);

impl Hash {
    pub fn new() -> Hash {
        Hash(0xcbf2_9ce4_8422_2325)
    }
    pub fn add(&mut self, b: &[u8]) {
        for &c in b {
            self.0 ^= u64::from(c);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
        // A separator, so ("ab","c") and ("a","bc") differ.
        self.0 ^= 0xff;
        self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
    }
    pub fn value(&self) -> u64 {
        self.0
    }
}

impl Default for Hash {
    fn default() -> Self {
        Hash::new()
    }
}

/// Read one definition directory; None when it cannot be a definition at all.
pub fn read_def(dir: &Path, name: &str, problems: &mut Vec<Problem>) -> Option<Def> {
    let kind_word = type_of(dir, problems)?;
    let mut h = Hash::new();
    h.add(kind_word);
    let deps = if kind_word == b"bundle" {
        Vec::new()
    } else {
        names(dir, "dependencies", problems).unwrap_or_default()
    };
    for d in &deps {
        h.add(d.as_bytes());
    }
    let timeout_up = if kind_word == b"bundle" {
        0
    } else {
        timeout(dir, "timeout-up", problems)
    };
    let timeout_down = if kind_word == b"bundle" {
        0
    } else {
        timeout(dir, "timeout-down", problems)
    };
    let essential = std::fs::symlink_metadata(dir.join("flag-essential")).is_ok();
    let kind = match kind_word {
        b"oneshot" => read_oneshot(dir, &mut h, problems),
        b"longrun" => read_longrun(dir, &mut h, problems),
        _ => read_bundle(dir, problems),
    };
    Some(Def {
        name: name.to_string(),
        dir: dir.to_path_buf(),
        kind,
        deps,
        timeout_up,
        timeout_down,
        essential,
        fingerprint: h.value(),
    })
}

/// A definition's `type`: exactly `oneshot`, `longrun` or `bundle`, one newline at most.
fn type_of(dir: &Path, problems: &mut Vec<Problem>) -> Option<&'static [u8]> {
    let tpath = dir.join("type");
    let word = match look(&tpath, SMALL) {
        Ok(Got::Regular(b)) => b,
        Ok(Got::Absent) => {
            problems.push(problem(&tpath, "missing (a definition needs a type)"));
            return None;
        }
        Ok(Got::Dir) => {
            problems.push(problem(&tpath, "a directory, not a file"));
            return None;
        }
        Err(p) => {
            problems.push(p);
            return None;
        }
    };
    let w = word.strip_suffix(b"\n").unwrap_or(&word);
    match w {
        b"oneshot" => Some(b"oneshot"),
        b"longrun" => Some(b"longrun"),
        b"bundle" => Some(b"bundle"),
        _ => {
            let shown: String = String::from_utf8_lossy(&w[..w.len().min(40)])
                .escape_debug()
                .collect();
            problems.push(problem(
                &tpath,
                format!("not oneshot, longrun or bundle (\"{shown}\")"),
            ));
            None
        }
    }
}

/// A oneshot's scripts: `up` (required), `down`, and s6-rc 0.7's `reload`.
fn read_oneshot(dir: &Path, h: &mut Hash, problems: &mut Vec<Problem>) -> Kind {
    let mut script_of = |f: &str, required: bool| -> Script {
        let p = dir.join(f);
        match look(&p, LARGE) {
            Ok(Got::Regular(b)) => {
                h.add(&b);
                match script::parse(&b) {
                    Ok(s) => s,
                    Err(why) => {
                        problems.push(problem(&p, why));
                        Script::default()
                    }
                }
            }
            Ok(Got::Absent) => {
                if required {
                    problems.push(problem(&p, "missing (a oneshot needs an up script)"));
                }
                h.add(b"");
                Script::default()
            }
            Ok(Got::Dir) => {
                problems.push(problem(&p, "a directory, not a script"));
                Script::default()
            }
            Err(pr) => {
                problems.push(pr);
                Script::default()
            }
        }
    };
    let up = script_of(UP_SCRIPT, true);
    let down = script_of(DOWN_SCRIPT, false);
    // s6-rc 0.7's reload script, lexed like up; not in the fingerprint when there
    // is none, so a tree without one is the same definition as before.
    let reload = if std::fs::symlink_metadata(dir.join("reload")).is_ok() {
        script_of("reload", false)
    } else {
        Script::default()
    };
    Kind::Oneshot { up, down, reload }
}

/// A longrun: its `run`, the files its service directory gets, its pipeline files.
fn read_longrun(dir: &Path, h: &mut Hash, problems: &mut Vec<Problem>) -> Kind {
    let run = dir.join(sd::RUN);
    match look(&run, LARGE) {
        Ok(Got::Regular(_)) => {}
        Ok(Got::Absent) => problems.push(problem(&run, "missing (a longrun needs a run script)")),
        Ok(Got::Dir) => problems.push(problem(&run, "a directory, not a script")),
        Err(p) => problems.push(p),
    }
    let mut copied = Copied::default();
    copy_files(dir, Path::new(""), &mut copied, problems, 0);
    let files = copied.files;
    for f in &files {
        h.add(f.path.as_os_str().as_bytes());
        h.add(&f.mode.to_be_bytes());
        h.add(f.bytes.as_deref().unwrap_or(b"/"));
    }
    let producer_for = match dir.join("producer-for") {
        p if p.exists() => one_name(&p, problems),
        _ => None,
    };
    let consumer_for = if dir.join("consumer-for").exists() {
        names(dir, "consumer-for", problems).unwrap_or_default()
    } else {
        Vec::new()
    };
    let pipeline_name = match dir.join("pipeline-name") {
        p if p.exists() => one_name(&p, problems),
        _ => None,
    };
    h.add(producer_for.as_deref().unwrap_or("").as_bytes());
    Kind::Longrun(Longrun {
        notify: files
            .iter()
            .any(|f| f.path == Path::new(sd::NOTIFICATION_FD)),
        files,
        producer_for,
        consumer_for,
        pipeline_name,
    })
}

/// A bundle's contents (`contents.d/` or `contents`).
fn read_bundle(dir: &Path, problems: &mut Vec<Problem>) -> Kind {
    let contents = names(dir, "contents", problems);
    if contents.is_none() {
        problems.push(problem(
            dir.join("contents.d"),
            "missing (a bundle needs contents.d or contents)",
        ));
    }
    Kind::Bundle {
        contents: contents.unwrap_or_default(),
    }
}

/// Read every definition of the source directories (their union).
pub fn read_sources(sources: &[PathBuf], problems: &mut Vec<Problem>) -> Vec<Def> {
    let mut defs: Vec<Def> = Vec::new();
    let mut seen: std::collections::HashMap<String, PathBuf> = std::collections::HashMap::new();
    for src in sources {
        match std::fs::metadata(src) {
            Ok(m) if m.is_dir() => {}
            Ok(m) => {
                problems.push(problem(
                    src,
                    format!(
                        "not a directory but {}",
                        tend_sys::diagnose::kind_of(m.permissions().mode())
                    ),
                ));
                continue;
            }
            Err(e) => {
                problems.push(problem(src, tend_sys::error::io_reason(&e)));
                continue;
            }
        }
        let rd = match std::fs::read_dir(src) {
            Ok(rd) => rd,
            Err(e) => {
                problems.push(problem(src, tend_sys::error::io_reason(&e)));
                continue;
            }
        };
        let mut entries: Vec<std::ffi::OsString> = Vec::new();
        for e in rd {
            match e {
                Ok(e) => entries.push(e.file_name()),
                Err(e) => problems.push(problem(src, tend_sys::error::io_reason(&e))),
            }
        }
        entries.sort();
        for n in entries {
            let b = n.as_bytes();
            if b.first() == Some(&b'.') {
                continue;
            }
            let dir = src.join(&n);
            match std::fs::metadata(&dir) {
                Ok(m) if m.is_dir() => {}
                _ => continue,
            }
            if let Some(why) = name_problem(b) {
                problems.push(problem(&dir, why));
                continue;
            }
            let name = OsStr::new(&n).to_string_lossy().into_owned();
            if let Some(first) = seen.get(&name) {
                problems.push(problem(
                    &dir,
                    format!("{name} is defined twice (also in {})", first.display()),
                ));
                continue;
            }
            seen.insert(name.clone(), dir.clone());
            if let Some(d) = read_def(&dir, &name, problems) {
                defs.push(d);
            }
        }
    }
    defs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_problems() {
        for (name, want) in [
            (&b"web"[..], None),
            (b"init-config-end", None),
            (b"", Some("an empty name")),
            (b"a/b", Some("a name with a slash")),
            (b"a\nb", Some("a name with a newline")),
            (b".hidden", Some("a name starting with a dot")),
            (
                b"s6rc-oneshot-runner",
                Some("a name with a reserved prefix (s6rc- or s6-rc-)"),
            ),
            (
                b"s6-rc-x",
                Some("a name with a reserved prefix (s6rc- or s6-rc-)"),
            ),
            (b"\xff", Some("a name that is not UTF-8")),
        ] {
            assert_eq!(name_problem(name), want, "{name:?}");
        }
    }

    #[test]
    fn own_files_are_never_copied() {
        for (name, own) in [
            (&b"type"[..], true),
            (b"flag-essential", true),
            (b"flag-recommended", true),
            (b"down", true),
            (sd::SUPERVISE.as_bytes(), true),
            (b"event", true),
            (b"log", true),
            (b"up", true),
            (b"run", false),
            (b"finish", false),
            (sd::NOTIFICATION_FD.as_bytes(), false),
            (b"flag-newpidns", false),
            (b"flag-timeout-killpg", false),
            (b"reload-signal", false),
            (b"data", false),
        ] {
            assert_eq!(rc_own(name), own, "{}", String::from_utf8_lossy(name));
        }
    }

    /// Files written under a scratch directory: (relative path, contents).
    fn scratch(name: &str, files: &[(&str, &str)]) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tend-rc-src-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        for (rel, text) in files {
            let p = d.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, text).unwrap();
        }
        d
    }

    #[test]
    fn types_and_timeouts() {
        // (type file, timeout-up file, the problem's text or None)
        for (ty, t, want) in [
            ("oneshot\n", "250\n", None),
            ("oneshot", "0", None),
            ("longrun\n", "", Some("not a number of milliseconds")),
            ("oneshot\n", "10s\n", Some("not a number of milliseconds")),
            ("oneshot\n\n", "1\n", Some("not oneshot, longrun or bundle")),
            ("Oneshot\n", "1\n", Some("not oneshot, longrun or bundle")),
        ] {
            let d = scratch(
                "types",
                &[
                    ("a/type", ty),
                    ("a/up", "true\n"),
                    ("a/run", "#!/bin/sh\n"),
                    ("a/timeout-up", t),
                ],
            );
            let mut problems = Vec::new();
            let def = read_def(&d.join("a"), "a", &mut problems);
            match want {
                None => {
                    assert!(problems.is_empty(), "{ty:?} {t:?}: {problems:?}");
                    assert_eq!(def.unwrap().timeout_up, t.trim().parse().unwrap());
                }
                Some(w) => assert!(
                    problems.iter().any(|p| p.what.contains(w)),
                    "{ty:?} {t:?}: {problems:?}"
                ),
            }
            let _ = std::fs::remove_dir_all(&d);
        }
    }
}
