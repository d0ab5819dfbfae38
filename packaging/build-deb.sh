#!/usr/bin/env bash
# Builds the Debian packages from the release build (`make deb` runs it), with dpkg-dev's
# own tools and no debhelper: `make install` into a staging tree (PREFIX=/usr, the library
# in /usr/lib/<multiarch>), the files split into one tree per package, dpkg-shlibdeps for
# the computed Depends, dpkg-gencontrol for each DEBIAN/control (the version is Cargo.toml's
# plus DEB_REVISION; Installed-Size), md5sums, and dpkg-deb --root-owner-group (no root
# needed).
#
#   packaging/build-deb.sh OUTDIR      writes OUTDIR/<package>_<version>_<arch>.deb
#
# Environment: MAKE; DEB_REVISION (default 1), which packaging/debian/changelog's latest
# entry must carry; DEB_MAINTAINER (default: the changelog's latest signer); LIB_SO, LIB_A
# and CLI_BIN, the shared and static library and the CLI packaged (make's variables of those
# names; default the release build's, which `make install` builds first: when set, they are
# packaged as they are, nothing built, as `make dist` does with the portable library);
# DEB_GLIBC_MIN (make dist: 2.17), the glibc the packages' ELF files were linked against: each
# is checked to need no newer one (packaging/glibc-check.sh), and their libc6 dependency says
# that version instead of the one dpkg-shlibdeps infers from this machine's libc6 symbols
# file (Debian 12's gives pthread_create, dlopen and the like, which moved into libc.so.6 in
# glibc 2.34, the minimal version 2.34, though our files bind their 2.2.5 versions).
#
# The packages:
#   libharel-transport<ABI>  the shared library: .so.<VERSION> and its soname link .so.<ABI>
#   libharel-transport-dev   the headers, the .so link, the static library, pkg-config, CMake
#   harel-transport-tools    the ops CLI (cli/): /usr/bin/harel-transport and its man page
#                            (help2man), when the tree has cli/
# Adding one:
#   1. a stanza in packaging/debian/control.in (Package, Architecture: any, Section,
#      Depends: ${shlibs:Depends}, a Description);
#   2. a function stage_<the package's name with - as _, the ABI number left out> below that
#      copies its files from "$install" (everything `make install` installs under /usr)
#      into "$root" and sets shlib_files to the ELF files dpkg-shlibdeps computes Depends
#      from (none: an empty list);
#   3. its name in PACKAGES (packages.sh), and a check that uses it in packaging/test-deb.sh.
# Documents and md5sums are added to every package, and lintian checks each.
set -euo pipefail
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
out=${1:?usage: packaging/build-deb.sh OUTDIR}

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
abi=$(sed -n 's/^const ABI_VERSION: u32 = \([0-9]*\);/\1/p' build.rs)
revision=${DEB_REVISION:-1}
debversion=$version-$revision
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
libdir=usr/lib/$multiarch
source packaging/packages.sh # PACKAGES

latest=$(dpkg-parsechangelog -l packaging/debian/changelog -S Version)
if [ "$latest" != "$debversion" ]; then
  echo "packaging/debian/changelog's latest entry is $latest, not $debversion (Cargo.toml's $version," \
    "DEB_REVISION $revision): add an entry for $debversion" >&2
  exit 1
fi
maintainer=${DEB_MAINTAINER:-$(dpkg-parsechangelog -l packaging/debian/changelog -S Maintainer)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$out/work
rm -rf "$work"
mkdir -p "$work/src/debian"
for package in "${PACKAGES[@]}"; do rm -f "$out/${package}_"*.deb; done

# The source tree dpkg-shlibdeps and dpkg-gencontrol read: debian/control, debian/changelog.
sed -e "s|@ABI@|$abi|g" -e "s|@MAINTAINER@|$maintainer|g" packaging/debian/control.in >"$work/src/debian/control"
cp packaging/debian/changelog "$work/src/debian/changelog"

# Everything `make install` installs, under /usr.
install=$work/install
given=()
[ -n "${LIB_SO:-}" ] && given+=(LIB_SO="$LIB_SO" LIB_TARGET=)
[ -n "${LIB_A:-}" ] && given+=(LIB_A="$LIB_A")
[ -n "${CLI_BIN:-}" ] && given+=(CLI_BIN="$CLI_BIN" CLI_TARGET=)
if ! $MAKE --no-print-directory install DESTDIR="$install" PREFIX=/usr LIBSUBDIR="lib/$multiarch" "${given[@]}" \
  >"$work/install.log" 2>&1; then
  cat "$work/install.log" >&2
  exit 1
fi

# Reproducible: dpkg-deb stamps members and clamps file times to the changelog entry's date.
# Exported only now: the cc build scripts of ring and libsql watch SOURCE_DATE_EPOCH, so
# `make install` above with it set would rebuild the release build (and the next build
# without it would rebuild it again).
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(dpkg-parsechangelog -l packaging/debian/changelog -S Timestamp)}
export SOURCE_DATE_EPOCH

# ---- each package's files, from "$install" into "$root" ---------------------------------------

stage_libharel_transport() { # the shared library: the file and its soname link
  install -d "$root/$libdir"
  install -m 644 "$install/$libdir/libharel_transport.so.$version" "$root/$libdir/"
  ln -s "libharel_transport.so.$version" "$root/$libdir/libharel_transport.so.$abi"
  # Like dh_strip: no symbol table or .comment; the dynamic symbols stay.
  strip --remove-section=.comment --remove-section=.note --strip-unneeded \
    "$root/$libdir/libharel_transport.so.$version"
  # The library is found through ldconfig; dependent packages get Depends from shlibs.
  install -d "$root/DEBIAN"
  echo "libharel_transport $abi libharel-transport$abi (>= $version)" >"$root/DEBIAN/shlibs"
  echo "activate-noawait ldconfig" >"$root/DEBIAN/triggers"
  chmod 644 "$root/DEBIAN/shlibs" "$root/DEBIAN/triggers"
  shlib_files=("$root/$libdir/libharel_transport.so.$version")
}

stage_libharel_transport_dev() { # headers, the .so link, the static library, pkg-config, CMake
  install -d "$root/usr/include" "$root/$libdir/pkgconfig" "$root/$libdir/cmake/harel_transport"
  install -m 644 "$install/usr/include/harel_transport.h" "$install/usr/include/harel_transport.hpp" \
    "$root/usr/include/"
  ln -s "libharel_transport.so.$abi" "$root/$libdir/libharel_transport.so"
  install -m 644 "$install/$libdir/libharel_transport.a" "$root/$libdir/"
  strip --strip-debug --remove-section=.comment --remove-section=.note --enable-deterministic-archives \
    "$root/$libdir/libharel_transport.a"
  install -m 644 "$install/$libdir/pkgconfig/harel_transport.pc" "$root/$libdir/pkgconfig/"
  install -m 644 "$install/$libdir/cmake/harel_transport/"*.cmake "$root/$libdir/cmake/harel_transport/"
  shlib_files=()
}

stage_harel_transport_tools() { # the ops CLI and its man page
  install -d "$root/usr/bin" "$root/usr/share/man/man1"
  install -m 755 "$install/usr/bin/harel-transport" "$root/usr/bin/"
  strip --remove-section=.comment --remove-section=.note "$root/usr/bin/harel-transport"
  help2man --no-info --version-string="$version" \
    --name="look inside a harel-transport queue and repair it" \
    "$root/usr/bin/harel-transport" | gzip -9n >"$root/usr/share/man/man1/harel-transport.1.gz"
  chmod 644 "$root/usr/share/man/man1/harel-transport.1.gz"
  shlib_files=("$root/usr/bin/harel-transport")
}

# /usr/share/doc/<package>: copyright, the Debian changelog, the upstream CHANGELOG.md.
stage_docs() { # PACKAGE
  local doc="$root/usr/share/doc/$1"
  install -d "$doc"
  install -m 644 packaging/debian/copyright "$doc/copyright"
  gzip -9nc packaging/debian/changelog >"$doc/changelog.Debian.gz"
  gzip -9nc CHANGELOG.md >"$doc/changelog.gz"
  chmod 644 "$doc/changelog.Debian.gz" "$doc/changelog.gz"
}

for package in "${PACKAGES[@]}"; do
  root=$work/src/debian/$package # the layout dpkg-shlibdeps looks in for shlibs of packages being built
  mkdir -p "$root"
  stage=${package//-/_}
  stage=${stage/libharel_transport$abi/libharel_transport}
  "stage_$stage"
  stage_docs "$package"
  install -d "$root/DEBIAN"
  find "$root" -type d -exec chmod 755 {} +

  substvars=$work/src/debian/$package.substvars
  : >"$substvars"
  if [ ${#shlib_files[@]} -gt 0 ]; then
    (cd "$work/src" && dpkg-shlibdeps -T"debian/$package.substvars" -e"${shlib_files[@]}")
    if [ -n "${DEB_GLIBC_MIN:-}" ]; then
      for file in "${shlib_files[@]}"; do bash packaging/glibc-check.sh "$file" "$DEB_GLIBC_MIN" >/dev/null || {
        bash packaging/glibc-check.sh "$file" "$DEB_GLIBC_MIN" >&2; exit 1; }; done
      sed -i -E "s/libc6 \(>= [^)]*\)/libc6 (>= $DEB_GLIBC_MIN)/" "$substvars"
    fi
  fi
  (cd "$work/src" && dpkg-gencontrol -p"$package" -P"$root" -T"debian/$package.substvars" -v"$debversion")
  (cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z |
    xargs -0r md5sum >DEBIAN/md5sums)
  chmod 644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"
  dpkg-deb --root-owner-group -Zxz -z1 --build "$root" "$out/${package}_${debversion}_$arch.deb" >/dev/null
  echo "built $out/${package}_${debversion}_$arch.deb"
done
