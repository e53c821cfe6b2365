#!/bin/sh
# Run the example scan directory (a ticking service and its logger) and watch it: the
# live log of the service (its logdir's `current`, timestamps rendered) and one status
# line every few seconds. Ctrl-C (SIGINT) brings the tree down cleanly: the service
# stops, its logger drains the pipe and exits, the scanner exits; the logs are kept.
#   cargo build --release && examples/demo.sh
# Everything it writes is in a temporary directory, named at the start; remove it when done.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
tend_root=$here
. "$here/examples/tend-path.sh"
tend_path || exit 111
every=${TEND_DEMO_EVERY:-3}

work=$(mktemp -d "${TMPDIR:-/tmp}/tend-demo.XXXXXX")
scan=$work/scan
mkdir "$scan"
cp -R "$here/examples/scandir/." "$scan/"
current=$scan/tick/log/main/current
echo "scan directory: $scan (stop: Ctrl-C)"

# The scanner runs in a session of its own, so Ctrl-C reaches only this script, which
# then stops the tree in order (tend-svscanctl -t: services first, loggers once drained).
tend-setsid tend-svscan "$scan" &
svscan=$!

# The live log: tail follows `current` (also across rotations) into a FIFO that
# tend-tai64nlocal renders; killing tail ends both.
mkfifo "$work/view"
tend-tai64nlocal <"$work/view" &
render=$!
tail -n +1 -F "$current" 2>/dev/null >"$work/view" &
follow=$!

pause=
stop() {
  trap '' INT TERM
  [ -z "$pause" ] || kill "$pause" 2>/dev/null || :
  echo "stopping..."
  tend-svscanctl -t "$scan" 2>/dev/null || kill -TERM "$svscan" 2>/dev/null || :
  wait "$svscan" || :
  kill "$follow" 2>/dev/null || :
  wait "$follow" "$render" 2>/dev/null || :
  echo "stopped; logs kept in $scan/tick/log/main (clean up: rm -rf $work)"
  exit 0
}
trap stop INT TERM

while :; do
  # `wait` returns as soon as a trapped signal arrives; a foreground sleep would not.
  sleep "$every" &
  pause=$!
  wait "$pause" || :
  pause=
  if status=$(tend-svstat "$scan/tick" 2>&1); then
    echo "status: tick: $status"
  else
    echo "status: $status"
  fi
done
