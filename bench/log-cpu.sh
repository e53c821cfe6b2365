#!/usr/bin/env bash
# bench/log-cpu.sh — the CPU time (user and system, getrusage of each run) of tend-log
# against s6-log on bench/log.sh's input and script (`t s1000000 n20 DIR`, stdin a file,
# on /dev/shm), the loggers interleaved round by round: on a shared machine the CPU time
# of the same work is steadier than the wall time, and ratios within one run are what
# compare. Prints medians and the ratio to s6-log.
#
#   bench/log-cpu.sh [lines=2000000] [rounds=7]     (builds through bench/lib.sh)
#
# TEND_BEFORE=DIR adds that build's tend-log. Needs s6 (s6-log) and python3.
set -euo pipefail
N=${1:-2000000}
ROUNDS=${2:-7}
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/lib.sh"
TEND_ROOT=$root
tend_release --bin tend
command -v s6-log >/dev/null || { echo "bench/log-cpu.sh: s6-log is not installed" >&2; exit 100; }
W=$(mktemp -d /dev/shm/tend-bench-logcpu.XXXXXX)
trap 'rm -rf "$W"' EXIT
# The input of bench/log.sh (the same generator, the same seed).
sed -n '/^python3 - "$N" > "$W\/input" <<.PY.$/,/^PY$/p' "$root/bench/log.sh" | sed '1d;$d' >"$W/gen.py"
python3 "$W/gen.py" "$N" >"$W/input"
kinds=("s6-log=s6-log" "tend-log=$B/tend-log")
[ -n "${TEND_BEFORE:-}" ] && kinds+=("tend-log before=$TEND_BEFORE/tend-log")
echo "# bench/log-cpu.sh $N $ROUNDS, $(date -u '+%Y-%m-%d %H:%M UTC'), load: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$W" "$ROUNDS" "${kinds[@]}" <<'PY'
import os, shutil, statistics, subprocess, sys
w, rounds = sys.argv[1], int(sys.argv[2])
kinds = [k.split("=", 1) for k in sys.argv[3:]]
res = {k: [] for k, _ in kinds}
for _ in range(rounds):
    for k, prog in kinds:
        shutil.rmtree(f"{w}/o", ignore_errors=True)
        os.makedirs(f"{w}/o/d")
        with open(f"{w}/input", "rb") as inp:
            p = subprocess.Popen([prog, "t", "s1000000", "n20", f"{w}/o/d"], stdin=inp)
            _, st, ru = os.wait4(p.pid, 0)
        if st != 0:
            sys.exit(f"{k} failed: wait status {st}")
        res[k].append((ru.ru_utime, ru.ru_stime))
ref = statistics.median(u + s for u, s in res["s6-log"])
print(f"\n{rounds} rounds, medians, CPU seconds\n")
print("| logger | user | system | total | x s6-log |")
print("|---|---:|---:|---:|---:|")
for k, v in res.items():
    u = statistics.median(x[0] for x in v)
    s = statistics.median(x[1] for x in v)
    t = statistics.median(x[0] + x[1] for x in v)
    print(f"| {k} | {u:.3f} | {s:.3f} | {t:.3f} | {t / ref:.3f} |")
PY
