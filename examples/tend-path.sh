# Sourced by the examples, and by hand from the checkout's top (`. examples/tend-path.sh`):
# puts tend's programs first on PATH. It takes the first of: $TEND_BIN (a directory
# holding tend), a tend already on PATH (tend-svscan found), the checkout's release
# build, its debug build. A build gets its per-program links (packaging/links.sh) when it
# has none or they are older than it. Without any, it says in one line what to do and
# returns 1: the caller exits. The caller may set tend_root to the checkout's top.
tend_root=${tend_root:-.}
tend_bin=
if [ -z "${TEND_BIN:-}" ] && tend_try=$(command -v tend-svscan); then
  tend_bin=${tend_try%/*}
fi
for tend_try in ${TEND_BIN:+"$TEND_BIN"} \
    "$tend_root/target/x86_64-unknown-linux-musl/release" \
    "$tend_root/target/x86_64-unknown-linux-musl/debug"; do
  [ -z "$tend_bin" ] && [ -x "$tend_try/tend" ] || continue
  if [ ! -e "$tend_try/tend-svscan" ] || [ "$tend_try/tend" -nt "$tend_try/tend-svscan" ]; then
    "$tend_root/packaging/links.sh" "$tend_try" || continue
  fi
  tend_bin=$(cd "$tend_try" && pwd)
done
if [ -z "$tend_bin" ]; then
  echo "${0##*/}: tend is not built: run 'cargo build --release' at the top of the checkout, or set TEND_BIN to the directory that holds tend" >&2
  return 1
fi
PATH=$tend_bin:$PATH
export PATH
