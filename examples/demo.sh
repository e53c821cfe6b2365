#!/bin/sh
# Run the example scan directory in the foreground: a copy of examples/scandir in a
# temporary directory, under the freshly built tend-svscan. Ctrl-C (SIGINT) brings the
# tree down cleanly: the service stops, its logger drains the pipe and exits.
#   cargo build --release && examples/demo.sh
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${TEND_BIN:-$here/target/x86_64-unknown-linux-musl/release}
[ -x "$bin/tend" ] || bin=$here/target/x86_64-unknown-linux-musl/debug
# The programs are hard links to the multi-call executable (packaging/links.sh).
[ -n "${TEND_BIN:-}" ] || "$here/packaging/links.sh" "$bin"
scan=$(mktemp -d "${TMPDIR:-/tmp}/tend-demo.XXXXXX")
cp -R "$here/examples/scandir/." "$scan/"
echo "scan directory: $scan"
echo "  log:     tail -f $scan/tick/log/main/current"
echo "  status:  $bin/tend-svstat $scan/tick   (or s6-svstat)"
echo "  stop:    Ctrl-C, or $bin/tend-svscanctl -t $scan"
PATH=$bin:$PATH exec "$bin/tend-svscan" "$scan"
