//! tend-rc reload, as s6-rc 0.7's `s6-rc reload`: no dependency engine and no change of
//! state. Each named service (a bundle stands for its atoms) that is up is told to
//! reload: a longrun gets its reload signal through its supervisor, a oneshot runs its
//! `reload` script (none: nothing to do, a success). One that is down is left alone.
//!
//! s6 2.15.1 has a control letter for this, `l`, which sends the service directory's
//! `reload-signal` (default SIGHUP). tend-supervise does not take `l` yet, so the signal
//! is read here and sent with the letter of that signal (`h` for SIGHUP, `1` for
//! SIGUSR1, …), which every supervisor takes.

use crate::Opened;
use crate::engine;
use crate::script::{Script, StepKind};
use crate::source::Kind;
use std::os::fd::AsRawFd;

/// s6 2.15.1's service-directory file (tend-supervise does not read it yet; its name
/// moves to `tend_proto::servicedir` when it does).
const RELOAD_SIGNAL: &str = "reload-signal";

/// The signal a longrun's service directory asks for on reload: its `reload-signal`
/// file (a name, with or without `SIG`, or a number), SIGHUP without one.
pub fn reload_signal(servicedir: &std::path::Path) -> Result<i32, String> {
    let file = servicedir.join(RELOAD_SIGNAL);
    let text = match std::fs::read(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(libc::SIGHUP),
        Err(e) => {
            return Err(format!(
                "unable to read {}: {}",
                file.display(),
                tend_sys::error::io_reason(&e)
            ));
        }
    };
    let word = String::from_utf8_lossy(&text).trim().to_string();
    tend_sys::signals::parse(&word)
        .or_else(|| word.parse::<i32>().ok().filter(|n| (1..=31).contains(n)))
        .ok_or_else(|| format!("{}: not a signal: {word}", file.display()))
}

/// The control letter that makes a supervisor send `signo`, if there is one.
pub fn letter_for(signo: i32) -> Option<u8> {
    use tend_proto::control::{ControlCommand, LETTERS};
    LETTERS.bytes().find(|&b| {
        matches!(ControlCommand::from_byte(b), Some(ControlCommand::Signal(s)) if s as i32 == signo)
    })
}

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
    let signo = reload_signal(dir)?;
    let letter = letter_for(signo).ok_or_else(|| {
        format!(
            "no supervisor letter sends its reload-signal {}",
            tend_sys::signals::short(signo)
        )
    })?;
    tend_client::control::send(dir, &[letter]).map_err(|e| {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters_for_reload_signals() {
        for (sig, letter) in [
            (libc::SIGHUP, Some(b'h')),
            (libc::SIGUSR1, Some(b'1')),
            (libc::SIGUSR2, Some(b'2')),
            (libc::SIGINT, Some(b'i')),
            (libc::SIGQUIT, Some(b'q')),
            (libc::SIGWINCH, Some(b'y')),
            (libc::SIGPWR, None),
        ] {
            assert_eq!(letter_for(sig), letter, "{sig}");
        }
    }

    #[test]
    fn reload_signal_files() {
        let d = std::env::temp_dir().join(format!("tend-rc-reload-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        assert_eq!(reload_signal(&d), Ok(libc::SIGHUP), "none: SIGHUP");
        for (text, want) in [
            ("USR1\n", Ok(libc::SIGUSR1)),
            ("SIGUSR2", Ok(libc::SIGUSR2)),
            ("10\n", Ok(10)),
            ("nope\n", Err(())),
            ("99\n", Err(())),
        ] {
            std::fs::write(d.join(RELOAD_SIGNAL), text).unwrap();
            assert_eq!(reload_signal(&d).map_err(|_| ()), want, "{text:?}");
        }
        let _ = std::fs::remove_dir_all(&d);
    }
}
