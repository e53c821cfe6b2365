//! The job model: a bpm.yml read into processes, with tend's own keys under `tend:`.
//! Every value is checked here, so the writers never see bad input.

use yaml_rust2::{Yaml, YamlLoader};

/// Bad input: the message, for exit 100.
#[derive(Debug, PartialEq)]
pub struct Invalid(pub String);

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
    fn new(
        v: &'a Yaml,
        what: &str,
        known: &[&str],
        warn: &mut Vec<String>,
    ) -> Result<Map<'a>, Invalid> {
        let Yaml::Hash(h) = v else {
            return Err(Invalid(format!(
                "invalid {what}: {}: not a mapping",
                shown(v)
            )));
        };
        let mut entries = Vec::new();
        for (k, val) in h {
            let Some(k) = k.as_str() else {
                return Err(Invalid(format!("invalid key in {what}: {}", shown(k))));
            };
            if known.contains(&k) {
                entries.push((k, val));
            } else {
                warn.push(format!("unknown key in {what}: {k}: ignored"));
            }
        }
        Ok(Map { entries })
    }

    fn get(&self, k: &str) -> Option<&'a Yaml> {
        self.entries
            .iter()
            .find(|(key, v)| *key == k && !matches!(v, Yaml::Null))
            .map(|(_, v)| *v)
    }
}

/// Read a bpm.yml. `job` is the job's name. Warnings (unknown keys, keys tend cannot
/// honour) go to `warn`.
pub fn parse(src: &str, job: &str, warn: &mut Vec<String>) -> Result<Job, Invalid> {
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
    // The liveness watcher's service is PROCESS-health: no process may take that name.
    for p in &processes {
        let watcher = format!("{}-health", p.name);
        if p.health.is_some() && processes.iter().any(|q| q.name == watcher) {
            return Err(Invalid(format!(
                "process {watcher} clashes with the health watcher of process {}",
                p.name
            )));
        }
    }
    Ok(Job {
        name: job.to_string(),
        processes,
    })
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

fn process(v: &Yaml, warn: &mut Vec<String>) -> Result<Process, Invalid> {
    let name = match v["name"].as_str() {
        Some(n) => n.to_string(),
        None => return Err(Invalid("a process without a name".into())),
    };
    check_name("process", &name)?;
    let what = |k: &str| format!("{k} of process {name}");
    let mut w = Vec::new();
    let m = Map::new(v, &format!("process {name}"), PROCESS_KEYS, &mut w)?;
    warn.append(&mut w);
    let executable = match m.get("executable") {
        Some(e) => text(e, &what("executable"))?,
        None => return Err(Invalid(format!("process {name} has no executable"))),
    };
    if executable.is_empty() {
        return Err(Invalid(format!("process {name} has no executable")));
    }
    let args = match m.get("args") {
        None => Vec::new(),
        Some(Yaml::Array(a)) => a
            .iter()
            .map(|x| text(x, &what("args")))
            .collect::<Result<_, _>>()?,
        Some(x) => {
            return Err(Invalid(format!(
                "invalid {}: {}: a list",
                what("args"),
                shown(x)
            )));
        }
    };
    let mut env = Vec::new();
    if let Some(e) = m.get("env") {
        let Yaml::Hash(h) = e else {
            return Err(Invalid(format!("invalid {}: a mapping", what("env"))));
        };
        for (k, val) in h {
            let k = text(k, &what("env"))?;
            if k.is_empty() || k.contains(['=', '/']) || k.starts_with('.') {
                return Err(Invalid(format!(
                    "invalid {}: variable name {k:?}",
                    what("env")
                )));
            }
            let val = match val {
                Yaml::Null => String::new(),
                v => text(v, &what("env"))?,
            };
            if val.contains('\0') {
                return Err(Invalid(format!(
                    "invalid {}: {k} holds a NUL byte",
                    what("env")
                )));
            }
            env.push((k, val));
        }
    }
    let workdir = m
        .get("workdir")
        .map(|x| text(x, &what("workdir")))
        .transpose()?;
    let mut pre_start = None;
    let mut pre_start_timeout_ms = 60_000;
    if let Some(h) = m.get("hooks") {
        let mut w = Vec::new();
        let hm = Map::new(
            h,
            &what("hooks"),
            &["pre_start", "pre_start_timeout"],
            &mut w,
        )?;
        warn.append(&mut w);
        pre_start = hm
            .get("pre_start")
            .map(|x| text(x, &what("pre_start")))
            .transpose()?;
        if let Some(t) = hm.get("pre_start_timeout") {
            pre_start_timeout_ms = duration_ms(t, &what("pre_start_timeout"))?;
        }
    }
    let (mut memory, mut open_files, mut processes) = (None, None, None);
    if let Some(l) = m.get("limits") {
        let mut w = Vec::new();
        let lm = Map::new(
            l,
            &what("limits"),
            &["memory", "open_files", "processes"],
            &mut w,
        )?;
        warn.append(&mut w);
        memory = lm
            .get("memory")
            .map(|x| size(x, &what("memory limit")))
            .transpose()?;
        open_files = lm
            .get("open_files")
            .map(|x| count(x, &what("open_files limit")))
            .transpose()?;
        processes = lm
            .get("processes")
            .map(|x| count(x, &what("processes limit")))
            .transpose()?;
    }
    let shutdown_signal = match m.get("shutdown_signal") {
        None => "TERM".to_string(),
        Some(s) => {
            let s = text(s, &what("shutdown_signal"))?;
            let bare = s.strip_prefix("SIG").unwrap_or(&s).to_ascii_uppercase();
            if !SIGNALS.contains(&bare.as_str()) {
                return Err(Invalid(format!(
                    "invalid {}: {s}: a signal name such as TERM or INT",
                    what("shutdown_signal")
                )));
            }
            bare
        }
    };
    let mut privileged = false;
    if let Some(u) = m.get("unsafe") {
        let mut w = Vec::new();
        let um = Map::new(
            u,
            &what("unsafe"),
            &["privileged", "unrestricted_volumes"],
            &mut w,
        )?;
        warn.append(&mut w);
        if let Some(p) = um.get("privileged") {
            privileged = boolean(p, &what("unsafe.privileged"))?;
        }
        if um.get("unrestricted_volumes").is_some() {
            warn.push(format!(
                "process {name}: unsafe.unrestricted_volumes: not isolating, so nothing is mounted: the process sees the host's filesystem"
            ));
        }
    }
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
        warn.push(format!(
            "process {name}: {}: not isolating, so no namespace, mount or capability set is made: the process sees the host's filesystem and runs with its user's rights",
            unhonoured.join(", ")
        ));
    }
    let mut p = Process {
        name: name.clone(),
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

const SIGNALS: &[&str] = &[
    "HUP", "INT", "QUIT", "ILL", "ABRT", "KILL", "USR1", "USR2", "ALRM", "TERM", "CONT", "STOP",
    "TSTP", "WINCH", "PWR",
];

fn tend_keys(p: &mut Process, t: &Yaml, warn: &mut Vec<String>) -> Result<(), Invalid> {
    let name = p.name.clone();
    let what = |k: &str| format!("tend.{k} of process {name}");
    let mut w = Vec::new();
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
        &mut w,
    )?;
    warn.append(&mut w);
    if let Some(u) = tm.get("user") {
        let u = text(u, &what("user"))?;
        if u.is_empty() || u.contains(['/', ':', ' ']) {
            return Err(Invalid(format!("invalid {}: {u:?}", what("user"))));
        }
        p.user = Some(u);
    }
    if let Some(c) = tm.get("cpus") {
        let c = text(c, &what("cpus"))?;
        let ok = !c.is_empty()
            && c.split(',').all(|r| {
                let mut ends = r.splitn(2, '-');
                ends.all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            });
        if !ok {
            return Err(Invalid(format!(
                "invalid {}: {c}: a CPU list such as 0-3 or 0,2",
                what("cpus")
            )));
        }
        p.cpus = Some(c);
    }
    if let Some(r) = tm.get("ready") {
        let mut w = Vec::new();
        let rm = Map::new(
            r,
            &what("ready"),
            &["http", "tcp", "exec", "notify", "timeout"],
            &mut w,
        )?;
        warn.append(&mut w);
        let notify = rm
            .get("notify")
            .map(|x| boolean(x, &what("ready.notify")))
            .transpose()?;
        let pr = probe(&rm, &what("ready"))?;
        let timeout_ms = rm
            .get("timeout")
            .map(|x| duration_ms(x, &what("ready.timeout")))
            .transpose()?
            .unwrap_or(30_000);
        p.ready = match (pr, notify) {
            (Some(_), Some(true)) => {
                return Err(Invalid(format!(
                    "invalid {}: a probe or notify, not both",
                    what("ready")
                )));
            }
            (Some(probe), _) => Some(Ready::Probe { probe, timeout_ms }),
            (None, Some(true)) => Some(Ready::Notify),
            (None, _) => {
                return Err(Invalid(format!(
                    "invalid {}: needs http, tcp, exec or notify: true",
                    what("ready")
                )));
            }
        };
    }
    if let Some(h) = tm.get("health") {
        let mut w = Vec::new();
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
            &mut w,
        )?;
        warn.append(&mut w);
        let Some(probe) = probe(&hm, &what("health"))? else {
            return Err(Invalid(format!(
                "invalid {}: needs http, tcp or exec",
                what("health")
            )));
        };
        let interval_ms = hm
            .get("interval")
            .map(|x| duration_ms(x, &what("health.interval")))
            .transpose()?
            .unwrap_or(10_000);
        if interval_ms == 0 {
            return Err(Invalid(format!("invalid {}: 0", what("health.interval"))));
        }
        p.health = Some(Health {
            probe,
            interval_ms,
            failures: hm
                .get("failures")
                .map(|x| small(x, &what("health.failures")))
                .transpose()?
                .unwrap_or(3),
            max_restarts: hm
                .get("max_restarts")
                .map(|x| small(x, &what("health.max_restarts")))
                .transpose()?
                .unwrap_or(10),
            window_ms: hm
                .get("window")
                .map(|x| duration_ms(x, &what("health.window")))
                .transpose()?
                .unwrap_or(3_600_000),
        });
    }
    if let Some(r) = tm.get("restart") {
        let mut w = Vec::new();
        let rm = Map::new(r, &what("restart"), &["deaths", "within", "then"], &mut w)?;
        warn.append(&mut w);
        let deaths = rm
            .get("deaths")
            .map(|x| small(x, &what("restart.deaths")))
            .transpose()?
            .unwrap_or(5);
        if !(1..=64).contains(&deaths) {
            return Err(Invalid(format!(
                "invalid {}: {deaths}: 1 to 64",
                what("restart.deaths")
            )));
        }
        let within_ms = rm
            .get("within")
            .map(|x| duration_ms(x, &what("restart.within")))
            .transpose()?
            .unwrap_or(60_000);
        let then = rm
            .get("then")
            .map(|x| text(x, &what("restart.then")))
            .transpose()?
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
        p.restart = Some(Restart {
            deaths,
            within_ms,
            slow_ms,
        });
    }
    if let Some(l) = tm.get("log") {
        let mut w = Vec::new();
        let lm = Map::new(
            l,
            &what("log"),
            &["dir", "size", "count", "timestamps", "json"],
            &mut w,
        )?;
        warn.append(&mut w);
        if let Some(d) = lm.get("dir") {
            let d = text(d, &what("log.dir"))?;
            if !d.starts_with('/') {
                return Err(Invalid(format!(
                    "invalid {}: {d}: an absolute path",
                    what("log.dir")
                )));
            }
            p.log.dir = Some(d);
        }
        if let Some(s) = lm.get("size") {
            p.log.size = size(s, &what("log.size"))?;
        }
        if let Some(c) = lm.get("count") {
            p.log.count = small(c, &what("log.count"))?;
        }
        if let Some(t) = lm.get("timestamps") {
            let t = text(t, &what("log.timestamps"))?;
            if !["tai64n", "rfc3339", "none"].contains(&t.as_str()) {
                return Err(Invalid(format!(
                    "invalid {}: {t}: tai64n, rfc3339 or none",
                    what("log.timestamps")
                )));
            }
            p.log.timestamps = t;
        }
        if let Some(j) = lm.get("json") {
            p.log.json = boolean(j, &what("log.json"))?;
        }
    }
    if let Some(g) = tm.get("stop_grace") {
        p.stop_grace_ms = duration_ms(g, &what("stop_grace"))?;
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
        let mut w = Vec::new();
        let j = parse(
            "processes:\n  - name: a\n    executable: /bin/true\n",
            "j",
            &mut w,
        )
        .unwrap();
        let p = &j.processes[0];
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(p.shutdown_signal, "TERM");
        assert_eq!(p.stop_grace_ms, 20_000);
        assert_eq!(p.pre_start_timeout_ms, 60_000);
        assert_eq!((p.log.size, p.log.count), (1 << 20, 10));
        assert_eq!(p.log.timestamps, "tai64n");
        assert!(p.ready.is_none() && p.health.is_none() && p.restart.is_none());
        let j = parse(
            "processes:\n  - name: a\n    executable: x\n    tend: {health: {tcp: \"h:1\"}, restart: {}}\n",
            "j",
            &mut w,
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
            &mut w,
        );
        assert_eq!(e, Err(Invalid("process a is described twice".into())));
    }
}
