//! tend-rc: s6-rc source directories checked (every bad input of issue 24, each one line
//! with its path, exit 1, nothing started), brought up and down over tend-svscan in
//! dependency order, compared with what the real s6-rc 0.5.4.1 did (s6-rc-compile,
//! s6-rc-init, s6-rc -u change, s6-rc-update, under s6-svscan) on the structure of real
//! public trees (tests/rc-sources/), as recorded in tests/rc-record/ (`Record`: its
//! README says how it was made and how to make it again), source changes applied without
//! restarting what did not change, a tend-rc killed mid-transition finished by the next
//! run, pipelines (pairs, chains of three and funnels, lines counted across a restart),
//! 10 000 definitions.
//!
//! Not tested here: an unreadable `up` or source directory (the tests run as root, who
//! reads everything; a FIFO stands in for "cannot be read"), the terminal progress line's
//! look (only that a terminal gets `\r` rewrites, see `progress_on_a_terminal`).

use crate::common::*;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A source tree written from a `.tree` spec (tests/rc-sources/README.md); every script
/// appends `up NAME` / `down NAME` to `log`.
struct Src {
    src: PathBuf,
    log: PathBuf,
    /// name → direct dependencies (as declared; bundles not expanded)
    deps: HashMap<String, Vec<String>>,
    bundles: HashMap<String, Vec<String>>,
    atoms: BTreeSet<String>,
}

fn write(p: &Path, text: &str, exec: bool) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
    if exec {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

impl Src {
    fn new(src: PathBuf, log: PathBuf) -> Src {
        std::fs::create_dir_all(&src).unwrap();
        Src {
            src,
            log,
            deps: HashMap::new(),
            bundles: HashMap::new(),
            atoms: BTreeSet::new(),
        }
    }

    fn file(&self, rel: &str, text: &str) {
        write(&self.src.join(rel), text, false);
    }

    fn script(&self, rel: &str, text: &str) {
        write(&self.src.join(rel), text, true);
    }

    fn record(&self, what: &str, name: &str) -> String {
        format!("echo \"{what} {name}\" >> {}", self.log.display())
    }

    fn deps_of(&mut self, name: &str, deps: &[&str]) {
        for d in deps {
            self.file(&format!("{name}/dependencies.d/{d}"), "");
        }
        self.deps
            .entry(name.to_string())
            .or_default()
            .extend(deps.iter().map(|d| d.to_string()));
    }

    fn oneshot(&mut self, name: &str, deps: &[&str]) {
        self.file(&format!("{name}/type"), "oneshot\n");
        let (up, down) = (self.record("up", name), self.record("down", name));
        self.file(
            &format!("{name}/up"),
            &format!("sh -c \"{}\"\n", up.replace('"', "\\\"")),
        );
        self.file(
            &format!("{name}/down"),
            &format!("sh -c \"{}\"\n", down.replace('"', "\\\"")),
        );
        self.deps_of(name, deps);
        self.atoms.insert(name.into());
    }

    fn barrier(&mut self, name: &str, deps: &[&str]) {
        self.file(&format!("{name}/type"), "oneshot\n");
        self.file(&format!("{name}/up"), "# This file doesn't do anything\n");
        self.deps_of(name, deps);
        self.atoms.insert(name.into());
    }

    fn longrun(&mut self, name: &str, deps: &[&str], exec: &str) {
        self.file(&format!("{name}/type"), "longrun\n");
        self.file(&format!("{name}/notification-fd"), "3\n");
        self.script(
            &format!("{name}/run"),
            &format!(
                "#!/bin/sh\n{}\necho >&3\nexec 3>&-\nexec {exec}\n",
                self.record("up", name)
            ),
        );
        self.script(
            &format!("{name}/finish"),
            &format!("#!/bin/sh\n{}\n", self.record("down", name)),
        );
        self.deps_of(name, deps);
        self.atoms.insert(name.into());
    }

    fn bundle(&mut self, name: &str, members: &[&str]) {
        self.file(&format!("{name}/type"), "bundle\n");
        for m in members {
            self.file(&format!("{name}/contents.d/{m}"), "");
        }
        self.bundles
            .entry(name.to_string())
            .or_default()
            .extend(members.iter().map(|m| m.to_string()));
    }

    fn pipe(&mut self, producer: &str, consumer: &str, pipeline: &str, deps: &[&str], out: &Path) {
        self.longrun(
            producer,
            deps,
            "sh -c 'i=0; while :; do i=$((i+1)); echo line $i; sleep 0.02; done'",
        );
        self.file(
            &format!("{producer}/producer-for"),
            &format!("{consumer}\n"),
        );
        self.longrun(
            consumer,
            &[],
            &format!("sh -c 'exec cat >> {}'", out.display()),
        );
        self.file(
            &format!("{consumer}/consumer-for"),
            &format!("{producer}\n"),
        );
        self.file(
            &format!("{consumer}/pipeline-name"),
            &format!("{pipeline}\n"),
        );
        self.bundles
            .insert(pipeline.into(), vec![producer.into(), consumer.into()]);
    }

    /// Apply a `.tree` spec (tests/rc-sources/README.md).
    fn spec(&mut self, text: &str, out: &Path) {
        for line in text.lines() {
            let w: Vec<&str> = line.split_whitespace().collect();
            if w.is_empty() || w[0].starts_with('#') {
                continue;
            }
            match w[0] {
                "oneshot" => self.oneshot(w[1], &w[2..]),
                "barrier" => self.barrier(w[1], &w[2..]),
                "longrun" => self.longrun(w[1], &w[2..], "sleep 100000"),
                "bundle" => self.bundle(w[1], &w[2..]),
                "pipe" => self.pipe(w[1], w[2], w[3], &w[4..], out),
                "dep" => self.deps_of(w[1], &w[2..]),
                other => panic!("bad spec line {other}"),
            }
        }
    }

    /// Atoms a name stands for.
    fn expand(&self, name: &str) -> Vec<String> {
        match self.bundles.get(name) {
            Some(m) => m.iter().flat_map(|x| self.expand(x)).collect(),
            None => vec![name.to_string()],
        }
    }

    /// Direct dependencies as atoms.
    fn atom_deps(&self, name: &str) -> BTreeSet<String> {
        self.deps
            .get(name)
            .map(|d| d.iter().flat_map(|x| self.expand(x)).collect())
            .unwrap_or_default()
    }

    /// The closure of `names` over dependencies.
    fn closure(&self, names: &[&str]) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        let mut todo: Vec<String> = names.iter().flat_map(|n| self.expand(n)).collect();
        while let Some(n) = todo.pop() {
            if out.insert(n.clone()) {
                todo.extend(self.atom_deps(&n));
            }
        }
        out
    }

    fn lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Every service that logged `up` did so after each of its dependencies that logs
    /// (barriers do not) had logged `up`; each logged once.
    fn check_up_order(&self, who: &str) -> Vec<String> {
        self.check_up_order_of(&self.lines(), who)
    }

    fn check_up_order_of(&self, lines: &[String], who: &str) -> Vec<String> {
        let ups: Vec<&str> = lines.iter().filter_map(|l| l.strip_prefix("up ")).collect();
        let pos: HashMap<&str, usize> = ups.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        assert_eq!(
            pos.len(),
            ups.len(),
            "{who}: a service came up twice: {ups:?}"
        );
        for (i, n) in ups.iter().enumerate() {
            for d in self.logged_deps(n) {
                let at = pos.get(d.as_str()).unwrap_or_else(|| {
                    panic!("{who}: {n} up but its dependency {d} never logged up: {ups:?}")
                });
                assert!(
                    *at < i,
                    "{who}: {n} came up before its dependency {d}: {ups:?}"
                );
            }
        }
        ups.iter().map(|s| s.to_string()).collect()
    }

    /// Dependencies that log, found through barriers (which do not).
    fn logged_deps(&self, name: &str) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        let mut todo: Vec<String> = self.atom_deps(name).into_iter().collect();
        let mut seen = BTreeSet::new();
        while let Some(d) = todo.pop() {
            if !seen.insert(d.clone()) {
                continue;
            }
            if self.logs(&d) {
                out.insert(d);
            } else {
                todo.extend(self.atom_deps(&d));
            }
        }
        out
    }

    fn logs(&self, name: &str) -> bool {
        std::fs::read_to_string(self.src.join(name).join("up"))
            .map(|t| t.contains("echo"))
            .unwrap_or(true)
    }

    /// Every service that logged `down` did so after each of its dependents (that had come
    /// up and log) had logged `down`.
    fn check_down_order(&self, who: &str) -> Vec<String> {
        self.check_down_order_of(&self.lines(), who)
    }

    fn check_down_order_of(&self, lines: &[String], who: &str) -> Vec<String> {
        let downs: Vec<&str> = lines
            .iter()
            .filter_map(|l| l.strip_prefix("down "))
            .collect();
        let pos: HashMap<&str, usize> = downs.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        for (i, n) in downs.iter().enumerate() {
            for other in &self.atoms {
                if self.logged_deps(other).contains(*n)
                    && let Some(&j) = pos.get(other.as_str())
                {
                    assert!(
                        j < i,
                        "{who}: {n} went down before its dependent {other}: {downs:?}"
                    );
                }
            }
        }
        downs.iter().map(|s| s.to_string()).collect()
    }
}

/// Which s6-rc a tree runs under.
enum Side {
    Tend,
    /// An installed s6-rc (the bin directory), under its own s6-svscan: only when recording.
    S6(PathBuf),
}

/// Kept for its drop, which stops the scanner.
enum Scanner {
    Tend { _fleet: Fleet },
    S6 { _daemon: Daemon },
}

/// A live tree: a scanner, and a live directory made by `init` from sources.
struct Tree {
    side: Side,
    _scanner: Scanner,
    scandir: PathBuf,
    live: PathBuf,
    /// s6's side lives in a short directory of its own (removed on drop).
    root: Option<PathBuf>,
}

impl Tree {
    fn tend(sc: &Scratch, sources: &[&Path]) -> Tree {
        Tree::init(sc, Side::Tend, sources)
    }

    fn init(sc: &Scratch, side: Side, sources: &[&Path]) -> Tree {
        match side {
            Side::Tend => {
                let fleet = Fleet::start(sc);
                let live = sc.join("live");
                let mut c = cmd("tend-rc");
                c.arg("init").arg("-l").arg(&live);
                for src in sources {
                    c.arg("-c").arg(src);
                }
                c.arg(&fleet.dir);
                assert_code(&run(c), 0);
                Tree {
                    side,
                    scandir: fleet.dir.clone(),
                    _scanner: Scanner::Tend { _fleet: fleet },
                    live,
                    root: None,
                }
            }
            Side::S6(ref bin) => {
                // s6-rc's oneshot runner listens on a Unix socket in its live directory:
                // the path must fit in sun_path (108 bytes).
                let root = PathBuf::from(format!(
                    "/tmp/rcs6-{}-{}",
                    std::process::id(),
                    rand_suffix()
                ));
                let _ = std::fs::remove_dir_all(&root);
                let scan = root.join("scan");
                std::fs::create_dir_all(&scan).unwrap();
                let mut c = Command::new(bin.join("s6-svscan"));
                // Its execline and s6 commands first (Debian's execline is not on PATH).
                c.env("PATH", with_bin(bin))
                    .arg(&scan)
                    .stdout(std::fs::File::create(sc.join("s6scan.out")).unwrap())
                    .stderr(std::fs::File::create(sc.join("s6scan.err")).unwrap());
                let scanner = Daemon::start(c);
                wait_until(PATIENCE, "s6-svscan", || {
                    scan.join(".s6-svscan/control").exists().then_some(())
                });
                let db = root.join("db");
                let mut c = Command::new(bin.join("s6-rc-compile"));
                c.arg(&db).args(sources);
                assert_code(&run(c), 0);
                let live = root.join("live");
                let mut c = Command::new(bin.join("s6-rc-init"));
                c.arg("-c").arg(&db).arg("-l").arg(&live).arg(&scan);
                assert_code(&run(c), 0);
                Tree {
                    side,
                    _scanner: Scanner::S6 { _daemon: scanner },
                    scandir: scan,
                    live,
                    root: Some(root),
                }
            }
        }
    }

    fn svc(&self, name: &str) -> PathBuf {
        self.scandir.join(name)
    }

    fn servicedir(&self, name: &str) -> PathBuf {
        self.live.join("servicedirs").join(name)
    }

    fn rc(&self, args: &[&str]) -> Output {
        let mut c = match &self.side {
            Side::Tend => cmd("tend-rc"),
            Side::S6(bin) => {
                let mut c = Command::new(bin.join("s6-rc"));
                c.env("PATH", with_bin(bin));
                c
            }
        };
        c.arg("-l").arg(&self.live).args(args);
        run(c)
    }

    /// `rc ARGS list`, without s6-rc's own internal services.
    fn list(&self, args: &[&str]) -> BTreeSet<String> {
        let mut a = args.to_vec();
        a.push("list");
        let o = self.rc(&a);
        assert_code(&o, 0);
        names(&text(&o.stdout))
    }

    /// Move the live tree to `sources`: tend-rc update, or s6-rc-compile beside the live
    /// database then s6-rc-update to it.
    fn update(&self, sources: &[&Path], conv: Option<&Path>, dry: bool) -> Output {
        let c = match &self.side {
            Side::Tend => {
                let mut c = cmd("tend-rc");
                c.arg("-l").arg(&self.live);
                if dry {
                    c.arg("-n");
                }
                c.arg("update");
                if let Some(f) = conv {
                    c.arg("-f").arg(f);
                }
                for s in sources {
                    c.arg("-c").arg(s);
                }
                c
            }
            Side::S6(bin) => {
                let db = self
                    .root
                    .as_ref()
                    .unwrap()
                    .join(format!("db-{}", rand_suffix()));
                let mut c = Command::new(bin.join("s6-rc-compile"));
                c.arg(&db).args(sources);
                assert_code(&run(c), 0);
                let mut c = Command::new(bin.join("s6-rc-update"));
                c.env("PATH", with_bin(bin)).arg("-l").arg(&self.live);
                if dry {
                    c.arg("-n");
                }
                if let Some(f) = conv {
                    c.arg("-f").arg(f);
                }
                c.arg(&db);
                c
            }
        };
        run(c)
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        if let Some(root) = &self.root {
            let _ = self.rc(&["-da", "change"]);
            kill_under(root);
            if !std::thread::panicking() {
                let _ = std::fs::remove_dir_all(root);
            }
        }
    }
}

/// PATH with an installed s6-rc's bin directory first.
fn with_bin(bin: &Path) -> std::ffi::OsString {
    let mut p = bin.as_os_str().to_owned();
    p.push(":");
    p.push(std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()));
    p
}

/// Lines as a set, without s6-rc's internal services (`s6rc-*`).
fn names(out: &str) -> BTreeSet<String> {
    out.lines()
        .filter(|l| !l.starts_with("s6rc-"))
        .map(str::to_string)
        .collect()
}

/// The s6-rc that the record under tests/rc-record/ was made with.
const RECORDED: &str = "0.5.4.1";

/// The real s6-rc's side of a comparison, kept as data in tests/rc-record/VERSION/CASE
/// (`key = value` lines; see its README). With `TEND_RC_RECORD=PREFIX` (an installed
/// s6-rc, PREFIX ending in `s6-rc-VERSION`) the test runs that s6-rc live and rewrites the
/// record instead of reading it.
struct Record {
    path: PathBuf,
    values: std::collections::BTreeMap<String, String>,
    /// The installed s6-rc's bin directory, when recording.
    live: Option<PathBuf>,
    calls: usize,
}

impl Record {
    fn open(case: &str) -> Record {
        Record::open_at(case, RECORDED)
    }

    /// `case` as s6-rc `version` did it.
    fn open_at(case: &str, version: &str) -> Record {
        let recording = std::env::var_os("TEND_RC_RECORD").map(PathBuf::from);
        let live = recording.filter(|p| {
            p.file_name().and_then(|n| n.to_str()) == Some(&format!("s6-rc-{version}"))
        });
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/rc-record")
            .join(version)
            .join(case);
        let mut values = std::collections::BTreeMap::new();
        if live.is_none() {
            let t = std::fs::read_to_string(&path).unwrap_or_else(|e| {
                panic!(
                    "no record {}: {e} (tests/rc-record/README.md)",
                    path.display()
                )
            });
            for l in t.lines() {
                if let Some((k, v)) = l.split_once(" = ") {
                    values.insert(k.to_string(), v.replace("\\n", "\n").replace("\\\\", "\\"));
                }
            }
        }
        Record {
            path,
            values,
            live: live.map(|p| p.join("bin")),
            calls: 0,
        }
    }

    /// The installed s6-rc's bin directory while recording.
    fn live(&self) -> Option<&Path> {
        self.live.as_deref()
    }

    fn side(&self) -> Option<Side> {
        self.live().map(|b| Side::S6(b.to_path_buf()))
    }

    fn set(&mut self, key: &str, value: impl std::fmt::Display) {
        self.values.insert(key.to_string(), value.to_string());
    }

    fn set_lines<S: AsRef<str>>(&mut self, key: &str, lines: impl IntoIterator<Item = S>) {
        let v: Vec<String> = lines.into_iter().map(|l| l.as_ref().to_string()).collect();
        self.set(key, v.join(" "));
    }

    fn get(&self, key: &str) -> &str {
        self.values
            .get(key)
            .unwrap_or_else(|| panic!("{}: no {key:?} recorded", self.path.display()))
    }

    fn code(&self, key: &str) -> i32 {
        self.get(key).parse().unwrap()
    }

    /// A recorded list, in its order.
    fn lines(&self, key: &str) -> Vec<String> {
        self.get(key)
            .split_whitespace()
            .map(str::to_string)
            .collect()
    }

    /// A recorded list of lines.
    fn lines_of(&self, key: &str) -> Vec<String> {
        self.get(key).lines().map(str::to_string).collect()
    }

    fn set_of(&self, key: &str) -> BTreeSet<String> {
        self.lines(key).into_iter().collect()
    }

    /// A key numbered by the order of calls (`compile.1`, `compile.2`, …).
    fn next(&mut self, what: &str) -> String {
        self.calls += 1;
        format!("{what}.{}", self.calls)
    }
}

impl Drop for Record {
    fn drop(&mut self) {
        if self.live.is_none() || std::thread::panicking() {
            return;
        }
        let mut out = String::new();
        for (k, v) in &self.values {
            out += &format!("{k} = {}\n", v.replace('\\', "\\\\").replace('\n', "\\n"));
        }
        std::fs::create_dir_all(self.path.parent().unwrap()).unwrap();
        std::fs::write(&self.path, out).unwrap();
    }
}

fn spec(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/rc-sources")
            .join(name),
    )
    .unwrap()
}

/// Bring `tree` (specs applied in order into one source) up through `top` and down again
/// under tend-rc; the same sets as s6-rc's record of the same tree (`case`), and both
/// orders keep every dependency.
fn same_as_s6rc(case: &str, specs: &[&str], top: &str) {
    let sc = Scratch::new("rc-cmp");
    let _k = KillUnder(sc.path.clone());
    let mk = |who: &str| {
        let mut t = Src::new(sc.join(format!("{who}-src")), sc.join(format!("{who}.log")));
        for sp in specs {
            t.spec(&spec(sp), &sc.join(format!("{who}.out")));
        }
        t
    };
    let mut rec = Record::open(&format!("compare/{case}"));
    if let Some(side) = rec.side() {
        let ss = mk("s6");
        let st = Tree::init(&sc, side, &[&ss.src]);
        assert_code(&st.rc(&["-u", "change", top]), 0);
        rec.set_lines("up-list", st.list(&["-a"]));
        rec.set_lines("up-order", ss.check_up_order("s6-rc"));
        rec.set_lines("listall", names(&text(&st.rc(&["listall", top]).stdout)));
        rec.set_lines("da-list", st.list(&["-da"]));
        assert_code(&st.rc(&["-da", "change"]), 0);
        assert!(st.list(&["-a"]).is_empty());
        rec.set_lines("down-order", ss.check_down_order("s6-rc"));
    }
    let ts = mk("tend");
    // The record's own orders keep every dependency too.
    ts.check_up_order_of(&rec.lines("up-order"), "s6-rc (recorded)");
    ts.check_down_order_of(&rec.lines("down-order"), "s6-rc (recorded)");
    let tt = Tree::tend(&sc, &[&ts.src]);
    let o = tt.rc(&["-u", "change", top]);
    assert_code(&o, 0);
    let tend_up = tt.list(&["-a"]);
    assert_eq!(
        tend_up,
        ts.closure(&[top]),
        "tend-rc brought up the closure of {top}"
    );
    assert_eq!(
        tend_up,
        rec.set_of("up-list"),
        "tend-rc -a list and s6-rc -a list"
    );
    let tend_ups = ts.check_up_order("tend-rc");
    assert_eq!(
        tend_ups.into_iter().collect::<BTreeSet<_>>(),
        rec.set_of("up-order"),
        "the same services ran their up"
    );
    assert_eq!(
        names(&text(&tt.rc(&["listall", top]).stdout)),
        rec.set_of("listall"),
        "listall {top}"
    );
    assert_eq!(tt.list(&["-da"]), rec.set_of("da-list"), "-da list");
    assert_code(&tt.rc(&["-da", "change"]), 0);
    assert!(tt.list(&["-a"]).is_empty());
    let tend_downs = ts.check_down_order("tend-rc");
    assert_eq!(
        tend_downs.into_iter().collect::<BTreeSet<_>>(),
        rec.set_of("down-order"),
        "the same services ran their down"
    );
    // Every longrun's processes are gone.
    for a in &ts.atoms {
        let d = tt.servicedir(a);
        if d.exists() {
            let r = status(&d);
            assert!(r.pid == 0 && !r.finishing, "{a} still up: {r:?}");
        }
    }
    drop(tt);
}

#[test]
fn same_as_s6rc_on_the_linuxserver_base_image() {
    same_as_s6rc("baseimage-alpine", &["baseimage-alpine.tree"], "user");
}

#[test]
fn same_as_s6rc_on_a_layered_image_with_longruns_after_oneshots() {
    same_as_s6rc(
        "baseimage-alpine-nginx",
        &["baseimage-alpine.tree", "baseimage-alpine-nginx.tree"],
        "user",
    );
}

#[test]
fn same_as_s6rc_on_a_logging_pipeline() {
    same_as_s6rc("overlay-logging", &["overlay-logging.tree"], "user");
}

// ---- check: bad input ----

fn check(srcs: &[&Path]) -> Output {
    let mut c = cmd("tend-rc");
    c.arg("check").args(srcs);
    run(c)
}

/// s6-rc-compile's exit code on `srcs` (recorded with its messages, `what` naming the
/// case in the record).
fn s6rc_compile(rec: &mut Record, sc: &Scratch, srcs: &[&Path], what: &str) -> i32 {
    let key = rec.next("compile");
    if let Some(bin) = rec.live() {
        let db = sc.join(format!("db{}", rand_suffix()));
        let mut c = Command::new(bin.join("s6-rc-compile"));
        c.arg(&db).args(srcs);
        let o = run(c);
        rec.set(&format!("{key}.case"), what);
        rec.set(&format!("{key}.stderr"), scrub(sc, &o.stderr));
        rec.set(&key, o.status.code().unwrap_or(-1));
    }
    rec.code(&key)
}

/// A message as recorded: the scratch and /tmp directories of the run that made it
/// named, not spelled.
fn scrub(sc: &Scratch, err: &[u8]) -> String {
    let t = text(err).replace(&sc.path.display().to_string(), "SCRATCH");
    let t = t.replace(
        &format!("/tmp/rcs6-{}-", std::process::id()),
        "/tmp/rcs6-PID-",
    );
    t.trim_end().to_string()
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::SeqCst)
}

/// A bad source: exit 1, every line `tend-rc: fatal: PATH: why` naming `path_part` and
/// containing `why`. `s6` is the exit code s6-rc-compile gave on the same source (the
/// record's; 1: it refuses it too; 111: it fails reading it; 0: it accepts it and tend-rc
/// is stricter, as tend-rc(8) says), or None where it cannot be asked (it would block on
/// a FIFO).
fn bad(
    rec: &mut Record,
    sc: &Scratch,
    srcs: &[&Path],
    path_part: &str,
    why: &str,
    s6: Option<i32>,
) {
    let o = check(srcs);
    assert_code(&o, 1);
    let err = text(&o.stderr);
    assert!(
        err.lines()
            .any(|l| l.starts_with("tend-rc: fatal: ") && l.contains(path_part) && l.contains(why)),
        "want a line with {path_part:?} and {why:?}, got:\n{err}"
    );
    assert!(
        err.lines().all(|l| l.starts_with("tend-rc: fatal: ")),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    if let Some(want) = s6 {
        let code = s6rc_compile(rec, sc, srcs, &format!("{path_part}: {why}"));
        assert_eq!(
            code, want,
            "s6-rc-compile's exit code on the same source ({path_part}: {why})"
        );
    }
}

fn fresh(name: &str) -> (Scratch, Src) {
    let sc = Scratch::new(name);
    let t = Src::new(sc.join("src"), sc.join("log"));
    (sc, t)
}

#[test]
fn check_accepts_the_real_trees() {
    let (sc, mut t) = fresh("rc-good");
    t.spec(&spec("baseimage-alpine.tree"), &sc.join("out"));
    t.spec(&spec("baseimage-alpine-nginx.tree"), &sc.join("out"));
    t.spec(
        &spec("overlay-logging.tree").replace("oneshot base\n", ""),
        &sc.join("out"),
    );
    let o = check(&[&t.src]);
    assert_code(&o, 0);
    assert_eq!(text(&o.stderr), "");
}

#[test]
fn check_names_a_cycle() {
    let mut rec = Record::open("check/check_names_a_cycle");
    let (sc, mut t) = fresh("rc-cycle");
    t.oneshot("a", &["c"]);
    t.oneshot("b", &["a"]);
    t.oneshot("c", &["b"]);
    t.oneshot("ok", &[]);
    bad(
        &mut rec,
        &sc,
        &[&t.src],
        "dependencies.d",
        "dependency cycle: ",
        Some(1),
    );
    let err = text(&check(&[&t.src]).stderr);
    let line = err.lines().find(|l| l.contains("cycle")).unwrap();
    for n in ["a", "b", "c"] {
        assert!(
            line.contains(&format!(" {n} ")) || line.ends_with(&format!(" {n}")),
            "{line}"
        );
    }
    assert_eq!(
        err.lines().filter(|l| l.contains("cycle")).count(),
        1,
        "one cycle, named once: {err}"
    );
}

#[test]
fn check_self_dependency() {
    let mut rec = Record::open("check/check_self_dependency");
    let (sc, mut t) = fresh("rc-self");
    t.oneshot("a", &["a"]);
    bad(
        &mut rec,
        &sc,
        &[&t.src],
        "a/dependencies.d",
        "dependency cycle: a -> a",
        Some(1),
    );
}

#[test]
fn check_missing_dependency() {
    let mut rec = Record::open("check/check_missing_dependency");
    let (sc, mut t) = fresh("rc-missing");
    t.oneshot("a", &["nope"]);
    bad(
        &mut rec,
        &sc,
        &[&t.src],
        "a/dependencies.d/nope",
        "not defined",
        Some(1),
    );
}

#[test]
fn check_up_is_a_directory_or_a_fifo() {
    let mut rec = Record::open("check/check_up_is_a_directory_or_a_fifo");
    let (sc, mut t) = fresh("rc-updir");
    t.oneshot("a", &[]);
    std::fs::remove_file(t.src.join("a/up")).unwrap();
    std::fs::create_dir(t.src.join("a/up")).unwrap();
    bad(&mut rec, &sc, &[&t.src], "a/up", "a directory", Some(111));
    std::fs::remove_dir(t.src.join("a/up")).unwrap();
    nix::unistd::mkfifo(
        &t.src.join("a/up"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    // Never opened: no hang.
    bad(
        &mut rec,
        &sc,
        &[&t.src],
        "a/up",
        "not a regular file but a FIFO",
        None,
    );
}

#[test]
fn check_missing_up_run_contents_type() {
    let mut rec = Record::open("check/check_missing_up_run_contents_type");
    let (sc, mut t) = fresh("rc-missing-files");
    t.oneshot("a", &[]);
    std::fs::remove_file(t.src.join("a/up")).unwrap();
    bad(&mut rec, &sc, &[&t.src], "a/up", "missing", Some(111));
    let (sc, mut t) = fresh("rc-missing-run");
    t.longrun("l", &[], "sleep 1");
    std::fs::remove_file(t.src.join("l/run")).unwrap();
    bad(&mut rec, &sc, &[&t.src], "l/run", "missing", Some(1));
    let (sc, t) = fresh("rc-missing-type");
    t.file("x/up", "true\n");
    bad(&mut rec, &sc, &[&t.src], "x/type", "missing", Some(111));
    let (sc, t) = fresh("rc-missing-contents");
    t.file("b/type", "bundle\n");
    bad(&mut rec, &sc, &[&t.src], "b/contents", "missing", Some(111));
}

#[test]
fn check_dependency_names_with_a_slash_or_a_dot() {
    let mut rec = Record::open("check/check_dependency_names_with_a_slash_or_a_dot");
    let (sc, mut t) = fresh("rc-dotted");
    t.oneshot("x", &[]);
    t.oneshot("a", &[]);
    t.file("a/dependencies", "../x\n");
    bad(
        &mut rec,
        &sc,
        &[&t.src],
        "a/dependencies",
        "a name with a slash: ../x",
        Some(1),
    );
    t.file("a/dependencies", ".x\n");
    bad(
        &mut rec,
        &sc,
        &[&t.src],
        "a/dependencies",
        "a name starting with a dot: .x",
        Some(1),
    );
    // dependencies.d wins over the file: the bad file is not read.
    t.file("a/dependencies.d/x", "");
    assert_code(&check(&[&t.src]), 0);
}

#[test]
fn check_timeout_not_a_number() {
    let mut rec = Record::open("check/check_timeout_not_a_number");
    let (sc, mut t) = fresh("rc-timeout");
    t.oneshot("a", &[]);
    for bad_value in ["10s\n", "-1\n", "\n", "1 2\n"] {
        t.file("a/timeout-up", bad_value);
        bad(
            &mut rec,
            &sc,
            &[&t.src],
            "a/timeout-up",
            "not a number of milliseconds",
            Some(1),
        );
    }
    t.file("a/timeout-up", "250\n");
    t.file("a/timeout-down", "abc");
    bad(
        &mut rec,
        &sc,
        &[&t.src],
        "a/timeout-down",
        "not a number",
        Some(1),
    );
}

#[test]
fn check_source_is_a_fifo_or_missing() {
    let sc = Scratch::new("rc-srcfifo");
    let f = sc.join("fifo");
    nix::unistd::mkfifo(&f, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    let o = check(&[&f]);
    assert_code(&o, 1);
    assert!(
        text(&o.stderr).contains(&format!("{}: not a directory but a FIFO", f.display())),
        "{}",
        text(&o.stderr)
    );
    let o = check(&[&sc.join("nope")]);
    assert_code(&o, 1);
    assert!(
        text(&o.stderr).contains("nope: No such file or directory"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn check_type_of_10_mb_and_other_bad_types() {
    let mut rec = Record::open("check/check_type_of_10_mb_and_other_bad_types");
    let (sc, t) = fresh("rc-type");
    t.file("a/type", &"oneshot".repeat(1_500_000));
    t.file("a/up", "true\n");
    let started = std::time::Instant::now();
    bad(&mut rec, &sc, &[&t.src], "a/type", "too large", Some(1));
    assert!(started.elapsed() < Duration::from_secs(20));
    // s6-rc-compile accepts a second newline; the issue's rule (at most one) is kept.
    for (bad_type, s6) in [
        ("oneshot\r\n", 1),
        ("oneshot\n\n", 0),
        (" oneshot\n", 1),
        ("daemon\n", 1),
        ("", 1),
        ("Oneshot\n", 1),
    ] {
        t.file("a/type", bad_type);
        bad(
            &mut rec,
            &sc,
            &[&t.src],
            "a/type",
            "not oneshot, longrun or bundle",
            Some(s6),
        );
    }
    t.file("a/type", "oneshot");
    assert_code(&check(&[&t.src]), 0);
}

#[test]
fn check_defined_twice_across_sources() {
    let mut rec = Record::open("check/check_defined_twice_across_sources");
    let sc = Scratch::new("rc-twice");
    let mut a = Src::new(sc.join("a"), sc.join("log"));
    let mut b = Src::new(sc.join("b"), sc.join("log"));
    a.oneshot("same", &[]);
    b.oneshot("same", &[]);
    b.oneshot("other", &["same"]);
    bad(
        &mut rec,
        &sc,
        &[&a.src, &b.src],
        "b/same",
        "defined twice",
        Some(1),
    );
}

#[test]
fn check_bundle_containing_itself() {
    let mut rec = Record::open("check/check_bundle_containing_itself");
    let (sc, mut t) = fresh("rc-bundle-self");
    t.oneshot("a", &[]);
    t.bundle("b1", &["a", "b2"]);
    t.bundle("b2", &["b1"]);
    bad(
        &mut rec,
        &sc,
        &[&t.src],
        "contents.d",
        "contains itself",
        Some(1),
    );
}

#[test]
fn check_reserved_prefixes_and_skipped_entries() {
    let mut rec = Record::open("check/check_reserved_prefixes_and_skipped_entries");
    let (sc, mut t) = fresh("rc-reserved");
    t.oneshot("s6rc-mine", &[]);
    bad(
        &mut rec,
        &sc,
        &[&t.src],
        "s6rc-mine",
        "reserved prefix",
        Some(1),
    );
    std::fs::remove_dir_all(t.src.join("s6rc-mine")).unwrap();
    t.oneshot("s6-rc-x", &[]);
    bad(
        &mut rec,
        &sc,
        &[&t.src],
        "s6-rc-x",
        "reserved prefix",
        Some(1),
    );
    std::fs::remove_dir_all(t.src.join("s6-rc-x")).unwrap();
    // Dot entries and non-directories are skipped, as s6-rc-compile skips them.
    t.oneshot(".hidden", &["nope"]);
    t.file("README", "not a service\n");
    t.oneshot("ok", &[]);
    assert_code(&check(&[&t.src]), 0);
    assert_eq!(
        s6rc_compile(&mut rec, &sc, &[&t.src], "dot entries, files"),
        0
    );
}

#[test]
fn check_pipelines() {
    let mut rec = Record::open("check/check_pipelines");
    let (sc, mut t) = fresh("rc-funnel");
    t.pipe("p1", "c", "pl", &[], &sc.join("out"));
    t.longrun("p2", &[], "sleep 1");
    t.file("p2/producer-for", "c\n");
    t.file("c/consumer-for", "p1\np2\n");
    // A funnel (several producers into one pipe), as s6-rc 0.5 allows.
    assert_code(&check(&[&t.src]), 0);
    let (sc, mut t) = fresh("rc-pipe-disagree");
    t.longrun("p", &[], "sleep 1");
    t.file("p/producer-for", "c\n");
    t.longrun("c", &[], "sleep 1");
    bad(
        &mut rec,
        &sc,
        &[&t.src],
        "p/producer-for",
        "does not name p",
        Some(1),
    );
    let (sc, mut t) = fresh("rc-pipe-missing");
    t.longrun("p", &[], "sleep 1");
    t.file("p/producer-for", "nope\n");
    bad(
        &mut rec,
        &sc,
        &[&t.src],
        "p/producer-for",
        "not a defined longrun",
        Some(1),
    );
}

/// s6-overlay ships longruns whose `run` has no exec bit (its syslogd-log's): s6-rc-compile
/// requires only a regular file and copies `run` and `finish` 0755, so they run.
#[test]
fn a_run_without_its_exec_bit_runs_as_under_s6_rc() {
    let mut rec = Record::open("check/a_run_without_its_exec_bit_runs_as_under_s6_rc");
    let (sc, t, tt, _k) = tend_tree("rc-noexec", |t, _| {
        t.longrun("plain", &[], "sleep 1000");
        use std::os::unix::fs::PermissionsExt;
        for f in ["run", "finish"] {
            let p = t.src.join("plain").join(f);
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
    });
    assert_eq!(s6rc_compile(&mut rec, &sc, &[&t.src], "run 0644"), 0);
    assert_code(&check(&[&t.src]), 0);
    assert_code(&tt.rc(&["-u", "change", "plain"]), 0);
    use std::os::unix::fs::PermissionsExt;
    for f in ["run", "finish"] {
        let m = std::fs::metadata(tt.servicedir("plain").join(f)).unwrap();
        assert_eq!(m.permissions().mode() & 0o7777, 0o755, "{f}");
    }
    assert!(is_up(&status(&tt.servicedir("plain"))));
    assert_eq!(t.lines(), ["up plain"]);
}

/// A longrun directory holding three symbolic links to `.`: read once, never followed
/// (s6-rc-compile copies only the files it knows and exits 0), within 256 MiB of address
/// space and a few seconds.
#[test]
fn check_a_longrun_with_links_to_itself() {
    let mut rec = Record::open("check/check_a_longrun_with_links_to_itself");
    let (sc, mut t) = fresh("rc-links");
    t.longrun("loop", &[], "sleep 1000");
    for l in ["a", "b", "c"] {
        std::os::unix::fs::symlink(".", t.src.join("loop").join(l)).unwrap();
    }
    std::os::unix::fs::symlink("..", t.src.join("loop/data-up")).unwrap();
    assert_eq!(s6rc_compile(&mut rec, &sc, &[&t.src], "links to ."), 0);
    let started = std::time::Instant::now();
    let o = run({
        let mut c = Command::new("prlimit");
        c.arg("--as=268435456").arg("--").arg(bin("tend-rc"));
        c.arg("check").arg(&t.src);
        c
    });
    assert_code(&o, 0);
    assert!(started.elapsed() < Duration::from_secs(10));
    // Up, the links are not in its service directory (nor would a walk through them be).
    let f = Fleet::start(&sc);
    let _k = KillUnder(sc.path.clone());
    let live = sc.join("live");
    let o = tend(
        "tend-rc",
        ["init", "-l", s(&live), "-c", s(&t.src), s(&f.dir)],
    );
    assert_code(&o, 0);
    assert!(!live.join("servicedirs/loop/a").exists());
}

/// The numbers of `prefix N` lines in `file`, in order; only complete lines (the writer
/// may be in the middle of one).
fn numbered(file: &Path, prefix: &str) -> Vec<u64> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .split_inclusive('\n')
        .filter_map(|l| l.strip_suffix('\n')?.strip_prefix(prefix)?.parse().ok())
        .collect()
}

/// A chain of three (a → b → c) and a funnel (p1 and p2 → f) brought up by s6-rc and by
/// tend-rc: every line arrives at the end of the pipeline, and a restart of the middle
/// service loses none (the pipes are held across restarts: s6-rc's fd holder, tend-rc's
/// FIFOs that every side opens read-write).
/// `b` of the pipeline test: prefixes each line with "b ", never dropping a line it has
/// begun to read (perl-base is essential on Debian, as sh is).
const B_LINES: &str = r#"perl -e '$SIG{TERM} = sub { $t = 1 }; $| = 1; my $l = "";
while (1) {
    exit 0 if $t && $l eq "";
    my $n = sysread(STDIN, my $c, 1);
    if (!defined $n) { next if $!{EINTR}; die "b: $!\n" }
    exit 0 if $n == 0;
    $l .= $c;
    if ($c eq "\n") { print "b $l"; $l = "" }
}'"#;

#[test]
fn long_pipelines_and_funnels_same_as_s6rc() {
    let sc = Scratch::new("rc-long-pipes");
    let mut t = Src::new(sc.join("src"), sc.join("log"));
    let counter = |what: &str| {
        format!("sh -c 'i=0; while :; do i=$((i+1)); echo {what} $i; sleep 0.01; done'")
    };
    t.longrun("a", &[], &counter("line"));
    t.file("a/producer-for", "b\n");
    // b must not lose a line of its own when restarted: a shell killed between its `read`
    // and its `echo` drops the line it holds (under s6-rc too), which is not the pipe's
    // loss under test. So b reads a byte at a time and, on SIGTERM, finishes the line it
    // has begun before it exits.
    t.longrun("b", &[], B_LINES);
    t.file("b/consumer-for", "a\n");
    t.file("b/producer-for", "c\n");
    let out = sc.join("chain.out");
    t.longrun("c", &[], &format!("sh -c 'exec cat >> {}'", out.display()));
    t.file("c/consumer-for", "b\n");
    t.file("c/pipeline-name", "chain\n");
    t.longrun("p1", &[], &counter("one"));
    t.file("p1/producer-for", "f\n");
    t.longrun("p2", &[], &counter("two"));
    t.file("p2/producer-for", "f\n");
    let fout = sc.join("funnel.out");
    t.longrun("f", &[], &format!("sh -c 'exec cat >> {}'", fout.display()));
    t.file("f/consumer-for", "p1\np2\n");
    t.file("f/pipeline-name", "funnel\n");
    assert_code(&check(&[&t.src]), 0);
    let run_both = |who: &str, up: &dyn Fn() -> Output, restart_b: &dyn Fn()| {
        let _ = std::fs::remove_file(&out);
        let _ = std::fs::remove_file(&fout);
        assert_code(&up(), 0);
        wait_until(PATIENCE, "chain lines", || {
            (numbered(&out, "b line ").len() >= 20).then_some(())
        });
        wait_until(PATIENCE, "funnel lines", || {
            (numbered(&fout, "one ").len() >= 5 && numbered(&fout, "two ").len() >= 5).then_some(())
        });
        let before = numbered(&out, "b line ").len();
        restart_b();
        wait_until(PATIENCE, "chain lines after b's restart", || {
            (numbered(&out, "b line ").len() >= before + 30).then_some(())
        });
        let got = numbered(&out, "b line ");
        let first = got[0];
        let want: Vec<u64> = (first..first + got.len() as u64).collect();
        assert_eq!(
            got, want,
            "{who}: every line once, in order, across b's restart"
        );
        for p in ["one ", "two "] {
            let n = numbered(&fout, p);
            let want: Vec<u64> = (n[0]..n[0] + n.len() as u64).collect();
            assert_eq!(n, want, "{who}: the funnel's {p}lines");
        }
    };
    let mut rec = Record::open("compare/long_pipelines_and_funnels");
    if let Some(side) = rec.side() {
        let s6 = Tree::init(&sc, side, &[&t.src]);
        run_both(
            "s6-rc",
            &|| s6.rc(&["-u", "change", "chain", "funnel"]),
            &|| {
                let o = run({
                    let mut c = Command::new("s6-svc");
                    c.arg("-t").arg(s6.servicedir("b"));
                    c
                });
                assert_code(&o, 0);
            },
        );
        // run_both held every line across b's restart.
        rec.set("lines-kept", "yes");
        b_ready("s6-svwait", &s6.servicedir("b"));
        rec.set_lines("up-list", s6.list(&["-a"]));
        drop(s6);
    }
    assert_eq!(rec.get("lines-kept"), "yes");
    let ours = Tree::tend(&sc, &[&t.src]);
    run_both(
        "tend-rc",
        &|| ours.rc(&["-u", "change", "chain", "funnel"]),
        &|| {
            let b = ours.svc("b");
            assert_code(
                &crate::common::tend("tend-svc", ["-t", b.to_str().unwrap()]),
                0,
            )
        },
    );
    b_ready("tend-svwait", &ours.svc("b"));
    assert_eq!(ours.list(&["-a"]), rec.set_of("up-list"), "tend-rc -a list");
}

/// Wait until b is up and ready again. Its quick restart waits out the supervisor's 1 s
/// between starts, and the lines held meanwhile flow before its readiness is read.
fn b_ready(svwait: &str, dir: &Path) {
    let mut c = if svwait == "s6-svwait" {
        Command::new(svwait)
    } else {
        cmd(svwait)
    };
    c.args(["-U", "-t", "10000"]).arg(dir);
    assert_code(&run(c), 0);
}

#[test]
fn check_reports_every_problem_at_once() {
    let (sc, mut t) = fresh("rc-many");
    t.oneshot("a", &["missing1"]);
    t.oneshot("b", &["missing2"]);
    t.file("c/type", "nonsense\n");
    t.oneshot("d", &[]);
    t.file("d/timeout-up", "x\n");
    let o = check(&[&t.src]);
    assert_code(&o, 1);
    let err = text(&o.stderr);
    for part in ["missing1", "missing2", "c/type", "d/timeout-up"] {
        assert!(err.contains(part), "{part} not reported:\n{err}");
    }
    assert_eq!(err.lines().count(), 4, "{err}");
    let _ = sc;
}

#[test]
fn a_bad_source_starts_nothing() {
    let (sc, mut t) = fresh("rc-bad-init");
    let _k = KillUnder(sc.path.clone());
    t.oneshot("a", &["b"]);
    t.oneshot("b", &["a"]);
    t.longrun("l", &[], "sleep 100");
    let f = Fleet::start(&sc);
    let live = sc.join("live");
    let o = tend(
        "tend-rc",
        ["init", "-l", s(&live), "-c", s(&t.src), s(&f.dir)],
    );
    assert_code(&o, 1);
    assert!(
        text(&o.stderr).contains("dependency cycle"),
        "{}",
        text(&o.stderr)
    );
    assert!(!live.exists(), "nothing created");
    assert_eq!(
        std::fs::read_dir(&f.dir).unwrap().count(),
        1,
        "only .s6-svscan in the scan dir"
    );
    assert!(!t.log.exists());
}

#[test]
fn usage_and_live_errors() {
    let sc = Scratch::new("rc-usage");
    for args in [
        &[][..],
        &["frobnicate"],
        &["-x", "change"],
        &["check"],
        &["init"],
        &["-t", "soon", "change"],
    ] {
        let o = tend("tend-rc", args);
        assert_code(&o, 100);
        assert!(
            text(&o.stderr).starts_with("tend-rc: usage: tend-rc check"),
            "{}",
            text(&o.stderr)
        );
    }
    let o = tend(
        "tend-rc",
        ["-l", s(&sc.join("nolive")), "-u", "change", "x"],
    );
    assert_code(&o, 4);
    assert!(
        text(&o.stderr).contains("not a tend-rc live directory"),
        "{}",
        text(&o.stderr)
    );
    // init without a scanner: 111, the scan directory named.
    let mut t = Src::new(sc.join("src"), sc.join("log"));
    t.oneshot("a", &[]);
    std::fs::create_dir_all(sc.join("noscan")).unwrap();
    let o = tend(
        "tend-rc",
        [
            "init",
            "-l",
            s(&sc.join("live")),
            "-c",
            s(&t.src),
            s(&sc.join("noscan")),
        ],
    );
    assert_code(&o, 111);
    assert!(
        text(&o.stderr).contains("no scanner runs on"),
        "{}",
        text(&o.stderr)
    );
}

// ---- the engine ----

/// A tend tree over a fresh source, with a scratch that kills what is left.
fn tend_tree(
    name: &str,
    build: impl FnOnce(&mut Src, &Scratch),
) -> (Scratch, Src, Tree, KillUnder) {
    let sc = Scratch::new(name);
    let k = KillUnder(sc.path.clone());
    let mut t = Src::new(sc.join("src"), sc.join("log"));
    build(&mut t, &sc);
    let tt = Tree::tend(&sc, &[&t.src]);
    (sc, t, tt, k)
}

/// tend-init's way: its own internal definitions in one source, the image's in another,
/// read as their union; `top` (internal) holds the image's `user` bundle.
/// `tend-rc init` again over a live directory whose tree runs: refused with 111 as
/// s6-rc-init 0.5.4.1 refuses (recorded), one line; what is up stays up, the longrun
/// keeps its process and the oneshot its recorded state.
#[test]
fn init_over_a_live_directory_in_use_is_refused() {
    let mut rec = Record::open("compare/init_twice");
    let build = |t: &mut Src| {
        t.oneshot("once", &[]);
        t.longrun("daemon", &["once"], "sleep 1000");
    };
    if let Some(side) = rec.side() {
        let sc = Scratch::new("rc-init-twice-s6");
        let _k = KillUnder(sc.path.clone());
        let mut t = Src::new(sc.join("src"), sc.join("log"));
        build(&mut t);
        let st = Tree::init(&sc, side, &[&t.src]);
        assert_code(&st.rc(&["-u", "change", "daemon"]), 0);
        let Side::S6(bin) = &st.side else {
            unreachable!()
        };
        let root = st.root.clone().unwrap();
        let o = run({
            let mut c = Command::new(bin.join("s6-rc-init"));
            c.arg("-c").arg(root.join("db")).arg("-l").arg(&st.live);
            c.arg(&st.scandir);
            c
        });
        rec.set("init-again", o.status.code().unwrap_or(-1));
        rec.set("init-again.stderr", scrub(&sc, &o.stderr));
        let o = st.rc(&["-a", "list"]);
        rec.set("list-after.code", o.status.code().unwrap_or(-1));
        rec.set("list-after.stderr", scrub(&sc, &o.stderr));
        rec.set_lines("list-after", names(&text(&o.stdout)));
        let status_file = st.servicedir("daemon").join("supervise/status");
        rec.set("daemon-status-readable", status_file.exists());
    }
    let (_sc, t, tt, _k) = tend_tree("rc-init-twice", |t, _| build(t));
    assert_code(&tt.rc(&["-u", "change", "daemon"]), 0);
    let pid = status(&tt.servicedir("daemon")).pid;
    let o = tend(
        "tend-rc",
        ["init", "-l", s(&tt.live), "-c", s(&t.src), s(&tt.scandir)],
    );
    assert_code(&o, rec.code("init-again"));
    let err = text(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("in use"), "{err}");
    assert_eq!(status(&tt.servicedir("daemon")).pid, pid, "not restarted");
    // s6-rc-init 0.5.4.1 refused, but left the live directory unusable (the record's
    // list-after.code): tend-rc's stays as it was.
    assert_eq!(
        tt.list(&["-a"]),
        ["daemon", "once"].map(String::from).into(),
        "the recorded state kept"
    );
    assert_eq!(t.lines(), ["up once", "up daemon"], "nothing ran again");
}

/// The live directory a container kept across a restart (its /run not a tmpfs): a new
/// scanner runs on the scan directory, nothing of the old tree does. That one is not in
/// use, and `tend-rc init` replaces it, so the container boots again.
#[test]
fn init_over_the_live_directory_of_a_scanner_gone_replaces_it() {
    let sc = Scratch::new("rc-init-restart");
    let _k = KillUnder(sc.path.clone());
    let mut t = Src::new(sc.join("src"), sc.join("log"));
    t.oneshot("once", &[]);
    t.longrun("daemon", &["once"], "sleep 1000");
    let scan = sc.join("scan");
    std::fs::create_dir_all(&scan).unwrap();
    let start = || {
        let mut c = cmd("tend-svscan");
        c.arg(&scan);
        Daemon::start(c)
    };
    let live = sc.join("live");
    let init = || {
        tend(
            "tend-rc",
            ["init", "-l", s(&live), "-c", s(&t.src), s(&scan)],
        )
    };
    // tend-init waits for its scanner to listen before it runs tend-rc init.
    let listening = || {
        wait_until(PATIENCE, "the scanner listens", || {
            tend("tend-svscanctl", ["-a", s(&scan)])
                .status
                .success()
                .then_some(())
        })
    };
    let mut first = start();
    listening();
    assert_code(&init(), 0);
    let rc = |args: &[&str]| {
        let mut c = cmd("tend-rc");
        c.arg("-l").arg(&live).args(args);
        run(c)
    };
    assert_code(&rc(&["-u", "change", "daemon"]), 0);
    // The "container" stops: every process of the tree is gone.
    first.signal(nix::sys::signal::Signal::SIGKILL);
    first.wait_exit(PATIENCE);
    kill_under(&sc.path);
    let _second = start();
    listening();
    let o = init();
    assert_code(&o, 0);
    let o = rc(&["-a", "list"]);
    assert_code(&o, 0);
    assert_eq!(text(&o.stdout), "", "a fresh tree: everything down");
    assert_code(&rc(&["-u", "change", "daemon"]), 0);
    assert_eq!(
        t.lines().iter().filter(|l| *l == "up once").count(),
        2,
        "the oneshot ran again in the new boot"
    );
}

/// The tree of `reload_as_s6_rc_0_7`: `conf` (a oneshot whose reload logs), `bad` (whose
/// reload exits 3), `quiet` (no reload script), `hup` (a longrun that logs SIGHUP),
/// `usr1` (its reload-signal USR1), `idle` (never brought up, with s6-rc 0.7's flags).
fn reload_tree(t: &mut Src) {
    let log = t.log.display().to_string();
    for (name, script) in [
        ("conf", format!("sh -c \"echo reload conf >> {log}\"\n")),
        ("bad", "sh -c \"exit 3\"\n".to_string()),
    ] {
        t.oneshot(name, &[]);
        t.file(&format!("{name}/reload"), &script);
    }
    t.oneshot("quiet", &[]);
    let trapping = |sig: &str, name: &str| {
        format!("sh -c 'trap \"echo {sig} {name} >> {log}\" {sig}; while :; do sleep 0.05; done'")
    };
    t.longrun("hup", &[], &trapping("HUP", "hup"));
    t.longrun("usr1", &[], &trapping("USR1", "usr1"));
    t.file("usr1/reload-signal", "USR1\n");
    // Never up: under s6 2.15 its run would be PID 1 of its own namespace.
    t.longrun("idle", &[], "sleep 1000");
    for f in ["flag-newpidns", "flag-timeout-killpg", "flag-recommended"] {
        t.file(&format!("idle/{f}"), "");
    }
}

/// `tend-rc reload` as s6-rc 0.7.0.0's `s6-rc reload` (recorded): a oneshot runs its
/// `reload` script, a longrun gets its reload signal (SIGHUP, or its `reload-signal`),
/// nothing else runs; a failing reload script exits 1, a service that is down is left
/// alone (exit 0), a name not defined exits as s6-rc's does. s6-rc-compile 0.7's flags: `flag-newpidns`, `flag-timeout-killpg` and
/// `reload-signal` are in the service directory, `flag-recommended` is not.
#[test]
fn reload_as_s6_rc_0_7() {
    let mut rec = Record::open_at("compare/reload", "0.7.0.0");
    let all = ["-u", "change", "conf", "bad", "quiet", "hup", "usr1"];
    let reload = |t: &Tree, src: &Src, names: &[&str], rec: &mut Record, key: &str| {
        let n = src.lines().len();
        let mut a = vec!["reload"];
        a.extend(names);
        let o = t.rc(&a);
        if t.root.is_some() {
            rec.set(key, o.status.code().unwrap_or(-1));
            let pid_dir = format!("/tmp/rcs6-{}-", std::process::id());
            let err = text(&o.stderr).replace(&pid_dir, "/tmp/rcs6-PID-");
            rec.set(&format!("{key}.stderr"), err.trim_end());
        }
        assert_code(&o, rec.code(key));
        o.status.code().filter(|&c| c == 0).map(|_| n)
    };
    let logged = |src: &Src, n: usize, want: usize| {
        wait_until(PATIENCE, "the reloads logged", || {
            let l = lines_after(src, n);
            (l.len() >= want).then_some(l)
        })
    };
    if let Some(side) = rec.side() {
        let sc = Scratch::new("rc-reload-s6");
        let _k = KillUnder(sc.path.clone());
        let mut t = Src::new(sc.join("src"), sc.join("log"));
        reload_tree(&mut t);
        let st = Tree::init(&sc, side, &[&t.src]);
        assert_code(&st.rc(&all), 0);
        wait_until(PATIENCE, "up", || (t.lines().len() >= 5).then_some(()));
        let n = reload(
            &st,
            &t,
            &["conf", "quiet", "hup", "usr1"],
            &mut rec,
            "reload-good",
        )
        .unwrap();
        let mut got = logged(&t, n, 3);
        got.sort();
        rec.set("reload-good.lines", got.join("\n"));
        reload(&st, &t, &["bad"], &mut rec, "reload-bad");
        reload(&st, &t, &["idle"], &mut rec, "reload-down");
        reload(&st, &t, &["nosuch"], &mut rec, "reload-unknown");
        let mut files: Vec<String> = std::fs::read_dir(st.servicedir("idle"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|f| f.starts_with("flag-") || f == "reload-signal")
            .collect();
        files.sort();
        rec.set_lines("idle-flags", files);
        let usr1 = std::fs::read_to_string(st.servicedir("usr1").join("reload-signal"));
        rec.set("usr1-reload-signal", usr1.unwrap_or_default().trim());
    }
    let (_sc, t, tt, _k) = tend_tree("rc-reload", |t, _| reload_tree(t));
    assert_code(&tt.rc(&all), 0);
    wait_until(PATIENCE, "up", || (t.lines().len() >= 5).then_some(()));
    let hup_pid = status(&tt.servicedir("hup")).pid;
    let n = reload(
        &tt,
        &t,
        &["conf", "quiet", "hup", "usr1"],
        &mut rec,
        "reload-good",
    )
    .expect("reload exits 0");
    let mut got = logged(&t, n, 3);
    got.sort();
    assert_eq!(got, rec.lines_of("reload-good.lines"), "what reloaded");
    assert_eq!(
        status(&tt.servicedir("hup")).pid,
        hup_pid,
        "signalled, not restarted"
    );
    let n = t.lines().len();
    reload(&tt, &t, &["bad"], &mut rec, "reload-bad");
    reload(&tt, &t, &["idle"], &mut rec, "reload-down");
    reload(&tt, &t, &["nosuch"], &mut rec, "reload-unknown");
    assert!(lines_after(&t, n).is_empty(), "nothing else ran");
    let mut files: Vec<String> = std::fs::read_dir(tt.servicedir("idle"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.starts_with("flag-") || f == "reload-signal")
        .collect();
    files.sort();
    assert_eq!(
        files,
        rec.lines("idle-flags"),
        "the flags in the service directory"
    );
    let usr1 = std::fs::read_to_string(tt.servicedir("usr1").join("reload-signal")).unwrap();
    assert_eq!(usr1.trim(), rec.get("usr1-reload-signal"));
}

#[test]
fn two_sources_read_as_their_union() {
    let sc = Scratch::new("rc-union");
    let _k = KillUnder(sc.path.clone());
    let log = sc.join("log");
    let mut internal = Src::new(sc.join("internal"), log.clone());
    let mut image = Src::new(sc.join("image"), log.clone());
    internal.oneshot("base", &[]);
    image.oneshot("init-app", &["base"]);
    image.longrun("svc-app", &["init-app"], "sleep 1000");
    image.bundle("user", &["init-app", "svc-app"]);
    internal.bundle("top", &["base", "user"]);
    let tt = Tree::tend(&sc, &[&internal.src, &image.src]);
    assert_code(&tt.rc(&["-u", "change", "top"]), 0);
    assert_eq!(
        tt.list(&["-a"]),
        ["base", "init-app", "svc-app"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    );
    assert_eq!(
        internal.lines(),
        vec!["up base", "up init-app", "up svc-app"]
    );
    assert_code(&tt.rc(&["-da", "change"]), 0);
    assert_eq!(
        internal.lines()[3..].to_vec(),
        vec!["down svc-app", "down init-app", "down base"]
    );
}

#[test]
fn unknown_names_exit_3_and_nothing_changes() {
    let (_sc, _t, tt, _k) = tend_tree("rc-unknown", |t, _| t.oneshot("a", &[]));
    let o = tt.rc(&["-u", "change", "a", "nope"]);
    assert_code(&o, 3);
    assert!(text(&o.stderr).contains("unknown service name: nope"));
    assert!(tt.list(&["-a"]).is_empty());
}

#[test]
fn a_failure_fails_only_its_dependents() {
    let (_sc, t, tt, _k) = tend_tree("rc-fail", |t, _| {
        t.oneshot("base", &[]);
        t.oneshot("bad", &["base"]);
        t.file("bad/up", "sh -c \"exit 3\"\n");
        t.oneshot("after-bad", &["bad"]);
        t.longrun("after-after", &["after-bad"], "sleep 1000");
        t.oneshot("fine", &["base"]);
        t.longrun("daemon", &["fine"], "sleep 1000");
        t.longrun("broken", &["base"], "sleep 1000");
        // A run that cannot be spawned (its interpreter is missing).
        t.script("broken/run", "#!/nonexistent/sh\nexec sleep 1000\n");
        t.bundle("all", &["after-after", "daemon", "broken"]);
    });
    let o = tt.rc(&["-u", "change", "all"]);
    assert_code(&o, 1);
    let err = text(&o.stderr);
    assert_eq!(
        tt.list(&["-a"]),
        ["base", "daemon", "fine"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    );
    let last: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("tend-rc: fatal: "))
        .collect();
    assert!(
        last.iter()
            .any(|l| l.contains("bad failed") && l.contains("bad/up exited 3")),
        "{err}"
    );
    assert!(
        last.iter()
            .any(|l| l.contains("after-bad failed") && l.contains("dependency bad")),
        "{err}"
    );
    assert!(
        last.iter().any(|l| l.contains("broken failed")
            && l.contains("unable to spawn")
            && l.contains("broken/run")),
        "the longrun's spawn error is named: {err}"
    );
    assert!(
        err.lines().last().unwrap().starts_with("tend-rc: fatal: "),
        "the last lines name the failures: {err}"
    );
    // The broken longrun was sent down again.
    let r = status(&tt.live.join("servicedirs/broken"));
    assert!(!r.want_up, "{r:?}");
    t.check_up_order("tend-rc");
}

#[test]
fn oneshot_timeout_kills_and_fails() {
    let (_sc, _t, tt, _k) = tend_tree("rc-timeout-up", |t, _| {
        t.oneshot("slow", &[]);
        t.file("slow/up", "sleep 1000\n");
        t.file("slow/timeout-up", "300\n");
        t.oneshot("next", &["slow"]);
    });
    let started = std::time::Instant::now();
    let o = tt.rc(&["-u", "change", "next"]);
    assert_code(&o, 1);
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(
        text(&o.stderr).contains("slow failed: ")
            && text(&o.stderr).contains("timed out after 300 ms"),
        "{}",
        text(&o.stderr)
    );
    assert!(tt.list(&["-a"]).is_empty());
    // The sleep is gone.
    let left = procs_under(&tt.live);
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn longrun_not_ready_in_time_fails_and_is_sent_down() {
    let (_sc, _t, tt, _k) = tend_tree("rc-lr-timeout", |t, _| {
        t.longrun("never-ready", &[], "sleep 1000");
        t.script("never-ready/run", "#!/bin/sh\nexec sleep 1000\n");
        t.file("never-ready/timeout-up", "300\n");
    });
    let o = tt.rc(&["-u", "change", "never-ready"]);
    assert_code(&o, 1);
    assert!(
        text(&o.stderr).contains("never-ready failed: not ready after 300 ms"),
        "{}",
        text(&o.stderr)
    );
    wait_status(&tt.live.join("servicedirs/never-ready"), "down", |r| {
        r.pid == 0
    });
}

#[test]
fn empty_and_comment_only_up_succeed_and_scripts_run_without_execline() {
    let (sc, _t, tt, _k) = tend_tree("rc-scripts", |t, sc| {
        t.barrier("comment", &[]);
        t.file("empty/type", "oneshot\n");
        t.file("empty/up", "");
        t.file("chain/type", "oneshot\n");
        let out = sc.join("chain.out");
        t.file(
            "chain/up",
            &format!(
                "# words, quotes, blocks\nforeground {{ /bin/sh -c \"echo one >> {0}\" }}\nif {{ /bin/true }}\n/bin/sh -c \"echo \\\"two  three\\\" >> {0}\"\n",
                out.display()
            ),
        );
        t.file("chain/dependencies.d/comment", "");
        t.file("chain/dependencies.d/empty", "");
        t.file("stops/type", "oneshot\n");
        t.file(
            "stops/up",
            "if { /bin/false } /bin/sh -c \"echo never >> /dev/null\"\n",
        );
        t.file("needs-execline/type", "oneshot\n");
        t.file(
            "needs-execline/up",
            "importas -D x X if { foreground { echo $X } } echo\n",
        );
    });
    let o = tt.rc(&["-u", "change", "chain"]);
    assert_code(&o, 0);
    assert_eq!(
        std::fs::read_to_string(sc.join("chain.out")).unwrap(),
        "one\ntwo  three\n"
    );
    let o = tt.rc(&["-u", "change", "stops"]);
    assert_code(&o, 1);
    assert!(
        text(&o.stderr).contains("stops/up exited 1"),
        "{}",
        text(&o.stderr)
    );
    // An execline script with no execline on PATH: a clear error naming the file.
    let mut c = cmd("tend-rc");
    c.env("PATH", bindir())
        .arg("-l")
        .arg(&tt.live)
        .args(["-u", "change", "needs-execline"]);
    let o = run(c);
    assert_code(&o, 1);
    assert!(
        text(&o.stderr)
            .contains("needs-execline/up: uses execline (importas), which is not installed"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(
        tt.list(&["-a"]),
        ["chain", "comment", "empty"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    );
}

#[test]
fn oneshot_output_goes_to_tend_rc_output() {
    let (_sc, _t, tt, _k) = tend_tree("rc-output", |t, _| {
        t.file("hello/type", "oneshot\n");
        t.file(
            "hello/up",
            "/bin/sh -c \"echo to-stdout; echo to-stderr >&2\"\n",
        );
    });
    let o = tt.rc(&["-u", "change", "hello"]);
    assert_code(&o, 0);
    assert!(text(&o.stdout).contains("to-stdout"));
    assert!(text(&o.stderr).contains("to-stderr"));
    assert!(
        text(&o.stderr).contains("tend-rc: info: hello up"),
        "one plain line per service off a terminal: {}",
        text(&o.stderr)
    );
}

#[test]
fn essential_services_need_force() {
    let (_sc, _t, tt, _k) = tend_tree("rc-essential", |t, _| {
        t.oneshot("core", &[]);
        t.file("core/flag-essential", "");
        t.oneshot("app", &["core"]);
    });
    assert_code(&tt.rc(&["-u", "change", "app"]), 0);
    assert_code(&tt.rc(&["-da", "change"]), 0);
    assert_eq!(tt.list(&["-a"]), ["core".to_string()].into_iter().collect());
    assert_code(&tt.rc(&["-Da", "change"]), 0);
    assert!(tt.list(&["-a"]).is_empty());
}

#[test]
fn prune_and_dry_run() {
    let (_sc, t, tt, _k) = tend_tree("rc-prune", |t, _| {
        t.oneshot("a", &[]);
        t.oneshot("b", &["a"]);
        t.oneshot("c", &[]);
    });
    let o = tt.rc(&["-n", "-u", "change", "b", "c"]);
    assert_code(&o, 0);
    let plan = text(&o.stdout);
    assert!(
        plan.find("start a").unwrap() < plan.find("start b").unwrap(),
        "{plan}"
    );
    assert!(plan.contains("start c"));
    assert!(tt.list(&["-a"]).is_empty(), "a dry run changes nothing");
    assert_code(&tt.rc(&["-u", "change", "b", "c"]), 0);
    assert_code(&tt.rc(&["-pu", "change", "c"]), 0);
    assert_eq!(tt.list(&["-a"]), ["c".to_string()].into_iter().collect());
    let downs: Vec<String> = t
        .lines()
        .into_iter()
        .filter(|l| l.starts_with("down"))
        .collect();
    assert_eq!(downs, vec!["down b", "down a"]);
    // A dry run over a changed source says what the update would do, and does none of it.
    std::fs::remove_dir_all(t.src.join("b")).unwrap();
    t.file("c/up", "true\n");
    t.file("d/type", "oneshot\n");
    t.file("d/up", "true\n");
    let o = tt.rc(&["-n", "-u", "change", "d"]);
    assert_code(&o, 0);
    assert_eq!(
        text(&o.stdout),
        "remove b\nupdate c\nadd d\nstart d\n",
        "the plan over a changed source"
    );
    assert_eq!(tt.list(&["-a"]), ["c".to_string()].into_iter().collect());
    let defs = std::fs::read_to_string(tt.live.join("defs")).unwrap();
    assert!(
        defs.lines().any(|l| l.ends_with(" b/a")) && !defs.lines().any(|l| l.ends_with(" d")),
        "the live definitions are as before the dry run:\n{defs}"
    );
}

#[test]
fn a_second_run_sees_the_state_and_does_nothing() {
    let (_sc, t, tt, _k) = tend_tree("rc-idem", |t, _| {
        t.oneshot("a", &[]);
        t.longrun("l", &["a"], "sleep 1000");
        // A longrun's down and log/ in the source are ignored, as s6-rc-compile ignores them.
        t.file("l/down", "");
        t.script("l/log/run", "#!/bin/sh\nexec cat\n");
    });
    assert_code(&tt.rc(&["-u", "change", "l"]), 0);
    let pid = status(&tt.live.join("servicedirs/l")).pid;
    let o = tt.rc(&["-u", "change", "l"]);
    assert_code(&o, 0);
    assert_eq!(status(&tt.live.join("servicedirs/l")).pid, pid);
    assert_eq!(t.lines(), vec!["up a", "up l"]);
    // The s6 tools see the tree: the longrun is linked into the scan directory.
    assert!(tt.svc("l").join("supervise/status").exists());
    assert!(!tt.live.join("servicedirs/l/log").exists());
}

#[test]
fn source_changes_apply_without_restarting_what_did_not_change() {
    let (_sc, mut t, tt, _k) = tend_tree("rc-update", |t, _| {
        t.oneshot("setup", &[]);
        t.longrun("keep", &["setup"], "sleep 1000");
        t.longrun("gone", &[], "sleep 1000");
        t.oneshot("gone-oneshot", &[]);
        t.bundle("top", &["keep", "gone", "gone-oneshot"]);
    });
    assert_code(&tt.rc(&["-u", "change", "top"]), 0);
    let keep_pid = status(&tt.live.join("servicedirs/keep")).pid;
    // Remove two services, add one, change keep's run in place, add a dependency.
    std::fs::remove_dir_all(t.src.join("gone")).unwrap();
    std::fs::remove_dir_all(t.src.join("gone-oneshot")).unwrap();
    std::fs::remove_dir_all(t.src.join("top")).unwrap();
    t.oneshot("new", &[]);
    t.longrun("added", &["new"], "sleep 1000");
    t.bundle("top", &["keep", "added"]);
    t.file("keep/data/x", "changed data\n");
    let o = tt.rc(&["-u", "change", "top"]);
    assert_code(&o, 0);
    assert_eq!(
        status(&tt.live.join("servicedirs/keep")).pid,
        keep_pid,
        "keep not restarted"
    );
    assert_eq!(
        std::fs::read_to_string(tt.live.join("servicedirs/keep/data/x")).unwrap(),
        "changed data\n"
    );
    assert_eq!(
        tt.list(&["-a"]),
        ["added", "keep", "new", "setup"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    );
    assert!(!tt.live.join("servicedirs/gone").exists());
    assert!(std::fs::symlink_metadata(tt.svc("gone")).is_err());
    let lines = t.lines();
    assert!(
        lines.contains(&"down gone-oneshot".to_string()),
        "the removed oneshot's recorded down ran: {lines:?}"
    );
    assert!(lines.contains(&"down gone".to_string()), "{lines:?}");
    // keep gains a dependency on a down service: it is restarted after it.
    t.oneshot("later", &[]);
    t.deps_of("keep", &["later"]);
    assert_code(&tt.rc(&["-u", "change", "top"]), 0);
    let new_pid = status(&tt.live.join("servicedirs/keep")).pid;
    assert_ne!(new_pid, keep_pid, "keep restarted after its new dependency");
    let lines = t.lines();
    let at = |l: &str| lines.iter().rposition(|x| x == l).unwrap();
    assert!(at("up later") < at("up keep"), "{lines:?}");
}

#[test]
fn killed_mid_transition_the_next_run_finishes() {
    let (sc, t, tt, _k) = tend_tree("rc-killed", |t, sc| {
        t.oneshot("first", &[]);
        let gate = sc.join("gate");
        t.file(
            "slow/up",
            &format!(
                "/bin/sh -c \"echo up slow >> {}; while ! test -e {}; do sleep 0.05; done\"\n",
                t.log.display(),
                gate.display()
            ),
        );
        t.file("slow/type", "oneshot\n");
        t.file("slow/dependencies.d/first", "");
        t.longrun("daemon", &["slow"], "sleep 1000");
    });
    let mut c = cmd("tend-rc");
    c.arg("-l")
        .arg(&tt.live)
        .args(["-u", "change", "daemon"])
        .stderr(std::process::Stdio::null());
    let mut d = Daemon::start(c);
    wait_until(PATIENCE * 3, "slow to start", || {
        t.lines().contains(&"up slow".to_string()).then_some(())
    });
    d.signal(nix::sys::signal::Signal::SIGKILL);
    d.wait_exit(PATIENCE);
    // Its oneshot child too, as a container stop would (they run in LIVE; the
    // supervisors run in LIVE/servicedirs/NAME and stay).
    for pid in procs_under(&tt.live) {
        if std::fs::read_link(format!("/proc/{pid}/cwd"))
            .ok()
            .as_deref()
            == Some(tt.live.as_path())
        {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
    assert_eq!(
        tt.list(&["-a"]),
        ["first".to_string()].into_iter().collect(),
        "the true state"
    );
    std::fs::write(sc.join("gate"), "").unwrap();
    let o = tt.rc(&["-u", "change", "daemon"]);
    assert_code(&o, 0);
    assert_eq!(
        tt.list(&["-a"]),
        ["daemon", "first", "slow"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    );
    let lines = t.lines();
    assert_eq!(
        lines.iter().filter(|l| *l == "up first").count(),
        1,
        "{lines:?}"
    );
    // Killed once a longrun was sent up: the next run sees it up from its supervisor and
    // leaves it running.
    assert_code(&tt.rc(&["-d", "change", "daemon"]), 0);
    let mut c = cmd("tend-rc");
    c.arg("-l")
        .arg(&tt.live)
        .args(["-u", "change", "daemon"])
        .stderr(std::process::Stdio::null());
    let mut d = Daemon::start(c);
    let dir = tt.live.join("servicedirs/daemon");
    let r = wait_status(&dir, "daemon up and ready", |r| r.pid != 0 && r.ready);
    d.signal(nix::sys::signal::Signal::SIGKILL);
    d.wait_exit(PATIENCE);
    assert!(tt.list(&["-a"]).contains("daemon"));
    assert_code(&tt.rc(&["-u", "change", "daemon"]), 0);
    assert_eq!(status(&dir).pid, r.pid, "not restarted");
}

#[test]
fn a_second_tend_rc_on_the_same_live_fails_at_once() {
    let (sc, _t, tt, _k) = tend_tree("rc-lock", |t, sc| {
        let gate = sc.join("gate");
        t.file("slow/type", "oneshot\n");
        t.file(
            "slow/up",
            &format!(
                "/bin/sh -c \"while ! test -e {}; do sleep 0.05; done\"\n",
                gate.display()
            ),
        );
    });
    let mut c = cmd("tend-rc");
    c.arg("-l").arg(&tt.live).args(["-u", "change", "slow"]);
    let mut d = Daemon::start(c);
    wait_until(PATIENCE, "the first run to hold the lock", || {
        tend_proto::lock::is_held(&tt.live.join("lock"))
            .ok()
            .filter(|&b| b)
    });
    let o = tt.rc(&["-a", "list"]);
    assert_code(&o, 4);
    assert!(
        text(&o.stderr).contains("in use by another tend-rc"),
        "{}",
        text(&o.stderr)
    );
    std::fs::write(sc.join("gate"), "").unwrap();
    assert_eq!(d.wait_exit(PATIENCE * 3).and_then(|s| s.code()), Some(0));
}

#[test]
fn pipeline_pipe_is_held_across_restarts() {
    let (sc, _t, tt, _k) = tend_tree("rc-pipe", |t, sc| {
        t.pipe("prod", "cons", "both", &[], &sc.join("out"));
    });
    assert_code(&tt.rc(&["-u", "change", "both"]), 0);
    assert_eq!(
        tt.list(&["-a"]),
        ["cons", "prod"].iter().map(|s| s.to_string()).collect()
    );
    // Each side is a service of its own, at SCANDIR/NAME as s6-rc-init links them.
    assert!(tt.svc("prod/supervise/status").exists());
    assert!(tt.svc("cons/supervise/status").exists());
    assert!(std::fs::symlink_metadata(tt.svc("prod/log")).is_err());
    let out = sc.join("out");
    let count = || {
        std::fs::read_to_string(&out)
            .unwrap_or_default()
            .lines()
            .count()
    };
    wait_until(PATIENCE, "lines through the pipe", || {
        (count() > 5).then_some(())
    });
    let cons_pid = status(&tt.live.join("servicedirs/cons")).pid;
    // Restart the producer: same consumer, lines keep coming.
    assert_code(
        &tend("tend-svc", ["-r", s(&tt.live.join("servicedirs/prod"))]),
        0,
    );
    let before = count();
    wait_until(PATIENCE, "more lines after the restart", || {
        (count() > before + 5).then_some(())
    });
    assert_eq!(status(&tt.live.join("servicedirs/cons")).pid, cons_pid);
    // Down: the producer goes first, then its consumer.
    let seen = _t.lines().len();
    assert_code(&tt.rc(&["-da", "change"]), 0);
    let downs: Vec<String> = _t.lines()[seen..]
        .iter()
        .filter(|l| l.starts_with("down"))
        .cloned()
        .collect();
    assert_eq!(downs, vec!["down prod", "down cons"]);
}

/// Scripts reach a pipeline's logger at SCANDIR/NAME (s6-rc-init links every longrun
/// there): restarting the consumer that way, with s6's own s6-svc, five times, loses and
/// repeats no line of the producer's, as s6-rc's fd holder keeps the pipe.
#[test]
fn consumer_restarted_at_scandir_name_by_s6_svc_keeps_every_line() {
    if !have("s6-svc") {
        return skip("no s6-svc (Debian's s6)");
    }
    // The logger copies a byte at a time and stops only between bytes on s6-svc's
    // SIGTERM, so a line lost could only be the pipe's.
    let (sc, _t, tt, _k) = tend_tree("rc-pipe-s6svc", |t, sc| {
        t.pipe("app", "app-log", "app-pipeline", &[], &sc.join("out"));
        t.longrun(
            "app-log",
            &[],
            &format!(
                "perl -e '$SIG{{TERM}} = sub {{ $stop = 1 }}; open(O, \">>\", $ARGV[0]) or die; \
                 while (!$stop) {{ $n = sysread(STDIN, $c, 1); \
                 if (!defined $n) {{ next if $!{{EINTR}}; last }} last if !$n; syswrite(O, $c) }}' {}",
                sc.join("out").display()
            ),
        );
    });
    assert_code(&tt.rc(&["-u", "change", "app-pipeline"]), 0);
    let out = sc.join("out");
    let lines = || numbered(&out, "line ");
    wait_until(PATIENCE, "lines through the pipe", || {
        (lines().len() > 5).then_some(())
    });
    let logger = tt.svc("app-log");
    for round in 0..5 {
        let pid = status(&logger).pid;
        let o = run({
            let mut c = Command::new("s6-svc");
            c.arg("-r").arg(&logger);
            c
        });
        assert_code(&o, 0);
        wait_status(&logger, "the logger restarted", |r| {
            r.pid != 0 && r.pid != pid
        });
        let before = lines().len();
        wait_until(PATIENCE, &format!("lines after restart {round}"), || {
            (lines().len() > before + 5).then_some(())
        });
    }
    let got = lines();
    let want: Vec<u64> = (got[0]..got[0] + got.len() as u64).collect();
    assert_eq!(got, want, "every line once, in order, across five restarts");
    assert_eq!(got[0], 1, "from the first line");
}

#[test]
fn ten_thousand_definitions() {
    let sc = Scratch::new("rc-10k");
    let _k = KillUnder(sc.path.clone());
    let src = sc.join("src");
    // 1000 levels of 10 oneshots with comment-only up, each depending on the level below,
    // and a few longruns at the top.
    for level in 0..1000 {
        for k in 0..10 {
            let d = src.join(format!("s{level}-{k}"));
            std::fs::create_dir_all(d.join("dependencies.d")).unwrap();
            std::fs::write(d.join("type"), "oneshot\n").unwrap();
            std::fs::write(d.join("up"), "# barrier\n").unwrap();
            if level > 0 {
                std::fs::write(d.join(format!("dependencies.d/s{}-{k}", level - 1)), "").unwrap();
            }
        }
    }
    for k in 0..3 {
        let d = src.join(format!("lr{k}"));
        std::fs::create_dir_all(d.join("dependencies.d")).unwrap();
        std::fs::write(d.join("type"), "longrun\n").unwrap();
        write(&d.join("run"), SLEEPER, true);
        for c in 0..10 {
            std::fs::write(d.join(format!("dependencies.d/s999-{c}")), "").unwrap();
        }
    }
    let t0 = std::time::Instant::now();
    assert_code(&check(&[&src]), 0);
    eprintln!("check of 10003 definitions: {:?}", t0.elapsed());
    let tt = Tree::tend(&sc, &[&src]);
    let o = tt.rc(&["-v", "0", "-u", "change", "lr0", "lr1", "lr2"]);
    assert_code(&o, 0);
    assert_eq!(tt.list(&["-a"]).len(), 10_003);
    assert_code(&tt.rc(&["-v", "0", "-da", "change"]), 0);
    assert!(tt.list(&["-a"]).is_empty());
}

#[test]
fn progress_on_a_terminal() {
    if !have("script") {
        skip("no script(1)");
        return;
    }
    let (_sc, _t, tt, _k) = tend_tree("rc-tty", |t, _| {
        t.oneshot("a", &[]);
        t.oneshot("b", &["a"]);
        t.file("b/up", "sleep 0.5\n");
    });
    let cmdline = format!("{} -l {} -u change b", s(&bin("tend-rc")), s(&tt.live));
    let o = run({
        let mut c = Command::new("script");
        c.args(["-qec", &cmdline, "/dev/null"]);
        c
    });
    assert_code(&o, 0);
    let out = text(&o.stdout);
    assert!(out.contains("\rtend-rc: 1/2 up"), "{out:?}");
    assert!(
        out.contains(", waiting for b (0."),
        "the line shows what is awaited, and for how long: {out:?}"
    );
    assert!(
        !out.contains("tend-rc: info:"),
        "no per-service lines on a terminal: {out:?}"
    );
}

#[test]
fn diff_names_a_longrun_its_supervisor_disagrees_on() {
    let (_sc, _t, tt, _k) = tend_tree("rc-diff", |t, _| {
        t.longrun("l", &[], "sleep 1000");
        t.longrun("m", &[], "sleep 1000");
    });
    assert_code(&tt.rc(&["-u", "change", "l"]), 0);
    let o = tt.rc(&["diff"]);
    assert_code(&o, 0);
    assert_eq!(text(&o.stdout), "");
    // Down behind tend-rc's back, and up behind it.
    assert_code(
        &tend("tend-svc", ["-wD", "-d", s(&tt.live.join("servicedirs/l"))]),
        0,
    );
    assert_code(
        &tend("tend-svc", ["-wu", "-u", s(&tt.live.join("servicedirs/m"))]),
        0,
    );
    let o = tt.rc(&["diff"]);
    assert_code(&o, 1);
    assert_eq!(text(&o.stdout), "-l\n+m\n");
}

/// A longrun that crashed and is between two restarts is not "up", but everything down
/// must still stop it.
#[test]
fn all_down_stops_a_longrun_between_restarts() {
    let (_sc, _t, tt, _k) = tend_tree("rc-crashing", |t, _| {
        t.longrun("flaky", &[], "sleep 1000");
    });
    assert_code(&tt.rc(&["-u", "change", "flaky"]), 0);
    let dir = tt.live.join("servicedirs/flaky");
    write(&dir.join("run"), "#!/bin/sh\nexit 1\n", true);
    assert_code(&tend("tend-svc", ["-k", s(&dir)]), 0);
    wait_status(&dir, "flaky crashing", |r| r.pid == 0 || r.finishing);
    let o = tt.rc(&["-da", "change"]);
    assert_code(&o, 0);
    let r = wait_status(&dir, "flaky down", |r| r.pid == 0 && !r.finishing);
    assert!(!r.want_up, "the supervisor will not restart it: {r:?}");
    assert!(dir.join("down").exists());
}

/// The supervisor of the service directory `dir` (the process there whose name says so).
fn supervisor_of(dir: &Path) -> i32 {
    wait_until(PATIENCE, "the supervisor", || {
        procs_under(dir).into_iter().find(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("supervise"))
        })
    })
}

/// The race behind `all_down_stops_a_longrun_between_restarts`'s rare failure, made
/// certain: a crashed longrun has no pid but its supervisor still wants it up until it
/// takes tend-rc's `d`. With the supervisor stopped, tend-rc waits for it, and exits 0
/// only once the supervisor says it will not start it again.
#[test]
fn all_down_waits_for_the_supervisor_to_take_the_down() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let (_sc, _t, tt, _k) = tend_tree("rc-crash-wait", |t, _| {
        t.longrun("flaky", &[], "sleep 1000");
    });
    assert_code(&tt.rc(&["-u", "change", "flaky"]), 0);
    let dir = tt.servicedir("flaky");
    write(&dir.join("run"), "#!/bin/sh\nexit 1\n", true);
    assert_code(&tend("tend-svc", ["-k", s(&dir)]), 0);
    wait_status(&dir, "flaky between restarts", |r| {
        r.pid == 0 && !r.finishing && r.want_up
    });
    let sup = Pid::from_raw(supervisor_of(&dir));
    kill(sup, Signal::SIGSTOP).unwrap();
    let mut c = cmd("tend-rc");
    c.arg("-l").arg(&tt.live).args(["-da", "change"]);
    c.stdout(std::process::Stdio::null());
    let mut child = c.spawn().unwrap();
    let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        stays_for(
            Duration::from_millis(500),
            "tend-rc waits while the supervisor has not taken the d",
            || child.try_wait().unwrap().is_none(),
        )
    }));
    kill(sup, Signal::SIGCONT).unwrap();
    let code = wait_until(PATIENCE, "tend-rc exits", || child.try_wait().unwrap());
    assert!(
        waited.is_ok(),
        "tend-rc exited {code:?} before the supervisor took the d"
    );
    assert_eq!(code.code(), Some(0));
    let r = status(&dir);
    assert!(!r.want_up && r.pid == 0, "{r:?}");
}

#[test]
fn overall_timeout_exits_2_and_the_next_run_finishes() {
    let (_sc, _t, tt, _k) = tend_tree("rc-t", |t, _| {
        t.oneshot("slow", &[]);
        t.file("slow/up", "sleep 2\n");
        t.oneshot("after", &["slow"]);
    });
    let o = tt.rc(&["-t", "300", "-u", "change", "after"]);
    assert_code(&o, 2);
    assert!(text(&o.stderr).contains("timed out"), "{}", text(&o.stderr));
    assert!(tt.list(&["-a"]).is_empty());
    let o = tt.rc(&["-u", "change", "after"]);
    assert_code(&o, 0);
    assert_eq!(
        tt.list(&["-a"]),
        ["after", "slow"].iter().map(|s| s.to_string()).collect()
    );
}

/// The lines a tree's scripts logged after the first `n`.
fn lines_after(t: &Src, n: usize) -> Vec<String> {
    t.lines().into_iter().skip(n).collect()
}

/// base ← mid ← {top, keep}, and other on its own; the second version keeps only keep
/// (no dependencies now) and other.
fn removal_tree(sc: &Scratch, who: &str, version: u32) -> Src {
    let mut t = Src::new(
        sc.join(format!("{who}-v{version}")),
        sc.join(format!("{who}.log")),
    );
    if version == 1 {
        t.oneshot("base", &[]);
        t.longrun("mid", &["base"], "sleep 1000");
        t.oneshot("top", &["mid"]);
        t.oneshot("keep", &["mid"]);
    } else {
        t.oneshot("keep", &[]);
    }
    t.longrun("other", &[], "sleep 1000");
    t
}

/// What a change of definitions stops, checked on one log: `top` and `keep` (which
/// depended on `mid`) go down before `mid`, `mid` before `base`, then `keep` comes back;
/// `other` is not touched.
fn assert_removal_order(lines: &[String], who: &str) {
    let at = |l: &str| {
        lines
            .iter()
            .position(|x| x == l)
            .unwrap_or_else(|| panic!("{who}: no {l:?} in {lines:?}"))
    };
    assert!(at("down top") < at("down mid"), "{who}: {lines:?}");
    assert!(at("down keep") < at("down mid"), "{who}: {lines:?}");
    assert!(at("down mid") < at("down base"), "{who}: {lines:?}");
    assert!(at("down base") < at("up keep"), "{who}: {lines:?}");
    assert_eq!(lines.len(), 5, "{who}: {lines:?}");
}

/// Removed definitions go down in the order of the dependencies recorded when the tree
/// was last moved (the new sources no longer know them), their old dependents first and
/// started again afterwards: the same as s6-rc-update between the same two sources.
#[test]
fn update_stops_removed_services_after_their_dependents_as_s6_rc_update() {
    let sc = Scratch::new("rc-upd-order");
    let _k = KillUnder(sc.path.clone());
    let (t1, t2) = (removal_tree(&sc, "tend", 1), removal_tree(&sc, "tend", 2));
    let tt = Tree::tend(&sc, &[&t1.src]);
    assert_code(&tt.rc(&["-u", "change", "top", "keep", "other"]), 0);
    let other_pid = status(&tt.live.join("servicedirs/other")).pid;
    let n = t1.lines().len();
    let dry = tt.update(&[&t2.src], None, true);
    assert_code(&dry, 0);
    let plan = text(&dry.stdout);
    for l in ["remove top", "restart keep", "remove mid", "remove base"] {
        assert!(plan.lines().any(|x| x == l), "dry run plans {l:?}: {plan}");
    }
    assert!(lines_after(&t1, n).is_empty(), "a dry run changes nothing");
    assert_code(&tt.update(&[&t2.src], None, false), 0);
    assert_removal_order(&lines_after(&t1, n), "tend-rc update");
    assert_eq!(status(&tt.live.join("servicedirs/other")).pid, other_pid);
    let tend_up = tt.list(&["-a"]);
    assert!(!tt.live.join("servicedirs/mid").exists());
    // The new sources are recorded: a plain change reads them.
    assert_code(&tt.rc(&["-u", "change", "keep"]), 0);
    assert_eq!(tt.list(&["-a"]), tend_up);

    let rec = removal_record(&sc);
    assert_removal_order(&rec.lines_of("update-lines"), "s6-rc-update (recorded)");
    assert_eq!(
        rec.set_of("list-after"),
        tend_up,
        "-a list after the update"
    );
}

/// s6-rc-update's run between the two removal trees.
fn removal_record(sc: &Scratch) -> Record {
    let mut rec = Record::open("compare/update_removal");
    if let Some(side) = rec.side() {
        let (s1, s2) = (removal_tree(sc, "s6", 1), removal_tree(sc, "s6", 2));
        let st = Tree::init(sc, side, &[&s1.src]);
        assert_code(&st.rc(&["-u", "change", "top", "keep", "other"]), 0);
        let n = s1.lines().len();
        assert_code(&st.update(&[&s2.src], None, false), 0);
        rec.set("update-lines", lines_after(&s1, n).join("\n"));
        rec.set_lines("list-after", st.list(&["-a"]));
    }
    rec
}

/// a, l (a longrun depending on a), r (a longrun), d; the second version renames a to
/// a2 (l now depends on a2) and r to r2.
fn rename_tree(sc: &Scratch, who: &str, version: u32) -> Src {
    let mut t = Src::new(
        sc.join(format!("{who}-v{version}")),
        sc.join(format!("{who}.log")),
    );
    let (a, r) = if version == 1 {
        ("a", "r")
    } else {
        ("a2", "r2")
    };
    t.oneshot(a, &[]);
    t.longrun("l", &[a], "sleep 1000");
    t.longrun(r, &[], "sleep 1000");
    t.oneshot("d", &[]);
    t
}

/// A conversion file's renames move services without restarting them (a longrun keeps
/// its process under its new name) and `restart` restarts one; both trees then come down
/// running the new definitions' scripts. The same under s6-rc-update.
#[test]
fn update_conversion_file_renames_and_restarts_as_s6_rc_update() {
    let sc = Scratch::new("rc-upd-conv");
    let _k = KillUnder(sc.path.clone());
    let conv = sc.join("conv");
    std::fs::write(&conv, "# renames\na -> a2\n\"r\" -> r2\nd restart\n").unwrap();
    let all = ["-u", "change", "a", "l", "r", "d"];
    let (t1, t2) = (rename_tree(&sc, "tend", 1), rename_tree(&sc, "tend", 2));
    let tt = Tree::tend(&sc, &[&t1.src]);
    assert_code(&tt.rc(&all), 0);
    let pid = |n: &str| status(&tt.live.join("servicedirs").join(n)).pid;
    let (r_pid, l_pid) = (pid("r"), pid("l"));
    let n = t1.lines().len();
    let o = tt.update(&[&t2.src], Some(&conv), false);
    assert_code(&o, 0);
    let tend_lines = lines_after(&t1, n);
    assert_eq!(tend_lines, ["down d", "up d"], "only d restarted");
    assert_eq!(pid("r2"), r_pid, "r renamed under its running supervisor");
    assert_eq!(pid("l"), l_pid);
    assert!(std::fs::symlink_metadata(tt.svc("r")).is_err());
    let tend_up = tt.list(&["-a"]);
    assert_code(&tt.rc(&["-da", "change"]), 0);
    let tend_downs: BTreeSet<String> = lines_after(&t1, n + 2).into_iter().collect();

    let mut rec = Record::open("compare/update_conversion");
    if let Some(side) = rec.side() {
        let (s1, s2) = (rename_tree(&sc, "s6", 1), rename_tree(&sc, "s6", 2));
        let st = Tree::init(&sc, side, &[&s1.src]);
        assert_code(&st.rc(&all), 0);
        let n = s1.lines().len();
        assert_code(&st.update(&[&s2.src], Some(&conv), false), 0);
        rec.set("update-lines", lines_after(&s1, n).join("\n"));
        rec.set_lines("list-after", st.list(&["-a"]));
        assert_code(&st.rc(&["-da", "change"]), 0);
        rec.set("downs", lines_after(&s1, n + 2).join("\n"));
    }
    assert_eq!(
        rec.lines_of("update-lines"),
        tend_lines,
        "s6-rc-update restarted the same"
    );
    assert_eq!(
        rec.set_of("list-after"),
        tend_up,
        "-a list after the update"
    );
    let s6_downs: BTreeSet<String> = rec.lines_of("downs").into_iter().collect();
    assert_eq!(tend_downs, s6_downs, "the new definitions' downs ran");
    assert!(tend_downs.contains("down a2"), "{tend_downs:?}");
    drop(t2);
}

/// Bad conversion files: s6-rc-update's exit codes, one line, nothing changed.
#[test]
fn update_bad_conversion_files_refused_as_s6_rc_update() {
    let sc = Scratch::new("rc-upd-bad");
    let _k = KillUnder(sc.path.clone());
    let cases: &[(&str, i32)] = &[
        ("nosuch -> x\n", 3),
        ("keep -> undefined\n", 4),
        ("keep frob\n", 100),
        ("keep ->\n", 100),
        ("keep restart\nkeep restart\n", 6),
        ("other -> keep\n", 6),
        ("keep \"unterminated\n", 100),
    ];
    let (t1, t2) = (removal_tree(&sc, "tend", 1), removal_tree(&sc, "tend", 2));
    let tt = Tree::tend(&sc, &[&t1.src]);
    assert_code(&tt.rc(&["-u", "change", "keep", "other"]), 0);
    let before = tt.list(&["-a"]);
    let n = t1.lines().len();
    let mut rec = Record::open("compare/update_bad_conversion");
    let s6 = rec.side().map(|side| {
        let st = removal_tree(&sc, "s6", 1);
        let s6 = Tree::init(&sc, side, &[&st.src]);
        assert_code(&s6.rc(&["-u", "change", "keep", "other"]), 0);
        s6
    });
    let s6_v2 = removal_tree(&sc, "s6", 2);
    for (i, (conv_text, code)) in cases.iter().enumerate() {
        let conv = sc.join(format!("conv{i}"));
        std::fs::write(&conv, conv_text).unwrap();
        let o = tt.update(&[&t2.src], Some(&conv), false);
        assert_code(&o, *code);
        let err = text(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{conv_text:?}: {err}");
        assert!(err.starts_with("tend-rc: fatal: "), "{conv_text:?}: {err}");
        let key = format!("conv.{i}");
        if let Some(s6) = &s6 {
            let o = s6.update(&[&s6_v2.src], Some(&conv), false);
            rec.set(&format!("{key}.stderr"), scrub(&sc, &o.stderr));
            rec.set(&key, o.status.code().unwrap_or(-1));
        }
        assert_eq!(
            rec.code(&key),
            *code,
            "s6-rc-update's code on {conv_text:?}"
        );
    }
    let o = tt.update(&[&t2.src], Some(&sc.join("no-such-file")), false);
    assert_code(&o, 111);
    let o = tt.update(&[&t2.src], Some(&sc.path), false);
    assert_code(&o, 111);
    // New sources that do not check: every problem named, exit 4 (s6-rc-update's
    // "invalid service database"), the live tree as it was.
    let mut bad = Src::new(sc.join("bad-src"), sc.join("bad.log"));
    bad.oneshot("x", &["y"]);
    bad.oneshot("y", &["x"]);
    bad.oneshot("z", &["missing"]);
    let o = tt.update(&[&bad.src], None, false);
    assert_code(&o, 4);
    let err = text(&o.stderr);
    assert!(err.contains("cycle") && err.contains("missing"), "{err}");
    assert!(
        err.lines().all(|l| l.starts_with("tend-rc: fatal: ")),
        "{err}"
    );
    assert_eq!(tt.list(&["-a"]), before, "nothing changed");
    assert!(lines_after(&t1, n).is_empty(), "nothing ran");
    assert_eq!(
        std::fs::read_to_string(tt.live.join("sources")).unwrap(),
        format!("{}\n", t1.src.display()),
        "the recorded sources are the old ones"
    );
}
