#!/bin/sh
# tests/vm/jail.sh ARCH TEND_JAIL KERNEL BUSYBOX: boot KERNEL (a Debian kernel: vmlinuz of
# linux-image-*-amd64 or -arm64) in qemu with an initramfs holding only a static BUSYBOX
# and TEND_JAIL, both for ARCH (x86_64 or aarch64), and run tend-jail there on a cgroup v2
# hierarchy that this script's own init mounts (memory and pids enabled for children, as
# a delegated subtree is). Prints the guest's report, "key: value" lines, on stdout; exits
# 0 when the guest reached its end. Why a VM: a host on cgroup v1 (or hybrid) cannot give
# cgroup v2 memory and pids controllers, and an x86_64 host has no aarch64 kernel.
# Used by tests/it/jail.rs (vm_*).
set -eu
arch=$1 jail=$2 kernel=$3 busybox=$4
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
r=$work/root
mkdir -p "$r/bin" "$r/etc"
cp "$busybox" "$r/bin/busybox"
cp "$jail" "$r/tend-jail"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' > "$r/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$r/etc/group"
# The initramfs root cannot be pivot_root'ed away from: init copies itself onto a tmpfs
# and switches to it first, as a booted system's root is a real mount.
cat > "$r/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mkdir -p /new && mount -t tmpfs -o mode=755 root /new
cp -a /bin /etc /init2 /tend-jail /new/
mkdir -p /new/proc /new/sys /new/dev /new/run /new/tmp /new/usr /new/sbin
exec switch_root /new /init2
INIT
# The report: each line "@ key: value" (the console adds its own noise around them).
cat > "$r/init2" <<'INIT'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs dev /dev
mount -t cgroup2 cgroup2 /sys/fs/cgroup
echo '+memory +pids' > /sys/fs/cgroup/cgroup.subtree_control
echo "@ guest arch: $(uname -m)"
echo "@ host ns pid: $(readlink /proc/self/ns/pid)"
v=/vcap
mkdir -p $v/jobs/web $v/packages $v/data/packages $v/sys/log
/tend-jail -j web -u nobody -R $v -n 77 -m 67108864 -t 16 -g tend-jail-vm /bin/sh -c '
  grep -E "^(Uid|CapEff|CapBnd|NoNewPrivs|Seccomp|Seccomp_filters):" /proc/self/status | sed "s/^/@ /"
  echo "@ open files: $(ulimit -n)"
  echo "@ cgroup: $(cat /proc/self/cgroup)"
  echo "@ ns pid: $(readlink /proc/self/ns/pid)"
  mount -t tmpfs x /mnt 2>/dev/null && echo "@ call mount: ok" || echo "@ call mount: refused"
  unshare -U true 2>/dev/null && echo "@ call unshare-user: ok" || echo "@ call unshare-user: refused"
  touch /usr/x 2>/dev/null && echo "@ call write-usr: ok" || echo "@ call write-usr: refused"
  (i=0; while [ $i -lt 30 ]; do sleep 5 & i=$((i+1)); done) 2>/tmp/forks
  echo "@ fork refused: $(grep -c "can.t fork" /tmp/forks)"'
echo "@ jail exit: $?"
g=/sys/fs/cgroup/tend-jail-vm
echo "@ memory.max: $(cat $g/memory.max)"
echo "@ memory.swap.max: $(cat $g/memory.swap.max)"
echo "@ pids.max: $(cat $g/pids.max)"
echo "@ guest end: yes"
poweroff -f
INIT
chmod 755 "$r/init" "$r/init2"
(cd "$r" && find . | cpio -o -H newc --quiet | gzip -1) > "$work/initrd"
# Emulated (TCG), not KVM: nested KVM on the test machines hangs in the firmware.
case $arch in
# x86_64: no_timer_check, as on a loaded host TCG can miss the kernel's early timer test,
# which then panics ("IO-APIC + timer doesn't work!").
x86_64) q="qemu-system-x86_64 -cpu max"; console=ttyS0; extra=no_timer_check ;;
aarch64) q="qemu-system-aarch64 -M virt -cpu cortex-a57"; console=ttyAMA0; extra= ;;
*) echo "jail.sh: fatal: unknown arch $arch" >&2; exit 100 ;;
esac
# shellcheck disable=SC2086
timeout "${VM_PATIENCE:-300}" $q -m 512 -smp 1 -nographic -no-reboot -kernel "$kernel" -initrd "$work/initrd" \
  -append "console=$console quiet panic=-1 rdinit=/init $extra" </dev/null > "$work/console" 2>&1 || true
tr -d '\r' < "$work/console" | sed -n 's/^.*@ //p'
grep -q '@ guest end: yes' "$work/console"
