//! Instanced services (templated services, one supervisor per instance), as s6 2.11.3's
//! s6-instance-maker, -create, -delete, -control, -status and -list.
//!
//! The layout is s6's, so either side's tools work on the other's tree: an instanced
//! service `S` is a service directory whose `run` runs a scanner on `S/instance/` (a
//! scan directory private to it); `S/template/` is the copy of the template,
//! `S/instances/NAME/` each instance's copy of it, and `S/instance/NAME` a symlink
//! `../instances/NAME`. Creating an instance is copying the template and linking it in
//! (tend-svlink's wait, crate::link); deleting is the unlink and the wait, then the copy's
//! removal. Control and status are tend-svc and tend-svstat on `S/instance/NAME`.

use crate::link::{self, LinkError, LinkOptions, Waited};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Instant;
use tend_sys::Error;
use tend_sys::exec::shell_word_str as quoted;

/// The nested scan directory, the instances' copies, the template's copy.
pub const INSTANCE: &str = "instance";
pub const INSTANCES: &str = "instances";
pub const TEMPLATE: &str = "template";

/// Why an instance operation failed.
#[derive(Debug)]
pub enum InstanceError {
    /// Empty, starting with `.`, or holding `/` or white space (exit 100).
    Name,
    /// `instances/NAME` is already there (exit 100, as s6).
    Exists(PathBuf),
    /// `servicedir`'s instance scanner is not running (its lock is not held): exit 1, as
    /// s6's "instanced service not running on".
    NotRunning(PathBuf),
    Sys(Error),
    Link(LinkError),
}

impl InstanceError {
    pub fn code(&self) -> i32 {
        match self {
            InstanceError::Name | InstanceError::Exists(_) => tend_sys::code::USAGE,
            InstanceError::NotRunning(_) => 1,
            InstanceError::Sys(e) => e.code(),
            InstanceError::Link(e) => e.code(),
        }
    }
}

impl std::fmt::Display for InstanceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InstanceError::Name => f.write_str("invalid instance name"),
            InstanceError::Exists(d) => {
                write!(f, "instance appears to already exist at {}", d.display())
            }
            InstanceError::NotRunning(d) => {
                write!(f, "instanced service not running on {}", d.display())
            }
            InstanceError::Sys(e) => e.fmt(f),
            InstanceError::Link(e) => e.fmt(f),
        }
    }
}

impl From<Error> for InstanceError {
    fn from(e: Error) -> InstanceError {
        InstanceError::Sys(e)
    }
}

impl From<LinkError> for InstanceError {
    fn from(e: LinkError) -> InstanceError {
        match e {
            LinkError::Sys(e) => InstanceError::Sys(e),
            e => InstanceError::Link(e),
        }
    }
}

/// s6's rule (not empty, no leading `.`, no white space), and no `/`: s6 2.11.3 lets
/// `a/b` through and then fails on the path; tend refuses it as a name.
pub fn check_name(name: &OsStr) -> Result<(), InstanceError> {
    let b = name.as_encoded_bytes();
    if b.is_empty() || b[0] == b'.' || b.iter().any(|c| b" \t\x0c\r\n/".contains(c)) {
        return Err(InstanceError::Name);
    }
    Ok(())
}

/// The instance's service directory: `servicedir/instance/name`.
pub fn instance_dir(servicedir: &Path, name: &OsStr) -> Result<PathBuf, InstanceError> {
    check_name(name)?;
    Ok(servicedir.join(INSTANCE).join(name))
}

/// Copy a directory tree: files with their modes, symlinks as symlinks, fifos skipped
/// (a copy's supervise/ and event/ are its own supervisor's to make).
pub fn copy_tree(from: &Path, to: &Path) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(from).map_err(|e| Error::io("stat", from, &e))?;
    std::fs::create_dir(to).map_err(|e| Error::io("mkdir", to, &e))?;
    std::fs::set_permissions(to, meta.permissions()).map_err(|e| Error::io("chmod", to, &e))?;
    let entries = std::fs::read_dir(from).map_err(|e| Error::io("open", from, &e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("read", from, &e))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let ft = entry.file_type().map_err(|e| Error::io("stat", &src, &e))?;
        if ft.is_dir() {
            copy_tree(&src, &dst)?;
        } else if ft.is_symlink() {
            let t = std::fs::read_link(&src).map_err(|e| Error::io("readlink", &src, &e))?;
            std::os::unix::fs::symlink(t, &dst).map_err(|e| Error::io("symlink", &dst, &e))?;
        } else if ft.is_file() {
            std::fs::copy(&src, &dst).map_err(|e| Error::io("copy", &src, &e))?;
            let mode = std::fs::metadata(&src)
                .map_err(|e| Error::io("stat", &src, &e))?
                .permissions()
                .mode();
            std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(mode))
                .map_err(|e| Error::io("chmod", &dst, &e))?;
        }
    }
    Ok(())
}

/// tend-instance-maker's options (s6-instance-maker's, without `-r`).
#[derive(Debug, Clone)]
pub struct MakerOptions {
    pub max: u32,
    pub user: Option<String>,
    pub loguser: Option<String>,
    pub logdir: Option<String>,
    pub stamp: u32,
    pub nfiles: u32,
    pub filesize: u64,
    pub maxsize: u64,
    pub prefix: Option<String>,
    /// `-r service[/logger[/pipeline]]`: s6-rc source definitions in `dir` instead of a
    /// service directory.
    pub rc: Option<RcNames>,
}

/// The names of `-r`'s definitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RcNames {
    pub service: String,
    pub logger: Option<String>,
    pub pipeline: Option<String>,
}

impl RcNames {
    /// `service[/logger[/pipeline]]`, each part a name s6-rc takes (not empty, no dot
    /// first); None otherwise.
    pub fn parse(s: &str) -> Option<RcNames> {
        let parts: Vec<&str> = s.split('/').collect();
        if parts.len() > 3 || parts.iter().any(|p| p.is_empty() || p.starts_with('.')) {
            return None;
        }
        Some(RcNames {
            service: parts[0].to_string(),
            logger: parts.get(1).map(|p| p.to_string()),
            pipeline: parts.get(2).map(|p| p.to_string()),
        })
    }
}

impl Default for MakerOptions {
    fn default() -> MakerOptions {
        MakerOptions {
            max: 500,
            user: None,
            loguser: None,
            logdir: None,
            stamp: 1,
            nfiles: 10,
            filesize: 1_000_000,
            maxsize: 0,
            prefix: None,
            rc: None,
        }
    }
}

/// How a generated script calls tend program `prog`: the multi-call `tend` with the
/// program's short name, or the separate executable beside this one.
pub fn program_command(exe: &Path, prog: &str) -> String {
    if exe.file_name().is_some_and(|n| n == "tend") {
        let short = prog.strip_prefix("tend-").unwrap_or(prog);
        format!("{} {short}", quoted(&exe.to_string_lossy()))
    } else {
        let dir = exe.parent().unwrap_or(Path::new("/"));
        quoted(&dir.join(prog).to_string_lossy())
    }
}

fn write_file(path: &Path, text: &str, mode: u32) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).map_err(|e| Error::io("create", path, &e))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| Error::io("chmod", path, &e))
}

/// Make the instanced service `dir` from `template` (s6-instance-maker's layout; the
/// scripts are /bin/sh calling tend's programs through `exe`).
pub fn make(template: &Path, dir: &Path, o: &MakerOptions, exe: &Path) -> Result<(), Error> {
    std::fs::create_dir(dir).map_err(|e| Error::io("mkdir", dir, &e))?;
    let (service, log) = match &o.rc {
        Some(rc) => rc_layout(template, dir, rc, o.logdir.is_some())?,
        None => {
            copy_tree(template, &dir.join(TEMPLATE))?;
            for d in [INSTANCE, INSTANCES] {
                std::fs::create_dir(dir.join(d))
                    .map_err(|e| Error::io("mkdir", dir.join(d), &e))?;
            }
            (
                dir.to_path_buf(),
                o.logdir
                    .as_ref()
                    .map(|_| dir.join(tend_proto::servicedir::LOG)),
            )
        }
    };
    let dir = &service;
    write_file(
        &dir.join(tend_proto::servicedir::NOTIFICATION_FD),
        "3\n",
        0o644,
    )?;
    let setuidgid = |user: &Option<String>| match user {
        Some(u) => format!("{} {} ", program_command(exe, "tend-setuidgid"), quoted(u)),
        None => String::new(),
    };
    let run = format!(
        "#!/bin/sh -e\nexec 2>&1\nexec {}{} -d3 -c{} -- {INSTANCE}\n",
        setuidgid(&o.user),
        program_command(exe, "tend-svscan"),
        o.max
    );
    write_file(&dir.join(tend_proto::servicedir::RUN), &run, 0o755)?;
    if let (Some(logdir), Some(log)) = (&o.logdir, log) {
        if o.rc.is_none() {
            std::fs::create_dir(&log).map_err(|e| Error::io("mkdir", &log, &e))?;
        }
        write_file(
            &log.join(tend_proto::servicedir::NOTIFICATION_FD),
            "3\n",
            0o644,
        )?;
        let run = format!(
            "#!/bin/sh -e\nexec {}{} -bd3 -- {} {}\n",
            setuidgid(&o.loguser),
            program_command(exe, "tend-log"),
            log_script(o),
            quoted(logdir)
        );
        write_file(&log.join(tend_proto::servicedir::RUN), &run, 0o755)?;
    }
    Ok(())
}

/// With -r: `dir` holds s6-rc source definitions, the longrun (its template inside) and,
/// when there is a logdir and a logger name, the logger as its consumer. s6-instance-maker
/// makes no instance/ or instances/ there either (they are made at run time).
fn rc_layout(
    template: &Path,
    dir: &Path,
    rc: &RcNames,
    logged: bool,
) -> Result<(PathBuf, Option<PathBuf>), Error> {
    let service = dir.join(&rc.service);
    std::fs::create_dir(&service).map_err(|e| Error::io("mkdir", &service, &e))?;
    write_file(&service.join("type"), "longrun\n", 0o644)?;
    let log = match &rc.logger {
        Some(l) if logged => {
            let log = dir.join(l);
            std::fs::create_dir(&log).map_err(|e| Error::io("mkdir", &log, &e))?;
            write_file(&log.join("type"), "longrun\n", 0o644)?;
            write_file(
                &log.join("consumer-for"),
                &format!("{}\n", rc.service),
                0o644,
            )?;
            write_file(&service.join("producer-for"), &format!("{l}\n"), 0o644)?;
            if let Some(p) = &rc.pipeline {
                write_file(&log.join("pipeline-name"), &format!("{p}\n"), 0o644)?;
            }
            Some(log)
        }
        _ => None,
    };
    copy_tree(template, &service.join(TEMPLATE))?;
    Ok((service, log))
}

/// The logger's tend-log script: stamps, rotation sizes, the prefix.
fn log_script(o: &MakerOptions) -> String {
    let stamp = match o.stamp {
        0 => "",
        1 => "t ",
        2 => "T ",
        _ => "t T ",
    };
    let mut script = format!("{stamp}n{} s{}", o.nfiles, o.filesize);
    if o.maxsize > 0 {
        script.push_str(&format!(" S{}", o.maxsize));
    }
    if let Some(p) = &o.prefix {
        script.push(' ');
        script.push_str(&quoted(&format!("p{p}")));
    }
    script
}

/// The nested scan directory, checked to have a scanner, as s6's first step: no lock file
/// is a system error (111: not an instanced service, or never run), a lock nobody holds
/// is "not running" (1).
fn scandir(servicedir: &Path) -> Result<PathBuf, InstanceError> {
    let scandir = servicedir.join(INSTANCE);
    let lock = scandir.join(tend_proto::servicedir::svscan::LOCK);
    std::fs::symlink_metadata(&lock).map_err(|e| Error::io("open", &lock, &e))?;
    match tend_proto::lock::is_held(&lock) {
        Ok(true) => Ok(scandir),
        Ok(false) => Err(InstanceError::NotRunning(servicedir.to_path_buf())),
        Err(e) => Err(Error::at("open", &lock, e).into()),
    }
}

/// Create instance `name` of the instanced service `servicedir` and wait for its
/// supervisor (and its logger's).
pub fn create(
    servicedir: &Path,
    name: &OsStr,
    o: &LinkOptions,
    warn: &dyn tend_sys::warn::Warn,
) -> Result<Waited, InstanceError> {
    check_name(name)?;
    let scandir = scandir(servicedir)?;
    let copy = servicedir.join(INSTANCES).join(name);
    if std::fs::symlink_metadata(&copy).is_ok() {
        return Err(InstanceError::Exists(copy));
    }
    {
        // Copied under a private name and renamed: a scanner never sees half a copy.
        let tmp = servicedir.join(INSTANCES).join(format!(
            ".{}.{}",
            name.to_string_lossy(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&tmp);
        copy_tree(&servicedir.join(TEMPLATE), &tmp)?;
        std::fs::rename(&tmp, &copy).map_err(|e| Error::io("rename", &tmp, &e))?;
    }
    let text = Path::new("..").join(INSTANCES).join(name);
    Ok(link::svlink_as(
        &scandir,
        &copy,
        Some(&text),
        name,
        o,
        warn,
    )?)
}

/// Delete instance `name`: unlink it, wait (unless `wait` is false) for its supervisor to
/// exit, remove its copy. A missing instance is nothing to do.
pub fn delete(
    servicedir: &Path,
    name: &OsStr,
    wait: bool,
    deadline: Option<Instant>,
) -> Result<Waited, InstanceError> {
    check_name(name)?;
    let scandir = scandir(servicedir)?;
    let copy = servicedir.join(INSTANCES).join(name);
    // The logger's supervisor too (s6-instance-delete deletes both): subscribed before the
    // unlink, as tend-svunlink subscribes to the service's.
    let log = copy.join(tend_proto::servicedir::LOG);
    let logged = wait && log.join(tend_proto::servicedir::RUN).exists();
    let log_subs = if logged {
        link::subscribe(std::slice::from_ref(&log))?
    } else {
        Vec::new()
    };
    let mut waited = link::svunlink(&scandir, name, wait, deadline)?;
    if logged && waited == Waited::Done {
        let mut done = [!crate::svok(&log).unwrap_or(false)];
        waited = link::wait_for(&log_subs, &mut done, b'x', deadline)?;
    }
    if waited == Waited::TimedOut {
        // Still supervised: its copy stays (removing it under a live supervisor fails
        // half-way); a later delete finishes the job.
        return Ok(waited);
    }
    match std::fs::remove_dir_all(&copy) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io("remove", &copy, &e).into()),
    }
    Ok(waited)
}

/// The names of the created instances (the links in `servicedir/instance/`), unsorted.
pub fn list(servicedir: &Path) -> Result<Vec<std::ffi::OsString>, InstanceError> {
    let scandir = scandir(servicedir)?;
    let entries = std::fs::read_dir(&scandir).map_err(|e| Error::io("open", &scandir, &e))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("read", &scandir, &e))?;
        let n = entry.file_name();
        if !n.as_encoded_bytes().starts_with(b".") {
            names.push(n);
        }
    }
    Ok(names)
}

/// The executable to run tend program `prog` with: the separate one beside `exe` if there
/// is one, else `exe` itself (the multi-call `tend`, which dispatches on argv[0]).
pub fn sibling(exe: &Path, prog: &str) -> PathBuf {
    let beside = exe.parent().map(|d| d.join(prog));
    match beside {
        Some(p) if p.is_file() => p,
        _ => exe.to_path_buf(),
    }
}

/// tend-instance-control and tend-instance-status: `prog` (tend-svc or tend-svstat) run
/// with `options` as given and instance `name`'s directory in `servicedir`, its messages
/// renamed to `own` (see [`run_program`]). The exit code and the renamed stderr.
pub fn pass_to(
    prog: &str,
    own: &str,
    options: &[std::ffi::OsString],
    servicedir: &Path,
    name: &OsStr,
) -> Result<(i32, Vec<u8>), InstanceError> {
    let dir = instance_dir(servicedir, name)?;
    let mut argv = options.to_vec();
    argv.push(dir.into_os_string());
    let exe = std::env::current_exe().map_err(|e| Error::io("find", "/proc/self/exe", &e))?;
    Ok(run_program(&exe, prog, own, &argv)?)
}

/// Run tend program `prog` (found with `sibling`) with `args` and wait for it:
/// tend-instance-control and -status are tend-svc and tend-svstat on the instance's
/// directory, as s6's are s6-svc and s6-svstat. Its stdout is ours; its stderr comes back
/// with each line's `prog:` name replaced by `own`, so a message names the program the user
/// ran. The exit code is its (111 if it was killed).
pub fn run_program(
    exe: &Path,
    prog: &str,
    own: &str,
    args: &[std::ffi::OsString],
) -> Result<(i32, Vec<u8>), Error> {
    use std::os::unix::process::CommandExt;
    let path = sibling(exe, prog);
    let out = std::process::Command::new(&path)
        .arg0(prog)
        .args(args)
        .stdin(std::process::Stdio::inherit())
        .stdout(std::process::Stdio::inherit())
        .stderr(std::process::Stdio::piped())
        .output()
        .map_err(|e| Error::io("run", &path, &e))?;
    let theirs = format!("{prog}:");
    let mut err = Vec::with_capacity(out.stderr.len());
    for line in out.stderr.split_inclusive(|&b| b == b'\n') {
        match line.strip_prefix(theirs.as_bytes()) {
            Some(rest) => {
                err.extend_from_slice(own.as_bytes());
                err.push(b':');
                err.extend_from_slice(rest);
            }
            None => err.extend_from_slice(line),
        }
    }
    Ok((out.status.code().unwrap_or(tend_sys::code::SYSTEM), err))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_s6_refuses_and_a_slash_are_refused() {
        for bad in [
            "", ".", "..", ".x", "a b", "a\tb", "a\nb", "a/b", "/", "x/..",
        ] {
            assert!(check_name(OsStr::new(bad)).is_err(), "{bad:?}");
        }
        for good in ["foo", "a.b", "a-b@1", "x..y"] {
            assert!(check_name(OsStr::new(good)).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn scripts_call_the_multicall_tend_or_the_separate_executable() {
        assert_eq!(
            program_command(Path::new("/usr/bin/tend"), "tend-svscan"),
            "'/usr/bin/tend' svscan"
        );
        assert_eq!(
            program_command(Path::new("/opt/t/tend-instance-maker"), "tend-svscan"),
            "'/opt/t/tend-svscan'"
        );
        assert_eq!(quoted("it's"), "'it'\\''s'");
    }
}
