#!/usr/bin/env bash
# The cost of chpst before exec, as a BOSH release's run script pays it: tend-chpst
# against Debian's runit chpst on the call forms the core releases use, each exec'ing
# /bin/true (hyperfine -N, 1000 runs after 50 warm-ups; mean ± stddev and tend/runit).
#   -u vcap:vcap   (39 of the 42 calls)   -u syslog:vcap   -u root:root   no option
# Needs root, runit, hyperfine, python3 and the vcap and syslog accounts (vcap in group
# vcap); prints a Markdown table.
#
# usage: bench/chpst.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
for t in chpst hyperfine python3; do
  command -v "$t" >/dev/null || { echo "bench/chpst.sh: $t is missing (apt-get install runit hyperfine python3)" >&2; exit 100; }
done
for a in vcap syslog; do
  id "$a" >/dev/null 2>&1 || { echo "bench/chpst.sh: no account $a (useradd it first)" >&2; exit 100; }
done
tend_release
table=$(mktemp)
trap 'rm -f "$table"' EXIT
printf '| chpst call | tend mean (ms) | runit mean (ms) | tend/runit |\n|---|---|---|---|\n' >"$table"
for args in "-u vcap:vcap" "-u syslog:vcap" "-u root:root" ""; do
  startup_row "$table" "${args:-(none)}" "$B/tend-chpst $args /bin/true" "$(command -v chpst) $args /bin/true"
done
cat "$table"
baseline_true
