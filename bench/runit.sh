#!/usr/bin/env bash
# tend-chpst and tend-sv against runit's chpst and sv (Debian's runit 2.1.2), start-up
# and one `status` over 100 services, in one run:
#   chpst -u nobody true            vs  tend-chpst -u nobody true
#   sv status (100 runsv services)  vs  tend-sv status (the same 100 runsv services)
#                                   and tend-sv status (100 tend-supervise services)
# hyperfine -N (no shell): medians and CPU (user+system) in ms, tend/runit ratios; a Markdown table on
# stdout, for bench/RESULTS.md's "runit's chpst and sv" section.
#
# usage: bench/runit.sh [runs]   (default 1000)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
runs=${1:-1000}
for t in chpst sv runsvdir hyperfine python3; do
  command -v "$t" >/dev/null || { echo "bench/runit.sh: $t is missing (apt-get install runit hyperfine python3)" >&2; exit 100; }
done
tend_release
work=$(mktemp -d /tmp/tend-bench-runit.XXXXXX)
pids=()
trap 'teardown "$work" 1 "${pids[@]}"' EXIT

# 100 services under each supervisor tree.
for tree in runit tend; do
  mkdir -p "$work/$tree"
  for i in $(seq -w 1 100); do
    mkdir -p "$work/$tree/s$i"
    printf '#!/bin/sh\nexec sleep 100000\n' > "$work/$tree/s$i/run"
    chmod +x "$work/$tree/s$i/run"
  done
done
runsvdir "$work/runit" </dev/null >/dev/null 2>&1 & pids+=($!)
"$B/tend-svscan" "$work/tend" </dev/null >/dev/null 2>&1 & pids+=($!)
up() { # every service of $1 reported run by tend-sv
  [ "$("$B/tend-sv" status "$work/$1"/s* 2>/dev/null | grep -c '^run: ')" = 100 ]
}
for i in $(seq 600); do up runit && up tend && break; sleep 0.05; done
up runit && up tend || { echo "bench/runit.sh: the 100 services did not come up" >&2; exit 111; }

row() { # NAME TEND-COMMAND RUNIT-COMMAND
  local json
  json=$(mktemp)
  hyperfine -N --warmup 50 --runs "$runs" --export-json "$json" "$2" "$3" >/dev/null
  python3 - "$json" "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
# Medians (the machine is shared: means and deviations carry other jobs' noise) and the
# CPU the program itself used (user + system, means).
t, s = r[0]["median"] * 1e3, r[1]["median"] * 1e3
tc, sc = (r[0]["user"] + r[0]["system"]) * 1e3, (r[1]["user"] + r[1]["system"]) * 1e3
print(f"| {sys.argv[2]} | {t:.3f} | {s:.3f} | {t/s:.2f} | {tc:.3f} | {sc:.3f} | {tc/sc:.2f} |")
PY
  rm -f "$json"
}
runit_list=$(printf "$work/runit/%s " $(ls "$work/runit"))
tend_list=$(printf "$work/tend/%s " $(ls "$work/tend"))
echo "| command | tend median (ms) | runit median (ms) | tend/runit | tend CPU (ms) | runit CPU (ms) | tend/runit |"
echo "|---|---|---|---|---|---|---|"
row "chpst -u nobody true" "$B/tend-chpst -u nobody true" "chpst -u nobody true"
row "chpst -u nobody:daemon -o 100 -n 1 true" "$B/tend-chpst -u nobody:daemon -o 100 -n 1 true" "chpst -u nobody:daemon -o 100 -n 1 true"
row "sv status, 100 runsv services" "$B/tend-sv status $runit_list" "sv status $runit_list"
row "sv status, 100 services (tend-sv on tend-supervise, sv on runsv)" "$B/tend-sv status $tend_list" "sv status $runit_list"
baseline_true

# The same pairs counted instead of timed (the machine is shared; counts do not move):
# user-space instructions (valgrind --tool=callgrind, Ir) and system calls (strace -c -f,
# `true` included for chpst).
if command -v valgrind >/dev/null && command -v strace >/dev/null; then
  count() { # COMMAND...: "instructions syscalls"
    local ir sc
    # callgrind reports a process that exits, not one that execs: no count for chpst.
    ir=$(valgrind --vgdb=no --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
      sed -n 's/.*Collected : //p' | head -n 1)
    sc=$(strace -c -f "$@" 2>&1 >/dev/null | awk '$NF == "total" { print $4 }')
    echo "$ir $sc"
  }
  crow() { # NAME "TEND-COMMAND" "RUNIT-COMMAND"
    # shellcheck disable=SC2086
    set -- "$1" "$(count $2)" "$(count $3)"
    python3 - "$@" <<'PY'
import sys
name, t, r = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
if len(t) == 2 and len(r) == 2:
    ti, ri = int(t[0]), int(r[0])
    print(f"| {name} | {ti} | {ri} | {ti/ri:.2f} | {t[1]} | {r[1]} |")
else:
    print(f"| {name} | - | - | - | {t[-1]} | {r[-1]} |")
PY
  }
  echo
  echo "| command | tend instructions | runit instructions | tend/runit | tend syscalls | runit syscalls |"
  echo "|---|---|---|---|---|---|"
  crow "chpst -u nobody true" "$B/tend-chpst -u nobody true" "chpst -u nobody true"
  crow "sv status, 100 runsv services" "$B/tend-sv status $runit_list" "sv status $runit_list"
  crow "sv status, 100 services (tend-sv on tend-supervise)" "$B/tend-sv status $tend_list" "sv status $runit_list"
fi
