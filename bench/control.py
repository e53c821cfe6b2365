#!/usr/bin/env python3
"""Driver for bench/control.sh: control latencies of s6-supervise and tend-supervise.

usage: control.py WORKDIR TEND_BINDIR ITERATIONS
"""
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time

work, tend_bin, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
SUPERVISORS = [("s6-supervise", "s6-supervise"), ("tend-supervise", os.path.join(tend_bin, "tend-supervise"))]
CLIENTS = [("s6-svc", "s6-svc"), ("tend-svc", os.path.join(tend_bin, "tend-svc"))]
now = time.monotonic_ns
RESTARTS = 10


def stamps(d):
    try:
        with open(os.path.join(d, "stamps")) as f:
            # Complete lines only: a read can overlap the service's write of a line.
            return [l.split() for l in f.read().split("\n")[:-1]]
    except FileNotFoundError:
        return []


def wait_for(pred, what, timeout=10.0):
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > end:
            raise SystemExit(f"control.py: timed out waiting for {what}")
        time.sleep(0.0002)


def status(d):
    with open(os.path.join(d, "supervise", "status"), "rb") as f:
        b = f.read(35)
    return int.from_bytes(b[24:32], "big"), b[34]


def settled_down(d):
    pid, flags = status(d)
    return pid == 0 and not flags & 2


def new_stamp(d, k, tag):
    """Wait for stamp number k (0-based) and check its tag; return its time."""
    s = wait_for(lambda: (lambda l: l if len(l) > k else None)(stamps(d)), f"stamp {k}")
    assert s[k][0] == tag, (s[k], tag)
    return int(s[k][1])


def run(argv):
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL)


class Cell:
    """One supervisor driven by one client, on its own service directory."""

    def __init__(self, sup_name, sup, cli_name, cli):
        self.sup_name, self.cli_name, self.cli = sup_name, cli_name, cli
        self.d = d = os.path.join(work, f"{sup_name}-{cli_name}")
        os.makedirs(d)
        # ./run is the stamp program itself: no shell in the measurement
        shutil.copy(os.path.join(work, "stamp"), os.path.join(d, "run"))
        open(os.path.join(d, "down"), "w").close()
        self.p = subprocess.Popen([sup, d], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, start_new_session=True)
        wait_for(lambda: os.path.exists(os.path.join(d, "supervise", "status")), "status")
        self.k = 0
        self.r = {"-d": [], "-u": [], "-wu -u": [], "-r": []}

    def stamp(self, tag):
        t = new_stamp(self.d, self.k, tag)
        self.k += 1
        return t

    def round(self):
        """-u, -d and -wu -u once each, from down back to down."""
        d, cli = self.d, self.cli
        t0 = now()
        run([cli, "-u", d])
        self.r["-u"].append(self.stamp("start") - t0)
        t0 = now()
        run([cli, "-d", d])
        self.r["-d"].append(self.stamp("term") - t0)
        wait_for(lambda: settled_down(d), "down")
        t0 = now()
        run([cli, "-wu", "-T", "10000", "-u", d])
        self.r["-wu -u"].append(now() - t0)
        self.stamp("start")
        run([cli, "-d", d])
        self.stamp("term")
        wait_for(lambda: settled_down(d), "down")

    def up(self):
        run([self.cli, "-u", self.d])
        self.stamp("start")

    def restart(self):
        t0 = now()
        run([self.cli, "-r", self.d])
        self.stamp("term")
        self.r["-r"].append(self.stamp("start") - t0)

    def close(self):
        try:
            run([self.cli, "-dx", self.d])
            self.p.wait(timeout=10)
        finally:
            if self.p.poll() is None:
                self.p.kill()
                self.p.wait()
            pid, _ = status(self.d)
            if pid:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


# The cells take turns, round by round, so that load from other processes on the machine
# falls on all of them alike.
cells = [Cell(sn, s, cn, c) for sn, s in SUPERVISORS for cn, c in CLIENTS]
try:
    for _ in range(n):
        for c in cells:
            c.round()
    # -r: to the new ./run exec'd, on a service that has run for more than a second
    # (tend-supervise keeps spawns 1 s apart; s6-supervise 2.11 also waits 1 s after the
    # death of a service that never notified readiness)
    for c in cells:
        c.up()
    for _ in range(min(n, RESTARTS)):
        time.sleep(1.1)
        for c in cells:
            c.restart()
finally:
    for c in cells:
        c.close()
results = {(c.sup_name, c.cli_name): c.r for c in cells}


def ms(v):
    return statistics.median(v) / 1e6


def p90(v):
    s = sorted(v)
    return s[min(len(s) - 1, int(0.9 * len(s)))] / 1e6


print(f"iterations: {n} (-r: {min(n, RESTARTS)}, each after 1.1 s of uptime)")
print(f"{'supervisor':<15} {'client':<9} {'-d→TERM':>10} {'-u→exec':>10} {'-wu -u':>10} {'-r→exec':>10}   (median ms)")
for (sup_name, cli_name), r in results.items():
    print(f"{sup_name:<15} {cli_name:<9} {ms(r['-d']):>10.3f} {ms(r['-u']):>10.3f} {ms(r['-wu -u']):>10.3f} {ms(r['-r']):>10.3f}")
print(f"{'':<25} {'-d→TERM':>10} {'-u→exec':>10} {'-wu -u':>10} {'-r→exec':>10}   (p90 ms)")
for (sup_name, cli_name), r in results.items():
    print(f"{sup_name:<15} {cli_name:<9} " + " ".join(f"{p90(r[k]):>10.3f}" for k in ["-d", "-u", "-wu -u", "-r"]))
ref = results[("s6-supervise", "s6-svc")]
print("ratios to s6-supervise + s6-svc (lower is better):")
for (sup_name, cli_name), r in results.items():
    if (sup_name, cli_name) == ("s6-supervise", "s6-svc"):
        continue
    print(f"{sup_name:<15} {cli_name:<9} " + " ".join(
        f"{ms(r[k]) / ms(ref[k]):>10.3f}" for k in ["-d", "-u", "-wu -u", "-r"]))
