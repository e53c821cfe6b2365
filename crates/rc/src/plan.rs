//! The transition planner, a pure function: from the graph, which atoms are up now, and
//! what was asked (s6-rc's `-u`/`-d`/`-D`, `-p`, `-a`, the selection), which atoms must
//! go down and which must come up. The executor then runs the two sets in dependency
//! order (all stops first, then all starts, as s6-rc does with `-p`).

use crate::graph::Graph;

/// Which way `change` goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Up,
    Down,
    /// Down, essential services included (`-D`).
    ForceDown,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub direction: Direction,
    pub prune: bool,
    /// Atoms named (bundles already expanded), before `-a`.
    pub selection: Vec<usize>,
    /// `-a`: add every atom that is up.
    pub active: bool,
}

impl Request {
    /// Bring `selection` up, nothing else asked.
    pub fn up(selection: Vec<usize>) -> Request {
        Request {
            direction: Direction::Up,
            prune: false,
            selection,
            active: false,
        }
    }
}

/// What must change: `stop[i]` / `start[i]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub stop: Vec<bool>,
    pub start: Vec<bool>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        !self.stop.iter().any(|&b| b) && !self.start.iter().any(|&b| b)
    }
}

/// The selection with `-a` applied.
pub fn selection(req: &Request, up: &[bool]) -> Vec<usize> {
    let mut sel = req.selection.clone();
    if req.active {
        sel.extend((0..up.len()).filter(|&i| up[i]));
    }
    sel.sort_unstable();
    sel.dedup();
    sel
}

/// Plan a change. `restart` atoms (their definition changed type, or they gained a
/// dependency that is down) are stopped and brought back up if they are up and wanted.
pub fn plan(g: &Graph, up: &[bool], req: &Request, restart: &[bool]) -> Plan {
    let n = g.atoms.len();
    let sel = selection(req, up);
    let mut want: Vec<Option<bool>> = vec![None; n];
    match req.direction {
        Direction::Up => {
            let c = g.closure(&sel, true);
            for i in 0..n {
                if c[i] {
                    want[i] = Some(true);
                } else if req.prune {
                    want[i] = Some(false);
                }
            }
        }
        Direction::Down | Direction::ForceDown => {
            let c = g.closure(&sel, false);
            for i in 0..n {
                if c[i] {
                    want[i] = Some(false);
                } else if req.prune {
                    want[i] = Some(true);
                }
            }
            if req.direction == Direction::Down {
                // An essential service stays up, and so does what it depends on.
                let keep: Vec<usize> = (0..n)
                    .filter(|&i| want[i] == Some(false) && g.atoms[i].essential() && up[i])
                    .collect();
                let k = g.closure(&keep, true);
                for i in 0..n {
                    if k[i] && up[i] {
                        want[i] = None;
                    }
                }
            }
        }
    }
    // What restarts: stopped with its dependents; started again if it stays wanted or
    // was up and nothing said otherwise.
    let restarting: Vec<usize> = (0..n).filter(|&i| restart[i] && up[i]).collect();
    let r = g.closure(&restarting, false);
    let mut stop = vec![false; n];
    let mut start = vec![false; n];
    for i in 0..n {
        let w = want[i];
        if r[i] && up[i] {
            stop[i] = true;
            start[i] = w != Some(false);
            continue;
        }
        match w {
            Some(true) if !up[i] => start[i] = true,
            Some(false) if up[i] => stop[i] = true,
            _ => {}
        }
    }
    // A start needs its dependencies up: any dependency down and not starting starts too
    // (this happens when a restart brings back a service whose dependency was also cut).
    let starting: Vec<usize> = (0..n).filter(|&i| start[i]).collect();
    let c = g.closure(&starting, true);
    for i in 0..n {
        if c[i] && (!up[i] || stop[i]) {
            start[i] = true;
        }
    }
    Plan { stop, start }
}

/// A dependency order of every atom (dependencies first), for printing plans.
pub fn order(g: &Graph) -> Vec<usize> {
    let n = g.atoms.len();
    let mut left: Vec<usize> = g.atoms.iter().map(|a| a.deps.len()).collect();
    let mut ready: Vec<usize> = (0..n).filter(|&i| left[i] == 0).rev().collect();
    let mut out = Vec::with_capacity(n);
    while let Some(i) = ready.pop() {
        out.push(i);
        for &j in g.atoms[i].rdeps.iter().rev() {
            left[j] -= 1;
            if left[j] == 0 {
                ready.push(j);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::Script;
    use crate::source::{Def, Kind};

    /// a graph from (name, deps) rows; every atom a oneshot; `!` before a name: essential.
    fn graph(rows: &[(&str, &[&str])]) -> Graph {
        let defs = rows
            .iter()
            .map(|(n, deps)| Def {
                name: n.trim_start_matches('!').to_string(),
                dir: format!("/src/{n}").into(),
                kind: Kind::Oneshot {
                    up: Script::default(),
                    down: Script::default(),
                    reload: Script::default(),
                },
                deps: deps.iter().map(|d| d.to_string()).collect(),
                timeout_up: 0,
                timeout_down: 0,
                essential: n.starts_with('!'),
                fingerprint: 0,
            })
            .collect();
        let mut p = Vec::new();
        let g = crate::graph::build(defs, &mut p);
        assert!(p.is_empty(), "{p:?}");
        g
    }

    fn names(g: &Graph, set: &[bool]) -> String {
        let mut v: Vec<&str> = (0..set.len())
            .filter(|&i| set[i])
            .map(|i| g.atoms[i].name())
            .collect();
        v.sort();
        v.join(" ")
    }

    fn set(g: &Graph, names: &str) -> Vec<bool> {
        let mut v = vec![false; g.atoms.len()];
        for n in names.split_whitespace() {
            v[g.atom(n).unwrap()] = true;
        }
        v
    }

    /// Each row: (direction, prune, active, selection, up before, restart) → (stops, starts).
    #[test]
    fn table() {
        // db <- app <- web; cfg (essential) <- app; lone
        let g = graph(&[
            ("db", &[]),
            ("!cfg", &[]),
            ("app", &["db", "cfg"]),
            ("web", &["app"]),
            ("lone", &[]),
        ]);
        use Direction::*;
        // (direction, flag, flag, names, then the expected sets as space-separated names)
        type Row<'a> = (
            Direction,
            bool,
            bool,
            &'a str,
            &'a str,
            &'a str,
            &'a str,
            &'a str,
        );
        let rows: &[Row] = &[
            (Up, false, false, "web", "", "", "", "app cfg db web"),
            (Up, false, false, "web", "db cfg", "", "", "app web"),
            (Up, false, false, "lone", "db", "", "", "lone"),
            (
                Up,
                true,
                false,
                "db",
                "db app cfg web lone",
                "",
                "app cfg lone web",
                "",
            ),
            (
                Down,
                false,
                false,
                "db",
                "db app cfg web",
                "",
                "app db web",
                "",
            ),
            (
                Down,
                false,
                true,
                "",
                "db app cfg web lone",
                "",
                "app db lone web",
                "",
            ),
            (
                ForceDown,
                false,
                true,
                "",
                "db app cfg web lone",
                "",
                "app cfg db lone web",
                "",
            ),
            // An essential dependent keeps what it needs up.
            (Down, false, false, "cfg", "cfg", "", "", ""),
            (Down, true, false, "web", "", "", "", "app cfg db lone"),
            (
                Up,
                false,
                false,
                "",
                "db app cfg web",
                "db",
                "app db web",
                "app db web",
            ),
            (
                Up,
                false,
                false,
                "lone",
                "db app cfg web",
                "app",
                "app web",
                "app lone web",
            ),
            (Up, false, false, "web", "db cfg app web", "", "", ""),
        ];
        for (k, &(dir, prune, active, sel, up, restart, stops, starts)) in rows.iter().enumerate() {
            let req = Request {
                direction: dir,
                prune,
                active,
                selection: sel.split_whitespace().map(|n| g.atom(n).unwrap()).collect(),
            };
            let p = plan(&g, &set(&g, up), &req, &set(&g, restart));
            assert_eq!(
                (names(&g, &p.stop), names(&g, &p.start)),
                (stops.to_string(), starts.to_string()),
                "row {k}: {dir:?} prune={prune} -a={active} sel={sel} up={up} restart={restart}"
            );
        }
    }

    #[test]
    fn order_puts_dependencies_first() {
        let g = graph(&[("c", &["b"]), ("b", &["a"]), ("a", &[]), ("d", &["a", "c"])]);
        let o: Vec<&str> = order(&g).iter().map(|&i| g.atoms[i].name()).collect();
        assert_eq!(o, vec!["a", "b", "c", "d"]);
    }
}
