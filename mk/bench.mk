# The benchmark of issue #6: a release-built harness (the workspace crate bench/, binary
# `bench`), not a test: `cargo test` never builds it. It prints a table and, last, one line
# of JSON with every figure. Its Python peers (harel 0.9.0's LibsqlTransport and
# SqliteTransport, bench/peers.py) run in the venv.
.PHONY: bench
bench: venv
	$(CARGO) build --release -p harel-transport-bench
	$(RELEASE_DIR)/bench --python $(VENV)/bin/python --peers bench/peers.py
