//! Integration tests: they run the real binaries in scratch directories.

// The chain-loaders (setuidgid, envdir, softlimit, setsid, cpuset, cgroup, notify).
mod chain;
// tend-check's probes, readiness and liveness, and tend-notify, under a real tree.
mod check;
// tend-svc, -svstat, -svwait, -svok against s6's clients on s6-supervise.
mod clients;
// Shared support: Scratch, Daemon, Supervised, Case, wait_until, stays_for, skip.
mod common;
// The {s6, tend} supervisor × {s6, tend} clients matrix.
mod compat;
// Every executable has a man page groff accepts and a README row.
mod docs;
// Hostile and random argument vectors for every program.
mod fuzz;
// tend-init as a VM guest's init, in qemu.
mod guest;
// Hostile input found by the adversarial run (issue 23), each case failing before its fix.
mod hostile;
// tend-init as a container's entrypoint, in Docker and namespaces.
mod init;
// tend-jobs: bpm.yml to service directories, applied and run.
mod jobs;
// tend-log and the TAI64N tools against s6-log and s6-tai64n.
mod log;
// The multi-call executable: link names, `tend PROG`, the hot-code layout.
mod multicall;
// packaging/build.sh: the .deb and the tarball, installed and used.
mod packaging;
// tend-setlock and tend-svperms against their s6 counterparts.
mod parity;
// runit's front ends (tend-chpst, tend-sv) and runit service directories, beside runit's programs.
mod runit;
// tend-svscan and tend-svscanctl against s6-svscan's specification.
mod scan;
// tend-summary's three formats on a mixed set of services.
mod summary;
// tend-supervise against s6-supervise's specification.
mod supervise;
// tend-socklog and tend-ucspilogd against s6-socklog and ucspilogd.
mod syslog;
