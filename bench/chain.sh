#!/bin/bash
# Startup cost of one chain link: tend's chain-loaders vs s6's, each exec'ing /bin/true.
# Usage: bench/chain.sh   (builds the release binaries if needed; needs hyperfine, s6)
# Prints hyperfine's table and the tend/s6 ratio of mean times for each pair.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
tend_release
R=$B
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
  startup_row "$work/table" "$name" "$R/tend-$name $args" "s6-$name $args"
done
baseline_true
cat "$work/table"
