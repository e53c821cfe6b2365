//! The wait status that waitpid(2) returns, decoded in one place: s6 stores the same
//! bits (the low 16) in `supervise/status` and hands them to ./finish. Every program
//! that waits for a child does it here ([`reap`], [`wait`]) and reads the status as a
//! [`Wstat`].

use nix::errno::Errno;
use nix::unistd::Pid;

/// A raw wait status (`waitpid`'s `int`, or the 16 bits s6 keeps of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wstat(pub i32);

/// How a process ended, as a wait status without WUNTRACED can say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// exit(code): WIFEXITED, WEXITSTATUS.
    Exited(u8),
    /// Killed by this signal (the low 7 bits; nonzero).
    Signaled(u8),
}

impl Wstat {
    /// The low 7 bits: 0 when the process exited, else its signal (0x7f: stopped).
    fn low(self) -> u8 {
        (self.0 & 0x7f) as u8
    }

    /// Exited or killed: whatever is not an exit counts as death by the low bits' signal
    /// (a stopped status cannot come from a waitpid without WUNTRACED).
    pub fn ended(self) -> Ended {
        match self.exit_code() {
            Some(code) => Ended::Exited(code),
            None => Ended::Signaled(self.low()),
        }
    }

    /// WIFEXITED ? WEXITSTATUS : none.
    pub fn exit_code(self) -> Option<u8> {
        (self.low() == 0).then_some(((self.0 >> 8) & 0xff) as u8)
    }

    /// The low 16 bits, the part s6 keeps (`supervise/status`).
    pub fn low16(self) -> u16 {
        (self.0 & 0xffff) as u16
    }

    /// WIFSIGNALED ? WTERMSIG : none (neither exited nor stopped).
    pub fn term_signal(self) -> Option<u8> {
        let s = self.low();
        (s != 0 && s != 0x7f).then_some(s)
    }
}

impl Wstat {
    /// As a shell reports it: the exit code, or 128+N for death by signal N.
    pub fn shell_code(self) -> i32 {
        match self.ended() {
            Ended::Exited(c) => i32::from(c),
            Ended::Signaled(s) => 128 + i32::from(s),
        }
    }
}

/// waitpid(2) for `pid` (None: any child), retrying EINTR; `hang` false is WNOHANG.
/// Ok(None): WNOHANG and no child has ended yet. Errors: ECHILD (no such child).
#[allow(unsafe_code)]
fn waitpid(pid: Option<Pid>, hang: bool) -> Result<Option<(Pid, Wstat)>, Errno> {
    let flags = if hang { 0 } else { libc::WNOHANG };
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: waitpid writes only to our local status.
        let r = unsafe { libc::waitpid(pid.map_or(-1, Pid::as_raw), &mut status, flags) };
        match r {
            -1 if Errno::last() == Errno::EINTR => continue,
            -1 => return Err(Errno::last()),
            0 => return Ok(None),
            r => return Ok(Some((Pid::from_raw(r), Wstat(status)))),
        }
    }
}

/// Reap one ended child without blocking: `pid` (None: any child). Ok(None) when it
/// (or every child) is still running; Err(ECHILD) when there is no such child.
pub fn reap(pid: Option<Pid>) -> Result<Option<(Pid, Wstat)>, Errno> {
    waitpid(pid, false)
}

/// Wait for `pid` (None: any child) to end: which one, and how.
pub fn wait(pid: Option<Pid>) -> Result<(Pid, Wstat), Errno> {
    // A blocking waitpid returns a child or an error, never 0.
    waitpid(pid, true)?.ok_or(Errno::ECHILD)
}

impl From<u16> for Wstat {
    fn from(w: u16) -> Wstat {
        Wstat(i32::from(w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_as_the_libc_macros() {
        for w in [0, 0x100, 0x7f00, 0xff00, 9, 15, 0x8b, 0x7f, 0x137f, 0xffff] {
            let exited = libc::WIFEXITED(w);
            assert_eq!(
                Wstat(w).exit_code(),
                exited.then(|| libc::WEXITSTATUS(w) as u8),
                "{w:#x}"
            );
            assert_eq!(
                Wstat(w).term_signal(),
                libc::WIFSIGNALED(w).then(|| libc::WTERMSIG(w) as u8),
                "{w:#x}"
            );
        }
        assert_eq!(Wstat(0x2a00).ended(), Ended::Exited(42));
        assert_eq!(Wstat(9).ended(), Ended::Signaled(9));
        assert_eq!(Wstat(0x89).ended(), Ended::Signaled(9));
        assert_eq!(Wstat(0x2a00).shell_code(), 42);
        assert_eq!(Wstat(9).shell_code(), 137);
        assert_eq!(Wstat(0x8f).shell_code(), 143);
    }

    // The child is reaped by our own `wait`, which is what is tested.
    #[allow(clippy::zombie_processes)]
    #[test]
    fn waits_and_reaps() {
        let none = reap(Some(Pid::from_raw(i32::MAX)));
        assert_eq!(none, Err(Errno::ECHILD));
        let child = std::process::Command::new("sh")
            .args(["-c", "exit 3"])
            .spawn()
            .unwrap();
        let pid = Pid::from_raw(child.id() as i32);
        assert_eq!(wait(Some(pid)), Ok((pid, Wstat(0x300))));
    }
}
