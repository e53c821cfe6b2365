#!/usr/bin/env bash
# spawn-syscalls.sh — system calls per start of ./run: tend-supervise vs s6-supervise (and,
# with TEND_OLD=/path/to/an/older/tend-supervise, tend before a change), in the same run.
#
# Usage: bench/spawn-syscalls.sh [SECONDS]      (default 5.5: about 5 starts per kind)
#   TEND_BIN=/path/to/tend-supervise measures that binary instead of a release build.
#   TEND_OLD=/path/to/tend-supervise also measures an older build (e.g. one built from the
#   commit before a change) to show what the change costs on the success path.
#
# Each supervisor runs under `strace -f -c` on its own service directory whose ./run is a
# copy of /bin/true: it exits at once, so both supervisors restart it once a second. The
# count includes the children (fork to exec, and true itself, the same for every kind).
# Reported: total system calls, starts (successful execve calls but the supervisor's own:
# s6 also tries a missing ./finish after each death), and calls per start, which is what
# the success path of a spawn costs (start-up is included once in each total). Counts, not
# times: load does not change them.
set -euo pipefail

SECS=${1:-5.5}
cd "$(dirname "$0")/.."
root=$(pwd)
. bench/lib.sh
for t in strace s6-supervise; do
    command -v "$t" >/dev/null || { echo "spawn-syscalls: missing $t" >&2; exit 111; }
done
if [ -n "${TEND_BIN:-}" ]; then
    TEND=$TEND_BIN
else
    tend_release
    TEND=$B/tend-supervise
fi

scratch=$(mktemp -d /tmp/spawn-syscalls.XXXXXX)
trap 'rm -rf "$scratch"' EXIT

measure() { # name binary
    local name=$1 bin=$2 dir=$scratch/$1
    mkdir -p "$dir/svc"
    cp /bin/true "$dir/svc/run"
    timeout -s TERM "$SECS" strace -f -c -o "$dir/count" "$bin" "$dir/svc" 2>/dev/null || true
    awk -v name="$name" '
        $NF == "total" { total = $4 }
        $NF == "execve" { starts = $4 - (NF == 6 ? $5 : 0) - 1 }
        END { printf "| %s | %d | %d | %.0f |\n", name, total, starts, (starts > 0 ? total / starts : 0) }
    ' "$dir/count"
}

echo "| supervisor | system calls | starts | calls per start |"
echo "|---|---:|---:|---:|"
measure s6-supervise "$(command -v s6-supervise)"
measure tend-supervise "$TEND"
if [ -n "${TEND_OLD:-}" ]; then
    measure tend-supervise-old "$TEND_OLD"
fi
