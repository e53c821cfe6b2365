# bench/lib.sh — sourced by every bench script: the build as it ships (the one place a
# bench script builds), and the teardown of what a script started.

# Build the release multi-call executables (cargo build --release, plus the cargo arguments
# given, e.g. --bin tend or --features tend-scan/forked with CARGO_TARGET_DIR set), make
# its links (packaging/links.sh: a rebuild leaves old links on the old inode) and set B to
# their directory. TEND_ROOT is the checkout (default: the current directory). With
# TEND_BIN naming a directory of built programs, nothing is built and B is that directory.
# Usage: tend_release [CARGO-ARG...]
tend_release() {
    local root=${TEND_ROOT:-$PWD}
    if [ -n "${TEND_BIN:-}" ] && [ -d "$TEND_BIN" ]; then
        B=$TEND_BIN
        return
    fi
    # `--bin tend` builds tend-tree too: links.sh points the tree's programs at it, and a
    # stale one from an earlier build would otherwise be linked.
    # (POSIX sh: some scripts sourcing this are /bin/sh.)
    local prev= a tree=
    for a in "$@"; do
        if [ "$prev" = --bin ] && [ "$a" = tend ]; then tree=1; fi
        prev=$a
    done
    if [ -n "$tree" ]; then set -- "$@" --bin tend-tree; fi
    echo "# building tend (cargo build --release $*)" >&2
    cargo build --release --quiet --manifest-path "$root/Cargo.toml" "$@" >&2
    B=${CARGO_TARGET_DIR:-$root/target}/x86_64-unknown-linux-musl/release
    "$root/packaging/links.sh" "$B"
}

# SIGTERM the pids given, then SIGKILL them, then every process whose working directory
# lies under DIR (the services of a tree run in sessions of their own), then remove DIR.
# Usage: teardown DIR GRACE PID...
teardown() {
    local dir=$1 grace=$2 p
    shift 2
    for p in "$@"; do kill -TERM "$p" 2>/dev/null || true; done
    sleep "$grace"
    for p in "$@"; do kill -KILL "$p" 2>/dev/null || true; done
    for p in /proc/[0-9]*; do
        case "$(readlink "$p/cwd" 2>/dev/null)" in "$dir"*) kill -KILL "${p#/proc/}" 2>/dev/null || true ;; esac
    done
    rm -rf "$dir"
}

# Start-up of a tend program against s6's on the same arguments: hyperfine -N, 1000 runs
# each, one Markdown row (name, means ± stddev, tend/s6) appended to FILE.
# Usage: startup_row FILE NAME TEND-COMMAND S6-COMMAND
startup_row() {
    local table=$1 name=$2 json
    json=$(mktemp)
    hyperfine -N --warmup 50 --runs 1000 --export-json "$json" "$3" "$4" >/dev/null
    python3 - "$json" "$name" >>"$table" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
t, s = r[0]["mean"] * 1e3, r[1]["mean"] * 1e3
print(f"| {sys.argv[2]} | {t:.3f} ± {r[0]['stddev']*1e3:.3f} | {s:.3f} ± {r[1]['stddev']*1e3:.3f} | {t/s:.2f} |")
PY
    rm -f "$json"
}

# The cost of exec'ing /bin/true alone, the floor under every chain-loader's figure.
baseline_true() {
    hyperfine -N --warmup 50 --runs 1000 /bin/true 2>/dev/null |
        sed -n 's/^ *Time (mean ± σ): *\(.*\)/baseline \/bin\/true alone: \1/p'
}
