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
    /// Present but not a number: the caller warns and uses its default.
    Invalid,
}

/// Parse the first line of a config file: digits only (a trailing newline allowed).
pub fn parse_number(data: &[u8]) -> Option<u64> {
    let line = data.split(|&b| b == b'\n').next().unwrap_or(b"");
    if line.is_empty() || line.len() > 19 || !line.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(line).ok()?.parse().ok()
}

/// Read the start of a small file of the current directory (a supervisor runs in its
/// service directory) into a stack buffer: settings are re-read at every start of
/// ./run, so this must not allocate. None if the file cannot be read.
fn read_small<'a>(name: &str, buf: &'a mut [u8; 64]) -> Option<&'a [u8]> {
    use std::os::fd::AsRawFd;
    let fd = nix::fcntl::open(
        name,
        nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .ok()
    .map(tend_sys::fd::own)?;
    let n = nix::unistd::read(fd.as_raw_fd(), buf).ok()?;
    Some(&buf[..n])
}

fn read_setting<T>(name: &str, parse: impl FnOnce(&[u8]) -> Option<T>) -> Setting<T> {
    let mut buf = [0u8; 64];
    match read_small(name, &mut buf) {
        None => Setting::Absent,
        Some(data) => parse(data).map_or(Setting::Invalid, Setting::Value),
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

/// Parse a signal given by name (`SIGTERM`, `TERM`) or number, as down-signal takes it.
pub fn parse_signal(data: &[u8]) -> Option<nix::sys::signal::Signal> {
    let line = data.split(|&b| b == b'\n').next()?;
    let s = std::str::from_utf8(line).ok()?.trim();
    if let Ok(n) = s.parse::<i32>() {
        return nix::sys::signal::Signal::try_from(n).ok();
    }
    let name = if s.starts_with("SIG") {
        s.to_string()
    } else {
        format!("SIG{s}")
    };
    name.parse().ok()
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
    fn signals() {
        use nix::sys::signal::Signal::*;
        assert_eq!(parse_signal(b"SIGHUP\n"), Some(SIGHUP));
        assert_eq!(parse_signal(b"HUP"), Some(SIGHUP));
        assert_eq!(parse_signal(b"15"), Some(SIGTERM));
        assert_eq!(parse_signal(b"SIGNOPE"), None);
    }
}
