#!/bin/sh
# Make the image's root file system from tend's static executables and busybox-static,
# then build the image with the Dockerfile beside this script.
#
# usage: build.sh [ -o rootfs ] [ -x extra ] bindir [ tag ]
#   -o rootfs  only make the root file system, in the directory rootfs (no docker)
#   -x extra   copy the directory extra over the root file system (test files)
#   bindir     where the tend executable is (target/x86_64-unknown-linux-musl/release),
#              or separate tend-* executables
#   tag        the image's tag (default tend-example)
# Run it: docker run --rm -ti tend-example; remove it: docker rmi tend-example.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out= extra=
while getopts o:x: c; do
    case $c in
    o) out=$OPTARG ;;
    x) extra=$OPTARG ;;
    *) echo "usage: build.sh [ -o rootfs ] [ -x extra ] bindir [ tag ]" >&2; exit 100 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: build.sh [ -o rootfs ] [ -x extra ] bindir [ tag ]" >&2; exit 100; }
bindir=$1 tag=${2:-tend-example}
# An image needs tend; a root file system alone (-o) may go without (the release
# tarball's image adds it: tests/it/packaging.rs).
[ -n "$out" ] || [ -x "$bindir/tend" ] || [ -x "$bindir/tend-init" ] || {
    echo "build.sh: fatal: no tend in $bindir: run 'cargo build --release' at the top of the checkout and give target/x86_64-unknown-linux-musl/release" >&2
    exit 111
}
busybox=$(command -v busybox) || { echo "build.sh: fatal: busybox not found: apt-get install busybox-static" >&2; exit 111; }
if [ -n "$out" ]; then
    ctx= root=$out
else
    ctx=$(mktemp -d) root=$ctx/rootfs
    trap 'rm -rf "$ctx"' EXIT
fi
rm -rf "$root"
mkdir -p "$root/usr/bin" "$root/bin" "$root/proc" "$root/sys" "$root/dev" "$root/etc" \
    "$root/run" "$root/tmp" "$root/var/log/numbers"
# /run, /tmp and the logdir are writable by any USER (docker run --user 1000:1000).
chmod 1777 "$root/run" "$root/tmp" "$root/var/log/numbers"
cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
    [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
done
# Debug builds carry their debug info: strip it (release builds already are).
if [ -x "$bindir/tend" ]; then
    # The multi-call executables once each, and a hard link per program, as
    # packaging/links.sh makes them: the tree's programs to tend-tree (one small text for
    # the whole tree), the others to tend. Without tend-tree, tend answers every name.
    for e in tend tend-tree; do
        [ -x "$bindir/$e" ] || continue
        strip -o "$root/usr/bin/$e" "$bindir/$e" 2>/dev/null || cp "$bindir/$e" "$root/usr/bin/$e"
    done
    "$here/../../packaging/links.sh" "$root/usr/bin"
else
    for f in "$bindir"/tend-*; do
        case $f in *.d) continue ;; esac
        [ -x "$f" ] || continue
        strip -o "$root/usr/bin/${f##*/}" "$f" 2>/dev/null || cp "$f" "$root/usr/bin/"
    done
fi
cp -R "$here/etc/tend" "$root/etc/"
printf 'root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/tmp:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nuser:x:1000:\n' >"$root/etc/group"
[ -z "$extra" ] || cp -R "$extra/." "$root/"
[ -z "$ctx" ] || {
    cp "$here/Dockerfile" "$ctx/"
    old=$(docker images -q "$tag")
    DOCKER_BUILDKIT=0 docker build -q -t "$tag" "$ctx" >/dev/null
    # Rebuilding under the same tag: do not leave the previous image behind, dangling.
    new=$(docker images -q "$tag")
    if [ -n "$old" ] && [ "$old" != "$new" ]; then docker rmi "$old" >/dev/null 2>&1 || :; fi
}
