//! The wait status that waitpid(2) returns, decoded in one place: s6 stores the same
//! bits (the low 16) in `supervise/status` and hands them to ./finish.

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

    /// WIFSIGNALED ? WTERMSIG : none (neither exited nor stopped).
    pub fn term_signal(self) -> Option<u8> {
        let s = self.low();
        (s != 0 && s != 0x7f).then_some(s)
    }
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
    }
}
