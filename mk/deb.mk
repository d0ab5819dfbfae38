# The Debian packages (issue #18): libharel-transport<ABI>, libharel-transport-dev and, when
# the tree has the ops CLI, harel-transport-tools (packaging/packages.sh). `make deb` builds
# them from the release build into $(DEB_DIR) (packaging/build-deb.sh: dpkg-dev's tools, no
# debhelper) and runs lintian on them, failing on any error; `make test-deb` installs them
# (in `make test`, the .debs of `make dist` instead: DEB_TEST_DIR) with dpkg -i, builds and
# runs the C example (pkg-config), a C++ program (CMake find_package), the Go binding (-tags
# harel_pkgconfig) and the CLI against the installed files alone, then purges the packages
# and checks nothing of them is left (packaging/test-deb.sh). Installing needs root: as
# another user test-deb says it is skipped.
.PHONY: deb test-deb deb-tools
SUITES += test-deb

DEB_DIR      := $(BUILD)/deb
DEB_REVISION ?= 1
# The glibc the packaged files were linked against, when it is not this machine's (build-deb.sh).
DEB_GLIBC_MIN :=
# The .debs test-deb installs: `make deb`'s when run alone; in `make test`, mk/dist.mk's
# (TEST_ON_DIST, Makefile; why: mk/python.mk's PY_TEST_WHEEL).
DEB_TEST_DIR  = $(if $(TEST_ON_DIST),$(DIST_DIR),$(DEB_DIR))
DEB_ENV       = MAKE='$(MAKE)' DEB_REVISION='$(DEB_REVISION)' LIB_SO='$(LIB_SO)' LIB_A='$(LIB_A)' CLI_BIN='$(CLI_BIN)' DEB_GLIBC_MIN='$(DEB_GLIBC_MIN)' $(if $(DEB_MAINTAINER),DEB_MAINTAINER='$(DEB_MAINTAINER)')

deb: $(LIB_TARGET) $(if $(wildcard cli/Cargo.toml),$(CLI_TARGET)) deb-tools
	$(DEB_ENV) bash packaging/build-deb.sh $(DEB_DIR)
	lintian --fail-on error --display-info $(DEB_DIR)/*_$(VERSION)-$(DEB_REVISION)_*.deb

test-deb: $(if $(TEST_ON_DIST),dist-once)
	@if [ "$$(id -u)" != 0 ]; then \
	  echo "test-deb: skipped: it installs and removes the packages with dpkg, which needs root" \
	    "(run make test-deb as root on a machine you can change)"; \
	else \
	  $(if $(TEST_ON_DIST),,$(MAKE) --no-print-directory deb &&) $(MAKE) --no-print-directory cpp-tools && \
	  $(DEB_ENV) GO='$(GO)' CC='$(CC)' CXX='$(CXX)' $(call timed,30,bash packaging/test-deb.sh $(DEB_TEST_DIR)); \
	fi

# What building and checking the packages takes: dpkg-dev (dpkg-shlibdeps, dpkg-gencontrol,
# dpkg-architecture), help2man (the CLI's man page) and lintian; installed from Debian's packages when missing and we are
# root, otherwise named.
deb-tools:
	@bash mk/need.sh dpkg-shlibdeps:dpkg-dev dpkg-gencontrol:dpkg-dev help2man:help2man lintian:lintian
