#!/bin/sh
# try.sh [ROOT]: run this stemcell-like layout under tend-monit without root.
# Copies var/vcap into ROOT (default: a new temporary directory), rewrites its
# /var/vcap/ paths to ROOT/var/vcap/ (tend-monit, like monit, has no root prefix
# option), gives the monitrc monit's mode (0600; git keeps no such mode), then runs
# tend-monit in the foreground on the scan directory ROOT/run/tend-monit.
# TEND_MONIT_PORT replaces the agent's port 2822 (a second copy on the same host).
#
# Stop: `tend-monit ... quit` (or Ctrl-C) ends the daemon only; the jobs go on running,
# by design (monit's jobs outlive monit too). Stop them and clean up with the commands
# this script prints at its start.
set -e
here=$(cd "$(dirname "$0")" && pwd)
tend_root=$here/../..
. "$here/../tend-path.sh"
tend_path || exit 111
root=${1:-$(mktemp -d)}
mkdir -p "$root"
root=$(cd "$root" && pwd)
cp -R "$here/var" "$root/"
vcap=$root/var/vcap
for f in "$vcap"/monit/monitrc "$vcap"/monit/job/*.monitrc "$vcap"/jobs/*/bin/ctl; do
  sed -e "s|/var/vcap/|$vcap/|g" -e "s|port 2822 |port ${TEND_MONIT_PORT:-2822} |" "$f" > "$f.new"
  cat "$f.new" > "$f"
  rm -f "$f.new"
done
chmod 600 "$vcap/monit/monitrc"
echo "try.sh: tend-monit -c $vcap/monit/monitrc -S $root/run/tend-monit summary" >&2
echo "try.sh: stop and clean up: tend-monit -c $vcap/monit/monitrc -S $root/run/tend-monit -g vcap stop; tend-monit -c $vcap/monit/monitrc -S $root/run/tend-monit quit; tend-svscanctl -t $root/run/tend-monit; rm -rf $root" >&2
exec tend-monit -c "$vcap/monit/monitrc" -S "$root/run/tend-monit" -I
