//! packaging/build.sh: the Debian package and the release tarball, installed and used as a
//! distribution or a Dockerfile would. The package is installed with dpkg into a scratch
//! root (`dpkg --root`), not into this machine's /usr, so that test runs in parallel and the
//! developer's system are left alone; the tarball runs in an empty root through chroot.
//! Needs root, dpkg, lintian, man-db and xz (CI installs them). They package the test
//! build of `tend` (TEND_BUILD), stripped, not a release build.
//!
//! Installing into the live system's /usr (`dpkg -i`, `dpkg -r`) runs only where
//! TEND_TEST_LIVE_DPKG=1 says the machine is a throwaway (CI sets it); elsewhere that test
//! says why it skipped. examples/container/Dockerfile.tarball is built and run in the
//! Docker engine (skipped, with the reason, when `docker info` fails).
//!
//! tend-runit (runit's names) is tested twice: in a private dpkg root holding runit's files
//! and record, run in a chroot of it (no Docker needed), and in a Debian container whose
//! root is built from this host's installed Debian packages and their dpkg records (there
//! is no Debian image, debootstrap or registry here), where dpkg itself purges runit and
//! installs and removes the packages.
//!
//! Not tested here: the separate executables of `--features separate`
//! (`packaging/install.sh -s`).

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// By its path: the programs in the empty root run with an empty environment.
const CHROOT: &str = "/usr/sbin/chroot";

struct Built {
    deb: PathBuf,
    runit_deb: PathBuf,
    tarball: PathBuf,
}

fn root_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn version() -> String {
    let o = run({
        let mut c = Command::new("sed");
        c.args([
            "-n",
            r#"/^\[workspace.package\]/,/^\[/ s/^version = "\(.*\)"/\1/p"#,
        ])
        .arg(root_dir().join("Cargo.toml"));
        c
    });
    text(&o.stdout).trim().to_string()
}

/// packaging/build.sh, once per test process, into target/tmp/packages-pPID.
fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        require_root();
        let out = process_dir("packages");
        let _ = std::fs::remove_dir_all(&out);
        // A stripped copy of the test build, as the release profile strips.
        let build = out.join("build");
        std::fs::create_dir_all(&build).unwrap();
        for name in EXECUTABLES {
            std::fs::copy(bin(name), build.join(name)).unwrap();
        }
        for name in EXECUTABLES {
            let o = run({
                let mut c = Command::new("strip");
                c.arg(build.join(name));
                c
            });
            assert_code(&o, 0);
        }
        let mut c = Command::new(root_dir().join("packaging/build.sh"));
        c.arg(&out).env("TEND_BUILD", &build);
        let o = run(c);
        assert_code(&o, 0);
        let v = version();
        let built = Built {
            deb: out.join(format!("tend_{v}_amd64.deb")),
            runit_deb: out.join(format!("tend-runit_{v}_amd64.deb")),
            tarball: out.join(format!("tend-{v}-x86_64-linux.tar.xz")),
        };
        assert_eq!(
            text(&o.stdout),
            format!(
                "{}\n{}\n{}\n{}.sha256\n",
                built.deb.display(),
                built.runit_deb.display(),
                built.tarball.display(),
                built.tarball.display()
            )
        );
        built
    })
}

fn require_root() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "the packaging tests install with dpkg and chroot: run them as root (CI does)"
    );
}

/// The program names of the build: `tend -l`, and the standalone executables (tend-tree
/// is not one: its programs are in `tend -l`).
fn programs() -> Vec<String> {
    let o = tend("tend", ["-l"]);
    assert_code(&o, 0);
    let mut all: Vec<String> = text(&o.stdout).lines().map(str::to_string).collect();
    all.extend(STANDALONE.iter().map(|s| s.to_string()));
    all
}

fn contents(deb: &Path) -> String {
    let o = run({
        let mut c = Command::new("dpkg-deb");
        c.arg("-c").arg(deb);
        c
    });
    assert_code(&o, 0);
    text(&o.stdout)
}

fn field(deb: &Path, name: &str) -> String {
    let o = run({
        let mut c = Command::new("dpkg-deb");
        c.arg("-f").arg(deb).arg(name);
        c
    });
    text(&o.stdout).trim().to_string()
}

#[test]
fn the_package_holds_every_program_its_page_and_the_docs() {
    let b = built();
    let list = contents(&b.deb);
    let has = |path: &str| {
        list.lines()
            .any(|l| l.split_whitespace().nth(5) == Some(path))
    };
    for p in ["tend".to_string(), "tend-tree".to_string()]
        .into_iter()
        .chain(programs())
    {
        assert!(has(&format!("./usr/bin/{p}")), "no /usr/bin/{p} in\n{list}");
        assert!(
            has(&format!("./usr/share/man/man8/{p}.8.gz")),
            "no man page for {p} in\n{list}"
        );
    }
    for doc in [
        "copyright",
        "changelog.gz",
        "README.md",
        "examples/scandir/tick/run",
    ] {
        assert!(
            has(&format!("./usr/share/doc/tend/{doc}")),
            "no {doc} in\n{list}"
        );
    }
    // tend-monit's units in monit's place, for a stemcell to copy (not activated).
    for unit in [
        "monit.service",
        "sv/monit/run",
        "sv/monit/finish",
        "sv/monit/log/run",
    ] {
        assert!(
            has(&format!("./usr/lib/tend/monit/{unit}")),
            "no {unit} in\n{list}"
        );
    }
    // Every program but the standalone ones is a hard link to one of the multi-call
    // executables: to tend-tree for what a tree runs, to tend for the rest. (dpkg-deb
    // names a hard link's target by the group's first name in the archive: for tend-tree's
    // group, tend-log.)
    let tree = tree_programs();
    assert!(tree.len() >= 3, "tend-tree holds {tree:?}");
    let mut tree_group: Vec<&str> = tree.iter().map(String::as_str).collect();
    tree_group.push("tend-tree");
    let entry = |p: &str| {
        list.lines()
            .find(|l| l.split_whitespace().nth(5) == Some(&format!("./usr/bin/{p}")))
            .unwrap_or_else(|| panic!("no {p} in\n{list}"))
    };
    let links_into_tree = |l: &str| {
        l.split_once(" link to ./usr/bin/")
            .is_some_and(|(_, to)| tree_group.contains(&to))
    };
    for p in &tree_group {
        let l = entry(p);
        assert!(
            !l.contains(" link to ") || links_into_tree(l),
            "{p} is not tend-tree: {l}"
        );
    }
    assert_eq!(
        list.lines().filter(|l| links_into_tree(l)).count(),
        tree.len(),
        "{list}"
    );
    assert_eq!(
        list.lines()
            .filter(|l| l.ends_with(" link to ./usr/bin/tend"))
            .count(),
        programs().len() - STANDALONE.len() - tree.len(),
        "{list}"
    );
    assert_eq!(field(&b.deb, "Package"), "tend");
    assert_eq!(field(&b.deb, "Version"), version());
    assert_eq!(field(&b.deb, "Architecture"), "amd64");
    assert_eq!(
        field(&b.deb, "Depends"),
        "",
        "static executables need nothing"
    );
}

#[test]
fn lintian_reports_no_error() {
    require("lintian");
    let b = built();
    let o = run({
        let mut c = Command::new("lintian");
        c.arg(&b.deb);
        c
    });
    let out = text(&o.stdout);
    assert!(
        !out.lines().any(|l| l.starts_with("E:")),
        "lintian errors:\n{out}"
    );
    assert_code(&o, 0);
}

/// An empty dpkg database under `root`.
fn dpkg_root(root: &Path) {
    for d in [
        "var/lib/dpkg/info",
        "var/lib/dpkg/updates",
        "var/lib/dpkg/triggers",
    ] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join("var/lib/dpkg/status"), "").unwrap();
    std::fs::write(root.join("var/lib/dpkg/available"), "").unwrap();
}

fn dpkg(root: &Path, args: &[&std::ffi::OsStr]) -> std::process::Output {
    let mut c = Command::new("dpkg");
    c.arg(format!("--root={}", root.display()))
        .arg("--force-script-chrootless")
        .args(args);
    run(c)
}

/// A scanner started from `bin` on `scan`, stopped and reaped on drop, with every process
/// left under `scan` killed.
struct Scanner {
    daemon: Daemon,
    scan: PathBuf,
}

impl Drop for Scanner {
    fn drop(&mut self) {
        self.daemon.signal(nix::sys::signal::Signal::SIGTERM);
        let _ = self.daemon.wait_exit(Duration::from_secs(5));
        kill_under(&self.scan);
    }
}

/// SIGKILL every process whose cwd lies under `dir`.
fn kill_under(dir: &Path) {
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if std::fs::read_link(e.path().join("cwd")).is_ok_and(|cwd| cwd.starts_with(dir)) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

#[test]
fn the_package_installs_runs_and_removes_cleanly() {
    require("man");
    let b = built();
    let s = Scratch::new("deb-install");
    let root = s.join("root");
    dpkg_root(&root);
    let o = dpkg(&root, &["-i".as_ref(), b.deb.as_os_str()]);
    assert_code(&o, 0);
    let usr_bin = root.join("usr/bin");
    // Every program answers from /usr/bin with its usage line and exit 100.
    for p in programs() {
        let o = run({
            let mut c = Command::new(usr_bin.join(&p));
            c.arg("-\u{1}");
            c
        });
        assert_code(&o, 100);
        assert!(
            text(&o.stderr).starts_with(&format!("{p}: usage: {p}")),
            "{p}: {}",
            text(&o.stderr)
        );
    }
    // man finds the installed page.
    let o = run({
        let mut c = Command::new("man");
        c.arg("-M")
            .arg(root.join("usr/share/man"))
            .args(["-w", "tend-svc"]);
        c
    });
    assert_code(&o, 0);
    assert_eq!(
        text(&o.stdout).trim(),
        root.join("usr/share/man/man8/tend-svc.8.gz")
            .display()
            .to_string()
    );
    // The installed example scan directory runs from the installed programs.
    let scan = s.join("scan");
    let o = run({
        let mut c = Command::new("cp");
        c.arg("-R")
            .arg(root.join("usr/share/doc/tend/examples/scandir"))
            .arg(&scan);
        c
    });
    assert_code(&o, 0);
    let path = format!("{}:/usr/bin:/bin", usr_bin.display());
    let mut c = Command::new(usr_bin.join("tend-svscan"));
    c.arg(&scan).env("PATH", &path);
    let mut scanner = Scanner {
        daemon: Daemon::start(c),
        scan: scan.clone(),
    };
    let current = scan.join("tick/log/main/current");
    wait_until(
        Duration::from_secs(20),
        "a tick logged by the installed tend-log",
        || {
            std::fs::read_to_string(&current)
                .ok()
                .filter(|t| t.contains("tick "))
        },
    );
    // tend-supervise writes "up" once ./run has exec'd: on a loaded machine the run
    // script's first line can reach the log before the supervisor is scheduled to say so.
    let svstat = || {
        run({
            let mut c = Command::new(usr_bin.join("tend-svstat"));
            c.arg(scan.join("tick"));
            c
        })
    };
    let mut o = svstat();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !text(&o.stdout).starts_with("up ") && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        o = svstat();
    }
    assert_code(&o, 0);
    assert!(text(&o.stdout).starts_with("up "), "{}", text(&o.stdout));
    let o = run({
        let mut c = Command::new(usr_bin.join("tend-svscanctl"));
        c.arg("-t").arg(&scan);
        c
    });
    assert_code(&o, 0);
    let st = scanner.daemon.wait_exit(Duration::from_secs(20));
    assert!(st.is_some(), "the installed scanner did not stop");
    drop(scanner);
    // dpkg -r leaves nothing of tend.
    let o = dpkg(&root, &["-r".as_ref(), "tend".as_ref()]);
    assert_code(&o, 0);
    let left = run({
        let mut c = Command::new("find");
        c.arg(root.join("usr")).args(["-name", "*tend*"]);
        c
    });
    assert_eq!(text(&left.stdout), "", "left behind after dpkg -r");
}

#[test]
fn the_tarball_runs_in_an_empty_root() {
    let b = built();
    let s = Scratch::new("tarball-chroot");
    let out = b.tarball.parent().unwrap();
    let o = run({
        let mut c = Command::new("sha256sum");
        c.arg("-c")
            .arg(format!(
                "{}.sha256",
                b.tarball.file_name().unwrap().to_string_lossy()
            ))
            .current_dir(out);
        c
    });
    assert_code(&o, 0);
    let root = s.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let o = run({
        let mut c = Command::new("tar");
        c.arg("-xJf").arg(&b.tarball).arg("-C").arg(&root);
        c
    });
    assert_code(&o, 0);
    // Only usr/bin, usr/share/man/man8 and tend-monit's units (usr/lib/tend/monit: the
    // systemd unit and the runit-style service directory a stemcell installs), nothing else.
    let o = run({
        let mut c = Command::new("find");
        c.arg(".").args(["-type", "f"]).current_dir(&root);
        c
    });
    for f in text(&o.stdout).lines() {
        assert!(
            f.starts_with("./usr/bin/tend")
                || f.starts_with("./usr/share/man/man8/tend")
                || f.starts_with("./usr/lib/tend/monit/"),
            "unexpected {f}"
        );
    }
    let chroot = |args: &[&str]| {
        let mut c = Command::new(CHROOT);
        c.arg(&root).args(args).env_clear();
        run(c)
    };
    for p in programs() {
        let bin = format!("/usr/bin/{p}");
        let o = chroot(&[bin.as_str(), "-\u{1}"]);
        assert_code(&o, 100);
    }
    // A scanner runs and stops in a root that holds nothing but the tarball.
    std::fs::create_dir_all(root.join("scan")).unwrap();
    let mut c = Command::new(CHROOT);
    c.arg(&root)
        .args(["/usr/bin/tend-svscan", "/scan"])
        .env_clear();
    let mut scanner = Scanner {
        daemon: Daemon::start(c),
        scan: root.join("scan"),
    };
    let control = root.join("scan/.s6-svscan/control");
    wait_until(
        Duration::from_secs(20),
        "the chrooted scanner's control FIFO",
        || control.exists().then_some(()),
    );
    let o = chroot(&["/usr/bin/tend-svscanctl", "-t", "/scan"]);
    assert_code(&o, 0);
    let st = scanner.daemon.wait_exit(Duration::from_secs(20));
    assert_eq!(
        st.and_then(|s| s.code()),
        Some(0),
        "the chrooted scanner's exit"
    );
}

/// The package in the live system, as a distribution installs it: `dpkg -i`, every program
/// from /usr/bin, `man tend-svc`, then `dpkg -r` leaves nothing. Only on a throwaway
/// machine (TEND_TEST_LIVE_DPKG=1, set by .ci/run).
#[test]
fn the_package_installs_into_the_live_system_and_removes_cleanly() {
    if std::env::var_os("TEND_TEST_LIVE_DPKG").is_none_or(|v| v != "1") {
        skip("set TEND_TEST_LIVE_DPKG=1 on a throwaway machine (CI does)");
        return;
    }
    require("man");
    let b = built();
    assert!(
        !Path::new("/usr/bin/tend").exists(),
        "/usr/bin/tend exists already: not touching this system"
    );
    let o = run({
        let mut c = Command::new("dpkg");
        c.arg("-i").arg(&b.deb);
        c
    });
    assert_code(&o, 0);
    for p in programs() {
        let o = run({
            let mut c = Command::new(format!("/usr/bin/{p}"));
            c.arg("-\u{1}");
            c
        });
        assert_code(&o, 100);
        assert!(text(&o.stderr).starts_with(&format!("{p}: usage: {p}")));
    }
    let o = run({
        let mut c = Command::new("man");
        c.args(["-w", "tend-svc"]);
        c
    });
    assert_code(&o, 0);
    assert_eq!(text(&o.stdout).trim(), "/usr/share/man/man8/tend-svc.8.gz");
    let o = run({
        let mut c = Command::new("dpkg");
        c.args(["-r", "tend"]);
        c
    });
    assert_code(&o, 0);
    // Every file the package held is gone, and dpkg no longer knows the package.
    for p in ["tend".to_string(), "tend-tree".to_string()]
        .into_iter()
        .chain(programs())
    {
        for f in [
            format!("/usr/bin/{p}"),
            format!("/usr/share/man/man8/{p}.8.gz"),
        ] {
            assert!(!Path::new(&f).exists(), "{f} left behind after dpkg -r");
        }
    }
    assert!(!Path::new("/usr/share/doc/tend").exists());
    let o = run({
        let mut c = Command::new("dpkg");
        c.args(["-s", "tend"]);
        c
    });
    assert_ne!(o.status.code(), Some(0), "dpkg still knows tend");
}

/// examples/container/Dockerfile.tarball: the release tarball ADDed over / of a FROM scratch
/// image runs the example's services under tend-init.
#[test]
fn the_tarball_builds_a_container_image() {
    let info = Command::new("docker").arg("info").output();
    if !info.as_ref().is_ok_and(|o| o.status.success()) {
        skip("no Docker engine here (docker info failed)");
        return;
    }
    let b = built();
    let s = Scratch::new("tarball-docker");
    let ctx = s.join("ctx");
    let none = s.join("none");
    std::fs::create_dir_all(&none).unwrap();
    let o = run({
        let mut c = Command::new(root_dir().join("examples/container/build.sh"));
        c.arg("-o").arg(ctx.join("rootfs")).arg(&none);
        c
    });
    assert_code(&o, 0);
    std::fs::copy(&b.tarball, ctx.join(b.tarball.file_name().unwrap())).unwrap();
    std::fs::copy(
        root_dir().join("examples/container/Dockerfile.tarball"),
        ctx.join("Dockerfile"),
    )
    .unwrap();
    const TAG: &str = "tend-tarball-test";
    remove_image_at_exit(TAG);
    let o = run({
        let mut c = Command::new("docker");
        c.args(["build", "-q", "-t", TAG, "--build-arg"])
            .arg(format!("TEND_VERSION={}", version()))
            .arg(&ctx)
            .env("DOCKER_BUILDKIT", "0");
        c
    });
    assert_code(&o, 0);
    // The services come up under the tarball's tend-init; the command's code is the exit code.
    let o = run({
        let mut c = Command::new("docker");
        c.args(["run", "--rm", TAG, "sh", "-c"]).arg(
            "tend-svwait -u -t 10000 /run/tend/service/numbers && \
             test \"$(readlink -f /usr/bin/tend-svc)\" = /usr/bin/tend-svc && \
             test /usr/bin/tend-svc -ef /usr/bin/tend-tree && \
             test /usr/bin/tend-init -ef /usr/bin/tend && exit 42",
        );
        c
    });
    assert_code(&o, 42);
    let _ = Command::new("docker").args(["rmi", "-f", TAG]).output();
}

/// A private dpkg root that had Debian's runit installed: its files copied from this
/// machine's runit package and its status record registered, maintainer scripts left out
/// (they drive the host's init). Then runit is removed with dpkg, as a Resolute stemcell
/// removes it, and tend + tend-runit go in.
#[test]
fn tend_runit_replaces_a_removed_runit_and_runs_its_service_directories() {
    require("runsvdir");
    let b = built();
    let s = Scratch::new("deb-runit");
    let root = s.join("root");
    dpkg_root(&root);
    let listed = run({
        let mut c = Command::new("dpkg");
        c.args(["-L", "runit"]);
        c
    });
    assert_code(&listed, 0);
    let mut list = String::new();
    for f in text(&listed.stdout).lines() {
        let p = Path::new(f);
        if p.is_file() && !p.is_symlink() {
            let to = root.join(f.trim_start_matches('/'));
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(p, &to).unwrap();
        }
        list.push_str(f);
        list.push('\n');
    }
    std::fs::write(root.join("var/lib/dpkg/info/runit.list"), list).unwrap();
    let status = run({
        let mut c = Command::new("dpkg");
        c.args(["-s", "runit"]);
        c
    });
    let record: String = text(&status.stdout)
        .lines()
        .filter(|l| !l.starts_with("Conffiles:") && !l.starts_with(" /etc"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(root.join("var/lib/dpkg/status"), format!("{record}\n")).unwrap();
    assert!(root.join("usr/bin/chpst").is_file());
    let o = dpkg(&root, &["-i".as_ref(), b.deb.as_os_str()]);
    assert_code(&o, 0);
    // Conflicts + Replaces: dpkg takes runit out to put tend-runit in, as `apt-get remove
    // runit` then an install would; runit's files go with it.
    let o = dpkg(&root, &["-i".as_ref(), b.runit_deb.as_os_str()]);
    assert_code(&o, 0);
    assert!(text(&o.stdout).contains("Removing runit"), "{o:?}");
    let o = dpkg(&root, &["-s".as_ref(), "runit".as_ref()]);
    assert!(
        !text(&o.stdout).contains("Status: install ok installed"),
        "{o:?}"
    );
    assert!(
        !root.join("usr/bin/svlogd").exists(),
        "runit's svlogd left behind"
    );
    // runit's daemons are tend-tree's, its tools tend's.
    for (n, exe) in [
        ("chpst", "tend"),
        ("sv", "tend"),
        ("runsvdir", "tend-tree"),
        ("runsv", "tend-tree"),
    ] {
        assert_eq!(
            std::fs::read_link(root.join("usr/bin").join(n)).unwrap(),
            Path::new(exe),
            "{n}"
        );
    }
    // A runit system in the root: busybox's sh, the vcap account, /etc/service with a
    // run script calling chpst -u vcap:vcap, and a `service` wrapper calling sv.
    let busybox = Path::new("/bin/busybox");
    if !busybox.exists() {
        return skip("no static /bin/busybox (Debian's busybox-static) for the root's shell");
    }
    for d in ["bin", "etc/service/app", "tmp", "usr/sbin"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::set_permissions(
        root.join("tmp"),
        std::os::unix::fs::PermissionsExt::from_mode(0o1777),
    )
    .unwrap();
    std::fs::copy(busybox, root.join("bin/busybox")).unwrap();
    for n in ["sh", "id", "sleep", "cat"] {
        std::os::unix::fs::symlink("busybox", root.join("bin").join(n)).unwrap();
    }
    std::fs::write(
        root.join("etc/passwd"),
        "root:x:0:0:root:/root:/bin/sh\nvcap:x:1000:1000::/home/vcap:/bin/sh\n",
    )
    .unwrap();
    std::fs::write(
        root.join("etc/group"),
        "root:x:0:\nvcap:x:1000:\nadm:x:4:vcap\n",
    )
    .unwrap();
    let script = |rel: &str, body: &str| {
        let p = root.join(rel);
        std::fs::write(&p, body).unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    };
    script(
        "etc/service/app/run",
        "#!/bin/sh\nexec chpst -u vcap:vcap sh -c 'id > /tmp/ids; exec sleep 1000'\n",
    );
    script("usr/sbin/service", "#!/bin/sh\nexec sv \"$2\" \"$1\"\n");
    let chrooted = |args: &[&str]| {
        let mut c = Command::new(CHROOT);
        c.arg(&root)
            .args(args)
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/bin");
        c
    };
    let _scanner = Scanner {
        daemon: Daemon::start(chrooted(&["runsvdir", "-P", "/etc/service"])),
        scan: root.clone(),
    };
    let ids = wait_until(PATIENCE, "app's chpst -u vcap:vcap", || {
        std::fs::read_to_string(root.join("tmp/ids"))
            .ok()
            .filter(|t| t.ends_with('\n'))
    });
    assert_eq!(ids, "uid=1000(vcap) gid=1000(vcap) groups=1000(vcap)\n");
    // The ids come from the run's own exec chain; the supervisor says run once it has
    // seen ./run's exec, and under load it may not have been scheduled yet: the status
    // said "down: app: 0s, normally up, want up" (sweep C34). Wait for the state.
    let up = wait_until(PATIENCE, "service app status: run", || {
        let o = run(chrooted(&["service", "app", "status"]));
        text(&o.stdout).starts_with("run: app: (pid ").then_some(o)
    });
    assert_code(&up, 0);
    let o = run(chrooted(&["service", "app", "stop"]));
    assert_code(&o, 0);
    assert!(text(&o.stdout).starts_with("ok: down: app: "), "{o:?}");
    let o = run(chrooted(&["service", "app", "start"]));
    assert_code(&o, 0);
    assert!(text(&o.stdout).starts_with("ok: run: app: "), "{o:?}");
    drop(_scanner);
    // Removed cleanly: the names go, tend stays.
    let o = dpkg(&root, &["-r".as_ref(), "tend-runit".as_ref()]);
    assert_code(&o, 0);
    for n in ["chpst", "sv", "runsvdir", "runsv"] {
        assert!(
            root.join("usr/bin").join(n).symlink_metadata().is_err(),
            "{n} left"
        );
    }
    assert!(root.join("usr/bin/tend").exists());
}

/// Issue 36 in a Debian container: a root of this host's Debian 12 packages (dpkg,
/// coreutils, dash, runit and what they depend on) with their dpkg records, imported into
/// Docker. Inside: runit is purged with dpkg, tend and tend-runit are installed with
/// `dpkg -i`, runsvdir runs a service directory whose run calls `chpst -u vcap:vcap` and a
/// `service` wrapper calls sv, and `dpkg -r tend-runit` takes its files away again.
#[test]
fn slow_tend_runit_replaces_runit_in_a_debian_container() {
    if !docker_ok() {
        return skip("slow_tend_runit_replaces_runit_in_a_debian_container: no Docker engine");
    }
    if !have("apt-cache") || !Path::new("/var/lib/dpkg/info/runit.list").exists() {
        return skip(
            "slow_tend_runit_replaces_runit_in_a_debian_container: no runit package here to build the image from",
        );
    }
    let b = built();
    let s = Scratch::new("deb-runit-docker");
    let extra = s.join("extra");
    for d in ["etc", "tmp", "root", "debs", "proc", "sys", "dev"] {
        std::fs::create_dir_all(extra.join(d)).unwrap();
    }
    std::fs::set_permissions(
        extra.join("tmp"),
        std::os::unix::fs::PermissionsExt::from_mode(0o1777),
    )
    .unwrap();
    std::fs::write(extra.join("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n").unwrap();
    std::fs::write(extra.join("etc/group"), "root:x:0:\n").unwrap();
    std::fs::copy(&b.deb, extra.join("debs/tend.deb")).unwrap();
    std::fs::copy(&b.runit_deb, extra.join("debs/tend-runit.deb")).unwrap();
    let script = |rel: &str, body: &str| {
        let p = extra.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, body).unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    };
    script(
        "root/app/run",
        "#!/bin/sh\nexec chpst -u vcap:vcap sh -c 'id > /tmp/ids; exec sleep 1000'\n",
    );
    script("usr/sbin/service", "#!/bin/sh\nexec sv \"$2\" \"$1\"\n");
    let tag = format!("tend-deb-runit:{}", std::process::id());
    // dpkg wants diff, ldconfig and start-stop-daemon on PATH besides sh, rm and tar.
    host_debian_image(
        &s.join("."),
        &[
            "dpkg",
            "coreutils",
            "dash",
            "runit",
            "diffutils",
            "libc-bin",
            "findutils",
            "grep",
            "sed",
        ],
        true,
        &extra,
        &tag,
        &[],
    );
    let name = format!("tend-deb-runit-{}", std::process::id());
    // /usr, /etc and /var on (anonymous) volumes, copied from the image: under this
    // engine's fuse-overlayfs, a file of the image's layer that was removed, replaced and
    // removed again comes back (runit's chpst did after `dpkg -r tend-runit`), which no
    // real root does.
    let o = docker_out(&[
        "run",
        "-d",
        "--name",
        &name,
        "--network",
        "none",
        "-v",
        "/usr",
        "-v",
        "/etc",
        "-v",
        "/var",
        &tag,
        "/bin/sleep",
        "infinity",
    ]);
    let c = Container(name);
    assert_code(&o, 0);
    let sh = |cmd: &str| c.exec(&["/bin/sh", "-c", cmd]);
    // runit as Debian installed it, then purged as an operator would before installing.
    let o = sh("dpkg -s runit && test -x /usr/bin/chpst && /usr/bin/chpst -v");
    assert!(
        text(&o.stdout).contains("Status: install ok installed"),
        "{o:?}"
    );
    let o = sh("dpkg --purge runit");
    assert_code(&o, 0);
    let o = sh(
        "dpkg -s runit; for n in chpst sv runsvdir runsv svlogd; do test -e /usr/bin/$n && echo $n left; done; true",
    );
    assert!(!text(&o.stdout).contains("install ok installed"), "{o:?}");
    assert!(!text(&o.stdout).contains(" left"), "{o:?}");
    let o = sh("dpkg -i /debs/tend.deb /debs/tend-runit.deb");
    assert_code(&o, 0);
    let o = sh("for n in chpst sv runsvdir runsv; do readlink /usr/bin/$n; done");
    assert_eq!(
        text(&o.stdout),
        "tend\ntend\ntend-tree\ntend-tree\n",
        "{o:?}"
    );
    // runit's /etc/service link went with it: the scan directory is made anew, with the
    // service directory (kept aside in /root) in it.
    let o = sh("test ! -e /etc/service && mkdir /etc/service && cp -a /root/app /etc/service/");
    assert_code(&o, 0);
    // The vcap account, made inside as a stemcell's image does.
    let o = sh(
        "echo vcap:x:1000:1000::/home/vcap:/bin/sh >>/etc/passwd && echo vcap:x:1000: >>/etc/group",
    );
    assert_code(&o, 0);
    let o = docker_out(&["exec", "-d", &c.0, "runsvdir", "-P", "/etc/service"]);
    assert_code(&o, 0);
    let ids = wait_until(PATIENCE, "app's chpst -u vcap:vcap", || {
        Some(text(&sh("cat /tmp/ids 2>/dev/null").stdout)).filter(|t| t.ends_with('\n'))
    });
    assert_eq!(ids, "uid=1000(vcap) gid=1000(vcap) groups=1000(vcap)\n");
    // As above: the status says run once the supervisor has seen the exec (C34).
    let up = wait_until(PATIENCE, "service app status: run", || {
        let o = sh("service app status");
        text(&o.stdout).starts_with("run: app: (pid ").then_some(o)
    });
    assert_code(&up, 0);
    let o = sh("service app stop");
    assert_code(&o, 0);
    assert!(text(&o.stdout).starts_with("ok: down: app: "), "{o:?}");
    let o = sh("service app start");
    assert_code(&o, 0);
    assert!(text(&o.stdout).starts_with("ok: run: app: "), "{o:?}");
    // Removed cleanly: every file tend-runit brought goes, tend stays.
    let listed = sh("dpkg -L tend-runit");
    assert_code(&listed, 0);
    let o = sh("dpkg -r tend-runit");
    assert_code(&o, 0);
    let o = sh("dpkg -s tend-runit | grep '^Status:'");
    assert!(!text(&o.stdout).contains("install ok installed"), "{o:?}");
    let shared = ["/.", "/usr", "/usr/bin", "/usr/share", "/usr/share/doc"];
    let listed = text(&listed.stdout);
    let left: Vec<&str> = listed
        .lines()
        .filter(|f| !shared.contains(f))
        .filter(|f| {
            c.exec(&["test", "-e", f]).status.success()
                || c.exec(&["test", "-L", f]).status.success()
        })
        .collect();
    assert!(
        left.is_empty(),
        "left by dpkg -r tend-runit: {left:?} {o:?} {:?}",
        sh(
            "ls -l /usr/bin/chpst; dpkg -S /usr/bin/chpst; cat /var/lib/dpkg/diversions; ls /var/lib/dpkg/info | grep -i runit"
        )
    );
    assert_code(&c.exec(&["test", "-x", "/usr/bin/tend"]), 0);
}
