//! tend-init as the init of a VM guest: the kernel runs it as PID 1 with nothing
//! mounted. Before the container stages it mounts what is missing (/proc, /sys, /dev,
//! /dev/pts, /dev/shm, /run, cgroup v2 or v1 by the command line), links /dev/ptmx to
//! pts/ptmx, brings up `lo`, names the host and reads its settings also from the kernel
//! command line (`tend.*`); each step is skipped when already done, as kata-agent's own
//! init does. Agent mode (`tend.main=`) is this with a main program as the command. The stages are the container
//! ones (`run_stages`), with stop signals acted on instead of forwarded: SIGTERM and
//! SIGPWR power off, SIGINT (ctrl-alt-del) reboots, SIGUSR1 halts. After stage 3 it
//! syncs, unmounts (or remounts read-only) what it mounted, drains the console and
//! calls reboot(2). It never exits: a PID 1 that exits panics the kernel.
//!
//! `crate::start` picks this mode; outside PID 1 (`-m guest` in a test) the machine is left alone: no mounts, no host
//! name, no reboot(2); init exits as in a container.

use crate::run_stages;
use crate::settings::Settings;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use tend_sys::Error;
use tend_sys::machine::{self, RebootCmd};
use tend_sys::warn::Warn;

/// What a stopped guest does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Poweroff,
    Reboot,
    Halt,
}

impl Action {
    /// SIGTERM and SIGPWR power off, SIGINT (ctrl-alt-del) reboots, SIGUSR1 halts.
    pub fn of_signal(sig: Signal) -> Option<Action> {
        match sig {
            Signal::SIGTERM | Signal::SIGPWR => Some(Action::Poweroff),
            Signal::SIGINT => Some(Action::Reboot),
            Signal::SIGUSR1 => Some(Action::Halt),
            _ => None,
        }
    }

    /// The signal `tend-init -a` sends for it.
    pub fn signal(self) -> Signal {
        match self {
            Action::Poweroff => Signal::SIGTERM,
            Action::Reboot => Signal::SIGINT,
            Action::Halt => Signal::SIGUSR1,
        }
    }

    pub fn parse(s: &OsStr) -> Option<Action> {
        match s.as_bytes() {
            b"poweroff" => Some(Action::Poweroff),
            b"reboot" => Some(Action::Reboot),
            b"halt" => Some(Action::Halt),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Action::Poweroff => "poweroff",
            Action::Reboot => "reboot",
            Action::Halt => "halt",
        }
    }

    fn reboot_cmd(self) -> RebootCmd {
        match self {
            Action::Poweroff => RebootCmd::PowerOff,
            Action::Reboot => RebootCmd::Restart,
            Action::Halt => RebootCmd::Halt,
        }
    }
}

/// `tend-init -a action`: signal the running init (PID 1) and return at once.
pub fn request(action: Action) -> Result<(), Error> {
    kill(Pid::from_raw(1), action.signal()).map_err(|e| Error::new("signal PID 1", e))
}

/// A kernel's PID 1 starts without /proc: mount it before the settings are read (the
/// kernel command line is in it).
pub(crate) fn mount_proc(mounted: &mut Vec<&'static str>, say: &dyn Warn) {
    mount_missing(
        mounted,
        &MountPoints::read(),
        say,
        "/proc",
        "proc",
        NOSUID_NODEV_NOEXEC,
        None,
    );
}

/// A VM's PID 1: boot (mounts, lo, host name), the stages, then sync, unmount and
/// reboot(2). Never returns.
pub(crate) fn boot_run_shutdown(
    settings: &Settings,
    mounted: &mut Vec<&'static str>,
    command: &[OsString],
    say: &dyn Warn,
) -> ! {
    boot(settings, mounted, say);
    let action = match run_stages(settings, command, say, true) {
        Ok((_, action)) => action,
        Err(e) => {
            say.say("fatal", &format_args!("{e}"));
            Action::Poweroff
        }
    };
    shutdown(mounted, action, say)
}

const NOSUID_NODEV_NOEXEC: libc::c_ulong = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;

/// Mount `fstype` on `target` unless something is mounted there already.
fn mount_missing(
    mounted: &mut Vec<&'static str>,
    present: &MountPoints,
    say: &dyn Warn,
    target: &'static str,
    fstype: &str,
    flags: libc::c_ulong,
    data: Option<&str>,
) {
    if present.has(target) {
        return;
    }
    let _ = std::fs::create_dir_all(target);
    match machine::mount(fstype, target, fstype, flags, data) {
        Ok(()) => mounted.push(target),
        Err(e) => say.say(
            "warning",
            &format_args!("unable to mount {fstype} on {target}: {}", e.desc()),
        ),
    }
}

/// Whether the kernel command line asks for the legacy cgroup v1 hierarchy, by the
/// words kata-agent and systemd read: `systemd.unified_cgroup_hierarchy=0` (or `false`,
/// `no`) asks for v1, unless `cgroup_no_v1=all` forbids it; anything else is cgroup2,
/// tend-init's default.
pub fn wants_cgroup_v1(cmdline: &[u8]) -> bool {
    let mut v1 = false;
    for word in cmdline.split(|b| b.is_ascii_whitespace()) {
        match word {
            b"systemd.unified_cgroup_hierarchy=0"
            | b"systemd.unified_cgroup_hierarchy=false"
            | b"systemd.unified_cgroup_hierarchy=no" => v1 = true,
            b"systemd.unified_cgroup_hierarchy=1"
            | b"systemd.unified_cgroup_hierarchy=true"
            | b"systemd.unified_cgroup_hierarchy=yes"
            | b"systemd.unified_cgroup_hierarchy" => v1 = false,
            _ => {}
        }
    }
    let no_v1 = cmdline
        .split(|b| b.is_ascii_whitespace())
        .any(|w| w == b"cgroup_no_v1=all");
    v1 && !no_v1
}

/// cgroup v1: a tmpfs on /sys/fs/cgroup, then one hierarchy per enabled controller of
/// /proc/cgroups at /sys/fs/cgroup/NAME; each mount skipped when already there.
fn mount_cgroup_v1(mounted: &mut Vec<&'static str>, present: &MountPoints, say: &dyn Warn) {
    let nsne = NOSUID_NODEV_NOEXEC;
    mount_missing(
        mounted,
        present,
        say,
        "/sys/fs/cgroup",
        "tmpfs",
        nsne,
        Some("mode=0755"),
    );
    let table = std::fs::read("/proc/cgroups").unwrap_or_default();
    let mut any = false;
    for line in table
        .split(|&b| b == b'\n')
        .filter(|l| !l.starts_with(b"#"))
    {
        let f: Vec<&[u8]> = line.split(|&b| b == b'\t').collect();
        let [name, _, _, enabled] = f[..] else {
            continue;
        };
        let Ok(name) = std::str::from_utf8(name) else {
            continue;
        };
        if enabled != b"1" || name.is_empty() {
            continue;
        }
        let target = format!("/sys/fs/cgroup/{name}");
        if present.has(&target) {
            continue;
        }
        let _ = std::fs::create_dir_all(&target);
        match machine::mount("cgroup", &target, "cgroup", nsne, Some(name)) {
            Ok(()) => any = true,
            Err(e) => say.say(
                "warning",
                &format_args!("unable to mount cgroup {name} on {target}: {}", e.desc()),
            ),
        }
    }
    if any {
        mounted.push("/sys/fs/cgroup/*");
    }
}

/// /proc/self/mounts, read once for all the mounts of the boot (none without /proc): the
/// targets are distinct, so what init itself mounts never needs looking up again.
struct MountPoints(Vec<u8>);

impl MountPoints {
    fn read() -> MountPoints {
        MountPoints(std::fs::read("/proc/self/mounts").unwrap_or_default())
    }

    fn has(&self, target: &str) -> bool {
        self.0
            .split(|&b| b == b'\n')
            .any(|l| l.split(|&b| b == b' ').nth(1) == Some(target.as_bytes()))
    }
}

/// Everything a kernel leaves to init before the stages: mounts, the console as stdio,
/// `lo`, the host name, ctrl-alt-del as SIGINT.
fn boot(settings: &Settings, mounted: &mut Vec<&'static str>, say: &dyn Warn) {
    let nsne = NOSUID_NODEV_NOEXEC;
    let present = &MountPoints::read();
    mount_missing(mounted, present, say, "/proc", "proc", nsne, None);
    mount_missing(mounted, present, say, "/sys", "sysfs", nsne, None);
    mount_missing(
        mounted,
        present,
        say,
        "/dev",
        "devtmpfs",
        libc::MS_NOSUID,
        Some("mode=0755"),
    );
    let pts = "gid=5,mode=620,ptmxmode=666";
    let pts_flags = libc::MS_NOSUID | libc::MS_NOEXEC;
    mount_missing(
        mounted,
        present,
        say,
        "/dev/pts",
        "devpts",
        pts_flags,
        Some(pts),
    );
    let nsnd = libc::MS_NOSUID | libc::MS_NODEV;
    mount_missing(
        mounted,
        present,
        say,
        "/dev/shm",
        "tmpfs",
        nsnd,
        Some("mode=1777"),
    );
    mount_missing(
        mounted,
        present,
        say,
        "/run",
        "tmpfs",
        nsnd,
        Some("mode=0755"),
    );
    let cmdline = std::fs::read("/proc/cmdline").unwrap_or_default();
    if wants_cgroup_v1(&cmdline) {
        mount_cgroup_v1(mounted, present, say);
    } else if std::fs::read("/proc/filesystems")
        .is_ok_and(|f| f.split(|&b| b == b'\n').any(|l| l.ends_with(b"\tcgroup2")))
    {
        mount_missing(
            mounted,
            present,
            say,
            "/sys/fs/cgroup",
            "cgroup2",
            nsne,
            None,
        );
    }
    if !mounted.is_empty() {
        say.say("info", &format_args!("mounted {}", mounted.join(" ")));
    }
    if let Err(e) = ptmx_link() {
        say.say(
            "warning",
            &format_args!("unable to link /dev/ptmx to pts/ptmx: {e}"),
        );
    }
    if let Err(e) = machine::loopback_up() {
        say.say(
            "warning",
            &format_args!("unable to bring lo up: {}", e.desc()),
        );
    }
    if let Some(name) = host_name(settings) {
        match machine::set_hostname(name.as_bytes()) {
            Ok(()) => say.say("info", &format_args!("hostname {}", show(&name))),
            Err(e) => say.say(
                "warning",
                &format_args!("unable to set the hostname {}: {}", show(&name), e.desc()),
            ),
        }
    }
    if let Err(e) = machine::disable_cad() {
        say.say(
            "warning",
            &format_args!("unable to turn ctrl-alt-del into SIGINT: {}", e.desc()),
        );
    }
}

/// /dev/ptmx as a link to the devpts instance's own ptmx, as kata-agent makes it: a pty
/// opened through it belongs to the /dev/pts mounted here, whatever devtmpfs holds.
/// Left alone when it is that link already.
fn ptmx_link() -> std::io::Result<()> {
    let (link, target) = (Path::new("/dev/ptmx"), Path::new("pts/ptmx"));
    if std::fs::read_link(link).is_ok_and(|t| t == target) {
        return Ok(());
    }
    match std::fs::remove_file(link) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    std::os::unix::fs::symlink(target, link)
}

fn show(s: &OsStr) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(s.as_bytes())
}

/// The option or parameter, else the first line of /etc/hostname.
fn host_name(settings: &Settings) -> Option<OsString> {
    if let Some(n) = &settings.hostname {
        return Some(n.clone());
    }
    let f = std::fs::read("/etc/hostname").ok()?;
    let line = f.split(|&b| b == b'\n').next()?.trim_ascii();
    (!line.is_empty()).then(|| OsStr::from_bytes(line).to_os_string())
}

/// The static service behind `tend.console=TTY`: a shell on the tty, respawned by its
/// supervisor. The supervisor makes it a session leader, so opening the tty makes it
/// the shell's controlling terminal (job control, ctrl-c).
pub(crate) fn console_service(scan_dir: &Path, tty: &Path) -> Result<(), Error> {
    let dir = scan_dir.join("tend-console");
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("create", &dir, &e))?;
    let run = dir.join(tend_proto::servicedir::RUN);
    let mut script =
        b"#!/bin/sh\n# tend-init's debug console (tend.console=)\nexec /bin/sh -i <>".to_vec();
    script.extend_from_slice(tty.as_os_str().as_bytes());
    script.extend_from_slice(b" >&0 2>&0\n");
    std::fs::write(&run, script).map_err(|e| Error::io("write", &run, &e))?;
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| Error::io("chmod", &run, &e))
}

/// After stage 3: sync, unmount (or remount read-only) what init mounted and the root,
/// drain the console so the last line is not lost, reboot(2). Never returns.
fn shutdown(mounted: &[&'static str], action: Action, say: &dyn Warn) -> ! {
    say.say("info", &format_args!("syncing and unmounting"));
    machine::sync();
    for target in mounted.iter().rev() {
        if machine::umount(target).is_err()
            && let Err(e) = machine::remount_ro(target)
        {
            say.say(
                "warning",
                &format_args!("unable to unmount {target}: {}", e.desc()),
            );
        }
    }
    // The root of an initramfs cannot be made read-only, and need not be.
    let _ = machine::remount_ro("/");
    machine::sync();
    say.say("info", &format_args!("{}", Farewell(action)));
    for fd in [1, 2] {
        if let Ok(fd) = tend_sys::fd::stdio(fd) {
            let _ = nix::sys::termios::tcdrain(fd);
        }
    }
    let e = machine::reboot(action.reboot_cmd());
    say.say(
        "fatal",
        &format_args!("unable to {}: {}", action.name(), e.desc()),
    );
    // Nothing else to do, and exiting would panic the kernel.
    loop {
        nix::unistd::pause();
    }
}

struct Farewell(Action);

impl fmt::Display for Farewell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            Action::Poweroff => "powering off",
            Action::Reboot => "rebooting",
            Action::Halt => "halting",
        })
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn cgroup_version_by_the_command_line() {
        for (line, v1) in [
            (&b"console=ttyS0 quiet"[..], false),
            (b"systemd.unified_cgroup_hierarchy=0", true),
            (b"a systemd.unified_cgroup_hierarchy=false b", true),
            (
                b"systemd.unified_cgroup_hierarchy=0 systemd.unified_cgroup_hierarchy=1",
                false,
            ),
            (
                b"systemd.unified_cgroup_hierarchy=0 cgroup_no_v1=all",
                false,
            ),
            (b"xsystemd.unified_cgroup_hierarchy=0", false),
            (b"systemd.unified_cgroup_hierarchy=1", false),
        ] {
            assert_eq!(
                wants_cgroup_v1(line),
                v1,
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }

    use super::*;

    #[test]
    fn signals_and_actions_match() {
        for a in [Action::Poweroff, Action::Reboot, Action::Halt] {
            assert_eq!(Action::of_signal(a.signal()), Some(a));
            assert_eq!(Action::parse(OsStr::new(a.name())), Some(a));
        }
        assert_eq!(Action::of_signal(Signal::SIGPWR), Some(Action::Poweroff));
        assert_eq!(Action::of_signal(Signal::SIGHUP), None);
        assert_eq!(Action::parse(OsStr::new("off")), None);
    }

    #[test]
    fn the_console_service_opens_its_tty() {
        let dir = std::env::temp_dir().join(format!("tend-guest-{}", std::process::id()));
        console_service(&dir, Path::new("/dev/ttyS1")).unwrap();
        let run = std::fs::read_to_string(dir.join("tend-console/run")).unwrap();
        assert!(
            run.ends_with("exec /bin/sh -i <>/dev/ttyS1 >&0 2>&0\n"),
            "{run}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
