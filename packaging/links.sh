#!/bin/sh
# packaging/links.sh DIR — make DIR/tend-PROG, one hard link to DIR/tend per program that
# `tend -l` lists (what an installed tend looks like; benchmarks and the demo run these).
# Replaces whatever is there under those names (e.g. separate executables of an earlier build).
set -eu
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 100; }
dir=$1
[ -x "$dir/tend" ] || { echo "links.sh: fatal: no executable $dir/tend (cargo build --release)" >&2; exit 111; }
names=$("$dir/tend" -l)
for n in $names; do
    ln -f "$dir/tend" "$dir/$n"
done
