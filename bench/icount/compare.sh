#!/usr/bin/env bash
# `make bench-icount BASE=<commit>`: instructions per operation of this tree's library and
# of BASE's, counted by callgrind in the same run (bench/icount/ops.c), side by side. The
# counts are what changed in the code's path, free of the shared machine's noise: a row
# more than a few percent above 1.00 is a real cost. They leave out time spent waiting
# (fsync, locks), which `make bench` measures.
# `make bench-icount PORTABLE=1` (compare.sh --portable DIR): the portable library in DIR
# (`make portable-lib`'s, linked against glibc 2.17 by zig) beside this tree's release
# library, both of this tree: what the release artifacts' build costs.
set -euo pipefail
usage="usage: compare.sh BASE-COMMIT | --portable PORTABLE-LIB-DIR"
base=${1:?$usage}
cd "$(dirname "$0")/../.."
work=build/icount
tree=$work/base-tree
command -v valgrind >/dev/null || { echo "bench-icount needs valgrind" >&2; exit 1; }
git worktree remove --force "$tree" 2>/dev/null || true
rm -rf "$work"
mkdir -p "$work"
if [ "$base" = --portable ]; then
  portable=${2:?$usage}
  [ -f "$portable/libharel_transport.so" ] || { echo "no libharel_transport.so in $portable" >&2; exit 1; }
  # The first side's header and library, the second's library (the header is this tree's).
  first=(include target/release) second=$portable labels=(release portable)
else
  git worktree add --detach --quiet "$tree" "$base"
  trap 'git worktree remove --force "$tree"' EXIT
  # BASE builds in a target directory of its own, seeded with this tree's (timestamps kept,
  # so cargo reuses every dependency and compiles the library alone).
  mkdir -p "$work/target"
  cp -a target/release "$work/target/"
  (cd "$tree" && CARGO_TARGET_DIR="$PWD/../target" cargo build --release --lib --quiet)
  first=("$tree/include" "$work/target/release") second=target/release
  labels=("$(git rev-parse --short "$base")" "this tree")
fi

run() { # side, include dir, library dir
  local side=$1
  gcc -O2 -I"$2" bench/icount/ops.c -L"$3" -lharel_transport -Wl,-rpath,"$3" -o "$work/ops-$side"
  for full in 0 1; do
    local dir=$work/$side-$full
    mkdir -p "$dir/queue"
    valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" -q "$work/ops-$side" "$dir/queue" "$full"
    for dump in "$dir"/cg.out.*; do
      printf '%s %s %s %s\n' "$side" "$full" \
        "$(sed -n 's/^desc: Trigger: Client Request: //p' "$dump")" "$(sed -n 's/^summary: //p' "$dump")"
    done
  done
}
{ run base "${first[@]}"; run this include "$second"; } >"$work/counts.txt"

# Operations per phase (ops.c): instructions per operation, and the second's over the first's.
awk -v base="${labels[0]}" -v this="${labels[1]}" '
  BEGIN { n["publish"] = 2000; n["publish_many"] = 2000; n["claim_and_nack"] = 500
          n["stats"] = 50; n["claim_and_ack"] = 2000; n["ack_and_claim"] = 2000
          printf "%-16s %-7s %14s %14s %7s\n", "phase", "sync", base, this, "ratio" }
  { ir[$1, $2, $3] = $4; if (!seen[$2, $3]++) order[++rows] = $2 SUBSEP $3 }
  END { for (i = 1; i <= rows; i++) {
          split(order[i], k, SUBSEP); b = ir["base", k[1], k[2]] / n[k[2]]; t = ir["this", k[1], k[2]] / n[k[2]]
          printf "%-16s %-7s %14.0f %14.0f %7.3f\n", k[2], k[1] ? "FULL" : "NORMAL", b, t, t / b } }
' "$work/counts.txt"
