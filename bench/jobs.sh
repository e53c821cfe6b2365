#!/usr/bin/env bash
# jobs.sh — tend-jobs applying a job of N processes into a running scan directory.
#
# Usage: bench/jobs.sh [N]     (default 100)
#
# 1. `tend-jobs apply` of a job of N processes (each `sleep`, with a readiness probe
#    `tend-check -c true`, a log/ service, a restart policy) into the scan directory of a
#    running tend-svscan; reported: the apply's own time, and the time until every process
#    is up and ready (tend-svwait -U, retried until every supervisor listens).
# 2. The same N service directories copied in with `cp -a` under Debian's s6-svscan, with
#    s6-svscanctl -a, until s6-svwait -U says all are ready: the same supervision work
#    without tend-jobs, as the reference.
# 3. A no-change re-apply (hyperfine, 30 runs): the target is under 50 ms for N = 100.
# Everything started here is stopped on exit (trap), by pid.
set -euo pipefail

N=${1:-100}
case "$N" in *[!0-9]*|'') echo "usage: $0 [N]" >&2; exit 100 ;; esac

cd "$(dirname "$0")/.."
root=$(pwd)
for t in s6-svscan s6-svscanctl s6-svwait hyperfine; do
    command -v "$t" >/dev/null || { echo "jobs.sh: missing $t" >&2; exit 111; }
done
. bench/lib.sh
tend_release
export PATH="$B:$PATH"

work=$(mktemp -d "${TMPDIR:-/tmp}/bench-jobs.XXXXXX")
PIDS=()
cleanup() { teardown "$work" 1 ${PIDS[@]+"${PIDS[@]}"}; }
trap cleanup EXIT INT TERM

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

{
    echo "processes:"
    for i in $(seq 1 "$N"); do
        cat <<EOT
  - name: p$i
    executable: /bin/sleep
    args: ["100000"]
    unsafe: {privileged: true}
    tend:
      ready: {exec: "true", timeout: 60s}
      restart: {deaths: 5, within: 60s, then: stop}
EOT
    done
} > "$work/bench.yml"

wait_ready() { # waiter scandir
    local w=$1 sd=$2
    until "$w" -U -t 60000 "$sd"/bench-p* >/dev/null 2>&1; do sleep 0.01; done
}

# ---------------------------------------------------------------- 1. tend
mkdir -p "$work/tend"
tend-svscan "$work/tend" >/dev/null 2>"$work/tend.err" &
PIDS+=($!)
until tend-svscanctl -a "$work/tend" 2>/dev/null; do sleep 0.01; done
t0=$(now_ms)
tend-jobs apply "$work/bench.yml" "$work/tend" >/dev/null
t1=$(now_ms)
wait_ready tend-svwait "$work/tend"
t2=$(now_ms)
echo "tend-jobs apply of $N processes: $((t1 - t0)) ms; all ready after $((t2 - t0)) ms"

# ---------------------------------------------------------------- 2. reference
mkdir -p "$work/s6" "$work/copy"
for d in "$work/tend"/bench-p*; do
    mkdir -p "$work/copy/${d##*/}/log"
    cp -p "$d"/run "$d"/finish "$d"/down-signal "$d"/timeout-kill "$d"/notification-fd \
        "$d"/restart-policy "$d"/tend-job "$work/copy/${d##*/}/"
    cp -p "$d"/log/run "$work/copy/${d##*/}/log/"
done
s6-svscan "$work/s6" >/dev/null 2>"$work/s6.err" &
PIDS+=($!)
until s6-svscanctl -a "$work/s6" 2>/dev/null; do sleep 0.01; done
t0=$(now_ms)
cp -a "$work/copy"/. "$work/s6"/
s6-svscanctl -a "$work/s6"
t1=$(now_ms)
wait_ready s6-svwait "$work/s6"
t2=$(now_ms)
echo "reference (cp -a + s6-svscanctl -a under s6-svscan): $((t1 - t0)) ms; all ready after $((t2 - t0)) ms"

# ---------------------------------------------------------------- 3. no-change re-apply
tend-jobs apply "$work/bench.yml" "$work/tend" | grep -q "no change" ||
    { echo "jobs.sh: a re-apply changed something" >&2; exit 111; }
hyperfine -N --warmup 3 --runs 30 --export-markdown "$work/reapply.md" \
    "tend-jobs apply $work/bench.yml $work/tend" >&2
sed "s|$work|WORK|g; s|$B/||g" "$work/reapply.md"
