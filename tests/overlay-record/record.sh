#!/bin/sh
# Records what an s6-overlay image does on the trees of tests/overlay-images (see README.md
# here). It builds nothing: BASE names an image already holding s6-overlay and the root file
# system the tests use; each tree is copied over it with docker cp and committed.
#   tests/overlay-record/record.sh BASE OUTDIR [CASE...]
set -u
base=$1 out=$2; shift 2
here=$(cd "$(dirname "$0")" && pwd)
trees=$here/../overlay-images
scratch=$(mktemp -d "${TMPDIR:-/tmp}/overlay-record.XXXXXX")
mkdir -p "$out"

# key = value, newlines written \n and backslashes \\ (as tests/rc-record).
put() { printf '%s = %s\n' "$1" "$(printf '%s' "$2" | sed 's/\\/\\\\/g' | awk 'NR>1{printf "\\n"}{printf "%s",$0}')" >>"$file"; }

image() { # tree names -> tag; the tree's command/ (tend's stand-ins) is not copied
  tag="overlay-record:$(echo "$*" | tr ' +' '-_')"
  if ! docker image inspect "$tag" >/dev/null 2>&1; then
    c=$(docker create "$base")
    for t in "$@"; do
      if [ "$t" = +varrun ]; then # /var/run a link to /run, as in the usual base images
        mkdir -p "$scratch/varrun/var"; ln -sfn /run "$scratch/varrun/var/run"
        tar -C "$scratch/varrun" -cf - . | docker cp - "$c:/"
      else
        tar -C "$trees/$t" --exclude=./command -cf - . | docker cp - "$c:/"
      fi
    done
    docker commit "$c" "$tag" >/dev/null; docker rm "$c" >/dev/null
  fi
  echo "$tag"
}

begin() { # case name
  name=$1; file=$out/$1; : >"$file"; dir=$scratch/$1; mkdir -p "$dir/record"; chmod 777 "$dir/record"
  rec="-v $dir/record:/record"
}
order() { put "$1" "$(cat "$dir/record/order" 2>/dev/null)"; }
foreground() { # key-prefix docker-run-args...: code, stdout, stderr, order
  k=$1; shift
  cn=rec-$$-$name-$k; t0=$(date +%s%N)
  timeout 120 docker run --name "$cn" $rec "$@" >"$dir/out" 2>"$dir/err"; code=$?
  t1=$(date +%s%N); docker rm -f "$cn" >/dev/null 2>&1
  put "$k.exit" "$code"; put "$k.seconds" "$(( (t1 - t0) / 1000000000 ))"
  put "$k.stdout" "$(cat "$dir/out")"; put "$k.stderr" "$(cat "$dir/err")"; order "$k.order"
}
wait_for() { # line: until /record/order holds it (60 s)
  i=0; while ! grep -qx -- "$1.*" "$dir/record/order" 2>/dev/null && ! grep -q -- "^$1\( \|$\)" "$dir/record/order" 2>/dev/null; do
    i=$((i+1)); [ $i -gt 600 ] && { put timeout "$1"; return 1; }; sleep 0.1; done
}
detached_stop() { # key grace container
  order "$1.order-up"
  t0=$(date +%s%N); docker stop -t "$2" "$3" >/dev/null; t1=$(date +%s%N)
  put "$1.stop-seconds" "$(( (t1 - t0) / 1000000000 ))"
  put "$1.exit" "$(docker wait "$3")"
  put "$1.stdout" "$(docker logs "$3" 2>/dev/null)"; put "$1.stderr" "$(docker logs "$3" 2>&1 >/dev/null)"
  order "$1.order"
  docker rm -f "$3" >/dev/null
}

want() { [ $# -eq 0 ] || echo " $* " | grep -q " $name "; }
set -- "${@:-}"
sel="$*"
run_case() { [ -z "$sel" ] || echo " $sel " | grep -q " $1 "; }

for tree in base nginx logging; do
  run_case $tree || continue
  case $tree in
    base) img=$(image baseimage-alpine); last=svc-cron ;;
    nginx) img=$(image baseimage-alpine nginx); last=svc-nginx ;;
    logging) img=$(image logging); last=myapp ;;
  esac
  begin $tree; docker rm -f rec-$tree >/dev/null 2>&1
  docker run -d --name rec-$tree $rec -e OVERLAY_TEST=contenv -e S6_SERVICES_GRACETIME=25000 "$img" >/dev/null
  wait_for "up $last"; sleep 3
  if [ $tree = logging ]; then
    put log.current "$(docker exec rec-$tree sh -c 'head -n 3 /var/log/myapp/current' 2>&1)"
    put log.dir "$(docker exec rec-$tree ls -ln /var/log/myapp 2>&1)"
  fi
  put svstat "$(docker exec rec-$tree sh -c 'for s in /run/service/*; do echo "$s $(s6-svstat -o up,ready "$s")"; done' 2>&1)"
  put rc-list "$(docker exec rec-$tree s6-rc -a list 2>&1)"
  detached_stop stop 40 rec-$tree
done

if run_case legacy; then
  img=$(image legacy); begin legacy
  foreground run --rm -e OVERLAY_TEST=contenv -e S6_CMD_WAIT_FOR_SERVICES=1 -e S6_FROBNICATE=1 \
    -e S6_KILL_GRACETIME=500 "$img" sh -c 'echo cmd >>/record/order; exit 3'
fi
if run_case settings; then
  img=$(image legacy); begin settings
  printf '#!/bin/sh\necho hook >>/record/order\n' >"$dir/record/hook"; chmod +x "$dir/record/hook"
  foreground run --rm -e S6_VERBOSITY=1 -e S6_STAGE2_HOOK=/record/hook -e 'S6_CMD_ARG0=sh -c' "$img" \
    'echo -n via-var-run >/var/run/s6/container_environment/VIA; with-contenv sh -c '\''echo "cmd $VIA" >>/record/order'\'
  rm -f "$dir/record/order"
  foreground read-only --rm --read-only --tmpfs /run:exec -e S6_READ_ONLY_ROOT=1 -e OVERLAY_TEST=contenv "$img" sh -c 'exit 6'
fi
if run_case stage2-fail; then
  img=$(image legacy); begin stage2-fail
  printf '#!/bin/sh\nexit 5\n' >"$dir/30-fail"; chmod +x "$dir/30-fail"
  foreground run --rm -v "$dir/30-fail:/etc/cont-init.d/30-fail:ro" -e S6_BEHAVIOUR_IF_STAGE2_FAILS=2 "$img" \
    sh -c 'echo cmd >>/record/order'
  # Without the tree's fix-attrs.d (whose recursive entry crashes fix-attrs, above).
  rm -f "$dir/record/order"; mkdir -p "$dir/empty"
  foreground no-fix-attrs --rm -v "$dir/30-fail:/etc/cont-init.d/30-fail:ro" -v "$dir/empty:/etc/fix-attrs.d:ro" \
    -e S6_BEHAVIOUR_IF_STAGE2_FAILS=2 "$img" sh -c 'echo cmd >>/record/order'
fi
if run_case exitcode; then
  img=$(image exitcode); begin exitcode
  foreground run --rm "$img"
  rm -f "$dir/record/order"
  foreground noexec-root --rm --tmpfs /run "$img"
  rm -f "$dir/record/order"
  foreground noexec-user --rm --tmpfs /run:uid=1000 --user 1000 --security-opt no-new-privileges "$img"
fi
if run_case s6-logging; then
  # The catch-all logger's file, copied out by the command before the container ends.
  img=$(image legacy); begin s6-logging
  for level in 1 2; do
    foreground level$level --rm -e S6_LOGGING=$level "$img" sh -c 'echo from-the-command; sleep 2
      for d in /run/uncaught-logs /var/log/s6-uncaught-logs; do
        [ -f $d/current ] && { echo $d; sed "s/^[-0-9]* [0-9:.]*  //" $d/current; } >>/record/uncaught; done; true'
    put level$level.uncaught "$(cat "$dir/record/uncaught" 2>/dev/null)"
    rm -f "$dir/record/order" "$dir/record/uncaught"
  done
fi
if run_case stop; then
  img=$(image legacy); begin stop; docker rm -f rec-stop >/dev/null 2>&1
  docker run -d --name rec-stop $rec "$img" >/dev/null
  wait_for "up main"; sleep 1
  detached_stop stop 10 rec-stop
fi
if run_case svscanctl; then
  img=$(image legacy); begin svscanctl
  foreground run --rm "$img" sh -c 's6-svscanctl -t /run/service; exec sleep 100'
  # The same with a command that ends before the recorder's limit: what follows it.
  rm -f "$dir/record/order"
  foreground short --rm "$img" sh -c 's6-svscanctl -t /run/service; exec sleep 20'
fi
if run_case bundles-old; then
  img=$(image user-bundles-old); begin bundles-old
  foreground run --rm "$img" sh -c 'echo cmd >>/record/order'
fi
if run_case bundles; then
  img=$(image user-bundles); begin bundles; n=0
  for env in "" "S6_RUNTIME_BUNDLEDIR=/etc/alt-bundles" "S6_RUNTIME_PROFILE=old S6_RUNTIME_BUNDLEDIR=/etc/alt-bundles" \
             "S6_RUNTIME_BUNDLEDIR=/etc/nowhere"; do
    rm -f "$dir/record/order"; e=""; for v in $env; do e="$e -e $v"; done
    put case$n.env "$env"
    foreground case$n --rm $e "$img" sh -c 'echo cmd >>/record/order'; n=$((n+1))
  done
fi
if run_case maxtime; then
  img=$(image user-bundles); begin maxtime
  for b in 0 2; do
    rm -f "$dir/record/order"
    foreground behaviour$b --rm -e S6_RUNTIME_BUNDLEDIR=/etc/slow-bundles -e S6_CMD_WAIT_FOR_SERVICES_MAXTIME=500 \
      -e S6_BEHAVIOUR_IF_STAGE2_FAILS=$b "$img" sh -c 'echo cmd >>/record/order'
  done
fi
if run_case nonroot; then
  # On this root file system, with no /var/run link, s6-overlay stops at once on a
  # read-only root (see settings); here the image has the link.
  img=$(image user-bundles-old +varrun); begin nonroot
  u="--user 1000 --security-opt no-new-privileges --read-only"
  foreground run --rm --tmpfs /run:exec,uid=1000 $u "$img" sh -c 'echo cmd $(id -u) >>/record/order; exit 3'
  rm -f "$dir/record/order"; docker rm -f rec-nonroot >/dev/null 2>&1
  docker run -d --name rec-nonroot $rec --tmpfs /run:exec,uid=1000 $u "$img" >/dev/null
  wait_for "up late"; sleep 1
  detached_stop stop 10 rec-nonroot
  rm -f "$dir/record/order"
  foreground root-owned-run --rm --tmpfs /run $u "$img" true
  foreground read-only-root --rm --read-only "$img" true
  foreground noexec-run --rm --tmpfs /run:uid=1000 $u "$img" true
fi
if run_case extras; then
  # A oneshot with up and down, a longrun reading its env/ directory, a run without
  # its execute bit; their states while the command runs, the order down.
  img=$(image extras); begin extras
  foreground run --rm "$img" sh -c 'sleep 2; for s in envd noexec; do
    record-step svstat $s $(s6-svstat -o up,wantedup /run/service/$s); done; exit 4'
fi
if run_case nonroot-new; then
  # The same settings on the 3.2.3.2 layout (user-bundles.d), which needs no write to /etc.
  img=$(image user-bundles +varrun); begin nonroot-new
  u="--user 1000 --security-opt no-new-privileges --read-only"
  foreground run --rm --tmpfs /run:exec,uid=1000 $u "$img" sh -c 'echo cmd $(id -u) >>/record/order; exit 3'
  rm -f "$dir/record/order"; docker rm -f rec-nonroot-new >/dev/null 2>&1
  docker run -d --name rec-nonroot-new $rec --tmpfs /run:exec,uid=1000 $u "$img" >/dev/null
  wait_for "up late"; sleep 1
  detached_stop stop 10 rec-nonroot-new
  rm -f "$dir/record/order"
  foreground root-owned-run --rm --tmpfs /run $u "$img" true
  foreground noexec-run --rm --tmpfs /run:uid=1000 $u "$img" true
fi
rm -rf "$scratch"
