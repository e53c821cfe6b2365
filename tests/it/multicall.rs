//! The multi-call executable: every program is reachable by its link name and as
//! `tend PROG`, with the same behaviour, and the dispatch table matches the [[bin]] list.
//! Every other test runs the programs through hard links to the one executable
//! (common::bindir), the form packaging/install.sh installs.
//!
//! Not tested here: the separate executables of `cargo build --features separate` (.ci/run only
//! checks that they compile), and tend-svscan run as `tend svscan` from a directory without
//! the links (it then finds tend-supervise on PATH only).

use crate::common::*;

/// The program names `tend -l` prints.
fn listed() -> Vec<String> {
    let o = run({
        let mut c = cmd("tend");
        c.arg("-l");
        c
    });
    assert_code(&o, 0);
    text(&o.stdout).lines().map(str::to_string).collect()
}

#[test]
fn every_bin_is_in_the_dispatch_table_and_nothing_else() {
    let mut bins = binaries();
    bins.retain(|n| n != "tend" && !STANDALONE.contains(&n.as_str()));
    bins.sort();
    assert_eq!(listed(), bins);
}

#[test]
fn a_program_runs_the_same_by_link_name_and_as_first_argument() {
    let scratch = Scratch::new("multicall-same");
    for name in listed() {
        // A usage error: exit 100 and the program's own usage line, both ways.
        let by_link = tend(&name, ["-\u{1}"]);
        let short = name.strip_prefix("tend-").unwrap();
        let by_arg = tend("tend", [short, "-\u{1}"]);
        let by_full_arg = tend("tend", [name.as_str(), "-\u{1}"]);
        assert_code(&by_link, 100);
        assert!(text(&by_link.stderr).starts_with(&format!("{name}: usage: ")));
        for o in [&by_arg, &by_full_arg] {
            assert_eq!(o.status.code(), by_link.status.code(), "{name}");
            assert_eq!(text(&o.stderr), text(&by_link.stderr), "{name}");
        }
    }
    // Operands after the program name reach the program unchanged.
    let missing = scratch.join("nothing-here");
    let o = tend("tend", ["svstat".as_ref(), missing.as_os_str()]);
    let by_link = tend("tend-svstat", [missing.as_os_str()]);
    assert_code(&by_link, 1);
    assert_code(&o, 1);
    assert_eq!(text(&o.stderr), text(&by_link.stderr));
}

#[test]
fn tend_alone_or_with_an_unknown_name_is_a_usage_error() {
    let o = tend("tend", [] as [&str; 0]);
    assert_code(&o, 100);
    assert_eq!(
        text(&o.stderr),
        "tend: usage: tend -l | tend prog [ args... ]\n"
    );
    let o = tend("tend", ["nosuch", "x"]);
    assert_code(&o, 100);
    assert_eq!(text(&o.stderr), "tend: fatal: unknown program: nosuch\n");
    let o = tend("tend", ["-x"]);
    assert_code(&o, 100);
}

#[test]
fn an_unknown_link_name_falls_back_to_the_first_argument() {
    // A copy under another name (as cargo's deps/tend-HASH) still works as `tend PROG`.
    let scratch = Scratch::new("multicall-other-name");
    let other = scratch.join("something-else");
    std::fs::hard_link(multicall(), &other)
        .or_else(|_| std::fs::copy(multicall(), &other).map(|_| ()))
        .unwrap();
    let o = run({
        let mut c = std::process::Command::new(&other);
        c.args(["svok", "-\u{1}"]);
        c
    });
    assert_code(&o, 100);
    assert_eq!(text(&o.stderr), "tend-svok: usage: tend-svok servicedir\n");
}

/// A kernel runs `/init` (or `/sbin/init`) by that name and with no arguments: a link
/// named `init` is tend-init.
#[test]
fn a_link_named_init_is_tend_init() {
    let scratch = Scratch::new("multicall-init");
    let init = scratch.join("init");
    std::fs::hard_link(multicall(), &init)
        .or_else(|_| std::fs::copy(multicall(), &init).map(|_| ()))
        .unwrap();
    let o = run({
        let mut c = std::process::Command::new(&init);
        c.arg("-\u{1}");
        c
    });
    assert_code(&o, 100);
    assert!(
        text(&o.stderr).starts_with("tend-init: usage: tend-init "),
        "{}",
        text(&o.stderr)
    );
}

/// The musl build links through packaging/tend-cc: rust-lld, with the functions that
/// packaging/hot-code.txt lists packed at the front of the text (bench/RESULTS.md, "Hot
/// code first"). The list names functions by keys that survive rebuilds
/// (packaging/hot-code.awk); one gone stale (functions renamed or removed, names it can
/// no longer match) would quietly undo the layout. Regenerate it with packaging/hot-code.sh.
#[test]
fn the_executable_is_linked_hot_code_first_from_a_current_list() {
    if !cfg!(target_env = "musl") {
        eprintln!("skipped: the hot-code layout is the musl build's (.cargo/config.toml)");
        return;
    }
    let mut c = std::process::Command::new("readelf");
    c.args(["-p", ".comment"]).arg(multicall());
    let o = run(c);
    assert!(
        text(&o.stdout).contains("Linker: LLD"),
        "not linked by packaging/tend-cc: {}",
        text(&o.stdout)
    );
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging");
    let mut c = std::process::Command::new("sh");
    c.arg("-c")
        .arg(r#"nm --defined-only "$1" | awk -v stats=1 -f "$2/hot-code.awk" "$2/hot-code.txt" - >/dev/null"#)
        .arg("sh")
        .arg(multicall())
        .arg(&root);
    let o = run(c);
    assert_code(&o, 0);
    let report = text(&o.stderr);
    let counts: Vec<usize> = report
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let [found, listed] = counts[..] else {
        panic!("no count from hot-code.awk: {report}")
    };
    assert!(listed > 300, "hot-code.txt lists only {listed} functions");
    assert!(
        found * 100 >= listed * 95,
        "{report}: run packaging/hot-code.sh"
    );
    // Code every process runs but callgrind cannot see lies in the text's first 64 kB:
    // musl's .init and .fini (packaging/init-first.ld), strcmp (the vDSO lookup of the
    // first clock_gettime) and _Exit (hot-code.sh's "cannot see" list).
    let mut c = std::process::Command::new("readelf");
    c.arg("-SW").arg(multicall());
    let o = run(c);
    let sections = text(&o.stdout);
    // "  [ 7] .init  PROGBITS  000000000029a000 ...": name, type, address.
    let section = |name: &str| -> u64 {
        sections
            .lines()
            .filter_map(|l| l.split_once(']'))
            .map(|(_, rest)| rest.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.first() == Some(&name))
            .and_then(|f| u64::from_str_radix(f.get(2)?, 16).ok())
            .unwrap_or_else(|| panic!("no {name} section: {sections}"))
    };
    let text_start = section(".text");
    assert!(section(".init") < text_start && section(".fini") < text_start);
    let mut c = std::process::Command::new("nm");
    c.arg("--defined-only").arg(multicall());
    let symbols = text(&run(c).stdout);
    for name in ["strcmp", "_Exit"] {
        let at = symbols
            .lines()
            .find(|l| l.ends_with(&format!(" {name}")))
            .and_then(|l| u64::from_str_radix(l.split(' ').next()?, 16).ok())
            .unwrap_or_else(|| panic!("no {name} in the executable"));
        assert!(
            at - text_start < 64 * 1024,
            "{name} at {at:#x}, .text at {text_start:#x}"
        );
    }
    // Every listed function of tend's crates and of musl is in the hot part: none lies
    // past the listed functions' total size (and some slack for what shares their
    // sections) from the start of the text. (std's own functions are ordered only in the
    // release build, where LTO puts them in the objects tend-cc reads; in this one they
    // come from std's rlibs, whose members binutils' nm cannot read.)
    let mut c = std::process::Command::new("sh");
    c.arg("-c")
        .arg(r#"nm --defined-only "$1" | awk -f "$2/hot-code.awk" "$2/hot-code.txt" -"#)
        .arg("sh")
        .arg(multicall())
        .arg(&root);
    let listed: std::collections::HashSet<String> = text(&run(c).stdout)
        .lines()
        .filter_map(|l| Some(l.split_once(' ')?.1.to_string()))
        .collect();
    let mut c = std::process::Command::new("nm");
    c.args(["--defined-only", "-S"]).arg(multicall());
    let symbols = text(&run(c).stdout);
    // A C name several static functions share (musl's `dummy`s) says nothing.
    let mut seen = std::collections::HashMap::new();
    for name in symbols.lines().filter_map(|l| l.split(' ').nth(3)) {
        *seen.entry(name).or_insert(0) += 1;
    }
    let (mut total, mut end, mut last) = (0, 0, String::new());
    for l in symbols.lines() {
        let f: Vec<&str> = l.split(' ').collect();
        let [at, size, _, name] = f[..] else { continue };
        if !listed.contains(name) || seen[name] > 1 {
            continue;
        }
        let (at, size) = (
            u64::from_str_radix(at, 16).unwrap(),
            u64::from_str_radix(size, 16).unwrap(),
        );
        total += size;
        let ours = name.contains("tend") || !(name.starts_with("_R") || name.starts_with("_Z"));
        if ours && at + size > end {
            (end, last) = (at + size, name.to_string());
        }
    }
    assert!(
        end - text_start <= total + total / 4 + 64 * 1024,
        "{last} ends at {end:#x}: the {total} bytes of listed functions are not all hot"
    );
}
