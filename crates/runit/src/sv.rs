//! sv(8), runit 2.1.2's: a command word, the letters it sends, whether it then waits
//! (and checks), and its report lines and exit codes, over runit, s6 and tend supervisors.
//!
//! sv looks at the first character of most command words (`sv t web` is `term`; any word
//! starting with `s` other than start, stop, shutdown is `status`). The waits poll the
//! status (sv polls every 420 ms; tend-sv every 100 ms), and a pending `u` (and `restart`,
//! `check`) also needs `./check`, run in the service directory with stdout closed, to
//! exit 0. Letters go to `supervise/control` through tend_client; for an s6 or tend
//! supervisor `x` is sent as `dx` (s6's `x` only exits once the service is down; runit's
//! also brings it down).

use crate::djb::error_str;
use crate::status::{self, Format, Probe, View};
use nix::errno::Errno;
use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tend_proto::Tai64n;

/// What a command word does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    /// `status` instead of sending letters.
    pub status: bool,
    /// Letters to send (none for `check`).
    pub send: Vec<u8>,
    /// Letters to check while waiting (`C` is `check`'s own test).
    pub acts: Vec<u8>,
    /// Wait for the letters to take effect.
    pub wait: bool,
    /// On timeout, report `kill:` and send `k`.
    pub kill: bool,
}

/// The command word, as sv 2.1.2 reads it; None is a usage error. `verbose` is `-v`/`-w`.
pub fn action(word: &[u8], verbose: bool, lsb: bool) -> Option<Action> {
    let a = |letters: &[u8], wait: bool, kill: bool| Action {
        status: false,
        send: letters.to_vec(),
        acts: letters.to_vec(),
        wait: wait || verbose,
        kill,
    };
    let is = |w: &str| word == w.as_bytes();
    Some(match *word.first()? {
        b'x' | b'e' => a(b"x", false, false),
        b'X' | b'E' => a(b"x", true, true),
        b'D' => a(b"d", true, true),
        b'T' => a(b"tc", true, true),
        b't' if is("try-restart") => a(b"tc", true, false),
        b'c' if is("check") => Action {
            status: false,
            send: Vec::new(),
            acts: b"C".to_vec(),
            wait: true,
            kill: false,
        },
        c @ (b't' | b'c' | b'u' | b'd' | b'o' | b'p' | b'h' | b'a' | b'i' | b'k' | b'q' | b'1'
        | b'2') => a(&[c], false, false),
        b's' if is("shutdown") => a(b"x", true, false),
        b's' if is("start") => a(b"u", true, false),
        b's' if is("stop") => a(b"d", true, false),
        b's' if lsb && !is("status") => return None,
        b's' => Action {
            status: true,
            send: Vec::new(),
            acts: Vec::new(),
            wait: false,
            kill: false,
        },
        b'r' if is("restart") => a(b"tcu", true, false),
        b'r' if is("reload") => a(b"h", true, false),
        b'f' if is("force-reload") => a(b"tc", true, true),
        b'f' if is("force-restart") => a(b"tcu", true, true),
        b'f' if is("force-shutdown") => a(b"x", true, true),
        b'f' if is("force-stop") => a(b"d", true, true),
        _ => return None,
    })
}

/// One run of sv.
#[derive(Debug, Clone)]
pub struct Request {
    pub action: Action,
    /// The operands as given (shown in the report lines).
    pub services: Vec<OsString>,
    /// The services directory for bare names.
    pub svdir: OsString,
    /// Seconds to wait (`-w`, `SVWAIT`, else 7).
    pub wait: u64,
    /// `-l`: act on each service's `log/` service.
    pub log: bool,
    /// Called by another name: the LSB init-script exit codes.
    pub lsb: bool,
}

/// Where report lines go: stdout lines (with their newline) and stderr warnings.
pub trait Sink {
    fn out(&mut self, line: &str);
    fn err(&mut self, line: &str);
}

/// The directory an operand names: a bare name is looked up in `svdir`; one that starts
/// with `/` or `.`, or ends with `/`, is a path as given (sv's rule).
pub fn service_dir(operand: &OsStr, svdir: &OsStr) -> PathBuf {
    let b = operand.as_bytes();
    if b.is_empty() || b[0] == b'/' || b[0] == b'.' || b.ends_with(b"/") {
        PathBuf::from(operand)
    } else {
        Path::new(svdir).join(operand)
    }
}

struct Service<'a> {
    /// The operand as given (as UTF-8, lossily: borrowed when it is valid).
    name: std::borrow::Cow<'a, str>,
    dir: PathBuf,
    pending: bool,
}

struct Run<'a> {
    rc: u32,
    tstart: Tai64n,
    lsb: bool,
    sink: &'a mut dyn Sink,
    /// Scratch space for paths, the log directory's path and the report line, reused
    /// from service to service.
    paths: Vec<u8>,
    logdir: Vec<u8>,
    text: String,
}

impl Run<'_> {
    fn line(&mut self, kind: &str, name: &str, msg: &str, errno: Option<Errno>) {
        let mut s = std::mem::take(&mut self.text);
        s.clear();
        let _ = write!(s, "{kind}{name}: {msg}");
        if let Some(e) = errno {
            let _ = write!(s, ": {}", error_str(e));
        }
        s.push('\n');
        self.sink.out(&s);
        self.text = s;
    }

    fn fail(&mut self, name: &str, msg: &str, errno: Option<Errno>) {
        self.rc += 1;
        self.line("fail: ", name, msg, errno);
    }

    fn warn(&mut self, name: &str, msg: &str, errno: Option<Errno>) {
        self.rc += 1;
        self.line("warning: ", name, msg, errno);
    }

    /// sv's `svstatus_get`: the view, or None once the line for why not is written.
    fn get(&mut self, s: &Service, acts: &[u8]) -> Result<View, bool> {
        match status::probe(&s.dir, &mut self.paths) {
            Probe::Running(v) => Ok(v),
            Probe::NotRunning => {
                if acts.first() == Some(&b'x') {
                    self.line("ok: ", &s.name, "runsv not running", None);
                } else {
                    self.fail(&s.name, "runsv not running", None);
                }
                Err(false)
            }
            Probe::Trouble(what, errno) => {
                self.warn(&s.name, what, errno);
                Err(true)
            }
        }
    }

    /// sv's `svstatus_print`: `run: NAME: (pid N) Ns, …`; 1 up, 2 down, 0 trouble.
    fn print(&mut self, text: &mut String, dir: &Path, shown: &str, v: &View, warn_as: &str) -> u8 {
        let down = status::join(&mut self.paths, dir, tend_proto::servicedir::DOWN);
        let normally_up = match nix::unistd::access(down, nix::unistd::AccessFlags::F_OK) {
            Ok(()) => false,
            Err(Errno::ENOENT) => true,
            Err(e) => {
                self.sink.err(&format!(
                    "warning: unable to stat {warn_as}/down: {}\n",
                    error_str(e)
                ));
                return 0;
            }
        };
        text.push_str(match v.state {
            0 => "down: ",
            1 => "run: ",
            2 => "finish: ",
            _ => "",
        });
        text.push_str(shown);
        text.push_str(": ");
        if v.state != 0 {
            let _ = write!(text, "(pid {}) ", v.pid);
        }
        let now = Tai64n::now();
        let _ = write!(text, "{}s", now.secs.saturating_sub(v.stamp.secs));
        let up = v.pid != 0;
        if up && !normally_up {
            text.push_str(", normally down");
        }
        if !up && normally_up {
            text.push_str(", normally up");
        }
        if up && v.paused {
            text.push_str(", paused");
        }
        if !up && v.want == b'u' {
            text.push_str(", want up");
        }
        if up && v.want == b'd' {
            text.push_str(", want down");
        }
        if up && v.got_term {
            text.push_str(", got TERM");
        }
        if up { 1 } else { 2 }
    }

    /// `status`: the service's line and its log's; the LSB code (0 up, 3 down, 4 unknown).
    fn status(&mut self, s: &Service) -> Option<i32> {
        let v = match self.get(s, b"s") {
            Ok(v) => v,
            Err(true) => return Some(4),
            Err(false) => return None,
        };
        let mut text = std::mem::take(&mut self.text);
        text.clear();
        let r = self.print(&mut text, &s.dir, &s.name, &v, &s.name);
        let mut logdir = std::mem::take(&mut self.logdir);
        let log = status::join(&mut logdir, &s.dir, tend_proto::servicedir::LOG);
        match nix::sys::stat::stat(log) {
            Err(Errno::ENOENT) => {}
            Err(e) => {
                text.push_str("; ");
                self.sink.out(&text);
                self.warn(
                    &format!("{}/log", s.name),
                    "unable to change directory",
                    Some(e),
                );
                text.clear();
            }
            Ok(_) => {
                // runit writes the log's "not running" line in the middle of this one;
                // tend-sv leaves the log part out instead.
                if let Probe::Running(lv) = status::probe(log, &mut self.paths) {
                    text.push_str("; ");
                    self.print(&mut text, log, "log", &lv, &s.name);
                }
            }
        }
        if !text.is_empty() {
            text.push('\n');
            self.sink.out(&text);
        }
        self.text = text;
        self.logdir = logdir;
        Some(match r {
            1 => 0,
            2 => 3,
            _ => 4,
        })
    }

    /// sv's `control`: send the letters unless already wanted.
    fn control(&mut self, s: &Service, letters: &[u8]) -> bool {
        let v = match self.get(s, letters) {
            Ok(v) => v,
            Err(_) => return false,
        };
        if letters.first() == Some(&v.want) && (letters[0] != b'd' || v.got_term) {
            return true;
        }
        let wire: Vec<u8> = match v.format {
            Format::Runit => letters.to_vec(),
            Format::S6 => letters
                .iter()
                .flat_map(|&c| if c == b'x' { b"dx".to_vec() } else { vec![c] })
                .collect(),
        };
        match tend_client::control::send(&s.dir, &wire) {
            Ok(()) => true,
            Err(tend_client::SendError::NotListening) => {
                if letters.first() == Some(&b'x') {
                    self.line("ok: ", &s.name, "runsv not running", None);
                } else {
                    self.fail(&s.name, "runsv not running", None);
                }
                false
            }
            Err(tend_client::SendError::Broken(e)) | Err(tend_client::SendError::Sys(e)) => {
                self.warn(&s.name, "unable to open supervise/control", Some(e));
                false
            }
        }
    }

    /// `./check` in the service directory: exit 0 means available. A missing script
    /// passes.
    fn checkscript(&mut self, s: &Service) -> bool {
        match std::fs::metadata(s.dir.join("check")) {
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return true,
            Err(e) => {
                let errno = Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO));
                self.sink.err(&format!(
                    "warning: unable to stat {}/check: {}\n",
                    s.name,
                    error_str(errno)
                ));
                return false;
            }
            Ok(_) => {}
        }
        let argv = [OsString::from("./check")];
        let prepared = match tend_sys::exec::Prepared::with_current_env(&argv) {
            Ok(p) => p,
            Err(_) => return false,
        };
        let opts = tend_sys::process::SpawnOptions {
            cwd: std::ffi::CString::new(s.dir.as_os_str().as_bytes()).ok(),
            close: vec![1],
            ..Default::default()
        };
        match tend_sys::process::spawn(&prepared, &opts) {
            Ok(pid) => matches!(
                tend_sys::wait::wait(Some(pid)),
                Ok((_, w)) if w.exit_code() == Some(0)
            ),
            Err(e) => {
                let errno = match e {
                    tend_sys::process::SpawnError::Fork(e)
                    | tend_sys::process::SpawnError::Exec(e) => e,
                };
                self.sink.err(&format!(
                    "warning: unable to run {}/check: {}\n",
                    s.name,
                    error_str(errno)
                ));
                false
            }
        }
    }

    /// sv's `check`: 1 done (the ok line written), 0 not yet, -1 given up.
    fn check(&mut self, s: &Service, acts: &[u8]) -> i8 {
        let v = match self.get(s, acts) {
            Ok(v) => v,
            Err(_) if acts.first() == Some(&b'x') => return 1,
            Err(_) => return -1,
        };
        let up = v.pid != 0;
        let later = v.stamp.secs > self.tstart.secs
            || (v.stamp.secs == self.tstart.secs && v.stamp.nanos >= self.tstart.nanos);
        for &a in acts {
            let done = match a {
                b'x' => false,
                b'u' => up && v.state == 1 && self.checkscript(s),
                b'd' => !up && v.state == 0,
                b'C' => !up || self.checkscript(s),
                b't' | b'k' => {
                    (!up && v.want == b'd')
                        || (later && up && v.state == 1 && !v.got_term && self.checkscript(s))
                }
                b'o' => (up || later) && (!up || v.want == b'd'),
                b'p' => !up || v.paused,
                b'c' => !up || !v.paused,
                _ => true,
            };
            if !done {
                return 0;
            }
        }
        let mut text = String::from("ok: ");
        self.print(&mut text, &s.dir, &s.name, &v, &s.name);
        text.push('\n');
        self.sink.out(&text);
        1
    }
}

/// Run the request; returns the exit code (sv's: failures counted, at most 99; in LSB
/// mode the init script's).
pub fn run(req: &Request, sink: &mut dyn Sink) -> i32 {
    let mut run = Run {
        rc: 0,
        tstart: Tai64n::now(),
        lsb: req.lsb,
        sink,
        paths: Vec::new(),
        logdir: Vec::new(),
        text: String::new(),
    };
    let started = Instant::now();
    let mut services = services(req);
    for s in services.iter_mut() {
        if let Err(e) = std::fs::metadata(&s.dir).and_then(|m| {
            if m.is_dir() {
                Ok(())
            } else {
                Err(std::io::Error::from_raw_os_error(libc::ENOTDIR))
            }
        }) {
            let errno = Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO));
            run.fail(
                &s.name,
                "unable to change to service directory",
                Some(errno),
            );
            s.pending = false;
            continue;
        }
        if req.action.status {
            if let Some(code) = run.status(s)
                && run.lsb
            {
                return code;
            }
            s.pending = false;
        } else if !req.action.send.is_empty() && !run.control(s, &req.action.send) {
            s.pending = false;
        }
    }
    if req.action.wait && !req.action.status {
        run.wait(&mut services, req, started);
    }
    if run.lsb {
        return run.rc.min(1) as i32;
    }
    run.rc.min(99) as i32
}

impl Run<'_> {
    /// sv's wait: check the pending services every 100 ms until each has taken effect
    /// or the limit has passed (then `timeout:` or, with kill, `kill:` and a `k`).
    fn wait(&mut self, services: &mut [Service], req: &Request, started: Instant) {
        let limit = Duration::from_secs(req.wait);
        loop {
            let elapsed = started.elapsed();
            let mut done = true;
            for s in services.iter_mut().filter(|s| s.pending) {
                if self.check(s, &req.action.acts) != 0 {
                    s.pending = false;
                } else {
                    done = false;
                }
                if s.pending && elapsed > limit {
                    let mut text = String::from(if req.action.kill {
                        "kill: "
                    } else {
                        "timeout: "
                    });
                    if let Probe::Running(v) = status::probe(&s.dir, &mut self.paths) {
                        self.print(&mut text, &s.dir, &s.name, &v, &s.name);
                        self.rc += 1;
                    }
                    text.push('\n');
                    self.sink.out(&text);
                    if req.action.kill {
                        self.control(s, b"k");
                    }
                    s.pending = false;
                }
            }
            if done {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The services the operands name (their `log/` with -l).
fn services(req: &Request) -> Vec<Service<'_>> {
    req.services
        .iter()
        .map(|op| {
            let mut dir = service_dir(op, &req.svdir);
            let mut name = String::from_utf8_lossy(op.as_bytes());
            if req.log {
                dir.push(tend_proto::servicedir::LOG);
                name.to_mut().push_str("/log");
            }
            Service {
                name,
                dir,
                pending: true,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_as_sv_reads_them() {
        let w = |s: &str| action(s.as_bytes(), false, false);
        assert_eq!(w("term").unwrap().send, b"t");
        assert_eq!(w("t").unwrap().send, b"t");
        assert_eq!(w("try-restart").unwrap().send, b"tc");
        assert!(w("try-restart").unwrap().wait);
        assert_eq!(w("restart").unwrap().acts, b"tcu");
        assert!(w("sfoo").unwrap().status);
        assert_eq!(w("check").unwrap().acts, b"C");
        assert!(w("check").unwrap().send.is_empty());
        assert_eq!(w("cont").unwrap().send, b"c");
        assert!(w("force-stop").unwrap().kill);
        assert_eq!(w("reload").unwrap().send, b"h");
        assert_eq!(w("shutdown").unwrap().send, b"x");
        assert!(!w("exit").unwrap().wait);
        assert!(action(b"exit", true, false).unwrap().wait);
        for bad in ["frob", "rx", "force", "", "zzz"] {
            assert_eq!(w(bad), None, "{bad}");
        }
        assert_eq!(action(b"sfoo", false, true), None);
        assert!(action(b"status", false, true).unwrap().status);
    }

    #[test]
    fn paths() {
        let d = OsStr::new("/etc/service");
        assert_eq!(
            service_dir(OsStr::new("web"), d),
            Path::new("/etc/service/web")
        );
        assert_eq!(service_dir(OsStr::new("./web"), d), Path::new("./web"));
        assert_eq!(service_dir(OsStr::new("/s/web"), d), Path::new("/s/web"));
        assert_eq!(service_dir(OsStr::new("web/"), d), Path::new("web/"));
    }
}
