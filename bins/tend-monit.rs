//! tend-monit — read monit control files and answer as monit does. See
//! man/man8/tend-monit.8.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use tend_cli::{Program, code, shown};
use tend_monit::model::Control;

const USAGE: &str = "tend-monit [ -c file ] [ -S scandir ] [ -g group ] [ -BINtV ] [ summary [name] | status [name] | start|stop|restart|monitor|unmonitor name|all | reload | quit | validate | procmatch regex ] | tend-monit -W";
const PROG: Program = Program::new("tend-monit", USAGE);
const SPEC: &str = "c:S:g:BINtVW";
/// Where the services live without -S (or TEND_MONIT_SCANDIR).
const SCANDIR: &str = "/run/tend-monit";
/// The version monit's `-V` prints first; tend's own follows.
const VERSION: &str = concat!(
    "This is tend-monit version ",
    env!("CARGO_PKG_VERSION"),
    " (speaks monit 5.2.5 and 5.33)"
);

pub fn main() {
    tend_cli::help::holds(const { &[&tend_cli::help::pages::TEND_MONIT] });
    let p = PROG.parse_permuted(tend_cli::args(), SPEC);
    if p.has('V') {
        println!("{VERSION}");
        std::process::exit(code::OK)
    }
    if p.has('W') {
        watch()
    }
    let ops: Vec<_> = p.operands.iter().map(|o| o.to_str()).collect();
    match ops.as_slice() {
        [] if p.has('t') => test(control_file(&p)),
        [Some("validate")] if p.has('t') => test(control_file(&p)),
        [] => daemon(&p),
        [Some("summary" | "status")] | [Some("summary" | "status"), Some(_)] => report(&p, &ops),
        [Some(w), Some(name)] if let Some(a) = tend_monit::control::Action::from_word(w) => {
            act(&p, a, Some(name))
        }
        [Some(w)]
            if p.has('g')
                && let Some(a) = tend_monit::control::Action::from_word(w) =>
        {
            act(&p, a, None)
        }
        [Some(w)] if tend_monit::control::Action::from_word(w).is_some() => PROG.fatal(
            code::NO,
            format_args!("Please specify a service name or 'all' after {w}"),
        ),
        [Some("reload")] => signal(&p, nix::sys::signal::Signal::SIGHUP),
        [Some("quit")] => signal(&p, nix::sys::signal::Signal::SIGTERM),
        [Some("validate")] => test(control_file(&p)),
        [Some("procmatch"), Some(pattern)] => procmatch(pattern),
        _ => PROG.usage_exit(),
    }
}

fn scandir(p: &tend_cli::Parsed) -> PathBuf {
    p.value('S')
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("TEND_MONIT_SCANDIR").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(SCANDIR))
}

/// `-W`: the watcher of one check, run by its service directory's ./run.
fn watch() -> ! {
    use tend_monit::watch::Exit;
    tend_monit::watch::keep_notification_fd_private();
    let here = std::env::current_dir().unwrap_or_else(|e| {
        PROG.fatal(
            code::SYSTEM,
            format_args!(
                "unable to find the working directory: {}",
                tend_sys::error::io_reason(&e)
            ),
        )
    });
    let name = here
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let sink = tend_sys::warn::Prefixed(format!("tend-monit {name}"));
    // "." rather than the absolute path: the directory may be renamed while the watcher
    // runs (an install moves a replaced or removed service aside), and what the watcher
    // writes must follow it, never recreate the old name.
    match tend_monit::watch::run(std::path::Path::new("."), &sink) {
        Ok(Exit::Stopped) => std::process::exit(code::OK),
        Ok(Exit::Died(pid)) => {
            tend_sys::warn::Warn::warn(&sink, &format_args!("pid {pid} died: starting it again"));
            std::process::exit(1)
        }
        Ok(Exit::StartFailed(why)) => {
            tend_sys::warn::Warn::warn(&sink, &format_args!("start failed: {why}"));
            std::process::exit(i32::from(tend_monit::status::EXIT_START_FAILED))
        }
        Err(e) => {
            tend_sys::warn::line(&format!("tend-monit {name}"), "fatal", &e);
            std::process::exit(code::SYSTEM)
        }
    }
}

/// No command: the daemon, in the foreground (as `monit -I`).
fn daemon(p: &tend_cli::Parsed) -> ! {
    let file = control_file(p);
    let control = read(&file);
    let exe = std::env::current_exe().unwrap_or_else(|e| {
        PROG.fatal(
            code::SYSTEM,
            format_args!(
                "unable to find my executable: {}",
                tend_sys::error::io_reason(&e)
            ),
        )
    });
    let dir = scandir(p);
    let chosen = p.has('S') || std::env::var_os("TEND_MONIT_SCANDIR").is_some();
    if let Err(e) = tend_monit::service::prepare_scan_directory(&dir, chosen) {
        PROG.fatal(code::SYSTEM, e)
    }
    let reread = || match tend_monit::check_file_mode(&file).map(|()| tend_monit::read(&file)) {
        Err(e) => {
            PROG.warn(format_args!("{}: {e}: not reloaded", file.display()));
            None
        }
        Ok(r) => match r {
            Ok((c, errors)) if errors.is_empty() => Some(c),
            Ok((_, errors)) => {
                for e in &errors {
                    PROG.line("error", e);
                }
                PROG.warn(format_args!(
                    "{}: not reloaded: {} errors",
                    file.display(),
                    errors.len()
                ));
                None
            }
            Err(e) => {
                PROG.warn(format_args!(
                    "unable to read {}: {}",
                    e.path.display(),
                    tend_sys::error::io_reason(&e.err)
                ));
                None
            }
        },
    };
    match tend_monit::daemon::run(control, &dir, &file, &exe, &reread, &PROG) {
        Ok(()) => std::process::exit(code::OK),
        Err(e) => PROG.fatal(code::SYSTEM, e),
    }
}

/// The names an action or a report is about: one check, `all`, or `-g`'s group.
fn selected(p: &tend_cli::Parsed, c: &Control, name: Option<&str>) -> Vec<String> {
    let order = tend_monit::control::process_order(c);
    if let Some(g) = p.value('g') {
        let g = g.to_string_lossy();
        return order
            .into_iter()
            .filter(|n| {
                c.checks
                    .iter()
                    .any(|ch| ch.name == *n && ch.groups.iter().any(|x| *x == g))
            })
            .collect();
    }
    match name {
        None | Some("all") => order,
        Some(n) if order.iter().any(|o| o == n) => vec![n.to_string()],
        Some(n) => PROG.fatal(
            code::NO,
            format_args!("action failed -- There is no service by that name: {n}"),
        ),
    }
}

/// `start|stop|restart|monitor|unmonitor NAME|all` and `-g GROUP ACTION`.
fn act(p: &tend_cli::Parsed, action: tend_monit::control::Action, name: Option<&str>) -> ! {
    let c = read(&control_file(p));
    let dir = scandir(p);
    let names = selected(p, &c, name);
    let mut failed = 0;
    for step in tend_monit::control::plan(&c, action, &names) {
        match tend_monit::control::execute(&c, &dir, &step, true) {
            Ok(true) => {}
            Ok(false) => {
                failed += 1;
                PROG.warn(format_args!("{step}: not done within its timeout"));
            }
            Err(e) => {
                failed += 1;
                PROG.warn(e);
            }
        }
    }
    if failed == 0 {
        tend_monit::control::post_done(&c, &dir, action, &names, &PROG);
    }
    std::process::exit(if failed == 0 { code::OK } else { code::NO })
}

/// `summary [name]` and `status [name]`.
fn report(p: &tend_cli::Parsed, ops: &[Option<&str>]) -> ! {
    let c = read_quiet(&control_file(p));
    let dir = scandir(p);
    let Some((_, started)) = tend_monit::daemon::running(&dir) else {
        PROG.fatal(code::NO, "the monit daemon is not running")
    };
    let names = selected(p, &c, ops.get(1).copied().flatten());
    let services: Vec<_> = names
        .iter()
        .map(|n| tend_monit::status::read(&dir, n))
        .collect();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let up = now.saturating_sub(started);
    let one = ops.get(1).copied().flatten().is_some();
    let text = if ops[0] == Some("summary") && p.has('N') {
        tend_monit::status::summary_533(&services, up, !one)
    } else if ops[0] == Some("summary") {
        tend_monit::status::summary_525(&c, &services, up)
    } else if p.has('N') {
        tend_monit::resource::snapshot(|| tend_monit::status::status_533(&services, up, now))
    } else {
        tend_monit::status::status_525(&services, up)
    };
    print!("{text}");
    std::process::exit(code::OK)
}

/// `procmatch REGEX`: the processes a `matching` check would consider.
fn procmatch(pattern: &str) -> ! {
    match tend_monit::watch::matching(pattern) {
        Ok(m) => {
            print!("{}", tend_monit::watch::procmatch_report(pattern, &m));
            std::process::exit(code::OK)
        }
        Err(tend_monit::watch::FindError::Pattern(e)) => {
            PROG.fatal(code::USAGE, format_args!("invalid pattern {pattern}: {e}"))
        }
        Err(e) => PROG.fatal(code::SYSTEM, format_args!("unable to list processes: {e}")),
    }
}

/// `reload` / `quit`: a signal to the running daemon.
fn signal(p: &tend_cli::Parsed, sig: nix::sys::signal::Signal) -> ! {
    let dir = scandir(p);
    let Some((pid, _)) = tend_monit::daemon::running(&dir) else {
        PROG.fatal(code::NO, "the monit daemon is not running")
    };
    if let Err(e) = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig) {
        PROG.fatal(
            code::SYSTEM,
            format_args!("unable to signal pid {pid}: {}", e.desc()),
        )
    }
    std::process::exit(code::OK)
}

/// `-c FILE`, or the first of monit's search order that exists.
fn control_file(p: &tend_cli::Parsed) -> PathBuf {
    if let Some(c) = p.value('c') {
        return PathBuf::from(c);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    tend_monit::find_control_file(home.as_deref()).unwrap_or_else(|| {
        let tried: Vec<String> = tend_monit::search_order(home.as_deref())
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        PROG.fatal(
            code::SYSTEM,
            format_args!("no control file: none of {}", tried.join(", ")),
        )
    })
}

/// Read the file and everything it includes; every problem on stderr. The configuration
/// when it is valid; otherwise exit 1 (monit's code for a bad control file).
fn read(file: &std::path::Path) -> Control {
    match tend_monit::check_file_mode(file) {
        Ok(()) => {}
        Err(tend_monit::ModeError::Io(e)) => PROG.fatal(
            code::NO,
            format_args!(
                "unable to read {}: {}",
                shown(file.as_os_str()),
                tend_sys::error::io_reason(&e)
            ),
        ),
        Err(e) => PROG.fatal(code::NO, format_args!("{}: {e}", shown(file.as_os_str()))),
    }
    let (control, errors) = tend_monit::read(file).unwrap_or_else(|e| {
        PROG.fatal(
            code::NO,
            format_args!(
                "unable to read {}: {}",
                e.path.display(),
                tend_sys::error::io_reason(&e.err)
            ),
        )
    });
    for (loc, pattern) in &control.empty_includes {
        PROG.warn(format_args!("{loc}: include {pattern}: no file matches"));
    }
    for w in tend_monit::validate::warnings(&control) {
        PROG.warn(w);
    }
    for e in &errors {
        PROG.line("error", e);
    }
    if !errors.is_empty() {
        let n = errors.len();
        PROG.fatal(
            code::NO,
            format_args!(
                "{}: {n} error{} in the control file",
                file.display(),
                if n == 1 { "" } else { "s" }
            ),
        )
    }
    control
}

/// The configuration for a report: errors are fatal, warnings are not repeated.
fn read_quiet(file: &std::path::Path) -> Control {
    match tend_monit::read(file) {
        Ok((c, errors)) if errors.is_empty() => c,
        _ => read(file),
    }
}

/// `-t`: validate; list what would be ignored.
fn test(file: PathBuf) -> ! {
    let control = read(&file);
    for i in &control.ignored {
        PROG.line("ignored", format_args!("{}: {}: {}", i.loc, i.what, i.why));
    }
    // A check on the bpm route is only as good as its bpm.yml: read now, as the daemon
    // will, so a bad one is named here rather than when the daemon installs.
    let mut bad = 0;
    for c in &control.checks {
        let Some(r) = tend_monit::bpm::route(c) else {
            continue;
        };
        match tend_monit::bpm::translate(c, &r, &PROG) {
            Ok(_) => PROG.line(
                "info",
                format_args!(
                    "{}: check process {}: run from {} (bpm process {}), not through bpm",
                    c.loc,
                    c.name,
                    r.file.display(),
                    r.process
                ),
            ),
            Err(e) => {
                bad += 1;
                PROG.line("error", format_args!("{}: {e}", c.loc));
            }
        }
    }
    if bad > 0 {
        PROG.fatal(
            code::NO,
            format_args!(
                "{}: {bad} check(s) with a bpm.yml it cannot run",
                file.display()
            ),
        )
    }
    println!("Control file syntax OK");
    std::process::exit(code::OK)
}
