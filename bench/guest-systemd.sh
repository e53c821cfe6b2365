#!/bin/sh
# bench/guest-systemd.sh — the Kata question: systemd against tend-init as the init of the
# same minimal Debian disk image (debootstrap --variant=minbase, systemd included,
# written into an ext4 image with mke2fs -d), same kernel and initrd (Debian's, which
# mounts the disk), the same two services (units for systemd, service directories for
# tend-init). Not for CI: the image takes minutes to build (kept in $WORK).
#
#   bench/guest-systemd.sh     (as root; ROUNDS=7)
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
echo bench > "$root/etc/hostname"
rm -f "$work/disk.img"
mke2fs -q -t ext4 -d "$root" "$work/disk.img" 2G
echo "# bench/guest-systemd.sh $(date -u '+%Y-%m-%d %H:%M UTC'), $kernel, accel $accel, load: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$kernel" "$initrd" "$work/disk.img" "$accel" "$rounds" <<'EOF'
import re, statistics, subprocess, sys, time
kernel, initrd, disk, accel, rounds = sys.argv[1:]
inits = {"systemd": "init=/lib/systemd/systemd", "tend-init": "init=/usr/bin/tend-init tend.mode=guest"}
res = {k: [] for k in inits}
for _ in range(int(rounds)):
    for name, arg in inits.items():
        cmd = ["qemu-system-x86_64", "-accel", accel, "-m", "256", "-nographic", "-no-reboot",
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
            if time.monotonic() - t0 > 600:
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
