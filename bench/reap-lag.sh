#!/bin/bash
# bench/reap-lag.sh — PID-1 reap lag per orphan, from a kernel trace: for each orphan, the
# time from its exit (sched:sched_process_exit) until PID 1's wait4 returns its pid
# (syscalls:sys_exit_wait4), for tend-init, dumb-init, tini-static and catatonit as PID 1
# of a new PID namespace, in the same run. bench/reap.sh's times start at the release of
# all orphans and mostly measure their own wake-up and exit on a loaded machine; this one
# measures the reaper alone, and splits each lag in two: until PID 1 is on a CPU again
# after the exit (the wake-up, the scheduler), and from there until the wait4 that
# returns the orphan (PID 1's own path: signal wait, earlier wait4 calls of the batch).
#
#   bench/reap-lag.sh [orphans=1000] [rounds=5] [runs=2]     (builds through bench/lib.sh)
#
# Also PID 1's CPU time per orphan (its schedstat, read by the command), and its calls per
# orphan of wait4, rt_sigtimedwait, read, poll and the like. TEND_BEFORE=DIR adds that build's tend-init.
# Needs: root (unshare, perf with tracepoints), gcc, dumb-init, tini-static, catatonit.
set -euo pipefail
N=${1:-1000}
ROUNDS=${2:-5}
RUNS=${3:-2}
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/bench/lib.sh"
. "$here/bench/reap-setup.bash"
TEND_ROOT=$here
tend_release --bin tend
work=$(mktemp -d "${TMPDIR:-/tmp}/tend-bench-reaplag.XXXXXX")
trap 'rm -rf "$work"' EXIT
reap_setup perf
# PID 1's waits and reads (tracing every call would trace the command's kill loop too).
calls=
for c in rt_sigtimedwait read poll ppoll epoll_wait epoll_pwait waitid; do calls+=" -e syscalls:sys_exit_$c"; done
echo "# bench/reap-lag.sh $N $ROUNDS $RUNS, $(date -u '+%Y-%m-%d %H:%M UTC'), load: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 0; r < RUNS; r++)); do
    for k in $kinds; do
        # No --mount-proc: /proc stays the host's, where each orphan reads its outside pid.
        # shellcheck disable=SC2086
        perf record -q -o "$work/$k.$r.data" -e sched:sched_process_exit \
            -e syscalls:sys_exit_wait4 $calls \
            -- unshare -fp ${cmd[$k]} "$work/reap" "$N" "$ROUNDS" "$work/$k.$r.map" \
            >"$work/$k.$r.out" 2>/dev/null
        perf script -i "$work/$k.$r.data" -F comm,pid,time,event,trace 2>/dev/null \
            >"$work/$k.$r.txt"
        rm -f "$work/$k.$r.data"
    done
done
python3 - "$work" "$N" "$RUNS" $kinds <<'PY'
import re, statistics, sys
work, n, runs, kinds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
ev = re.compile(r"^\s*(.+?)\s+(\d+)\s+([\d.]+):\s+(\S+):\s*(.*)$")
rows = {}
waits = ("rt_sigtimedwait", "read", "poll", "ppoll", "epoll_wait", "epoll_pwait", "waitid")
for k in kinds:
    comm = "tend-init" if k.startswith("tend") else k
    lags, wakes, paths, cpu, calls, reaped = [], [], [], 0.0, 0, 0
    for r in range(runs):
        inside = {}
        for line in open(f"{work}/{k}.{r}.map"):
            a, b = line.split()
            inside[int(a)] = int(b)
        # The command's own figure: PID 1's CPU time per round, in ms.
        cpu += sum(float(line.split()[4]) for line in open(f"{work}/{k}.{r}.out"))
        exited, init, since = {}, None, 0.0
        for line in open(f"{work}/{k}.{r}.txt"):
            m = ev.match(line)
            if not m:
                continue
            c, pid, t, name, rest = m.group(1), int(m.group(2)), float(m.group(3)), m.group(4), m.group(5)
            if init is None and c == comm:
                init = pid
            if name == "sched:sched_process_exit":
                exited[int(re.search(r"\bpid=(\d+)", rest).group(1))] = t
                continue
            if pid != init:
                continue
            calls += 1
            if name == "syscalls:sys_exit_wait4":
                ret = int(rest.split()[-1], 0)
                out = inside.get(ret)
                if out not in exited:
                    continue
                e = exited[out]
                lags.append(t - e)
                # Woken after the exit: the wait is the wake-up, the rest PID 1's path.
                wakes.append(max(since - e, 0.0))
                paths.append(t - max(since, e))
                reaped += 1
            elif name.removeprefix("syscalls:sys_exit_") in waits:
                since = t
    rows[k] = (lags, wakes, paths, cpu, calls, reaped)
ref = statistics.mean(rows["dumb-init"][0])
us = lambda x: x * 1e6
print(f"\nlag per orphan, from its exit until PID 1's wait4 returns it, us ({n} orphans x rounds x {runs} runs)\n")
print("| init | reaped | mean lag | median | p90 | mean / dumb-init | of it until PID 1 wakes | of it PID 1's path | PID 1 CPU per orphan | calls per orphan |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for k, (lags, wakes, paths, cpu, calls, reaped) in rows.items():
    s = sorted(lags)
    print(f"| {k} | {reaped} | {us(statistics.mean(s)):.1f} | {us(s[len(s) // 2]):.1f} | {us(s[len(s) * 9 // 10]):.1f} | "
          f"{statistics.mean(s) / ref:.2f} | {us(statistics.mean(wakes)):.1f} | {us(statistics.mean(paths)):.1f} | "
          f"{cpu * 1e3 / reaped:.2f} | {calls / reaped:.2f} |")
PY
