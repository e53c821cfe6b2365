//! A oneshot's `up` and `down`: one command line in execline's syntax, lexed as execlineb
//! lexes it (words, `"..."` with backslash escapes, `#` comments, `{ }` blocks), then
//! turned into steps tend-rc runs itself: `if { A } B` and `foreground { A } B` chains of
//! plain commands. A script using blocks any other way keeps its words and is exec'd as
//! execline would exec it (blocks encoded as execlineb encodes them: a leading space per
//! depth, an empty word to close), which needs execline's programs on PATH.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

/// One lexed word: text, or a `{ }` block of words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Word {
    Text(Vec<u8>),
    Block(Vec<Word>),
}

/// What a step does with its command's exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// `if { ... }`: a non-zero exit ends the script with failure.
    If,
    /// `foreground { ... }`: the exit code is ignored.
    Foreground,
    /// The last command: its exit code is the script's.
    Last,
}

/// A command to spawn and what its exit means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub kind: StepKind,
    pub argv: Vec<OsString>,
}

/// A parsed script: the steps to run in order (none: an empty or comment-only script,
/// which succeeds at once).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Script {
    pub steps: Vec<Step>,
    /// True when the steps are execline's argv (blocks encoded) rather than plain
    /// commands tend-rc interprets: the first word is then an execline program.
    pub execline: bool,
}

/// Lex `text` into words, as execlineb does.
pub fn lex(text: &[u8]) -> Result<Vec<Word>, String> {
    let mut stack: Vec<Vec<Word>> = vec![Vec::new()];
    let mut i = 0;
    let n = text.len();
    while i < n {
        let c = text[i];
        if matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
            i += 1;
            continue;
        }
        if c == b'#' {
            while i < n && text[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        // One word: up to the next unquoted blank.
        let mut word = Vec::new();
        let mut quoted = false;
        let start = i;
        while i < n {
            let c = text[i];
            if !quoted && matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
                break;
            }
            if c == b'"' {
                quoted = !quoted;
                i += 1;
                continue;
            }
            if c == b'\\' {
                i += 1;
                if i >= n {
                    return Err("a backslash at the end of the script".into());
                }
                let e = text[i];
                i += 1;
                if quoted {
                    i = escape(text, i, e, &mut word)?;
                } else {
                    word.push(e);
                }
                continue;
            }
            word.push(c);
            i += 1;
        }
        if quoted {
            return Err("an unterminated \"quoted string\"".into());
        }
        let bare = !text[start..i].contains(&b'"') && !text[start..i].contains(&b'\\');
        if bare && word == b"{" {
            stack.push(Vec::new());
        } else if bare && word == b"}" {
            if stack.len() == 1 {
                return Err("a } without its {".into());
            }
            let block = stack.pop().unwrap_or_default();
            if let Some(top) = stack.last_mut() {
                top.push(Word::Block(block));
            }
        } else if let Some(top) = stack.last_mut() {
            top.push(Word::Text(word));
        }
    }
    if stack.len() != 1 {
        return Err("a { without its }".into());
    }
    Ok(stack.pop().unwrap_or_default())
}

/// A backslash escape inside quotes, `e` the byte after the backslash and `i` the index
/// after it: its byte (if any) pushed to `word`, the index after the escape returned.
fn escape(text: &[u8], mut i: usize, e: u8, word: &mut Vec<u8>) -> Result<usize, String> {
    match e {
        b'\n' => {}
        b'a' => word.push(7),
        b'b' => word.push(8),
        b't' => word.push(b'\t'),
        b'n' => word.push(b'\n'),
        b'v' => word.push(0x0b),
        b'f' => word.push(0x0c),
        b'r' => word.push(b'\r'),
        b'0'..=b'7' => {
            let mut v: u32 = u32::from(e - b'0');
            let mut k = 0;
            while k < 2 && i < text.len() && (b'0'..=b'7').contains(&text[i]) {
                v = v * 8 + u32::from(text[i] - b'0');
                i += 1;
                k += 1;
            }
            word.push(v as u8);
        }
        b'x' => {
            let hex = |b: u8| (b as char).to_digit(16);
            match (
                text.get(i).and_then(|&b| hex(b)),
                text.get(i + 1).and_then(|&b| hex(b)),
            ) {
                (Some(h), Some(l)) => {
                    word.push((h * 16 + l) as u8);
                    i += 2;
                }
                _ => return Err("a bad \\x escape".into()),
            }
        }
        other => word.push(other),
    }
    Ok(i)
}

fn plain(words: &[Word]) -> Option<Vec<OsString>> {
    words
        .iter()
        .map(|w| match w {
            Word::Text(t) => Some(OsString::from_vec(t.clone())),
            Word::Block(_) => None,
        })
        .collect()
}

/// execlineb's encoding of words into one argv: a block's words get one more leading
/// space per depth and the block ends with a word of depth-1 spaces.
fn encode(words: &[Word], depth: usize, out: &mut Vec<OsString>) {
    for w in words {
        match w {
            Word::Text(t) => {
                let mut v = vec![b' '; depth];
                v.extend_from_slice(t);
                out.push(OsString::from_vec(v));
            }
            Word::Block(b) => {
                encode(b, depth + 1, out);
                out.push(OsString::from_vec(vec![b' '; depth]));
            }
        }
    }
}

/// Turn words into steps: `if`/`foreground` chains of plain commands are run by tend-rc;
/// anything else with a block is one execline argv.
pub fn steps(words: &[Word]) -> Script {
    let mut out = Vec::new();
    let mut rest = words;
    loop {
        if rest.is_empty() {
            return Script {
                steps: out,
                execline: false,
            };
        }
        let kind = match &rest[0] {
            Word::Text(t) if t == b"if" => Some(StepKind::If),
            Word::Text(t) if t == b"foreground" => Some(StepKind::Foreground),
            _ => None,
        };
        if let (Some(kind), Some(Word::Block(b))) = (kind, rest.get(1))
            && let Some(argv) = plain(b)
            && !argv.is_empty()
        {
            out.push(Step { kind, argv });
            rest = &rest[2..];
            continue;
        }
        if let Some(argv) = plain(rest) {
            out.push(Step {
                kind: StepKind::Last,
                argv,
            });
            return Script {
                steps: out,
                execline: false,
            };
        }
        // Blocks used some other way: execline's own programs run the whole script.
        let mut argv = Vec::new();
        encode(words, 0, &mut argv);
        return Script {
            steps: vec![Step {
                kind: StepKind::Last,
                argv,
            }],
            execline: true,
        };
    }
}

/// Parse a script's text.
pub fn parse(text: &[u8]) -> Result<Script, String> {
    Ok(steps(&lex(text)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn words_quotes_comments() {
        let s = parse(b"# a comment\n/bin/echo \"a b\" c\\ d \"x\\ty\" # tail\n").unwrap();
        assert_eq!(s.steps.len(), 1);
        assert_eq!(s.steps[0].argv, argv(&["/bin/echo", "a b", "c d", "x\ty"]));
        assert!(!s.execline);
        assert_eq!(parse(b"").unwrap().steps, vec![]);
        assert_eq!(parse(b"# only a comment\n\n").unwrap().steps, vec![]);
    }

    #[test]
    fn if_and_foreground_chains() {
        let s = parse(b"foreground { echo a } if { true } echo b").unwrap();
        assert!(!s.execline);
        let kinds: Vec<StepKind> = s.steps.iter().map(|s| s.kind).collect();
        assert_eq!(
            kinds,
            vec![StepKind::Foreground, StepKind::If, StepKind::Last]
        );
        assert_eq!(s.steps[2].argv, argv(&["echo", "b"]));
        let s = parse(b"if { true }").unwrap();
        assert_eq!(s.steps.len(), 1);
    }

    #[test]
    fn other_blocks_are_execline() {
        let s = parse(b"importas -D x X if { foreground { echo $X } } echo").unwrap();
        assert!(s.execline);
        assert_eq!(
            s.steps[0].argv,
            argv(&[
                "importas",
                "-D",
                "x",
                "X",
                "if",
                " foreground",
                "  echo",
                "  $X",
                " ",
                "",
                "echo"
            ])
        );
    }

    #[test]
    fn bad_scripts() {
        for bad in [&b"echo {"[..], b"echo }", b"echo \"open", b"x \\"] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        // A quoted brace is a word.
        let s = parse(b"echo \"{\" \"}\"").unwrap();
        assert_eq!(s.steps[0].argv, argv(&["echo", "{", "}"]));
    }
}
