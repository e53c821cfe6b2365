//! A control file's process checks as tend service directories: one per `check
//! process`, in the shape tend-client's installer writes (compared, then renamed in
//! whole), all marked as tend-monit's.
//!
//! Each directory: `run` execs the watcher (`tend-monit -W`, see `watch`), `monit-check`
//! holds the check's settings, `notification-fd` lets the watcher say when the daemon
//! is up, and `down` keeps the scanner from starting it on sight: tend-monit brings the
//! services up itself, in `depends on` order.

use crate::reader::model::{Action, Check, Control, Kind, Program, Target, Test};
use crate::reader::validate::probe_of;
use crate::runtime::alert::mail;
use crate::runtime::state::{CHECK_FILE, DEFAULT_TIMEOUT, LimitAction, Run, Settings};
use std::ffi::OsStr;
use tend_client::install::{File, MARKER, Service};
use tend_proto::servicedir as sd;
use tend_sys::exec::shell_word_str as quote;

/// The owner name in each service's marker file.
pub const OWNER: &str = "tend-monit";

fn file(path: &str, bytes: impl Into<Vec<u8>>, mode: u32) -> File {
    File {
        path: path.into(),
        bytes: bytes.into(),
        mode,
    }
}

/// A program's uid and gid as numbers (validated accounts resolved once, here).
fn run_of(p: &Program) -> Result<Run, String> {
    let id = |v: &Option<String>, group: bool| -> Result<Option<u32>, String> {
        let Some(v) = v else { return Ok(None) };
        if let Ok(n) = v.parse() {
            return Ok(Some(n));
        }
        let found = if group {
            tend_env::account::group(OsStr::new(v)).map_err(|e| e.to_string())?
        } else {
            tend_env::account::user(OsStr::new(v))
                .map_err(|e| e.to_string())?
                .map(|u| u.uid)
        };
        found
            .map(Some)
            .ok_or_else(|| format!("no such {}: {v}", if group { "group" } else { "user" }))
    };
    if let Some(a) = p.argv.iter().find(|a| a.contains('\n')) {
        return Err(format!(
            "a program argument holds a newline: {}",
            a.escape_debug()
        ));
    }
    Ok(Run {
        argv: p.argv.clone(),
        uid: id(&p.uid, false)?,
        // monit: `as uid U` alone runs with U's primary group.
        gid: match id(&p.gid, true)? {
            Some(g) => Some(g),
            None => match (&p.uid, id(&p.uid, false)?) {
                (Some(_), Some(u)) => {
                    tend_env::account::primary_gid(u).map_err(|e| e.to_string())?
                }
                _ => None,
            },
        },
        timeout: p.timeout.unwrap_or(DEFAULT_TIMEOUT),
    })
}

/// `if N restarts within M cycles then …`: (N, M cycles in seconds, the action).
fn restart_limit(c: &Check, cycle: u32) -> Option<(u32, u64, LimitAction)> {
    c.rules.iter().find_map(|r| match &r.test {
        Test::Restarts { count, cycles } => {
            let a = match &r.action {
                Action::Unmonitor | Action::Stop => LimitAction::Unmonitor,
                Action::Exec(p) => LimitAction::Exec(p.argv.clone()),
                _ => LimitAction::Alert,
            };
            Some((*count, u64::from(*cycles) * u64::from(cycle), a))
        }
        _ => None,
    })
}

/// The toolkit's program `name` beside tend-monit's own executable when it is there (an
/// install, or a build, keeps them in one directory that need not be on PATH), else the
/// bare name for PATH, as the scanner is found.
fn beside(exe: &str, name: &str) -> String {
    let p = std::path::Path::new(exe).with_file_name(name);
    if exe.starts_with('/') && p.is_file() {
        p.display().to_string()
    } else {
        name.to_string()
    }
}

/// The connection test tend-check carries out (`then restart` or `then alert`), with its
/// probe's arguments.
fn connection_rule(c: &Check) -> Option<(&crate::reader::model::Rule, Vec<String>)> {
    c.rules.iter().find_map(|r| {
        let ok = matches!(r.action, Action::Restart | Action::Alert);
        Some((r, probe_of(&r.test).ok().filter(|_| ok)?))
    })
}

/// The liveness watchers of a check's connection tests: `NAME-health`, a tend-check
/// that probes every cycle and restarts the service after the test's cycles of failure
/// (`then alert`: reports only).
fn health(c: &Check, cycle: u32, exe: &str) -> Option<Service> {
    let (rule, probe) = connection_rule(c)?;
    let timeout = match &rule.test {
        Test::Connection { timeout, .. } => timeout.unwrap_or(5),
        _ => 5,
    };
    let mut words = vec![
        beside(exe, "tend-check"),
        "-L".into(),
        "-S".into(),
        format!("../{}", c.name),
    ];
    words.extend(probe);
    let max = if rule.action == Action::Alert {
        0
    } else {
        1_000_000
    };
    words.extend([
        "-i".into(),
        format!("{cycle}s"),
        "-t".into(),
        format!("{timeout}s"),
        "-f".into(),
        rule.cycles.0.max(1).to_string(),
        "-m".into(),
        max.to_string(),
    ]);
    let run = format!(
        "#!/bin/sh\n# {} of check process {} ({}), from tend-monit\nexec 2>&1\nexec {}\n",
        "connection test",
        c.name,
        rule.loc,
        words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
    );
    Some(Service {
        name: format!("{}-health", c.name),
        files: vec![
            file(sd::RUN, run, 0o755),
            file(MARKER, format!("{OWNER}\n"), 0o644),
        ],
    })
}

/// The check's resource rules as its watcher keeps them.
fn resources(c: &Check) -> Vec<crate::runtime::resource::Rule> {
    c.rules
        .iter()
        .filter_map(|r| {
            let Test::Resource {
                what,
                op,
                limit,
                percent,
            } = &r.test
            else {
                return None;
            };
            let (action, argv) = match &r.action {
                Action::Alert => ("alert", Vec::new()),
                Action::Restart => ("restart", Vec::new()),
                Action::Stop => ("stop", Vec::new()),
                Action::Unmonitor => ("unmonitor", Vec::new()),
                Action::Exec(p) => ("exec", p.argv.clone()),
                Action::Start | Action::Monitor => ("alert", Vec::new()),
            };
            Some(crate::runtime::resource::Rule {
                what: what.clone(),
                op: op.clone(),
                limit: *limit,
                percent: *percent,
                cycles: r.cycles,
                action: action.into(),
                argv,
            })
        })
        .collect()
}

/// One check's service directory; `exe` is the tend-monit executable its `run` execs;
/// `cycle` is `set daemon`'s seconds.
pub fn render(
    control: &Control,
    c: &Check,
    exe: &str,
    cycle: u32,
    report: &dyn tend_sys::warn::Warn,
) -> Result<Service, String> {
    let (pidfile, matching) = match &c.target {
        Target::Pidfile(p) => (Some(p.clone()), None),
        Target::Matching(m) => (None, Some(m.clone())),
        _ => return Err(format!("check {}: not a process check", c.name)),
    };
    let mut st = Settings {
        name: c.name.clone(),
        pidfile,
        matching,
        start: c
            .start
            .as_ref()
            .map(run_of)
            .transpose()
            .map_err(|e| format!("check {}: start program: {e}", c.name))?,
        stop: c
            .stop
            .as_ref()
            .map(run_of)
            .transpose()
            .map_err(|e| format!("check {}: stop program: {e}", c.name))?,
        restart_limit: restart_limit(c, cycle),
        resources: resources(c),
        cycle,
        mail: mail(control, c),
        depends: c.depends.iter().map(|(d, _)| d.clone()).collect(),
        foreground: false,
        stop_signal: None,
        stop_grace: None,
        connection: connection_rule(c).map(|(r, _)| {
            if r.action == Action::Restart {
                "restart"
            } else {
                "alert"
            }
            .to_string()
        }),
    };
    let mut extra = Vec::new();
    if let Some(r) = crate::runtime::bpm::route(c) {
        let t = crate::runtime::bpm::translate(c, &r, report)?;
        st.start = Some(Run {
            argv: vec![format!("./{}", crate::runtime::bpm::RUN)],
            uid: None,
            gid: None,
            timeout: st.start.as_ref().map_or(DEFAULT_TIMEOUT, |r| r.timeout),
        });
        st.stop = None;
        st.pidfile = None;
        st.matching = None;
        st.foreground = true;
        st.stop_signal = Some(t.signal);
        st.stop_grace = Some(t.grace);
        extra = t.files;
    }
    let run = run_script(c, exe);
    Ok(Service {
        name: c.name.clone(),
        files: vec![
            file(sd::RUN, run, 0o755),
            file(CHECK_FILE, st.to_text(), 0o644),
            file(sd::NOTIFICATION_FD, "3\n", 0o644),
            file(sd::DOWN, "", 0o644),
            file(MARKER, format!("{OWNER}\n"), 0o644),
        ]
        .into_iter()
        .chain(extra)
        .collect(),
    })
}

/// ./run: the watcher as its interpreter, so tend-supervise's exec of ./run is the
/// watcher's, with no shell in between (a restart's path, death → start program, loses a
/// dynamic /bin/sh's start-up). The kernel splits a `#!` line at no blank and reads 127
/// bytes of it on older kernels: a path that does not fit goes through sh.
fn run_script(c: &Check, exe: &str) -> String {
    let direct = format!("#!{exe} -W");
    if direct.len() < 127 && !exe.contains([' ', '\t', '\n']) && exe.starts_with('/') {
        format!(
            "{direct}\n# check process {} ({}), from tend-monit\n",
            c.name, c.loc
        )
    } else {
        format!(
            "#!/bin/sh\n# check process {} ({}), from tend-monit\nexec {} -W\n",
            c.name,
            c.loc,
            quote(exe)
        )
    }
}

/// Every process check's service, in file order.
pub fn render_all(
    c: &Control,
    exe: &str,
    report: &dyn tend_sys::warn::Warn,
) -> Result<Vec<Service>, String> {
    // Without `set daemon`, monit's cycle is 30 seconds.
    let cycle = c.daemon.unwrap_or(30);
    let mut out = Vec::new();
    for ch in c.checks.iter().filter(|ch| ch.kind == Kind::Process) {
        out.push(render(c, ch, exe, cycle, report)?);
        if let Some(h) = health(ch, cycle, exe) {
            if c.checks.iter().any(|o| o.name == h.name) {
                return Err(format!(
                    "check {}: its connection test's service {} is the name of another check",
                    ch.name, h.name
                ));
            }
            out.push(h);
        }
    }
    Ok(out)
}

/// Make the scan directory ready: created, and on a file system that lets its services'
/// `run` files be executed. Ubuntu's initramfs mounts /run noexec, so the default
/// directory there could hold services that never start (their supervisors only warn
/// and retry). For the default directory, as root, tend-monit then mounts a small tmpfs
/// of its own on it (kept across its restarts, so a new daemon takes the jobs over); a
/// directory the caller chose (`-S`, TEND_MONIT_SCANDIR) is never mounted over: that is
/// refused with the reason.
pub fn prepare_scan_directory(dir: &std::path::Path, chosen: bool) -> Result<(), String> {
    use nix::sys::statvfs::{FsFlags, statvfs};
    std::fs::create_dir_all(dir).map_err(|e| {
        format!(
            "unable to create {}: {}",
            dir.display(),
            tend_sys::error::io_reason(&e)
        )
    })?;
    let noexec = |d: &std::path::Path| {
        statvfs(d)
            .map(|v| v.flags().contains(FsFlags::ST_NOEXEC))
            .map_err(|e| format!("unable to stat {}: {}", d.display(), e.desc()))
    };
    if !noexec(dir)? {
        return Ok(());
    }
    let refuse = |how: &str| {
        format!(
            "{} is on a file system mounted noexec: its services could not run{how}; \
             give -S or TEND_MONIT_SCANDIR a directory where programs may run",
            dir.display()
        )
    };
    if chosen || !nix::unistd::geteuid().is_root() {
        return Err(refuse(""));
    }
    let target = dir.to_str().ok_or_else(|| refuse(""))?;
    tend_sys::machine::mount(
        "tend-monit",
        target,
        "tmpfs",
        nix::libc::MS_NOSUID | nix::libc::MS_NODEV,
        Some("mode=0755,size=16m"),
    )
    .map_err(|e| {
        refuse(&format!(
            " and a tmpfs could not be mounted on it ({})",
            e.desc()
        ))
    })?;
    if noexec(dir)? {
        return Err(refuse(" even on a tmpfs of its own"));
    }
    Ok(())
}
