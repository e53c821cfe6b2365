#!/usr/bin/env bash
# monit.sh — tend-monit against Debian's monit 5.33 on the same N checked processes.
#
# Usage: bench/monit.sh [N] [SECONDS]     (default 20 checks, 60 s idle)
#
# Both read a control file of N `check process` entries (`set daemon 10`, BOSH's cycle),
# each a start program that detaches a `sleep` and writes its pidfile, and a stop program.
# Reported, once everything runs:
# 1. over SECONDS idle: context switches (voluntary + not) and CPU ticks of the whole tend
#    tree (tend-svscan, N tend-supervise, N watchers, the tend-monit daemon) and of monit;
# 2. the sum of Pss (kB, smaps_rollup) of each;
# 3. from SIGKILL of a daemon to a new live pid in its pidfile: 5 times for tend-monit,
#    2 for monit (it waits for its next cycle);
# 4. `summary` of the N services, 20 runs.
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
    tend-monit -c "$work/tend.rc" -S "$work/scan" quit 2>/dev/null || true
    # The scanner and supervisors first: nothing may start again what is being killed.
    local p
    for p in /proc/[0-9]*; do
        case "$(cat "$p/comm" 2>/dev/null)" in tend-svscan|tend-supervise)
            case "$(readlink "$p/cwd" 2>/dev/null)" in "$work"*) kill -KILL "${p#/proc/}" 2>/dev/null || true ;; esac ;;
        esac
    done
    for f in "$work"/run/*.pid "$work"/mrun/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true; done
    teardown "$work" 1
}
trap cleanup EXIT
mkdir -p "$work/run" "$work/mrun" "$work/bin"
cat > "$work/bin/daemon" <<'SH'
#!/bin/sh
setsid sh -c 'echo $$ > "$1.tmp" && mv "$1.tmp" "$1" && exec sleep 100000' sh "$1" </dev/null >/dev/null 2>&1 &
SH
chmod +x "$work/bin/daemon"
checks() {
    for i in $(seq 1 "$N"); do
        printf 'check process p%s with pidfile %s/p%s.pid\n  start program = "%s/bin/daemon %s/p%s.pid"\n  stop program = "/bin/sh -c '"'"'kill $(cat %s/p%s.pid)'"'"'"\n  group vcap\n' \
            "$i" "$1" "$i" "$work" "$1" "$i" "$1" "$i"
    done
}
{ echo "set daemon 10"; checks "$work/run"; } > "$work/tend.rc"
{ echo "set daemon 10"; echo "set pidfile $work/monit.pid"; echo "set idfile $work/monit.id"
  echo "set statefile $work/monit.state"; checks "$work/mrun"; } > "$work/monit.rc"
chmod 600 "$work/tend.rc" "$work/monit.rc"
(cd "$work" && exec tend-monit -c tend.rc -S "$work/scan" -I 2>"$work/tend.log" &)
(cd "$work" && HOME=$work monit -c monit.rc >/dev/null)
alive() { local n=0 f; for f in "$1"/*.pid; do [ -d "/proc/$(cat "$f" 2>/dev/null)" ] && n=$((n+1)); done; echo $n; }
for _ in $(seq 1 300); do [ "$(alive "$work/run")" = "$N" ] && [ "$(alive "$work/mrun")" = "$N" ] && break; sleep 0.2; done
echo "# running: tend-monit $(alive "$work/run")/$N, monit $(alive "$work/mrun")/$N"
sleep 12   # past monit's first cycle
tend_pids=$(for p in /proc/[0-9]*; do
    case "$(readlink "$p/cwd" 2>/dev/null)" in "$work"*) case "$(readlink "$p/exe")" in */tend|*/tend-*) echo "${p#/proc/}" ;; esac ;; esac
done)
monit_pid=$(cat "$work/monit.pid")
switches() { local t=0 p; for p in $1; do t=$((t + $(awk '/ctxt_switches/{s+=$2} END{print s}' "/proc/$p/status"))); done; echo $t; }
ticks() { local t=0 p; for p in $1; do t=$((t + $(awk '{print $14+$15}' "/proc/$p/stat"))); done; echo $t; }
pss() { local t=0 p; for p in $1; do t=$((t + $(awk '/^Pss:/{print $2}' "/proc/$p/smaps_rollup"))); done; echo $t; }
s1=$(switches "$tend_pids"); m1=$(switches "$monit_pid"); c1=$(ticks "$tend_pids"); mc1=$(ticks "$monit_pid")
sleep "$T"
s2=$(switches "$tend_pids"); m2=$(switches "$monit_pid"); c2=$(ticks "$tend_pids"); mc2=$(ticks "$monit_pid")
echo "| idle ${T} s | context switches | CPU ticks | Pss kB | processes |"
echo "|---|---:|---:|---:|---:|"
echo "| tend-monit tree | $((s2 - s1)) | $((c2 - c1)) | $(pss "$tend_pids") | $(echo $tend_pids | wc -w) |"
echo "| monit 5.33 (set daemon 10) | $((m2 - m1)) | $((mc2 - mc1)) | $(pss "$monit_pid") | 1 |"
restart() {
    local f=$1 old t0 t1 n
    old=$(cat "$f"); t0=$(date +%s%N); kill -KILL "$old"
    while :; do n=$(cat "$f" 2>/dev/null || true); [ -n "$n" ] && [ "$n" != "$old" ] && [ -d "/proc/$n" ] && break; done
    t1=$(date +%s%N); echo $(( (t1 - t0) / 1000000 ))
}
tr=""; for _ in 1 2 3 4 5; do sleep 1.5; tr="$tr $(restart "$work/run/p1.pid") ms"; done
mr=""; for _ in 1 2; do mr="$mr $(restart "$work/mrun/p1.pid") ms"; done
echo "kill to new live pid: tend-monit$tr; monit$mr"
t0=$(date +%s%N); for _ in $(seq 1 20); do tend-monit -c "$work/tend.rc" -S "$work/scan" summary >/dev/null; done; t1=$(date +%s%N)
echo "tend-monit summary of $N: $(( (t1 - t0) / 20000 )) us each (20 runs)"
