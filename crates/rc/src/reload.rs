//! tend-rc reload, as s6-rc 0.7's `s6-rc reload`: no dependency engine and no change of
//! state. Each named service (a bundle stands for its atoms) that is up is told to
//! reload: a longrun through its supervisor's `l` letter (s6 2.15.1: the supervisor sends
//! the service directory's `reload-signal`, SIGHUP without one), a oneshot by running its
//! `reload` script (none: nothing to do, a success). One that is down is left alone.

use crate::Opened;
use crate::engine;
use crate::script::{Script, StepKind};
use crate::source::Kind;
use std::os::fd::AsRawFd;
use tend_proto::ControlCommand;

/// Reload every service `names` stands for: the failures, (atom, why), in name order.
/// A name that is not defined is [`crate::Fail::Unknown`].
pub fn reload(o: &Opened, names: &[String]) -> Result<Vec<(usize, String)>, crate::Fail> {
    let g = &o.graph;
    let mut sel = crate::selection(g, names)?;
    sel.sort_unstable();
    sel.dedup();
    let up = engine::current(g, &o.live);
    let mut failed = Vec::new();
    for i in sel {
        let a = &g.atoms[i];
        if !up[i] {
            // s6-rc 0.7 sends a down longrun its letter, which no supervisor acts on,
            // and exits 0: a service that is down has nothing to reload.
            continue;
        }
        let done = match &a.def.kind {
            Kind::Longrun(_) => signal(&o.live.servicedir(a.name())),
            Kind::Oneshot { reload, .. } => run(o, &a.def.dir.join("reload"), reload),
            Kind::Bundle { .. } => Ok(()),
        };
        if let Err(why) = done {
            failed.push((i, why));
        }
    }
    Ok(failed)
}

fn signal(dir: &std::path::Path) -> Result<(), String> {
    tend_client::control::command(dir, &[ControlCommand::Reload]).map_err(|e| {
        e.describe(
            &dir.display().to_string(),
            tend_proto::servicedir::SUPERVISE,
        )
        .to_string()
    })
}

/// Run a oneshot's reload script to its end, as its up script runs (in the live
/// directory, stdin /dev/null, its own process group).
fn run(o: &Opened, file: &std::path::Path, script: &Script) -> Result<(), String> {
    let devnull = std::fs::File::open("/dev/null").map_err(|e| {
        format!(
            "unable to open /dev/null: {}",
            tend_sys::error::io_reason(&e)
        )
    })?;
    for step in &script.steps {
        let prog = tend_sys::exec::Prepared::with_current_env(&step.argv)
            .map_err(|e| engine::not_found(file, &step.argv, script.execline, e))?;
        let opts = tend_sys::process::SpawnOptions {
            setpgid: true,
            cwd: std::ffi::CString::new(o.live.dir.as_os_str().as_encoded_bytes()).ok(),
            fds: vec![(devnull.as_raw_fd(), 0)],
            ..Default::default()
        };
        let pid = match tend_sys::process::spawn(&prog, &opts) {
            Ok(pid) => pid,
            Err(tend_sys::process::SpawnError::Exec(e)) => {
                return Err(engine::not_found(file, &step.argv, script.execline, e));
            }
            Err(tend_sys::process::SpawnError::Fork(e)) => {
                return Err(format!("unable to fork: {}", e.desc()));
            }
        };
        let (_, w) = tend_sys::wait::wait(Some(pid))
            .map_err(|e| format!("unable to wait for {}: {}", file.display(), e.desc()))?;
        let ok = w.exit_code() == Some(0);
        match step.kind {
            StepKind::Foreground => {}
            StepKind::If | StepKind::Last if !ok => {
                return Err(format!("{} {}", file.display(), engine::ended(w)));
            }
            _ => {}
        }
    }
    Ok(())
}
