#!/usr/bin/env bash
# Makes sure each TOOL:PACKAGE given is on PATH: a missing tool's Debian package is
# installed when we are root and have apt-get (CI's case: a throwaway machine), else named.
# Used by the *-tools targets of mk/*.mk.
set -u
for need in "$@"; do
  tool=${need%%:*} package=${need##*:}
  command -v "$tool" >/dev/null && continue
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "$tool is missing: installing the Debian package $package"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" || exit 1
  else
    echo "$tool is missing: install the Debian package $package" >&2
    exit 1
  fi
done
