#!/usr/bin/env bash
# The CMake package as a C++ user meets it: find_package(harel_transport CONFIG REQUIRED)
# from a project of its own (examples/cpp), built against an install alone, shared and
# static, and run; version requests the ConfigVersion file must accept and refuse.
#
#   tests/cpp/cmake_check.sh            `make install PREFIX=$tmp`, then the checks there;
#                                       the install is also moved to show it is relocatable
#   tests/cpp/cmake_check.sh --system   the checks against what is installed on the system
#                                       (the libharel-transport-dev package: packaging/test-deb.sh)
#
# Ends with "cmake: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
MAKE=${MAKE:-make}
CMAKE=${CMAKE:-cmake}

SUITE=cmake
. tests/checks.sh

if ! command -v "$CMAKE" >/dev/null; then
  echo "cmake is missing: install the Debian package cmake (make cpp-tools does as root)" >&2
  fail "cmake is installed"
  finish
fi

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
abi=$(sed -n 's/^const ABI_VERSION: u32 = \([0-9]*\);/\1/p' build.rs)
major=${version%%.*}
minor=${version#*.}
minor=${minor%%.*}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/work"

if [ "${1:-}" = --system ]; then
  prefix_args=()
  where="the system"
else
  if ! $MAKE --no-print-directory install PREFIX="$tmp/prefix" >"$tmp/work/install.log" 2>&1; then
    cat "$tmp/work/install.log"
    fail "make install PREFIX=\$tmp"
    finish
  fi
  pass "make install PREFIX=\$tmp"
  check "installed: the C++ header and the CMake package" \
    test -f "$tmp/prefix/include/harel_transport.hpp" \
    -a -f "$tmp/prefix/lib/cmake/harel_transport/harel_transportConfig.cmake" \
    -a -f "$tmp/prefix/lib/cmake/harel_transport/harel_transportConfigVersion.cmake"
  prefix_args=("-DCMAKE_PREFIX_PATH=$tmp/prefix")
  where="the install"
fi

# The example's project, configured and built: exactly what a CMake user types.
build_example() { # DIR PREFIX_ARGS...
  local dir=$1
  shift
  "$CMAKE" -S examples/cpp -B "$dir" -DHAREL_EXAMPLE_STATIC=ON "$@" >"$dir.log" 2>&1 &&
    "$CMAKE" --build "$dir" >>"$dir.log" 2>&1 || { cat "$dir.log"; return 1; }
}
check "examples/cpp builds with find_package against $where (shared and static)" \
  build_example "$tmp/work/example" "${prefix_args[@]}"

loads_library() { # BINARY LIBDIR: the binary loads libharel_transport by its soname from LIBDIR
  local loaded
  loaded=$(ldd "$1" | sed -n "s/^[[:space:]]*libharel_transport\.so\.$abi => \([^ ]*\) .*/\1/p")
  [ -n "$loaded" ] && [ "$(readlink -f "$loaded")" = "$(readlink -f "$2/libharel_transport.so.$abi")" ]
}
needs_no_so() { ! readelf -d "$1" | grep -q 'NEEDED.*libharel_transport'; }
runs() { # BINARY: publishes and drains a fresh queue, every group in order
  local out
  out=$("$1" "$tmp/work/queue-$(basename "$1").db" 4 10) || { echo "$out"; return 1; }
  [ "$out" = "queue: 40 published, 40 acked, 5 retried, in order" ] || { echo "$out"; return 1; }
}
if [ "${1:-}" = --system ]; then
  libdir=$(dirname "$(ldconfig -p | sed -n "s/.*libharel_transport\.so\.$abi .*=> //p" | head -1)")
  check "the shared example loads the system's libharel_transport.so.$abi" \
    loads_library "$tmp/work/example/queue" "$libdir"
else
  check "the shared example loads the install's library, by its soname" \
    loads_library "$tmp/work/example/queue" "$tmp/prefix/lib"
fi
check "the shared example runs" runs "$tmp/work/example/queue"
check "the static example needs no libharel_transport.so" needs_no_so "$tmp/work/example/queue-static"
check "the static example runs" runs "$tmp/work/example/queue-static"

# Version requests: a project that asks find_package for VERSION and prints what it got.
mkdir -p "$tmp/work/asks"
cat >"$tmp/work/asks/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.14)
project(asks C) # a language: CMake then also searches lib/<multiarch>/cmake
separate_arguments(request UNIX_COMMAND "${REQUEST}")
find_package(harel_transport ${request} CONFIG QUIET)
if(harel_transport_FOUND)
  get_target_property(include_dirs harel_transport::harel_transport INTERFACE_INCLUDE_DIRECTORIES)
  message(STATUS "FOUND ${harel_transport_VERSION} ${include_dirs}")
else()
  message(STATUS "NOT FOUND")
endif()
CMAKE
asks() { # EXPECTED REQUEST: what find_package(harel_transport REQUEST) finds
  local got
  got=$("$CMAKE" -S "$tmp/work/asks" -B "$tmp/work/asks/build-$RANDOM" "-DREQUEST=$2" "${prefix_args[@]}" 2>&1 |
    sed -n 's/^-- \(FOUND\|NOT FOUND\)/\1/p')
  case $1 in
    found) [[ "$got" == "FOUND $version "* ]] || { echo "asked '$2', got '$got'"; return 1; } ;;
    *) [ "$got" = "NOT FOUND" ] || { echo "asked '$2', got '$got'"; return 1; } ;;
  esac
}
check "find_package(harel_transport) with no version finds $version" asks found ""
check "find_package(harel_transport $major.$minor) finds $version" asks found "$major.$minor"
check "find_package(harel_transport $version EXACT) finds it" asks found "$version EXACT"
check "find_package(harel_transport $major.$((minor + 1))) does not (a later minor)" asks missing "$major.$((minor + 1))"
check "find_package(harel_transport $((major + 1)).0) does not (a later major)" asks missing "$((major + 1)).0"
if [ "$major" = 0 ] && [ "$minor" -gt 0 ]; then
  check "find_package(harel_transport 0.$((minor - 1))) does not (0.x: the minor is the ABI's)" \
    asks missing "0.$((minor - 1))"
fi

# Relocatable: the same install moved elsewhere still configures and builds.
if [ "${1:-}" != --system ]; then
  mv "$tmp/prefix" "$tmp/moved"
  prefix_args=("-DCMAKE_PREFIX_PATH=$tmp/moved")
  check "the install, moved, still builds the example" build_example "$tmp/work/example-moved" "${prefix_args[@]}"
  check "the moved install's example loads the moved library" \
    loads_library "$tmp/work/example-moved/queue" "$tmp/moved/lib"
fi

finish
