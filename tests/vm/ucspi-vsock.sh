#!/bin/sh
# tests/vm/ucspi-vsock.sh: run INSIDE a qemu guest (tests/it/vsock.rs, slow_vm_*) whose
# init has loaded vsock_loopback, so CID 1 is the guest itself. Checks tend-vsockserver
# over real vsock with busybox and tend-vsockclient, and reports "@ key: value" lines on
# the console for the host to assert. The host's own kernel has no loopback transport.
say() { echo "@ $*" > /dev/console; }
mkdir -p /run/u/served /run/u/go
cd /run/u || exit 111

# serve NAME ARGS...: tend-vsockserver -1 ARGS in the background, $srv its pid, returning
# once it is bound (its readiness line read from a fifo).
serve() {
    mkfifo "ready.$1"
    n=$1
    shift
    tend-vsockserver -1 "$@" > "ready.$n" 2> "err.$n" &
    srv=$!
    read -r _ < "ready.$n"
}
# The server's children now, from /proc.
kids() { grep -lx "PPid:.$srv" /proc/[0-9]*/status 2>/dev/null | wc -l; }
# until_ WHAT CONDITION: poll CONDITION (a shell command) for at most 120 s.
until_() {
    i=0
    until eval "$2"; do
        i=$((i + 1))
        [ $i -lt 1200 ] || { say "timeout: $1"; exit 1; }
        sleep 0.1
    done
}

# 1. The variables, seen by the server's child and by the client's program.
serve env 5001 sh -c 'echo "$PROTO $VSOCKREMOTECID $VSOCKLOCALPORT $VSOCKREMOTEPORT"'
say "server env: $(tend-vsockclient 1 5001 sh -c 'cat <&6')"
say "server env again: $(tend-vsockclient 1 5001 sh -c 'cat <&6')"
say "client env: $(tend-vsockclient 1 5001 sh -c 'cat <&6 >/dev/null; echo "$PROTO $VSOCKREMOTECID $VSOCKREMOTEPORT"')"
kill $srv

# 2. -c 3 under a flood of 20 clients, one of them idle (connected, never sending nor
# reading): it holds one slot and blocks no one; two are served at once, the rest wait
# in the backlog and are each served when a slot frees. A served client says so in
# served/, then holds its connection until its fifo in go/ is written.
serve flood -c 3 5002 sh -c 'echo hi; exec cat >/dev/null'
tend-vsockclient 1 5002 sleep 100000 &
idle=$!
until_ "the idle client's child" '[ "$(kids)" = 1 ]'
pids=
for i in $(seq 20); do
    tend-vsockclient 1 5002 sh -c 'read -r l <&6 && mkfifo go/$$ && touch served/$$ && read -r x < go/$$' &
    pids="$pids $!"
done
served() { ls served | wc -l; }
max=0
sample() {
    k=$(kids)
    [ "$k" -le "$max" ] || max=$k
}
until_ "two served" '[ "$(served)" -ge 2 ]'
# Two, and no more for a while: the limit holds while 18 wait.
i=0
while [ $i -lt 20 ]; do
    sample
    [ "$(served)" = 2 ] || break
    i=$((i + 1))
    sleep 0.1
done
say "flood served beside the idle client: $(served)"
say "flood children then: $(kids)"
kill $idle
until_ "a third served once the idle client left" '[ "$(served)" -ge 3 ]'
sample
want=3
for p in $(seq 17); do
    # Release a served client still holding on: exactly one waiting is served.
    r=$(ls served | while read -r s; do [ -e "done.$s" ] || { echo "$s"; break; }; done)
    touch "done.$r"
    echo > "go/$r"
    want=$((want + 1))
    until_ "client $want served" '[ "$(served)" -ge $want ]'
    sample
done
say "flood served in all: $(served)"
for r in $(ls served); do [ -e "done.$r" ] || echo > "go/$r"; done
ok=0
for p in $pids; do wait "$p" && ok=$((ok + 1)); done
say "flood clients done: $ok"
until_ "the flood's children gone" '[ "$(kids)" = 0 ]'
say "flood most children at once: $max"
kill $srv

# 3. $1 connections (10,000), one after another; then the server holds the descriptors
# it started with.
serve leak -c 100 5003 true
fds() { ls "/proc/$srv/fd" | wc -l; }
# The start count once the server is steady: after one connection served and reaped
# (just after its readiness line it may still hold one descriptor more).
tend-vsockclient 1 5003 true
until_ "the first child gone" '[ "$(kids)" = 0 ]'
before=$(fds)
failed=0
i=0
while [ $i -lt "$1" ]; do
    tend-vsockclient 1 5003 true || failed=$((failed + 1))
    i=$((i + 1))
    # Progress for the host, which bounds each quiet stretch rather than the whole run
    # (emulated on a loaded machine, the whole loop took over 15 minutes).
    [ $((i % 200)) != 0 ] || say "leak progress: $i"
done
until_ "the leak check's children gone" '[ "$(kids)" = 0 ]'
say "leak connections failed: $failed"
say "leak fds: $before then $(fds)"
say "leak server alive: $(kill -0 $srv && echo yes)"
kill $srv
say "end: yes"
