# The release artifacts (issue #40), built from a portable library that needs nothing of
# glibc newer than 2.17 (manylinux2014's: RHEL/CentOS 7, Ubuntu 14.04 and every Linux since).
#
#   make portable-lib   the library (.so and .a) and the ops CLI linked against glibc 2.17 by
#                       cargo-zigbuild (zig from PyPI's ziglang, in a venv of its own under
#                       $(BUILD)), in a target directory of its own ($(ZIG_TARGET_DIR)): the
#                       release build in target/ is never touched. Checked: the highest glibc
#                       symbol version it needs (packaging/glibc-check.sh, <= 2.17) and its
#                       exports (tests/exports.sh).
#   make dist           every artifact, from that library, in $(DIST_DIR): the tarball of the
#                       library (.so, .a, headers, pkg-config), the manylinux2014 wheel
#                       (checked by auditwheel), the npm package, the .debs, the Go module as
#                       a module proxy serves it (goproxy/), and SHA256SUMS of every file.
#                       The Go module carries the static library, made one object that exports
#                       the header's functions alone, in bindings/go/lib (not in git), which
#                       -tags harel_static links.
#   make test-dist      installs each artifact of $(DIST_DIR) into a clean place and runs a
#                       publish/claim/ack through it (tests/dist/run.sh).
#
# `make test` runs test-python, test-npm and test-deb on dist's wheel, npm package and .debs
# (TEST_ON_DIST, Makefile), so it packages each once, from the portable library: they depend
# on dist-once, which is dist unless a dist is there already, the one test-dist made (each
# suite is a make of its own, and mk/suites.sh runs them after test-dist).
#
# The wheel, the npm package and the .debs are built by their own targets (mk/python.mk's
# wheel, mk/npm.mk's npm-pack, mk/deb.mk's deb), run by a make of their own with the library's
# paths (LIB_SO, LIB_A, CLI_BIN) and the target that builds them (LIB_TARGET) overridden.
# dist-tarball, dist-wheel, dist-npm, dist-deb and dist-go are dist's steps, each usable alone
# after `make portable-lib`.
.PHONY: portable-lib portable-tools dist dist-once dist-wheel dist-npm dist-deb dist-tarball dist-go test-dist
SUITES += test-dist

DIST_DIR        := $(BUILD)/dist
ZIG_VENV        := $(BUILD)/zig-venv
ZIG_TARGET_DIR  := $(BUILD)/zig-target
PORTABLE_TRIPLE := x86_64-unknown-linux-gnu
PORTABLE_GLIBC  := 2.17
PORTABLE_DIR    := $(ZIG_TARGET_DIR)/$(PORTABLE_TRIPLE)/release
PORTABLE_SO     := $(PORTABLE_DIR)/libharel_transport.so
PORTABLE_A      := $(PORTABLE_DIR)/libharel_transport.a
PORTABLE_CLI    := $(PORTABLE_DIR)/harel-transport
# zig (PyPI's ziglang), cargo-zigbuild, and auditwheel, which checks the wheel.
DIST_TOOLS_REQS := ziglang==0.17.1 cargo-zigbuild==0.24.1 auditwheel==6.8.2
# The platform tags of a wheel that needs glibc 2.17 at most: PEP 600's and its PEP 599 alias.
WHEEL_PLAT      := manylinux_2_17_x86_64.manylinux2014_x86_64
# The C the build compiles: libSQL's SQLite with the normal build's compiler (PORTABLE_SQLITE_CC,
# the CC make exports: gcc), the rest (ring) with zig cc; packaging/portable-cc.sh picks by the
# build script's package. zig links it all against glibc 2.17. Compiled by zig's clang, SQLite
# cost publish_many 3% more instructions per message than gcc -O3's (bench/icount/ops.c under
# callgrind, against the normal build of the same tree; clang -O3 changed nothing); with gcc every
# phase counts what the normal build's does (docs/benchmark.md). gcc reads this machine's glibc
# headers, where SQLite's large files (_FILE_OFFSET_BITS=64) turn fcntl into fcntl64, of glibc
# 2.28: -DSQLITE_DISABLE_LFS, which on x86_64 changes no type (off_t, struct stat are 64-bit
# either way) and no function (each *64 is its plain name's alias). stat, fstat and lstat, glibc
# functions from 2.33 on, come from zig's libc_nonshared for 2.17 (through __xstat);
# -U_FORTIFY_SOURCE keeps out the __*_chk functions a distribution's gcc may default to.
# glibc-check.sh fails whatever other header turns a call into a newer symbol. These flags
# replace .cargo/config.toml's LIBSQLITE3_FLAGS, so they carry them. cargo rebuilds SQLite when
# they change, not when PORTABLE_SQLITE_CC does (a `cc` script tracks CC_<target>, the wrapper).
PORTABLE_SQLITE_CC    ?= $(CC)
PORTABLE_SQLITE_FLAGS := $(shell sed -n 's/^LIBSQLITE3_FLAGS = "\(.*\)"$$/\1/p' .cargo/config.toml) \
	-DSQLITE_DISABLE_LFS -U_FORTIFY_SOURCE
# zig cc keeps frame pointers (-mframe-pointer=all) where gcc -O3 omits them: they cost 1-6% more
# instructions per operation when zig compiled SQLite. Now for ring's C, as in the normal build.
PORTABLE_CFLAGS ?= -fomit-frame-pointer
# The library, the CLI, in one graph as LIB_BUILD (Makefile) builds them. With the venv's
# bin first in PATH: cargo-zigbuild finds zig there (python -m ziglang).
PORTABLE_ENV    := PATH='$(abspath $(ZIG_VENV))/bin':"$$PATH" CARGO_TARGET_DIR='$(abspath $(ZIG_TARGET_DIR))' \
	$(if $(PORTABLE_CFLAGS),CFLAGS_$(subst -,_,$(PORTABLE_TRIPLE))='$(PORTABLE_CFLAGS)') \
	PORTABLE_SQLITE_CC='$(PORTABLE_SQLITE_CC)' LIBSQLITE3_FLAGS='$(strip $(PORTABLE_SQLITE_FLAGS))' \
	env 'CC_$(PORTABLE_TRIPLE)=$(abspath packaging/portable-cc.sh)'
PORTABLE_BUILD  := $(PORTABLE_ENV) $(ZIG_VENV)/bin/cargo-zigbuild zigbuild --release \
	-p harel-transport -p harel-transport-cli --target $(PORTABLE_TRIPLE).$(PORTABLE_GLIBC)

# The venv, made again when DIST_TOOLS_REQS changes (its .ready holds them).
portable-tools:
	@if [ "$$(cat $(ZIG_VENV)/.ready 2>/dev/null)" != '$(DIST_TOOLS_REQS)' ]; then \
		set -x && rm -rf $(ZIG_VENV) && $(PYTHON) -m venv $(ZIG_VENV) && \
		$(ZIG_VENV)/bin/pip install --quiet $(DIST_TOOLS_REQS) && echo '$(DIST_TOOLS_REQS)' >$(ZIG_VENV)/.ready; \
	fi

portable-lib: portable-tools
	$(PORTABLE_BUILD)
	ln -sf libharel_transport.so $(PORTABLE_DIR)/libharel_transport.so.$(ABI_VERSION)
	bash packaging/glibc-check.sh $(PORTABLE_SO) $(PORTABLE_GLIBC)
	bash packaging/glibc-check.sh $(PORTABLE_CLI) $(PORTABLE_GLIBC)
	bash tests/exports.sh $(PORTABLE_SO)

# The packaging targets' make: the portable files, built already (no LIB_TARGET, CLI_TARGET),
# and work directories of their own under $(DIST_WORK), so a `make wheel` or `npm-pack` of the
# release build beside it writes elsewhere.
DIST_WORK    := $(BUILD)/dist-work
DIST_MAKE    := $(MAKE) --no-print-directory LIB_SO='$(abspath $(PORTABLE_SO))' \
	LIB_A='$(abspath $(PORTABLE_A))' CLI_BIN='$(abspath $(PORTABLE_CLI))' LIB_TARGET= CLI_TARGET=
DIST_TARNAME := harel-transport-$(VERSION)-linux-x86_64
DIST_TARBALL := $(DIST_DIR)/$(DIST_TARNAME).tar.gz
DIST_WHEEL   := harel_transport-$(VERSION)-py3-none-$(WHEEL_PLAT).whl
# The Go module's copy of the static library and of the header (bindings/go/link_static.go).
GO_STATIC_DIR := bindings/go/lib
# Archive members' times: the Debian changelog's latest entry, as the .debs' (reproducible).
DIST_EPOCH    = $(shell dpkg-parsechangelog -l packaging/debian/changelog -S Timestamp)

dist: portable-lib
	rm -rf $(DIST_DIR)
	mkdir -p $(DIST_DIR) $(DIST_WORK)
	$(MAKE) --no-print-directory dist-tarball dist-wheel dist-npm dist-deb dist-go
	cd $(DIST_DIR) && find . -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort | xargs sha256sum -- >SHA256SUMS
	@echo "make dist: $(DIST_DIR) (bytes, file):" && \
		cd $(DIST_DIR) && find . -type f -printf '%12s  %P\n' | LC_ALL=C sort -k2

dist-once:
	@test -f $(DIST_DIR)/SHA256SUMS || $(MAKE) --no-print-directory dist

# The tarball: what `make install` installs (the .so with its soname links, the .a, the C and
# C++ headers, pkg-config, CMake, the CLI) under one directory, stripped as the .debs strip.
# Its pkg-config file finds the prefix from where it lies (${pcfiledir}), as the CMake files do.
dist-tarball:
	rm -rf $(DIST_WORK)/tarball && mkdir -p $(DIST_WORK)/tarball
	$(DIST_MAKE) install DESTDIR='$(abspath $(DIST_WORK)/tarball)' PREFIX=/$(DIST_TARNAME) >$(DIST_WORK)/tarball.log
	cd $(DIST_WORK)/tarball/$(DIST_TARNAME) && \
		strip --remove-section=.comment --remove-section=.note --strip-unneeded lib/libharel_transport.so.$(VERSION) && \
		strip --strip-debug --remove-section=.comment --remove-section=.note --enable-deterministic-archives lib/libharel_transport.a && \
		strip --remove-section=.comment --remove-section=.note bin/harel-transport && \
		sed -i 's|^prefix=.*|prefix=$${pcfiledir}/../..|' lib/pkgconfig/harel_transport.pc && \
		cp $(CURDIR)/README.md $(CURDIR)/CHANGELOG.md .
	tar -C $(DIST_WORK)/tarball --sort=name --owner=0 --group=0 --numeric-owner --mtime=@$(DIST_EPOCH) \
		-cf - $(DIST_TARNAME) | gzip -9n >$(DIST_TARBALL)
	@echo "built $(DIST_TARBALL)"

# The wheel: mk/python.mk's, tagged manylinux2014 (PY_PLAT), then auditwheel's verdict, which
# must be that tag (it reads the library's glibc symbol versions and its libraries).
dist-wheel:
	$(DIST_MAKE) wheel PY_BUILD=$(DIST_WORK)/python PY_PLAT=$(WHEEL_PLAT)
	$(ZIG_VENV)/bin/auditwheel show $(DIST_WORK)/python/dist/$(DIST_WHEEL) | tee $(DIST_WORK)/auditwheel.txt
	@tr '\n' ' ' <$(DIST_WORK)/auditwheel.txt | grep -q 'consistent with the *following platform tag: *"manylinux_2_17_x86_64"' || \
		{ echo "auditwheel: the wheel is not manylinux_2_17_x86_64" >&2; exit 1; }
	cp $(DIST_WORK)/python/dist/$(DIST_WHEEL) $(DIST_DIR)/

# The npm package: mk/npm.mk's, with the portable library in prebuilds/.
dist-npm:
	$(DIST_MAKE) npm-pack NPM_DIR=$(DIST_WORK)/npm
	cp $(DIST_WORK)/npm/harel-transport-$(NPM_VERSION).tgz $(DIST_DIR)/

# The .debs: mk/deb.mk's (lintian included), from the portable library and CLI; their libc6
# dependency is the glibc they were linked against (DEB_GLIBC_MIN).
dist-deb:
	$(DIST_MAKE) deb DEB_DIR=$(DIST_WORK)/deb DEB_GLIBC_MIN=$(PORTABLE_GLIBC)
	cp $(DIST_WORK)/deb/*_$(VERSION)-$(DEB_REVISION)_*.deb $(DIST_DIR)/

# Go: the static library, as one object, and the header, into the module (not in git); then the
# module as a module proxy serves it, in $(DIST_DIR)/goproxy (packaging/goproxy.py), which `go
# get` reads with GOPROXY=file://... (tests/dist/run.sh; docs/install.md says how a release tag
# serves the same files). The object: the archive linked whole (ld -r), cut to what the header's
# functions reach (--gc-sections, each kept by -u); then objcopy makes every other symbol local,
# libSQL's own sqlite3_* and the Rust crates' among them, which would clash with another SQLite
# in the same program (mattn/go-sqlite3), drops the symbols no relocation needs, the debug info
# and LLVM's sections: the embedded bitcode (.llvmbc, .llvmcmd) no C linker reads, and
# .llvm_addrsig, whose symbol numbers the new symbol table makes wrong. It also drops the
# outside functions that only the cut code called (unused.txt): ld -r leaves them as local
# undefined symbols, which objcopy would write as global ones that every program's link must
# then find (copy_file_range, of glibc 2.27; pidfd_spawnp, 2.39). Checked: its global symbols
# are the header's functions (tests/exports.sh), and linked by zig against glibc
# $(PORTABLE_GLIBC) (zig's libunwind for libgcc_s) it needs no newer one (glibc-check.sh).
GO_ARCHIVE := $(GO_STATIC_DIR)/linux_amd64/libharel_transport.a
GO_WORK    := $(DIST_WORK)/go
ZIG_CC     := $(ZIG_VENV)/bin/python -m ziglang cc -target x86_64-linux-gnu.$(PORTABLE_GLIBC)
dist-go:
	rm -rf $(GO_WORK) && install -d $(GO_WORK) $(GO_STATIC_DIR)/linux_amd64 $(GO_STATIC_DIR)/include
	bash tests/exports.sh --header-names >$(GO_WORK)/abi.txt
	ld -r --whole-archive $(PORTABLE_A) --no-whole-archive --gc-sections $$(sed 's/^/-u /' $(GO_WORK)/abi.txt) \
		-o $(GO_WORK)/whole.o
	readelf -sW $(GO_WORK)/whole.o | awk '$$5 == "LOCAL" && $$7 == "UND" && $$8 != "" { print $$8 }' >$(GO_WORK)/unused.txt
	objcopy --keep-global-symbols=$(GO_WORK)/abi.txt --strip-symbols=$(GO_WORK)/unused.txt --strip-unneeded \
		--strip-debug --remove-section=.comment --remove-section=.note --remove-section=.llvmbc \
		--remove-section=.llvmcmd --remove-section=.llvm_addrsig $(GO_WORK)/whole.o $(GO_WORK)/harel_transport.o
	rm -f $(GO_ARCHIVE) && ar rcsD $(GO_ARCHIVE) $(GO_WORK)/harel_transport.o
	bash tests/exports.sh $(GO_ARCHIVE)
	$(ZIG_CC) -shared -o $(GO_WORK)/check.so -Wl,--whole-archive $(GO_ARCHIVE) -Wl,--no-whole-archive -lunwind
	bash packaging/glibc-check.sh $(GO_WORK)/check.so $(PORTABLE_GLIBC)
	install -m 644 include/harel_transport.h $(GO_STATIC_DIR)/include/harel_transport.h
	$(PYTHON) packaging/goproxy.py bindings/go $(VERSION) $(DIST_EPOCH) $(DIST_DIR)/goproxy \
		lib/linux_amd64/libharel_transport.a lib/include/harel_transport.h
	@echo "built $(GO_ARCHIVE) ($$(stat -c %s $(GO_ARCHIVE)) bytes) and $(DIST_DIR)/goproxy"

# Each artifact installed into a clean place, one publish/claim/ack through each.
test-dist: dist
	$(call timed,40,bash tests/dist/run.sh $(DIST_DIR))
