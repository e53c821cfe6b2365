#!/bin/sh
# bench/init.sh — tend-init against tini, catatonit, dumb-init (command only) and
# s6-svscan as PID 1 (10 services), and `docker run` wall time with tend-init or tini as
# the entrypoint of the same image. Method: the docstring of bench/init.py.
#
#   bench/init.sh        (as root: unshare, docker)
#   ROUNDS=100 by default for the start-up figures; PARTS (bench/init.py) chooses the
#   parts, e.g. PARTS=forward for SIGTERM forwarding only (issue 28); TEND_BEFORE=DIR adds
#   the tend-init of another build as "tend-init before".
# Needs: tini, catatonit, dumb-init, s6, busybox-static, util-linux (Debian packages);
# a Docker engine for the last figure (skipped without one).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/bench/lib.sh"
TEND_ROOT=$here
# The programs are hard links to the multi-call executable.
tend_release
bin=$B
for p in tend-init tend-svscan tend-supervise; do
    [ -x "$bin/$p" ] || { echo "missing $bin/$p: not built (TEND_BIN=$bin)" >&2; exit 100; }
done
image=
case " ${PARTS:-docker} " in *" docker "*) want_docker=1 ;; *) want_docker= ;; esac
if [ -n "$want_docker" ] && docker info >/dev/null 2>&1; then
    extra=$(mktemp -d)
    trap 'rm -rf "$extra"' EXIT
    mkdir -p "$extra/usr/bin"
    cp /usr/bin/tini-static "$extra/usr/bin/tini"
    "$here/examples/container/build.sh" -x "$extra" "$bin" tend-init-bench
    image=tend-init-bench
fi
echo "# bench/init.sh $(date -u '+%Y-%m-%d %H:%M UTC'), load: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$here/bench/init.py" "$bin" "$image"
