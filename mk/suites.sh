#!/usr/bin/env bash
# `make test`'s runner: the suites in two lanes at once, then the last ones alone.
#
#   mk/suites.sh --make CMD --logs DIR --all "SUITES" --lane "S1 S2 ..." --lane "..." --last "..."
#
# Each suite is `CMD <suite>`, its output kept in DIR/<suite>.log and printed whole when it
# ends (the lanes' lines never interleave), then one line: passed or FAILED, seconds, CPU
# seconds. A lane stops at its first failure (its other suites are "not run"); the other lane
# goes on. A suite written S@T waits for T, of the other lane, to pass first (not run if T
# fails). Every suite of --all must be in a lane or --last, once: a new suite cannot be left
# out. At the end, a table of every suite; the exit status is 1 if any failed or did not run.
#
# Why lanes: most suites leave a core idle (one test process, or waiting on sqld, timeouts
# and child processes) while the big builds (the portable library, the fuzzer, the tests)
# keep two busy. Each suite bounds its own tests; SUITE_MINUTES bounds a suite's whole run.
set -uo pipefail

make_cmd='' logs='' all='' last=''
lanes=()
while [ $# -gt 0 ]; do
  case $1 in
    --make) make_cmd=$2 ;;
    --logs) logs=$2 ;;
    --all) all=$2 ;;
    --lane) lanes+=("$2") ;;
    --last) last=$2 ;;
    *) echo "suites: unknown argument $1" >&2; exit 2 ;;
  esac
  shift 2
done
SUITE_MINUTES=${SUITE_MINUTES:-45}

# Every suite once, none unknown. ORDER: the suites as placed, without their @ waits.
order=$(for s in ${lanes[*]-} $last; do echo "${s%%@*}"; done)
placed=$(echo "$order" | sort)
wanted=$(for s in $all; do echo "$s"; done | sort)
if [ "$placed" != "$wanted" ]; then
  echo "suites: the lanes and --last must hold every suite of --all once:" >&2
  diff <(echo "$wanted") <(echo "$placed") | sed -n 's/^< /  in no lane: /p; s/^> /  placed but not a suite, or twice: /p' >&2
  exit 2
fi

rm -rf "$logs" && mkdir -p "$logs"
start=$(date +%s)

# run SUITE LANE: runs one suite; writes DIR/SUITE.status (passed, FAILED, not run) and
# DIR/SUITE.time ("wall cpu"). Returns 0 if it passed.
run() {
  local suite=$1 lane=$2 log="$logs/$1.log" times status
  echo "suites: $suite started ($lane, at $(( $(date +%s) - start )) s)"
  times=$( { TIMEFORMAT='%R %U %S'; time timeout -k 10 "${SUITE_MINUTES}m" $make_cmd "$suite" >"$log" 2>&1; } 2>&1 )
  status=$?
  read -r wall user sys <<<"$times"
  wall=${wall%.*} cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%d", u + s }')
  case $status in
    0) verdict=passed ;;
    124|137) verdict=FAILED; echo "timed out after $SUITE_MINUTES min: $suite" >>"$log" ;;
    *) verdict=FAILED ;;
  esac
  echo "$wall $cpu" >"$logs/$suite.time"
  {
    flock 9
    echo "==== $suite ($lane) ===================================================================="
    cat "$log"
    echo "suite $suite: $verdict in $wall s (CPU $cpu s)"
  } 9>"$logs/.print"
  # Last: a suite waiting for this one goes on only once this one's lines are out.
  echo "$verdict" >"$logs/$suite.status"
  [ "$verdict" = passed ]
}

# lane NAME SUITES...: one after the other, stopping at the first failure.
lane() {
  local name=$1 failed='' suite after
  shift
  for entry in "$@"; do
    suite=${entry%%@*} after=''
    [ "$entry" != "$suite" ] && after=${entry#*@}
    if [ -z "$failed" ] && [ -n "$after" ]; then
      while [ ! -f "$logs/$after.status" ]; do sleep 2; done
      [ "$(cat "$logs/$after.status")" = passed ] || failed=$after
    fi
    if [ -n "$failed" ]; then
      echo "not run" >"$logs/$suite.status"
      echo "suites: $suite not run ($failed failed before it)"
      continue
    fi
    run "$suite" "$name" || failed=$suite
  done
}

trap 'kill 0' INT TERM
echo "suites: logs in $logs"
for i in "${!lanes[@]}"; do
  lane "lane $((i + 1))" ${lanes[$i]} &
done
wait
for suite in $last; do run "$suite" "last, alone" || true; done

echo "==== the suites ==========================================================================="
failed=0
for suite in $order; do
  status=$(cat "$logs/$suite.status" 2>/dev/null || echo "not run")
  if [ -f "$logs/$suite.time" ]; then
    read -r wall cpu <"$logs/$suite.time"
    printf 'suites: %-18s %-8s %5s s  (CPU %s s)\n' "$suite" "$status" "$wall" "$cpu"
  else
    printf 'suites: %-18s %s\n' "$suite" "$status"
  fi
  [ "$status" = passed ] || failed=$((failed + 1))
done
total=$(echo $all | wc -w)
echo "suites: $((total - failed)) passed, $failed failed or not run, in $(( $(date +%s) - start )) s"
[ "$failed" = 0 ]
