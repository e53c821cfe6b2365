#!/usr/bin/env bash
# bench/ipc.sh — the UCSPI socket servers and the seed's syslogd chain, tend's against
# s6's, same machine, same run:
#   tend-ipcserver-socketbinder S tend-ipcserverd -c 1000 -C 1000 true
#   s6-ipcserver-socketbinder   S s6-ipcserverd   -c 1000 -C 1000 true
#     connections per second (CONNS connections, CLIENTS clients at once, each connect
#     reads to EOF and closes; a small C client built here), and the idle server's memory
#     (bench/treemem.py, as /work/shared/tools/treemem.py: every page it maps counted once)
#   the syslogd chain over a stream socket, as examples/syslogd/literal runs it (without
#     the account changes: everything as the caller):
#     binder S server -c 100 -C 100 fdmove -c 1 2 ucspilogd  2> pipe  | log t s4000000 n100 DIR
#     MSGS messages from CLIENTS stream clients at once, one newline-ended record each;
#     the clock runs from the first connect until every line is in the logdir; CPU is
#     user+system of the server (with its reaped children: the ucspilogds) and the logger,
#     per million messages.
#
#   bench/ipc.sh [conns] [msgs]        (defaults 5000 and 500000; RUNS=3)
#
# Needs s6, execline (fdmove), python3, cc. Runs in a private tmpfs work directory.
set -euo pipefail
CONNS=${1:-5000}
MSGS=${2:-500000}
RUNS=${RUNS:-3}
CLIENTS=${CLIENTS:-4}
cd "$(dirname "$0")/.."
. bench/lib.sh
tend_release
for p in s6-ipcserverd s6-ipcserver-socketbinder ucspilogd s6-log python3 cc; do
  command -v "$p" >/dev/null || { echo "bench/ipc.sh: $p is not installed" >&2; exit 100; }
done
FDMOVE=$(command -v fdmove || echo /usr/lib/execline/bin/fdmove)
W=$(mktemp -d /tmp/tend-bench-ipc.XXXXXX)
trap 'teardown "$W" 0.2' EXIT
cat > "$W/conn.c" <<'C'
/* conn SOCKET N: N connections one after the other, each read to EOF, then closed. */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
int main(int argc, char **argv) {
  struct sockaddr_un a = { .sun_family = AF_UNIX };
  char buf[256];
  strncpy(a.sun_path, argv[1], sizeof a.sun_path - 1);
  for (long i = atol(argv[2]); i > 0; i--) {
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) < 0) return 111;
    while (read(s, buf, sizeof buf) > 0) ;
    close(s);
  }
  return 0;
}
C
cat > "$W/say.c" <<'C'
/* say SOCKET FIRST COUNT: COUNT newline-ended syslog records on one stream connection. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
int main(int argc, char **argv) {
  struct sockaddr_un a = { .sun_family = AF_UNIX };
  static char out[1 << 16];
  size_t n = 0;
  long first = atol(argv[2]), count = atol(argv[3]);
  strncpy(a.sun_path, argv[1], sizeof a.sun_path - 1);
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) < 0) return 111;
  for (long i = first; i < first + count; i++) {
    n += snprintf(out + n, 200, "<%ld>Dec  1 12:00:00 bench[4242]: message %08ld with some text after it\n",
                  (i % 7) * 8 + 3, i);
    if (n > sizeof out - 200 || i == first + count - 1) {
      for (size_t o = 0; o < n;) { ssize_t w = write(s, out + o, n - o); if (w <= 0) return 111; o += w; }
      n = 0;
    }
  }
  close(s);
  return 0;
}
C
cc -O2 -o "$W/conn" "$W/conn.c"
cc -O2 -o "$W/say" "$W/say.c"
PYTHONPATH=$PWD/bench B=$B FDMOVE=$FDMOVE python3 - "$CONNS" "$MSGS" "$RUNS" "$CLIENTS" "$W" <<'PY'
import os, socket, statistics, subprocess, sys, time
import treemem
CONNS, MSGS, RUNS, CLIENTS, W = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
B, FDMOVE = os.environ["B"], os.environ["FDMOVE"]
tick = os.sysconf("SC_CLK_TCK")
STACKS = {
    "tend": (f"{B}/tend-ipcserver-socketbinder", f"{B}/tend-ipcserverd", f"{B}/tend-ucspilogd", f"{B}/tend-log"),
    "s6": ("s6-ipcserver-socketbinder", "s6-ipcserverd", "ucspilogd", "s6-log"),
}

def cpu(pid, children=False):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    t = int(f[11]) + int(f[12]) + ((int(f[13]) + int(f[14])) if children else 0)
    return t / tick

def wait_accepting(sock):
    for _ in range(2000):
        try:
            c = socket.socket(socket.AF_UNIX); c.connect(sock); c.close(); return
        except OSError:
            time.sleep(0.005)
    raise SystemExit("no server on " + sock)

def stop(p):
    p.terminate()
    try:
        p.wait(5)
    except subprocess.TimeoutExpired:
        p.kill(); p.wait()

def connections(name, run):
    binder, server, _, _ = STACKS[name]
    sock = f"{W}/{name}-{run}.sock"
    p = subprocess.Popen([binder, sock, server, "-c", "1000", "-C", "1000", "true"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    wait_accepting(sock)
    time.sleep(0.2)
    mem = treemem.total_kb([p.pid])
    per = CONNS // CLIENTS
    t0 = time.monotonic()
    cs = [subprocess.Popen([f"{W}/conn", sock, str(per)]) for _ in range(CLIENTS)]
    for c in cs:
        assert c.wait() == 0, name
    dt = time.monotonic() - t0
    stop(p)
    return per * CLIENTS / dt, mem

def logged(d):
    n = 0
    for f in os.listdir(d):
        if f == "current" or f.endswith(".s") or f.endswith(".u"):
            n += open(os.path.join(d, f), "rb").read().count(b"\n")
    return n

def chain(name, run):
    binder, server, ucspilogd, log = STACKS[name]
    sock, d = f"{W}/{name}-chain-{run}.sock", f"{W}/{name}-logdir-{run}"
    r, w = os.pipe()
    logger = subprocess.Popen([log, "t", "s4000000", "n100", d], stdin=r)
    os.close(r)
    front = subprocess.Popen([binder, sock, server, "-c", "100", "-C", "100", FDMOVE, "-c", "1", "2", ucspilogd],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=w)
    os.close(w)
    wait_accepting(sock)
    while not os.path.isdir(d):
        time.sleep(0.01)
    base = 0
    c0 = cpu(front.pid, True) + cpu(logger.pid)
    per = MSGS // CLIENTS
    t0 = time.monotonic()
    cs = [subprocess.Popen([f"{W}/say", sock, str(i * per), str(per)]) for i in range(CLIENTS)]
    for c in cs:
        assert c.wait() == 0, name
    want = base + per * CLIENTS
    while logged(d) < want:
        time.sleep(0.005)
    dt = time.monotonic() - t0
    assert logged(d) == want, (name, logged(d), want)
    c1 = cpu(front.pid, True) + cpu(logger.pid)
    stop(front)
    stop(logger)
    return per * CLIENTS / dt, (c1 - c0) * 1e6 / (per * CLIENTS)

res = {n: {"rate": [], "mem": [], "mps": [], "cpu": []} for n in STACKS}
for run in range(RUNS):
    for name in STACKS:
        rate, mem = connections(name, run)
        res[name]["rate"].append(rate)
        res[name]["mem"].append(mem)
        mps, c = chain(name, run)
        res[name]["mps"].append(mps)
        res[name]["cpu"].append(c)
med = lambda v: statistics.median(v) if v else float("nan")
t, s = res["tend"], res["s6"]
print(f"CONNS={CONNS} MSGS={MSGS} RUNS={RUNS} CLIENTS={CLIENTS} (medians)")
print("| measure | tend | s6 | tend/s6 |")
print("|---|---|---|---|")
print(f"| ipcserverd connections/s (prog true) | {med(t['rate']):.0f} | {med(s['rate']):.0f} | {med(t['rate'])/med(s['rate']):.2f} |")
print(f"| idle ipcserverd memory, every page once (kB) | {med(t['mem']):.0f} | {med(s['mem']):.0f} | {med(t['mem'])/med(s['mem']):.2f} |")
print(f"| syslogd chain messages/s | {med(t['mps']):.0f} | {med(s['mps']):.0f} | {med(t['mps'])/med(s['mps']):.2f} |")
print(f"| syslogd chain CPU s per million messages | {med(t['cpu']):.2f} | {med(s['cpu']):.2f} | {med(t['cpu'])/med(s['cpu']):.2f} |")
PY
