//! tend-jobs: bpm.yml checked, applied into service directories (atomically, idempotently,
//! only what changed), run for real under tend-svscan, removed; the systemd units checked
//! with systemd-analyze verify.
//!
//! Not tested here: cgroup memory.max / pids.max read back (the test machines offer no
//! cgroup v2 memory or pids controller; the warning that says so is tested instead),
//! the /var/vcap defaults (account, logdir, workdir), which need a BOSH layout.

use crate::common::*;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

fn jobs(args: &[&str]) -> std::process::Output {
    tend("tend-jobs", args)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// (inode, mtime in ns) of every file under a directory, sorted, supervisor state aside.
fn identities(dir: &Path) -> Vec<(String, u64, i64)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if ["supervise", "event", "main"].contains(&name.as_str()) {
                continue;
            }
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            out.push((
                e.path().display().to_string(),
                m.ino(),
                m.mtime() * 1_000_000_000 + m.mtime_nsec(),
            ));
            if m.is_dir() {
                todo.push(e.path());
            }
        }
    }
    out.sort();
    out
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

const TWO: &str = "\
processes:
  - name: web
    executable: /bin/sleep
    args: [\"1000\"]
    env:
      GREETING: \"it's here\"
    limits: {open_files: 100}
    tend:
      user: nobody
      cpus: \"0\"
      ready: {tcp: \"127.0.0.1:1\", timeout: 10s}
  - name: db
    executable: /bin/sleep
    args: [\"2000\"]
    shutdown_signal: INT
    hooks: {pre_start: /bin/true}
    unsafe: {privileged: true}
    tend:
      stop_grace: 5s
      restart: {deaths: 3, within: 30s, then: stop}
      log: {timestamps: rfc3339, size: 64K, count: 3}
";

#[test]
fn check_valid_file_and_unknown_keys_warn() {
    let sc = Scratch::new("jobs-check");
    let f = sc.write(
        "shop.yml",
        &TWO.replace(
            "    shutdown_signal: INT\n",
            "    shutdown_signal: INT\n    colour: blue\n",
        ),
        false,
    );
    let o = jobs(&["check", s(&f)]);
    assert_code(&o, 0);
    assert_eq!(
        text(&o.stdout),
        format!(
            "tend-jobs: {}: job shop: 2 processes, 2 services: valid\n",
            s(&f)
        )
    );
    assert!(
        text(&o.stderr)
            .contains("tend-jobs: warning: unknown key in process db: colour: ignored\n"),
        "{}",
        text(&o.stderr)
    );
    // The job's name from BOSH's layout: JOB/config/bpm.yml.
    let g = sc.write("redis/config/bpm.yml", TWO, false);
    let o = jobs(&["check", s(&g)]);
    assert_code(&o, 0);
    assert!(text(&o.stdout).contains("job redis: 2 processes"));
}

/// Bad input: one line, exit 100, and nothing written into the scan directory.
#[test]
fn bad_input_is_refused_whole() {
    let sc = Scratch::new("jobs-bad");
    let sd = sc.join("sd");
    std::fs::create_dir(&sd).unwrap();
    let cases: &[(&str, &str, &[&str], &str)] = &[
        (
            "malformed.yml",
            "processes:\n  - name: web\n    executable: /bin/true\n  args: [a]\n",
            &[],
            "malformed YAML at line 4 column 3: while parsing a block collection, did not find expected '-' indicator",
        ),
        (
            "tab.yml",
            "processes:\n  - name: web\n\texecutable: /bin/true\n",
            &[],
            "malformed YAML at line 2 column 11: while scanning a plain scalar, found a tab",
        ),
        (
            "unit.yml",
            "processes:\n  - name: web\n    executable: /bin/true\n    limits: {memory: 12Q}\n",
            &[],
            "invalid memory limit of process web: 12Q: a size is N bytes or N with K, M, G or T",
        ),
        (
            "grace.yml",
            "processes:\n  - name: web\n    executable: /bin/true\n    tend: {stop_grace: 3 days}\n",
            &[],
            "invalid tend.stop_grace of process web: 3 days: a duration is N, Nms, Ns, Nm or Nh",
        ),
        (
            "slash.yml",
            "processes:\n  - name: web/x\n    executable: /bin/true\n",
            &[],
            "invalid process name: \"web/x\": it names a directory (no slash, no leading dot, no control characters)",
        ),
        (
            "job.yml",
            "processes:\n  - name: web\n    executable: /bin/true\n",
            &["-n", "a/b"],
            "invalid job name: \"a/b\": it names a directory (no slash, no leading dot, no control characters)",
        ),
        (
            "noexe.yml",
            "processes:\n  - name: web\n    args: [a]\n",
            &[],
            "process web has no executable",
        ),
        (
            "signal.yml",
            "processes:\n  - name: web\n    executable: /bin/true\n    shutdown_signal: NOPE\n",
            &[],
            "invalid shutdown_signal of process web: NOPE: bpm takes TERM or INT",
        ),
    ];
    for (name, body, opts, msg) in cases {
        let f = sc.write(name, body, false);
        for sub in ["check", "apply"] {
            let mut args = vec![sub];
            args.extend_from_slice(opts);
            args.push(s(&f));
            if sub == "apply" {
                args.push(s(&sd));
            }
            let o = jobs(&args);
            assert_code(&o, 100);
            assert_eq!(
                text(&o.stderr),
                format!("tend-jobs: fatal: {}: {msg}\n", s(&f))
            );
        }
    }
    assert!(entries(&sd).is_empty(), "{:?}", entries(&sd));
    // Unreadable file: 111.
    let o = jobs(&["check", s(&sc.join("absent.yml"))]);
    assert_code(&o, 111);
    assert!(text(&o.stderr).starts_with("tend-jobs: fatal: unable to read "));
    // Usage.
    assert_code(&jobs(&["frobnicate", "x"]), 100);
    assert_code(&jobs(&["check"]), 100);
}

/// A scan directory (no scanner) with job `shop` applied from `TWO`: the fixture of the
/// apply and remove cases.
struct Applied {
    sc: Scratch,
    sd: std::path::PathBuf,
    file: std::path::PathBuf,
}

impl Applied {
    fn new(label: &str) -> (Applied, std::process::Output) {
        let sc = Scratch::new(label);
        let sd = sc.join("sd");
        std::fs::create_dir(&sd).unwrap();
        let file = sc.write("shop.yml", TWO, false);
        let o = jobs(&["apply", s(&file), s(&sd)]);
        assert_code(&o, 0);
        (Applied { sc, sd, file }, o)
    }

    fn read(&self, p: &str) -> String {
        std::fs::read_to_string(self.sd.join(p)).unwrap()
    }

    /// Apply `yml` (written over shop.yml) with `extra` options before it.
    fn apply(&self, extra: &[&str], yml: &str) -> std::process::Output {
        let f = self.sc.write("shop.yml", yml, false);
        let mut args = vec!["apply"];
        args.extend(extra);
        args.extend([s(&f), s(&self.sd)]);
        jobs(&args)
    }
}

#[test]
fn apply_writes_the_chain() {
    let (a, o) = Applied::new("jobs-apply");
    assert_eq!(
        text(&o.stdout),
        "tend-jobs: added shop-web\ntend-jobs: added shop-db\n"
    );
    // No scanner: said, not an error.
    assert!(text(&o.stderr).contains(&format!(
        "tend-jobs: warning: no scanner listens on {}: the services start with the next scan\n",
        s(&a.sd)
    )));
    assert_eq!(entries(&a.sd), ["shop-db", "shop-web"]);
    assert_eq!(
        a.read("shop-web/run"),
        "#!/bin/sh\n\
         # Written by tend-jobs for job shop process web: edits are overwritten.\n\
         exec 2>&1\n\
         sv=$PWD\n\
         exec tend-envdir -f \"$sv/env\" \\\n  \
         tend-softlimit -o 100 \\\n  \
         tend-cpuset 0 \\\n  \
         tend-setuidgid nobody \\\n  \
         tend-check -3 3 -T 10s -p 127.0.0.1:1 -- \\\n  \
         /bin/sleep 1000\n"
    );
    assert_eq!(a.read("shop-web/env/GREETING"), "it's here\n");
    assert_eq!(a.read("shop-web/notification-fd"), "3\n");
    assert_eq!(a.read("shop-web/down-signal"), "SIGTERM\n");
    assert_eq!(a.read("shop-web/timeout-kill"), "20000\n");
    assert_eq!(a.read("shop-db/down-signal"), "SIGINT\n");
    assert_eq!(a.read("shop-db/timeout-kill"), "5000\n");
    assert_eq!(
        a.read("shop-db/restart-policy"),
        "# Written by tend-jobs from tend.restart.\ndeaths=3\nseconds=30s\nthen=stop\n"
    );
    assert!(a.read("shop-db/run").contains(
        "timeout -k 5 60s /bin/true || { echo \"tend-jobs: shop-db: pre_start failed ($?)\"; exit 1; }\nexec /bin/sleep 2000\n"
    ));
    assert!(!a.sd.join("shop-db/notification-fd").exists());
    assert_eq!(
        a.read("shop-db/log/run"),
        "#!/bin/sh\n# Written by tend-jobs: the log of shop-db.\nexec tend-log -- n3 s65536 z ./main\n"
    );
    assert_eq!(
        std::fs::metadata(a.sd.join("shop-db/run")).unwrap().mode() & 0o777,
        0o755
    );
}

/// Again: nothing changes, not even an mtime.
#[test]
fn apply_again_changes_nothing() {
    let (a, _) = Applied::new("jobs-again");
    let before = identities(&a.sd);
    let o = jobs(&["apply", s(&a.file), s(&a.sd)]);
    assert_code(&o, 0);
    assert_eq!(
        text(&o.stdout),
        "tend-jobs: job shop: no change (2 services as described)\n"
    );
    assert_eq!(identities(&a.sd), before);
}

/// One process changed: only its directory is new; the other keeps every inode.
#[test]
fn apply_replaces_only_the_changed_process() {
    let (a, _) = Applied::new("jobs-replace");
    let web_before: Vec<_> = identities(&a.sd.join("shop-web"));
    let o = a.apply(&[], &TWO.replace("\"2000\"", "\"2001\""));
    assert_code(&o, 0);
    assert_eq!(text(&o.stdout), "tend-jobs: replaced shop-db\n");
    assert_eq!(identities(&a.sd.join("shop-web")), web_before);
    assert!(a.read("shop-db/run").contains("exec /bin/sleep 2001\n"));
    assert_eq!(entries(&a.sd), ["shop-db", "shop-web"], "no temporary left");
}

/// The web process alone: TWO without its db.
fn web_only() -> String {
    TWO.split("  - name: db").next().unwrap().to_string()
}

/// A process gone from the file: its service goes.
#[test]
fn apply_removes_a_process_gone_from_the_file() {
    let (a, _) = Applied::new("jobs-gone");
    let o = a.apply(&[], &web_only());
    assert_code(&o, 0);
    assert_eq!(text(&o.stdout), "tend-jobs: removed shop-db\n");
    assert_eq!(entries(&a.sd), ["shop-web"]);
}

/// A directory that is not the job's is never replaced.
#[test]
fn apply_never_replaces_another_jobs_directory() {
    let (a, _) = Applied::new("jobs-other");
    std::fs::create_dir(a.sd.join("other-web")).unwrap();
    std::fs::write(a.sd.join("other-web/run"), "#!/bin/sh\n").unwrap();
    let o = a.apply(&["-n", "other"], &web_only());
    assert_code(&o, 111);
    assert_eq!(
        text(&o.stderr).lines().last().unwrap(),
        format!(
            "tend-jobs: fatal: {}/other-web exists and is not a service of job other: not replaced",
            s(&a.sd)
        )
    );
    assert_eq!(a.read("other-web/run"), "#!/bin/sh\n");
}

/// A services directory that cannot be written: 111, one line that names the path and
/// says why in strerror's words, without std's "(os error N)".
#[test]
fn apply_into_an_unwritable_place_says_why_in_one_line() {
    let (a, _) = Applied::new("jobs-unwritable");
    let blocker = a.sc.write("plain-file", "", false);
    let sd = blocker.join("sd");
    let o = jobs(&["apply", s(&a.file), s(&sd)]);
    assert_code(&o, 111);
    let err = text(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("tend-jobs: fatal: "), "{err}");
    assert!(err.contains(s(&blocker)), "{err}");
    assert!(err.ends_with(": Not a directory\n"), "{err}");
    assert!(!err.contains("os error"), "{err}");
}

/// remove: the job's services only; an unknown job is a negative answer.
#[test]
fn remove_takes_the_jobs_services_only() {
    let (a, _) = Applied::new("jobs-remove");
    std::fs::create_dir(a.sd.join("other-web")).unwrap();
    let o = jobs(&["remove", "shop", s(&a.sd)]);
    assert_code(&o, 0);
    assert_eq!(
        text(&o.stdout),
        "tend-jobs: removed shop-db\ntend-jobs: removed shop-web\n"
    );
    assert_eq!(entries(&a.sd), ["other-web"]);
    let o = jobs(&["remove", "shop", s(&a.sd)]);
    assert_code(&o, 1);
    assert_eq!(
        text(&o.stderr),
        format!("tend-jobs: fatal: no service of job shop in {}\n", s(&a.sd))
    );
}

fn proc_field(pid: u64, file: &str, key: &str) -> String {
    let t = std::fs::read_to_string(format!("/proc/{pid}/{file}")).unwrap_or_default();
    t.lines()
        .find(|l| l.starts_with(key))
        .map(|l| l[key.len()..].trim().to_string())
        .unwrap_or_default()
}

fn up_pid(f: &Fleet, name: &str) -> Option<u64> {
    f.status(name)
        .filter(|r| r.is_up() && r.pid > 0)
        .map(|r| r.pid)
}

/// Job `shop` applied under a real scanner: a web server with ready and health probes,
/// user, CPUs and open files; a database-like process with a pre_start hook,
/// shutdown_signal INT and its log. The fixture of `jobs_run_under_svscan`'s steps.
struct Shop {
    // Dropped first: the scanner goes before its scratch directory.
    f: Fleet,
    sc: Scratch,
    www: std::path::PathBuf,
    yml: String,
}

impl Shop {
    fn start() -> Shop {
        let sc = Scratch::new("jobs-run");
        let port = free_port();
        sc.write("server.py", SERVER, false);
        let www = sc.join("www");
        std::fs::create_dir(&www).unwrap();
        // The server runs as nobody and writes `bound` in its working directory.
        std::fs::set_permissions(&www, std::os::unix::fs::PermissionsExt::from_mode(0o777))
            .unwrap();
        sc.write(
            "db.sh",
            "#!/bin/sh\ntrap 'echo got INT > \"$OUT\"; exit 0' INT\necho \"db started as $(id -u) NAME=$NAME\"\nwhile :; do sleep 0.1; done\n",
            true,
        );
        sc.write("pre-start", "#!/bin/sh\necho pre-start says hello\n", true);
        let yml = format!(
            "processes:
  - name: web
    executable: /usr/bin/python3
    args: [{server}, \"{port}\"]
    workdir: {www}
    limits: {{open_files: 100}}
    tend:
      user: nobody
      cpus: \"0\"
      ready: {{http: \"http://127.0.0.1:{port}/\", timeout: 20s}}
      health: {{http: \"http://127.0.0.1:{port}/\", interval: 1s, failures: 2, max_restarts: 5, window: 1h}}
  - name: db
    executable: {db}
    env: {{NAME: one, OUT: {out}}}
    shutdown_signal: INT
    hooks: {{pre_start: {pre}}}
    unsafe: {{privileged: true}}
    tend: {{stop_grace: 10s}}
",
            server = s(&sc.join("server.py")),
            www = s(&www),
            db = s(&sc.join("db.sh")),
            out = s(&sc.join("db.out")),
            pre = s(&sc.join("pre-start")),
        );
        let f = Fleet::start(&sc);
        let shop = Shop { f, sc, www, yml };
        let o = shop.apply(&shop.yml);
        assert_code(&o, 0);
        assert_eq!(
            text(&o.stdout),
            "tend-jobs: added shop-web\ntend-jobs: added shop-web-health\ntend-jobs: added shop-db\n"
        );
        shop
    }

    /// Apply `yml` (written over shop.yml) to the scanner's directory.
    fn apply(&self, yml: &str) -> std::process::Output {
        let file = self.sc.write("shop.yml", yml, false);
        jobs(&["apply", s(&file), s(&self.f.dir)])
    }
}

/// Ready only once the HTTP probe passes; as nobody, on CPU 0, with 100 open files;
/// pre_start's output and the process's go to the log. The pids of web and db.
fn shop_runs_as_described(shop: &Shop) -> (u64, u64) {
    let f = &shop.f;
    let web = wait_until(FLEET_PATIENCE, "shop-web ready", || {
        f.status("shop-web")
            .filter(|r| r.is_up() && r.ready)
            .map(|r| r.pid)
    });
    assert!(shop.www.join("bound").exists());
    assert_eq!(
        proc_field(web, "status", "Uid:").split_whitespace().next(),
        Some("65534")
    );
    assert_eq!(proc_field(web, "status", "Cpus_allowed_list:"), "0");
    assert!(
        proc_field(web, "limits", "Max open files").starts_with("100 "),
        "{}",
        proc_field(web, "limits", "Max open files")
    );
    let current = f.svc("shop-db/log/main/current");
    wait_until(FLEET_PATIENCE, "db's log", || {
        let t = std::fs::read_to_string(&current).unwrap_or_default();
        (t.contains("pre-start says hello") && t.contains("db started as 0 NAME=one")).then_some(())
    });
    let db = wait_until(FLEET_PATIENCE, "shop-db up", || up_pid(f, "shop-db"));
    (web, db)
}

/// Unchanged: no restart.
fn unchanged_apply_restarts_nothing(shop: &Shop, web: u64, db: u64) {
    let o = shop.apply(&shop.yml);
    assert_code(&o, 0);
    assert_eq!(
        text(&o.stdout),
        "tend-jobs: job shop: no change (3 services as described)\n"
    );
    assert_eq!(up_pid(&shop.f, "shop-web"), Some(web));
    assert_eq!(up_pid(&shop.f, "shop-db"), Some(db));
}

/// One process changed: only it restarts; its old instance got its shutdown signal.
/// The new db's pid.
fn changed_process_alone_restarts(shop: &Shop, web: u64, db: u64) -> u64 {
    let f = &shop.f;
    let o = shop.apply(&shop.yml.replace("NAME: one", "NAME: two"));
    assert_code(&o, 0);
    assert_eq!(text(&o.stdout), "tend-jobs: replaced shop-db\n");
    wait_until(FLEET_PATIENCE, "the old db stopped by SIGINT", || {
        (std::fs::read_to_string(shop.sc.join("db.out")).unwrap_or_default() == "got INT\n")
            .then_some(())
    });
    let db2 = wait_until(FLEET_PATIENCE, "the new shop-db", || {
        up_pid(f, "shop-db").filter(|&p| p != db)
    });
    // Up from the fork on: the environment is the new one once the run script's chain
    // has exec'd into the process (same pid), a moment later on a loaded machine.
    wait_until(FLEET_PATIENCE, "the new db's environment", || {
        std::fs::read(format!("/proc/{db2}/environ"))
            .ok()
            .filter(|e| e.split(|&b| b == 0).any(|v| v == b"NAME=two"))
    });
    assert_eq!(up_pid(f, "shop-web"), Some(web), "web was not restarted");
    assert!(
        !entries(&f.dir).iter().any(|n| n.starts_with(".tend-jobs")),
        "{:?}",
        entries(&f.dir)
    );
    db2
}

/// Health: failing probes restart the web server. The new web's pid.
fn failing_health_probe_restarts_web(shop: &Shop, web: u64) -> u64 {
    std::fs::write(shop.www.join("code"), "500").unwrap();
    let web2 = wait_until(FLEET_PATIENCE, "a restart by the health watcher", || {
        up_pid(&shop.f, "shop-web").filter(|&p| p != web)
    });
    std::fs::write(shop.www.join("code"), "200").unwrap();
    assert_ne!(web2, web);
    web2
}

/// remove: every service down and gone, and these processes with them.
fn remove_takes_every_service_down(shop: &Shop, pids: &[u64]) {
    let dir = &shop.f.dir;
    let o = jobs(&["remove", "-t", "20s", "shop", s(dir)]);
    assert_code(&o, 0);
    assert_eq!(
        text(&o.stdout),
        "tend-jobs: removed shop-db\ntend-jobs: removed shop-web\ntend-jobs: removed shop-web-health\n"
    );
    assert_eq!(text(&o.stderr), "");
    assert!(
        entries(dir).iter().all(|n| n.starts_with('.')),
        "{:?}",
        entries(dir)
    );
    wait_until(FLEET_PATIENCE, "the processes gone", || {
        pids.iter()
            .all(|p| !Path::new(&format!("/proc/{p}")).exists())
            .then_some(())
    });
}

/// The job's life under a real scanner, step by step (each step needs the one before:
/// the processes it started, the pids it saw).
#[test]
fn jobs_run_under_svscan() {
    require("timeout");
    let shop = Shop::start();
    let (web, db) = shop_runs_as_described(&shop);
    unchanged_apply_restarts_nothing(&shop, web, db);
    let db2 = changed_process_alone_restarts(&shop, web, db);
    let web2 = failing_health_probe_restarts_web(&shop, web);
    remove_takes_every_service_down(&shop, &[db2, web2]);
}

/// The same files as systemd units pass systemd-analyze verify.
#[test]
fn systemd_units_verify() {
    require("systemd-analyze");
    let sc = Scratch::new("jobs-systemd");
    let units = sc.join("units");
    std::fs::create_dir(&units).unwrap();
    let body = TWO
        .replace("127.0.0.1:1", "127.0.0.1:8080")
        .replace("user: nobody", "user: daemon");
    let f = sc.write("shop.yml", &body, false);
    let o = jobs(&["apply", "--systemd", s(&f), s(&units)]);
    assert_code(&o, 0);
    assert_eq!(
        text(&o.stdout),
        "tend-jobs: wrote shop-web.service\ntend-jobs: wrote shop-db.service\n"
    );
    let web = std::fs::read_to_string(units.join("shop-web.service")).unwrap();
    for line in [
        "ExecStart=/bin/sleep 1000\n",
        "User=daemon\n",
        "Environment=\"GREETING=it's here\"\n",
        "LimitNOFILE=100\n",
        "CPUAffinity=0\n",
        "KillSignal=SIGTERM\n",
        "TimeoutStopSec=20s\n",
        "TimeoutStartSec=10s\n",
    ] {
        assert!(web.contains(line), "{line:?} not in\n{web}");
    }
    let db = std::fs::read_to_string(units.join("shop-db.service")).unwrap();
    for line in [
        "StartLimitIntervalSec=30s\n",
        "StartLimitBurst=3\n",
        "ExecStartPre=/usr/bin/timeout -k 5 60s /bin/true\n",
        "KillSignal=SIGINT\n",
        "TimeoutStopSec=5s\n",
        "Restart=always\n",
    ] {
        assert!(db.contains(line), "{line:?} not in\n{db}");
    }
    assert!(!db.contains("User="), "privileged: root\n{db}");
    let mut c = std::process::Command::new("systemd-analyze");
    c.arg("verify")
        .arg("shop-web.service")
        .arg("shop-db.service")
        .current_dir(&units);
    let v = run(c);
    assert_code(&v, 0);
    // Unchanged: not rewritten.
    let m = std::fs::metadata(units.join("shop-web.service")).unwrap();
    let o = jobs(&["apply", "-s", s(&f), s(&units)]);
    assert_code(&o, 0);
    assert_eq!(
        text(&o.stdout),
        "tend-jobs: job shop: no change (2 units as described)\n"
    );
    let m2 = std::fs::metadata(units.join("shop-web.service")).unwrap();
    assert_eq!((m.ino(), m.mtime_nsec()), (m2.ino(), m2.mtime_nsec()));
    // A process gone: its unit goes; a unit tend-jobs did not write stays.
    std::fs::write(
        units.join("shop-manual.service"),
        "[Service]\nExecStart=/bin/true\n",
    )
    .unwrap();
    let one = sc.write("one.yml", body.split("  - name: db").next().unwrap(), false);
    let o = jobs(&["apply", "-s", "-n", "shop", s(&one), s(&units)]);
    assert_code(&o, 0);
    assert_eq!(text(&o.stdout), "tend-jobs: removed shop-db.service\n");
    assert_eq!(entries(&units), ["shop-manual.service", "shop-web.service"]);
    std::fs::remove_file(units.join("shop-manual.service")).unwrap();
    // A unit that does not run: systemd-analyze fails, so the check above can fail.
    std::fs::write(
        units.join("bad.service"),
        "[Service]\nExecStart=/nonexistent/x\n",
    )
    .unwrap();
    let mut c = std::process::Command::new("systemd-analyze");
    c.arg("verify").arg("bad.service").current_dir(&units);
    assert_ne!(run(c).status.code(), Some(0));
}

/// The shipped examples are valid.
#[test]
fn examples_check() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/jobs");
    let mut n = 0;
    for job in entries(&dir) {
        let f = dir.join(&job).join("config/bpm.yml");
        if !f.exists() {
            continue;
        }
        let o = jobs(&["check", s(&f)]);
        assert_code(&o, 0);
        assert!(
            text(&o.stdout).contains(&format!("job {job}: ")),
            "{}",
            text(&o.stdout)
        );
        assert!(
            !text(&o.stderr).contains("unknown key"),
            "{}",
            text(&o.stderr)
        );
        n += 1;
    }
    assert_eq!(n, 4);
}

/// A missing executable: a warning at apply, then the start fails (in the log) and the
/// supervisor keeps trying; a name that clashes with a health watcher is refused.
#[test]
fn missing_executable_warns_and_fails_at_start() {
    let sc = Scratch::new("jobs-missing");
    let f = Fleet::start(&sc);
    let file = sc.write(
        "ghost.yml",
        "processes:\n  - name: p\n    executable: /nonexistent/ghost\n    unsafe: {privileged: true}\n",
        false,
    );
    let o = jobs(&["apply", s(&file), s(&f.dir)]);
    assert_code(&o, 0);
    assert!(
        text(&o.stderr).contains(
            "tend-jobs: warning: process p: /nonexistent/ghost does not exist (yet): the service will fail to start until it does\n"
        ),
        "{}",
        text(&o.stderr)
    );
    let current = f.svc("ghost-p/log/main/current");
    wait_until(FLEET_PATIENCE, "the failed start in the log", || {
        let t = std::fs::read_to_string(&current).unwrap_or_default();
        (t.contains("/nonexistent/ghost") && t.contains("tend-jobs: ghost-p: exited: code 127"))
            .then_some(())
    });
    let clash = sc.write(
        "clash.yml",
        "processes:\n  - name: web\n    executable: /bin/true\n    tend: {health: {tcp: \"127.0.0.1:1\"}}\n  - name: web-health\n    executable: /bin/true\n",
        false,
    );
    let o = jobs(&["check", s(&clash)]);
    assert_code(&o, 100);
    assert_eq!(
        text(&o.stderr),
        format!(
            "tend-jobs: fatal: {}: process web-health clashes with the health watcher of process web\n",
            s(&clash)
        )
    );
}

/// bpm's defaults on a BOSH-shaped host: the `vcap` account, the job's directory under
/// /var/vcap/jobs as the working directory, and /var/vcap/sys/log/JOB/PROCESS as the
/// logdir. Made in a private mount namespace (a tmpfs over /var, a passwd with vcap bound
/// over /etc/passwd), so this machine's /var and accounts are never touched.
#[test]
fn bosh_defaults_on_a_vcap_host() {
    require("unshare");
    let sc = Scratch::new("jobs-vcap");
    let sd = sc.join("sd");
    std::fs::create_dir(&sd).unwrap();
    let f = sc.write(
        "web.yml",
        "processes:\n  - name: server\n    executable: /bin/sleep\n    args: [\"1000\"]\n",
        false,
    );
    let passwd = sc.write(
        "passwd",
        "root:x:0:0:root:/root:/bin/sh\nvcap:x:1000:1000:vcap:/home/vcap:/bin/sh\n",
        false,
    );
    let script = format!(
        "mount -t tmpfs none /var && mkdir -p /var/vcap/sys/log /var/vcap/jobs/web && \
         mount --bind {} /etc/passwd && exec \"$0\" apply -n web {} {}",
        passwd.display(),
        f.display(),
        sd.display()
    );
    let o = run({
        let mut c = Command::new("unshare");
        c.args(["--mount", "--propagation", "private", "sh", "-c", &script])
            .arg(bin("tend-jobs"));
        c
    });
    assert_code(&o, 0);
    assert!(
        !text(&o.stderr).contains("runs as root"),
        "{}",
        text(&o.stderr)
    );
    let run_script = std::fs::read_to_string(sd.join("web-server/run")).unwrap();
    assert!(
        run_script.contains("cd /var/vcap/jobs/web || exit 111\n"),
        "{run_script}"
    );
    // bpm's walls, as vcap (tend-jail's default user).
    assert!(
        run_script.contains("exec tend-jail -j web -s TERM \\\n  /bin/sleep 1000\n"),
        "{run_script}"
    );
    let log_run = std::fs::read_to_string(sd.join("web-server/log/run")).unwrap();
    assert!(
        log_run.contains("/var/vcap/sys/log/web/server"),
        "{log_run}"
    );
    // Without those (no /var/vcap, an /etc/passwd with no vcap: CI's machine may have
    // one): root (with a warning) and the service's own logdir.
    let rootonly = sc.write("passwd-root", "root:x:0:0:root:/root:/bin/sh\n", false);
    let script = format!(
        "mount -t tmpfs none /var && mount --bind {} /etc/passwd && exec \"$0\" apply -n plain {} {}",
        rootonly.display(),
        f.display(),
        sd.display()
    );
    let o = run({
        let mut c = Command::new("unshare");
        c.args(["--mount", "--propagation", "private", "sh", "-c", &script])
            .arg(bin("tend-jobs"));
        c
    });
    assert_code(&o, 0);
    assert!(
        text(&o.stderr).contains("no tend.user and no vcap account: it runs as root"),
        "{}",
        text(&o.stderr)
    );
    let log_run = std::fs::read_to_string(sd.join("plain-server/log/run")).unwrap();
    assert!(log_run.contains(" ./main\n"), "{log_run}");
}

/// On a BOSH layout (here under -R), every process runs through tend-jail with bpm's
/// settings: the run script's chain, then what the process sees of its walls.
#[test]
fn apply_on_a_bosh_layout_runs_each_process_in_bpms_walls() {
    if !nix::unistd::geteuid().is_root() {
        return skip("tend-jail needs root");
    }
    let sc = Scratch::new("jobs-walled");
    let vcap = sc.join("vcap");
    let _u = Unmount(vec![vcap.join("data/mounts")]);
    std::fs::create_dir(sc.join("g1")).unwrap();
    for d in ["jobs/walled", "packages", "data/packages", "sys/log"] {
        std::fs::create_dir_all(vcap.join(d)).unwrap();
    }
    // bpm's pre_start runs on the host, as root, before the walls: here a script the
    // jail cannot even see.
    let hook = sc.write(
        "pre-start",
        "#!/bin/sh\necho \"pre-start as $(id -u)\"\n",
        true,
    );
    let f = sc.write(
        "bpm.yml",
        &format!("processes:
  - name: server
    executable: /bin/sh
    args: [\"-c\", \"grep -E '^(CapAmb|NoNewPrivs|Seccomp|Uid):' /proc/self/status; readlink /proc/self/ns/mnt; test -d {}/g1 && echo glob-bound; echo started; exec sleep 1000\"]
    capabilities: [NET_BIND_SERVICE]
    ephemeral_disk: true
    limits: {{open_files: 512}}
    additional_volumes: [{{path: /var/vcap/data/shared, writable: true}}, {{path: /var/vcap/data/mounts, shared: true}}]
    unsafe: {{unrestricted_volumes: [{{path: {}/g*}}]}}
    hooks: {{pre_start: {}}}
    shutdown_signal: INT
    tend: {{user: nobody}}
",
            sc.path.display(),
            sc.path.display(),
            hook.display()
        ),
        false,
    );
    let fleet = Fleet::start(&sc);
    let o = jobs(&[
        "apply",
        "-n",
        "walled",
        "-R",
        s(&vcap),
        s(&f),
        s(&fleet.dir),
    ]);
    assert_code(&o, 0);
    assert!(
        !text(&o.stderr).contains("not isolating"),
        "{}",
        text(&o.stderr)
    );
    let run_script = std::fs::read_to_string(fleet.dir.join("walled-server/run")).unwrap();
    let chain = format!(
        "tend-jail -j walled -u nobody -c NET_BIND_SERVICE -v /var/vcap/data/shared:w -v /var/vcap/data/mounts:s -V '{}/g*' -n 512 -s INT -e -R {} \\\n",
        sc.path.display(),
        vcap.display()
    );
    assert!(run_script.contains(&chain), "{run_script}");
    assert_eq!(
        std::fs::read_to_string(fleet.dir.join("walled-server/down-signal")).unwrap(),
        "SIGINT\n"
    );
    let log = vcap.join("sys/log/walled/server/current");
    let seen = wait_until(FLEET_PATIENCE, "the walled process's report", || {
        std::fs::read_to_string(&log)
            .ok()
            .filter(|t| t.contains("started"))
    });
    for line in [
        "pre-start as 0",
        "glob-bound",
        "CapAmb:\t0000000000000400",
        "NoNewPrivs:\t1",
        "Seccomp:\t2",
        "Uid:\t65534\t65534\t65534\t65534",
    ] {
        assert!(seen.contains(line), "{line:?} not in\n{seen}");
    }
    let host_mnt = std::fs::read_link("/proc/self/ns/mnt").unwrap();
    assert!(!seen.contains(&*host_mnt.to_string_lossy()), "{seen}");
    assert!(vcap.join("data/shared").is_dir() && vcap.join("data/walled").is_dir());
}

/// bpm's walls in systemd's words, and systemd-analyze verify takes them.
#[test]
fn systemd_units_carry_bpms_walls() {
    require("systemd-analyze");
    let sc = Scratch::new("jobs-systemd-walls");
    let units = sc.join("units");
    std::fs::create_dir(&units).unwrap();
    let f = sc.write(
        "walled.yml",
        &format!(
            "processes:
  - name: web
    executable: /bin/sleep
    args: [\"1000\"]
    capabilities: [NET_BIND_SERVICE]
    ephemeral_disk: true
    limits: {{open_files: 512}}
    additional_volumes: [{{path: /var/vcap/data/shared, writable: true, allow_executions: true}}]
    unsafe: {{unrestricted_volumes: [{{path: {}/g*}}]}}
",
            sc.path.display()
        ),
        false,
    );
    // systemd does not glob: the unit gets the matches there are when it is written.
    for g in ["g1", "g2"] {
        std::fs::create_dir(sc.join(g)).unwrap();
    }
    let o = jobs(&["apply", "-s", s(&f), s(&units)]);
    assert_code(&o, 0);
    let unit = std::fs::read_to_string(units.join("walled-web.service")).unwrap();
    for line in [
        "PrivateIPC=yes\n",
        "PrivateMounts=yes\n",
        "ProtectSystem=strict\n",
        "TemporaryFileSystem=/var/vcap:ro\n",
        "BindPaths=-/var/vcap/data/walled/tmp:/tmp -/var/vcap/data/walled/tmp:/var/tmp -/var/vcap/data/walled -/var/vcap/data/shared -/var/vcap/data/walled/tmp -/var/vcap/sys/log/walled\n",
        &format!(
            "BindReadOnlyPaths=-/var/vcap/packages -/var/vcap/data/packages -/var/vcap/jobs/walled -{g}/g1 -{g}/g2\n",
            g = sc.path.display()
        ),
        "CapabilityBoundingSet=CAP_NET_BIND_SERVICE\n",
        "AmbientCapabilities=CAP_NET_BIND_SERVICE\n",
        "NoNewPrivileges=yes\n",
        "InaccessiblePaths=-/etc/sv -/proc/kcore",
        "ReadOnlyPaths=-/proc/asound",
        "RestrictNamespaces=yes\n",
        "SystemCallErrorNumber=EPERM\n",
        "LimitNOFILE=512\n",
    ] {
        assert!(unit.contains(line), "{line:?} not in\n{unit}");
    }
    assert!(
        !unit.contains("NoExecPaths=-/var/vcap/data/shared"),
        "{unit}"
    );
    let filter = unit
        .lines()
        .find_map(|l| l.strip_prefix("SystemCallFilter="))
        .unwrap();
    assert!(filter.split(' ').any(|n| n == "read"), "{filter}");
    assert!(
        !filter.split(' ').any(|n| n == "mount" || n == "clone3"),
        "{filter}"
    );
    let mut c = std::process::Command::new("systemd-analyze");
    c.arg("verify")
        .arg("walled-web.service")
        .current_dir(&units);
    assert_code(&run(c), 0);
}
