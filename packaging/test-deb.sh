#!/usr/bin/env bash
# The Debian packages as a user of them meets them (`make test-deb`, as root, after
# `make deb`): installed with dpkg -i, then used through the installed files alone (no
# build-tree path in any flag, no PKG_CONFIG_PATH, no rpath): the C examples built with
# pkg-config (shared and static) and run; a C++ program with CMake's find_package
# (tests/cpp/cmake_check.sh --system) and the C++ test built with pkg-config; the Go
# binding's Examples and smoke test with -tags harel_pkgconfig; the ops CLI
# (harel-transport-tools, when the tree has cli/) on the C producer's queue. Then the
# packages are purged, and nothing of them may be left. Ends with "deb: N passed, N failed".
#
#   packaging/test-deb.sh DEBDIR
set -u
cd "$(dirname "$0")/.."
debdir=${1:?usage: packaging/test-deb.sh DEBDIR}
CC=${CC:-cc}
CXX=${CXX:-c++}
GO=${GO:-go}
GROUPS_N=5
PER_GROUP=9
TOTAL=$((GROUPS_N * PER_GROUP))

SUITE=deb
. tests/checks.sh

if [ "$(id -u)" != 0 ]; then
  echo "deb: skipped: installing packages needs root (dpkg -i)"
  exit 0
fi

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
abi=$(sed -n 's/^const ABI_VERSION: u32 = \([0-9]*\);/\1/p' build.rs)
revision=${DEB_REVISION:-1}
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
libdir=/usr/lib/$multiarch
runtime=libharel-transport$abi
dev=libharel-transport-dev
source packaging/packages.sh # PACKAGES
debs=()
for package in "${PACKAGES[@]}"; do debs+=("$debdir/${package}_$version-${revision}_$arch.deb"); done
has_tools=0
case " ${PACKAGES[*]} " in *" harel-transport-tools "*) has_tools=1 ;; esac
for deb in "${debs[@]}"; do
  if [ ! -f "$deb" ]; then
    fail "$deb exists (make deb builds it)"
    finish
  fi
done

tmp=$(mktemp -d)
purge() { dpkg --purge "${PACKAGES[@]}" >"$tmp/purge.log" 2>&1; }
any_installed() { dpkg-query -W -f='${Status}\n' "${PACKAGES[@]}" 2>/dev/null | grep -q ' installed$'; }
cleanup() { # whatever happened, the machine is left without the packages
  if any_installed; then purge; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/work"
unset PKG_CONFIG_PATH CMAKE_PREFIX_PATH LD_LIBRARY_PATH CGO_CFLAGS CGO_LDFLAGS

# What the packages hold, as dpkg-deb lists it (for the check after the purge).
for deb in "${debs[@]}"; do
  dpkg-deb --fsys-tarfile "$deb" | tar -t | sed -e 's|^\./|/|' -e 's|/$||' | grep -v '^/*$'
done | sort -u >"$tmp/files"

if any_installed; then
  echo "note: some of ${PACKAGES[*]} were installed before this test: purged first, and again at the end"
  purge || { cat "$tmp/purge.log"; fail "dpkg --purge the packages installed before"; finish; }
fi
# The packages' paths that exist before they are installed (shared directories: /usr/lib/...).
while read -r path; do
  if [ -e "$path" ] || [ -L "$path" ]; then echo "$path"; fi
done <"$tmp/files" >"$tmp/existed"

install_packages() { dpkg -i "${debs[@]}" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; return 1; }; }
check "dpkg -i ${PACKAGES[*]} ($version-$revision)" install_packages
installed_version() { [ "$(dpkg-query -W -f='${Version}' "$1" 2>/dev/null)" = "$version-$revision" ]; }
for package in "${PACKAGES[@]}"; do
  check "dpkg knows $package $version-$revision" installed_version "$package"
done
# The soname's path, resolved (with a merged /usr, ldconfig and ld.so say /lib/<multiarch>).
soname_path=$libdir/libharel_transport.so.$abi
is_the_package_lib() { [ -n "$1" ] && [ "$(readlink -f "$1")" = "$(readlink -f "$soname_path")" ]; }
in_ld_cache() {
  is_the_package_lib "$(ldconfig -p | sed -n "s/^[[:space:]]*libharel_transport\.so\.$abi (.*=> //p" | head -1)"
}
check "ldconfig's cache has libharel_transport.so.$abi in $libdir (the package's trigger)" in_ld_cache

# ---- C through pkg-config ---------------------------------------------------------------------
pc() { pkg-config "$@" harel_transport; }
check "pkg-config finds harel_transport $version" test "$(pc --modversion 2>/dev/null)" = "$version"
pc_is_the_package() { [ "$(pc --variable=libdir)" = "$libdir" ] && [ "$(pc --variable=includedir)" = /usr/include ]; }
check "pkg-config's harel_transport is the package's ($libdir, not another install)" pc_is_the_package

build_c() { # NAME [--static]: exactly what a C user types
  local libs
  if [ "${2:-}" = --static ]; then
    libs=$(pc --static --libs)
    # The .a and the .so lie in one directory: ask for the archive by name.
    $CC -std=c99 -Wall -Wextra -Werror -pedantic "examples/c/$1.c" $(pc --cflags) \
      ${libs//-lharel_transport/-l:libharel_transport.a} -o "$tmp/work/$1-static"
  else
    $CC -std=c99 -Wall -Wextra -Werror -pedantic "examples/c/$1.c" $(pc --cflags --libs) -o "$tmp/work/$1"
  fi
}
check "the C producer builds with pkg-config" build_c producer
check "the C worker builds with pkg-config" build_c worker
loads_package_lib() { # BINARY
  is_the_package_lib "$(ldd "$1" | sed -n "s/^[[:space:]]*libharel_transport\.so\.$abi => \([^ ]*\) .*/\1/p")"
}
check "the C worker loads $libdir/libharel_transport.so.$abi" loads_package_lib "$tmp/work/worker"
run_c() { # SUFFIX
  local db="$tmp/work/c$1.db"
  "$tmp/work/producer$1" "$db" "$GROUPS_N" "$PER_GROUP" >"$tmp/work/producer$1.out" 2>&1 &&
    "$tmp/work/worker$1" "$db" w1 --until-empty >"$tmp/work/worker$1.out" 2>&1 &&
    grep -q "^w1: $TOTAL acked" "$tmp/work/worker$1.out" ||
    { cat "$tmp/work/producer$1.out" "$tmp/work/worker$1.out" 2>/dev/null; return 1; }
}
check "the C producer, then the worker until empty: $TOTAL acked" run_c ""

# ---- the ops CLI, on a queue the C producer filled ------------------------------------------
if [ "$has_tools" = 1 ]; then
  check "harel-transport is /usr/bin/harel-transport" test "$(command -v harel-transport)" = /usr/bin/harel-transport
  check "harel-transport --version says $version" bash -c "harel-transport --version | grep -qw '$version'"
  check "its man page is installed" test -f /usr/share/man/man1/harel-transport.1.gz
  cli_stats() {
    "$tmp/work/producer" "$tmp/work/cli.db" "$GROUPS_N" "$PER_GROUP" >/dev/null 2>&1 &&
      harel-transport --database "$tmp/work/cli.db" stats --json >"$tmp/work/stats.json" 2>&1 &&
      grep -q "$TOTAL" "$tmp/work/stats.json" || { cat "$tmp/work/stats.json"; return 1; }
  }
  check "harel-transport stats counts the producer's $TOTAL messages" cli_stats
fi
check "the C producer links statically (pkg-config --static)" build_c producer --static
check "the C worker links statically (pkg-config --static)" build_c worker --static
needs_no_so() { ! readelf -d "$1" | grep -q 'NEEDED.*libharel_transport'; }
check "the static worker needs no libharel_transport.so" needs_no_so "$tmp/work/worker-static"
check "the static producer, then worker: $TOTAL acked" run_c -static

# ---- C++: CMake's find_package, and the C++ test through pkg-config ----------------------------
cmake_system() { bash tests/cpp/cmake_check.sh --system >"$tmp/cmake.log" 2>&1; local s=$?; sed 's/^/    /' "$tmp/cmake.log"; return $s; }
check "C++ with CMake find_package(harel_transport) against the package (tests/cpp/cmake_check.sh --system)" cmake_system
build_cpp_test() {
  $CXX -std=c++17 -Wall -Wextra -Werror -pedantic -DEXPECTED_VERSION="\"$version\"" tests/cpp/test_wrapper.cpp \
    $(pc --cflags --libs) -pthread -o "$tmp/work/test_wrapper"
}
check "the C++ test builds against /usr/include/harel_transport.hpp with pkg-config" build_cpp_test
check "the C++ test loads $libdir/libharel_transport.so.$abi" loads_package_lib "$tmp/work/test_wrapper"
run_cpp_test() { "$tmp/work/test_wrapper" >"$tmp/cpp.log" 2>&1 || { cat "$tmp/cpp.log"; return 1; }; tail -1 "$tmp/cpp.log" | sed 's/^/    /'; }
check "the C++ test passes against the package" run_cpp_test

# ---- Go: -tags harel_pkgconfig ---------------------------------------------------------------
if command -v "$GO" >/dev/null; then
  go_build() {
    # A Go cache of its own: Go's cache key leaves out pkg-config's output, so flags cached
    # here (the package's) would otherwise be reused by builds against another prefix.
    (cd bindings/go && CGO_ENABLED=1 CGO_CFLAGS= CGO_LDFLAGS= GOCACHE="$tmp/gocache" "$GO" test -c -tags harel_pkgconfig \
      -o "$tmp/work/harel.test" . >"$tmp/go-build.log" 2>&1) || { cat "$tmp/go-build.log"; return 1; }
  }
  check "the Go binding's tests build with -tags harel_pkgconfig" go_build
  check "the Go test binary loads $libdir/libharel_transport.so.$abi" loads_package_lib "$tmp/work/harel.test"
  go_run() {
    # -test.timeout: a test binary run directly has no time limit (go test gives it 10m).
    (cd bindings/go && "$tmp/work/harel.test" -test.run 'Example|TestSmoke' -test.count=1 -test.timeout 5m \
      >"$tmp/go.log" 2>&1) ||
      { cat "$tmp/go.log"; return 1; }
    tail -1 "$tmp/go.log" | sed 's/^/    /'
  }
  check "the Go binding's Examples and TestSmoke pass against the package" go_run
else
  fail "go is installed (the Go binding is tested against the package)"
fi

# ---- purge: nothing left ----------------------------------------------------------------------
purged() { purge || { cat "$tmp/purge.log"; return 1; }; }
check "dpkg --purge ${PACKAGES[*]}" purged
not_known() { ! dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q ' installed$'; }
for package in "${PACKAGES[@]}"; do
  check "dpkg no longer knows $package" not_known "$package"
done
nothing_left() { # every path the packages brought is gone again (what existed before stays)
  local left=0 path
  while read -r path; do
    [ -e "$path" ] || [ -L "$path" ] || continue
    grep -qxF "$path" "$tmp/existed" && continue
    echo "left after the purge: $path"
    left=1
  done <"$tmp/files"
  return $left
}
check "nothing of the packages is left ($(wc -l <"$tmp/files") paths)" nothing_left
check "ldconfig's cache no longer has libharel_transport.so.$abi" bash -c "! ldconfig -p | grep -q 'libharel_transport\.so\.$abi '"
check "pkg-config no longer finds harel_transport" bash -c '! pkg-config --exists harel_transport'

finish
