#!/bin/sh
# packaging/links.sh DIR — make DIR/tend-PROG, one hard link per program that `tend -l`
# lists (what an installed tend looks like; benchmarks and the demo run these): to
# DIR/tend-tree for the programs it holds (`tend-tree -l`: what a running supervision
# tree runs), to DIR/tend for the others. Without DIR/tend-tree (a build of `tend`
# alone), every name links to DIR/tend, which answers them all.
# Replaces whatever is there under those names (e.g. separate executables of an earlier build).
set -eu
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 100; }
dir=$1
[ -x "$dir/tend" ] || { echo "links.sh: fatal: no executable $dir/tend (cargo build --release)" >&2; exit 111; }
names=$("$dir/tend" -l)
tree=
[ -x "$dir/tend-tree" ] && tree=$("$dir/tend-tree" -l)
for n in $names; do
    case " $(echo $tree) " in
    *" $n "*) ln -f "$dir/tend-tree" "$dir/$n" ;;
    *) ln -f "$dir/tend" "$dir/$n" ;;
    esac
done
