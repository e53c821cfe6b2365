//! The command-line conventions every tend program shares.
//!
//! This crate is what makes the small programs feel like one toolkit: the option walker
//! (POSIX order kept, operands as `OsString`), the message grammar
//! (`tend-PROG: fatal: what failed: why`) and the exit codes (defined in `tend_sys::code`,
//! so library errors can name theirs). It knows nothing about
//! supervision. It never panics on input; it does exit, since that is its job for `main`.

#![forbid(unsafe_code)]

use std::ffi::{OsStr, OsString};
use std::fmt::Display;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Exit codes shared by the toolkit (s6's where s6 documents one).
pub use tend_sys::code;

/// How many leading words of argv name the program: 1 (`tend-svc -u dir`, also through a
/// link to the multi-call `tend`), or 2 (`tend svc -u dir`). The multi-call entry point sets
/// it before it calls a program's `main`.
static NAME_WORDS: AtomicUsize = AtomicUsize::new(1);

/// The program's arguments after its name, as every program's `main` reads them (argv as
/// the executable's own entry point kept it: `tend_sys::entry`). A first argument
/// `--help` or `--version` is answered here, for every program (see [`help`]).
pub fn args() -> std::iter::Skip<std::vec::IntoIter<std::ffi::OsString>> {
    argv0_and_args().1
}

/// argv[0] and the program's arguments after its name, from one copy of argv (a program
/// that needs its argv[0] too, as tend-sv does for its init-script mode, asks once).
pub fn argv0_and_args() -> (OsString, std::iter::Skip<std::vec::IntoIter<OsString>>) {
    let argv = tend_sys::entry::argv();
    let words = NAME_WORDS.load(Ordering::Relaxed);
    if let Some(first) = argv.get(words)
        && help::asks(first)
    {
        help::answer(
            argv.first().map_or(OsStr::new(""), |a| a.as_os_str()),
            first,
        );
    }
    let mut all = argv.into_iter();
    let argv0 = all.next().unwrap_or_default();
    (argv0, all.skip(words.saturating_sub(1)))
}

/// Called by the multi-call entry point when the program was named by the first argument
/// (`tend svc ...`) rather than by argv[0].
pub fn named_by_first_argument() {
    NAME_WORDS.store(2, Ordering::Relaxed);
}

/// Called by the multi-call entry point with the program it runs (the name argv[0] or the
/// first argument gave may be an alias: `s6-svc`, `chpst`, `init`).
pub fn running(name: &'static str) {
    help::running(name);
}

pub mod help;
pub mod multicall;

/// One program's identity: its name and its usage line (worded as the man page's SYNOPSIS).
#[derive(Clone, Copy, Debug)]
pub struct Program {
    pub name: &'static str,
    pub usage: &'static str,
}

impl Program {
    pub const fn new(name: &'static str, usage: &'static str) -> Program {
        Program { name, usage }
    }

    /// Print the usage line and exit 100.
    pub fn usage_exit(&self) -> ! {
        self.line("usage", self.usage);
        std::process::exit(code::USAGE)
    }

    /// Print `PROG: fatal: msg` and exit with `code`.
    pub fn fatal(&self, code: i32, msg: impl Display) -> ! {
        self.line("fatal", msg);
        std::process::exit(code)
    }

    /// Print `PROG: warning: msg` and carry on.
    pub fn warn(&self, msg: impl Display) {
        self.line("warning", msg);
    }

    /// One line on stderr, written with a single write(2) so lines from
    /// concurrent processes never interleave. A newline or carriage return inside the
    /// message (from a path or an argument) is shown as `\n` / `\r`: one message, one line.
    pub fn line(&self, kind: &str, msg: impl Display) {
        tend_sys::warn::line(self.name, kind, &msg);
    }

    /// Parse options; a usage error exits 100 with the usage line.
    pub fn parse(&self, args: impl IntoIterator<Item = OsString>, spec: &str) -> Parsed {
        match parse(args, spec) {
            Ok(p) => p,
            Err(_) => self.usage_exit(),
        }
    }
}

impl Program {
    /// Parse options found anywhere in argv, as glibc's getopt does by default (monit's
    /// `stop -g vcap`); `--` still ends them. A usage error exits 100.
    pub fn parse_permuted(&self, args: impl IntoIterator<Item = OsString>, spec: &str) -> Parsed {
        self.parse(permute(args, spec), spec)
    }
}

/// argv with its options moved before its operands, order kept within each (glibc getopt's
/// permutation). An option's value stays with it; everything after `--` stays an operand.
pub fn permute(args: impl IntoIterator<Item = OsString>, spec: &str) -> Vec<OsString> {
    let takes_value = |c: u8| {
        spec.as_bytes()
            .windows(2)
            .any(|w| w[0] == c && w[1] == b':')
    };
    let mut options = Vec::new();
    let mut operands = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let bytes = arg.as_bytes();
        if bytes == b"--" {
            operands.extend(args.by_ref());
            break;
        }
        if bytes.len() < 2 || bytes[0] != b'-' {
            operands.push(arg);
            continue;
        }
        // The value of the first letter that takes one is the rest of this word, or the
        // next word when this word ends there.
        let needs_next = bytes[1..]
            .iter()
            .position(|&c| takes_value(c))
            .is_some_and(|i| i + 2 == bytes.len());
        options.push(arg);
        if needs_next {
            options.extend(args.next());
        }
    }
    if !operands.is_empty() {
        options.push(OsString::from("--"));
    }
    options.extend(operands);
    options
}

/// A program is the warning sink of the libraries it calls: `PROG: warning: msg`.
impl tend_sys::warn::Warn for Program {
    fn warn(&self, msg: &dyn Display) {
        Program::warn(self, msg);
    }

    fn say(&self, kind: &str, msg: &dyn Display) {
        self.line(kind, msg);
    }
}

/// The parsed command line: options in the order given, then the operands.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Parsed {
    pub opts: Vec<(char, Option<OsString>)>,
    pub operands: Vec<OsString>,
}

impl Parsed {
    /// Whether the flag was given at least once.
    pub fn has(&self, c: char) -> bool {
        self.opts.iter().any(|(o, _)| *o == c)
    }

    /// The last value given to an option (s6 lets the later one win).
    pub fn value(&self, c: char) -> Option<&OsStr> {
        self.opts
            .iter()
            .rev()
            .find(|(o, _)| *o == c)
            .and_then(|(_, v)| v.as_deref())
    }
}

/// Why a command line was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UsageError {
    Unknown(char),
    MissingValue(char),
}

impl Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UsageError::Unknown(c) => write!(f, "unknown option -{c}"),
            UsageError::MissingValue(c) => write!(f, "option -{c} needs a value"),
        }
    }
}

/// Walk the option prefix POSIX-style (`getopt` with a leading `+`): options stop at the
/// first operand or at `--`. `spec` is getopt's: a letter, followed by `:` if it takes a value.
///
/// The walk keeps the order of the letters (s6-svc's command string depends on it) and
/// keeps operands as raw bytes. getopts then checks the prefix with every option declared
/// repeatable, so the accepted grammar is getopts' own.
pub fn parse(args: impl IntoIterator<Item = OsString>, spec: &str) -> Result<Parsed, UsageError> {
    let takes_value = |c: char| -> Option<bool> {
        let mut chars = spec.chars().peekable();
        while let Some(x) = chars.next() {
            let v = chars.peek() == Some(&':');
            if v {
                chars.next();
            }
            if x == c {
                return Some(v);
            }
        }
        None
    };
    let mut parsed = Parsed::default();
    let mut prefix: Vec<String> = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let bytes = arg.as_bytes();
        if bytes == b"--" {
            break;
        }
        if bytes.len() < 2 || bytes[0] != b'-' {
            parsed.operands.push(arg);
            break;
        }
        prefix.push(String::from_utf8_lossy(bytes).into_owned());
        let mut i = 1;
        while i < bytes.len() {
            let c = bytes[i] as char;
            if !bytes[i].is_ascii() {
                return Err(UsageError::Unknown(c));
            }
            match takes_value(c) {
                None => return Err(UsageError::Unknown(c)),
                Some(false) => parsed.opts.push((c, None)),
                Some(true) => {
                    let value = if i + 1 < bytes.len() {
                        OsStr::from_bytes(&bytes[i + 1..]).to_os_string()
                    } else {
                        let v = args.next().ok_or(UsageError::MissingValue(c))?;
                        prefix.push(String::from_utf8_lossy(v.as_bytes()).into_owned());
                        v
                    };
                    parsed.opts.push((c, Some(value)));
                    break;
                }
            }
            i += 1;
        }
    }
    parsed.operands.extend(args);
    check_with_getopts(&prefix, spec)?;
    Ok(parsed)
}

fn check_with_getopts(prefix: &[String], spec: &str) -> Result<(), UsageError> {
    let mut options = getopts::Options::new();
    options.parsing_style(getopts::ParsingStyle::StopAtFirstFree);
    let mut chars = spec.chars().peekable();
    while let Some(c) = chars.next() {
        let name = c.to_string();
        if chars.peek() == Some(&':') {
            chars.next();
            options.optmulti(&name, "", "", "");
        } else {
            options.optflagmulti(&name, "", "");
        }
    }
    match options.parse(prefix) {
        Ok(m) if m.free.is_empty() => Ok(()),
        Ok(m) => Err(UsageError::Unknown(m.free[0].chars().next().unwrap_or('-'))),
        Err(getopts::Fail::ArgumentMissing(s)) => {
            Err(UsageError::MissingValue(s.chars().next().unwrap_or('-')))
        }
        Err(f) => Err(UsageError::Unknown(
            f.to_string()
                .chars()
                .find(|c| c.is_ascii_alphanumeric())
                .unwrap_or('-'),
        )),
    }
}

/// Parse an unsigned decimal number, digits only (no sign, no spaces).
pub fn parse_uint<T: std::str::FromStr>(s: &OsStr) -> Option<T> {
    let b = s.as_bytes();
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    s.to_str()?.parse().ok()
}

/// Parse a duration option: a decimal number with an optional unit `ms` (the default),
/// `s`, `m` or `h`, as milliseconds (the one grammar, `tend_sys::duration`). None on
/// anything else or on overflow.
pub fn parse_duration_ms(s: &OsStr) -> Option<u64> {
    tend_sys::duration::parse_ms(s.as_bytes(), tend_sys::duration::Bare::Millis)
}

/// Rewrite GNU-style long options (`--name value` or `--name=value`) into the short
/// letters `longs` maps them to, so that [`parse`] sees one grammar (`spec` is the same
/// as [`parse`]'s: it says which letters take a value). Stops at the first operand or at
/// `--`, as [`parse`] does; an unknown long option becomes `-\u{1}`, which no spec
/// accepts.
pub fn expand_long(
    args: impl IntoIterator<Item = OsString>,
    spec: &str,
    longs: &[(&str, char)],
) -> Vec<OsString> {
    let takes_value = |c: char| spec.find(c).is_some_and(|i| spec[i + 1..].starts_with(':'));
    let mut out = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let b = arg.as_bytes();
        if b == b"--" || b.len() < 2 || b[0] != b'-' {
            out.push(arg);
            break;
        }
        if let Some(rest) = b.strip_prefix(b"--") {
            let (name, value) = match rest.iter().position(|&c| c == b'=') {
                Some(i) => (
                    &rest[..i],
                    Some(OsStr::from_bytes(&rest[i + 1..]).to_os_string()),
                ),
                None => (rest, None),
            };
            match longs.iter().find(|(n, _)| n.as_bytes() == name) {
                Some(&(_, c)) => {
                    out.push(OsString::from(format!("-{c}")));
                    match value {
                        Some(v) => out.push(v),
                        None if takes_value(c) => out.extend(args.next()),
                        None => {}
                    }
                }
                None => out.push(OsString::from("-\u{1}")),
            }
            continue;
        }
        // A short bundle: its last value-taking letter may take the next argument.
        let mut value_next = false;
        for (i, &c) in b.iter().enumerate().skip(1) {
            if takes_value(c as char) {
                value_next = i + 1 == b.len();
                break;
            }
        }
        out.push(arg);
        if value_next {
            out.extend(args.next());
        }
    }
    out.extend(args);
    out
}

/// Text for a path in messages: shown as given, lossily if it is not UTF-8.
pub fn shown(p: &OsStr) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(p.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn permuted_as_glibc_getopt() {
        let p = |v: &[&str]| permute(os(v), "c:g:Bt");
        assert_eq!(
            p(&["stop", "-g", "vcap"]),
            os(&["-g", "vcap", "--", "stop"])
        );
        assert_eq!(
            p(&["-gvcap", "stop", "-B"]),
            os(&["-gvcap", "-B", "--", "stop"])
        );
        assert_eq!(
            p(&["status", "-Bc", "f", "x"]),
            os(&["-Bc", "f", "--", "status", "x"])
        );
        assert_eq!(p(&["stop", "--", "-x"]), os(&["--", "stop", "-x"]));
        assert_eq!(p(&["-t"]), os(&["-t"]));
    }

    #[test]
    fn keeps_order_and_operands() {
        let p = parse(os(&["-dk", "-T", "50", "-wu", "dir", "-x"]), "dkwT:w:u").unwrap();
        let letters: Vec<char> = p.opts.iter().map(|o| o.0).collect();
        assert_eq!(letters, vec!['d', 'k', 'T', 'w', 'u']);
        assert_eq!(p.value('T'), Some(OsStr::new("50")));
        assert_eq!(p.operands, os(&["dir", "-x"]));
    }

    #[test]
    fn attached_value_and_double_dash() {
        let p = parse(os(&["-T50", "--", "-d"]), "dT:").unwrap();
        assert_eq!(p.value('T'), Some(OsStr::new("50")));
        assert_eq!(p.operands, os(&["-d"]));
    }

    #[test]
    fn repeated_flag_later_wins() {
        let p = parse(os(&["-t", "1", "-t", "2"]), "t:").unwrap();
        assert_eq!(p.value('t'), Some(OsStr::new("2")));
    }

    #[test]
    fn rejects_unknown_and_missing() {
        assert_eq!(parse(os(&["-z"]), "d"), Err(UsageError::Unknown('z')));
        assert_eq!(parse(os(&["-T"]), "T:"), Err(UsageError::MissingValue('T')));
    }

    #[test]
    fn lone_dash_is_an_operand() {
        let p = parse(os(&["-", "x"]), "d").unwrap();
        assert_eq!(p.operands, os(&["-", "x"]));
    }

    #[test]
    fn durations() {
        let d = |s: &str| parse_duration_ms(OsStr::new(s));
        assert_eq!(d("250"), Some(250));
        assert_eq!(d("250ms"), Some(250));
        assert_eq!(d("10s"), Some(10_000));
        assert_eq!(d("2m"), Some(120_000));
        assert_eq!(d("1h"), Some(3_600_000));
        for bad in ["", "s", "-1", "1.5s", "10 s", "1d", "9999999999999999h"] {
            assert_eq!(d(bad), None, "{bad}");
        }
    }

    #[test]
    fn long_options() {
        let longs = [("tcp", 'P'), ("status", 'C'), ("loop", 'L')];
        let spec = "LP:C:t:";
        let e = expand_long(
            os(&[
                "-t",
                "3",
                "--loop",
                "--tcp",
                "h:1",
                "--status=200",
                "prog",
                "--tcp",
            ]),
            spec,
            &longs,
        );
        assert_eq!(
            e,
            os(&["-t", "3", "-L", "-P", "h:1", "-C", "200", "prog", "--tcp"])
        );
        let e = expand_long(os(&["-Lt", "5", "--tcp", "x", "y"]), spec, &longs);
        assert_eq!(e, os(&["-Lt", "5", "-P", "x", "y"]));
        let e = expand_long(os(&["-t5", "--tcp=x"]), spec, &longs);
        assert_eq!(e, os(&["-t5", "-P", "x"]));
        let e = expand_long(os(&["--nope", "x"]), spec, &longs);
        assert!(parse(e, spec).is_err());
        let e = expand_long(os(&["--", "--tcp"]), spec, &longs);
        assert_eq!(e, os(&["--", "--tcp"]));
    }

    #[test]
    fn uint_is_strict() {
        assert_eq!(parse_uint::<u32>(OsStr::new("42")), Some(42));
        assert_eq!(parse_uint::<u32>(OsStr::new("+4")), None);
        assert_eq!(parse_uint::<u32>(OsStr::new("")), None);
        assert_eq!(parse_uint::<u8>(OsStr::new("300")), None);
    }
}
