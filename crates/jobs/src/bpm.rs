//! bpm's keys and tend's own under `tend:`: a bpm.yml read into a `model::Job`.

use crate::model::{Health, Invalid, Job, Log, Probe, Process, Ready, Restart, check_name};
use crate::yaml::{Map, boolean, count, duration_ms, shown, size, size_or_zero, small, text};
use tend_sys::warn::Warn;
use yaml_rust2::Yaml;

/// How errors name a process's key: `KEY of process NAME`.
fn key_of(name: &str, k: &str) -> String {
    format!("{k} of process {name}")
}

/// How errors name a key under `tend:`: `tend.KEY of process NAME`.
fn tend_key_of(name: &str, k: &str) -> String {
    format!("tend.{k} of process {name}")
}

/// Read a bpm.yml. `job` is the job's name. Warnings (unknown keys, keys tend cannot
/// honour) go to `warn`.
pub fn parse(src: &str, job: &str, warn: &dyn Warn) -> Result<Job, Invalid> {
    check_name("job", job)?;
    let docs = crate::yaml::load(src)?;
    let Some(doc) = docs.first() else {
        return Err(Invalid("empty file: no processes".into()));
    };
    let top = Map::new(doc, "the file", &["processes"], warn)?;
    let Some(Yaml::Array(list)) = top.get("processes") else {
        return Err(Invalid(
            "no processes: the file needs a processes list".into(),
        ));
    };
    if list.is_empty() {
        return Err(Invalid("no processes: the processes list is empty".into()));
    }
    let mut processes: Vec<Process> = Vec::new();
    for p in list {
        let p = process(p, warn)?;
        p.jail(job)
            .check()
            .map_err(|e| Invalid(format!("process {}: {e}", p.name)))?;
        if processes.iter().any(|q| q.name == p.name) {
            return Err(Invalid(format!("process {} is described twice", p.name)));
        }
        processes.push(p);
    }
    check_watcher_names(&processes)?;
    Ok(Job {
        name: job.to_string(),
        processes,
    })
}

/// The liveness watcher's service is PROCESS-health: no process may take that name.
fn check_watcher_names(processes: &[Process]) -> Result<(), Invalid> {
    for p in processes {
        let watcher = format!("{}-health", p.name);
        if p.health.is_some() && processes.iter().any(|q| q.name == watcher) {
            return Err(Invalid(format!(
                "process {watcher} clashes with the health watcher of process {}",
                p.name
            )));
        }
    }
    Ok(())
}

const PROCESS_KEYS: &[&str] = &[
    "name",
    "executable",
    "args",
    "env",
    "workdir",
    "hooks",
    "limits",
    "shutdown_signal",
    "capabilities",
    "additional_volumes",
    "unsafe",
    "ephemeral_disk",
    "persistent_disk",
    "tend",
];

fn probe(m: &Map, what: &str) -> Result<Option<Probe>, Invalid> {
    let mut found = Vec::new();
    if let Some(v) = m.get("http") {
        found.push(Probe::Http(text(v, what)?));
    }
    if let Some(v) = m.get("tcp") {
        found.push(Probe::Tcp(text(v, what)?));
    }
    if let Some(v) = m.get("exec") {
        found.push(Probe::Exec(text(v, what)?));
    }
    if found.len() > 1 {
        return Err(Invalid(format!(
            "invalid {what}: one of http, tcp or exec, not several"
        )));
    }
    Ok(found.pop())
}

/// One entry of `processes`: bpm's keys, then tend's own under `tend:`.
fn process(v: &Yaml, warn: &dyn Warn) -> Result<Process, Invalid> {
    let name = match v["name"].as_str() {
        Some(n) => n.to_string(),
        None => return Err(Invalid("a process without a name".into())),
    };
    check_name("process", &name)?;
    let m = Map::new(v, &format!("process {name}"), PROCESS_KEYS, warn)?;
    let executable = match m.read("executable", &key_of(&name, "executable"), text)? {
        Some(e) if !e.is_empty() => e,
        _ => return Err(Invalid(format!("process {name} has no executable"))),
    };
    let args = args(&m, &name)?;
    let env = env(&m, &name)?;
    let workdir = m.read("workdir", &key_of(&name, "workdir"), text)?;
    let (pre_start, pre_start_timeout_ms) = hooks(&m, &name, warn)?;
    let Limits {
        memory,
        open_files,
        processes,
        core_file_size,
    } = limits(&m, &name, warn)?;
    let shutdown_signal = shutdown_signal(&m, &name)?;
    let Unsafe {
        privileged,
        host_pid,
        unrestricted_volumes,
    } = unsafe_keys(&m, &name, warn)?;
    let caps = capabilities(&m, &name)?;
    let volumes = volumes(&m, "additional_volumes", &name, warn)?;
    let ephemeral_disk = m
        .read("ephemeral_disk", &key_of(&name, "ephemeral_disk"), boolean)?
        .unwrap_or(false);
    let persistent_disk = m
        .read(
            "persistent_disk",
            &key_of(&name, "persistent_disk"),
            boolean,
        )?
        .unwrap_or(false);
    let mut p = Process {
        name,
        executable,
        args,
        env,
        workdir,
        pre_start,
        pre_start_timeout_ms,
        memory,
        open_files,
        processes,
        core_file_size,
        shutdown_signal,
        privileged,
        caps,
        volumes,
        unrestricted_volumes,
        ephemeral_disk,
        persistent_disk,
        host_pid,
        user: None,
        cpus: None,
        ready: None,
        health: None,
        restart: None,
        log: Log {
            dir: None,
            size: 1 << 20,
            count: 10,
            timestamps: "tai64n".into(),
            json: false,
        },
        // bpm's stop (tend-jail -s): the signal, 15 s, SIGQUIT, 2 s, SIGKILL; the
        // supervisor's own KILL comes after that.
        stop_grace_ms: 20_000,
    };
    if let Some(t) = m.get("tend") {
        tend_keys(&mut p, t, warn)?;
    }
    Ok(p)
}

fn args(m: &Map, name: &str) -> Result<Vec<String>, Invalid> {
    let what = key_of(name, "args");
    match m.get("args") {
        None => Ok(Vec::new()),
        Some(Yaml::Array(a)) => a.iter().map(|x| text(x, &what)).collect(),
        Some(x) => Err(Invalid(format!("invalid {what}: {}: a list", shown(x)))),
    }
}

fn env(m: &Map, name: &str) -> Result<Vec<(String, String)>, Invalid> {
    let mut env = Vec::new();
    let Some(e) = m.get("env") else {
        return Ok(env);
    };
    let what = key_of(name, "env");
    let Yaml::Hash(h) = e else {
        return Err(Invalid(format!("invalid {what}: a mapping")));
    };
    for (k, val) in h {
        let k = text(k, &what)?;
        if k.is_empty() || k.contains(['=', '/']) || k.starts_with('.') {
            return Err(Invalid(format!("invalid {what}: variable name {k:?}")));
        }
        let val = match val {
            Yaml::Null => String::new(),
            v => text(v, &what)?,
        };
        if val.contains('\0') {
            return Err(Invalid(format!("invalid {what}: {k} holds a NUL byte")));
        }
        env.push((k, val));
    }
    Ok(env)
}

/// `hooks`: the pre-start script and its timeout (60 s unless given).
fn hooks(m: &Map, name: &str, warn: &dyn Warn) -> Result<(Option<String>, u64), Invalid> {
    let Some(h) = m.get("hooks") else {
        return Ok((None, 60_000));
    };
    let what = |k: &str| key_of(name, k);
    let hm = Map::new(h, &what("hooks"), &["pre_start", "pre_start_timeout"], warn)?;
    let pre_start = hm.read("pre_start", &what("pre_start"), text)?;
    let timeout = hm.read("pre_start_timeout", &what("pre_start_timeout"), duration_ms)?;
    Ok((pre_start, timeout.unwrap_or(60_000)))
}

/// What `limits` gives, each if set.
#[derive(Default)]
struct Limits {
    memory: Option<u64>,
    open_files: Option<u64>,
    processes: Option<u64>,
    core_file_size: Option<u64>,
}

/// `limits`: memory, open files, processes, core file size (bytes; 0: no core files).
fn limits(m: &Map, name: &str, warn: &dyn Warn) -> Result<Limits, Invalid> {
    let Some(l) = m.get("limits") else {
        return Ok(Limits::default());
    };
    let what = |k: &str| key_of(name, k);
    let lm = Map::new(
        l,
        &what("limits"),
        &["memory", "open_files", "processes", "core_file_size"],
        warn,
    )?;
    Ok(Limits {
        memory: lm.read("memory", &what("memory limit"), size)?,
        open_files: lm.read("open_files", &what("open_files limit"), count)?,
        processes: lm.read("processes", &what("processes limit"), count)?,
        core_file_size: lm.read(
            "core_file_size",
            &what("core_file_size limit"),
            size_or_zero,
        )?,
    })
}

/// `shutdown_signal`: TERM (the default) or INT, as bpm accepts (any other is an error).
fn shutdown_signal(m: &Map, name: &str) -> Result<i32, Invalid> {
    let what = key_of(name, "shutdown_signal");
    let Some(s) = m.read("shutdown_signal", &what, text)? else {
        return Ok(libc::SIGTERM);
    };
    match tend_sys::signals::parse(&s) {
        Some(n) if n == libc::SIGTERM || n == libc::SIGINT => Ok(n),
        _ => Err(Invalid(format!(
            "invalid {what}: {s}: bpm takes TERM or INT"
        ))),
    }
}

/// What `unsafe` says.
struct Unsafe {
    privileged: bool,
    host_pid: bool,
    unrestricted_volumes: Vec<tend_jail::Volume>,
}

/// `unsafe`: privileged, host_pid_namespace, unrestricted_volumes (any host path).
fn unsafe_keys(m: &Map, name: &str, warn: &dyn Warn) -> Result<Unsafe, Invalid> {
    let Some(u) = m.get("unsafe") else {
        return Ok(Unsafe {
            privileged: false,
            host_pid: false,
            unrestricted_volumes: Vec::new(),
        });
    };
    let what = |k: &str| key_of(name, k);
    let um = Map::new(
        u,
        &what("unsafe"),
        &["privileged", "unrestricted_volumes", "host_pid_namespace"],
        warn,
    )?;
    Ok(Unsafe {
        privileged: um
            .read("privileged", &what("unsafe.privileged"), boolean)?
            .unwrap_or(false),
        host_pid: um
            .read(
                "host_pid_namespace",
                &what("unsafe.host_pid_namespace"),
                boolean,
            )?
            .unwrap_or(false),
        unrestricted_volumes: volumes(&um, "unrestricted_volumes", name, warn)?,
    })
}

/// `capabilities`: names tend-jail knows (`NET_BIND_SERVICE`, no `CAP_`), as bits.
fn capabilities(m: &Map, name: &str) -> Result<u64, Invalid> {
    let what = key_of(name, "capabilities");
    let mut set = 0;
    match m.get("capabilities") {
        None => {}
        Some(Yaml::Array(a)) => {
            for c in a {
                let c = text(c, &what)?;
                set |= tend_jail::caps::bit(&c)
                    .ok_or_else(|| Invalid(format!("invalid {what}: unknown capability {c}")))?;
            }
        }
        Some(x) => return Err(Invalid(format!("invalid {what}: {}: a list", shown(x)))),
    }
    Ok(set)
}

/// A list of volumes: `path`, `writable`, `allow_executions`, `mount_only`, `shared`.
fn volumes(
    m: &Map,
    key: &str,
    name: &str,
    warn: &dyn Warn,
) -> Result<Vec<tend_jail::Volume>, Invalid> {
    let what = key_of(name, key);
    let list = match m.get(key) {
        None => return Ok(Vec::new()),
        Some(Yaml::Array(a)) => a,
        Some(x) => return Err(Invalid(format!("invalid {what}: {}: a list", shown(x)))),
    };
    let mut out = Vec::new();
    for v in list {
        let vm = Map::new(
            v,
            &what,
            &[
                "path",
                "writable",
                "allow_executions",
                "mount_only",
                "shared",
            ],
            warn,
        )?;
        let flag = |k: &str| vm.read(k, &what, boolean).map(|b| b.unwrap_or(false));
        let Some(path) = vm.read("path", &what, text)? else {
            return Err(Invalid(format!("invalid {what}: a volume without a path")));
        };
        out.push(tend_jail::Volume {
            path: path.into(),
            writable: flag("writable")?,
            exec: flag("allow_executions")?,
            mount_only: flag("mount_only")?,
            shared: flag("shared")?,
        });
    }
    Ok(out)
}

/// The keys under `tend:`, each read by its own step, in the order given here.
fn tend_keys(p: &mut Process, t: &Yaml, warn: &dyn Warn) -> Result<(), Invalid> {
    let name = p.name.clone();
    let tm = Map::new(
        t,
        &format!("tend of process {name}"),
        &[
            "user",
            "cpus",
            "ready",
            "health",
            "restart",
            "log",
            "stop_grace",
        ],
        warn,
    )?;
    if let Some(u) = tm.read("user", &tend_key_of(&name, "user"), user)? {
        p.user = Some(u);
    }
    if let Some(c) = tm.read("cpus", &tend_key_of(&name, "cpus"), cpus)? {
        p.cpus = Some(c);
    }
    if let Some(r) = tm.get("ready") {
        p.ready = Some(ready(r, &name, warn)?);
    }
    if let Some(h) = tm.get("health") {
        p.health = Some(health(h, &name, warn)?);
    }
    if let Some(r) = tm.get("restart") {
        p.restart = Some(restart(r, &name, warn)?);
    }
    if let Some(l) = tm.get("log") {
        log(&mut p.log, l, &name, warn)?;
    }
    if let Some(g) = tm.read("stop_grace", &tend_key_of(&name, "stop_grace"), duration_ms)? {
        p.stop_grace_ms = g;
    }
    Ok(())
}

fn user(v: &Yaml, what: &str) -> Result<String, Invalid> {
    let u = text(v, what)?;
    if u.is_empty() || u.contains(['/', ':', ' ']) {
        return Err(Invalid(format!("invalid {what}: {u:?}")));
    }
    Ok(u)
}

fn cpus(v: &Yaml, what: &str) -> Result<String, Invalid> {
    let c = text(v, what)?;
    let ok = !c.is_empty()
        && c.split(',').all(|r| {
            let mut ends = r.splitn(2, '-');
            ends.all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        });
    if !ok {
        return Err(Invalid(format!(
            "invalid {what}: {c}: a CPU list such as 0-3 or 0,2"
        )));
    }
    Ok(c)
}

/// `tend.ready`: a probe (with its timeout, 30 s unless given) or `notify: true`.
fn ready(r: &Yaml, name: &str, warn: &dyn Warn) -> Result<Ready, Invalid> {
    let what = |k: &str| tend_key_of(name, k);
    let rm = Map::new(
        r,
        &what("ready"),
        &["http", "tcp", "exec", "notify", "timeout"],
        warn,
    )?;
    let notify = rm.read("notify", &what("ready.notify"), boolean)?;
    let pr = probe(&rm, &what("ready"))?;
    let timeout_ms = rm
        .read("timeout", &what("ready.timeout"), duration_ms)?
        .unwrap_or(30_000);
    match (pr, notify) {
        (Some(_), Some(true)) => Err(Invalid(format!(
            "invalid {}: a probe or notify, not both",
            what("ready")
        ))),
        (Some(probe), _) => Ok(Ready::Probe { probe, timeout_ms }),
        (None, Some(true)) => Ok(Ready::Notify),
        (None, _) => Err(Invalid(format!(
            "invalid {}: needs http, tcp, exec or notify: true",
            what("ready")
        ))),
    }
}

/// `tend.health`: the liveness probe and its schedule.
fn health(h: &Yaml, name: &str, warn: &dyn Warn) -> Result<Health, Invalid> {
    let what = |k: &str| tend_key_of(name, k);
    let hm = Map::new(
        h,
        &what("health"),
        &[
            "http",
            "tcp",
            "exec",
            "interval",
            "failures",
            "max_restarts",
            "window",
        ],
        warn,
    )?;
    let Some(probe) = probe(&hm, &what("health"))? else {
        return Err(Invalid(format!(
            "invalid {}: needs http, tcp or exec",
            what("health")
        )));
    };
    let interval_ms = hm
        .read("interval", &what("health.interval"), duration_ms)?
        .unwrap_or(10_000);
    if interval_ms == 0 {
        return Err(Invalid(format!("invalid {}: 0", what("health.interval"))));
    }
    Ok(Health {
        probe,
        interval_ms,
        failures: hm
            .read("failures", &what("health.failures"), small)?
            .unwrap_or(3),
        max_restarts: hm
            .read("max_restarts", &what("health.max_restarts"), small)?
            .unwrap_or(10),
        window_ms: hm
            .read("window", &what("health.window"), duration_ms)?
            .unwrap_or(3_600_000),
    })
}

/// `tend.restart`: how many deaths within how long, then stop or slow down.
fn restart(r: &Yaml, name: &str, warn: &dyn Warn) -> Result<Restart, Invalid> {
    let what = |k: &str| tend_key_of(name, k);
    let rm = Map::new(r, &what("restart"), &["deaths", "within", "then"], warn)?;
    let deaths = rm
        .read("deaths", &what("restart.deaths"), small)?
        .unwrap_or(5);
    if !(1..=64).contains(&deaths) {
        return Err(Invalid(format!(
            "invalid {}: {deaths}: 1 to 64",
            what("restart.deaths")
        )));
    }
    let within_ms = rm
        .read("within", &what("restart.within"), duration_ms)?
        .unwrap_or(60_000);
    let then = rm
        .read("then", &what("restart.then"), text)?
        .unwrap_or_else(|| "stop".into());
    let slow_ms = match then.as_str() {
        "stop" => None,
        "slow" => Some(30_000),
        s => match s.strip_prefix("slow:") {
            Some(d) => Some(duration_ms(&Yaml::String(d.into()), &what("restart.then"))?),
            None => {
                return Err(Invalid(format!(
                    "invalid {}: {s}: stop, slow or slow:DURATION",
                    what("restart.then")
                )));
            }
        },
    };
    Ok(Restart {
        deaths,
        within_ms,
        slow_ms,
    })
}

/// `tend.log`: where the process's log goes and how it is kept.
fn log(log: &mut Log, l: &Yaml, name: &str, warn: &dyn Warn) -> Result<(), Invalid> {
    let what = |k: &str| tend_key_of(name, k);
    let lm = Map::new(
        l,
        &what("log"),
        &["dir", "size", "count", "timestamps", "json"],
        warn,
    )?;
    if let Some(d) = lm.read("dir", &what("log.dir"), text)? {
        if !d.starts_with('/') {
            return Err(Invalid(format!(
                "invalid {}: {d}: an absolute path",
                what("log.dir")
            )));
        }
        log.dir = Some(d);
    }
    if let Some(s) = lm.read("size", &what("log.size"), size)? {
        log.size = s;
    }
    if let Some(c) = lm.read("count", &what("log.count"), small)? {
        log.count = c;
    }
    if let Some(t) = lm.read("timestamps", &what("log.timestamps"), text)? {
        if !["tai64n", "rfc3339", "none"].contains(&t.as_str()) {
            return Err(Invalid(format!(
                "invalid {}: {t}: tai64n, rfc3339 or none",
                what("log.timestamps")
            )));
        }
        log.timestamps = t;
    }
    if let Some(j) = lm.read("json", &what("log.json"), boolean)? {
        log.json = j;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let w = tend_sys::warn::Collected::default();
        let j = parse(
            "processes:\n  - name: a\n    executable: /bin/true\n",
            "j",
            &w,
        )
        .unwrap();
        let p = &j.processes[0];
        let seen = w.take();
        assert!(seen.is_empty(), "{seen:?}");
        assert_eq!(p.shutdown_name(), "TERM");
        assert_eq!(p.stop_grace_ms, 20_000);
        assert_eq!(p.pre_start_timeout_ms, 60_000);
        assert_eq!((p.log.size, p.log.count), (1 << 20, 10));
        assert_eq!(p.log.timestamps, "tai64n");
        assert!(p.ready.is_none() && p.health.is_none() && p.restart.is_none());
        let j = parse(
            "processes:\n  - name: a\n    executable: x\n    tend: {health: {tcp: \"h:1\"}, restart: {}}\n",
            "j",
            &w,
        )
        .unwrap();
        let p = &j.processes[0];
        let h = p.health.as_ref().unwrap();
        assert_eq!(
            (h.interval_ms, h.failures, h.max_restarts, h.window_ms),
            (10_000, 3, 10, 3_600_000)
        );
        assert_eq!(
            p.restart,
            Some(Restart {
                deaths: 5,
                within_ms: 60_000,
                slow_ms: None
            })
        );
        // Twice the same process.
        let e = parse(
            "processes:\n  - {name: a, executable: x}\n  - {name: a, executable: y}\n",
            "j",
            &w,
        );
        assert_eq!(e, Err(Invalid("process a is described twice".into())));
    }
}
