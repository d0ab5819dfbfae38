#!/usr/bin/env bash
# The shared library exports exactly the functions the header declares: the defined
# dynamic symbols (`nm -D --defined-only`; of a static archive, such as the Go module's
# prelinked one, the defined global symbols, `nm -g --defined-only`) against the
# declarations of the header, both ways, each difference named. A dependency's #[no_mangle]
# item leaks out otherwise (libsql's update_hook_cb did, build.rs says how it is hidden), and
# a generic name like that can bind to another library's symbol in a process that loads both.
#
#   tests/exports.sh [LIBRARY [HEADER]]  default target/release/libharel_transport.so and
#                                        include/harel_transport.h; LIBRARY may be a .a
#   tests/exports.sh --self-test         that, then a library built beside the header with
#                                        an extra export and one function missing must fail,
#                                        naming both (so the check cannot pass everything)
#   tests/exports.sh --header-names [HEADER]  only prints the header's names, one a line (what
#                                        mk/dist.mk's Go archive keeps global)
#
# Ends with "exports: N passed, N failed", as the other suites do.
set -u
cd "$(dirname "$0")/.."
SUITE=exports
. tests/checks.sh

self_test=0
if [ "${1:-}" = --self-test ]; then
  self_test=1
  shift
fi

# cbindgen starts each declaration at column 0: the return type, then the function's name
# and its parameters (a static: `extern TYPE NAME;`). Comments, preprocessor lines and type
# definitions start otherwise or have no parenthesis.
header_names() {
  {
    grep -E '^[A-Za-z_][^(]*\(' "$1" | grep -Ev '^(typedef|extern "C")' |
      sed -E 's/^([^(]*[^A-Za-z0-9_(])?([A-Za-z_][A-Za-z0-9_]*) *\(.*/\2/'
    grep -E '^extern [^"(]*;' "$1" | sed -E 's/.*[^A-Za-z0-9_]([A-Za-z_][A-Za-z0-9_]*) *(\[[^]]*\])? *;.*/\1/'
  } | sort -u
}

if [ "${1:-}" = --header-names ]; then
  header_names "${2:-include/harel_transport.h}"
  exit
fi
lib=${1:-target/release/libharel_transport.so}
header=${2:-include/harel_transport.h}

# The name of each defined dynamic symbol, without a version suffix (NAME@@VERSION); of an
# archive, each defined global one.
exported_names() {
  local table=-D
  case $1 in *.a) table=-g ;; esac
  nm "$table" --defined-only "$1" | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' | sort -u
}

if [ ! -f "$lib" ]; then
  fail "$lib exists (make lib builds it)"
  finish
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
header_names "$header" >"$tmp/header"
exported_names "$lib" >"$tmp/exported"

declares_functions() {
  [ -s "$tmp/header" ] || { echo "  no declaration found in $header"; return 1; }
}
check "$header declares $(wc -l <"$tmp/header") functions" declares_functions

only_in() { # only_in A B WHAT: the names of A missing from B, listed
  local extra
  extra=$(comm -23 "$1" "$2")
  [ -z "$extra" ] && return 0
  echo "$extra" | sed "s/^/  $3: /"
  return 1
}
check "$lib exports nothing the header does not declare" only_in "$tmp/exported" "$tmp/header" "exported, not in the header"
check "$lib exports every function of the header" only_in "$tmp/header" "$tmp/exported" "in the header, not exported"

if [ "$self_test" = 1 ]; then
  # A library with every header function but the first, and one name the header lacks,
  # exported through a version script so that the toolchain adds nothing of its own.
  dropped=$(head -1 "$tmp/header")
  planted=planted_extra_export
  { tail -n +2 "$tmp/header"; echo "$planted"; } | sed 's/.*/void &(void) {}/' >"$tmp/planted.c"
  { echo "{ global:"; tail -n +2 "$tmp/header" | sed 's/.*/  &;/'; echo "  $planted;"
    echo "local: *; };"; } >"$tmp/planted.map"
  built() {
    ${CC:-cc} -shared -fPIC -Wl,--version-script="$tmp/planted.map" "$tmp/planted.c" -o "$tmp/libplanted.so"
  }
  check "self-test: the planted library builds" built
  bash tests/exports.sh "$tmp/libplanted.so" "$header" >"$tmp/planted.out" 2>&1
  status=$?
  fails() { [ "$status" -ne 0 ] || { cat "$tmp/planted.out"; return 1; }; }
  names() { grep -q "$1: $2\$" "$tmp/planted.out" || { cat "$tmp/planted.out"; return 1; }; }
  check "self-test: the planted library fails" fails
  check "self-test: the extra export $planted is named" names "exported, not in the header" "$planted"
  check "self-test: the missing $dropped is named" names "in the header, not exported" "$dropped"
fi
finish
