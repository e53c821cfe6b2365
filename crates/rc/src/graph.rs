//! The checked graph: atomic services (oneshots and longruns) by index, their direct
//! dependencies as atoms (bundles expanded), bundles as sets of atoms, pipelines paired.
//! Every relation error (a name not defined, a bundle containing itself, a cycle named
//! in full, a pipeline whose two ends disagree or that is longer than a producer and its
//! consumer) is a [`Problem`] with the path it comes from.

use crate::source::{Def, Kind, Problem};
use std::collections::HashMap;
use std::path::PathBuf;

/// One atomic service.
#[derive(Debug, Clone)]
pub struct Atom {
    pub def: Def,
    /// Direct dependencies, as atom indices, sorted, no duplicates.
    pub deps: Vec<usize>,
    /// Direct dependents.
    pub rdeps: Vec<usize>,
    /// In a pipeline (a producer and its logger, a chain of three or more, a funnel of
    /// several producers into one consumer): the consumer whose FIFO this longrun's
    /// stdout is (`LIVE/pipes/NAME`), and whether its stdin is its own FIFO. Every side
    /// is a service of its own at SCANDIR/NAME, as s6-rc-init links them.
    pub fifo_out: Option<usize>,
    pub fifo_in: bool,
}

impl Atom {
    pub fn name(&self) -> &str {
        &self.def.name
    }
    pub fn is_longrun(&self) -> bool {
        matches!(self.def.kind, Kind::Longrun(_))
    }
    pub fn essential(&self) -> bool {
        self.def.essential
    }
}

/// What a name means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Named {
    Atom(usize),
    Bundle(usize),
}

#[derive(Debug, Clone, Default)]
pub struct Graph {
    pub atoms: Vec<Atom>,
    /// (name, atoms, essential flag given to the bundle)
    pub bundles: Vec<(String, Vec<usize>)>,
    pub names: HashMap<String, Named>,
}

impl Graph {
    pub fn atom(&self, name: &str) -> Option<usize> {
        match self.names.get(name) {
            Some(Named::Atom(i)) => Some(*i),
            _ => None,
        }
    }

    /// The atoms a name stands for.
    pub fn resolve(&self, name: &str) -> Option<Vec<usize>> {
        match self.names.get(name)? {
            Named::Atom(i) => Some(vec![*i]),
            Named::Bundle(b) => Some(self.bundles[*b].1.clone()),
        }
    }

    /// The selection closed over dependencies (`up`) or dependents (`!up`).
    pub fn closure(&self, start: &[usize], up: bool) -> Vec<bool> {
        let mut seen = vec![false; self.atoms.len()];
        let mut stack: Vec<usize> = start.to_vec();
        while let Some(i) = stack.pop() {
            if seen[i] {
                continue;
            }
            seen[i] = true;
            let next = if up {
                &self.atoms[i].deps
            } else {
                &self.atoms[i].rdeps
            };
            stack.extend(next.iter().copied().filter(|&j| !seen[j]));
        }
        seen
    }
}

fn problem(path: impl Into<PathBuf>, what: impl Into<String>) -> Problem {
    Problem {
        path: path.into(),
        what: what.into(),
    }
}

/// Build and check the graph of `defs`; problems are appended.
pub fn build(defs: Vec<Def>, problems: &mut Vec<Problem>) -> Graph {
    let mut g = Graph::default();
    let mut bundle_defs = register(&mut g, defs);
    for d in pipeline_bundles(&g, problems) {
        g.names
            .insert(d.name.clone(), Named::Bundle(bundle_defs.len()));
        bundle_defs.push(d);
    }
    expand_bundles(&mut g, &bundle_defs, problems);
    resolve_dependencies(&mut g, problems);
    pipelines(&mut g, problems);
    for a in g.atoms.iter_mut() {
        a.deps.sort_unstable();
        a.deps.dedup();
    }
    self_dependencies(&mut g, problems);
    cycles(&mut g, problems);
    for i in 0..g.atoms.len() {
        for j in g.atoms[i].deps.clone() {
            g.atoms[j].rdeps.push(i);
        }
    }
    g
}

/// Name every definition: an atom goes into the graph, a bundle's definition is kept
/// aside (returned) until every name is known.
fn register(g: &mut Graph, defs: Vec<Def>) -> Vec<Def> {
    let mut bundle_defs: Vec<Def> = Vec::new();
    for d in defs {
        match d.kind {
            Kind::Bundle { .. } => {
                g.names
                    .insert(d.name.clone(), Named::Bundle(bundle_defs.len()));
                bundle_defs.push(d);
            }
            _ => {
                g.names.insert(d.name.clone(), Named::Atom(g.atoms.len()));
                g.atoms.push(Atom {
                    def: d,
                    deps: Vec::new(),
                    rdeps: Vec::new(),
                    fifo_out: None,
                    fifo_in: false,
                });
            }
        }
    }
    bundle_defs
}

/// A last consumer's pipeline-name is a bundle of the pipeline, usable in bundles.
fn pipeline_bundles(g: &Graph, problems: &mut Vec<Problem>) -> Vec<Def> {
    let mut synthetic: Vec<Def> = Vec::new();
    for a in &g.atoms {
        if let Kind::Longrun(l) = &a.def.kind
            && let Some(pn) = &l.pipeline_name
            && !l.consumer_for.is_empty()
            && l.producer_for.is_none()
        {
            let path = a.def.dir.join("pipeline-name");
            if g.names.contains_key(pn) || synthetic.iter().any(|d| &d.name == pn) {
                problems.push(problem(
                    path,
                    format!("pipeline name {pn} is already defined"),
                ));
                continue;
            }
            synthetic.push(Def {
                name: pn.clone(),
                dir: path,
                kind: Kind::Bundle {
                    contents: pipeline_of(g, &a.def.name, &l.consumer_for),
                },
                deps: Vec::new(),
                timeout_up: 0,
                timeout_down: 0,
                essential: false,
                fingerprint: 0,
            });
        }
    }
    synthetic
}

/// Every service of the pipeline that ends at `last` (fed by `feeds`): the producers of
/// producers too.
fn pipeline_of(g: &Graph, last: &str, feeds: &[String]) -> Vec<String> {
    let mut contents = vec![last.to_string()];
    let mut k = 0;
    while k < contents.len() {
        let more = match g.names.get(&contents[k]) {
            Some(Named::Atom(j)) => match &g.atoms[*j].def.kind {
                Kind::Longrun(pl) => pl.consumer_for.clone(),
                _ => Vec::new(),
            },
            _ if k == 0 => feeds.to_vec(),
            _ => Vec::new(),
        };
        for p in more {
            if !contents.contains(&p) {
                contents.push(p);
            }
        }
        k += 1;
    }
    contents
}

/// Expand every bundle to its atoms (recursively); an essential bundle makes its atoms
/// essential.
fn expand_bundles(g: &mut Graph, bundle_defs: &[Def], problems: &mut Vec<Problem>) {
    let mut expanded: Vec<Option<Vec<usize>>> = vec![None; bundle_defs.len()];
    for b in 0..bundle_defs.len() {
        let mut path = Vec::new();
        let mut ex = Expansion {
            defs: bundle_defs,
            names: &g.names,
            expanded: &mut expanded,
            path: &mut path,
        };
        ex.expand(b, problems);
    }
    for (b, d) in bundle_defs.iter().enumerate() {
        let atoms = expanded[b].clone().unwrap_or_default();
        if d.essential {
            for &a in &atoms {
                g.atoms[a].def.essential = true;
            }
        }
        g.bundles.push((d.name.clone(), atoms));
    }
}

/// One walk through the bundles: those expanded so far, and the chain being expanded (a
/// bundle reached again on it contains itself).
struct Expansion<'a> {
    defs: &'a [Def],
    names: &'a HashMap<String, Named>,
    expanded: &'a mut Vec<Option<Vec<usize>>>,
    path: &'a mut Vec<usize>,
}

impl Expansion<'_> {
    fn expand(&mut self, b: usize, problems: &mut Vec<Problem>) -> Vec<usize> {
        let defs = self.defs;
        if let Some(done) = &self.expanded[b] {
            return done.clone();
        }
        if let Some(pos) = self.path.iter().position(|&x| x == b) {
            let mut chain: Vec<&str> = self.path[pos..]
                .iter()
                .map(|&x| defs[x].name.as_str())
                .collect();
            chain.push(&defs[b].name);
            problems.push(problem(
                defs[b].dir.join("contents.d"),
                format!(
                    "bundle {} contains itself: {}",
                    defs[b].name,
                    chain.join(" -> ")
                ),
            ));
            return Vec::new();
        }
        self.path.push(b);
        let mut out = Vec::new();
        let Kind::Bundle { contents } = &defs[b].kind else {
            return out;
        };
        for n in contents {
            match self.names.get(n) {
                Some(Named::Atom(i)) => out.push(*i),
                Some(Named::Bundle(c)) => {
                    let inner = self.expand(*c, problems);
                    out.extend(inner);
                }
                None => problems.push(problem(
                    defs[b].dir.join("contents.d").join(n),
                    format!("bundle {} contains {n}, which is not defined", defs[b].name),
                )),
            }
        }
        self.path.pop();
        out.sort_unstable();
        out.dedup();
        self.expanded[b] = Some(out.clone());
        out
    }
}

/// Each atom's dependencies by index (a bundle stands for its atoms).
fn resolve_dependencies(g: &mut Graph, problems: &mut Vec<Problem>) {
    for i in 0..g.atoms.len() {
        let mut deps = Vec::new();
        for n in &g.atoms[i].def.deps {
            match g.names.get(n) {
                Some(Named::Atom(j)) => deps.push(*j),
                Some(Named::Bundle(b)) => deps.extend(g.bundles[*b].1.iter().copied()),
                None => problems.push(problem(
                    g.atoms[i].def.dir.join("dependencies.d").join(n),
                    format!(
                        "{} depends on {n}, which is not defined",
                        g.atoms[i].def.name
                    ),
                )),
            }
        }
        g.atoms[i].deps = deps;
    }
}

/// A service that depends on itself (directly, or through a bundle holding it): named,
/// and the edge dropped so the cycle search does not name it again.
fn self_dependencies(g: &mut Graph, problems: &mut Vec<Problem>) {
    for i in 0..g.atoms.len() {
        if g.atoms[i].deps.contains(&i) {
            problems.push(problem(
                g.atoms[i].def.dir.join("dependencies.d"),
                format!("dependency cycle: {0} -> {0}", g.atoms[i].def.name),
            ));
            g.atoms[i].deps.retain(|&j| j != i);
        }
    }
}

/// Pair producers with consumers; a consumer starts before its producer (the producer
/// depends on it), so the logger is there first and goes last.
fn pipelines(g: &mut Graph, problems: &mut Vec<Problem>) {
    for i in 0..g.atoms.len() {
        let Kind::Longrun(l) = &g.atoms[i].def.kind else {
            continue;
        };
        let (pf, cf) = (l.producer_for.clone(), l.consumer_for.clone());
        let dir = g.atoms[i].def.dir.clone();
        let name = g.atoms[i].def.name.clone();
        if let Some(c) = &pf {
            match g.names.get(c) {
                Some(Named::Atom(j)) => {
                    let j = *j;
                    let agrees = matches!(&g.atoms[j].def.kind, Kind::Longrun(cl) if cl.consumer_for.contains(&name));
                    if !agrees {
                        problems.push(problem(
                            dir.join("producer-for"),
                            format!("{name} is a producer for {c}, whose consumer-for does not name {name}"),
                        ));
                    } else {
                        // The consumer starts first and stops last.
                        g.atoms[i].deps.push(j);
                        g.atoms[i].fifo_out = Some(j);
                        g.atoms[j].fifo_in = true;
                    }
                }
                _ => problems.push(problem(
                    dir.join("producer-for"),
                    format!("{name} is a producer for {c}, which is not a defined longrun"),
                )),
            }
        }
        for p in &cf {
            let ok = matches!(g.names.get(p), Some(Named::Atom(j)) if matches!(&g.atoms[*j].def.kind, Kind::Longrun(pl) if pl.producer_for.as_deref() == Some(name.as_str())));
            if !ok {
                problems.push(problem(
                    dir.join("consumer-for"),
                    format!(
                        "{name} is a consumer for {p}, whose producer-for does not name {name}"
                    ),
                ));
            }
        }
    }
}

/// Find dependency cycles (iterative DFS, so 10 000 levels do not overflow the stack);
/// each is reported once, named in full, and broken so the graph stays usable.
fn cycles(g: &mut Graph, problems: &mut Vec<Problem>) {
    let n = g.atoms.len();
    // 0 new, 1 on the path, 2 done.
    let mut color = vec![0u8; n];
    let mut cut: Vec<(usize, usize)> = Vec::new();
    for root in 0..n {
        if color[root] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        color[root] = 1;
        while let Some(&mut (v, ref mut k)) = stack.last_mut() {
            if *k < g.atoms[v].deps.len() {
                let w = g.atoms[v].deps[*k];
                *k += 1;
                match color[w] {
                    0 => {
                        color[w] = 1;
                        stack.push((w, 0));
                    }
                    1 => {
                        let pos = stack.iter().position(|&(x, _)| x == w).unwrap_or(0);
                        let mut chain: Vec<&str> = stack[pos..]
                            .iter()
                            .map(|&(x, _)| g.atoms[x].def.name.as_str())
                            .collect();
                        chain.push(g.atoms[w].def.name.as_str());
                        problems.push(problem(
                            g.atoms[w].def.dir.join("dependencies.d"),
                            format!("dependency cycle: {}", chain.join(" -> ")),
                        ));
                        cut.push((v, w));
                    }
                    _ => {}
                }
            } else {
                color[v] = 2;
                stack.pop();
            }
        }
    }
    for (v, w) in cut {
        g.atoms[v].deps.retain(|&x| x != w);
    }
}

/// Read and check the sources: the graph, or every problem.
pub fn load(sources: &[PathBuf]) -> Result<Graph, Vec<Problem>> {
    let mut problems = Vec::new();
    let defs = crate::source::read_sources(sources, &mut problems);
    let g = build(defs, &mut problems);
    if problems.is_empty() {
        Ok(g)
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::Script;
    use crate::source::Longrun;

    /// A definition from a short form: `name` a oneshot, `=name` a bundle of `deps`,
    /// `~name` a longrun; `deps` its dependencies (a bundle's contents).
    fn def(spec: &str, deps: &[&str]) -> Def {
        let (kind, name) = match spec.as_bytes()[0] {
            b'=' => (
                Kind::Bundle {
                    contents: deps.iter().map(|d| d.to_string()).collect(),
                },
                &spec[1..],
            ),
            b'~' => (
                Kind::Longrun(Longrun {
                    files: Vec::new(),
                    notify: false,
                    producer_for: None,
                    consumer_for: Vec::new(),
                    pipeline_name: None,
                }),
                &spec[1..],
            ),
            _ => (
                Kind::Oneshot {
                    up: Script::default(),
                    down: Script::default(),
                    reload: Script::default(),
                },
                spec,
            ),
        };
        let bundle = matches!(kind, Kind::Bundle { .. });
        Def {
            name: name.to_string(),
            dir: format!("/src/{name}").into(),
            kind,
            deps: if bundle {
                Vec::new()
            } else {
                deps.iter().map(|d| d.to_string()).collect()
            },
            timeout_up: 0,
            timeout_down: 0,
            essential: false,
            fingerprint: 0,
        }
    }

    fn deps_of(g: &Graph, name: &str) -> Vec<String> {
        let Some(Named::Atom(i)) = g.names.get(name) else {
            panic!("{name} is not an atom");
        };
        let mut v: Vec<String> = g.atoms[*i]
            .deps
            .iter()
            .map(|&j| g.atoms[j].name().to_string())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn build_table() {
        // (definitions, the problems' texts (substrings, in order), name → its atom deps)
        type Row<'a> = (
            &'a [(&'a str, &'a [&'a str])],
            &'a [&'a str],
            &'a [(&'a str, &'a [&'a str])],
        );
        let rows: &[Row] = &[
            (&[("a", &[]), ("b", &["a"])], &[], &[("b", &["a"])]),
            // A bundle as a dependency stands for its atoms, nested bundles too.
            (
                &[
                    ("a", &[]),
                    ("~l", &[]),
                    ("=in", &["a"]),
                    ("=out", &["in", "l"]),
                    ("c", &["out"]),
                ],
                &[],
                &[("c", &["a", "l"])],
            ),
            (
                &[("a", &["nope"])],
                &["a depends on nope, which is not defined"],
                &[("a", &[])],
            ),
            (
                &[("a", &["a"])],
                &["dependency cycle: a -> a"],
                &[("a", &[])],
            ),
            (
                &[("a", &["=b"]), ("=b", &["a"])],
                &["dependency cycle: a -> a"],
                &[],
            ),
            (
                &[("a", &[]), ("=b1", &["a", "b2"]), ("=b2", &["b1"])],
                &["bundle b1 contains itself: b1 -> b2 -> b1"],
                &[],
            ),
            (
                &[("=b", &["ghost"])],
                &["bundle b contains ghost, which is not defined"],
                &[],
            ),
            (
                &[("x", &["y"]), ("y", &["z"]), ("z", &["x"])],
                &["dependency cycle: "],
                &[],
            ),
        ];
        for (defs, want_problems, want_deps) in rows {
            let defs: Vec<Def> = defs
                .iter()
                .map(|(spec, deps)| {
                    // "=b" in a dependency list means the bundle b.
                    let deps: Vec<&str> = deps.iter().map(|d| d.trim_start_matches('=')).collect();
                    def(spec, &deps)
                })
                .collect();
            let mut problems = Vec::new();
            let g = build(defs, &mut problems);
            let got: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
            assert_eq!(got.len(), want_problems.len(), "{got:?}");
            for (p, w) in got.iter().zip(want_problems.iter()) {
                assert!(p.contains(w), "{p:?} should say {w:?}");
            }
            for (name, deps) in *want_deps {
                assert_eq!(deps_of(&g, name), *deps, "deps of {name}");
            }
        }
    }

    #[test]
    fn rdeps_mirror_deps() {
        let mut problems = Vec::new();
        let g = build(
            vec![def("a", &[]), def("b", &["a"]), def("c", &["a", "b"])],
            &mut problems,
        );
        assert!(problems.is_empty());
        for (i, a) in g.atoms.iter().enumerate() {
            for &d in &a.deps {
                assert!(g.atoms[d].rdeps.contains(&i));
            }
        }
        assert_eq!(g.resolve("c"), Some(vec![2]));
        assert_eq!(g.resolve("nope"), None);
    }
}
