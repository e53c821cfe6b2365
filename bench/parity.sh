#!/bin/bash
# Startup cost of tend-setlock and tend-svperms vs s6-setlock and s6-svperms on the same
# inputs (uncontended lock; a service directory as a supervisor leaves it).
# Usage: bench/parity.sh   (builds the release binaries if needed; needs hyperfine, s6)
# Prints hyperfine's means and the tend/s6 ratio for each pair.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
tend_release
R=$B
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
for p in "${pairs[@]}"; do
  name=${p%%|*}; cmdline=${p#*|}
  startup_row "$work/table" "$name" "$R/tend-$cmdline" "s6-$cmdline"
done
baseline_true
cat "$work/table"
