//! The files of a service directory and how s6 reads its small configuration files.

pub const RUN: &str = "run";
pub const FINISH: &str = "finish";
pub const DOWN: &str = "down";
pub const NOTIFICATION_FD: &str = "notification-fd";
pub const TIMEOUT_KILL: &str = "timeout-kill";
pub const TIMEOUT_FINISH: &str = "timeout-finish";
pub const DOWN_SIGNAL: &str = "down-signal";
pub const MAX_DEATH_TALLY: &str = "max-death-tally";
pub const LOCK_FD: &str = "lock-fd";
pub const SUPERVISE: &str = "supervise";
/// A scan directory's control directory (the scanner's `supervise/`).
pub const SVSCAN: &str = ".s6-svscan";
pub const EVENT: &str = "event";
pub const CONTROL: &str = "supervise/control";
pub const STATUS: &str = "supervise/status";
pub const LOCK: &str = "supervise/lock";
pub const DEATH_TALLY: &str = "supervise/death_tally";
/// tend's own: why the last spawn of ./run failed (s6 ignores it).
pub const SPAWN_ERROR: &str = "supervise/spawn-error";

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
    let upper = s.to_ascii_uppercase();
    let bare = upper.strip_prefix("SIG").unwrap_or(&upper);
    format!("SIG{bare}").parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

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
