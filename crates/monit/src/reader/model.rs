//! What a control file says, after reading: plain data, every item with where it was
//! written (file and line) so that later errors and `-t`'s list can name it.

use std::path::PathBuf;
use std::rc::Rc;

/// Where a statement was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loc {
    pub file: Rc<PathBuf>,
    pub line: u32,
}

impl std::fmt::Display for Loc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)
    }
}

/// A whole configuration: the main file and everything it includes.
#[derive(Clone, Debug, Default)]
pub struct Control {
    /// `set daemon N`: seconds per cycle (monit's default when absent: 30... but a
    /// monitrc without it runs monit once and exits, so `None` is kept as such).
    pub daemon: Option<u32>,
    /// `set daemon N with start delay D`.
    pub start_delay: u32,
    pub httpd: Option<Httpd>,
    /// `set logfile PATH`, or `syslog`.
    pub logfile: Option<String>,
    pub pidfile: Option<String>,
    pub idfile: Option<String>,
    pub statefile: Option<String>,
    pub eventqueue: Option<EventQueue>,
    pub mailservers: Vec<MailServer>,
    pub mail_format: MailFormat,
    /// `set alert ADDRESS …`: global recipients.
    pub alerts: Vec<Alert>,
    pub checks: Vec<Check>,
    /// Statements read but not acted on by tend-monit, each with the reason.
    pub ignored: Vec<Ignored>,
    /// Include globs that matched no file (monit says so and goes on).
    pub empty_includes: Vec<(Loc, String)>,
    /// Every file read, in order.
    pub files: Vec<Rc<PathBuf>>,
}

/// `set httpd`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Httpd {
    pub port: Option<u16>,
    pub address: Option<String>,
    pub unixsocket: Option<String>,
    pub allow: Vec<Allow>,
    pub loc: Option<Loc>,
}

/// One `allow` clause.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Allow {
    /// `allow user:password [read-only]`.
    User {
        user: String,
        password: String,
        read_only: bool,
    },
    /// `allow HOST|NET` (an address, a name, `a.b.c.d/n`).
    Host(String),
    /// `allow @group [read-only]` (PAM group; tend-monit cannot check it).
    Group { group: String, read_only: bool },
    /// `allow [cleartext|md5|crypt] FILE [users…]`: an htpasswd file.
    File {
        path: String,
        users: Vec<String>,
        digest: Digest,
    },
}

/// How an htpasswd file holds its passwords.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Digest {
    Cleartext,
    /// MD5-crypt, `$1$` or `$apr1$`.
    Md5,
    /// Traditional DES crypt(3).
    Crypt,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventQueue {
    pub basedir: Option<String>,
    pub slots: Option<u32>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MailServer {
    pub host: String,
    pub port: Option<u16>,
    pub username: Option<String>,
    pub password: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MailFormat {
    pub from: Option<String>,
    pub reply_to: Option<String>,
    pub subject: Option<String>,
    pub message: Option<String>,
}

/// `alert ADDRESS [[not] { events }] [mail-format {…}]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alert {
    pub address: String,
    /// Events named in braces; empty: every event.
    pub events: Vec<String>,
    /// `not { … }`: the events are the ones excluded.
    pub except: bool,
    pub format: MailFormat,
}

/// What a check watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Process,
    File,
    Fifo,
    Directory,
    Filesystem,
    Host,
    Network,
    System,
    Program,
}

impl Kind {
    /// The word monit's files and `summary` use.
    pub fn word(self) -> &'static str {
        match self {
            Kind::Process => "process",
            Kind::File => "file",
            Kind::Fifo => "fifo",
            Kind::Directory => "directory",
            Kind::Filesystem => "filesystem",
            Kind::Host => "host",
            Kind::Network => "network",
            Kind::System => "system",
            Kind::Program => "program",
        }
    }
}

/// How a process check's process is found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Pidfile(String),
    Matching(String),
    /// `path P` of file, fifo, directory, filesystem checks.
    Path(String),
    /// `address A` of host and network checks, `interface I` of network checks.
    Address(String),
    /// `path "…"` of a program check.
    Command(Vec<String>),
    /// A system check.
    None,
}

/// A program to run: `start|stop|restart program = "…" [as uid U [and] gid G] [with
/// timeout N seconds]`, or an `exec` action.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Program {
    pub argv: Vec<String>,
    pub uid: Option<String>,
    pub gid: Option<String>,
    /// Seconds; monit's default is 30.
    pub timeout: Option<u32>,
    pub loc: Option<Loc>,
}

/// `mode`: whether monit starts and restarts the service itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    #[default]
    Active,
    Passive,
    Manual,
}

/// `every N cycles` / `every "cron"` / `not every "cron"`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Every {
    #[default]
    Cycle,
    Cycles(u32),
    Cron(String),
    NotCron(String),
}

/// What a rule does when its condition holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Alert,
    Restart,
    Start,
    Stop,
    Unmonitor,
    Monitor,
    Exec(Program),
}

/// A rule's condition.
#[derive(Clone, Debug, PartialEq)]
pub enum Test {
    /// `if failed [host H] port N | unixsocket P [protocol X] [request R] …`.
    Connection {
        host: Option<String>,
        port: Option<u16>,
        unixsocket: Option<String>,
        protocol: Option<String>,
        request: Option<String>,
        timeout: Option<u32>,
    },
    /// `if failed url …`.
    Url(String),
    /// `if totalmem|memory|cpu|totalcpu|children|threads OP N [unit]`.
    Resource {
        what: String,
        op: String,
        /// In kilobytes for memory, percent for `%`, a count otherwise.
        limit: f64,
        percent: bool,
    },
    /// `if N restarts within M cycles`.
    Restarts { count: u32, cycles: u32 },
    /// `if [does] not exist`.
    NotExist,
    /// A test tend-monit reads but does not carry out.
    Other(String),
}

/// One `if … then …` rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    pub test: Test,
    /// `for N cycles` / `N times within M cycles`: (N, M); (1, 1) when absent.
    pub cycles: (u32, u32),
    pub action: Action,
    /// `else if succeeded then …`.
    pub recovery: Option<Action>,
    pub loc: Loc,
}

/// One `check KIND NAME …` and its statements.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    pub kind: Kind,
    pub name: String,
    pub target: Target,
    pub start: Option<Program>,
    pub stop: Option<Program>,
    pub restart: Option<Program>,
    pub groups: Vec<String>,
    pub depends: Vec<(String, Loc)>,
    pub mode: Mode,
    pub every: Every,
    pub rules: Vec<Rule>,
    pub alerts: Vec<Alert>,
    pub loc: Loc,
}

/// Something read and kept, but not acted on: where, what, why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ignored {
    pub loc: Loc,
    pub what: String,
    pub why: String,
}

/// An error in a control file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// None for errors about the whole configuration (monit names no line for them
    /// either), though tend-monit gives a line where it has one.
    pub loc: Option<Loc>,
    pub msg: String,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.loc {
            Some(l) => write!(f, "{l}: {}", self.msg),
            None => f.write_str(&self.msg),
        }
    }
}
