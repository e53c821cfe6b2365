//! tend-init as s6-overlay v3's `/init`, in the Docker engine: images built FROM scratch
//! (`docker import` of a root file system holding tend installed by `packaging/install.sh
//! -6`, busybox-static and the host's bash) from the trees in tests/overlay-images/
//! (their sources in its README). The scripts record what ran in /record/order, a
//! scratch directory mounted from the host; the tests read the order there.
//!
//! Skipped (`common::skip`, "no docker") without a Docker engine; the s6-rc.d trees also
//! need tend-rc in the multi-call executable ("no tend-rc").
//!
//! Not tested: `docker restart` of a container (a second start over the same /run);
//! S6_VERBOSITY above 2; S6_LOGGING_SCRIPT other than its default.

use crate::common::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn has_rc() -> bool {
    let o = run({
        let mut c = Command::new(multicall());
        c.arg("-l");
        c
    });
    text(&o.stdout).lines().any(|l| l == "tend-rc")
}

/// The image made of `trees` (laid in this order), built once per test process and
/// tagged with its pid, removed when it exits: another checkout's suite on the same
/// Docker engine builds its own (with its own tend), as tests/it/init.rs does.
fn image(trees: &[&str]) -> Option<String> {
    if !docker_ok() {
        skip("no docker");
        return None;
    }
    static BUILT: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    let tag = format!(
        "tend-overlay-test:{}-p{}",
        trees.join("-"),
        std::process::id()
    );
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if built.contains(&tag) {
        return Some(tag);
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "overlay-{}-p{}",
        trees.join("-"),
        std::process::id()
    ));
    let rootfs = dir.join("rootfs");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&rootfs).unwrap();
    make_rootfs(&rootfs, &dir, trees);
    let tar = dir.join("rootfs.tar");
    assert_code(
        &run({
            let mut c = Command::new("tar");
            c.arg("-C").arg(&rootfs).arg("-cf").arg(&tar).arg(".");
            c
        }),
        0,
    );
    let mut c = Command::new("docker");
    c.args(["import", "--change", r#"ENTRYPOINT ["/init"]"#])
        .args(["--change", "ENV PATH=/command:/usr/bin:/bin"])
        .arg(&tar)
        .arg(&tag);
    assert_code(&run(c), 0);
    remove_image_at_exit(&tag);
    // The image holds it now.
    let _ = std::fs::remove_dir_all(&dir);
    built.insert(tag.clone());
    Some(tag)
}

fn sh(script: &str) {
    let o = run({
        let mut c = Command::new("sh");
        c.args(["-ec", script]);
        c
    });
    assert_code(&o, 0);
}

fn make_rootfs(rootfs: &Path, dir: &Path, trees: &[&str]) {
    // tend as it ships (install.sh -6), from the test build, stripped.
    let build = dir.join("build");
    std::fs::create_dir_all(&build).unwrap();
    let debug = multicall().parent().unwrap();
    // Every executable install.sh takes: the multi-call ones and the standalone ones.
    for p in EXECUTABLES {
        let o = run({
            let mut c = Command::new("strip");
            c.arg("-o").arg(build.join(p)).arg(debug.join(p));
            c
        });
        assert_code(&o, 0);
    }
    let o = run({
        let mut c = Command::new(root().join("packaging/install.sh"));
        c.env("TEND_BUILD", &build)
            .arg("-6")
            .arg(rootfs)
            .arg("/usr");
        c
    });
    assert_code(&o, 0);
    let r = rootfs.display();
    sh(&format!(
        "cd {r}; mkdir -p bin proc sys dev run tmp record var/log etc
         cp /bin/busybox bin/busybox
         for a in $(bin/busybox --list); do [ -e bin/$a ] || ln -s busybox bin/$a; done
         cp /bin/bash bin/bash
         for l in $(ldd /bin/bash | grep -o '/[^ ]*'); do mkdir -p .$(dirname $l); cp -L $l .$l; done
         echo 'root:x:0:0:root:/root:/bin/sh' >etc/passwd; echo 'root:x:0:' >etc/group
         chmod 1777 tmp"
    ));
    for t in trees {
        let src = root().join("tests/overlay-images").join(t);
        sh(&format!("cp -R {}/. {r}/", src.display()));
    }
}

/// A container run with /record mounted from `s`.
fn docker(s: &Scratch, args: &[&str]) -> Command {
    let rec = s.join("record");
    std::fs::create_dir_all(&rec).unwrap();
    let mut c = Command::new("docker");
    c.arg("run")
        .arg("-v")
        .arg(format!("{}:/record", rec.display()))
        .args(args);
    c.stdin(Stdio::null());
    c
}

/// A container run in the foreground to its end, killed after two minutes: a container
/// that does not stop fails its test instead of holding the whole run (CI has a limit).
fn run_container(s: &Scratch, args: &[&str]) -> Output {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let name = format!(
        "tend-overlay-{}-{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let mut all = vec!["--name", &name];
    all.extend_from_slice(args);
    let child = docker(s, &all)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("docker run");
    let (done, wait) = std::sync::mpsc::channel::<()>();
    let killer = {
        let name = name.clone();
        std::thread::spawn(move || {
            if wait.recv_timeout(Duration::from_secs(120)).is_err() {
                eprintln!("{name}: still running after 120 s: killed");
                let _ = Command::new("docker")
                    .args(["kill", &name])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
        })
    };
    let o = child.wait_with_output().expect("docker run");
    let _ = done.send(());
    let _ = killer.join();
    o
}

fn order(s: &Scratch) -> Vec<String> {
    std::fs::read_to_string(s.join("record/order"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// What s6-overlay 3.2.3.2's `/init` did in the same case, on the same tree and settings
/// (tests/overlay-record/README.md): `key = value` lines, values unescaped.
fn recorded(case: &str) -> BTreeMap<String, String> {
    let p = root().join("tests/overlay-record/3.2.3.2").join(case);
    let all = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let unescape = |v: &str| {
        let mut out = String::new();
        let mut it = v.chars();
        while let Some(c) = it.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            match it.next() {
                Some('n') => out.push('\n'),
                Some(o) => out.push(o),
                None => out.push('\\'),
            }
        }
        out
    };
    all.lines()
        .filter_map(|l| {
            l.split_once(" = ")
                .or_else(|| l.strip_suffix(" =").map(|k| (k, "")))
        })
        .map(|(k, v)| (k.to_string(), unescape(v)))
        .collect()
}

/// A recorded value's lines (none for an empty value).
fn rec_lines(r: &BTreeMap<String, String>, key: &str) -> Vec<String> {
    let v = r.get(key).unwrap_or_else(|| panic!("no {key} recorded"));
    v.lines().map(str::to_string).collect()
}

/// A recorded exit code.
fn rec_code(r: &BTreeMap<String, String>, key: &str) -> i32 {
    rec_lines(r, key)[0].parse().unwrap()
}

/// The `up NAME` / `down NAME` words of order lines (what a script appended after its
/// name, a pid, varies from run to run).
fn steps(lines: &[String]) -> BTreeSet<String> {
    lines
        .iter()
        .map(|l| l.split(' ').take(2).collect::<Vec<_>>().join(" "))
        .collect()
}

fn position(lines: &[String], prefix: &str) -> Option<usize> {
    lines
        .iter()
        .position(|l| l == prefix || l.starts_with(&format!("{prefix} ")))
}

/// Every dependency edge of the trees (names to what they depend on, transitively
/// through bundles and barriers, a producer on its consumer), read from the files as
/// tend-rc reads them.
fn edges(trees: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let mut deps: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for t in trees {
        let d = root()
            .join("tests/overlay-images")
            .join(t)
            .join("etc/s6-overlay/s6-rc.d");
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let set = deps.entry(name).or_default();
            // A producer depends on its consumer: s6-overlay (s6-rc) started the
            // logger before its service and stopped it after (tests/overlay-record).
            if let Ok(c) = std::fs::read_to_string(e.path().join("producer-for")) {
                set.insert(c.trim().to_string());
            }
            for sub in ["dependencies.d", "contents.d"] {
                if let Ok(rd) = std::fs::read_dir(e.path().join(sub)) {
                    set.extend(
                        rd.flatten()
                            .map(|x| x.file_name().to_string_lossy().into_owned()),
                    );
                }
            }
        }
    }
    deps
}

fn closure(deps: &BTreeMap<String, BTreeSet<String>>, name: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut todo = vec![name.to_string()];
    while let Some(n) = todo.pop() {
        for d in deps.get(&n).into_iter().flatten() {
            if out.insert(d.clone()) {
                todo.push(d.clone());
            }
        }
    }
    out
}

/// The trees' longruns.
fn longruns(trees: &[&str]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for t in trees {
        let d = root()
            .join("tests/overlay-images")
            .join(t)
            .join("etc/s6-overlay/s6-rc.d");
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let ty = std::fs::read_to_string(e.path().join("type")).unwrap_or_default();
            if ty.trim() == "longrun" {
                out.insert(e.file_name().to_string_lossy().into_owned());
            }
        }
    }
    out
}

/// Every recorded `up X` after the `up` of everything X depends on that recorded one,
/// but a longrun: it counts as up once its process is spawned (in s6-rc as in tend-rc),
/// so its run script may write its line after a dependent's.
fn assert_up_order(
    lines: &[String],
    deps: &BTreeMap<String, BTreeSet<String>>,
    longruns: &BTreeSet<String>,
) -> usize {
    let mut checked = 0;
    for (i, l) in lines.iter().enumerate() {
        let Some(name) = l.strip_prefix("up ").and_then(|r| r.split(' ').next()) else {
            continue;
        };
        for d in closure(deps, name).difference(longruns) {
            if let Some(j) = position(lines, &format!("up {d}")) {
                assert!(j < i, "{name} came up before {d}:\n{}", lines.join("\n"));
                checked += 1;
            }
        }
    }
    checked
}

/// Every recorded `down X` before the `down` of what X depends on.
fn assert_down_order(lines: &[String], deps: &BTreeMap<String, BTreeSet<String>>) {
    for (i, l) in lines.iter().enumerate() {
        let Some(name) = l.strip_prefix("down ") else {
            continue;
        };
        for d in closure(deps, name) {
            if let Some(j) = position(lines, &format!("down {d}")) {
                assert!(j > i, "{d} went down before {name}:\n{}", lines.join("\n"));
            }
        }
    }
}

fn logs(name: &str) -> Output {
    run({
        let mut c = Command::new("docker");
        c.args(["logs", name]);
        c
    })
}

/// A detached container, removed when dropped.
struct Container(String);

impl Drop for Container {
    fn drop(&mut self) {
        let _ = Command::new("docker")
            .args(["rm", "-f", &self.0])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// A container named `name` and this test process's pid: container names are the
/// machine's, and a run of the same test elsewhere (another checkout's suite) removes
/// its own `name` at its start.
fn start(s: &Scratch, name: &str, args: &[&str]) -> Container {
    let name = &format!("{name}-{}", std::process::id());
    let _ = Command::new("docker")
        .args(["rm", "-f", name])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let mut all = vec!["-d", "--name", name];
    all.extend_from_slice(args);
    assert_code(&run(docker(s, &all)), 0);
    Container(name.to_string())
}

/// `docker stop` (grace `t` s): the time it took and the container's exit code.
fn stop(c: &Container, t: u32) -> (Duration, i32) {
    let t0 = Instant::now();
    assert_code(
        &run({
            let mut d = Command::new("docker");
            d.args(["stop", "-t", &t.to_string(), &c.0]);
            d
        }),
        0,
    );
    let took = t0.elapsed();
    let o = run({
        let mut d = Command::new("docker");
        d.args(["wait", &c.0]);
        d
    });
    (took, text(&o.stdout).trim().parse().unwrap_or(-1))
}

/// Up in dependency order, the CMD-less container running until `docker stop`, down in
/// reverse within the grace times.
/// Compared with s6-overlay's run of the same tree (`record`): the same steps up and
/// down (s6-rc runs in parallel, so the order is held to the edges, not to the record's
/// order) and the same exit code.
fn up_then_down(
    trees: &[&str],
    name: &str,
    last_up: &str,
    record: &str,
    extra: impl Fn(&Scratch, &str),
) {
    let Some(img) = image(trees) else { return };
    if !has_rc() {
        skip("no tend-rc");
        return;
    }
    let s = Scratch::new(name);
    // The grace time covers tend-rc -da (a debug build here takes seconds to read a
    // tree); docker stop's own grace is longer still.
    let c = start(
        &s,
        name,
        &[
            "-e",
            "OVERLAY_TEST=contenv",
            "-e",
            "S6_SERVICES_GRACETIME=25000",
            &img,
        ],
    );
    let up = format!("up {last_up}");
    let t0 = Instant::now();
    while position(&order(&s), &up).is_none() {
        // What the container said, for a run that did not get there.
        if t0.elapsed() > Duration::from_secs(60) {
            let l = logs(&c.0);
            panic!(
                "timed out waiting for {up}: {:?}\nstdout: {}\nstderr: {}",
                order(&s),
                text(&l.stdout),
                text(&l.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    extra(&s, &c.0);
    let lines = order(&s);
    let deps = edges(trees);
    let checked = assert_up_order(&lines, &deps, &longruns(trees));
    assert!(checked > 0, "no edge checked:\n{}", lines.join("\n"));
    for l in lines.iter().filter(|l| l.starts_with("up init-")) {
        assert!(
            l.ends_with(" contenv"),
            "with-contenv did not load the env: {l}"
        );
    }
    let (took, code) = stop(&c, 40);
    assert!(took < Duration::from_secs(35), "docker stop took {took:?}");
    let stderr = text(&logs(&c.0).stderr);
    assert_eq!(code, 0, "{stderr}");
    // Every step down (tend-rc -d change user2, -da change) succeeded.
    assert!(!stderr.contains("tend-init: warning: tend-rc"), "{stderr}");
    let lines = order(&s);
    assert!(
        lines.iter().any(|l| l.starts_with("down ")),
        "{}",
        lines.join("\n")
    );
    assert_down_order(&lines, &deps);
    let r = recorded(record);
    assert_eq!(code, rec_code(&r, "stop.exit"));
    assert_eq!(
        steps(&lines),
        steps(&rec_lines(&r, "stop.order")),
        "{stderr}"
    );
    // A tree defining `user` in s6-rc.d: both warn that it belongs in user-bundles.d
    // (in their own words).
    assert_eq!(
        stderr.contains("the user bundles belong in /etc/s6-overlay/user-bundles.d"),
        r["stop.stderr"].contains("please define them in /etc/s6-overlay/user-bundles.d"),
        "{stderr}"
    );
}

#[test]
fn slow_docker_base_image_init_chain_up_in_order_and_down_in_reverse() {
    up_then_down(
        &["baseimage-alpine"],
        "tend-overlay-base",
        "svc-cron",
        "base",
        |_, name| {
            // user2's plain `echo` up runs after user, on the container's stdout.
            wait_until(
                Duration::from_secs(30),
                "base image: init chain complete",
                || {
                    text(&logs(name).stdout)
                        .contains("base image: init chain complete")
                        .then_some(())
                },
            );
        },
    );
}

#[test]
fn slow_docker_layer_over_the_base_image_longruns_after_oneshots() {
    up_then_down(
        &["baseimage-alpine", "nginx"],
        "tend-overlay-nginx",
        "svc-nginx",
        "nginx",
        |s, _| {
            let lines = order(s);
            // The layer's entry in init-config-end: the base's mods wait for nginx's chain.
            let (a, b) = (
                position(&lines, "up init-nginx").unwrap(),
                position(&lines, "up init-mods-package-install").unwrap(),
            );
            assert!(a < b, "{}", lines.join("\n"));
            let l = &lines[position(&lines, "up svc-nginx").unwrap()];
            let pid = l.rsplit('=').next().unwrap();
            assert!(
                pid.parse::<u32>().is_ok_and(|p| p > 0),
                "s6-svstat -o pid: {l}"
            );
        },
    );
}

#[test]
fn slow_docker_logging_pipeline() {
    up_then_down(
        &["logging"],
        "tend-overlay-logging",
        "myapp",
        "logging",
        |_, name| {
            wait_until(Duration::from_secs(30), "the logger's file", || {
                let o = run({
                    let mut c = Command::new("docker");
                    c.args(["exec", name, "cat", "/var/log/myapp/current"]);
                    c
                });
                text(&o.stdout).contains("myapp says hello").then_some(())
            });
            // The pipeline's two ends as s6-overlay had them: up, neither notifying
            // readiness.
            let r = recorded("logging");
            for svc in ["myapp", "myapp-log"] {
                let o = run({
                    let mut c = Command::new("docker");
                    c.args(["exec", name, "s6-svstat", "-o", "up,ready"])
                        .arg(format!("/run/service/{svc}"));
                    c
                });
                let want = rec_lines(&r, "svstat")
                    .into_iter()
                    .find_map(|l| {
                        l.strip_prefix(&format!("/run/service/{svc} "))
                            .map(str::to_string)
                    })
                    .unwrap();
                assert_eq!(text(&o.stdout).trim(), want, "{svc}");
            }
        },
    );
}

#[test]
fn docker_legacy_dirs_contenv_and_the_command_exit_code() {
    let Some(img) = image(&["legacy"]) else {
        return;
    };
    let s = Scratch::new("overlay-legacy");
    let o = run_container(
        &s,
        &[
            "--rm",
            "-e",
            "OVERLAY_TEST=contenv",
            "-e",
            "S6_CMD_WAIT_FOR_SERVICES=1",
            "-e",
            "S6_FROBNICATE=1",
            "-e",
            "S6_KILL_GRACETIME=500",
            &img,
            "sh",
            "-c",
            "echo cmd >>/record/order; exit 3",
        ],
    );
    // The same order and code as s6-overlay's.
    let r = recorded("legacy");
    assert_code(&o, rec_code(&r, "run.exit"));
    assert_eq!(order(&s), rec_lines(&r, "run.order"));
    assert_eq!(
        order(&s),
        [
            "up cont-init 10-record contenv",
            "up cont-init 20-second",
            "up main from-cont-init",
            "cmd",
            "down main",
            "down cont-finish 90-bye",
        ]
    );
    // Deliberate differences. s6-overlay passes an unknown S6_ variable by in silence;
    // tend-init names it, once. s6-overlay runs fix-attrs.d (deprecated; on this tree's
    // recursive entry its fix-attrs recursed until the shell crashed, the
    // record's "Segmentation fault", then carried on); tend-init says it does not.
    let err = text(&o.stderr);
    assert!(
        !rec_lines(&r, "run.stderr")
            .iter()
            .any(|l| l.contains("FROBNICATE"))
    );
    assert_eq!(
        err.matches("ignoring S6_FROBNICATE: not supported").count(),
        1,
        "{err}"
    );
    assert!(rec_lines(&r, "run.stderr").contains(&"Segmentation fault".to_string()));
    assert!(err.contains("/etc/fix-attrs.d is not supported"), "{err}");
}

#[test]
fn docker_s6_settings_and_the_var_run_path() {
    let Some(img) = image(&["legacy"]) else {
        return;
    };
    // S6_CMD_ARG0 before the command, S6_STAGE2_HOOK before cont-init.d, a script
    // writing through /var/run/s6 seen by a later with-contenv, S6_VERBOSITY=1 without
    // info lines.
    let s = Scratch::new("overlay-settings");
    s.write(
        "record/hook",
        "#!/bin/sh\necho hook >>/record/order\n",
        true,
    );
    let o = run_container(
        &s,
        &[
            "--rm",
            "-e",
            "S6_VERBOSITY=1",
            "-e",
            "S6_STAGE2_HOOK=/record/hook",
            "-e",
            "S6_CMD_ARG0=sh -c",
            &img,
            "echo -n via-var-run >/var/run/s6/container_environment/VIA; \
             with-contenv sh -c 'echo \"cmd $VIA\" >>/record/order'",
        ],
    );
    let r = recorded("settings");
    assert_code(&o, rec_code(&r, "run.exit"));
    let lines = order(&s);
    assert_eq!(lines.first().map(String::as_str), Some("hook"), "{lines:?}");
    assert!(lines.contains(&"cmd via-var-run".to_string()), "{lines:?}");
    // Without S6_CMD_WAIT_FOR_SERVICES the command does not wait for the services, so
    // main's "up" line (its run script's) and the command's line come in either order,
    // under s6-overlay as under tend-init (sweep O5: "cmd" first once, at load 12).
    let race = |l: &String| l.starts_with("up main");
    assert_eq!(lines.iter().filter(|l| race(l)).count(), 1, "{lines:?}");
    let rec = rec_lines(&r, "run.order");
    assert_eq!(
        lines.iter().filter(|l| !race(l)).collect::<Vec<_>>(),
        rec.iter().filter(|l| !race(l)).collect::<Vec<_>>()
    );
    assert!(!text(&o.stderr).contains("info:"), "{}", text(&o.stderr));
    // A read-only root with a tmpfs /run (S6_READ_ONLY_ROOT's case).
    let s = Scratch::new("overlay-read-only");
    let o = run_container(
        &s,
        &[
            "--rm",
            "--read-only",
            "--tmpfs",
            "/run:exec",
            "-e",
            "S6_READ_ONLY_ROOT=1",
            "-e",
            "OVERLAY_TEST=contenv",
            &img,
            "sh",
            "-c",
            "exit 6",
        ],
    );
    assert_code(&o, 6);
    assert_eq!(order(&s)[0], "up cont-init 10-record contenv");
    // A deliberate difference: s6-overlay's preinit must make /var/run a link to /run,
    // which it cannot on a read-only root that lacks one (this tree's), so it stops
    // with 111 before stage 2; tend-init needs no such link and boots.
    assert_eq!(rec_code(&r, "read-only.exit"), 111);
    assert!(r["read-only.stderr"].contains("unable to remove /var/run: Read-only file system"));
}

#[test]
fn docker_stage2_failure_stops_the_container_and_tend_settings_win() {
    let Some(img) = image(&["legacy"]) else {
        return;
    };
    let s = Scratch::new("overlay-fail");
    let fail = s.write("30-fail", "#!/bin/sh\nexit 5\n", true);
    let mount = format!("{}:/etc/cont-init.d/30-fail:ro", fail.display());
    // S6_BEHAVIOUR_IF_STAGE2_FAILS=2: every cont-init script runs, then the container
    // stops with 1 and the command never runs.
    let o = run_container(
        &s,
        &[
            "--rm",
            "-v",
            &mount,
            "-e",
            "S6_BEHAVIOUR_IF_STAGE2_FAILS=2",
            &img,
            "sh",
            "-c",
            "echo cmd >>/record/order",
        ],
    );
    assert_code(&o, 1);
    let lines = order(&s);
    assert!(!lines.contains(&"cmd".to_string()), "{lines:?}");
    assert!(text(&o.stderr).contains("/etc/cont-init.d/30-fail exited 5"));
    // As s6-overlay did without the tree's fix-attrs.d (with it, its fix-attrs crashed
    // and stopped the container before cont-init.d; tend-init skips fix-attrs.d).
    let r = recorded("stage2-fail");
    assert_code(&o, rec_code(&r, "no-fix-attrs.exit"));
    assert_eq!(lines, rec_lines(&r, "no-fix-attrs.order"));
    assert!(r["no-fix-attrs.stderr"].contains("/etc/cont-init.d/30-fail exited 5"));
    // TEND_INIT_FAILURE=warn wins over S6_BEHAVIOUR_IF_STAGE2_FAILS.
    let s = Scratch::new("overlay-fail-warn");
    let fail = s.write("30-fail", "#!/bin/sh\nexit 5\n", true);
    let mount = format!("{}:/etc/cont-init.d/30-fail:ro", fail.display());
    let o = run_container(
        &s,
        &[
            "--rm",
            "-v",
            &mount,
            "-e",
            "S6_BEHAVIOUR_IF_STAGE2_FAILS=2",
            "-e",
            "TEND_INIT_FAILURE=warn",
            &img,
            "sh",
            "-c",
            "echo cmd >>/record/order; exit 4",
        ],
    );
    assert_code(&o, 4);
    assert!(order(&s).contains(&"cmd".to_string()));
}

#[test]
fn docker_finish_script_sets_the_exit_code_and_halts() {
    let Some(img) = image(&["exitcode"]) else {
        return;
    };
    let s = Scratch::new("overlay-exitcode");
    let t0 = Instant::now();
    let o = run_container(&s, &["--rm", &img]);
    assert_code(&o, 7);
    assert!(t0.elapsed() < Duration::from_secs(30));
    assert_eq!(order(&s)[0], "up app");
    let r = recorded("exitcode");
    assert_code(&o, rec_code(&r, "run.exit"));
    assert_eq!(order(&s), rec_lines(&r, "run.order"));
}

#[test]
fn docker_s6_logging_sends_output_to_the_catch_all_logger() {
    let Some(img) = image(&["legacy"]) else {
        return;
    };
    // As s6-overlay 3.2.3.2 did: with 1 and 2 alike the scripts' and the command's
    // output goes to /run/uncaught-logs (not the README's /var/log/s6-uncaught-logs)
    // and nothing to stdout; with 1 every line is copied to stderr as well.
    let r = recorded("s6-logging");
    for level in ["1", "2"] {
        let s = Scratch::new("overlay-logging");
        let logs = s.join("logs");
        std::fs::create_dir_all(&logs).unwrap();
        let o = run_container(
            &s,
            &[
                "--rm",
                "-e",
                &format!("S6_LOGGING={level}"),
                "-v",
                &format!("{}:/run/uncaught-logs", logs.display()),
                &img,
                "sh",
                "-c",
                "echo from-the-command",
            ],
        );
        assert_code(&o, rec_code(&r, &format!("level{level}.exit")));
        let current = std::fs::read_to_string(logs.join("current")).unwrap_or_default();
        let (out, err) = (text(&o.stdout), text(&o.stderr));
        let rec = |k: &str| r[&format!("level{level}.{k}")].clone();
        for line in ["cont-init says hello", "from-the-command"] {
            assert!(rec("uncaught").contains(line));
            assert!(current.contains(line), "S6_LOGGING={level}: {current}");
            assert_eq!(out.contains(line), rec("stdout").contains(line), "{out}");
            assert_eq!(
                err.contains(line),
                rec("stderr").contains(line),
                "S6_LOGGING={level}: {err}"
            );
        }
    }
}

#[test]
fn slow_docker_interactive_shell() {
    let mut images = vec![&["legacy"][..]];
    if has_rc() {
        images.push(&["baseimage-alpine"]);
    }
    for trees in images {
        let Some(img) = image(trees) else { return };
        let s = Scratch::new("overlay-tty");
        let c = docker(&s, &["-ti", "--rm", &img, "sh"]);
        let mut p = Command::new("python3");
        p.arg(root().join("tests/it/pty_shell.py"));
        p.arg(c.get_program()).args(c.get_args());
        let o = run(p);
        let out = text(&o.stdout);
        assert_eq!(
            out.lines().last(),
            Some("RESULT ok EXIT 3"),
            "{trees:?}: {out}"
        );
    }
}

#[test]
fn docker_stop_without_a_command_runs_cont_finish() {
    let Some(img) = image(&["legacy"]) else {
        return;
    };
    let s = Scratch::new("overlay-stop");
    let c = start(&s, "tend-overlay-stop", &[&img]);
    wait_until(Duration::from_secs(30), "up main", || {
        position(&order(&s), "up main").map(|_| ())
    });
    let (took, code) = stop(&c, 20);
    assert_eq!(code, 0);
    assert!(took < Duration::from_secs(12), "{took:?}");
    let lines = order(&s);
    assert_eq!(
        &lines[lines.len() - 2..],
        ["down main", "down cont-finish 90-bye"]
    );
    let r = recorded("stop");
    assert_eq!(code, rec_code(&r, "stop.exit"));
    assert_eq!(lines, rec_lines(&r, "stop.order"));
}

// ---- without Docker: with-contenv, the s6 names, the -o setting ---------------------

/// `name` as a link to the multi-call executable, as install.sh -6 makes it.
fn s6_link(s: &Scratch, name: &str) -> std::path::PathBuf {
    let p = s.join(format!("command/{name}"));
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(&p);
    std::os::unix::fs::symlink(multicall(), &p).unwrap();
    p
}

#[test]
fn with_contenv_as_shebang_and_chain_loads_the_saved_environment() {
    let s = Scratch::new("contenv");
    let wc = s6_link(&s, "with-contenv");
    s.write("env/SAVED", "from-the-envdir\n", false);
    s.write("env/TWO", "a\nb", false);
    s.write("env/GONE", "", false);
    // As a shebang the kernel runs `with-contenv sh SCRIPT`: -d cannot be given there,
    // so the script is run through the chain form with the test's directory.
    let script = s.write(
        "script",
        "echo \"SAVED=$SAVED TWO=$TWO GONE=${GONE-unset} OTHER=${OTHER-unset}\"\n",
        true,
    );
    let mut c = Command::new(&wc);
    c.arg("-d").arg(s.join("env")).arg("sh").arg(&script);
    c.env("OTHER", "dropped").env("GONE", "x");
    let o = run(c);
    assert_code(&o, 0);
    assert_eq!(
        text(&o.stdout),
        "SAVED=from-the-envdir TWO=a\nb GONE=unset OTHER=unset\n"
    );
    // S6_KEEP_ENV: the environment as it is.
    let mut c = Command::new(&wc);
    c.arg("-d")
        .arg(s.join("env"))
        .args(["sh", "-c", "echo ${OTHER-unset} ${SAVED-unset}"]);
    c.env("OTHER", "kept").env("S6_KEEP_ENV", "1");
    let o = run(c);
    assert_code(&o, 0);
    assert_eq!(text(&o.stdout), "kept unset\n");
    // The shebang form, with the default directory: the kernel passes the script.
    let shebang = s.write(
        "shebang",
        &format!("#!{} sh\necho shebang-ran\n", wc.display()),
        true,
    );
    let mut c = Command::new(&shebang);
    c.env("S6_KEEP_ENV", "1");
    let o = run(c);
    assert_code(&o, 0);
    assert_eq!(text(&o.stdout), "shebang-ran\n");
}

#[test]
fn with_contenv_bad_input() {
    let s = Scratch::new("contenv-bad");
    let wc = s6_link(&s, "with-contenv");
    let o = run(Command::new(&wc));
    assert_code(&o, 100);
    assert!(
        text(&o.stderr)
            .starts_with("tend-with-contenv: usage: tend-with-contenv [ -d envdir ] prog...")
    );
    let mut c = Command::new(&wc);
    c.arg("-d").arg(s.join("missing")).arg("true");
    let o = run(c);
    assert_code(&o, 111);
    assert_eq!(
        text(&o.stderr),
        format!(
            "tend-with-contenv: fatal: unable to open directory {}: No such file or directory\n",
            s.join("missing").display()
        )
    );
    std::fs::create_dir_all(s.join("env")).unwrap();
    let mut c = Command::new(&wc);
    c.arg("-d").arg(s.join("env")).arg("no-such-program-here");
    assert_code(&run(c), 127);
}

#[test]
fn s6_names_run_tend_programs() {
    let s = Scratch::new("s6-names");
    for (name, code, start) in [
        ("s6-svok", 100, "tend-svok: usage:"),
        ("s6-svstat", 100, "tend-svstat: usage:"),
        ("s6-setuidgid", 100, "tend-setuidgid: usage:"),
        // s6-notifyoncheck's default probe is ./data/check, as tend-check's.
        ("s6-notifyoncheck", 1, "./data/check"),
    ] {
        let o = run(Command::new(s6_link(&s, name)));
        assert_code(&o, code);
        assert!(
            text(&o.stderr).contains(start),
            "{name}: {}",
            text(&o.stderr)
        );
    }
    // A name tend has no program for is not taken.
    let o = run(Command::new(s6_link(&s, "s6-frobnicate")));
    assert_code(&o, 100);
}

#[test]
fn the_overlay_setting_takes_three_words() {
    for (args, env, shown) in [
        (&["-o", "maybe"][..], None, "invalid -o: maybe"),
        (&[][..], Some("yes"), "invalid TEND_OVERLAY: yes"),
    ] {
        let mut c = cmd("tend-init");
        c.args(args).arg("true");
        if let Some(v) = env {
            c.env("TEND_OVERLAY", v);
        }
        let o = run(c);
        assert_code(&o, 100);
        assert_eq!(text(&o.stderr), format!("tend-init: fatal: {shown}\n"));
    }
}

#[test]
fn install_sh_6_lays_out_the_s6_names() {
    let s = Scratch::new("install-6");
    let mut c = Command::new(root().join("packaging/install.sh"));
    c.env("TEND_BUILD", multicall().parent().unwrap())
        .arg("-6")
        .arg(s.join("root"))
        .arg("/usr");
    let o = run(c);
    assert_code(&o, 0);
    let link = |p: &str| std::fs::read_link(s.join("root").join(p)).unwrap();
    assert_eq!(link("init"), Path::new("/usr/bin/tend"));
    let tree = tree_programs();
    assert!(tree.iter().any(|p| p == "tend-svscan"), "{tree:?}");
    assert_eq!(link("command/s6-svscan"), Path::new("/usr/bin/tend-tree"));
    for name in [
        "with-contenv",
        "s6-setuidgid",
        "s6-envuidgid",
        "s6-applyuidgid",
        "s6-envdir",
        "s6-svc",
        "s6-svstat",
        "s6-svwait",
        "s6-svscanctl",
        "s6-notifyoncheck",
        "s6-setsid",
        "s6-softlimit",
    ] {
        // What a tree runs is in tend-tree (its clients too), the rest in tend.
        let ours = format!("tend-{}", name.strip_prefix("s6-").unwrap_or(name));
        let exe = if tree.contains(&ours) {
            "/usr/bin/tend-tree"
        } else {
            "/usr/bin/tend"
        };
        assert_eq!(link(&format!("command/{name}")), Path::new(exe), "{name}");
        assert_eq!(
            link(&format!("usr/bin/{name}")),
            Path::new("/command").join(name)
        );
        assert!(text(&o.stdout).contains(&format!("/command/{name}\n")));
    }
}

#[test]
fn docker_svscanctl_t_stops_the_container() {
    let Some(img) = image(&["legacy"]) else {
        return;
    };
    // The s6 way to stop the tree from inside: the scanner exits, the container stops,
    // the command is not waited for.
    let s = Scratch::new("overlay-svscanctl");
    let t0 = Instant::now();
    let o = run_container(
        &s,
        &[
            "--rm",
            &img,
            "sh",
            "-c",
            "s6-svscanctl -t /run/service; exec sleep 100",
        ],
    );
    assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
    assert_code(&o, 143);
    assert_eq!(
        &order(&s)[order(&s).len() - 1..],
        ["down cont-finish 90-bye"]
    );
    // A deliberate difference. Under s6-overlay 3.2.3.2 the scanner's -t became a halt
    // that failed ("unable to talk to shutdownd"); the services went down but the
    // container lived on until the command ended (`sleep 100` outlived the recorder's
    // 120 s; with `sleep 20` it ended with the command's 0), and cont-finish.d never ran.
    // tend-init keeps s6's meaning of -t for the scanner as PID 1: the container stops.
    let r = recorded("svscanctl");
    assert_eq!(rec_code(&r, "run.exit"), 124);
    assert_eq!(rec_code(&r, "short.exit"), 0);
    assert!(r["short.stderr"].contains("unable to talk to shutdownd"));
    assert!(!r["short.order"].contains("cont-finish"));
}

#[test]
fn slow_docker_restart_runs_the_stages_again() {
    let Some(img) = image(&["baseimage-alpine", "nginx"]) else {
        return;
    };
    if !has_rc() {
        skip("no tend-rc");
        return;
    }
    // /run survives a restart: the stages run again over what the first start left.
    let s = Scratch::new("overlay-restart");
    let c = start(&s, "tend-overlay-restart", &[&img]);
    let twice = || {
        (order(&s)
            .iter()
            .filter(|l| l.starts_with("up svc-nginx"))
            .count()
            == 2)
            .then_some(())
    };
    wait_until(Duration::from_secs(60), "up svc-nginx", || {
        position(&order(&s), "up svc-nginx").map(|_| ())
    });
    assert_code(
        &run({
            let mut d = Command::new("docker");
            d.args(["restart", "-t", "20", &c.0]);
            d
        }),
        0,
    );
    wait_until(Duration::from_secs(60), "up svc-nginx twice", twice);
    let lines = order(&s);
    let second = lines.iter().rposition(|l| l.starts_with("down ")).unwrap() + 1;
    let trees = ["baseimage-alpine", "nginx"];
    assert_up_order(&lines[second..], &edges(&trees), &longruns(&trees));
}

/// The image of `tree` and a container run of it that records `cmd` after the services.
fn bundles_run(s: &Scratch, img: &str, env: &[&str]) -> Output {
    let mut args = vec!["--rm"];
    for e in env {
        args.extend(["-e", e]);
    }
    args.extend([img, "sh", "-c", "echo cmd >>/record/order"]);
    run_container(s, &args)
}

#[test]
fn docker_user_bundles_in_s6_rc_d_with_contents_only_boot_with_a_warning() {
    // The layout s6-overlay's README had users write before 3.2.3.2: s6-rc.d/user and
    // user2 holding only contents.d entries (s6-overlay supplies their type).
    let Some(img) = image(&["user-bundles-old"]) else {
        return;
    };
    if !has_rc() {
        return skip("no tend-rc");
    }
    let s = Scratch::new("overlay-bundles-old");
    let o = bundles_run(&s, &img, &[]);
    let err = text(&o.stderr);
    assert_code(&o, 0);
    let lines = order(&s);
    let at = |l: &str| position(&lines, l).unwrap_or_else(|| panic!("no {l}: {lines:?}\n{err}"));
    assert!(at("up hello") < at("up app"), "{lines:?}");
    assert!(at("up app") < at("up late"), "{lines:?}");
    assert!(at("up late") < at("cmd"), "{lines:?}");
    assert_eq!(
        err.matches("the user bundles belong in /etc/s6-overlay/user-bundles.d")
            .count(),
        1,
        "{err}"
    );
    assert!(!err.contains("fatal"), "{err}");
    // s6-overlay: the same code, steps and warning (in its words). It brings user and
    // user2 up in one `s6-rc change`, ordered by the dependencies alone, and `late`
    // (user2, no dependency) came up before `app`; tend-init brings user2 up after user
    // and services.d, as s6-overlay's README lists the stages: an order s6-overlay
    // allows too.
    let r = recorded("bundles-old");
    assert_code(&o, rec_code(&r, "run.exit"));
    let rec = rec_lines(&r, "run.order");
    assert_eq!(steps(&lines), steps(&rec), "{rec:?}");
    assert_eq!(rec.last().map(String::as_str), Some("cmd"));
    assert!(r["run.stderr"].contains(
        "defining user bundles in /etc/s6-overlay/s6-rc.d is deprecated, please define them \
         in /etc/s6-overlay/user-bundles.d instead"
    ));
}

#[test]
fn docker_user_bundles_d_bundledir_and_profile() {
    let Some(img) = image(&["user-bundles"]) else {
        return;
    };
    if !has_rc() {
        return skip("no tend-rc");
    }
    // (settings, what comes up before the command, a line stderr must hold)
    let cases: [(&[&str], &[&str], &str); 3] = [
        (&[], &["up hello", "up late"], ""),
        (
            &["S6_RUNTIME_BUNDLEDIR=/etc/alt-bundles"],
            &["up other"],
            "",
        ),
        (
            &[
                "S6_RUNTIME_PROFILE=old",
                "S6_RUNTIME_BUNDLEDIR=/etc/alt-bundles",
            ],
            &["up third"],
            "/etc/cont-profile.d/old/s6-overlay/s6-rc.d/user: the user bundles belong in \
             /etc/cont-profile.d/old/s6-overlay/user-bundles.d",
        ),
    ];
    let r = recorded("bundles");
    for (n, (env, ups, warning)) in cases.iter().enumerate() {
        let s = Scratch::new(&format!("overlay-bundles-{n}"));
        let o = bundles_run(&s, &img, env);
        let err = text(&o.stderr);
        assert_code(&o, 0);
        let mut want: Vec<String> = ups.iter().map(|u| u.to_string()).collect();
        want.push("cmd".into());
        assert_eq!(order(&s), want, "{env:?}\n{err}");
        assert!(err.contains(warning), "{env:?}: {err}");
        if warning.is_empty() {
            assert!(!err.contains("user bundles"), "{env:?}: {err}");
        }
        // s6-overlay, case by case (user and user2 in one `s6-rc change`: `late` may
        // come first there).
        let k = |x: &str| format!("case{n}.{x}");
        assert_eq!(r[&k("env")], env.join(" "));
        if n == 1 {
            // A deliberate difference: alt-bundles/user has no `type`. s6-overlay's
            // s6-rc-compile refuses it and its stage 2 ends there, leaving the container
            // up with nothing started (the recorder killed it after 120 s); tend-init
            // takes a `user` without a type as the bundle it must be.
            assert_eq!(rec_code(&r, &k("exit")), 124);
            assert!(r[&k("stderr")].contains("unable to read /etc/alt-bundles/user/type"));
            assert!(rec_lines(&r, &k("order")).is_empty());
            continue;
        }
        assert_code(&o, rec_code(&r, &k("exit")));
        let rec = rec_lines(&r, &k("order"));
        assert_eq!(steps(&order(&s)), steps(&rec), "{env:?}");
        assert_eq!(rec.last().map(String::as_str), Some("cmd"));
        assert_eq!(
            err.contains("the user bundles belong in"),
            r[&k("stderr")].contains("please define them in"),
            "{env:?}: {err}"
        );
    }
    // A bundle directory named but missing: one line, and the command does not run.
    let s = Scratch::new("overlay-bundles-missing");
    let o = bundles_run(&s, &img, &["S6_RUNTIME_BUNDLEDIR=/etc/nowhere"]);
    let err = text(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("unable to read S6_RUNTIME_BUNDLEDIR /etc/nowhere"),
        "{err}"
    );
    assert!(!order(&s).contains(&"cmd".to_string()));
    // s6-overlay refused it too (s6-rc-compile), and nothing ran; a deliberate
    // difference: its container then stayed up (the recorder killed it after 120 s),
    // tend-init's ends.
    assert_eq!(r["case3.env"], "S6_RUNTIME_BUNDLEDIR=/etc/nowhere");
    assert_eq!(rec_code(&r, "case3.exit"), 124);
    assert!(r["case3.stderr"].contains("unable to opendir /etc/nowhere"));
    assert!(rec_lines(&r, "case3.order").is_empty());
}

#[test]
fn docker_services_maxtime_shorter_than_a_oneshot_runs_the_command_unless_told_to_stop() {
    // S6_BEHAVIOUR_IF_STAGE2_FAILS=0: the wait times out, a warning, the command runs.
    let Some(img) = image(&["user-bundles"]) else {
        return;
    };
    if !has_rc() {
        return skip("no tend-rc");
    }
    let slow = [
        "S6_RUNTIME_BUNDLEDIR=/etc/slow-bundles",
        "S6_CMD_WAIT_FOR_SERVICES_MAXTIME=500",
        "S6_BEHAVIOUR_IF_STAGE2_FAILS=0",
    ];
    let s = Scratch::new("overlay-maxtime");
    let o = bundles_run(&s, &img, &slow);
    let err = text(&o.stderr);
    assert_code(&o, 0);
    assert_eq!(order(&s), ["cmd"], "{err}");
    assert!(
        err.contains("tend-init: warning: tend-rc -u change user exited 2"),
        "{err}"
    );
    // As s6-overlay did (its s6-rc: "timed out").
    let r = recorded("maxtime");
    assert_code(&o, rec_code(&r, "behaviour0.exit"));
    assert_eq!(order(&s), rec_lines(&r, "behaviour0.order"));
    assert!(r["behaviour0.stderr"].contains("s6-rc: fatal: timed out"));
    // =2: the container stops with tend-rc's code (2, timed out), the command unrun.
    let s = Scratch::new("overlay-maxtime-stop");
    let mut stop = slow;
    stop[2] = "S6_BEHAVIOUR_IF_STAGE2_FAILS=2";
    let o = bundles_run(&s, &img, &stop);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(order(&s).is_empty(), "{err}");
    assert_code(&o, rec_code(&r, "behaviour2.exit"));
    assert!(rec_lines(&r, "behaviour2.order").is_empty());
}

/// `docker run --user 1000 --security-opt no-new-privileges --read-only`, as the s6-overlay
/// reports of 2025-26 run it: nothing here needs a privilege, so with a /run the user can
/// write the services boot, the command's code is the container's, and `docker stop` is
/// quick; with a root-owned /run, one line says what to change.
#[test]
fn docker_non_root_under_no_new_privileges() {
    let Some(img) = image(&["user-bundles-old"]) else {
        return;
    };
    if !has_rc() {
        return skip("no tend-rc");
    }
    let unprivileged = [
        "--user",
        "1000",
        "--security-opt",
        "no-new-privileges",
        "--read-only",
    ];
    let record = |s: &Scratch| {
        let rec = s.join("record");
        std::fs::create_dir_all(&rec).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&rec, std::fs::Permissions::from_mode(0o777)).unwrap();
    };
    let s = Scratch::new("overlay-nonroot");
    record(&s);
    let mut args = vec!["--rm", "--tmpfs", "/run:exec,uid=1000"];
    args.extend(unprivileged);
    args.extend([
        &img,
        "sh",
        "-c",
        "echo cmd $(id -u) >>/record/order; exit 3",
    ]);
    let o = run_container(&s, &args);
    let err = text(&o.stderr);
    assert_code(&o, 3);
    // What s6-overlay 3.2.3.2 did with the same settings (the image given the usual
    // /var/run link, see tests/overlay-record/record.sh): on this tree, whose `user` is
    // in s6-rc.d, its rc.init writes the bundle's `type` into /etc, which the read-only
    // root refuses; stage 2 ends there and the container stays up with nothing started.
    // A deliberate difference: tend-init reads the tree where it is and writes nothing
    // under /etc. On the 3.2.3.2 layout both boot (nonroot-new, below).
    let r = recorded("nonroot");
    assert_eq!(rec_code(&r, "run.exit"), 124);
    assert!(r["run.stderr"].contains("can't create /etc/s6-overlay/s6-rc.d/user/type"));
    let lines = order(&s);
    let at = |l: &str| position(&lines, l).unwrap_or_else(|| panic!("no {l}: {lines:?}\n{err}"));
    assert!(
        at("up hello") < at("up app") && at("up app") < at("up late"),
        "{lines:?}"
    );
    assert!(at("up late") < at("cmd 1000"), "{lines:?}");
    // Services only, until docker stop: quick, exit 0.
    let s = Scratch::new("overlay-nonroot-stop");
    record(&s);
    let mut args = vec!["--tmpfs", "/run:exec,uid=1000"];
    args.extend(unprivileged);
    args.push(&img);
    let c = start(&s, "tend-overlay-nonroot", &args);
    wait_until(PATIENCE, "up late", || position(&order(&s), "up late"));
    let (took, code) = stop(&c, 10);
    let logs = text(&logs(&c.0).stderr);
    assert_eq!(code, 0, "{logs}");
    assert!(
        took < Duration::from_secs(5),
        "docker stop took {took:?}\n{logs}"
    );
    // A root-owned /run (docker's own --tmpfs /run): one line, exit 111.
    let s = Scratch::new("overlay-nonroot-run");
    record(&s);
    let mut args = vec!["--rm", "--tmpfs", "/run"];
    args.extend(unprivileged);
    args.extend([&img, "true"]);
    let o = run_container(&s, &args);
    assert_code(&o, 111);
    // s6-overlay refuses it too, with 100 and a line that does not say what to change.
    assert_eq!(rec_code(&r, "root-owned-run.exit"), 100);
    assert!(r["root-owned-run.stderr"].contains("wrong permissions on /run"));
    assert_eq!(
        text(&o.stderr),
        "tend-init: fatal: /run is not writable by uid 1000: Permission denied: give the \
         container a /run it can write (docker run --tmpfs /run:exec,uid=1000)\n"
    );
    // A read-only root and no /run of its own, as root.
    let o = run_container(&s, &["--rm", "--read-only", &img, "true"]);
    assert_code(&o, 111);
    assert_code(&o, rec_code(&r, "read-only-root.exit"));
    assert_eq!(
        text(&o.stderr),
        "tend-init: fatal: /run is not writable by uid 0: Read-only file system: give the \
         container a /run of its own (docker run --tmpfs /run:exec)\n"
    );
    // Its own but noexec (docker's default for a tmpfs): the longruns could not start.
    let mut args = vec!["--rm", "--tmpfs", "/run:uid=1000"];
    args.extend(unprivileged);
    args.extend([&img, "true"]);
    let o = run_container(&s, &args);
    assert_code(&o, 111);
    // s6-overlay cannot run its stage 1 there: 126, "Permission denied".
    assert_eq!(rec_code(&r, "noexec-run.exit"), 126);
    assert_eq!(
        text(&o.stderr),
        "tend-init: fatal: /run is mounted noexec, and longruns (app) run from there: mount \
         it exec (docker run --tmpfs /run:exec,uid=1000)\n"
    );
    // The 3.2.3.2 layout with the same settings: s6-overlay booted it as the user too,
    // with the command's code; tend-init the same.
    let Some(img) = image(&["user-bundles"]) else {
        return;
    };
    let r = recorded("nonroot-new");
    let s = Scratch::new("overlay-nonroot-new");
    record(&s);
    let mut args = vec!["--rm", "--tmpfs", "/run:exec,uid=1000"];
    args.extend(unprivileged);
    args.extend([
        &img,
        "sh",
        "-c",
        "echo cmd $(id -u) >>/record/order; exit 3",
    ]);
    let o = run_container(&s, &args);
    assert_code(&o, rec_code(&r, "run.exit"));
    let rec = rec_lines(&r, "run.order");
    assert_eq!(steps(&order(&s)), steps(&rec), "{}", text(&o.stderr));
    assert_eq!(order(&s).last(), rec.last());
    assert_eq!(rec_code(&r, "stop.exit"), 0);
}

/// `exec /run/s6/basedir/bin/halt` from a finish script works where /run is a noexec
/// tmpfs (docker's --tmpfs default), as root and as a user under no_new_privs.
///
/// A deliberate difference: s6-overlay runs its stage 1 from /run, so on a noexec /run
/// it stops at once (126 as root; 1 as the user, who cannot link /var/run either), and
/// the service never runs; tend-init runs no program of its own from /run (its halt
/// there is a link to an executable elsewhere).
#[test]
fn docker_halt_on_a_noexec_run() {
    let Some(img) = image(&["exitcode"]) else {
        return;
    };
    let r = recorded("exitcode");
    assert_eq!(rec_code(&r, "noexec-root.exit"), 126);
    assert!(r["noexec-root.stderr"].contains("/run/s6/basedir/bin/init: Permission denied"));
    assert_eq!(rec_code(&r, "noexec-user.exit"), 1);
    assert!(rec_lines(&r, "noexec-user.order").is_empty());
    for user in [
        &["--tmpfs", "/run"][..],
        &[
            "--tmpfs",
            "/run:uid=1000",
            "--user",
            "1000",
            "--security-opt",
            "no-new-privileges",
        ],
    ] {
        let s = Scratch::new("overlay-halt-noexec");
        let rec = s.join("record");
        std::fs::create_dir_all(&rec).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&rec, std::fs::Permissions::from_mode(0o777)).unwrap();
        let mut args = vec!["--rm"];
        args.extend(user);
        args.push(&img);
        let t0 = Instant::now();
        let o = run_container(&s, &args);
        assert_code(&o, 7);
        assert!(t0.elapsed() < Duration::from_secs(30), "{user:?}");
        assert!(
            !text(&o.stderr).contains("Permission denied"),
            "{}",
            text(&o.stderr)
        );
    }
}

/// tests/overlay-images/extras: a oneshot with `up` and `down`, a longrun running
/// `s6-envdir ./env` over its `env/` directory, and a `run` without its execute bit, which
/// s6-overlay 3.2.3.2 ran all the same (its compiler copies `run` executable). The states
/// while the command runs, the steps down and the code, as s6-overlay's.
#[test]
fn docker_oneshot_down_env_dir_and_a_run_without_its_execute_bit() {
    let Some(img) = image(&["extras"]) else {
        return;
    };
    if !has_rc() {
        return skip("no tend-rc");
    }
    let s = Scratch::new("overlay-extras");
    let o = run_container(
        &s,
        &[
            "--rm",
            &img,
            "sh",
            "-c",
            "sleep 2; for s in envd noexec; do \
             record-step svstat $s $(s6-svstat -o up,wantedup /run/service/$s); done; exit 4",
        ],
    );
    let err = text(&o.stderr);
    let r = recorded("extras");
    assert_code(&o, rec_code(&r, "run.exit"));
    let (lines, rec) = (order(&s), rec_lines(&r, "run.order"));
    assert_eq!(steps(&lines), steps(&rec), "{lines:?}\n{err}");
    for l in rec
        .iter()
        .filter(|l| l.starts_with("svstat ") || l.starts_with("up envd"))
    {
        assert!(lines.contains(l), "{l}: {lines:?}\n{err}");
    }
    // Down: the longrun before the oneshot it depends on, whose `down` ran.
    let at = |l: &str| position(&lines, l).unwrap_or_else(|| panic!("no {l}: {lines:?}"));
    assert!(at("down envd") < at("down setup"), "{lines:?}");
    assert!(at("up setup") < at("up envd"), "{lines:?}");
}
