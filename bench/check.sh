#!/usr/bin/env bash
# check.sh — health checks and the operator's view, against Debian's monit and s6-svstat,
# in the same run.
#
# Usage: bench/check.sh [PROBES] [SERVICES]     (defaults 3600 and 1000)
#   PARTS="liveness summary" selects the parts (default both).
#
# 1. Liveness: a tend-check -L watcher probing an HTTP endpoint every 100 ms for PROBES
#    probes (PROBES/10 seconds), against monit doing the same HTTP check with
#    `set daemon 1` (one check per second) for the same wall time. Reported: PSS
#    (smaps_rollup) and CPU time (schedstat, ns) of the checker process, CPU per probe,
#    and the ratios tend/monit. The HTTP server (python3 -m http.server) is not measured.
# 2. Summary: SERVICES services under tend-svscan (each `exec sleep`), then hyperfine of
#    `tend-summary SCANDIR` against `s6-svstat` run once per service (a shell loop) and
#    `monit summary` with one `check directory` per service.
# Everything started here is stopped on exit (trap), by pid.
set -euo pipefail

PROBES=${1:-3600}
SERVICES=${2:-1000}
case "$PROBES$SERVICES" in *[!0-9]*) echo "usage: $0 [PROBES] [SERVICES]" >&2; exit 100 ;; esac

cd "$(dirname "$0")/.."
root=$(pwd)
for t in monit s6-svstat hyperfine python3; do
    command -v "$t" >/dev/null || { echo "check.sh: missing $t" >&2; exit 111; }
done
. bench/lib.sh
tend_release

work=$(mktemp -d "${TMPDIR:-/tmp}/bench-check.XXXXXX")
PIDS=()
cleanup() { teardown "$work" 0.5 ${PIDS[@]+"${PIDS[@]}"}; }
trap cleanup EXIT INT TERM

pss() { awk '/^Pss:/ {print $2}' "/proc/$1/smaps_rollup"; }
pss_anon() { awk '/^Pss_Anon:/ {print $2}' "/proc/$1/smaps_rollup"; }
cpu_ns() { awk '{print $1}' "/proc/$1/schedstat"; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

PARTS=${PARTS:-"liveness summary"}

# ---------------------------------------------------------------- 1. liveness
if [[ " $PARTS " == *" liveness "* ]]; then
mkdir -p "$work/www" "$work/svc"
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$work/www" >/dev/null 2>&1 &
PIDS+=($!)
echo ok > "$work/www/index.html"
printf '#!/bin/sh\nexec sleep 1000000\n' > "$work/svc/run"; chmod +x "$work/svc/run"
setsid "$B/tend-supervise" "$work/svc" </dev/null >/dev/null 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do "$B/tend-svstat" "$work/svc" 2>/dev/null | grep -q '^up' && break; sleep 0.1; done
for _ in $(seq 100); do "$B/tend-check" -p "127.0.0.1:$port" 2>/dev/null && break; sleep 0.1; done

secs=$(( (PROBES + 9) / 10 ))
"$B/tend-check" -L --http "http://127.0.0.1:$port/" -S "$work/svc" --interval 100ms --failures 3 \
    --max-restarts 10 --window 1h </dev/null >/dev/null 2>"$work/watcher.err" &
wpid=$!
PIDS+=($wpid)

mkdir -p "$work/monit"
cat > "$work/monit/monitrc" <<RC
set daemon 1
set logfile $work/monit/log
set idfile $work/monit/id
set statefile $work/monit/state
set pidfile $work/monit/pid
check host web with address 127.0.0.1
    if failed port $port protocol http request "/" then alert
RC
chmod 600 "$work/monit/monitrc"
monit -I -c "$work/monit/monitrc" >/dev/null 2>&1 &
mpid=$!
PIDS+=($mpid)

echo "# liveness: $PROBES probes at 100 ms ($secs s) vs monit, set daemon 1, same $secs s" >&2
sleep 1
w0=$(cpu_ns $wpid); m0=$(cpu_ns $mpid)
sleep "$secs"
w1=$(cpu_ns $wpid); m1=$(cpu_ns $mpid)
wpss=$(pss $wpid); mpss=$(pss $mpid); wanon=$(pss_anon $wpid); manon=$(pss_anon $mpid)
health=$(grep -o 'health=[a-z]*' "$work/svc/supervise/tend-check" || true)
monit_checks=$(grep -c "" "$work/monit/log" || true)
kill -TERM $wpid $mpid 2>/dev/null || true
awk -v w=$((w1 - w0)) -v m=$((m1 - m0)) -v wp="$wpss" -v mp="$mpss" -v wa="$wanon" -v ma="$manon" -v n="$PROBES" -v s="$secs" -v h="$health" '
BEGIN {
    printf "| checker | probes | PSS kB | of which anonymous | CPU ms | CPU per probe (us) |\n|---|---:|---:|---:|---:|---:|\n"
    printf "| tend-check -L (100 ms) | %d | %d | %d | %.1f | %.1f |\n", n, wp, wa, w / 1e6, w / 1e3 / n
    printf "| monit (set daemon 1) | %d | %d | %d | %.1f | %.1f |\n", s, mp, ma, m / 1e6, m / 1e3 / s
    printf "\nPSS tend/monit = %.2f; CPU tend/monit over the same time = %.2f (tend probing 10x as often); CPU per probe tend/monit = %.3f. Watcher state at the end: %s\n", wp / mp, w / m, (w / n) / (m / s), h
}'

fi

# ---------------------------------------------------------------- 2. summary
if [[ " $PARTS " == *" summary "* ]]; then
sd="$work/scan"
mkdir -p "$sd"
for i in $(seq -w 1 "$SERVICES"); do
    mkdir -p "$sd/s$i"
    printf '#!/bin/sh\nexec sleep 1000000\n' > "$sd/s$i/run"
    chmod +x "$sd/s$i/run"
done
"$B/tend-svscan" -c $((SERVICES + 10)) "$sd" </dev/null >/dev/null 2>&1 &
PIDS+=($!)
echo "# summary: waiting for $SERVICES services" >&2
for _ in $(seq 600); do
    up=$("$B/tend-summary" -p "$sd" 2>/dev/null | grep -c '^tend_service_up{.*} 1$' || true)
    [ "$up" -ge "$SERVICES" ] && break
    sleep 0.5
done
# Let the start-up storm of SERVICES supervisors settle before timing anything.
sleep "${SETTLE:-30}"
mkdir -p "$work/monit2"
{
    echo "set daemon 3600"
    echo "set logfile $work/monit2/log"
    echo "set idfile $work/monit2/id"
    echo "set statefile $work/monit2/state"
    echo "set pidfile $work/monit2/pid"
    echo "set httpd unixsocket $work/monit2/sock"
    echo "    allow admin:monit"
    for d in "$sd"/s*; do echo "check directory $(basename "$d") path $d"; done
} > "$work/monit2/monitrc"
chmod 600 "$work/monit2/monitrc"
monit -I -c "$work/monit2/monitrc" >/dev/null 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do monit -c "$work/monit2/monitrc" summary >/dev/null 2>&1 && break; sleep 0.2; done
"$B/tend-summary" "$sd" | head -3 >&2
hyperfine -N -i --warmup 3 --runs 20 --export-markdown "$work/summary.md" \
    -n "tend-summary ($SERVICES services)" "$B/tend-summary $sd" \
    -n "monit summary ($SERVICES checks)" "monit -c $work/monit2/monitrc summary" >&2 || true
hyperfine -i --warmup 1 --runs 5 --export-markdown "$work/svstat.md" \
    -n "s6-svstat x $SERVICES" "for d in $sd/s*; do s6-svstat \$d; done >/dev/null" >&2 || true
cat "$work/summary.md" "$work/svstat.md"
fi
