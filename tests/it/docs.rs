//! Every executable is documented: a man page in man/man8 that groff accepts without a
//! warning, whose SYNOPSIS holds every option letter of the program's usage line, whose
//! OPTIONS documents every option of the usage and nothing else, with EXAMPLES, and a
//! row in the README's table; and the examples run from a fresh checkout. Three house
//! rules are checked here by reading the sources: service-directory names come from
//! proto::servicedir, supervisors are sent typed commands, and every skip is counted.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

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
                && roff.contains(".SH EXIT STATUS")
                && roff.contains("\n.SH EXAMPLES\n"),
            "{name}.8 sections (EXAMPLES too: issue 34 item 13)"
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

/// Kills every process whose working directory is under the path, on drop.
struct KillUnder(std::path::PathBuf);

impl Drop for KillUnder {
    fn drop(&mut self) {
        kill_under(&self.0);
    }
}

/// A copy of the examples and of what they call in the checkout (packaging/links.sh), and
/// a PATH without tend on it.
fn example_tree(s: &Scratch) -> (std::path::PathBuf, String) {
    let tree = s.join("tree");
    std::fs::create_dir_all(tree.join("packaging")).unwrap();
    let mut c = cmd("cp");
    c.arg("-R").arg(root().join("examples")).arg(&tree);
    assert_code(&run(c), 0);
    std::fs::copy(
        root().join("packaging/links.sh"),
        tree.join("packaging/links.sh"),
    )
    .unwrap();
    // A directory holding tend (/usr/bin once the .deb is installed, on this machine or
    // by a test of the package) is replaced by a copy of it without tend's programs
    // (links to the rest): dropping it would drop sh too.
    let path = std::env::var("PATH").unwrap_or_default();
    let without: Vec<String> = path
        .split(':')
        .filter(|d| !d.is_empty())
        .enumerate()
        .map(|(i, d)| {
            let dir = Path::new(d);
            if !dir.join("tend-svscan").exists() {
                return d.to_string();
            }
            let copy = s.join(format!("path-{i}"));
            std::fs::create_dir_all(&copy).unwrap();
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let name = e.file_name();
                let tend = name
                    .to_str()
                    .is_some_and(|n| n == "tend" || n.starts_with("tend-"));
                if !tend {
                    let _ = std::os::unix::fs::symlink(e.path(), copy.join(&name));
                }
            }
            copy.display().to_string()
        })
        .collect();
    (tree, without.join(":"))
}

/// issue 34 item 10: every example script, run from a copy of the tree with no tend on
/// PATH and no build, says in one line what to do (exit 111); with the build where
/// `cargo build --release` puts it, it finds it (the demo runs; the bosh layout comes up
/// under tend-monit).
#[test]
fn examples_find_the_build_or_say_what_to_do() {
    let s = Scratch::new("examples");
    let _kill = KillUnder(s.path.clone());
    let (tree, path) = example_tree(&s);
    let hint = |o: &std::process::Output, what: &str| {
        assert_code(o, 111);
        let err = text(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{what}: {err}");
        assert!(err.contains("cargo build --release"), "{what}: {err}");
    };
    for script in ["demo.sh", "bosh/try.sh", "chain/try.sh"] {
        let mut c = std::process::Command::new("sh");
        c.arg(tree.join("examples").join(script))
            .arg(s.join(format!("root-{}", script.replace('/', "-"))))
            .env("PATH", &path)
            .env_remove("TEND_BIN")
            .env("TMPDIR", &s.path)
            .current_dir(&s.path);
        hint(&run(c), script);
    }
    // The container image's build, given a directory with no tend in it.
    let mut c = std::process::Command::new("sh");
    c.arg(tree.join("examples/container/build.sh"))
        .arg(s.join("no-build"))
        .env("PATH", &path);
    hint(&run(c), "container/build.sh");
    // The chain's run script, as a supervisor would run it (cwd its directory).
    let mut c = std::process::Command::new(tree.join("examples/chain/run"));
    c.env("PATH", &path)
        .current_dir(tree.join("examples/chain"));
    let o = run(c);
    assert_code(&o, 111);
    // Its stderr is its stdout (`exec 2>&1`), as the logger gets both.
    assert!(text(&o.stdout).contains("try.sh"), "{o:?}");

    // The build where the README's command puts it (hard links to the one under test).
    let release = tree.join("target/x86_64-unknown-linux-musl/release");
    std::fs::create_dir_all(&release).unwrap();
    std::fs::hard_link(multicall(), release.join("tend")).unwrap();
    std::fs::hard_link(bin("tend-monit"), release.join("tend-monit")).unwrap();
    let mut c = std::process::Command::new("timeout");
    c.args(["--preserve-status", "-s", "INT", "5", "sh"])
        .arg(tree.join("examples/demo.sh"))
        .env("PATH", &path)
        .env_remove("TEND_BIN")
        .env("TMPDIR", &s.path)
        .env("TEND_DEMO_EVERY", "1");
    let o = run(c);
    assert_code(&o, 0);
    let out = text(&o.stdout);
    assert!(
        out.contains("status: tick: up (pid "),
        "{out}\n{}",
        text(&o.stderr)
    );
    assert!(out.contains("clean up: rm -rf "), "{out}");
    // bosh: tend-monit found in the build, the layout under it.
    let vcap = s.join("vcap");
    let mut c = std::process::Command::new("sh");
    c.arg(tree.join("examples/bosh/try.sh"))
        .arg(&vcap)
        .env("PATH", &path)
        .env_remove("TEND_BIN")
        .env("TEND_MONIT_PORT", free_port().to_string())
        .current_dir(&s.path)
        .stderr(std::fs::File::create(s.join("try.err")).unwrap());
    let _d = Daemon::start(c);
    wait_until(
        Duration::from_secs(30),
        "the bosh jobs under tend-monit",
        || {
            let mut c = cmd("tend-monit");
            c.arg("-c")
                .arg(vcap.join("var/vcap/monit/monitrc"))
                .arg("-S")
                .arg(vcap.join("run/tend-monit"))
                .arg("summary");
            text(&run(c).stdout).contains("running").then_some(())
        },
    );
    let err = std::fs::read_to_string(s.join("try.err")).unwrap();
    assert!(err.contains("stop and clean up: "), "{err}");
}

/// issue 34 item 10: the syslogd example leaves no socket behind when its tree stops
/// (./finish removes it), so no stale /dev/log refuses every sender afterwards.
#[test]
fn the_syslogd_example_removes_its_socket_when_stopped() {
    let s = Scratch::new("example-syslogd");
    let _kill = KillUnder(s.path.clone());
    let scan = s.join("scan");
    std::fs::create_dir_all(&scan).unwrap();
    let mut c = cmd("cp");
    c.arg("-R")
        .arg(root().join("examples/syslogd/syslogd"))
        .arg(scan.join("syslogd"));
    assert_code(&run(c), 0);
    let sock = s.join("log.sock");
    let mut c = cmd("tend-svscan");
    c.arg(&scan)
        .env("SYSLOG_SOCKET", &sock)
        .current_dir(&s.path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut d = Daemon::start(c);
    wait_until(PATIENCE, "the socket", || sock.exists().then_some(()));
    assert_code(
        &tend(
            "tend-svscanctl",
            [std::ffi::OsStr::new("-t"), scan.as_os_str()],
        ),
        0,
    );
    assert!(d.wait_exit(PATIENCE).is_some(), "the scanner exits");
    assert!(!sock.exists(), "{} left behind", sock.display());
}

/// The library sources (crates/NAME/src/, all depths): each path from the root, and its
/// text.
fn library_sources() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut dirs = vec![root().join("crates")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            let rel = p
                .strip_prefix(root())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if p.extension().is_some_and(|x| x == "rs")
                && rel.split('/').nth(2).is_some_and(|d| d == "src")
            {
                out.push((rel, std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    out
}

/// Supervisors and scanners are sent typed commands (proto's `ControlCommand` and
/// `ScanCommand`), not letters written by hand: outside proto, no library source passes a
/// byte literal to a call that writes a control FIFO (`control::send`'s empty string, which
/// only asks whether a supervisor listens, is no letter). A call's arguments are read up to
/// its closing parenthesis, over as many lines as it takes.
#[test]
fn supervisor_letters_are_sent_typed() {
    const CALLS: [&str; 6] = [
        "control::send(",
        "scanctl::send(",
        "send_letters(",
        "send_in(",
        "send_commands(",
        "send_scan(",
    ];
    let mut found = Vec::new();
    for (rel, source) in library_sources() {
        if rel.starts_with("crates/proto/") {
            continue;
        }
        for call in CALLS {
            for (at, _) in source.match_indices(call) {
                if source[..at].ends_with("fn ") {
                    continue;
                }
                let args = call_arguments(&source[at + call.len()..]);
                let bytes = if call == "control::send(" {
                    args.replace("b\"\"", "")
                } else {
                    args.to_string()
                };
                if bytes.contains("b'") || bytes.contains("b\"") {
                    let line = source[..at].lines().count().max(1);
                    found.push(format!("{rel}:{line}: {call}{}", args.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "control letters written by hand (use ControlCommand or ScanCommand):\n{}",
        found.join("\n")
    );
}

/// The text after a call's opening parenthesis up to its matching closing one.
fn call_arguments(rest: &str) -> &str {
    let mut depth = 0usize;
    for (i, c) in rest.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' if depth == 0 => return &rest[..i],
            ')' | ']' => depth -= 1,
            _ => {}
        }
    }
    rest
}

/// Every name of a service directory's files is written once, in
/// crates/proto/src/servicedir.rs (as s6's supervise.h): no other library source spells
/// one as a string literal. Names that are also common words (`run`, `log`, `down`...)
/// count only where a path is built from them (`join("log")`, `push("down")`).
#[test]
fn service_directory_names_come_from_proto_servicedir() {
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
    // Not the table itself.
    for (rel, source) in library_sources() {
        if rel.ends_with("/servicedir.rs") {
            continue;
        }
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

/// Every function of ours that packaging/hot-code.txt names still exists where its name
/// says: a renamed or moved function drops out of the hot part of the link (tend-cc
/// matches names), and the pages of its new copy cost every long-lived process a 64 kB
/// window of cold text (bench/RESULTS.md, "Hot code, stale"). Only legacy-mangled names
/// of tend's crates are checked: `crate::module::...::function`, the module path read up
/// to the first type or impl; the function must be defined in that module's file (or,
/// for a function nested in another, in the file of the last module found).
/// packaging/hot-code.sh regenerates the list.
#[test]
fn hot_code_names_functions_that_exist() {
    let list = std::fs::read_to_string(root().join("packaging/hot-code.txt")).unwrap();
    let mut stale = Vec::new();
    for key in list.lines() {
        let Some(path) = legacy_path(key) else {
            continue;
        };
        let Some(krate) = path[0].strip_prefix("tend") else {
            continue;
        };
        // The function: the last plain segment (closures and shims come after it).
        let Some(f) = path.iter().rposition(|s| !s.contains('$')) else {
            continue;
        };
        if f == 0 {
            continue;
        }
        let files: Vec<PathBuf> = if krate.is_empty() {
            // The root package: bins/, each program's source a module of `tend`.
            std::fs::read_dir(root().join("bins"))
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .collect()
        } else {
            let src = root().join("crates").join(&krate[1..]).join("src");
            let mut file = src.join("lib.rs");
            let mut dir = src;
            for m in &path[1..f] {
                if !m.starts_with(|c: char| c.is_ascii_lowercase()) || m.contains('$') {
                    break;
                }
                let (plain, nested) = (dir.join(format!("{m}.rs")), dir.join(m).join("mod.rs"));
                file = if plain.exists() {
                    plain
                } else if nested.exists() {
                    nested
                } else {
                    break;
                };
                dir = dir.join(m);
            }
            vec![file]
        };
        let name = &path[f];
        let defined = files.iter().any(|p| {
            std::fs::read_to_string(p).is_ok_and(|s| {
                s.contains(&format!("fn {name}(")) || s.contains(&format!("fn {name}<"))
            })
        });
        if !defined {
            stale.push(format!("{key} ({})", path.join("::")));
        }
    }
    assert!(
        stale.is_empty(),
        "packaging/hot-code.txt names functions that are gone (packaging/hot-code.sh):\n{}",
        stale.join("\n")
    );
}

/// The segments of a legacy-mangled name (`_ZN` then `<length><identifier>`... `E`).
fn legacy_path(key: &str) -> Option<Vec<String>> {
    let mut rest = key.strip_prefix("_ZN")?;
    let mut out = Vec::new();
    while !rest.starts_with('E') {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let n: usize = rest[..digits].parse().ok()?;
        out.push(rest.get(digits..digits + n)?.to_string());
        rest = &rest[digits + n..];
    }
    (!out.is_empty()).then_some(out)
}

/// Every bench script parses under the shell that runs it: its `#!` line's, and for the
/// sourced files (no `#!`) POSIX sh for `.sh` (bench/lib.sh is sourced by the /bin/sh
/// benches: a bash-only line there broke bench/guest.sh and bench/init.sh) and bash for
/// `.bash`.
#[test]
fn bench_scripts_parse_under_their_shells() {
    let mut checked = 0;
    for e in std::fs::read_dir(root().join("bench")).unwrap().flatten() {
        let path = e.path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(ext) = name.rsplit_once('.').map(|(_, x)| x.to_string()) else {
            continue;
        };
        if ext != "sh" && ext != "bash" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let first = text.lines().next().unwrap_or("");
        let shell = match first.strip_prefix("#!") {
            Some(s) if s.contains("bash") => "bash",
            Some(_) => "dash",
            None if ext == "bash" => "bash",
            None => "dash",
        };
        let out = std::process::Command::new(shell)
            .arg("-n")
            .arg(&path)
            .output()
            .unwrap_or_else(|e| panic!("{shell}: {e}"));
        assert!(
            out.status.success(),
            "bench/{name} does not parse under {shell}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        checked += 1;
    }
    assert!(checked > 20, "only {checked} bench scripts found");
}
