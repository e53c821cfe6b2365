#!/bin/bash
# Startup cost of one chain link: tend's chain-loaders vs s6's, each exec'ing /bin/true.
# Usage: bench/chain.sh   (builds the release binaries if needed; needs hyperfine, s6)
# Prints hyperfine's table and the tend/s6 ratio of mean times for each pair.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin tend
packaging/links.sh target/x86_64-unknown-linux-musl/release
R=target/x86_64-unknown-linux-musl/release
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/env"
for i in $(seq 1 20); do echo "value $i" > "$work/env/VAR$i"; done
pairs=(
  "envdir $work/env /bin/true"
  "softlimit -o 1024 -c 0 -t 60 /bin/true"
  "setuidgid nobody /bin/true"
  "envuidgid nobody /bin/true"
  "applyuidgid -u 0 -g 0 /bin/true"
  "setsid -q /bin/true"
)
printf '| link | tend mean (ms) | s6 mean (ms) | tend/s6 |\n|---|---|---|---|\n' > "$work/table"
for p in "${pairs[@]}"; do
  name=${p%% *}; args=${p#* }
  hyperfine -N --warmup 50 --runs 1000 --export-json "$work/$name.json" \
    "$R/tend-$name $args" "s6-$name $args" >/dev/null
  python3 - "$work/$name.json" "$name" >> "$work/table" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
t, s = r[0]["mean"] * 1e3, r[1]["mean"] * 1e3
print(f"| {sys.argv[2]} | {t:.3f} ± {r[0]['stddev']*1e3:.3f} | {s:.3f} ± {r[1]['stddev']*1e3:.3f} | {t/s:.2f} |")
PY
done
hyperfine -N --warmup 50 --runs 1000 /bin/true 2>/dev/null | sed -n 's/^ *Time (mean ± σ): *\(.*\)/baseline \/bin\/true alone: \1/p'
cat "$work/table"
