//! tend-init's settings: each one an option letter, a `TEND_*` environment variable
//! (for Dockerfiles) and, in a VM guest, a `tend.*` kernel command-line parameter; the
//! option beats the parameter, which beats the variable. One table names them all, so
//! `-h`, the parser and the man page cannot drift apart.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::Duration;

/// What to do when a stage fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnFailure {
    /// Stop the container (stage 3, then exit with the failure's code).
    Stop,
    /// Say so on stderr and carry on.
    Warn,
}

/// Container or VM guest; `Auto` decides at start (guest::detect).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Auto,
    Container,
    Guest,
}

/// s6-overlay's /init: `Auto` decides at start (run as `init` over its layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlay {
    Auto,
    On,
    Off,
}

/// Every setting, with its default applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Stage 1 scripts, run in lexical order.
    pub init_dir: PathBuf,
    /// The image's service directories (may be read-only).
    pub services_dir: PathBuf,
    /// Stage 3 scripts.
    pub finish_dir: PathBuf,
    /// Where the container's environment is saved as an envdir (None: not saved).
    pub env_dir: Option<PathBuf>,
    /// The writable scan directory tend-svscan runs on.
    pub scan_dir: PathBuf,
    /// How long to wait for every service to be up (or ready); None: no limit.
    pub services_wait: Option<Duration>,
    /// An init.d script failed.
    pub on_init_failure: OnFailure,
    /// A service was not up in time.
    pub on_services_failure: OnFailure,
    /// Each finish.d script is killed after this long.
    pub finish_time: Duration,
    /// How long the services get to go down before every process left gets SIGTERM.
    pub services_grace: Duration,
    /// How long after SIGTERM before SIGKILL.
    pub kill_grace: Duration,
    /// Forward signals to the command's process group rather than to the command.
    pub signal_group: bool,
    /// Exit with this code whatever the command did.
    pub exit_code: Option<i32>,
    /// Container or VM guest.
    pub mode: Mode,
    /// Guest: the host name (None: /etc/hostname, if any).
    pub hostname: Option<OsString>,
    /// Guest: a tty to run a debug shell on, respawned.
    pub console: Option<PathBuf>,
    /// Run as s6-overlay v3's /init.
    pub overlay: Overlay,
    /// The main program (agent mode), when no command is given: run without arguments.
    pub main: Option<OsString>,
    /// Restart the command this many times when it exits, then stop (a guest powers off).
    pub restarts: u32,
    /// The command's RLIMIT_NOFILE, soft and hard.
    pub nofile: Option<u64>,
    /// The command's oom_score_adj.
    pub oom_score_adj: Option<i32>,
    /// The services the command (or main program) waits for: None, all of them; else
    /// these names only (empty: none, and it starts before them).
    pub main_after: Option<Vec<OsString>>,
}

/// How one setting is given: option letter, environment variable, value name, default
/// (as `-h` shows it), and what it is.
pub struct Entry {
    pub letter: char,
    pub var: &'static str,
    pub value: &'static str,
    pub default: &'static str,
    pub what: &'static str,
}

/// The table `-h` prints and the parser reads; in usage order.
pub const TABLE: [Entry; 22] = [
    Entry {
        letter: 'i',
        var: "TEND_INIT_DIR",
        value: "dir",
        default: "/etc/tend/init.d",
        what: "stage 1 scripts, run in lexical order",
    },
    Entry {
        letter: 's',
        var: "TEND_SERVICES_DIR",
        value: "dir",
        default: "/etc/tend/services",
        what: "service directories, mirrored into the scan directory",
    },
    Entry {
        letter: 'f',
        var: "TEND_FINISH_DIR",
        value: "dir",
        default: "/etc/tend/finish.d",
        what: "stage 3 scripts, run in lexical order",
    },
    Entry {
        letter: 'e',
        var: "TEND_ENV_DIR",
        value: "dir",
        default: "/run/tend/env",
        what: "save the environment here as an envdir (empty: do not)",
    },
    Entry {
        letter: 'S',
        var: "TEND_SCAN_DIR",
        value: "dir",
        default: "/run/tend/service",
        what: "writable scan directory for tend-svscan",
    },
    Entry {
        letter: 'w',
        var: "TEND_SERVICES_MAXTIME",
        value: "ms",
        default: "5000 with a command, 0 without",
        what: "wait this long for services up/ready (0: no limit)",
    },
    Entry {
        letter: 'I',
        var: "TEND_INIT_FAILURE",
        value: "stop|warn",
        default: "stop",
        what: "when an init.d script fails",
    },
    Entry {
        letter: 'U',
        var: "TEND_SERVICES_FAILURE",
        value: "stop|warn",
        default: "warn",
        what: "when a service is not up in time",
    },
    Entry {
        letter: 't',
        var: "TEND_FINISH_MAXTIME",
        value: "ms",
        default: "2000",
        what: "kill a finish.d script after this long",
    },
    Entry {
        letter: 'g',
        var: "TEND_SERVICES_GRACETIME",
        value: "ms",
        default: "3000",
        what: "let services go down this long, then SIGTERM every process",
    },
    Entry {
        letter: 'k',
        var: "TEND_KILL_GRACETIME",
        value: "ms",
        default: "2000",
        what: "SIGKILL what is left this long after SIGTERM",
    },
    Entry {
        letter: 'p',
        var: "TEND_SIGNAL_GROUP",
        value: "",
        default: "0",
        what: "forward signals to the command's process group (env: 1)",
    },
    Entry {
        letter: 'c',
        var: "TEND_EXIT_CODE",
        value: "code",
        default: "the command's",
        what: "exit with this code",
    },
    Entry {
        letter: 'm',
        var: "TEND_MODE",
        value: "auto|container|guest",
        default: "auto",
        what: "guest: PID 1 of a kernel (auto: PID 1 without /proc)",
    },
    Entry {
        letter: 'n',
        var: "TEND_HOSTNAME",
        value: "name",
        default: "/etc/hostname",
        what: "guest: set the host name",
    },
    Entry {
        letter: 'C',
        var: "TEND_CONSOLE",
        value: "tty",
        default: "none",
        what: "guest: run a debug shell on this tty, respawned",
    },
    Entry {
        letter: 'o',
        var: "TEND_OVERLAY",
        value: "auto|on|off",
        default: "auto",
        what: "s6-overlay v3's /init (auto: run as init over its layout)",
    },
    Entry {
        letter: 'M',
        var: "TEND_MAIN",
        value: "prog",
        default: "guest: /etc/tend/main",
        what: "the main program when no command is given (agent mode)",
    },
    Entry {
        letter: 'r',
        var: "TEND_MAIN_RESTARTS",
        value: "n",
        default: "0",
        what: "restart the command n times when it exits, then stop",
    },
    Entry {
        letter: 'N',
        var: "TEND_MAIN_NOFILE",
        value: "n",
        default: "inherited",
        what: "the command's open-file limit (soft and hard)",
    },
    Entry {
        letter: 'O',
        var: "TEND_MAIN_OOM",
        value: "adj",
        default: "inherited",
        what: "the command's oom_score_adj (-1000...1000)",
    },
    Entry {
        letter: 'A',
        var: "TEND_MAIN_AFTER",
        value: "all|none|a,b",
        default: "all",
        what: "the services the command waits for (none: it starts first)",
    },
];

/// getopt's spec for the table, plus `-h`.
/// `-a action` is not a setting: it asks a running guest init to stop.
pub const SPEC: &str = "hi:s:f:e:S:w:I:U:t:g:k:pc:m:n:C:o:M:r:N:O:A:a:";

/// The kernel command-line parameter of a variable: `TEND_KILL_GRACETIME` is
/// `tend.kill_gracetime`.
pub fn param_of(var: &str) -> String {
    format!(
        "tend.{}",
        var.trim_start_matches("TEND_").to_ascii_lowercase()
    )
}

/// The `tend.*` parameters of a kernel command line as the variables they stand for
/// (`tend.hostname=vm1` → `TEND_HOSTNAME`, `vm1`); unknown ones are left out.
pub fn kernel_params(cmdline: &[u8]) -> Vec<(OsString, OsString)> {
    let mut out = Vec::new();
    for word in cmdline.split(|b| b.is_ascii_whitespace()) {
        let Some(eq) = word.iter().position(|&b| b == b'=') else {
            continue;
        };
        let (name, value) = (&word[..eq], &word[eq + 1..]);
        if let Some(e) = TABLE.iter().find(|e| param_of(e.var).as_bytes() == name) {
            out.push((
                OsString::from(e.var),
                OsStr::from_bytes(value).to_os_string(),
            ));
        }
    }
    out
}

/// A setting that does not parse: which one, and the text given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadSetting {
    pub name: String,
    pub value: String,
}

impl std::fmt::Display for BadSetting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid {}: {}", self.name, self.value)
    }
}

/// The `-h` text: one line per setting.
pub fn help() -> String {
    let mut s = String::from("settings (option, environment variable, default):\n");
    for e in &TABLE {
        let opt = if e.value.is_empty() {
            format!("-{}", e.letter)
        } else {
            format!("-{} {}", e.letter, e.value)
        };
        s.push_str(&format!(
            "  {opt:<14} {:<24} {:<32} {}\n",
            e.var, e.default, e.what
        ));
    }
    s
}

impl Settings {
    /// Resolve every setting: the option if given (`opts`, letter → last value), else the
    /// environment variable if set and not empty, else the default. `has_command` picks
    /// the default wait.
    pub fn resolve(
        opts: &[(char, Option<OsString>)],
        env: &[(OsString, OsString)],
        has_command: bool,
    ) -> Result<Settings, BadSetting> {
        use OnFailure::{Stop, Warn};
        let src = Source { opts, env };
        let main = src.get('M').map(|(_, v)| v);
        // A main program is the command: the same default wait.
        let has_command = has_command || main.is_some();
        // Read in this order, so that of several bad values the same one is reported.
        let wait = src.ms('w', if has_command { 5000 } else { 0 })?;
        let signal_group = src.choice('p', false, &[(b"1", true), (b"0", false)])?;
        let exit_code = src.exit_code()?;
        let on_init_failure = src.choice('I', Stop, &[(b"stop", Stop), (b"warn", Warn)])?;
        let on_services_failure = src.choice('U', Warn, &[(b"stop", Stop), (b"warn", Warn)])?;
        let finish_time = src.ms('t', 2000)?;
        let services_grace = src.ms('g', 3000)?;
        let kill_grace = src.ms('k', 2000)?;
        let mode = src.choice(
            'm',
            Mode::Auto,
            &[
                (b"auto", Mode::Auto),
                (b"container", Mode::Container),
                (b"guest", Mode::Guest),
            ],
        )?;
        let overlay = src.choice(
            'o',
            Overlay::Auto,
            &[
                (b"auto", Overlay::Auto),
                (b"on", Overlay::On),
                (b"off", Overlay::Off),
            ],
        )?;
        Ok(Settings {
            init_dir: src.path('i', "/etc/tend/init.d"),
            services_dir: src.path('s', "/etc/tend/services"),
            finish_dir: src.path('f', "/etc/tend/finish.d"),
            env_dir: src.env_dir(),
            scan_dir: src.path('S', "/run/tend/service"),
            services_wait: (!wait.is_zero()).then_some(wait),
            on_init_failure,
            on_services_failure,
            finish_time,
            services_grace,
            kill_grace,
            signal_group,
            exit_code,
            mode,
            hostname: src.get('n').map(|(_, v)| v),
            console: src.console(),
            overlay,
            main,
            restarts: src.number('r', u32::MAX as u64)?.map_or(0, |n| n as u32),
            nofile: src.number('N', 1 << 30)?,
            oom_score_adj: src.oom()?,
            main_after: src.main_after()?,
        })
    }
}

/// Where each setting's value comes from: the options (the last one given), else the
/// environment (a variable set and not empty).
struct Source<'a> {
    opts: &'a [(char, Option<OsString>)],
    env: &'a [(OsString, OsString)],
}

impl Source<'_> {
    /// The setting's name as given (`-L`, or its variable) and its value, if given.
    fn get(&self, letter: char) -> Option<(String, OsString)> {
        let e = TABLE.iter().find(|e| e.letter == letter)?;
        if let Some((_, v)) = self.opts.iter().rev().find(|(c, _)| *c == letter) {
            let v = v.clone().unwrap_or_else(|| OsString::from("1"));
            return Some((format!("-{letter}"), v));
        }
        self.env
            .iter()
            .rev()
            .find(|(k, v)| k == e.var && !v.is_empty())
            .map(|(_, v)| (e.var.to_string(), v.clone()))
    }

    fn path(&self, letter: char, default: &str) -> PathBuf {
        self.get(letter)
            .map_or_else(|| PathBuf::from(default), |(_, v)| PathBuf::from(v))
    }

    /// A time in milliseconds.
    fn ms(&self, letter: char, default: u64) -> Result<Duration, BadSetting> {
        match self.get(letter) {
            None => Ok(Duration::from_millis(default)),
            // The one duration grammar (tend_sys::duration): a bare number is milliseconds.
            Some((name, v)) => {
                tend_sys::duration::parse_ms(v.as_bytes(), tend_sys::duration::Bare::Millis)
                    .map(Duration::from_millis)
                    .ok_or_else(|| bad(name, &v))
            }
        }
    }

    /// One of `choices` (the value's text → the setting).
    fn choice<T: Copy>(
        &self,
        letter: char,
        default: T,
        choices: &[(&[u8], T)],
    ) -> Result<T, BadSetting> {
        let Some((name, v)) = self.get(letter) else {
            return Ok(default);
        };
        match choices.iter().find(|(text, _)| *text == v.as_bytes()) {
            Some(&(_, t)) => Ok(t),
            None => Err(bad(name, &v)),
        }
    }

    /// `-c`: 0 to 255.
    fn exit_code(&self) -> Result<Option<i32>, BadSetting> {
        match self.get('c') {
            None => Ok(None),
            Some((name, v)) => match parse_u64(&v) {
                Some(n) if n <= 255 => Ok(Some(n as i32)),
                _ => Err(bad(name, &v)),
            },
        }
    }

    /// A number up to `max`, if given.
    fn number(&self, letter: char, max: u64) -> Result<Option<u64>, BadSetting> {
        match self.get(letter) {
            None => Ok(None),
            Some((name, v)) => match parse_u64(&v) {
                Some(n) if n <= max => Ok(Some(n)),
                _ => Err(bad(name, &v)),
            },
        }
    }

    /// `-O`: -1000 to 1000, read as tend-oom reads it.
    fn oom(&self) -> Result<Option<i32>, BadSetting> {
        match self.get('O') {
            None => Ok(None),
            Some((name, v)) => tend_env::oom::parse(&v)
                .map(Some)
                .ok_or_else(|| bad(name, &v)),
        }
    }

    /// `-A`: `all` (None), `none` (no name), or service names separated by commas.
    fn main_after(&self) -> Result<Option<Vec<OsString>>, BadSetting> {
        let Some((name, v)) = self.get('A') else {
            return Ok(None);
        };
        match v.as_bytes() {
            b"all" => Ok(None),
            b"none" => Ok(Some(Vec::new())),
            b => {
                let names: Vec<OsString> = b
                    .split(|&c| c == b',')
                    .map(|n| OsStr::from_bytes(n).to_os_string())
                    .collect();
                // A name is one directory of the scan directory.
                let bad_name = |n: &OsString| {
                    let n = n.as_bytes();
                    n.is_empty() || n.starts_with(b".") || n.contains(&b'/')
                };
                if names.iter().any(bad_name) {
                    return Err(bad(name, &v));
                }
                Ok(Some(names))
            }
        }
    }

    /// -e given as an empty string (TEND_ENV_DIR= is "not set") turns saving off.
    fn env_dir(&self) -> Option<PathBuf> {
        match self.opts.iter().rev().find(|(c, _)| *c == 'e') {
            Some((_, Some(v))) if v.is_empty() => None,
            _ => Some(self.path('e', "/run/tend/env")),
        }
    }

    /// `-C`: a path, or a name under /dev.
    fn console(&self) -> Option<PathBuf> {
        self.get('C').map(|(_, v)| {
            let p = PathBuf::from(v);
            if p.is_absolute() {
                p
            } else {
                PathBuf::from("/dev").join(p)
            }
        })
    }
}

fn bad(name: String, v: &OsStr) -> BadSetting {
    BadSetting {
        name,
        value: String::from_utf8_lossy(v.as_bytes()).into_owned(),
    }
}

/// Digits only, as every tend program reads numbers.
fn parse_u64(v: &OsStr) -> Option<u64> {
    let b = v.as_bytes();
    if b.is_empty() || b.len() > 19 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(b).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(v: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        v.iter().map(|(k, v)| (k.into(), v.into())).collect()
    }

    fn opt(c: char, v: &str) -> (char, Option<OsString>) {
        (c, Some(v.into()))
    }

    #[test]
    fn defaults() {
        let s = Settings::resolve(&[], &[], true).unwrap();
        assert_eq!(s.init_dir, PathBuf::from("/etc/tend/init.d"));
        assert_eq!(s.env_dir, Some(PathBuf::from("/run/tend/env")));
        assert_eq!(s.services_wait, Some(Duration::from_millis(5000)));
        assert_eq!(s.on_init_failure, OnFailure::Stop);
        assert_eq!(s.on_services_failure, OnFailure::Warn);
        assert!(!s.signal_group);
        assert_eq!(s.exit_code, None);
        // No command: no limit on the wait.
        assert_eq!(
            Settings::resolve(&[], &[], false).unwrap().services_wait,
            None
        );
    }

    #[test]
    fn defaults_fit_in_docker_stop() {
        let s = Settings::resolve(&[], &[], true).unwrap();
        assert!(s.finish_time + s.services_grace + s.kill_grace < Duration::from_secs(9));
    }

    #[test]
    fn option_beats_environment_beats_default() {
        let e = env(&[
            ("TEND_KILL_GRACETIME", "700"),
            ("TEND_SERVICES_GRACETIME", ""),
        ]);
        let s = Settings::resolve(&[], &e, true).unwrap();
        assert_eq!(s.kill_grace, Duration::from_millis(700));
        assert_eq!(s.services_grace, Duration::from_millis(3000));
        let s = Settings::resolve(&[opt('k', "50")], &e, true).unwrap();
        assert_eq!(s.kill_grace, Duration::from_millis(50));
    }

    #[test]
    fn every_entry_is_read() {
        let e = env(&[
            ("TEND_INIT_DIR", "/a"),
            ("TEND_SERVICES_DIR", "/b"),
            ("TEND_FINISH_DIR", "/c"),
            ("TEND_ENV_DIR", "/d"),
            ("TEND_SCAN_DIR", "/e"),
            ("TEND_SERVICES_MAXTIME", "0"),
            ("TEND_INIT_FAILURE", "warn"),
            ("TEND_SERVICES_FAILURE", "stop"),
            ("TEND_FINISH_MAXTIME", "1"),
            ("TEND_SERVICES_GRACETIME", "2"),
            ("TEND_KILL_GRACETIME", "3"),
            ("TEND_SIGNAL_GROUP", "1"),
            ("TEND_EXIT_CODE", "9"),
            ("TEND_MODE", "guest"),
            ("TEND_HOSTNAME", "vm1"),
            ("TEND_CONSOLE", "ttyS1"),
            ("TEND_OVERLAY", "off"),
            ("TEND_MAIN", "/agent"),
            ("TEND_MAIN_RESTARTS", "2"),
            ("TEND_MAIN_NOFILE", "1048576"),
            ("TEND_MAIN_OOM", "-997"),
            ("TEND_MAIN_AFTER", "cdh,aa"),
        ]);
        let s = Settings::resolve(&[], &e, true).unwrap();
        assert_eq!(
            s,
            Settings {
                init_dir: "/a".into(),
                services_dir: "/b".into(),
                finish_dir: "/c".into(),
                env_dir: Some("/d".into()),
                scan_dir: "/e".into(),
                services_wait: None,
                on_init_failure: OnFailure::Warn,
                on_services_failure: OnFailure::Stop,
                finish_time: Duration::from_millis(1),
                services_grace: Duration::from_millis(2),
                kill_grace: Duration::from_millis(3),
                signal_group: true,
                exit_code: Some(9),
                mode: Mode::Guest,
                hostname: Some("vm1".into()),
                console: Some("/dev/ttyS1".into()),
                overlay: Overlay::Off,
                main: Some("/agent".into()),
                restarts: 2,
                nofile: Some(1048576),
                oom_score_adj: Some(-997),
                main_after: Some(vec!["cdh".into(), "aa".into()]),
            }
        );
        // The table lists exactly these variables, and every letter of SPEC but h.
        for entry in &TABLE {
            assert!(e.iter().any(|(k, _)| k == entry.var), "{}", entry.var);
            assert!(SPEC.contains(entry.letter));
        }
    }

    #[test]
    fn bad_values_name_their_source() {
        let err = Settings::resolve(&[opt('I', "maybe")], &[], true).unwrap_err();
        assert_eq!(err.to_string(), "invalid -I: maybe");
        let e = env(&[("TEND_KILL_GRACETIME", "3 s")]);
        let err = Settings::resolve(&[], &e, true).unwrap_err();
        assert_eq!(err.to_string(), "invalid TEND_KILL_GRACETIME: 3 s");
        // The one duration grammar: a unit is fine, a bare number is milliseconds.
        let e = env(&[("TEND_KILL_GRACETIME", "3s")]);
        let s = Settings::resolve(&[], &e, true).unwrap();
        assert_eq!(s.kill_grace, Duration::from_secs(3));
        let err = Settings::resolve(&[opt('c', "256")], &[], true).unwrap_err();
        assert_eq!(err.to_string(), "invalid -c: 256");
        for (c, v) in [('O', "-1001"), ('O', "--5"), ('r', "-1"), ('N', "x")] {
            let err = Settings::resolve(&[opt(c, v)], &[], true).unwrap_err();
            assert_eq!(err.to_string(), format!("invalid -{c}: {v}"));
        }
        let s = Settings::resolve(&[opt('O', "-1000")], &[], true).unwrap();
        assert_eq!(s.oom_score_adj, Some(-1000));
    }

    #[test]
    fn kernel_parameters_stand_for_variables() {
        let p = kernel_params(
            b"console=ttyS0 quiet tend.hostname=vm1 tend.console=/dev/ttyS1 tend.nope=1 \
              tend.kill_gracetime=50 tend.mode\n",
        );
        assert_eq!(
            p,
            env(&[
                ("TEND_HOSTNAME", "vm1"),
                ("TEND_CONSOLE", "/dev/ttyS1"),
                ("TEND_KILL_GRACETIME", "50"),
            ])
        );
        // The parameter beats the variable (it comes later), the option beats both.
        let mut e = env(&[("TEND_HOSTNAME", "fromenv")]);
        e.extend(p);
        let s = Settings::resolve(&[], &e, false).unwrap();
        assert_eq!(s.hostname, Some("vm1".into()));
        assert_eq!(s.kill_grace, Duration::from_millis(50));
        let s = Settings::resolve(&[opt('n', "opt")], &e, false).unwrap();
        assert_eq!(s.hostname, Some("opt".into()));
    }

    #[test]
    fn empty_env_dir_option_turns_saving_off() {
        let s = Settings::resolve(&[opt('e', "")], &[], true).unwrap();
        assert_eq!(s.env_dir, None);
    }

    #[test]
    fn a_main_program_waits_for_the_services_as_a_command_does() {
        let e = kernel_params(b"tend.main=/usr/bin/agent tend.main_restarts=3");
        let s = Settings::resolve(&[], &e, false).unwrap();
        assert_eq!(s.main, Some("/usr/bin/agent".into()));
        assert_eq!(s.restarts, 3);
        assert_eq!(s.services_wait, Some(Duration::from_millis(5000)));
        assert_eq!(s.main_after, None);
    }

    #[test]
    fn main_after_is_all_none_or_names() {
        let after = |v: &str| Settings::resolve(&[opt('A', v)], &[], true).map(|s| s.main_after);
        assert_eq!(after("all"), Ok(None));
        assert_eq!(after("none"), Ok(Some(Vec::new())));
        assert_eq!(after("console"), Ok(Some(vec!["console".into()])));
        for v in ["a,,b", "a/log", ".x", ","] {
            assert_eq!(
                after(v).unwrap_err().to_string(),
                format!("invalid -A: {v}")
            );
        }
    }

    #[test]
    fn help_lists_every_variable_with_its_default() {
        let h = help();
        for e in &TABLE {
            let line = h.lines().find(|l| l.contains(e.var)).unwrap();
            assert!(line.contains(e.default), "{line}");
        }
    }
}
