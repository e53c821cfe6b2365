//! What only the init of a machine does: mount the early file systems, name the host,
//! bring the loopback interface up, and reboot(2). Thin wrappers over libc, so that no
//! nix feature has to be enabled for the one program that needs them.

#![allow(unsafe_code)]

use nix::errno::Errno;
use std::ffi::CString;

/// What reboot(2) does once everything is stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RebootCmd {
    PowerOff,
    Restart,
    Halt,
}

fn cstr(s: &[u8]) -> Result<CString, Errno> {
    CString::new(s).map_err(|_| Errno::EINVAL)
}

fn check(r: libc::c_int) -> Result<(), Errno> {
    if r == -1 { Err(Errno::last()) } else { Ok(()) }
}

/// mount(2) of a pseudo file system: `source` of type `fstype` on `target`.
pub fn mount(
    source: &str,
    target: &str,
    fstype: &str,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> Result<(), Errno> {
    let (s, t, f) = (
        cstr(source.as_bytes())?,
        cstr(target.as_bytes())?,
        cstr(fstype.as_bytes())?,
    );
    let d = data.map(|d| cstr(d.as_bytes())).transpose()?;
    let dp = d
        .as_ref()
        .map_or(std::ptr::null(), |d| d.as_ptr().cast::<libc::c_void>());
    // SAFETY: every pointer is a NUL-terminated string alive for the call, or null data.
    check(unsafe { libc::mount(s.as_ptr(), t.as_ptr(), f.as_ptr(), flags, dp) })
}

/// Remount `target` read-only.
pub fn remount_ro(target: &str) -> Result<(), Errno> {
    let t = cstr(target.as_bytes())?;
    let flags = libc::MS_REMOUNT | libc::MS_RDONLY;
    // SAFETY: t is a NUL-terminated string alive for the call; the other strings may be
    // null for a remount.
    check(unsafe {
        libc::mount(
            std::ptr::null(),
            t.as_ptr(),
            std::ptr::null(),
            flags,
            std::ptr::null(),
        )
    })
}

/// umount(2).
pub fn umount(target: &str) -> Result<(), Errno> {
    let t = cstr(target.as_bytes())?;
    // SAFETY: t is a NUL-terminated string alive for the call.
    check(unsafe { libc::umount(t.as_ptr()) })
}

/// sethostname(2).
pub fn set_hostname(name: &[u8]) -> Result<(), Errno> {
    // SAFETY: the pointer and length describe `name`, alive for the call.
    check(unsafe { libc::sethostname(name.as_ptr().cast(), name.len()) })
}

/// sync(2).
pub fn sync() {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::sync() }
}

/// Make ctrl-alt-del send SIGINT to init instead of rebooting at once.
pub fn disable_cad() -> Result<(), Errno> {
    // SAFETY: a plain system call with a constant argument.
    check(unsafe { libc::reboot(libc::RB_DISABLE_CAD) })
}

/// reboot(2): only returns on failure.
pub fn reboot(cmd: RebootCmd) -> Errno {
    let c = match cmd {
        RebootCmd::PowerOff => libc::RB_POWER_OFF,
        RebootCmd::Restart => libc::RB_AUTOBOOT,
        RebootCmd::Halt => libc::RB_HALT_SYSTEM,
    };
    // SAFETY: a plain system call with a constant argument.
    unsafe { libc::reboot(c) };
    Errno::last()
}

/// Set IFF_UP on the interface `lo` (the kernel gives it 127.0.0.1 by itself).
pub fn loopback_up() -> Result<(), Errno> {
    // SAFETY: socket(2) with constant arguments; the fd is owned right away.
    let s = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if s == -1 {
        return Err(Errno::last());
    }
    // SAFETY: socket just returned s; nothing else owns it.
    let sock = unsafe { crate::fd::own(s) };
    let fd = std::os::fd::AsRawFd::as_raw_fd(&sock);
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *d = *s as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS reads into the ifreq we own, alive for the call.
    check(unsafe { libc::ioctl(fd, libc::SIOCGIFFLAGS as _, &mut req) })?;
    // SAFETY: the kernel just filled ifru_flags (the union member SIOCGIFFLAGS sets).
    unsafe { req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short };
    // SAFETY: SIOCSIFFLAGS reads the ifreq we own, alive for the call.
    check(unsafe { libc::ioctl(fd, libc::SIOCSIFFLAGS as _, &req) })
}
