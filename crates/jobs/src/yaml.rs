//! The YAML value reader: a document loaded, and its scalars and mappings read as tend's
//! kinds of value (durations, sizes, counts, strings, booleans, mappings with known keys),
//! each error naming what was being read. Nothing here knows bpm's keys.

use crate::model::Invalid;
use std::collections::HashMap;
use tend_sys::warn::Warn;
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, ScanError};
use yaml_rust2::{Yaml, YamlLoader};

/// The largest job description read, in bytes (a large BOSH job's bpm.yml is a few KiB).
pub const MAX_BYTES: usize = 1 << 20;
/// The most nodes a document may have once its aliases are expanded: yaml-rust2 copies
/// the anchored node for every alias, so nine levels of nine aliases ("billion laughs")
/// would be 9^9 copies. A job with hundreds of processes stays far below.
pub const MAX_NODES: u64 = 100_000;
/// The deepest nesting of sequences and mappings (bpm's keys nest four deep).
pub const MAX_DEPTH: usize = 64;

/// The documents of `src`; a syntax error names its line and column. A document larger
/// than `MAX_NODES` once expanded, or nested deeper than `MAX_DEPTH`, is refused before
/// any of it is built.
pub fn load(src: &str) -> Result<Vec<Yaml>, Invalid> {
    let malformed = |e: ScanError| {
        Invalid(format!(
            "malformed YAML at line {} column {}: {}",
            e.marker().line(),
            e.marker().col() + 1,
            e.info()
        ))
    };
    // Event by event (Parser::load and the loader recurse once per level, so a deep
    // block nesting would overflow the stack before any limit could be checked).
    let mut parser = Parser::new_from_str(src);
    let mut bounds = Bounds::default();
    loop {
        let (ev, mark) = parser.next_token().map_err(malformed)?;
        if matches!(ev, Event::StreamEnd) {
            break;
        }
        bounds.on_event(ev, mark);
        if let Some(why) = bounds.over {
            return Err(Invalid(why.into()));
        }
    }
    YamlLoader::load_from_str(src).map_err(malformed)
}

/// Counts, from the parser's events alone, what the loader would build: nodes (an alias
/// counts as many as its anchor's node holds) and depth. Cheap whatever the input: no
/// node is built.
#[derive(Default)]
struct Bounds {
    nodes: u64,
    /// Per open sequence or mapping: its anchor and the node count before it.
    open: Vec<(usize, u64)>,
    /// Node count of each anchored node.
    anchors: HashMap<usize, u64>,
    over: Option<&'static str>,
}

impl Bounds {
    fn add(&mut self, n: u64) {
        self.nodes = self.nodes.saturating_add(n);
        if self.nodes > MAX_NODES && self.over.is_none() {
            self.over = Some("YAML expands to more than 100000 nodes (through aliases): refused");
        }
    }
}

impl MarkedEventReceiver for Bounds {
    fn on_event(&mut self, ev: Event, _: Marker) {
        if self.over.is_some() {
            return;
        }
        match ev {
            Event::Scalar(_, _, anchor, _) => {
                self.add(1);
                if anchor > 0 {
                    self.anchors.insert(anchor, 1);
                }
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                self.open.push((anchor, self.nodes));
                self.add(1);
                if self.open.len() > MAX_DEPTH {
                    self.over = Some("YAML nested deeper than 64 levels: refused");
                }
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some((anchor, before)) = self.open.pop()
                    && anchor > 0
                {
                    self.anchors.insert(anchor, self.nodes - before);
                }
            }
            Event::Alias(id) => {
                let n = self.anchors.get(&id).copied().unwrap_or(1);
                self.add(n);
            }
            _ => {}
        }
    }
}

/// A duration: a number of seconds, or a number with ms, s, m or h.
pub fn duration_ms(v: &Yaml, what: &str) -> Result<u64, Invalid> {
    let bad = || {
        Invalid(format!(
            "invalid {what}: {}: a duration is N, Nms, Ns, Nm or Nh",
            shown(v)
        ))
    };
    match v {
        Yaml::Integer(i) if *i >= 0 => (*i as u64).checked_mul(1000).ok_or_else(bad),
        Yaml::String(s) => {
            let s = s.trim();
            let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
            let (num, unit) = s.split_at(split);
            let n: u64 = num.parse().map_err(|_| bad())?;
            let mult = match unit {
                "" | "s" => 1000,
                "ms" => 1,
                "m" => 60_000,
                "h" => 3_600_000,
                _ => return Err(bad()),
            };
            n.checked_mul(mult).ok_or_else(bad)
        }
        _ => Err(bad()),
    }
}

/// A size in bytes: N, or N with K, M, G or T (powers of 1024; a trailing B is allowed).
pub fn size(v: &Yaml, what: &str) -> Result<u64, Invalid> {
    let bad = || {
        Invalid(format!(
            "invalid {what}: {}: a size is N bytes or N with K, M, G or T",
            shown(v)
        ))
    };
    match v {
        Yaml::Integer(i) if *i > 0 => Ok(*i as u64),
        Yaml::String(s) => {
            let s = s.trim();
            let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
            let (num, unit) = s.split_at(split);
            let n: u64 = num.parse().map_err(|_| bad())?;
            let unit = unit.strip_suffix(['B', 'b']).unwrap_or(unit);
            let shift = match unit.to_ascii_uppercase().as_str() {
                "" => 0,
                "K" | "KI" => 10,
                "M" | "MI" => 20,
                "G" | "GI" => 30,
                "T" | "TI" => 40,
                _ => return Err(bad()),
            };
            if n == 0 {
                return Err(bad());
            }
            n.checked_mul(1u64 << shift).ok_or_else(bad)
        }
        _ => Err(bad()),
    }
}

/// A size that may be 0 (a core file size: 0 is "none").
pub fn size_or_zero(v: &Yaml, what: &str) -> Result<u64, Invalid> {
    match v {
        Yaml::Integer(0) => Ok(0),
        Yaml::String(s) if s.trim() == "0" => Ok(0),
        _ => size(v, what),
    }
}

pub fn count(v: &Yaml, what: &str) -> Result<u64, Invalid> {
    match v {
        Yaml::Integer(i) if *i > 0 => Ok(*i as u64),
        Yaml::String(s) if s.trim().parse::<u64>().is_ok_and(|n| n > 0) => {
            Ok(s.trim().parse().unwrap_or(0))
        }
        _ => Err(Invalid(format!(
            "invalid {what}: {}: a positive whole number",
            shown(v)
        ))),
    }
}

pub fn small(v: &Yaml, what: &str) -> Result<u32, Invalid> {
    let n = count(v, what)?;
    u32::try_from(n).map_err(|_| Invalid(format!("invalid {what}: {n}: too large")))
}

pub fn shown(v: &Yaml) -> String {
    match v {
        Yaml::String(s) | Yaml::Real(s) => s.clone(),
        Yaml::Integer(i) => i.to_string(),
        Yaml::Boolean(b) => b.to_string(),
        Yaml::Null => "null".into(),
        Yaml::Array(_) => "a list".into(),
        Yaml::Hash(_) => "a mapping".into(),
        _ => "?".into(),
    }
}

pub fn text(v: &Yaml, what: &str) -> Result<String, Invalid> {
    match v {
        Yaml::String(s) | Yaml::Real(s) => Ok(s.clone()),
        Yaml::Integer(i) => Ok(i.to_string()),
        Yaml::Boolean(b) => Ok(b.to_string()),
        _ => Err(Invalid(format!(
            "invalid {what}: {}: not a string",
            shown(v)
        ))),
    }
}

pub fn boolean(v: &Yaml, what: &str) -> Result<bool, Invalid> {
    v.as_bool()
        .ok_or_else(|| Invalid(format!("invalid {what}: {}: true or false", shown(v))))
}

/// A mapping's entries by key, with unknown keys reported as warnings.
pub struct Map<'a> {
    entries: Vec<(&'a str, &'a Yaml)>,
}

impl<'a> Map<'a> {
    /// The mapping's entries with known keys; its unknown keys are warned about once every
    /// key has proved a string (a mapping with a bad key is an error, without warnings).
    pub fn new(
        v: &'a Yaml,
        what: &str,
        known: &[&str],
        warn: &dyn Warn,
    ) -> Result<Map<'a>, Invalid> {
        let Yaml::Hash(h) = v else {
            return Err(Invalid(format!(
                "invalid {what}: {}: not a mapping",
                shown(v)
            )));
        };
        let mut entries = Vec::new();
        let mut unknown = Vec::new();
        for (k, val) in h {
            let Some(k) = k.as_str() else {
                return Err(Invalid(format!("invalid key in {what}: {}", shown(k))));
            };
            if known.contains(&k) {
                entries.push((k, val));
            } else {
                unknown.push(k);
            }
        }
        for k in unknown {
            warn.warn(&format_args!("unknown key in {what}: {k}: ignored"));
        }
        Ok(Map { entries })
    }

    pub fn get(&self, k: &str) -> Option<&'a Yaml> {
        self.entries
            .iter()
            .find(|(key, v)| *key == k && !matches!(v, Yaml::Null))
            .map(|(_, v)| *v)
    }

    /// The value of `k` read by `read` (given what to call it in an error), if present.
    pub fn read<T>(
        &self,
        k: &str,
        what: &str,
        read: fn(&Yaml, &str) -> Result<T, Invalid>,
    ) -> Result<Option<T>, Invalid> {
        self.get(k).map(|x| read(x, what)).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds() {
        // An alias counts what its anchor holds: 3 + 1 (the mapping) + 2 x 3.
        let mut b = Bounds::default();
        let mut p = Parser::new_from_str("a: &x [1, 2]\nb: *x\nc: *x\n");
        loop {
            let (ev, m) = p.next_token().unwrap();
            if matches!(ev, Event::StreamEnd) {
                break;
            }
            b.on_event(ev, m);
        }
        assert_eq!((b.nodes, b.over), (1 + 1 + 3 + 1 + 3 + 1 + 3, None));
        let deep = format!("{}{}", "[".repeat(65), "]".repeat(65));
        assert!(load(&deep).is_err());
        let ok = format!("{}{}", "[".repeat(64), "]".repeat(64));
        assert!(load(&ok).is_ok());
        assert!(load(&format!("{}x\n", "- ".repeat(100_000))).is_err());
    }

    fn st(s: &str) -> Yaml {
        Yaml::String(s.into())
    }

    #[test]
    fn sizes_and_durations() {
        assert_eq!(size(&st("512M"), "x"), Ok(512 << 20));
        assert_eq!(size(&st("1G"), "x"), Ok(1 << 30));
        assert_eq!(size(&st("64KiB"), "x"), Ok(64 << 10));
        assert_eq!(size(&Yaml::Integer(4096), "x"), Ok(4096));
        assert!(size(&st("12Q"), "x").is_err());
        assert!(size(&st("0"), "x").is_err());
        assert!(size(&st("M"), "x").is_err());
        assert_eq!(duration_ms(&st("30s"), "x"), Ok(30_000));
        assert_eq!(duration_ms(&st("250ms"), "x"), Ok(250));
        assert_eq!(duration_ms(&st("1h"), "x"), Ok(3_600_000));
        assert_eq!(duration_ms(&Yaml::Integer(20), "x"), Ok(20_000));
        assert!(duration_ms(&st("3 days"), "x").is_err());
        assert!(duration_ms(&Yaml::Integer(-1), "x").is_err());
    }
}
