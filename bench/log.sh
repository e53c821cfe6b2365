#!/usr/bin/env bash
# bench/log.sh — tend-log against s6-log, runit's svlogd -tt and daemontools' multilog t,
# same input, same machine, same run, on tmpfs.
#
#   bench/log.sh [lines]          (default 2000000; RUNS=5 by default)
#
# Input: `lines` lines of 20..200 bytes (uniform, fixed seed). Every logger runs the
# equivalent of `t s1000000 n20 DIR`, once with stdin a file and once through a pipe
# (`cat input | logger`, how a supervised logger reads). Baselines: tend-tai64n,
# s6-tai64n and cat writing one file; and the container case `p[svc] 1` (prefix, to stdout)
# for tend-log and s6-log. Needs hyperfine, s6, runit, daemontools, python3.
# Prints lines/s, MB/s, CPU seconds (user+system, from hyperfine; for the pipe runs this
# includes cat) and ratios to s6-log.
set -euo pipefail
N=${1:-2000000}
RUNS=${RUNS:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/lib.sh"
TEND_ROOT=$root
tend_release --bin tend
T=$B
for p in hyperfine s6-log svlogd multilog s6-tai64n python3; do
  command -v "$p" >/dev/null || { echo "bench/log.sh: $p is not installed" >&2; exit 100; }
done
W=$(mktemp -d /dev/shm/tend-bench-log.XXXXXX)
trap 'rm -rf "$W"' EXIT
python3 - "$N" > "$W/input" <<'PY'
import random, sys
n = int(sys.argv[1])
rnd = random.Random(42)
alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 =:/-_.ABCDEFGHIJKLMNOPQRSTUVWXYZ"
pool = "".join(rnd.choice(alphabet) for _ in range(4096))
out = sys.stdout
buf = []
for i in range(n):
    k = rnd.randint(20, 200)
    head = "%08d " % i
    start = rnd.randint(0, 4096 - 200)
    buf.append(head + pool[start:start + k - len(head)] + "\n")
    if len(buf) == 10000:
        out.write("".join(buf)); buf = []
out.write("".join(buf))
PY
BYTES=$(stat -c %s "$W/input")
PREP="rm -rf $W/o; mkdir -p $W/o/d; printf 's1000000\nn20\n' > $W/o/d/config"

run() { # $1 = label (file|pipe), $2 = input prefix ("<" or "cat |")
  local mode=$1 json=$W/$1.json src
  if [ "$mode" = file ]; then src="< $W/input"; pre=""; else src=""; pre="cat $W/input | "; fi
  hyperfine --style basic --warmup 1 --runs "$RUNS" --export-json "$json" --prepare "$PREP" \
    -n "tend-log t" "${pre}$T/tend-log t s1000000 n20 $W/o/d $src" \
    -n "s6-log t" "${pre}s6-log t s1000000 n20 $W/o/d $src" \
    -n "svlogd -tt" "${pre}svlogd -tt $W/o/d $src" \
    -n "multilog t" "${pre}multilog t s1000000 n20 $W/o/d $src" \
    -n "tend-log p[svc] 1" "${pre}$T/tend-log 'p[svc]' 1 $src > $W/o/f" \
    -n "s6-log p[svc] 1" "${pre}s6-log 'p[svc]' 1 $src > $W/o/f" \
    -n "tend-tai64n > file" "${pre}$T/tend-tai64n $src > $W/o/f" \
    -n "s6-tai64n > file" "${pre}s6-tai64n $src > $W/o/f" \
    -n "cat > file" "${pre}cat $src > $W/o/f" >&2
}
run file
run pipe
python3 - "$W" "$N" "$BYTES" <<'PY'
import json, sys
w, n, nbytes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
mb = nbytes / 1e6
for mode in ("file", "pipe"):
    res = json.load(open(f"{w}/{mode}.json"))["results"]
    base = next(r for r in res if r["command"] == "s6-log t")
    print(f"\nstdin = {mode}: {n} lines, {mb:.1f} MB")
    print(f"{'program':<20} {'wall s':>8} {'Mlines/s':>9} {'MB/s':>8} {'CPU s':>7} {'CPU s/100MB':>11} {'x s6-log':>9}")
    for r in res:
        cpu = r["user"] + r["system"]
        print(f"{r['command']:<20} {r['mean']:8.3f} {n / r['mean'] / 1e6:9.2f} {mb / r['mean']:8.0f} "
              f"{cpu:7.3f} {cpu / mb * 100:11.3f} {base['mean'] / r['mean']:9.2f}")
PY
