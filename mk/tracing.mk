# Tracing (issue #37, docs/tracing.md): the Rust face's spans (tests/tracing.rs, with the
# cargo feature `opentelemetry`: the same target directory, so only this crate and the
# `opentelemetry` crates build again, not libsql's tree), then one trace across languages
# (tests/tracing/run.py): C and Go producers, a Go, Node, Python and Rust worker each in
# its own process, on a file and on sqld ($(HAREL_SQLD)).
.PHONY: test-tracing tracing-tools bench-headers
SUITES += test-tracing

C_PRODUCER   := $(BUILD)/tracing/c_producer
RUST_WORKER  := $(RELEASE_DIR)/examples/tracing_worker

tracing-tools: lib tracing-go node-deps python-tracing-worker
	mkdir -p $(dir $(C_PRODUCER))
	$(CC) $(C_FLAGS) tests/tracing/c_producer.c $(C_LINK) -o $(C_PRODUCER)
	$(CARGO) build --release --features opentelemetry --example tracing_worker

test-tracing: tracing-tools
	$(call timed,10,$(CARGO) test --release --features opentelemetry --test tracing)
	$(call timed,6,$(PYTHON) tests/tracing/run.py --c-producer $(C_PRODUCER) \
		--go-producer $(GO_TRACING)/tracing-producer --go-worker $(GO_TRACING)/tracing-worker \
		--node-worker "node bindings/node/tools/tracing-worker.mjs" \
		--python-worker "$(PY_TEST_VENV)/bin/python bindings/python/tools/tracing_worker.py" \
		--rust-worker $(RUST_WORKER))

# The cost of headers and tracing against their yardsticks (bench/headers.rs), on a file
# at FULL and on sqld when HAREL_SQLD names it.
bench-headers:
	$(CARGO) build --release -p harel-transport-bench --features otel --bin bench-headers
	$(RELEASE_DIR)/bench-headers
