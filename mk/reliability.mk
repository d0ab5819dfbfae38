# Reliability (issue #7), the parts `cargo test` doesn't run: the C tests under
# AddressSanitizer + LeakSanitizer, and the fuzzer of the C ABI (fuzz/, see fuzz/README.md)
# for a bounded time from the checked-in corpus. The crash, contention, storage-fault and
# hostile-input tests are tests/*.rs and run with the rest (`make test-rust`).
#
#   make test-reliability              ASan C tests + FUZZ_SECONDS (60) of fuzzing
#   make fuzz [FUZZ_LONG_SECONDS=1200]  a longer run; new inputs stay in $(FUZZ_WORK)
#   make fuzz-merge                    fold what a long run found into fuzz/corpus/abi, minimized
.PHONY: test-reliability test-c-asan fuzz fuzz-build fuzz-run fuzz-merge fuzz-tools
SUITES += test-reliability

# FUZZ_SECONDS=0 leaves the fuzzer out (its instrumented build costs ~8 CPU-minutes).
test-reliability: test-c-asan
	@if [ "$(FUZZ_SECONDS)" = 0 ]; then echo "test-reliability: fuzzing skipped (FUZZ_SECONDS=0)"; \
	else $(MAKE) --no-print-directory fuzz-run FUZZ_TIME=$(FUZZ_SECONDS); fi

# ---- the C tests under ASan + LSan ----------------------------------------------------------
# gcc's -fsanitize=address (libasan comes with Debian's gcc). The library is the release
# build; ASan's allocator tracks its mallocs too, so a leak in it is reported. No
# suppressions are needed today: a new leak fails this target.
C_ASAN_DIR := $(BUILD)/tests/c-asan
C_ASAN_ENV := ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1

test-c-asan: lib
	@mkdir -p $(C_ASAN_DIR)
	$(CC) $(C_FLAGS) -g -O1 -fsanitize=address -fno-omit-frame-pointer -DEXPECTED_VERSION='"$(VERSION)"' \
		$(C_ABI_SRCS) $(C_LINK) -pthread -lm -o $(C_ASAN_DIR)/test_abi
	$(C_ASAN_ENV) $(call timed,10,$(C_ASAN_DIR)/test_abi)

# ---- the fuzzer -------------------------------------------------------------------------------
# fuzz/ is a crate of its own (its own [workspace] and Cargo.lock). It is built the way
# cargo-fuzz builds (SanitizerCoverage for libFuzzer, AddressSanitizer, debug assertions),
# with plain cargo: stable rustc takes the -Z flags with RUSTC_BOOTSTRAP=1. The target
# triple is explicit so build scripts are not instrumented. libfuzzer-sys compiles
# libFuzzer itself, with the C++ compiler.
FUZZ_SECONDS      ?= 60
FUZZ_LONG_SECONDS ?= 1200
FUZZ_TRIPLE       := x86_64-unknown-linux-gnu
FUZZ_BIN          := fuzz/target/$(FUZZ_TRIPLE)/release/abi
FUZZ_WORK         := $(BUILD)/fuzz
FUZZ_RUSTFLAGS    := -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
	-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
	-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Zsanitizer=address \
	-Cdebug-assertions -Coverflow-checks -Cforce-frame-pointers=yes
# No LSan suppressions: a leak fails the run.
FUZZ_ENV := ASAN_OPTIONS=detect_leaks=1

fuzz-tools:
	@bash mk/need.sh c++:g++

# The build's own helpers (a parser generator in libsql) are compiled with ASan too, and
# leak on purpose at exit: leak detection is off while building.
fuzz-build: fuzz-tools
	cd fuzz && RUSTC_BOOTSTRAP=1 RUSTFLAGS="$(FUZZ_RUSTFLAGS)" ASAN_OPTIONS=detect_leaks=0 \
		$(CARGO) build --release --target $(FUZZ_TRIPLE) --bin abi

# Every regression input (fuzz/regressions/, when there are any) once, then FUZZ_TIME seconds
# of fuzzing from the checked-in corpus (read only: new inputs go to $(FUZZ_WORK)/corpus,
# crashes to $(FUZZ_WORK)/artifacts).
FUZZ_TIME        ?= $(FUZZ_SECONDS)
FUZZ_REGRESSIONS := $(wildcard fuzz/regressions/*)
fuzz-run: fuzz-build
	@mkdir -p $(FUZZ_WORK)/corpus $(FUZZ_WORK)/artifacts
	$(if $(FUZZ_REGRESSIONS),$(FUZZ_ENV) $(FUZZ_BIN) -runs=1 $(FUZZ_REGRESSIONS))
	$(FUZZ_ENV) $(FUZZ_BIN) -max_total_time=$(FUZZ_TIME) -print_final_stats=1 -timeout=30 \
		-rss_limit_mb=4096 -artifact_prefix=$(FUZZ_WORK)/artifacts/ $(FUZZ_WORK)/corpus fuzz/corpus/abi

fuzz:
	$(MAKE) --no-print-directory fuzz-run FUZZ_TIME=$(FUZZ_LONG_SECONDS)

fuzz-merge: fuzz-build
	rm -rf $(FUZZ_WORK)/merged && mkdir -p $(FUZZ_WORK)/merged
	$(FUZZ_ENV) $(FUZZ_BIN) -set_cover_merge=1 $(FUZZ_WORK)/merged fuzz/corpus/abi $(FUZZ_WORK)/corpus
	rm -rf fuzz/corpus/abi && mv $(FUZZ_WORK)/merged fuzz/corpus/abi
