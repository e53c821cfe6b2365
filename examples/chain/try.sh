#!/bin/sh
# try.sh: run this service directory under tend-supervise, from a copy in a temporary
# directory (a supervisor writes supervise/ and event/ into its service directory; the
# checkout stays clean). Needs root (tend-cgroup, tend-setuidgid), python3 and cgroup v2.
# Stop: Ctrl-C, or `tend-svc -dx DIR` from another shell; the copy is removed either way.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tend_root=$here/../..
. "$here/../tend-path.sh"
tend_path || exit 111
work=$(mktemp -d "${TMPDIR:-/tmp}/tend-chain.XXXXXX")
dir=$work/chain
cp -R "$here" "$dir"
rm -f "$dir/try.sh" "$dir/README.md"
echo "try.sh: service directory $dir; ready: tend-svwait -U $dir; stop: Ctrl-C or tend-svc -dx $dir"
tend-supervise "$dir" &
sup=$!
stop() {
  trap '' INT TERM
  tend-svc -dx "$dir" 2>/dev/null || kill "$sup" 2>/dev/null || :
  wait "$sup" || :
  rm -rf "$work"
  echo "try.sh: stopped; $work removed"
  exit 0
}
trap stop INT TERM
wait "$sup" || :
rm -rf "$work"
