# The benchmark of issue #6: a release-built harness (examples/bench.rs), not a test.
# It prints a table and, last, one line of JSON with every figure. Its Python peers
# (harel 0.9.0's LibsqlTransport and SqliteTransport, bench/peers.py) run in the venv.
.PHONY: bench
bench: venv
	$(CARGO) build --release --example bench
	$(RELEASE_DIR)/examples/bench --python $(VENV)/bin/python --peers bench/peers.py
