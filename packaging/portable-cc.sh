#!/bin/sh
# packaging/portable-cc.sh: the target's C compiler in the portable build (mk/dist.mk's
# portable-lib), as CC_x86_64-unknown-linux-gnu, which the `cc` crate reads before the
# CC_x86_64_unknown_linux_gnu that cargo-zigbuild sets to its zig cc. By the package whose
# build script calls it: libsql-ffi's SQLite gets PORTABLE_SQLITE_CC (the normal build's gcc:
# clang's code for it costs publish_many 3% more instructions, mk/dist.mk), the rest zig cc.
# zig links both against glibc 2.17.
case ${CARGO_PKG_NAME-} in
  # Unquoted: a compiler given with arguments ("ccache gcc") splits into them.
  libsql-ffi) exec ${PORTABLE_SQLITE_CC:?} "$@" ;;
  *) exec "${CC_x86_64_unknown_linux_gnu:?cargo-zigbuild set no zig cc}" "$@" ;;
esac
