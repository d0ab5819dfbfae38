#!/usr/bin/env bash
# packaging/glibc-check.sh LIBRARY [MAX]: prints the highest GLIBC_x.y[.z] symbol version that
# LIBRARY (a .so or an executable) needs from glibc, then the symbols that need more
# than MAX (default 2.17, manylinux2014's glibc), and exits 1 if any does, or if it needs a
# glibc function with no version at all (one the glibc it was linked against lacks: below).
# Exit: 0 within MAX, 1 above it, 2 usage or unreadable file.
set -euo pipefail
lib=${1:?usage: glibc-check.sh LIBRARY [MAX-GLIBC-VERSION, default 2.17]}
max=${2:-2.17}
[ -r "$lib" ] || { echo "glibc-check: cannot read $lib" >&2; exit 2; }
command -v readelf >/dev/null || { echo "glibc-check: needs readelf (binutils)" >&2; exit 2; }

# The versions the file needs (.gnu.version_r), one per line: "Name: GLIBC_2.14 ...".
# Undefined dynamic symbols carry them too (memcpy@GLIBC_2.14); version_r is the whole set,
# the symbol table says which function asks for each.
needed=$(readelf --version-info -W "$lib" | sed -n 's/.*Name: GLIBC_\([0-9][0-9.]*\).*/\1/p' | sort -u -V)

# A glibc function that the glibc linked against lacks (zig's stubs of glibc MAX have no
# statx, which came in 2.28) is left undefined with no version at all, so the versions above
# cannot show it; bound at load time (-z now), it keeps the library from loading on every
# glibc older than the function. So: the undefined, unversioned, non-weak symbols that this
# machine's glibc libraries define are each named, and fail the check. (Other unversioned
# ones, such as a Node addon's napi_*, are the host program's.)
unversioned=$(readelf --dyn-syms -W "$lib" | awk '$5 == "GLOBAL" && $7 == "UND" && $8 != "" && $8 !~ /@/ { print $8 }' | sort -u)
missing=""
if [ -n "$unversioned" ]; then
  glibc_libs=$(ldconfig -p 2>/dev/null | awk '$1 ~ /^lib(c|m|pthread|dl|rt|util|resolv)\.so\.[0-9]+$/ && /x86-64|64bit/ { print $NF }' | sort -u)
  if [ -n "$glibc_libs" ]; then
    # shellcheck disable=SC2086
    missing=$(comm -12 <(printf '%s\n' "$unversioned") \
      <(nm -D --defined-only $glibc_libs 2>/dev/null | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' | sort -u))
  fi
fi

if [ -z "$needed" ]; then
  echo "$lib: needs no versioned glibc symbol"
  needed=0
  highest=none
else
  highest=$(printf '%s\n' "$needed" | tail -1)
  echo "$lib: highest GLIBC_$highest (limit $max)"
fi
if [ -n "$missing" ]; then
  echo "  unversioned (newer than the glibc it was linked against, so it cannot load there): $(echo $missing)"
fi
# Above the limit: the newest of (version, max) is not max.
above=$(printf '%s\n' "$needed" | while read -r v; do
  [ "$(printf '%s\n%s\n' "$v" "$max" | sort -V | tail -1)" = "$max" ] || echo "$v"
done)
if [ -z "$above" ]; then [ -z "$missing" ]; exit; fi
for v in $above; do
  syms=$(readelf --dyn-syms -W "$lib" | awk -v tag="@GLIBC_$v" '$7 == "UND" { n = $8; if (index(n, tag) && substr(n, length(n) - length(tag) + 1) == tag) { sub(/@.*/, "", n); printf "%s ", n } }')
  echo "  GLIBC_$v: ${syms:-?}"
done
exit 1
