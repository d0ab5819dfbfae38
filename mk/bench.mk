# The benchmark of issue #6: a release-built harness (the workspace crate bench/, binary
# `bench`), not a test: `cargo test` never builds it. It prints a table and, last, one line
# of JSON with every figure. Its Python peers (harel 0.9.0's LibsqlTransport and
# SqliteTransport, bench/peers.py) run in the venv. Then the Go benchmark of issue #15, and
# Node's fs latency with 100 waiting claims beside none (issue #26, bindings/node/bench).
.PHONY: bench bench-goqite
bench: venv
	$(CARGO) build --release -p harel-transport-bench -p harel-transport-cli
	$(RELEASE_DIR)/bench --python $(VENV)/bin/python --peers bench/peers.py --cli $(RELEASE_DIR)/harel-transport
	$(MAKE) --no-print-directory bench-goqite
	$(MAKE) --no-print-directory bench-node

# The Go binding beside goqite v0.4.0 (bench/goqite, its own Go module: goqite and
# mattn/go-sqlite3 come from the module proxy), on files under $(BUILD)/bench-goqite: a
# table, the targets of issue #15, and one line of JSON. A few minutes; not part of `make test`.
# mattn/go-sqlite3 is built with dbstat, which names the pages a call writes.
GO_BENCH := $(BUILD)/bench/goqite
bench-goqite: lib
	mkdir -p $(dir $(GO_BENCH)) $(BUILD)/bench-goqite
	cd bench/goqite && $(GO_CGO) $(GO) vet -tags sqlite_dbstat ./... && \
		$(GO_CGO) $(GO) build -tags sqlite_dbstat -o $(CURDIR)/$(GO_BENCH) .
	$(GO_BENCH) -dir $(BUILD)/bench-goqite

# Instructions per operation of this tree against BASE (a commit), both counted by callgrind
# in one run (bench/icount/compare.sh): `make bench-icount BASE=<commit>`. Deterministic, so
# it shows a change of a percent that `make bench`'s timings on a shared machine cannot.
.PHONY: bench-icount
bench-icount: lib
	@test -n "$(BASE)" || { echo "usage: make bench-icount BASE=<commit>"; exit 2; }
	bash bench/icount/compare.sh $(BASE)
