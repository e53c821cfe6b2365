//! Every executable is documented: a man page in man/man8 that groff accepts without a
//! warning, whose SYNOPSIS holds every option letter of the program's usage line, and a
//! row in the README's table.

use crate::common::*;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The usage line a program prints for a bad option.
fn usage_of(name: &str) -> String {
    let o = tend(name, ["-\u{1}"]);
    assert_code(&o, 100);
    let err = text(&o.stderr);
    let prefix = format!("{name}: usage: ");
    assert!(
        err.starts_with(&prefix) && err.lines().count() == 1,
        "{name}: {err:?}"
    );
    err[prefix.len()..].trim_end().to_string()
}

#[test]
fn every_binary_has_a_clean_man_page_and_a_readme_row() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    for name in binaries() {
        let page = root().join(format!("man/man8/{name}.8"));
        let roff = std::fs::read_to_string(&page)
            .unwrap_or_else(|_| panic!("{} is missing", page.display()));
        assert!(
            roff.contains(".SH NAME")
                && roff.contains(".SH SYNOPSIS")
                && roff.contains(".SH EXIT STATUS"),
            "{name}.8 sections"
        );
        let mut c = cmd("groff");
        c.args(["-man", "-ww", "-z"]).arg(&page);
        let o = run(c);
        assert_eq!(text(&o.stderr), "", "groff warnings for {name}.8");
        // Every option of the usage appears in the page as \-x or -x (the first letter of
        // each dash word: `-wR` is -w with a value; the area tests check bundles letter by
        // letter).
        let usage = usage_of(&name);
        let letters: Vec<char> = usage
            .split(|c: char| c.is_whitespace() || c == '[' || c == ']' || c == '|')
            .filter_map(|w| w.strip_prefix('-'))
            .filter_map(|w| w.chars().next().filter(char::is_ascii_alphanumeric))
            .collect();
        for l in letters {
            assert!(
                roff.contains(&format!("\\-{l}")) || roff.contains(&format!("-{l}")),
                "{name}.8 lacks -{l} (usage: {usage})"
            );
        }
        assert!(
            readme.contains(&format!("| {name} |")),
            "README has no row for {name}"
        );
    }
}

/// The option letters a usage line or a `--help` option tag names: the character after a
/// single dash that starts a word (`-/ root` is `/`), and with `bundles`, every letter of
/// a word like `-abq`.
fn letters(s: &str, bundles: bool) -> Vec<char> {
    let mut out = Vec::new();
    for w in s.split(|c: char| c.is_whitespace() || "[]|(),".contains(c)) {
        let Some(rest) = w.strip_prefix('-') else {
            continue;
        };
        if rest.starts_with('-') {
            continue;
        }
        let mut chars = rest.chars();
        if let Some(c) = chars.next() {
            out.push(c);
        }
        if bundles && rest.chars().all(|c| c.is_ascii_alphanumeric()) {
            out.extend(chars);
        }
    }
    out
}

/// issue 34 item 13: the usage line (what a usage error prints) names every option the
/// man page's OPTIONS documents, and names no option OPTIONS leaves out.
#[test]
fn usage_lines_name_every_documented_option() {
    let mut wrong = Vec::new();
    for name in binaries() {
        let usage = usage_of(&name);
        let o = tend(&name, ["--help"]);
        assert_code(&o, 0);
        let tags: Vec<String> = crate::help::option_lines(&text(&o.stdout))
            .iter()
            .map(|l| l.split("  ").next().unwrap_or("").to_string())
            .collect();
        let documented: Vec<char> = tags.iter().flat_map(|t| letters(t, false)).collect();
        let in_usage = letters(&usage, true);
        for l in &documented {
            if !in_usage.contains(l) {
                wrong.push(format!(
                    "{name}: -{l} is documented, not in the usage: {usage}"
                ));
            }
        }
        for l in letters(&usage, false) {
            if !documented.contains(&l) {
                wrong.push(format!("{name}: -{l} is in the usage, not in OPTIONS"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
