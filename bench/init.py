#!/usr/bin/env python3
"""bench/init.py: tend-init against tini, catatonit, dumb-init and s6-svscan as PID 1, in
the same run. Called by bench/init.sh, which checks the binaries and builds the image.

1. start-up: from just before the init is spawned to its command running (the command
   opens a FIFO the bench reads), and to the init's exit; command only, not PID 1
   (tini -s; tend-init says it is a subreaper), stderr discarded.
2. memory of the init process running `sleep`, command only: Pss (smaps_rollup), which
   divides a dynamic init's libc among every process of the host, and every page the
   init maps counted once (bench/treemem.py on its pid alone: libc's pages in full), what
   it costs where nothing else shares them, as in a small container or guest.
3. 10 services: `unshare --pid --fork --mount-proc` tend-init (no command) or s6-svscan as
   PID 1 on 10 copies of the same `exec sleep` run script; from spawn to every
   supervise/status saying up, and to every service's pid running `sleep` (the run
   script has exec'd it), polled every 0.5 ms by this script, for both; then the tree's
   Pss (init, scanner, supervisors; not the sleeps). The two clocks differ because
   s6-supervise writes "up" as soon as it has forked, tend-supervise once the child has
   exec'd ./run (so that a spawn error is never shown as up).
4. docker run --rm IMG true, with tend-init or tini as entrypoint, same image: tend-init
   with the example's init.d script and services, and with none (command only, as tini);
   /bin/true as the entrypoint shows the engine's own cost and noise.
5. SIGTERM forwarding (issue 28): each init runs a static C command that stamps
   CLOCK_MONOTONIC when it starts and when SIGTERM reaches it; once it has started (and
   50 ms more, so the init is back in its wait), this script takes a stamp and sends
   SIGTERM to the init; the figure is the time to the command's stamp: the init's wake-up,
   its read of the signal, its kill(2), the command's wake-up. Command only, and as PID 1
   of a PID namespace (`unshare --pid --fork`: the init is the namespace's PID 1, the
   signal comes from the parent namespace). Median and p90 of FORWARD_ROUNDS (default
   100) rounds, the inits taking turns round by round.
Prints medians and ratios (tend / other). PARTS="startup services docker forward" (the
default) chooses the parts; SERVICE_ROUNDS (default 10) the rounds of the services part.
"""
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import treemem  # bench/treemem.py, beside this script

BIN = sys.argv[1]
IMAGE = sys.argv[2] if len(sys.argv) > 2 else ""
ROUNDS = int(os.environ.get("ROUNDS", "100"))
TMP = tempfile.mkdtemp(prefix="bench-init-")
# The saved environment goes to a tmpfs, as /run is in a container.
SHM = tempfile.mkdtemp(prefix="bench-init-", dir="/dev/shm")
DEVNULL = subprocess.DEVNULL
TEND = os.path.join(BIN, "tend-init")


def ms(ns):
    return ns / 1e6


def pss(pid):
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def children(pid):
    out = []
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


def comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return ""


def tree(pid):
    todo, out = [pid], []
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children(p)
    return out


INITS = [
    ("tend-init", [TEND, "-e", os.path.join(SHM, "env"), "-s", "/nonexistent", "-i", "/nonexistent", "-f", "/nonexistent"]),
    ("tend-init -e ''", [TEND, "-e", "", "-s", "/nonexistent", "-i", "/nonexistent", "-f", "/nonexistent"]),
    ("tini", ["tini", "-s", "--"]),
    ("tini-static", ["tini-static", "-s", "--"]),
    ("catatonit", ["catatonit", "--"]),
    ("dumb-init", ["dumb-init"]),
]
# TEND_BEFORE=DIR: the tend-init of another build (a directory of programs), side by side.
if os.environ.get("TEND_BEFORE"):
    INITS.insert(2, ("tend-init before", [os.path.join(os.environ["TEND_BEFORE"], "tend-init")] + INITS[0][1][1:]))
INITS = [(n, a) for n, a in INITS if shutil.which(a[0])]


def startup():
    fifo = os.path.join(TMP, "fifo")
    os.mkfifo(fifo)
    cmd = ["/bin/busybox", "sh", "-c", "echo > " + fifo]
    res = {n: ([], []) for n, _ in INITS}
    for _ in range(ROUNDS):
        for name, argv in INITS:
            t0 = time.monotonic_ns()
            p = subprocess.Popen(argv + cmd, stdin=DEVNULL, stdout=DEVNULL, stderr=DEVNULL)
            with open(fifo) as f:
                f.read()
            t1 = time.monotonic_ns()
            p.wait()
            t2 = time.monotonic_ns()
            res[name][0].append(t1 - t0)
            res[name][1].append(t2 - t0)
    print("## start-up, command only (%d rounds, median ms)" % ROUNDS)
    print("| init | to command running | to exit | Pss of init (kB) | every page once (kB) |")
    print("|---|---:|---:|---:|---:|")
    base = None
    rows = []
    for name, argv in INITS:
        p = subprocess.Popen(argv + ["sleep", "100"], stdin=DEVNULL, stdout=DEVNULL, stderr=DEVNULL)
        time.sleep(0.5)
        mem = pss(p.pid)
        once = treemem.total_kb([p.pid])
        p.kill()
        p.wait()
        for c in children(p.pid):
            os.kill(c, signal.SIGKILL)
        run_ms = statistics.median(res[name][0])
        exit_ms = statistics.median(res[name][1])
        rows.append((name, run_ms, exit_ms, mem, once))
        print("| %s | %.2f | %.2f | %d | %d |" % (name, ms(run_ms), ms(exit_ms), mem, once))
    tend = rows[0]
    for r in rows[1:]:
        print("tend-init/%s: to command %.2f, to exit %.2f, Pss %.2f, every page once %.2f" % (
            r[0], tend[1] / r[1], tend[2] / r[2], tend[3] / max(r[3], 1), tend[4] / max(r[4], 1)))
    print()


def services(n=10, rounds=10):
    src = os.path.join(TMP, "svc")
    for i in range(n):
        d = os.path.join(src, "s%02d" % i)
        os.makedirs(d)
        with open(os.path.join(d, "run"), "w") as f:
            f.write("#!/bin/sh\nexec sleep 987654\n")
        os.chmod(os.path.join(d, "run"), 0o755)
    res = {"tend-init": [], "s6-svscan": []}
    run_res = {"tend-init": [], "s6-svscan": []}
    mem = {"tend-init": [], "s6-svscan": []}
    for r in range(rounds):
        for name in ("tend-init", "s6-svscan"):
            # On a tmpfs, as /run is in a container or a guest (both kinds alike).
            scan = os.path.join(SHM, "scan-%s-%d" % (name, r))
            if name == "tend-init":
                argv = [TEND, "-e", "", "-s", src, "-S", scan, "-i", "/nonexistent", "-f", "/nonexistent"]
            else:
                shutil.copytree(src, scan)
                argv = ["s6-svscan", scan]
            env = dict(os.environ, PATH=BIN + ":" + os.environ["PATH"])
            t0 = time.monotonic_ns()
            p = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", "--"] + argv,
                                 stdin=DEVNULL, stdout=DEVNULL, stderr=DEVNULL, env=env)
            up, running, t_up, t_run = set(), 0, None, None
            while (t_up is None or t_run is None) and time.monotonic_ns() - t0 < 10e9:
                for i in range(n):
                    if i in up:
                        continue
                    try:
                        with open(os.path.join(scan, "s%02d" % i, "supervise", "status"), "rb") as f:
                            b = f.read()
                        if len(b) >= 32 and int.from_bytes(b[24:32], "big") != 0:
                            up.add(i)
                    except OSError:
                        pass
                if t_up is None and len(up) == n:
                    t_up = time.monotonic_ns()
                # The pids in the status files are the namespace's: count the tree's sleeps.
                if t_run is None:
                    running = sum(1 for q in tree(p.pid) if comm(q) == "sleep")
                    if running == n:
                        t_run = time.monotonic_ns()
                time.sleep(0.0005)
            res[name].append(t_up - t0)
            run_res[name].append(t_run - t0)
            time.sleep(1)
            init = children(p.pid)[0]
            mem[name].append(sum(pss(q) for q in tree(init) if comm(q) != "sleep"))
            if name == "tend-init":
                os.kill(init, signal.SIGTERM)
            else:
                subprocess.run(["s6-svscanctl", "-t", scan])
            p.wait()
    print("## %d services up, PID 1 in a PID namespace (%d rounds, median)" % (n, rounds))
    print("| init | ms to all up (status) | ms to all running (`sleep` exec'd) | tree Pss (kB) |")
    print("|---|---:|---:|---:|")
    for name in res:
        print("| %s | %.1f | %.1f | %d |" % (name, ms(statistics.median(res[name])),
              ms(statistics.median(run_res[name])), statistics.median(mem[name])))
    print("tend-init/s6-svscan: up %.2f, running %.2f, tree Pss %.2f" % (
        statistics.median(res["tend-init"]) / statistics.median(res["s6-svscan"]),
        statistics.median(run_res["tend-init"]) / statistics.median(run_res["s6-svscan"]),
        statistics.median(mem["tend-init"]) / statistics.median(mem["s6-svscan"])))
    print()


def docker(rounds=20):
    if not IMAGE:
        print("## docker run: skipped (no image)")
        return
    res = {"tend-init (2 services + logger)": [], "tend-init (command only)": [], "tini": [],
           "no init (/bin/true as entrypoint)": []}
    for _ in range(rounds):
        for name in res:
            argv = ["docker", "run", "--rm"]
            if name.startswith("no init"):
                argv += ["--entrypoint", "/bin/true", IMAGE]
            elif name == "tini":
                argv += ["--entrypoint", "/usr/bin/tini", IMAGE, "--", "true"]
            elif name == "tend-init (command only)":
                argv += ["-e", "TEND_SERVICES_DIR=/none", "-e", "TEND_INIT_DIR=/none", IMAGE, "true"]
            else:
                argv += [IMAGE, "true"]
            t0 = time.monotonic_ns()
            subprocess.run(argv, stdout=DEVNULL, stderr=DEVNULL, check=True)
            res[name].append(time.monotonic_ns() - t0)
    print("## docker run --rm IMG true, same image (%d rounds, median ms)" % rounds)
    print("| entrypoint | ms |")
    print("|---|---:|")
    for name in res:
        print("| %s | %.0f |" % (name, ms(statistics.median(res[name]))))
    for name in list(res)[:2]:
        print("%s / tini: %.3f" % (name, statistics.median(res[name]) / statistics.median(res["tini"])))


STAMP_C = r"""
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
static int fd;
static void put(const char *tag) {
  struct timespec t; char b[64];
  clock_gettime(CLOCK_MONOTONIC, &t);
  int n = snprintf(b, sizeof b, "%s %lld\n", tag, (long long)t.tv_sec * 1000000000LL + t.tv_nsec);
  (void)!write(fd, b, n);
}
static void term(int s) { (void)s; put("term"); _exit(0); }
int main(int argc, char **argv) {
  fd = open(argv[1], O_WRONLY | O_APPEND | O_CREAT, 0644);
  signal(SIGTERM, term);
  put("start");
  for (;;) pause();
}
"""


def p90(v):
    s = sorted(v)
    return s[min(len(s) - 1, int(0.9 * len(s)))]


def forward(rounds):
    src = os.path.join(TMP, "stamp.c")
    prog = os.path.join(TMP, "stamp")
    with open(src, "w") as f:
        f.write(STAMP_C)
    subprocess.run(["gcc", "-O2", "-static", "-o", prog, src], check=True)
    # PID 1 in a namespace: tini without -s, tend-init and the others as they are.
    cases = [(n + " (command)", a) for n, a in INITS]
    if os.geteuid() == 0 and shutil.which("unshare"):
        for n, a in INITS:
            if n.startswith("tini"):
                a = [x for x in a if x != "-s"]
            cases.append((n + " (PID 1)", ["unshare", "--pid", "--fork", "--"] + a))
    res = {n: [] for n, _ in cases}
    for r in range(rounds):
        for name, argv in cases:
            st = os.path.join(TMP, "stamps")
            if os.path.exists(st):
                os.unlink(st)
            p = subprocess.Popen(argv + [prog, st], stdin=DEVNULL, stdout=DEVNULL, stderr=DEVNULL)
            lines = []
            end = time.monotonic() + 10
            while not lines and time.monotonic() < end:
                try:
                    with open(st) as f:
                        lines = f.read().split("\n")[:-1]
                except FileNotFoundError:
                    pass
                time.sleep(0.001)
            time.sleep(0.05)
            # unshare --fork: the init is unshare's child
            kids = children(p.pid)
            if not lines or (argv[0] == "unshare" and not kids):
                print("forward: %s did not start its command" % name, file=sys.stderr)
                p.kill()
                p.wait()
                continue
            target = kids[0] if argv[0] == "unshare" else p.pid
            t0 = time.monotonic_ns()
            os.kill(target, signal.SIGTERM)
            got = None
            end = time.monotonic() + 10
            while got is None and time.monotonic() < end:
                with open(st) as f:
                    for l in f.read().split("\n")[:-1]:
                        if l.startswith("term "):
                            got = int(l.split()[1])
                time.sleep(0.0002)
            if got is not None:
                res[name].append(got - t0)
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    print("## SIGTERM to the init → the command has it (%d rounds, ms)" % rounds)
    print("| init | median | p90 |")
    print("|---|---:|---:|")
    for name, v in res.items():
        if v:
            print("| %s | %.3f | %.3f |" % (name, ms(statistics.median(v)), ms(p90(v))))
    print()


# PARTS=services (say) runs only some parts; SERVICE_ROUNDS sets the services part's rounds.
PARTS = os.environ.get("PARTS", "startup services docker forward").split()
try:
    if "startup" in PARTS:
        startup()
    if "services" in PARTS:
        services(rounds=int(os.environ.get("SERVICE_ROUNDS", "10")))
    if "docker" in PARTS:
        docker()
    if "forward" in PARTS:
        forward(int(os.environ.get("FORWARD_ROUNDS", "100")))
finally:
    shutil.rmtree(TMP, ignore_errors=True)
    shutil.rmtree(SHM, ignore_errors=True)
