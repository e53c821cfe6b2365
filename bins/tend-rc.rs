//! tend-rc — bring sets of services up and down in dependency order, from s6-rc source
//! directories read directly. See man/man8/tend-rc.8.
#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;
use tend_cli::{Program, code, parse_uint};
use tend_rc::engine::Event;
use tend_rc::graph::Graph;
use tend_rc::plan::Direction;
use tend_rc::{Ask, Changed, Fail};

const USAGE: &str = "tend-rc check source... | tend-rc init [ -l live ] [ -c source ]... scandir | tend-rc [ -v verbosity ] [ -n ] [ -t timeout ] [ -l live ] update [ -f convfile ] [ -c source ]... | tend-rc [ -v verbosity ] [ -n ] [ -t timeout ] [ -l live ] [ -u | -d | -D ] [ -p ] [ -a ] change|list|listall|diff [ name... ] | tend-rc [ -l live ] reload name...";
const PROG: Program = Program::new("tend-rc", USAGE);
const DEFAULT_LIVE: &str = "/run/tend/rc";
/// s6-rc's exit codes.
const TIMED_OUT: i32 = 2;
const UNKNOWN_NAME: i32 = 3;
const BAD_LIVE: i32 = 4;

struct Options {
    live: PathBuf,
    sources: Vec<PathBuf>,
    conversion: Option<PathBuf>,
    verbosity: u32,
    ask: Ask,
    operands: Vec<OsString>,
}

fn options(args: impl IntoIterator<Item = OsString>) -> Options {
    let mut parsed = PROG.parse(args, "v:nt:l:c:udDpa");
    // `tend-rc init -l live -c source scandir`, `tend-rc update -f convfile -c source`:
    // their options follow the word (as s6-rc-init's and s6-rc-update's follow their
    // names); the general ones precede the subcommand.
    if let Some(word) = parsed
        .operands
        .first()
        .filter(|w| *w == "init" || *w == "update")
        .cloned()
    {
        let after = PROG.parse(parsed.operands[1..].to_vec(), "v:nt:l:c:f:udDpa");
        parsed.opts.extend(after.opts);
        parsed.operands = std::iter::once(word).chain(after.operands).collect();
    }
    let mut o = Options {
        live: PathBuf::from(DEFAULT_LIVE),
        sources: Vec::new(),
        conversion: None,
        verbosity: 1,
        ask: Ask {
            direction: Direction::Up,
            prune: false,
            active: false,
            names: Vec::new(),
            dry_run: false,
            timeout: None,
            tick: None,
        },
        operands: parsed.operands,
    };
    for (opt, value) in &parsed.opts {
        let v = value.as_deref();
        match opt {
            'v' => o.verbosity = v.and_then(parse_uint).unwrap_or_else(|| PROG.usage_exit()),
            'n' => o.ask.dry_run = true,
            't' => {
                let ms: u64 = v.and_then(parse_uint).unwrap_or_else(|| PROG.usage_exit());
                o.ask.timeout = (ms > 0).then(|| Duration::from_millis(ms));
            }
            'l' => o.live = PathBuf::from(v.unwrap_or_default()),
            'c' => o.sources.push(PathBuf::from(v.unwrap_or_default())),
            'f' => o.conversion = Some(PathBuf::from(v.unwrap_or_default())),
            'u' => o.ask.direction = Direction::Up,
            'd' => o.ask.direction = Direction::Down,
            'D' => o.ask.direction = Direction::ForceDown,
            'p' => o.ask.prune = true,
            'a' => o.ask.active = true,
            _ => PROG.usage_exit(),
        }
    }
    o
}

fn source_problems(problems: &[tend_rc::source::Problem], code: i32) -> ! {
    for p in problems {
        PROG.line("fatal", p);
    }
    std::process::exit(code)
}

fn fail(f: Fail) -> ! {
    match f {
        Fail::Source(p) => {
            PROG.line(
                "fatal",
                "the recorded sources do not check; nothing was changed",
            );
            source_problems(&p, BAD_LIVE)
        }
        Fail::Unknown(n) => PROG.fatal(UNKNOWN_NAME, format_args!("unknown service name: {n}")),
        Fail::Live(m) => PROG.fatal(BAD_LIVE, m),
        Fail::Sys(m) => PROG.fatal(code::SYSTEM, m),
        Fail::Conversion(e) => PROG.fatal(e.code, e.message),
    }
}

fn print_lines(lines: &[String]) {
    let mut out = std::io::stdout().lock();
    for l in lines {
        let _ = writeln!(out, "{l}");
    }
}

/// What tend-rc says while it works: on a terminal one line rewritten in place, else one
/// line per service that comes up, goes down or fails.
struct Reporter {
    tty: bool,
    verbosity: u32,
    shown: bool,
    drawn: Option<std::time::Instant>,
    last_done: usize,
}

impl Reporter {
    fn event(&mut self, e: &Event, g: &Graph) {
        let name = |i: &usize| g.atoms[*i].name().to_string();
        match e {
            Event::Failed(i, why) => {
                self.clear();
                PROG.warn(format_args!("{} failed: {why}", name(i)));
            }
            Event::Started(i, took) | Event::Stopped(i, took)
                if (!self.tty && self.verbosity >= 1) || self.verbosity >= 2 =>
            {
                self.clear();
                let what = if matches!(e, Event::Started(..)) {
                    "up"
                } else {
                    "down"
                };
                PROG.line(
                    "info",
                    format_args!("{} {what} ({} ms)", name(i), took.as_millis()),
                );
            }
            Event::Progress {
                done,
                total,
                up,
                waiting,
            } if self.tty && self.verbosity >= 1 => {
                // Redrawn at most ten times a second, and at every service done.
                let now = std::time::Instant::now();
                if *done == self.last_done
                    && self
                        .drawn
                        .is_some_and(|t| now - t < Duration::from_millis(100))
                {
                    return;
                }
                self.drawn = Some(now);
                self.last_done = *done;
                let mut line = format!(
                    "\rtend-rc: {done}/{total} {}",
                    if *up { "up" } else { "down" }
                );
                if let Some((w, d)) = waiting
                    && done < total
                {
                    line.push_str(&format!(
                        ", waiting for {} ({:.1} s)",
                        name(w),
                        d.as_secs_f64()
                    ));
                }
                line.push_str("\x1b[K");
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(line.as_bytes());
                self.shown = true;
            }
            _ => {}
        }
    }

    fn clear(&mut self) {
        if self.shown {
            let _ = std::io::stderr().write_all(b"\r\x1b[K");
            self.shown = false;
        }
    }
}

pub fn main() {
    let o = options(tend_cli::args());
    let mut operands = o.operands.iter();
    let Some(op) = operands.next() else {
        PROG.usage_exit()
    };
    let rest: Vec<OsString> = operands.cloned().collect();
    match op.to_str() {
        Some("check") => {
            if rest.is_empty() {
                PROG.usage_exit();
            }
            let sources: Vec<PathBuf> = rest.iter().map(PathBuf::from).collect();
            match tend_rc::check(&sources) {
                Ok(_) => std::process::exit(code::OK),
                Err(p) => source_problems(&p, code::NO),
            }
        }
        Some("init") => {
            let [scandir] = &rest[..] else {
                PROG.usage_exit()
            };
            match tend_rc::init(&o.live, &o.sources, &PathBuf::from(scandir)) {
                Ok(_) => std::process::exit(code::OK),
                Err(Fail::Source(p)) => source_problems(&p, code::NO),
                Err(f) => fail(f),
            }
        }
        Some("update") => {
            if !rest.is_empty() {
                PROG.usage_exit();
            }
            let conv = match &o.conversion {
                Some(f) => tend_rc::update::read(f).unwrap_or_else(|e| fail(Fail::Conversion(e))),
                None => tend_rc::update::Conversion::default(),
            };
            let opened = tend_rc::open_with(&o.live, &o.sources).unwrap_or_else(|f| match f {
                Fail::Source(p) => source_problems(&p, BAD_LIVE),
                f => fail(f),
            });
            run_change(&opened, o.verbosity, &o.ask, |ask, report| {
                tend_rc::update(&opened, ask, &conv, report)
            });
            std::process::exit(code::OK)
        }
        Some("reload") => {
            let opened = tend_rc::open(&o.live).unwrap_or_else(|f| fail(f));
            let failed =
                tend_rc::reload::reload(&opened, &names(&rest)).unwrap_or_else(|f| fail(f));
            for (i, why) in &failed {
                let name = opened.graph.atoms[*i].name();
                PROG.line("fatal", format_args!("unable to reload {name}: {why}"));
            }
            std::process::exit(if failed.is_empty() {
                code::OK
            } else {
                code::NO
            })
        }
        Some(cmd @ ("change" | "list" | "listall" | "diff")) => {
            let mut ask = o.ask.clone();
            ask.names = names(&rest);
            let opened = tend_rc::open(&o.live).unwrap_or_else(|f| fail(f));
            match cmd {
                "list" => print_lines(&tend_rc::list(&opened, &ask).unwrap_or_else(|f| fail(f))),
                "listall" => {
                    print_lines(&tend_rc::listall(&opened, &ask).unwrap_or_else(|f| fail(f)))
                }
                "diff" => {
                    let d = tend_rc::diff(&opened);
                    print_lines(&d);
                    std::process::exit(if d.is_empty() { code::OK } else { code::NO });
                }
                _ => change(&opened, &ask, o.verbosity),
            }
            std::process::exit(code::OK)
        }
        _ => PROG.usage_exit(),
    }
}

/// Service names from the command line (a name that is not UTF-8 is defined nowhere).
fn names(rest: &[OsString]) -> Vec<String> {
    rest.iter()
        .map(|n| {
            n.to_str()
                .map(str::to_string)
                .unwrap_or_else(|| PROG.fatal(UNKNOWN_NAME, "unknown service name: not UTF-8"))
        })
        .collect()
}

fn change(opened: &tend_rc::Opened, ask: &Ask, verbosity: u32) {
    run_change(opened, verbosity, ask, |ask, report| {
        tend_rc::change(opened, ask, report)
    });
}

fn run_change(
    opened: &tend_rc::Opened,
    verbosity: u32,
    ask: &Ask,
    go: impl FnOnce(&Ask, &mut dyn FnMut(&Event, &Graph)) -> Result<Changed, Fail>,
) {
    let tty = std::io::stderr().is_terminal();
    let mut r = Reporter {
        tty,
        verbosity,
        shown: false,
        drawn: None,
        last_done: usize::MAX,
    };
    let mut ask = ask.clone();
    if tty && verbosity >= 1 {
        ask.tick = Some(Duration::from_millis(100));
    }
    let ask = &ask;
    let result = go(ask, &mut |e, g| r.event(e, g));
    r.clear();
    match result.unwrap_or_else(|f| fail(f)) {
        Changed::Plan(lines) => print_lines(&lines),
        Changed::Done(out) => {
            let g = &opened.graph;
            if out.interrupted {
                PROG.fatal(
                    code::SYSTEM,
                    "interrupted by a signal: the live state is as it was when it came",
                );
            }
            if out.timed_out {
                PROG.fatal(TIMED_OUT, "timed out: the live state is as far as it got");
            }
            if !out.failed.is_empty() {
                for (i, why) in &out.failed {
                    PROG.line(
                        "fatal",
                        format_args!("{} failed: {why}", g.atoms[*i].name()),
                    );
                }
                std::process::exit(code::NO);
            }
        }
    }
}
