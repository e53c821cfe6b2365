//! Signal names as s6-svstat prints them (skalibs' table: `SIGPOLL` for 29, `SIG???` for
//! numbers it does not know, real-time signals included).

const NAMES: [&str; 32] = [
    "0", "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL", "USR1", "SEGV", "USR2",
    "PIPE", "ALRM", "TERM", "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN", "TTOU", "URG",
    "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "POLL", "PWR", "SYS",
];

/// The name without `SIG` (`TERM`), or `???` for numbers outside 1..=31.
pub fn short(signo: u32) -> &'static str {
    match signo {
        1..=31 => NAMES[signo as usize],
        _ => "???",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_s6() {
        assert_eq!(short(15), "TERM");
        assert_eq!(short(9), "KILL");
        assert_eq!(short(29), "POLL");
        assert_eq!(short(31), "SYS");
        assert_eq!(short(32), "???");
        assert_eq!(short(0), "???");
    }
}
