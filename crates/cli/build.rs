// `--help` is made from the man pages (man/man8/*.8) at build time: the SYNOPSIS becomes
// the usage, each tagged paragraph of OPTIONS one line (its tag and first sentence), and
// the NAME line the summary that `tend --help` lists. One text, so the page and the
// program cannot tell different stories. Only the roff that our pages use is understood:
// font escapes, the alternating-font macros, .TP/.PP/.IP/.SS/.br, a few named characters.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../man/man8");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut pages: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    pages.retain(|p| p.extension().is_some_and(|e| e == "8"));
    pages.sort();
    // One static per page, so that an executable links only the pages it names (tend-tree
    // its nine, tend-monit its own): the texts are most of the data (~43 kB for all).
    let mut out = String::new();
    let mut all =
        String::from("/// Every page (what `tend` holds).\npub static ALL: &[&Page] = &[\n");
    for page in &pages {
        let Some(name) = page.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        let Ok(roff) = std::fs::read_to_string(page) else {
            continue;
        };
        let help = Help::read(&roff);
        let ident = name.to_uppercase().replace('-', "_");
        writeln!(
            out,
            "pub static {ident}: Page = Page {{ name: {name:?}, summary: {:?}, help: {:?} }};",
            help.summary,
            help.text(name)
        )
        .ok();
        writeln!(all, "    &{ident},").ok();
    }
    all.push_str("];\n");
    out.push_str(&all);
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap_or_default()).join("help.rs");
    if let Err(e) = std::fs::write(&dest, out) {
        panic!("cannot write {}: {e}", dest.display());
    }
}

#[derive(Default)]
struct Help {
    summary: String,
    /// One string per form of the SYNOPSIS (forms are separated by `.br`).
    forms: Vec<String>,
    /// (tag, description) per `.TP` paragraph of OPTIONS.
    options: Vec<(String, String)>,
}

/// Widest tag column before a tag's description moves past it.
const TAG_WIDTH: usize = 22;
/// A description is cut (at a word, with "...") to keep its line within this.
const LINE_WIDTH: usize = 100;

impl Help {
    fn read(roff: &str) -> Help {
        let mut h = Help::default();
        let mut section = "";
        let mut form = String::new();
        let mut tag_next = false;
        let mut in_option = false;
        // Inside .RS/.RE, a tagged paragraph is a value of the option above: indented.
        let mut nested = 0usize;
        for line in roff.lines() {
            if line.starts_with(".\\\"") {
                continue;
            }
            if let Some(s) = line.strip_prefix(".SH ") {
                section = s.trim().trim_matches('"');
                in_option = false;
                continue;
            }
            match section {
                "NAME" => {
                    let t = text(line).unwrap_or_default();
                    if let Some((_, s)) = t.split_once(" - ") {
                        h.summary = s.trim().to_string();
                    }
                }
                "SYNOPSIS" => {
                    if line.starts_with(".br") || line.starts_with(".PP") {
                        push_form(&mut h.forms, &mut form);
                    } else if let Some(t) = text(line) {
                        join(&mut form, &t);
                    }
                }
                "OPTIONS" => {
                    if line.starts_with(".TP") {
                        tag_next = true;
                        in_option = false;
                    } else if tag_next {
                        tag_next = false;
                        let tag = text(line).unwrap_or_default();
                        let tag = if nested > 0 { format!("  {tag}") } else { tag };
                        h.options.push((tag, String::new()));
                        in_option = true;
                    } else if line.starts_with(".RS") {
                        nested += 1;
                        in_option = false;
                    } else if line.starts_with(".RE") {
                        nested = nested.saturating_sub(1);
                        in_option = false;
                    } else if line.starts_with(".SS")
                        || line.starts_with(".PP")
                        || line.starts_with(".IP")
                        || line.starts_with(".nf")
                    {
                        in_option = false;
                    } else if in_option
                        && let Some(t) = text(line)
                        && let Some(last) = h.options.last_mut()
                    {
                        join(&mut last.1, &t);
                    }
                }
                _ => {}
            }
            if section != "SYNOPSIS" && !form.is_empty() {
                push_form(&mut h.forms, &mut form);
            }
        }
        push_form(&mut h.forms, &mut form);
        h
    }

    fn text(&self, name: &str) -> String {
        let mut t = String::new();
        for (i, f) in self.forms.iter().enumerate() {
            let lead = if i == 0 { "usage: " } else { "       " };
            writeln!(t, "{lead}{f}").ok();
        }
        if !self.summary.is_empty() {
            writeln!(t, "{name}: {}", self.summary).ok();
        }
        if !self.options.is_empty() {
            t.push('\n');
        }
        let width = self
            .options
            .iter()
            .map(|(tag, _)| tag.chars().count())
            .filter(|&n| n <= TAG_WIDTH)
            .max()
            .unwrap_or(0);
        for (tag, desc) in &self.options {
            let mut line = format!("  {tag:width$}  ");
            let room = LINE_WIDTH.saturating_sub(line.chars().count()).max(30);
            let desc = desc.split_whitespace().collect::<Vec<_>>().join(" ");
            line.push_str(&cut(&first_sentence(&desc), room));
            writeln!(t, "{}", line.trim_end()).ok();
        }
        writeln!(t, "\nThe manual: man 8 {name}").ok();
        t
    }
}

fn push_form(forms: &mut Vec<String>, form: &mut String) {
    let f = form.trim();
    if !f.is_empty() {
        forms.push(f.to_string());
    }
    form.clear();
}

fn join(to: &mut String, t: &str) {
    if t.is_empty() {
        return;
    }
    if !to.is_empty() && !to.ends_with(' ') {
        to.push(' ');
    }
    to.push_str(t.trim_start());
}

/// The text a line puts on the page, or None for a request that prints nothing.
fn text(line: &str) -> Option<String> {
    let Some(request) = line.strip_prefix('.') else {
        return Some(unescape(line));
    };
    let (name, rest) = request.split_once([' ', '\t']).unwrap_or((request, ""));
    let args = words(rest);
    match name {
        "B" | "I" | "SM" => Some(unescape(&args.join(" "))),
        "BI" | "IB" | "BR" | "RB" | "IR" | "RI" => Some(unescape(&args.concat())),
        _ => None,
    }
}

/// A request's arguments: words, or "quoted strings".
fn words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.next_if(|c| *c == ' ' || *c == '\t').is_some() {}
        let Some(&c) = chars.peek() else {
            return out;
        };
        let mut w = String::new();
        if c == '"' {
            chars.next();
            for c in chars.by_ref() {
                if c == '"' {
                    break;
                }
                w.push(c);
            }
        } else {
            while let Some(c) = chars.next_if(|c| *c != ' ' && *c != '\t') {
                w.push(c);
            }
        }
        out.push(w);
    }
}

fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('f') => {
                chars.next();
            }
            Some('(') => {
                let named: String = chars.by_ref().take(2).collect();
                out.push_str(match named.as_str() {
                    "bu" => "*",
                    "dq" => "\"",
                    "em" | "en" => "-",
                    "aq" => "'",
                    "lq" | "rq" => "\"",
                    "mu" => "x",
                    "->" => "->",
                    "<=" => "<=",
                    ">=" => ">=",
                    _ => "",
                });
            }
            Some('e') => out.push('\\'),
            Some(' ') => out.push(' '),
            Some('-') => out.push('-'),
            Some('&' | ':' | '%') => {}
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// Up to the first full stop that ends a sentence.
fn first_sentence(s: &str) -> String {
    let b = s.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        // "e.g. x" and "s6-svc 2.11." are not ends: a stop followed by a space then a
        // capital, or by the end.
        if c == b'.'
            && (i + 1 == b.len()
                || (b[i + 1] == b' ' && b.get(i + 2).is_some_and(u8::is_ascii_uppercase)))
        {
            return s[..=i].to_string();
        }
    }
    s.to_string()
}

fn cut(s: &str, room: usize) -> String {
    if s.chars().count() <= room {
        return s.to_string();
    }
    let mut out = String::new();
    for w in s.split(' ') {
        if out.chars().count() + w.chars().count() + 4 > room {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    out.push_str(" ...");
    out
}
