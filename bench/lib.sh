# bench/lib.sh — sourced by bench scripts (after `cd` to the checkout's root): the build as
# it ships, and the teardown of what a script started.

# Build the release multi-call executable, make its links (packaging/links.sh: a rebuild
# leaves old links on the old inode) and set B to their directory.
tend_release() {
    echo "# building tend (cargo build --release)" >&2
    cargo build --release >&2
    B=${CARGO_TARGET_DIR:-$PWD/target}/x86_64-unknown-linux-musl/release
    packaging/links.sh "$B"
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
