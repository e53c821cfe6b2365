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
