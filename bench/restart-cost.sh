#!/usr/bin/env bash
# restart-cost.sh — what one restart costs the supervisor itself (issue 28), counted, not
# timed: tend-supervise, s6-supervise, runsv and daemontools' supervise side by side, each
# on its own service directory whose ./run is a static C program that exits at once (so
# each supervisor restarts it once a second), for SECONDS (default 5.5).
#
#   bench/restart-cost.sh [SECONDS]      TEND_BEFORE=DIR adds another build's tend-supervise
#
# Reported per start of ./run: the supervisor's own page faults, context switches and CPU
# time (perf stat --no-inherit: the children's exec and run are not counted), and its
# system calls with its children up to their exec of ./run (strace -f, a second run; a
# child's calls after that execve are not counted). Start-up is included once.
set -euo pipefail
SECS=${1:-5.5}
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/bench/lib.sh"
TEND_ROOT=$here
tend_release --bin tend
for t in perf strace s6-supervise runsv supervise gcc; do
    command -v "$t" >/dev/null || { echo "restart-cost: missing $t" >&2; exit 100; }
done
work=$(mktemp -d /tmp/tend-bench-restart-cost.XXXXXX)
trap 'rm -rf "$work"' EXIT
printf 'int main(void){return 0;}\n' >"$work/quick.c"
gcc -O2 -static -o "$work/quick" "$work/quick.c"
kinds="tend-supervise=$B/tend-supervise"
[ -n "${TEND_BEFORE:-}" ] && kinds="$kinds tend-before=$TEND_BEFORE/tend-supervise"
kinds="$kinds s6-supervise=s6-supervise runsv=runsv daemontools=supervise"

echo "| supervisor | starts | page faults / start | context switches / start | CPU ms / start | syscalls / start (to the child's exec) |"
echo "|---|---:|---:|---:|---:|---:|"
for kv in $kinds; do
    name=${kv%%=*} prog=${kv#*=}
    d=$work/$name
    mkdir -p "$d"
    cp "$work/quick" "$d/run"
    # counters: the supervisor alone
    perf stat --no-inherit -x, -e page-faults,context-switches,task-clock -o "$work/$name.perf" \
        timeout -s TERM "$SECS" "$prog" "$d" </dev/null >/dev/null 2>&1 || true
    rm -rf "$d/supervise"
    # system calls: strace -f, each line tagged with its pid; a child's lines stop counting
    # at its execve
    timeout -s TERM "$SECS" strace -f -qq -o "$work/$name.strace" "$prog" "$d" </dev/null >/dev/null 2>&1 || true
    rm -rf "$d"
    python3 - "$work/$name.perf" "$work/$name.strace" "$name" <<'PY'
import sys
perf, trace, name = sys.argv[1:]
c = {}
for l in open(perf):
    f = l.strip().split(",")
    if len(f) > 3 and f[0].replace(".", "").isdigit():
        c[f[2]] = float(f[0])
first, execd, calls, starts = None, set(), 0, 0
for l in open(trace):
    pid, rest = (l.split(None, 1) + [""])[:2]
    if first is None:
        first = pid
    if pid in execd or rest.startswith("+++") or rest.startswith("---"):
        continue
    if pid != first and rest.startswith('execve("./run"'):
        execd.add(pid)
        starts += 1
    calls += 1
# the first start in each run belongs to start-up; count per start over all of them
s = max(starts, 1)
tc = c.get("task-clock", 0.0)
print(f"| {name} | {starts} | {c.get('page-faults', 0) / s:.1f} | {c.get('context-switches', 0) / s:.1f} | {tc / s:.3f} | {calls / s:.0f} |")
PY
done
