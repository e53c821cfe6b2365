# bench/reap-setup.bash — sourced (after bench/lib.sh) by bench/reap.sh and
# bench/reap-lag.sh. Bash only (an associative array): bench/lib.sh stays POSIX, as
# the /bin/sh benches (init.sh, guest.sh, guest-systemd.sh) source it.

# reap_setup EXTRA_TOOLS: what bench/reap.sh and bench/reap-lag.sh both start from: the
# inits compared (tend-init, dumb-init, tini-static, catatonit, and TEND_BEFORE's
# tend-init as tend-before), bench/reap.c built into $work/reap. Sets cmd (init -> its
# command line) and kinds (the order of the rows). $work must exist.
reap_setup() {
    for p in dumb-init tini-static catatonit gcc unshare "$@"; do
        command -v "$p" >/dev/null || { echo "missing $p: apt-get install dumb-init tini catatonit gcc linux-perf" >&2; exit 100; }
    done
    gcc -O2 -o "$work/reap" "$TEND_ROOT/bench/reap.c"
    declare -gA cmd=([tend-init]="$B/tend-init --" [dumb-init]="dumb-init" [tini-static]="tini-static --" [catatonit]="catatonit --")
    kinds="tend-init dumb-init tini-static catatonit"
    if [ -n "${TEND_BEFORE:-}" ]; then
        cmd[tend-before]="$TEND_BEFORE/tend-init --"
        kinds="tend-init tend-before dumb-init tini-static catatonit"
    fi
}
