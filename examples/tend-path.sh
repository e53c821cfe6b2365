# Sourced by the examples, then `tend_path || exit 111`; by hand, from the checkout's top:
# `. examples/tend-path.sh && tend_path`. tend_path puts tend's programs first on PATH,
# taking the first of: $TEND_BIN (a directory holding tend), a tend already on PATH
# (tend-svscan found), the checkout's release build, its debug build. A build gets its
# per-program links (packaging/links.sh) when it has none or they are older than it.
# Without any, it says in one line what to do and returns 1. The checkout's top is
# $tend_root (default: the current directory).
tend_path() {
  tend_bin=
  if [ -z "${TEND_BIN:-}" ] && tend_try=$(command -v tend-svscan); then
    tend_bin=${tend_try%/*}
  fi
  for tend_try in ${TEND_BIN:+"$TEND_BIN"} \
      "${tend_root:-.}/target/x86_64-unknown-linux-musl/release" \
      "${tend_root:-.}/target/x86_64-unknown-linux-musl/debug"; do
    [ -z "$tend_bin" ] && [ -x "$tend_try/tend" ] || continue
    if [ ! -e "$tend_try/tend-svscan" ] || [ "$tend_try/tend" -nt "$tend_try/tend-rc" ] ||
        [ "$tend_try/tend-tree" -nt "$tend_try/tend-svscan" ]; then
      "${tend_root:-.}/packaging/links.sh" "$tend_try" || continue
    fi
    tend_bin=$(cd "$tend_try" && pwd)
  done
  if [ -z "$tend_bin" ]; then
    echo "${0##*/}: tend is not built: run 'cargo build --release' at the top of the checkout, or set TEND_BIN to the directory that holds tend" >&2
    return 1
  fi
  PATH=$tend_bin:$PATH
  export PATH
}
