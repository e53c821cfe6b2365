#!/bin/sh
# packaging/install.sh — install tend the way it ships: one static executable
# PREFIX/bin/tend with one hard link per program name, except the programs a running
# supervision tree runs, which are hard links to the small PREFIX/bin/tend-tree (`tend-tree
# -l`: tend-svscan, tend-supervise, tend-log and their clients), the standalone executables
# (tend-jobs, tend-monit, tend-jail: kept out of the shared text, Cargo.toml says why), and
# the manual pages.
#
# Usage: packaging/install.sh [ -s ] [ -z ] [ -6 ] [ -r ] DESTDIR [ PREFIX ]
#   DESTDIR  staging root ("" or / for the live system); PREFIX defaults to /usr/local
#   -s       install separate executables instead of links (build them first with
#            `cargo build --release --features separate`)
#   -z       gzip the manual pages (gzip -9n, as Debian wants them)
#   -6       also install the names s6-overlay v3 images call (s6-svc, with-contenv...):
#            DESTDIR/command/NAME links to PREFIX/bin/tend (tend-tree for its programs)
#            and DESTDIR/usr/bin/NAME to
#            /command/NAME, as s6-overlay lays them out, and DESTDIR/init to tend
#            (tend-init's s6-overlay mode: man tend-init, "S6-OVERLAY")
#   -r       also install runit's names, for a system without runit (a BOSH stemcell from
#            Resolute on): PREFIX/bin/{chpst,sv} linked to PREFIX/bin/tend and
#            PREFIX/bin/{runsvdir,runsv} to PREFIX/bin/tend-tree, which run tend-chpst,
#            tend-sv, tend-svscan and tend-supervise by those names
#            with runit's command lines (man tend-svscan, "RUNSVDIR"; man tend-supervise,
#            "RUNSV")
# Also installs, beside tend-monit's monit name, the units that run it in monit's place:
# PREFIX/lib/tend/monit/monit.service (systemd) and PREFIX/lib/tend/monit/sv/monit (runit).
# Builds nothing: it takes the executables from target/x86_64-unknown-linux-musl/release, or from $TEND_BUILD.
# ($CARGO_TARGET_DIR, when set, stands for target/.)
# Prints the installed paths, one per line.
set -eu
separate=0 gz=0 s6=0 runit=0
while getopts sz6r o; do
    case $o in
    s) separate=1 ;;
    z) gz=1 ;;
    6) s6=1 ;;
    r) runit=1 ;;
    *) echo "usage: $0 [ -s ] [ -z ] [ -6 ] [ -r ] DESTDIR [ PREFIX ]" >&2; exit 100 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 [ -s ] [ -z ] [ -6 ] [ -r ] DESTDIR [ PREFIX ]" >&2; exit 100; }
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TEND_BUILD:-${CARGO_TARGET_DIR:-$root/target}/x86_64-unknown-linux-musl/release}
destdir=${1%/}
prefix=${2:-/usr/local}
bindir=$destdir$prefix/bin
mandir=$destdir$prefix/share/man/man8

for n in tend tend-tree; do
    [ -x "$build/$n" ] || { echo "install.sh: fatal: no $build/$n: run cargo build --release" >&2; exit 111; }
done
names=$("$build/tend" -l)
tree=" $(echo $("$build/tend-tree" -l)) "
standalone="tend-jobs tend-monit tend-jail"
# The executable a program's name links to: tend-tree for what a tree runs, else tend.
exe_of() {
    case $tree in *" $1 "*) echo tend-tree ;; *) echo tend ;; esac
}
mkdir -p "$bindir" "$mandir"
for n in tend tend-tree; do
    install -m 755 "$build/$n" "$bindir/$n"
    echo "$bindir/$n"
done
for n in $names; do
    if [ $separate = 1 ]; then
        [ -x "$build/$n" ] || { echo "install.sh: fatal: no $build/$n: run cargo build --release --features separate" >&2; exit 111; }
        install -m 755 "$build/$n" "$bindir/$n"
    else
        ln -f "$bindir/$(exe_of "$n")" "$bindir/$n"
    fi
    echo "$bindir/$n"
done
for n in $standalone; do
    [ -x "$build/$n" ] || { echo "install.sh: fatal: no $build/$n: run cargo build --release" >&2; exit 111; }
    install -m 755 "$build/$n" "$bindir/$n"
    echo "$bindir/$n"
done
# monit's name for tend-monit, where it cannot clash with a monit package's /usr/bin/monit:
# PREFIX/lib/tend/monit/monit (a stemcell links /var/vcap/bosh/bin/monit to it, or puts
# the directory first in PATH).
mkdir -p "$destdir$prefix/lib/tend/monit"
ln -sfn ../../../bin/tend-monit "$destdir$prefix/lib/tend/monit/monit"
echo "$destdir$prefix/lib/tend/monit/monit"
# Its units in monit's place, for a stemcell to copy where it puts monit's (they are not
# activated here: a monit package's own monit.service may be installed):
# PREFIX/lib/tend/monit/monit.service for systemd, and PREFIX/lib/tend/monit/sv/monit, the
# runit service directory bosh-lite (Warden) runs under runsvdir.
install -m 644 "$root/packaging/systemd/monit.service" "$destdir$prefix/lib/tend/monit/monit.service"
echo "$destdir$prefix/lib/tend/monit/monit.service"
mkdir -p "$destdir$prefix/lib/tend/monit/sv/monit/log"
for f in run finish log/run; do
    install -m 755 "$root/packaging/sv/monit/$f" "$destdir$prefix/lib/tend/monit/sv/monit/$f"
    echo "$destdir$prefix/lib/tend/monit/sv/monit/$f"
done
for n in tend tend-tree $names $standalone; do
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
if [ $s6 = 1 ]; then
    # s6 name:tend program, for the programs s6-overlay images call by name.
    for pair in with-contenv:tend-with-contenv s6-notifyoncheck:tend-check \
        s6-setuidgid:tend-setuidgid s6-envuidgid:tend-envuidgid s6-applyuidgid:tend-applyuidgid \
        s6-envdir:tend-envdir s6-softlimit:tend-softlimit s6-setsid:tend-setsid \
        s6-setlock:tend-setlock s6-svc:tend-svc s6-svstat:tend-svstat s6-svwait:tend-svwait \
        s6-svok:tend-svok s6-svscan:tend-svscan s6-svscanctl:tend-svscanctl \
        s6-supervise:tend-supervise s6-log:tend-log s6-tai64n:tend-tai64n \
        s6-tai64nlocal:tend-tai64nlocal s6-rc:tend-rc; do
        s6name=${pair%%:*} ours=${pair#*:}
        case " $(echo $names) " in *" $ours "*) ;; *) continue ;; esac
        mkdir -p "$destdir/command" "$destdir/usr/bin"
        ln -sfn "$prefix/bin/$(exe_of "$ours")" "$destdir/command/$s6name"
        echo "$destdir/command/$s6name"
        ln -sfn "/command/$s6name" "$destdir/usr/bin/$s6name"
        echo "$destdir/usr/bin/$s6name"
    done
    ln -sfn "$prefix/bin/tend" "$destdir/init"
    echo "$destdir/init"
fi
if [ $runit = 1 ]; then
    # Relative links, so the tree works wherever DESTDIR puts it (a package, a chroot).
    for pair in chpst:tend-chpst sv:tend-sv runsvdir:tend-svscan runsv:tend-supervise; do
        n=${pair%%:*}
        ln -sfn "$(exe_of "${pair#*:}")" "$bindir/$n"
        echo "$bindir/$n"
    done
fi
