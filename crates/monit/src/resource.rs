//! `if totalmem|memory|cpu|totalcpu|children|threads OP N [unit] [for N cycles] then …`:
//! measured from /proc once per cycle by the check's watcher, only for checks that have
//! such a rule (the others never wake up), and acted on after N failing cycles of the
//! last M, as monit counts them.

use std::collections::HashMap;
use std::path::Path;

/// One resource rule as the watcher keeps it (a line of `monit-check`).
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    pub what: String,
    pub op: String,
    /// Kilobytes for memory, percent for `percent`, a count otherwise.
    pub limit: f64,
    pub percent: bool,
    /// Failing cycles (N) out of the last M.
    pub cycles: (u32, u32),
    /// `alert`, `restart`, `stop`, `unmonitor`, or `exec` (then `argv`).
    pub action: String,
    pub argv: Vec<String>,
}

impl Rule {
    /// `resource WHAT OP LIMIT PERCENT N M ACTION`.
    pub fn to_line(&self) -> String {
        format!(
            "resource {} {} {} {} {} {} {}\n",
            self.what,
            self.op,
            self.limit,
            self.percent as u8,
            self.cycles.0,
            self.cycles.1,
            self.action
        ) + &self
            .argv
            .iter()
            .map(|a| format!("resource-arg {a}\n"))
            .collect::<String>()
    }

    pub fn parse(v: &str) -> Option<Rule> {
        let f: Vec<&str> = v.split(' ').collect();
        let [what, op, limit, percent, n, m, action] = f.as_slice() else {
            return None;
        };
        Some(Rule {
            what: what.to_string(),
            op: op.to_string(),
            limit: limit.parse().ok()?,
            percent: *percent == "1",
            cycles: (n.parse().ok()?, m.parse().ok()?),
            action: action.to_string(),
            argv: Vec::new(),
        })
    }

    fn holds(&self, value: f64) -> bool {
        match self.op.as_str() {
            ">" | "gt" | "more" | "greater" | "older" => value > self.limit,
            ">=" | "ge" => value >= self.limit,
            "<" | "lt" | "less" | "newer" => value < self.limit,
            "<=" | "le" => value <= self.limit,
            "=" | "==" | "eq" | "equal" => value == self.limit,
            "!=" | "<>" | "ne" | "notequal" => value != self.limit,
            _ => false,
        }
    }
}

/// One process's numbers from /proc: resident kB, CPU ticks, threads, parent.
#[derive(Clone, Copy, Debug, Default)]
struct Proc {
    rss_kb: u64,
    ticks: u64,
    threads: u64,
    ppid: i32,
}

fn read_proc(pid: i32) -> Option<Proc> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest: Vec<&str> = stat.rsplit_once(") ")?.1.split(' ').collect();
    let n = |i: usize| rest.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // After `(comm)`: ppid is field 2 (index 1), utime 12, stime 13, threads 18, rss
    // (pages) 22.
    let page_kb = 4; // x86_64 pages
    Some(Proc {
        ppid: n(1) as i32,
        ticks: n(11) + n(12),
        threads: n(17),
        rss_kb: n(21) * page_kb,
    })
}

/// Every process's numbers, read from /proc.
fn table() -> HashMap<i32, Proc> {
    let mut all: HashMap<i32, Proc> = HashMap::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            if let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok())
                && let Some(pr) = read_proc(p)
            {
                all.insert(p, pr);
            }
        }
    }
    all
}

thread_local! {
    /// The table `snapshot` read, while its closure runs.
    static SNAPSHOT: std::cell::RefCell<Option<HashMap<i32, Proc>>> =
        const { std::cell::RefCell::new(None) };
}

/// Run `f` with one reading of /proc for every `usage` it asks: a report of N services
/// reads every process once, not once per service (the XML of 100 services read /proc
/// 100 times).
pub fn snapshot<T>(f: impl FnOnce() -> T) -> T {
    if children_files_work() {
        return f();
    }
    SNAPSHOT.with(|s| *s.borrow_mut() = Some(table()));
    let out = f();
    SNAPSHOT.with(|s| *s.borrow_mut() = None);
    out
}

/// The process and its descendants.
fn tree(pid: i32) -> (Proc, Vec<Proc>) {
    let me = read_proc(pid).unwrap_or_default();
    if let Some(desc) = children_files(pid) {
        return (me, desc);
    }
    let desc = SNAPSHOT.with(|s| match &*s.borrow() {
        Some(all) => descendants(all, pid),
        None => descendants(&table(), pid),
    });
    (me, desc)
}

/// Whether the kernel has /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN), asked once.
fn children_files_work() -> bool {
    static YES: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *YES.get_or_init(|| {
        let me = std::process::id();
        Path::new(&format!("/proc/{me}/task/{me}/children")).exists()
    })
}

/// The descendants of `pid` through /proc/PID/task/TID/children (a read per thread of
/// each, not one per process of the machine: a BOSH VM's 2000 processes cost an XML of
/// 100 services 10–20 ms to scan); None where the kernel has no such file.
fn children_files(pid: i32) -> Option<Vec<Proc>> {
    if !children_files_work() {
        return None;
    }
    let mut desc = Vec::new();
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        let Ok(rd) = std::fs::read_dir(format!("/proc/{parent}/task")) else {
            continue;
        };
        for t in rd.flatten() {
            let Ok(text) = std::fs::read_to_string(t.path().join("children")) else {
                continue;
            };
            for c in text
                .split_whitespace()
                .filter_map(|c| c.parse::<i32>().ok())
            {
                if let Some(pr) = read_proc(c) {
                    desc.push(pr);
                    frontier.push(c);
                }
            }
        }
    }
    Some(desc)
}

fn descendants(all: &HashMap<i32, Proc>, pid: i32) -> Vec<Proc> {
    let mut desc = Vec::new();
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        for (&p, pr) in all {
            if pr.ppid == parent && p != pid {
                desc.push(*pr);
                frontier.push(p);
            }
        }
    }
    desc
}

/// The CPUs this process may use, asked once (std reads the cgroup's quota files each
/// time: three files per service of a report).
fn ncpu() -> f64 {
    static N: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *N.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()) as f64)
}

fn mem_total_kb() -> f64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(1.0)
}

/// A process tree's numbers as monit's XML gives them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Usage {
    /// Resident kB of the process, and of it with all its descendants.
    pub kb: u64,
    pub kb_total: u64,
    /// Its descendants, at every depth (monit's `<children>`).
    pub children: u64,
    /// CPU ticks (user and system) of the process, and of the whole tree.
    pub ticks: u64,
    pub ticks_total: u64,
}

/// Measure `pid` and its descendants from /proc.
pub fn usage(pid: i32) -> Usage {
    let (me, desc) = tree(pid);
    Usage {
        kb: me.rss_kb,
        kb_total: me.rss_kb + desc.iter().map(|p| p.rss_kb).sum::<u64>(),
        children: desc.len() as u64,
        ticks: me.ticks,
        ticks_total: me.ticks + desc.iter().map(|p| p.ticks).sum::<u64>(),
    }
}

/// CPU percent (of all CPUs, as monit's `<cpu><percent>`) from `ticks` used over
/// `secs` seconds.
pub fn cpu_percent(ticks: u64, secs: f64) -> f64 {
    let hz = 100.0; // USER_HZ on Linux
    let ncpu = ncpu();
    ticks as f64 / hz / secs.max(0.001) * 100.0 / ncpu
}

/// Per check: the last cycle's CPU ticks (for a rate) and each rule's recent results.
#[derive(Debug, Default)]
pub struct Meter {
    last: Option<(std::time::Instant, u64, u64)>,
    history: Vec<Vec<bool>>,
}

impl Meter {
    /// Measure `pid` and return the rules whose condition held for N of the last M cycles
    /// (each rule's history is cleared when it fires, as monit resets its counter).
    pub fn cycle(&mut self, pid: i32, rules: &[Rule]) -> Vec<usize> {
        let (me, desc) = tree(pid);
        let total_rss = me.rss_kb + desc.iter().map(|p| p.rss_kb).sum::<u64>();
        let total_ticks = me.ticks + desc.iter().map(|p| p.ticks).sum::<u64>();
        let now = std::time::Instant::now();
        let hz = 100.0; // USER_HZ on Linux
        let ncpu = ncpu();
        let (cpu, totalcpu) = match self.last {
            Some((t, own, all)) => {
                let secs = now.duration_since(t).as_secs_f64().max(0.001);
                let pc = |d: u64| d as f64 / hz / secs * 100.0 / ncpu;
                (
                    pc(me.ticks.saturating_sub(own)),
                    pc(total_ticks.saturating_sub(all)),
                )
            }
            None => (-1.0, -1.0),
        };
        self.last = Some((now, me.ticks, total_ticks));
        self.history.resize(rules.len(), Vec::new());
        let total = mem_total_kb();
        let mut fired = Vec::new();
        for (i, r) in rules.iter().enumerate() {
            let kb_or_pc = |kb: u64| {
                if r.percent {
                    kb as f64 * 100.0 / total
                } else {
                    kb as f64
                }
            };
            let value = match r.what.as_str() {
                "memory" => kb_or_pc(me.rss_kb),
                "totalmem" => kb_or_pc(total_rss),
                "children" => desc.len() as f64,
                "threads" => me.threads as f64,
                "cpu" => cpu,
                "totalcpu" => totalcpu,
                _ => continue,
            };
            // CPU needs two samples: the first cycle says nothing.
            let held = value >= 0.0 && r.holds(value);
            let h = &mut self.history[i];
            h.push(held);
            let m = r.cycles.1.max(1) as usize;
            if h.len() > m {
                h.remove(0);
            }
            if h.iter().filter(|&&x| x).count() >= r.cycles.0.max(1) as usize {
                h.clear();
                fired.push(i);
            }
        }
        fired
    }
}
