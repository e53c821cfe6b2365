//! Capability names, as bpm.yml and the command line give them (`NET_BIND_SERVICE`, with
//! or without `CAP_`), and the set bpm gives a privileged process.

use rustix::thread::CapabilitySet;

/// Every capability the kernel headers name, by number (capability.h).
const NAMES: [&str; 41] = [
    "CHOWN",
    "DAC_OVERRIDE",
    "DAC_READ_SEARCH",
    "FOWNER",
    "FSETID",
    "KILL",
    "SETGID",
    "SETUID",
    "SETPCAP",
    "LINUX_IMMUTABLE",
    "NET_BIND_SERVICE",
    "NET_BROADCAST",
    "NET_ADMIN",
    "NET_RAW",
    "IPC_LOCK",
    "IPC_OWNER",
    "SYS_MODULE",
    "SYS_RAWIO",
    "SYS_CHROOT",
    "SYS_PTRACE",
    "SYS_PACCT",
    "SYS_ADMIN",
    "SYS_BOOT",
    "SYS_NICE",
    "SYS_RESOURCE",
    "SYS_TIME",
    "SYS_TTY_CONFIG",
    "MKNOD",
    "LEASE",
    "AUDIT_WRITE",
    "AUDIT_CONTROL",
    "SETFCAP",
    "MAC_OVERRIDE",
    "MAC_ADMIN",
    "SYSLOG",
    "WAKE_ALARM",
    "BLOCK_SUSPEND",
    "AUDIT_READ",
    "PERFMON",
    "BPF",
    "CHECKPOINT_RESTORE",
];

/// bpm's privileged set: the 38 capabilities from CHOWN to AUDIT_READ.
pub const PRIVILEGED: u64 = (1 << 38) - 1;

/// The bit of a capability name (`NET_BIND_SERVICE` or `CAP_NET_BIND_SERVICE`, any case).
pub fn bit(name: &str) -> Option<u64> {
    let upper = name.to_ascii_uppercase();
    let bare = upper.strip_prefix("CAP_").unwrap_or(&upper);
    NAMES.iter().position(|n| *n == bare).map(|i| 1u64 << i)
}

/// The names of the bits of `set`, `CAP_`-less, in number order.
pub fn names(set: u64) -> impl Iterator<Item = &'static str> {
    NAMES
        .iter()
        .enumerate()
        .filter(move |(i, _)| set & (1 << i) != 0)
        .map(|(_, n)| *n)
}

/// Each capability of `set` on its own, as rustix takes it.
pub fn each(set: u64) -> impl Iterator<Item = CapabilitySet> {
    (0..NAMES.len())
        .filter(move |i| set & (1 << i) != 0)
        .map(|i| CapabilitySet::from_bits_retain(1 << i))
}

/// The number of capabilities this kernel knows (`/proc/sys/kernel/cap_last_cap` + 1),
/// so every one of them can be dropped from the bounding set; the table's when unknown.
pub fn known() -> usize {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .map_or(NAMES.len(), |last| (last + 1).min(64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_bits() {
        assert_eq!(bit("NET_BIND_SERVICE"), Some(1 << 10));
        assert_eq!(bit("cap_sys_admin"), Some(1 << 21));
        assert_eq!(bit("AUDIT_READ"), Some(1 << 37));
        assert_eq!(bit("FLY"), None);
        assert_eq!(names(PRIVILEGED).count(), 38);
        assert_eq!(names(1 << 10).collect::<Vec<_>>(), ["NET_BIND_SERVICE"]);
    }
}
