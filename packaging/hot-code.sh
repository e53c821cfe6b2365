#!/usr/bin/env bash
# packaging/hot-code.sh — regenerate packaging/hot-code.txt, the order in which
# packaging/tend-cc lays out the code of the multi-call executable.
#
# Usage: packaging/hot-code.sh [ OUT ]     (default: packaging/hot-code.txt)
#
# Builds the release executable with its symbols (in target/hot-code), runs the programs
# at work under valgrind's callgrind (a scan tree with a logged service, restarts and the
# clients; tend-init with stage 1, services and a command; tend-init as a VM guest's init
# in agent mode with the vsock debug console, tend-vsockserver, and the console's
# per-connection path, tend-ipcserver and tend-pty; tend-socklog and tend-ucspilogd;
# tend-check's watcher; tend-summary), and records every instruction
# address each program executed. Each address becomes the function that holds it (every
# name at that address: identical functions share one body), and the functions are
# written hot to cold, grouped so that each long-lived program's code is contiguous:
# first what tend-supervise runs (there is one per service), common code first; then what
# tend-svscan adds, then tend-log, tend-init, a guest's init (profiled as `init`), the
# console's tend-vsockserver, tend-ipcserver and tend-pty, the syslog front ends,
# tend-check, and last what only the short-lived programs run. Names are written with
# their build-specific parts removed, as tend-cc matches them (packaging/hot-code.awk).
#
# Needs valgrind, python3, nm, unshare and chroot (run as root: the guest's namespaces).
# Takes a few minutes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/packaging/hot-code.txt}
for t in valgrind python3 nm; do
    command -v "$t" >/dev/null || { echo "hot-code.sh: fatal: missing $t" >&2; exit 111; }
done
export CARGO_TARGET_DIR=$root/target/hot-code
(cd "$root" && CARGO_PROFILE_RELEASE_STRIP=false cargo build --release --quiet --bin tend)
bin=$CARGO_TARGET_DIR/x86_64-unknown-linux-musl/release
"$root/packaging/links.sh" "$bin"

work=$(mktemp -d "${TMPDIR:-/tmp}/hot-code.XXXXXX")
pids=
cleanup() {
    for p in $pids; do kill -KILL "$p" 2>/dev/null || true; done
    for p in /proc/[0-9]*; do
        case "$(readlink "$p/cwd" 2>/dev/null)" in "$work"*) kill -KILL "${p#/proc/}" 2>/dev/null || true ;; esac
    done
    # What still names the scratch directory (valgrind's profile path is in its argv).
    pkill -KILL -f "$work" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT INT TERM
prof=$work/profiles
mkdir -p "$prof"
# Only tend's own programs are profiled: the shells and sleeps of the run scripts are not.
# --dump-before=execve keeps what a program runs before it execs: a spawned child's code
# between fork and exec (attributed to its parent's program), a chain tool's whole run.
# (An array, not a function: a background job's $! is then valgrind itself.)
vg=(valgrind --tool=callgrind --trace-children=yes
    --trace-children-skip='/bin/*,/usr/*,*/sh,*/sleep,*/cat,*/python3*'
    --dump-instr=yes --compress-pos=no --callgrind-out-file="$prof/cg.%p" -q
    --dump-before=execve)
script() { # script FILE BODY: an executable /bin/sh script
    printf '#!/bin/sh\n%s\n' "$2" >"$1"
    chmod +x "$1"
}

echo "# a scan tree: a logged chatty service, a ready one, a failing one, the clients; then again" >&2
s=$work/scan
mkdir -p "$s/chatty/log" "$s/ready" "$s/fails" "$work/logs"
script "$s/chatty/run" 'exec 2>&1; i=0; while :; do i=$((i+1)); echo "line $i of a chatty service"; [ $((i % 50)) = 0 ] && sleep 0.2; done'
script "$s/chatty/finish" 'exit 0'
script "$s/chatty/log/run" "exec $bin/tend-log -b n3 s4096 t $work/logs/all '-*' '+*line 1*' $work/logs/ones"
script "$s/ready/run" 'echo >&3; exec sleep 1000'
echo 3 >"$s/ready/notification-fd"
script "$s/fails/run" 'sleep 0.3; exit 3'
"${vg[@]}" "$bin/tend-svscan" "$s" >/dev/null 2>&1 &
pids="$pids $!"
sleep 8
for d in chatty ready fails; do
    "${vg[@]}" "$bin/tend-svstat" "$s/$d" || true
    "${vg[@]}" "$bin/tend-svok" "$s/$d" || true
done
"${vg[@]}" "$bin/tend-svc" -d "$s/ready"
"${vg[@]}" "$bin/tend-svwait" -D -t 10000 "$s/ready" || true
"${vg[@]}" "$bin/tend-svc" -u "$s/ready"
"${vg[@]}" "$bin/tend-svwait" -U -t 10000 "$s/ready" || true
"${vg[@]}" "$bin/tend-svc" -wr -T 10000 "$s/chatty" || true
"${vg[@]}" "$bin/tend-svc" -h -a -k "$s/fails" || true
"${vg[@]}" "$bin/tend-summary" "$s" || true
"${vg[@]}" "$bin/tend-summary" -j "$s" || true
"${vg[@]}" "$bin/tend-svscanctl" -a "$s"
sleep 4
"${vg[@]}" "$bin/tend-svscanctl" -t "$s"
wait
# A scanner started again on the same directory finds its FIFOs and locks in place.
"${vg[@]}" "$bin/tend-svscan" "$s" >/dev/null 2>&1 &
pids="$pids $!"
sleep 4
"${vg[@]}" "$bin/tend-svscanctl" -t "$s"
wait

echo "# tend-init: stage 1, two services, a command, stage 3" >&2
i=$work/init
mkdir -p "$i/init.d" "$i/services/web/log" "$i/services/worker" "$i/finish.d"
script "$i/init.d/10-prepare" 'echo preparing'
script "$i/services/web/run" 'exec 2>&1; while :; do echo serving; sleep 0.1; done'
script "$i/services/web/log/run" "exec $bin/tend-log t $work/logs/web"
script "$i/services/worker/run" 'exec sleep 1000'
script "$i/finish.d/10-cleanup" 'echo cleaning up'
init_run() { # init_run COMMAND...: tend-init with $i's stages and services
    "${vg[@]}" "$bin/tend-init" -i "$i/init.d" -s "$i/services" -f "$i/finish.d" -e "$i/env" \
        -S "$i/scan" -g 1000 -k 500 -- "$@" >/dev/null 2>&1 || true
}
init_run /bin/sh -c 'sleep 4; exit 3'
# Again on what the first run left, as a restarted container finds its /run: the saved
# environment and the mirror exist (std's error paths: a 64 kB window of cold text).
init_run /bin/sh -c 'sleep 2'
"${vg[@]}" "$bin/tend-init" -i "$i/none" -s "$i/none" -f "$i/none" -e '' -S "$i/scan2" -- /bin/true >/dev/null 2>&1 || true

echo "# a VM guest's init in agent mode, as bench/guest.sh's agent guest and the guest tests run it" >&2
# PID 1 of its own PID, mount, UTS and network namespaces, chrooted into an empty root
# (the host's /usr bound in for valgrind and the shells) with its kernel command line
# bound over /proc/cmdline: it does a guest's mounts, lo, host name and /dev/ptmx, starts
# the agent (a script that dies by SIGKILL once, is restarted, then exits) and the vsock
# debug console, `tend-vsockserver -1 PORT tend-pty /bin/sh` (vsock binds on a host
# without a vsock transport; nothing connects), and powers off when the agent is done.
# Run as `init`, as a guest's /init is. valgrind has no reboot(2) (it says ENOSYS, and
# init waits forever, as a PID 1 must): callgrind dumps before each call, and the
# namespace ends with unshare once init has said so. (Outside valgrind, reboot(2) in a
# PID namespace ends the namespace, not the machine.) The limits are ones a process
# without CAP_SYS_RESOURCE may set, under valgrind's lowered RLIMIT_NOFILE.
g=$work/guest
r=$g/root
mkdir -p "$r" "$g/init.d" "$g/services/console" "$g/finish.d"
ln -f "$bin/tend" "$bin/init"
port=$((20000 + $$ % 20000))
script "$g/services/console/run" "exec $bin/tend-vsockserver -1 $port $bin/tend-pty /bin/sh"
echo 1 >"$g/services/console/notification-fd"
script "$g/init.d/10-modules" 'echo loading modules'
script "$g/agent" "if [ -e $g/agent.ran ]; then sleep 2; exit 0; fi; touch $g/agent.ran; sleep 3; kill -KILL \$\$"
printf '%s\n' "console=ttyS0 quiet tend.mode=guest tend.hostname=guest tend.main=$g/agent tend.main_restarts=1 tend.main_nofile=4096 tend.main_oom=100 tend.main_after=none tend.init_dir=$g/init.d tend.services_dir=$g/services tend.finish_dir=$g/finish.d tend.kill_gracetime=3000" >"$g/cmdline"
# shellcheck disable=SC2016
unshare --pid --fork --kill-child --mount --uts --net --propagation private /bin/sh -eu -c '
    r=$1 g=$2 work=$3 bin=$4
    shift 4
    mount -t tmpfs -o mode=0755 root "$r"
    mkdir -p "$r/usr" "$r/proc" "$r/sys" "$r/dev" "$r/run" "$r/tmp" "$r/etc" "$r$work" "$r$bin"
    for l in bin lib lib64 sbin; do ln -s "usr/$l" "$r/$l"; done
    mount --rbind /usr "$r/usr"
    mount --bind "$work" "$r$work"
    mount --bind "$bin" "$r$bin"
    mount -t proc proc "$r/proc"
    mount --bind "$g/cmdline" "$r/proc/cmdline"
    touch "$r/dev/null" && mount --bind /dev/null "$r/dev/null"
    echo guest >"$r/etc/hostname"
    exec chroot "$r" "$@" "$bin/init"
' sh "$r" "$g" "$work" "$bin" "${vg[@]}" --dump-before=reboot >"$g/console" 2>&1 &
guest=$!
for _ in $(seq 600); do
    grep -q 'unable to poweroff' "$g/console" && break
    kill -0 "$guest" 2>/dev/null || break
    sleep 0.5
done
grep -q 'restarting the command' "$g/console" || sed 's/^/guest: /' "$g/console" >&2
kill -KILL "$guest" 2>/dev/null || true
wait "$guest" 2>/dev/null || true

echo "# the console's per-connection path (tend-ipcserverd shares tend-vsockserver's loop) and tend-pty" >&2
"${vg[@]}" "$bin/tend-ipcserver" -1 "$work/console.sock" "$bin/tend-pty" /bin/sh >"$work/console.ready" 2>/dev/null &
pids="$pids $!"
for _ in $(seq 300); do [ -s "$work/console.ready" ] && break; sleep 0.1; done
python3 - "$work/console.sock" <<'PY' || true
import socket, sys, time
# A command and its exit; a foreground job that Ctrl-C (a byte through the pty) ends.
for parts in ([b"echo hello; exit 3\n"], [b"sleep 10\n", b"\x03", b"echo after; exit\n"]):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(sys.argv[1])
    c.settimeout(20)
    try:
        for p in parts:
            c.sendall(p)
            time.sleep(1)
        while c.recv(4096):
            pass
    except OSError:
        pass
    c.close()
PY
kill -TERM $! 2>/dev/null || true
printf 'echo direct\nexit 2\n' | "${vg[@]}" "$bin/tend-pty" /bin/sh >/dev/null 2>&1 || true
wait

echo "# tend-socklog and tend-ucspilogd" >&2
sock=$work/log.sock
"${vg[@]}" "$bin/tend-socklog" -x "$sock" >"$work/socklog.out" 2>&1 &
pids="$pids $!"
sleep 3
python3 - "$sock" <<'PY'
import socket, sys, time
c = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
for i in range(2000):
    for m in (b"<13>Nov 30 12:00:00 app[42]: message %d" % i, b"<165>1 2026-11-30T12:00:00Z host app 42 ID7 - structured %d" % i,
              b"no priority\n", b"<999>bad", b""):
        try:
            c.sendto(m, sys.argv[1])
        except OSError:
            time.sleep(0.01)
PY
sleep 2
# Its profile is written now: under valgrind, SIGTERM may end it before callgrind's exit hook.
callgrind_control -d "$!" >/dev/null 2>&1 || true
stop_socklog() { # SIGTERM, again if the first came while it was still reading the backlog
    for _ in 1 2 3; do
        kill -TERM "$1" 2>/dev/null || return 0
        sleep 3
    done
    kill -KILL "$1" 2>/dev/null || true
}
stop_socklog $!
printf '<13>one\0<14>two\n<999>three\0' | "${vg[@]}" "$bin/tend-ucspilogd" >/dev/null
wait

echo "# tend-check: an HTTP, a TCP and a command probe, then the liveness watcher" >&2
python3 -u -m http.server --bind 127.0.0.1 0 >"$work/http.out" 2>&1 &
http=$!
pids="$pids $http"
port=
for _ in $(seq 50); do
    port=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$work/http.out" | head -1)
    [ -n "$port" ] && break
    sleep 0.2
done
"${vg[@]}" "$bin/tend-check" -u "http://127.0.0.1:$port/" || true
"${vg[@]}" "$bin/tend-check" -p "127.0.0.1:$port" || true
"${vg[@]}" "$bin/tend-check" -c /bin/true || true
c=$work/checked
mkdir -p "$c/web"
script "$c/web/run" "exec sleep 1000"
"${vg[@]}" "$bin/tend-svscan" "$c" >/dev/null 2>&1 &
pids="$pids $!"
sleep 4
timeout 6 "${vg[@]}" "$bin/tend-check" -L -S "$c/web" -u "http://127.0.0.1:$port/" -i 100ms -f 2 -m 5 >/dev/null 2>&1 || true
"${vg[@]}" "$bin/tend-svscanctl" -t "$c"
kill "$http"
wait

echo "# the chain tools" >&2
mkdir -p "$work/env"
echo value >"$work/env/NAME"
"${vg[@]}" "$bin/tend-envdir" "$work/env" "$bin/tend-softlimit" -m 100000000 "$bin/tend-setsid" /bin/true
echo '@400000006b0d74b9212c6f74 line' | "${vg[@]}" "$bin/tend-tai64nlocal" >/dev/null
echo line | "${vg[@]}" "$bin/tend-tai64n" >/dev/null

echo "# laying out $(ls "$prof" | wc -l) profiles" >&2
nm -n --defined-only "$bin/tend" >"$work/symbols"
python3 - "$prof" "$work/symbols" "$out" <<'PY'
import bisect, collections, glob, os, re, sys
prof, symfile, out = sys.argv[1:4]
# Functions by address; identical functions share an address and keep every name.
starts, names = [], []
for line in open(symfile):
    f = line.split()
    if len(f) != 3 or f[1] not in "tTwW":
        continue
    a = int(f[0], 16)
    if starts and starts[-1] == a:
        names[-1].append(f[2])
    else:
        starts.append(a)
        names.append([f[2]])
used = collections.defaultdict(set)  # function index -> programs that ran it
for path in sorted(glob.glob(os.path.join(prof, "cg.*"))):
    program, obs, ob = None, {}, None
    for line in open(path, errors="replace"):
        if line.startswith("cmd:"):
            program = os.path.basename(line.split()[1])
        m = re.match(r"(c?ob)=(?:\((\d+)\))?\s*(.*)", line)
        if m:
            kind, ident, name = m.groups()
            if name:
                obs[ident] = name
            if kind == "ob":
                ob = obs.get(ident, name)
            continue
        # The executable under its names: tend-PROG, and init (a guest's /init).
        if ob and os.path.basename(ob).startswith(("tend", "init")) and line.startswith("0x"):
            a = int(line.split()[0], 16)
            i = bisect.bisect_right(starts, a) - 1
            if i >= 0:
                used[i].add(program)
# What callgrind cannot see runs wherever its caller does: valgrind gives a process no
# vDSO, so musl's __vdsosym returns before it compares names (natively every long-lived
# program's first clock_gettime runs strcmp: it cost each one a 56 kB window of cold
# text); and a profile ends in exit_group's block, so _Exit's code is never counted.
at = {n: i for i, ns in enumerate(names) for n in ns}
for caller, callee in [("__vdsosym", "strcmp"), ("exit", "_Exit")]:
    if caller in at and callee in at and at[caller] in used:
        used[at[callee]] |= used[at[caller]]
groups = ["tend-supervise", "tend-svscan", "tend-log", "tend-init", "init",
          "tend-vsockserver", "tend-ipcserver", "tend-pty", "tend-socklog",
          "tend-ucspilogd", "tend-check"]
order, done = [], set()
for g in groups + [None]:
    part = [i for i in used if i not in done and (g is None or g in used[i])]
    part.sort(key=lambda i: (-len(used[i]), starts[i]))
    order += part
    done.update(part)
with open(out, "w") as f:
    f.write("\n".join(n for i in order for n in names[i]) + "\n")
programs = sorted({p for s in used.values() for p in s})
print(f"hot-code.sh: {len(order)} functions run by {len(programs)} programs: {' '.join(programs)}", file=sys.stderr)
PY
# The names as tend-cc matches them (hot-code.awk), each once.
awk -v keys=1 -f "$root/packaging/hot-code.awk" "$out" >"$work/keys"
mv "$work/keys" "$out"
echo "hot-code.sh: wrote $out" >&2
