#!/usr/bin/env bash
# rc.sh — tend-rc against the real s6-rc 0.5.4.1 on the same generated source tree.
#
# Usage: bench/rc.sh [N...]     (default: 100 1000)
#
# For each N: N definitions in 10 levels of N/10, half oneshots (up: /bin/true), half
# longruns ready through notification-fd 3 (run: `echo >&3; exec sleep`), each depending
# on two definitions of the level below; a bundle `all` holds them all.
# 1. s6-rc: s6-rc-compile (timed apart), s6-rc-init under Debian's s6-svscan, then
#    `s6-rc -u change all` (every service up and ready) and `s6-rc -da change`.
# 2. tend-rc: `tend-rc init` under tend-svscan (no compile step), `tend-rc -u change all`,
#    `tend-rc -da change`.
# ROUNDS rounds (default 3) each, the median reported. Memory of the live tree (the scanner
# and everything under it, every page once: /work/shared/tools/treemem.py --tree) with
# everything up. Then `tend-rc check` of 500 definitions (hyperfine).
# Everything started here is stopped on exit (trap), by pid.
set -euo pipefail

SIZES=${*:-100 1000}
ROUNDS=${ROUNDS:-3}
S6RC=${S6RC:-/opt/s6-rc/bin}
TREEMEM=${TREEMEM:-/work/shared/tools/treemem.py}

cd "$(dirname "$0")/.."
for t in s6-svscan hyperfine "$S6RC/s6-rc" python3; do
    command -v "$t" >/dev/null || { echo "rc.sh: missing $t" >&2; exit 111; }
done
. bench/lib.sh
tend_release
export PATH="$B:$PATH"

work=$(mktemp -d "${TMPDIR:-/tmp}/bench-rc.XXXXXX")
PIDS=()
cleanup() { teardown "$work" 1 ${PIDS[@]+"${PIDS[@]}"}; }
trap cleanup EXIT INT TERM

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# gen DIR N: the source tree.
gen() {
    local dir=$1 n=$2 per=$(( $2 / 10 )) l k name
    mkdir -p "$dir/all/contents.d"
    echo bundle > "$dir/all/type"
    for l in $(seq 0 9); do
        for k in $(seq 0 $(( per - 1 ))); do
            name=l$l-$k
            mkdir -p "$dir/$name/dependencies.d"
            touch "$dir/all/contents.d/$name"
            if [ $(( k % 2 )) -eq 0 ]; then
                echo oneshot > "$dir/$name/type"
                echo /bin/true > "$dir/$name/up"
            else
                echo longrun > "$dir/$name/type"
                echo 3 > "$dir/$name/notification-fd"
                printf '#!/bin/sh\necho >&3\nexec sleep 100000 3>&-\n' > "$dir/$name/run"
                chmod +x "$dir/$name/run"
            fi
            if [ "$l" -gt 0 ]; then
                touch "$dir/$name/dependencies.d/l$(( l - 1 ))-$k" \
                      "$dir/$name/dependencies.d/l$(( l - 1 ))-$(( (k + 1) % per ))"
            fi
        done
    done
}

# wait_scanner DIR: until a scanner listens on DIR.
wait_scanner() {
    local i
    for i in $(seq 1 500); do
        [ -p "$1/.s6-svscan/control" ] && return 0
        sleep 0.01
    done
    echo "rc.sh: no scanner on $1" >&2; exit 111
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# one_s6 N ROUND: prints "compile init up down mem"
one_s6() {
    local n=$1 r=$2 d="$work/s6-$1-$2" t0 t1 c i u dn mem pid
    mkdir -p "$d/scan"
    gen "$d/src" "$n"
    s6-svscan "$d/scan" >/dev/null 2>&1 & pid=$!; PIDS+=("$pid")
    wait_scanner "$d/scan"
    t0=$(now_ms); "$S6RC/s6-rc-compile" "$d/db" "$d/src"; t1=$(now_ms); c=$(( t1 - t0 ))
    t0=$(now_ms); "$S6RC/s6-rc-init" -c "$d/db" -l "$d/live" "$d/scan"; t1=$(now_ms); i=$(( t1 - t0 ))
    t0=$(now_ms); "$S6RC/s6-rc" -l "$d/live" -u change all; t1=$(now_ms); u=$(( t1 - t0 ))
    mem=$(python3 "$TREEMEM" --tree "$pid" | sed -n 's/^total_kb=//p')
    t0=$(now_ms); "$S6RC/s6-rc" -l "$d/live" -da change; t1=$(now_ms); dn=$(( t1 - t0 ))
    echo "$c $i $u $dn $mem"
    teardown "$d" 0.2 "$pid"
}

# one_tend N ROUND: prints "0 init up down mem"
one_tend() {
    local n=$1 r=$2 d="$work/tend-$1-$2" t0 t1 i u dn mem pid
    mkdir -p "$d/scan"
    gen "$d/src" "$n"
    tend-svscan "$d/scan" >/dev/null 2>&1 & pid=$!; PIDS+=("$pid")
    wait_scanner "$d/scan"
    t0=$(now_ms); tend-rc init -l "$d/live" -c "$d/src" "$d/scan"; t1=$(now_ms); i=$(( t1 - t0 ))
    t0=$(now_ms); tend-rc -v 0 -l "$d/live" -u change all; t1=$(now_ms); u=$(( t1 - t0 ))
    mem=$(python3 "$TREEMEM" --tree "$pid" | sed -n 's/^total_kb=//p')
    t0=$(now_ms); tend-rc -v 0 -l "$d/live" -da change; t1=$(now_ms); dn=$(( t1 - t0 ))
    echo "0 $i $u $dn $mem"
    teardown "$d" 0.2 "$pid"
}

col() { awk -v c="$1" '{print $c}' | median; }

echo "| N | s6-rc compile ms | s6-rc-init ms | tend-rc init ms | s6-rc up ms | tend-rc up ms | up tend/s6 | s6-rc down ms | tend-rc down ms | down tend/s6 | s6 tree kB | tend tree kB |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for n in $SIZES; do
    s6=$(for r in $(seq 1 "$ROUNDS"); do one_s6 "$n" "$r"; done)
    te=$(for r in $(seq 1 "$ROUNDS"); do one_tend "$n" "$r"; done)
    sc=$(echo "$s6" | col 1); si=$(echo "$s6" | col 2); su=$(echo "$s6" | col 3); sd=$(echo "$s6" | col 4); sm=$(echo "$s6" | col 5)
    ti=$(echo "$te" | col 2); tu=$(echo "$te" | col 3); td=$(echo "$te" | col 4); tm=$(echo "$te" | col 5)
    ru=$(python3 -c "print(f'{$tu/max($su,1):.2f}')"); rd=$(python3 -c "print(f'{$td/max($sd,1):.2f}')")
    echo "| $n | $sc | $si | $ti | $su | $tu | $ru | $sd | $td | $rd | $sm | $tm |"
done

# Read and check 500 definitions.
gen "$work/check500" 500
hyperfine -N --warmup 5 --runs 50 "tend-rc check $work/check500" 2>/dev/null |
    sed -n 's/^ *Time (mean ± σ): *\(.*\)/tend-rc check, 500 definitions: \1/p'
hyperfine -N --warmup 2 --runs 20 -p "rm -rf $work/db500" "$S6RC/s6-rc-compile $work/db500 $work/check500" 2>/dev/null |
    sed -n 's/^ *Time (mean ± σ): *\(.*\)/s6-rc-compile, 500 definitions: \1/p'
