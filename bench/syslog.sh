#!/usr/bin/env bash
# bench/syslog.sh — a whole syslog chain, sender → front end → logger with TAI64N stamps
# and rotation, same input, same machine, same run:
#   tend-socklog | tend-log t s4000000 n100 DIR
#   s6-socklog   | s6-log   t s4000000 n100 DIR
#   rsyslogd (imuxsock on its own socket, rate limiting off, omfile; its own config)
#
#   bench/syslog.sh [messages]        (default 1000000; RUNS=3 by default)
#
# One sender (a small C program built here) writes the messages (RFC 3164 as glibc formats
# them, 60..140 bytes) to a unix datagram socket with blocking send(2), as fast as it can:
# a full socket blocks it, so nothing is lost on the way in. The clock runs from
# the first send until the last line is in the log files. CPU is user+system, from /proc,
# per million messages: of the front end and the logger together (rsyslogd: its one
# process), and of the front end alone. PSS is the idle front end's, from
# /proc/PID/smaps_rollup after start-up, with its anonymous part (the rest is file pages),
# and every page it maps counted once (bench/treemem.py on its pid alone: a dynamic front
# end's libc in full, as where nothing else on the machine shares it).
# Everything runs in a private mount namespace with a fresh tmpfs on /dev and on the work
# directory: the machine's /dev/log is never touched. The logdirs hold 100 files of 4 MB,
# so no message is rotated away. Needs s6, rsyslog, python3, cc, unshare.
set -euo pipefail
N=${1:-1000000}
RUNS=${RUNS:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/lib.sh"
TEND_ROOT=$root
if [ -z "${TEND_BENCH_PRIVATE:-}" ]; then
  tend_release
  for p in s6-socklog s6-log rsyslogd python3 cc unshare; do
    command -v "$p" >/dev/null || { echo "bench/syslog.sh: $p is not installed" >&2; exit 100; }
  done
  exec env TEND_BENCH_PRIVATE=1 unshare --mount --propagation private "$0" "$@"
fi
mount -t tmpfs tend-bench-dev /dev
mknod -m 666 /dev/null c 1 3; mknod -m 666 /dev/zero c 1 5
mknod -m 666 /dev/random c 1 8; mknod -m 666 /dev/urandom c 1 9
W=$(mktemp -d /tmp/tend-bench-syslog.XXXXXX)
mount -t tmpfs tend-bench-work "$W"
trap 'umount "$W"; rmdir "$W"' EXIT
cat > "$W/send.c" <<'C'
/* send.c SOCKET FILE: each line of FILE as one datagram, blocking send(2). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
int main(int argc, char **argv) {
  struct sockaddr_un a = { .sun_family = AF_UNIX };
  int s = socket(AF_UNIX, SOCK_DGRAM, 0);
  FILE *f = fopen(argv[2], "r");
  char *line = 0; size_t cap = 0; ssize_t n;
  strncpy(a.sun_path, argv[1], sizeof a.sun_path - 1);
  if (s < 0 || !f || connect(s, (struct sockaddr *)&a, sizeof a) < 0) { perror("send"); return 111; }
  while ((n = getline(&line, &cap, f)) > 0)
    if (send(s, line, n - 1, 0) < 0) { perror("send"); return 111; }
  return 0;
}
C
cc -O2 -o "$W/send" "$W/send.c"
PYTHONPATH=$root/bench T=${CARGO_TARGET_DIR:-$root/target}/x86_64-unknown-linux-musl/release python3 - "$N" "$RUNS" "$W" <<'PY'
import os, random, socket, statistics, subprocess, sys, time
import treemem  # bench/treemem.py (PYTHONPATH)
N, RUNS, W = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
T = os.environ["T"]
tick = os.sysconf("SC_CLK_TCK")
rnd = random.Random(42)
alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 =:/-_.ABCDEFGHIJKLMNOPQRSTUVWXYZ"
pool = "".join(rnd.choice(alphabet) for _ in range(4096))
msgs = open(os.path.join(W, "msgs"), "wb")
for i in range(N):
    pri = rnd.choice((13, 14, 30, 38, 86, 134, 163))
    head = "<%d>Nov 30 12:00:00 bench[4242]: %08d " % (pri, i)
    k = rnd.randint(60, 140) - len(head)
    s = rnd.randint(0, 4096 - 140)
    msgs.write((head + pool[s:s + k] + "\n").encode())
msgs.close()

def cpu(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / tick

def pss(pid):
    """(Pss, Pss_Anon) in kB: all of it, and the part that is the process's own data."""
    v = {}
    for l in open("/proc/%d/smaps_rollup" % pid):
        k, _, rest = l.partition(":")
        if k in ("Pss", "Pss_Anon"):
            v[k] = int(rest.split()[0])
    return v.get("Pss", 0), v.get("Pss_Anon", 0)

def lines(d):
    n = 0
    for name in os.listdir(d):
        if name == "current" or name.endswith(".s") or name.endswith(".u") or name.endswith(".log"):
            with open(os.path.join(d, name), "rb") as f:
                n += sum(b.count(b"\n") for b in iter(lambda: f.read(1 << 20), b""))
    return n

def wait_socket(p):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    for _ in range(1000):
        try:
            c.connect(p); return
        except OSError:
            time.sleep(0.01)
    raise SystemExit("no socket at " + p)

RSYSLOG_CONF = """
global(workDirectory="{w}")
module(load="imuxsock" SysSock.Use="off")
input(type="imuxsock" Socket="{sock}" RateLimit.Interval="0" CreatePath="on")
template(name="plain" type="string" string="%syslogfacility-text%.%syslogseverity-text%: %msg%\\n")
*.* action(type="omfile" file="{out}/syslog.log" template="plain")
"""

def chain(name, run_dir):
    sock = os.path.join(run_dir, "log.sock")
    out = os.path.join(run_dir, "d")
    os.makedirs(out)
    if name == "rsyslogd":
        conf = os.path.join(run_dir, "rsyslog.conf")
        open(conf, "w").write(RSYSLOG_CONF.format(w=run_dir, sock=sock, out=out))
        p = subprocess.Popen(["rsyslogd", "-n", "-f", conf, "-i", os.path.join(run_dir, "pid")],
                             stdout=subprocess.DEVNULL, stderr=open(os.path.join(run_dir, "err"), "w"))
        return [p], sock, out
    front, logger = {"tend": (T + "/tend-socklog", T + "/tend-log"),
                     "s6": ("s6-socklog", "s6-log")}[name]
    f = subprocess.Popen([front, "-x", sock], stdout=subprocess.PIPE)
    l = subprocess.Popen([logger, "t", "s4000000", "n100", out], stdin=f.stdout)
    f.stdout.close()
    return [f, l], sock, out

results = {}
for run in range(RUNS):
    for name in ("tend", "s6", "rsyslogd"):
        d = os.path.join(W, "%s-%d" % (name, run))
        os.makedirs(d)
        procs, sock, out = chain(name, d)
        wait_socket(sock)
        time.sleep(0.3)
        idle, anon = pss(procs[0].pid)
        once = treemem.total_kb([procs[0].pid])
        c0 = [cpu(p.pid) for p in procs]
        t0 = time.monotonic()
        subprocess.run([os.path.join(W, "send"), sock, os.path.join(W, "msgs")], check=True)
        t_sent = time.monotonic()
        deadline = t0 + 600
        while True:
            got = lines(out)
            if got >= N or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        t1 = time.monotonic()
        per = [cpu(p.pid) - c for p, c in zip(procs, c0)]
        used = sum(per)
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait()
        r = results.setdefault(name, [])
        r.append(dict(rate=N / (t1 - t0), cpu=used * 1e6 / N, front=per[0] * 1e6 / N, pss=idle, anon=anon, once=once, lost=N - got,
                      sendrate=N / (t_sent - t0)))
        subprocess.run(["rm", "-rf", d])
        print("run %d %-9s %9.0f msg/s  cpu %.2f s/M  pss %d kB  lost %d" %
              (run, name, r[-1]["rate"], r[-1]["cpu"], idle, N - got), file=sys.stderr)

med = {n: {k: statistics.median(x[k] for x in v) for k in v[0]} for n, v in results.items()}
b = med["s6"]
print("| chain | msg/s | × s6 | CPU s per M msgs | × s6 | front end alone | idle front-end PSS kB | × s6 | of which anon kB | every page once kB | × s6 | lost |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
label = {"tend": "tend-socklog \\| tend-log", "s6": "s6-socklog \\| s6-log", "rsyslogd": "rsyslogd (omfile)"}
for n in ("tend", "s6", "rsyslogd"):
    m = med[n]
    print("| %s | %.0f | %.2f | %.2f | %.2f | %.2f | %d | %.2f | %d | %d | %.2f | %d |" % (
        label[n], m["rate"], m["rate"] / b["rate"], m["cpu"], m["cpu"] / b["cpu"], m["front"],
        m["pss"], m["pss"] / b["pss"], m["anon"], m["once"], m["once"] / b["once"], m["lost"]))
print("\n(median of %d runs, %d messages; sender alone reached %.0f msg/s into tend's chain)" %
      (RUNS, N, med["tend"]["sendrate"]))
PY
