//! The files of a service directory and how s6 reads its small configuration files.
//!
//! Every name a tend program gives to a file of a service directory is defined here, once
//! (as s6 defines its own in `s6/supervise.h`). Files inside `supervise/` have two forms:
//! the path from the service directory (`STATUS`: `supervise/status`), and the leaf and
//! its temporary (`within::STATUS`: `status`, and `within::STATUS_NEW`) for the atomic writes made
//! relative to the open `supervise/` directory. One macro writes all three from the leaf.

use std::ffi::CStr;

pub const RUN: &str = "run";
pub const FINISH: &str = "finish";
pub const DOWN: &str = "down";
pub const NOTIFICATION_FD: &str = "notification-fd";
pub const TIMEOUT_KILL: &str = "timeout-kill";
pub const TIMEOUT_FINISH: &str = "timeout-finish";
pub const DOWN_SIGNAL: &str = "down-signal";
pub const MAX_DEATH_TALLY: &str = "max-death-tally";
pub const LOCK_FD: &str = "lock-fd";
/// s6 2.15.1: the signal `s6-svc -l` sends (default SIGHUP).
pub const RELOAD_SIGNAL: &str = "reload-signal";
/// s6 2.15: present, the timeout-kill SIGKILL goes to ./run's process group.
pub const FLAG_TIMEOUT_KILLPG: &str = "flag-timeout-killpg";
/// s6 2.13.1: present, ./run is PID 1 of a new PID namespace.
pub const FLAG_NEWPIDNS: &str = "flag-newpidns";
/// tend's own: the crash-restart policy (supervise's `policy`; s6 ignores it).
pub const RESTART_POLICY: &str = "restart-policy";
/// The logger's service directory, beside ./run.
pub const LOG: &str = "log";
/// The environment directory a run script may read (tend-envdir, s6-envdir).
pub const ENV: &str = "env";
/// The service's own data directory (s6-rc's convention).
pub const DATA: &str = "data";
// The two control directories' names, as literals the paths below are built from.
macro_rules! supervise_dir {
    () => {
        "supervise"
    };
}
macro_rules! svscan_dir {
    () => {
        ".s6-svscan"
    };
}
pub const SUPERVISE: &str = supervise_dir!();
/// A scan directory's control directory (the scanner's `supervise/`).
pub const SVSCAN: &str = svscan_dir!();
pub const EVENT: &str = "event";
/// runit's: the FIFO runsv holds open while it runs (tend-sv's "is runsv there" test).
pub const RUNIT_OK: &str = concat!(supervise_dir!(), "/ok");

/// A scan directory's files in `.s6-svscan/`, from the scan directory (s6-svscan 2.11's).
pub mod svscan {
    macro_rules! in_svscan {
        ($($path:ident = $name:literal;)*) => {
            $( pub const $path: &str = concat!(svscan_dir!(), "/", $name); )*
        };
    }
    in_svscan! {
        CONTROL = "control";
        LOCK = "lock";
        FINISH = "finish";
        CRASH = "crash";
        // The scripts a signal to the scanner runs instead of its default.
        SIGHUP = "SIGHUP";
        SIGINT = "SIGINT";
        SIGTERM = "SIGTERM";
        SIGQUIT = "SIGQUIT";
        SIGUSR1 = "SIGUSR1";
        SIGUSR2 = "SIGUSR2";
        SIGPWR = "SIGPWR";
        SIGWINCH = "SIGWINCH";
    }
}

/// A C string from a literal, at compile time.
const fn c(bytes: &'static [u8]) -> &'static CStr {
    match CStr::from_bytes_with_nul(bytes) {
        Ok(c) => c,
        Err(_) => panic!("not a C string"),
    }
}

macro_rules! in_supervise {
    ($($(#[$doc:meta])* $path:ident, $new:ident = $name:literal;)*) => {
        $( $(#[$doc])* pub const $path: &str = concat!(supervise_dir!(), "/", $name); )*
        /// The same files' names inside `supervise/`, and their temporaries.
        pub mod within {
            use std::ffi::CStr;
            $(
                pub const $path: &CStr = super::c(concat!($name, "\0").as_bytes());
                pub const $new: &CStr = super::c(concat!($name, ".new\0").as_bytes());
            )*
            /// tend-svdt-clear's temporary, apart from the supervisor's `.new` (each writer
            /// its own, so neither renames the other's half-written file).
            pub const DEATH_TALLY_CLEAR: &CStr = super::c(b"death_tally.clear\0");
        }
    };
}

in_supervise! {
    CONTROL, CONTROL_NEW = "control";
    STATUS, STATUS_NEW = "status";
    LOCK, LOCK_NEW = "lock";
    DEATH_TALLY, DEATH_TALLY_NEW = "death_tally";
    /// tend's own: why the last spawn of ./run failed (s6 ignores it).
    SPAWN_ERROR, SPAWN_ERROR_NEW = "spawn-error";
    /// tend's own: the restart policy's last verdict (written by the supervisor).
    POLICY_VERDICT, POLICY_VERDICT_NEW = "tend-policy";
    /// tend's own: tend-check's state (crates/proto/src/health.rs says the format).
    CHECK_STATE, CHECK_STATE_NEW = "tend-check";
    /// tend's own: tend-notify's readiness state.
    NOTIFY_STATE, NOTIFY_STATE_NEW = "tend-notify";
    /// tend's own: tend-notify's watchdog state.
    WATCHDOG_STATE, WATCHDOG_STATE_NEW = "tend-watchdog";
    /// The `lock-fd` lock the supervisor takes for ./run.
    SERVICE_LOCK, SERVICE_LOCK_NEW = "service-lock";
    /// tend's own: the events posted about the service (tend-monit's alerts): how many,
    /// and the last one (crates/proto/src/health.rs's `key=value` lines).
    EVENTS_STATE, EVENTS_STATE_NEW = "tend-events";
}

/// What reading a numeric configuration file gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting<T> {
    Absent,
    Value(T),
    /// Present but not a valid value: the caller warns and uses its default.
    Invalid,
    /// Not a regular file (a FIFO, a device, a directory: which): never opened for
    /// reading in a way that could block; the caller warns and uses its default.
    NotAFile(&'static str),
}

/// Parse the first line of a config file: digits only (a trailing newline allowed).
pub fn parse_number(data: &[u8]) -> Option<u64> {
    let line = data.split(|&b| b == b'\n').next().unwrap_or(b"");
    if line.is_empty() || line.len() > 19 || !line.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(line).ok()?.parse().ok()
}

/// The size of the buffer a setting is read into; a first line that does not fit is
/// invalid (no setting is anywhere near this long).
const SETTING_MAX: usize = 64;

/// Read the start of a small file of the current directory (a supervisor runs in its
/// service directory) into a stack buffer: settings are re-read at every start of
/// ./run, so this must not allocate. Read the one safe way (`tend_sys::fd::
/// read_regular_into`: non-blocking, regular files only), so a FIFO or a device can
/// neither hang the caller nor feed it endless data.
fn read_small<'a>(name: &str, buf: &'a mut [u8; SETTING_MAX]) -> Setting<&'a [u8]> {
    let got = match tend_sys::fd::read_regular_into(name, &mut buf[..]) {
        Ok(n) => n,
        Err(tend_sys::fd::NotRead::NotAFile(kind)) => return Setting::NotAFile(kind),
        Err(tend_sys::fd::NotRead::Sys(_)) => return Setting::Absent,
    };
    if got == buf.len() && !buf.contains(&b'\n') {
        return Setting::Invalid;
    }
    Setting::Value(&buf[..got])
}

fn read_setting<T>(name: &str, parse: impl FnOnce(&[u8]) -> Option<T>) -> Setting<T> {
    let mut buf = [0u8; SETTING_MAX];
    match read_small(name, &mut buf) {
        Setting::Value(data) => parse(data).map_or(Setting::Invalid, Setting::Value),
        Setting::Absent => Setting::Absent,
        Setting::Invalid => Setting::Invalid,
        Setting::NotAFile(kind) => Setting::NotAFile(kind),
    }
}

/// Read the setting file `name` of the current directory as a number.
pub fn read_number(name: &str) -> Setting<u64> {
    read_setting(name, parse_number)
}

/// Read the setting file `name` of the current directory as a signal.
pub fn read_signal(name: &str) -> Setting<nix::sys::signal::Signal> {
    read_setting(name, parse_signal)
}

/// Parse a signal given by name (`SIGTERM`, `TERM`, any case) or number, as s6-supervise
/// takes down-signal: the first line exactly, so `HUP \n` or `SIGHUP\r\n` is invalid
/// (compared with s6-supervise 2.11.3 in tests/it/compat.rs).
pub fn parse_signal(data: &[u8]) -> Option<nix::sys::signal::Signal> {
    let line = data.split(|&b| b == b'\n').next()?;
    let s = std::str::from_utf8(line).ok()?;
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return nix::sys::signal::Signal::try_from(s.parse::<i32>().ok()?).ok();
    }
    nix::sys::signal::Signal::try_from(tend_sys::signals::parse(s)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_s6_spells_them() {
        assert_eq!(STATUS, "supervise/status");
        assert_eq!(CONTROL, "supervise/control");
        assert_eq!(POLICY_VERDICT, "supervise/tend-policy");
        assert_eq!(within::STATUS, c"status");
        assert_eq!(within::DEATH_TALLY_NEW, c"death_tally.new");
        assert_eq!(svscan::CONTROL, ".s6-svscan/control");
        assert_eq!(svscan::SIGWINCH, ".s6-svscan/SIGWINCH");
    }

    #[test]
    fn numbers_are_strict() {
        assert_eq!(parse_number(b"3\n"), Some(3));
        assert_eq!(parse_number(b"3"), Some(3));
        assert_eq!(parse_number(b"3 \n"), None);
        assert_eq!(parse_number(b"-1"), None);
        assert_eq!(parse_number(b""), None);
        assert_eq!(parse_number(b"\n5"), None);
    }

    #[test]
    fn settings_that_are_not_files_are_refused_without_blocking() {
        let d = std::env::temp_dir().join(format!("tend-sd-{}", std::process::id()));
        std::fs::create_dir_all(d.join("dir")).unwrap();
        nix::unistd::mkfifo(
            &d.join("fifo"),
            nix::sys::stat::Mode::from_bits_truncate(0o644),
        )
        .unwrap();
        std::fs::write(d.join("long"), [b'1'; 100]).unwrap();
        std::fs::write(d.join("ok"), b"42\n").unwrap();
        let p = |n: &str| d.join(n).to_str().unwrap().to_string();
        assert_eq!(read_number(&p("fifo")), Setting::NotAFile("a FIFO"));
        assert_eq!(read_number(&p("dir")), Setting::NotAFile("a directory"));
        assert_eq!(
            read_number("/dev/zero"),
            Setting::NotAFile("a character device")
        );
        assert_eq!(read_number(&p("long")), Setting::Invalid);
        assert_eq!(read_number(&p("ok")), Setting::Value(42));
        assert_eq!(read_number(&p("absent")), Setting::Absent);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn signals() {
        use nix::sys::signal::Signal::*;
        assert_eq!(parse_signal(b"SIGHUP\n"), Some(SIGHUP));
        assert_eq!(parse_signal(b"HUP"), Some(SIGHUP));
        assert_eq!(parse_signal(b"15"), Some(SIGTERM));
        assert_eq!(parse_signal(b"SIGNOPE"), None);
        assert_eq!(parse_signal(b"hup\n"), Some(SIGHUP));
        assert_eq!(parse_signal(b"SigUsr1"), Some(nix::sys::signal::SIGUSR1));
        assert_eq!(parse_signal(b"HUP\nxx"), Some(SIGHUP));
        for bad in [
            &b"SIGHUP\r\n"[..],
            b"HUP \n",
            b" HUP",
            b"USR1\t",
            b"2 ",
            b"",
            b"-1",
            b"HUPx",
        ] {
            assert_eq!(parse_signal(bad), None, "{bad:?}");
        }
    }
}
