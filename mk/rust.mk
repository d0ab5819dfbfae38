# The Rust core's tests (contract, schema, concurrency, processes, interop). `lib` first:
# tests/other_writers.rs loads the shared library into a Python process.
#
# The server suites (tests/server*.rs, on a real sqld when HAREL_SQLD names one) spend most
# of their minutes waiting: on sqld's stream and transaction timeouts, its restarts, its
# answers. So once every test is built they run beside the others, in a cargo of their own
# (cargo holds its lock only while it builds), and their output follows the others':
# about three minutes less of CI. Each suite bounds its tests itself (testkit's
# time_limit); the timeouts below bound a hang of the whole.
.PHONY: test-rust
SUITES += test-rust

RUST_SERVER_TESTS := $(basename $(notdir $(wildcard tests/server*.rs)))
# tests/tracing.rs needs the opentelemetry feature: mk/tracing.mk runs it.
RUST_OTHER_TESTS  := $(filter-out $(RUST_SERVER_TESTS) tracing,$(basename $(notdir $(wildcard tests/*.rs))))
RUST_SERVER_LOG   := $(BUILD)/rust/server-suites.log

test-rust: venv lib
	$(CARGO) test --release --no-run
	@mkdir -p $(dir $(RUST_SERVER_LOG))
	@( timeout -k 10 40m $(CARGO) test --release $(RUST_SERVER_TESTS:%=--test %) >$(RUST_SERVER_LOG) 2>&1; \
		echo $$? >$(RUST_SERVER_LOG).status ) & \
	HAREL_PYTHON=$(CURDIR)/$(VENV)/bin/python timeout -k 10 40m $(CARGO) test --release --lib \
		$(RUST_OTHER_TESTS:%=--test %); others=$$?; \
	wait; server=$$(cat $(RUST_SERVER_LOG).status); \
	echo "---- the server suites ($(RUST_SERVER_TESTS)), run beside the others:"; cat $(RUST_SERVER_LOG); \
	verdict() { case $$1 in 0) echo passed;; 124|137) echo "TIMED OUT (40 min)";; *) echo FAILED;; esac; }; \
	echo "rust: the others $$(verdict $$others), the server suites $$(verdict $$server)"; \
	[ $$others = 0 ] && [ $$server = 0 ]
