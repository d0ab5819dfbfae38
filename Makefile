# harel-transport: `make demo` runs the main job, `make test` runs every test.
# Each part of the build lives in mk/<part>.mk; this file holds what they share.

PREFIX      ?= /usr/local
CARGO       ?= cargo
PYTHON      ?= python3
BUILD       := build
RELEASE_DIR := target/release
LIB_SO      := $(RELEASE_DIR)/libharel_transport.so
LIB_A       := $(RELEASE_DIR)/libharel_transport.a
# The ops CLI's binary (cli/).
CLI_BIN     := $(RELEASE_DIR)/harel-transport
# The targets that build LIB_SO and LIB_A, and CLI_BIN, which the packaging targets (wheel,
# npm-pack, deb, install) depend on. mk/dist.mk's make of its own overrides all five: the
# portable build's files, already built (empty targets).
LIB_TARGET  := lib
CLI_TARGET  := cli
VENV        := .venv
# The C and C++ compilers reach every command's environment, cargo's included: the `cc`
# build scripts of libsql and ring rebuild them whenever CC or CXX differs from the last
# build, and scripts that run `make install` (tests/install.sh, cmake_check.sh) would
# otherwise see them when the top-level cargo did not, each rebuild costing minutes.
export CC CXX
VERSION     := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
# The soname's number (docs/abi.md, "Versioning"), kept in build.rs.
ABI_VERSION := $(shell sed -n 's/^const ABI_VERSION: u32 = \([0-9]*\);/\1/p' build.rs)
# $(call timed,MINUTES,COMMAND) runs a test program, stopped past MINUTES (SIGTERM, then
# SIGKILL 10 s later) with a message naming it: a hang fails within minutes, not at CI's
# own timeout. Environment assignments go before the call.
timed = timeout -k 10 $(1)m $(2) || { s=$$?; case $$s in 124|137) echo "timed out after $(1) min: $(2)" >&2;; esac; exit $$s; }

# `make test` runs the package suites (test-python, test-npm, test-deb) on the artifacts of
# `make dist` (mk/dist.mk), the files a release ships, which its test-dist builds anyway: in
# the suites' makes TEST_ON_DIST is 1, each of them depends on dist-once and tests dist's file,
# instead of building a package of the release library as it does run alone (mk/python.mk's
# PY_TEST_WHEEL says why).
TEST_ON_DIST :=
# Every suite of `make test`: each mk/<part>.mk adds its own.
SUITES :=

.PHONY: all lib demo test venv clean
all: lib

# The shared and static libraries, release-built (bindings, examples and C tests link these).
# Programs linked against the build tree ask for the soname, which cargo does not make.
# Built with the CLI, in one graph: alone, the library's build resolves its dependencies'
# features otherwise than the CLI's does (clap's rustix, shared with cbindgen's), and
# cargo, which keeps one libharel_transport.so, rebuilt it (~30 s) at each switch between
# the two, several times in a `make test`.
LIB_BUILD := $(CARGO) build --release -p harel-transport -p harel-transport-cli
# The soname's link is made once, not again at every make: a suite's make runs this beside
# another suite's programs, which load the library by it.
SONAME_LINK := $(RELEASE_DIR)/libharel_transport.so.$(ABI_VERSION)
lib:
	$(LIB_BUILD)
	@[ "$$(readlink $(SONAME_LINK))" = libharel_transport.so ] || ln -sfv libharel_transport.so $(SONAME_LINK)

# Python with harel 0.9.0 and libsql, for the interop tests and the benchmark's peers.
venv: $(VENV)/.ready
$(VENV)/.ready:
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet harel==0.9.0 libsql==0.1.11
	touch $@

# `make test`: what every suite needs built once (the library, the venvs, the Node packages),
# then the suites in two lanes at once and tracing alone last (mk/suites.sh: each suite's output
# whole when it ends, a table of them all at the end). Lane 1 holds the big builds (the portable
# library, the fuzzer, the Rust tests); lane 2 the suites that keep one core busy or wait (on
# sqld, timeouts, child processes), then the package suites, once test-dist has made the files
# they test (made by then: test-dist is lane 1's first suite). The lanes' lengths are about
# even (docs/tests.md). Tracing runs when the others are done: its build makes the library
# again with the opentelemetry feature, in target/, after which any suite's `make lib` would
# rebuild it (a minute) and replace the file the other suites' programs are loading.
TEST_LANE_1 := test-dist test-reliability test-rust
TEST_LANE_2 := test-c test-exports test-docs test-modules test-cli test-console test-cpp test-faults \
	test-history test-go test-go-stress test-node test-deb@test-dist test-npm@test-dist test-python@test-dist
TEST_LAST   := test-tracing
test: lib venv node-deps
	@bash mk/suites.sh --make '$(MAKE) --no-print-directory TEST_ON_DIST=1' --logs $(BUILD)/suites \
		--all '$(SUITES)' --lane '$(TEST_LANE_1)' --lane '$(TEST_LANE_2)' --last '$(TEST_LAST)'

clean:
	$(CARGO) clean
	rm -rf $(BUILD) $(VENV)

include $(sort $(wildcard mk/*.mk))
