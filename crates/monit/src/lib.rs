//! tend-monit's library: monit's control files, read as monit reads them, and carried
//! out on tend's supervision tree. It holds two halves; the reader knows nothing of the
//! runtime.
//!
//! `reader`: a reader for monitrc files (the main file, `include` globs, every
//! statement Cloud Foundry releases write and the rest of monit's settings) that turns
//! them into plain data (`model`), with every error named by file and line, and every
//! statement that tend-monit reads but does not carry out listed (`Control::ignored`),
//! so that nothing is dropped in silence; the checks' order by `depends on` (`order`).
//! `lex` cuts the text as monit's lexer does (free-form, case-blind keywords, noise
//! words, argument lists that run to a quote); `parse` is a recursive-descent reader
//! that resumes after an error, so every error is named where monit 5.33 stops at the
//! first; `validate` does monit's whole-file checks (unique names, defined dependencies,
//! no loops, known accounts) and refuses a check name that cannot be a file name, since
//! each check becomes a service directory.
//!
//! `runtime`: what runs a configuration. `service` renders each process check as a
//! service directory; `daemon` is the long-lived tend-monit that installs them, brings
//! them up in order and serves `http` (monit's HTTP interface, answered from `cache`
//! and `status`); `watch` is the watcher, a second program inside tend-monit
//! (`tend-monit -W`, each service's `./run`) that starts a daemon, follows it through a
//! pidfd and measures its `resource` rules, its settings in `check_file`; `alert` is the
//! mailer; `control` carries out `start`, `stop`, `restart`, `monitor`, `unmonitor`;
//! `bpm` reads BOSH's bpm.yml. `state` holds what these share about a check at run
//! time, and `text` how monit writes times and sizes.

pub mod reader;
pub mod runtime;

// The modules' old paths, for callers outside the crate.
pub use reader::{lex, model, order, parse, validate};
pub use runtime::{alert, bpm, cache, control, daemon, http, resource, service, status, watch};
pub use tend_sys::glob;

use std::path::{Path, PathBuf};

pub use parse::ReadError;

/// Read a control file and everything it includes: the configuration and its errors
/// (empty when valid); `Err` only when the main file cannot be read.
pub fn read(path: &Path) -> Result<(model::Control, Vec<model::Error>), ReadError> {
    let mut r = parse::Reader::new();
    r.read_file(path)?;
    Ok(r.finish())
}

/// Read a control file from text, as if read from `path` (tests, `-c -`).
pub fn read_source(path: &Path, src: &[u8]) -> (model::Control, Vec<model::Error>) {
    let mut r = parse::Reader::new();
    r.read_source(path, src);
    r.finish()
}

/// Where monit looks for its control file without `-c`, in order: `~/.monitrc`,
/// `/etc/monitrc`, `/etc/monit/monitrc` (Debian's), `/var/vcap/bosh/etc/monitrc` (a BOSH
/// stemcell's: its monit is built with that SYSCONFDIR, and the agent runs `monit stop -g
/// vcap` and `monit summary` without `-c`), `/usr/local/etc/monitrc`, `./monitrc`.
pub fn search_order(home: Option<&Path>) -> Vec<PathBuf> {
    let mut v = Vec::new();
    if let Some(h) = home {
        v.push(h.join(".monitrc"));
    }
    for p in [
        "/etc/monitrc",
        "/etc/monit/monitrc",
        "/var/vcap/bosh/etc/monitrc",
        "/usr/local/etc/monitrc",
        "./monitrc",
    ] {
        v.push(PathBuf::from(p));
    }
    v
}

/// The first control file of `search_order` that exists.
pub fn find_control_file(home: Option<&Path>) -> Option<PathBuf> {
    search_order(home).into_iter().find(|p| p.is_file())
}

/// Why a control file is refused before it is read.
#[derive(Debug)]
pub enum ModeError {
    Io(std::io::Error),
    NotAFile,
    /// Owned by another user than the one reading it: monit refuses it.
    Owner(u32),
    /// Readable or writable by others: monit refuses it (it may hold passwords).
    Mode(u32),
}

impl std::fmt::Display for ModeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModeError::Io(e) => f.write_str(&tend_sys::error::io_reason(e)),
            ModeError::NotAFile => f.write_str("not a file"),
            ModeError::Owner(uid) => write!(f, "must be owned by you (its owner is uid {uid})"),
            ModeError::Mode(m) => write!(f, "permission {m:04o} is wrong, maximum 0700 allowed"),
        }
    }
}

/// monit's rule for the main control file: a regular file owned by the effective user,
/// no permission for group or others (included files are not held to it, as in monit;
/// see `check_include` for what tend-monit asks of them).
pub fn check_file_mode(path: &Path) -> Result<(), ModeError> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let m = std::fs::metadata(path).map_err(ModeError::Io)?;
    if !m.is_file() {
        return Err(ModeError::NotAFile);
    }
    if m.uid() != nix::unistd::geteuid().as_raw() {
        return Err(ModeError::Owner(m.uid()));
    }
    let mode = m.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(ModeError::Mode(mode));
    }
    Ok(())
}

/// What tend-monit asks of an included file, which monit reads unchecked: owned by the
/// effective user or root, and writable by its owner only. Whoever can write one decides
/// the programs tend-monit runs, as its user.
pub fn check_include(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let m = std::fs::metadata(path).map_err(|e| tend_sys::error::io_reason(&e))?;
    let me = nix::unistd::geteuid().as_raw();
    if m.uid() != me && m.uid() != 0 {
        return Err(format!(
            "owned by uid {}, neither you nor root: its programs would run as uid {me}",
            m.uid()
        ));
    }
    let mode = m.permissions().mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(format!(
            "permission {mode:04o} lets others write it: its programs would run as uid {me}"
        ));
    }
    Ok(())
}
