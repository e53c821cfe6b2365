//! A service's status as s6-svstat 2.11 computes it, and every way it prints it.
//!
//! s6-svstat: (1) is a supervisor running (the fcntl lock)? exit 1 if not; (2) read the
//! 35-byte record; (3) a `stamp` in the future is clamped to now; (4) normally up iff
//! there is no `./down`. Durations are now − stamp in wrapping 64-bit arithmetic (a
//! future `readystamp` prints as 2^64 − n, as s6 does). The pid is read as a C `pid_t`
//! (the low 32 bits, signed). tend adds `supervise/spawn-error`, shown when present.

use nix::errno::Errno;
use std::fmt::Write as _;
use std::path::Path;
use tend_proto::json;
use tend_proto::spawn_error::SpawnRecord;
use tend_proto::{StatusRecord, Tai64n};
use tend_proto::{health, servicedir};
use tend_sys::signals::short;
use tend_sys::wait::Wstat;

/// Why a status could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadError {
    /// No supervisor holds the lock (this includes a nonexistent servicedir).
    NotRunning,
    /// Probing the lock failed (s6: "unable to check DIR").
    Check(Errno),
    /// Reading `supervise/status` failed, or it holds no record.
    Status(BadStatus),
    /// Checking for `./down` failed with something other than ENOENT.
    Down(Errno),
}

impl ReadError {
    /// 1 when no supervisor runs (a negative answer, as s6-svstat), else 111.
    pub fn code(&self) -> i32 {
        match self {
            ReadError::NotRunning => tend_sys::code::NO,
            ReadError::Check(_) | ReadError::Status(_) | ReadError::Down(_) => {
                tend_sys::code::SYSTEM
            }
        }
    }

    /// The message for service directory `name`, in s6-svstat's words.
    pub fn describe(&self, name: &str) -> String {
        match self {
            ReadError::NotRunning => {
                format!("unable to read status for {name}: s6-supervise not running")
            }
            ReadError::Check(e) => format!("unable to check {name}: {}", e.desc()),
            ReadError::Status(b) => {
                format!("unable to read status for {name}: {}", b.errno().desc())
            }
            ReadError::Down(e) => format!("unable to access {name}/down: {}", e.desc()),
        }
    }
}

impl ReadError {
    /// What is wrong, in tend's words rather than s6-svstat's errno (tend-summary's
    /// error column): `status: 0 bytes, expected 35 or 43`, `supervise: a regular file, not a
    /// directory`.
    pub fn detail(&self, servicedir: &Path) -> String {
        match self {
            ReadError::NotRunning => "supervisor not running".into(),
            ReadError::Check(Errno::ENOTDIR) => {
                let sup = servicedir.join(servicedir::SUPERVISE);
                match nix::sys::stat::stat(&sup) {
                    Ok(st) if st.st_mode & libc::S_IFMT != libc::S_IFDIR => format!(
                        "supervise: {}, not a directory",
                        tend_sys::diagnose::kind_of(st.st_mode)
                    ),
                    _ => format!(
                        "{}: {}",
                        tend_proto::servicedir::LOCK,
                        Errno::ENOTDIR.desc()
                    ),
                }
            }
            ReadError::Check(e) => format!("{}: {}", tend_proto::servicedir::LOCK, e.desc()),
            ReadError::Status(b) => b.detail(),
            ReadError::Down(e) => format!("down: {}", e.desc()),
        }
    }
}

/// Why `supervise/status` gave no record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadStatus {
    /// open or read failed.
    Sys(Errno),
    /// Not a regular file (which kind).
    NotAFile(&'static str),
    /// Neither 35 nor 43 bytes: how many it had (44 meaning "more than 43").
    Size(usize),
}

impl BadStatus {
    /// The errno s6-svstat reports for it: EPIPE for anything that is not a record
    /// (s6 reads a FIFO without a writer as an empty file).
    pub fn errno(self) -> Errno {
        match self {
            BadStatus::Sys(e) => e,
            BadStatus::NotAFile(_) | BadStatus::Size(_) => Errno::EPIPE,
        }
    }

    /// What is wrong: `status: 0 bytes, expected 35 or 43`.
    pub fn detail(self) -> String {
        match self {
            BadStatus::Sys(e) => format!("status: {}", e.desc()),
            BadStatus::NotAFile(kind) => format!("status: {kind}, not a regular file"),
            BadStatus::Size(n) => {
                let (big, plain) = (
                    tend_proto::status::STATUS_SIZE_PGID,
                    tend_proto::status::STATUS_SIZE,
                );
                let size = match n {
                    1 => "1 byte".to_string(),
                    n if n > big => format!("more than {big} bytes"),
                    n => format!("{n} bytes"),
                };
                format!("status: {size}, expected {plain} or {big}")
            }
        }
    }
}

/// The largest of tend's own `supervise/` files (tend-check, tend-notify, tend-policy,
/// tend-watchdog) a reader takes; each is a few short lines.
pub const SIDE_FILE_MAX: usize = 64 * 1024;

/// Read one of tend's own `supervise/` files (`rel`, a `servicedir` constant such as
/// `CHECK_STATE`) the one safe way (non-blocking, regular files only, at most
/// `SIDE_FILE_MAX` bytes): None when there is none, else its bytes or what is wrong with
/// it (`supervise/tend-check: a FIFO, not a regular file`).
pub fn read_side_file(servicedir: &Path, rel: &str) -> Option<Result<Vec<u8>, String>> {
    let rel = Path::new(rel);
    match tend_sys::fd::read_regular(&servicedir.join(rel), SIDE_FILE_MAX + 1) {
        // ENOTDIR: `supervise` itself is wrong, which the status read reports.
        Err(tend_sys::fd::NotRead::Sys(Errno::ENOENT | Errno::ENOTDIR)) => None,
        Err(e) => Some(Err(format!("{}: {}", rel.display(), e.describe()))),
        Ok(d) if d.len() > SIDE_FILE_MAX => Some(Err(format!(
            "{}: longer than {} KiB",
            rel.display(),
            SIDE_FILE_MAX / 1024
        ))),
        Ok(d) => Some(Ok(d)),
    }
}

/// Everything s6-svstat knows about a service at one instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The record, with a future `stamp` already clamped to `now`.
    pub record: StatusRecord,
    /// No `./down` file.
    pub normally_up: bool,
    /// When the snapshot was taken.
    pub now: Tai64n,
    /// tend's record of the last failed spawn, if the file exists and parses.
    pub spawn_error: Option<SpawnRecord>,
    /// The daemon's sd_notify `STATUS=` text (tend-notify's `supervise/tend-notify`),
    /// when it belongs to the running pid.
    pub notify_status: Option<Vec<u8>>,
    /// The crash-restart policy's verdict on the last death (`supervise/tend-policy`,
    /// when written at or after the current status's stamp): (stopped for good, reason).
    pub policy: Option<(bool, Vec<u8>)>,
    /// tend's own files that are there but could not be read, each as
    /// `supervise/NAME: what is wrong`; the rest of the snapshot stands.
    pub problems: Vec<String>,
}

/// Read a service's status the way s6-svstat does.
pub fn read(servicedir: &Path) -> Result<Snapshot, ReadError> {
    match tend_proto::lock::is_held(&servicedir.join(servicedir::LOCK)) {
        Ok(true) => {}
        Ok(false) => return Err(ReadError::NotRunning),
        Err(e) => return Err(ReadError::Check(e)),
    }
    let record = read_record(servicedir).map_err(ReadError::Status)?;
    let normally_up = match nix::unistd::access(
        &servicedir.join(servicedir::DOWN),
        nix::unistd::AccessFlags::F_OK,
    ) {
        Ok(()) => false,
        Err(Errno::ENOENT) => true,
        Err(e) => return Err(ReadError::Down(e)),
    };
    let spawn_error = tend_sys::fd::read_regular(&servicedir.join(servicedir::SPAWN_ERROR), 4096);
    let mut snap = Snapshot::new(
        record,
        normally_up,
        Tai64n::now(),
        spawn_error.as_deref().ok().and_then(SpawnRecord::decode),
    );
    if let Err(e @ tend_sys::fd::NotRead::NotAFile(_)) = spawn_error {
        snap.problems
            .push(format!("{}: {}", servicedir::SPAWN_ERROR, e.describe()));
    }
    let mut side = |name| match read_side_file(servicedir, name) {
        Some(Ok(d)) => Some(d),
        Some(Err(why)) => {
            snap.problems.push(why);
            None
        }
        None => None,
    };
    let notify = side(servicedir::NOTIFY_STATE);
    let policy = side(servicedir::POLICY_VERDICT);
    if snap.is_up()
        && let Some(data) = notify
        && health::get_num(&data, "pid") == Some(snap.pid() as u64)
    {
        snap.notify_status = health::get(&data, "status").map(<[u8]>::to_vec);
    }
    if let Some(data) = policy
        && let (Some(time), Some(reason)) =
            (health::get_num(&data, "time"), health::get(&data, "reason"))
        && time + 1 >= snap.record.stamp.to_unix().0.max(0) as u64
    {
        let stop = health::get(&data, "action") == Some(b"stop");
        snap.policy = Some((stop, reason.to_vec()));
    }
    Ok(snap)
}

/// Read and decode `supervise/status`: 35 bytes (s6 2.11, 2.14+) or 43 (s6 2.13), told
/// apart by the size; any other size, or a FIFO, is not a record (s6's EPIPE).
pub fn read_record(servicedir: &Path) -> Result<StatusRecord, BadStatus> {
    let mut buf = [0u8; tend_proto::status::STATUS_SIZE_PGID + 1];
    let got = tend_sys::fd::read_regular_into(&servicedir.join(servicedir::STATUS), &mut buf)
        .map_err(|e| match e {
            tend_sys::fd::NotRead::Sys(e) => BadStatus::Sys(e),
            tend_sys::fd::NotRead::NotAFile(kind) => BadStatus::NotAFile(kind),
        })?;
    StatusRecord::decode(&buf[..got]).ok_or(BadStatus::Size(got))
}

/// Whole seconds from `then` to `now`, in skalibs' wrapping arithmetic.
fn seconds(now: Tai64n, then: Tai64n) -> u64 {
    now.secs
        .wrapping_sub(then.secs)
        .wrapping_sub(u64::from(now.nanos < then.nanos))
}

/// One `-o` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Up,
    WantedUp,
    NormallyUp,
    Ready,
    Paused,
    Pid,
    ExitCode,
    Signal,
    SigNum,
    UpDownSince,
    ReadySince,
    UpDownFor,
    ReadyFor,
}

/// The field names, in s6-svstat's order; a prefix selects the first name it begins.
pub const FIELDS: [(&str, Field); 13] = [
    ("up", Field::Up),
    ("wantedup", Field::WantedUp),
    ("normallyup", Field::NormallyUp),
    ("ready", Field::Ready),
    ("paused", Field::Paused),
    ("pid", Field::Pid),
    ("exitcode", Field::ExitCode),
    ("signal", Field::Signal),
    ("signum", Field::SigNum),
    ("updownsince", Field::UpDownSince),
    ("readysince", Field::ReadySince),
    ("updownfor", Field::UpDownFor),
    ("readyfor", Field::ReadyFor),
];

/// At most this many fields in one call.
pub const MAX_FIELDS: usize = 16;

/// Why a field list was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldError {
    /// An empty name between commas ("invalid null option field").
    Null,
    /// A name that is no field's prefix.
    Invalid(String),
    /// More than 16 fields.
    TooMany,
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FieldError::Null => f.write_str("invalid null option field"),
            FieldError::Invalid(s) => write!(f, "invalid option field: {s}"),
            FieldError::TooMany => f.write_str("too many option fields"),
        }
    }
}

impl Field {
    /// The first field whose name starts with `prefix` (s6 2.11 takes ambiguous
    /// prefixes too: `r` is `ready`, `p` is `paused`, `upd` is `updownsince`).
    pub fn lookup(prefix: &[u8]) -> Option<Field> {
        if prefix.is_empty() {
            return None;
        }
        FIELDS
            .iter()
            .find(|(name, _)| name.as_bytes().starts_with(prefix))
            .map(|&(_, f)| f)
    }

    /// Append the fields of a comma list to `fields`. A trailing comma is allowed; an
    /// empty name elsewhere is not.
    pub fn parse_list(list: &[u8], fields: &mut Vec<Field>) -> Result<(), FieldError> {
        let mut rest = list;
        while !rest.is_empty() {
            let end = rest.iter().position(|&b| b == b',').unwrap_or(rest.len());
            let name = &rest[..end];
            if name.is_empty() {
                return Err(FieldError::Null);
            }
            let f = Field::lookup(name)
                .ok_or_else(|| FieldError::Invalid(String::from_utf8_lossy(name).into_owned()))?;
            Field::push(fields, f)?;
            rest = &rest[(end + 1).min(rest.len())..];
        }
        Ok(())
    }

    /// Add one field, refusing a 17th.
    pub fn push(fields: &mut Vec<Field>, f: Field) -> Result<(), FieldError> {
        if fields.len() >= MAX_FIELDS {
            return Err(FieldError::TooMany);
        }
        fields.push(f);
        Ok(())
    }
}

fn boolean(b: bool) -> &'static str {
    if b { "true" } else { "false" }
}

impl Snapshot {
    /// Build a snapshot taken at `now`; a `stamp` later than `now` becomes `now`.
    pub fn new(
        mut record: StatusRecord,
        normally_up: bool,
        now: Tai64n,
        spawn_error: Option<SpawnRecord>,
    ) -> Snapshot {
        if record.stamp > now {
            record.stamp = now;
        }
        Snapshot {
            record,
            normally_up,
            now,
            spawn_error,
            notify_status: None,
            policy: None,
            problems: Vec::new(),
        }
    }

    /// The pid as C's `pid_t` reads it.
    pub fn pid(&self) -> i32 {
        self.record.pid as i32
    }

    /// ./run is alive.
    pub fn is_up(&self) -> bool {
        self.pid() != 0 && !self.record.finishing
    }

    /// s6 2.13.2+'s first record, before any ./run: paused with pid 0 (s6-svstat 2.15
    /// prints `down (not started yet)`).
    pub fn not_started(&self) -> bool {
        self.record.pid == 0 && !self.record.finishing && self.record.paused
    }

    fn wstat(&self) -> u16 {
        self.record.wstat
    }

    fn term_signal(&self) -> Option<u32> {
        Wstat::from(self.wstat()).term_signal().map(u32::from)
    }

    fn exit_status(&self) -> u32 {
        u32::from(self.wstat() >> 8)
    }

    /// Exit code of the last ./run: None if up or if it did not exit normally.
    pub fn exitcode(&self) -> Option<u32> {
        if self.is_up() || self.not_started() {
            None
        } else {
            Wstat::from(self.wstat()).exit_code().map(u32::from)
        }
    }

    /// Signal that killed the last ./run: None if up or if it was not signalled.
    pub fn signum(&self) -> Option<u32> {
        if self.is_up() || self.not_started() {
            None
        } else {
            self.term_signal()
        }
    }

    /// `-o ready`: s6 2.11 prints `pid != 0 && ready`, so a down service is never ready.
    pub fn ready_field(&self) -> bool {
        self.pid() != 0 && self.record.ready
    }

    /// `-o paused`: s6 2.15 prints `paused && pid != 0`, so the not-started mark is not
    /// paused.
    pub fn paused_field(&self) -> bool {
        self.record.paused && self.pid() != 0
    }

    pub fn updown_for(&self) -> u64 {
        seconds(self.now, self.record.stamp)
    }

    pub fn ready_for(&self) -> u64 {
        seconds(self.now, self.record.readystamp)
    }

    /// One `-o` value.
    pub fn field(&self, f: Field) -> String {
        match f {
            Field::Up => boolean(self.is_up()).into(),
            Field::WantedUp => boolean(self.record.want_up).into(),
            Field::NormallyUp => boolean(self.normally_up).into(),
            Field::Ready => boolean(self.ready_field()).into(),
            // s6 2.15: only a live process is paused (the not-started mark is not).
            Field::Paused => boolean(self.paused_field()).into(),
            Field::Pid => {
                if self.is_up() {
                    self.pid().to_string()
                } else {
                    "-1".into()
                }
            }
            Field::ExitCode => self.exitcode().map_or("-1".into(), |c| c.to_string()),
            Field::Signal => self
                .signum()
                .map_or("NA".into(), |s| format!("SIG{}", short(s as i32))),
            Field::SigNum => self.signum().map_or("-1".into(), |s| s.to_string()),
            Field::UpDownSince => label(self.record.stamp),
            Field::ReadySince => label(self.record.readystamp),
            Field::UpDownFor => self.updown_for().to_string(),
            Field::ReadyFor => self.ready_for().to_string(),
        }
    }

    /// The values of `fields`, space-separated, newline-terminated.
    pub fn fields_line(&self, fields: &[Field]) -> String {
        let mut out = fields
            .iter()
            .map(|&f| self.field(f))
            .collect::<Vec<_>>()
            .join(" ");
        out.push('\n');
        out
    }

    /// s6-svstat's human line (with `numeric`, signal numbers instead of names), plus
    /// tend's `, spawn failed: PROG: ERROR` when the service is down and the supervisor
    /// recorded a failed spawn.
    pub fn human_line(&self, numeric: bool) -> String {
        let mut out = String::with_capacity(128);
        let up = self.is_up();
        if up {
            let _ = write!(out, "up (pid {}) ", self.pid());
        } else {
            out.push_str("down (");
            match self.term_signal() {
                _ if self.not_started() => out.push_str("not started yet"),
                Some(s) if numeric => {
                    let _ = write!(out, "signal {s}");
                }
                Some(s) => {
                    let _ = write!(out, "signal SIG{}", short(s as i32));
                }
                None => {
                    let _ = write!(out, "exitcode {}", self.exit_status());
                }
            }
            out.push_str(") ");
        }
        if !self.not_started() {
            let _ = write!(out, "{} seconds", self.updown_for());
        }
        if up && !self.normally_up {
            out.push_str(", normally down");
        }
        if !up && self.normally_up {
            out.push_str(", normally up");
        }
        if up && self.record.paused {
            out.push_str(", paused");
        }
        if !up && self.record.want_up {
            out.push_str(", want up");
        }
        if up && !self.record.want_up {
            out.push_str(", want down");
        }
        if self.record.ready && !self.not_started() {
            let _ = write!(out, ", ready {} seconds", self.ready_for());
        }
        if let Some((_, reason)) = &self.policy {
            let _ = write!(out, ", restart-policy: {}", String::from_utf8_lossy(reason));
        }
        if let (false, Some(e)) = (up, &self.spawn_error) {
            let _ = write!(
                out,
                ", spawn failed: {}: {}",
                String::from_utf8_lossy(&e.program),
                e.reason()
            );
        }
        out.push('\n');
        out
    }

    /// One JSON object with every field (s6's `-1`/`NA` become null), `finishing`, and
    /// `spawn_error`; newline-terminated.
    pub fn json(&self) -> String {
        let mut o = String::with_capacity(512);
        let opt = |v: Option<String>| v.unwrap_or_else(|| "null".into());
        let _ = write!(
            o,
            "{{\"up\":{},\"wantedup\":{},\"normallyup\":{},\"ready\":{},\"paused\":{},\
             \"finishing\":{},\"pid\":{},\"exitcode\":{},\"signal\":{},\"signum\":{},\
             \"updownsince\":\"{}\",\"readysince\":\"{}\",\"updownfor\":{},\"readyfor\":{},\
             \"restart_policy\":",
            self.is_up(),
            self.record.want_up,
            self.normally_up,
            self.ready_field(),
            self.paused_field(),
            self.record.finishing,
            opt(self.is_up().then(|| self.pid().to_string())),
            opt(self.exitcode().map(|c| c.to_string())),
            opt(self.signum().map(|s| format!("\"SIG{}\"", short(s as i32)))),
            opt(self.signum().map(|s| s.to_string())),
            label(self.record.stamp),
            label(self.record.readystamp),
            self.updown_for(),
            self.ready_for(),
        );
        match &self.policy {
            Some((_, t)) => json::push_str(&mut o, t),
            None => o.push_str("null"),
        }
        o.push_str(",\"notify_status\":");
        match &self.notify_status {
            Some(t) => json::push_str(&mut o, t),
            None => o.push_str("null"),
        }
        o.push_str(",\"spawn_error\":");
        match &self.spawn_error {
            None => o.push_str("null"),
            Some(e) => {
                let _ = write!(
                    o,
                    "{{\"since\":\"{}\",\"errno\":{},\"error\":",
                    label(e.stamp),
                    e.errno
                );
                json::push_str(&mut o, e.reason().as_bytes());
                o.push_str(",\"program\":");
                json::push_str(&mut o, &e.program);
                o.push('}');
            }
        }
        o.push_str("}\n");
        o
    }
}

fn label(t: Tai64n) -> String {
    String::from_utf8_lossy(&t.label()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(secs: u64, nanos: u32) -> Tai64n {
        Tai64n { secs, nanos }
    }

    fn snap(pid: u64, wstat: u16, flags: u8, normally_up: bool) -> Snapshot {
        let now = t(1_000_000, 500);
        let rec = StatusRecord {
            stamp: t(1_000_000 - 5, 100),
            readystamp: t(1_000_000 - 3, 100),
            pid,
            wstat,
            ..Default::default()
        }
        .with_flags(flags);
        Snapshot::new(rec, normally_up, now, None)
    }

    const ALL: [Field; 11] = [
        Field::Up,
        Field::WantedUp,
        Field::NormallyUp,
        Field::Ready,
        Field::Paused,
        Field::Pid,
        Field::ExitCode,
        Field::Signal,
        Field::SigNum,
        Field::UpDownFor,
        Field::ReadyFor,
    ];

    // Expected lines recorded from Debian's s6-svstat 2.11.3 on crafted status files
    // (service with ./down, wstat 0x000f, stamp 5 s ago, readystamp 3 s ago).
    #[test]
    fn matches_s6_svstat_for_every_flag_combination() {
        let cases: [(u64, u8, &str, &str); 8] = [
            (
                0,
                0,
                "down (signal SIGTERM) 5 seconds",
                "false false false false false -1 -1 SIGTERM 15 5 3",
            ),
            (
                4242,
                0,
                "up (pid 4242) 5 seconds, normally down, want down",
                "true false false false false 4242 -1 NA -1 5 3",
            ),
            (
                4242,
                1,
                "up (pid 4242) 5 seconds, normally down, paused, want down",
                "true false false false true 4242 -1 NA -1 5 3",
            ),
            (
                4242,
                3,
                "down (signal SIGTERM) 5 seconds",
                "false false false false true -1 -1 SIGTERM 15 5 3",
            ),
            // Paused with pid 0 is s6 2.13.2+'s "not started yet" mark, read as
            // s6-svstat 2.15.1 reads it (2.11 printed the signal and "paused true").
            (
                0,
                5,
                "down (not started yet) , want up",
                "false true false false false -1 -1 NA -1 5 3",
            ),
            (
                4242,
                9,
                "up (pid 4242) 5 seconds, normally down, paused, want down, ready 3 seconds",
                "true false false true true 4242 -1 NA -1 5 3",
            ),
            (
                4242,
                10,
                "down (signal SIGTERM) 5 seconds, ready 3 seconds",
                "false false false true false -1 -1 SIGTERM 15 5 3",
            ),
            (
                0,
                12,
                "down (signal SIGTERM) 5 seconds, want up, ready 3 seconds",
                "false true false false false -1 -1 SIGTERM 15 5 3",
            ),
        ];
        for (pid, flags, human, fields) in cases {
            let s = snap(pid, 0x0f, flags, false);
            assert_eq!(s.human_line(false), format!("{human}\n"), "{pid} {flags}");
            assert_eq!(s.fields_line(&ALL), format!("{fields}\n"), "{pid} {flags}");
        }
    }

    #[test]
    fn wait_statuses_as_s6() {
        let cases: [(u16, &str, &str); 8] = [
            (0, "down (exitcode 0) 5 seconds", "NA -1 0"),
            (0x7f, "down (exitcode 0) 5 seconds", "NA -1 -1"),
            (0x80, "down (exitcode 0) 5 seconds", "NA -1 0"),
            (0x8f, "down (signal SIGTERM) 5 seconds", "SIGTERM 15 -1"),
            (34, "down (signal SIG???) 5 seconds", "SIG??? 34 -1"),
            (0x0300, "down (exitcode 3) 5 seconds", "NA -1 3"),
            (0xff00, "down (exitcode 255) 5 seconds", "NA -1 255"),
            (0x7f7f, "down (exitcode 127) 5 seconds", "NA -1 -1"),
        ];
        for (w, human, f) in cases {
            let s = snap(0, w, 0, false);
            assert_eq!(s.human_line(false), format!("{human}\n"), "{w:#x}");
            assert_eq!(
                s.fields_line(&[Field::Signal, Field::SigNum, Field::ExitCode]),
                format!("{f}\n")
            );
        }
        assert_eq!(
            snap(0, 15, 4, true).human_line(true),
            "down (signal 15) 5 seconds, normally up, want up\n"
        );
    }

    #[test]
    fn future_stamps() {
        let now = t(1_000_000, 500);
        let rec = StatusRecord {
            stamp: t(1_000_100, 0),
            readystamp: t(1_000_100, 0),
            pid: 12,
            want_up: true,
            ready: true,
            ..Default::default()
        };
        let s = Snapshot::new(rec, true, now, None);
        assert_eq!(s.record.stamp, now);
        assert_eq!(
            s.human_line(false),
            "up (pid 12) 0 seconds, ready 18446744073709551516 seconds\n"
        );
    }

    #[test]
    fn prefixes_as_s6_2_11() {
        let cases = [
            ("r", Field::Ready),
            ("readyf", Field::ReadyFor),
            ("readys", Field::ReadySince),
            ("s", Field::Signal),
            ("signu", Field::SigNum),
            ("u", Field::Up),
            ("upd", Field::UpDownSince),
            ("updownf", Field::UpDownFor),
            ("p", Field::Paused),
            ("pi", Field::Pid),
            ("e", Field::ExitCode),
            ("n", Field::NormallyUp),
            ("w", Field::WantedUp),
        ];
        for (p, f) in cases {
            assert_eq!(Field::lookup(p.as_bytes()), Some(f), "{p}");
        }
        for bad in ["x", "UP", "upx", "readyforx", "wantedupp", ""] {
            assert_eq!(Field::lookup(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn field_lists() {
        let mut v = Vec::new();
        Field::parse_list(b"up,", &mut v).unwrap();
        assert_eq!(v, vec![Field::Up]);
        assert_eq!(Field::parse_list(b",up", &mut v), Err(FieldError::Null));
        assert_eq!(Field::parse_list(b"up,,w", &mut v), Err(FieldError::Null));
        assert_eq!(
            Field::parse_list(b"up,zz", &mut Vec::new()),
            Err(FieldError::Invalid("zz".into()))
        );
        let mut v = Vec::new();
        Field::parse_list(b"u,u,u,u,u,u,u,u,u,u,u,u,u,u,u,u,", &mut v).unwrap();
        assert_eq!(v.len(), 16);
        assert_eq!(Field::parse_list(b"u", &mut v), Err(FieldError::TooMany));
    }

    #[test]
    fn json_object() {
        let mut s = snap(0, 0x0d00, 4, true);
        s.spawn_error = Some(SpawnRecord {
            stamp: t(0x4000_0000_6b0c_39d1, 0x11fe_4f77),
            errno: 13,
            program: b"./run".to_vec(),
            why: Vec::new(),
        });
        assert_eq!(
            s.human_line(false),
            "down (exitcode 13) 5 seconds, normally up, want up, spawn failed: ./run: Permission denied\n"
        );
        let j = s.json();
        assert!(j.starts_with("{\"up\":false,\"wantedup\":true,\"normallyup\":true,\"ready\":false,\"paused\":false,\"finishing\":false,\"pid\":null,\"exitcode\":13,\"signal\":null,\"signum\":null,\"updownsince\":\"@"), "{j}");
        assert!(j.ends_with(",\"updownfor\":5,\"readyfor\":3,\"restart_policy\":null,\"notify_status\":null,\"spawn_error\":{\"since\":\"@400000006b0c39d111fe4f77\",\"errno\":13,\"error\":\"Permission denied\",\"program\":\"./run\"}}\n"), "{j}");
        // up: the spawn error is not part of the human line
        let mut up = snap(77, 0, 4, true);
        up.spawn_error = s.spawn_error.clone();
        assert_eq!(up.human_line(false), "up (pid 77) 5 seconds\n");
        assert!(
            snap(77, 0, 4, true)
                .json()
                .contains("\"pid\":77,\"exitcode\":null,\"signal\":null,\"signum\":null,")
        );
        assert!(
            snap(0, 9, 4, true)
                .json()
                .contains("\"signal\":\"SIGKILL\",\"signum\":9,")
        );
    }
}
