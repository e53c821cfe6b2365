//! Who may read a service's status, control it and subscribe to its events: shown and
//! set as s6-svperms does, through the modes and groups of `supervise/`,
//! `supervise/control` and `event/` (the encoding is in `tend_proto::perms`), so that
//! s6-svperms and tend-svperms read each other's settings.
//!
//! Paths are the service directory as given followed by `/supervise` etc., byte for
//! byte (s6 concatenates, so `svc/` gives `svc//supervise`). Group names come from
//! /etc/group and owners' primary groups from /etc/passwd (see tend_account::userdb).

use nix::sys::stat::{Mode, SFlag, stat};
use nix::unistd::{Gid, chown};
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use tend_account as account;
use tend_proto::perms::{self, Control, Events, Status};
use tend_sys::Error;
use tend_sys::warn::Warn;

/// `-u`, `-g`, `-G`, `-o`, `-O`: who may read the status and who may control.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// `-u`: the owner only.
    Owner,
    /// `-g group`: the group reads the status; only the owner controls.
    GroupReads(u32),
    /// `-G group`: the group reads and controls.
    GroupControls(u32),
    /// `-o`: everyone reads; only the owner controls.
    Public,
    /// `-O group`: everyone reads; the group controls.
    PublicGroupControls(u32),
}

impl Access {
    fn status(self) -> (Status, Option<u32>) {
        match self {
            Access::Owner => (Status::Owner, None),
            Access::GroupReads(g) | Access::GroupControls(g) => (Status::Group, Some(g)),
            Access::Public | Access::PublicGroupControls(_) => (Status::Public, None),
        }
    }

    fn control(self) -> (Control, Option<u32>) {
        match self {
            Access::GroupControls(g) | Access::PublicGroupControls(g) => (Control::Group, Some(g)),
            Access::Owner | Access::GroupReads(_) | Access::Public => (Control::Owner, None),
        }
    }
}

/// `-e` (everyone) or `-E group`: who may subscribe to events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Watchers {
    Public,
    Group(u32),
}

/// `dir` followed by `/name`, as bytes.
fn under(dir: &Path, name: &str) -> PathBuf {
    let mut p = dir.as_os_str().to_os_string().into_vec();
    p.push(b'/');
    p.extend_from_slice(name.as_bytes());
    PathBuf::from(OsString::from_vec(p))
}

/// The primary group of `path`'s owner; root's (0) if the owner has no account, with a
/// warning.
fn owner_group(path: &Path, warn: &dyn Warn) -> Result<u32, Error> {
    let st = stat(path).map_err(|e| Error::at("stat", path, e))?;
    match account::primary_gid(st.st_uid) {
        Ok(Some(g)) => Ok(g),
        Ok(None) => {
            warn.warn(&format_args!(
                "unable to determine primary gid for the owner of {} (using root instead): no account has uid {}",
                path.display(),
                st.st_uid
            ));
            Ok(0)
        }
        Err(e) => {
            warn.warn(&format_args!(
                "unable to determine primary gid for the owner of {} (using root instead): {e}",
                path.display()
            ));
            Ok(0)
        }
    }
}

fn set(path: &Path, gid: u32, mode: u32) -> Result<(), Error> {
    chown(path, None, Some(Gid::from_raw(gid))).map_err(|e| Error::at("chown", path, e))?;
    nix::sys::stat::fchmodat(
        None,
        path,
        Mode::from_bits_truncate(mode),
        nix::sys::stat::FchmodatFlags::FollowSymlink,
    )
    .map_err(|e| Error::at("chmod", path, e))
}

/// Set who may read the status and who may control (supervise/ and supervise/control).
pub fn set_access(dir: &Path, a: Access, warn: &dyn Warn) -> Result<(), Error> {
    let sup = under(dir, tend_proto::servicedir::SUPERVISE);
    let (status, group) = a.status();
    let gid = match group {
        Some(g) => g,
        None => owner_group(&sup, warn)?,
    };
    set(&sup, gid, perms::supervise_mode(status))?;
    let ctl = under(dir, tend_proto::servicedir::CONTROL);
    let (control, group) = a.control();
    let gid = match group {
        Some(g) => g,
        None => owner_group(&ctl, warn)?,
    };
    set(&ctl, gid, perms::control_mode(control))
}

/// Set who may subscribe to events (event/).
pub fn set_watchers(dir: &Path, w: Watchers, warn: &dyn Warn) -> Result<(), Error> {
    let ev = under(dir, tend_proto::servicedir::EVENT);
    let (events, gid) = match w {
        Watchers::Group(g) => (Events::Group, g),
        Watchers::Public => (Events::Public, owner_group(&ev, warn)?),
    };
    set(&ev, gid, perms::events_mode(events))
}

/// A group's name, or its number if it has none.
fn group_text(gid: u32, warn: &dyn Warn) -> String {
    match account::group_name(gid) {
        Ok(Some(n)) => String::from_utf8_lossy(n.as_bytes()).into_owned(),
        Ok(None) => gid.to_string(),
        Err(e) => {
            warn.warn(&e);
            gid.to_string()
        }
    }
}

/// What a path is, if it is of `kind`; a warning otherwise.
fn stat_as(path: &Path, kind: SFlag, what: &str) -> Result<nix::sys::stat::FileStat, String> {
    let st = stat(path).map_err(|e| Error::at("stat", path, e).to_string())?;
    if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT != kind {
        return Err(format!("{} is not a {what}", path.display()));
    }
    Ok(st)
}

fn incorrect(path: &Path, mode: u32) -> String {
    format!(
        "{} has incorrect permissions: {:o}",
        path.display(),
        mode & 0o7777
    )
}

/// The three lines s6-svperms prints for `dir` (`DIR status: …`, `DIR control: …`,
/// `DIR events: …`), appended to `out`. A part that cannot be read is left out and
/// described through `warn`; the result says whether everything was read.
pub fn show(dir: &Path, out: &mut Vec<u8>, warn: &dyn Warn) -> bool {
    let name = dir.as_os_str().as_bytes();
    let line = |out: &mut Vec<u8>, what: &str, who: String| {
        out.extend_from_slice(name);
        out.extend_from_slice(format!(" {what}: {who}\n").as_bytes());
    };
    let mut ok = true;
    let mut supervise = || -> Result<(), String> {
        let sup = under(dir, tend_proto::servicedir::SUPERVISE);
        let st = stat_as(&sup, SFlag::S_IFDIR, "directory")?;
        let who = match perms::status_of(st.st_mode & 0o7777) {
            None => return Err(incorrect(&sup, st.st_mode)),
            Some(Status::Owner) => "owner".to_string(),
            Some(Status::Group) => format!("group {}", group_text(st.st_gid, warn)),
            Some(Status::Public) => "public".to_string(),
        };
        line(out, "status", who);
        let ctl = under(dir, tend_proto::servicedir::CONTROL);
        let st = stat_as(&ctl, SFlag::S_IFIFO, "named pipe")?;
        let who = match perms::control_of(st.st_mode & 0o7777) {
            None => return Err(incorrect(&ctl, st.st_mode)),
            Some(Control::Owner) => "owner".to_string(),
            Some(Control::Group) => format!("group {}", group_text(st.st_gid, warn)),
        };
        line(out, "control", who);
        Ok(())
    };
    if let Err(w) = supervise() {
        warn.warn(&w);
        ok = false;
    }
    let mut events = || -> Result<(), String> {
        let ev = under(dir, tend_proto::servicedir::EVENT);
        let st = stat_as(&ev, SFlag::S_IFDIR, "directory")?;
        let who = match perms::events_of(st.st_mode) {
            None => return Err(incorrect(&ev, st.st_mode)),
            Some(Events::Group) => format!("group {}", group_text(st.st_gid, warn)),
            Some(Events::Public) => "public".to_string(),
        };
        line(out, "events", who);
        Ok(())
    };
    if let Err(w) = events() {
        warn.warn(&w);
        ok = false;
    }
    ok
}
