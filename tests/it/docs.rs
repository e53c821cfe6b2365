//! Every executable is documented: a man page in man/man8 that groff accepts without a
//! warning, whose SYNOPSIS holds every option letter of the program's usage line, and a
//! row in the README's table. Two house rules are checked here by reading the sources:
//! service-directory names come from proto::servicedir, and every skip is counted.

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

/// Every name of a service directory's files is written once, in
/// crates/proto/src/servicedir.rs (as s6's supervise.h): no other library source spells
/// one as a string literal. Names that are also common words (`run`, `log`, `down`...)
/// count only where a path is built from them (`join("log")`, `push("down")`).
#[test]
fn service_directory_names_come_from_proto_servicedir() {
    // Crates whose helpers move them onto the table in their own branches (issue 33):
    // remove each line once its crate is clean.
    const NOT_YET: [&str; 3] = ["crates/rc/", "crates/monit/", "crates/jobs/"];
    const ANYWHERE: [&str; 10] = [
        "supervise",
        "notification-fd",
        "death_tally",
        "timeout-kill",
        "timeout-finish",
        "down-signal",
        "max-death-tally",
        "lock-fd",
        "restart-policy",
        ".s6-svscan",
    ];
    const IN_PATHS: [&str; 6] = ["run", "finish", "down", "log", "event", "data"];
    let mut found = Vec::new();
    let mut files = Vec::new();
    let mut dirs = vec![root().join("crates")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    for path in files {
        let rel = path
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        // Only library sources (crates/NAME/src/), and not the table itself.
        if rel.split('/').nth(2).is_none_or(|d| d != "src")
            || rel.ends_with("/servicedir.rs")
            || NOT_YET.iter().any(|c| rel.starts_with(c))
        {
            continue;
        }
        let source = std::fs::read_to_string(&path).unwrap();
        for (n, line) in source.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") || code.contains("'\"'") {
                continue;
            }
            // Between the quotes: the odd pieces are string literals' contents.
            let pieces: Vec<&str> = code.split('"').collect();
            for i in (1..pieces.len()).step_by(2) {
                let s = pieces[i];
                let before = pieces[..i].concat();
                let after = pieces.get(i + 1).copied().unwrap_or("");
                let named = ANYWHERE.contains(&s)
                    || s.starts_with("supervise/")
                    || s.starts_with(".s6-svscan/")
                    || s.starts_with("death_tally.");
                let pathed = IN_PATHS.contains(&s)
                    && after.starts_with(')')
                    && (before.contains("join(") || before.contains("push("));
                if named || pathed {
                    found.push(format!("{rel}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "service-directory names written outside proto::servicedir:\n{}",
        found.join("\n")
    );
}

/// Every skip goes through `common::skip`, where `TEND_TEST_REQUIRE_ALL=1` (CI) turns it
/// into a failure: no test prints its own "skipped" line.
#[test]
fn every_skip_goes_through_common_skip() {
    let dir = root().join("tests/it");
    let mut found = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "rs") || p.ends_with("common.rs") {
            continue;
        }
        let source = std::fs::read_to_string(&p).unwrap();
        for (n, line) in source.lines().enumerate() {
            let printed = ["println!(", "eprintln!(", "print!(", "eprint!("]
                .iter()
                .any(|m| line.contains(m));
            // The line itself, or the next one for a call split over lines.
            let next = source.lines().nth(n + 1).unwrap_or("");
            if printed && (line.contains("skipped") || next.trim_start().starts_with("\"skipped")) {
                found.push(format!("{}:{}: {}", p.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "skips printed by hand:\n{}",
        found.join("\n")
    );
}

/// The crate graph, from each crate's Cargo.toml: at most five floors of libraries under
/// the programs (the README draws them), and the arrows that must never be: the scanner
/// does not link the supervisor (it execs tend-supervise), and the clients do not climb
/// over the chain-loaders' crate for the account lookups (tend-account is below both).
#[test]
fn crate_graph_has_five_floors_and_none_of_the_forbidden_arrows() {
    use std::collections::BTreeMap;
    let mut deps: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in std::fs::read_dir(root().join("crates")).unwrap().flatten() {
        let Ok(toml) = std::fs::read_to_string(e.path().join("Cargo.toml")) else {
            continue;
        };
        let name = e.file_name().to_string_lossy().into_owned();
        // Only [dependencies]: a dev-dependency is no floor.
        let section = toml
            .split("\n[")
            .find(|s| s.starts_with("dependencies]"))
            .unwrap_or("");
        let uses = section
            .lines()
            .filter_map(|l| l.trim().strip_prefix("tend-"))
            .filter_map(|l| l.split(['.', ' ', '=']).next())
            .map(String::from)
            .collect();
        deps.insert(name, uses);
    }
    fn floor(n: &str, deps: &BTreeMap<String, Vec<String>>, seen: usize) -> usize {
        assert!(seen < 32, "a cycle through {n}");
        1 + deps[n]
            .iter()
            .map(|d| floor(d, deps, seen + 1))
            .max()
            .unwrap_or(0)
    }
    for n in deps.keys() {
        assert!(
            floor(n, &deps, 0) <= 5,
            "{n} is on floor {}: {deps:?}",
            floor(n, &deps, 0)
        );
    }
    for (from, to) in [("scan", "supervise"), ("client", "env")] {
        assert!(
            !deps[from].iter().any(|d| d == to),
            "{from} -> {to}: {:?}",
            deps[from]
        );
    }
}
