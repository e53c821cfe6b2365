//! tend-monit against Debian's monit 5.33 on the same control files: the real monit files
//! of Cloud Foundry releases (tests/monit-files/, sources in its README) and hostile ones.
//!
//! Not tested here: `summary` against a running monit 5.33; anything against monit 5.2.5
//! itself (not installed: its formats are checked against its source, as facts); a
//! restart by `tend-svc -r` told from a stop when the supervisor is slower to write its
//! status than the stop program is to finish (the watcher reads it after the stop).

use crate::common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/monit-files");

/// Whether Debian's monit is here; tests that compare with it say `skipped` otherwise.
pub(crate) fn have_monit(test: &str) -> bool {
    let ok = have("monit");
    if !ok {
        skip(format!(
            "{test}: monit is not installed (apt-get install monit)"
        ));
    }
    ok
}

/// A control file written with monit's required mode (0600).
pub(crate) fn control(s: &Scratch, rel: &str, text: &str) -> PathBuf {
    let p = s.write(rel, text, false);
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    p
}

/// `monit -t -c FILE`, its id file kept in the scratch directory.
fn monit_t(s: &Scratch, file: &Path) -> Output {
    let mut c = Command::new("monit");
    c.env("HOME", &s.path).current_dir(&s.path);
    c.arg("-t").arg("-c").arg(file);
    run(c)
}

fn tend_t(s: &Scratch, file: &Path) -> Output {
    let mut c = cmd("tend-monit");
    c.env("HOME", &s.path).current_dir(&s.path);
    c.arg("-t").arg("-c").arg(file);
    run(c)
}

/// Both programs' verdicts, and the errors: monit's first error line must be among
/// tend-monit's (`tend-monit: error: FILE:LINE: …`).
fn both(s: &Scratch, file: &Path) -> (Output, Output) {
    let m = monit_t(s, file);
    let t = tend_t(s, file);
    (m, t)
}

fn assert_same_verdict(m: &Output, t: &Output, what: &str) {
    assert_eq!(
        m.status.success(),
        t.status.success(),
        "{what}: monit {:?} {} / tend-monit {:?} {}",
        m.status,
        text(&m.stderr),
        t.status,
        text(&t.stderr)
    );
}

/// monit's first error line (`FILE:LINE: message`), which tend-monit must name too.
fn assert_names_monits_error(m: &Output, t: &Output) {
    let merr = text(&m.stderr);
    let first = merr.lines().next().expect("monit names an error");
    let terr = text(&t.stderr);
    assert!(
        terr.lines()
            .any(|l| l == format!("tend-monit: error: {first}")),
        "monit: {merr}\ntend-monit: {terr}"
    );
}

/// The stemcell layout in a scratch directory: `/var/vcap/` moved under it, the
/// rendered files in `var/vcap/monit/job/`, every program they name a small script.
fn stemcell(s: &Scratch, jobs: &[&str]) -> PathBuf {
    let root = s.path.display().to_string();
    let relocate = |t: &str| {
        t.replace("/var/vcap/", &format!("{root}/var/vcap/"))
            .replace("uid vcap", "uid root")
            .replace("gid vcap", "gid root")
    };
    let rc = std::fs::read_to_string(format!("{FIXTURES}/monitrc")).unwrap();
    let monitrc = control(s, "var/vcap/bosh/etc/monitrc", &relocate(&rc));
    s.write("var/vcap/monit/monit.user", "vcap:secret\n", false);
    s.write("var/vcap/monit/empty.monitrc", "", false);
    for job in jobs {
        let t = std::fs::read_to_string(format!("{FIXTURES}/rendered/{job}.monitrc")).unwrap();
        let t = relocate(&t);
        for word in t.split(|c: char| c.is_whitespace() || c == '"' || c == '\'') {
            if word.starts_with(&root) && word.contains("/bin/") {
                let rel = word.strip_prefix(&root).unwrap().trim_start_matches('/');
                s.write(rel, "#!/bin/sh\nexit 0\n", true);
            }
        }
        control(s, &format!("var/vcap/monit/job/{job}.monitrc"), &t);
    }
    monitrc
}

const JOBS: &[&str] = &[
    "gorouter",
    "cloud_controller_ng",
    "uaa",
    "postgres",
    "haproxy",
    "garden",
    "rep",
    "director",
];

#[test]
fn monit_release_files_valid_for_both() {
    if !have_monit("monit_release_files_valid_for_both") {
        return;
    }
    for job in JOBS {
        let s = Scratch::new("monit-release");
        let rc = stemcell(&s, &[job]);
        let (m, t) = both(&s, &rc);
        assert_code(&m, 0);
        assert_code(&t, 0);
        assert_eq!(text(&t.stdout), "Control file syntax OK\n", "{job}");
    }
    // All together, as one VM with every job.
    let s = Scratch::new("monit-release-all");
    let rc = stemcell(&s, JOBS);
    let (m, t) = both(&s, &rc);
    assert_code(&m, 0);
    assert_code(&t, 0);
}

#[test]
fn monit_release_files_list_what_is_ignored() {
    let s = Scratch::new("monit-ignored");
    let rc = stemcell(&s, &["cloud_controller_ng", "garden", "gorouter"]);
    let t = tend_t(&s, &rc);
    assert_code(&t, 0);
    let err = text(&t.stderr);
    let root = s.path.display();
    // Their totalmem rules are carried out (measured every cycle): not listed.
    assert!(!err.contains("if totalmem"), "{err}");
    // Their connection tests (TCP, HTTP with a request) are carried out: not listed.
    assert!(!err.contains("if failed"), "{err}");
    let _ = root;
    // The restart limit of gorouter's health checker is carried out, so not listed.
    assert!(!err.contains("restarts"), "{err}");
}

/// One hostile case: a main file (and optional extra files), compared with monit.
struct Case {
    name: &'static str,
    main: String,
    extra: Vec<(&'static str, String)>,
}

fn case(name: &'static str, main: &str) -> Case {
    Case {
        name,
        main: main.into(),
        extra: Vec::new(),
    }
}

/// Run a case under both; the outputs.
fn compare(c: &Case) -> (Scratch, Output, Output) {
    let s = Scratch::new("monit-hostile");
    let root = s.path.display().to_string();
    for (rel, text) in &c.extra {
        control(&s, rel, &text.replace("@ROOT@", &root));
    }
    let main = control(&s, "monitrc", &c.main.replace("@ROOT@", &root));
    let (m, t) = both(&s, &main);
    assert_same_verdict(&m, &t, c.name);
    (s, m, t)
}

const PROC: &str = "check process p with pidfile /run/p.pid\n";

#[test]
fn monit_hostile_syntax_errors_named_as_monit_and_all_of_them() {
    if !have_monit("monit_hostile_syntax_errors_named_as_monit_and_all_of_them") {
        return;
    }
    // Line 40 and line 45 of an included file: monit names the first, tend-monit both.
    let mut inc = String::new();
    for i in 1..=50 {
        inc.push_str(&match i {
            1 => "check process a with pidfile /run/a.pid\n".to_string(),
            40 => "  if totalmem > 100 Mb for 3 cycles then restartx\n".into(),
            45 => "  frobnicate now\n".into(),
            _ => format!("  # line {i}\n"),
        });
    }
    let mut c = case(
        "line 40 of an include",
        "set daemon 10\ninclude @ROOT@/inc/*.monitrc\n",
    );
    c.extra.push(("inc/a.monitrc", inc));
    let (s, m, t) = compare(&c);
    assert_code(&m, 1);
    assert_code(&t, 1);
    let inc = format!("{}/inc/a.monitrc", s.path.display());
    assert_eq!(
        text(&m.stderr),
        format!("{inc}:40: syntax error 'restartx'\n")
    );
    let terr = text(&t.stderr);
    assert!(
        terr.contains(&format!(
            "tend-monit: error: {inc}:40: syntax error 'restartx'\n"
        )),
        "{terr}"
    );
    assert!(
        terr.contains(&format!(
            "tend-monit: error: {inc}:45: syntax error 'frobnicate'\n"
        )),
        "{terr}"
    );
    assert!(terr.ends_with("2 errors in the control file\n"), "{terr}");

    for (name, src) in [
        (
            "unknown statement",
            format!("set daemon 10\n{PROC}  frobnicate\n"),
        ),
        ("unknown set", "set frobnicate 10\n".to_string()),
        (
            "unknown action",
            format!("{PROC}  if totalmem > 1 Mb then explode\n"),
        ),
        (
            "single-quoted program",
            format!("{PROC}  start program = '/bin/true'\n"),
        ),
        (
            "relative pidfile",
            "check process p with pidfile run/p.pid\n".to_string(),
        ),
        (
            "keyword as password",
            "set httpd port 2822\n  allow admin:secret\n".to_string(),
        ),
        ("unbalanced quote", format!("{PROC}  group 'vcap\n")),
        (
            "bad rate",
            format!("{PROC}  if totalmem > 1 Mb for x cycles then alert\n"),
        ),
        (
            "bad restart limit",
            format!("{PROC}  if 3 restarts within cycles then timeout\n"),
        ),
        ("bad mode", format!("{PROC}  mode sometimes\n")),
        ("bad every", format!("{PROC}  every often\n")),
    ] {
        let (_s, m, t) = compare(&case(name, &src));
        assert_code(&t, 1);
        assert_names_monits_error(&m, &t);
    }
    // Refused by both, where monit names the token differently (it shows `=` of the
    // program's `start program = "` here; tend-monit shows `start`).
    let (_s, _m, t) = compare(&case(
        "no pidfile",
        "check process p\n  start program = \"/bin/true\"\n",
    ));
    assert_code(&t, 1);
}

#[test]
fn monit_hostile_whole_file_errors() {
    if !have_monit("monit_hostile_whole_file_errors") {
        return;
    }
    for (name, src) in [
        ("duplicate name", format!("{PROC}{PROC}")),
        ("undefined dependency", format!("{PROC}  depends on nothing\n")),
        (
            "dependency loop",
            "check process a with pidfile /run/a.pid\n depends on b\ncheck process b with pidfile /run/b.pid\n depends on a\n".to_string(),
        ),
        ("unknown user", format!("{PROC}  start program = \"/bin/true\" as uid no-such-user-here\n")),
        ("unknown group", format!("{PROC}  start program = \"/bin/true\" as uid root and gid no-such-group-here\n")),
    ] {
        let (_s, m, t) = compare(&case(name, &src));
        assert_code(&m, 1);
        assert_code(&t, 1);
        // The message after `FILE:LINE: ` (monit gives no line for some of these).
        let merr = text(&m.stderr);
        let words: String = merr.split(": ").last().unwrap().chars().take(20).collect();
        assert!(text(&t.stderr).contains(&words), "{name}: monit {merr} / tend {}", text(&t.stderr));
    }
}

#[test]
fn monit_hostile_input_both_refuse() {
    if !have_monit("monit_hostile_input_both_refuse") {
        return;
    }
    // A 10 MB word: monit's lexer gives up (exit 2), tend-monit names the line (exit 1).
    let big = format!("{PROC}  group {}\n", "a".repeat(10 << 20));
    let s = Scratch::new("monit-big");
    let f = control(&s, "monitrc", &big);
    let (m, t) = both(&s, &f);
    assert!(!m.status.success());
    assert_code(&t, 1);
    let terr = text(&t.stderr);
    assert!(
        terr.contains("monitrc:2: word longer than 65536 bytes"),
        "{terr}"
    );
    assert!(terr.len() < 1000, "no echo of the word");

    // A control file readable by others: both refuse it before reading.
    let s = Scratch::new("monit-mode");
    let f = control(&s, "monitrc", PROC);
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (m, t) = both(&s, &f);
    assert_code(&m, 1);
    assert_code(&t, 1);
    assert_eq!(
        text(&t.stderr),
        format!(
            "tend-monit: fatal: {}: permission 0644 is wrong, maximum 0700 allowed\n",
            f.display()
        )
    );

    // No such file: both exit 1.
    let (m, t) = both(&s, &s.join("nonexistent"));
    assert_code(&m, 1);
    assert_code(&t, 1);

    // Binary garbage (without a NUL byte: monit stops reading at one and takes what
    // came before, where tend-monit reads on).
    let s = Scratch::new("monit-garbage");
    let f = s.join("monitrc");
    std::fs::write(&f, b"\xff\xfe check \x01 process \"\n\x7f").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (m, t) = both(&s, &f);
    assert_eq!(m.status.success(), t.status.success());
    assert_code(&t, 1);
}

#[test]
fn monit_accepted_forms_agree() {
    if !have_monit("monit_accepted_forms_agree") {
        return;
    }
    for (name, src) in [
        ("include glob matching nothing", "set daemon 10\ninclude @ROOT@/none/*.monitrc\n".to_string()),
        ("keyword case", "SET DAEMON 10\nCheck Process p With Pidfile /run/p.pid\n  START PROGRAM = \"/bin/true\"\n  GROUP vcap\n  Mode Manual\n".to_string()),
        ("free form", "check process p\n with\n pidfile\n /run/p.pid start program = \"/bin/true\" group vcap\n".to_string()),
        ("continuation", format!("{PROC}  start program = \"/bin/true\" \\\n    with timeout 10 seconds\n")),
        ("comments", format!("# top\n{PROC}  # inside\n  group vcap # after\n")),
        (
            "depends across comma-newline",
            "check process a with pidfile /run/a.pid\ncheck process b with pidfile /run/b.pid\ncheck process c with pidfile /run/c.pid\n  depends on a,\n    b\n".to_string(),
        ),
        ("unterminated program at end of file", format!("{PROC}  start program = \"/bin/true")),
        (
            "every statement BOSH writes",
            "set daemon 10 with start delay 5\nset logfile /tmp/monit.log\nset eventqueue basedir /tmp/q slots 100\nset mailserver 127.0.0.1 port 2825\nset alert bosh@localhost\nset mail-format {\n  from: monit@localhost\n  subject: $SERVICE $EVENT\n  message: Service: $SERVICE\n  Event: $EVENT\n}\nset httpd port 2822 and use address 127.0.0.1\n  allow admin:s3cret\n  allow reader:pw read-only\ncheck process p with pidfile /run/p.pid\n  start program = \"/bin/sh -c 'exec sleep 1000'\" as uid root and gid root with timeout 30 seconds\n  stop program = \"/bin/true\"\n  if failed port 8080 protocol http request \"/health\" with timeout 5 seconds for 3 cycles then restart\n  if failed unixsocket /run/p.sock then alert\n  if totalmem > 100 Mb for 3 cycles then alert\n  if cpu > 80% for 5 cycles then restart\n  if children > 10 then alert\n  if 5 restarts within 5 cycles then timeout\n  every 2 cycles\n  group vcap\n  mode manual\ncheck process q matching \"sleep\"\n  not every \"* 0-6 * * *\"\ncheck file f with path /etc/hostname\n  if changed checksum then alert\ncheck filesystem root with path /\n  if space usage > 90% then alert\ncheck host h with address 127.0.0.1\n  if failed ping then alert\ncheck system $HOST\n  if loadavg (1min) > 4 then alert\ncheck program prog with path \"/bin/true x\" with timeout 10 seconds\n  if status != 0 then alert\n".to_string(),
        ),
    ] {
        let (_s, m, t) = compare(&case(name, &src));
        assert_code(&m, 0);
        assert_code(&t, 0);
    }
}

#[test]
fn monit_check_name_not_a_file_name_refused() {
    // monit accepts it; tend-monit refuses a name that would become a path.
    let s = Scratch::new("monit-name");
    for name in ["\"a/b\"", "\"..\"", "\".hidden\""] {
        let f = control(
            &s,
            "monitrc",
            &format!("check process {name} with pidfile /run/p.pid\n"),
        );
        let t = tend_t(&s, &f);
        assert_code(&t, 1);
        assert!(
            text(&t.stderr).contains("cannot be a file name"),
            "{}",
            text(&t.stderr)
        );
    }
}

#[test]
fn monit_usage_and_version() {
    let o = tend("tend-monit", ["-x"]);
    assert_code(&o, 100);
    assert!(text(&o.stderr).starts_with("tend-monit: usage: tend-monit"));
    let o = tend("tend-monit", ["-V"]);
    assert_code(&o, 0);
    assert!(text(&o.stdout).starts_with("This is tend-monit version "));
    // No -c and no control file in the search order (HOME and the working directory are
    // an empty scratch directory; /etc/monit/monitrc is Debian's, so only when absent).
    if !Path::new("/etc/monitrc").exists()
        && !Path::new("/etc/monit/monitrc").exists()
        && !Path::new("/usr/local/etc/monitrc").exists()
        && !Path::new("/var/vcap/bosh/etc/monitrc").exists()
    {
        let s = Scratch::new("monit-none");
        let mut c = cmd("tend-monit");
        c.env("HOME", &s.path).current_dir(&s.path).arg("-t");
        let o = run(c);
        assert_code(&o, 111);
        assert!(text(&o.stderr).contains("no control file"));
        // A stemcell's, where its monit looks (the agent gives no -c), among them.
        assert!(
            text(&o.stderr).contains("/etc/monit/monitrc, /var/vcap/bosh/etc/monitrc, "),
            "{}",
            text(&o.stderr)
        );
    }
}

// ---- running what the files describe ----

/// A small daemon in the way BOSH jobs' ctl scripts start theirs: it logs `start NAME`,
/// then detaches (a new session, in the background) a process that writes its pid into
/// the pidfile and sleeps; the start program itself exits at once.
pub(crate) const DAEMON: &str = r#"#!/bin/sh
# daemon PIDFILE LOG NAME
echo "start $3" >> "$2"
setsid sh -c 'echo $$ > "$1.tmp" && mv "$1.tmp" "$1" && exec sleep 100000' sh "$1" </dev/null >/dev/null 2>&1 &
"#;

/// A machine in a scratch directory: test daemons, a control file, tend-monit -I on a
/// scan directory of its own; everything under it killed at the end.
/// Fields drop in order: the daemon first, then everything under the directory, then
/// the directory (a process whose directory is gone no longer shows as under it).
struct Vm {
    _daemon: Option<Daemon>,
    _kill: KillUnder,
    s: Scratch,
    rc: PathBuf,
    scan: PathBuf,
}

impl Vm {
    fn new(name: &str, checks: &str) -> Vm {
        let s = Scratch::new(name);
        let root = s.path.display().to_string();
        s.write("bin/daemon", DAEMON, true);
        std::fs::create_dir_all(s.join("run")).unwrap();
        let text = format!("set daemon 10\n{}", checks.replace("@ROOT@", &root));
        let rc = control(&s, "monitrc", &text);
        let scan = s.join("scan");
        let kill = KillUnder(s.path.clone());
        Vm {
            s,
            rc,
            scan,
            _daemon: None,
            _kill: kill,
        }
    }

    fn start(&mut self) {
        self.start_with_path(&path_env());
    }

    /// The daemon with `path` as its PATH (tend's directory on it, or not).
    fn start_with_path(&mut self, path: &std::ffi::OsStr) {
        let mut c = cmd("tend-monit");
        c.env("PATH", path);
        c.current_dir(&self.s.path);
        // Relative, as an operator in /var/vcap/bosh/etc may give it.
        c.arg("-c")
            .arg(self.rc.strip_prefix(&self.s.path).unwrap_or(&self.rc))
            .arg("-S")
            .arg(&self.scan)
            .arg("-I");
        c.stderr(std::fs::File::create(self.s.join("tend-monit.log")).unwrap());
        self._daemon = Some(Daemon::start(c));
    }

    fn monit(&self, args: &[&str]) -> Output {
        let mut c = cmd("tend-monit");
        c.current_dir(&self.s.path);
        c.arg("-c")
            .arg(&self.rc)
            .arg("-S")
            .arg(&self.scan)
            .args(args);
        run(c)
    }

    fn summary(&self) -> String {
        text(&self.monit(&["summary"]).stdout)
    }

    /// The summary row of `name`: its state.
    fn state(&self, name: &str) -> Option<String> {
        let head = format!("Process '{name}'");
        self.summary()
            .lines()
            .find(|l| l.starts_with(&head))
            .map(|l| l[36..].to_string())
    }

    fn wait_state(&self, name: &str, want: &str) {
        wait_until(3 * PATIENCE, &format!("{name} {want}"), || {
            (self.state(name).as_deref() == Some(want)).then_some(())
        });
    }

    fn pid(&self, name: &str) -> Option<i32> {
        let t = std::fs::read_to_string(self.s.join(format!("run/{name}.pid"))).ok()?;
        let pid: i32 = t.trim().parse().ok()?;
        (proc_state(pid as u64) != 'Z' && Path::new(&format!("/proc/{pid}")).exists())
            .then_some(pid)
    }

    fn log(&self) -> Vec<String> {
        lines(&self.s.join("log"))
    }
}

use std::time::Duration;

/// A check the way release files write one, for the test daemon.
pub(crate) fn check(name: &str, extra: &str) -> String {
    format!(
        "check process {name} with pidfile @ROOT@/run/{name}.pid\n  start program = \"@ROOT@/bin/daemon @ROOT@/run/{name}.pid @ROOT@/log {name}\" with timeout 10 seconds\n  stop program = \"/bin/sh -c 'echo stop {name} >> @ROOT@/log; kill $(cat @ROOT@/run/{name}.pid)'\"\n  group vcap\n{extra}"
    )
}

#[test]
fn monit_runs_checks_restarts_at_once_stops_in_order() {
    let mut vm = Vm::new(
        "monit-run",
        &format!(
            "{}{}{}",
            check("db", ""),
            check("web", "  depends on db\n"),
            check("worker", "  depends on web\n")
        ),
    );
    vm.start();
    for n in ["db", "web", "worker"] {
        vm.wait_state(n, "running");
    }
    let summary = vm.summary();
    assert!(
        summary.starts_with("The Monit daemon 5.2.5 uptime: 0m \n\nProcess 'db'"),
        "{summary}"
    );
    assert_eq!(
        summary.lines().nth(2),
        Some(format!("{:<36}running", "Process 'db'")).as_deref()
    );
    // Started in dependency order.
    let starts: Vec<String> = vm.log();
    assert_eq!(
        starts,
        ["start db", "start web", "start worker"],
        "{starts:?}"
    );

    // Killed: started again at once (no cycle), a new pid.
    let old = vm.pid("web").unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(old),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let new = wait_until(3 * PATIENCE, "web restarted", || {
        vm.pid("web").filter(|&p| p != old)
    });
    assert_ne!(new, old);
    // web's dependent restarted with it, as monit does.
    vm.wait_state("web", "running");
    vm.wait_state("worker", "running");

    // stop all: dependents first; start all: dependencies first.
    std::fs::write(vm.s.join("log"), "").unwrap();
    assert_code(&vm.monit(&["stop", "all"]), 0);
    for n in ["db", "web", "worker"] {
        assert_eq!(vm.state(n).as_deref(), Some("not monitored"));
        assert_eq!(vm.pid(n), None, "{n} stopped");
    }
    assert_eq!(vm.log(), ["stop worker", "stop web", "stop db"]);
    std::fs::write(vm.s.join("log"), "").unwrap();
    assert_code(&vm.monit(&["-g", "vcap", "start"]), 0);
    assert_eq!(vm.log(), ["start db", "start web", "start worker"]);
    for n in ["db", "web", "worker"] {
        assert_eq!(vm.state(n).as_deref(), Some("running"));
    }

    // stop NAME stops what depends on it first; start NAME starts what it depends on.
    std::fs::write(vm.s.join("log"), "").unwrap();
    assert_code(&vm.monit(&["stop", "web"]), 0);
    assert_eq!(vm.log(), ["stop worker", "stop web"]);
    assert_eq!(vm.state("db").as_deref(), Some("running"));
    assert_code(&vm.monit(&["start", "worker"]), 0);
    assert_eq!(
        vm.log(),
        ["stop worker", "stop web", "start web", "start worker"]
    );

    // unmonitor, then kill: not started again.
    assert_code(&vm.monit(&["unmonitor", "worker"]), 0);
    let w = vm.pid("worker").unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(w),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    wait_until(PATIENCE, "worker gone", || {
        vm.pid("worker").is_none().then_some(())
    });
    // Longer than the supervisor's restart delay.
    stays_for(
        Duration::from_millis(1500),
        "an unmonitored service is not restarted",
        || vm.pid("worker").is_none(),
    );
    assert_eq!(vm.state("worker").as_deref(), Some("not monitored"));

    // Unknown service: monit's words, exit 1.
    let o = vm.monit(&["start", "nosuch"]);
    assert_code(&o, 1);
    assert!(text(&o.stderr).contains("There is no service by that name"));
}

#[test]
fn monit_daemon_restart_takes_the_tree_over() {
    let mut vm = Vm::new("monit-takeover", &check("db", ""));
    vm.start();
    vm.wait_state("db", "running");
    let pid = vm.pid("db").unwrap();
    assert_code(&vm.monit(&["quit"]), 0);
    wait_until(PATIENCE, "daemon gone", || {
        (!vm.monit(&["summary"]).status.success()).then_some(())
    });
    assert_eq!(vm.pid("db"), Some(pid), "quit leaves the services running");
    vm.start();
    vm.wait_state("db", "running");
    assert_eq!(
        vm.pid("db"),
        Some(pid),
        "a new tend-monit takes over, restarting nothing"
    );
    assert_eq!(vm.log(), ["start db"]);
}

#[test]
fn monit_daemon_sigkilled_leaves_the_jobs_and_a_new_one_takes_them_over() {
    // What the stemcell's systemd does (KillMode=process) and a chaos run does: the daemon
    // SIGKILLed, its tree left running. The next tend-monit starts nothing twice, and a
    // job that died while no daemon ran is started again by it.
    let mut vm = Vm::new(
        "monit-sigkill",
        &format!("{}{}", check("db", ""), check("web", "")),
    );
    vm.start();
    vm.wait_state("db", "running");
    vm.wait_state("web", "running");
    let (db, web) = (vm.pid("db").unwrap(), vm.pid("web").unwrap());
    let mut daemon = vm._daemon.take().unwrap();
    daemon.signal(nix::sys::signal::Signal::SIGKILL);
    daemon.wait_exit(PATIENCE).expect("the daemon killed");
    assert!(
        !vm.monit(&["summary"]).status.success(),
        "no daemon answers"
    );
    assert_eq!(vm.pid("db"), Some(db), "the kill leaves db running");
    // web dies while no daemon runs.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(web),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    vm.start();
    vm.wait_state("db", "running");
    wait_until(3 * PATIENCE, "web started again", || {
        vm.pid("web").filter(|&p| p != web)
    });
    assert_eq!(vm.pid("db"), Some(db), "db taken over, not restarted");
    let log = vm.log();
    assert_eq!(
        log.iter().filter(|l| l.as_str() == "start db").count(),
        1,
        "{log:?}"
    );
    assert_eq!(
        log.iter().filter(|l| l.as_str() == "start web").count(),
        2,
        "{log:?}"
    );
}

#[test]
fn monit_bad_pidfiles_and_start_programs() {
    let mut vm = Vm::new(
        "monit-badpid",
        "check process one with pidfile @ROOT@/run/one.pid\n  start program = \"/bin/sh -c 'echo 1 > @ROOT@/run/one.pid'\" with timeout 2 seconds\n\
         check process garbage with pidfile @ROOT@/run/garbage.pid\n  start program = \"/bin/sh -c 'echo xyz > @ROOT@/run/garbage.pid'\" with timeout 2 seconds\n\
         check process never with pidfile @ROOT@/run/never.pid\n  start program = \"/bin/true\" with timeout 2 seconds\n\
         check process hangs with pidfile @ROOT@/run/hangs.pid\n  start program = \"/bin/sleep 1000\" with timeout 2 seconds\n",
    );
    vm.start();
    for n in ["one", "garbage", "never", "hangs"] {
        vm.wait_state(n, "Execution failed");
    }
    let log = std::fs::read_to_string(vm.s.join("tend-monit.log")).unwrap();
    assert!(log.contains("one.pid: names pid 1: refused"), "{log}");
    assert!(log.contains("garbage.pid: not a pid: xyz"), "{log}");
    assert!(
        log.contains("tend-monit never: warning: start failed:"),
        "{log}"
    );
    // Said once per start, not once per look.
    assert!(log.matches("names pid 1").count() <= 4, "{log}");
}

// ---- the HTTP interface ----

pub(crate) const AGENT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/monit-files/bosh-agent/agent_client.py"
);

/// The BOSH agent's view of a status document (see agent_client.py).
fn agent(args: &[&str]) -> String {
    let mut c = Command::new("python3");
    c.arg(AGENT).args(args);
    let o = run(c);
    assert_code(&o, 0);
    text(&o.stdout)
}

/// One raw HTTP exchange: the status and the whole answer.
pub(crate) fn http(port: u16, request: &[u8]) -> (u16, String) {
    use std::io::{Read, Write};
    // A server just started (monit 5.33 opens its port a moment after it forks) may not
    // listen yet: a refused connection is tried again for a while.
    let mut s = wait_until(PATIENCE, "the HTTP server listening", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).ok()
    });
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(request).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let t = text(&out);
    let status = t.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, t)
}

pub(crate) fn basic(user_pw: &str) -> String {
    // Test-side base64 (the server's decoder is what is under test).
    const T: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let b = user_pw.as_bytes();
    let mut o = String::new();
    for c in b.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                o.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                o.push('=');
            }
        }
    }
    o
}

pub(crate) fn post(port: u16, path: &str, auth: &str, extra: &str, body: &str) -> (u16, String) {
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Basic {}\r\nContent-Type: application/x-www-form-urlencoded\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        basic(auth),
        body.len()
    );
    http(port, req.as_bytes())
}

pub(crate) fn get(port: u16, path: &str, auth: &str) -> (u16, String) {
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Basic {}\r\n\r\n",
        basic(auth)
    );
    http(port, req.as_bytes())
}

fn httpd_vm(name: &str, port: u16) -> Vm {
    let checks = format!(
        "set httpd port {port} and use address 127.0.0.1\n  allow cleartext @ROOT@/monit.user\n  allow ro:pw read-only\n{}{}",
        check("db", ""),
        check("web", "  depends on db\n")
    );
    let vm = Vm::new(name, &checks);
    vm.s.write("monit.user", "vcap:s3cret\n", false);
    vm
}

#[test]
fn monit_http_agent_requests_and_refusals() {
    require("python3");
    let port = free_port();
    let mut vm = httpd_vm("monit-http", port);
    vm.start();
    vm.wait_state("db", "running");
    vm.wait_state("web", "running");
    let url = format!("http://127.0.0.1:{port}");
    let view = agent(&[&url, "vcap", "s3cret"]);
    let lines: Vec<&str> = view.lines().collect();
    assert!(lines[0].starts_with("incarnation "), "{view}");
    assert_eq!(
        &lines[1..],
        ["db running 1 0 live", "web running 1 0 live"],
        "{view}"
    );

    // Authentication as monit: 401 with a challenge, for no or wrong credentials.
    let (st, t) = http(port, b"GET /_status2?format=xml HTTP/1.0\r\n\r\n");
    assert_eq!(st, 401);
    assert!(t.contains("WWW-Authenticate: Basic realm=\"monit\""), "{t}");
    assert_eq!(get(port, "/_status2?format=xml", "vcap:wrong").0, 401);
    // 5.33's layout too.
    let (st, t) = get(port, "/_status?format=xml", "vcap:s3cret");
    assert_eq!(st, 200);
    assert!(t.contains("<service type=\"3\"><name>db</name>"), "{t}");

    // The agent's bare POST acts.
    let (st, _) = post(port, "/web", "vcap:s3cret", "", "action=stop");
    assert_eq!(st, 200);
    vm.wait_state("web", "not monitored");
    let view = agent(&[&url, "vcap", "s3cret"]);
    assert!(view.contains("web unknown 0 0 -"), "{view}");
    assert_eq!(post(port, "/web", "vcap:s3cret", "", "action=start").0, 200);
    vm.wait_state("web", "running");

    // Refused, and nothing changes (the other refusals: http.rs's `respond_rows`).
    let pid = vm.pid("web");
    for (what, (st, t), want, words) in [
        (
            "read-only",
            post(port, "/web", "ro:pw", "", "action=stop"),
            403,
            "sufficient privileges",
        ),
        (
            "malformed",
            http(port, b"GARBAGE\x01\r\n\r\n"),
            400,
            "Malformed",
        ),
        (
            "huge header",
            http(
                port,
                format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(20000)).as_bytes(),
            ),
            431,
            "too large",
        ),
        (
            "huge body",
            post(port, "/web", "vcap:s3cret", "", &"a".repeat(20000)),
            413,
            "too large",
        ),
    ] {
        assert_eq!(st, want, "{what}: {t}");
        assert!(t.contains(words), "{what}: {t}");
    }
    assert_eq!(vm.pid("web"), pid, "refused requests change nothing");
    assert_eq!(vm.state("web").as_deref(), Some("running"));

    // The page's own buttons: the cookie and the form's token, from this server.
    let (st, page) = get(port, "/", "vcap:s3cret");
    assert_eq!(st, 200);
    let token = page
        .split("securitytoken=")
        .nth(1)
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    assert!(
        page.contains(&format!("name=\"securitytoken\" value=\"{token}\"")),
        "{page}"
    );
    assert!(page.contains("<td class=\"state\">running</td>"), "{page}");
    let same = format!("Origin: http://127.0.0.1:{port}\r\nCookie: securitytoken={token}\r\n");
    let (st, _) = post(
        port,
        "/web",
        "vcap:s3cret",
        &same,
        &format!("securitytoken={token}&action=restart"),
    );
    assert_eq!(st, 200);
    wait_until(3 * PATIENCE, "web restarted", || {
        vm.pid("web").filter(|p| Some(*p) != pid)
    });
}

#[test]
fn monit_http_slow_client_blocks_no_one() {
    use std::io::Write;
    let port = free_port();
    let mut vm = httpd_vm("monit-http-slow", port);
    vm.start();
    vm.wait_state("db", "running");
    // Clients that connect and send half a request, or nothing.
    let mut idle = Vec::new();
    for i in 0..8 {
        // A server just started (monit 5.33 opens its port a moment after it forks) may not
        // listen yet: a refused connection is tried again for a while.
        let mut s = wait_until(PATIENCE, "the HTTP server listening", || {
            std::net::TcpStream::connect(("127.0.0.1", port)).ok()
        });
        if i % 2 == 0 {
            s.write_all(b"GET /_status2?format=xml HTTP/1.1\r\nHost: x\r\n")
                .unwrap();
        }
        idle.push(s);
    }
    let t0 = std::time::Instant::now();
    let (st, _) = get(port, "/_status2?format=xml", "vcap:s3cret");
    assert_eq!(st, 200);
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "answered while others hang: {:?}",
        t0.elapsed()
    );
    drop(idle);
    assert_eq!(get(port, "/_status2?format=xml", "vcap:s3cret").0, 200);
}

#[test]
fn monit_http_incarnation_changes_on_restart() {
    require("python3");
    let port = free_port();
    let mut vm = httpd_vm("monit-http-inc", port);
    vm.start();
    vm.wait_state("db", "running");
    let url = format!("http://127.0.0.1:{port}");
    let first = agent(&[&url, "vcap", "s3cret"]);
    let pid = vm.pid("db");
    assert_code(&vm.monit(&["quit"]), 0);
    wait_until(PATIENCE, "daemon gone", || {
        (!vm.monit(&["summary"]).status.success()).then_some(())
    });
    vm.start();
    vm.wait_state("db", "running");
    let second = wait_until(PATIENCE, "http back", || {
        let mut c = Command::new("python3");
        c.arg(AGENT).args([url.as_str(), "vcap", "s3cret"]);
        let o = run(c);
        o.status.success().then(|| text(&o.stdout))
    });
    assert_ne!(
        first.lines().next(),
        second.lines().next(),
        "{first} / {second}"
    );
    assert_eq!(vm.pid("db"), pid, "nothing restarted");
}

/// The text of `<tag>` in the `<service name="NAME">` element of a 5.2.5 XML answer.
pub(crate) fn xml_field(xml: &str, name: &str, tag: &str) -> Option<String> {
    let start = xml.find(&format!("<service name=\"{name}\">"))?;
    let body = &xml[start..start + xml[start..].find("</service>")?];
    let open = format!("<{tag}>");
    let from = body.find(&open)? + open.len();
    Some(body[from..from + body[from..].find('<')?].to_string())
}

/// The daemon answers from the states it keeps between requests (issue 27: an XML of
/// 100 services in less than monit's time): every change made behind its back is in the
/// very next answer once the uncached `summary` sees it, and uptimes still run.
#[test]
fn monit_http_answers_every_change_at_once() {
    let port = free_port();
    let mut vm = httpd_vm("monit-http-fresh", port);
    vm.start();
    vm.wait_state("db", "running");
    vm.wait_state("web", "running");
    let xml = || {
        let (st, t) = get(port, "/_status2?format=xml", "vcap:s3cret");
        assert_eq!(st, 200, "{t}");
        t
    };
    let field = |x: &str, n: &str, t: &str| xml_field(x, n, t).unwrap_or_default();
    let first = xml();
    // The control file by its absolute path (tend-monit was given a relative one, as
    // monit answers either).
    assert!(
        first.contains(&format!("<controlfile>{}</controlfile>", vm.rc.display())),
        "{first}"
    );
    let db = vm.pid("db").unwrap();
    assert_eq!(field(&first, "db", "pid"), db.to_string(), "{first}");

    // Its uptime runs on without a file changing.
    std::thread::sleep(Duration::from_millis(2100));
    let later = xml();
    let up = |x: &str| field(x, "db", "uptime").parse::<u64>().unwrap();
    assert!(up(&later) >= up(&first) + 2, "{first}\n{later}");

    // The daemon killed: the new pid, as soon as the summary says running again.
    kill9(db);
    wait_until(3 * PATIENCE, "db restarted", || {
        vm.pid("db")
            .filter(|&p| p != db && vm.state("db").as_deref() == Some("running"))
    });
    let status = text(&vm.monit(&["status", "db"]).stdout);
    let now = xml();
    assert!(
        status.contains(&format!(
            "pid                               {}",
            field(&now, "db", "pid")
        )),
        "{status}\n{now}"
    );
    assert_ne!(field(&now, "db", "pid"), db.to_string());

    // Stopped by hand with tend-svc, behind tend-monit's back.
    assert_code(
        &run({
            let mut c = cmd("tend-svc");
            c.arg("-d").arg(vm.scan.join("web"));
            c
        }),
        0,
    );
    vm.wait_state("web", "not monitored");
    let now = xml();
    assert_eq!(field(&now, "web", "monitor"), "0", "{now}");
    assert_eq!(field(&now, "web", "pid"), "", "{now}");

    // Unmonitored through the command line; monitored again.
    assert_code(&vm.monit(&["unmonitor", "db"]), 0);
    vm.wait_state("db", "not monitored");
    assert_eq!(field(&xml(), "db", "monitor"), "0");
    assert_code(&vm.monit(&["monitor", "db"]), 0);
    vm.wait_state("db", "running");
    // Running may come a moment before the watcher has found the pid again: wait until
    // the uncached `status` shows it, then the very next answer must too.
    wait_until(PATIENCE, "db's pid in status", || {
        let pid = vm.pid("db")?;
        let status = text(&vm.monit(&["status", "db"]).stdout);
        status
            .contains(&format!("pid                               {pid}"))
            .then_some(())
    });
    let now = xml();
    assert_eq!(field(&now, "db", "monitor"), "1", "{now}");
    assert_eq!(
        field(&now, "db", "pid"),
        vm.pid("db").unwrap().to_string(),
        "{now}"
    );
}

#[test]
fn monit_agent_client_reads_every_state_the_agent_tells_apart() {
    require("python3");
    let view = agent(&[concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/monit-files/bosh-agent/monit_status_multiple.xml"
    )]);
    assert_eq!(
        view,
        "api running 1 0 -\ncache unknown 0 0 -\nbatch unknown 0 0 -\nworker starting 1 0 -\nbroker failing 1 0 -\n"
    );
}

// ---- side by side with monit 5.33 ----

/// Debian's monit on the same checks, in the foreground (`-I`), in its own scratch
/// directory, with a one-second cycle.
/// Dropped in field order: monit first (or it would start what is being killed), then
/// its services, then the directory.
struct RealMonit {
    _daemon: Daemon,
    _kill: KillUnder,
    s: Scratch,
    rc: PathBuf,
    port: u16,
}

impl RealMonit {
    fn start(name: &str, checks: &str, port: u16) -> RealMonit {
        let s = Scratch::new(name);
        let root = s.path.display().to_string();
        s.write("bin/daemon", DAEMON, true);
        std::fs::create_dir_all(s.join("run")).unwrap();
        let text = format!(
            "set daemon 1\nset pidfile {root}/monit.pid\nset idfile {root}/monit.id\nset statefile {root}/monit.state\nset httpd port {port} and use address 127.0.0.1\n  allow vcap:s3cret\n{}",
            checks.replace("@ROOT@", &root)
        );
        let rc = control(&s, "monitrc", &text);
        let mut c = Command::new("monit");
        c.env("HOME", &s.path)
            .current_dir(&s.path)
            .arg("-I")
            .arg("-c")
            .arg(&rc);
        c.stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let d = Daemon::start(c);
        let kill = KillUnder(s.path.clone());
        RealMonit {
            s,
            rc,
            port,
            _daemon: d,
            _kill: kill,
        }
    }

    fn view(&self) -> Option<String> {
        let mut c = Command::new("python3");
        c.arg(AGENT).args([
            format!("http://127.0.0.1:{}", self.port).as_str(),
            "vcap",
            "s3cret",
        ]);
        let o = run(c);
        o.status.success().then(|| text(&o.stdout))
    }

    fn cli(&self, args: &[&str]) -> Output {
        let mut c = Command::new("monit");
        c.env("HOME", &self.s.path)
            .current_dir(&self.s.path)
            .arg("-c")
            .arg(&self.rc)
            .args(args);
        run(c)
    }

    fn pid(&self, name: &str) -> Option<i32> {
        let t = std::fs::read_to_string(self.s.join(format!("run/{name}.pid"))).ok()?;
        let pid: i32 = t.trim().parse().ok()?;
        (proc_state(pid as u64) != 'Z' && Path::new(&format!("/proc/{pid}")).exists())
            .then_some(pid)
    }
}

/// The agent's view without the incarnation line.
fn services_view(v: &str) -> String {
    v.lines()
        .filter(|l| !l.starts_with("incarnation"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn monit_same_answers_as_monit_5_33() {
    if !have_monit("monit_same_answers_as_monit_5_33") {
        return;
    }
    require("python3");
    let checks = format!(
        "{}{}{}",
        check("db", ""),
        check("web", "  depends on db\n"),
        check("worker", "  depends on web\n")
    );
    let (pm, pt) = (free_port(), free_port());
    let m = RealMonit::start("monit-real", &checks, pm);
    let mut vm = Vm::new(
        "monit-side",
        &format!("set httpd port {pt} and use address 127.0.0.1\n  allow vcap:s3cret\n{checks}"),
    );
    vm.start();
    let tend_view = || {
        let mut c = Command::new("python3");
        c.arg(AGENT)
            .args([format!("http://127.0.0.1:{pt}").as_str(), "vcap", "s3cret"]);
        let o = run(c);
        o.status.success().then(|| services_view(&text(&o.stdout)))
    };
    let running = "db running 1 0 live\nweb running 1 0 live\nworker running 1 0 live";
    wait_until(6 * PATIENCE, "monit: all running", || {
        m.view().filter(|v| services_view(v) == running)
    });
    wait_until(6 * PATIENCE, "tend-monit: all running", || {
        tend_view().filter(|v| v == running)
    });
    // Started in dependency order by both.
    assert_eq!(
        lines(&m.s.join("log")),
        ["start db", "start web", "start worker"]
    );
    assert_eq!(vm.log(), ["start db", "start web", "start worker"]);

    // One killed: restarted by both (monit within its cycle, tend-monit at once).
    let kill = |pid: i32| {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap()
    };
    let (mo, to) = (m.pid("web").unwrap(), vm.pid("web").unwrap());
    std::thread::sleep(Duration::from_millis(1100)); // past tend-supervise's restart throttle
    let t0 = std::time::Instant::now();
    kill(to);
    wait_until(3 * PATIENCE, "tend: web again", || {
        vm.pid("web").filter(|&p| p != to)
    });
    let tend_restart = t0.elapsed();
    let t0 = std::time::Instant::now();
    kill(mo);
    wait_until(3 * PATIENCE, "monit: web again", || {
        m.pid("web").filter(|&p| p != mo)
    });
    let monit_restart = t0.elapsed();
    eprintln!(
        "restart after a kill: tend-monit {tend_restart:?}, monit 5.33 (set daemon 1) {monit_restart:?}"
    );
    wait_until(6 * PATIENCE, "monit: running again", || {
        m.view().filter(|v| services_view(v) == running)
    });
    wait_until(6 * PATIENCE, "tend: running again", || {
        tend_view().filter(|v| v == running)
    });

    // stop all, then start all: the same order from both.
    std::fs::write(m.s.join("log"), "").unwrap();
    std::fs::write(vm.s.join("log"), "").unwrap();
    assert_code(&m.cli(&["stop", "all"]), 0);
    assert_code(&vm.monit(&["stop", "all"]), 0);
    let stopped = "db unknown 0 0 -\nweb unknown 0 0 -\nworker unknown 0 0 -";
    wait_until(6 * PATIENCE, "monit: all stopped", || {
        m.view().filter(|v| services_view(v) == stopped)
    });
    assert_eq!(tend_view().as_deref(), Some(stopped));
    assert_eq!(
        lines(&m.s.join("log")),
        ["stop worker", "stop web", "stop db"]
    );
    assert_eq!(vm.log(), ["stop worker", "stop web", "stop db"]);
    assert_code(&m.cli(&["start", "all"]), 0);
    assert_code(&vm.monit(&["start", "all"]), 0);
    wait_until(6 * PATIENCE, "monit: all running", || {
        m.view().filter(|v| services_view(v) == running)
    });
    assert_eq!(tend_view().as_deref(), Some(running));

    // The agent's bare POST: monit 5.33 wants a CSRF token (403), tend-monit takes it.
    assert_eq!(
        post(pm, "/worker", "vcap:s3cret", "", "action=unmonitor").0,
        403
    );
    assert_eq!(
        post(pt, "/worker", "vcap:s3cret", "", "action=unmonitor").0,
        200
    );
    // unmonitor, then kill: restarted by neither.
    assert_code(&m.cli(&["unmonitor", "worker"]), 0);
    wait_until(3 * PATIENCE, "tend: worker unmonitored", || {
        (vm.state("worker").as_deref() == Some("not monitored")).then_some(())
    });
    wait_until(3 * PATIENCE, "monit: worker unmonitored", || {
        m.view().filter(|v| v.contains("worker unknown 0 0"))
    });
    let (mw, tw) = (m.pid("worker").unwrap(), vm.pid("worker").unwrap());
    kill(mw);
    kill(tw);
    let gone = || m.pid("worker").is_none() && vm.pid("worker").is_none();
    wait_until(PATIENCE, "both workers dead", || gone().then_some(()));
    // Two of monit's cycles: time for a restart that must not come.
    stays_for(
        Duration::from_millis(2500),
        "neither restarts the worker",
        gone,
    );
}

#[test]
fn monit_restart_limit_then_unmonitor_or_exec() {
    let mut vm = Vm::new(
        "monit-limit",
        &format!(
            "{}{}",
            check("db", "  if 2 restarts within 5 cycles then timeout\n"),
            check(
                "web",
                "  if 1 restarts within 5 cycles then exec \"/bin/sh -c 'echo exec web >> @ROOT@/log'\"\n"
            ),
        ),
    );
    vm.start();
    vm.wait_state("db", "running");
    vm.wait_state("web", "running");
    let kill_and_wait = |name: &str| {
        let old = vm.pid(name).unwrap();
        std::thread::sleep(Duration::from_millis(1100)); // past the supervisor's restart throttle
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(old),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        wait_until(3 * PATIENCE, &format!("{name} again"), || {
            vm.pid(name).filter(|&p| p != old)
        })
    };
    // db: restart 1, restart 2 (the limit: done, then no longer monitored), then dead.
    kill_and_wait("db");
    vm.wait_state("db", "running");
    let last = kill_and_wait("db");
    vm.wait_state("db", "not monitored");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(last),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    wait_until(PATIENCE, "db gone", || vm.pid("db").is_none().then_some(()));
    stays_for(
        Duration::from_millis(1500),
        "past the limit: not restarted",
        || vm.pid("db").is_none(),
    );
    // web: the first restart reaches the limit: its program runs, and it goes on.
    kill_and_wait("web");
    vm.wait_state("web", "running");
    wait_until(PATIENCE, "exec ran", || {
        vm.log().contains(&"exec web".to_string()).then_some(())
    });
    // monitor brings db back.
    assert_code(&vm.monit(&["monitor", "db"]), 0);
    vm.wait_state("db", "running");
}

/// Fake programs for a release's monit files: every start program named there becomes a
/// script that, for the arguments of each check, starts a detached sleeper writing that
/// check's pidfile (and logs `start NAME`); stop programs kill it (and log `stop NAME`).
fn fake_release_programs(s: &Scratch, monitrc: &Path) {
    let (c, errors) = tend_monit::read(monitrc).unwrap();
    assert!(errors.is_empty(), "{errors:?}");
    let log = s.join("log");
    let mut scripts: std::collections::BTreeMap<String, String> = Default::default();
    for ch in &c.checks {
        let tend_monit::model::Target::Pidfile(pidfile) = &ch.target else {
            continue;
        };
        for (p, start) in [(&ch.start, true), (&ch.stop, false)] {
            let Some(p) = p else { continue };
            // The program run is the first word when it is one of the release's
            // (monit_debugger wraps the ctl script: its arguments are the key); under
            // `/bin/sh -c '… && …/ctl start'`, the last word naming one.
            let root = s.path.display().to_string();
            let words: Vec<String> = p
                .argv
                .iter()
                .flat_map(|a| a.split_whitespace())
                .map(String::from)
                .collect();
            let i = if words[0].starts_with(&root) {
                0
            } else {
                words.iter().rposition(|a| a.starts_with(&root)).unwrap()
            };
            let exe = &words[i];
            let argv = &words;
            let args = words[i + 1..].join(" ");
            let body = if start {
                format!(
                    "  {args:?}) echo 'start {n}' >> {log:?}; mkdir -p \"$(dirname {pidfile:?})\"; setsid sh -c 'echo $$ > \"$1\" && exec sleep 100000' sh {pidfile:?} </dev/null >/dev/null 2>&1 & ;;\n",
                    n = ch.name
                )
            } else {
                format!(
                    "  {args:?}) echo 'stop {n}' >> {log:?}; kill $(cat {pidfile:?}) ;;\n",
                    n = ch.name
                )
            };
            scripts.entry(exe.clone()).or_default().push_str(&body);
            // Programs the start line runs first (share_mount, monit_debugger): no-ops.
            for a in &argv[..i] {
                if a.starts_with(&root) {
                    scripts.entry(a.clone()).or_default();
                }
            }
        }
    }
    for (exe, cases) in scripts {
        let rel = exe
            .strip_prefix(&s.path.display().to_string())
            .unwrap()
            .trim_start_matches('/');
        s.write(
            rel,
            &format!("#!/bin/sh\ncase \"$*\" in\n{cases}  *) ;;\nesac\nexit 0\n"),
            true,
        );
    }
}

#[test]
fn monit_release_files_run_under_both() {
    if !have_monit("monit_release_files_run_under_both") {
        return;
    }
    require("python3");
    // The releases whose files have no connection test (nothing here listens on their
    // ports, and both would restart those jobs every few cycles).
    let jobs = ["gorouter", "uaa", "postgres", "haproxy", "director"];
    let (pm, pt) = (free_port(), free_port());
    let setup = |name: &str, port: u16, extra: &str| {
        let s = Scratch::new(name);
        let rc = stemcell(&s, &jobs);
        let text = std::fs::read_to_string(&rc)
            .unwrap()
            .replace("set daemon 10", &format!("set daemon 1\n{extra}"))
            .replace("port 2822", &format!("port {port}"))
            .replace("@ROOT@", &s.path.display().to_string());
        std::fs::write(&rc, text).unwrap();
        fake_release_programs(&s, &rc);
        (s, rc)
    };
    let (ms, mrc) = setup(
        "monit-rel-real",
        pm,
        "set pidfile @ROOT@/monit.pid\nset idfile @ROOT@/monit.id\nset statefile @ROOT@/monit.state\n",
    );
    let mut mc = Command::new("monit");
    mc.env("HOME", &ms.path)
        .current_dir(&ms.path)
        .arg("-I")
        .arg("-c")
        .arg(&mrc);
    mc.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // Locals drop last-first: each daemon, then what runs under its directory.
    let _mk = KillUnder(ms.path.clone());
    let _monit = Daemon::start(mc);
    let (ts, trc) = setup("monit-rel-tend", pt, "");
    let _tk = KillUnder(ts.path.clone());
    let mut tc = cmd("tend-monit");
    tc.current_dir(&ts.path)
        .arg("-c")
        .arg(&trc)
        .arg("-S")
        .arg(ts.join("scan"))
        .arg("-I");
    tc.stderr(std::fs::File::create(ts.join("tend-monit.log")).unwrap());
    let _tend = Daemon::start(tc);
    let view = |port: u16| {
        let mut c = Command::new("python3");
        c.arg(AGENT).args([
            format!("http://127.0.0.1:{port}").as_str(),
            "vcap",
            "secret",
        ]);
        let o = run(c);
        o.status.success().then(|| services_view(&text(&o.stdout)))
    };
    let all_running =
        |v: &String| !v.is_empty() && v.lines().all(|l| l.ends_with(" running 1 0 live"));
    let mv = wait_until(9 * PATIENCE, "monit: all running", || {
        view(pm).filter(all_running)
    });
    let tv = wait_until(9 * PATIENCE, "tend-monit: all running", || {
        view(pt).filter(all_running)
    });
    assert_eq!(mv, tv);
    assert_eq!(mv.lines().count(), 12, "{mv}");
    // The same `depends on` order: gorouter before its health checker, the director
    // before its workers, postgres before pg_janitor.
    for log in [lines(&ms.join("log")), lines(&ts.join("log"))] {
        let at = |n: &str| log.iter().position(|l| l == &format!("start {n}")).unwrap();
        assert!(at("gorouter") < at("gorouter-healthchecker"), "{log:?}");
        assert!(
            at("director") < at("worker_1") && at("director") < at("worker_3"),
            "{log:?}"
        );
        assert!(at("postgres") < at("pg_janitor"), "{log:?}");
    }
    // The agent's stop: `monit stop -g vcap`; then everything is stopped in both.
    let mut stop = Command::new("monit");
    stop.env("HOME", &ms.path)
        .current_dir(&ms.path)
        .args(["-c"])
        .arg(&mrc)
        .args(["-g", "vcap", "stop"]);
    assert_code(&run(stop), 0);
    let mut tstop = cmd("tend-monit");
    tstop
        .current_dir(&ts.path)
        .arg("-c")
        .arg(&trc)
        .arg("-S")
        .arg(ts.join("scan"))
        .args(["-g", "vcap", "stop"]);
    assert_code(&run(tstop), 0);
    let stopped = |v: &String| v.lines().all(|l| l.ends_with(" unknown 0 0 -"));
    let mv = wait_until(9 * PATIENCE, "monit: all stopped", || {
        view(pm).filter(stopped)
    });
    let tv = wait_until(3 * PATIENCE, "tend-monit: all stopped", || {
        view(pt).filter(stopped)
    });
    assert_eq!(mv, tv);
}

/// A daemon that answers HTTP on a port (Python's http.server), detached, its pid in a
/// pidfile; SIGSTOP makes it fail its connection test while it lives.
const LISTENER: &str = r#"#!/bin/sh
# listener PIDFILE PORT LOG NAME
echo "start $4" >> "$3"
cd "$(dirname "$1")"
setsid sh -c 'echo $$ > "$1.tmp" && mv "$1.tmp" "$1" && exec python3 -m http.server --bind 127.0.0.1 "$2"' sh "$1" "$2" </dev/null >/dev/null 2>&1 &
"#;

fn sigstop(pid: i32) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGSTOP,
    )
    .unwrap();
}

#[test]
fn monit_connection_test_restarts_after_its_cycles() {
    require("python3");
    let port = free_port();
    let mut vm = Vm::new("monit-conn", "");
    vm.s.write("bin/listener", LISTENER, true);
    let rc_text = format!(
        "set daemon 1\ncheck process api with pidfile @ROOT@/run/api.pid\n  start program = \"@ROOT@/bin/listener @ROOT@/run/api.pid {port} @ROOT@/log api\"\n  stop program = \"/bin/sh -c 'kill -9 $(cat @ROOT@/run/api.pid)'\"\n  if failed host 127.0.0.1 port {port} protocol http request \"/\" with timeout 1 seconds for 2 cycles then restart\n  group vcap\n"
    )
    .replace("@ROOT@", &vm.s.path.display().to_string());
    std::fs::write(&vm.rc, rc_text).unwrap();
    let t = tend_t(&vm.s, &vm.rc);
    assert_code(&t, 0);
    assert!(!text(&t.stderr).contains("ignored"), "{}", text(&t.stderr));
    vm.start();
    vm.wait_state("api", "running");
    let run = std::fs::read_to_string(vm.scan.join("api-health/run")).unwrap();
    assert!(
        run.contains(&format!("'-u' 'http://127.0.0.1:{port}/'")),
        "{run}"
    );
    let deaths = || {
        std::fs::read_to_string(vm.s.join("tend-monit.log"))
            .unwrap()
            .matches("died")
            .count()
    };
    let before = deaths();
    let starts = vm.log().len();
    let old = vm.pid("api").unwrap();
    // Alive, but no longer answering: restarted after two failed cycles.
    sigstop(old);
    let new = wait_until(6 * PATIENCE, "api restarted", || {
        vm.pid("api").filter(|&p| p != old)
    });
    assert_ne!(new, old);
    vm.wait_state("api", "running");
    assert_eq!(vm.log().len(), starts + 1, "{:?}", vm.log());
    // The health watcher restarted it: the daemon did not die by itself.
    assert_eq!(deaths(), before);
    assert!(!Path::new(&format!("/proc/{old}")).exists() || proc_state(old as u64) == 'Z');
}

#[test]
fn monit_procmatch_as_monit() {
    if !have_monit("monit_procmatch_as_monit") {
        return;
    }
    let s = Scratch::new("monit-procmatch");
    let _k = KillUnder(s.path.clone());
    let rc = control(
        &s,
        "monitrc",
        &format!("set idfile {}/id\n{PROC}", s.path.display()),
    );
    // Plain sleeps with a duration of their own (monit does not list every process: it
    // skipped `sh -c …` command lines here).
    let word = format!("sleep 1000.{}", std::process::id());
    let mut sleepers = Vec::new();
    for _ in 0..2 {
        let mut c = Command::new("sleep");
        c.current_dir(&s.path)
            .arg(word.trim_start_matches("sleep "));
        sleepers.push(Daemon::start(c));
        std::thread::sleep(Duration::from_millis(20)); // distinct start times
    }
    wait_until(PATIENCE, "sleepers", || {
        (text(&tend("tend-monit", ["procmatch", &word]).stdout).contains("Total matches: 2"))
            .then_some(())
    });
    let mut m = Command::new("monit");
    m.env("HOME", &s.path)
        .current_dir(&s.path)
        .arg("-c")
        .arg(&rc)
        .args(["procmatch", &word]);
    let m = run(m);
    let t = tend("tend-monit", ["procmatch", &word]);
    assert_code(&m, 0);
    assert_code(&t, 0);
    // monit says where it stored a new id first; the rest is compared byte for byte.
    let mtext: String = text(&m.stdout)
        .lines()
        .filter(|l| !l.starts_with(" New Monit id") && !l.starts_with(" Stored in"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(text(&t.stdout), mtext);
    let none = tend("tend-monit", ["procmatch", "no-such-process-xyz-123"]);
    assert_eq!(text(&none.stdout).lines().last(), Some("Total matches: 0"));
    let bad = tend("tend-monit", ["procmatch", "("]);
    assert_code(&bad, 100);
}

#[test]
fn monit_runs_under_monits_name() {
    // Operators keep their habits: the executable linked as `monit`.
    let mut vm = Vm::new("monit-link", &check("db", ""));
    vm.start();
    vm.wait_state("db", "running");
    let link = vm.s.join("bin/monit");
    std::os::unix::fs::symlink(bin("tend-monit"), &link).unwrap();
    let mut c = Command::new(&link);
    c.env("PATH", path_env())
        .arg("-c")
        .arg(&vm.rc)
        .arg("-S")
        .arg(&vm.scan)
        .arg("summary");
    let o = run(c);
    assert_code(&o, 0);
    assert!(
        text(&o.stdout).contains(&format!("{:<36}running", "Process 'db'")),
        "{}",
        text(&o.stdout)
    );
}

#[test]
fn monit_resource_test_restarts_after_its_cycles() {
    let mut vm = Vm::new("monit-resource", "");
    let rc_text = format!(
        "set daemon 1\n{}",
        check(
            "db",
            "  if memory > 1 kb for 2 cycles then restart\n  if children > 50 then alert\n"
        )
    )
    .replace("@ROOT@", &vm.s.path.display().to_string());
    std::fs::write(&vm.rc, rc_text).unwrap();
    let t = tend_t(&vm.s, &vm.rc);
    assert_code(&t, 0);
    assert!(!text(&t.stderr).contains("ignored"), "{}", text(&t.stderr));
    vm.start();
    vm.wait_state("db", "running");
    let old = vm.pid("db").unwrap();
    // Over its limit from the first cycle: stopped and started again after two cycles.
    let new = wait_until(3 * PATIENCE, "db restarted", || {
        vm.pid("db").filter(|&p| p != old)
    });
    assert_ne!(new, old);
    let log = vm.log();
    assert_eq!(&log[..3], ["start db", "stop db", "start db"], "{log:?}");
    let err = std::fs::read_to_string(vm.s.join("tend-monit.log")).unwrap();
    assert!(
        err.contains("tend-monit db: warning: db: memory > 1: restarting"),
        "{err}"
    );
    assert!(!err.contains("children"), "{err}");
}

/// An SMTP listener that saves each message it is given (one file per mail), as the BOSH
/// agent's does on 127.0.0.1:2825.
pub(crate) const SMTP: &str = r#"#!/usr/bin/env python3
import os, socket, sys
port, out = int(sys.argv[1]), sys.argv[2]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(16)
n = 0
def serve(c):
    global n
    f = c.makefile("rwb")
    f.write(b"220 test\r\n"); f.flush()
    data, body = False, []
    for line in f:
        if data:
            if line == b".\r\n":
                n += 1
                # Whole or not there: a reader of the directory that sees a mail's
                # name finds it written (made beside the directory, then moved in).
                tmp = os.path.join(os.path.dirname(os.path.abspath(out)), ".smtp-%03d" % n)
                with open(tmp, "wb") as m:
                    m.write(b"".join(body))
                os.rename(tmp, os.path.join(out, "%03d.mail" % n))
                data = False
                f.write(b"250 ok\r\n"); f.flush()
            else:
                body.append(line)
            continue
        cmd = line[:4].upper()
        if cmd == b"DATA":
            data = True
            f.write(b"354 go\r\n")
        elif cmd == b"QUIT":
            f.write(b"221 bye\r\n"); f.flush()
            break
        else:
            f.write(b"250 ok\r\n")
        f.flush()
while True:
    c, _ = s.accept()
    # A client gone at once (the test's probe for "listening") must not end the server.
    try:
        serve(c)
    except OSError:
        pass
    c.close()
"#;

#[test]
fn monit_alerts_by_mail_in_boshs_format_queued_when_down() {
    require("python3");
    let port = free_port();
    let mut vm = Vm::new("monit-alert", "");
    vm.s.write("bin/smtp", SMTP, true);
    std::fs::create_dir_all(vm.s.join("mail")).unwrap();
    // BOSH's alerts.monitrc shape.
    let rc_text = format!(
        "set daemon 10\nset alert agent@local\nset mailserver 127.0.0.1 port {port}\nset eventqueue basedir @ROOT@/events slots 100\nset mail-format {{\n  from: monit@localhost\n  subject: Monit Alert\n  message: Service: $SERVICE\n  Event: $EVENT\n  Action: $ACTION\n  Date: $DATE\n  Description: $DESCRIPTION\n}}\n{}",
        check("db", "")
    )
    .replace("@ROOT@", &vm.s.path.display().to_string());
    std::fs::write(&vm.rc, rc_text).unwrap();
    vm.start();
    vm.wait_state("db", "running");
    let kill_db = |vm: &Vm| {
        let old = vm.pid("db").unwrap();
        std::thread::sleep(Duration::from_millis(1100));
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(old),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        wait_until(3 * PATIENCE, "db again", || {
            vm.pid("db").filter(|&p| p != old)
        });
    };
    // No mail server yet: the alert is queued.
    kill_db(&vm);
    wait_until(3 * PATIENCE, "queued", || {
        std::fs::read_dir(vm.s.join("events"))
            .ok()?
            .flatten()
            .next()
            .map(|_| ())
    });
    // The server is up: the queued alert goes first, then the new one.
    let mut smtp = Command::new(vm.s.join("bin/smtp"));
    smtp.arg(port.to_string()).arg(vm.s.join("mail"));
    let _smtp = Daemon::start(smtp);
    wait_until(PATIENCE, "smtp listens", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).ok()
    });
    kill_db(&vm);
    // Each death is two events: the death, then the daemon running again.
    let mails = wait_until(3 * PATIENCE, "four mails", || {
        let mut v: Vec<_> = std::fs::read_dir(vm.s.join("mail"))
            .ok()?
            .flatten()
            .map(|e| e.path())
            .collect();
        v.sort();
        (v.len() >= 4).then_some(v)
    });
    let mut kinds = Vec::new();
    let mut ids = std::collections::BTreeSet::new();
    for m in &mails {
        let t = std::fs::read_to_string(m).unwrap();
        assert!(t.contains("Subject: Monit Alert\r\n"), "{t}");
        // 5.2.5's headers; the id as the agent takes it (`^Message-id: <([^>]+)>$`,
        // case-sensitive): EPOCH.RANDOM@HOST, never the same twice.
        let head: Vec<&str> = t.split("\r\n\r\n").next().unwrap().split("\r\n").collect();
        for h in [
            "X-Mailer: monit 5.2.5",
            "Mime-Version: 1.0",
            "Content-Type: text/plain; charset=\"iso-8859-1\"",
        ] {
            assert!(head.contains(&h), "{h}: {t}");
        }
        let id = head
            .iter()
            .find_map(|l| l.strip_prefix("Message-id: <")?.strip_suffix('>'))
            .unwrap_or_else(|| panic!("no Message-id: {t}"));
        let (epoch, rest) = id.split_once('.').unwrap();
        let (random, host) = rest.split_once('@').unwrap();
        assert!(
            !id.contains('>')
                && epoch.parse::<u64>().is_ok()
                && random.parse::<u64>().is_ok()
                && !host.is_empty(),
            "{id}"
        );
        assert!(ids.insert(id.to_string()), "{id} twice");
        // The body as written in mail-format (its lines keep their indentation, as
        // monit keeps it), the values filled in.
        let body: Vec<&str> = t
            .split("\r\n\r\n")
            .nth(1)
            .unwrap()
            .lines()
            .map(str::trim)
            .collect();
        assert_eq!(body[0], "Service: db", "{t}");
        assert!(
            body[3].starts_with("Date: ") && body[3].ends_with(" +0000"),
            "{t}"
        );
        if body[1] == "Event: Does not exist" {
            assert_eq!(body[2], "Action: restart", "{t}");
            assert_eq!(body[4], "Description: process is not running", "{t}");
        } else {
            assert_eq!(&body[1..3], ["Event: Exists", "Action: alert"], "{t}");
            assert!(
                body[4].starts_with("Description: process is running with pid "),
                "{t}"
            );
        }
        kinds.push(body[1].to_string());
    }
    // Sent in order: the queued pair first.
    assert_eq!(
        kinds,
        [
            "Event: Does not exist",
            "Event: Exists",
            "Event: Does not exist",
            "Event: Exists"
        ]
    );
    assert_eq!(
        std::fs::read_dir(vm.s.join("events")).unwrap().count(),
        0,
        "queue flushed"
    );
}

#[test]
fn monit_reload_applies_only_what_changed() {
    let mut vm = Vm::new("monit-reload", &check("db", ""));
    vm.start();
    vm.wait_state("db", "running");
    let db = vm.pid("db");
    let root = vm.s.path.display().to_string();
    let write = |checks: String| {
        std::fs::write(
            &vm.rc,
            format!("set daemon 10\n{}", checks.replace("@ROOT@", &root)),
        )
        .unwrap()
    };
    write(format!(
        "{}{}",
        check("db", ""),
        check("web", "  depends on db\n")
    ));
    assert_code(&vm.monit(&["reload"]), 0);
    vm.wait_state("web", "running");
    assert_eq!(vm.pid("db"), db, "db untouched by the reload");
    // web removed from the file: stopped (its stop program) and gone; db still untouched.
    let web = vm.pid("web").unwrap();
    write(check("db", ""));
    assert_code(&vm.monit(&["reload"]), 0);
    wait_until(3 * PATIENCE, "web gone", || {
        (!vm.scan.join("web").exists()).then_some(())
    });
    wait_until(3 * PATIENCE, "web stopped", || {
        (!Path::new(&format!("/proc/{web}")).exists() || proc_state(web as u64) == 'Z')
            .then_some(())
    });
    assert!(vm.log().contains(&"stop web".to_string()), "{:?}", vm.log());
    assert_eq!(vm.pid("db"), db);
    // A reload with an error keeps what runs, and says why.
    std::fs::write(&vm.rc, "set daemon 10\ncheck process db with pidfile\n").unwrap();
    assert_code(&vm.monit(&["reload"]), 0);
    wait_until(PATIENCE, "reload refused", || {
        std::fs::read_to_string(vm.s.join("tend-monit.log"))
            .ok()
            .filter(|l| l.contains("not reloaded"))
            .map(|_| ())
    });
    assert_eq!(vm.pid("db"), db);
}

#[test]
fn monit_failed_connection_alert_shows_as_failing() {
    require("python3");
    let (port, hport) = (free_port(), free_port());
    let mut vm = Vm::new("monit-connfail", "");
    vm.s.write("bin/listener", LISTENER, true);
    let rc_text = format!(
        "set daemon 1\nset httpd port {hport} and use address 127.0.0.1\n  allow vcap:s3cret\ncheck process api with pidfile @ROOT@/run/api.pid\n  start program = \"@ROOT@/bin/listener @ROOT@/run/api.pid {port} @ROOT@/log api\"\n  if failed port {port} protocol http with timeout 1 seconds for 1 cycles then alert\n  group vcap\n"
    )
    .replace("@ROOT@", &vm.s.path.display().to_string());
    std::fs::write(&vm.rc, rc_text).unwrap();
    vm.start();
    vm.wait_state("api", "running");
    let pid = vm.pid("api");
    sigstop(pid.unwrap());
    vm.wait_state("api", "Connection failed");
    let view = agent(&[&format!("http://127.0.0.1:{hport}"), "vcap", "s3cret"]);
    assert!(view.contains("api failing 1 0 live"), "{view}");
    let (_, xml) = get(hport, "/_status2?format=xml", "vcap:s3cret");
    assert!(
        xml.contains("<status>32</status>")
            && xml.contains("<status_message>Connection failed</status_message>"),
        "{xml}"
    );
    assert_eq!(vm.pid("api"), pid, "then alert: not restarted");
}

/// Every event as monit posts it (issue 27's alert list): a line in `set logfile` in
/// monit's shape, one mail each, and counted in tend-summary's JSON and Prometheus text.
#[test]
fn monit_every_event_logged_mailed_and_counted() {
    require("python3");
    let (port, smtp_port) = (free_port(), free_port());
    let mut vm = Vm::new("monit-events", "");
    vm.s.write("bin/listener", LISTENER, true);
    vm.s.write("bin/smtp", SMTP, true);
    std::fs::create_dir_all(vm.s.join("mail")).unwrap();
    let rc_text = format!(
        "set daemon 1\nset logfile @ROOT@/monit.log\nset alert agent@local\nset mailserver 127.0.0.1 port {smtp_port}\nset mail-format {{\n  from: monit@localhost\n  subject: Monit Alert\n  message: Service: $SERVICE\n  Event: $EVENT\n  Action: $ACTION\n  Description: $DESCRIPTION\n}}\n{}check process api with pidfile @ROOT@/run/api.pid\n  start program = \"@ROOT@/bin/listener @ROOT@/run/api.pid {port} @ROOT@/log api\"\n  if failed port {port} protocol http with timeout 1 seconds for 1 cycles then alert\n  group vcap\n",
        check("db", "  if totalmem > 1 kB for 1 cycles then alert\n")
    )
    .replace("@ROOT@", &vm.s.path.display().to_string());
    std::fs::write(&vm.rc, rc_text).unwrap();
    let mut smtp = Command::new(vm.s.join("bin/smtp"));
    smtp.arg(smtp_port.to_string()).arg(vm.s.join("mail"));
    let _smtp = Daemon::start(smtp);
    // The first events come at once, and without an event queue a mail the server
    // refuses is lost (as in monit): the server must listen first.
    wait_until(PATIENCE, "smtp listens", || {
        std::net::TcpStream::connect(("127.0.0.1", smtp_port)).ok()
    });
    vm.start();
    vm.wait_state("db", "running");
    vm.wait_state("api", "running");
    let logged = |want: &str| {
        wait_until(3 * PATIENCE, want, || {
            let log = std::fs::read_to_string(vm.s.join("monit.log")).unwrap_or_default();
            log.lines().find(|l| l.contains(want)).map(String::from)
        })
    };
    // The resource limit, in monit's words; the line as monit 5.2.5 begins one.
    let line = logged("'db' total mem amount of ");
    let shape = line.len() > 21
        && line.starts_with("[UTC ")
        && line.as_bytes()[20] == b']'
        && line[21..].starts_with(" error    : 'db' total mem amount of ")
        && line.ends_with(" matches resource limit [total mem amount > 1 kB]");
    assert!(shape, "{line}");
    // A death: not running, then running again with its new pid.
    let old = vm.pid("db").unwrap();
    kill9(old);
    logged("error    : 'db' process is not running");
    let new = wait_until(3 * PATIENCE, "db again", || {
        vm.pid("db").filter(|&p| p != old)
    });
    logged(&format!(
        "info     : 'db' process is running with pid {new}"
    ));
    // The connection test failing (the listener stopped), then passing again.
    let api = vm.pid("api").unwrap();
    sigstop(api);
    logged("error    : 'api' failed connection test -- ");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(api),
        nix::sys::signal::Signal::SIGCONT,
    )
    .unwrap();
    logged("info     : 'api' connection succeeded");
    // An action asked for, once done.
    assert_code(&vm.monit(&["restart", "api"]), 0);
    logged("info     : 'api' restart action done");

    // One mail per event, in the mail-format.
    let want = [
        ("db", "Resource limit matched"),
        ("db", "Does not exist"),
        ("db", "Exists"),
        ("api", "Connection failed"),
        ("api", "Connection succeeded"),
        ("api", "Action done"),
    ];
    let mails = wait_until(3 * PATIENCE, "the mails", || {
        let got: Vec<(String, String)> = std::fs::read_dir(vm.s.join("mail"))
            .ok()?
            .flatten()
            .filter_map(|e| {
                let t = std::fs::read_to_string(e.path()).ok()?;
                let get = |k: &str| {
                    t.lines()
                        .find_map(|l| l.trim().strip_prefix(k))
                        .map(|v| v.trim().to_string())
                };
                Some((get("Service: ")?, get("Event: ")?))
            })
            .collect();
        want.iter()
            .all(|(s, e)| got.iter().any(|(gs, ge)| gs == s && ge == e))
            .then_some(got)
    });
    assert_eq!(
        mails
            .iter()
            .filter(|(s, e)| s == "db" && e == "Does not exist")
            .count(),
        1,
        "one mail per event: {mails:?}"
    );

    // Counted where tend-summary reads them.
    let mut c = cmd("tend-summary");
    c.arg("-j").arg(&vm.scan);
    let j = text(&run(c).stdout);
    let row = j
        .lines()
        .find(|l| l.contains("\"service\":\"api\""))
        .unwrap();
    assert!(
        row.contains("\"events\":3,") && row.contains("\"last_event\":\"Action done\""),
        "{row}"
    );
    let mut c = cmd("tend-summary");
    c.arg("-p").arg(&vm.scan);
    let p = text(&run(c).stdout);
    assert!(
        p.contains("tend_service_events{service=\"api\"} 3\n"),
        "{p}"
    );
    assert!(p.contains("tend_service_events{service=\"db\"} "), "{p}");
}

/// A stand-in for bpm: `bpm start JOB [-p PROCESS]` notes the call, then detaches a
/// sleep with its pidfile where bpm keeps them; `bpm stop` kills it.
const FAKE_BPM: &str = r#"#!/bin/sh
root=$(cd "$(dirname "$0")/../../../../.." && pwd)
job=$2; proc=${4:-$2}
echo "$1 $job $proc" >> "$root/bpm.log"
pid=$root/var/vcap/sys/run/bpm/$job/$proc.pid
mkdir -p "$(dirname "$pid")"
case $1 in
start) setsid sh -c 'echo $$ > "$1.tmp" && mv "$1.tmp" "$1" && exec sleep 100000' sh "$pid" </dev/null >/dev/null 2>&1 & ;;
stop) kill "$(cat "$pid")" ;;
esac
"#;

/// issue 27's bpm route: a check whose start program is `bpm start JOB [-p PROCESS]`
/// runs the process of the job's bpm.yml (tend-jobs' translation: its arguments, its
/// environment) as its watcher's own child, under the check's name, with no bpm and no
/// pidfile; its states, its dependents' restart and its rules are those of any check.
#[test]
fn monit_bpm_jobs_run_directly_from_their_bpm_yml() {
    let checks = |root: &str| {
        let bpm = format!("{root}/var/vcap/jobs/bpm/bin/bpm");
        let pid = |j: &str, p: &str| format!("{root}/var/vcap/sys/run/bpm/{j}/{p}.pid");
        format!(
            "check process web\n  with pidfile {}\n  start program \"{bpm} start web\"\n    with timeout 60 seconds\n  stop program \"{bpm} stop web\"\n  group vcap\n\n\
             check process web-worker\n  with pidfile {}\n  start program \"{bpm} start web -p worker\"\n  stop program \"{bpm} stop web -p worker\"\n  depends on web\n  group vcap\n\n\
             check process legacy\n  with pidfile {}\n  start program \"{bpm} start legacy\"\n  stop program \"{bpm} stop legacy\"\n  if 5 restarts within 5 cycles then timeout\n  group vcap\n",
            pid("web", "web"),
            pid("web", "worker"),
            pid("legacy", "legacy")
        )
    };
    let mut vm = Vm::new("monit-bpm", &checks("@ROOT@"));
    vm.s.write("var/vcap/jobs/bpm/bin/bpm", FAKE_BPM, true);
    vm.s.write(
        "var/vcap/jobs/web/config/bpm.yml",
        "processes:\n- name: web\n  executable: /bin/sleep\n  args: [\"1001\"]\n  env:\n    WEB_MODE: main\n- name: worker\n  executable: /bin/sleep\n  args: [\"1002\"]\n",
        false,
    );
    vm.s.write(
        "var/vcap/jobs/legacy/config/bpm.yml",
        "processes:\n- name: legacy\n  executable: /bin/sleep\n  args: [\"1003\"]\n",
        false,
    );
    // -t says which checks run from their bpm.yml.
    let t = vm.monit(&["-t"]);
    assert_code(&t, 0);
    let err = text(&t.stderr);
    assert!(
        err.contains("check process web: run from ")
            && err.contains("web/config/bpm.yml (bpm process web), not through bpm")
            && err.contains("check process web-worker: run from ")
            && err.contains("(bpm process worker)")
            && err.contains("check process legacy: run from "),
        "{err}"
    );
    vm.start();
    for n in ["web", "web-worker", "legacy"] {
        vm.wait_state(n, "running");
    }
    // bpm itself never ran, and no pidfile was written.
    assert!(lines(&vm.s.join("bpm.log")).is_empty());
    assert!(!vm.s.join("var/vcap/sys/run/bpm/web/web.pid").exists());
    // The processes of bpm.yml, with its arguments and environment, as the watchers'
    // children; `status` gives their pids.
    let xml = text(&vm.monit(&["status"]).stdout);
    let pid_of = |name: &str| -> i32 {
        let block = xml
            .split("\n\n")
            .find(|b| b.starts_with(&format!("Process '{name}'\n")))
            .unwrap_or_else(|| panic!("{xml}"));
        block
            .lines()
            .find_map(|l| l.trim().strip_prefix("pid"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("{block}"))
    };
    // A chain (tend-setuidgid where the machine has a vcap account) may still be on its
    // way to the process: wait for the exec, not for a moment.
    let final_cmdline = |pid: i32, want: &[u8]| {
        wait_until(PATIENCE, "the process of bpm.yml", || {
            let c = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            (c == want).then_some(())
        })
    };
    let web = pid_of("web");
    final_cmdline(web, b"/bin/sleep\x001001\x00");
    let environ = std::fs::read(format!("/proc/{web}/environ")).unwrap();
    assert!(
        environ.split(|&b| b == 0).any(|v| v == b"WEB_MODE=main"),
        "bpm.yml's env"
    );
    let worker = pid_of("web-worker");
    final_cmdline(worker, b"/bin/sleep\x001002\x00");
    // Killed: started again at once, and web-worker, which depends on it, restarted
    // after it, as monit does.
    kill9(web);
    let again = wait_until(3 * PATIENCE, "web and its dependent again", || {
        let st = text(&vm.monit(&["status"]).stdout);
        let xml = st.clone();
        let pid = |n: &str| {
            xml.split("\n\n")
                .find(|b| b.starts_with(&format!("Process '{n}'\n")))?
                .lines()
                .find_map(|l| l.trim().strip_prefix("pid"))?
                .trim()
                .parse::<i32>()
                .ok()
        };
        match (pid("web"), pid("web-worker")) {
            (Some(w), Some(k)) if w != web && k != worker => Some(w),
            _ => None,
        }
    });
    final_cmdline(again, b"/bin/sleep\x001001\x00");
    // Stopped by its shutdown signal, and started, as monit would.
    let worker = wait_until(PATIENCE, "worker's pid", || {
        let st = text(&vm.monit(&["status", "web-worker"]).stdout);
        st.lines()
            .find_map(|l| l.trim().strip_prefix("pid"))
            .and_then(|v| v.trim().parse::<i32>().ok())
    });
    assert_code(&vm.monit(&["stop", "web-worker"]), 0);
    vm.wait_state("web-worker", "not monitored");
    wait_until(PATIENCE, "worker gone", || {
        (!Path::new(&format!("/proc/{worker}")).exists() || proc_state(worker as u64) == 'Z')
            .then_some(())
    });
    assert_code(&vm.monit(&["start", "web-worker"]), 0);
    vm.wait_state("web-worker", "running");
    assert!(lines(&vm.s.join("bpm.log")).is_empty(), "bpm never called");
}

/// A bpm.yml tend-monit cannot run (not YAML, NUL and CR in it; no such process; no
/// processes) is named by `-t`, one line each with the check's file and line, exit 1;
/// the daemon refuses to install rather than run half a job.
#[test]
fn monit_bpm_yml_it_cannot_run_named_by_t() {
    let checks = |root: &str| {
        let bpm = format!("{root}/var/vcap/jobs/bpm/bin/bpm");
        ["garbage", "noproc", "empty"]
            .iter()
            .map(|j| {
                let p = if *j == "noproc" { " -p nope" } else { "" };
                format!(
                    "check process {j}\n  with pidfile {root}/run/{j}.pid\n  start program \"{bpm} start {j}{p}\"\n  group vcap\n"
                )
            })
            .collect::<String>()
    };
    let vm = Vm::new("monit-bpm-bad", &checks("@ROOT@"));
    vm.s.write("var/vcap/jobs/bpm/bin/bpm", FAKE_BPM, true);
    vm.s.write(
        "var/vcap/jobs/garbage/config/bpm.yml",
        "processes: [\u{0}\r\n  - name: x\n    executable: {{\n",
        false,
    );
    vm.s.write(
        "var/vcap/jobs/noproc/config/bpm.yml",
        "processes:\n- name: noproc\n  executable: /bin/true\n",
        false,
    );
    vm.s.write("var/vcap/jobs/empty/config/bpm.yml", "", false);
    let t = vm.monit(&["-t"]);
    assert_code(&t, 1);
    let err = text(&t.stderr);
    let errors: Vec<&str> = err.lines().filter(|l| l.contains(": error: ")).collect();
    assert_eq!(errors.len(), 3, "{err}");
    for (job, line) in [("garbage", 2), ("noproc", 6), ("empty", 10)] {
        assert!(
            errors
                .iter()
                .any(|l| l.contains(&format!("monitrc:{line}: check {job}: "))
                    && l.contains(&format!("{job}/config/bpm.yml: "))),
            "{job}: {err}"
        );
    }
    assert!(
        errors.iter().any(|l| l.ends_with("no process nope")),
        "{err}"
    );
    assert!(!text(&t.stdout).contains("syntax OK"));
    // The daemon: a one-line refusal, nothing installed. (Its stderr to a file: the
    // scanner it started first keeps the descriptor open past its exit.)
    let mut c = cmd("tend-monit");
    c.current_dir(&vm.s.path)
        .arg("-c")
        .arg(&vm.rc)
        .arg("-S")
        .arg(&vm.scan)
        .arg("-I")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(vm.s.join("daemon.err")).unwrap());
    assert!(!c.status().unwrap().success());
    let derr = std::fs::read_to_string(vm.s.join("daemon.err")).unwrap();
    assert!(
        derr.contains("tend-monit: fatal: ") && derr.contains("bpm.yml"),
        "{derr}"
    );
    for job in ["garbage", "noproc", "empty"] {
        assert!(!vm.scan.join(job).exists(), "{job} installed");
    }
}

/// Kill `pid` with SIGKILL (a daemon's death).
fn kill9(pid: i32) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
}

/// The log once it has `n` lines.
fn log_of(path: &Path, n: usize) -> Vec<String> {
    wait_until(3 * PATIENCE, &format!("{n} log lines"), || {
        let l = lines(path);
        (l.len() >= n).then_some(l)
    })
}

#[test]
fn monit_death_of_a_dependency_restarts_its_dependents_as_monit() {
    // A chain: worker depends on web, web on db. When db dies, monit stops what
    // depends on it (last dependent first), starts db again, then its dependents (in
    // order); db's own stop program is not run (it is dead already).
    let chain = format!(
        "{}{}{}",
        check("db", ""),
        check("web", "  depends on db\n"),
        check("worker", "  depends on web\n")
    );
    let want = [
        "stop worker",
        "stop web",
        "start db",
        "start web",
        "start worker",
    ];
    let mut vm = Vm::new("monit-dep-death", &chain);
    vm.start();
    for n in ["db", "web", "worker"] {
        vm.wait_state(n, "running");
    }
    let (web, worker) = (vm.pid("web").unwrap(), vm.pid("worker").unwrap());
    std::fs::write(vm.s.join("log"), "").unwrap();
    kill9(vm.pid("db").unwrap());
    assert_eq!(log_of(&vm.s.join("log"), 5), want, "tend-monit");
    for n in ["db", "web", "worker"] {
        vm.wait_state(n, "running");
    }
    assert_ne!(vm.pid("web"), Some(web), "web restarted");
    assert_ne!(vm.pid("worker"), Some(worker), "worker restarted");

    // A dependent that was stopped stays stopped when its dependency dies again.
    assert_code(&vm.monit(&["stop", "worker"]), 0);
    std::fs::write(vm.s.join("log"), "").unwrap();
    kill9(vm.pid("db").unwrap());
    assert_eq!(
        log_of(&vm.s.join("log"), 3),
        ["stop web", "start db", "start web"]
    );
    vm.wait_state("web", "running");
    stays_for(Duration::from_millis(500), "worker stays stopped", || {
        vm.pid("worker").is_none()
    });
    assert_eq!(vm.state("worker").as_deref(), Some("not monitored"));

    // `monit restart db`: the same order, and db's stop program runs.
    assert_code(&vm.monit(&["start", "worker"]), 0);
    std::fs::write(vm.s.join("log"), "").unwrap();
    assert_code(&vm.monit(&["restart", "db"]), 0);
    assert_eq!(
        vm.log(),
        [
            "stop worker",
            "stop web",
            "stop db",
            "start db",
            "start web",
            "start worker"
        ]
    );
    drop(vm);

    if !have_monit("monit_death_of_a_dependency_restarts_its_dependents_as_monit") {
        return;
    }
    let m = RealMonit::start("monit-dep-death-533", &chain, free_port());
    let log = m.s.join("log");
    log_of(&log, 3);
    wait_until(3 * PATIENCE, "monit's chain up", || {
        ["db", "web", "worker"]
            .iter()
            .all(|n| m.pid(n).is_some())
            .then_some(())
    });
    std::fs::write(&log, "").unwrap();
    kill9(m.pid("db").unwrap());
    assert_eq!(log_of(&log, 5), want, "monit 5.33");
    // monit's stop NAME and start NAME, in the order tend-monit's test above checks.
    wait_until(3 * PATIENCE, "monit's chain up again", || {
        ["db", "web", "worker"]
            .iter()
            .all(|n| m.pid(n).is_some())
            .then_some(())
    });
    std::fs::write(&log, "").unwrap();
    assert_code(&m.cli(&["stop", "web"]), 0);
    assert_eq!(log_of(&log, 2), ["stop worker", "stop web"], "monit 5.33");
    assert_code(&m.cli(&["start", "worker"]), 0);
    assert_eq!(
        log_of(&log, 4),
        ["stop worker", "stop web", "start web", "start worker"],
        "monit 5.33"
    );
}

#[test]
fn monit_bosh_example_runs_every_job() {
    // examples/bosh/try.sh: the stemcell-like layout, relocated into a scratch root,
    // under tend-monit -I; every job running in `summary`, the agent's XML answered.
    let s = Scratch::new("monit-bosh-example");
    let _kill = KillUnder(s.path.clone());
    let port = free_port();
    let try_sh = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/bosh/try.sh");
    let mut c = Command::new("sh");
    c.env("PATH", path_env())
        .env("TEND_MONIT_PORT", port.to_string())
        .arg(try_sh)
        .arg(&s.path);
    c.stderr(std::fs::File::create(s.join("try.log")).unwrap());
    let _d = Daemon::start(c);
    let rc = s.join("var/vcap/monit/monitrc");
    let summary = || {
        let mut c = cmd("tend-monit");
        c.arg("-c")
            .arg(&rc)
            .arg("-S")
            .arg(s.join("run/tend-monit"))
            .arg("summary");
        text(&run(c).stdout)
    };
    let jobs = ["nats", "gorouter", "uaa", "metrics"];
    let out = wait_until(3 * PATIENCE, "every job running", || {
        let t = summary();
        jobs.iter()
            .all(|j| t.contains(&format!("{:<36}running\n", format!("Process '{j}'"))))
            .then_some(t)
    });
    assert!(out.starts_with("The Monit daemon 5.2.5 uptime: "), "{out}");
    // metrics is a bpm job: run from its bpm.yml, no bpm installed, no pidfile.
    assert!(
        !s.join("var/vcap/sys/run/bpm/metrics/metrics.pid").exists(),
        "no pidfile for a bpm job"
    );
    for j in &jobs[..3] {
        let pidfile = s.join(format!("var/vcap/sys/run/{j}/{j}.pid"));
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            Path::new(&format!("/proc/{pid}")).exists(),
            "{j}'s daemon runs"
        );
    }
    // The agent's request, with monit.user's credentials, on the port try.sh set.
    let (code, body) = get(port, "/_status2?format=xml", "vcap:example-password");
    assert_eq!(code, 200, "{body}");
    for j in jobs {
        assert!(body.contains(&format!("<service name=\"{j}\">")), "{body}");
    }
}

#[test]
fn monit_install_sh_links_monit_to_tend_monit() {
    // packaging/install.sh into a scratch root: PREFIX/lib/tend/monit/monit (out of
    // bin/, where a monit package's own monit would clash) runs tend-monit.
    let s = Scratch::new("monit-install-link");
    let dest = s.join("dest");
    let mut c = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/install.sh"));
    c.env("TEND_BUILD", multicall().parent().unwrap())
        .arg(&dest)
        .arg("/usr");
    let o = run(c);
    assert_code(&o, 0);
    let link = dest.join("usr/lib/tend/monit/monit");
    assert!(
        text(&o.stdout).lines().any(|l| Path::new(l) == link),
        "install.sh lists the link: {}",
        text(&o.stdout)
    );
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        Path::new("../../../bin/tend-monit"),
        "relative, so the staged tree can move"
    );
    let mut c = Command::new(&link);
    c.arg("-V");
    let o = run(c);
    assert_code(&o, 0);
    assert!(
        text(&o.stdout).starts_with("This is tend-monit version "),
        "{}",
        text(&o.stdout)
    );
    // And it reads control files as monit: `monit -t`.
    let rc = control(
        &s,
        "monitrc",
        "set daemon 10\ncheck process p with pidfile /run/p.pid\n",
    );
    let mut c = Command::new(&link);
    c.arg("-t").arg("-c").arg(&rc);
    let o = run(c);
    assert_code(&o, 0);
    assert!(
        text(&o.stdout).contains("Control file syntax OK"),
        "{}",
        text(&o.stdout)
    );
}

/// A daemon that burns CPU and has one child: `busy PIDFILE`.
const BUSY: &str = r#"#!/bin/sh
setsid sh -c 'echo $$ > "$1.tmp" && mv "$1.tmp" "$1"; sleep 100000 & while :; do :; done' sh "$1" </dev/null >/dev/null 2>&1 &
"#;

/// The number in `<tag>…</tag>` inside the service `name`'s element of a status XML.
pub(crate) fn xml_number(xml: &str, name: &str, tag: &str) -> Option<f64> {
    let at = xml
        .find(&format!("<service name=\"{name}\">"))
        .or_else(|| xml.find(&format!("<name>{name}</name>")))?;
    let rest = &xml[at..];
    let rest = &rest[..rest.find("</service>")?];
    let open = format!("<{tag}>");
    let v = &rest[rest.find(&open)? + open.len()..];
    v[..v.find('<')?].parse().ok()
}

fn busy_check(root: &str) -> String {
    format!(
        "check process busy with pidfile {root}/run/busy.pid\n  start program = \"{root}/bin/busy {root}/run/busy.pid\"\n  stop program = \"/bin/sh -c 'pkill -P $(cat {root}/run/busy.pid); kill $(cat {root}/run/busy.pid)'\"\n  group vcap\n"
    )
}

#[test]
fn monit_xml_children_memory_and_cpu_measured_as_monit() {
    // A daemon spinning on a CPU with one child: <children> 1 (as monit 5.33 says), the
    // tree's memory at least the process's own, and CPU above zero once two reports
    // are a moment apart (monit: two cycles).
    let port = free_port();
    let mut vm = Vm::new(
        "monit-xml-usage",
        &format!("set httpd port {port} and use address 127.0.0.1\n  allow vcap:s3cret\n@BUSY@"),
    );
    let root = vm.s.path.display().to_string();
    vm.s.write("bin/busy", BUSY, true);
    let rc = std::fs::read_to_string(&vm.rc)
        .unwrap()
        .replace("@BUSY@", &busy_check(&root));
    std::fs::write(&vm.rc, rc).unwrap();
    vm.start();
    vm.wait_state("busy", "running");
    let xml = || get(port, "/_status2?format=xml", "vcap:s3cret").1;
    let listening = |port: u16| std::net::TcpStream::connect(("127.0.0.1", port)).is_ok();
    let children = wait_until(PATIENCE, "the child counted", || {
        if !listening(port) {
            return None;
        }
        xml_number(&xml(), "busy", "children").filter(|&n| n >= 1.0)
    });
    assert_eq!(children, 1.0);
    let x = xml();
    let kb = xml_number(&x, "busy", "kilobyte").unwrap();
    let kb_total = xml_number(&x, "busy", "kilobytetotal").unwrap();
    assert!(kb > 0.0 && kb_total >= kb, "{x}");
    let cpu = wait_until(3 * PATIENCE, "CPU measured", || {
        std::thread::sleep(Duration::from_millis(300));
        let x = xml();
        let at = x.find("<cpu><percent>")? + "<cpu><percent>".len();
        x[at..at + x[at..].find('<')?]
            .parse::<f64>()
            .ok()
            .filter(|&c| c > 0.0)
    });
    assert!(cpu <= 100.0, "{cpu}");
    drop(vm);

    if !have_monit("monit_xml_children_memory_and_cpu_measured_as_monit") {
        return;
    }
    let m = RealMonit::start("monit-xml-usage-533", "@BUSY@", free_port());
    let root = m.s.path.display().to_string();
    m.s.write("bin/busy", BUSY, true);
    let rc = std::fs::read_to_string(&m.rc)
        .unwrap()
        .replace("@BUSY@", &busy_check(&root));
    std::fs::write(&m.rc, rc).unwrap();
    let mut c = Command::new("monit");
    c.env("HOME", &m.s.path)
        .current_dir(&m.s.path)
        .arg("-c")
        .arg(&m.rc)
        .arg("reload");
    run(c);
    let theirs = wait_until(3 * PATIENCE, "monit counts the child", || {
        if !listening(m.port) {
            return None;
        }
        let (code, x) = get(m.port, "/_status2?format=xml", "vcap:s3cret");
        (code == 200)
            .then(|| xml_number(&x, "busy", "children"))
            .flatten()
            .filter(|&n| n >= 1.0)
    });
    assert_eq!(theirs, children, "monit 5.33's <children>");
}

/// A `status` block's rows as (key, value), values at column 31 (5.33's layout).
fn rows_533(out: &str) -> Vec<(String, String)> {
    out.lines()
        .filter(|l| l.starts_with("  ") && l.len() > 31)
        .map(|l| (l[..31].trim().to_string(), l[31..].to_string()))
        .collect()
}

#[test]
fn monit_status_in_5_33s_layout_with_n() {
    // `status -N NAME` beside monit 5.33's `status NAME` on the same check: the same
    // header, every row tend-monit gives is one of monit's, in monit's order, at
    // column 31, with the same values where they do not move (state, monitoring, pid,
    // parent pid, uid, gid, children); stopped, the same rows exactly.
    if !have_monit("monit_status_in_5_33s_layout_with_n") {
        return;
    }
    let mut vm = Vm::new("monit-status-533", &check("db", ""));
    vm.start();
    vm.wait_state("db", "running");
    let ours = text(&vm.monit(&["-N", "status", "db"]).stdout);
    let m = RealMonit::start("monit-status-533-real", &check("db", ""), free_port());
    let theirs = wait_until(3 * PATIENCE, "monit's db running", || {
        let o = m.cli(&["status", "db"]);
        let t = text(&o.stdout);
        t.contains("  pid ").then_some(t)
    });
    assert!(ours.starts_with("Monit 5.33.0 uptime: "), "{ours}");
    assert_eq!(ours.lines().nth(1), Some(""));
    assert_eq!(ours.lines().nth(2), theirs.lines().nth(2), "Process 'db'");
    let (o, t) = (rows_533(&ours), rows_533(&theirs));
    let mut at = 0;
    for (k, v) in &o {
        let i = t[at..]
            .iter()
            .position(|(tk, _)| tk == k)
            .unwrap_or_else(|| panic!("row {k} not in monit's order:\n{ours}\n{theirs}"));
        at += i + 1;
        let tv = &t[at - 1].1;
        match k.as_str() {
            "status" | "monitoring status" | "monitoring mode" | "on reboot" | "parent pid"
            | "uid" | "effective uid" | "gid" | "children" | "threads" => {
                assert_eq!(v, tv, "row {k}:\n{ours}\n{theirs}")
            }
            "pid" => assert_eq!(v, &vm.pid("db").unwrap().to_string()),
            "memory" | "memory total" => assert!(
                v.contains("% [") && (v.ends_with(" MB]") || v.ends_with(" kB]")),
                "{v}"
            ),
            _ => {}
        }
    }
    assert!(o.len() >= 14, "{ours}");

    // Stopped: monit's rows exactly (but the collection time).
    assert_code(&vm.monit(&["stop", "db"]), 0);
    assert_code(&m.cli(&["stop", "db"]), 0);
    let theirs = wait_until(3 * PATIENCE, "monit's db stopped", || {
        let t = text(&m.cli(&["status", "db"]).stdout);
        t.contains("  status                       Not monitored")
            .then_some(t)
    });
    let ours = text(&vm.monit(&["-N", "status", "db"]).stdout);
    let strip = |rows: Vec<(String, String)>| -> Vec<(String, String)> {
        rows.into_iter()
            .filter(|(k, _)| k != "data collected")
            .collect()
    };
    assert_eq!(
        strip(rows_533(&ours)),
        strip(rows_533(&theirs)),
        "{ours}\n{theirs}"
    );
}

/// A slow start program: `gated PIDFILE LOG NAME GATE` logs `start NAME`, waits for GATE
/// to exist, then starts the test daemon.
const GATED: &str = r#"#!/bin/sh
echo "start $3" >> "$2"
while [ ! -e "$4" ]; do sleep 0.05; done
exec "$(dirname "$0")/daemon" "$1" "$2" "$3.up"
"#;

#[test]
fn monit_dependency_watcher_not_blocked_while_a_dependent_starts() {
    // db dies; its next watcher starts db, then web, whose start program waits for a
    // gate (its timeout: 60 s). While web starts, db's watcher still watches db and
    // answers: db killed again is restarted at once, not after web's start timeout.
    let web = "check process web with pidfile @ROOT@/run/web.pid\n  start program = \"@ROOT@/bin/gated @ROOT@/run/web.pid @ROOT@/log web @ROOT@/gate\" with timeout 60 seconds\n  stop program = \"/bin/sh -c 'echo stop web >> @ROOT@/log; kill $(cat @ROOT@/run/web.pid)'\"\n  group vcap\n  depends on db\n";
    let mut vm = Vm::new(
        "monit-dep-not-blocked",
        &format!("{}{web}", check("db", "")),
    );
    vm.s.write("bin/gated", GATED, true);
    let gate = vm.s.join("gate");
    std::fs::write(&gate, "").unwrap();
    vm.start();
    for n in ["db", "web"] {
        vm.wait_state(n, "running");
    }
    std::fs::remove_file(&gate).unwrap();
    std::fs::write(vm.s.join("log"), "").unwrap();
    let db1 = vm.pid("db").unwrap();
    kill9(db1);
    assert_eq!(
        log_of(&vm.s.join("log"), 3),
        ["stop web", "start db", "start web"]
    );
    let db2 = wait_until(3 * PATIENCE, "db restarted", || {
        vm.pid("db").filter(|p| *p != db1)
    });
    // web's start program now waits for the gate: db dies again.
    kill9(db2);
    let db3 = wait_until(3 * PATIENCE, "db restarted while web starts", || {
        vm.pid("db").filter(|p| *p != db2)
    });
    vm.wait_state("db", "running");
    assert!(vm.pid("web").is_none(), "web is still starting");
    // The gate opens: web comes up, db still runs the same daemon.
    std::fs::write(&gate, "").unwrap();
    vm.wait_state("web", "running");
    assert!(vm.pid("web").is_some());
    assert_eq!(vm.pid("db"), Some(db3));
    assert_eq!(vm.log().last().map(String::as_str), Some("start web.up"));
}

/// monit (glibc getopt) takes options after the command word: the BOSH agent's
/// `monit stop -g vcap`, `summary -B`, `status NAME -B`. Each form as monit 5.33 reads it.
#[test]
fn monit_options_after_the_command_word_as_glibc_getopt() {
    // Without a daemon both say so, exit 1: the forms are read, not refused as usage.
    if have("monit") {
        let s = Scratch::new("monit-permute-533");
        let rc = control(
            &s,
            "monitrc",
            "set daemon 10\ncheck process db with pidfile /nonexistent/db.pid\n  group vcap\n",
        );
        for form in [
            &["summary", "-B"][..],
            &["status", "db", "-B"],
            &["-B", "summary"],
        ] {
            let mut m = Command::new("monit");
            m.env("HOME", &s.path)
                .current_dir(&s.path)
                .args(form)
                .arg("-c")
                .arg(&rc);
            let m = run(m);
            let mut t = cmd("tend-monit");
            t.env("HOME", &s.path)
                .current_dir(&s.path)
                .args(form)
                .arg("-c")
                .arg(&rc)
                .arg("-S")
                .arg(s.join("scan"));
            let t = run(t);
            assert_eq!(
                m.status.code(),
                t.status.code(),
                "{form:?}: monit {} / tend-monit {}",
                text(&m.stderr),
                text(&t.stderr)
            );
            assert!(
                text(&t.stderr).contains("not running"),
                "{form:?}: {}",
                text(&t.stderr)
            );
        }
    }
    let mut vm = Vm::new("monit-permute", &check("db", ""));
    vm.start();
    vm.wait_state("db", "running");
    let o = vm.monit(&["summary", "-B"]);
    assert_code(&o, 0);
    assert!(
        text(&o.stdout).contains("Process 'db'"),
        "{}",
        text(&o.stdout)
    );
    let o = vm.monit(&["status", "db", "-B"]);
    assert_code(&o, 0);
    assert!(
        text(&o.stdout).contains("Process 'db'"),
        "{}",
        text(&o.stdout)
    );
    // The agent's StopAndWait.
    let o = vm.monit(&["stop", "-g", "vcap"]);
    assert_code(&o, 0);
    assert_eq!(vm.state("db").as_deref(), Some("not monitored"));
    assert_eq!(vm.pid("db"), None);
    assert_code(&vm.monit(&["start", "-gvcap"]), 0);
    assert_eq!(vm.state("db").as_deref(), Some("running"));
    // `--` still ends the options: `-g` after it is a name, not an option.
    // No name and no group: monit's words, exit 1.
    let o = vm.monit(&["stop"]);
    assert_code(&o, 1);
    assert!(
        text(&o.stderr).contains("Please specify a service name or 'all' after stop"),
        "{}",
        text(&o.stderr)
    );
    let o = vm.monit(&["stop", "--", "-g"]);
    assert_code(&o, 1);
    assert!(
        text(&o.stderr).contains("no service by that name: -g"),
        "{}",
        text(&o.stderr)
    );
}

/// 5.2.5 writes a summary row `%-35s %s`: a name longer than the column keeps one space
/// before its state, so scripts that split on spaces still find it.
#[test]
fn monit_summary_long_name_keeps_a_space() {
    let long = "cloud_controller_worker_local_12";
    let mut vm = Vm::new(
        "monit-longname",
        &format!("{}{}", check(long, ""), check("db", "")),
    );
    vm.start();
    let want = format!("Process '{long}' running");
    wait_until(PATIENCE, "the long row", || {
        vm.summary().lines().any(|l| l == want).then_some(())
    });
    vm.wait_state("db", "running");
    let summary = vm.summary();
    assert!(
        summary
            .lines()
            .any(|l| l == format!("{:<36}running", "Process 'db'")),
        "{summary}"
    );
    let status = text(&vm.monit(&["status", long]).stdout);
    assert!(
        status
            .lines()
            .any(|l| l == format!("  {:<34}running", "status")),
        "{status}"
    );
}

/// tend's directory need not be on PATH: the connection test's tend-check and the
/// start program's tend-applyuidgid are found beside tend-monit, as tend-svscan is.
#[test]
fn monit_finds_its_own_programs_beside_itself() {
    require("python3");
    let port = free_port();
    let mut vm = Vm::new("monit-beside", "");
    vm.s.write("bin/listener", LISTENER, true);
    let rc_text = format!(
        "set daemon 1\ncheck process api with pidfile @ROOT@/run/api.pid\n  start program = \"@ROOT@/bin/listener @ROOT@/run/api.pid {port} @ROOT@/log api\" as uid root and gid root\n  stop program = \"/bin/sh -c 'kill -9 $(cat @ROOT@/run/api.pid)'\"\n  if failed host 127.0.0.1 port {port} protocol http request \"/\" with timeout 1 seconds for 2 cycles then restart\n"
    )
    .replace("@ROOT@", &vm.s.path.display().to_string());
    std::fs::write(&vm.rc, rc_text).unwrap();
    vm.start_with_path(std::ffi::OsStr::new("/usr/bin:/bin"));
    vm.wait_state("api", "running");
    let run = std::fs::read_to_string(vm.scan.join("api-health/run")).unwrap();
    assert!(
        run.contains(&format!("exec '{}'", bin("tend-check").display())),
        "{run}"
    );
    let old = vm.pid("api").unwrap();
    // Alive, not answering: tend-check (not found on PATH) has it restarted.
    sigstop(old);
    wait_until(6 * PATIENCE, "api restarted", || {
        vm.pid("api").filter(|&p| p != old)
    });
    vm.wait_state("api", "running");
    let log = std::fs::read_to_string(vm.s.join("tend-monit.log")).unwrap();
    assert!(!log.contains("not found"), "{log}");
}

/// The numbers monit validates, refused as monit refuses them (its words, its line), and
/// the edges it accepts, accepted.
#[test]
fn monit_numbers_validated_as_monit() {
    if !have_monit("monit_numbers_validated_as_monit") {
        return;
    }
    let refused = [
        (
            "negative limit",
            format!("{PROC}  if totalmem > -5 MB then restart\n"),
        ),
        (
            "negative cpu",
            format!("{PROC}  if cpu > -1 % then restart\n"),
        ),
        (
            "negative children",
            format!("{PROC}  if children > -1 then alert\n"),
        ),
        (
            "zero restarts",
            format!("{PROC}  if 0 restarts within 5 cycles then unmonitor\n"),
        ),
        (
            "restarts over cycles",
            format!("{PROC}  if 3 restarts within 2 cycles then timeout\n"),
        ),
        (
            "zero cycles",
            format!("{PROC}  if totalmem > 5 MB for 0 cycles then restart\n"),
        ),
        (
            "65 cycles",
            format!("{PROC}  if totalmem > 5 MB for 65 cycles then restart\n"),
        ),
        (
            "events over cycles",
            format!("{PROC}  if totalmem > 5 MB for 3 times within 2 cycles then restart\n"),
        ),
        (
            "zero events",
            format!("{PROC}  if totalmem > 5 MB for 0 times within 5 cycles then restart\n"),
        ),
        (
            "connection zero cycles",
            format!("{PROC}  if failed port 80 for 0 cycles then restart\n"),
        ),
    ];
    for (name, src) in refused {
        let (_s, m, t) = compare(&case(name, &src));
        assert_code(&m, 1);
        assert_code(&t, 1);
        assert_names_monits_error(&m, &t);
    }
    // Not a line of the file in monit's words, but refused all the same.
    let (_s, m, t) = compare(&case("set daemon 0", "set daemon 0\n"));
    assert_code(&m, 1);
    assert_code(&t, 1);
    assert!(
        text(&t.stderr).contains("Poll time is invalid"),
        "{}",
        text(&t.stderr)
    );
    for (name, src) in [
        (
            "equal restarts",
            format!("{PROC}  if 2 restarts within 2 cycles then unmonitor\n"),
        ),
        (
            "64 cycles",
            format!("{PROC}  if totalmem > 5 MB for 64 cycles then restart\n"),
        ),
        (
            "equal events",
            format!("{PROC}  if totalmem > 5 MB for 2 times within 2 cycles then restart\n"),
        ),
        ("fraction", format!("{PROC}  if cpu > 1.5 % then alert\n")),
    ] {
        let (_s, _m, t) = compare(&case(name, &src));
        assert_code(&t, 0);
    }
}

/// The daemons whose environment carries `JOB=ROOT/name` (the start program's `env`),
/// ROOT being this test's scratch directory: another test process running the same test
/// at the same time (the flake sweep's parallel loops) has daemons of the same names.
fn daemons_of(vm: &Vm, name: &str) -> Vec<u32> {
    let want = format!("JOB={}/{name}", vm.s.path.display());
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
                return false;
            };
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            cmd.starts_with(b"sleep\0")
                && env.split(|&b| b == 0).any(|v| v == want.as_bytes())
                && proc_state(u64::from(*pid)) != 'Z'
        })
        .collect()
}

/// A stop is done when the daemon is gone and the stop program has finished: a stop
/// program that removes the pidfile 1 s after its kill never removes the next start's.
/// Five rounds of the agent's stop/start: one daemon per job at the end (issue 36). The
/// programs' timeouts are bounds only: at a load of 200 the 1 s stop program once took
/// over the 5 s it had.
#[test]
fn monit_stop_waits_for_the_stop_program() {
    let job = |name: &str| {
        format!(
            "check process {name} with pidfile @ROOT@/run/{name}.pid\n  start program = \"/usr/bin/env JOB=@ROOT@/{name} @ROOT@/bin/daemon @ROOT@/run/{name}.pid @ROOT@/log {name}\" with timeout 60 seconds\n  stop program = \"/bin/sh -c 'kill $(cat @ROOT@/run/{name}.pid); sleep 1; rm -f @ROOT@/run/{name}.pid'\" with timeout 60 seconds\n  group vcap\n"
        )
    };
    let mut vm = Vm::new("monit-stopwait", &format!("{}{}", job("a"), job("b")));
    vm.start();
    vm.wait_state("a", "running");
    vm.wait_state("b", "running");
    for round in 0..5 {
        let o = vm.monit(&["-g", "vcap", "stop"]);
        assert_code(&o, 0);
        for n in ["a", "b"] {
            assert_eq!(
                vm.state(n).as_deref(),
                Some("not monitored"),
                "round {round}"
            );
            assert!(
                daemons_of(&vm, n).is_empty(),
                "round {round}: {n} {:?}",
                daemons_of(&vm, n)
            );
            assert!(
                !vm.s.join(format!("run/{n}.pid")).exists(),
                "round {round}: the stop program finished"
            );
        }
        assert_code(&vm.monit(&["-g", "vcap", "start"]), 0);
        for n in ["a", "b"] {
            assert_eq!(vm.state(n).as_deref(), Some("running"), "round {round}");
        }
    }
    // Nothing left to remove a pidfile later: the states hold (each start program's
    // shell has become `sleep` first).
    let one_each = || {
        ["a", "b"]
            .iter()
            .all(|n| daemons_of(&vm, n).len() == 1 && vm.pid(n).is_some())
    };
    wait_until(PATIENCE, "one daemon each", || one_each().then_some(()));
    stays_for(Duration::from_millis(1500), "one daemon each", one_each);
}

/// A daemon that outlives its stop's timeout is not stopped: the stop fails (exit 1),
/// the service is never "not monitored" while it runs, and the next start takes it over
/// rather than start a second one.
#[test]
fn monit_stop_outlived_is_not_done() {
    let mut vm = Vm::new(
        "monit-stopfail",
        "check process a with pidfile @ROOT@/run/a.pid\n  start program = \"/usr/bin/env JOB=@ROOT@/stopfail-a @ROOT@/bin/daemon @ROOT@/run/a.pid @ROOT@/log a\"\n  stop program = \"/bin/true\" with timeout 1 seconds\n",
    );
    vm.start();
    vm.wait_state("a", "running");
    let pid = vm.pid("a").unwrap();
    let o = vm.monit(&["stop", "a"]);
    assert_code(&o, 1);
    assert_eq!(vm.state("a").as_deref(), Some("Execution failed"));
    assert_eq!(vm.pid("a"), Some(pid));
    assert_code(&vm.monit(&["start", "a"]), 0);
    assert_eq!(vm.state("a").as_deref(), Some("running"));
    assert_eq!(vm.pid("a"), Some(pid));
    assert_eq!(daemons_of(&vm, "stopfail-a").len(), 1);
    assert_eq!(vm.log(), ["start a"]);
}

/// `if 2 restarts within 15 cycles then unmonitor` counts the restarts a failed
/// connection test makes (each restarts the watcher, which must not forget them): the
/// start, two restarts, then no longer monitored and left running (issue 34).
#[test]
fn monit_restart_limit_counts_connection_restarts() {
    let port = free_port();
    let mut vm = Vm::new(
        "monit-connlimit",
        &format!(
            "check process api with pidfile @ROOT@/run/api.pid\n  start program = \"/usr/bin/env JOB=@ROOT@/connlimit-api @ROOT@/bin/daemon @ROOT@/run/api.pid @ROOT@/log api\"\n  stop program = \"/bin/sh -c 'kill $(cat @ROOT@/run/api.pid)'\"\n  if failed port {port} protocol http request \"/health\" with timeout 1 seconds then restart\n  if 2 restarts within 15 cycles then unmonitor\n"
        ),
    );
    let rc = std::fs::read_to_string(&vm.rc)
        .unwrap()
        .replace("set daemon 10", "set daemon 1");
    std::fs::write(&vm.rc, rc).unwrap();
    vm.start();
    wait_until(6 * PATIENCE, "two restarts", || {
        (vm.log().len() >= 3).then_some(())
    });
    wait_until(6 * PATIENCE, "api unmonitored", || {
        (vm.state("api").as_deref() == Some("not monitored")).then_some(())
    });
    assert_eq!(vm.log(), ["start api", "start api", "start api"]);
    // One daemon, left running (its start program's shell has become `sleep`).
    let pid = wait_until(PATIENCE, "one daemon", || {
        (daemons_of(&vm, "connlimit-api").len() == 1)
            .then(|| vm.pid("api"))
            .flatten()
    });
    stays_for(
        Duration::from_secs(4),
        "no more restarts, still running",
        || vm.log().len() == 3 && vm.pid("api") == Some(pid),
    );
}

/// A resource rule stays matched across the restarts it causes, as monit keeps its
/// event state: "matched" is posted once, not again after each restart.
#[test]
fn monit_resource_matched_posted_once_across_restarts() {
    let mut vm = Vm::new("monit-matched", "");
    let rc_text = format!(
        "set daemon 1\nset logfile @ROOT@/monit.log\n{}",
        check("db", "  if memory > 1 kb then restart\n")
    )
    .replace("@ROOT@", &vm.s.path.display().to_string());
    std::fs::write(&vm.rc, rc_text).unwrap();
    vm.start();
    wait_until(6 * PATIENCE, "three restarts", || {
        (vm.log().iter().filter(|l| l.starts_with("start")).count() >= 4).then_some(())
    });
    let log = std::fs::read_to_string(vm.s.join("monit.log")).unwrap();
    let matched = log
        .lines()
        .filter(|l| l.contains("matches resource limit"))
        .count();
    assert_eq!(matched, 1, "{log}");
}

/// A control file owned by another user is refused as monit 5.33 refuses it (exit 1,
/// "must be owned by you"), and one that group or others may read; an included file
/// that someone else may write is refused too (its programs would run as us).
#[test]
fn monit_control_file_owner_and_mode_as_monit() {
    if !nix::unistd::geteuid().is_root() {
        return skip("needs root to give a file to another user");
    }
    let s = Scratch::new("monit-owner");
    let rc = control(&s, "monitrc", "set daemon 10\n");
    let give = |p: &Path, uid: u32| {
        std::os::unix::fs::chown(p, Some(uid), None).unwrap();
    };
    give(&rc, 65534);
    let t = tend_t(&s, &rc);
    assert_code(&t, 1);
    assert!(
        text(&t.stderr).contains("must be owned by you"),
        "{}",
        text(&t.stderr)
    );
    if have("monit") {
        let m = monit_t(&s, &rc);
        assert_code(&m, 1);
        assert!(
            text(&m.stderr).contains("must be owned by you"),
            "{}",
            text(&m.stderr)
        );
    }
    give(&rc, 0);
    std::fs::set_permissions(&rc, std::fs::Permissions::from_mode(0o640)).unwrap();
    let t = tend_t(&s, &rc);
    assert_code(&t, 1);
    assert!(
        text(&t.stderr).contains("permission 0640 is wrong, maximum 0700 allowed"),
        "{}",
        text(&t.stderr)
    );
    // Includes: root's or ours, written by their owner only.
    let rc = control(
        &s,
        "monitrc",
        &format!(
            "set daemon 10\ninclude {}/inc/*.monitrc\n",
            s.path.display()
        ),
    );
    let inc = control(&s, "inc/a.monitrc", PROC);
    assert_code(&tend_t(&s, &rc), 0);
    give(&inc, 65534);
    let t = tend_t(&s, &rc);
    assert_code(&t, 1);
    assert!(
        text(&t.stderr).contains("refused: owned by uid 65534"),
        "{}",
        text(&t.stderr)
    );
    give(&inc, 0);
    std::fs::set_permissions(&inc, std::fs::Permissions::from_mode(0o666)).unwrap();
    let t = tend_t(&s, &rc);
    assert_code(&t, 1);
    assert!(
        text(&t.stderr).contains("refused: permission 0666 lets others write it"),
        "{}",
        text(&t.stderr)
    );
    std::fs::set_permissions(&inc, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_code(&tend_t(&s, &rc), 0);
}

/// Every statement of monit 5.33's grammar (man monit), once: both accept the file, and
/// tend-monit lists each one it reads but does not carry out. Then Debian's own
/// /etc/monit/monitrc (`set log`), as installed.
#[test]
fn monit_every_statement_read_as_monit() {
    if !have_monit("monit_every_statement_read_as_monit") {
        return;
    }
    let every = "set daemon 30 with start delay 10\nset init\nset terminal batch\nset log @ROOT@/monit.log\nset logfile syslog facility log_daemon\nset log syslog\nset pidfile @ROOT@/monit.pid\nset idfile @ROOT@/monit.id\nset statefile @ROOT@/monit.state\nset limits { programOutput: 512 B, sendExpectBuffer: 256 B, fileContentBuffer: 512 B, httpContentBuffer: 1 MB, networkTimeout: 5 seconds }\nset onreboot start\nset fips\nset ssl { verify: enable, selfsigned: allow }\nset eventqueue basedir @ROOT@/events slots 100\nset mmonit https://user:pw@localhost:8443/collector with timeout 5 seconds\nset mailserver localhost port 25\nset mail-format { from: a@b.c }\nset alert a@b.c\nset alert b@b.c only on { timeout, nonexist }\nset httpd port 2812 and use address localhost allow localhost allow admin:monit\ncheck process p with pidfile /run/p.pid\n  start program = \"/bin/true\" as uid root and gid root with timeout 10 seconds\n  stop program = \"/bin/true\"\n  restart program = \"/bin/true\"\n  group g\n  depends on f\n  mode active\n  onreboot nostart\n  every 2 cycles\n  alert x@y.z\n  noalert y@y.z\n  if totalmem > 10 MB for 2 cycles then alert\n  if cpu usage > 50% then alert\n  if uptime > 3 days then alert\n  if 3 restarts within 5 cycles then unmonitor\n  if failed port 80 protocol http then restart\n  if not exist then alert\ncheck process q matching \"sleep\"\ncheck file f with path /etc/hostname\n  if changed checksum then alert\ncheck fifo ff with path /tmp/fifo\ncheck filesystem fs with path /\n  if space usage > 90% then alert\ncheck directory d with path /tmp\ncheck host h with address localhost\n  if failed ping then alert\ncheck network n with interface lo\n  if failed link then alert\ncheck system $HOST\n  if loadavg (1min) > 4 then alert\ncheck program pr with path /bin/true\n  if status != 0 then alert\n";
    let (_s, m, t) = compare(&case("every statement", every));
    assert_code(&m, 0);
    assert_code(&t, 0);
    let listed = text(&t.stderr);
    for what in [
        "set limits",
        "set onreboot",
        "set fips",
        "set ssl",
        "set mmonit",
        "onreboot nostart",
        "every 2 cycles",
        "if uptime",
        "alert b@b.c",
        "check file f",
        "check fifo ff",
        "check filesystem fs",
        "check directory d",
        "check host h",
        "check network n",
        "check system",
        "check program pr",
    ] {
        assert!(
            listed.contains(&format!(": {what}")),
            "{what} not listed: {listed}"
        );
    }
    let debian = Path::new("/etc/monit/monitrc");
    if debian.exists() {
        let s = Scratch::new("monit-debian");
        let m = monit_t(&s, debian);
        let t = tend_t(&s, debian);
        assert_same_verdict(&m, &t, "Debian's monitrc");
        assert_code(&t, 0);
    }
}

/// `_status2` as 5.2.5 writes it: a `<platform>` after `<server>`, and each group's
/// members with the include files in order (5.2.5 reads an include's last match first
/// and puts each member first), as the BOSH agent's harness saw from the stemcell's monit.
#[test]
fn monit_xml_platform_and_group_members_as_5_2_5() {
    let port = free_port();
    let mut vm = Vm::new(
        "monit-groups",
        &format!(
            "set httpd port {port} and use address 127.0.0.1\n  allow vcap:pw\ninclude @ROOT@/job/*.monitrc\n"
        ),
    );
    let root = vm.s.path.display().to_string();
    for (file, names) in [
        ("a.monitrc", ["zeta", "alpha"]),
        ("b.monitrc", ["mid", "beta"]),
    ] {
        let text: String = names.iter().map(|n| check(n, "")).collect();
        control(
            &vm.s,
            &format!("job/{file}"),
            &text.replace("@ROOT@", &root),
        );
    }
    vm.start();
    vm.wait_state("beta", "running");
    let (code, xml) = get(port, "/_status2?format=xml", "vcap:pw");
    assert_eq!(code, 200, "{xml}");
    let members: Vec<&str> = xml
        .split("<servicegroup name=\"vcap\">")
        .nth(1)
        .and_then(|g| g.split("</servicegroup>").next())
        .unwrap_or_else(|| panic!("no vcap group: {xml}"))
        .split("<service>")
        .skip(1)
        .filter_map(|m| m.split("</service>").next())
        .collect();
    // Read b's checks, then a's; each put first: a's before b's, each file's reversed.
    assert_eq!(members, ["alpha", "zeta", "beta", "mid"], "{xml}");
    let platform = xml
        .split("</server><platform>")
        .nth(1)
        .and_then(|p| p.split("</platform>").next())
        .unwrap_or_else(|| panic!("no platform after server: {xml}"));
    for tag in [
        "name", "release", "version", "machine", "cpu", "memory", "swap",
    ] {
        assert!(platform.contains(&format!("<{tag}>")), "{tag}: {platform}");
    }
    assert!(platform.starts_with("<name>Linux</name>"), "{platform}");
}

/// A control file that cannot be read: one line in the toolkit's grammar, the bare
/// reason (no "(os error N)").
#[test]
fn monit_unreadable_control_file_one_message_line() {
    let s = Scratch::new("monit-unreadable");
    let file = s.path.join("missing");
    let o = tend("tend-monit", ["-t", "-c", file.to_str().unwrap()]);
    assert_code(&o, 1);
    assert_eq!(
        text(&o.stderr),
        format!(
            "tend-monit: fatal: unable to read {}: No such file or directory\n",
            file.display()
        )
    );
}

/// Directories a test made in the machine's own tree, removed (deepest first) on drop.
struct Made(Vec<PathBuf>);

impl Made {
    /// Make `p` and any missing parent, noting each one made.
    fn dir(&mut self, p: &Path) {
        let mut missing = Vec::new();
        let mut at = Some(p);
        while let Some(d) = at.filter(|d| !d.exists()) {
            missing.push(d.to_path_buf());
            at = d.parent();
        }
        std::fs::create_dir_all(p).unwrap();
        self.0.extend(missing.into_iter().rev());
    }
}

impl Drop for Made {
    fn drop(&mut self) {
        for d in self.0.iter().rev() {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// The pids below `pid` (its children, theirs...), from /proc's parent links.
fn descendants(pid: i32) -> Vec<i32> {
    let mut parent = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        if let Some(pp) = stat
            .rsplit_once(") ")
            .and_then(|(_, r)| r.split(' ').nth(1)?.parse::<i32>().ok())
        {
            parent.push((p, pp));
        }
    }
    let mut found = vec![pid];
    let mut i = 0;
    while i < found.len() {
        let at = found[i];
        found.extend(parent.iter().filter(|(_, pp)| *pp == at).map(|(p, _)| *p));
        i += 1;
    }
    found.split_off(1)
}

/// Issue 37: on a BOSH layout (/var/vcap/jobs/JOB/config/bpm.yml, the monit file calling
/// `/var/vcap/jobs/bpm/bin/bpm start JOB`), tend-monit's bpm route starts the process
/// through tend-jail with the options tend-jobs writes for the same bpm.yml (one
/// translation), and the process runs in bpm's walls.
#[test]
fn monit_bpm_route_on_a_bosh_layout_runs_in_bpms_walls() {
    if !nix::unistd::geteuid().is_root() {
        return skip("tend-jail needs root");
    }
    if Path::new("/var/vcap/bosh").exists() {
        return skip("a real BOSH machine: its /var/vcap is left alone");
    }
    let job = format!("tendmonit{}", std::process::id());
    let vcap = Path::new("/var/vcap");
    let mut made = Made(Vec::new());
    for d in ["packages", "data/packages", "sys/log", "jobs/bpm/bin"] {
        made.dir(&vcap.join(d));
    }
    made.dir(&vcap.join("jobs").join(&job).join("config"));
    // The job's host directories tend-jail makes, removed with the test.
    for d in ["data", "sys/log"] {
        made.0.push(vcap.join(d).join(&job));
    }
    std::fs::write(
        vcap.join(format!("jobs/{job}/config/bpm.yml")),
        format!(
            "processes:\n- name: {job}\n  executable: /bin/sleep\n  args: [\"1004\"]\n  capabilities: [NET_BIND_SERVICE]\n  limits: {{open_files: 512}}\n  tend: {{user: nobody}}\n"
        ),
    )
    .unwrap();
    let bpm = "/var/vcap/jobs/bpm/bin/bpm";
    let mut vm = Vm::new(
        "monit-bpm-walls",
        &format!(
            "check process {job}\n  with pidfile /var/vcap/sys/run/bpm/{job}/{job}.pid\n  start program \"{bpm} start {job}\"\n  stop program \"{bpm} stop {job}\"\n  group vcap\n"
        ),
    );
    let t = vm.monit(&["-t"]);
    assert_code(&t, 0);
    assert!(
        text(&t.stderr).contains(&format!("check process {job}: run from ")),
        "{}",
        text(&t.stderr)
    );
    vm.start();
    vm.wait_state(&job, "running");
    // tend-jobs' chain for the same bpm.yml: `tend-jail` with the process's walls.
    let run_file = vm.scan.join(&job).join("bpm-run");
    let script = std::fs::read_to_string(&run_file).unwrap();
    assert!(
        script.contains(&format!(
            "tend-jail -j {job} -u nobody -c NET_BIND_SERVICE -n 512 -s TERM \\\n  /bin/sleep 1004\n"
        )),
        "{script}"
    );
    let status = text(&vm.monit(&["status", &job]).stdout);
    let watched: i32 = status
        .lines()
        .find_map(|l| l.trim().strip_prefix("pid"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{status}"));
    // The program is below the watched tend-jail, in its own pid namespace.
    let program = wait_until(PATIENCE, "the jailed program", || {
        descendants(watched).into_iter().find(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c == b"/bin/sleep\x001004\x00")
        })
    });
    let st = std::fs::read_to_string(format!("/proc/{program}/status")).unwrap();
    for want in [
        "NoNewPrivs:\t1",
        "Seccomp:\t2",
        "CapAmb:\t0000000000000400",
        "Uid:\t65534\t65534\t65534\t65534",
    ] {
        assert!(st.lines().any(|l| l == want), "{want:?} not in\n{st}");
    }
    let limits = std::fs::read_to_string(format!("/proc/{program}/limits")).unwrap();
    assert!(
        limits
            .lines()
            .any(|l| l.starts_with("Max open files") && l.split_whitespace().nth(3) == Some("512")),
        "{limits}"
    );
    for ns in ["mnt", "pid", "ipc", "uts"] {
        let ours = std::fs::read_link(format!("/proc/self/ns/{ns}")).unwrap();
        let theirs = std::fs::read_link(format!("/proc/{program}/ns/{ns}")).unwrap();
        assert_ne!(ours, theirs, "{ns} namespace shared with the host");
    }
    assert_code(&vm.monit(&["stop", &job]), 0);
    vm.wait_state(&job, "not monitored");
    wait_until(PATIENCE, "the jailed program gone", || {
        (!Path::new(&format!("/proc/{program}")).exists() || proc_state(program as u64) == 'Z')
            .then_some(())
    });
}
