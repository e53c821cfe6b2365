#!/usr/bin/env bash
# monit-agent.sh — what the BOSH agent waits for, tend-monit against Debian's monit 5.33,
# on the same N jobs (`set daemon 10`, as stemcells set it).
#
# Usage: [RELOADS=5] [STOPS=3] bench/monit-agent.sh [N]      (default 20 jobs)
#
# 1. Reload as the agent sees it: the daemon SIGTERMed (`systemctl kill` with KillMode=
#    process), started again on the same control file, then `/_status2` polled every
#    50 ms until its incarnation differs; when it has not changed after 10 s the agent
#    kills and starts again (up to 3 tries), and so does this. RELOADS times each, median
#    and max ms; the jobs keep running throughout.
# 2. `monit stop -g vcap` (the agent's StopAndWait) to everything stopped: the command
#    run, then `/_status2` polled every 50 ms until no service is monitored or pending
#    and no job's pid is alive. STOPS times each (all started again in between), median
#    and max ms.
# Both daemons run side by side on ports of their own; everything started here is
# stopped on exit (trap), by pid and by working directory.
set -euo pipefail

N=${1:-20}
case "$N" in *[!0-9]*|'') echo "usage: $0 [N]" >&2; exit 100 ;; esac
RELOADS=${RELOADS:-5}
STOPS=${STOPS:-3}
cd "$(dirname "$0")/.."
for c in monit curl python3; do
    command -v $c >/dev/null || { echo "monit-agent.sh: missing $c" >&2; exit 111; }
done
. bench/lib.sh
tend_release
export PATH="$B:$PATH"

work=$(mktemp -d "${TMPDIR:-/tmp}/bench-monit-agent.XXXXXX")
P0=$((30000 + $$ % 10000 * 3))
tend_pid='' monit_pid=''
cleanup() {
    [ -n "$tend_pid" ] && kill "$tend_pid" 2>/dev/null || true
    [ -n "$monit_pid" ] && kill "$monit_pid" 2>/dev/null || true
    local p f
    for p in /proc/[0-9]*; do
        case "$(cat "$p/comm" 2>/dev/null)" in tend-svscan|tend-supervise)
            case "$(readlink "$p/cwd" 2>/dev/null)" in "$work"*) kill -KILL "${p#/proc/}" 2>/dev/null || true ;; esac ;;
        esac
    done
    for f in "$work"/t/*.pid "$work"/m/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true; done
    teardown "$work" 1
}
trap cleanup EXIT
mkdir -p "$work/t" "$work/m" "$work/bin"
cat > "$work/bin/daemon" <<'SH'
#!/bin/sh
setsid sh -c 'echo $$ > "$1.tmp" && mv "$1.tmp" "$1" && exec sleep 100000' sh "$1" </dev/null >/dev/null 2>&1 &
SH
chmod +x "$work/bin/daemon"
checks() {
    for i in $(seq 1 "$N"); do
        printf 'check process j%s with pidfile %s/j%s.pid\n  start program = "%s %s/j%s.pid"\n  stop program = "/bin/sh -c '"'"'kill $(cat %s/j%s.pid)'"'"'"\n  group vcap\n' \
            "$i" "$1" "$i" "$work/bin/daemon" "$1" "$i" "$1" "$i"
    done
}
{ echo "set daemon 10"; echo "set httpd port $P0 and use address 127.0.0.1"; echo "  allow vcap:pw"; checks "$work/t"; } > "$work/tend.rc"
{ echo "set daemon 10"; echo "set pidfile $work/monit.pid"; echo "set idfile $work/monit.id"; echo "set statefile $work/monit.state"
  echo "set httpd port $((P0 + 1)) and use address 127.0.0.1"; echo "  allow vcap:pw"; checks "$work/m"; } > "$work/monit.rc"
chmod 600 "$work/tend.rc" "$work/monit.rc"

now() { date +%s%N; }
ms() { echo $(( ($2 - $1) / 1000000 )); }
status2() { curl -s -m 5 -u vcap:pw "http://127.0.0.1:$1/_status2?format=xml" 2>/dev/null || true; }
incarnation() { status2 "$1" | sed -n 's/.* incarnation="\([0-9]*\)".*/\1/p'; }
# Live jobs of a run directory (a zombie, not yet reaped by whoever inherited it, is dead).
alive() {
    local n=0 f p
    for f in "$1"/*.pid; do
        p=$(cat "$f" 2>/dev/null) || continue
        case "$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null)" in Z*|'') ;; *) n=$((n+1)) ;; esac
    done
    echo $n
}
start_tend() { (cd "$work" && exec tend-monit -c tend.rc -S "$work/scan" -I 2>>"$work/tend.log") & tend_pid=$!; }
start_monit() { (cd "$work" && HOME=$work exec monit -I -c monit.rc >>"$work/monit.log" 2>&1) & monit_pid=$!; }
cli() {  # cli tend|monit ARGS...
    local who=$1; shift
    if [ "$who" = tend ]; then tend-monit -c "$work/tend.rc" -S "$work/scan" "$@"; else HOME=$work monit -c "$work/monit.rc" "$@"; fi
}
wait_running() {  # wait_running DIR
    for _ in $(seq 1 600); do [ "$(alive "$1")" = "$N" ] && return 0; sleep 0.1; done
    echo "monit-agent.sh: $1: not all $N running" >&2; exit 111
}
# The agent's reload of WHO (tend|monit) on PORT: ms to a changed incarnation, and tries.
reload() {
    local who=$1 port=$2 before t0 tries i
    before=$(incarnation "$port")
    t0=$(now)
    for tries in 1 2 3; do
        if [ "$who" = tend ]; then kill "$tend_pid"; wait "$tend_pid" 2>/dev/null || true; start_tend
        else kill "$monit_pid"; wait "$monit_pid" 2>/dev/null || true; start_monit; fi
        for i in $(seq 1 200); do
            i=$(incarnation "$port")
            if [ -n "$i" ] && [ "$i" != "$before" ]; then echo "$(ms "$t0" "$(now)") $tries"; return; fi
            sleep 0.05
        done
    done
    echo "monit-agent.sh: $who: the incarnation never changed" >&2; exit 111
}
# `monit stop -g vcap` on WHO to nothing monitored or pending and every job gone: ms.
stop_all() {
    local who=$1 port=$2 dir=$3 t0
    t0=$(now)
    cli "$who" stop -g vcap >/dev/null 2>&1
    for _ in $(seq 1 2400); do
        if [ "$(jobs_with "$port" 0)" = "$N" ] && [ "$(alive "$dir")" = 0 ]; then
            break
        fi
        sleep 0.05
    done
    [ "$(alive "$dir")" = 0 ] || { echo "monit-agent.sh: $who: $(alive "$dir") jobs still alive after 2 min" >&2; exit 111; }
    ms "$t0" "$(now)"
}
# How many of the jobs (j1...jN, not the system service) `_status2` on PORT shows with
# monitor MON (and no pending action, for 0).
jobs_with() {
    status2 "$1" | python3 -c '
import sys, xml.etree.ElementTree as E
mon = sys.argv[1]
try:
    root = E.fromstring(sys.stdin.read())
except E.ParseError:
    print(-1); sys.exit()
n = 0
for s in root.iter("service"):
    if (s.get("name") or "").startswith("j") and s.findtext("monitor") == mon and s.findtext("pendingaction", "0") == "0":
        n += 1
print(n)' "$2"
}
stats() { sort -n | awk '{v[NR]=$1} END{printf "%d | %d", v[int((NR+1)/2)], v[NR]}'; }

start_tend
start_monit
wait_running "$work/t"
wait_running "$work/m"
echo "# $N jobs running under both; $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
sleep 1
: > "$work/rt"; : > "$work/rm"
for _ in $(seq 1 "$RELOADS"); do
    reload tend "$P0" >> "$work/rt"
    reload monit "$((P0 + 1))" >> "$work/rm"
    # The jobs kept running across the kill.
    [ "$(alive "$work/t")" = "$N" ] && [ "$(alive "$work/m")" = "$N" ] ||
        { echo "monit-agent.sh: a reload stopped jobs" >&2; exit 111; }
    sleep 1.1  # the next start in another second (monit's incarnation has 1 s steps)
done
echo "| reload (kill → new incarnation), $N jobs, $RELOADS times | median ms | max ms | tries |"
echo "|---|---:|---:|---|"
echo "| tend-monit | $(cut -d' ' -f1 "$work/rt" | stats) | $(cut -d' ' -f2 "$work/rt" | tr '\n' ' ')|"
echo "| monit 5.33 (set daemon 10) | $(cut -d' ' -f1 "$work/rm" | stats) | $(cut -d' ' -f2 "$work/rm" | tr '\n' ' ')|"
: > "$work/st"; : > "$work/sm"
for _ in $(seq 1 "$STOPS"); do
    # Everything running and monitored again, and seen so by the daemon, first.
    cli tend start -g vcap >/dev/null 2>&1; cli monit start -g vcap >/dev/null 2>&1
    wait_running "$work/t"; wait_running "$work/m"
    for _ in $(seq 1 600); do
        [ "$(jobs_with "$P0" 1)" = "$N" ] && [ "$(jobs_with "$((P0 + 1))" 1)" = "$N" ] && break
        sleep 0.1
    done
    stop_all tend "$P0" "$work/t" >> "$work/st"
    stop_all monit "$((P0 + 1))" "$work/m" >> "$work/sm"
done
echo "| monit stop -g vcap → all stopped, $N jobs, $STOPS times | median ms | max ms |"
echo "|---|---:|---:|"
echo "| tend-monit | $(stats < "$work/st") |"
echo "| monit 5.33 (set daemon 10) | $(stats < "$work/sm") |"
