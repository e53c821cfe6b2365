#!/bin/bash
# Startup cost of tend-setlock and tend-svperms vs s6-setlock and s6-svperms on the same
# inputs (uncontended lock; a service directory as a supervisor leaves it).
# Usage: bench/parity.sh   (builds the release binaries if needed; needs hyperfine, s6)
# Prints hyperfine's means and the tend/s6 ratio for each pair.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
R=target/x86_64-unknown-linux-musl/release
packaging/links.sh "$R"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/svc/supervise" "$work/svc/event"
mkfifo -m 0600 "$work/svc/supervise/control"
chmod 0700 "$work/svc/supervise"
chmod 03730 "$work/svc/event"
pairs=(
  "setlock|setlock $work/lock /bin/true"
  "setlock -n -r|setlock -n -r $work/lock /bin/true"
  "setlock -t 1000|setlock -t 1000 $work/lock /bin/true"
  "svperms (show)|svperms $work/svc"
  "svperms -G :5 -e|svperms -G :5 -e $work/svc"
)
printf '| command | tend mean (ms) | s6 mean (ms) | tend/s6 |\n|---|---|---|---|\n' > "$work/table"
i=0
for p in "${pairs[@]}"; do
  name=${p%%|*}; cmdline=${p#*|}
  i=$((i + 1))
  hyperfine -N --warmup 50 --runs 1000 --export-json "$work/$i.json" \
    "$R/tend-$cmdline" "s6-$cmdline" >/dev/null
  python3 - "$work/$i.json" "$name" >> "$work/table" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
t, s = r[0]["mean"] * 1e3, r[1]["mean"] * 1e3
print(f"| {sys.argv[2]} | {t:.3f} ± {r[0]['stddev']*1e3:.3f} | {s:.3f} ± {r[1]['stddev']*1e3:.3f} | {t/s:.2f} |")
PY
done
hyperfine -N --warmup 50 --runs 1000 /bin/true 2>/dev/null | sed -n 's/^ *Time (mean ± σ): *\(.*\)/baseline \/bin\/true alone: \1/p'
cat "$work/table"
