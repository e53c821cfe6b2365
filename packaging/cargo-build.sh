#!/bin/sh
# packaging/cargo-build.sh — build tend's release executables as they ship, and print the
# directory that holds them.
#
# Usage: packaging/cargo-build.sh [ CARGO-BUILD-ARGUMENT ... ]   (--bin tend-tree,
#        --features separate, ...; --release is given)
#   TEND_STD=rebuilt   rebuild std for these executables; fails without std's source
#   TEND_STD=shipped   link std as the toolchain ships it: plain `cargo build --release`
#   TEND_STD unset     rebuilt where the toolchain has std's source (the rust-src
#                      component), else shipped, with a one-line warning
#
# Why rebuild std. The std a toolchain ships is built with its `backtrace` feature, so
# every Rust executable links the DWARF symbolizer std's default panic hook uses to print
# a backtrace (gimli, addr2line, miniz_oxide: ~207 KiB of text, with their tables and
# strings), although tend builds with panic = "abort" and strips its symbols: there is
# nothing to symbolize, and the code never runs. Rebuilt without that feature (and with
# panic_abort), std still prints a panic's message and location before it aborts, and
# each executable is ~0.3 MB smaller: tend-tree, what a running tree maps, 665 -> 375 kB
# (bench/RESULTS.md, "Disk: std rebuilt without its symbolizer"). Cargo's -Zbuild-std is
# unstable: a stable toolchain accepts it with RUSTC_BOOTSTRAP=1, as the Linux kernel's
# Rust build does. This build goes to TARGET/std-rebuilt, so that it and a plain
# `cargo build --release` do not keep rebuilding each other's std.
#
# Install what it built: TEND_BUILD=$(packaging/cargo-build.sh) packaging/install.sh ...
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
mode=${TEND_STD:-auto}
std_src=$(rustc --print sysroot 2>/dev/null || :)/lib/rustlib/src/rust/library/std/Cargo.toml
case $mode in
auto)
    if [ -f "$std_src" ]; then
        mode=rebuilt
    else
        echo "cargo-build.sh: warning: linking std as shipped (~0.3 MB more per executable): the toolchain has no std source (rustup component add rust-src)" >&2
        mode=shipped
    fi ;;
rebuilt)
    [ -f "$std_src" ] || {
        echo "cargo-build.sh: fatal: TEND_STD=rebuilt needs std's source: rustup component add rust-src" >&2
        exit 111
    } ;;
shipped) ;;
*)
    echo "cargo-build.sh: fatal: TEND_STD is rebuilt or shipped, not $mode" >&2
    exit 100 ;;
esac
if [ "$mode" = rebuilt ]; then
    export RUSTC_BOOTSTRAP=1
    CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}/std-rebuilt
    export CARGO_TARGET_DIR
    # RUSTC_BOOTSTRAP also gives nightly's defaults, v0 symbol names among them; the
    # hot-code list (packaging/tend-cc) names functions by their legacy names, and
    # matched nothing of Rust's in such a build. Added to .cargo/config.toml's flags for
    # the target (cargo joins the lists).
    target=${CARGO_BUILD_TARGET:-x86_64-unknown-linux-musl}
    set -- -Zbuild-std=std,panic_abort -Zbuild-std-features= \
        --config "target.$target.rustflags=[\"-Zunstable-options\", \"-Csymbol-mangling-version=legacy\"]" "$@"
fi
# Where cargo put the executables, from its own report (CARGO_TARGET_DIR, which Debian's
# dh-cargo and many CI setups set, a build.target-dir or a --target move them).
exe=$(cd "$root" && cargo build --release --quiet --message-format=json-render-diagnostics "$@" |
    sed -n 's/.*"target":{"kind":\["bin"\].*"executable":"\([^"]*\)".*/\1/p' |
    tail -n 1)
[ -n "$exe" ] || { echo "cargo-build.sh: fatal: cargo reported no executable" >&2; exit 111; }
dirname "$exe"
