# The Rust core's tests (contract, schema, concurrency, processes, interop). `lib` first:
# tests/other_writers.rs loads the shared library into a Python process.
.PHONY: test-rust
test: test-rust
test-rust: venv lib
	HAREL_PYTHON=$(CURDIR)/$(VENV)/bin/python $(CARGO) test --release
