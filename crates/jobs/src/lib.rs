//! tend-jobs: a bpm.yml job description translated into tend service directories.
//! See man/man8/tend-jobs.8.

/// Installing services into a scan directory lives in tend-client, shared with tend-monit.
pub use tend_client::install as apply;
pub mod bpm;
pub mod model;
pub mod render;
pub mod systemd;
pub mod yaml;

use std::path::Path;

pub use tend_client::install::SysError;

/// What the host offers, looked up once.
/// What the host offers, BOSH's tree at /var/vcap.
pub fn host(job: &str) -> render::Host {
    host_at(job, Path::new(tend_jail::plan::VCAP))
}

/// What the host offers, BOSH's tree at `vcap_root` (tend-jobs -R; tests).
pub fn host_at(job: &str, vcap_root: &Path) -> render::Host {
    let controllers = std::fs::read_to_string(cgroup2_mount().join("cgroup.controllers"))
        .unwrap_or_default()
        .split_whitespace()
        .map(String::from)
        .collect();
    // From /etc/passwd as tend-jail reads it (a static executable must not call NSS), so
    // apply and the run script agree on whether an account exists.
    let passwd = tend_env::userdb::read(Path::new("/etc/passwd")).unwrap_or_default();
    let users: Vec<String> = String::from_utf8_lossy(&passwd)
        .lines()
        .filter_map(|l| l.split(':').next())
        .filter(|u| !u.is_empty())
        .map(String::from)
        .collect();
    render::Host {
        vcap: users.iter().any(|u| u == "vcap"),
        users,
        vcap_log: vcap_root.join("sys/log").is_dir(),
        vcap_job_dir: vcap_root.join("jobs").join(job).is_dir(),
        vcap_root: vcap_root.display().to_string(),
        controllers,
    }
}

/// The job's name when -n is not given: `JOB` of `.../JOB/config/FILE` (where BOSH puts
/// bpm.yml), else the file's name without its extension.
pub fn job_name_of(file: &Path) -> Option<String> {
    let parent = file.parent().unwrap_or(Path::new(""));
    if parent.file_name().is_some_and(|n| n == "config")
        && let Some(j) = parent.parent().and_then(|p| p.file_name())
    {
        {
            return j.to_str().map(String::from);
        }
    }
    file.file_stem()?.to_str().map(String::from)
}

/// Where the cgroup v2 hierarchy is mounted (/proc/self/mountinfo), as tend-cgroup finds it.
fn cgroup2_mount() -> std::path::PathBuf {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for line in info.lines() {
        // ... mountpoint (5th field) ... " - " fstype source options
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        if right.split(' ').next() == Some("cgroup2")
            && let Some(mp) = left.split(' ').nth(4)
        {
            return std::path::PathBuf::from(mp.replace("\\040", " "));
        }
    }
    std::path::PathBuf::from("/sys/fs/cgroup")
}
