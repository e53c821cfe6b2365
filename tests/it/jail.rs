//! tend-jail: the walls bpm builds with runc, built by tend-jail, compared with what runc
//! gives the same probe under the spec bpm's spec builder would write for the same
//! bpm.yml shape (tests/it/jail/probe.c, our own static program).
//!
//! cgroup v2 limits read back and aarch64's walls: in a qemu guest (tests/vm/jail.sh),
//! since the test machines' cgroup v2 hierarchy has no memory or pids controller (they
//! are cgroup v1's) and they are x86_64 (vm_* below).
//!
//! The probe tries `mount` on /tmp: run it only inside a jail (on the host, as root, it
//! would cover the machine's /tmp).

use crate::common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const JOB: &str = "web";

/// The probe, built once per test process with gcc -static; None (and a skip) without gcc.
fn probe() -> Option<&'static Path> {
    static PROBE: OnceLock<Option<PathBuf>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
                .join(format!("jail-probe-{}", std::process::id()));
            let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/jail/probe.c");
            let ok = Command::new("gcc")
                .args(["-static", "-O1", "-o"])
                .arg(&out)
                .arg(&src)
                .arg("-lpthread")
                .status()
                .is_ok_and(|s| s.success());
            ok.then_some(out)
        })
        .as_deref()
}

/// Root and namespaces are what this needs; a machine without them skips.
fn can_jail() -> bool {
    if !nix::unistd::geteuid().is_root() {
        skip("tend-jail needs root");
        return false;
    }
    if probe().is_none() {
        skip("no gcc -static to build the probe");
        return false;
    }
    true
}

/// A BOSH layout in a scratch directory: /var/vcap's tree, the probe in the job's bin.
struct Vcap {
    scratch: Scratch,
}

impl Vcap {
    fn new(name: &str) -> Vcap {
        let scratch = Scratch::new(name);
        // store/other-job: a mount_only volume, made by someone else.
        for d in ["data/packages", "packages", "sys/log", "store/other-job"] {
            std::fs::create_dir_all(scratch.join("vcap").join(d)).unwrap();
        }
        let bin = scratch.join("vcap/jobs").join(JOB).join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::copy(probe().unwrap(), bin.join("probe")).unwrap();
        Vcap { scratch }
    }

    fn root(&self) -> PathBuf {
        self.scratch.join("vcap")
    }

    fn host(&self, inside: &str) -> PathBuf {
        self.root().join(inside.strip_prefix("/var/vcap/").unwrap())
    }

    fn jail<S: AsRef<std::ffi::OsStr>>(
        &self,
        args: &[S],
        probe_args: &[&str],
    ) -> std::process::Output {
        let mut c = cmd("tend-jail");
        c.args(["-j", JOB, "-u", "nobody", "-R"])
            .arg(self.root())
            .args(args)
            .arg(format!("/var/vcap/jobs/{JOB}/bin/probe"))
            .args(probe_args);
        run(c)
    }
}

/// One bpm.yml shape: the tend-jail options tend-jobs writes for it, and the pieces of
/// the OCI spec bpm's spec builder writes for it.
#[derive(Default, Clone)]
struct Shape {
    caps: &'static [&'static str],
    open_files: Option<u64>,
    volumes: &'static [(&'static str, &'static str)],
    unrestricted: &'static [(&'static str, &'static str)],
    privileged: bool,
    host_pid: bool,
    ephemeral: bool,
    persistent: bool,
    /// `unsafe.unrestricted_volumes` patterns: the pattern, its flags, and what bpm's
    /// filepath.Glob expansion and filter give (what its spec binds).
    globbed: Vec<(String, &'static str, Vec<PathBuf>)>,
}

impl Shape {
    fn args(&self) -> Vec<String> {
        let mut a = Vec::new();
        for c in self.caps {
            a.extend(["-c".to_string(), c.to_string()]);
        }
        if let Some(n) = self.open_files {
            a.extend(["-n".to_string(), n.to_string()]);
        }
        for (p, f) in self.volumes {
            a.extend(["-v".to_string(), format!("{p}:{f}")]);
        }
        for (p, f) in self.unrestricted {
            a.extend(["-V".to_string(), format!("{p}:{f}")]);
        }
        for (p, f, _) in &self.globbed {
            a.extend(["-V".to_string(), format!("{p}:{f}")]);
        }
        for (on, f) in [
            (self.privileged, "-P"),
            (self.host_pid, "-H"),
            (self.ephemeral, "-e"),
            (self.persistent, "-p"),
        ] {
            if on {
                a.push(f.into());
            }
        }
        a
    }

    /// The spec, as bpm's spec builder and runc adapter write it, as JSON text.
    fn spec(&self, v: &Vcap, probe_args: &[&str]) -> String {
        let q = |s: &str| format!("\"{s}\"");
        let list = |v: &[String]| format!("[{}]", v.join(","));
        let privileged = self.privileged;
        let mut caps: Vec<String> = self.caps.iter().map(|c| q(&format!("CAP_{c}"))).collect();
        if privileged {
            // bpm's 38, less those this machine withholds from us (a container's bounding
            // set): runc cannot give them either, and tend-jail gives what it has.
            let status = std::fs::read_to_string("/proc/self/status").unwrap();
            let have = status
                .lines()
                .find_map(|l| l.strip_prefix("CapPrm:"))
                .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
                .unwrap();
            caps.extend(
                tend_jail::caps::names(tend_jail::caps::PRIVILEGED & have)
                    .map(|c| q(&format!("CAP_{c}"))),
            );
        }
        let nosuid = |opts: &[&str]| -> String {
            list(
                &opts
                    .iter()
                    .filter(|o| !(privileged && **o == "nosuid"))
                    .map(|o| q(o))
                    .collect::<Vec<_>>(),
            )
        };
        let mut mounts = vec![
            r#"{"destination":"/proc","type":"proc","source":"proc"}"#.to_string(),
            format!(
                r#"{{"destination":"/dev","type":"tmpfs","source":"tmpfs","options":{}}}"#,
                nosuid(&["nosuid", "noexec", "mode=755", "size=65536k"])
            ),
            format!(
                r#"{{"destination":"/dev/pts","type":"devpts","source":"devpts","options":{}}}"#,
                nosuid(&[
                    "nosuid",
                    "noexec",
                    "newinstance",
                    "ptmxmode=0666",
                    "mode=0620",
                    "gid=5"
                ])
            ),
            format!(
                r#"{{"destination":"/dev/shm","type":"tmpfs","source":"shm","options":{}}}"#,
                nosuid(&["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"])
            ),
            format!(
                r#"{{"destination":"/dev/mqueue","type":"mqueue","source":"mqueue","options":{}}}"#,
                nosuid(&["nosuid", "noexec", "nodev"])
            ),
            format!(
                r#"{{"destination":"/sys","type":"sysfs","source":"sysfs","options":{}}}"#,
                nosuid(&["nosuid", "noexec", "nodev", "ro"])
            ),
        ];
        let mut bind = |src: &Path, dst: &str, rbind: bool, exec: bool, rw: bool| {
            let mut o = vec![if rbind { "rbind" } else { "bind" }];
            if !exec {
                o.push("noexec");
            }
            o.extend(["nosuid", "nodev", if rw { "rw" } else { "ro" }]);
            mounts.push(format!(
                r#"{{"destination":"{dst}","type":"bind","source":"{}","options":{}}}"#,
                src.display(),
                nosuid(&o)
            ));
        };
        for d in ["/bin", "/etc", "/lib", "/lib64", "/sbin", "/usr"] {
            if Path::new(d).exists() {
                bind(Path::new(d), d, false, true, false);
            }
        }
        let tmp = format!("/var/vcap/data/{JOB}/tmp");
        for dst in ["/tmp", "/var/tmp", tmp.as_str()] {
            bind(&v.host(&tmp), dst, true, false, true);
        }
        for p in [
            "/var/vcap/data/packages",
            "/var/vcap/packages",
            &format!("/var/vcap/jobs/{JOB}"),
        ] {
            bind(&v.host(p), p, false, true, false);
        }
        let log = format!("/var/vcap/sys/log/{JOB}");
        bind(&v.host(&log), &log, true, false, true);
        if self.ephemeral {
            let d = format!("/var/vcap/data/{JOB}");
            bind(&v.host(&d), &d, true, false, true);
        }
        if self.persistent {
            let d = format!("/var/vcap/store/{JOB}");
            bind(&v.host(&d), &d, true, false, true);
        }
        for (p, f) in self.volumes {
            bind(&v.host(p), p, true, f.contains('x'), f.contains('w'));
        }
        for (p, f) in self.unrestricted {
            bind(Path::new(p), p, true, f.contains('x'), f.contains('w'));
        }
        for (_, f, paths) in &self.globbed {
            for p in paths {
                bind(
                    p,
                    &p.display().to_string(),
                    true,
                    f.contains('x'),
                    f.contains('w'),
                );
            }
        }
        let mut ns = vec![q_ns("ipc"), q_ns("mount"), q_ns("uts")];
        if !self.host_pid {
            ns.push(q_ns("pid"));
        }
        let masked = [
            "/etc/sv",
            "/proc/kcore",
            "/proc/latency_stats",
            "/proc/sched_debug",
            "/proc/timer_list",
            "/proc/timer_stats",
            "/sys/firmware",
        ];
        let ro = [
            "/proc/asound",
            "/proc/bus",
            "/proc/fs",
            "/proc/irq",
            "/proc/sys",
            "/proc/sysrq-trigger",
        ];
        let paths = |p: &[&str]| {
            if privileged {
                "[]".to_string()
            } else {
                list(&p.iter().map(|s| q(s)).collect::<Vec<_>>())
            }
        };
        let seccomp = if privileged {
            String::new()
        } else {
            // bpm's list allows clone3 (tend-jail answers it ENOSYS, the issue's change).
            let names: Vec<String> = tend_jail::seccomp::allowed()
                .map(|(n, _)| q(n))
                .chain([q("clone3")])
                .collect();
            format!(
                r#","seccomp":{{"defaultAction":"SCMP_ACT_ERRNO","architectures":["SCMP_ARCH_X86_64","SCMP_ARCH_X86","SCMP_ARCH_X32"],"syscalls":[{{"names":{},"action":"SCMP_ACT_ALLOW"}},{{"names":["clone"],"action":"SCMP_ACT_ALLOW","args":[{{"index":0,"value":2114060288,"valueTwo":0,"op":"SCMP_CMP_MASKED_EQ"}}]}},{{"names":["personality"],"action":"SCMP_ACT_ALLOW","args":[{{"index":0,"value":0,"op":"SCMP_CMP_EQ"}}]}}]}}"#,
                list(&names)
            )
        };
        let rlimits = match self.open_files {
            Some(n) => format!(r#","rlimits":[{{"type":"RLIMIT_NOFILE","hard":{n},"soft":{n}}}]"#),
            None => String::new(),
        };
        let (uid, gid) = if privileged { (0, 0) } else { (65534, 65534) };
        let mut args = vec![q(&format!("/var/vcap/jobs/{JOB}/bin/probe"))];
        args.extend(probe_args.iter().map(|a| q(a)));
        format!(
            r#"{{"ociVersion":"1.0.2","process":{{"terminal":false,"user":{{"uid":{uid},"gid":{gid}}},"args":{},"env":["PATH=/usr/bin:/bin"],"cwd":"/var/vcap/jobs/{JOB}","capabilities":{{"bounding":{c},"inheritable":{c},"permitted":{c},"ambient":{c}}},"noNewPrivileges":{nnp}{rlimits}}},"root":{{"path":"rootfs"}},"mounts":{},"linux":{{"namespaces":{},"maskedPaths":{},"readonlyPaths":{},"rootfsPropagation":"private"{seccomp}}}}}"#,
            list(&args),
            list(&mounts),
            list(&ns),
            paths(&masked),
            paths(&ro),
            c = list(&caps),
            nnp = !privileged,
        )
    }

    /// Run the probe under `runc run` with the spec; None when runc cannot run here.
    fn runc(&self, v: &Vcap, probe_args: &[&str]) -> Option<String> {
        if !have("runc") {
            skip("runc is not installed");
            return None;
        }
        // bpm's prerequisites, made as tend-jail makes them.
        let pre = v.jail(&self.args(), &["prepare-only"]);
        assert!(pre.status.success(), "{pre:?}");
        let bundle = v.scratch.join("bundle");
        std::fs::create_dir_all(bundle.join("rootfs")).unwrap();
        std::fs::write(bundle.join("config.json"), self.spec(v, probe_args)).unwrap();
        let id = format!(
            "tend-jail-test-{}-{}",
            std::process::id(),
            v.scratch.path.file_name().unwrap().to_string_lossy()
        );
        let o = Command::new("runc")
            .arg("--root")
            .arg(v.scratch.join("runc"))
            .args(["run", "--bundle"])
            .arg(&bundle)
            .arg(&id)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        if !o.status.success() {
            skip(format!(
                "runc cannot run the spec here: {}",
                text(&o.stderr).trim()
            ));
            return None;
        }
        Some(text(&o.stdout))
    }
}

fn q_ns(t: &str) -> String {
    format!(r#"{{"type":"{t}"}}"#)
}

/// The probe's report as key → value, the namespace inodes as "host"/"own".
fn report(out: &str) -> BTreeMap<String, String> {
    let host_ns = |t: &str| std::fs::read_link(format!("/proc/self/ns/{t}")).unwrap();
    out.lines()
        .filter_map(|l| {
            // /proc/self/limits: "Max open files   SOFT   HARD   UNITS", no colon.
            if l.starts_with("Max ") {
                let mut w = l.split_whitespace().rev().skip(1);
                let (hard, soft) = (w.next()?.to_string(), w.next()?.to_string());
                return Some((l.split("  ").next()?.to_string(), format!("{soft} {hard}")));
            }
            let (k, v) = l.split_once(':')?;
            let v = v.trim().to_string();
            if let Some(t) = k.strip_prefix("ns ") {
                let same = host_ns(t).to_string_lossy() == v;
                return Some((k.to_string(), if same { "host" } else { "own" }.to_string()));
            }
            Some((k.to_string(), v))
        })
        .collect()
}

/// What must be equal between runc and tend-jail: the status lines, limits, namespaces,
/// the calls, and the flags of every mount point both have under the paths bpm binds.
fn compare(shape: &Shape, name: &str) {
    if !can_jail() {
        return;
    }
    let v = Vcap::new(name);
    compare_at(shape, &v, name);
}

/// [`compare`] in a layout the caller made; the two reports (runc's, tend-jail's), None
/// when runc cannot run here. A mount's propagation is compared only for bpm's shared
/// volumes (elsewhere runc leaves the host's, and tend-jail makes every mount private).
fn compare_at(
    shape: &Shape,
    v: &Vcap,
    name: &str,
) -> Option<(BTreeMap<String, String>, BTreeMap<String, String>)> {
    let host = std::process::id().to_string();
    let probe_args = [host.as_str()];
    let runc = shape.runc(v, &probe_args)?;
    let o = v.jail(&shape.args(), &probe_args);
    assert!(o.status.success(), "{o:?}");
    let (theirs, ours) = (report(&runc), report(&text(&o.stdout)));
    for k in [
        "Max open files",
        "CapBnd",
        "NoNewPrivs",
        "ns pid",
        "mount /usr",
        "call mount",
    ] {
        assert!(
            theirs.contains_key(k),
            "{name}: the probe's report lacks {k}:\n{runc}"
        );
    }
    let mut diffs = Vec::new();
    for (k, want) in &theirs {
        // clone3 is the issue's ENOSYS where bpm's spec would let runc give EPERM; cgroup
        // paths are runc's own.
        if k == "call clone3" || k == "cgroup" || k == "mount /" {
            continue;
        }
        // Propagation is compared only for shared volumes: every other mount in the jail is
        // private by design (tend-jail(8), NOTES).
        if let Some(p) = k.strip_prefix("prop ")
            && !shape
                .volumes
                .iter()
                .any(|(vol, f)| *vol == p && f.contains('s'))
        {
            continue;
        }
        // Other containers' file systems on this machine's Docker engine come and go
        // between the two runs (another suite's, here).
        if k.starts_with("mount /var/lib/docker/") || k.starts_with("mount /run/docker/") {
            continue;
        }
        match ours.get(k) {
            Some(got) if got == want => {}
            got => diffs.push(format!("{k}: runc {want:?}, tend-jail {got:?}")),
        }
    }
    assert!(
        diffs.is_empty(),
        "{name}: differs from runc:\n{}\nrunc:\n{runc}\ntend-jail:\n{}",
        diffs.join("\n"),
        text(&o.stdout)
    );
    Some((theirs, ours))
}

#[test]
fn plain_as_runc() {
    compare(&Shape::default(), "plain");
}

#[test]
fn open_files_as_runc() {
    compare(
        &Shape {
            open_files: Some(4096),
            ..Shape::default()
        },
        "open-files",
    );
}

#[test]
fn additional_volumes_as_runc() {
    compare(
        &Shape {
            volumes: &[
                ("/var/vcap/data/shared/w", "w"),
                ("/var/vcap/data/shared/x", "x"),
                ("/var/vcap/store/other-job", "wm"),
            ],
            ..Shape::default()
        },
        "volumes",
    );
}

#[test]
fn unrestricted_volumes_as_runc() {
    compare(
        &Shape {
            unrestricted: &[("/var/lib", "")],
            ..Shape::default()
        },
        "unrestricted",
    );
}

/// `unsafe.unrestricted_volumes` as bpm expands them (Go's filepath.Glob at each start):
/// `*` takes dot names and files too, a pattern that matches nothing adds no volume (and
/// is no error), and a match at or below one of bpm's own mounts (/tmp here) is dropped.
#[test]
fn unrestricted_volume_globs_as_runc() {
    if !can_jail() {
        return;
    }
    let v = Vcap::new("globs");
    let unr = v.scratch.join("unr");
    for d in ["a1", "a2", ".hid", "b"] {
        std::fs::create_dir_all(unr.join(d)).unwrap();
    }
    std::fs::write(unr.join("f"), "file\n").unwrap();
    let expanded: Vec<PathBuf> = [".hid", "a1", "a2", "b", "f"]
        .iter()
        .map(|n| unr.join(n))
        .collect();
    let shape = Shape {
        globbed: vec![
            (format!("{}/*", unr.display()), "w", expanded.clone()),
            (format!("{}/none/*", v.scratch.path.display()), "", vec![]),
            ("/t[m]p".to_string(), "", vec![]),
        ],
        ..Shape::default()
    };
    let Some((_, ours)) = compare_at(&shape, &v, "globs") else {
        return;
    };
    for p in &expanded {
        let flags = ours.get(&format!("mount {}", p.display()));
        assert!(
            flags.is_some_and(|f| f.starts_with("rw,")),
            "{}: {flags:?}",
            p.display()
        );
    }
    assert!(!ours.keys().any(|k| k.contains("/none")), "{ours:?}");
    assert_eq!(
        ours.get("mount /tmp").map(String::as_str),
        Some("rw,nosuid,nodev,noexec,relatime"),
        "/tmp is the job's tmp, not the host's"
    );
}

/// The host's propagation of the mount at `path` (its optional fields: `shared:N`...).
fn host_propagation(path: &Path) -> Option<String> {
    let real = std::fs::canonicalize(path).ok()?;
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    info.lines().rev().find_map(|l| {
        let (left, _) = l.split_once(" - ")?;
        let f: Vec<&str> = left.split(' ').collect();
        (Path::new(f.get(4)?) == real).then(|| f[6..].join(" "))
    })
}

/// `additional_volumes[].shared`: bpm makes the host path a shared mount point, and the
/// jail's bind of it is a peer of it, under runc and tend-jail alike.
#[test]
fn shared_volume_as_runc() {
    if !can_jail() {
        return;
    }
    let v = Vcap::new("shared");
    let vol = "/var/vcap/data/shared/s";
    let _u = Unmount(vec![v.host(vol)]);
    let shape = Shape {
        volumes: &[
            ("/var/vcap/data/shared/s", "ws"),
            ("/var/vcap/data/shared/p", "w"),
        ],
        ..Shape::default()
    };
    let Some((_, ours)) = compare_at(&shape, &v, "shared") else {
        return;
    };
    let host = host_propagation(&v.host(vol)).expect("the host's mount of the volume");
    assert!(host.starts_with("shared:"), "{host}");
    assert_eq!(ours.get(&format!("prop {vol}")), Some(&host));
    assert_eq!(
        ours.get("prop /var/vcap/data/shared/p").map(String::as_str),
        Some("private")
    );
}

/// A shared volume carries mounts both ways while the job runs: one made inside (a
/// privileged job, as volume drivers are) appears on the host, one made on the host
/// appears inside.
#[test]
fn shared_volume_carries_mounts_both_ways() {
    if !can_jail() {
        return;
    }
    let v = Vcap::new("shared-live");
    let vol = "/var/vcap/data/shared/s";
    let host_vol = v.host(vol);
    for d in ["in", "out"] {
        std::fs::create_dir_all(host_vol.join(d)).unwrap();
    }
    let _u = Unmount(vec![
        host_vol.clone(),
        host_vol.join("in"),
        host_vol.join("out"),
    ]);
    let out = v.scratch.join("live.out");
    let script = format!(
        "mount -t tmpfs jailside {vol}/in && echo up || exit 9
         until grep -q ' {vol}/out ' /proc/self/mountinfo; do sleep 0.05; done; echo seen"
    );
    let mut c = cmd("tend-jail");
    c.args(["-j", JOB, "-P", "-v", &format!("{vol}:ws"), "-R"])
        .arg(v.root())
        .args(["/bin/sh", "-c", &script])
        .stdout(std::fs::File::create(&out).unwrap());
    let mut d = Daemon::start(c);
    let said = || std::fs::read_to_string(&out).unwrap_or_default();
    wait_until(PATIENCE, "the jail's mount", || {
        said().contains("up").then_some(())
    });
    let real = std::fs::canonicalize(host_vol.join("in")).unwrap();
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(
        info.lines()
            .any(|l| l.contains(&format!(" {} ", real.display())) && l.contains(" jailside ")),
        "the jail's mount is not on the host:\n{info}"
    );
    let o = Command::new("mount")
        .args(["-t", "tmpfs", "hostside"])
        .arg(host_vol.join("out"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let st = d.wait_exit(PATIENCE).expect("the jail ended");
    assert_eq!(st.code(), Some(0), "{st:?}: {}", said());
    assert!(said().contains("seen"), "{}", said());
}

#[test]
fn privileged_as_runc() {
    compare(
        &Shape {
            privileged: true,
            ..Shape::default()
        },
        "privileged",
    );
}

#[test]
fn host_pid_namespace_as_runc() {
    compare(
        &Shape {
            host_pid: true,
            ..Shape::default()
        },
        "host-pid",
    );
}

#[test]
fn ephemeral_and_persistent_disk_as_runc() {
    compare(
        &Shape {
            ephemeral: true,
            persistent: true,
            ..Shape::default()
        },
        "disks",
    );
}

#[test]
fn capabilities_as_runc() {
    compare(
        &Shape {
            caps: &["NET_BIND_SERVICE"],
            ..Shape::default()
        },
        "caps",
    );
}

/// A refusal: the exit code, one line naming what was wrong, and the probe never ran.
fn refused(v: &Vcap, args: &[&str], code: i32, says: &str) {
    let o = v.jail(args, &[]);
    assert_code(&o, code);
    let err = text(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("tend-jail: fatal: ") && err.contains(says),
        "{err}"
    );
    assert!(o.stdout.is_empty(), "the probe ran: {}", text(&o.stdout));
}

#[test]
fn bad_input_is_refused_before_anything_starts() {
    if !can_jail() {
        return;
    }
    let v = Vcap::new("refusals");
    refused(
        &v,
        &["-v", "/etc/x"],
        100,
        "volume /etc/x: not under /var/vcap/data",
    );
    refused(
        &v,
        &["-v", "var/vcap/data/x"],
        100,
        "not a canonical absolute path",
    );
    refused(
        &v,
        &["-v", "/var/vcap/data/../../etc"],
        100,
        "not a canonical absolute path",
    );
    refused(
        &v,
        &["-v", "/var/vcap/data/web"],
        100,
        "default data or store directory",
    );
    refused(&v, &["-c", "FLY"], 100, "unknown capability: FLY");
    refused(
        &v,
        &["-V", "/srv/[x"],
        100,
        "unrestricted volume /srv/[x: syntax error in pattern",
    );
    // A link planted where a bind's source is looked for.
    std::fs::create_dir_all(v.host("/var/vcap/data/web")).unwrap();
    std::os::unix::fs::symlink("/etc", v.host("/var/vcap/data/web/tmp")).unwrap();
    refused(&v, &[], 111, "is a symbolic link: refused");
    std::fs::remove_file(v.host("/var/vcap/data/web/tmp")).unwrap();
    std::fs::remove_dir_all(v.host("/var/vcap/store")).unwrap();
    refused(&v, &["-p"], 111, "persistent disk");
}

#[test]
fn escape_attempts_fail() {
    if !can_jail() {
        return;
    }
    let v = Vcap::new("escapes");
    let other = v.host("/var/vcap/data/other-job/secret");
    std::fs::create_dir_all(&other).unwrap();
    // A setuid-root program in the job's own (exec) directory: nosuid keeps it vcap's.
    let suid = v.host(&format!("/var/vcap/jobs/{JOB}/bin/suid-probe"));
    std::fs::copy(probe().unwrap(), &suid).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&suid, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let host = std::process::id().to_string();
    let mut c = cmd("tend-jail");
    c.args(["-j", JOB, "-u", "nobody", "-R"])
        .arg(v.root())
        .arg(format!("/var/vcap/jobs/{JOB}/bin/suid-probe"))
        .args([host.as_str(), "/var/vcap/data/other-job/secret"]);
    let o = run(c);
    assert!(o.status.success(), "{o:?}");
    let r = report(&text(&o.stdout));
    let want = [
        ("call write-usr", "Read-only file system"),
        ("call see-other", "No such file or directory"),
        ("call mount", "Operation not permitted"),
        ("call raise-caps", "Operation not permitted"),
        ("call setuid-0", "Operation not permitted"),
        ("call ptrace-host", "Operation not permitted"),
        ("call kill-host", "No such process"),
        ("call unshare-user", "Operation not permitted"),
        ("call kexec_load", "Operation not permitted"),
        ("call clone3", "Function not implemented"),
        ("call read", "ok"),
        ("call thread", "ok"),
        ("Uid", "65534\t65534\t65534\t65534"),
        ("CapEff", "0000000000000000"),
        ("NoNewPrivs", "1"),
        ("Seccomp", "2"),
        ("Seccomp_filters", "1"),
    ];
    for (k, w) in want {
        assert_eq!(
            r.get(k).map(String::as_str),
            Some(w),
            "{k}\n{}",
            text(&o.stdout)
        );
    }
}

#[test]
fn pid1_forwards_signals_and_exits_with_the_programs_code() {
    if !can_jail() {
        return;
    }
    let v = Vcap::new("pid1");
    let mut c = cmd("tend-jail");
    c.args(["-j", JOB, "-u", "nobody", "-R"])
        .arg(v.root())
        .arg(format!("/var/vcap/jobs/{JOB}/bin/probe"))
        .args(["1", "/", "wait"])
        .stdout(std::process::Stdio::piped());
    let mut d = Daemon::start(c);
    // The probe waits in pause() once it has printed its report.
    let mut out = d.child.stdout.take().unwrap();
    let mut seen = String::new();
    wait_until(PATIENCE, "the probe's report", || {
        let mut buf = [0u8; 4096];
        let n = std::io::Read::read(&mut out, &mut buf).ok()?;
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        seen.contains("call see-other").then_some(())
    });
    d.signal(nix::sys::signal::Signal::SIGTERM);
    let st = d.wait_exit(PATIENCE).expect("tend-jail ended");
    assert_eq!(st.code(), Some(128 + 15), "{st:?}");
}

/// bpm's checks, in tend-jobs check and in tend-jail: shutdown_signal HUP, an unknown
/// capability, a volume outside /var/vcap; one line each, exit 100.
#[test]
fn bpm_yml_checks_refuse_what_bpm_refuses() {
    let sc = Scratch::new("jail-bpm-checks");
    for (key, says) in [
        (
            "shutdown_signal: HUP",
            "invalid shutdown_signal of process p: HUP: bpm takes TERM or INT",
        ),
        ("capabilities: [FLY]", "unknown capability FLY"),
        (
            "additional_volumes: [{path: /etc}]",
            "volume /etc: not under /var/vcap/data",
        ),
        (
            "additional_volumes: [{path: /var/vcap/data/../x}]",
            "not a canonical absolute path",
        ),
        (
            "unsafe: {unrestricted_volumes: [{path: \"/srv/[x\"}]}",
            "unrestricted volume /srv/[x: syntax error in pattern",
        ),
    ] {
        let f = sc.write(
            "bpm.yml",
            &format!("processes:\n  - name: p\n    executable: /bin/true\n    {key}\n"),
            false,
        );
        let o = tend("tend-jobs", [std::ffi::OsStr::new("check"), f.as_os_str()]);
        assert_code(&o, 100);
        let err = text(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says), "{key}: {err}");
    }
    let o = tend("tend-jail", ["-j", "web", "-s", "HUP", "true"]);
    assert_code(&o, 100);
    assert_eq!(
        text(&o.stderr),
        "tend-jail: fatal: invalid shutdown signal: HUP: TERM or INT\n"
    );
}

/// tend-jobs check names a tend.user that does not exist on the machine (issue 34).
#[test]
fn check_names_a_user_the_machine_has_not() {
    let sc = Scratch::new("jail-no-user");
    let f = sc.write(
        "bpm.yml",
        "processes:\n  - name: p\n    executable: /bin/true\n    tend: {user: no-such-user-here}\n",
        false,
    );
    let o = tend("tend-jobs", [std::ffi::OsStr::new("check"), f.as_os_str()]);
    assert_code(&o, 0);
    assert!(
        text(&o.stderr).contains("user no-such-user-here does not exist on this machine"),
        "{}",
        text(&o.stderr)
    );
}

/// bpm's stop with -s TERM: TERM forwarded; 15 s later QUIT; 2 s later KILL of the whole
/// namespace (the program here ignores TERM and only notes QUIT).
#[test]
fn shutdown_signal_then_quit_then_kill_as_bpm_stops() {
    if !can_jail() {
        return;
    }
    let v = Vcap::new("stop");
    let out = v.scratch.join("stop.out");
    let mut c = cmd("tend-jail");
    c.args(["-j", JOB, "-u", "nobody", "-s", "TERM", "-R"])
        .arg(v.root())
        .args([
            "/bin/sh",
            "-c",
            "trap 'echo got-term' TERM; trap 'echo got-quit' QUIT; echo up; while :; do sleep 0.2; done",
        ])
        .stdout(std::fs::File::create(&out).unwrap());
    let mut d = Daemon::start(c);
    wait_until(PATIENCE, "the program up", || {
        std::fs::read_to_string(&out)
            .ok()
            .filter(|t| t.contains("up"))
    });
    let asked = std::time::Instant::now();
    d.signal(nix::sys::signal::Signal::SIGTERM);
    let st = d
        .wait_exit(std::time::Duration::from_secs(40))
        .expect("tend-jail ended");
    let took = asked.elapsed();
    assert_eq!(st.code(), Some(128 + 9), "{st:?}");
    assert!(
        took >= std::time::Duration::from_secs(17) && took < std::time::Duration::from_secs(30),
        "{took:?}"
    );
    let said = std::fs::read_to_string(&out).unwrap();
    assert!(
        said.contains("got-term") && said.contains("got-quit"),
        "{said}"
    );
}

/// limits.memory and limits.processes: a cgroup v2 group with memory.max, memory.swap.max
/// 0 and pids.max, joined before the walls; where the host offers no such controller, the
/// start is refused in one line (never run without the limit it was given).
#[test]
fn memory_and_processes_limits_join_a_cgroup() {
    if !can_jail() {
        return;
    }
    let v = Vcap::new("cgroup");
    let group = format!("tend-jail-test-{}", std::process::id());
    let host = std::process::id().to_string();
    let o = v.jail(
        &["-m", "67108864", "-t", "32", "-g", group.as_str()],
        &[host.as_str()],
    );
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let mount = info.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        right
            .starts_with("cgroup2 ")
            .then(|| left.split(' ').nth(4).map(PathBuf::from))?
    });
    let offered = mount
        .as_ref()
        .and_then(|m| std::fs::read_to_string(m.join("cgroup.controllers")).ok())
        .unwrap_or_default();
    let has = |c: &str| offered.split_whitespace().any(|x| x == c);
    if !(has("memory") && has("pids")) {
        assert_code(&o, 111);
        let err = text(&o.stderr);
        assert!(
            err.starts_with(&format!("tend-jail: fatal: join cgroup {group}: "))
                && err.lines().count() == 1,
            "{err}"
        );
        assert!(o.stdout.is_empty());
        // The refusal is what this machine can show (no skip: CI's machines are these).
        return;
    }
    assert!(o.status.success(), "{o:?}");
    let dir = mount.unwrap().join(&group);
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    assert_eq!(read("memory.max"), "67108864\n");
    assert_eq!(read("pids.max"), "32\n");
    assert!(
        text(&o.stdout).contains(&format!("cgroup: /{group}")),
        "{}",
        text(&o.stdout)
    );
    let _ = std::fs::remove_dir(&dir);
}

/// -f: the options from a file, one word a line, before the command line's.
#[test]
fn options_from_a_file() {
    if !can_jail() {
        return;
    }
    let v = Vcap::new("optfile");
    let file = v
        .scratch
        .write("jail", "-c\nNET_BIND_SERVICE\n-n\n77\n", false);
    let f = file.to_str().unwrap();
    let o = v.jail(&["-f", f], &[]);
    assert!(o.status.success(), "{o:?}");
    let r = report(&text(&o.stdout));
    assert_eq!(
        r.get("CapAmb").map(String::as_str),
        Some("0000000000000400")
    );
    assert_eq!(r.get("Max open files").map(String::as_str), Some("77 77"));
}

/// tests/vm/jail.sh's report for `arch`: key → value; None (and a skip) where qemu, the
/// kernel, a static busybox or the target's tend-jail is missing.
fn vm_report(
    arch: &str,
    jail: PathBuf,
    kernel: Option<PathBuf>,
    busybox: Option<PathBuf>,
) -> Option<BTreeMap<String, String>> {
    let qemu = format!("qemu-system-{arch}");
    if !have(&qemu) {
        skip(format!("{qemu} is not installed"));
        return None;
    }
    let (Some(kernel), Some(busybox)) = (kernel, busybox) else {
        skip(format!(
            "no {arch} kernel or static busybox (tests/vm/jail.sh)"
        ));
        return None;
    };
    if !jail.exists() {
        skip(format!("no {arch} tend-jail at {}", jail.display()));
        return None;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vm/jail.sh");
    let o = Command::new("sh")
        .arg(script)
        .arg(arch)
        .args([&jail, &kernel, &busybox])
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    Some(
        text(&o.stdout)
            .lines()
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.to_string(), v.trim().to_string()))
            .collect(),
    )
}

/// What a guest must report: the limits read back from cgroup v2 (memory.max, its swap
/// 0, pids.max, and a fork refused past it), and the walls as on the host.
fn vm_walls(r: &BTreeMap<String, String>, arch: &str) {
    for (k, want) in [
        ("guest arch", arch),
        ("jail exit", "0"),
        ("memory.max", "67108864"),
        ("memory.swap.max", "0"),
        ("pids.max", "16"),
        ("cgroup", "0::/tend-jail-vm"),
        ("open files", "77"),
        ("Uid", "65534\t65534\t65534\t65534"),
        ("CapEff", "0000000000000000"),
        ("NoNewPrivs", "1"),
        ("Seccomp", "2"),
        ("Seccomp_filters", "1"),
        ("call mount", "refused"),
        ("call unshare-user", "refused"),
        ("call write-usr", "refused"),
    ] {
        assert_eq!(r.get(k).map(String::as_str), Some(want), "{k}: {r:?}");
    }
    let refused: u32 = r["fork refused"].parse().unwrap();
    assert!(refused >= 1, "pids.max not enforced: {r:?}");
    assert_ne!(r["ns pid"], r["host ns pid"], "{r:?}");
}

/// A Debian kernel of this machine's (`/boot/vmlinuz-*`, the newest).
fn host_kernel() -> Option<PathBuf> {
    let mut k: Vec<PathBuf> = std::fs::read_dir("/boot")
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("vmlinuz-"))
        })
        .collect();
    k.sort();
    k.pop()
}

/// /bin/busybox when it is busybox-static's (no program interpreter named in it).
fn static_busybox() -> Option<PathBuf> {
    let b = PathBuf::from("/bin/busybox");
    let head = std::fs::read(&b).ok()?;
    let dynamic = head[..head.len().min(4096)]
        .windows(7)
        .any(|w| w == b"ld-linu" || w == b"ld-musl");
    (!dynamic).then_some(b)
}

#[test]
fn vm_x86_64_cgroup_v2_limits_read_back() {
    let Some(r) = vm_report("x86_64", bin("tend-jail"), host_kernel(), static_busybox()) else {
        return;
    };
    vm_walls(&r, "x86_64");
}

/// aarch64: tend-jail cross-built (`cargo build --release --target
/// aarch64-unknown-linux-musl --bin tend-jail`, linked by rust-lld) in a guest of Debian's
/// arm64 kernel and busybox-static (TEND_VM_ARM64_KERNEL, TEND_VM_ARM64_BUSYBOX: their
/// files, unpacked from linux-image-*-arm64 and busybox-static:arm64 by
/// tests/vm/fetch-arm64.sh).
#[test]
fn vm_aarch64_walls_and_cgroup_limits() {
    // tests/vm/fetch-arm64.sh unpacks both into /opt/tend-vm-arm64 (.ci/run runs it).
    let dir = std::env::var_os("TEND_VM_ARM64_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/tend-vm-arm64"));
    let newest_kernel = || {
        let mut k: Vec<PathBuf> = std::fs::read_dir(dir.join("boot"))
            .ok()?
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("vmlinuz-"))
            })
            .collect();
        k.sort();
        k.pop()
    };
    let kernel = std::env::var_os("TEND_VM_ARM64_KERNEL")
        .map(PathBuf::from)
        .or_else(newest_kernel);
    let busybox = std::env::var_os("TEND_VM_ARM64_BUSYBOX")
        .map(PathBuf::from)
        .or_else(|| Some(dir.join("bin/busybox")).filter(|b| b.exists()));
    // CARGO_TARGET_TMPDIR is TARGET/x86_64-unknown-linux-musl/tmp.
    let jail = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .ancestors()
        .nth(2)
        .map(|t| t.join("aarch64-unknown-linux-musl/release/tend-jail"))
        .unwrap_or_default();
    let Some(r) = vm_report("aarch64", jail, kernel, busybox) else {
        return;
    };
    vm_walls(&r, "aarch64");
}
