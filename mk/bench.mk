# The benchmark of issue #6: a release-built harness (the workspace crate bench/, binary
# `bench`), not a test: `cargo test` never builds it. It prints a table and, last, one line
# of JSON with every figure. Its Python peers (harel 0.9.0's LibsqlTransport and
# SqliteTransport, bench/peers.py) run in the venv. Then the Go benchmark of issue #15, and
# Node's fs latency with 100 waiting claims beside none (issue #26, bindings/node/bench).
# Last, every face against C (issue #35, `make bench-faces`, bench/faces): the same drain
# from C, C++, Rust, Go, Node, Python and harel's drop-in, in µs per message and as a ratio
# to C beside each face's target.
.PHONY: bench bench-goqite bench-faces bench-rules
bench: venv
	$(CARGO) build --release -p harel-transport-bench -p harel-transport-cli
	$(RELEASE_DIR)/bench --python $(VENV)/bin/python --peers bench/peers.py --cli $(RELEASE_DIR)/harel-transport
	$(MAKE) --no-print-directory bench-goqite
	$(MAKE) --no-print-directory bench-node
	$(MAKE) --no-print-directory bench-faces
	$(MAKE) --no-print-directory bench-headers
	$(MAKE) --no-print-directory bench-rules

# The rules a message lives by (issue #38, bench/rules.rs): each cost beside its yardstick
# in the same run, on a file at FULL, in memory and on sqld (HAREL_SQLD). About a minute.
bench-rules:
	$(CARGO) build --release -p harel-transport-bench --bin bench-rules
	$(RELEASE_DIR)/bench-rules

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

# Every face against C (issue #35): one program per face in bench/faces doing the same
# claim+ack and ack_and_claim drains at synchronous NORMAL, on a file and on ":memory:",
# run FACES_REPEAT times round-robin by bench/faces/run.py (which builds nothing: this does).
# A face whose toolchain is missing is left a NAME.unavailable note, and the table says so
# instead of failing the run; a face that fails to build fails it. About a minute. The Rust
# face compiles src/ itself and the others load lib's build of it: src/ edited between the
# two builds makes the Rust row compare other code.
FACES_BIN    := $(BUILD)/bench/faces
FACES_REPEAT ?= 3
bench-faces: lib venv
	$(CARGO) build --release -p harel-transport-bench --bin bench-face
	mkdir -p $(FACES_BIN) $(BUILD)/bench-faces
	rm -f $(FACES_BIN)/*.unavailable
	$(CC) -std=c11 -O2 -Wall -Wextra bench/faces/face.c $(C_LINK) -o $(FACES_BIN)/c
	@if command -v $(CXX) >/dev/null; then \
		echo '$(CXX) -std=c++17 -O2 -Wall -Wextra bench/faces/face.cpp $(CPP_LINK) -o $(FACES_BIN)/cpp'; \
		$(CXX) -std=c++17 -O2 -Wall -Wextra bench/faces/face.cpp $(CPP_LINK) -o $(FACES_BIN)/cpp; \
	else rm -f $(FACES_BIN)/cpp; echo "no C++ compiler ($(CXX)) on PATH" > $(FACES_BIN)/cpp.unavailable; fi
	@if command -v $(GO) >/dev/null; then \
		echo 'cd bench/faces/go && go vet ./... && go build -o $(FACES_BIN)/go .'; \
		cd bench/faces/go && $(GO_CGO) $(GO) vet ./... && $(GO_CGO) $(GO) build -o $(CURDIR)/$(FACES_BIN)/go .; \
	else rm -f $(FACES_BIN)/go; echo "no Go toolchain ($(GO)) on PATH" > $(FACES_BIN)/go.unavailable; fi
	@if command -v $(NODE) >/dev/null && command -v $(NPM) >/dev/null; then \
		$(MAKE) --no-print-directory node-deps; \
	else echo "no $(NODE) or $(NPM) on PATH" > $(FACES_BIN)/node.unavailable; fi
	$(VENV)/bin/python bench/faces/run.py --repeat $(FACES_REPEAT) --bin-dir $(FACES_BIN) \
		--dir $(BUILD)/bench-faces --node $(NODE)

# Instructions per operation of this tree against BASE (a commit), both counted by callgrind
# in one run (bench/icount/compare.sh): `make bench-icount BASE=<commit>`. Deterministic, so
# it shows a change of a percent that `make bench`'s timings on a shared machine cannot.
# `make bench-icount PORTABLE=1`: the portable library the release artifacts carry
# (mk/dist.mk's portable-lib) against this tree's release library instead.
.PHONY: bench-icount
bench-icount: lib $(if $(PORTABLE),portable-lib)
	@test -n "$(BASE)$(PORTABLE)" || { echo "usage: make bench-icount BASE=<commit> | PORTABLE=1"; exit 2; }
	bash bench/icount/compare.sh $(if $(PORTABLE),--portable $(PORTABLE_DIR),$(BASE))
