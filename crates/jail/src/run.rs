//! Building the walls, in bpm's (runc's) order, then the exec.
//!
//! The process tree, with a pid namespace (the default):
//!
//! ```text
//! tend-jail (host pid ns)  forwards signals to PID 1, exits with its code
//!  └ tend-jail as PID 1    builds the root, forwards signals, reaps, exits with the program's code
//!     └ the program        credentials, capabilities, no_new_privs, rlimits, seccomp, exec
//! ```
//!
//! With `-H` (bpm's `unsafe.host_pid_namespace`) there is no PID 1: tend-jail builds the
//! walls around itself and execs the program in its place.

use crate::caps;
use crate::plan::{Bind, Plan};
use nix::errno::Errno;
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use rustix::mount::{MountFlags, MountPropagationFlags, UnmountFlags};
use std::ffi::{CString, OsString};
use std::fmt;
use std::path::Path;
use tend_sys::process::{Forked, fork};

/// What failed: the step, the path it was working on, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub step: &'static str,
    pub path: String,
    pub why: String,
    pub code: i32,
}

impl Failure {
    fn sys(step: &'static str, path: impl AsRef<Path>, e: Errno) -> Failure {
        Failure {
            step,
            path: path.as_ref().display().to_string(),
            why: e.desc().to_string(),
            code: tend_sys::code::SYSTEM,
        }
    }

    fn io(step: &'static str, path: impl AsRef<Path>, e: &std::io::Error) -> Failure {
        Failure::sys(
            step,
            path,
            Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)),
        )
    }

    fn rx(step: &'static str, path: impl AsRef<Path>, e: rustix::io::Errno) -> Failure {
        Failure::sys(step, path, Errno::from_raw(e.raw_os_error()))
    }

    fn refused(step: &'static str, path: impl AsRef<Path>, why: impl Into<String>) -> Failure {
        Failure {
            step,
            path: path.as_ref().display().to_string(),
            why: why.into(),
            code: tend_sys::code::SYSTEM,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}: {}", self.step, self.why)
        } else {
            write!(f, "{} {}: {}", self.step, self.path, self.why)
        }
    }
}

/// Who the program runs as.
struct Account {
    uid: u32,
    gid: u32,
}

/// The signals forwarded to the program (the rest keep their default action).
const FORWARDED: [Signal; 10] = [
    Signal::SIGTERM,
    Signal::SIGINT,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
    Signal::SIGWINCH,
    Signal::SIGALRM,
    Signal::SIGCONT,
    Signal::SIGCHLD,
];

/// Build the walls and exec `argv` with `env` (bpm's four defaults added where missing).
/// Returns the exit code to leave with in the processes that wait (tend-jail outside,
/// PID 1 inside); the one that execs returns only on failure.
pub fn run(plan: &Plan, argv: &[OsString], env: &[(OsString, OsString)]) -> Result<i32, Failure> {
    plan.check().map_err(|why| Failure {
        step: "check",
        path: String::new(),
        why,
        code: tend_sys::code::USAGE,
    })?;
    let plan = &plan.expand_unrestricted();
    let who = account(&plan.user, plan.privileged)?;
    // Each bind source is looked at once: what binds() finds present, and prepare_host
    // the rest, gives each bind's kind (directory or file) to build_root.
    let seen = std::cell::RefCell::new(Vec::new());
    let binds = plan.binds(|p| match std::fs::metadata(p) {
        Ok(m) => {
            seen.borrow_mut().push((p.to_path_buf(), m.is_dir()));
            true
        }
        Err(_) => false,
    });
    let dirs = prepare_host(plan, &who, &binds, &seen.into_inner())?;
    join_cgroup(plan)?;
    // A kernel built without seccomp answers PR_GET_SECCOMP with EINVAL: nothing is
    // loaded there, as bpm (runc) does.
    let kernel_seccomp = !matches!(
        rustix::thread::secure_computing_mode(),
        Err(rustix::io::Errno::INVAL)
    );
    let filters = if plan.privileged || !kernel_seccomp {
        None
    } else {
        Some(
            crate::seccomp_program()
                .map_err(|e| Failure::refused("compile seccomp filter", "", e.0))?,
        )
    };
    let env = with_defaults(plan, env);
    let mut ns = nix::sched::CloneFlags::CLONE_NEWNS
        | nix::sched::CloneFlags::CLONE_NEWIPC
        | nix::sched::CloneFlags::CLONE_NEWUTS;
    if !plan.host_pid {
        ns |= nix::sched::CloneFlags::CLONE_NEWPID;
    }
    nix::sched::unshare(ns).map_err(|e| Failure::sys("unshare namespaces", "", e))?;
    let signals = if plan.host_pid {
        None
    } else {
        let sfd = tend_sys::signals::signalfd(&FORWARDED)
            .map_err(|e| Failure::sys("block signals", "", e))?;
        if let Forked::Parent(pid1) = fork().map_err(|e| Failure::sys("fork PID 1", "", e))? {
            return Ok(forward_until_exit(&sfd, pid1, false, plan.shutdown_signal));
        }
        // PID 1 dies with tend-jail outside (a SIGKILL there cannot be forwarded), and
        // the kernel then kills everything in the namespace.
        nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)
            .map_err(|e| Failure::sys("set parent-death signal", "", e))?;
        Some(sfd)
    };
    build_root(plan, &binds, &dirs)?;
    let cwd = plan.cwd();
    std::env::set_current_dir(&cwd).map_err(|e| Failure::io("chdir", &cwd, &e))?;
    if let Some(sfd) = &signals {
        if let Forked::Parent(child) = fork().map_err(|e| Failure::sys("fork program", "", e))? {
            return Ok(forward_until_exit(sfd, child, true, None));
        }
        tend_sys::process::reset_signals();
    }
    drop(signals);
    let prepared = tend_sys::exec::Prepared::new(argv, &env)
        .map_err(|e| Failure::sys("find program", Path::new(&argv[0]), e))?;
    credentials(plan, &who)?;
    limits(plan)?;
    if let Some(program) = &filters {
        seccompiler::apply_filter(program)
            .map_err(|e| Failure::refused("load seccomp filter", "", e.to_string()))?;
    }
    let e = tend_sys::exec::exec(&prepared);
    Err(Failure {
        step: "exec",
        path: argv[0].to_string_lossy().into_owned(),
        why: tend_sys::diagnose::describe(&argv[0], e),
        code: tend_sys::exec::exit_code_for(e),
    })
}

/// The user bpm runs the job as (`vcap`), from the host's /etc/passwd; root when
/// privileged. Supplementary groups are none, as runc sets them for bpm's spec.
fn account(user: &str, privileged: bool) -> Result<Account, Failure> {
    if privileged {
        return Ok(Account { uid: 0, gid: 0 });
    }
    let passwd = tend_account::userdb::read(Path::new("/etc/passwd"))
        .map_err(|e| Failure::io("read", "/etc/passwd", &e))?;
    match tend_account::userdb::find_user(&passwd, user.as_bytes()) {
        Some(u) => Ok(Account {
            uid: u.uid,
            gid: u.gid,
        }),
        None => Err(Failure::refused(
            "find user",
            user,
            "no such user in /etc/passwd",
        )),
    }
}

/// bpm's job directories on the host, made 0700 and owned by the user; a bind's source
/// that is (or passes through) a symbolic link below /var/vcap is refused, so a link
/// planted by the job cannot bind the host's files into the jail. Whether each bind's
/// source is a directory (`seen` has those already looked at).
fn prepare_host(
    plan: &Plan,
    who: &Account,
    binds: &[Bind],
    seen: &[(std::path::PathBuf, bool)],
) -> Result<Vec<bool>, Failure> {
    if plan.persistent_disk {
        let store = plan.host(Path::new("/var/vcap/store"));
        if !store.is_dir() {
            return Err(Failure::refused(
                "persistent disk",
                &store,
                "no such directory: the job asks for a persistent disk the machine has not",
            ));
        }
    }
    let mut owned = vec![plan.tmp_dir(), plan.log_dir()];
    if plan.ephemeral_disk {
        owned.push(plan.data_dir());
    }
    if plan.persistent_disk {
        owned.push(plan.store_dir());
    }
    owned.extend(
        plan.volumes
            .iter()
            .filter(|v| !v.mount_only)
            .map(|v| v.path.clone()),
    );
    // Every bind tend-jail does not make must be there before anything is made: a
    // machine without the job's layout is left as it was. What it makes is a directory.
    let mut dirs = Vec::with_capacity(binds.len());
    for (i, b) in binds.iter().enumerate() {
        let known = seen.iter().find(|(p, _)| *p == b.host).map(|&(_, d)| d);
        let earlier = binds[..i].iter().position(|x| x.host == b.host);
        let dir = if owned.iter().any(|o| plan.host(o) == b.host) {
            true
        } else if let Some(d) = known.or(earlier.map(|j| dirs[j])) {
            d
        } else {
            std::fs::metadata(&b.host)
                .map_err(|e| Failure::io("bind", &b.host, &e))?
                .is_dir()
        };
        dirs.push(dir);
    }
    // Each pass below looks at a path's parts once (`checked`), right before what it
    // guards: the making, the chown, the binds.
    let (mut before, mut after) = (Vec::new(), Vec::new());
    for inside in &owned {
        let host = plan.host(inside);
        no_link_below(&plan.vcap_root, &host, &mut before)?;
        std::fs::create_dir_all(&host).map_err(|e| Failure::io("create", &host, &e))?;
        no_link_below(&plan.vcap_root, &host, &mut after)?;
        std::os::unix::fs::chown(&host, Some(who.uid), Some(who.gid))
            .map_err(|e| Failure::io("chown", &host, &e))?;
        let mode = std::os::unix::fs::PermissionsExt::from_mode(0o700);
        std::fs::set_permissions(&host, mode).map_err(|e| Failure::io("chmod", &host, &e))?;
    }
    let mut checked = Vec::new();
    for b in binds {
        if b.host.starts_with(&plan.vcap_root) {
            no_link_below(&plan.vcap_root, &b.host, &mut checked)?;
        }
    }
    for b in binds.iter().filter(|b| b.shared) {
        make_shared(&b.host)?;
    }
    std::fs::create_dir_all(&plan.rootfs).map_err(|e| Failure::io("create", &plan.rootfs, &e))?;
    Ok(dirs)
}

/// bpm's `shared` on the host: `path` made a shared mount point, bound onto itself first
/// if it is not a mount point, under a lock on the directory so that two starts do not
/// both bind it. The host keeps the mount (bpm's does too): the next start finds it.
fn make_shared(path: &Path) -> Result<(), Failure> {
    let dir = std::fs::File::open(path).map_err(|e| Failure::io("share", path, &e))?;
    rustix::fs::flock(&dir, rustix::fs::FlockOperation::LockExclusive)
        .map_err(|e| Failure::rx("lock", path, e))?;
    let real = std::fs::canonicalize(path).map_err(|e| Failure::io("share", path, &e))?;
    let info = std::fs::read("/proc/self/mountinfo")
        .map_err(|e| Failure::io("read", "/proc/self/mountinfo", &e))?;
    let mounted = info.split(|&b| b == b'\n').any(|l| {
        l.split(|&b| b == b' ')
            .nth(4)
            .is_some_and(|m| unescape(m) == real.as_os_str().as_encoded_bytes())
    });
    if !mounted {
        rustix::mount::mount_bind(&real, &real).map_err(|e| Failure::rx("share", path, e))?;
    }
    let shared = rustix::mount::mount_change(&real, MountPropagationFlags::SHARED);
    if let Err(e) = shared {
        if !mounted {
            let _ = rustix::mount::unmount(&real, UnmountFlags::empty());
        }
        return Err(Failure::rx("share", path, e));
    }
    Ok(())
}

/// A mountinfo field with its octal escapes (`\040` for a space) undone.
fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let octal = field
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (field[i], octal) {
            (b'\\', Some(d)) => {
                out.push(d.iter().fold(0u8, |n, c| n.wrapping_mul(8) + (c - b'0')));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// Refuse `path` if any part of it below `root` is a symbolic link. The parts found not
/// to be one are added to `checked`, and the parts already there are not looked at again.
fn no_link_below(
    root: &Path,
    path: &Path,
    checked: &mut Vec<std::path::PathBuf>,
) -> Result<(), Failure> {
    let Ok(rel) = path.strip_prefix(root) else {
        return Ok(());
    };
    let mut p = root.to_path_buf();
    for c in rel.components() {
        p.push(c);
        if checked.contains(&p) {
            continue;
        }
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(Failure::refused(
                    "bind",
                    path,
                    format!("{} is a symbolic link: refused", p.display()),
                ));
            }
            Ok(_) => checked.push(p.clone()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Failure::io("inspect", &p, &e)),
        }
    }
    Ok(())
}

/// `limits.memory` and `limits.processes`: a cgroup v2 group, as tend-cgroup joins one.
/// OCI's swap limit is memory plus swap, and bpm gives it the memory limit, so no swap.
fn join_cgroup(plan: &Plan) -> Result<(), Failure> {
    let mut settings = Vec::new();
    let set = |file: &str, value: String| tend_cgroups::Setting {
        file: file.into(),
        value,
    };
    if let Some(m) = plan.memory {
        settings.push(set("memory.max", m.to_string()));
        settings.push(set("memory.swap.max", "0".into()));
    }
    if let Some(n) = plan.processes {
        settings.push(set("pids.max", n.to_string()));
    }
    if settings.is_empty() {
        return Ok(());
    }
    let path = plan
        .cgroup
        .clone()
        .unwrap_or_else(|| Path::new("tend-jail").join(&plan.job));
    tend_cgroups::join(&path, &settings)
        .map(|_| ())
        .map_err(|e| Failure::refused("join cgroup", &path, e.to_string()))
}

fn with_defaults(plan: &Plan, env: &[(OsString, OsString)]) -> Vec<(OsString, OsString)> {
    let mut env = env.to_vec();
    for (k, v) in plan.default_env() {
        if !env.iter().any(|(name, _)| name == k) {
            env.push((k.into(), v.into()));
        }
    }
    env
}

/// bpm's stop after the shutdown signal: SIGQUIT 15 s later (its DefaultStopTimeout),
/// then SIGKILL 2 s after that.
const STOP_STEPS: [(std::time::Duration, Signal); 2] = [
    (std::time::Duration::from_secs(15), Signal::SIGQUIT),
    (std::time::Duration::from_secs(2), Signal::SIGKILL),
];

/// Forward the signals taken to `child` until it ends; its exit code (128+n for a death
/// by signal n). As PID 1 (`reap_all`), every other child that ends is reaped too. With
/// `stop`, that signal also starts bpm's stop: QUIT, then KILL (of PID 1: the kernel
/// then kills the whole namespace).
fn forward_until_exit(
    sfd: &nix::sys::signalfd::SignalFd,
    child: Pid,
    reap_all: bool,
    stop: Option<i32>,
) -> i32 {
    let mut next: Option<(std::time::Instant, usize)> = None;
    loop {
        let timeout = match next {
            None => nix::poll::PollTimeout::NONE,
            Some((at, _)) => {
                let left = at.saturating_duration_since(std::time::Instant::now());
                nix::poll::PollTimeout::try_from(left.as_millis().min(i32::MAX as u128) as i32)
                    .unwrap_or(nix::poll::PollTimeout::NONE)
            }
        };
        let mut fds = [nix::poll::PollFd::new(
            std::os::fd::AsFd::as_fd(sfd),
            nix::poll::PollFlags::POLLIN,
        )];
        let _ = nix::poll::poll(&mut fds, timeout);
        if let Some((at, step)) = next
            && std::time::Instant::now() >= at
        {
            let _ = nix::sys::signal::kill(child, STOP_STEPS[step].1);
            next = STOP_STEPS
                .get(step + 1)
                .map(|(after, _)| (std::time::Instant::now() + *after, step + 1));
        }
        while let Ok(Some(info)) = sfd.read_signal() {
            let Ok(sig) = Signal::try_from(info.ssi_signo as i32) else {
                continue;
            };
            if sig != Signal::SIGCHLD {
                let _ = nix::sys::signal::kill(child, sig);
                if stop == Some(sig as i32) && next.is_none() {
                    next = Some((std::time::Instant::now() + STOP_STEPS[0].0, 0));
                }
            }
        }
        loop {
            let which = if reap_all { None } else { Some(child) };
            match tend_sys::wait::reap(which) {
                Ok(Some((pid, st))) if pid == child => return st.shell_code(),
                Ok(Some(_)) => continue,
                _ => break,
            }
        }
    }
}

/// The mount namespace's new root: binds, fresh proc/dev/sys, pivot_root, then bpm's
/// masked and read-only paths.
fn build_root(plan: &Plan, binds: &[Bind], dirs: &[bool]) -> Result<(), Failure> {
    // A shared volume's tree is cloned while this namespace's copy of the host's mount is
    // still its peer: the clone stays a peer, where making everything private below
    // would cut it off.
    let mut trees = Vec::new();
    for b in binds.iter().filter(|b| b.shared) {
        use rustix::mount::OpenTreeFlags as T;
        let flags = T::OPEN_TREE_CLONE | T::OPEN_TREE_CLOEXEC | T::AT_RECURSIVE;
        let tree = rustix::mount::open_tree(rustix::fs::CWD, &b.host, flags)
            .map_err(|e| Failure::rx("clone shared volume", &b.host, e))?;
        trees.push((b.inside.clone(), tree));
    }
    rustix::mount::mount_change(
        "/",
        MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
    )
    .map_err(|e| Failure::rx("make mounts private", "/", e))?;
    let root = &plan.rootfs;
    let made = &mut Made(vec![root.clone()]);
    let nosuid = if plan.privileged {
        MountFlags::empty()
    } else {
        MountFlags::NOSUID
    };
    mount_fs(
        made,
        "tmpfs",
        root,
        "tmpfs",
        nosuid | MountFlags::NODEV,
        "mode=755",
    )?;
    for (b, &dir) in binds.iter().zip(dirs) {
        let tree = trees.iter().find(|(inside, _)| *inside == b.inside);
        bind(made, root, b, dir, nosuid, tree.map(|(_, fd)| fd))?;
    }
    let within = |p: &str| root.join(p.trim_start_matches('/'));
    mount_fs(
        made,
        "proc",
        &within("/proc"),
        "proc",
        MountFlags::empty(),
        "",
    )?;
    mount_fs(
        made,
        "tmpfs",
        &within("/dev"),
        "tmpfs",
        nosuid | MountFlags::NOEXEC,
        "mode=755,size=65536k",
    )?;
    devices(&within("/dev"))?;
    mount_fs(
        made,
        "devpts",
        &within("/dev/pts"),
        "devpts",
        nosuid | MountFlags::NOEXEC,
        "newinstance,ptmxmode=0666,mode=0620,gid=5",
    )?;
    let sealed = nosuid | MountFlags::NOEXEC | MountFlags::NODEV;
    mount_fs(
        made,
        "shm",
        &within("/dev/shm"),
        "tmpfs",
        sealed,
        "mode=1777,size=65536k",
    )?;
    mount_fs(made, "mqueue", &within("/dev/mqueue"), "mqueue", sealed, "")?;
    mount_fs(
        made,
        "sysfs",
        &within("/sys"),
        "sysfs",
        sealed | MountFlags::RDONLY,
        "",
    )?;
    std::env::set_current_dir(root).map_err(|e| Failure::io("chdir", root, &e))?;
    rustix::process::pivot_root(".", ".").map_err(|e| Failure::rx("pivot_root", root, e))?;
    rustix::mount::unmount(".", UnmountFlags::DETACH)
        .map_err(|e| Failure::rx("detach old root", "/", e))?;
    std::env::set_current_dir("/").map_err(|e| Failure::io("chdir", "/", &e))?;
    if !plan.privileged {
        for p in crate::plan::MASKED {
            mask(Path::new(p))?;
        }
        for p in crate::plan::READ_ONLY {
            read_only(Path::new(p))?;
        }
    }
    Ok(())
}

/// The directories known to be in the new root, so that each is made once, parents
/// first, without create_dir_all's tries from the deepest (the root's tmpfs starts
/// empty: most are new).
struct Made(Vec<std::path::PathBuf>);

impl Made {
    /// Make `p` and its parents, where not known to be there.
    fn dir(&mut self, p: &Path) -> Result<(), Failure> {
        if self.0.iter().any(|m| m == p) {
            return Ok(());
        }
        if let Some(parent) = p.parent().filter(|q| !q.as_os_str().is_empty()) {
            self.dir(parent)?;
        }
        match rustix::fs::mkdir(p, rustix::fs::Mode::from_raw_mode(0o777)) {
            Ok(()) => {}
            // There already (below a bind of the host's): a directory, or refused.
            Err(rustix::io::Errno::EXIST) => {
                let st = rustix::fs::stat(p).map_err(|e| Failure::rx("create", p, e))?;
                if rustix::fs::FileType::from_raw_mode(st.st_mode)
                    != rustix::fs::FileType::Directory
                {
                    return Err(Failure::rx("create", p, rustix::io::Errno::EXIST));
                }
            }
            Err(e) => return Err(Failure::rx("create", p, e)),
        }
        self.0.push(p.to_path_buf());
        Ok(())
    }

    /// Something was mounted on `p`: what was made below it is hidden.
    fn mounted(&mut self, p: &Path) {
        self.0.retain(|m| m == p || !m.starts_with(p));
    }
}

fn mount_fs(
    made: &mut Made,
    source: &str,
    target: &Path,
    fstype: &str,
    flags: MountFlags,
    data: &str,
) -> Result<(), Failure> {
    made.dir(target)?;
    let data = CString::new(data).map_err(|_| Failure::sys("mount", target, Errno::EINVAL))?;
    let data = (!data.is_empty()).then_some(data.as_c_str());
    rustix::mount::mount(source, target, fstype, flags, data)
        .map_err(|e| Failure::rx("mount", target, e))?;
    made.mounted(target);
    Ok(())
}

/// One bind: the target made (a directory, or an empty file for a file), bound
/// recursively, then remounted with bpm's flags (read-only unless writable, noexec
/// unless exec, always nodev and, unless privileged, nosuid).
fn bind(
    made: &mut Made,
    root: &Path,
    b: &Bind,
    dir: bool,
    nosuid: MountFlags,
    tree: Option<&std::os::fd::OwnedFd>,
) -> Result<(), Failure> {
    let target = root.join(b.inside.strip_prefix("/").unwrap_or(&b.inside));
    if dir {
        made.dir(&target)?;
    } else {
        if let Some(parent) = target.parent() {
            made.dir(parent)?;
        }
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&target)
            .map_err(|e| Failure::io("create", &target, &e))?;
    }
    match tree {
        Some(fd) => rustix::mount::move_mount(
            fd,
            "",
            rustix::fs::CWD,
            &target,
            rustix::mount::MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
        ),
        None => rustix::mount::mount_bind_recursive(&b.host, &target),
    }
    .map_err(|e| Failure::rx("bind", &b.inside, e))?;
    made.mounted(&target);
    let mut flags = MountFlags::BIND | MountFlags::NODEV | nosuid;
    if !b.writable {
        flags |= MountFlags::RDONLY;
    }
    if !b.exec {
        flags |= MountFlags::NOEXEC;
    }
    rustix::mount::mount_remount(&target, flags, "")
        .map_err(|e| Failure::rx("remount", &b.inside, e))
}

/// The device nodes and links runc makes in a container's /dev.
fn devices(dev: &Path) -> Result<(), Failure> {
    use rustix::fs::Mode;
    let dir = rustix::fs::open(dev, rustix::fs::OFlags::DIRECTORY, Mode::empty())
        .map_err(|e| Failure::rx("open", dev, e))?;
    // The nodes' mode as given, not less the umask (one call, where a chmod of each
    // node took six); the umask is put back for the program.
    let umask = rustix::process::umask(Mode::empty());
    let made = nodes(&dir, dev);
    rustix::process::umask(umask);
    made?;
    for (name, to) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
        ("ptmx", "pts/ptmx"),
        ("core", "/proc/kcore"),
    ] {
        rustix::fs::symlinkat(to, &dir, name)
            .map_err(|e| Failure::rx("symlink", dev.join(name), e))?;
    }
    Ok(())
}

/// The device nodes, 0666, in `dir` (open on `dev`).
fn nodes(dir: &std::os::fd::OwnedFd, dev: &Path) -> Result<(), Failure> {
    use rustix::fs::{FileType, Mode, makedev, mknodat};
    for (name, major, minor) in [
        ("null", 1, 3),
        ("zero", 1, 5),
        ("full", 1, 7),
        ("random", 1, 8),
        ("urandom", 1, 9),
        ("tty", 5, 0),
    ] {
        mknodat(
            dir,
            name,
            FileType::CharacterDevice,
            Mode::from_raw_mode(0o666),
            makedev(major, minor),
        )
        .map_err(|e| Failure::rx("mknod", dev.join(name), e))?;
    }
    Ok(())
}

/// Hide `p`: an empty read-only tmpfs over a directory, /dev/null over a file; a path
/// the kernel does not have is left alone, as runc does.
fn mask(p: &Path) -> Result<(), Failure> {
    match std::fs::metadata(p) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Failure::io("mask", p, &e)),
        Ok(m) if m.is_dir() => rustix::mount::mount("tmpfs", p, "tmpfs", MountFlags::RDONLY, None)
            .map_err(|e| Failure::rx("mask", p, e)),
        Ok(_) => rustix::mount::mount_bind("/dev/null", p).map_err(|e| Failure::rx("mask", p, e)),
    }
}

/// Make `p` read-only, keeping the flags it has (nosuid, noexec... of its mount).
fn read_only(p: &Path) -> Result<(), Failure> {
    if let Err(e) = std::fs::symlink_metadata(p) {
        if e.kind() == std::io::ErrorKind::NotFound {
            return Ok(());
        }
        return Err(Failure::io("make read-only", p, &e));
    }
    rustix::mount::mount_bind_recursive(p, p).map_err(|e| Failure::rx("make read-only", p, e))?;
    let have = rustix::fs::statvfs(p).map_err(|e| Failure::rx("make read-only", p, e))?;
    let mut flags = MountFlags::BIND | MountFlags::RDONLY;
    for (st, ms) in [
        (rustix::fs::StatVfsMountFlags::NOSUID, MountFlags::NOSUID),
        (rustix::fs::StatVfsMountFlags::NODEV, MountFlags::NODEV),
        (rustix::fs::StatVfsMountFlags::NOEXEC, MountFlags::NOEXEC),
    ] {
        if have.f_flag.contains(st) {
            flags |= ms;
        }
    }
    rustix::mount::mount_remount(p, flags, "").map_err(|e| Failure::rx("make read-only", p, e))
}

/// Groups, gid, uid; then the capability sets (bounding, permitted, inheritable,
/// effective, ambient), then no_new_privs.
fn credentials(plan: &Plan, who: &Account) -> Result<(), Failure> {
    use rustix::thread::{CapabilitySet, CapabilitySets};
    // A capability tend-jail itself has not (a container's bounding set) cannot be given.
    let have =
        rustix::thread::capabilities(None).map_err(|e| Failure::rx("read capabilities", "", e))?;
    let wanted = plan.capabilities() & have.permitted.bits();
    for i in 0..caps::known() {
        if wanted & (1 << i) == 0 {
            let one = CapabilitySet::from_bits_retain(1 << i);
            match rustix::thread::remove_capability_from_bounding_set(one) {
                Ok(()) | Err(rustix::io::Errno::INVAL) => {}
                Err(e) => return Err(Failure::rx("drop bounding capability", "", e)),
            }
        }
    }
    nix::unistd::setgroups(&[]).map_err(|e| Failure::sys("setgroups", "", e))?;
    let gid = nix::unistd::Gid::from_raw(who.gid);
    nix::unistd::setresgid(gid, gid, gid).map_err(|e| Failure::sys("setgid", "", e))?;
    rustix::thread::set_keep_capabilities(true)
        .map_err(|e| Failure::rx("keep capabilities", "", e))?;
    let uid = nix::unistd::Uid::from_raw(who.uid);
    nix::unistd::setresuid(uid, uid, uid).map_err(|e| Failure::sys("setuid", "", e))?;
    let set = CapabilitySet::from_bits_retain(wanted);
    rustix::thread::set_capabilities(
        None,
        CapabilitySets {
            effective: set,
            permitted: set,
            inheritable: set,
        },
    )
    .map_err(|e| Failure::rx("set capabilities", "", e))?;
    rustix::thread::set_keep_capabilities(false)
        .map_err(|e| Failure::rx("keep capabilities", "", e))?;
    for one in caps::each(wanted) {
        rustix::thread::configure_capability_in_ambient_set(one, true)
            .map_err(|e| Failure::rx("raise ambient capability", "", e))?;
    }
    if !plan.privileged {
        rustix::thread::set_no_new_privs(true).map_err(|e| Failure::rx("no_new_privs", "", e))?;
    }
    Ok(())
}

/// `limits.open_files` (soft = hard) and `limits.core_file_size`.
fn limits(plan: &Plan) -> Result<(), Failure> {
    use nix::sys::resource::{Resource, setrlimit};
    for (r, name, v) in [
        (Resource::RLIMIT_NOFILE, "RLIMIT_NOFILE", plan.open_files),
        (Resource::RLIMIT_CORE, "RLIMIT_CORE", plan.core_file_size),
    ] {
        if let Some(v) = v {
            setrlimit(r, v, v).map_err(|e| Failure::sys("setrlimit", name, e))?;
        }
    }
    Ok(())
}
