#!/bin/sh
# bench/guest-systemd.sh — the Kata question: systemd against tend-init as the init of the
# same minimal Debian disk image (debootstrap --variant=minbase, systemd included,
# written into an ext4 image with mke2fs -d), same kernel and initrd (Debian's, which
# mounts the disk), the same two services (units for systemd, service directories for
# tend-init). Not for CI: the image takes minutes to build (kept in $WORK).
#
#   bench/guest-systemd.sh     (as root; ROUNDS=7)
#   PAYLOAD=agent bench/guest-systemd.sh   issue 38's agent guest, as bench/guest.sh's: the
#       stub agent (bench/guest-agent.c; it loads the vsock modules, marks READY, runs the
#       report) and the debug console (tend-vsockserver -1 1026 tend-pty /bin/sh, after
#       the modules), as two units, or tend-init's main program (tend.main_after=none)
#       and a service directory; the modules loaded by the stub as a oneshot or init.d step
# Under tcg the guest's clock is its instruction count (ICOUNT as in bench/guest.sh).
# Needs: debootstrap, e2fsprogs, qemu-system-x86, linux-image-amd64.
# Measures as bench/guest.py: printk time from the initrd's mount of the root (the
# kernel's `EXT4-fs (vda): mounted`, just before the initrd execs the init; also from its
# `Run /init as init process`) to the ready service's mark in /dev/kmsg,
# qemu start to the mark, MemTotal - MemAvailable one second later, PID 1's Pss.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/bench/lib.sh"
TEND_ROOT=$here
tend_release
bin=$B
work=${WORK:-/var/tmp/tend-guest-systemd}
rounds=${ROUNDS:-7}
accel=${ACCEL:-tcg}
kernel=$(ls /boot/vmlinuz-* | sort | tail -n 1)
initrd=/boot/initrd.img-${kernel#/boot/vmlinuz-}
payload=${PAYLOAD:-}
icount=${ICOUNT-0}
[ "$accel" = tcg ] && [ "$icount" != off ] || icount=
root=$work/root
if [ ! -x "$root/lib/systemd/systemd" ]; then
    mkdir -p "$work"
    debootstrap --variant=minbase --include=systemd,systemd-sysv bookworm "$root" \
        http://deb.debian.org/debian
fi
for p in tend tend-init tend-svscan tend-supervise tend-log; do
    strip -o "$root/usr/bin/$p" "$bin/$p"
done
mkdir -p "$root/bench" "$root/etc/tend/services/ready" "$root/etc/tend/services/logged/log"
cat > "$root/bench/ready" <<'EOF'
#!/bin/sh
echo tend-bench-ready > /dev/kmsg
echo BENCH-READY > /dev/console
{
dmesg | grep -E 'Run /init as init process|EXT4-fs \(vda\): mounted|tend-bench-ready'
sleep 1
awk '/^MemTotal/{t=$2} /^MemAvailable/{a=$2} END{print "BENCH-MEM " t-a}' /proc/meminfo
echo "BENCH-PSS $(awk '/^Pss:/{print $2}' /proc/1/smaps_rollup)"
} > /dev/console
echo o > /proc/sysrq-trigger
EOF
printf '#!/bin/sh\necho logged\nexec sleep 100000\n' > "$root/bench/logged"
printf '#!/bin/sh\nexec /bench/ready\n' > "$root/etc/tend/services/ready/run"
printf '#!/bin/sh\nexec /bench/logged\n' > "$root/etc/tend/services/logged/run"
printf '#!/bin/sh\nexec tend-log /run/log\n' > "$root/etc/tend/services/logged/log/run"
chmod +x "$root/bench/ready" "$root/bench/logged" "$root"/etc/tend/services/*/run \
    "$root/etc/tend/services/logged/log/run"
cat > "$root/etc/systemd/system/bench-ready.service" <<'EOF'
[Unit]
Description=bench: ready marker
[Service]
ExecStart=/bench/ready
[Install]
WantedBy=multi-user.target
EOF
cat > "$root/etc/systemd/system/bench-logged.service" <<'EOF'
[Unit]
Description=bench: a logged service (the journal)
[Service]
ExecStart=/bench/logged
[Install]
WantedBy=multi-user.target
EOF
mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
for u in bench-ready bench-logged; do
    ln -sf "/etc/systemd/system/$u.service" "$root/etc/systemd/system/multi-user.target.wants/"
done
if [ "$payload" = agent ]; then
    version=${kernel#/boot/vmlinuz-}
    mkdir -p "$root/lib/vsock"
    for m in vsock vmw_vsock_virtio_transport_common vsock_loopback; do
        cp "/lib/modules/$version/kernel/net/vmw_vsock/$m.ko" "$root/lib/vsock/"
    done
    gcc -static -O2 -o "$root/bench/agent" "$here/bench/guest-agent.c"
    # As shipped: one executable, a hard link per program.
    for p in tend-init tend-svscan tend-supervise tend-log tend-vsockserver tend-pty; do
        ln -f "$root/usr/bin/tend" "$root/usr/bin/$p"
    done
    # The agent's report, as bench/guest.py's but on the console (the agent's stdout is
    # the journal under systemd).
    cat > "$root/bench/report" <<'EOF'
#!/bin/sh
{
dmesg | grep -E 'Run /init as init process|EXT4-fs \(vda\): mounted|tend-bench-ready'
echo BENCH-READY
sleep 1
awk '/^MemTotal/{t=$2} /^MemAvailable/{a=$2} END{print "BENCH-MEM " t-a}' /proc/meminfo
echo "BENCH-PSS $(awk '/^Pss:/{print $2}' /proc/1/smaps_rollup)"
} > /dev/console
echo o > /proc/sysrq-trigger
EOF
    chmod +x "$root/bench/report"
    rm -rf "$root/etc/tend/services"/* "$root/etc/systemd/system/multi-user.target.wants"/bench-*
    mkdir -p "$root/etc/tend/services/console" "$root/etc/tend/init.d"
    printf '#!/bin/sh\nexec tend-vsockserver -1 1026 tend-pty /bin/sh\n' > "$root/etc/tend/services/console/run"
    chmod +x "$root/etc/tend/services/console/run"
    echo 1 > "$root/etc/tend/services/console/notification-fd"
    ln -sf /bench/agent "$root/etc/tend/init.d/10-vsock"
    cat > "$root/etc/systemd/system/bench-agent.service" <<'EOF'
[Unit]
Description=bench: the stub agent
[Service]
ExecStart=/bench/agent
[Install]
WantedBy=multi-user.target
EOF
    cat > "$root/etc/systemd/system/bench-console.service" <<'EOF'
[Unit]
Description=bench: the debug console
[Service]
ExecStartPre=/bench/agent -m
ExecStart=/usr/bin/tend-vsockserver -1 1026 /usr/bin/tend-pty /bin/sh
[Install]
WantedBy=multi-user.target
EOF
    for u in bench-agent bench-console; do
        ln -sf "/etc/systemd/system/$u.service" "$root/etc/systemd/system/multi-user.target.wants/"
    done
fi
echo bench > "$root/etc/hostname"
rm -f "$work/disk.img"
mke2fs -q -t ext4 -d "$root" "$work/disk.img" 2G
echo "# bench/guest-systemd.sh $(date -u '+%Y-%m-%d %H:%M UTC'), $kernel, accel $accel, load: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$kernel" "$initrd" "$work/disk.img" "$accel" "$rounds" "$payload" "$icount" <<'EOF'
import re, statistics, subprocess, sys, time
kernel, initrd, disk, accel, rounds, payload, icount = sys.argv[1:]
inits = {"systemd": "init=/lib/systemd/systemd", "tend-init": "init=/usr/bin/tend-init tend.mode=guest"}
if payload == "agent":
    inits["tend-init"] += " tend.main=/bench/agent tend.main_after=none"
print(f"payload {payload or 'ready+logged'}, accel {accel}" + (f" -icount shift={icount},sleep=off" if icount else ""))
res = {k: [] for k in inits}
for _ in range(int(rounds)):
    for name, arg in inits.items():
        cmd = ["qemu-system-x86_64", "-accel", accel,
               *(["-icount", f"shift={icount},sleep=off"] if icount else []), "-m", "256", "-nographic", "-no-reboot",
               "-kernel", kernel, "-initrd", initrd,
               "-drive", f"file={disk},format=raw,if=virtio,snapshot=on",
               "-append", f"root=/dev/vda rw console=ttyS0 quiet panic=-1 printk.time=1 {arg}"]
        t0 = time.monotonic()
        q = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out, outside = b"", None
        for line in q.stdout:
            out += line
            if outside is None and b"BENCH-READY" in line:
                outside = (time.monotonic() - t0) * 1000
            if time.monotonic() - t0 > 1800:
                q.kill()
        q.wait()
        s = out.decode(errors="replace")
        m = [re.search(p, s) for p in [r"\[\s*([\d.]+)\] Run /init as init process",
                                        r"\[\s*([\d.]+)\] tend-bench-ready", r"BENCH-MEM (\d+)", r"BENCH-PSS (\d+)",
                                        r"\[\s*([\d.]+)\] EXT4-fs \(vda\): mounted"]]
        if not all(m) or outside is None:
            sys.exit(f"{name}: a boot failed:\n{s[-3000:]}")
        res[name].append(((float(m[1].group(1)) - float(m[0].group(1))) * 1000, outside,
                          int(m[2].group(1)), int(m[3].group(1)),
                          (float(m[1].group(1)) - float(m[4].group(1))) * 1000))
print(f"{rounds} interleaved boots each, medians")
print("| init | root mounted -> ready | initrd /init -> ready | qemu start -> ready | MemTotal-MemAvailable | PID 1 Pss |")
print("|---|---:|---:|---:|---:|---:|")
med = {k: [statistics.median(x[i] for x in v) for i in range(5)] for k, v in res.items()}
for k, m in med.items():
    print(f"| {k} | {m[4]:.0f} ms | {m[0]:.0f} ms | {m[1]:.0f} ms | {m[2]} kB | {m[3]} kB |")
t, s = med["tend-init"], med["systemd"]
print(f"tend-init / systemd: root mounted -> ready {t[4] / s[4]:.2f}, from initrd {t[0] / s[0]:.2f}, outside {t[1] / s[1]:.2f}, "
      f"memory {t[2] / s[2]:.2f}, PID 1 Pss {t[3] / s[3]:.2f}")
EOF
