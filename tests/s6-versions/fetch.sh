#!/bin/sh
# Unpack s6 as Debian builds it for trixie (2.13.1.0) and sid (2.15.1.0) into
# $S6_VERSIONS_DIR (default /opt/s6-versions)/<version>/, beside the host's own s6, so
# tests/it/versions.rs can run each version's binaries with its own libraries
# (LD_LIBRARY_PATH=<dir>/usr/lib/x86_64-linux-gnu). Only Debian's archive is used, through
# apt with a private sources list and private state, so the host's apt is left alone.
# Nothing is built. Does nothing for a version already unpacked.
set -eu
dest=${S6_VERSIONS_DIR:-/opt/s6-versions}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

fetch() { # version suite
    version=$1 suite=$2
    [ -x "$dest/$version/usr/bin/s6-supervise" ] && return 0
    work=$(mktemp -d)
    mkdir -p "$work/lists/partial" "$work/archives/partial" "$work/debs"
    echo "deb [signed-by=$keyring] $mirror $suite main" >"$work/sources.list"
    set -- -o Dir::Etc::sourcelist="$work/sources.list" -o Dir::Etc::sourceparts=- \
        -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work" \
        -o Dir::State::status=/dev/null -o APT::Get::List-Cleanup=0
    apt-get "$@" -qq update
    # s6 and the libraries its binaries link: skalibs, execline's and s6's own.
    (cd "$work/debs" && apt-get "$@" -qq download s6)
    libs=$(apt-cache "$@" depends s6 | sed -n 's/^ *Depends: \(lib\(skarnet\|execline\|s6\)[^ ]*\).*/\1/p' | sort -u)
    (cd "$work/debs" && apt-get "$@" -qq download $libs)
    mkdir -p "$dest/$version.tmp"
    for deb in "$work/debs"/*.deb; do dpkg -x "$deb" "$dest/$version.tmp"; done
    rm -rf "$dest/$version" "$work"
    mv "$dest/$version.tmp" "$dest/$version"
}

fetch 2.13.1 trixie
fetch 2.15.1 sid
