//! s6-rc-update's conversion file, and the order in which what leaves the definitions
//! goes down.
//!
//! A conversion file is lines lexed as execlineb lexes them, each on its own: `OLD ->
//! NEW` renames an atomic service of the live definitions, `OLD restart` (or `OLD -> NEW
//! restart`) forces a restart. What goes down when the definitions change is decided on
//! the dependencies recorded in `LIVE/defs` (the old graph: the new one no longer knows a
//! removed service), so a removed service's dependents go down before it, as s6-rc-update
//! stops them.

use crate::live::LiveDef;
use crate::script::{self, Word};
use std::collections::{HashMap, HashSet};
use std::path::Path;

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
