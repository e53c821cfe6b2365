//! The logging script: s6-log's directive language, parsed once at start-up into
//! selection elements, actions and logdir settings.
//!
//! Directive letters are s6-log 2.11.3's, plus two of tend's own, chosen among letters s6
//! does not use: `z` (an RFC 3339 UTC timestamp, non-sticky like `t` and `T`) and `j`
//! (the next action writes JSON lines).

use std::ffi::OsString;
use std::fmt;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;
use tend_sys::regex::Regex;

/// A selection directive.
#[derive(Debug)]
pub enum Selection {
    /// `f`: select the lines no previous action acted upon.
    Default,
    /// `+re`: select yet-unselected lines that match.
    Plus(Regex),
    /// `-re`: deselect yet-selected lines that match.
    Minus(Regex),
}

/// How an action renders a line: timestamps, prefix and form.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Format {
    /// `t`: `@` + 24 hex digits + space.
    pub tai: bool,
    /// `T`: local `YYYY-MM-DD HH:MM:SS.nnnnnnnnn` + two spaces.
    pub local: bool,
    /// `z`: RFC 3339 UTC `YYYY-MM-DDTHH:MM:SS.uuuuuuZ` + space.
    pub rfc3339: bool,
    /// `j`: one JSON object per line.
    pub json: bool,
    /// `pPREFIX`: the prefix (printed followed by a space).
    pub prefix: Option<Vec<u8>>,
}

/// Where an action sends a selected line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `1`
    Stdout,
    /// `2`, with the alert size (0 = whole line).
    Alert(usize),
    /// `=file`: index into `Script::statuses`, and the status size (0 = unpadded).
    Status(usize, usize),
    /// A logdir, by index into `Script::logdirs`.
    Logdir(usize),
}

/// One action directive with the format it inherited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    pub target: Target,
    pub format: Format,
}

/// Selections followed by actions.
#[derive(Debug, Default)]
pub struct Element {
    pub selections: Vec<Selection>,
    pub actions: Vec<Action>,
}

/// A processor command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Processor {
    /// `!cmd`: `execlineb -Pc cmd`.
    Execline(OsString),
    /// `?cmd`: `/bin/sh -c cmd`.
    Shell(OsString),
}

impl Processor {
    /// The argv that runs it.
    pub fn argv(&self) -> Vec<OsString> {
        match self {
            Processor::Execline(c) => vec!["execlineb".into(), "-Pc".into(), c.clone()],
            Processor::Shell(c) => vec!["/bin/sh".into(), "-c".into(), c.clone()],
        }
    }
}

/// The settings a logdir was declared with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogdirSpec {
    pub path: PathBuf,
    /// `n`: archives to keep.
    pub count: u64,
    /// `s`: rotation size.
    pub size: u64,
    /// `S`: total archive size, 0 = unlimited.
    pub total: u64,
    /// `l`: tolerance.
    pub tolerance: u64,
    /// `r`: retry cooldown in milliseconds.
    pub cooldown_ms: u64,
    pub processor: Option<Processor>,
}

/// A status file action's file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusSpec {
    pub path: PathBuf,
}

/// The whole parsed script.
#[derive(Debug, Default)]
pub struct Script {
    pub elements: Vec<Element>,
    pub logdirs: Vec<LogdirSpec>,
    /// Status files, indexed by the order of their `=` directives.
    pub statuses: Vec<StatusSpec>,
    /// Whether any element has a selection (otherwise every action runs on every line).
    pub selects: bool,
    /// Union of the stamps any action needs.
    pub needs_tai: bool,
    pub needs_local: bool,
    pub needs_rfc3339: bool,
}

/// Why a script was rejected (exit 100).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptError {
    /// Unknown letter or a bad number.
    Unrecognized(String),
    /// A one-letter directive with extra characters, or an empty `=`.
    Syntax(String),
    /// `l` more than half of `s`.
    Conflict(String),
    /// `+re`/`-re` that regcomp refused.
    BadRegex(String, String),
    NoAction,
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScriptError::Unrecognized(d) => write!(f, "unrecognized directive: {d}"),
            ScriptError::Syntax(d) => write!(f, "syntax error at directive: {d}"),
            ScriptError::Conflict(d) => {
                write!(f, "directive {d} conflicts with previous s directive")
            }
            ScriptError::BadRegex(d, e) => {
                write!(f, "invalid regular expression in directive: {d}: {e}")
            }
            ScriptError::NoAction => write!(f, "no action directive specified"),
        }
    }
}

pub const DEFAULT_COUNT: u64 = 10;
pub const DEFAULT_SIZE: u64 = 99_999;
pub const MIN_SIZE: u64 = 4096;
pub const MAX_SIZE: u64 = 268_435_455;
pub const DEFAULT_TOLERANCE: u64 = 2000;
pub const DEFAULT_COOLDOWN_MS: u64 = 2000;
pub const DEFAULT_ALERT: usize = 200;
pub const DEFAULT_STATUS: usize = 1001;

fn is_action(first: u8) -> bool {
    matches!(first, b'1' | b'2' | b'=' | b'/' | b'.')
}

fn known(first: u8) -> bool {
    is_action(first)
        || matches!(
            first,
            b'+' | b'-'
                | b'f'
                | b'n'
                | b's'
                | b'S'
                | b'l'
                | b'r'
                | b'E'
                | b'^'
                | b'p'
                | b'!'
                | b'?'
                | b't'
                | b'T'
                | b'z'
                | b'j'
        )
}

fn number(rest: &[u8]) -> Option<u64> {
    if rest.is_empty() || !rest.iter().all(u8::is_ascii_digit) {
        return None;
    }
    // s6-log scans 32-bit numbers; anything larger is not a number to it.
    std::str::from_utf8(rest)
        .ok()?
        .parse::<u32>()
        .ok()
        .map(u64::from)
}

/// Parse a script (the operands of tend-log): check every word as s6 does first, then
/// read them in order into selections, settings and actions.
pub fn parse(args: &[OsString]) -> Result<Script, ScriptError> {
    check_words(args)?;
    let mut parser = Parser::default();
    for a in args {
        parser.word(a)?;
    }
    Ok(parser.finish())
}

fn shown(a: &[u8]) -> String {
    String::from_utf8_lossy(a).into_owned()
}

/// The first pass, as s6: every word must start with a known letter (one-letter
/// directives alone), and there must be an action somewhere.
fn check_words(args: &[OsString]) -> Result<(), ScriptError> {
    let mut actions = 0;
    for a in args {
        let b = a.as_bytes();
        match b.first() {
            Some(&c) if known(c) => {
                let one_letter = matches!(c, b'f' | b't' | b'T' | b'z' | b'j' | b'1' | b'2');
                if (one_letter && b.len() > 1) || (c == b'=' && b.len() == 1) {
                    return Err(ScriptError::Syntax(shown(b)));
                }
                actions += usize::from(is_action(c));
            }
            _ => return Err(ScriptError::Unrecognized(shown(b))),
        }
    }
    if actions == 0 {
        return Err(ScriptError::NoAction);
    }
    Ok(())
}

/// The second pass: what the words so far have set.
struct Parser {
    script: Script,
    /// The element being built: its selections, then its actions.
    cur: Element,
    /// Settings for the next logdir (`n`, `s`, `S`, `l`, `r`, `!`/`?`).
    count: u64,
    size: u64,
    total: u64,
    tolerance: u64,
    cooldown: u64,
    processor: Option<Processor>,
    /// `E` and `^`: how much of a line goes to an alert or a status file.
    alert: usize,
    status: usize,
    /// The format of the next action (`p`, `t`, `T`, `z`, `j`).
    next: Format,
}

impl Default for Parser {
    fn default() -> Parser {
        Parser {
            script: Script::default(),
            cur: Element::default(),
            count: DEFAULT_COUNT,
            size: DEFAULT_SIZE,
            total: 0,
            tolerance: DEFAULT_TOLERANCE,
            cooldown: DEFAULT_COOLDOWN_MS,
            processor: None,
            alert: DEFAULT_ALERT,
            status: DEFAULT_STATUS,
            next: Format::default(),
        }
    }
}

impl Parser {
    fn word(&mut self, a: &OsString) -> Result<(), ScriptError> {
        let b = a.as_bytes();
        let rest = &b[1..];
        let num = || number(rest).ok_or_else(|| ScriptError::Unrecognized(shown(b)));
        match b[0] {
            b'f' | b'+' | b'-' => self.select(b)?,
            b'n' => self.count = num()?,
            b's' => self.size = num()?.clamp(MIN_SIZE, MAX_SIZE),
            b'S' => self.total = num()?,
            b'l' => {
                let l = num()?;
                if l > self.size / 2 {
                    return Err(ScriptError::Conflict(shown(b)));
                }
                self.tolerance = l;
            }
            b'r' => self.cooldown = num()?,
            b'E' => self.alert = usize::try_from(num()?).unwrap_or(usize::MAX),
            b'^' => self.status = usize::try_from(num()?).unwrap_or(usize::MAX),
            b'p' => self.next.prefix = (!rest.is_empty()).then(|| rest.to_vec()),
            b'!' | b'?' => {
                let cmd = OsString::from_vec(rest.to_vec());
                self.processor = match (rest.is_empty(), b[0]) {
                    (true, _) => None,
                    (false, b'!') => Some(Processor::Execline(cmd)),
                    (false, _) => Some(Processor::Shell(cmd)),
                }
            }
            b't' => self.next.tai = single(b)?,
            b'T' => self.next.local = single(b)?,
            b'z' => self.next.rfc3339 = single(b)?,
            b'j' => self.next.json = single(b)?,
            b'1' | b'2' | b'=' | b'/' | b'.' => self.action(a)?,
            _ => return Err(ScriptError::Unrecognized(shown(b))),
        }
        Ok(())
    }

    /// `f`, `+regex`, `-regex`: a selection, which after actions starts a new element.
    fn select(&mut self, b: &[u8]) -> Result<(), ScriptError> {
        if !self.cur.actions.is_empty() {
            self.script.elements.push(std::mem::take(&mut self.cur));
        }
        let rest = &b[1..];
        let sel = match b[0] {
            b'f' => {
                if !rest.is_empty() {
                    return Err(ScriptError::Syntax(shown(b)));
                }
                Selection::Default
            }
            c => {
                let re = Regex::new(rest).map_err(|e| ScriptError::BadRegex(shown(b), e))?;
                if c == b'+' {
                    Selection::Plus(re)
                } else {
                    Selection::Minus(re)
                }
            }
        };
        self.script.selects = true;
        self.cur.selections.push(sel);
        Ok(())
    }

    /// `1`, `2`, `=file`, a logdir: an action with the format set so far (whose
    /// timestamp flags then reset).
    fn action(&mut self, a: &OsString) -> Result<(), ScriptError> {
        let b = a.as_bytes();
        let rest = &b[1..];
        let target = match b[0] {
            b'1' | b'2' if !rest.is_empty() => {
                return Err(ScriptError::Syntax(shown(b)));
            }
            b'1' => Target::Stdout,
            b'2' => Target::Alert(self.alert),
            b'=' => {
                if rest.is_empty() {
                    return Err(ScriptError::Syntax(shown(b)));
                }
                self.script.statuses.push(StatusSpec {
                    path: PathBuf::from(OsString::from_vec(rest.to_vec())),
                });
                Target::Status(self.script.statuses.len() - 1, self.status)
            }
            _ => {
                self.script.logdirs.push(LogdirSpec {
                    path: PathBuf::from(a.clone()),
                    count: self.count,
                    size: self.size,
                    total: self.total,
                    tolerance: self.tolerance,
                    cooldown_ms: self.cooldown,
                    processor: self.processor.clone(),
                });
                Target::Logdir(self.script.logdirs.len() - 1)
            }
        };
        let next = &mut self.next;
        self.script.needs_tai |= next.tai;
        self.script.needs_local |= next.local;
        self.script.needs_rfc3339 |= next.rfc3339 || next.json;
        self.cur.actions.push(Action {
            target,
            format: next.clone(),
        });
        next.tai = false;
        next.local = false;
        next.rfc3339 = false;
        next.json = false;
        Ok(())
    }

    fn finish(mut self) -> Script {
        if !self.cur.actions.is_empty() {
            self.script.elements.push(self.cur);
        }
        self.script
    }
}

/// A one-letter directive (`t`, `T`, `z`, `j`) stands alone.
fn single(b: &[u8]) -> Result<bool, ScriptError> {
    if b.len() > 1 {
        return Err(ScriptError::Syntax(shown(b)));
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(words: &[&str]) -> Result<Script, ScriptError> {
        parse(&words.iter().map(OsString::from).collect::<Vec<_>>())
    }

    #[test]
    fn errors_like_s6() {
        assert_eq!(
            p(&["x"]).unwrap_err().to_string(),
            "unrecognized directive: x"
        );
        assert_eq!(p(&["t"]).unwrap_err(), ScriptError::NoAction);
        assert_eq!(p(&["n"]).unwrap_err(), ScriptError::NoAction);
        assert_eq!(
            p(&["nabc", "1"]).unwrap_err(),
            ScriptError::Unrecognized("nabc".into())
        );
        assert_eq!(
            p(&["tt", "1"]).unwrap_err(),
            ScriptError::Syntax("tt".into())
        );
        assert_eq!(p(&["1x"]).unwrap_err(), ScriptError::Syntax("1x".into()));
        assert_eq!(p(&["f1"]).unwrap_err(), ScriptError::Syntax("f1".into()));
        assert_eq!(p(&["="]).unwrap_err(), ScriptError::Syntax("=".into()));
        assert_eq!(
            p(&["E", "1"]).unwrap_err(),
            ScriptError::Unrecognized("E".into())
        );
        assert_eq!(
            p(&["s4096", "l3000", "1"]).unwrap_err().to_string(),
            "directive l3000 conflicts with previous s directive"
        );
        assert!(p(&["l3000", "s4096", "1"]).is_ok());
        assert!(matches!(
            p(&["+(", "1"]).unwrap_err(),
            ScriptError::BadRegex(d, _) if d == "+("
        ));
        assert_eq!(p(&[""]).unwrap_err(), ScriptError::Unrecognized("".into()));
        assert_eq!(
            p(&["^4294967296", "1"]).unwrap_err(),
            ScriptError::Unrecognized("^4294967296".into())
        );
        assert!(p(&["^4294967295", "1"]).is_ok());
    }

    #[test]
    fn sticky_and_non_sticky() {
        let s = p(&[
            "n5", "s10", "pX", "t", "T", "/a", "1", "p", "z", "j", "./b", "!gzip", "r50", "/c",
        ])
        .unwrap();
        assert_eq!(s.elements.len(), 1);
        let acts = &s.elements[0].actions;
        assert!(acts[0].format.tai && acts[0].format.local);
        assert_eq!(acts[0].format.prefix.as_deref(), Some(&b"X"[..]));
        assert_eq!(
            acts[1].format,
            Format {
                prefix: Some(b"X".to_vec()),
                ..Default::default()
            }
        );
        assert!(acts[2].format.rfc3339 && acts[2].format.json && acts[2].format.prefix.is_none());
        assert_eq!(s.logdirs[0].count, 5);
        assert_eq!(s.logdirs[0].size, MIN_SIZE);
        assert_eq!(s.logdirs[1].processor, None);
        assert_eq!(
            s.logdirs[2].processor,
            Some(Processor::Execline("gzip".into()))
        );
        assert_eq!(s.logdirs[2].cooldown_ms, 50);
        assert_eq!(s.logdirs[2].tolerance, DEFAULT_TOLERANCE);
        assert!(!s.selects);
        assert!(s.needs_tai && s.needs_local && s.needs_rfc3339);
    }

    #[test]
    fn elements_split_on_selection_after_action() {
        let s = p(&["-", "+^a", "E5", "2", "f", "^30", "=st", "/d"]).unwrap();
        assert_eq!(s.elements.len(), 2);
        assert_eq!(s.elements[0].selections.len(), 2);
        assert_eq!(s.elements[0].actions[0].target, Target::Alert(5));
        assert_eq!(s.elements[1].actions[0].target, Target::Status(0, 30));
        assert_eq!(s.elements[1].actions[1].target, Target::Logdir(0));
        assert!(s.selects);
        assert_eq!(s.statuses[0].path, PathBuf::from("st"));
        assert_eq!(s.logdirs[0].size, DEFAULT_SIZE);
    }
}
