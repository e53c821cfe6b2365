#!/usr/bin/env bash
# bench/log-kill.sh — what a logger loses when it is SIGKILLed at full pipe speed:
# tend-log against s6-log, same writer, same kills, same run.
#
#   bench/log-kill.sh [lines] [kills]      (defaults 10000000 and 60)
#
# A FIFO held open at both ends by this script stands for tend-svscan's log pipe. A
# writer (`seq`, full stdio buffering: 4 KiB writes that cut lines anywhere) fills it at
# full speed; the logger (`n1000 s1000000 DIR`) runs on it and is SIGKILLed `kills`
# times, every 2..10 ms, and restarted at once; a last logger drains the pipe to EOF.
# Then the logdir (archives by name, then current) is checked: lines lost (numbers
# missing), lines repeated (written twice), garbled lines (not a number of the input:
# parts of two lines run together), and whether the order holds. Needs s6.
set -euo pipefail
N=${1:-10000000}
KILLS=${2:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/lib.sh"
TEND_ROOT=$root
tend_release
T=$B
command -v s6-log >/dev/null || { echo "bench/log-kill.sh: s6-log is not installed" >&2; exit 100; }
W=$(mktemp -d /dev/shm/tend-bench-logkill.XXXXXX)
trap 'rm -rf "$W"' EXIT

storm() { # $1 = logger program; prints "lost repeated ordered seconds"
  local prog=$1 name; name=$(basename "$1")
  local d=$W/$name fifo=$W/$name.fifo
  rm -rf "$d" "$fifo"
  mkfifo "$fifo"
  exec 3<>"$fifo" 4<"$fifo"   # the holder: both ends, never closed while the storm lasts
  local t0=$SECONDS
  # Children must not inherit the holder's fds: the last logger would hold a write end.
  seq 0 $((N - 1)) >"$fifo" 3<&- 4<&- &
  local writer=$! i pid
  for ((i = 0; i < KILLS; i++)); do
    "$prog" n1000 s1000000 "$d" <&4 3<&- 4<&- 2>/dev/null &
    pid=$!
    sleep "0.00$((2 + RANDOM % 9))"
    kill -KILL "$pid" 2>/dev/null || true   # s6-log may have died on its own (see below)
    wait "$pid" 2>/dev/null || true
  done
  # s6-log 2.11 can die at start-up after a kill in mid-rotation (its .u name clash,
  # S6-REFERENCE.md): start it again until one logger drains the pipe to EOF.
  start() { "$prog" n1000 s1000000 "$d" <&4 3<&- 4<&- >/dev/null 2>>"$W/$name.err" & pid=$!; }
  start
  while kill -0 "$writer" 2>/dev/null; do
    if ! kill -0 "$pid" 2>/dev/null; then wait "$pid" || true; start; fi
    sleep 0.05
  done
  exec 3<&-                   # no writer left: the last logger sees EOF once drained
  for ((i = 0; i < 50; i++)); do
    wait "$pid" && break
    start
  done
  exec 4<&-
  local secs=$((SECONDS - t0))
  # A SIGKILL can cut a write to current short: an unfinished (.u) archive may end in
  # part of a line, written whole again after the restart. That part is left out.
  (cd "$d" && for f in $(ls @* 2>/dev/null | sort) current; do
     case $f in *.u) python3 -c 'import sys; b=open(sys.argv[1],"rb").read(); sys.stdout.buffer.write(b[:b.rfind(b"\n")+1])' "$f" ;; *) cat "$f" ;; esac
   done) | python3 -c '
import sys
n = int(sys.argv[1])
seen = bytearray(n)
top = 0; dups = 0; bad = 0; ordered = True
for line in sys.stdin.buffer:
    try:
        v = int(line)
    except ValueError:
        v = -1
    if not 0 <= v < n:
        bad += 1
        continue
    if seen[v]:
        dups += 1
        continue
    if v != top:
        ordered = False
    seen[v] = 1
    top = max(top, v + 1)
print(n - sum(seen), dups, bad, "yes" if ordered else "no", sys.argv[2])
' "$N" "$secs"
}

printf '%s lines (%s bytes), %s SIGKILLs at full speed\n' "$N" "$(seq 0 $((N - 1)) | wc -c)" "$KILLS"
printf '%-10s %12s %14s %8s %8s %6s\n' logger "lines lost" "lines repeated" garbled ordered "s"
for prog in "$T/tend-log" s6-log; do
  read -r lost dups bad ordered secs < <(storm "$prog")
  printf '%-10s %12s %14s %8s %8s %6s\n' "$(basename "$prog")" "$lost" "$dups" "$bad" "$ordered" "$secs"
done
