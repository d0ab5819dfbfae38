#!/usr/bin/env bash
# The release artifacts as their users meet them (`make test-dist`, after `make dist`): each
# file of DISTDIR installed into a clean place of its own outside the repository, and one
# publish, claim and ack run through it:
#   - SHA256SUMS matches the files, every one of them (goproxy/'s too);
#   - the wheel: pip-installed (no index: it needs nothing) into a fresh venv, whose pip checks
#     its manylinux tags against this system; python -c, the library loaded from the wheel;
#   - the npm package: npm-installed into a fresh npm project (koffi from the registry); node -e,
#     the library loaded from the package's prebuilds/;
#   - the .debs: installed with dpkg --root into an empty root (or, if that fails, unpacked
#     with dpkg -x); tests/dist/smoke.c built against them
#     with pkg-config (PKG_CONFIG_SYSROOT_DIR) and run; the tools package's CLI reads the queue;
#   - the tarball: extracted into an empty prefix; smoke.c built with its pkg-config file
#     (relocatable: the prefix is where it lies) against the .so, and against the .a, and run;
#   - Go: a fresh module that `go get`s the binding at vVERSION from goproxy/ (GOPROXY=file://
#     before the usual proxy, GONOSUMDB for the binding alone, a module cache of its own: no
#     replace, no copy cached by an earlier run), built with -tags harel_static, CGO_CFLAGS and
#     CGO_LDFLAGS unset, and run: no libharel_transport needed, at build or run time; then a
#     program of both the binding and mattn/go-sqlite3 (bench/goqite's version), whose own
#     SQLite would clash with an archive that exported libSQL's sqlite3_* symbols.
# And every ELF file each artifact carries needs nothing of glibc newer than GLIBC_MAX (2.17,
# manylinux2014's; packaging/glibc-check.sh); each artifact's highest is printed. Each step
# runs under a timeout (HAREL_DIST_TIMEOUT minutes, default 10). Ends with
# "dist: N passed, M failed".
#
#   tests/dist/run.sh [DISTDIR]      default build/dist
# HAREL_DIST_KEEP=1 keeps the temporary directory (its path is printed).
set -u
cd "$(dirname "$0")/../.."
SUITE=dist
. tests/checks.sh

dist=${1:-build/dist}
[ -d "$dist" ] || { echo "dist: no $dist: run make dist first"; exit 1; }
dist=$(cd "$dist" && pwd)
repo=$PWD
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
abi=$(sed -n 's/^const ABI_VERSION: u32 = \([0-9]*\);/\1/p' build.rs)
binding=$(sed -n 's/^module //p' bindings/go/go.mod)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
GLIBC_MAX=${GLIBC_MAX:-2.17}
minutes=${HAREL_DIST_TIMEOUT:-10}
CC=${CC:-cc}
GO=${GO:-go}
NPM=${NPM:-npm}
NODE=${NODE:-node}
PYTHON=${PYTHON:-python3}
unset PYTHONPATH HAREL_TRANSPORT_LIB LD_LIBRARY_PATH PKG_CONFIG_PATH PKG_CONFIG_LIBDIR \
  PKG_CONFIG_SYSROOT_DIR CGO_CFLAGS CGO_LDFLAGS GOFLAGS

tmp=$(mktemp -d)
if [ "${HAREL_DIST_KEEP:-}" = 1 ]; then echo "dist: keeping $tmp"; else trap 'rm -rf "$tmp"' EXIT; fi
export dist repo version abi binding multiarch GLIBC_MAX CC GO NPM NODE PYTHON tmp

# step NAME COMMAND...: a check whose command runs in a shell of its own (the functions below
# are exported), stopped past $minutes; its output is shown when it fails (and always with
# HAREL_DIST_VERBOSE=1).
step() {
  local name=$1 out=$tmp/step.$((passed + failed)).log status
  shift
  timeout -k 10 "${minutes}m" bash -c '"$@"' step "$@" >"$out" 2>&1
  status=$?
  if [ $status -eq 0 ]; then
    [ "${HAREL_DIST_VERBOSE:-}" = 1 ] && sed 's/^/  /' "$out"
    grep -h '^\(glibc\|python\|node\|go\|c\): ' "$out" | sed 's/^/  /'
    pass "$name"
  else
    [ $status -eq 124 ] && echo "  timed out after $minutes min"
    tail -n 60 "$out" | sed 's/^/  /'
    fail "$name"
  fi
}

# One file matching a pattern in $dist, or none (the check that needs it fails, naming it).
one() {
  local matches=("$dist"/$1)
  if [ ${#matches[@]} -eq 1 ] && [ -f "${matches[0]}" ]; then echo "${matches[0]}"; else echo "$dist/$1"; fi
}

# elf_glibc WHAT DIR: every ELF file under DIR needs glibc <= GLIBC_MAX; prints the highest.
elf_glibc() {
  local what=$1 dir=$2 file highest="" v n=0 bad=0 line
  while IFS= read -r -d '' file; do
    [ "$(head -c 4 "$file" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
    n=$((n + 1))
    line=$(bash "$repo/packaging/glibc-check.sh" "$file" "$GLIBC_MAX") || { bad=1; echo "$line"; }
    v=$(sed -n '1s/.*highest GLIBC_\([0-9.]*\).*/\1/p' <<<"$line")
    [ -n "$v" ] && highest=$(printf '%s\n%s\n' "$highest" "$v" | sed '/^$/d' | sort -V | tail -1)
  done < <(find "$dir" -type f -print0)
  echo "glibc: $what: $n ELF files, highest GLIBC_${highest:-none} (limit $GLIBC_MAX)"
  [ "$n" -gt 0 ] && [ "$bad" = 0 ]
}

# The C smoke program (tests/dist/smoke.c) built with the flags given, run on a fresh queue;
# prints its line. build_and_run NAME FLAGS...
build_and_run() {
  local name=$1 out
  shift
  $CC -O2 -Wall -o "$tmp/$name" "$repo/tests/dist/smoke.c" "$@" || return 1
  out=$(cd "$tmp" && env -u LD_LIBRARY_PATH "./$name" "$tmp/$name.db") || { echo "$out"; return 1; }
  echo "${out/smoke:/c:}"
}

sums() { # every file but SHA256SUMS is listed, and matches
  cd "$dist" && sha256sum --quiet -c SHA256SUMS &&
    diff <(sed 's/^[0-9a-f]*  //' SHA256SUMS | LC_ALL=C sort) \
      <(find . -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort)
}

wheel() { # the wheel into a fresh venv
  local whl=$1 dir=$tmp/wheel
  case "$whl" in
    *-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl) ;;
    *) echo "the wheel is not tagged manylinux_2_17_x86_64.manylinux2014_x86_64: $whl"; return 1 ;;
  esac
  mkdir -p "$dir/unpacked" && (cd "$dir/unpacked" && $PYTHON -m zipfile -e "$whl" .) || return 1
  elf_glibc wheel "$dir/unpacked" || return 1
  $PYTHON -m venv "$dir/venv" && "$dir/venv/bin/pip" install --quiet --no-index --no-deps "$whl" || return 1
  cd "$dir" && "$dir/venv/bin/python" -c '
import os, sys
import harel_transport
from harel_transport import Transport, _native
with Transport(os.path.join(os.getcwd(), "queue.db")) as q:
    q.publish("order-1", "{\"n\": 1}")
    lease = q.claim("worker-1", visibility=30)
    assert lease is not None and lease.group_id == "order-1", lease
    q.ack(lease)
    assert q.claim("worker-1", visibility=30) is None, "not empty after the ack"
path = _native.lib().path
assert os.path.realpath(path).startswith(os.path.realpath(sys.prefix)), path
print("python: ok", harel_transport.__version__, path)
'
}

npm_package() { # the npm tarball into a fresh npm project
  local tgz=$1 dir=$tmp/npm
  mkdir -p "$dir/unpacked" && tar -xzf "$tgz" -C "$dir/unpacked" || return 1
  elf_glibc npm "$dir/unpacked" || return 1
  node -e 'const p=require(process.argv[1]);
    if (JSON.stringify([p.os,p.cpu,p.libc])!==JSON.stringify([["linux"],["x64"],["glibc"]]) || !p.engines || !p.engines.node) { console.error("os/cpu/libc/engines:", p.os, p.cpu, p.libc, p.engines); process.exit(1); }' \
    "$dir/unpacked/package/package.json" || return 1
  mkdir -p "$dir/project" && cd "$dir/project" && $NPM init -y >/dev/null &&
    $NPM install --no-audit --no-fund --loglevel=error "$tgz" || return 1
  $NODE -e '
const h = require("harel-transport");
(async () => {
  const q = await h.Transport.open("queue.db");
  await q.publish("order-1", { n: 1 });
  const lease = await q.claim("worker-1");
  if (!lease || lease.groupId !== "order-1" || lease.event.n !== 1) throw new Error("claim: " + JSON.stringify(lease));
  await q.ack(lease);
  if (await q.claim("worker-1")) throw new Error("not empty after the ack");
  await q.close();
  const info = h.libraryInfo();
  if (!info.path.startsWith(process.cwd() + "/node_modules/harel-transport/prebuilds/")) throw new Error("loaded " + info.path);
  console.log("node: ok", info.version, info.path);
})().catch((e) => { console.error(e); process.exit(1); });
'
}

debs() { # the .debs installed into an empty root
  local root=$tmp/deb-root libdir deb flags v
  # dpkg -i into a root of its own (a dpkg database of its own, the host's untouched): the
  # root has no libc6 package, hence --force-depends (the Depends are checked below), and no
  # shell to chroot into, hence the maintainer scripts (here ldconfig's trigger) run outside it.
  mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/triggers" "$root/var/log"
  touch "$root/var/lib/dpkg/status"
  if dpkg --root="$root" --log="$root/var/log/dpkg.log" --force-depends --force-script-chrootless --force-not-root \
    -i "$@" >"$root/dpkg.out" 2>&1 && [ "$(dpkg --root="$root" -l | grep -c '^ii ')" -eq $# ]; then
    echo "c: installed with dpkg --root: $(dpkg --root="$root" -l | awk '/^ii /{printf "%s ", $2}')"
  else
    cat "$root/dpkg.out"
    echo "c: dpkg --root failed: unpacking with dpkg -x instead"
    for deb in "$@"; do dpkg -x "$deb" "$root" || return 1; done
  fi
  for deb in "$@"; do
    # The libc6 it asks for: no newer than GLIBC_MAX.
    v=$(dpkg-deb -f "$deb" Depends | sed -n 's/.*libc6 (>= \([0-9.]*\)[^)]*).*/\1/p')
    echo "glibc: $(basename "$deb"): Depends libc6 (>= ${v:-any})"
    [ -z "$v" ] || [ "$(printf '%s\n%s\n' "$v" "$GLIBC_MAX" | sort -V | tail -1)" = "$GLIBC_MAX" ] || return 1
  done
  elf_glibc deb "$root" || return 1
  libdir=$root/usr/lib/$multiarch
  flags=$(PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$libdir/pkgconfig PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 \
    PKG_CONFIG_ALLOW_SYSTEM_LIBS=1 pkg-config --cflags --libs harel_transport) || return 1
  echo "pkg-config: $flags"
  # shellcheck disable=SC2086
  build_and_run smoke-deb $flags -Wl,-rpath,"$libdir" || return 1
  ldd "$tmp/smoke-deb" | grep -F "libharel_transport.so.$abi => $libdir/libharel_transport.so.$abi" || return 1
  if [ -x "$root/usr/bin/harel-transport" ]; then
    "$root/usr/bin/harel-transport" -d "$tmp/smoke-deb.db" stats || return 1
    echo "c: the tools package's harel-transport read the queue"
  fi
}

tarball() { # the tarball into an empty prefix
  local tgz=$1 prefix=$tmp/prefix flags
  mkdir -p "$prefix" && tar -xzf "$tgz" -C "$prefix" --strip-components=1 || return 1
  elf_glibc tarball "$prefix" || return 1
  flags=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs harel_transport) || return 1
  echo "pkg-config: $flags"
  # shellcheck disable=SC2086
  build_and_run smoke-tar $flags -Wl,-rpath,"$prefix/lib" || return 1
  ldd "$tmp/smoke-tar" | grep -F "libharel_transport.so.$abi => $prefix/lib/libharel_transport.so.$abi" || return 1
  flags=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --static --cflags --libs harel_transport) || return 1
  # shellcheck disable=SC2086
  build_and_run smoke-tar-static ${flags//-lharel_transport/-l:libharel_transport.a} || return 1
  ! readelf -d "$tmp/smoke-tar-static" | grep 'NEEDED.*libharel_transport' || return 1
  echo "c: static ok"
}

# go_module NAME: a fresh module in $tmp/NAME whose main.go publishes, claims and acks through
# the binding, which `go get` fetches from $dist/goproxy into a module cache of the test's own;
# the host's module cache (a proxy's layout too), then the usual proxy, give its dependencies,
# whose checksums come from the binding's go.sum and bench/goqite's.
go_module() {
  local dir=$tmp/$1 usual cache archive=libharel_transport.a
  usual=$($GO env GOPROXY) && cache=$($GO env GOMODCACHE) || return 1
  export GOPROXY="file://$dist/goproxy,file://$cache/cache/download,$usual" GONOSUMDB=$binding \
    GOMODCACHE=$tmp/gomodcache GOFLAGS='-mod=mod -modcacherw'
  mkdir -p "$dir" && cd "$dir" || return 1
  printf 'module example.com/distsmoke\n\ngo 1.22.0\n' >go.mod
  cat "$repo/bindings/go/go.sum" "$repo/bench/goqite/go.sum" | LC_ALL=C sort -u >go.sum
  cat >main.go <<'EOF'
package main

import (
	"encoding/json"
	"fmt"
	"log"
	"os"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

func main() {
	t, err := harel.Open(os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close()
	if err := t.Publish("order-1", json.RawMessage(`{"n":1}`)); err != nil {
		log.Fatal(err)
	}
	lease, err := t.Claim("worker-1", 30*time.Second)
	if err != nil || lease == nil || lease.GroupID != "order-1" {
		log.Fatalf("claim: %v %v", lease, err)
	}
	if err := t.Ack(lease); err != nil {
		log.Fatal(err)
	}
	if lease, err := t.Claim("worker-1", 30*time.Second); err != nil || lease != nil {
		log.Fatalf("claim after the ack: %v %v", lease, err)
	}
	fmt.Println("go: ok", harel.Version()+alsoSQLite())
}
EOF
  printf 'package main\n\nfunc alsoSQLite() string { return "" }\n' >sqlite.go
  go_quiet get "$binding@v$version" || return 1
  echo "go: the module's archive: $(stat -c %s "$GOMODCACHE/$binding@v$version/lib/linux_amd64/$archive") bytes"
}

# go_quiet ARGS...: go ARGS, its output shown only if it fails (its "go: " lines would join the summary).
go_quiet() { $GO "$@" >go.log 2>&1 || { cat go.log; return 1; }; }

# go_build_run NAME: $tmp/NAME built with -tags harel_static, needing no libharel_transport.so, and run.
go_build_run() {
  CGO_ENABLED=1 $GO build -tags harel_static -o smoke . || return 1
  ! readelf -d smoke | grep 'NEEDED.*libharel_transport' || { echo "the program needs libharel_transport.so"; return 1; }
  env -u LD_LIBRARY_PATH ./smoke "$tmp/$1/queue.db"
}

go_static() { # the binding alone
  go_module go && go_build_run go
}

go_sqlite() { # the binding and mattn/go-sqlite3, each with its SQLite, in one program
  local mattn
  mattn=$(sed -n 's|^\s*github.com/mattn/go-sqlite3 \(v[^ ]*\).*|\1|p' "$repo/bench/goqite/go.mod")
  go_module go-sqlite3 || return 1
  cat >sqlite.go <<'EOF'
package main

import (
	"database/sql"
	"log"

	_ "github.com/mattn/go-sqlite3"
)

func alsoSQLite() string {
	db, err := sql.Open("sqlite3", ":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	var version string
	if err := db.QueryRow("select sqlite_version()").Scan(&version); err != nil {
		log.Fatal(err)
	}
	return ", mattn/go-sqlite3's SQLite " + version
}
EOF
  go_quiet get "github.com/mattn/go-sqlite3@$mattn" && go_build_run go-sqlite3
}

export -f one elf_glibc build_and_run sums wheel npm_package debs tarball go_module go_quiet go_build_run go_static \
  go_sqlite

mapfile -t deb_files < <(ls "$dist"/*_"$version"-*_*.deb 2>/dev/null)
[ ${#deb_files[@]} -gt 0 ] || deb_files=("$dist/(no .deb)")

step "SHA256SUMS matches every file of $dist" sums
step "the wheel installs into a fresh venv, publish/claim/ack" wheel "$(one "harel_transport-$version-*.whl")"
step "the npm package installs into a fresh project, publish/claim/ack" npm_package "$(one "harel-transport-$version.tgz")"
step "the .debs install into an empty root, a C program built against them publishes/claims/acks" debs "${deb_files[@]}"
step "the tarball into an empty prefix, a C program built with its pkg-config (shared, static)" tarball \
  "$(one "harel-transport-$version-linux-x86_64.tar.gz")"
step "a fresh Go module gets the binding from goproxy/, -tags harel_static, no installed library, publish/claim/ack" \
  go_static
step "a Go program of the binding and mattn/go-sqlite3, -tags harel_static: builds, both SQLites answer" go_sqlite
finish
