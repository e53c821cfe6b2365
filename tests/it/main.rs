//! Integration tests: they run the real binaries in scratch directories.

// The chain-loaders (setuidgid, envdir, softlimit, setsid, cpuset, cgroup, notify).
mod chain;
// tend-check's probes, readiness and liveness, and tend-notify, under a real tree.
mod check;
// tend-check's HTTP client on the edges hand parsing gets wrong (its head parsed by httparse).
mod check_http;
// tend-svc, -svstat, -svwait, -svok against s6's clients on s6-supervise.
mod clients;
// Shared support: Scratch, Daemon, Supervised, Case, wait_until, stays_for, skip.
mod common;
// The {s6, tend} supervisor × {s6, tend} clients matrix.
mod compat;
// Every executable has a man page groff accepts and a README row.
mod docs;
// tend-extension's refusals over a fake /sys, and the extension disks the VM tests attach.
mod extension;
// Faults that used to leave services down: supervisors SIGKILLed (issue 40).
mod faults;
// Hostile and random argument vectors for every program.
mod fuzz;
// tend-init as a VM guest's init, in qemu.
mod guest;
// --help and --version of every program, from its man page.
mod help;
// Hostile input found by the adversarial run (issue 23), each case failing before its fix.
mod hostile;
// tend-init as a container's entrypoint, in Docker and namespaces.
mod init;
// Instanced services: tend-instance-* beside s6-instance-* on the same templates, both ways.
mod instance;
// tend-jail: bpm's walls beside runc's for the same bpm.yml shapes, bad input, escapes.
mod jail;
// tend-jobs: bpm.yml to service directories, applied and run.
mod jobs;
// tend-log and the TAI64N tools against s6-log and s6-tai64n.
mod log;
// tend-monit: monit control files, its command line and HTTP API, beside Debian's monit.
mod monit;
// tend-monit's HTTP interface on hostile requests, credentials, CSRF, starting, restarts.
mod monit_http;
// tend-monit's web interface in Debian's headless Chromium: states, a button press, a screenshot.
mod monit_web;
// The multi-call executable: link names, `tend PROG`, the hot-code layout.
mod multicall;
// tend-init running s6-overlay v3 images (Docker), tend-with-contenv, the s6 names.
mod overlay;
// packaging/build.sh: the .deb and the tarball, installed and used.
mod packaging;
// tend-setlock and tend-svperms against their s6 counterparts.
mod parity;
// tend-monit where a BOSH stemcell puts monit: its units, names, wrapper, the agent's sequence.
mod stemcell;
// runit's front ends (tend-chpst, tend-sv) and runit service directories, beside runit's programs.
mod runit;
// tend-rc: s6-rc source directories brought up and down, beside the real s6-rc.
mod rc;
// tend-svscan and tend-svscanctl against s6-svscan's specification.
mod scan;
// tend-summary's three formats on a mixed set of services.
mod summary;
// tend-supervise against s6-supervise's specification.
mod supervise;
// s6's service-tree tools: svdt, svlisten, svlink, permafailon, fghack, beside s6's.
mod svtools;
// tend-socklog and tend-ucspilogd against s6-socklog and ucspilogd.
mod syslog;
// The seed's syslogd chain in both forms, tend's programs beside s6's.
mod syslogd;
// The UCSPI socket servers and client against s6-ipcserver and friends, both ways.
mod ucspi;
// s6 2.11.3, 2.13.1 and 2.15.1 beside tend in both status sizes, every client x supervisor.
mod versions;
// tend-vsockserver, tend-vsockclient (-H hybrid vsock) and tend-pty (issue 38).
mod vsock;
// tend-oom: the OOM score adjustment chain tool (issue 38).
mod oom;
