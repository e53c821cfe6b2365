#!/bin/sh
# packaging/build.sh — build tend's Debian package and its release tarball from a checkout.
#
# Usage: packaging/build.sh [ OUTDIR ]        (default: target/packages)
#   TEND_BUILD=DIR  package the executables in DIR instead of building them with
#                   packaging/cargo-build.sh (the tests package their own build this way)
#   TEND_STD=...    how cargo-build.sh links std (rebuilt without its backtrace
#                   symbolizer where the toolchain has std's source, or shipped)
#
# Makes, in OUTDIR:
#   tend_VERSION_amd64.deb                 dpkg-deb from a staged tree: /usr/bin/tend and
#                                          /usr/bin/tend-tree, one hard link per program to
#                                          one of them (install.sh), the standalone
#                                          executables, gzipped man pages, README,
#                                          examples, copyright and changelog in
#                                          /usr/share/doc/tend; no dependencies (static)
#   tend-runit_VERSION_amd64.deb           runit's names (chpst, sv, runsvdir, runsv) in
#                                          /usr/bin, linked to tend and tend-tree
#                                          (install.sh -r);
#                                          Depends: tend (= VERSION), Conflicts/Replaces:
#                                          runit. Not alternatives: runit's package ships
#                                          those paths as plain files, not through
#                                          update-alternatives, so the two cannot share
#                                          them; a system takes one or the other (a BOSH
#                                          stemcell from Resolute on has no runit).
#   tend-VERSION-x86_64-linux.tar.xz       usr/bin and usr/share/man/man8, to extract over /
#   tend-VERSION-x86_64-linux.tar.xz.sha256
# VERSION is the workspace's (Cargo.toml). Needs dpkg-deb, gzip, xz, sha256sum.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/target/packages}
mkdir -p "$out"
out=$(cd "$out" && pwd)
version=$(sed -n '/^\[workspace.package\]/,/^\[/ s/^version = "\(.*\)"/\1/p' "$root/Cargo.toml")
[ -n "$version" ] || { echo "build.sh: fatal: no version in Cargo.toml" >&2; exit 111; }
if [ -z "${TEND_BUILD:-}" ]; then
    # std rebuilt without its backtrace symbolizer where the toolchain has std's source
    # (TEND_STD; cargo-build.sh says why).
    TEND_BUILD=$("$root/packaging/cargo-build.sh")
fi
export TEND_BUILD
stage=$(mktemp -d "${TMPDIR:-/tmp}/tend-package.XXXXXX")
trap 'rm -rf "$stage"' EXIT INT TERM
umask 022

# --- the Debian package
deb=$stage/deb
"$root/packaging/install.sh" -z "$deb" /usr >/dev/null
doc=$deb/usr/share/doc/tend
mkdir -p "$doc/examples"
install -m 644 "$root/README.md" "$doc/README.md"
cp -R "$root/examples/." "$doc/examples/"
chmod -R u=rwX,go=rX "$doc/examples"
install -m 644 "$root/packaging/copyright" "$doc/copyright"
date=$(git -C "$root" log -1 --format=%cD 2>/dev/null || date -R)
printf 'tend (%s) unstable; urgency=medium\n\n  * Release %s, built from %s.\n\n -- tend maintainers <tend@tend.invalid>  %s\n' \
    "$version" "$version" "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo a checkout)" "$date" |
    gzip -9n >"$doc/changelog.gz"
chmod 644 "$doc/changelog.gz"
mkdir -p "$deb/usr/share/lintian/overrides"
install -m 644 "$root/packaging/lintian-overrides" "$deb/usr/share/lintian/overrides/tend"
mkdir -p "$deb/DEBIAN"
size=$(du -sk --apparent-size "$deb/usr" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@SIZE@/$size/" "$root/packaging/control" >"$deb/DEBIAN/control"
(cd "$deb" && find usr -type f -exec md5sum {} + | sort -k2) >"$deb/DEBIAN/md5sums"
chmod 644 "$deb/DEBIAN/control" "$deb/DEBIAN/md5sums"
dpkg-deb --root-owner-group -Zxz --build "$deb" "$out/tend_${version}_amd64.deb" >/dev/null
echo "$out/tend_${version}_amd64.deb"

# --- runit's names: the links install.sh -r adds beside tend's own
rdeb=$stage/runit
"$root/packaging/install.sh" -r "$stage/runit-all" /usr | sed -n 's,.*/usr/bin/\(chpst\|sv\|runsvdir\|runsv\)$,\1,p' >"$stage/runit-names"
mkdir -p "$rdeb/usr/bin" "$rdeb/usr/share/doc/tend-runit" "$rdeb/DEBIAN"
while read -r n; do
    cp -P "$stage/runit-all/usr/bin/$n" "$rdeb/usr/bin/$n"
done <"$stage/runit-names"
rm -rf "$stage/runit-all"
install -m 644 "$root/packaging/copyright" "$rdeb/usr/share/doc/tend-runit/copyright"
install -m 644 "$doc/changelog.gz" "$rdeb/usr/share/doc/tend-runit/changelog.gz"
size=$(du -sk --apparent-size "$rdeb/usr" | cut -f1)
sed -e "s/@VERSION@/$version/g" -e "s/@SIZE@/$size/" "$root/packaging/control-runit" >"$rdeb/DEBIAN/control"
(cd "$rdeb" && find usr -type f -exec md5sum {} + | sort -k2) >"$rdeb/DEBIAN/md5sums"
chmod 644 "$rdeb/DEBIAN/control" "$rdeb/DEBIAN/md5sums"
dpkg-deb --root-owner-group -Zxz --build "$rdeb" "$out/tend-runit_${version}_amd64.deb" >/dev/null
echo "$out/tend-runit_${version}_amd64.deb"

# --- the release tarball: extracted over / (ADD in a Dockerfile)
tar=$stage/tar
"$root/packaging/install.sh" -z "$tar" /usr >/dev/null
name=tend-$version-x86_64-linux.tar.xz
(cd "$tar" && tar --owner=0 --group=0 --numeric-owner --sort=name --mtime=@0 -cJf "$out/$name" usr)
(cd "$out" && sha256sum "$name" >"$name.sha256")
echo "$out/$name"
echo "$out/$name.sha256"
