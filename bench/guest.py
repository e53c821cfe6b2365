#!/usr/bin/env python3
"""bench/guest.py: boot time and memory of a VM guest with tend-init as /init, against a
floor (a tiny static C /init), busybox init and s6-svscan as /init after a mount script,
in the same run. Called by bench/guest.sh, which checks the tools and builds the floor.

One initramfs tree (uncompressed newc): busybox, the tend programs, s6 with its shared
libraries, the same two services (`ready`, and `logged` with a tend-log logger); the
variants differ only in /init (and busybox init's /etc/inittab):
- floor: mounts /proc and /dev, marks, runs the report;
- tend-init: /init is tend-init (guest mode: its own mounts, lo, hostname);
- busybox init: /init -> busybox, inittab runs /bench/mounts then the two services;
- s6-svscan: /init is a shell script: /bench/mounts, copy the services to /run/service,
  exec s6-svscan.
/bench/mounts does what tend-init does in guest mode (proc, sys, devtmpfs, devpts, shm,
/run, cgroup2, lo up, hostname).
The `ready` service writes `tend-bench-ready` to /dev/kmsg and `BENCH-READY` on the
console, then /bench/report prints the kernel's timestamps of `Run /init as init process`
and of the marker (printk times: in-guest, /init -> ready), MemTotal - MemAvailable
after one second, and PID 1's Pss, then powers off (sysrq o: the same for all).
Outside: qemu start -> BENCH-READY on the serial console. Rounds are interleaved;
medians; ratios against the floor and tend-init. ICOUNT (from bench/guest.sh; tcg only):
qemu's -icount shift=ICOUNT,sleep=off, so that the in-guest clock counts the guest's
instructions rather than the host's time.
"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BIN, KERNEL, ACCEL, FLOOR = sys.argv[1:5]
# PAYLOAD=agent: the stub agent (bench/guest-agent.c, built by bench/guest.sh)
AGENT = sys.argv[5] if len(sys.argv) > 5 else ""
# TRACE=1: bench/guest-pages.c, where the tend processes' shared Pss goes
PAGES = sys.argv[6] if len(sys.argv) > 6 else ""
ROUNDS = int(os.environ.get("ROUNDS", "7"))
ICOUNT = os.environ.get("ICOUNT", "")
# TRACE=1: the kernel logs every fork, exec and exit (tp_printk), and the report prints
# them with the per-process Pss: where the time to READY and the memory go.
TRACE = os.environ.get("TRACE", "")
# FAULT_AROUND=4096 (with TRACE=1): the guest kernel maps only the page a fault asks for
# (its fault_around_bytes, 64 kB by default, set through debugfs by a shell /init that
# then execs the real one as /sbin/init), so bench/guest-pages.c's page runs are the
# pages each process really reads, not their 64 kB windows. A diagnostic, not a figure.
FAULT_AROUND = os.environ.get("FAULT_AROUND", "")
# PAYLOAD=three: issue 28's three services (see write_three) instead of ready + logged.
# PAYLOAD=agent: issue 38's agent guest (see write_agent).
PAYLOAD = os.environ.get("PAYLOAD", "")
TMP = tempfile.mkdtemp(prefix="bench-guest-")
ROOT = os.path.join(TMP, "root")


def write(rel, text, mode=0o755):
    p = os.path.join(ROOT, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        f.write(text)
    os.chmod(p, mode)


def copy(src, rel):
    dst = os.path.join(ROOT, rel)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.copy(src, dst)


def libs(prog):
    out = subprocess.run(["ldd", prog], capture_output=True, text=True).stdout
    return re.findall(r"(/\S+) \(0x", out)


def build_tree():
    for d in ["proc", "sys", "dev", "run", "etc", "tmp"]:
        os.makedirs(os.path.join(ROOT, d), exist_ok=True)
    bb = shutil.which("busybox")
    copy(bb, "bin/busybox")
    for applet in subprocess.run([bb, "--list"], capture_output=True, text=True).stdout.split():
        link = os.path.join(ROOT, "bin", applet)
        if not os.path.lexists(link):
            os.symlink("busybox", link)
    # As shipped: the multi-call executable once and a hard link per program.
    subprocess.run(["strip", "-o", os.path.join(ROOT, "bin", "tend"), os.path.join(BIN, "tend")], check=True)
    for p in ["tend-init", "tend-svscan", "tend-supervise", "tend-log", "tend-vsockserver", "tend-pty"]:
        os.link(os.path.join(ROOT, "bin", "tend"), os.path.join(ROOT, "bin", p))
    for p in ["s6-svscan", "s6-supervise"]:
        copy(shutil.which(p), "usr/bin/" + p)
        for lib in libs(shutil.which(p)):
            copy(lib, lib.lstrip("/"))
    copy(FLOOR, "bench/floor")
    if PAGES:
        copy(PAGES, "bench/pages")
    write("etc/hostname", "bench\n", 0o644)
    write("bench/mounts", """#!/bin/sh
mount -t proc -o nosuid,nodev,noexec proc /proc
mount -t sysfs -o nosuid,nodev,noexec sysfs /sys
mount -t devtmpfs -o nosuid,mode=0755 devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts -o nosuid,noexec,gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o nosuid,nodev,mode=1777 tmpfs /dev/shm
mount -t tmpfs -o nosuid,nodev,mode=0755 tmpfs /run
mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 /sys/fs/cgroup
ip link set lo up
hostname -F /etc/hostname
""")
    write("bench/report", """#!/bin/sh
dmesg | grep -E 'Run /init as init process|tend-bench-ready'
sleep 1
awk '/^MemTotal/{t=$2} /^MemAvailable/{a=$2} END{print "BENCH-MEM " t-a}' /proc/meminfo
echo "BENCH-PSS $(awk '/^Pss:/{print $2}' /proc/1/smaps_rollup)"
# Every process but this shell, read with builtins only (no process of the report's own).
t=0
for d in /proc/[0-9]*; do
    [ "${d#/proc/}" = $$ ] && continue
    p=0
    while read -r k v u; do [ "$k" = Pss: ] && p=$v; done < $d/smaps_rollup
    read -r c < $d/comm
    echo "BENCH-PROC ${d#/proc/} $c $p"
    t=$((t + p))
done 2>/dev/null
echo "BENCH-PSSALL $t"
[ -z "$TRACE" ] || /bench/pages /bin/tend $(for d in /proc/[0-9]*; do
    [ "${d#/proc/}" = $$ ] || ! [ $d/exe -ef /bin/tend ] || echo ${d#/proc/}; done)
[ -z "$TRACE" ] || dmesg | grep -E 'sched_process_(exec|fork|exit)|tend-bench-ready|Run /init'
echo o > /proc/sysrq-trigger
""")
    if PAYLOAD == "three":
        write_three()
    elif PAYLOAD == "agent":
        write_agent()
    else:
        write("etc/tend/services/ready/run", """#!/bin/sh
echo tend-bench-ready > /dev/kmsg
echo BENCH-READY
exec /bench/report
""")
        write("etc/tend/services/logged/run", "#!/bin/sh\necho logged\nexec sleep 100000\n")
        write("etc/tend/services/logged/log/run", "#!/bin/sh\nexec tend-log /run/log\n")
    write("bench/s6-init", """#!/bin/sh
/bench/mounts
cp -a /etc/tend/services /run/service
PATH=/usr/bin:/bin exec s6-svscan /run/service
""")
    if PAYLOAD == "agent":
        write("bench/inittab", """::sysinit:/bench/mounts
::sysinit:/bench/agent -m
::respawn:/etc/tend/services/console/run
::respawn:/bench/agent
""", 0o644)
    elif PAYLOAD == "three":
        write("bench/inittab", """::sysinit:/bench/mounts
::respawn:/etc/tend/services/loop/run
::respawn:/etc/tend/services/sleeper/run
::once:/etc/tend/services/ready/run
""", 0o644)
    else:
        write("bench/inittab", """::sysinit:/bench/mounts
::once:/etc/tend/services/ready/run
::once:/bin/sh -c 'exec /etc/tend/services/logged/run | exec tend-log /run/log'
""", 0o644)


def write_agent():
    """Issue 38's agent guest: the stub agent (marks ready itself, then runs the report)
    as the main program, after the vsock modules (loaded by the agent's own code, run as
    an init.d step) and the debug console `tend-vsockserver -1 1026 tend-pty /bin/sh`."""
    version = os.path.basename(KERNEL)[len("vmlinuz-"):]
    mods = f"/lib/modules/{version}/kernel/net/vmw_vsock"
    for m in ["vsock", "vmw_vsock_virtio_transport_common", "vsock_loopback"]:
        copy(f"{mods}/{m}.ko", f"lib/vsock/{m}.ko")
    copy(AGENT, "bench/agent")
    # The stub itself as the init.d step (it loads the modules when run from there): a
    # busybox sh before it cost 1.1 ms of the 48.4 (the trace of TRACE=1).
    os.makedirs(os.path.join(ROOT, "etc/tend/init.d"), exist_ok=True)
    os.symlink("/bench/agent", os.path.join(ROOT, "etc/tend/init.d/10-vsock"))
    write("etc/tend/services/console/run", "#!/bin/sh\nexec tend-vsockserver -1 1026 tend-pty /bin/sh\n")
    write("etc/tend/services/console/notification-fd", "1\n", 0o644)


def write_three():
    """Issue 28's payload: a shell loop, an `exec sleep`, and a ready marker that polls
    every 10 ms until the other two have touched their files."""
    write("etc/tend/services/loop/run", """#!/bin/sh
touch /run/bench-loop
while :; do sleep 1; done
""")
    write("etc/tend/services/sleeper/run", "#!/bin/sh\ntouch /run/bench-sleeper\nexec sleep 100000\n")
    write("etc/tend/services/ready/run", """#!/bin/sh
until [ -e /run/bench-loop ] && [ -e /run/bench-sleeper ]; do usleep 10000; done
echo tend-bench-ready > /dev/kmsg
echo BENCH-READY
exec /bench/report
""")


def pack(variant):
    init = os.path.join(ROOT, "init")
    inittab = os.path.join(ROOT, "etc/inittab")
    real = os.path.join(ROOT, "sbin/init")
    for p in [init, inittab, real]:
        if os.path.lexists(p):
            os.remove(p)
    if variant == "floor":
        shutil.copy(os.path.join(ROOT, "bench/agent" if PAYLOAD == "agent" else "bench/floor"), init)
    elif variant in ("tend-init", AFTER_CONSOLE):
        os.link(os.path.join(ROOT, "bin/tend"), init)
    elif variant == "busybox init":
        os.symlink("bin/busybox", init)
        shutil.copy(os.path.join(ROOT, "bench/inittab"), inittab)
    elif variant == "s6-svscan":
        shutil.copy(os.path.join(ROOT, "bench/s6-init"), init)
    if FAULT_AROUND:
        os.makedirs(os.path.dirname(real), exist_ok=True)
        if os.path.islink(init):  # busybox: the link is relative to /
            os.symlink("/" + os.readlink(init), real)
            os.remove(init)
        else:
            os.rename(init, real)
        with open(init, "w") as f:
            f.write("#!/bin/busybox sh\n/bin/busybox mount -t debugfs debugfs /tmp\n"
                    f"echo {int(FAULT_AROUND)} > /tmp/fault_around_bytes\n"
                    "/bin/busybox umount /tmp\nexec /sbin/init\n")
        os.chmod(init, 0o755)
    out = os.path.join(TMP, variant.replace(" ", "-") + ".cpio")
    subprocess.run(f"cd {ROOT} && find . | cpio -o -H newc --quiet > {out}", shell=True, check=True)
    return out


# PAYLOAD=agent: the agent waits for no service (tend.main_after=none: it starts before
# the console, which binds beside it); AFTER_CONSOLE is the default order (the console
# ready first), booted from the same image.
AFTER_CONSOLE = "tend-init agent-after-console"


def params(variant):
    if PAYLOAD != "agent":
        return ""
    return " tend.main=/bench/agent" + ("" if variant == AFTER_CONSOLE else " tend.main_after=none")


def boot(initrd, variant):
    icount = ["-icount", f"shift={ICOUNT},sleep=off"] if ICOUNT else []
    cmd = ["qemu-system-x86_64", "-accel", ACCEL, *icount, "-m", "256", "-nographic", "-no-reboot",
           "-kernel", KERNEL, "-initrd", initrd,
           "-append", "console=ttyS0 quiet panic=-1 printk.time=1 tend.hostname=bench"
           + params(variant)
           + (" TRACE=1 trace_event=sched:sched_process_fork,sched:sched_process_exec,"
              "sched:sched_process_exit tp_printk log_buf_len=1M" if TRACE else "")]
    t0 = time.monotonic()
    q = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    outside = None
    text = b""
    # Host time: under tcg with a loaded host a boot can take minutes.
    deadline = t0 + 1800
    while True:
        line = q.stdout.readline()
        if not line:
            break
        text += line
        if outside is None and b"BENCH-READY" in line:
            outside = time.monotonic() - t0
        if time.monotonic() > deadline:
            q.kill()
            break
    q.wait()
    s = text.decode(errors="replace")
    if TRACE:
        print("\n".join(l for l in s.splitlines() if "BENCH-P" in l or "sched_process" in l
                        or ": warning: " in l or ": fatal: " in l
                        or "tend-bench-ready" in l or "Run /init" in l))
    run = re.search(r"\[\s*([\d.]+)\] Run /init as init process", s)
    ready = re.search(r"\[\s*([\d.]+)\] tend-bench-ready", s)
    mem = re.search(r"BENCH-MEM (\d+)", s)
    pss = re.search(r"BENCH-PSS (\d+)", s)
    pssall = re.search(r"BENCH-PSSALL (\d+)", s)
    if not (run and ready and mem and pss and outside):
        sys.exit(f"bench/guest: a boot failed ({initrd}):\n{s}")
    return {
        "inside": (float(ready.group(1)) - float(run.group(1))) * 1000,
        "outside": outside * 1000,
        "mem": int(mem.group(1)),
        "pss": int(pss.group(1)),
        "pssall": int(pssall.group(1)) if pssall else 0,
    }


VARIANTS = ["floor", "tend-init", "busybox init"] + ([AFTER_CONSOLE] if PAYLOAD == "agent" else ["s6-svscan"])
# ONLY="floor,tend-init": boot only these (the floor and tend-init are always kept).
if os.environ.get("ONLY"):
    keep = set(os.environ["ONLY"].split(",")) | {"floor", "tend-init"}
    VARIANTS = [v for v in VARIANTS if v in keep]
build_tree()
images = {v: pack(v) for v in VARIANTS}
results = {v: [] for v in VARIANTS}
for r in range(ROUNDS):
    for v in VARIANTS:
        results[v].append(boot(images[v], v))
shutil.rmtree(TMP)

med = {v: {k: statistics.median(x[k] for x in results[v]) for k in results[v][0]} for v in VARIANTS}
print(f"accel {ACCEL}{f' -icount shift={ICOUNT},sleep=off' if ICOUNT else ''}, payload {PAYLOAD or 'ready+logged'}, {ROUNDS} interleaved boots each, medians")
print(f"| /init | /init -> ready (in guest) | qemu start -> ready | MemTotal-MemAvailable | PID 1 Pss | every process's Pss |")
print("|---|---:|---:|---:|---:|---:|")
for v in VARIANTS:
    m = med[v]
    print(f"| {v} | {m['inside']:.1f} ms | {m['outside']:.0f} ms | {m['mem']} kB | {m['pss']} kB | {m['pssall']} kB |")
f, t = med["floor"], med["tend-init"]
print(f"tend-init above the floor (in guest): {t['inside'] - f['inside']:.1f} ms, "
      f"memory {t['mem'] - f['mem']} kB, Pss of every process {t['pssall'] - f['pssall']} kB")
for v in VARIANTS[2:]:
    o = med[v]
    print(f"tend-init / {v}: in guest {t['inside'] / o['inside']:.2f}, "
          f"outside {t['outside'] / o['outside']:.3f}, memory {t['mem'] / o['mem']:.2f}, "
          f"PID 1 Pss {t['pss'] / o['pss']:.2f}")
print("spread (min-max, in guest ms): " + ", ".join(
    f"{v} {min(x['inside'] for x in results[v]):.1f}-{max(x['inside'] for x in results[v]):.1f}"
    for v in VARIANTS))
