//! The multi-call executable: every program is reachable by its link name and as
//! `tend PROG`, with the same behaviour, and the dispatch table matches the [[bin]] list.
//! Every other test runs the programs through hard links to the one executable
//! (common::bindir), the form packaging/install.sh installs.
//!
//! Not tested here: the separate executables of `cargo build --features separate` (.ci/run only
//! checks that they compile), and tend-svscan run as `tend svscan` from a directory without
//! the links (it then finds tend-supervise on PATH only).

use crate::common::*;
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::Path;
use std::process::Stdio;

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
    bins.retain(|n| n != "tend" && n != "tend-tree" && !STANDALONE.contains(&n.as_str()));
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
    link_or_copy(multicall(), &other);
    let o = run({
        let mut c = std::process::Command::new(&other);
        c.args(["svok", "-\u{1}"]);
        c
    });
    assert_code(&o, 100);
    assert_eq!(text(&o.stderr), "tend-svok: usage: tend-svok servicedir\n");
}

/// tend-tree holds what a running tree runs, each of them also in `tend`, and runs them
/// by link name and by first argument as `tend` does.
#[test]
fn tend_tree_holds_the_tree_s_programs_each_also_in_tend() {
    let tree = tree_programs();
    let all = listed();
    for p in ["tend-svscan", "tend-supervise", "tend-log"] {
        assert!(
            tree.iter().any(|t| t == p),
            "{p} is not in tend-tree: {tree:?}"
        );
    }
    let mut sorted = tree.clone();
    sorted.sort();
    assert_eq!(tree, sorted, "tend-tree's table is not sorted");
    for p in &tree {
        assert!(all.contains(p), "{p} is in tend-tree, not in tend -l");
        let short = p.strip_prefix("tend-").unwrap();
        let by_link = tend(p, ["-\u{1}"]);
        let by_arg = run({
            let mut c = std::process::Command::new(tree_multicall());
            c.args([short, "-\u{1}"]);
            c
        });
        assert_code(&by_link, 100);
        assert_eq!(text(&by_arg.stderr), text(&by_link.stderr), "{p}");
        assert_eq!(by_arg.status.code(), by_link.status.code(), "{p}");
    }
}

/// A name tend-tree does not hold, by a link (a tend, s6 or runit name) or as the first
/// argument: one line saying so and where to look, exit 100 (a packaging mistake is said,
/// not guessed at).
#[test]
fn tend_tree_refuses_a_program_it_does_not_hold() {
    let scratch = Scratch::new("multicall-tree-refuses");
    let refused = |name: &str| {
        format!(
            "tend-tree: fatal: unable to run {name}: not in this executable \
            (tend-tree -l lists its programs; tend has them all)\n"
        )
    };
    for name in ["tend-rc", "s6-rc", "chpst"] {
        let link = scratch.join(name);
        link_or_copy(tree_multicall(), &link);
        let o = run({
            let mut c = std::process::Command::new(&link);
            c.arg("-l");
            c
        });
        assert_code(&o, 100);
        assert_eq!(text(&o.stderr), refused(name));
        assert_eq!(text(&o.stdout), "", "{name}");
    }
    for first in ["rc", "tend-rc", "nosuch"] {
        let o = run({
            let mut c = std::process::Command::new(tree_multicall());
            c.args([first, "-l"]);
            c
        });
        assert_code(&o, 100);
        assert_eq!(text(&o.stderr), refused(first));
    }
    let o = run(std::process::Command::new(tree_multicall()));
    assert_code(&o, 100);
    assert_eq!(
        text(&o.stderr),
        "tend-tree: usage: tend-tree -l | tend-tree prog [ args... ]\n"
    );
}

/// packaging/links.sh points the tree's names at tend-tree, and a scanner started by its
/// link runs every supervisor and logger from that file: /proc/PID/exe of each is
/// tend-tree's inode (hard links name one file), never tend's.
#[test]
fn a_tree_started_through_links_sh_runs_from_tend_tree() {
    tree_runs_from(tree_multicall(), "multicall-tree-links");
}

/// packaging/cargo-build.sh as packaging/build.sh runs it where the toolchain has std's
/// source: std rebuilt without its backtrace symbolizer. tend-tree, what a running tree
/// maps, then takes no more disk than runit's whole package (its Installed-Size, read from
/// dpkg: issue 39's target), a panic still prints its message, and a tree runs from it.
/// The first build takes a minute or more (std and tend-tree in release, LTO); cargo
/// finds it fresh after that.
#[test]
fn slow_tend_tree_with_std_rebuilt_is_within_runits_size_and_runs_a_tree() {
    let sysroot = run({
        let mut c = std::process::Command::new("rustc");
        c.args(["--print", "sysroot"]);
        c
    });
    assert_code(&sysroot, 0);
    let std_src = Path::new(text(&sysroot.stdout).trim()).join("lib/rustlib/src/rust/library/std");
    if !std_src.is_dir() {
        skip("std's source is not installed (rustup component add rust-src)");
        return;
    }
    let runit = run({
        let mut c = std::process::Command::new("dpkg-query");
        c.args(["-W", "-f", "${Installed-Size}", "runit"]);
        c
    });
    let Some(runit_kib) = text(&runit.stdout)
        .trim()
        .parse::<u64>()
        .ok()
        .filter(|_| runit.status.success())
    else {
        skip("runit is not installed (its package's size is the target)");
        return;
    };
    let o = crate::hostile::run_bounded(
        {
            let mut c = std::process::Command::new(
                Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/cargo-build.sh"),
            );
            c.args(["--bin", "tend-tree"]).env("TEND_STD", "rebuilt");
            c
        },
        std::time::Duration::from_secs(1500),
    );
    assert_code(&o, 0);
    let dir = text(&o.stdout).trim().to_string();
    assert!(
        dir.contains("/std-rebuilt/") && dir.ends_with("/release"),
        "cargo-build.sh printed {dir:?}"
    );
    let tree = Path::new(&dir).join("tend-tree");
    let bytes = std::fs::read(&tree).unwrap();
    assert!(
        bytes.len() as u64 <= runit_kib * 1024,
        "tend-tree with std rebuilt is {} bytes, runit's package {} KiB",
        bytes.len(),
        runit_kib
    );
    let has = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    assert!(has(b"panicked at"), "a panic no longer says what panicked");
    // The symbolizer's own error text and the variable that turns it on are gone.
    assert!(
        !has(b"RUST_BACKTRACE"),
        "std's backtrace printing is still linked"
    );
    tree_runs_from(&tree, "multicall-tree-std-rebuilt");
}

/// packaging/cargo-build.sh refuses, with one line and before building anything, a
/// TEND_STD it does not know (100) and TEND_STD=rebuilt on a toolchain without std's
/// source (111; here a `rustc` whose sysroot has none).
#[test]
fn cargo_build_sh_refuses_an_unknown_tend_std_and_a_missing_std_source() {
    let s = Scratch::new("multicall-cargo-build-sh");
    s.write(
        "fakebin/rustc",
        &format!("#!/bin/sh\necho {}\n", s.join("sysroot").display()),
        true,
    );
    s.write(
        "fakebin/cargo",
        "#!/bin/sh\necho cargo ran >&2\nexit 101\n",
        true,
    );
    for (std, code, message) in [
        (
            "nightly",
            100,
            "cargo-build.sh: fatal: TEND_STD is rebuilt or shipped, not nightly\n",
        ),
        (
            "rebuilt",
            111,
            "cargo-build.sh: fatal: TEND_STD=rebuilt needs std's source: rustup component add rust-src\n",
        ),
    ] {
        let mut c = std::process::Command::new(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/cargo-build.sh"),
        );
        c.env("TEND_STD", std).env(
            "PATH",
            format!("{}:/usr/bin:/bin", s.join("fakebin").display()),
        );
        let o = run(c);
        assert_code(&o, code);
        assert_eq!(text(&o.stderr), message, "TEND_STD={std}");
        assert_eq!(text(&o.stdout), "", "TEND_STD={std}");
    }
}

/// A tree started through packaging/links.sh in a directory holding `tend` and `tree` (as
/// tend-tree) runs its scanner, supervisors and loggers from `tree`.
fn tree_runs_from(tree_exe: &Path, scratch: &str) {
    use std::os::unix::fs::MetadataExt;
    let s = Scratch::new(scratch);
    let bin = s.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for (from, name) in [(multicall(), "tend"), (tree_exe, "tend-tree")] {
        link_or_copy(from, bin.join(name));
    }
    let o = run({
        let mut c = std::process::Command::new(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/links.sh"),
        );
        c.arg(&bin);
        c
    });
    assert_code(&o, 0);
    let ino = |p: &Path| std::fs::metadata(p).map(|m| (m.dev(), m.ino())).ok();
    let tree = ino(&bin.join("tend-tree")).unwrap();
    let whole = ino(&bin.join("tend")).unwrap();
    for name in tree_programs() {
        assert_eq!(ino(&bin.join(&name)), Some(tree), "{name}");
    }
    assert_eq!(ino(&bin.join("tend-rc")), Some(whole));
    let sd = s.join("sd");
    let svc = ServiceDir::new(sd.join("svc"))
        .run("#!/bin/sh\nwhile :; do echo tick; sleep 1; done\n")
        .path();
    let log = ServiceDir::new(svc.join("log"))
        .run("#!/bin/sh\nexec tend-log t ./main\n")
        .path();
    let _kill = KillUnder(s.path.clone());
    let mut c = std::process::Command::new(bin.join("tend-svscan"));
    c.arg(&sd)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let scanner = Daemon::start(c);
    let service = wait_status(&svc, "the service up", is_up).pid as i32;
    let logger = wait_status(&log, "the logger up", is_up).pid as i32;
    // The logger is up once spawned: its ./run (a shell) then execs tend-log.
    let shell = ino(Path::new("/bin/sh"));
    let logger_exe = Path::new("/proc").join(logger.to_string()).join("exe");
    wait_until(PATIENCE, "the logger's run script to exec tend-log", || {
        (ino(&logger_exe) != shell).then_some(())
    });
    let service_supervisor = parent_of(service).unwrap();
    let logger_supervisor = parent_of(logger).unwrap();
    assert_eq!(parent_of(service_supervisor), Some(scanner.pid()));
    assert_eq!(parent_of(logger_supervisor), Some(scanner.pid()));
    for (what, pid) in [
        ("the scanner", scanner.pid()),
        ("the service's supervisor", service_supervisor),
        ("the logger's supervisor", logger_supervisor),
        ("the logger", logger),
    ] {
        let exe = Path::new("/proc").join(pid.to_string()).join("exe");
        assert_eq!(
            ino(&exe),
            Some(tree),
            "{what} (pid {pid}) runs {:?}, not tend-tree",
            std::fs::read_link(&exe)
        );
    }
}

/// A kernel runs `/init` (or `/sbin/init`) by that name and with no arguments: a link
/// named `init` is tend-init.
#[test]
fn a_link_named_init_is_tend_init() {
    let scratch = Scratch::new("multicall-init");
    let init = scratch.join("init");
    link_or_copy(multicall(), &init);
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

/// One defined symbol of the executable (`nm --defined-only -S`).
struct Symbol {
    at: u64,
    size: u64,
    kind: String,
    name: String,
}

fn symbols(exe: &Path) -> Vec<Symbol> {
    let mut c = std::process::Command::new("nm");
    c.args(["--defined-only", "-S"]).arg(exe);
    let o = run(c);
    assert_code(&o, 0);
    text(&o.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            // Without a size nm prints three fields.
            let (at, size, kind, name) = match f[..] {
                [at, size, kind, name] => (at, size, kind, name),
                [at, kind, name] => (at, "0", kind, name),
                _ => return None,
            };
            Some(Symbol {
                at: u64::from_str_radix(at, 16).ok()?,
                size: u64::from_str_radix(size, 16).ok()?,
                kind: kind.to_string(),
                name: name.to_string(),
            })
        })
        .collect()
}

/// The names hot-code.awk matches against hot-code.txt (the symbols fed to it in nm's
/// plain format, as tend-cc feeds it), and its "N of M keys found" report.
fn hot_code_names(symbols: &[Symbol]) -> (HashSet<String>, String) {
    let packaging = Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging");
    let mut c = std::process::Command::new("awk");
    c.args(["-v", "stats=1", "-f"])
        .arg(packaging.join("hot-code.awk"))
        .arg(packaging.join("hot-code.txt"))
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("awk");
    let table: String = symbols
        .iter()
        .map(|s| format!("{:016x} {} {}\n", s.at, s.kind, s.name))
        .collect();
    // Written from a thread: awk writes its output as it reads, and a table larger than a
    // pipe's buffer on both sides would deadlock a write-then-read.
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(table.as_bytes()));
    let o = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert_code(&o, 0);
    let names = text(&o.stdout)
        .lines()
        .filter_map(|l| Some(l.split_once(' ')?.1.to_string()))
        .collect();
    (names, text(&o.stderr))
}

/// The address of each section (`readelf -SW`: "  [ 7] .init  PROGBITS  0000000000…").
fn section_addresses(exe: &Path) -> HashMap<String, u64> {
    let mut c = std::process::Command::new("readelf");
    c.arg("-SW").arg(exe);
    text(&run(c).stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_once(']')?.1.split_whitespace().collect();
            Some((
                f.first()?.to_string(),
                u64::from_str_radix(f.get(2)?, 16).ok()?,
            ))
        })
        .collect()
}

/// The musl build links through packaging/tend-cc: rust-lld, with the functions that
/// packaging/hot-code.txt lists packed at the front of the text (bench/RESULTS.md, "Hot
/// code first"). The list names functions by keys that survive rebuilds
/// (packaging/hot-code.awk); one gone stale (functions renamed or removed, names it can
/// no longer match) would quietly undo the layout. Regenerate it with packaging/hot-code.sh.
#[test]
fn the_executable_is_linked_hot_code_first_from_a_current_list() {
    if !cfg!(target_env = "musl") {
        skip("the hot-code layout is the musl build's (.cargo/config.toml)");
        return;
    }
    assert_linked_hot_code_first(multicall(), 95);
}

/// tend-tree is linked by the same tend-cc, from the same list: what it holds of the
/// listed functions (the tree's own: 492 of the 626 keys when written) comes first in its
/// text too.
#[test]
fn tend_tree_is_linked_hot_code_first_too() {
    if !cfg!(target_env = "musl") {
        skip("the hot-code layout is the musl build's (.cargo/config.toml)");
        return;
    }
    assert_linked_hot_code_first(tree_multicall(), 70);
}

/// `exe` was linked by packaging/tend-cc, holds at least `percent`% of the functions
/// hot-code.txt lists, and has those it holds at the front of its text.
fn assert_linked_hot_code_first(exe: &Path, percent: usize) {
    let mut c = std::process::Command::new("readelf");
    c.args(["-p", ".comment"]).arg(exe);
    let o = run(c);
    assert!(
        text(&o.stdout).contains("Linker: LLD"),
        "{} not linked by packaging/tend-cc: {}",
        exe.display(),
        text(&o.stdout)
    );
    let symbols = symbols(exe);
    let (listed, report) = hot_code_names(&symbols);
    let counts: Vec<usize> = report
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let [found, listed_keys] = counts[..] else {
        panic!("no count from hot-code.awk: {report}")
    };
    assert!(
        listed_keys > 300,
        "hot-code.txt lists only {listed_keys} functions"
    );
    assert!(
        found * 100 >= listed_keys * percent,
        "{}: {report}: run packaging/hot-code.sh",
        exe.display()
    );
    // Code every process runs but callgrind cannot see lies in the text's first 64 kB:
    // musl's .init and .fini (packaging/init-first.ld), strcmp (the vDSO lookup of the
    // first clock_gettime) and _Exit (hot-code.sh's "cannot see" list).
    let sections = section_addresses(exe);
    let section = |name: &str| -> u64 {
        *sections
            .get(name)
            .unwrap_or_else(|| panic!("no {name} section: {sections:?}"))
    };
    let text_start = section(".text");
    assert!(section(".init") < text_start && section(".fini") < text_start);
    for name in ["strcmp", "_Exit"] {
        let at = symbols
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no {name} in the executable"))
            .at;
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
    // A C name several static functions share (musl's `dummy`s) says nothing.
    let mut seen = HashMap::new();
    for s in &symbols {
        *seen.entry(s.name.as_str()).or_insert(0) += 1;
    }
    let (mut total, mut end, mut last) = (0, 0, "");
    for s in symbols
        .iter()
        .filter(|s| listed.contains(&s.name) && seen[s.name.as_str()] == 1)
    {
        total += s.size;
        let ours =
            s.name.contains("tend") || !(s.name.starts_with("_R") || s.name.starts_with("_Z"));
        if ours && s.at + s.size > end {
            (end, last) = (s.at + s.size, &s.name);
        }
    }
    assert!(
        end - text_start <= total + total / 4 + 64 * 1024,
        "{last} ends at {end:#x}: the {total} bytes of listed functions are not all hot"
    );
}

/// The executable under another name: a hard link (one inode, as packaging/links.sh makes
/// them), or a copy where the scratch directory is on another filesystem.
fn link_or_copy(from: &std::path::Path, to: impl AsRef<std::path::Path>) {
    let to = to.as_ref();
    std::fs::hard_link(from, to)
        .or_else(|_| std::fs::copy(from, to).map(|_| ()))
        .unwrap();
}
