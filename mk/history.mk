# The history checker (issue #41, tests/history/README.md): clients of several languages
# and processes (Go through the C ABI, Rust, this library's Python package, harel 0.9's
# own SqliteTransport) make random calls on one queue file, logging each call's invocation
# and completion; some are killed with SIGKILL and started again; the queue is drained and
# dumped, and a checker (its own checks, and porcupine v1.3.1 from the Go module proxy on a
# model of a group) verifies the queue's promises on the history.
#
#   make test-history   the checker's unit tests; HISTORY_SECONDS (25) of history with
#                       every client, which must pass; and three times 8 s with a rogue
#                       client (a planted bug: plain SQL around the library), each of which
#                       must be caught by the property it breaks
#   make soak           SOAK_SECONDS (600) of history, which must pass; with it the Go
#                       programs under GOGC=1 (go-stress.mk) and the soak faults (faults.mk)
.PHONY: test-history soak history-tools
SUITES += test-history

HISTORY_DIR     := tests/history
HISTORY_BIN     := $(BUILD)/history/bin
HISTORY_RUNS    := $(BUILD)/history/runs
HISTORY_RUST    := $(RELEASE_DIR)/examples/history_client
HISTORY_SECONDS ?= 25
SOAK_SECONDS    ?= 600
# Every client of every language: Go (the C ABI), Rust, Python (this library's package,
# from bindings/python on the release library), harel 0.9 (the venv's).
HISTORY_RUN = $(HISTORY_BIN)/run -client $(HISTORY_BIN)/client -rust-client $(HISTORY_RUST) \
	-venv-python $(VENV)/bin/python -sys-python $(PYTHON) -scripts $(HISTORY_DIR) \
	-pythonpath bindings/python -lib $(LIB_SO)
HISTORY_ALL := -go 2 -rust 2 -python 1 -harel 1

# The Rust client (a cargo example), the Go programs (client, run, check) and the venv.
history-tools: lib venv
	timeout 1800 $(CARGO) build --release --example history_client
	@unformatted="$$(gofmt -l $(HISTORY_DIR))"; \
		if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	cd $(HISTORY_DIR) && $(GO_CGO) timeout 600 $(GO) vet ./... && \
		$(GO_CGO) timeout 600 $(GO) build -o $(CURDIR)/$(HISTORY_BIN)/ ./cmd/...

test-history: history-tools
	cd $(HISTORY_DIR) && $(GO_CGO) timeout 300 $(GO) test -count=1 -timeout 4m ./...
	rm -rf $(HISTORY_RUNS) && mkdir -p $(HISTORY_RUNS)
	timeout $$(( $(HISTORY_SECONDS) + 240 )) $(HISTORY_RUN) -dir $(HISTORY_RUNS)/clean \
		-seconds $(HISTORY_SECONDS) $(HISTORY_ALL)
	timeout 240 $(HISTORY_RUN) -dir $(HISTORY_RUNS)/rogue-skip-group-check -seconds 8 \
		-go 1 -rust 1 -harel 1 -rogue skip-group-check -expect one-holder-per-group -show 1
	timeout 240 $(HISTORY_RUN) -dir $(HISTORY_RUNS)/rogue-redeliver -seconds 8 \
		-go 1 -rust 1 -harel 1 -rogue redeliver -expect no-redelivery-after-ack -show 1
	timeout 240 $(HISTORY_RUN) -dir $(HISTORY_RUNS)/rogue-stale-ack -seconds 8 \
		-go 1 -rust 1 -harel 1 -rogue stale-ack -expect stale-ack-refused -show 1

soak: history-tools
	mkdir -p $(HISTORY_RUNS) && rm -rf $(HISTORY_RUNS)/soak
	timeout $$(( $(SOAK_SECONDS) * 2 + 600 )) $(HISTORY_RUN) -dir $(HISTORY_RUNS)/soak \
		-seconds $(SOAK_SECONDS) $(HISTORY_ALL) -drain 15 -linear-timeout 600
