//! The job model: a bpm.yml read into processes, with tend's own keys under `tend:`.
//! Every value is checked here, so the writers never see bad input.

use tend_sys::warn::Warn;
use yaml_rust2::{Yaml, YamlLoader};

/// Bad input: the message, for exit 100.
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

/// A duration: a number of seconds, or a number with ms, s, m or h.
pub fn duration_ms(v: &Yaml, what: &str) -> Result<u64, Invalid> {
    let bad = || {
        Invalid(format!(
            "invalid {what}: {}: a duration is N, Nms, Ns, Nm or Nh",
            shown(v)
        ))
    };
    match v {
        Yaml::Integer(i) if *i >= 0 => (*i as u64).checked_mul(1000).ok_or_else(bad),
        Yaml::String(s) => {
            let s = s.trim();
            let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
            let (num, unit) = s.split_at(split);
            let n: u64 = num.parse().map_err(|_| bad())?;
            let mult = match unit {
                "" | "s" => 1000,
                "ms" => 1,
                "m" => 60_000,
                "h" => 3_600_000,
                _ => return Err(bad()),
            };
            n.checked_mul(mult).ok_or_else(bad)
        }
        _ => Err(bad()),
    }
}

/// A size in bytes: N, or N with K, M, G or T (powers of 1024; a trailing B is allowed).
pub fn size(v: &Yaml, what: &str) -> Result<u64, Invalid> {
    let bad = || {
        Invalid(format!(
            "invalid {what}: {}: a size is N bytes or N with K, M, G or T",
            shown(v)
        ))
    };
    match v {
        Yaml::Integer(i) if *i > 0 => Ok(*i as u64),
        Yaml::String(s) => {
            let s = s.trim();
            let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
            let (num, unit) = s.split_at(split);
            let n: u64 = num.parse().map_err(|_| bad())?;
            let unit = unit.strip_suffix(['B', 'b']).unwrap_or(unit);
            let shift = match unit.to_ascii_uppercase().as_str() {
                "" => 0,
                "K" | "KI" => 10,
                "M" | "MI" => 20,
                "G" | "GI" => 30,
                "T" | "TI" => 40,
                _ => return Err(bad()),
            };
            if n == 0 {
                return Err(bad());
            }
            n.checked_mul(1u64 << shift).ok_or_else(bad)
        }
        _ => Err(bad()),
    }
}

fn count(v: &Yaml, what: &str) -> Result<u64, Invalid> {
    match v {
        Yaml::Integer(i) if *i > 0 => Ok(*i as u64),
        Yaml::String(s) if s.trim().parse::<u64>().is_ok_and(|n| n > 0) => {
            Ok(s.trim().parse().unwrap_or(0))
        }
        _ => Err(Invalid(format!(
            "invalid {what}: {}: a positive whole number",
            shown(v)
        ))),
    }
}

fn small(v: &Yaml, what: &str) -> Result<u32, Invalid> {
    let n = count(v, what)?;
    u32::try_from(n).map_err(|_| Invalid(format!("invalid {what}: {n}: too large")))
}

fn shown(v: &Yaml) -> String {
    match v {
        Yaml::String(s) | Yaml::Real(s) => s.clone(),
        Yaml::Integer(i) => i.to_string(),
        Yaml::Boolean(b) => b.to_string(),
        Yaml::Null => "null".into(),
        Yaml::Array(_) => "a list".into(),
        Yaml::Hash(_) => "a mapping".into(),
        _ => "?".into(),
    }
}

fn text(v: &Yaml, what: &str) -> Result<String, Invalid> {
    match v {
        Yaml::String(s) | Yaml::Real(s) => Ok(s.clone()),
        Yaml::Integer(i) => Ok(i.to_string()),
        Yaml::Boolean(b) => Ok(b.to_string()),
        _ => Err(Invalid(format!(
            "invalid {what}: {}: not a string",
            shown(v)
        ))),
    }
}

fn boolean(v: &Yaml, what: &str) -> Result<bool, Invalid> {
    v.as_bool()
        .ok_or_else(|| Invalid(format!("invalid {what}: {}: true or false", shown(v))))
}

/// A mapping's entries by key, with unknown keys reported as warnings.
struct Map<'a> {
    entries: Vec<(&'a str, &'a Yaml)>,
}

impl<'a> Map<'a> {
    /// The mapping's entries with known keys; its unknown keys are warned about once every
    /// key has proved a string (a mapping with a bad key is an error, without warnings).
    fn new(v: &'a Yaml, what: &str, known: &[&str], warn: &dyn Warn) -> Result<Map<'a>, Invalid> {
        let Yaml::Hash(h) = v else {
            return Err(Invalid(format!(
                "invalid {what}: {}: not a mapping",
                shown(v)
            )));
        };
        let mut entries = Vec::new();
        let mut unknown = Vec::new();
        for (k, val) in h {
            let Some(k) = k.as_str() else {
                return Err(Invalid(format!("invalid key in {what}: {}", shown(k))));
            };
            if known.contains(&k) {
                entries.push((k, val));
            } else {
                unknown.push(k);
            }
        }
        for k in unknown {
            warn.warn(&format_args!("unknown key in {what}: {k}: ignored"));
        }
        Ok(Map { entries })
    }

    fn get(&self, k: &str) -> Option<&'a Yaml> {
        self.entries
            .iter()
            .find(|(key, v)| *key == k && !matches!(v, Yaml::Null))
            .map(|(_, v)| *v)
    }

    /// The value of `k` read by `read` (given what to call it in an error), if present.
    fn read<T>(
        &self,
        k: &str,
        what: &str,
        read: fn(&Yaml, &str) -> Result<T, Invalid>,
    ) -> Result<Option<T>, Invalid> {
        self.get(k).map(|x| read(x, what)).transpose()
    }
}

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
    let docs = YamlLoader::load_from_str(src).map_err(|e| {
        Invalid(format!(
            "malformed YAML at line {} column {}: {}",
            e.marker().line(),
            e.marker().col() + 1,
            e.info()
        ))
    })?;
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
    let (memory, open_files, processes) = limits(&m, &name, warn)?;
    let shutdown_signal = shutdown_signal(&m, &name)?;
    let privileged = unsafe_keys(&m, &name, warn)?;
    warn_unhonoured(&m, &name, warn);
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
        shutdown_signal,
        privileged,
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

type Limits = (Option<u64>, Option<u64>, Option<u64>);

/// `limits`: memory, open files, processes.
fn limits(m: &Map, name: &str, warn: &dyn Warn) -> Result<Limits, Invalid> {
    let Some(l) = m.get("limits") else {
        return Ok((None, None, None));
    };
    let what = |k: &str| key_of(name, k);
    let lm = Map::new(
        l,
        &what("limits"),
        &["memory", "open_files", "processes"],
        warn,
    )?;
    Ok((
        lm.read("memory", &what("memory limit"), size)?,
        lm.read("open_files", &what("open_files limit"), count)?,
        lm.read("processes", &what("processes limit"), count)?,
    ))
}

/// `shutdown_signal`, as a bare name (`TERM` unless given).
fn shutdown_signal(m: &Map, name: &str) -> Result<String, Invalid> {
    let what = key_of(name, "shutdown_signal");
    let Some(s) = m.read("shutdown_signal", &what, text)? else {
        return Ok("TERM".to_string());
    };
    let bare = s.strip_prefix("SIG").unwrap_or(&s).to_ascii_uppercase();
    if !SIGNALS.contains(&bare.as_str()) {
        return Err(Invalid(format!(
            "invalid {what}: {s}: a signal name such as TERM or INT"
        )));
    }
    Ok(bare)
}

/// `unsafe`: whether the process is privileged; unrestricted volumes are only warned about.
fn unsafe_keys(m: &Map, name: &str, warn: &dyn Warn) -> Result<bool, Invalid> {
    let Some(u) = m.get("unsafe") else {
        return Ok(false);
    };
    let what = |k: &str| key_of(name, k);
    let um = Map::new(
        u,
        &what("unsafe"),
        &["privileged", "unrestricted_volumes"],
        warn,
    )?;
    let privileged = um.read("privileged", &what("unsafe.privileged"), boolean)?;
    if um.get("unrestricted_volumes").is_some() {
        warn.warn(&format_args!(
            "process {name}: unsafe.unrestricted_volumes: not isolating, so nothing is mounted: the process sees the host's filesystem"
        ));
    }
    Ok(privileged.unwrap_or(false))
}

/// bpm's isolation keys, which tend does not honour: one warning naming those given.
fn warn_unhonoured(m: &Map, name: &str, warn: &dyn Warn) {
    let unhonoured: Vec<&str> = [
        "capabilities",
        "additional_volumes",
        "ephemeral_disk",
        "persistent_disk",
    ]
    .into_iter()
    .filter(|k| m.get(k).is_some())
    .collect();
    if !unhonoured.is_empty() {
        warn.warn(&format_args!(
            "process {name}: {}: not isolating, so no namespace, mount or capability set is made: the process sees the host's filesystem and runs with its user's rights",
            unhonoured.join(", ")
        ));
    }
}

const SIGNALS: &[&str] = &[
    "HUP", "INT", "QUIT", "ILL", "ABRT", "KILL", "USR1", "USR2", "ALRM", "TERM", "CONT", "STOP",
    "TSTP", "WINCH", "PWR",
];

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

    fn st(s: &str) -> Yaml {
        Yaml::String(s.into())
    }

    #[test]
    fn sizes_and_durations() {
        assert_eq!(size(&st("512M"), "x"), Ok(512 << 20));
        assert_eq!(size(&st("1G"), "x"), Ok(1 << 30));
        assert_eq!(size(&st("64KiB"), "x"), Ok(64 << 10));
        assert_eq!(size(&Yaml::Integer(4096), "x"), Ok(4096));
        assert!(size(&st("12Q"), "x").is_err());
        assert!(size(&st("0"), "x").is_err());
        assert!(size(&st("M"), "x").is_err());
        assert_eq!(duration_ms(&st("30s"), "x"), Ok(30_000));
        assert_eq!(duration_ms(&st("250ms"), "x"), Ok(250));
        assert_eq!(duration_ms(&st("1h"), "x"), Ok(3_600_000));
        assert_eq!(duration_ms(&Yaml::Integer(20), "x"), Ok(20_000));
        assert!(duration_ms(&st("3 days"), "x").is_err());
        assert!(duration_ms(&Yaml::Integer(-1), "x").is_err());
    }

    #[test]
    fn names() {
        assert!(check_name("job", "web").is_ok());
        for bad in ["", "a/b", ".hidden", "a\nb"] {
            assert!(check_name("job", bad).is_err(), "{bad:?}");
        }
    }

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
        assert_eq!(p.shutdown_signal, "TERM");
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
