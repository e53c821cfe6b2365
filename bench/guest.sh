#!/bin/sh
# bench/guest.sh — boot time and memory of a qemu guest with tend-init as /init, against
# a floor (a tiny static C /init), busybox init and s6-svscan as /init after a mount
# script, same kernel, same services, same initramfs but /init. Method: the docstring of
# bench/guest.py. The systemd row (a Debian disk image) is bench/guest-systemd.sh.
#
#   bench/guest.sh        (ROUNDS=7 boots of each by default)
#   PAYLOAD=three bench/guest.sh   issue 28's payload: a shell loop, an exec sleep, a ready marker
#                                  polling every 10 ms for the other two
#   ONLY=floor,tend-init ...        boot only those variants (floor and tend-init always)
#   PAYLOAD=agent bench/guest.sh   issue 38's agent guest: the stub agent (bench/guest-agent.c)
#                                  as /init (the floor, AGENT_INIT=yes), as tend-init's main
#                                  program (tend.main=, tend.main_after=none) with the vsock
#                                  debug console, the same with the agent after the console
#                                  (the default order), and under busybox init with the same
#                                  console; to READY
#   TRACE=1 ...                    the kernel logs forks, execs and exits (tp_printk); the
#                                  report prints them, each process's Pss and where the tend
#                                  processes' shared pages lie (bench/guest-pages.c)
# Needs: qemu-system-x86, linux-image-amd64, busybox-static, cpio, s6, gcc (static libc).
# KVM when a bounded probe boot works (a nested software KVM can hang the kernel),
# else tcg (about ten times slower: read the ratios); ACCEL=kvm|tcg forces one.
# Under tcg the guest's clock is driven by its instruction count: qemu -icount
# shift=N,sleep=off, 2^N ns per instruction, ICOUNT=0 by default (a 1 GHz CPU doing one
# instruction per cycle). In-guest times are then repeatable to a few percent whatever
# else the host runs, and measure the guest's own work; on the host's clock, tcg's
# emulation costs (an exec, a page fault) swamp it and identical boots differ by 15%
# (bench/RESULTS.md, "Hot code first"). ICOUNT=off measures on the host's clock.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/bench/lib.sh"
TEND_ROOT=$here
tend_release
bin=$B
for p in tend tend-init tend-svscan tend-supervise tend-log; do
    [ -x "$bin/$p" ] || { echo "missing $bin/$p: not built (TEND_BIN=$bin)" >&2; exit 100; }
done
for p in qemu-system-x86_64 busybox cpio s6-svscan gcc strip; do
    command -v $p >/dev/null || { echo "missing $p" >&2; exit 100; }
done
kernel=$(ls /boot/vmlinuz-* | sort | tail -n 1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gcc -static -O2 -o "$tmp/floor" "$here/bench/guest-floor.c"
gcc -static -O2 -o "$tmp/agent" "$here/bench/guest-agent.c"
gcc -static -O2 -o "$tmp/pages" "$here/bench/guest-pages.c"
accel=${ACCEL:-}
if [ -z "$accel" ]; then
    accel=tcg
    # The probe: the floor booted with KVM must power off within 20 s.
    mkdir -p "$tmp/probe/proc" "$tmp/probe/dev" "$tmp/probe/bench"
    cp "$tmp/floor" "$tmp/probe/init"
    printf '#!/bin/busybox sh\necho o > /proc/sysrq-trigger\n' > "$tmp/probe/bench/report"
    mkdir -p "$tmp/probe/bin" && cp "$(command -v busybox)" "$tmp/probe/bin/busybox"
    chmod +x "$tmp/probe/bench/report"
    (cd "$tmp/probe" && find . | cpio -o -H newc --quiet) > "$tmp/probe.cpio"
    if [ -r /dev/kvm ] && timeout 20 qemu-system-x86_64 -accel kvm -m 256 -nographic -no-reboot \
        -kernel "$kernel" -initrd "$tmp/probe.cpio" -append "console=ttyS0 quiet panic=-1" \
        2>&1 | grep -q BENCH-READY; then
        accel=kvm
    fi
fi
if [ "$accel" = tcg ]; then
    ICOUNT=${ICOUNT:-0}
    [ "$ICOUNT" != off ] || ICOUNT=
else
    ICOUNT=
fi
export ICOUNT
echo "# bench/guest.sh $(date -u '+%Y-%m-%d %H:%M UTC'), $kernel, load: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$here/bench/guest.py" "$bin" "$kernel" "$accel" "$tmp/floor" "$tmp/agent" "$tmp/pages"
