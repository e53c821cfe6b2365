#!/bin/bash
# bench/reap.sh — PID-1 reap lag: tend-init against dumb-init, tini-static and catatonit,
# each as PID 1 of a new PID namespace (unshare -fp), in the same run.
#
#   bench/reap.sh [orphans=1000] [rounds=5] [runs=3]     (builds through bench/lib.sh)
#
# The command is bench/reap.c: each round it makes `orphans` orphans blocked on one pipe,
# closes the pipe, and times until each orphan's pid is gone (reaped by PID 1). Prints
# per init the median over runs x rounds of the first, median and last orphan's time and
# of PID 1's CPU time meanwhile, in ms, and ratios to dumb-init's. TEND_BEFORE=DIR adds that build's tend-init.
# Needs: root (unshare), gcc, dumb-init, tini (tini-static), catatonit (Debian packages).
set -euo pipefail
N=${1:-1000}
ROUNDS=${2:-5}
RUNS=${3:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/bench/lib.sh"
. "$here/bench/reap-setup.bash"
TEND_ROOT=$here
tend_release --bin tend
work=$(mktemp -d "${TMPDIR:-/tmp}/tend-bench-reap.XXXXXX")
trap 'rm -rf "$work"' EXIT
reap_setup
for ((r = 0; r < RUNS; r++)); do
    for k in $kinds; do
        # shellcheck disable=SC2086
        unshare -fp --mount-proc ${cmd[$k]} "$work/reap" "$N" "$ROUNDS" 2>/dev/null | sed "s/^/$k /" >>"$work/out"
    done
done
python3 - "$work/out" "$N" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    k, _, first, med, last, cpu = line.split()
    rows.setdefault(k, []).append((float(first), float(med), float(last), float(cpu)))
ref = [statistics.median(c) for c in zip(*rows["dumb-init"])]
print(f"\n{sys.argv[2]} orphans, ms from their release until reaped (median of {len(rows['dumb-init'])} rounds)\n")
print("| init | first | median | last | last / dumb-init | PID 1 CPU | CPU / dumb-init |")
print("|---|---:|---:|---:|---:|---:|---:|")
for k, v in rows.items():
    m = [statistics.median(c) for c in zip(*v)]
    print(f"| {k} | {m[0]:.2f} | {m[1]:.2f} | {m[2]:.2f} | {m[2] / ref[2]:.2f} | {m[3]:.2f} | {m[3] / ref[3]:.2f} |")
PY
