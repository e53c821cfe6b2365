#!/bin/bash
# bench/scan.sh — 1000 services under tend-svscan, s6-svscan, runit's runsvdir,
# daemontools' svscan and the fork-only floor (bench/floor.c: one forked child per
# service, no exec, that forks and execs ./run), in the same run, median and p90: the time from the scanner's start until every service's ./run is running,
# and the whole tree's memory (PSS of the scanner plus every supervisor).
#
#   bench/scan.sh [services=1000] [rounds=3]     (builds through bench/lib.sh)
#
# Each service is `printf x >FIFO; exec sleep 987654`; the clock stops when the FIFO has
# delivered one byte per service. Memory is taken once all are up, after `sync` and a
# one-second settle: the sum of /proc/PID/smaps_rollup Pss over the scanner and its
# children (the supervisors; the services themselves are not counted). Every round uses
# fresh service directories (runsv and s6-supervise keep different supervise/ formats).
# TEND_BEFORE=DIR adds the tend-svscan of another build (a directory of programs) as
# "tend-before". KINDS="tend floor" (say) runs only the kinds named.
# FLOORS=1 adds floor-exec (the floor plus one exec of a static supervisor per service)
# and floor-layout (that, plus s6's supervise/ layout made before ./run): what the two
# things tend keeps and the floor lacks cost on their own (bench/floor.c).
# CPU: the scanner's own, and the tree's (scanner plus supervisors, not the services),
# from /proc/PID/schedstat once all are up.
# Needs: s6, runit, daemontools (Debian packages), gcc; root not required.
set -euo pipefail

N=${1:-1000}
ROUNDS=${2:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/bench/lib.sh"
TEND_ROOT=$here
tend_release --bin tend
bin=$B
for p in "$bin/tend-svscan" "$bin/tend-supervise" "$bin/tend-svscanctl"; do
    [ -x "$p" ] || { echo "missing $p (TEND_BIN=$bin)" >&2; exit 100; }
done
for p in s6-svscan s6-svscanctl s6-supervise runsvdir runsv svscan supervise gcc; do
    command -v "$p" >/dev/null || { echo "missing $p: apt-get install s6 runit daemontools gcc" >&2; exit 100; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/tend-bench-scan.XXXXXX")
# The processes of this run: those whose working directory lies under $work (by name,
# "sleep 987654", would reach another run's services).
ours() {
    find /proc/[0-9]*/cwd -maxdepth 0 -lname "$work/*" 2>/dev/null | cut -d/ -f3
}
trap 'kill -KILL $(ours) 2>/dev/null || true; rm -rf "$work"' EXIT
fifo=$work/fifo
mkfifo "$fifo"
# Static, as tend's executables are (floor-exec execs it once per supervisor).
gcc -O2 -static -o "$work/floor" "$here/bench/floor.c"
exec 3<>"$fifo" # held open both ways: the reader never sees EOF between writers

now() { date +%s.%N; }

make_scandir() { # $1 = dir
    mkdir -p "$1"
    local i
    for ((i = 0; i < N; i++)); do
        mkdir "$1/s$i"
        printf '#!/bin/sh\nprintf x >%s\nexec sleep 987654\n' "$fifo" >"$1/s$i/run"
        chmod +x "$1/s$i/run"
    done
}

tree_pss_kb() { # $1 = scanner pid
    local pids total=0 p v
    pids="$1 $(cat /proc/"$1"/task/*/children 2>/dev/null || true)"
    for p in $pids; do
        v=$(awk '/^Pss:/ {print $2}' /proc/"$p"/smaps_rollup 2>/dev/null || echo 0)
        total=$((total + ${v:-0}))
    done
    echo "$total"
}

tree_cpu_ms() { # $1 = scanner pid: "SCANNER TREE", the CPU ms of the scanner alone and
    # of it plus its children (the supervisors; not the services), from
    # /proc/PID/schedstat (ns, where /proc/PID/stat has clock ticks)
    local pids total=0 own=0 p v
    read -r own _ </proc/"$1"/schedstat 2>/dev/null || own=0
    pids="$1 $(cat /proc/"$1"/task/*/children 2>/dev/null || true)"
    for p in $pids; do
        read -r v _ </proc/"$p"/schedstat 2>/dev/null || v=0
        total=$((total + ${v:-0}))
    done
    echo "$((own / 1000000)) $((total / 1000000))"
}

wait_gone() {
    local i
    for ((i = 0; i < 600; i++)); do
        [ -z "$(ours)" ] && return 0
        sleep 0.05
    done
    echo "services still running after 30 s" >&2
    kill -KILL $(ours) 2>/dev/null || true
}

run_one() { # $1 = tend|s6|runit, $2 = round; prints "seconds pss_kb supervisors tree_cpu_ms scanner_cpu_ms"
    local kind=$1 dir=$work/$1-$2 pid t0 t1 pss nsup cpu scpu
    make_scandir "$dir"
    sync
    t0=$(now)
    case $kind in
        tend) "$bin/tend-svscan" -c $((N + 10)) "$dir" </dev/null >/dev/null 2>"$work/$kind.err" & pid=$! ;;
        s6) s6-svscan -c $((N + 10)) "$dir" </dev/null >/dev/null 2>"$work/$kind.err" & pid=$! ;;
        tend-before) "$TEND_BEFORE/tend-svscan" -c $((N + 10)) "$dir" </dev/null >/dev/null 2>"$work/$kind.err" & pid=$! ;;
        runit) runsvdir -P "$dir" </dev/null >/dev/null 2>"$work/$kind.err" & pid=$! ;;
        daemontools) svscan "$dir" </dev/null >/dev/null 2>"$work/$kind.err" & pid=$! ;;
        floor) "$work/floor" "$dir" </dev/null >/dev/null 2>"$work/$kind.err" & pid=$! ;;
        floor-exec) "$work/floor" -x "$dir" </dev/null >/dev/null 2>"$work/$kind.err" & pid=$! ;;
        floor-layout) "$work/floor" -X "$dir" </dev/null >/dev/null 2>"$work/$kind.err" & pid=$! ;;
    esac
    head -c "$N" <&3 >/dev/null
    t1=$(now)
    sync
    sleep 1
    read -r scpu cpu < <(tree_cpu_ms "$pid")
    pss=$(tree_pss_kb "$pid")
    nsup=$(wc -w </proc/"$pid"/task/"$pid"/children)
    case $kind in
        tend | tend-before) "$bin/tend-svscanctl" -t "$dir" ;;
        s6) s6-svscanctl -t "$dir" ;;
        runit) kill -HUP "$pid" ;;
        floor | floor-exec | floor-layout) kill -KILL -- "-$pid" ;;
        daemontools) # svscan has no exit command: kill it, then every supervise of $dir
            kill -KILL "$pid" $(ours) 2>/dev/null || true ;;
    esac
    wait "$pid" 2>/dev/null || true
    wait_gone
    rm -rf "$dir"
    echo "$(echo "$t1 - $t0" | bc -l) $pss $nsup $cpu $scpu"
}

declare -A T M S C D
kinds="tend s6 runit daemontools floor"
[ -n "${TEND_BEFORE:-}" ] && kinds="tend tend-before ${kinds#tend }"
[ "${FLOORS:-}" = 1 ] && kinds="$kinds floor-exec floor-layout"
kinds=${KINDS:-$kinds} # KINDS="tend floor" (say) runs only those
for ((r = 1; r <= ROUNDS; r++)); do
    for k in $kinds; do
        read -r secs pss nsup cpu scpu < <(run_one "$k" "$r")
        T[$k]+="$secs "
        C[$k]+="$cpu "
        D[$k]+="$scpu "
        M[$k]+="$pss "
        S[$k]=$nsup
        printf 'round %d %-6s %6.3f s  %7.1f MB PSS  %5d ms CPU (scanner %d)  (%d supervisors)\n' "$r" "$k" "$secs" "$(echo "$pss / 1024" | bc -l)" "$cpu" "$scpu" "$nsup" >&2
    done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
p90() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {i=int(0.9*NR)+1; if (i>NR) i=NR; print a[i]}'; }

echo
echo "$N services, median of $ROUNDS rounds ($(nproc) cores, $(uname -r))"
echo
echo "| scanner | time until all run (median) | p90 | whole-tree PSS | tree CPU (median) | scanner CPU | supervisors |"
echo "|---|---|---|---|---|---|---|"
for k in $kinds; do
    t=$(echo "${T[$k]}" | median)
    q=$(echo "${T[$k]}" | p90)
    m=$(echo "${M[$k]}" | median)
    c=$(echo "${C[$k]}" | median)
    d=$(echo "${D[$k]}" | median)
    printf '| %s | %.3f s | %.3f s | %.1f MB | %s ms | %s ms | %s |\n' "$k" "$t" "$q" "$(echo "$m / 1024" | bc -l)" "$c" "$d" "${S[$k]}"
    declare "t_${k//-/_}=$t" "m_${k//-/_}=$m"
done
echo
[ -n "${t_s6:-}" ] && [ -n "${t_runit:-}" ] || exit 0
printf 'tend/s6 time %.2f×, tend/runit time %.2f×; tend/s6 memory %.2f×, tend/runit memory %.2f×\n' \
    "$(echo "$t_tend / $t_s6" | bc -l)" "$(echo "$t_tend / $t_runit" | bc -l)" \
    "$(echo "$m_tend / $m_s6" | bc -l)" "$(echo "$m_tend / $m_runit" | bc -l)"
