//! `depends on` as an order: a check starts after what it depends on and stops before
//! it. A plain topological sort for now; when tend-rc's dependency engine lands, the
//! order moves there and this module goes.

use crate::reader::model::Check;
use std::collections::HashMap;

/// The checks' names in start order: every check after all it depends on, ties in file
/// order. Dependencies on undefined names are skipped (validation reports them). A loop
/// leaves its members out; `find_loop` names one.
pub fn start_order(checks: &[Check]) -> Vec<&str> {
    let index: HashMap<&str, usize> = checks
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.as_str(), i))
        .collect();
    // 0 unvisited, 1 on the path, 2 done.
    let mut mark = vec![0u8; checks.len()];
    let mut out = Vec::with_capacity(checks.len());
    fn visit<'a>(
        i: usize,
        checks: &'a [Check],
        index: &HashMap<&str, usize>,
        mark: &mut [u8],
        out: &mut Vec<&'a str>,
    ) -> bool {
        match mark[i] {
            2 => return true,
            1 => return false,
            _ => {}
        }
        mark[i] = 1;
        for (d, _) in &checks[i].depends {
            let dep = index.get(d.as_str()).copied();
            if dep.is_some_and(|j| !visit(j, checks, index, mark, out)) {
                return false;
            }
        }
        mark[i] = 2;
        out.push(&checks[i].name);
        true
    }
    for i in 0..checks.len() {
        visit(i, checks, &index, &mut mark, &mut out);
    }
    out
}

/// A check that is part of a dependency loop, if there is one.
pub fn find_loop(checks: &[Check]) -> Option<String> {
    let ordered = start_order(checks);
    checks
        .iter()
        .find(|c| !ordered.contains(&c.name.as_str()))
        .map(|c| c.name.clone())
}
