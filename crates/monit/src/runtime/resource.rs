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

thread_local! {
    /// The one buffer every /proc file of a report is read into.
    static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Read the procfs file at `path` (into the reused buffer) and give its text to `f`.
fn with_proc_file<T>(path: &str, f: impl FnOnce(&str) -> Option<T>) -> Option<T> {
    BUF.with(|b| {
        let mut b = b.borrow_mut();
        tend_sys::fd::read_proc_into(path, &mut b).ok()?;
        f(std::str::from_utf8(&b).ok()?)
    })
}

fn read_proc(pid: i32) -> Option<Proc> {
    with_proc_file(&format!("/proc/{pid}/stat"), |stat| {
        // After `(comm)` (which may hold blanks and parentheses): ppid is field 2
        // (index 1), utime 12, stime 13, threads 18, rss (pages) 22.
        let mut rest = stat.rsplit_once(") ")?.1.split(' ');
        let mut n = |skip: usize| {
            rest.nth(skip)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        let ppid = n(1) as i32;
        let utime = n(9);
        let stime = n(0);
        let threads = n(4);
        let rss = n(3);
        let page_kb = 4; // x86_64 pages
        Some(Proc {
            ppid,
            ticks: utime + stime,
            threads,
            rss_kb: rss * page_kb,
        })
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

/// What `snapshot` read once for a whole report.
#[derive(Default)]
struct Snapshot {
    /// Every process, where the kernel has no children files.
    table: Option<HashMap<i32, Proc>>,
    mem_total_kb: Option<u64>,
}

thread_local! {
    /// The snapshot of the report being made, while `snapshot`'s closure runs.
    static SNAPSHOT: std::cell::RefCell<Snapshot> = std::cell::RefCell::new(Snapshot::default());
}

/// Run `f` with one reading of /proc for every `usage` it asks: a report of N services
/// reads every process (where it must) and /proc/meminfo once, not once per service.
pub fn snapshot<T>(f: impl FnOnce() -> T) -> T {
    SNAPSHOT.with(|s| {
        *s.borrow_mut() = Snapshot {
            table: (!children_files_work()).then(table),
            mem_total_kb: Some(read_mem_total_kb()),
        }
    });
    let out = f();
    SNAPSHOT.with(|s| *s.borrow_mut() = Snapshot::default());
    out
}

/// The process and its descendants.
fn tree(pid: i32) -> (Proc, Vec<Proc>) {
    let me = read_proc(pid).unwrap_or_default();
    if let Some(desc) = children_files(pid, me.threads) {
        return (me, desc);
    }
    let desc = SNAPSHOT.with(|s| match &s.borrow().table {
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

/// The descendants of `pid` (which has `threads` threads) through
/// /proc/PID/task/TID/children: a read per thread of each, not one per process of the
/// machine (a BOSH VM's 2000 processes cost an XML of 100 services 10–20 ms to scan),
/// and for a process of one thread the one file without listing its tasks. None where
/// the kernel has no such file.
fn children_files(pid: i32, threads: u64) -> Option<Vec<Proc>> {
    if !children_files_work() {
        return None;
    }
    let mut desc = Vec::new();
    let mut frontier = vec![(pid, threads)];
    let mut kids = Vec::new();
    while let Some((parent, threads)) = frontier.pop() {
        kids.clear();
        let mut from = |path: &str| {
            with_proc_file(path, |text| {
                kids.extend(
                    text.split_whitespace()
                        .filter_map(|c| c.parse::<i32>().ok()),
                );
                Some(())
            })
        };
        if threads <= 1 {
            from(&format!("/proc/{parent}/task/{parent}/children"));
        } else if let Ok(rd) = std::fs::read_dir(format!("/proc/{parent}/task")) {
            for t in rd.flatten() {
                if let Some(tid) = t.file_name().to_str() {
                    from(&format!("/proc/{parent}/task/{tid}/children"));
                }
            }
        }
        for &c in &kids {
            if let Some(pr) = read_proc(c) {
                desc.push(pr);
                frontier.push((c, pr.threads));
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

fn read_mem_total_kb() -> u64 {
    with_proc_file("/proc/meminfo", |m| {
        m.lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
    })
    .unwrap_or(0)
}

/// 5.2.5's `<platform>` element of `_status2`, made once (monit too reads it at start):
/// the kernel's name, release and version, the machine, CPUs, memory and swap in kB.
pub fn platform_xml() -> &'static str {
    static P: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    P.get_or_init(|| {
        let kernel = |f: &str| {
            std::fs::read_to_string(format!("/proc/sys/kernel/{f}"))
                .map(|t| crate::runtime::http::escape(t.trim()))
                .unwrap_or_default()
        };
        let swap: u64 = with_proc_file("/proc/meminfo", |m| {
            m.lines()
                .find_map(|l| l.strip_prefix("SwapTotal:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0);
        format!(
            "<platform><name>{}</name><release>{}</release><version>{}</version><machine>{}</machine><cpu>{}</cpu><memory>{}</memory><swap>{swap}</swap></platform>",
            kernel("ostype"),
            kernel("osrelease"),
            kernel("version"),
            std::env::consts::ARCH,
            ncpu() as u32,
            read_mem_total_kb(),
        )
    })
}

/// The machine's memory in kB (/proc/meminfo's MemTotal; the snapshot's, within one).
pub fn mem_total_kb() -> u64 {
    SNAPSHOT
        .with(|s| s.borrow().mem_total_kb)
        .unwrap_or_else(read_mem_total_kb)
}

/// A process tree's numbers as monit's XML gives them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Usage {
    pub ppid: i32,
    /// The process's threads.
    pub threads: u64,
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
        ppid: me.ppid,
        threads: me.threads,
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

/// Per check: the last cycle's CPU ticks (for a rate), each rule's recent results and
/// whether it is matched now (fired and not yet passed again).
#[derive(Debug, Default)]
pub struct Meter {
    last: Option<(std::time::Instant, u64, u64)>,
    history: Vec<Vec<bool>>,
    matched: Vec<bool>,
}

/// What one cycle found of one rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Outcome {
    pub rule: usize,
    /// The value measured (kB, percent or a count, as the rule's limit).
    pub value: f64,
    /// Fired (its condition held N of the last M cycles) or passed again after firing.
    pub fired: bool,
    /// Fired without having been matched before, or passed again: an event to post.
    pub changed: bool,
}

impl Meter {
    /// A meter whose rules were matched as `text` says (`matched_text`'s form, one `1`
    /// or `0` per rule): what a restarted watcher keeps of the one before it, so a
    /// matched rule is not posted again after each restart, as monit keeps it.
    pub fn with_matched(text: &str) -> Meter {
        Meter {
            matched: text.split_whitespace().map(|w| w == "1").collect(),
            ..Meter::default()
        }
    }

    /// Which rules are matched now, one line per rule.
    pub fn matched_text(&self) -> String {
        self.matched
            .iter()
            .map(|&m| if m { "1\n" } else { "0\n" })
            .collect()
    }

    /// Measure `pid`: the rules whose condition held for N of the last M cycles (each
    /// rule's history is cleared when it fires, as monit resets its counter), and those
    /// that fired before and passed this cycle.
    pub fn cycle(&mut self, pid: i32, rules: &[Rule]) -> Vec<Outcome> {
        let u = usage(pid);
        let now = std::time::Instant::now();
        let (cpu, totalcpu) = match self.last {
            Some((t, own, all)) => {
                let secs = now.duration_since(t).as_secs_f64();
                (
                    cpu_percent(u.ticks.saturating_sub(own), secs),
                    cpu_percent(u.ticks_total.saturating_sub(all), secs),
                )
            }
            None => (-1.0, -1.0),
        };
        self.last = Some((now, u.ticks, u.ticks_total));
        self.history.resize(rules.len(), Vec::new());
        // Only grown: the first sample (taken with no rules) keeps what was matched.
        if self.matched.len() < rules.len() {
            self.matched.resize(rules.len(), false);
        }
        let total = mem_total_kb().max(1) as f64;
        let mut out = Vec::new();
        for (i, r) in rules.iter().enumerate() {
            let kb_or_pc = |kb: u64| {
                if r.percent {
                    kb as f64 * 100.0 / total
                } else {
                    kb as f64
                }
            };
            let value = match r.what.as_str() {
                "memory" => kb_or_pc(u.kb),
                "totalmem" => kb_or_pc(u.kb_total),
                "children" => u.children as f64,
                "threads" => u.threads as f64,
                "cpu" => cpu,
                "totalcpu" => totalcpu,
                _ => continue,
            };
            // CPU needs two samples: the first cycle says nothing.
            if value < 0.0 {
                continue;
            }
            let held = r.holds(value);
            let h = &mut self.history[i];
            h.push(held);
            let m = r.cycles.1.max(1) as usize;
            if h.len() > m {
                h.remove(0);
            }
            if h.iter().filter(|&&x| x).count() >= r.cycles.0.max(1) as usize {
                h.clear();
                let changed = !std::mem::replace(&mut self.matched[i], true);
                out.push(Outcome {
                    rule: i,
                    value,
                    fired: true,
                    changed,
                });
            } else if !held && std::mem::take(&mut self.matched[i]) {
                out.push(Outcome {
                    rule: i,
                    value,
                    fired: false,
                    changed: true,
                });
            }
        }
        out
    }
}

impl Rule {
    /// What it measures, in monit's words (`total mem amount`).
    fn words(&self) -> &'static str {
        match self.what.as_str() {
            "memory" => "mem amount",
            "totalmem" => "total mem amount",
            "cpu" => "cpu usage",
            "totalcpu" => "total cpu usage",
            "children" => "children",
            "threads" => "threads",
            _ => "resource",
        }
    }

    fn shown(&self, v: f64) -> String {
        let memory = matches!(self.what.as_str(), "memory" | "totalmem");
        if self.percent || self.what.contains("cpu") {
            format!("{v:.1}%")
        } else if memory {
            crate::runtime::text::bytes_533((v * 1024.0) as u64)
        } else {
            format!("{v}")
        }
    }

    /// monit's description of a match: `total mem amount of 1.6 MB matches resource
    /// limit [total mem amount > 1 kB]`; and of a pass: `total mem amount check
    /// succeeded [current total mem amount = 1.6 MB]`.
    pub fn describe(&self, o: &Outcome) -> String {
        if o.fired {
            format!(
                "{} of {} matches resource limit [{} {} {}]",
                self.words(),
                self.shown(o.value),
                self.words(),
                self.op,
                self.shown(self.limit)
            )
        } else {
            format!(
                "{} check succeeded [current {} = {}]",
                self.words(),
                self.words(),
                self.shown(o.value)
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(what: &str, op: &str, limit: f64, percent: bool) -> Rule {
        Rule {
            what: what.into(),
            op: op.into(),
            limit,
            percent,
            cycles: (1, 1),
            action: "alert".into(),
            argv: Vec::new(),
        }
    }

    #[test]
    fn described_in_monits_words() {
        let r = rule("totalmem", ">", 1.0, false);
        let fired = Outcome {
            rule: 0,
            value: 1638.4,
            fired: true,
            changed: true,
        };
        assert_eq!(
            r.describe(&fired),
            "total mem amount of 1.6 MB matches resource limit [total mem amount > 1 kB]"
        );
        let passed = Outcome {
            fired: false,
            ..fired
        };
        assert_eq!(
            r.describe(&passed),
            "total mem amount check succeeded [current total mem amount = 1.6 MB]"
        );
        let c = rule("cpu", ">", 80.0, true);
        assert_eq!(
            c.describe(&Outcome {
                value: 93.25,
                ..fired
            }),
            "cpu usage of 93.2% matches resource limit [cpu usage > 80.0%]"
        );
        let k = rule("children", ">", 10.0, false);
        assert_eq!(
            k.describe(&Outcome {
                value: 12.0,
                ..fired
            }),
            "children of 12 matches resource limit [children > 10]"
        );
    }
}
