//! tend-monit against Debian's monit 5.33 on the same control files: the real monit files
//! of Cloud Foundry releases (tests/monit-files/, sources in its README) and hostile ones.
//!
//! Not tested here (not built yet): running what the files describe, the command line
//! (`summary`, `status`, actions), the HTTP interface, alerts.

use crate::common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/monit-files");

/// Whether Debian's monit is here; tests that compare with it say `skipped` otherwise.
fn have_monit(test: &str) -> bool {
    let ok = have("monit");
    if !ok {
        eprintln!("skipped: {test}: monit is not installed (apt-get install monit)");
    }
    ok
}

/// A control file written with monit's required mode (0600).
fn control(s: &Scratch, rel: &str, text: &str) -> PathBuf {
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
    // Every totalmem rule of cloud_controller_ng: 3 for the API, 3 for each of 2 workers.
    let mem = err.lines().filter(|l| l.contains("if totalmem >")).count();
    assert_eq!(mem, 9, "{err}");
    assert!(
        err.contains(&format!(
            "tend-monit: ignored: {root}/var/vcap/monit/job/garden.monitrc:6: if failed host 127.0.0.1 port 7777"
        )),
        "{err}"
    );
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
    {
        let s = Scratch::new("monit-none");
        let mut c = cmd("tend-monit");
        c.env("HOME", &s.path).current_dir(&s.path).arg("-t");
        let o = run(c);
        assert_code(&o, 111);
        assert!(text(&o.stderr).contains("no control file"));
    }
}
