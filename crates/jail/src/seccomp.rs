//! bpm's seccomp allowlist, compiled for the machine's architecture into one classic BPF
//! program ([`compile`]: a binary search over runs of call numbers), which the tests hold
//! to the answers of seccompiler's compile of the same list.
//!
//! The list is bpm's (its spec builder's `DefaultSeccomp`, itself Garden's): every
//! other system call fails with EPERM. Two changes, both the issue's: `clone` is allowed
//! only when its flags ask for no new namespace (bpm's masked test, bits 0x7E020000), and
//! `clone3` fails with ENOSYS, so a C library falls back to `clone`, whose flags a filter
//! can read (clone3's are behind a pointer). bpm's filter is for x86 only; this one is
//! compiled for x86_64 or aarch64 from the same names, where the architecture has them
//! (aarch64 has no `open`, `stat`, `fork`...: its C library calls the `*at` forms, which
//! are on the list). The 32-bit names of bpm's list (`chown32`, `_llseek`, `socketcall`...)
//! have no number on either architecture.

use seccompiler::sock_filter;
use std::collections::BTreeMap;

/// The namespace bits of `clone`'s flags (CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC |
/// NEWUSER | NEWPID | NEWNET): a `clone` with any of them set is refused.
pub const CLONE_NAMESPACE_BITS: u64 = 0x7E02_0000;

/// The names on both architectures.
const COMMON: &[(&str, i64)] = &[
    ("accept", libc::SYS_accept),
    ("accept4", libc::SYS_accept4),
    ("bind", libc::SYS_bind),
    ("brk", libc::SYS_brk),
    ("capget", libc::SYS_capget),
    ("capset", libc::SYS_capset),
    ("chdir", libc::SYS_chdir),
    ("chroot", libc::SYS_chroot),
    ("clock_getres", libc::SYS_clock_getres),
    ("clock_gettime", libc::SYS_clock_gettime),
    ("clock_nanosleep", libc::SYS_clock_nanosleep),
    ("close", libc::SYS_close),
    ("connect", libc::SYS_connect),
    ("copy_file_range", libc::SYS_copy_file_range),
    ("dup", libc::SYS_dup),
    ("dup3", libc::SYS_dup3),
    ("epoll_create1", libc::SYS_epoll_create1),
    ("epoll_ctl", libc::SYS_epoll_ctl),
    ("epoll_pwait", libc::SYS_epoll_pwait),
    ("eventfd2", libc::SYS_eventfd2),
    ("execve", libc::SYS_execve),
    ("execveat", libc::SYS_execveat),
    ("exit", libc::SYS_exit),
    ("exit_group", libc::SYS_exit_group),
    ("faccessat", libc::SYS_faccessat),
    ("fadvise64", libc::SYS_fadvise64),
    ("fallocate", libc::SYS_fallocate),
    ("fanotify_mark", libc::SYS_fanotify_mark),
    ("fchdir", libc::SYS_fchdir),
    ("fchmod", libc::SYS_fchmod),
    ("fchmodat", libc::SYS_fchmodat),
    ("fchown", libc::SYS_fchown),
    ("fchownat", libc::SYS_fchownat),
    ("fcntl", libc::SYS_fcntl),
    ("fdatasync", libc::SYS_fdatasync),
    ("fgetxattr", libc::SYS_fgetxattr),
    ("flistxattr", libc::SYS_flistxattr),
    ("flock", libc::SYS_flock),
    ("fremovexattr", libc::SYS_fremovexattr),
    ("fsetxattr", libc::SYS_fsetxattr),
    ("fstat", libc::SYS_fstat),
    ("fstatfs", libc::SYS_fstatfs),
    ("fsync", libc::SYS_fsync),
    ("ftruncate", libc::SYS_ftruncate),
    ("futex", libc::SYS_futex),
    ("get_robust_list", libc::SYS_get_robust_list),
    ("getcpu", libc::SYS_getcpu),
    ("getcwd", libc::SYS_getcwd),
    ("getdents64", libc::SYS_getdents64),
    ("getegid", libc::SYS_getegid),
    ("geteuid", libc::SYS_geteuid),
    ("getgid", libc::SYS_getgid),
    ("getgroups", libc::SYS_getgroups),
    ("getitimer", libc::SYS_getitimer),
    ("getpeername", libc::SYS_getpeername),
    ("getpgid", libc::SYS_getpgid),
    ("getpid", libc::SYS_getpid),
    ("getppid", libc::SYS_getppid),
    ("getpriority", libc::SYS_getpriority),
    ("getrandom", libc::SYS_getrandom),
    ("getresgid", libc::SYS_getresgid),
    ("getresuid", libc::SYS_getresuid),
    ("getrusage", libc::SYS_getrusage),
    ("getsid", libc::SYS_getsid),
    ("getsockname", libc::SYS_getsockname),
    ("getsockopt", libc::SYS_getsockopt),
    ("gettid", libc::SYS_gettid),
    ("gettimeofday", libc::SYS_gettimeofday),
    ("getuid", libc::SYS_getuid),
    ("getxattr", libc::SYS_getxattr),
    ("inotify_add_watch", libc::SYS_inotify_add_watch),
    ("inotify_init1", libc::SYS_inotify_init1),
    ("inotify_rm_watch", libc::SYS_inotify_rm_watch),
    ("io_cancel", libc::SYS_io_cancel),
    ("io_destroy", libc::SYS_io_destroy),
    ("io_getevents", libc::SYS_io_getevents),
    ("io_setup", libc::SYS_io_setup),
    ("io_submit", libc::SYS_io_submit),
    ("ioctl", libc::SYS_ioctl),
    ("ioprio_get", libc::SYS_ioprio_get),
    ("ioprio_set", libc::SYS_ioprio_set),
    ("kill", libc::SYS_kill),
    ("lgetxattr", libc::SYS_lgetxattr),
    ("linkat", libc::SYS_linkat),
    ("listen", libc::SYS_listen),
    ("listxattr", libc::SYS_listxattr),
    ("llistxattr", libc::SYS_llistxattr),
    ("lremovexattr", libc::SYS_lremovexattr),
    ("lseek", libc::SYS_lseek),
    ("lsetxattr", libc::SYS_lsetxattr),
    ("madvise", libc::SYS_madvise),
    ("memfd_create", libc::SYS_memfd_create),
    ("mincore", libc::SYS_mincore),
    ("mkdirat", libc::SYS_mkdirat),
    ("mknodat", libc::SYS_mknodat),
    ("mlock", libc::SYS_mlock),
    ("mlock2", libc::SYS_mlock2),
    ("mlockall", libc::SYS_mlockall),
    ("mmap", libc::SYS_mmap),
    ("mprotect", libc::SYS_mprotect),
    ("mq_getsetattr", libc::SYS_mq_getsetattr),
    ("mq_notify", libc::SYS_mq_notify),
    ("mq_open", libc::SYS_mq_open),
    ("mq_timedreceive", libc::SYS_mq_timedreceive),
    ("mq_timedsend", libc::SYS_mq_timedsend),
    ("mq_unlink", libc::SYS_mq_unlink),
    ("mremap", libc::SYS_mremap),
    ("msgctl", libc::SYS_msgctl),
    ("msgget", libc::SYS_msgget),
    ("msgrcv", libc::SYS_msgrcv),
    ("msgsnd", libc::SYS_msgsnd),
    ("msync", libc::SYS_msync),
    ("munlock", libc::SYS_munlock),
    ("munlockall", libc::SYS_munlockall),
    ("munmap", libc::SYS_munmap),
    ("nanosleep", libc::SYS_nanosleep),
    ("newfstatat", libc::SYS_newfstatat),
    ("openat", libc::SYS_openat),
    ("openat2", libc::SYS_openat2),
    ("pipe2", libc::SYS_pipe2),
    ("ppoll", libc::SYS_ppoll),
    ("prctl", libc::SYS_prctl),
    ("pread64", libc::SYS_pread64),
    ("preadv", libc::SYS_preadv),
    ("prlimit64", libc::SYS_prlimit64),
    ("pselect6", libc::SYS_pselect6),
    ("pwrite64", libc::SYS_pwrite64),
    ("pwritev", libc::SYS_pwritev),
    ("read", libc::SYS_read),
    ("readahead", libc::SYS_readahead),
    ("readlinkat", libc::SYS_readlinkat),
    ("readv", libc::SYS_readv),
    ("recvfrom", libc::SYS_recvfrom),
    ("recvmmsg", libc::SYS_recvmmsg),
    ("recvmsg", libc::SYS_recvmsg),
    ("remap_file_pages", libc::SYS_remap_file_pages),
    ("removexattr", libc::SYS_removexattr),
    ("renameat2", libc::SYS_renameat2),
    ("restart_syscall", libc::SYS_restart_syscall),
    ("rt_sigaction", libc::SYS_rt_sigaction),
    ("rt_sigpending", libc::SYS_rt_sigpending),
    ("rt_sigprocmask", libc::SYS_rt_sigprocmask),
    ("rt_sigqueueinfo", libc::SYS_rt_sigqueueinfo),
    ("rt_sigreturn", libc::SYS_rt_sigreturn),
    ("rt_sigsuspend", libc::SYS_rt_sigsuspend),
    ("rt_sigtimedwait", libc::SYS_rt_sigtimedwait),
    ("rt_tgsigqueueinfo", libc::SYS_rt_tgsigqueueinfo),
    ("sched_get_priority_max", libc::SYS_sched_get_priority_max),
    ("sched_get_priority_min", libc::SYS_sched_get_priority_min),
    ("sched_getaffinity", libc::SYS_sched_getaffinity),
    ("sched_getattr", libc::SYS_sched_getattr),
    ("sched_getparam", libc::SYS_sched_getparam),
    ("sched_getscheduler", libc::SYS_sched_getscheduler),
    ("sched_rr_get_interval", libc::SYS_sched_rr_get_interval),
    ("sched_setaffinity", libc::SYS_sched_setaffinity),
    ("sched_setattr", libc::SYS_sched_setattr),
    ("sched_setparam", libc::SYS_sched_setparam),
    ("sched_setscheduler", libc::SYS_sched_setscheduler),
    ("sched_yield", libc::SYS_sched_yield),
    ("seccomp", libc::SYS_seccomp),
    ("semctl", libc::SYS_semctl),
    ("semget", libc::SYS_semget),
    ("semop", libc::SYS_semop),
    ("semtimedop", libc::SYS_semtimedop),
    ("sendfile", libc::SYS_sendfile),
    ("sendmmsg", libc::SYS_sendmmsg),
    ("sendmsg", libc::SYS_sendmsg),
    ("sendto", libc::SYS_sendto),
    ("set_robust_list", libc::SYS_set_robust_list),
    ("set_tid_address", libc::SYS_set_tid_address),
    ("setfsgid", libc::SYS_setfsgid),
    ("setfsuid", libc::SYS_setfsuid),
    ("setgid", libc::SYS_setgid),
    ("setgroups", libc::SYS_setgroups),
    ("setitimer", libc::SYS_setitimer),
    ("setpgid", libc::SYS_setpgid),
    ("setpriority", libc::SYS_setpriority),
    ("setregid", libc::SYS_setregid),
    ("setresgid", libc::SYS_setresgid),
    ("setresuid", libc::SYS_setresuid),
    ("setreuid", libc::SYS_setreuid),
    ("setsid", libc::SYS_setsid),
    ("setsockopt", libc::SYS_setsockopt),
    ("setuid", libc::SYS_setuid),
    ("setxattr", libc::SYS_setxattr),
    ("shmat", libc::SYS_shmat),
    ("shmctl", libc::SYS_shmctl),
    ("shmdt", libc::SYS_shmdt),
    ("shmget", libc::SYS_shmget),
    ("shutdown", libc::SYS_shutdown),
    ("sigaltstack", libc::SYS_sigaltstack),
    ("signalfd4", libc::SYS_signalfd4),
    ("socket", libc::SYS_socket),
    ("socketpair", libc::SYS_socketpair),
    ("splice", libc::SYS_splice),
    ("statfs", libc::SYS_statfs),
    ("statx", libc::SYS_statx),
    ("symlinkat", libc::SYS_symlinkat),
    ("sync", libc::SYS_sync),
    ("syncfs", libc::SYS_syncfs),
    ("sysinfo", libc::SYS_sysinfo),
    ("syslog", libc::SYS_syslog),
    ("tee", libc::SYS_tee),
    ("tgkill", libc::SYS_tgkill),
    ("timer_create", libc::SYS_timer_create),
    ("timer_delete", libc::SYS_timer_delete),
    ("timer_getoverrun", libc::SYS_timer_getoverrun),
    ("timer_gettime", libc::SYS_timer_gettime),
    ("timer_settime", libc::SYS_timer_settime),
    ("timerfd_create", libc::SYS_timerfd_create),
    ("timerfd_gettime", libc::SYS_timerfd_gettime),
    ("timerfd_settime", libc::SYS_timerfd_settime),
    ("times", libc::SYS_times),
    ("tkill", libc::SYS_tkill),
    ("truncate", libc::SYS_truncate),
    ("umask", libc::SYS_umask),
    ("uname", libc::SYS_uname),
    ("unlinkat", libc::SYS_unlinkat),
    ("utimensat", libc::SYS_utimensat),
    ("vmsplice", libc::SYS_vmsplice),
    ("wait4", libc::SYS_wait4),
    ("waitid", libc::SYS_waitid),
    ("write", libc::SYS_write),
    ("writev", libc::SYS_writev),
];

/// The names only x86_64 has a number for.
#[cfg(target_arch = "x86_64")]
const ARCH: &[(&str, i64)] = &[
    ("access", libc::SYS_access),
    ("alarm", libc::SYS_alarm),
    ("arch_prctl", libc::SYS_arch_prctl),
    ("chmod", libc::SYS_chmod),
    ("chown", libc::SYS_chown),
    ("creat", libc::SYS_creat),
    ("dup2", libc::SYS_dup2),
    ("epoll_create", libc::SYS_epoll_create),
    ("epoll_ctl_old", libc::SYS_epoll_ctl_old),
    ("epoll_wait", libc::SYS_epoll_wait),
    ("epoll_wait_old", libc::SYS_epoll_wait_old),
    ("eventfd", libc::SYS_eventfd),
    ("fork", libc::SYS_fork),
    ("futimesat", libc::SYS_futimesat),
    ("get_thread_area", libc::SYS_get_thread_area),
    ("getdents", libc::SYS_getdents),
    ("getpgrp", libc::SYS_getpgrp),
    ("getrlimit", libc::SYS_getrlimit),
    ("inotify_init", libc::SYS_inotify_init),
    ("lchown", libc::SYS_lchown),
    ("link", libc::SYS_link),
    ("lstat", libc::SYS_lstat),
    ("mkdir", libc::SYS_mkdir),
    ("mknod", libc::SYS_mknod),
    ("modify_ldt", libc::SYS_modify_ldt),
    ("open", libc::SYS_open),
    ("pause", libc::SYS_pause),
    ("pipe", libc::SYS_pipe),
    ("poll", libc::SYS_poll),
    ("readlink", libc::SYS_readlink),
    ("rename", libc::SYS_rename),
    ("renameat", libc::SYS_renameat),
    ("rmdir", libc::SYS_rmdir),
    ("select", libc::SYS_select),
    ("set_thread_area", libc::SYS_set_thread_area),
    ("setrlimit", libc::SYS_setrlimit),
    ("signalfd", libc::SYS_signalfd),
    ("stat", libc::SYS_stat),
    ("symlink", libc::SYS_symlink),
    ("sync_file_range", libc::SYS_sync_file_range),
    ("time", libc::SYS_time),
    ("unlink", libc::SYS_unlink),
    ("utime", libc::SYS_utime),
    ("utimes", libc::SYS_utimes),
    ("vfork", libc::SYS_vfork),
];

/// aarch64's numbers for the names of bpm's list its C library uses that libc does not
/// name (the generic table's getrlimit, setrlimit, sync_file_range and renameat).
#[cfg(target_arch = "aarch64")]
const ARCH: &[(&str, i64)] = &[
    ("getrlimit", 163),
    ("setrlimit", 164),
    ("sync_file_range", 84),
    ("renameat", 38),
];

/// Every allowed name with its number on this architecture (bpm's list less the names
/// this architecture has no number for), `clone` and `personality` apart.
pub fn allowed() -> impl Iterator<Item = &'static (&'static str, i64)> {
    COMMON.iter().chain(ARCH)
}

/// bpm allows `personality` only with these personas (PER_LINUX, query, UNAME26).
const PERSONAS: [u64; 3] = [0, 0xffff_ffff, 8];

/// Why the filter could not be compiled.
#[derive(Debug)]
pub struct CompileError(pub String);

/// The audit architecture a filter is for: any other is killed (a 32-bit entry into a
/// 64-bit kernel numbers its calls differently).
const AUDIT_ARCH: u32 = match std::env::consts::ARCH.as_bytes() {
    b"x86_64" => 0xC000_003E,
    b"aarch64" => 0xC000_00B7,
    _ => 0,
};

// Classic BPF, the only words used here (linux/bpf_common.h, linux/seccomp.h).
const LD_W_ABS: u16 = 0x20;
const AND_K: u16 = 0x54;
const JEQ_K: u16 = 0x15;
const JGE_K: u16 = 0x35;
const RET_K: u16 = 0x06;
const RET_KILL_PROCESS: u32 = 0x8000_0000;
const RET_ERRNO: u32 = 0x0005_0000;
const RET_ALLOW: u32 = 0x7fff_0000;
/// Offsets in `struct seccomp_data`: nr, arch, then (after the instruction pointer) the
/// six arguments, 8 bytes each, the low word first on both (little-endian) targets.
const NR: u32 = 0;
const ARCH_AT: u32 = 4;
const ARG0_LO: u32 = 16;

/// What the filter answers for one system call number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    Allow,
    Deny,
    /// clone3: ENOSYS, so the C library falls back to `clone`.
    NoSys,
    /// clone: allowed without namespace flags.
    Clone,
    /// personality: allowed for bpm's personas.
    Personality,
}

fn stmt(code: u16, k: u32) -> sock_filter {
    sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter { code, jt, jf, k }
}

/// The instructions that answer for one number (the accumulator holds it).
fn leaf(a: Answer) -> Vec<sock_filter> {
    let deny = stmt(RET_K, RET_ERRNO | libc::EPERM as u32);
    let allow = stmt(RET_K, RET_ALLOW);
    match a {
        Answer::Allow => vec![allow],
        Answer::Deny => vec![deny],
        Answer::NoSys => vec![stmt(RET_K, RET_ERRNO | libc::ENOSYS as u32)],
        Answer::Clone => {
            // The flags are one word on both targets' 64-bit ABI; the namespace bits are
            // all in the low half (checked in the tests), so the high half is not read.
            vec![
                stmt(LD_W_ABS, ARG0_LO),
                stmt(AND_K, CLONE_NAMESPACE_BITS as u32),
                jump(JEQ_K, 0, 0, 1),
                allow,
                deny,
            ]
        }
        Answer::Personality => {
            // bpm compares the low word only (a 32-bit argument).
            let mut v = vec![stmt(LD_W_ABS, ARG0_LO)];
            let n = PERSONAS.len();
            for (i, &p) in PERSONAS.iter().enumerate() {
                v.push(jump(JEQ_K, p as u32, (n - i) as u8, 0));
            }
            v.push(deny);
            v.push(allow);
            v
        }
    }
}

/// A search over the sorted runs of numbers with one answer (`runs[i]` starts at its
/// number and ends where the next begins; the last reaches u32::MAX): a jump if greater
/// or equal at each inner node, so a number costs about log2(runs) comparisons, and the
/// program is about twice as long as there are runs.
fn search(runs: &[(u32, Answer)]) -> Result<Vec<sock_filter>, CompileError> {
    let [(_, only)] = runs else {
        let mid = runs.len() / 2;
        let low = search(&runs[..mid])?;
        let high = search(&runs[mid..])?;
        let skip = u8::try_from(low.len())
            .map_err(|_| CompileError(format!("a jump over {} instructions", low.len())))?;
        let mut v = vec![jump(JGE_K, runs[mid].0, skip, 0)];
        v.extend(low);
        v.extend(high);
        return Ok(v);
    };
    Ok(leaf(*only))
}

/// bpm's filter as one classic BPF program: the architecture checked (any other killed,
/// as seccompiler does), then a binary search over the numbers' runs. One filter where
/// seccompiler's needed two (its filters have one answer for every unlisted call, so
/// clone3's ENOSYS took a second), and about a fifth of its length: the kernel converts
/// and compiles a filter, and runs it for each call number to fill its cache of always
/// allowed calls, at each start, in time linear in the length.
pub fn compile() -> Result<Vec<sock_filter>, CompileError> {
    if AUDIT_ARCH == 0 {
        return Err(CompileError(format!(
            "no seccomp filter for {}",
            std::env::consts::ARCH
        )));
    }
    let mut answers: BTreeMap<u32, Answer> = BTreeMap::new();
    let mut set = |nr: i64, a| {
        let nr = u32::try_from(nr).map_err(|_| CompileError(format!("call number {nr}")))?;
        match answers.insert(nr, a) {
            Some(_) => Err(CompileError(format!("call number {nr} listed twice"))),
            None => Ok(()),
        }
    };
    for &(_, nr) in allowed() {
        set(nr, Answer::Allow)?;
    }
    set(libc::SYS_clone, Answer::Clone)?;
    set(libc::SYS_clone3, Answer::NoSys)?;
    set(libc::SYS_personality, Answer::Personality)?;
    // Every number not listed is denied: the runs cover 0..=u32::MAX, and two
    // neighbours never have the same answer.
    let mut runs: Vec<(u32, Answer)> = vec![(0, Answer::Deny)];
    let start = |runs: &mut Vec<(u32, Answer)>, nr: u32, a: Answer| {
        if runs.last().is_some_and(|&(s, _)| s == nr) {
            runs.pop();
        }
        if runs.last().map(|&(_, b)| b) != Some(a) {
            runs.push((nr, a));
        }
    };
    for (nr, a) in answers {
        start(&mut runs, nr, a);
        if let Some(next) = nr.checked_add(1) {
            start(&mut runs, next, Answer::Deny);
        }
    }
    let mut v = vec![
        stmt(LD_W_ABS, ARCH_AT),
        jump(JEQ_K, AUDIT_ARCH, 1, 0),
        stmt(RET_K, RET_KILL_PROCESS),
        stmt(LD_W_ABS, NR),
    ];
    v.extend(search(&runs)?);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };

    /// The filter as tend-jail loaded it before: seccompiler's two programs, the allowlist
    /// (default EPERM) then one answering clone3 ENOSYS. The reference the one program is
    /// checked against.
    fn seccompilers() -> [BpfProgram; 2] {
        let arch: TargetArch = std::env::consts::ARCH.try_into().unwrap();
        let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
            allowed().map(|&(_, nr)| (nr, Vec::new())).collect();
        let no_namespace = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::MaskedEq(CLONE_NAMESPACE_BITS),
            0,
        )
        .unwrap();
        rules.insert(
            libc::SYS_clone,
            vec![SeccompRule::new(vec![no_namespace]).unwrap()],
        );
        let personas = PERSONAS
            .iter()
            .map(|&p| {
                SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, p)
                    .and_then(|c| SeccompRule::new(vec![c]))
                    .unwrap()
            })
            .collect();
        rules.insert(libc::SYS_personality, personas);
        let allowlist = SeccompFilter::new(
            rules,
            SeccompAction::Errno(libc::EPERM as u32),
            SeccompAction::Allow,
            arch,
        )
        .unwrap();
        let clone3 = SeccompFilter::new(
            [(libc::SYS_clone3, Vec::new())].into_iter().collect(),
            SeccompAction::Allow,
            SeccompAction::Errno(libc::ENOSYS as u32),
            arch,
        )
        .unwrap();
        [allowlist.try_into().unwrap(), clone3.try_into().unwrap()]
    }

    /// A classic BPF interpreter for the words seccomp filters use here, over
    /// `struct seccomp_data` as bytes.
    fn eval(prog: &[sock_filter], data: &[u8; 64]) -> u32 {
        let (mut a, mut pc) = (0u32, 0usize);
        loop {
            let i = &prog[pc];
            pc += 1;
            let k = i.k;
            let jump = |taken: bool| if taken { i.jt } else { i.jf } as usize;
            match i.code {
                LD_W_ABS => {
                    let at = k as usize;
                    a = u32::from_le_bytes(data[at..at + 4].try_into().unwrap());
                }
                AND_K => a &= k,
                RET_K => return k,
                JEQ_K => pc += jump(a == k),
                JGE_K => pc += jump(a >= k),
                0x25 => pc += jump(a > k),      // JGT K
                0x45 => pc += jump(a & k != 0), // JSET K
                0x05 => pc += k as usize,       // JA
                c => panic!("opcode {c:#x} at {}", pc - 1),
            }
        }
    }

    fn data(nr: u32, arch: u32, arg0: u64) -> [u8; 64] {
        let mut d = [0u8; 64];
        d[0..4].copy_from_slice(&nr.to_le_bytes());
        d[4..8].copy_from_slice(&arch.to_le_bytes());
        d[16..24].copy_from_slice(&arg0.to_le_bytes());
        // The other arguments are never read; garbage in them must not matter.
        for b in &mut d[24..] {
            *b = 0xa5;
        }
        d
    }

    /// The kernel's answer for a stack of filters: each is run, the newest first, and the
    /// action of highest precedence (lowest as a signed number) wins; between two of the
    /// same action, the first seen (the newest).
    fn stacked(filters: &[BpfProgram], d: &[u8; 64]) -> u32 {
        let mut ret = RET_ALLOW;
        for f in filters.iter().rev() {
            let r = eval(f, d);
            if ((r & 0xffff_0000) as i32) < ((ret & 0xffff_0000) as i32) {
                ret = r;
            }
        }
        ret
    }

    #[test]
    fn one_program_answers_as_seccompilers_two() {
        let old = seccompilers();
        let new = compile().unwrap();
        let mut numbers: Vec<u32> = (0..1024).collect();
        // x32's numbers (the same audit arch on x86_64), and the top of the range.
        numbers.extend((0..1024).map(|n| n | 0x4000_0000));
        numbers.extend([0x7fff_ffff, 0x8000_0000, u32::MAX - 1, u32::MAX]);
        let mut args: Vec<u64> = vec![0, 8, 0xffff_ffff, 0x1_0000_0008, u64::MAX];
        args.extend((0..64).map(|b| 1u64 << b));
        // glibc's and musl's thread and fork flags, with and without a namespace bit.
        args.extend([
            0x3d0f00,
            0x1200011,
            0x3d0f00 | 0x2000_0000,
            0x1200011 | 0x1000_0000,
        ]);
        args.push(CLONE_NAMESPACE_BITS);
        args.push(CLONE_NAMESPACE_BITS << 32);
        let mut allowed = 0;
        for arch in [AUDIT_ARCH, 0x4000_0003, 0xC000_003E, 0xC000_00B7, 0] {
            for &nr in &numbers {
                for &arg in &args {
                    let d = data(nr, arch, arg);
                    let (want, got) = (stacked(&old, &d), eval(&new, &d));
                    assert_eq!(
                        want, got,
                        "nr {nr:#x} arch {arch:#x} arg0 {arg:#x}: {want:#x} {got:#x}"
                    );
                    allowed += usize::from(got == RET_ALLOW);
                }
            }
        }
        // The test saw both answers, and the program is the compact one.
        assert!(allowed > 0);
        let old_len: usize = old.iter().map(Vec::len).sum();
        assert!(new.len() * 3 < old_len, "{} against {old_len}", new.len());
    }

    #[test]
    fn clone_namespace_bits_are_in_the_low_word() {
        // The program reads only the low word of clone's flags.
        assert_eq!(CLONE_NAMESPACE_BITS >> 32, 0);
        assert!(PERSONAS.iter().all(|&p| p <= u64::from(u32::MAX)));
    }

    #[test]
    fn compiles_and_keeps_bpms_count() {
        assert!(!compile().unwrap().is_empty());
        // bpm's list has 270-odd names, of which x86_64 numbers about 235.
        let n = allowed().count();
        assert!((200..300).contains(&n), "{n}");
        let names: Vec<&str> = allowed().map(|(n, _)| *n).collect();
        for forbidden in [
            "mount",
            "unshare",
            "kexec_load",
            "ptrace",
            "clone3",
            "setns",
        ] {
            assert!(!names.contains(&forbidden), "{forbidden}");
        }
    }
}
