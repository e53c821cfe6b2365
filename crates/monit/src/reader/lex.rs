//! The control file's words, as monit's lexer cuts them.
//!
//! monit's language is free-form: newlines are white space like blanks, and so are `;`,
//! `,`, `(` and `)`; `#` starts a comment to the end of the line; a backslash before a
//! newline joins the lines; keywords are matched without regard to case. A few
//! constructs are cut by context rather than by words, and this lexer cuts them the same
//! way, because they decide what a file means:
//!
//! - `start|stop|restart [program] [=] "…"` and `exec "…"`: an argument list that runs
//!   to the next double quote (or the end of the file), split at blanks, where a
//!   single-quoted part is one argument. So `start program = "/bin/sh -c 'a b'"` is three
//!   arguments, and `start program = '/bin/true'` is not a program at all (monit: syntax
//!   error at `=`).
//! - `depends on a, b`: the names that follow, on the same line or across a newline next
//!   to a comma.
//! - `scheme://…` up to the next blank: a URL.
//! - `message:` up to the next `}`, and `subject:`, `from:`, `reply-to:` up to the end of
//!   the line or `}`: mail-format texts, which may hold any character.
//! - `path "…"` inside `check program`: the program's argument list.
//!
//! Noise words (`with`, `as`, `and`, `on`, `for`, `within`, …) are left in; the parser
//! skips them where monit's lexer would, which is everywhere but a check's kind word
//! (`check program` is not `check` `noise`).

/// What a token is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tok {
    /// An unquoted word (keywords, numbers, paths, host names, operators).
    Word(String),
    /// A single- or double-quoted string, quotes removed.
    Quoted(String),
    /// `start|stop|restart|exec "…"` (the keyword, lower case) and its arguments, or
    /// `path "…"` of a program check (keyword `path`).
    Args(&'static str, Vec<String>),
    /// `depends on` and its names.
    Depends(Vec<String>),
    /// `scheme://…`.
    Url(String),
    /// `{`, `}`, `:` or `%`.
    Punct(char),
    /// A mail-format field (`from`, `reply-to`, `subject`, `message`) and its raw text.
    Mail(&'static str, String),
}

/// A token and the line it starts on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    pub tok: Tok,
    pub line: u32,
}

impl Token {
    /// The word, lower-cased, if this is an unquoted word.
    pub fn word(&self) -> Option<String> {
        match &self.tok {
            Tok::Word(w) => Some(w.to_ascii_lowercase()),
            _ => None,
        }
    }

    /// Whether this is the unquoted keyword `kw` (lower case), in any case.
    pub fn is(&self, kw: &str) -> bool {
        matches!(&self.tok, Tok::Word(w) if w.eq_ignore_ascii_case(kw))
    }

    /// The token as monit's syntax error names it.
    pub fn text(&self) -> String {
        match &self.tok {
            Tok::Word(w) | Tok::Url(w) => w.clone(),
            Tok::Quoted(s) => s.clone(),
            Tok::Args(k, _) => (*k).to_string(),
            Tok::Depends(_) => "depends".into(),
            Tok::Punct(c) => c.to_string(),
            Tok::Mail(k, _) => format!("{k}:"),
        }
    }
}

/// A lexical error: the line and monit's words for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LexError {
    pub line: u32,
    pub msg: String,
}

/// The words monit's lexer drops wherever it meets them as whole unquoted words.
pub const NOISE: &[&str] = &[
    "is", "as", "are", "for", "via", "on", "only", "with", "within", "without", "program",
    "programs", "and", "has", "using", "use", "the", "to", "sum", "than", "usage", "was", "times",
    "but", "of", "or", "does", "per", "in", "last", "rate", "capacity", "activity", "option",
    "options",
];

/// monit's reserved words: where its grammar wants a plain string (a password, a host,
/// a user), one of these unquoted is a syntax error (`allow admin:secret` is one:
/// `secret` is a keyword). Names after `check`, `group` and `depends on` may be any word.
pub const KEYWORDS: &[&str] = &[
    "if",
    "then",
    "failed",
    "tls",
    "ssl",
    "enable",
    "disable",
    "verify",
    "valid",
    "certificate",
    "cacertificatefile",
    "cacertificatepath",
    "set",
    "daemon",
    "delay",
    "terminal",
    "batch",
    "log",
    "logfile",
    "syslog",
    "facility",
    "httpd",
    "address",
    "interface",
    "link",
    "packet",
    "packets",
    "bytein",
    "byteout",
    "packetin",
    "packetout",
    "upload",
    "uploaded",
    "download",
    "downloaded",
    "up",
    "down",
    "saturation",
    "speed",
    "total",
    "clientpemfile",
    "allowselfcertification",
    "selfsigned",
    "certmd5",
    "pemfile",
    "pemchain",
    "pemkey",
    "rsakey",
    "init",
    "allow",
    "reject",
    "read-only",
    "readonly",
    "disk",
    "read",
    "write",
    "operation",
    "operations",
    "pidfile",
    "idfile",
    "statefile",
    "path",
    "start",
    "stop",
    "port",
    "portnumber",
    "unix",
    "unixsocket",
    "ipv4",
    "ipv6",
    "type",
    "proto",
    "protocol",
    "tcp",
    "tcpssl",
    "udp",
    "alert",
    "noalert",
    "mail-format",
    "resource",
    "restart",
    "restarts",
    "cycle",
    "cycles",
    "timeout",
    "retry",
    "checksum",
    "mailserver",
    "host",
    "hostheader",
    "method",
    "get",
    "head",
    "status",
    "default",
    "http",
    "https",
    "apache-status",
    "ftp",
    "smtp",
    "smtps",
    "postfix-policy",
    "pop",
    "pops",
    "imap",
    "imaps",
    "clamav",
    "dns",
    "mysql",
    "mysqls",
    "nntp",
    "ntp3",
    "ssh",
    "redis",
    "mongodb",
    "fail2ban",
    "sieve",
    "spamassassin",
    "dwp",
    "ldap2",
    "ldap3",
    "rdate",
    "lmtp",
    "rsync",
    "tns",
    "pgsql",
    "websocket",
    "mqtt",
    "origin",
    "version",
    "sip",
    "gps",
    "radius",
    "memcache",
    "target",
    "maxforward",
    "mode",
    "active",
    "passive",
    "manual",
    "onreboot",
    "nostart",
    "laststate",
    "uid",
    "euid",
    "security",
    "attribute",
    "attributes",
    "gid",
    "request",
    "secret",
    "mem",
    "memory",
    "swap",
    "totalmem",
    "totalmemory",
    "core",
    "cpu",
    "totalcpu",
    "child",
    "children",
    "thread",
    "threads",
    "time",
    "timestamp",
    "changed",
    "cipher",
    "ciphers",
    "auto",
    "sslauto",
    "inode",
    "inodes",
    "space",
    "free",
    "perm",
    "permission",
    "exec",
    "execute",
    "size",
    "hardlink",
    "hardlinks",
    "uptime",
    "responsetime",
    "basedir",
    "slot",
    "slots",
    "eventqueue",
    "not",
    "ignore",
    "connection",
    "unmonitor",
    "action",
    "icmp",
    "ping",
    "ping4",
    "ping6",
    "echo",
    "send",
    "expect",
    "expectbuffer",
    "limits",
    "programoutput",
    "networktimeout",
    "programtimeout",
    "stoptimeout",
    "starttimeout",
    "restarttimeout",
    "exectimeout",
    "cleartext",
    "md5",
    "sha1",
    "sha256",
    "crypt",
    "signature",
    "nonexist",
    "nonexists",
    "exist",
    "exists",
    "invalid",
    "data",
    "recovered",
    "passed",
    "succeeded",
    "else",
    "mmonit",
    "url",
    "content",
    "pid",
    "ppid",
    "count",
    "repeat",
    "reminder",
    "instance",
    "hostname",
    "username",
    "password",
    "database",
    "credentials",
    "register",
    "fsflag",
    "fsflags",
    "fips",
    "filedescriptors",
    "pagein",
    "pageins",
    "pageout",
    "pageouts",
    "include",
    "every",
    "group",
    "check",
    "depends",
    "depend",
    "monitor",
    "percent",
    "b",
    "byte",
    "bytes",
    "kb",
    "kilobyte",
    "kilobytes",
    "mb",
    "megabyte",
    "megabytes",
    "gb",
    "gigabyte",
    "gigabytes",
    "ms",
    "millisecond",
    "milliseconds",
    "s",
    "second",
    "seconds",
    "m",
    "minute",
    "minutes",
    "h",
    "hour",
    "hours",
    "day",
    "days",
    "month",
    "months",
    "atime",
    "ctime",
    "mtime",
    "more",
    "greater",
    "gt",
    "older",
    "ge",
    "less",
    "lt",
    "newer",
    "le",
    "equal",
    "eq",
    "notequal",
    "ne",
    "match",
    "matching",
    "nomatch",
    "notmatching",
    "loadavg",
];

/// Whether `w` is one of monit's reserved words.
pub fn is_keyword(w: &str) -> bool {
    KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(w))
}

/// Whether `w` is a noise word.
pub fn is_noise(w: &str) -> bool {
    NOISE.iter().any(|n| n.eq_ignore_ascii_case(w))
}

/// The longest word or string taken: monit's own lexer gives up on much less (a 10 MB
/// word: "input buffer overflow", exit 2); longer is an error named with its line.
pub const MAX_TOKEN: usize = 64 * 1024;

fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\r' | b'\t' | b';' | b',' | b'(' | b')')
}

/// Bytes that end an unquoted word (besides white space and newline).
fn ends_word(c: u8) -> bool {
    is_ws(c) || matches!(c, b'\n' | b'"' | b'\'' | b'{' | b'}' | b':' | b'%') || c < 0x20
}

struct Lexer<'a> {
    s: &'a [u8],
    i: usize,
    line: u32,
    out: Vec<Token>,
    errors: Vec<LexError>,
    /// Inside `check program`, where `path "…"` is an argument list.
    in_program_check: bool,
}

/// Cut a control file into tokens; lexical errors (unbalanced quotes) are collected, and
/// the lexer carries on after each, as every error is to be named.
pub fn lex(src: &[u8]) -> (Vec<Token>, Vec<LexError>) {
    let mut l = Lexer {
        s: src,
        i: 0,
        line: 1,
        out: Vec::new(),
        errors: Vec::new(),
        in_program_check: false,
    };
    l.run();
    (l.out, l.errors)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

impl Lexer<'_> {
    fn peek(&self, k: usize) -> Option<u8> {
        self.s.get(self.i + k).copied()
    }

    fn push(&mut self, tok: Tok, line: u32) {
        let long = match &tok {
            Tok::Word(s) | Tok::Quoted(s) | Tok::Url(s) | Tok::Mail(_, s) => s.len() > MAX_TOKEN,
            Tok::Args(_, v) | Tok::Depends(v) => v.iter().any(|s| s.len() > MAX_TOKEN),
            Tok::Punct(_) => false,
        };
        if long {
            self.error(line, &format!("word longer than {MAX_TOKEN} bytes"));
            return;
        }
        self.out.push(Token { tok, line });
    }

    fn error(&mut self, line: u32, msg: &str) {
        self.errors.push(LexError {
            line,
            msg: msg.into(),
        });
    }

    fn run(&mut self) {
        while let Some(c) = self.peek(0) {
            match c {
                b'\n' => {
                    self.line += 1;
                    self.i += 1;
                }
                b'\\' if self.peek(1) == Some(b'\n') => {
                    self.line += 1;
                    self.i += 2;
                }
                _ if is_ws(c) => self.i += 1,
                b'#' => {
                    while self.peek(0).is_some_and(|c| c != b'\n') {
                        self.i += 1;
                    }
                }
                b'"' | b'\'' => self.quoted(c),
                b'{' | b'}' | b':' | b'%' => {
                    self.push(Tok::Punct(c as char), self.line);
                    self.i += 1;
                }
                _ if c < 0x20 => self.i += 1,
                _ => self.word(),
            }
        }
    }

    /// A quoted string up to the same quote, across lines; none: unbalanced quotes.
    fn quoted(&mut self, q: u8) {
        let line = self.line;
        let start = self.i + 1;
        match self.s[start..].iter().position(|&c| c == q) {
            Some(n) => {
                let body = &self.s[start..start + n];
                self.line += body.iter().filter(|&&c| c == b'\n').count() as u32;
                self.i = start + n + 1;
                self.push(Tok::Quoted(text(body)), line);
            }
            None => {
                self.error(line, &format!("unbalanced quotes '{}'", q as char));
                self.i += 1;
            }
        }
    }

    fn word(&mut self) {
        let line = self.line;
        let start = self.i;
        let mut end = start;
        while end < self.s.len() && !ends_word(self.s[end]) {
            end += 1;
        }
        if end == start {
            self.i += 1;
            return;
        }
        let w = &self.s[start..end];
        let lower = w.to_ascii_lowercase();
        // scheme://…: a URL up to the next blank.
        if self.s[end..].starts_with(b"://") && w.iter().all(u8::is_ascii_alphanumeric) {
            let mut e = end;
            while e < self.s.len() && !matches!(self.s[e], b' ' | b'\t' | b'\r' | b'\n') {
                e += 1;
            }
            self.i = e;
            self.push(Tok::Url(text(&self.s[start..e])), line);
            return;
        }
        let program = match lower.as_slice() {
            b"start" => Some(("start", true)),
            b"stop" => Some(("stop", true)),
            b"restart" => Some(("restart", true)),
            b"exec" | b"execute" => Some(("exec", false)),
            b"path" if self.in_program_check => Some(("path", false)),
            _ => None,
        };
        if let Some((kw, open)) =
            program.and_then(|(kw, with_program)| Some((kw, self.program_open(end, with_program)?)))
        {
            self.i = open + 1;
            self.arguments(kw, line);
            return;
        }
        if (lower == b"depends" || lower == b"depend")
            && matches!(self.s.get(end), Some(b' ' | b'\t'))
        {
            self.i = end;
            self.depends(line);
            return;
        }
        let field = match lower.as_slice() {
            b"from" => Some("from"),
            b"reply-to" => Some("reply-to"),
            b"subject" => Some("subject"),
            b"message" => Some("message"),
            _ => None,
        };
        if let Some(field) = field.filter(|_| self.s.get(end) == Some(&b':')) {
            self.i = end + 1;
            self.mail_field(field, line);
            return;
        }
        if lower == b"check" {
            self.note_check_kind(end);
        }
        self.i = end;
        self.push(Tok::Word(text(w)), line);
    }

    /// After `check`: whether the kind word is `program` (then `path "…"` is arguments).
    fn note_check_kind(&mut self, mut at: usize) {
        while matches!(self.s.get(at), Some(b' ' | b'\t')) {
            at += 1;
        }
        let rest = &self.s[at.min(self.s.len())..];
        let kind_end = rest
            .iter()
            .position(|&c| ends_word(c))
            .unwrap_or(rest.len());
        self.in_program_check = rest[..kind_end].eq_ignore_ascii_case(b"program");
    }

    /// After `start`/`stop`/`restart` (`with_program`) or `exec`: `[ws] [program] [ws]
    /// [= [ws]] "` on the same line, the index of the opening quote.
    fn program_open(&self, mut at: usize, with_program: bool) -> Option<usize> {
        let ws = |s: &[u8], mut at: usize| {
            while matches!(s.get(at), Some(b' ' | b'\t' | b'\r')) {
                at += 1;
            }
            at
        };
        at = ws(self.s, at);
        if with_program {
            if self.s.len() >= at + 7 && self.s[at..at + 7].eq_ignore_ascii_case(b"program") {
                at = ws(self.s, at + 7);
            }
            if self.s.get(at) == Some(&b'=') {
                at = ws(self.s, at + 1);
            }
        }
        (self.s.get(at) == Some(&b'"')).then_some(at)
    }

    /// An argument list up to the next double quote (or the end of the file).
    fn arguments(&mut self, kw: &'static str, line: u32) {
        let mut args = Vec::new();
        while let Some(c) = self.peek(0) {
            match c {
                b'"' => {
                    self.i += 1;
                    break;
                }
                b'\n' => {
                    self.line += 1;
                    self.i += 1;
                }
                b' ' | b'\t' | b'\r' => self.i += 1,
                b'\'' => {
                    let start = self.i + 1;
                    match self.s[start..].iter().position(|&c| c == b'\'') {
                        Some(n) => {
                            let body = &self.s[start..start + n];
                            self.line += body.iter().filter(|&&c| c == b'\n').count() as u32;
                            args.push(text(body));
                            self.i = start + n + 1;
                        }
                        None => {
                            let l = self.line;
                            self.error(l, "unbalanced quotes '''");
                            self.i += 1;
                        }
                    }
                }
                _ => {
                    let start = self.i;
                    while self
                        .peek(0)
                        .is_some_and(|c| !matches!(c, b' ' | b'\t' | b'\n' | b'"' | b'\r'))
                    {
                        self.i += 1;
                    }
                    args.push(text(&self.s[start..self.i]));
                }
            }
        }
        self.push(Tok::Args(kw, args), line);
    }

    /// `depends [on]` names: separated by blanks and commas; a newline ends the list
    /// unless a comma stands next to it.
    fn depends(&mut self, line: u32) {
        let mut at = self.i;
        while matches!(self.s.get(at), Some(b' ' | b'\t')) {
            at += 1;
        }
        if self.s.len() >= at + 2
            && self.s[at..at + 2].eq_ignore_ascii_case(b"on")
            && self.s.get(at + 2).is_none_or(|&c| ends_word(c))
        {
            at += 2;
        }
        self.i = at;
        let mut names = Vec::new();
        loop {
            // Separators: blanks and commas; a newline only next to a comma.
            let mut comma = false;
            let mut newline = false;
            let mut lines = 0;
            let mut j = self.i;
            while let Some(&c) = self.s.get(j) {
                match c {
                    b',' => comma = true,
                    b'\n' => {
                        newline = true;
                        lines += 1;
                        // Only a comma before or just after this newline carries on.
                    }
                    b' ' | b'\t' | b'\r' | b';' | b'(' | b')' => {}
                    _ => break,
                }
                j += 1;
            }
            if newline && !comma {
                break;
            }
            self.line += lines;
            self.i = j;
            match self.peek(0) {
                Some(q @ (b'"' | b'\'')) => {
                    let start = self.i + 1;
                    match self.s[start..]
                        .iter()
                        .position(|&c| c == q || c == b'\n')
                        .filter(|&n| self.s[start + n] == q)
                    {
                        Some(n) => {
                            names.push(text(&self.s[start..start + n]));
                            self.i = start + n + 1;
                        }
                        None => {
                            let l = self.line;
                            self.error(l, &format!("unbalanced quotes '{}'", q as char));
                            self.i += 1;
                            break;
                        }
                    }
                }
                Some(c) if !ends_word(c) && c != b'#' => {
                    let start = self.i;
                    while self.peek(0).is_some_and(|c| !ends_word(c)) {
                        self.i += 1;
                    }
                    names.push(text(&self.s[start..self.i]));
                }
                _ => break,
            }
        }
        self.push(Tok::Depends(names), line);
    }

    /// A mail-format field's text: `message:` to the next `}`, the others to the end of
    /// the line or `}`.
    fn mail_field(&mut self, field: &'static str, line: u32) {
        let start = self.i;
        while let Some(c) = self.peek(0) {
            if c == b'}' || (c == b'\n' && field != "message") {
                break;
            }
            if c == b'\n' {
                self.line += 1;
            }
            self.i += 1;
        }
        let body = text(&self.s[start..self.i]).trim().to_string();
        self.push(Tok::Mail(field, body), line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        let (t, e) = lex(s.as_bytes());
        assert!(e.is_empty(), "{e:?}");
        t.into_iter().map(|t| t.tok).collect()
    }

    fn w(s: &str) -> Tok {
        Tok::Word(s.into())
    }

    #[test]
    fn program_arguments_split_at_blanks_single_quotes_group() {
        assert_eq!(
            toks(r#"start program = "/bin/sh -c 'echo a b'" with timeout 5 seconds"#),
            vec![
                Tok::Args(
                    "start",
                    vec!["/bin/sh".into(), "-c".into(), "echo a b".into()]
                ),
                w("with"),
                w("timeout"),
                w("5"),
                w("seconds")
            ]
        );
        assert_eq!(
            toks(r#"STOP "/x y""#),
            vec![Tok::Args("stop", vec!["/x".into(), "y".into()])]
        );
    }

    #[test]
    fn single_quoted_program_is_not_an_argument_list() {
        assert_eq!(
            toks("start program = '/bin/true'"),
            vec![
                w("start"),
                w("program"),
                w("="),
                Tok::Quoted("/bin/true".into())
            ]
        );
    }

    #[test]
    fn depends_across_a_comma_newline_only() {
        assert_eq!(
            toks("depends on a, b,\n c\n d"),
            vec![
                Tok::Depends(vec!["a".into(), "b".into(), "c".into()]),
                w("d")
            ]
        );
    }

    #[test]
    fn comments_continuations_lines() {
        let (t, _) = lex(b"# c\nset \\\n daemon 10 # x\ncheck");
        let lines: Vec<u32> = t.iter().map(|t| t.line).collect();
        assert_eq!(lines, vec![2, 3, 3, 4]);
    }

    #[test]
    fn unbalanced_quote_is_an_error_and_lexing_goes_on() {
        let (t, e) = lex(b"group 'x\ncheck");
        assert_eq!(
            e,
            vec![LexError {
                line: 1,
                msg: "unbalanced quotes '''".into()
            }]
        );
        assert!(t.iter().any(|t| t.is("check")));
    }

    #[test]
    fn user_password_and_urls() {
        assert_eq!(
            toks("allow admin:secret if failed url http://a:b@h:1/p?q then"),
            vec![
                w("allow"),
                w("admin"),
                Tok::Punct(':'),
                w("secret"),
                w("if"),
                w("failed"),
                w("url"),
                Tok::Url("http://a:b@h:1/p?q".into()),
                w("then")
            ]
        );
    }
}
