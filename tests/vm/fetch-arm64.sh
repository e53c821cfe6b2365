#!/bin/sh
# Unpack Debian's arm64 kernel (linux-image-*-arm64) and busybox-static:arm64 into
# $TEND_VM_ARM64_DIR (default /opt/tend-vm-arm64) for tests/it/jail.rs's aarch64 guest
# (tests/vm/jail.sh). Only Debian's archive is used, through apt with a private sources
# list, private state and APT::Architecture=arm64, so the host's apt and its architectures
# are left alone. Nothing is built. Does nothing when both files are already there.
set -eu
dest=${TEND_VM_ARM64_DIR:-/opt/tend-vm-arm64}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
suite=${TEND_VM_ARM64_SUITE:-bookworm}
if [ -x "$dest/bin/busybox" ] && ls "$dest"/boot/vmlinuz-* >/dev/null 2>&1; then
    exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/archives/partial" "$work/debs"
echo "deb [arch=arm64 signed-by=$keyring] $mirror $suite main" >"$work/sources.list"
set -- -o APT::Architecture=arm64 -o APT::Architectures=arm64 \
    -o Dir::Etc::sourcelist="$work/sources.list" -o Dir::Etc::sourceparts=- \
    -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work" \
    -o Dir::State::status=/dev/null -o APT::Get::List-Cleanup=0
apt-get "$@" -qq update
# linux-image-arm64 only names the versioned package that holds the kernel.
kernel=$(apt-cache "$@" depends linux-image-arm64 |
    sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-arm64\)\( .*\)\{0,1\}$/\1/p' | head -n 1)
[ -n "$kernel" ] || { echo "fetch-arm64.sh: fatal: no kernel package named by linux-image-arm64" >&2; exit 111; }
(cd "$work/debs" && apt-get "$@" -qq download "$kernel" busybox-static)
rm -rf "$dest.tmp"
mkdir -p "$dest.tmp"
for deb in "$work/debs"/*.deb; do dpkg -x "$deb" "$dest.tmp"; done
rm -rf "$dest"
mv "$dest.tmp" "$dest"
