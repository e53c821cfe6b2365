#!/usr/bin/env bash
# Control latency of a supervisor, s6-supervise and tend-supervise side by side in one run:
#   svc -d  -> SIGTERM seen by the service
#   svc -u  -> ./run exec'd
#   svc -wu -u -> the client returns (s6-svc execs s6-svlisten1 + s6-ftrigrd; tend-svc does not)
#   svc -r  -> the new ./run exec'd
# The service is a tiny C program that appends CLOCK_MONOTONIC stamps to ./stamps when it
# starts and when it gets SIGTERM; the driver takes its own stamp just before spawning the
# client, so every figure includes the client's fork+exec, as a shell user would see it.
#
# usage: bench/control.sh [iterations]   (default 100; -r runs min(iterations, 10) times,
#                                          each after 1.1 s of uptime)
# Then (bench/restart.py, issue 28) tend-supervise, s6-supervise, runsv, daemontools'
# supervise and the fork-only floor (bench/floor.c) side by side: restart after a natural
# exit, and `t` → restarted, RESTART_ROUNDS rounds (default 30), median and p90.
# PARTS="control restart clients" (the default) chooses the parts; TEND_BEFORE=DIR adds
# the tend-supervise of another build (a directory of programs) as "tend-before".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
n=${1:-100}
for t in s6-supervise s6-svc s6-svlisten1 gcc python3; do
  command -v "$t" >/dev/null || { echo "bench/control.sh: $t is missing (apt-get install s6 gcc python3)" >&2; exit 100; }
done
. "$root/bench/lib.sh"
TEND_ROOT=$root
tend_release --bin tend
sync
work=$(mktemp -d /tmp/tend-bench-control.XXXXXX)
trap 'rm -rf "$work"' EXIT
cat > "$work/stamp.c" <<'C'
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
static int fd;
static void put(const char *tag) {
  struct timespec t; char b[64];
  clock_gettime(CLOCK_MONOTONIC, &t);
  int n = snprintf(b, sizeof b, "%s %lld\n", tag, (long long)t.tv_sec * 1000000000LL + t.tv_nsec);
  (void)!write(fd, b, n);
}
static void term(int s) { (void)s; put("term"); _exit(0); }
int main(void) {
  fd = open("stamps", O_WRONLY | O_APPEND | O_CREAT, 0644);
  signal(SIGTERM, term);
  put("start");
  for (;;) pause();
}
C
gcc -O2 -static -o "$work/stamp" "$work/stamp.c" 2>/dev/null || gcc -O2 -o "$work/stamp" "$work/stamp.c"
parts=${PARTS:-control restart clients}
case " $parts " in *" control "*) python3 "$here/control.py" "$work" "$B" "$n" ;; esac

# The restart rows: a ./run that exits by itself after 1.1 s, and the floor.
case " $parts " in *" restart "*)
  for t in runsv supervise; do
    command -v "$t" >/dev/null || { echo "bench/control.sh: $t is missing (apt-get install runit daemontools)" >&2; exit 100; }
  done
  sed 's|for (;;) pause();|struct timespec l = {1, 100000000}; nanosleep(\&l, 0); put("exit"); _exit(0);|' \
    "$work/stamp.c" > "$work/stamp-exit.c"
  gcc -O2 -static -o "$work/stamp-exit" "$work/stamp-exit.c" 2>/dev/null || gcc -O2 -o "$work/stamp-exit" "$work/stamp-exit.c"
  gcc -O2 -o "$work/floor" "$here/floor.c"
  echo "# restart rows $(date -u '+%Y-%m-%d %H:%M UTC'), load: $(cut -d' ' -f1-3 /proc/loadavg)"
  python3 "$here/restart.py" "$work" "$B" "${RESTART_ROUNDS:-30}" ${TEND_BEFORE:+tend-before=$TEND_BEFORE}
  ;;
esac
case " $parts " in *" clients "*) ;; *) exit 0 ;; esac

# The clients alone: start, talk to an idle supervisor, exit (letter c: ignored when down).
if command -v hyperfine >/dev/null; then
  rel=$B
  mkdir -p "$work/idle"
  cp "$work/stamp" "$work/idle/run"
  : > "$work/idle/down"
  s6-supervise "$work/idle" </dev/null >/dev/null 2>&1 &
  sup=$!
  until s6-svok "$work/idle" 2>/dev/null; do sleep 0.01; done
  echo
  echo "clients alone (hyperfine -N, median ms), on an idle s6-supervise:"
  hyperfine -N -w 20 -r "$((n * 10))" --style none --export-json "$work/hf.json" \
    "s6-svc -c $work/idle" "$rel/tend-svc -c $work/idle" \
    "s6-svstat $work/idle" "$rel/tend-svstat $work/idle" \
    "s6-svok $work/idle" "$rel/tend-svok $work/idle" >/dev/null 2>&1
  python3 - "$work/hf.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
for s6, tend in zip(r[0::2], r[1::2]):
    name = s6["command"].split()[0]
    print(f"  {name:<10} {s6['median']*1e3:7.3f}   tend {tend['median']*1e3:7.3f}   ratio {tend['median']/s6['median']:.3f}")
PY
  s6-svc -x "$work/idle"
  wait "$sup" || true
fi
