#!/usr/bin/env python3
"""Driver for bench/control.sh's restart rows (issue 28): every supervisor side by side in
one run, the same rounds for each, median and p90 of each row.

usage: restart.py WORKDIR TEND_BINDIR ROUNDS [LABEL=SUPERVISOR ...]

1. natural restart: ./run (WORKDIR/stamp-exit) stamps "start", lives 1.1 s, stamps
   "exit" and exits 0; the figure is from the "exit" stamp to the next "start" stamp: the
   supervisor's SIGCHLD, reap, status write, fork and exec of ./run, the service's own
   start-up (the same static C program for all). The 1.1 s keeps every supervisor's
   restart spacing (1 s after the previous start) out of the figure.
2. `t` → restarted: ./run (WORKDIR/stamp) pauses until SIGTERM, when it stamps "term" and
   exits; after 1.1 s of uptime this script writes the byte `t` into supervise/control
   itself (no client in the figure: s6-svc, sv, svc and tend-svc differ) and the figure
   is from just before that write to the new "start" stamp.

Supervisors: tend-supervise, s6-supervise, runsv (runit), supervise (daemontools), and
the fork-only floor (bench/floor.c -s, natural restart only: it has no control fifo). All
run at once, each on its own service directory, started 150 ms apart so that their
restarts (all 1.1 s apart) do not fall on the same instant.
"""
import os
import shutil
import statistics
import subprocess
import sys
import time

work, tend_bin, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
SUPS = [("tend-supervise", [os.path.join(tend_bin, "tend-supervise")]),
        ("s6-supervise", ["s6-supervise"]),
        ("runsv", ["runsv"]),
        ("daemontools", ["supervise"]),
        ("floor", [os.path.join(work, "floor"), "-s"])]
for a in sys.argv[4:]:
    label, _, prog = a.partition("=")
    SUPS.insert(1, (label, [os.path.join(prog, "tend-supervise")]))
SUPS = [(n, a) for n, a in SUPS if shutil.which(a[0])]


def stamps(d):
    try:
        with open(os.path.join(d, "stamps")) as f:
            return [l.split() for l in f.read().split("\n")[:-1]]
    except FileNotFoundError:
        return []


def p90(v):
    s = sorted(v)
    return s[min(len(s) - 1, int(0.9 * len(s)))]


def start(kind, name, argv, run):
    d = os.path.join(work, f"{kind}-{name}")
    os.makedirs(d)
    shutil.copy(os.path.join(work, run), os.path.join(d, "run"))
    p = subprocess.Popen(argv + [d], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    return d, p


def descendants(pid):
    out, todo = [], [pid]
    while todo:
        q = todo.pop()
        try:
            for t in os.listdir(f"/proc/{q}/task"):
                with open(f"/proc/{q}/task/{t}/children") as f:
                    kids = [int(x) for x in f.read().split()]
                out += kids
                todo += kids
        except OSError:
            pass
    return out


def stop(p):
    # The services run in sessions of their own (tend-supervise, s6-supervise): the
    # supervisor's process group does not hold them.
    for q in [p.pid] + descendants(p.pid):
        try:
            os.kill(q, 9)
        except ProcessLookupError:
            pass
    p.wait()


def natural():
    cells = []
    for name, argv in SUPS:
        cells.append((name,) + start("nat", name, argv, "stamp-exit"))
        time.sleep(0.15)
    # rounds + 1 starts each; the service lives 1.1 s
    end = time.monotonic() + (rounds + 2) * 1.3 + 10
    while time.monotonic() < end:
        if all(sum(1 for s in stamps(d) if s[0] == "start") > rounds for _, d, _ in cells):
            break
        time.sleep(0.2)
    res = {}
    for name, d, p in cells:
        stop(p)
        s = stamps(d)
        lat = [int(b[1]) - int(a[1]) for a, b in zip(s, s[1:]) if a[0] == "exit" and b[0] == "start"]
        res[name] = lat[:rounds]
    return res


def control_t():
    cells = []
    for name, argv in SUPS:
        if name == "floor":
            continue
        d, p = start("t", name, argv, "stamp")
        ctl = os.path.join(d, "supervise", "control")
        end = time.monotonic() + 10
        while not (stamps(d) and os.path.exists(ctl)) and time.monotonic() < end:
            time.sleep(0.01)
        cells.append([name, d, p, os.open(ctl, os.O_WRONLY | os.O_NONBLOCK), []])
    for _ in range(rounds):
        time.sleep(1.1)
        for c in cells:
            name, d, p, fd, lat = c
            k = len(stamps(d))
            t0 = time.monotonic_ns()
            os.write(fd, b"t")
            end = time.monotonic() + 10
            while time.monotonic() < end:
                s = stamps(d)
                if len(s) >= k + 2 and s[k + 1][0] == "start":
                    lat.append(int(s[k + 1][1]) - t0)
                    break
                time.sleep(0.0002)
    res = {}
    for name, d, p, fd, lat in cells:
        os.close(fd)
        stop(p)
        res[name] = lat
    return res


def table(title, res):
    print(f"## {title} ({rounds} rounds, ms)")
    print("| supervisor | median | p90 | p90/median | n |")
    print("|---|---:|---:|---:|---:|")
    for name, v in res.items():
        if not v:
            print(f"| {name} | – | – | – | 0 |")
            continue
        m, q = statistics.median(v) / 1e6, p90(v) / 1e6
        print(f"| {name} | {m:.3f} | {q:.3f} | {q / m:.2f} | {len(v)} |")
    print()


PARTS = os.environ.get("RESTART_PARTS", "natural t").split()
if "natural" in PARTS:
    table("natural restart: exit → next exec of ./run", natural())
if "t" in PARTS:
    table("`t` written to supervise/control → ./run exec'd again", control_t())
