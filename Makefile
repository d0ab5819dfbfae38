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
# `make dist` (mk/dist.mk), the files a release ships, which its test-dist builds anyway: when
# `test` is a goal, each of them depends on dist and tests dist's file, instead of building a
# package of the release library as it does run alone (mk/python.mk's PY_TEST_WHEEL says why).
TEST_ON_DIST := $(filter test,$(MAKECMDGOALS))

.PHONY: all lib demo test venv clean
all: lib

# The shared and static libraries, release-built (bindings, examples and C tests link these).
# Programs linked against the build tree ask for the soname, which cargo does not make.
# Built with the CLI, in one graph: alone, the library's build resolves its dependencies'
# features otherwise than the CLI's does (clap's rustix, shared with cbindgen's), and
# cargo, which keeps one libharel_transport.so, rebuilt it (~30 s) at each switch between
# the two, several times in a `make test`.
LIB_BUILD := $(CARGO) build --release -p harel-transport -p harel-transport-cli
lib:
	$(LIB_BUILD)
	ln -sf libharel_transport.so $(RELEASE_DIR)/libharel_transport.so.$(ABI_VERSION)

# Python with harel 0.9.0 and libsql, for the interop tests and the benchmark's peers.
venv: $(VENV)/.ready
$(VENV)/.ready:
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet harel==0.9.0 libsql==0.1.11
	touch $@

clean:
	$(CARGO) clean
	rm -rf $(BUILD) $(VENV)

include $(sort $(wildcard mk/*.mk))
