//! The job model: what a job description says, once every value has been checked (by
//! `bpm`, reading the YAML through `yaml`), so the writers (`render`, `systemd`) never see
//! bad input.

#[derive(Debug, PartialEq)]
pub struct Invalid(pub String);

impl Invalid {
    pub fn code(&self) -> i32 {
        tend_sys::code::USAGE
    }
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A probe, as tend-check takes it.
#[derive(Debug, Clone, PartialEq)]
pub enum Probe {
    Http(String),
    Tcp(String),
    Exec(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Ready {
    Probe { probe: Probe, timeout_ms: u64 },
    Notify,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Health {
    pub probe: Probe,
    pub interval_ms: u64,
    pub failures: u32,
    pub max_restarts: u32,
    pub window_ms: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Restart {
    pub deaths: u32,
    pub within_ms: u64,
    /// None: stop; Some(d): slow, no sooner than d after the previous start.
    pub slow_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Log {
    pub dir: Option<String>,
    pub size: u64,
    pub count: u32,
    /// "tai64n", "rfc3339" or "none".
    pub timestamps: String,
    pub json: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Process {
    pub name: String,
    pub executable: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub workdir: Option<String>,
    pub pre_start: Option<String>,
    pub pre_start_timeout_ms: u64,
    pub memory: Option<u64>,
    pub open_files: Option<u64>,
    /// RLIMIT_CORE in bytes (bpm's `limits.core_file_size`).
    pub core_file_size: Option<u64>,
    pub processes: Option<u64>,
    pub shutdown_signal: String,
    pub privileged: bool,
    pub user: Option<String>,
    pub cpus: Option<String>,
    pub ready: Option<Ready>,
    pub health: Option<Health>,
    pub restart: Option<Restart>,
    pub log: Log,
    pub stop_grace_ms: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub name: String,
    pub processes: Vec<Process>,
}

/// A job or process name: it names a directory, so no slash, no leading dot, no NUL or
/// newline, and not empty.
pub fn check_name(what: &str, n: &str) -> Result<(), Invalid> {
    let bad = n.is_empty()
        || n.starts_with('.')
        || n.len() > 200
        || n.bytes().any(|b| b == b'/' || b < b' ' || b == 0x7f);
    if bad {
        return Err(Invalid(format!(
            "invalid {what} name: {n:?}: it names a directory (no slash, no leading dot, no control characters)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(check_name("job", "web").is_ok());
        for bad in ["", "a/b", ".hidden", "a\nb"] {
            assert!(check_name("job", bad).is_err(), "{bad:?}");
        }
    }
}
