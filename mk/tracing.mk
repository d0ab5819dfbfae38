# Tracing (issue #37, docs/tracing.md): the Rust face's spans (tests/tracing.rs, with the
# cargo feature `opentelemetry`, built in a target directory of its own so the other
# builds keep the library without it), then one trace across languages
# (tests/tracing/run.py): C and Go producers, a Go, Node, Python and Rust worker each in
# its own process, on a file and on sqld ($(HAREL_SQLD)).
.PHONY: test-tracing tracing-tools bench-headers
test: test-tracing

OTEL_TARGET  := target/otel
C_PRODUCER   := $(BUILD)/tracing/c_producer
RUST_WORKER  := $(OTEL_TARGET)/release/examples/tracing_worker

tracing-tools: lib tracing-go node-deps python-tracing-worker
	mkdir -p $(dir $(C_PRODUCER))
	$(CC) $(C_FLAGS) tests/tracing/c_producer.c $(C_LINK) -o $(C_PRODUCER)
	CARGO_TARGET_DIR=$(OTEL_TARGET) $(CARGO) build --release --features opentelemetry --example tracing_worker

test-tracing: tracing-tools
	CARGO_TARGET_DIR=$(OTEL_TARGET) $(call timed,10,$(CARGO) test --release --features opentelemetry --test tracing)
	$(call timed,6,$(PYTHON) tests/tracing/run.py --c-producer $(C_PRODUCER) \
		--go-producer $(GO_TRACING)/tracing-producer --go-worker $(GO_TRACING)/tracing-worker \
		--node-worker "node bindings/node/tools/tracing-worker.mjs" \
		--python-worker "$(PY_TEST_VENV)/bin/python bindings/python/tools/tracing_worker.py" \
		--rust-worker $(RUST_WORKER))

# The cost of headers and tracing against their yardsticks (bench/headers.rs), on a file
# at FULL and on sqld when HAREL_SQLD names it.
bench-headers:
	CARGO_TARGET_DIR=$(OTEL_TARGET) $(CARGO) build --release -p harel-transport-bench --features otel --bin bench-headers
	$(OTEL_TARGET)/release/bench-headers
