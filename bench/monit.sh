#!/usr/bin/env bash
# monit.sh — tend-monit against Debian's monit 5.33 on the same N checked processes.
#
# Usage: [PARTS="idle restart query mem"] [KILLS=20] bench/monit.sh [N] [SECONDS]
#        (default 20 checks, 60 s idle, every part)
#
# Both read a control file of N `check process` entries (`set daemon 10`, BOSH's cycle),
# each a start program that detaches a `sleep` and writes its pidfile, and a stop program.
# Reported, once everything runs:
# 1. over SECONDS idle: context switches (voluntary + not) and CPU ticks of the whole tend
#    tree (tend-svscan, N tend-supervise, N watchers, the tend-monit daemon) and of monit;
# 2. the sum of Pss (kB, smaps_rollup) of each;
# 3. (restart) KILLS times, SIGKILL of p1's daemon → the start program exec'd (a stamp it
#    writes first: the supervisor's part) and → a new live pid in its pidfile (the start
#    program's own time added), median and p90 (bench/monit-restart.c, inotify, no
#    polling): tend-monit, then monit with `set daemon 10` and a second monit with
#    `set daemon 1`, both at once;
# 4. (query) `summary` and `GET /_status?format=xml`, `/_status2?format=xml` of the N
#    services, hyperfine -N (curl for the HTTP requests: the same client for both);
# 5. (mem) the memory of both trees, every page once (/work/shared/tools/treemem.py).
# With PARTS without idle, 1. and 2. are skipped.
# Everything started here is stopped on exit (trap), by pid and by working directory.
set -euo pipefail

N=${1:-20}
T=${2:-60}
case "$N$T" in *[!0-9]*|'') echo "usage: $0 [N] [SECONDS]" >&2; exit 100 ;; esac
cd "$(dirname "$0")/.."
command -v monit >/dev/null || { echo "monit.sh: missing monit" >&2; exit 111; }
. bench/lib.sh
tend_release
export PATH="$B:$PATH"

work=$(mktemp -d "${TMPDIR:-/tmp}/bench-monit.XXXXXX")
cleanup() {
    HOME=$work monit -c "$work/monit.rc" quit >/dev/null 2>&1 || true
    HOME=$work monit -c "$work/monit1.rc" quit >/dev/null 2>&1 || true
    tend-monit -c "$work/tend.rc" -S "$work/scan" quit 2>/dev/null || true
    # The scanner and supervisors first: nothing may start again what is being killed.
    local p
    for p in /proc/[0-9]*; do
        case "$(cat "$p/comm" 2>/dev/null)" in tend-svscan|tend-supervise)
            case "$(readlink "$p/cwd" 2>/dev/null)" in "$work"*) kill -KILL "${p#/proc/}" 2>/dev/null || true ;; esac ;;
        esac
    done
    for f in "$work"/run/*.pid "$work"/mrun/*.pid "$work"/m1run/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true; done
    teardown "$work" 1
}
trap cleanup EXIT
PARTS=${PARTS:-idle restart query mem}
# Ports of this run (2822 and its neighbours may be another run's).
P0=$((30000 + $$ % 10000 * 3))
KILLS=${KILLS:-20}
has() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
mkdir -p "$work/run" "$work/mrun" "$work/m1run" "$work/bin"
gcc -O2 -static -o "$work/bin/mr" bench/monit-restart.c 2>/dev/null || gcc -O2 -o "$work/bin/mr" bench/monit-restart.c
cat > "$work/bin/daemon" <<'SH'
#!/bin/sh
setsid sh -c 'echo $$ > "$1.tmp" && mv "$1.tmp" "$1" && exec sleep 100000' sh "$1" </dev/null >/dev/null 2>&1 &
SH
chmod +x "$work/bin/daemon"
# p1's start program stamps the time first (monit-restart stamp), then runs the daemon.
checks() {
    for i in $(seq 1 "$N"); do
        local start="$work/bin/daemon $1/p$i.pid"
        [ "$i" = 1 ] && start="$work/bin/mr stamp $1/stamp $start"
        printf 'check process p%s with pidfile %s/p%s.pid\n  start program = "%s"\n  stop program = "/bin/sh -c '"'"'kill $(cat %s/p%s.pid)'"'"'"\n  group vcap\n' \
            "$i" "$1" "$i" "$start" "$1" "$i"
    done
}
monitrc() {  # monitrc DAEMON-SECONDS RUNDIR PORT NAME
    echo "set daemon $1"; echo "set pidfile $work/$4.pid"; echo "set idfile $work/$4.id"
    echo "set statefile $work/$4.state"; echo "set httpd port $3 and use address 127.0.0.1"; echo "  allow admin:pw"
    checks "$2"
}
{ echo "set daemon 10"; echo "set httpd port $P0 and use address 127.0.0.1"; echo "  allow admin:pw"; checks "$work/run"; } > "$work/tend.rc"
monitrc 10 "$work/mrun" $((P0 + 1)) monit > "$work/monit.rc"
monitrc 1 "$work/m1run" $((P0 + 2)) monit1 > "$work/monit1.rc"
chmod 600 "$work/tend.rc" "$work/monit.rc" "$work/monit1.rc"
(cd "$work" && exec tend-monit -c tend.rc -S "$work/scan" -I 2>"$work/tend.log" &)
(cd "$work" && HOME=$work monit -c monit.rc >/dev/null)
if has restart; then (cd "$work" && HOME=$work monit -c monit1.rc >/dev/null); fi
alive() { local n=0 f; for f in "$1"/*.pid; do [ -d "/proc/$(cat "$f" 2>/dev/null)" ] && n=$((n+1)); done; echo $n; }
for _ in $(seq 1 300); do [ "$(alive "$work/run")" = "$N" ] && [ "$(alive "$work/mrun")" = "$N" ] && break; sleep 0.2; done
echo "# running: tend-monit $(alive "$work/run")/$N, monit $(alive "$work/mrun")/$N; $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
sleep 12   # past monit's first cycle
tend_daemon=$(for p in /proc/[0-9]*; do
    case "$(readlink "$p/cwd" 2>/dev/null)" in "$work") case "$(cat "$p/comm")" in tend-monit) echo "${p#/proc/}" ;; esac ;; esac
done)
tend_pids=$(for p in /proc/[0-9]*; do
    case "$(readlink "$p/cwd" 2>/dev/null)" in "$work"*) case "$(readlink "$p/exe")" in */tend|*/tend-*) echo "${p#/proc/}" ;; esac ;; esac
done)
monit_pid=$(cat "$work/monit.pid")
switches() { local t=0 p; for p in $1; do t=$((t + $(awk '/ctxt_switches/{s+=$2} END{print s}' "/proc/$p/status"))); done; echo $t; }
ticks() { local t=0 p; for p in $1; do t=$((t + $(awk '{print $14+$15}' "/proc/$p/stat"))); done; echo $t; }
pss() { local t=0 p; for p in $1; do t=$((t + $(awk '/^Pss:/{print $2}' "/proc/$p/smaps_rollup"))); done; echo $t; }
if has idle; then
    s1=$(switches "$tend_pids"); m1=$(switches "$monit_pid"); c1=$(ticks "$tend_pids"); mc1=$(ticks "$monit_pid")
    sleep "$T"
    s2=$(switches "$tend_pids"); m2=$(switches "$monit_pid"); c2=$(ticks "$tend_pids"); mc2=$(ticks "$monit_pid")
    echo "| idle ${T} s | context switches | CPU ticks | Pss kB | processes |"
    echo "|---|---:|---:|---:|---:|"
    echo "| tend-monit tree | $((s2 - s1)) | $((c2 - c1)) | $(pss "$tend_pids") | $(echo $tend_pids | wc -w) |"
    echo "| monit 5.33 (set daemon 10) | $((m2 - m1)) | $((mc2 - mc1)) | $(pss "$monit_pid") | 1 |"
fi
if has mem; then
    tm=$(python3 /work/shared/tools/treemem.py --tree "$tend_daemon" | tr '\n' ' ')
    mm=$(python3 /work/shared/tools/treemem.py "$monit_pid" | tr '\n' ' ')
    echo "memory, every page once: tend-monit tree ($(echo $tend_pids | wc -w) processes): $tm"
    echo "memory, every page once: monit 5.33: $mm"
fi
if has restart; then
    echo "| restart, $KILLS kills of p1 | kills | → start program exec'd, median ms | p90 | → new pid in pidfile, median ms | p90 |"
    echo "|---|---:|---:|---:|---:|---:|"
    # 1.1 s apart: tend-supervise spaces the starts of a ./run that lived under 1 s.
    "$work/bin/mr" kill "$work/run/p1.pid" "$work/run/stamp" "$KILLS" 1100 tend-monit
    "$work/bin/mr" kill "$work/mrun/p1.pid" "$work/mrun/stamp" "$KILLS" 500 "monit 5.33, set daemon 10" > "$work/m10.out" &
    m10=$!
    "$work/bin/mr" kill "$work/m1run/p1.pid" "$work/m1run/stamp" "$KILLS" 500 "monit 5.33, set daemon 1"
    wait "$m10"; cat "$work/m10.out"
fi
if has query; then
    command -v hyperfine >/dev/null || { echo "monit.sh: missing hyperfine" >&2; exit 111; }
    curl=$(command -v curl)
    for c in "$B/tend-monit -c $work/tend.rc -S $work/scan summary" "/usr/bin/env HOME=$work $(command -v monit) -c $work/monit.rc summary" \
        "$curl -sf -u admin:pw -o /dev/null http://127.0.0.1:$P0/_status?format=xml" "$curl -sf -u admin:pw -o /dev/null http://127.0.0.1:$((P0 + 1))/_status?format=xml"; do
        $c >/dev/null || echo "monit.sh: failed: $c" >&2
    done
    hyperfine -N --warmup 5 --runs "${RUNS:-50}" --style basic \
        -n "tend-monit summary" "$B/tend-monit -c $work/tend.rc -S $work/scan summary" \
        -n "monit summary" "/usr/bin/env HOME=$work $(command -v monit) -c $work/monit.rc summary" \
        -n "tend-monit _status" "$curl -sf -u admin:pw -o /dev/null http://127.0.0.1:$P0/_status?format=xml" \
        -n "monit _status" "$curl -sf -u admin:pw -o /dev/null http://127.0.0.1:$((P0 + 1))/_status?format=xml" \
        -n "tend-monit _status2" "$curl -sf -u admin:pw -o /dev/null http://127.0.0.1:$P0/_status2?format=xml" \
        -n "monit _status2" "$curl -sf -u admin:pw -o /dev/null http://127.0.0.1:$((P0 + 1))/_status2?format=xml" \
        --export-markdown "$work/query.md" >/dev/null
    cat "$work/query.md"
    # The answer alone, without curl's own start (which dominates the figures above):
    # curl's time_total (connect, request, the whole answer), median of RUNS.
    answer() {
        for _ in $(seq 1 "${RUNS:-50}"); do curl -s -o /dev/null -u admin:pw -w '%{time_total}\n' "$1"; done |
            sort -n | awk '{v[NR]=$1} END{printf "%.3f", v[int((NR+1)/2)]*1000}'
    }
    echo "| answer only (curl time_total, median of ${RUNS:-50}) | tend-monit ms | monit 5.33 ms |"
    echo "|---|---:|---:|"
    for q in "_status?format=xml" "_status2?format=xml"; do
        echo "| /$q, $N services | $(answer "http://127.0.0.1:$P0/$q") | $(answer "http://127.0.0.1:$((P0 + 1))/$q") |"
    done
fi
