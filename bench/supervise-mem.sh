#!/usr/bin/env bash
# supervise-mem.sh — memory per supervisor: s6-supervise vs tend-supervise vs runit's runsv,
# plus a "forked, never exec'd" floor, all in the same run.
#
# Usage: bench/supervise-mem.sh [N]        (N services per supervisor kind, default 1000)
#   KINDS="s6 tend runit floor" selects/reorders the kinds measured (default: all four).
#   DETAIL=0 skips the per-mapping breakdown of one supervisor of each kind.
#   TEND_BIN=/path/to/tend-supervise measures that binary instead (no cargo build), e.g. a
#   variant built with other RUSTFLAGS into another CARGO_TARGET_DIR.
#
# For each kind it starts N supervisors directly (setsid, no scanner), each on its own service
# directory whose ./run is a symlink to a static `pause()` sleeper (gcc -static, so the services
# map nothing the supervisors map), waits until every service is up (sleeper child present under
# its supervisor, then s6-svstat / sv status), reads /proc/PID/smaps_rollup of the SUPERVISOR
# processes only, and reports per-supervisor median and mean of Pss, Private_Clean+Private_Dirty
# and Rss in kB, and the ratios tend/s6 and tend/runit. Everything is torn down after each kind,
# and on any exit or Ctrl-C (trap): supervisors get SIGTERM (bring down and exit), stragglers and
# sleepers are killed by pid, the scratch dirs are removed.
set -euo pipefail

N=${1:-1000}
case $N in '' | *[!0-9]*) echo "usage: $0 [N]" >&2; exit 100 ;; esac
[ "$N" -ge 1 ] || { echo "usage: $0 [N]  (N >= 1)" >&2; exit 100; }
KINDS=${KINDS:-"s6 tend runit floor"}
DETAIL=${DETAIL:-1}

cd "$(dirname "$0")/.."
root=$(pwd)
. bench/lib.sh

for t in s6-supervise s6-svstat runsv sv gcc; do
    command -v "$t" >/dev/null || { echo "supervise-mem: missing $t" >&2; exit 111; }
done

if [ -n "${TEND_BIN:-}" ]; then
    TEND=$TEND_BIN
else
    tend_release
    TEND=$B/tend-supervise
fi
[ -x "$TEND" ] || { echo "supervise-mem: no $TEND" >&2; exit 111; }

# Scratch: binaries under $TMPDIR (exec allowed), service dirs on a tmpfs when there is one.
bindir=$(mktemp -d "${TMPDIR:-/tmp}/supmem-bin.XXXXXX")
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
    svroot=$(mktemp -d /dev/shm/supmem-sv.XXXXXX)
else
    svroot=$(mktemp -d "${TMPDIR:-/tmp}/supmem-sv.XXXXXX")
fi

SUPS=()      # pids of the supervisors (or floor parent) of the current kind
cleanup_kind() {
    # 1. ask supervisors to bring their service down and exit (SIGTERM = s6-svc -xd; runsv: 'x')
    local p alive i
    for p in "${SUPS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    # 2. wait up to 10 s for them to go
    for ((i = 0; i < 100; i++)); do
        alive=0
        for p in "${SUPS[@]}"; do
            if kill -0 "$p" 2>/dev/null; then alive=1; break; fi
        done
        [ $alive = 0 ] && break
        sleep 0.1
    done
    # 3. stragglers: SIGKILL by pid; then every process still running one of OUR binaries
    #    (the sleeper / floor in $bindir), found by its exe link, killed by pid.
    for p in "${SUPS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    for p in "${SUPS[@]}"; do wait "$p" 2>/dev/null || true; done
    local left
    for ((i = 0; i < 50; i++)); do
        left=$(our_procs)
        [ -z "$left" ] && break
        # shellcheck disable=SC2086
        kill -KILL $left 2>/dev/null || true
        sleep 0.1
    done
    SUPS=()
}
# pids of processes whose executable lives in our $bindir (sleepers, floor processes)
our_procs() {
    { find /proc -mindepth 2 -maxdepth 2 -name exe -lname "$bindir/*" 2>/dev/null || true; } |
        sed -n 's|^/proc/\([0-9][0-9]*\)/exe$|\1|p' | tr '\n' ' '
}
cleanup_all() {
    trap - EXIT INT TERM HUP
    cleanup_kind
    rm -rf "$svroot" "$bindir"
}
trap cleanup_all EXIT
trap 'echo "supervise-mem: interrupted" >&2; exit 130' INT TERM HUP

# ---- the static sleeper (./run of every service) and the fork floor ----
cat >"$bindir/sleeper.c" <<'EOF'
#include <unistd.h>
int main(void) { for (;;) pause(); }
EOF
cat >"$bindir/floor.c" <<'EOF'
/* floor N: fork N children that only pause(); print their pids; the parent pauses too. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
    long n = argc > 1 ? strtol(argv[1], 0, 10) : 1;
    for (long i = 0; i < n; i++) {
        pid_t p = fork();
        if (p < 0) { perror("fork"); return 111; }
        if (p == 0) { for (;;) pause(); }
        printf("%ld\n", (long)p);
    }
    fflush(stdout);
    fclose(stdout);
    for (;;) pause();
}
EOF
gcc -static -Os -s -o "$bindir/sleeper" "$bindir/sleeper.c"
gcc -Os -s -o "$bindir/floor" "$bindir/floor.c"
SLEEPER=$bindir/sleeper
# the fresh binaries' pages must not count as dirty
sync

# ---- helpers ----
supervisor_bin() {
    case $1 in
        s6) command -v s6-supervise ;;
        tend) echo "$TEND" ;;
        runit) command -v runsv ;;
    esac
}

make_dirs() {   # make_dirs KIND -> $svroot/KIND/sv0..sv(N-1), run -> sleeper
    local d=$svroot/$1 i
    mkdir -p "$d"
    for ((i = 0; i < N; i++)); do
        mkdir "$d/sv$i"
        ln -s "$SLEEPER" "$d/sv$i/run"
    done
}

# children of our supervisors that are the sleeper: count (pid set in SUPS)
count_up_children() {
    local sups=" ${SUPS[*]} "
    local n=0 pid ppid
    for pid in $(our_procs); do
        ppid=$(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null) || continue
        case $sups in *" $ppid "*) n=$((n + 1)) ;; esac
    done
    echo $n
}

wait_up() {   # wait_up KIND — until N sleepers run under our N supervisors, then cross-check
    local kind=$1 i n=0 d=$svroot/$1
    for ((i = 0; i < 1200; i++)); do
        n=$(count_up_children)
        [ "$n" -ge "$N" ] && break
        sleep 0.1
    done
    if [ "$n" -lt "$N" ]; then
        echo "supervise-mem: $kind: only $n of $N services up after 120 s" >&2
        return 1
    fi
    # cross-check with the status files through the reference tools
    local up
    case $kind in
        runit)
            up=$(sv status "$d"/sv* 2>/dev/null | grep -c '^run: ') || true ;;
        *)
            up=0
            for ((i = 0; i < N; i++)); do
                [ "$(s6-svstat -o up "$d/sv$i" 2>/dev/null)" = true ] && up=$((up + 1))
            done ;;
    esac
    if [ "$up" -ne "$N" ]; then
        echo "supervise-mem: $kind: status files say $up of $N up" >&2
        return 1
    fi
}

# measure PIDS... -> lines "pid rss pss private" (kB) from smaps_rollup
measure() {
    local files=() p
    for p in "$@"; do files+=("/proc/$p/smaps_rollup"); done
    awk '
        FNR == 1 { if (f != "") print f, rss, pss, pc + pd; f = FILENAME; rss = pss = pc = pd = 0 }
        /^Rss:/ { rss = $2 } /^Pss:/ { pss = $2 }
        /^Private_Clean:/ { pc = $2 } /^Private_Dirty:/ { pd = $2 }
        END { if (f != "") print f, rss, pss, pc + pd }' "${files[@]}" |
        sed 's|^/proc/\([0-9]*\)/smaps_rollup|\1|'
}

# stats COL < lines -> "median mean" (1 decimal)
stats() {
    awk -v c="$1" '{print $c}' | sort -n | awk '
        { v[NR] = $1; s += $1 }
        END {
            if (NR == 0) { print "nan nan"; exit }
            m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            printf "%.1f %.1f\n", m, s / NR
        }'
}

# per-mapping breakdown of one process: Pss and Private by mapping name, biggest first
detail() {
    awk '
        /^[0-9a-f]+-[0-9a-f]+ / { name = ($6 == "") ? "[anon]" : $6; next }
        /^Pss:/ { pss[name] += $2 }
        /^Rss:/ { rss[name] += $2 }
        /^Private_(Clean|Dirty):/ { prv[name] += $2 }
        END { for (k in pss) printf "    %7d %7d %7d  %s\n", rss[k], pss[k], prv[k], k }' \
        "/proc/$1/smaps" | sort -k2,2nr
}

declare -A MED_PSS MEAN_PSS MED_PRV MEAN_PRV MED_RSS MEAN_RSS COUNT
DETAILS=""

run_kind() {
    local kind=$1 bin d i p lines
    d=$svroot/$kind
    echo "# $kind: $N services" >&2
    if [ "$kind" = floor ]; then
        : >"$svroot/floor.pids"
        setsid "$bindir/floor" "$N" >"$svroot/floor.pids" </dev/null &
        SUPS=("$!")
        for ((i = 0; i < 600; i++)); do
            [ "$(wc -l <"$svroot/floor.pids")" -ge "$N" ] && break
            sleep 0.1
        done
        sleep 0.5   # let the children reach pause()
        mapfile -t pids <"$svroot/floor.pids"
        [ "${#pids[@]}" -eq "$N" ] || { echo "supervise-mem: floor: ${#pids[@]} of $N children" >&2; return 1; }
    else
        bin=$(supervisor_bin "$kind")
        make_dirs "$kind"
        for ((i = 0; i < N; i++)); do
            setsid "$bin" "$d/sv$i" </dev/null >/dev/null 2>>"$svroot/$kind.err" &
            SUPS+=("$!")
        done
        wait_up "$kind"
        # every measured pid must really be the supervisor (setsid must not have forked)
        local want
        want=$(basename "$bin")
        for p in "${SUPS[@]}"; do
            [ "$(cat "/proc/$p/comm")" = "${want:0:15}" ] ||
                { echo "supervise-mem: pid $p is not $want" >&2; return 1; }
        done
        sleep 1   # settle (s6: the 1 s "up for" point has passed for everyone)
        pids=("${SUPS[@]}")
    fi
    lines=$(measure "${pids[@]}")
    COUNT[$kind]=$(echo "$lines" | wc -l)
    read -r MED_RSS[$kind] MEAN_RSS[$kind] < <(echo "$lines" | stats 2)
    read -r MED_PSS[$kind] MEAN_PSS[$kind] < <(echo "$lines" | stats 3)
    read -r MED_PRV[$kind] MEAN_PRV[$kind] < <(echo "$lines" | stats 4)
    if [ "$DETAIL" = 1 ]; then
        DETAILS+="  $kind (pid ${pids[0]}):      Rss     Pss Private  mapping"$'\n'
        DETAILS+="$(detail "${pids[0]}")"$'\n'
    fi
    if [ -s "$svroot/$kind.err" ]; then
        echo "supervise-mem: $kind stderr:" >&2
        head -5 "$svroot/$kind.err" >&2
    fi
    cleanup_kind
    rm -rf "$d"
}

for k in $KINDS; do run_kind "$k"; done

# ---- report ----
name() {
    case $1 in
        s6) echo "s6-supervise" ;; tend) echo "tend-supervise" ;;
        runit) echo "runsv" ;; floor) echo "fork, no exec" ;;
    esac
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

echo
echo "supervisor memory, N=$N services per kind, per process in kB ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
printf '%-16s %6s %10s %10s %12s %12s %10s %10s\n' kind count "Pss med" "Pss mean" "Priv med" "Priv mean" "Rss med" "Rss mean"
for k in $KINDS; do
    printf '%-16s %6s %10s %10s %12s %12s %10s %10s\n' "$(name "$k")" "${COUNT[$k]}" \
        "${MED_PSS[$k]}" "${MEAN_PSS[$k]}" "${MED_PRV[$k]}" "${MEAN_PRV[$k]}" "${MED_RSS[$k]}" "${MEAN_RSS[$k]}"
done
echo "(Priv = Private_Clean + Private_Dirty)"
if [[ " $KINDS " == *" tend "* ]]; then
    for base in s6 runit; do
        [[ " $KINDS " == *" $base "* ]] || continue
        echo "tend/$base: Pss median $(ratio "${MED_PSS[tend]}" "${MED_PSS[$base]}"), mean $(ratio "${MEAN_PSS[tend]}" "${MEAN_PSS[$base]}");" \
            "Private median $(ratio "${MED_PRV[tend]}" "${MED_PRV[$base]}"), mean $(ratio "${MEAN_PRV[tend]}" "${MEAN_PRV[$base]}");" \
            "Rss median $(ratio "${MED_RSS[tend]}" "${MED_RSS[$base]}")"
    done
fi
echo
echo "binaries:"
for k in s6 tend runit; do
    b=$(supervisor_bin "$k")
    printf '  %-30s %8s bytes  %s\n' "$b" "$(stat -L -c %s "$b")" "$(size "$b" 2>/dev/null | awk 'NR==2 {print "text " $1 " data " $2 " bss " $3}')"
done
if [ "$DETAIL" = 1 ]; then
    echo
    echo "per-mapping breakdown of one process of each kind (kB; while all N were running):"
    printf '%s' "$DETAILS"
fi
