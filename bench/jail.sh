#!/bin/bash
# The cost of bpm's walls per start: from the exec of tend-jail to the exec of the
# program (bench/jail-start.c takes both times on CLOCK_MONOTONIC) against the same for
# `runc run` of the spec bpm writes for the same bpm.yml (the plain shape); the whole run
# of /bin/true both ways (hyperfine: start, walls, exit and teardown); and the memory a
# jailed service adds over the same program unjailed (every page once: treemem.py).
# Usage: bench/jail.sh   (root; needs hyperfine, runc, gcc; builds tend-jail in release)
#        JAIL=path/to/tend-jail bench/jail.sh   (that build instead: an older one, say)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${JAIL:-}" ]; then
  J=$JAIL
else
  echo "# building tend-jail (cargo build --release --bin tend-jail)" >&2
  cargo build --release --quiet --bin tend-jail >&2
  J=${CARGO_TARGET_DIR:-target}/x86_64-unknown-linux-musl/release/tend-jail
fi
TREEMEM=${TREEMEM:-/work/shared/tools/treemem.py}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
v=$work/vcap
mkdir -p "$v"/{jobs/web,packages,data/packages,sys/log} "$work/bundle/rootfs"
jail=("$J" -j web -u nobody -R "$v")
mkdir -p "$v/jobs/web/bin"
gcc -static -O2 -o "$v/jobs/web/bin/jail-start" bench/jail-start.c
stamp=/var/vcap/jobs/web/bin/jail-start
# bpm's spec for the plain shape (tests/it/jail.rs writes the same, shape by shape).
python3 - "$v" crates/jail/src/seccomp.rs > "$work/bundle/config.json" <<'PY'
import json, re, sys, os
v, src = sys.argv[1], open(sys.argv[2]).read()
names = sorted(set(re.findall(r'\("(\w+)", libc::SYS_', src))) + ["clone3"]
def bind(src, dst, rbind=False, exec_=False, rw=False):
    o = ["rbind" if rbind else "bind"] + ([] if exec_ else ["noexec"]) + ["nosuid", "nodev", "rw" if rw else "ro"]
    return {"destination": dst, "type": "bind", "source": src, "options": o}
m = [
    {"destination": "/proc", "type": "proc", "source": "proc"},
    {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "noexec", "mode=755", "size=65536k"]},
    {"destination": "/dev/pts", "type": "devpts", "source": "devpts", "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]},
    {"destination": "/dev/shm", "type": "tmpfs", "source": "shm", "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
    {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue", "options": ["nosuid", "noexec", "nodev"]},
    {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "noexec", "nodev", "ro"]},
]
m += [bind(d, d, exec_=True) for d in ["/bin", "/etc", "/lib", "/lib64", "/sbin", "/usr"] if os.path.exists(d)]
tmp = f"{v}/data/web/tmp"
m += [bind(tmp, d, True, False, True) for d in ["/tmp", "/var/tmp", "/var/vcap/data/web/tmp"]]
m += [bind(f"{v}/{p}", f"/var/vcap/{p}", exec_=True) for p in ["data/packages", "packages", "jobs/web"]]
m.append(bind(f"{v}/sys/log/web", "/var/vcap/sys/log/web", True, False, True))
spec = {
    "ociVersion": "1.0.2",
    "process": {"terminal": False, "user": {"uid": 65534, "gid": 65534}, "args": ["/bin/true"],
                "env": ["PATH=/usr/bin:/bin"], "cwd": "/var/vcap/jobs/web",
                "capabilities": {"bounding": [], "inheritable": [], "permitted": [], "ambient": []},
                "noNewPrivileges": True},
    "root": {"path": "rootfs"},
    "mounts": m,
    "linux": {"namespaces": [{"type": t} for t in ["ipc", "mount", "uts", "pid"]],
              "maskedPaths": ["/etc/sv", "/proc/kcore", "/proc/latency_stats", "/proc/sched_debug", "/proc/timer_list", "/proc/timer_stats", "/sys/firmware"],
              "readonlyPaths": ["/proc/asound", "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"],
              "rootfsPropagation": "private",
              "seccomp": {"defaultAction": "SCMP_ACT_ERRNO", "architectures": ["SCMP_ARCH_X86_64"],
                          "syscalls": [{"names": names, "action": "SCMP_ACT_ALLOW"}]}},
}
json.dump(spec, sys.stdout)
PY
"${jail[@]}" /bin/true   # makes the job's directories, as bpm does before runc
echo "exec of tend-jail to exec of the program: $("$v/jobs/web/bin/jail-start" 300 "${jail[@]}" $stamp --stamp)"
# The same under SCHED_FIFO (inherited by the chain): tend-jail's own latency without the
# wait behind other runnable tasks, which dominates the median on a loaded machine. runc
# cannot be measured so: on cgroup v1 its cpu controller refuses a real-time task.
echo "the same, SCHED_FIFO 50: $(chrt -f 50 "$v/jobs/web/bin/jail-start" 300 "${jail[@]}" $stamp --stamp)"
echo "exec of the program alone, SCHED_FIFO 50: $(chrt -f 50 "$v/jobs/web/bin/jail-start" 300 "$v/jobs/web/bin/jail-start" --stamp)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
sed 's|"args": \["/bin/true"\]|"args": ["'$stamp'", "--stamp"]|' "$work/bundle/config.json" > "$work/stamp.json"
mkdir -p "$work/bundle2" && cp "$work/stamp.json" "$work/bundle2/config.json" && mkdir -p "$work/bundle2/rootfs"
echo "exec of runc run to exec of the program: $("$v/jobs/web/bin/jail-start" 100 runc --root "$work/runc" run --bundle "$work/bundle2" bench-stamp)"
json=$work/h.json
hyperfine -N --warmup 10 --runs 200 --export-json "$json" \
  "${jail[*]} /bin/true" \
  "runc --root $work/runc run --bundle $work/bundle bench-jail" \
  "/bin/true" >/dev/null
python3 - "$json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
j, c, t = (x["mean"] * 1e3 for x in r)
# The median and the minimum too: on a loaded machine the mean is mostly other load.
print("| start | mean ± σ (ms) | median (ms) | min (ms) |\n|---|---|---|---|")
for name, x in zip(["tend-jail ... /bin/true", "runc run (bpm's spec) /bin/true", "/bin/true alone"], r):
    print(f"| {name} | {x['mean']*1e3:.3f} ± {x['stddev']*1e3:.3f} | {x['median']*1e3:.3f} | {x['min']*1e3:.3f} |")
jm, cm, tm = (x["median"] * 1e3 for x in r)
print(f"tend-jail/runc: mean {j/c:.3f}, median {jm/cm:.3f}; tend-jail's own cost over /bin/true: median {jm-tm:.3f} ms")
PY
# Memory: sleep in the walls (tend-jail outside, its PID 1, the program) against sleep alone.
"${jail[@]}" /bin/sleep 1000 & jp=$!
/bin/sleep 1000 & sp=$!
for _ in $(seq 100); do [ -n "$(cat /proc/$jp/task/$jp/children 2>/dev/null)" ] && break; sleep 0.05; done
sleep 0.5
echo "jailed (tend-jail, PID 1, sleep):"; python3 "$TREEMEM" --tree "$jp"
echo "unjailed (sleep):"; python3 "$TREEMEM" "$sp"
