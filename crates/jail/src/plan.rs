//! What to build around the program: bpm's walls for one process of one job, read from
//! tend-jail's options, checked before anything is changed on the machine.

use crate::caps;
use std::path::{Path, PathBuf};

/// BOSH's root inside the jail: every job path is under it.
pub const VCAP: &str = "/var/vcap";

/// bpm's masked paths: hidden behind an empty read-only tmpfs (a directory) or /dev/null
/// (a file).
pub const MASKED: [&str; 7] = [
    "/etc/sv",
    "/proc/kcore",
    "/proc/latency_stats",
    "/proc/sched_debug",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/sys/firmware",
];

/// bpm's read-only paths.
pub const READ_ONLY: [&str; 6] = [
    "/proc/asound",
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/sys",
    "/proc/sysrq-trigger",
];

/// One `additional_volumes` (or `unsafe.unrestricted_volumes`) entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Volume {
    pub path: PathBuf,
    pub writable: bool,
    pub exec: bool,
    /// Bind it only: do not create or chown it.
    pub mount_only: bool,
    /// bpm's `shared`: the host path is made a shared mount point (bound onto itself
    /// first if it is not one) and the jail's bind of it is its peer, so a mount made
    /// under it on either side appears on the other. bpm does this for
    /// `additional_volumes` only.
    pub shared: bool,
}

/// Everything tend-jail is told. `vcap_root` is where `/var/vcap` is on the host (the
/// same path but for tests and images that keep BOSH's tree elsewhere).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub job: String,
    pub user: String,
    pub caps: u64,
    pub volumes: Vec<Volume>,
    pub unrestricted: Vec<Volume>,
    pub privileged: bool,
    pub host_pid: bool,
    pub ephemeral_disk: bool,
    pub persistent_disk: bool,
    pub open_files: Option<u64>,
    pub core_file_size: Option<u64>,
    pub memory: Option<u64>,
    pub processes: Option<u64>,
    pub cgroup: Option<PathBuf>,
    pub workdir: Option<PathBuf>,
    /// bpm's stop (`-s`): on this signal, forward it; 15 s later SIGQUIT; 2 s later
    /// SIGKILL to the whole pid namespace.
    pub shutdown_signal: Option<i32>,
    pub vcap_root: PathBuf,
    /// Where the new root is built (an empty directory; a tmpfs is mounted on it inside
    /// the jail's own mount namespace, so the host never sees what is built there).
    pub rootfs: PathBuf,
}

impl Plan {
    pub fn new(job: &str) -> Plan {
        Plan {
            job: job.to_string(),
            user: "vcap".into(),
            caps: 0,
            volumes: Vec::new(),
            unrestricted: Vec::new(),
            privileged: false,
            host_pid: false,
            ephemeral_disk: false,
            persistent_disk: false,
            open_files: None,
            core_file_size: None,
            memory: None,
            processes: None,
            cgroup: None,
            workdir: None,
            shutdown_signal: None,
            vcap_root: PathBuf::from(VCAP),
            rootfs: PathBuf::from("/run/tend-jail"),
        }
    }

    /// The host path of a path inside the jail (`/var/vcap/...` moves to `vcap_root`).
    pub fn host(&self, inside: &Path) -> PathBuf {
        match inside.strip_prefix(VCAP) {
            Ok(rel) if rel.as_os_str().is_empty() => self.vcap_root.clone(),
            Ok(rel) => self.vcap_root.join(rel),
            Err(_) => inside.to_path_buf(),
        }
    }

    fn vcap(&self, parts: &[&str]) -> PathBuf {
        let mut p = PathBuf::from(VCAP);
        for x in parts {
            p.push(x);
        }
        p
    }

    pub fn tmp_dir(&self) -> PathBuf {
        self.vcap(&["data", &self.job, "tmp"])
    }
    pub fn data_dir(&self) -> PathBuf {
        self.vcap(&["data", &self.job])
    }
    pub fn store_dir(&self) -> PathBuf {
        self.vcap(&["store", &self.job])
    }
    pub fn log_dir(&self) -> PathBuf {
        self.vcap(&["sys", "log", &self.job])
    }
    pub fn job_dir(&self) -> PathBuf {
        self.vcap(&["jobs", &self.job])
    }

    /// bpm's defaults for the four variables it sets when the job does not.
    pub fn default_env(&self) -> [(&'static str, String); 4] {
        [
            ("TMPDIR", self.tmp_dir().display().to_string()),
            ("LANG", "en_US.UTF-8".into()),
            (
                "PATH",
                format!(
                    "{}/bin:/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin:.",
                    self.job_dir().display()
                ),
            ),
            ("HOME", self.data_dir().display().to_string()),
        ]
    }

    /// The working directory: the job's directory unless given.
    pub fn cwd(&self) -> PathBuf {
        self.workdir.clone().unwrap_or_else(|| self.job_dir())
    }

    /// The binds of the new root, inside path → host path, parents before children (bpm
    /// sorts by depth), the first of two for one target kept, as bpm's dedup does.
    pub fn binds(&self, present: impl Fn(&Path) -> bool) -> Vec<Bind> {
        let mut v: Vec<Bind> = Vec::new();
        let mut add = |inside: PathBuf, host: PathBuf, writable: bool, exec: bool, shared| {
            if !v.iter().any(|b| b.inside == inside) {
                v.push(Bind {
                    inside,
                    host,
                    writable,
                    exec,
                    shared,
                });
            }
        };
        for d in ["/bin", "/etc", "/lib", "/lib64", "/sbin", "/usr"] {
            if present(Path::new(d)) {
                add(d.into(), d.into(), false, true, false);
            }
        }
        for d in ["/run/resolvconf", "/run/systemd/resolve"] {
            if present(Path::new(d)) {
                add(d.into(), d.into(), false, false, false);
            }
        }
        let tmp = self.host(&self.tmp_dir());
        add("/tmp".into(), tmp.clone(), true, false, false);
        add("/var/tmp".into(), tmp.clone(), true, false, false);
        add(self.tmp_dir(), tmp, true, false, false);
        for inside in [
            self.vcap(&["data", "packages"]),
            self.vcap(&["packages"]),
            self.job_dir(),
        ] {
            add(inside.clone(), self.host(&inside), false, true, false);
        }
        add(
            self.log_dir(),
            self.host(&self.log_dir()),
            true,
            false,
            false,
        );
        if self.ephemeral_disk {
            add(
                self.data_dir(),
                self.host(&self.data_dir()),
                true,
                false,
                false,
            );
        }
        if self.persistent_disk {
            add(
                self.store_dir(),
                self.host(&self.store_dir()),
                true,
                false,
                false,
            );
        }
        for vol in &self.volumes {
            add(
                vol.path.clone(),
                self.host(&vol.path),
                vol.writable,
                vol.exec,
                vol.shared,
            );
        }
        // bpm makes only additional volumes shared.
        for vol in &self.unrestricted {
            add(
                vol.path.clone(),
                vol.path.clone(),
                vol.writable,
                vol.exec,
                false,
            );
        }
        v.sort_by_key(|b| b.inside.components().count());
        v
    }

    /// Whether `p` is at or below one of bpm's own job mounts (its `boshMounts`, by
    /// path component): an unrestricted volume there is dropped, as bpm drops it.
    pub fn under_own_mounts(&self, p: &Path) -> bool {
        self.bosh_mounts().iter().any(|m| p.starts_with(m))
    }

    fn bosh_mounts(&self) -> Vec<PathBuf> {
        let mut m = vec![
            PathBuf::from("/tmp"),
            PathBuf::from("/var/tmp"),
            self.tmp_dir(),
            self.vcap(&["data", "packages"]),
            self.vcap(&["packages"]),
            self.job_dir(),
            self.log_dir(),
        ];
        if self.ephemeral_disk {
            m.push(self.data_dir());
        }
        if self.persistent_disk {
            m.push(self.store_dir());
        }
        m
    }

    /// The plan with `unsafe.unrestricted_volumes` expanded as bpm expands them at each
    /// start: each path a Go `filepath.Glob` pattern (a pattern that matches nothing adds
    /// no volume, no error), each match a volume with the pattern's flags, matches at or
    /// below one of bpm's own job mounts dropped. Checked patterns only ([`Plan::check`]).
    pub fn expand_unrestricted(&self) -> Plan {
        use tend_sys::glob::{Dialect, expand};
        let mut plan = self.clone();
        plan.unrestricted = Vec::new();
        for vol in &self.unrestricted {
            let pattern = vol.path.to_string_lossy();
            for path in expand(&pattern, Path::new("/"), Dialect::Go).unwrap_or_default() {
                if !self.under_own_mounts(&path) {
                    plan.unrestricted.push(Volume {
                        path,
                        ..vol.clone()
                    });
                }
            }
        }
        plan
    }

    /// bpm's checks of the description, before anything is touched.
    pub fn check(&self) -> Result<(), String> {
        for vol in &self.volumes {
            let p = &vol.path;
            if !canonical(p) {
                return Err(format!(
                    "volume {}: not a canonical absolute path (no relative, . or .. part)",
                    p.display()
                ));
            }
            if *p == self.data_dir() || *p == self.store_dir() {
                return Err(format!(
                    "volume {}: it is the job's default data or store directory",
                    p.display()
                ));
            }
            let inside = |prefix: &[&str]| {
                let base = self.vcap(prefix);
                p.starts_with(&base) && *p != base
            };
            if !inside(&["data"]) && !inside(&["store"]) && !inside(&["sys", "run"]) {
                return Err(format!(
                    "volume {}: not under /var/vcap/data, /var/vcap/store or /var/vcap/sys/run",
                    p.display()
                ));
            }
        }
        for vol in &self.unrestricted {
            if !canonical(&vol.path) {
                return Err(format!(
                    "volume {}: not a canonical absolute path (no relative, . or .. part)",
                    vol.path.display()
                ));
            }
            tend_sys::glob::check(&vol.path.to_string_lossy())
                .map_err(|e| format!("unrestricted volume {e}"))?;
        }
        if let Some(w) = &self.workdir
            && !canonical(w)
        {
            return Err(format!(
                "workdir {}: not a canonical absolute path",
                w.display()
            ));
        }
        Ok(())
    }

    /// The capabilities the program gets: its own, or bpm's privileged set.
    pub fn capabilities(&self) -> u64 {
        if self.privileged {
            self.caps | caps::PRIVILEGED
        } else {
            self.caps
        }
    }
}

/// One bind of the new root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bind {
    pub inside: PathBuf,
    pub host: PathBuf,
    pub writable: bool,
    pub exec: bool,
    /// A peer of the host's (shared) mount of `host`, not a private copy.
    pub shared: bool,
}

/// Absolute, and no `.`, `..`, empty or trailing part (Go's filepath.Clean would leave
/// it as it is, which is bpm's test).
pub fn canonical(p: &Path) -> bool {
    let s = p.as_os_str().as_encoded_bytes();
    s == b"/"
        || (s.first() == Some(&b'/')
            && s[1..]
                .split(|&b| b == b'/')
                .all(|part| !part.is_empty() && part != b"." && part != b".."))
}

/// A volume as the command line gives it: `PATH` or `PATH:FLAGS`, flags from `w`
/// (writable), `x` (allow executions), `m` (mount only), `s` (shared).
pub fn parse_volume(s: &str) -> Option<Volume> {
    let (path, flags) = match s.rsplit_once(':') {
        Some((p, f)) if f.bytes().all(|b| b"wxms".contains(&b)) => (p, f),
        _ => (s, ""),
    };
    if path.is_empty() || path.contains(':') {
        return None;
    }
    Some(Volume {
        path: PathBuf::from(path),
        writable: flags.contains('w'),
        exec: flags.contains('x'),
        mount_only: flags.contains('m'),
        shared: flags.contains('s'),
    })
}

/// tend-jail's option letters, getopt-style (the man page's SYNOPSIS).
pub const OPTIONS: &str = "f:j:u:c:v:V:PHepn:C:m:t:g:d:s:R:r:";

impl Plan {
    /// Take one option (not `-f` or `-j`, which the caller reads first).
    pub fn take(&mut self, c: char, v: Option<&str>) -> Result<(), String> {
        let v = v.unwrap_or("");
        let number = |what: &str| {
            v.parse::<u64>()
                .map_err(|_| format!("invalid {what}: {v}: a number expected"))
        };
        match c {
            'u' => self.user = v.to_string(),
            'c' => match caps::bit(v) {
                Some(b) => self.caps |= b,
                None => return Err(format!("unknown capability: {v}")),
            },
            'v' | 'V' => {
                let vol = parse_volume(v).ok_or_else(|| format!("invalid volume: {v}"))?;
                if c == 'v' {
                    self.volumes.push(vol);
                } else {
                    self.unrestricted.push(vol);
                }
            }
            'P' => self.privileged = true,
            'H' => self.host_pid = true,
            'e' => self.ephemeral_disk = true,
            'p' => self.persistent_disk = true,
            'n' => self.open_files = Some(number("open files limit")?),
            'C' => self.core_file_size = Some(number("core file size")?),
            'm' => self.memory = Some(number("memory limit")?),
            't' => self.processes = Some(number("processes limit")?),
            'g' => self.cgroup = Some(PathBuf::from(v)),
            'd' => self.workdir = Some(PathBuf::from(v)),
            's' => match tend_sys::signals::parse(v) {
                Some(n) if n == libc::SIGTERM || n == libc::SIGINT => {
                    self.shutdown_signal = Some(n)
                }
                _ => return Err(format!("invalid shutdown signal: {v}: TERM or INT")),
            },
            'R' => self.vcap_root = PathBuf::from(v),
            'r' => self.rootfs = PathBuf::from(v),
            _ => return Err(format!("unknown option -{c}")),
        }
        Ok(())
    }

    /// The options that say this plan to tend-jail (what tend-jobs writes), `-j` first.
    pub fn args(&self) -> Vec<String> {
        let mut a = vec!["-j".to_string(), self.job.clone()];
        let mut opt = |c: char, v: String| {
            a.push(format!("-{c}"));
            a.push(v);
        };
        if self.user != "vcap" {
            opt('u', self.user.clone());
        }
        for n in caps::names(self.caps) {
            opt('c', n.to_string());
        }
        let vol = |v: &Volume| {
            let flags: String = [
                (v.writable, 'w'),
                (v.exec, 'x'),
                (v.mount_only, 'm'),
                (v.shared, 's'),
            ]
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, f)| *f)
            .collect();
            let p = v.path.display().to_string();
            if flags.is_empty() {
                p
            } else {
                format!("{p}:{flags}")
            }
        };
        for v in &self.volumes {
            opt('v', vol(v));
        }
        for v in &self.unrestricted {
            opt('V', vol(v));
        }
        for (n, v) in [
            ('n', self.open_files),
            ('C', self.core_file_size),
            ('m', self.memory),
            ('t', self.processes),
        ] {
            if let Some(v) = v {
                opt(n, v.to_string());
            }
        }
        if let Some(g) = &self.cgroup {
            opt('g', g.display().to_string());
        }
        if let Some(d) = &self.workdir {
            opt('d', d.display().to_string());
        }
        if let Some(s) = self.shutdown_signal.and_then(tend_sys::signals::name) {
            opt('s', s.trim_start_matches("SIG").to_string());
        }
        for (on, f) in [
            (self.privileged, "-P"),
            (self.host_pid, "-H"),
            (self.ephemeral_disk, "-e"),
            (self.persistent_disk, "-p"),
        ] {
            if on {
                a.push(f.to_string());
            }
        }
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_paths() {
        for good in ["/", "/var/vcap/data/x", "/a/b.c", "/a/..b"] {
            assert!(canonical(Path::new(good)), "{good}");
        }
        for bad in ["a/b", "/a/../b", "/a/./b", "/a//b", "/a/b/", "/..", ""] {
            assert!(!canonical(Path::new(bad)), "{bad}");
        }
    }

    #[test]
    fn volumes_are_checked_as_bpm_does() {
        let mut p = Plan::new("web");
        p.volumes = vec![parse_volume("/var/vcap/data/web/x:wx").unwrap()];
        assert_eq!(p.check(), Ok(()));
        for bad in [
            "/etc/passwd",
            "/var/vcap/data/web",
            "/var/vcap/store/web",
            "/var/vcap/data/../../etc",
            "var/vcap/data/x",
            "/var/vcap/jobs/other",
        ] {
            p.volumes = vec![parse_volume(bad).unwrap()];
            assert!(p.check().is_err(), "{bad}");
        }
    }

    /// bpm's filterVolumesUnderBoshMounts: a match at or below the job's own mounts is
    /// dropped, a sibling whose name merely starts the same is kept.
    #[test]
    fn unrestricted_matches_under_bosh_mounts_are_dropped() {
        let mut p = Plan::new("web");
        for own in [
            "/tmp",
            "/var/tmp/x",
            "/var/vcap/jobs/web",
            "/var/vcap/jobs/web/x",
        ] {
            assert!(p.under_own_mounts(Path::new(own)), "{own}");
        }
        for other in ["/var/vcap/jobs/web-adapter", "/var/vcap/data/web", "/srv"] {
            assert!(!p.under_own_mounts(Path::new(other)), "{other}");
        }
        p.ephemeral_disk = true;
        assert!(p.under_own_mounts(Path::new("/var/vcap/data/web/x")));
        p.unrestricted = vec![parse_volume("/t[m]p").unwrap()];
        assert_eq!(p.expand_unrestricted().unrestricted, Vec::<Volume>::new());
    }

    #[test]
    fn binds_in_depth_order_first_wins() {
        let mut p = Plan::new("web");
        p.ephemeral_disk = true;
        p.volumes = vec![parse_volume("/var/vcap/data/web/tmp:m").unwrap()];
        let b = p.binds(|_| true);
        let depths: Vec<usize> = b.iter().map(|b| b.inside.components().count()).collect();
        assert!(depths.windows(2).all(|w| w[0] <= w[1]));
        let tmp: Vec<_> = b
            .iter()
            .filter(|b| b.inside == Path::new("/var/vcap/data/web/tmp"))
            .collect();
        assert_eq!(tmp.len(), 1);
        assert!(tmp[0].writable && !tmp[0].exec);
    }
}

#[cfg(test)]
mod options {
    use super::*;

    /// What tend-jobs writes (`args`) reads back (`take`) as the same plan.
    #[test]
    fn args_read_back_as_the_same_plan() {
        let mut p = Plan::new("web");
        p.user = "nobody".into();
        p.caps = caps::bit("NET_BIND_SERVICE").unwrap() | caps::bit("SYS_NICE").unwrap();
        p.volumes = vec![parse_volume("/var/vcap/data/x:wxms").unwrap()];
        p.unrestricted = vec![parse_volume("/srv").unwrap()];
        p.privileged = true;
        p.host_pid = true;
        p.ephemeral_disk = true;
        p.persistent_disk = true;
        p.open_files = Some(10);
        p.core_file_size = Some(0);
        p.memory = Some(1 << 20);
        p.processes = Some(5);
        p.cgroup = Some("tend/web".into());
        p.workdir = Some("/var/vcap/jobs/web/x".into());
        p.shutdown_signal = Some(libc::SIGINT);
        let args = p.args();
        assert_eq!(args[..2], ["-j", "web"]);
        let mut q = Plan::new("web");
        let mut it = args[2..].iter();
        while let Some(o) = it.next() {
            let c = o.chars().nth(1).unwrap();
            let takes = OPTIONS.contains(&format!("{c}:"));
            let v = if takes {
                it.next().map(String::as_str)
            } else {
                None
            };
            q.take(c, v).unwrap();
        }
        assert_eq!(p, q);
    }
}
