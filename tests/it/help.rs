//! `--help` and `--version` (issue 34 item 13): every program answers them on stdout with
//! exit 0, as its first argument only; the help is its man page's synopsis and options.

use crate::common::*;

/// The option lines of a `--help`: the lines between the summary and the manual pointer.
pub fn option_lines(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.is_empty())
        .filter(|l| l.starts_with("  "))
        .map(|l| l.trim().to_string())
        .collect()
}

#[test]
fn every_program_answers_help_and_version() {
    let version = env!("CARGO_PKG_VERSION");
    for name in binaries() {
        // The multi-call executables list their programs after their options.
        let multicall = name == "tend" || name == "tend-tree";
        let o = tend(&name, ["--help"]);
        assert_code(&o, 0);
        let out = text(&o.stdout);
        assert_eq!(text(&o.stderr), "", "{name} --help wrote to stderr");
        assert!(
            out.starts_with(&format!("usage: {name}")) || name == "tend",
            "{name} --help: {out}"
        );
        assert!(
            out.ends_with(&format!(
                "man 8 {}\n",
                if multicall { "tend-PROG" } else { &name }
            )),
            "{name}: {out}"
        );
        let page = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("man/man8/{name}.8")),
        )
        .unwrap();
        // One line per tagged paragraph of OPTIONS.
        let options = page
            .split("\n.SH OPTIONS\n")
            .nth(1)
            .map(|s| s.split("\n.SH ").next().unwrap_or(""))
            .unwrap_or("");
        let tagged = options.matches(".TP\n").count();
        if !multicall {
            assert_eq!(option_lines(&out).len(), tagged, "{name} --help: {out}");
        }
        let o = tend(&name, ["--version"]);
        assert_code(&o, 0);
        assert_eq!(text(&o.stdout), format!("{name} (tend) {version}\n"));
    }
}

#[test]
fn help_through_the_multicall_name_and_an_s6_name() {
    let o = tend("tend", ["svc", "--help"]);
    assert_code(&o, 0);
    assert!(text(&o.stdout).starts_with("usage: tend-svc "), "{o:?}");
    let o = tend("tend", ["svstat", "--version"]);
    assert_code(&o, 0);
    assert_eq!(
        text(&o.stdout),
        format!("tend-svstat (tend) {}\n", env!("CARGO_PKG_VERSION"))
    );
    // Called as s6-svok (an s6-overlay image's link): tend-svok's answer.
    let s = Scratch::new("help-s6");
    std::os::unix::fs::symlink(multicall(), s.join("s6-svok")).unwrap();
    let o = run({
        let mut c = std::process::Command::new(s.join("s6-svok"));
        c.arg("--help");
        c
    });
    assert_code(&o, 0);
    assert!(text(&o.stdout).starts_with("usage: tend-svok "), "{o:?}");
    // tend-monit as `monit` (packaging/install.sh's link), which monit's users ask.
    std::os::unix::fs::symlink(bin("tend-monit"), s.join("monit")).unwrap();
    let o = run({
        let mut c = std::process::Command::new(s.join("monit"));
        c.arg("--help");
        c
    });
    assert_code(&o, 0);
    assert!(text(&o.stdout).starts_with("usage: tend-monit "), "{o:?}");
    // An init script linked to tend-sv keeps its own answer (sv's LSB usage).
    std::os::unix::fs::symlink(bin("tend-sv"), s.join("svc")).unwrap();
    let o = run({
        let mut c = std::process::Command::new(s.join("svc"));
        c.arg("--help");
        c
    });
    assert_ne!(o.status.code(), Some(0), "{o:?}");
    assert_eq!(text(&o.stdout), "");
}

#[test]
fn tend_help_lists_every_program() {
    let o = tend("tend", ["--help"]);
    assert_code(&o, 0);
    let out = text(&o.stdout);
    for name in binaries().iter().filter(|n| *n != "tend") {
        assert!(
            out.lines()
                .any(|l| l.trim_start().starts_with(&format!("{name} "))),
            "tend --help lacks {name}: {out}"
        );
    }
}

#[test]
fn only_the_first_argument_asks() {
    // A chain tool's program gets its own --help.
    let o = tend(
        "tend-setsid",
        ["sh", "-c", "printf '%s\\n' \"$1\"", "sh", "--help"],
    );
    assert_code(&o, 0);
    assert_eq!(text(&o.stdout), "--help\n");
    let o = tend("tend-envdir", ["/nonexistent", "true", "--version"]);
    assert_code(&o, 111);
    // After an option it is no request (and not an option either): a usage error.
    let o = tend("tend-svc", ["-u", "--help"]);
    assert_ne!(o.status.code(), Some(0), "{o:?}");
    assert_eq!(text(&o.stdout), "");
    // Subcommand programs: the first argument only.
    let o = tend("tend-rc", ["--help"]);
    assert_code(&o, 0);
    assert!(text(&o.stdout).contains("tend-rc init"), "{o:?}");
}

/// Each executable carries the `--help` texts of its own programs only (tend has every
/// page; tend-tree its programs' and tend's summary; tend-monit, tend-jobs and tend-jail
/// their own): tend-tree answers for each of its programs as tend does, and no other
/// program's usage is in its file or in a standalone one.
#[test]
fn each_executable_carries_only_its_programs_pages() {
    let tree = tree_programs();
    // The usage lines (a --help text's first line) that the file holds: one pass over it
    // (a debug build's file is tens of MB; a search per name took minutes).
    let bytes = |p: &std::path::Path| {
        let file = std::fs::read(p).unwrap();
        let mut lines = std::collections::HashSet::new();
        for piece in file.split(|&b| b == b'\n') {
            if let Some(at) = piece.windows(7).position(|w| w == b"usage: ") {
                lines.insert(piece[at..].to_vec());
            }
        }
        lines
    };
    let has =
        |lines: &std::collections::HashSet<Vec<u8>>, usage: &str| lines.contains(usage.as_bytes());
    let tree_file = bytes(tree_multicall());
    for name in &tree {
        let mut c = std::process::Command::new(tree_multicall());
        c.args([name.as_str(), "--help"]);
        let o = run(c);
        assert_code(&o, 0);
        assert_eq!(
            text(&o.stdout),
            text(&tend(name, ["--help"]).stdout),
            "{name}"
        );
    }
    let standalone: Vec<_> = ["tend-monit", "tend-jobs", "tend-jail"]
        .iter()
        .map(|n| (*n, bytes(&bin(n))))
        .collect();
    let mut absent = 0;
    for name in binaries() {
        let usage = text(&tend(&name, ["--help"]).stdout)
            .lines()
            .next()
            .unwrap()
            .to_string();
        assert!(usage.starts_with("usage: "), "{name}: {usage}");
        // tend-tree names tend (its --help's last row), so it holds tend's page too.
        if !tree.contains(&name) && name != "tend-tree" && name != "tend" {
            assert!(!has(&tree_file, &usage), "tend-tree carries {name}'s page");
            absent += 1;
        }
        for (exe, file) in &standalone {
            if *exe != name {
                assert!(!has(file, &usage), "{exe} carries {name}'s page");
            } else {
                assert!(has(file, &usage), "{exe} lacks its own page");
            }
        }
    }
    assert!(absent > 40, "only {absent} programs outside tend-tree");
}
