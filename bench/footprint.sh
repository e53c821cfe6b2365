#!/usr/bin/env bash
# footprint.sh — what tend costs on disk, in a small tree's memory, and at client start-up,
# against Debian's s6 in the same run.
#
# Usage: bench/footprint.sh [N...]      (tree sizes in logged services, default "1 10")
#   TEND_BIN=DIR   measure the programs in DIR (tend-svscan, tend-supervise, tend-log, ...)
#                  instead of building; e.g. an older build, or a glibc one
#                  (cargo build --release --target x86_64-unknown-linux-gnu; packaging/links.sh DIR)
#   RUNS=N         hyperfine runs per client (default 300); CLIENTS=0 skips start-up
#
# Disk: the bytes of every distinct file (hard links once) that the programs are made of:
# tend's executable(s); s6's programs plus the shared libraries they need from
# libskarnet (libc is not counted for s6: it is on every system; tend carries its own).
#
# Memory: for each kind (tend, s6) and each N, a scan directory of N services, each
# `exec sleep` with a logger (`tend-log t ./main` or `s6-log t ./main`), under the kind's
# scanner; once all 1+4N processes are up, bench/treemem.py --tree counts the tree as a small
# container would pay for it: every private page once and every page of every mapped file
# (executables, libc, libskarnet) once, whoever else maps it. That is the shared
# tools/treemem.py's count, with files told apart by inode (tend's programs are hard links
# to one file); the by-path figure is printed too. The `sleep` services are the same for
# both kinds.
#
# Start-up: hyperfine -N of tend-svstat / tend-svok / tend-setsid against s6's on a running
# service. Prints tables and ratios; tears everything down on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
. bench/lib.sh
SIZES=${*:-1 10}
RUNS=${RUNS:-300}
treemem=$root/bench/treemem.py
for t in s6-svscan s6-supervise s6-log s6-svscanctl s6-svstat python3 hyperfine; do
    command -v "$t" >/dev/null || { echo "footprint: missing $t (apt-get install s6 hyperfine python3)" >&2; exit 111; }
done
if [ -n "${TEND_BIN:-}" ]; then
    bin=$TEND_BIN
else
    tend_release
    bin=$B
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/footprint.XXXXXX")
scanner_pid=
cleanup() {
    if [ -n "$scanner_pid" ]; then
        local pids
        pids=$(python3 - "$scanner_pid" <<'PY' || true
import os, sys
todo, seen = [int(sys.argv[1])], []
while todo:
    p = todo.pop(); seen.append(p)
    try:
        for t in os.listdir(f"/proc/{p}/task"):
            todo += [int(x) for x in open(f"/proc/{p}/task/{t}/children").read().split()]
    except OSError:
        pass
print(" ".join(map(str, seen)))
PY
)
        kill -TERM "$scanner_pid" 2>/dev/null || true
        sleep 1
        for p in $pids; do kill -KILL "$p" 2>/dev/null || true; done
        scanner_pid=
    fi
}
trap 'cleanup; rm -rf "$work"' EXIT INT TERM

echo "## disk"
tend_files=$(ls "$bin"/tend "$bin"/tend-* 2>/dev/null | grep -v '\.d$' || true)
tend_bytes=$(stat -L -c '%i %s' $tend_files | sort -u | awk '{s+=$2} END {print s}')
tend_count=$(echo $tend_files | wc -w)
s6_files=$(dpkg -L s6 | grep -E '^/usr/bin/|^/usr/libexec/' | while read -r f; do [ -f "$f" ] && echo "$f"; done)
s6_libs=$(for f in $s6_files; do ldd "$f" 2>/dev/null; done | awk '/=>/ {print $3}' | grep -E 'skarnet|execline|s6' | sort -u)
s6_bytes=$(stat -L -c '%s' $s6_files $s6_libs | awk '{s+=$1} END {print s}')
printf '%-6s %4d names  %9d bytes on disk (distinct files)\n' tend "$tend_count" "$tend_bytes"
printf '%-6s %4d names  %9d bytes on disk (programs + %s)\n' s6 "$(echo $s6_files | wc -w)" "$s6_bytes" "$(echo $s6_libs | xargs -n1 basename | tr '\n' ' ')"

# A scan directory of N logged `sleep` services for one kind.
make_scandir() {
    local kind=$1 n=$2 dir=$3 i logger
    case $kind in
    tend) logger="$bin/tend-log" ;;
    s6) logger=s6-log ;;
    esac
    mkdir -p "$dir"
    for ((i = 1; i <= n; i++)); do
        mkdir -p "$dir/s$i/log"
        printf '#!/bin/sh\nexec sleep 100000\n' >"$dir/s$i/run"
        printf '#!/bin/sh\nexec %s t ./main\n' "$logger" >"$dir/s$i/log/run"
        chmod +x "$dir/s$i/run" "$dir/s$i/log/run"
    done
}

count_tree() {
    python3 - "$1" <<'PY'
import os, sys
todo, n = [int(sys.argv[1])], 0
while todo:
    p = todo.pop(); n += 1
    try:
        for t in os.listdir(f"/proc/{p}/task"):
            todo += [int(x) for x in open(f"/proc/{p}/task/{t}/children").read().split()]
    except OSError:
        pass
print(n)
PY
}

# Every process of the tree has exec'd its final program (no /bin/sh left).
settled() {
    local want=$1 have
    have=$(count_tree "$scanner_pid")
    [ "$have" -eq "$want" ] || return 1
    ! pgrep -s "$(ps -o sid= -p "$scanner_pid" | tr -d ' ')" -x sh >/dev/null
}

echo
echo "## memory of a small tree (treemem.py --tree: private pages + every file page once), kB"
printf '%-6s %4s %6s %10s %14s %10s %14s %10s\n' kind N procs private shared_file total total_by_path pss
declare -A TOTAL
for n in $SIZES; do
    for kind in tend s6; do
        d=$work/$kind-$n
        make_scandir "$kind" "$n" "$d"
        case $kind in
        tend) setsid "$bin/tend-svscan" "$d" </dev/null >/dev/null 2>&1 & ;;
        s6) setsid s6-svscan "$d" </dev/null >/dev/null 2>&1 & ;;
        esac
        scanner_pid=$!
        want=$((1 + 4 * n))
        for ((i = 0; i < 300; i++)); do
            settled "$want" && break
            sleep 0.1
        done
        settled "$want" || { echo "footprint: $kind tree of $n did not settle" >&2; exit 111; }
        sleep 1
        sync
        out=$(python3 "$treemem" --tree "$scanner_pid")
        get() { echo "$out" | sed -n "s/^$1=//p"; }
        printf '%-6s %4d %6d %10d %14d %10d %14d %10d\n' "$kind" "$n" "$(get processes)" "$(get private_kb)" \
            "$(get shared_file_kb)" "$(get total_kb)" "$(get total_by_path_kb)" "$(get pss_kb)"
        TOTAL[$kind-$n]=$(get total_kb)
        cleanup
    done
    echo "   N=$n: tend/s6 total = $(echo "scale=3; ${TOTAL[tend-$n]} / ${TOTAL[s6-$n]}" | bc -l)"
done

[ "${CLIENTS:-1}" = 1 ] || exit 0
echo
echo "## client start-up (hyperfine -N, $RUNS runs, on a running s6-supervise service)"
d=$work/clients
mkdir -p "$d/svc"
printf '#!/bin/sh\nexec sleep 100000\n' >"$d/svc/run"
chmod +x "$d/svc/run"
setsid s6-supervise "$d/svc" </dev/null >/dev/null 2>&1 &
scanner_pid=$!
for ((i = 0; i < 100; i++)); do
    s6-svstat "$d/svc" 2>/dev/null | grep -q '^up' && break
    sleep 0.1
done
for pair in "tend-svstat s6-svstat $d/svc" "tend-svok s6-svok $d/svc" "tend-setsid s6-setsid /bin/true"; do
    set -- $pair
    t=$1 s=$2
    shift 2
    json=$work/$t.json
    hyperfine -N --warmup 20 --runs "$RUNS" --export-json "$json" "$bin/$t $*" "$s $*" >/dev/null 2>&1
    python3 - "$json" "$t" "$s" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
t, s = r[0]["mean"] * 1e6, r[1]["mean"] * 1e6
print(f"{sys.argv[2]:<12} {t:8.0f} us   {sys.argv[3]:<12} {s:8.0f} us   tend/s6 = {t / s:.2f}")
PY
done
