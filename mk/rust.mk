# The Rust core's tests (contract, schema, concurrency, processes, interop).
.PHONY: test-rust
test: test-rust
test-rust: venv
	HAREL_PYTHON=$(CURDIR)/$(VENV)/bin/python $(CARGO) test --release
