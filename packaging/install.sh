#!/bin/sh
# packaging/install.sh — install tend the way it ships: one static executable
# PREFIX/bin/tend with one hard link per program name, the standalone executables
# (tend-jobs: never part of a running tree, so kept out of the shared text), and the
# manual pages.
#
# Usage: packaging/install.sh [ -s ] [ -z ] DESTDIR [ PREFIX ]
#   DESTDIR  staging root ("" or / for the live system); PREFIX defaults to /usr/local
#   -s       install separate executables instead of links (build them first with
#            `cargo build --release --features separate`)
#   -z       gzip the manual pages (gzip -9n, as Debian wants them)
# Builds nothing: it takes the executables from target/x86_64-unknown-linux-musl/release, or from $TEND_BUILD.
# ($CARGO_TARGET_DIR, when set, stands for target/.)
# Prints the installed paths, one per line.
set -eu
separate=0 gz=0
while getopts sz o; do
    case $o in
    s) separate=1 ;;
    z) gz=1 ;;
    *) echo "usage: $0 [ -s ] [ -z ] DESTDIR [ PREFIX ]" >&2; exit 100 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 [ -s ] [ -z ] DESTDIR [ PREFIX ]" >&2; exit 100; }
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TEND_BUILD:-${CARGO_TARGET_DIR:-$root/target}/x86_64-unknown-linux-musl/release}
destdir=${1%/}
prefix=${2:-/usr/local}
bindir=$destdir$prefix/bin
mandir=$destdir$prefix/share/man/man8

[ -x "$build/tend" ] || { echo "install.sh: fatal: no $build/tend: run cargo build --release" >&2; exit 111; }
names=$("$build/tend" -l)
standalone="tend-jobs"
mkdir -p "$bindir" "$mandir"
install -m 755 "$build/tend" "$bindir/tend"
echo "$bindir/tend"
for n in $names; do
    if [ $separate = 1 ]; then
        [ -x "$build/$n" ] || { echo "install.sh: fatal: no $build/$n: run cargo build --release --features separate" >&2; exit 111; }
        install -m 755 "$build/$n" "$bindir/$n"
    else
        ln -f "$bindir/tend" "$bindir/$n"
    fi
    echo "$bindir/$n"
done
for n in $standalone; do
    [ -x "$build/$n" ] || { echo "install.sh: fatal: no $build/$n: run cargo build --release" >&2; exit 111; }
    install -m 755 "$build/$n" "$bindir/$n"
    echo "$bindir/$n"
done
for n in tend $names $standalone; do
    page=$root/man/man8/$n.8
    [ -f "$page" ] || { echo "install.sh: fatal: no manual page $page" >&2; exit 111; }
    if [ $gz = 1 ]; then
        gzip -9n <"$page" >"$mandir/$n.8.gz"
        chmod 644 "$mandir/$n.8.gz"
        echo "$mandir/$n.8.gz"
    else
        install -m 644 "$page" "$mandir/$n.8"
        echo "$mandir/$n.8"
    fi
done
