//! The control file's statements, read from the tokens of `lex`.
//!
//! A recursive-descent reader over one file's tokens at a time; `include` reads the files
//! its glob names through the same reader, so a check begun in one file may go on in the
//! next as in monit. After a syntax error the reader skips to the next word that begins
//! a statement and goes on, so every error of a file is named, not only the first
//! (monit stops at the first).

use crate::reader::lex::{self, Tok, Token};
use crate::reader::model::*;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// How deep includes may nest (a file that includes itself ends here, with an error).
const MAX_DEPTH: usize = 32;

/// Words that begin a statement: where the reader resumes after an error, and where a
/// list (of hosts, of `allow` clauses) ends.
const STATEMENT: &[&str] = &[
    "set",
    "include",
    "check",
    "if",
    "group",
    "mode",
    "every",
    "not every",
    "alert",
    "noalert",
    "onreboot",
];

fn starts_statement(t: &Token) -> bool {
    match &t.tok {
        Tok::Word(w) => STATEMENT.iter().any(|s| w.eq_ignore_ascii_case(s)),
        Tok::Args(k, _) => *k != "exec" && *k != "path",
        Tok::Depends(_) => true,
        _ => false,
    }
}

/// Reads files into one `Control`, collecting every error.
pub struct Reader {
    pub control: Control,
    pub errors: Vec<Error>,
    /// The check being read (statements after `check …` belong to it).
    current: Option<Check>,
    depth: usize,
}

/// A control file's text could not be read.
#[derive(Debug)]
pub struct ReadError {
    pub path: PathBuf,
    pub err: std::io::Error,
}

impl Default for Reader {
    fn default() -> Self {
        Self::new()
    }
}

impl Reader {
    pub fn new() -> Reader {
        Reader {
            control: Control::default(),
            errors: Vec::new(),
            current: None,
            depth: 0,
        }
    }

    /// Read one file (the main one), with its includes; `Err` if it cannot be read at all.
    pub fn read_file(&mut self, path: &Path) -> Result<(), ReadError> {
        let src = std::fs::read(path).map_err(|err| ReadError {
            path: path.to_path_buf(),
            err,
        })?;
        self.read_source(path, &src);
        Ok(())
    }

    /// Read a file's text, as if it had been read from `path`.
    pub fn read_source(&mut self, path: &Path, src: &[u8]) {
        let file = Rc::new(path.to_path_buf());
        self.control.files.push(file.clone());
        let (toks, lex_errors) = lex::lex(src);
        for e in lex_errors {
            self.errors.push(Error {
                loc: Some(Loc {
                    file: file.clone(),
                    line: e.line,
                }),
                msg: e.msg,
            });
        }
        let mut p = Cursor { toks, pos: 0, file };
        self.statements(&mut p);
    }

    /// End of reading: the last check is kept, and the checks are validated together.
    pub fn finish(mut self) -> (Control, Vec<Error>) {
        self.end_check();
        crate::reader::validate::all(&mut self.control, &mut self.errors);
        (self.control, self.errors)
    }

    fn end_check(&mut self) {
        if let Some(c) = self.current.take() {
            self.control.checks.push(c);
        }
    }

    fn syntax(&mut self, p: &Cursor, t: &Token) {
        self.errors.push(Error {
            loc: Some(p.loc(t)),
            msg: format!("syntax error '{}'", t.text()),
        });
    }

    /// The check a statement belongs to; a statement outside one is a syntax error at
    /// `t` (the caller only asks inside one, but the grammar is never trusted to panic).
    fn current(&mut self, t: &Token) -> Result<&mut Check, Token> {
        self.current.as_mut().ok_or_else(|| t.clone())
    }

    fn error_at(&mut self, loc: Loc, msg: String) {
        self.errors.push(Error {
            loc: Some(loc),
            msg,
        });
    }

    fn ignore(&mut self, loc: Loc, what: impl Into<String>, why: &str) {
        self.control.ignored.push(Ignored {
            loc,
            what: what.into(),
            why: why.into(),
        });
    }

    fn statements(&mut self, p: &mut Cursor) {
        while let Some(t) = p.next() {
            let ok = match t.word().as_deref() {
                Some("set") => self.set(p, &t),
                Some("include") => self.include(p, &t),
                Some("check") => self.check(p, &t),
                _ if self.current.is_some() => self.in_check(p, &t),
                _ => Err(t.clone()),
            };
            if let Err(bad) = ok {
                self.syntax(p, &bad);
                p.recover();
            }
        }
    }

    fn include(&mut self, p: &mut Cursor, t: &Token) -> Result<(), Token> {
        let g = p.next_raw().ok_or_else(|| t.clone())?;
        let pattern = match &g.tok {
            Tok::Word(w) | Tok::Quoted(w) => w.clone(),
            _ => return Err(g),
        };
        let loc = p.loc(&g);
        if self.depth >= MAX_DEPTH {
            self.error_at(
                loc,
                format!("include {pattern}: includes nested deeper than {MAX_DEPTH}"),
            );
            return Ok(());
        }
        match tend_sys::glob::expand(&pattern, Path::new(""), tend_sys::glob::Dialect::Posix) {
            Ok(files) if files.is_empty() => self.control.empty_includes.push((loc, pattern)),
            Ok(files) => {
                self.depth += 1;
                // monit pushes every match on its lexer's buffer stack, so it reads the
                // last first: the services' order (summary, XML) follows that.
                for f in files.into_iter().rev() {
                    if let Err(why) = crate::check_include(&f) {
                        self.error_at(
                            loc.clone(),
                            format!("include {}: refused: {why}", f.display()),
                        );
                        continue;
                    }
                    if let Err(e) = self.read_file(&f) {
                        self.error_at(
                            loc.clone(),
                            format!(
                                "include failed: {}: {}",
                                e.path.display(),
                                tend_sys::error::io_reason(&e.err)
                            ),
                        );
                    }
                }
                self.depth -= 1;
            }
            Err(e) => self.error_at(loc, format!("include {e}")),
        }
        Ok(())
    }

    // ---- set ----

    fn set(&mut self, p: &mut Cursor, t: &Token) -> Result<(), Token> {
        self.end_check();
        let what = p.next().ok_or_else(|| t.clone())?;
        let loc = p.loc(&what);
        match what.word().as_deref() {
            Some("daemon") => {
                let n = p.number()?;
                if n == 0 {
                    self.error_at(
                        loc.clone(),
                        "Poll time is invalid or not defined: it must be a number (> 0)".into(),
                    );
                }
                self.control.daemon = Some(n);
                if p.peek_is("start") {
                    p.next();
                    p.expect("delay")?;
                    self.control.start_delay = p.number()?;
                }
            }
            Some("init") => {}
            Some("terminal") => {
                p.expect("batch")?;
            }
            // `set log` is 5.33's name, `set logfile` the older one.
            Some("logfile" | "log") => {
                let v = p.next().ok_or_else(|| what.clone())?;
                match (&v.tok, v.word().as_deref()) {
                    (_, Some("syslog")) => {
                        if p.peek_is("facility") {
                            p.next();
                            p.word_value()?;
                        }
                        self.control.logfile = Some("syslog".into());
                    }
                    _ => self.control.logfile = Some(path_of(&v).ok_or(v)?),
                }
            }
            Some("pidfile") => self.control.pidfile = Some(p.path()?),
            Some("idfile") => self.control.idfile = Some(p.path()?),
            Some("statefile") => self.control.statefile = Some(p.path()?),
            Some("eventqueue") => {
                let mut q = EventQueue::default();
                loop {
                    if p.peek_is("basedir") {
                        p.next();
                        q.basedir = Some(p.path()?);
                    } else if p.peek_is("slots") || p.peek_is("slot") {
                        p.next();
                        q.slots = Some(p.number()?);
                    } else {
                        break;
                    }
                }
                self.control.eventqueue = Some(q);
            }
            Some("mailserver") => self.mailservers(p)?,
            Some("mail-format") => self.control.mail_format = mail_format(p)?,
            Some("alert") => {
                let a = self.alert(p, &what)?;
                self.control.alerts.push(a);
            }
            Some("httpd") => self.httpd(p, loc)?,
            Some("limits") | Some("mmonit") | Some("expectbuffer") | Some("fips")
            | Some("onreboot") | Some("heartbeat") | Some("ssl") => {
                let w = what.text();
                p.skip_setting();
                self.ignore(loc, format!("set {w}"), "tend-monit has no such setting");
            }
            _ => return Err(what),
        }
        Ok(())
    }

    fn mailservers(&mut self, p: &mut Cursor) -> Result<(), Token> {
        let first = p.next().ok_or_else(|| p.eof())?;
        let mut cur = MailServer {
            host: word_or_quoted(&first).ok_or(first)?,
            ..Default::default()
        };
        while let Some(t) = p.peek().cloned() {
            if starts_statement(&t) {
                break;
            }
            match t.word().as_deref() {
                Some("port") => {
                    p.next();
                    cur.port = Some(p.number_as()?);
                }
                Some("username") => {
                    p.next();
                    cur.username = Some(p.word_value()?);
                }
                Some("password") => {
                    p.next();
                    cur.password = Some(p.word_value()?);
                }
                Some("timeout") => {
                    p.next();
                    p.number()?;
                    p.time_unit();
                }
                Some("hostname") => {
                    p.next();
                    p.word_value()?;
                }
                Some(
                    "ssl"
                    | "tls"
                    | "tlsv1"
                    | "tlsv11"
                    | "tlsv12"
                    | "tlsv13"
                    | "sslv2"
                    | "sslv3"
                    | "auto"
                    | "sslauto"
                    | "enable"
                    | "disable"
                    | "verify"
                    | "selfsigned"
                    | "allowselfcertification"
                    | "certmd5"
                    | "checksum"
                    | "ciphers"
                    | "cipher"
                    | "version",
                ) => {
                    p.next();
                }
                _ => match word_or_quoted(&t) {
                    Some(host) if t.word().is_some_and(|w| w.contains('.') || !is_keyword(&w)) => {
                        p.next();
                        self.control.mailservers.push(std::mem::take(&mut cur));
                        cur.host = host;
                    }
                    _ => break,
                },
            }
        }
        self.control.mailservers.push(cur);
        Ok(())
    }

    fn httpd(&mut self, p: &mut Cursor, loc: Loc) -> Result<(), Token> {
        let mut h = Httpd {
            loc: Some(loc),
            ..Default::default()
        };
        while let Some(t) = p.peek().cloned() {
            match t.word().as_deref() {
                Some("port") => {
                    p.next();
                    h.port = Some(p.number_as()?);
                }
                Some("address") => {
                    p.next();
                    h.address = Some(p.word_value()?);
                }
                Some("unixsocket" | "unix") => {
                    p.next();
                    h.unixsocket = Some(p.path()?);
                    // `uid U gid G permission P` of the socket.
                    while p.peek_is("uid") || p.peek_is("gid") || p.peek_is("permission") {
                        p.next();
                        p.word_value()?;
                    }
                }
                Some("allow") => {
                    let at = p.next().map(|t| p.loc(&t));
                    let a = allow(p)?;
                    match (at, &a) {
                        (Some(at), Allow::Group { group, .. }) => {
                            self.ignore(
                                at,
                                format!("allow @{group}"),
                                "tend-monit has no PAM groups: it grants nothing",
                            );
                            h.allow.push(a);
                        }
                        _ => h.allow.push(a),
                    }
                }
                Some("signature" | "ssl" | "tls") => {
                    p.next();
                    if p.peek_is("enable") || p.peek_is("disable") {
                        p.next();
                    }
                }
                Some("pemfile" | "pemchain" | "pemkey" | "clientpemfile") => {
                    p.next();
                    p.path()?;
                }
                _ => break,
            }
        }
        self.control.httpd = Some(h);
        Ok(())
    }

    fn alert(&mut self, p: &mut Cursor, t: &Token) -> Result<Alert, Token> {
        let a = p.next().ok_or_else(|| t.clone())?;
        let address = match &a.tok {
            Tok::Word(w) | Tok::Quoted(w) if w.contains('@') => w.clone(),
            _ => return Err(a),
        };
        let mut alert = Alert {
            address,
            events: Vec::new(),
            except: false,
            format: MailFormat::default(),
        };
        let at = p.loc(t);
        loop {
            if p.peek_punct('{') {
                alert.events = events(p)?;
            } else if p.peek_is("not") {
                p.next();
                alert.except = true;
                alert.events = events(p)?;
            } else if p.peek_is("mail-format") {
                p.next();
                alert.format = mail_format(p)?;
            } else if p.peek_is("reminder") {
                p.next();
                p.number()?;
                if p.peek_is("cycle") || p.peek_is("cycles") {
                    p.next();
                }
            } else {
                break;
            }
        }
        if !alert.events.is_empty() {
            self.ignore(
                at,
                format!("alert {} {{ … }}", alert.address),
                "tend-monit mails every event (no event filter)",
            );
        }
        Ok(alert)
    }

    // ---- check ----

    fn check(&mut self, p: &mut Cursor, t: &Token) -> Result<(), Token> {
        self.end_check();
        // The kind word is read raw: `program` is noise everywhere else.
        let k = p.next_raw().ok_or_else(|| t.clone())?;
        let kind = match k.word().as_deref() {
            Some("process") => Some(Kind::Process),
            Some("file") => Some(Kind::File),
            Some("fifo") => Some(Kind::Fifo),
            Some("directory") => Some(Kind::Directory),
            Some("filesystem" | "device") => Some(Kind::Filesystem),
            Some("host") => Some(Kind::Host),
            Some("network") => Some(Kind::Network),
            Some("system") => Some(Kind::System),
            Some("program") => Some(Kind::Program),
            _ => None,
        };
        // `check NAME …` without a kind is a process check (monit's lexer).
        let (kind, n) = match kind {
            Some(kind) => (kind, p.next_raw().ok_or_else(|| k.clone())?),
            None => (Kind::Process, k),
        };
        let name = match &n.tok {
            Tok::Word(w) => w.clone(),
            Tok::Quoted(s) if !s.is_empty() && !s.contains(|c: char| c < ' ') => s.clone(),
            _ => return Err(n),
        };
        let loc = p.loc(&n);
        let target = match kind {
            Kind::Process => {
                let w = p.next().ok_or_else(|| n.clone())?;
                match w.word().as_deref() {
                    Some("pidfile") => Target::Pidfile(p.path()?),
                    Some("matching" | "match") => Target::Matching(p.word_value()?),
                    Some("pid") => Target::Matching(p.number()?.to_string()),
                    _ => return Err(w),
                }
            }
            Kind::File | Kind::Fifo | Kind::Directory | Kind::Filesystem => {
                p.expect("path")?;
                Target::Path(p.path()?)
            }
            Kind::Host => {
                p.expect("address")?;
                Target::Address(p.word_value()?)
            }
            Kind::Network => {
                let w = p.next().ok_or_else(|| n.clone())?;
                match w.word().as_deref() {
                    Some("address" | "interface") => Target::Address(p.word_value()?),
                    _ => return Err(w),
                }
            }
            Kind::System => Target::None,
            Kind::Program => {
                let w = p.next().ok_or_else(|| n.clone())?;
                let argv = match &w.tok {
                    Tok::Args("path", argv) => argv.clone(),
                    Tok::Word(x) if x.eq_ignore_ascii_case("path") => vec![p.path()?],
                    _ => return Err(w),
                };
                if p.peek_is("timeout") {
                    p.next();
                    p.number()?;
                    p.time_unit();
                }
                Target::Command(argv)
            }
        };
        if kind != Kind::Process {
            self.ignore(
                loc.clone(),
                format!("check {} {name}", kind.word()),
                "tend-monit carries out process checks only",
            );
        }
        self.current = Some(Check {
            kind,
            name,
            target,
            start: None,
            stop: None,
            restart: None,
            groups: Vec::new(),
            depends: Vec::new(),
            mode: Mode::Active,
            every: Every::Cycle,
            rules: Vec::new(),
            alerts: Vec::new(),
            loc,
        });
        Ok(())
    }

    fn in_check(&mut self, p: &mut Cursor, t: &Token) -> Result<(), Token> {
        let loc = p.loc(t);
        match (&t.tok, t.word().as_deref()) {
            (Tok::Args(kw @ ("start" | "stop" | "restart"), argv), _) => {
                let mut prog = program_options(p, argv.clone())?;
                prog.loc = Some(loc);
                let c = self.current(t)?;
                match *kw {
                    "start" => c.start = Some(prog),
                    "stop" => c.stop = Some(prog),
                    _ => c.restart = Some(prog),
                }
            }
            (Tok::Depends(names), _) => {
                if names.is_empty() {
                    return Err(p.peek().cloned().unwrap_or_else(|| t.clone()));
                }
                let c = self.current(t)?;
                c.depends
                    .extend(names.iter().map(|n| (n.clone(), loc.clone())));
            }
            (_, Some("group")) => {
                let g = p.name_value()?;
                self.current(t)?.groups.push(g);
            }
            (_, Some("mode")) => self.mode(p, t, loc)?,
            (_, Some("onreboot")) => self.onreboot(p, t, loc)?,
            (_, Some("every")) => self.every(p, t, loc)?,
            (_, Some("not")) => {
                p.expect("every")?;
                let v = p.next().ok_or_else(|| t.clone())?;
                let Tok::Quoted(cron) = &v.tok else {
                    return Err(v);
                };
                self.ignore(loc, "not every \"cron\"", "tend-monit has no cron schedule");
                self.current(t)?.every = Every::NotCron(cron.clone());
            }
            (_, Some("alert")) => {
                let a = self.alert(p, t)?;
                self.current(t)?.alerts.push(a);
            }
            (_, Some("noalert")) => {
                p.word_value()?;
            }
            (_, Some("if")) => self.rule(p, t)?,
            // `start` without its `"…"`: monit's grammar fails on what follows.
            (_, Some("start" | "stop" | "restart")) => {
                return Err(p.next().unwrap_or_else(|| p.eof()));
            }
            _ => return Err(t.clone()),
        }
        Ok(())
    }

    /// `mode active|passive|manual`.
    fn mode(&mut self, p: &mut Cursor, t: &Token, loc: Loc) -> Result<(), Token> {
        let m = p.next().ok_or_else(|| t.clone())?;
        let mode = match m.word().as_deref() {
            Some("active") => Mode::Active,
            Some("passive") => {
                self.ignore(
                    loc,
                    "mode passive",
                    "tend-monit starts and restarts as in mode active",
                );
                Mode::Passive
            }
            Some("manual") => Mode::Manual,
            _ => return Err(m),
        };
        self.current(t)?.mode = mode;
        Ok(())
    }

    /// `onreboot start|nostart|laststate`: read, not carried out.
    fn onreboot(&mut self, p: &mut Cursor, t: &Token, loc: Loc) -> Result<(), Token> {
        let m = p.next().ok_or_else(|| t.clone())?;
        if !matches!(m.word().as_deref(), Some("start" | "nostart" | "laststate")) {
            return Err(m);
        }
        self.ignore(
            loc,
            format!("onreboot {}", m.text()),
            "tend-monit keeps no state across boots",
        );
        Ok(())
    }

    /// `every N cycles` or `every "cron"`: read, not carried out.
    fn every(&mut self, p: &mut Cursor, t: &Token, loc: Loc) -> Result<(), Token> {
        let v = p.next().ok_or_else(|| t.clone())?;
        let every = match &v.tok {
            Tok::Quoted(cron) => Every::Cron(cron.clone()),
            Tok::Word(n) if n.parse::<u32>().is_ok() => {
                p.expect_cycles()?;
                Every::Cycles(n.parse().unwrap_or(1))
            }
            // monit's lexer takes one character here and says so.
            _ => {
                let c = v.text().chars().next().unwrap_or(' ');
                self.error_at(p.loc(&v), format!("invalid every format '{c}'"));
                return Ok(());
            }
        };
        match &every {
            Every::Cron(_) => self.ignore(loc, "every \"cron\"", "tend-monit has no cron schedule"),
            Every::Cycles(n) => self.ignore(
                loc,
                format!("every {n} cycles"),
                "tend-monit tests every cycle (deaths at once)",
            ),
            _ => {}
        }
        self.current(t)?.every = every;
        Ok(())
    }

    /// `if CONDITION then ACTION [else if succeeded|passed|recovered then ACTION]`.
    fn rule(&mut self, p: &mut Cursor, t: &Token) -> Result<(), Token> {
        let loc = p.loc(t);
        let mut cond = Vec::new();
        loop {
            let x = p.next().ok_or_else(|| p.eof())?;
            if x.is("then") {
                break;
            }
            if starts_statement(&x) || x.is("else") {
                return Err(x);
            }
            cond.push(x);
        }
        let then = action(p)?;
        let mut recovery = None;
        if p.peek_is("else") {
            p.next();
            p.expect("if")?;
            let s = p.next().ok_or_else(|| p.eof())?;
            if !matches!(
                s.word().as_deref(),
                Some("succeeded" | "passed" | "recovered")
            ) {
                return Err(s);
            }
            p.expect("then")?;
            recovery = Some(action(p)?);
        }
        let kind = self.current(t)?.kind;
        let (test, cycles) = condition(&cond, t)?;
        if let Some(msg) = rate_refused(&test, cycles) {
            self.error_at(loc, msg);
            return Ok(());
        }
        let text = cond.iter().map(Token::text).collect::<Vec<_>>().join(" ");
        let why = match (&test, kind) {
            (Test::Other(why), _) => Some(why.clone()),
            (_, k) if k != Kind::Process => None, // the whole check is listed already
            (Test::Resource { what, .. }, _)
                if !matches!(
                    what.as_str(),
                    "memory" | "totalmem" | "cpu" | "totalcpu" | "children" | "threads"
                ) =>
            {
                Some(format!("tend-monit does not measure '{what}'"))
            }
            (t @ (Test::Connection { .. } | Test::Url(_)), _) => {
                crate::reader::validate::probe_of(t).err()
            }
            _ => None,
        };
        let why = why.or_else(|| match (&test, &then) {
            (Test::Connection { .. } | Test::Url(_), Action::Restart | Action::Alert) => None,
            (Test::Connection { .. } | Test::Url(_), _) => Some(
                "tend-monit restarts or alerts on a failed connection test, nothing else".into(),
            ),
            _ => None,
        });
        if let Some(why) = why.filter(|_| kind == Kind::Process) {
            self.ignore(loc.clone(), format!("if {text}"), &why);
        }
        self.current(t)?.rules.push(Rule {
            test,
            cycles,
            action: then,
            recovery,
            loc,
        });
        Ok(())
    }
}

/// One file's tokens and the reader's place in them.
struct Cursor {
    toks: Vec<Token>,
    pos: usize,
    file: Rc<PathBuf>,
}

impl Cursor {
    fn loc(&self, t: &Token) -> Loc {
        Loc {
            file: self.file.clone(),
            line: t.line,
        }
    }

    /// The next token that is not a noise word.
    fn next(&mut self) -> Option<Token> {
        while let Some(t) = self.toks.get(self.pos) {
            self.pos += 1;
            if !matches!(&t.tok, Tok::Word(w) if lex::is_noise(w)) {
                return Some(t.clone());
            }
        }
        None
    }

    /// The next token, noise or not.
    fn next_raw(&mut self) -> Option<Token> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += t.is_some() as usize;
        t
    }

    fn peek(&self) -> Option<&Token> {
        self.toks[self.pos.min(self.toks.len())..]
            .iter()
            .find(|t| !matches!(&t.tok, Tok::Word(w) if lex::is_noise(w)))
    }

    fn peek_is(&self, kw: &str) -> bool {
        self.peek().is_some_and(|t| t.is(kw))
    }

    fn peek_punct(&self, c: char) -> bool {
        self.peek().is_some_and(|t| t.tok == Tok::Punct(c))
    }

    /// A stand-in token for "the file ended here".
    fn eof(&self) -> Token {
        Token {
            tok: Tok::Word("end of file".into()),
            line: self.toks.last().map_or(1, |t| t.line),
        }
    }

    fn expect(&mut self, kw: &str) -> Result<Token, Token> {
        match self.next() {
            Some(t) if t.is(kw) => Ok(t),
            Some(t) => Err(t),
            None => Err(self.eof()),
        }
    }

    fn number(&mut self) -> Result<u32, Token> {
        let t = self.next().ok_or_else(|| self.eof())?;
        match &t.tok {
            Tok::Word(w) => w.parse().map_err(|_| t.clone()),
            _ => Err(t),
        }
    }

    fn number_as<T: TryFrom<u32>>(&mut self) -> Result<T, Token> {
        let t = self.peek().cloned().unwrap_or_else(|| self.eof());
        T::try_from(self.number()?).map_err(|_| t)
    }

    /// An optional `second(s)|minute(s)|…` after a number of seconds.
    fn time_unit(&mut self) {
        if self.peek().and_then(Token::word).is_some_and(|w| {
            matches!(
                w.as_str(),
                "s" | "second"
                    | "seconds"
                    | "m"
                    | "minute"
                    | "minutes"
                    | "ms"
                    | "millisecond"
                    | "milliseconds"
                    | "h"
                    | "hour"
                    | "hours"
            )
        }) {
            self.next();
        }
    }

    fn expect_cycles(&mut self) -> Result<(), Token> {
        match self.next() {
            Some(t) if t.is("cycle") || t.is("cycles") => Ok(()),
            Some(t) => Err(t),
            None => Err(self.eof()),
        }
    }

    /// A plain string: a quoted one, or a word that is not one of monit's keywords.
    fn word_value(&mut self) -> Result<String, Token> {
        let t = self.next().ok_or_else(|| self.eof())?;
        match &t.tok {
            Tok::Word(w) if lex::is_keyword(w) => Err(t),
            _ => word_or_quoted(&t).ok_or(t),
        }
    }

    /// A name (of a group): any word or quoted string.
    fn name_value(&mut self) -> Result<String, Token> {
        let t = self.next().ok_or_else(|| self.eof())?;
        word_or_quoted(&t).ok_or(t)
    }

    /// An absolute path, quoted or not (monit: a PATH token begins with `/`).
    fn path(&mut self) -> Result<String, Token> {
        let t = self.next().ok_or_else(|| self.eof())?;
        path_of(&t).ok_or(t)
    }

    /// After an error: skip to the next word that begins a statement, past any `then
    /// ACTION` on the way (an action word is no statement).
    ///
    /// A word that opens a later line and cannot go on a statement (not `then`, a noise
    /// word, a number, …) also ends the skip: statements are lines in practice, and a
    /// stray word there is an error of its own, to be named too.
    fn recover(&mut self) {
        let line = self
            .toks
            .get(self.pos.saturating_sub(1))
            .map_or(0, |t| t.line);
        let mut last_line = line;
        while let Some(t) = self.toks.get(self.pos) {
            if t.is("then") {
                self.pos += 2;
                last_line = self.toks.get(self.pos - 1).map_or(last_line, |t| t.line);
                continue;
            }
            if starts_statement(t) {
                return;
            }
            if t.line > last_line && opens_line(t) {
                return;
            }
            last_line = t.line;
            self.pos += 1;
        }
    }

    /// An ignored `set` statement: up to the next statement, over `{ … }` blocks.
    fn skip_setting(&mut self) {
        let mut depth = 0;
        while let Some(t) = self.toks.get(self.pos) {
            match t.tok {
                Tok::Punct('{') => depth += 1,
                Tok::Punct('}') => depth -= 1,
                _ if depth <= 0 && starts_statement(t) => return,
                _ => {}
            }
            self.pos += 1;
        }
    }
}

/// Whether a word at the start of a line cannot be the rest of the statement before it.
fn opens_line(t: &Token) -> bool {
    match &t.tok {
        Tok::Word(w) => {
            let w = w.to_ascii_lowercase();
            !lex::is_noise(&w)
                && w.parse::<f64>().is_err()
                && !matches!(
                    w.as_str(),
                    "then"
                        | "else"
                        | "timeout"
                        | "uid"
                        | "gid"
                        | "repeat"
                        | "cycle"
                        | "cycles"
                        | "seconds"
                        | "second"
                        | "port"
                        | "host"
                        | "protocol"
                        | "request"
                        | "type"
                        | "tcp"
                        | "udp"
                        | "read-only"
                        | "readonly"
                )
        }
        _ => false,
    }
}

fn word_or_quoted(t: &Token) -> Option<String> {
    match &t.tok {
        Tok::Word(w) | Tok::Quoted(w) => Some(w.clone()),
        _ => None,
    }
}

fn path_of(t: &Token) -> Option<String> {
    word_or_quoted(t).filter(|s| s.starts_with('/'))
}

/// Words with a meaning of their own in monit's lexer, which cannot be a host name.
fn is_keyword(w: &str) -> bool {
    STATEMENT.contains(&w) || matches!(w, "then" | "port" | "username" | "password")
}

fn allow(p: &mut Cursor) -> Result<Allow, Token> {
    let t = p.next().ok_or_else(|| p.eof())?;
    let read_only = |p: &mut Cursor| {
        let ro = p
            .peek()
            .and_then(Token::word)
            .is_some_and(|w| matches!(w.as_str(), "read-only" | "readonly"));
        if ro {
            p.next();
        }
        ro
    };
    // monit 5.33 has no `sha1` here: a syntax error, as there.
    let digest = match t.word().as_deref() {
        Some("cleartext") => Some(Digest::Cleartext),
        Some("md5") => Some(Digest::Md5),
        Some("crypt") => Some(Digest::Crypt),
        Some("sha1") => return Err(t),
        _ => None,
    };
    if let Some(digest) = digest {
        let path = p.path()?;
        let mut users = Vec::new();
        while let Some(u) = p.peek().filter(|u| {
            u.word()
                .is_some_and(|w| !is_keyword(&w) && w != "allow" && !w.starts_with('/'))
                && !starts_statement(u)
        }) {
            users.push(u.text());
            p.next();
        }
        return Ok(Allow::File {
            path,
            users,
            digest,
        });
    }
    let first = word_or_quoted(&t).ok_or_else(|| t.clone())?;
    if p.peek_punct(':') {
        p.next();
        let password = p.word_value()?;
        let read_only = read_only(p);
        return Ok(Allow::User {
            user: first,
            password,
            read_only,
        });
    }
    if let Some(group) = first.strip_prefix('@') {
        let read_only = read_only(p);
        return Ok(Allow::Group {
            group: group.into(),
            read_only,
        });
    }
    if first.starts_with('/') {
        return Ok(Allow::File {
            path: first,
            users: Vec::new(),
            digest: Digest::Cleartext,
        });
    }
    Ok(Allow::Host(first))
}

/// `{ event … }`.
fn events(p: &mut Cursor) -> Result<Vec<String>, Token> {
    let open = p.next().ok_or_else(|| p.eof())?;
    if open.tok != Tok::Punct('{') {
        return Err(open);
    }
    let mut v = Vec::new();
    loop {
        let t = p.next().ok_or_else(|| p.eof())?;
        match &t.tok {
            Tok::Punct('}') => return Ok(v),
            Tok::Word(w) => v.push(w.to_ascii_lowercase()),
            _ => return Err(t),
        }
    }
}

/// `{ from: … reply-to: … subject: … message: … }`.
fn mail_format(p: &mut Cursor) -> Result<MailFormat, Token> {
    let open = p.next().ok_or_else(|| p.eof())?;
    if open.tok != Tok::Punct('{') {
        return Err(open);
    }
    let mut f = MailFormat::default();
    loop {
        let t = p.next_raw().ok_or_else(|| p.eof())?;
        match &t.tok {
            Tok::Punct('}') => return Ok(f),
            Tok::Mail("from", s) => f.from = Some(s.clone()),
            Tok::Mail("reply-to", s) => f.reply_to = Some(s.clone()),
            Tok::Mail("subject", s) => f.subject = Some(s.clone()),
            Tok::Mail(_, s) => f.message = Some(s.clone()),
            _ => return Err(t),
        }
    }
}

/// After a program's argument list: `as uid U [and] gid G`, `with timeout N seconds`.
fn program_options(p: &mut Cursor, argv: Vec<String>) -> Result<Program, Token> {
    let mut prog = Program {
        argv,
        ..Default::default()
    };
    loop {
        if p.peek_is("uid") {
            p.next();
            prog.uid = Some(p.word_value()?);
        } else if p.peek_is("gid") {
            p.next();
            prog.gid = Some(p.word_value()?);
        } else if p.peek_is("timeout") {
            p.next();
            let n = p.number()?;
            let unit = p.peek().and_then(Token::word);
            p.time_unit();
            prog.timeout = Some(match unit.as_deref() {
                Some("m" | "minute" | "minutes") => n.saturating_mul(60),
                Some("h" | "hour" | "hours") => n.saturating_mul(3600),
                _ => n,
            });
        } else {
            return Ok(prog);
        }
    }
}

fn action(p: &mut Cursor) -> Result<Action, Token> {
    let t = p.next().ok_or_else(|| p.eof())?;
    let a = match (&t.tok, t.word().as_deref()) {
        (_, Some("alert")) => Action::Alert,
        (_, Some("restart")) => Action::Restart,
        (_, Some("start")) => Action::Start,
        (_, Some("stop")) => Action::Stop,
        (_, Some("unmonitor" | "timeout")) => Action::Unmonitor,
        (_, Some("monitor")) => Action::Monitor,
        (Tok::Args("exec", argv), _) => Action::Exec(program_options(p, argv.clone())?),
        _ => return Err(t),
    };
    // `repeat every N cycles`.
    if p.peek_is("repeat") {
        p.next();
        p.expect("every")?;
        p.number()?;
        p.expect_cycles()?;
    }
    Ok(a)
}

/// The comparison words of monit's resource tests.
fn is_operator(w: &str) -> bool {
    matches!(
        w,
        ">" | "<"
            | ">="
            | "<="
            | "="
            | "=="
            | "!="
            | "<>"
            | "gt"
            | "lt"
            | "ge"
            | "le"
            | "eq"
            | "ne"
            | "more"
            | "greater"
            | "less"
            | "equal"
            | "notequal"
            | "older"
            | "newer"
    )
}

/// `[N [times within]] M cycles` after a test, exactly; (1, 1) when nothing follows.
fn rate(rest: &[Token]) -> Result<(u32, u32), Token> {
    let n = |t: &Token| t.word().and_then(|w| w.parse::<u32>().ok());
    let is_cycles = |t: &Token| t.is("cycle") || t.is("cycles");
    match rest {
        [] => Ok((1, 1)),
        [m, c] if n(m).is_some() && is_cycles(c) => Ok((n(m).unwrap_or(1), n(m).unwrap_or(1))),
        [k, m, c] if n(k).is_some() && n(m).is_some() && is_cycles(c) => {
            Ok((n(k).unwrap_or(1), n(m).unwrap_or(1)))
        }
        [first, ..] if n(first).is_none() => Err(first.clone()),
        [_, second, ..] if n(second).is_none() && !is_cycles(second) => Err(second.clone()),
        _ => Err(rest[rest.len().min(3) - 1].clone()),
    }
}

/// The counts monit 5.33 refuses in a rule, in its words: a rate's cycles 1 to 64 and
/// its events 1 to the cycles; a restart limit's counts above 0, restarts at most cycles.
fn rate_refused(test: &Test, (events, cycles): (u32, u32)) -> Option<String> {
    if let Test::Restarts { count, cycles } = *test {
        return if count == 0 || cycles == 0 {
            Some(format!(
                "Zero or negative values not allowed in a action rate statement '{cycles}'"
            ))
        } else if count > cycles {
            Some(format!(
                "The number of restarts must be less than poll cycles '{cycles}'"
            ))
        } else {
            None
        };
    }
    if cycles == 0 || cycles > 64 {
        Some(format!(
            "The number of cycles must be between 1 and 64 '{cycles}'"
        ))
    } else if events == 0 || events > cycles {
        Some(format!(
            "The number of events must be between 1 and less then poll cycles '{cycles}'"
        ))
    } else {
        None
    }
}

/// Classify a rule's condition, and its `for N cycles` / `N times within M cycles`.
fn condition(cond: &[Token], if_tok: &Token) -> Result<(Test, (u32, u32)), Token> {
    let first = cond.first().ok_or_else(|| if_tok.clone())?;
    let word = |i: usize| cond.get(i).and_then(Token::word);
    let num = |i: usize| word(i).and_then(|w| w.parse::<u32>().ok());
    // `N restarts [within] M cycles`.
    if let (Some(count), Some("restart" | "restarts")) = (num(0), word(1).as_deref()) {
        let c = cond.get(2).ok_or_else(|| cond[1].clone())?;
        let m = num(2).ok_or_else(|| c.clone())?;
        match word(3).as_deref() {
            Some("cycle" | "cycles") if cond.len() == 4 => {}
            _ => return Err(cond.get(3).cloned().unwrap_or_else(|| c.clone())),
        }
        return Ok((Test::Restarts { count, cycles: m }, (1, 1)));
    }
    let other = |w: &str| Test::Other(format!("tend-monit does not carry out '{w}' tests"));
    let w0 = word(0).unwrap_or_default();
    let (test, used) = match w0.as_str() {
        "failed" => failed(&cond[1..], first)?,
        "not" if word(1).is_some_and(|w| w.starts_with("exist")) => (Test::NotExist, 2),
        "nonexist" | "nonexists" => (Test::NotExist, 1),
        "exist" | "exists" => (other("exist"), cond.len()),
        "totalmem" | "totalmemory" | "memory" | "mem" | "cpu" | "totalcpu" | "children"
        | "child" | "threads" | "thread" => resource(&w0, cond, 0)?,
        // `total mem`, `total cpu` with a blank.
        "total" => match word(1).as_deref() {
            Some(w @ ("mem" | "memory" | "cpu")) => resource(&format!("total{w}"), cond, 1)?,
            _ => return Err(cond.get(1).unwrap_or(first).clone()),
        },
        "changed" | "uptime" | "status" | "space" | "inode" | "inodes" | "swap" | "timestamp"
        | "time" | "mtime" | "atime" | "ctime" | "size" | "perm" | "permission" | "checksum"
        | "uid" | "euid" | "gid" | "link" | "upload" | "download" | "saturation"
        | "filedescriptors" | "read" | "write" | "disk" | "service" | "servicetime" | "content"
        | "match" | "pid" | "ppid" | "core" | "security" | "packet" | "packets" | "bytein"
        | "byteout" | "ping" | "icmp" | "fsflag" | "fsflags" | "hardlink" | "hardlinks"
        | "responsetime" => (other(&w0), cond.len()),
        w if w.starts_with("loadavg") || w.starts_with("cpu") => (other(w), cond.len()),
        _ => return Err(first.clone()),
    };
    let cycles = rate(&cond[used..])?;
    Ok((test, cycles))
}

/// `WHAT OP VALUE [unit]` from `cond[at]`: the test and the tokens it used.
fn resource(what: &str, cond: &[Token], at: usize) -> Result<(Test, usize), Token> {
    let what = match what {
        "totalmem" | "totalmemory" => "totalmem",
        "memory" | "mem" => "memory",
        "totalcpu" => "totalcpu",
        "child" | "children" => "children",
        "thread" | "threads" => "threads",
        w => w,
    };
    let op = cond.get(at + 1).ok_or_else(|| cond[at].clone())?;
    let opw = op
        .word()
        .filter(|w| is_operator(w))
        .ok_or_else(|| op.clone())?;
    let v = cond.get(at + 2).ok_or_else(|| op.clone())?;
    // monit's grammar has no sign (and no `inf` or `NaN`): digits, and a point.
    let limit: f64 = v
        .word()
        .filter(|w| w.starts_with(|c: char| c.is_ascii_digit()))
        .filter(|w| w.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
        .and_then(|w| w.parse().ok())
        .ok_or_else(|| v.clone())?;
    let unit = cond.get(at + 3).and_then(|t| match (&t.tok, t.word()) {
        (Tok::Punct('%'), _) => Some((true, 1.0)),
        (_, Some(u)) => match u.trim_end_matches("/s") {
            "percent" => Some((true, 1.0)),
            "b" | "byte" | "bytes" => Some((false, 1.0 / 1024.0)),
            "kb" | "kilobyte" | "kilobytes" => Some((false, 1.0)),
            "mb" | "megabyte" | "megabytes" => Some((false, 1024.0)),
            "gb" | "gigabyte" | "gigabytes" => Some((false, 1024.0 * 1024.0)),
            _ => None,
        },
        _ => None,
    });
    let (percent, factor) = unit.unwrap_or((false, 1.0));
    let used = at + 3 + unit.is_some() as usize;
    let test = Test::Resource {
        what: what.into(),
        op: opw,
        limit: limit * factor,
        percent,
    };
    Ok((test, used))
}

/// `failed port N …`, `failed host H port N …`, `failed unixsocket P …`, `failed url U …`.
fn failed(rest: &[Token], at: &Token) -> Result<(Test, usize), Token> {
    let head = rest.first().ok_or_else(|| at.clone())?;
    match head.word().as_deref() {
        Some("url") => {
            let u = rest.get(1).ok_or_else(|| head.clone())?;
            match &u.tok {
                Tok::Url(s) => Ok((Test::Url(s.clone()), url_end(rest) + 1)),
                _ => Err(u.clone()),
            }
        }
        Some("port" | "portnumber" | "host" | "unixsocket" | "unix" | "address") => {
            connection(rest, at)
        }
        Some(
            "uid" | "euid" | "gid" | "ping" | "ping4" | "ping6" | "icmp" | "link" | "network"
            | "checksum" | "permission" | "perm" | "status",
        ) => {
            let why = format!(
                "tend-monit does not carry out 'failed {}' tests",
                head.text().to_ascii_lowercase()
            );
            Ok((Test::Other(why), rest.len() + 1))
        }
        _ => Err(head.clone()),
    }
}

/// The options of `failed port|host|unixsocket …`, up to the rate or the action.
fn connection(rest: &[Token], at: &Token) -> Result<(Test, usize), Token> {
    let mut host = None;
    let mut port = None;
    let mut unixsocket = None;
    let mut protocol = None;
    let mut request = None;
    let mut timeout = None;
    let mut i = 0;
    let value = |i: usize| rest.get(i).ok_or_else(|| rest[i - 1].clone());
    while i < rest.len() {
        let t = &rest[i];
        if let Some(n) = t.word().as_deref().and_then(read_past) {
            i += n;
            continue;
        }
        match t.word().as_deref() {
            Some("host" | "address") => {
                host = Some(word_or_quoted(value(i + 1)?).ok_or_else(|| rest[i + 1].clone())?);
                i += 2;
            }
            Some("port" | "portnumber") => {
                let v = value(i + 1)?;
                port = Some(
                    v.word()
                        .and_then(|w| w.parse().ok())
                        .ok_or_else(|| v.clone())?,
                );
                i += 2;
            }
            Some("unixsocket" | "unix") => {
                unixsocket = Some(path_of(value(i + 1)?).ok_or_else(|| rest[i + 1].clone())?);
                i += 2;
            }
            Some("protocol" | "proto") => {
                protocol = Some(value(i + 1)?.text().to_ascii_lowercase());
                i += 2;
            }
            Some("request") => {
                request = Some(word_or_quoted(value(i + 1)?).ok_or_else(|| rest[i + 1].clone())?);
                i += 2;
            }
            Some("timeout") => {
                let v = value(i + 1)?;
                timeout = Some(
                    v.word()
                        .and_then(|w| w.parse().ok())
                        .ok_or_else(|| v.clone())?,
                );
                i += 2;
                if rest.get(i).and_then(Token::word).is_some_and(|w| {
                    matches!(
                        w.as_str(),
                        "s" | "second" | "seconds" | "ms" | "millisecond" | "milliseconds"
                    )
                }) {
                    i += 1;
                }
            }
            _ if matches!(t.tok, Tok::Quoted(_)) => i += 1,
            // A number: the rate (`for N cycles`) begins.
            _ if t.word().is_some_and(|w| w.parse::<u32>().is_ok()) => break,
            _ => return Err(t.clone()),
        }
    }
    if port.is_none() && unixsocket.is_none() {
        return Err(rest.last().unwrap_or(at).clone());
    }
    let test = Test::Connection {
        host,
        port,
        unixsocket,
        protocol,
        request,
        timeout,
    };
    Ok((test, i + 1))
}

/// Options of a connection test that tend-monit reads past: how many tokens each takes
/// (itself and one value, or itself alone).
fn read_past(w: &str) -> Option<usize> {
    match w {
        "type" | "hostheader" | "status" | "content" | "send" | "expect" | "retry" | "username"
        | "password" | "method" | "database" | "secret" | "target" | "maxforward" | "version"
        | "origin" | "checksum" | "certificate" | "valid" => Some(2),
        "tcp"
        | "udp"
        | "tcpssl"
        | "ipv4"
        | "ipv6"
        | "ssl"
        | "tls"
        | "get"
        | "head"
        | "http"
        | "https"
        | "="
        | "=="
        | "!="
        | "!"
        | "enable"
        | "disable"
        | "verify"
        | "selfsigned"
        | "allowselfcertification"
        | "days"
        | "day" => Some(1),
        _ => None,
    }
}

/// After `failed url U`: the URL's options (`content = "…"`, `timeout N seconds`) up to
/// the rate; the index in `rest` where the rate begins.
fn url_end(rest: &[Token]) -> usize {
    let mut i = 2;
    while let Some(t) = rest.get(i) {
        if t.word().is_some_and(|w| w.parse::<u32>().is_ok()) {
            break;
        }
        i += 1;
        if t.is("timeout") {
            i += 1;
        }
    }
    i.min(rest.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One process check with `statement` in it: the check as read, and the errors as
    /// lines.
    fn read(statement: &str) -> (Option<Check>, Vec<String>) {
        let src = format!(
            "check process web with pidfile /run/web.pid\n  start program = \"/bin/web\"\n  {statement}\n"
        );
        let (c, errors) = crate::read_source(Path::new("monitrc"), src.as_bytes());
        (
            c.checks.into_iter().next(),
            errors.iter().map(|e| e.to_string()).collect(),
        )
    }

    fn connection(
        host: Option<&str>,
        port: u16,
        protocol: Option<&str>,
        request: Option<&str>,
        timeout: Option<u32>,
    ) -> Test {
        Test::Connection {
            host: host.map(Into::into),
            port: Some(port),
            unixsocket: None,
            protocol: protocol.map(Into::into),
            request: request.map(Into::into),
            timeout,
        }
    }

    #[test]
    fn modes_and_schedules() {
        let rows: &[(&str, Mode, Every)] = &[
            ("mode manual", Mode::Manual, Every::Cycle),
            ("mode passive", Mode::Passive, Every::Cycle),
            ("MODE Active", Mode::Active, Every::Cycle),
            ("every 2 cycles", Mode::Active, Every::Cycles(2)),
            (
                "every \"* 8-19 * * 1-5\"",
                Mode::Active,
                Every::Cron("* 8-19 * * 1-5".into()),
            ),
            (
                "not every \"* 0-3 * * *\"",
                Mode::Active,
                Every::NotCron("* 0-3 * * *".into()),
            ),
        ];
        for (statement, mode, every) in rows {
            let (c, errors) = read(statement);
            assert_eq!(errors, Vec::<String>::new(), "{statement}");
            let c = c.unwrap_or_else(|| panic!("{statement}: no check"));
            assert_eq!((&c.mode, &c.every), (mode, every), "{statement}");
        }
    }

    #[test]
    fn connection_tests() {
        let rows: &[(&str, Test)] = &[
            (
                "if failed port 80 then restart",
                connection(None, 80, None, None, None),
            ),
            (
                "if failed host localhost port 8080 type tcp with timeout 5 seconds then restart",
                connection(Some("localhost"), 8080, None, None, Some(5)),
            ),
            (
                "if failed port 80 protocol HTTP request \"/health\" then restart",
                connection(None, 80, Some("http"), Some("/health"), None),
            ),
            (
                "if failed url http://127.0.0.1:80/ then alert",
                Test::Url("http://127.0.0.1:80/".into()),
            ),
            (
                "if failed uid root then alert",
                Test::Other("tend-monit does not carry out 'failed uid' tests".into()),
            ),
        ];
        for (statement, test) in rows {
            let (c, errors) = read(statement);
            assert_eq!(errors, Vec::<String>::new(), "{statement}");
            let c = c.unwrap_or_else(|| panic!("{statement}: no check"));
            assert_eq!(c.rules.first().map(|r| &r.test), Some(test), "{statement}");
        }
    }

    #[test]
    fn errors_named_by_line() {
        let rows: &[(&str, &str)] = &[
            ("mode sometimes", "monitrc:3: syntax error 'sometimes'"),
            ("onreboot never", "monitrc:3: syntax error 'never'"),
            ("every often", "monitrc:3: invalid every format 'o'"),
            (
                "if failed port then restart",
                "monitrc:3: syntax error 'port'",
            ),
            (
                "if failed host example.org then restart",
                "monitrc:3: syntax error 'example.org'",
            ),
        ];
        for (statement, error) in rows {
            assert_eq!(read(statement).1, vec![error.to_string()], "{statement}");
        }
    }
}
