//! A service process that outlived its supervisor (SIGKILLed, killed by the OOM killer):
//! it keeps running unsupervised, holding what the service holds (a logdir's lock, a
//! port), and a new supervisor's fresh copy would fail on it for ever. `supervise/status`
//! still names it, with the time it was started; [`survivor`] says whether that very
//! process is alive (its start time in `/proc/PID/stat` matches the stamp, so a recycled
//! pid is never taken for it), and [`stop`] ends it, as a supervisor's `down` would.
//!
//! Not adopted: a process we did not fork gives us no wait status (for `./finish`'s
//! arguments, the death tally, restart policies), so it is stopped and started afresh.

use crate::status::StatusRecord;
use nix::sys::signal::{Signal, kill, killpg};
use nix::time::{ClockId, clock_gettime};
use nix::unistd::Pid;
use std::os::fd::AsFd;
use std::time::Duration;

/// How far a process's start may be from its status stamp: the stamp is taken around
/// the fork, and /proc's boot time is whole seconds on some kernels.
const SLACK_SECS: i64 = 2;

/// The process `rec` says is running, if it still is: same pid, started when the record
/// says. None when the record names none, when that pid is gone or is another process,
/// or is this process or its parent.
pub fn survivor(rec: &StatusRecord) -> Option<i32> {
    let pid = i32::try_from(rec.pid).ok().filter(|&p| p > 1)?;
    if pid == std::process::id() as i32 || Pid::from_raw(pid) == nix::unistd::getppid() {
        return None;
    }
    let started = started_at(pid)?;
    let (stamp, _) = rec.stamp.to_unix();
    ((started - stamp).abs() <= SLACK_SECS).then_some(pid)
}

/// When `pid` started, in Unix seconds: its start in boot-clock ticks (`/proc/PID/stat`
/// field 22) placed on the wall clock through the two clocks' current offset. None for
/// no such process, or a zombie.
fn started_at(pid: i32) -> Option<i64> {
    let stat = tend_sys::fd::read_regular(std::path::Path::new(&format!("/proc/{pid}/stat")), 4096)
        .ok()?;
    let after_name = stat.iter().rposition(|&b| b == b')')?;
    let mut fields = std::str::from_utf8(&stat[after_name + 1..])
        .ok()?
        .split_ascii_whitespace();
    // Fields from 3 on: state is 3, starttime 22.
    if fields.next()? == "Z" {
        return None;
    }
    let ticks: u64 = fields.nth(22 - 4)?.parse().ok()?;
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .filter(|&h| h > 0)? as u64;
    let boot = clock_gettime(ClockId::CLOCK_BOOTTIME).ok()?;
    let real = clock_gettime(ClockId::CLOCK_REALTIME).ok()?;
    let age_ms = (boot.tv_sec() as i64 * 1000 + boot.tv_nsec() as i64 / 1_000_000)
        - (ticks * 1000 / hz) as i64;
    Some(real.tv_sec() as i64 - age_ms.div_euclid(1000))
}

/// How [`stop`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// It left after SIGTERM.
    Terminated,
    /// It had to be killed.
    Killed,
    /// Still there after SIGKILL and the grace again (stuck in the kernel).
    Stuck,
}

/// SIGTERM and SIGCONT to `pid`'s process group when it leads one (a supervised
/// process is a session leader unless `nosetsid`), else to `pid`; SIGKILL after `grace`;
/// and wait for it to be gone (a pidfd, which reports an exit at once even if the new
/// parent has not reaped it yet).
pub fn stop(pid: i32, grace: Duration) -> Stopped {
    let p = Pid::from_raw(pid);
    let group = nix::unistd::getpgid(Some(p)).is_ok_and(|g| g == p);
    let send = |s: Signal| {
        let _ = if group { killpg(p, s) } else { kill(p, s) };
    };
    let Ok(fd) = rustix::process::pidfd_open(
        rustix::process::Pid::from_raw(pid).unwrap_or(rustix::process::Pid::INIT),
        rustix::process::PidfdFlags::empty(),
    ) else {
        return Stopped::Terminated; // already gone
    };
    let gone = |t: Duration| {
        let mut fds = [nix::poll::PollFd::new(
            fd.as_fd(),
            nix::poll::PollFlags::POLLIN,
        )];
        let ms = u16::try_from(t.as_millis()).unwrap_or(u16::MAX);
        loop {
            match nix::poll::poll(&mut fds, ms) {
                Ok(n) => return n > 0,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(_) => return false,
            }
        }
    };
    send(Signal::SIGTERM);
    send(Signal::SIGCONT);
    if gone(grace) {
        return Stopped::Terminated;
    }
    send(Signal::SIGKILL);
    if gone(grace) {
        Stopped::Killed
    } else {
        Stopped::Stuck
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Tai64n;

    #[test]
    fn this_process_started_a_moment_ago_by_its_own_clock() {
        let me = std::process::id() as i32;
        let started = started_at(me).unwrap();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        assert!(
            started <= now + 1 && started > now - 3600,
            "{started} vs {now}"
        );
        assert_eq!(started_at(0), None);
    }

    #[test]
    fn a_record_names_a_survivor_only_with_the_right_stamp() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id() as u64;
        let rec = |stamp| StatusRecord {
            pid,
            stamp,
            ..Default::default()
        };
        assert_eq!(survivor(&rec(Tai64n::now())), Some(pid as i32));
        let old = Tai64n::from_unix(1_000_000_000, 0);
        assert_eq!(survivor(&rec(old)), None, "a recycled pid");
        assert_eq!(survivor(&StatusRecord::default()), None);
        assert_eq!(
            stop(pid as i32, Duration::from_secs(5)),
            Stopped::Terminated
        );
        let _ = child.wait();
        assert_eq!(survivor(&rec(Tai64n::now())), None, "gone");
    }
}
