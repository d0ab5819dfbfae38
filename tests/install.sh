#!/usr/bin/env bash
# The installed package as a C user meets it: `make install PREFIX=$tmp`, then the C
# examples built against that install alone, found through pkg-config, linked dynamically
# (the .so, by its soname) and statically (the .a with pkg-config --static), and run: a
# producer, then a worker until the queue is empty. Ends with "install: N passed, N failed".
set -u
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
CC=${CC:-cc}
GROUPS_N=5
PER_GROUP=9
TOTAL=$((GROUPS_N * PER_GROUP))

SUITE=install
. tests/checks.sh

if ! command -v pkg-config >/dev/null; then
  echo "pkg-config is missing: install the Debian package pkgconf (make c-tools does as root)" >&2
  fail "pkg-config is installed"
  finish
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/work"

if ! $MAKE --no-print-directory install PREFIX="$tmp" >"$tmp/work/install.log" 2>&1; then
  cat "$tmp/work/install.log"
  fail "make install PREFIX=\$tmp"
  finish
fi
pass "make install PREFIX=\$tmp"

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
# The soname's number (docs/abi.md, "Versioning"), kept in build.rs as the Makefile reads it.
abi=$(sed -n 's/^const ABI_VERSION: u32 = \([0-9]*\);/\1/p' build.rs)
if [ -z "$abi" ]; then
  fail "build.rs has const ABI_VERSION: u32 = N;"
  finish
fi
check "installed: .so.$version, .so.$abi and .so links, .a, header, .pc" \
  test -f "$tmp/lib/libharel_transport.so.$version" -a -L "$tmp/lib/libharel_transport.so.$abi" \
  -a -L "$tmp/lib/libharel_transport.so" -a -f "$tmp/lib/libharel_transport.a" \
  -a -f "$tmp/include/harel_transport.h" -a -f "$tmp/lib/pkgconfig/harel_transport.pc"
soname_is_abi() {
  readelf -d "$tmp/lib/libharel_transport.so.$version" |
    grep -q "SONAME.*\[libharel_transport\.so\.$abi\]\$"
}
check "the .so's soname is libharel_transport.so.$abi" soname_is_abi
links_to_the_library() { # .so.ABI -> .so.VERSION, .so -> .so.ABI, both ending at the file
  [ "$(readlink "$tmp/lib/libharel_transport.so.$abi")" = "libharel_transport.so.$version" ] &&
    [ "$(readlink "$tmp/lib/libharel_transport.so")" = "libharel_transport.so.$abi" ]
}
check "the links: .so -> .so.$abi -> .so.$version" links_to_the_library

pc() { PKG_CONFIG_PATH="$tmp/lib/pkgconfig" pkg-config "$@" harel_transport; }
check "pkg-config knows harel_transport $version" test "$(pc --modversion)" = "$version"
points_into_install() {
  [[ "$(pc --cflags)" == "-I$tmp/include"* && "$(pc --libs)" == "-L$tmp/lib "* ]]
}
check "pkg-config points into the install" points_into_install

# Dynamic: exactly what a C user types, plus an rpath to the install's lib.
build_dynamic() { # NAME
  $CC -std=c99 -Wall -Wextra -Werror -pedantic "examples/c/$1.c" $(pc --cflags --libs) \
    -Wl,-rpath,"$tmp/lib" -o "$tmp/work/$1"
}
check "producer builds against the install (pkg-config)" build_dynamic producer
check "worker builds against the install (pkg-config)" build_dynamic worker
loads_installed() { # NAME
  ldd "$tmp/work/$1" | grep -qF "libharel_transport.so.$abi => $tmp/lib/libharel_transport.so.$abi"
}
check "producer loads the installed library, by its soname" loads_installed producer
check "worker loads the installed library, by its soname" loads_installed worker

# The worker's acked lines, in order: each group's steps 0..PER_GROUP-1, each once, in order.
fifo_complete() { # LOG
  grep ': acked ' "$1" | sed -E 's/^.*: acked ([^ ]+) .*"step":([0-9]+).*$/\1 \2/' |
    awk -v groups="$GROUPS_N" -v per="$PER_GROUP" '
      { if ($2 != next_step[$1]++) bad = 1 }
      END { n = 0; for (g in next_step) { n++; if (next_step[g] != per) bad = 1 }
            exit (bad || n != groups) }'
}

run_examples() { # SUFFIX: run producer$SUFFIX then worker$SUFFIX on a fresh database
  local db="$tmp/work/queue$1.db" out="$tmp/work/run$1"
  "$tmp/work/producer$1" "$db" "$GROUPS_N" "$PER_GROUP" >"$out.producer" 2>&1 &&
    "$tmp/work/worker$1" "$db" w1 --until-empty >"$out.worker" 2>&1
  local status=$?
  if [ $status -ne 0 ]; then cat "$out.producer" "$out.worker" 2>/dev/null; fi
  return $status
}

check "producer, then worker until empty (dynamic)" run_examples ""
# seqs 1..TOTAL on a fresh database; every 7th fails once
retried=$((TOTAL / 7))
check "the producer reports $TOTAL events in $GROUPS_N groups" \
  grep -qx "producer: $TOTAL events in $GROUPS_N groups" "$tmp/work/run.producer"
check "the worker acked $TOTAL, retried $retried, lost none" \
  grep -qx "w1: $TOTAL acked, $retried retried, 0 lost" "$tmp/work/run.worker"
check "each group's events came in order, each once" fifo_complete "$tmp/work/run.worker"
second_worker_idle() {
  "$tmp/work/worker" "$tmp/work/queue.db" w2 --until-empty |
    grep -qx 'w2: 0 acked, 0 retried, 0 lost'
}
check "a second worker finds the queue empty" second_worker_idle

# Static: the .a, with the system libraries pkg-config --static adds (Libs.private). Both
# libraries sit in one directory, so ask for the archive by name (-l:), as the linker would
# otherwise take the .so.
build_static() { # NAME
  local libs
  libs=$(pc --static --libs)
  $CC -std=c99 -Wall -Wextra -Werror -pedantic "examples/c/$1.c" $(pc --cflags) \
    ${libs//-lharel_transport/-l:libharel_transport.a} -o "$tmp/work/$1-static"
}
check "producer links statically (pkg-config --static)" build_static producer
check "worker links statically (pkg-config --static)" build_static worker
needs_no_so() { ! readelf -d "$tmp/work/$1-static" | grep -q 'NEEDED.*libharel_transport'; }
check "the static producer needs no libharel_transport.so" needs_no_so producer
check "the static worker needs no libharel_transport.so" needs_no_so worker
check "producer, then worker until empty (static)" run_examples "-static"
check "the static worker acked $TOTAL, retried $retried" \
  grep -qx "w1: $TOTAL acked, $retried retried, 0 lost" "$tmp/work/run-static.worker"
check "each group's events came in order (static)" fifo_complete "$tmp/work/run-static.worker"

finish
