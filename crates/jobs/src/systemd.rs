//! The same job as systemd .service units (`tend-jobs apply --systemd`).

use crate::SysError;
use crate::model::{Job, Probe, Process, Ready};
use crate::render::{Host, quote};
use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use tend_sys::warn::Warn;

/// A unit: its file name and text.
#[derive(Debug, Clone, PartialEq)]
pub struct Unit {
    pub name: String,
    pub text: String,
}

/// systemd's quoting for one word of a command line: double quotes, with `\`, `"`,
/// `$` and `%` escaped (`$$`, `%%`) so nothing is expanded.
fn word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=,@+".contains(&b));
    if plain {
        return s.to_string();
    }
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            '"' => o.push_str("\\\""),
            '$' => o.push_str("$$"),
            '%' => o.push_str("%%"),
            '\n' => o.push_str("\\n"),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn secs(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// One unit per process, `JOB-PROCESS.service`. `health` has no systemd counterpart:
/// warned about and left out.
pub fn units(job: &Job, host: &Host, warn: &dyn Warn) -> Vec<Unit> {
    job.processes
        .iter()
        .map(|p| Unit {
            name: format!("{}-{}.service", job.name, p.name),
            text: unit(job, p, host, warn),
        })
        .collect()
}

/// One process's unit: [Unit], then [Service] in named parts, then [Install].
fn unit(job: &Job, p: &Process, host: &Host, warn: &dyn Warn) -> String {
    if p.health.is_some() {
        warn.warn(&format_args!(
            "process {}: tend.health has no systemd counterpart: not in the unit",
            p.name
        ));
    }
    let mut u = unit_section(job, p);
    u.push_str("\n[Service]\n");
    exec_lines(&mut u, p);
    context_lines(&mut u, job, p, host);
    wall_lines(&mut u, job, p);
    stop_lines(&mut u, p);
    output_lines(&mut u, job, p, host);
    u.push_str("\n[Install]\nWantedBy=multi-user.target\n");
    u
}

/// The header and [Unit]: the description, and the start limit of `restart` with `then: stop`.
fn unit_section(job: &Job, p: &Process) -> String {
    let mut u = format!(
        "# Written by tend-jobs for job {} process {}: edits are overwritten.\n[Unit]\nDescription=job {} process {}\n",
        job.name, p.name, job.name, p.name
    );
    if let Some(r) = &p.restart
        && r.slow_ms.is_none()
    {
        u.push_str(&format!(
            "StartLimitIntervalSec={}\nStartLimitBurst={}\n",
            secs(r.within_ms),
            r.deaths
        ));
    }
    u
}

/// Type, ExecStart, the pre-start hook, and the readiness probe as ExecStartPost.
fn exec_lines(u: &mut String, p: &Process) {
    u.push_str(match p.ready {
        Some(Ready::Notify) => "Type=notify\n",
        _ => "Type=simple\n",
    });
    let mut start = vec![word(&p.executable)];
    start.extend(p.args.iter().map(|a| word(a)));
    u.push_str(&format!("ExecStart={}\n", start.join(" ")));
    if let Some(hook) = &p.pre_start {
        u.push_str(&format!(
            "ExecStartPre=/usr/bin/timeout -k 5 {} {}\n",
            secs(p.pre_start_timeout_ms),
            word(hook)
        ));
    }
    if let Some(Ready::Probe { probe, timeout_ms }) = &p.ready {
        let check = match probe {
            Probe::Http(url) => format!("tend-check -u {}", quote(url)),
            Probe::Tcp(t) => format!("tend-check -p {}", quote(t)),
            Probe::Exec(c) => format!("tend-check -c {}", quote(c)),
        };
        // Active only once the probe passes, as tend-check does under tend.
        u.push_str(&format!(
            "ExecStartPost=/bin/sh -c {}\n",
            word(&format!("until {check} >/dev/null 2>&1; do sleep 1; done"))
        ));
        if *timeout_ms > 0 {
            u.push_str(&format!("TimeoutStartSec={}\n", secs(*timeout_ms)));
        }
    }
}

/// Where and as whom the process runs, its environment and its limits.
fn context_lines(u: &mut String, job: &Job, p: &Process, host: &Host) {
    let workdir = match &p.workdir {
        Some(w) => Some(w.clone()),
        None if host.vcap_job_dir => Some(format!("/var/vcap/jobs/{}", job.name)),
        None => None,
    };
    if let Some(w) = workdir {
        u.push_str(&format!("WorkingDirectory={w}\n"));
    }
    let user = if p.privileged {
        None
    } else {
        p.user
            .clone()
            .or_else(|| host.vcap.then(|| "vcap".to_string()))
    };
    if let Some(user) = user {
        u.push_str(&format!("User={user}\n"));
    }
    for (k, v) in &p.env {
        u.push_str(&format!("Environment={}\n", word(&format!("{k}={v}"))));
    }
    if let Some(m) = p.memory {
        u.push_str(&format!("MemoryMax={m}\n"));
    }
    if let Some(n) = p.processes {
        u.push_str(&format!("TasksMax={n}\n"));
    }
    if let Some(n) = p.open_files {
        u.push_str(&format!("LimitNOFILE={n}\n"));
    }
    if let Some(n) = p.core_file_size {
        u.push_str(&format!("LimitCORE={n}\n"));
    }
    if let Some(c) = &p.cpus {
        u.push_str(&format!("CPUAffinity={c}\n"));
    }
}

/// bpm's walls (what tend-jail builds) in systemd's words; what has none is in
/// tend-jobs(8), NOTES. Bind sources are optional (`-`): a missing one gives the process
/// less, never more.
fn wall_lines(u: &mut String, job: &Job, p: &Process) {
    // systemd does not glob BindPaths=: unrestricted volumes are expanded as the unit is
    // written (tend-jail expands them at each start).
    let plan = p.jail(&job.name).expand_unrestricted();
    let mut line = |k: &str, v: String| u.push_str(&format!("{k}={v}\n"));
    line("PrivateIPC", "yes".into());
    line("PrivateMounts", "yes".into());
    line("ProtectHostname", "yes".into());
    if !p.host_pid {
        line("PrivatePIDs", "yes".into());
    }
    line("PrivateDevices", "yes".into());
    line("ProtectSystem", "strict".into());
    line("TemporaryFileSystem", "/var/vcap:ro".into());
    let show = |b: &tend_jail::plan::Bind| {
        if b.host == b.inside {
            format!("-{}", b.inside.display())
        } else {
            format!("-{}:{}", b.host.display(), b.inside.display())
        }
    };
    let binds = plan.binds(|_| true);
    let mut rw = Vec::new();
    let mut ro = Vec::new();
    let mut noexec = Vec::new();
    for b in binds.iter().filter(|b| {
        b.inside.starts_with("/var/vcap")
            || b.host != b.inside
            || plan.unrestricted.iter().any(|v| v.path == b.inside)
    }) {
        if b.writable {
            rw.push(show(b))
        } else {
            ro.push(show(b))
        }
        if !b.exec {
            noexec.push(format!("-{}", b.inside.display()));
        }
    }
    line("BindPaths", rw.join(" "));
    line("BindReadOnlyPaths", ro.join(" "));
    line("NoExecPaths", noexec.join(" "));
    let caps: Vec<String> = tend_jail::caps::names(plan.capabilities())
        .map(|c| format!("CAP_{c}"))
        .collect();
    line("CapabilityBoundingSet", caps.join(" "));
    line("AmbientCapabilities", caps.join(" "));
    if !p.privileged {
        line("NoNewPrivileges", "yes".into());
        line(
            "InaccessiblePaths",
            tend_jail::plan::MASKED
                .iter()
                .map(|m| format!("-{m}"))
                .collect::<Vec<_>>()
                .join(" "),
        );
        line(
            "ReadOnlyPaths",
            tend_jail::plan::READ_ONLY
                .iter()
                .map(|m| format!("-{m}"))
                .collect::<Vec<_>>()
                .join(" "),
        );
        line("RestrictNamespaces", "yes".into());
        let names: Vec<&str> = tend_jail::seccomp::allowed()
            .map(|(n, _)| *n)
            .chain(["clone", "personality"])
            .collect();
        line("SystemCallFilter", names.join(" "));
        line("SystemCallErrorNumber", "EPERM".into());
    }
}

/// How the process is stopped and restarted.
fn stop_lines(u: &mut String, p: &Process) {
    u.push_str(&format!("KillSignal=SIG{}\n", p.shutdown_name()));
    u.push_str(&format!("TimeoutStopSec={}\n", secs(p.stop_grace_ms)));
    match p.restart.as_ref().and_then(|r| r.slow_ms) {
        None => u.push_str("Restart=always\nRestartSec=1s\n"),
        Some(ms) => u.push_str(&format!("Restart=always\nRestartSec={}\n", secs(ms))),
    }
}

/// Where the output goes: the log directory's `current`, or bpm's log file.
fn output_lines(u: &mut String, job: &Job, p: &Process, host: &Host) {
    if let Some(d) = &p.log.dir {
        u.push_str(&format!(
            "StandardOutput=append:{d}/current\nStandardError=inherit\n"
        ));
    } else if host.vcap_log {
        u.push_str(&format!(
            "StandardOutput=append:/var/vcap/sys/log/{}/{}.log\nStandardError=inherit\n",
            job.name, p.name
        ));
    }
}

/// Units in `dir` written by tend-jobs for `job` that `units` no longer holds (their first
/// line names the job).
fn stale(dir: &Path, job: &str, units: &[Unit]) -> Vec<String> {
    let head = format!("# Written by tend-jobs for job {job} process ");
    let Ok(rd) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<String> = rd
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(String::from))
        .filter(|n| n.starts_with(&format!("{job}-")) && n.ends_with(".service"))
        .filter(|n| !units.iter().any(|u| &u.name == n))
        .filter(|n| {
            // Only the first line matters; read the safe way (a FIFO must not hang us).
            tend_sys::fd::read_regular(&dir.join(n), 4096).is_ok_and(|t| {
                t.split(|&b| b == b'\n')
                    .next()
                    .is_some_and(|l| l.starts_with(head.as_bytes()))
            })
        })
        .collect();
    out.sort();
    out
}

/// Write the units into `dir`: each changed one to a temporary file beside it, then
/// renamed over; unchanged ones are not touched; the job's units no longer described are
/// removed. Returns what was done, one line per unit.
/// One apply at a time per directory (apply's lock, waited for `patience` at most).
pub fn write(
    dir: &Path,
    job: &str,
    units: &[Unit],
    patience: std::time::Duration,
) -> Result<Vec<String>, SysError> {
    let _lock = crate::apply::lock(dir, patience)?;
    let mut written = Vec::new();
    for u in units {
        let target = dir.join(&u.name);
        if tend_sys::fd::read_regular(&target, u.text.len() + 1)
            .ok()
            .as_deref()
            == Some(u.text.as_bytes())
        {
            continue;
        }
        let tmp = dir.join(format!(".{}.{}", u.name, std::process::id()));
        let r = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o644)
            .open(&tmp)
            .and_then(|mut f| {
                f.write_all(u.text.as_bytes())?;
                f.sync_all()
            })
            .and_then(|()| fs::rename(&tmp, &target));
        if let Err(e) = r {
            let _ = fs::remove_file(&tmp);
            return Err(SysError(format!(
                "unable to write {}: {}",
                target.display(),
                tend_sys::error::io_reason(&e)
            )));
        }
        written.push(format!("wrote {}", u.name));
    }
    for n in stale(dir, job, units) {
        fs::remove_file(dir.join(&n)).map_err(|e| {
            SysError(format!(
                "unable to remove {}: {}",
                dir.join(&n).display(),
                tend_sys::error::io_reason(&e)
            ))
        })?;
        written.push(format!("removed {n}"));
    }
    Ok(written)
}
