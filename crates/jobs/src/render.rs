//! A job written as tend service directories: the files of each, as bytes, so that
//! applying can compare them with what is on disk before writing anything.

use crate::model::{Job, Probe, Process, Ready};
use tend_proto::servicedir as sd;
use tend_sys::warn::Warn;

/// What the host offers, looked up once by the caller (tests pass their own).
#[derive(Debug, Clone, Default)]
pub struct Host {
    /// bpm's default account `vcap` exists.
    pub vcap: bool,
    /// The accounts of /etc/passwd, as tend-setuidgid reads them.
    pub users: Vec<String>,
    /// /var/vcap/sys/log exists.
    pub vcap_log: bool,
    /// /var/vcap/jobs/JOB exists: a BOSH machine, where bpm's walls are built.
    pub vcap_job_dir: bool,
    /// Where /var/vcap is on this machine (empty: /var/vcap).
    pub vcap_root: String,
    /// The cgroup v2 controllers of the mount's root (cgroup.controllers).
    pub controllers: Vec<String>,
}

/// A service directory and its files: the shape tend-client's installer writes.
pub use tend_client::install::{File, MARKER, Service};

/// Quote for /bin/sh: single quotes, each `'` as `'\''`.
pub fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=,@%+".contains(&b))
    {
        return s.to_string();
    }
    tend_sys::exec::shell_word_str(s)
}

/// A word inside a double-quoted string of a script: itself when it is bare, else the
/// string closed, the word single-quoted, and the string reopened.
fn in_double_quotes(s: &str) -> String {
    let q = quote(s);
    if q == s { q } else { format!("\"{q}\"") }
}

/// The host path of a path under /var/vcap.
fn vcap(host: &Host, rel: &str) -> String {
    let root = if host.vcap_root.is_empty() {
        tend_jail::plan::VCAP
    } else {
        host.vcap_root.as_str()
    };
    format!("{}/{rel}", root.trim_end_matches('/'))
}

fn seconds(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

fn probe_args(p: &Probe) -> Vec<String> {
    match p {
        Probe::Http(u) => vec!["-u".into(), u.clone()],
        Probe::Tcp(t) => vec!["-p".into(), t.clone()],
        Probe::Exec(c) => vec!["-c".into(), c.clone()],
    }
}

fn file(path: &str, bytes: impl Into<Vec<u8>>, mode: u32) -> File {
    File {
        path: path.into(),
        bytes: bytes.into(),
        mode,
    }
}

/// Every service of a job: `JOB-PROCESS` for each process, and `JOB-PROCESS-health` for
/// the liveness watcher of a process with `health`. Warnings go to `warn`.
pub fn services(job: &Job, host: &Host, warn: &dyn Warn) -> Vec<Service> {
    let mut out = Vec::new();
    for p in &job.processes {
        let name = format!("{}-{}", job.name, p.name);
        out.push(Service {
            name: name.clone(),
            files: process_files(job, p, host, &name, warn),
        });
        if let Some(h) = &p.health {
            let mut words = vec![
                "tend-check".to_string(),
                "-L".into(),
                "-S".into(),
                format!("../{name}"),
            ];
            words.extend(probe_args(&h.probe));
            words.extend([
                "-i".into(),
                seconds(h.interval_ms),
                "-f".into(),
                h.failures.to_string(),
                "-m".into(),
                h.max_restarts.to_string(),
                "-W".into(),
                seconds(h.window_ms),
            ]);
            // The readiness probe's limit is the watcher's grace: a restart that is not
            // ready by then counts as a failed probe (tend-check's default, 30 s, for
            // notify and for a process without readiness).
            if let Some(Ready::Probe { timeout_ms, .. }) = &p.ready {
                words.extend(["-T".into(), seconds(*timeout_ms)]);
            }
            let run = format!(
                "#!/bin/sh\n# Written by tend-jobs for job {}: edits are overwritten.\nexec 2>&1\nexec {}\n",
                job.name,
                words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
            );
            out.push(Service {
                name: format!("{name}-health"),
                files: vec![
                    file(sd::RUN, run, 0o755),
                    file(MARKER, format!("{}\n", job.name), 0o644),
                ],
            });
        }
    }
    out
}

/// A process's service directory: the run script (a chain of tend programs ending in the
/// executable), finish, the supervisor's settings and the logger.
fn process_files(job: &Job, p: &Process, host: &Host, name: &str, warn: &dyn Warn) -> Vec<File> {
    let mut files = Vec::new();
    let stages = stages(&job.name, p, host, name, warn, &mut files);
    files.push(file(
        sd::RUN,
        run_script(job, p, host, name, &stages),
        0o755,
    ));
    settings_files(job, p, name, &mut files);
    files.push(log_run(job, p, host, name));
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

/// The run script: into the work directory, the pre-start hook, then exec the chain,
/// one stage per line.
fn run_script(job: &Job, p: &Process, host: &Host, name: &str, stages: &[Vec<String>]) -> String {
    let mut run = format!(
        "#!/bin/sh\n# Written by tend-jobs for job {} process {}: edits are overwritten.\nexec 2>&1\nsv=$PWD\n",
        job.name, p.name
    );
    let workdir = match &p.workdir {
        Some(w) => Some(w.clone()),
        None if host.vcap_job_dir => Some(vcap(host, &format!("jobs/{}", job.name))),
        None => None,
    };
    if let Some(w) = &workdir {
        run.push_str(&format!("cd {} || exit 111\n", quote(w)));
    }
    if let Some(hook) = &p.pre_start {
        // Its own timeout, then KILL 5 s later; its output goes to the same log.
        run.push_str(&format!(
            "timeout -k 5 {} {} || {{ echo \"tend-jobs: {}: pre_start failed ($?)\"; exit 1; }}\n",
            seconds(p.pre_start_timeout_ms),
            quote(hook),
            in_double_quotes(name),
        ));
    }
    let chain: Vec<String> = stages
        .iter()
        .map(|st| {
            st.iter()
                .map(|w| {
                    if w == "$sv/env" {
                        "\"$sv/env\"".into()
                    } else {
                        quote(w)
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    run.push_str("exec ");
    run.push_str(&chain.join(" \\\n  "));
    run.push('\n');
    run
}

/// One stage per program of the chain, in the order they apply, ending with the
/// executable; the files the stages read (env/, notification-fd) go to `files`.
fn stages(
    job: &str,
    p: &Process,
    host: &Host,
    name: &str,
    warn: &dyn Warn,
    files: &mut Vec<File>,
) -> Vec<Vec<String>> {
    let mut stages: Vec<Vec<String>> = Vec::new();
    if !p.env.is_empty() {
        stages.push(vec!["tend-envdir".into(), "-f".into(), "$sv/env".into()]);
        for (k, v) in &p.env {
            files.push(file(&format!("{}/{k}", sd::ENV), format!("{v}\n"), 0o644));
        }
    }
    if host.vcap_job_dir {
        // A BOSH machine: bpm's walls, built by tend-jail; the probes run on the host,
        // outside them, as bpm's callers' do.
        if let Some(c) = &p.cpus {
            stages.push(vec!["tend-cpuset".into(), c.clone()]);
        }
        if let Some(st) = ready_stage(p) {
            stages.push(st);
            files.push(file(sd::NOTIFICATION_FD, "3\n", 0o644));
        }
        let mut jail = vec!["tend-jail".to_string()];
        jail.extend(jail_plan(job, p, host, warn).args());
        if !host.vcap_root.is_empty() && host.vcap_root != tend_jail::plan::VCAP {
            jail.extend(["-R".into(), host.vcap_root.clone()]);
        }
        stages.push(jail);
    } else {
        warn_unwalled(job, p, warn);
        stages.extend(cgroup_stage(p, host, name, warn));
        // The rlimits, in one tend-softlimit: -c core file size, -o open files.
        let mut softlimit = vec!["tend-softlimit".to_string()];
        if let Some(n) = p.core_file_size {
            softlimit.extend(["-c".into(), n.to_string()]);
        }
        if let Some(n) = p.open_files {
            softlimit.extend(["-o".into(), n.to_string()]);
        }
        if softlimit.len() > 1 {
            stages.push(softlimit);
        }
        if let Some(c) = &p.cpus {
            stages.push(vec!["tend-cpuset".into(), c.clone()]);
        }
        if let Some(u) = run_as(p, host, warn) {
            stages.push(vec!["tend-setuidgid".into(), u]);
        }
        if let Some(st) = ready_stage(p) {
            stages.push(st);
            files.push(file(sd::NOTIFICATION_FD, "3\n", 0o644));
        }
    }
    let mut last = vec![p.executable.clone()];
    last.extend(p.args.iter().cloned());
    stages.push(last);
    stages
}

/// `tend-cgroup` with the limits the host's controllers can enforce; each one it cannot
/// is a warning.
fn cgroup_stage(p: &Process, host: &Host, name: &str, warn: &dyn Warn) -> Option<Vec<String>> {
    let mut cg = Vec::new();
    for (ctl, file, v) in [
        ("memory", "memory.max", p.memory),
        ("pids", "pids.max", p.processes),
    ] {
        let Some(v) = v else { continue };
        if host.controllers.iter().any(|c| c == ctl) {
            cg.push(format!("{file}={v}"));
        } else {
            warn.warn(&format_args!(
                "process {}: the host offers no cgroup {ctl} controller: {file} is not set, the process runs without it",
                p.name
            ));
        }
    }
    if cg.is_empty() {
        return None;
    }
    let mut st = vec!["tend-cgroup".to_string()];
    for c in cg {
        st.extend(["-c".into(), c]);
    }
    st.push(format!("tend/{name}"));
    Some(st)
}

/// Off a BOSH machine (no /var/vcap/jobs/JOB) bpm's walls cannot be built as bpm builds
/// them (there is no job directory to bind): the isolation keys given are named.
fn warn_unwalled(job: &str, p: &Process, warn: &dyn Warn) {
    let unhonoured: Vec<&str> = [
        (p.caps != 0, "capabilities"),
        (!p.volumes.is_empty(), "additional_volumes"),
        (p.ephemeral_disk, "ephemeral_disk"),
        (p.persistent_disk, "persistent_disk"),
        (
            !p.unrestricted_volumes.is_empty(),
            "unsafe.unrestricted_volumes",
        ),
        (p.host_pid, "unsafe.host_pid_namespace"),
    ]
    .into_iter()
    .filter_map(|(given, k)| given.then_some(k))
    .collect();
    if !unhonoured.is_empty() {
        warn.warn(&format_args!(
            "process {}: {}: not isolating here (no /var/vcap/jobs/{job}: not a BOSH machine), so no namespace, mount or capability set is made: the process sees the host's filesystem and runs with its user's rights",
            p.name,
            unhonoured.join(", ")
        ));
    }
}

/// What tend-jail is told: the process's walls, less the cgroup limits the host's
/// controllers cannot enforce (each a warning, so the job still starts), and the user
/// named when it does not exist here (tend-jail would refuse to start the process).
pub fn jail_plan(job: &str, p: &Process, host: &Host, warn: &dyn Warn) -> tend_jail::Plan {
    let mut plan = p.jail(job);
    for (ctl, file, limit) in [
        ("memory", "memory.max", &mut plan.memory),
        ("pids", "pids.max", &mut plan.processes),
    ] {
        if limit.is_some() && !host.controllers.iter().any(|c| c == ctl) {
            warn.warn(&format_args!(
                "process {}: the host offers no cgroup {ctl} controller: {file} is not set, the process runs without it",
                p.name
            ));
            *limit = None;
        }
    }
    if plan.memory.is_none() && plan.processes.is_none() {
        plan.cgroup = None;
    }
    if !p.privileged && !host.users.contains(&plan.user) {
        warn.warn(&format_args!(
            "process {}: user {} does not exist on this machine: tend-jail will refuse to start the process until it does",
            p.name, plan.user
        ));
    }
    plan
}

/// The account the process runs as: tend.user, else vcap where it exists; none (root,
/// with a warning unless privileged) otherwise.
fn run_as(p: &Process, host: &Host, warn: &dyn Warn) -> Option<String> {
    if p.privileged {
        None
    } else if let Some(u) = &p.user {
        if !host.users.iter().any(|x| x == u) {
            warn.warn(&format_args!(
                "process {}: user {u} does not exist on this machine: the process will not start until it does",
                p.name
            ));
        }
        Some(u.clone())
    } else if host.vcap {
        Some("vcap".into())
    } else {
        warn.warn(&format_args!(
            "process {}: no tend.user and no vcap account: it runs as root",
            p.name
        ));
        None
    }
}

/// The stage that reports readiness on fd 3: tend-notify, or tend-check with the probe.
fn ready_stage(p: &Process) -> Option<Vec<String>> {
    match p.ready.as_ref()? {
        Ready::Notify => Some(vec!["tend-notify".into(), "-d".into(), "3".into()]),
        Ready::Probe { probe, timeout_ms } => {
            let mut st = vec!["tend-check".to_string(), "-3".into(), "3".into()];
            if *timeout_ms > 0 {
                st.extend(["-T".into(), seconds(*timeout_ms)]);
            }
            st.extend(probe_args(probe));
            st.push("--".into());
            Some(st)
        }
    }
}

/// finish (one log line per death), down-signal, timeout-kill, restart-policy and the
/// job's marker.
fn settings_files(job: &Job, p: &Process, name: &str, files: &mut Vec<File>) {
    files.push(file(
        sd::FINISH,
        format!(
            "#!/bin/sh\n# Written by tend-jobs: one line per death, into the log.\necho \"tend-jobs: {}: exited: code $1 signal $2\"\n",
            in_double_quotes(name)
        ),
        0o755,
    ));
    files.push(file(
        sd::DOWN_SIGNAL,
        format!("SIG{}\n", p.shutdown_name()),
        0o644,
    ));
    files.push(file(
        sd::TIMEOUT_KILL,
        format!("{}\n", p.stop_grace_ms),
        0o644,
    ));
    if let Some(r) = &p.restart {
        let then = match r.slow_ms {
            None => "stop".to_string(),
            Some(ms) => format!("slow:{}", seconds(ms)),
        };
        files.push(file(
            sd::RESTART_POLICY,
            format!(
                "# Written by tend-jobs from tend.restart.\ndeaths={}\nseconds={}\nthen={then}\n",
                r.deaths,
                seconds(r.within_ms)
            ),
            0o644,
        ));
    }
    files.push(file(MARKER, format!("{}\n", job.name), 0o644));
}

/// The logger's run script: tend-log with the process's log settings.
fn log_run(job: &Job, p: &Process, host: &Host, name: &str) -> File {
    let logdir = match &p.log.dir {
        Some(d) => d.clone(),
        None if host.vcap_log => vcap(host, &format!("sys/log/{}/{}", job.name, p.name)),
        None => "./main".into(),
    };
    let mut script = vec![format!("n{}", p.log.count), format!("s{}", p.log.size)];
    match p.log.timestamps.as_str() {
        "tai64n" => script.push("t".into()),
        "rfc3339" => script.push("z".into()),
        _ => {}
    }
    if p.log.json {
        script.push("j".into());
    }
    script.push(logdir.clone());
    let mkdir = if logdir.starts_with('/') {
        format!("mkdir -p {} || exit 111\n", quote(&logdir))
    } else {
        String::new()
    };
    file(
        &format!("{}/{}", sd::LOG, sd::RUN),
        format!(
            "#!/bin/sh\n# Written by tend-jobs: the log of {}.\n{mkdir}exec tend-log -- {}\n",
            name,
            script
                .iter()
                .map(|w| quote(w))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        0o755,
    )
}
