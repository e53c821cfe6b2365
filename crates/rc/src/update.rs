//! s6-rc-update's part: its conversion file, the order in which what leaves the
//! definitions goes down, and moving the live tree to the definitions just read.
//!
//! A conversion file is lines lexed as execlineb lexes them, each on its own: `OLD ->
//! NEW` renames an atomic service of the live definitions, `OLD restart` (or `OLD -> NEW
//! restart`) forces a restart. What goes down when the definitions change is decided on
//! the dependencies recorded in `LIVE/defs` (the old graph: the new one no longer knows a
//! removed service), so a removed service's dependents go down before it, as s6-rc-update
//! stops them.

use crate::graph::{self, Graph};
use crate::live::{Live, LiveDef};
use crate::script::{self, Word};
use crate::source::Kind;
use crate::{Fail, Opened, engine};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, Instant};
use tend_proto::{ControlCommand, ScanCommand};

/// The instructions of a conversion file, by old name.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Conversion {
    /// old name → new name.
    pub renames: HashMap<String, String>,
    /// Old names to restart.
    pub restarts: HashSet<String>,
}

/// Why a conversion file was refused, with s6-rc-update's exit code for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversionError {
    pub code: i32,
    pub message: String,
}

/// s6-rc-update's codes.
pub const UNKNOWN_NAME: i32 = 3;
pub const UNDEFINED_TARGET: i32 = 4;
pub const WRONG_TYPE: i32 = 5;
pub const DUPLICATE: i32 = 6;
pub const SYNTAX: i32 = 100;

fn refuse(code: i32, message: String) -> ConversionError {
    ConversionError { code, message }
}

/// Read and parse a conversion file (not yet checked against the definitions).
pub fn read(path: &Path) -> Result<Conversion, ConversionError> {
    let text = std::fs::read(path).map_err(|e| {
        refuse(
            tend_sys::code::SYSTEM,
            tend_sys::Error::io("read", path, &e).to_string(),
        )
    })?;
    parse(&text)
}

pub fn parse(text: &[u8]) -> Result<Conversion, ConversionError> {
    let mut c = Conversion::default();
    for line in text.split(|&b| b == b'\n') {
        let shown = || String::from_utf8_lossy(line).into_owned();
        let words = script::lex(line).map_err(|_| {
            refuse(
                SYNTAX,
                format!("syntax error in conversion file: {}", shown()),
            )
        })?;
        let mut texts = Vec::new();
        for w in words {
            match w {
                Word::Text(t) => texts.push(String::from_utf8_lossy(&t).into_owned()),
                Word::Block(_) => {
                    return Err(refuse(
                        SYNTAX,
                        format!("syntax error in conversion file: {}", shown()),
                    ));
                }
            }
        }
        let Some((old, mut rest)) = texts.split_first() else {
            continue;
        };
        if c.renames.contains_key(old) || c.restarts.contains(old) {
            return Err(refuse(
                DUPLICATE,
                format!("service {old} appears more than once in conversion file"),
            ));
        }
        if rest.len() >= 2 && rest[0] == "->" {
            c.renames.insert(old.clone(), rest[1].clone());
            rest = &rest[2..];
        }
        match rest {
            [] => {}
            [w] if w == "restart" => {
                c.restarts.insert(old.clone());
            }
            [w, ..] => {
                return Err(refuse(
                    SYNTAX,
                    format!("unknown keyword in conversion file: {w}"),
                ));
            }
        }
    }
    Ok(c)
}

impl Conversion {
    /// Check the instructions against the live definitions (`old`) and the new names
    /// (`defined`: every name the new sources define, with whether it is a bundle).
    pub fn check(
        &self,
        old: &HashMap<String, LiveDef>,
        defined: &dyn Fn(&str) -> Option<bool>,
    ) -> Result<(), ConversionError> {
        let mut names: Vec<&String> = self.renames.keys().chain(&self.restarts).collect();
        names.sort();
        for n in names {
            if !old.contains_key(n) {
                return Err(if defined(n) == Some(true) {
                    refuse(
                        WRONG_TYPE,
                        format!("{n} is a bundle: the conversion file names atomic services"),
                    )
                } else {
                    refuse(
                        UNKNOWN_NAME,
                        format!("unknown service in the conversion file: {n}"),
                    )
                });
            }
        }
        let mut targets: Vec<(&String, &String)> = self.renames.iter().collect();
        targets.sort();
        let mut taken: HashMap<String, &String> = HashMap::new();
        for (from, to) in &targets {
            if defined(to).is_none() {
                return Err(refuse(
                    UNDEFINED_TARGET,
                    format!("bad conversion file: new service {to} is not defined in the sources"),
                ));
            }
            taken.insert((*to).clone(), from);
        }
        // An old name not renamed keeps its name: two old services may not become one.
        for n in old.keys() {
            if self.renames.contains_key(n) {
                continue;
            }
            if let Some(from) = taken.get(n) {
                return Err(refuse(
                    DUPLICATE,
                    format!(
                        "new service {n} is a target for more than one conversion, including old service {from}"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The name an old service has in the new definitions.
    pub fn new_name<'a>(&'a self, old: &'a str) -> &'a str {
        self.renames.get(old).map(String::as_str).unwrap_or(old)
    }
}

/// Everything that must go down before the live tree moves: `seeds` and every old service
/// that depended on one of them, directly or not (by the recorded dependencies), in the
/// order they go down: each after every one of them that depended on it.
pub fn stop_order(old: &HashMap<String, LiveDef>, seeds: &[String]) -> Vec<String> {
    let mut rdeps: HashMap<&str, Vec<&str>> = HashMap::new();
    for (n, d) in old {
        for dep in &d.deps {
            rdeps.entry(dep.as_str()).or_default().push(n.as_str());
        }
    }
    let mut set: HashSet<&str> = HashSet::new();
    let mut stack: Vec<&str> = seeds.iter().map(String::as_str).collect();
    while let Some(n) = stack.pop() {
        if set.insert(n) {
            stack.extend(rdeps.get(n).into_iter().flatten());
        }
    }
    // Kahn's order over the set: a service goes once its dependents in the set went.
    let mut waiting: HashMap<&str, usize> = set
        .iter()
        .map(|&n| {
            let k = rdeps
                .get(n)
                .map_or(0, |r| r.iter().filter(|x| set.contains(*x)).count());
            (n, k)
        })
        .collect();
    let mut ready: Vec<&str> = waiting
        .iter()
        .filter(|(_, k)| **k == 0)
        .map(|(n, _)| *n)
        .collect();
    let mut out = Vec::new();
    while !ready.is_empty() {
        ready.sort_unstable_by(|a, b| b.cmp(a));
        let n = ready.pop().unwrap_or_default();
        out.push(n.to_string());
        for dep in old.get(n).map(|d| d.deps.as_slice()).unwrap_or_default() {
            if let Some(k) = waiting.get_mut(dep.as_str()) {
                *k -= 1;
                if *k == 0 {
                    ready.push(dep.as_str());
                }
            }
        }
    }
    // A recorded cycle (a damaged defs file): what is left goes last, by name.
    let mut left: Vec<&str> = set
        .into_iter()
        .filter(|n| !out.iter().any(|o| o == n))
        .collect();
    left.sort_unstable();
    out.extend(left.into_iter().map(str::to_string));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(deps: &[&str]) -> LiveDef {
        LiveDef {
            ty: "oneshot".into(),
            fingerprint: 0,
            deps: deps.iter().map(|d| d.to_string()).collect(),
        }
    }

    #[test]
    fn conversion_lines() {
        let c = parse(
            b"# a comment\nmount-var -> mount-rwfs\nhttpd restart\n\"sqld\" -> mysqld restart\n\n",
        )
        .unwrap();
        assert_eq!(c.renames.len(), 2);
        assert_eq!(c.renames["sqld"], "mysqld");
        assert!(c.restarts.contains("httpd") && c.restarts.contains("sqld"));
        for (text, code) in [
            (&b"a frob\n"[..], SYNTAX),
            (b"a ->\n", SYNTAX),
            (b"a \"open\n", SYNTAX),
            (b"a restart\na -> b\n", DUPLICATE),
            (b"a { b }\n", SYNTAX),
        ] {
            assert_eq!(parse(text).unwrap_err().code, code, "{text:?}");
        }
    }

    #[test]
    fn conversion_checked_against_the_definitions() {
        let old: HashMap<String, LiveDef> = [("a", def(&[])), ("b", def(&[]))]
            .map(|(n, d)| (n.to_string(), d))
            .into();
        let defined = |n: &str| match n {
            "a" | "b" | "c" => Some(false),
            "all" => Some(true),
            _ => None,
        };
        let code = |text: &[u8]| {
            parse(text)
                .unwrap()
                .check(&old, &defined)
                .err()
                .map(|e| e.code)
        };
        assert_eq!(code(b"a -> c\n"), None);
        assert_eq!(code(b"x -> c\n"), Some(UNKNOWN_NAME));
        assert_eq!(code(b"all restart\n"), Some(WRONG_TYPE));
        assert_eq!(code(b"a -> nowhere\n"), Some(UNDEFINED_TARGET));
        assert_eq!(code(b"a -> b\n"), Some(DUPLICATE));
        assert_eq!(code(b"a -> b\nb -> a\n"), None);
    }

    #[test]
    fn dependents_go_down_first() {
        // base <- mid <- {top, keep}; other alone.
        let old: HashMap<String, LiveDef> = [
            ("base", def(&[])),
            ("mid", def(&["base"])),
            ("top", def(&["mid"])),
            ("keep", def(&["mid"])),
            ("other", def(&[])),
        ]
        .map(|(n, d)| (n.to_string(), d))
        .into();
        let order = stop_order(&old, &["base".into()]);
        assert_eq!(order, ["keep", "top", "mid", "base"]);
        assert_eq!(stop_order(&old, &["top".into()]), ["top"]);
        assert!(stop_order(&old, &[]).is_empty());
    }
}

// ---- moving the live tree to new definitions (s6-rc-update's part) ----

/// What moving the live tree to the current sources did.
#[derive(Debug, Default)]
pub struct Sync {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub changed: Vec<String>,
    /// Atoms to stop and start again (a new dependency that is down).
    pub restart: Vec<bool>,
    /// Atoms whose type changed while up: started again under their new type.
    pub restore: Vec<usize>,
}

/// What moving the live tree to the definitions just read will do, decided on the
/// recorded definitions (and their dependencies) before anything is touched; the dry run
/// prints it, `sync` performs it.
#[derive(Debug, Default)]
pub struct Moves {
    /// Old services to bring down, in order (every one after the old services that
    /// depended on it).
    pub stops: Vec<Stop>,
    /// old name → new name, for the services renamed in place (no restart).
    pub renames: Vec<(String, String)>,
    /// The old definitions, keyed by their new names.
    pub old: HashMap<String, LiveDef>,
}

/// An old service that goes down before the live tree moves.
#[derive(Debug)]
pub struct Stop {
    pub name: String,
    pub longrun: bool,
    /// It lives on under its new name: only stopped, and started again if it was up.
    /// Otherwise it leaves: stopped and removed.
    pub lives_on: bool,
}

/// Whether an old service is up or meant to be (a longrun between two restarts counts).
pub(crate) fn was_up(live: &Live, name: &str, longrun: bool) -> bool {
    if longrun {
        tend_proto::StatusRecord::read(&live.servicedir(name)).is_ok_and(|r| r.is_up() || r.want_up)
    } else {
        live.oneshot_up(name)
    }
}

/// Decide the moves from the recorded definitions to `g`, with `conv`'s instructions.
pub fn moves(live: &Live, g: &Graph, conv: &Conversion) -> Result<Moves, Fail> {
    let mut old = live.defs();
    conv.check(&old, &|n| {
        g.names.get(n).map(|k| matches!(k, graph::Named::Bundle(_)))
    })
    .map_err(Fail::Conversion)?;
    let mut seeds = Vec::new();
    let mut lives_on = HashSet::new();
    let mut renames = Vec::new();
    let mut names: Vec<&String> = old.keys().collect();
    names.sort();
    for name in names {
        let d = &old[name];
        let new = conv.new_name(name);
        let same_type = g
            .atom(new)
            .is_some_and(|i| g.atoms[i].def.kind.word() == d.ty);
        // A longrun in a pipeline is not renamed under its supervisor: its log/ link and
        // FIFOs carry its name, so it is stopped and started again under the new one.
        let movable = new == name || d.ty != "longrun" || live.stands_alone(name);
        if same_type && movable {
            lives_on.insert(name.clone());
            if new != name {
                renames.push((name.clone(), new.to_string()));
            }
        }
        if !same_type || !movable || conv.restarts.contains(name) {
            seeds.push(name.clone());
        }
    }
    let stops = stop_order(&old, &seeds)
        .into_iter()
        .map(|name| Stop {
            longrun: old.get(&name).is_some_and(|d| d.ty == "longrun"),
            lives_on: lives_on.contains(&name),
            name,
        })
        .collect();
    for (from, to) in &renames {
        if let Some(d) = old.remove(from) {
            old.insert(to.clone(), d);
        }
    }
    Ok(Moves {
        stops,
        renames,
        old,
    })
}

/// Move the live tree to the definitions just read (with a conversion file's renames and
/// restarts): what leaves or must restart goes down first, dependents before what they
/// depended on (by the recorded dependencies, as s6-rc-update); renamed services move
/// under their running supervisors; new longruns get their service directories (down);
/// changed longruns are rewritten in place (no restart, as s6-rc-update); what is
/// unchanged is untouched. What was up and lives on is returned in `restore`.
pub fn sync(o: &Opened, conv: &Conversion) -> Result<Sync, Fail> {
    let (live, g) = (&o.live, &o.graph);
    let m = moves(live, g, conv)?;
    let mut s = Sync {
        restart: vec![false; g.atoms.len()],
        ..Default::default()
    };
    let mut rescan = false;
    for stop in &m.stops {
        let name = &stop.name;
        let up = was_up(live, name, stop.longrun);
        if up && let Some(atoms) = g.resolve(conv.new_name(name)) {
            s.restore.extend(atoms);
        }
        match (stop.longrun, stop.lives_on) {
            (true, true) => stop_longrun(&live.servicedir(name)),
            (true, false) => {
                retire(live, name);
                rescan = true;
            }
            (false, _) => {
                if up {
                    run_recorded_down(live, name);
                }
                let _ = std::fs::remove_file(live.oneshot_marker(name));
            }
        }
        if !stop.lives_on {
            s.removed.push(name.clone());
        }
    }
    rescan |= rename(live, &m.renames)?;
    // Oneshots still recorded up but never recorded in defs (an interrupted run).
    for name in live.oneshots_up() {
        if g.atom(&name).is_none() && !m.old.contains_key(&name) {
            run_recorded_down(live, &name);
            let _ = std::fs::remove_file(live.oneshot_marker(&name));
        }
    }
    let old = &m.old;
    let mut fresh = Vec::new();
    for i in 0..g.atoms.len() {
        let a = &g.atoms[i];
        let before = old.get(a.name());
        let same =
            before.is_some_and(|d| d.ty == a.def.kind.word() && d.fingerprint == a.def.fingerprint);
        match &a.def.kind {
            Kind::Longrun(_) => {
                let dir = live.servicedir(a.name());
                if !same || !dir.exists() {
                    if live.write_servicedir(g, i)? {
                        fresh.push(dir);
                        s.added.push(a.name().to_string());
                    } else {
                        s.changed.push(a.name().to_string());
                    }
                }
                live.link(a.name())?;
            }
            Kind::Oneshot { .. } => {
                if before.is_none() {
                    s.added.push(a.name().to_string());
                } else if !same {
                    s.changed.push(a.name().to_string());
                    if live.oneshot_up(a.name()) {
                        let text = std::fs::read(a.def.dir.join(crate::source::DOWN_SCRIPT))
                            .unwrap_or_default();
                        crate::live::write_atomic(&live.oneshot_marker(a.name()), &text, 0o644)?;
                    }
                }
            }
            Kind::Bundle { .. } => {}
        }
    }
    if !fresh.is_empty() {
        crate::rescan_and_wait(live, &fresh)?;
    } else if rescan {
        let _ = tend_client::scanctl::send(&live.scandir, &[ScanCommand::Scan]);
    }
    live.write_defs(g)?;
    live.write_sources()?;
    let up = engine::current(g, live);
    for i in 0..g.atoms.len() {
        let touched = s
            .changed
            .iter()
            .chain(&s.added)
            .any(|n| n == g.atoms[i].name());
        if touched && up[i] && g.atoms[i].deps.iter().any(|&j| !up[j]) {
            s.restart[i] = true;
        }
    }
    s.restore.sort_unstable();
    s.restore.dedup();
    Ok(s)
}

/// Rename services in place: a oneshot's marker, a longrun's service directory under
/// its running supervisor (the scanner knows a service by its directory's device and
/// inode, so the new link is the same service). Through temporary names, so that two
/// services may swap names. Whether the scan directory changed.
fn rename(live: &Live, renames: &[(String, String)]) -> Result<bool, Fail> {
    // (temporary path, new name, whether it is a longrun's service directory)
    let mut moved = Vec::new();
    for (from, to) in renames {
        let tmp = format!(".rename-{to}");
        for (path, tmp, servicedir) in [
            (live.oneshot_marker(from), live.oneshot_marker(&tmp), false),
            (live.servicedir(from), live.servicedir(&tmp), true),
        ] {
            if std::fs::symlink_metadata(&path).is_ok() {
                std::fs::rename(&path, &tmp)
                    .map_err(|e| tend_sys::Error::io("rename", &path, &e))?;
                moved.push((tmp, to.clone(), servicedir));
            }
        }
        let link = live.scandir.join(from);
        if std::fs::read_link(&link).ok().as_deref() == Some(live.servicedir(from).as_path()) {
            let _ = std::fs::remove_file(&link);
        }
    }
    let mut scandir_changed = false;
    for (tmp, to, servicedir) in &moved {
        let dest = tmp.with_file_name(to);
        std::fs::rename(tmp, &dest).map_err(|e| tend_sys::Error::io("rename", &dest, &e))?;
        if *servicedir {
            live.link(to)?;
            scandir_changed = true;
        }
    }
    Ok(scandir_changed)
}

/// Bring a longrun that lives on down (its `finish` done), to start it again later.
fn stop_longrun(dir: &Path) {
    let _ = std::fs::write(dir.join(tend_proto::servicedir::DOWN), b"");
    let _ = tend_client::control::command(dir, &[ControlCommand::Down]);
    until(|| !tend_proto::StatusRecord::read(dir).is_ok_and(|r| r.pid != 0 || r.finishing));
}

/// Bring a longrun that left the definitions down and remove it.
pub(crate) fn retire(live: &Live, name: &str) {
    let dir = live.servicedir(name);
    let _ = std::fs::write(dir.join(tend_proto::servicedir::DOWN), b"");
    live.unlink(name);
    let _ = tend_client::control::command(&dir, &[ControlCommand::Down, ControlCommand::Exit]);
    until(|| !tend_client::svok(&dir).unwrap_or(false));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Wait (30 s at most) until `done`, looking again after 1 ms, then less and less often
/// (20 ms at most): a supervisor sends no event for its own exit, and a stop's `d` and
/// `D` say nothing of `finish` being done, which the status record does.
fn until(mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut pause = Duration::from_millis(1);
    while !done() && Instant::now() < deadline {
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// Run the down script a removed oneshot recorded when it came up.
fn run_recorded_down(live: &Live, name: &str) {
    let Ok(text) = std::fs::read(live.oneshot_marker(name)) else {
        return;
    };
    let Ok(script) = script::parse(&text) else {
        return;
    };
    for step in &script.steps {
        let Some((prog, args)) = step.argv.split_first() else {
            continue;
        };
        let ok = std::process::Command::new(prog)
            .args(args)
            .current_dir(&live.dir)
            .stdin(std::process::Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !ok && step.kind == script::StepKind::If {
            return;
        }
    }
}
