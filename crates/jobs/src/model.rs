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
    /// bpm's shutdown signal: SIGTERM or SIGINT, parsed (tend_sys::signals).
    pub shutdown_signal: i32,
    pub privileged: bool,
    /// The rest of bpm's walls, as tend-jail takes them (`capabilities`, volumes,
    /// disks, `unsafe.host_pid_namespace`).
    pub caps: u64,
    pub volumes: Vec<tend_jail::Volume>,
    pub unrestricted_volumes: Vec<tend_jail::Volume>,
    pub ephemeral_disk: bool,
    pub persistent_disk: bool,
    pub host_pid: bool,
    pub user: Option<String>,
    pub cpus: Option<String>,
    pub ready: Option<Ready>,
    pub health: Option<Health>,
    pub restart: Option<Restart>,
    pub log: Log,
    pub stop_grace_ms: u64,
}

impl Process {
    /// The shutdown signal's name without `SIG` (`TERM`).
    pub fn shutdown_name(&self) -> &'static str {
        tend_sys::signals::name(self.shutdown_signal)
            .map_or("TERM", |n| n.trim_start_matches("SIG"))
    }

    /// What tend-jail is told for this process of `job`: one translation, for tend-jobs'
    /// run scripts and tend-monit's bpm route alike.
    pub fn jail(&self, job: &str) -> tend_jail::Plan {
        let mut plan = tend_jail::Plan::new(job);
        if let Some(u) = &self.user {
            plan.user = u.clone();
        }
        plan.caps = self.caps;
        plan.volumes = self.volumes.clone();
        plan.unrestricted = self.unrestricted_volumes.clone();
        plan.privileged = self.privileged;
        plan.host_pid = self.host_pid;
        plan.ephemeral_disk = self.ephemeral_disk;
        plan.persistent_disk = self.persistent_disk;
        plan.open_files = self.open_files;
        plan.core_file_size = self.core_file_size;
        plan.memory = self.memory;
        plan.processes = self.processes;
        if self.memory.is_some() || self.processes.is_some() {
            plan.cgroup = Some(format!("tend/{job}-{}", self.name).into());
        }
        plan.workdir = self.workdir.as_ref().map(Into::into);
        plan.shutdown_signal = Some(self.shutdown_signal);
        plan
    }
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
