# The fault matrix of the server path (tests/faults; docs/server.md, "Faults: what the
# client does"): toxiproxy's toxics between the library and sqld (latency with jitter,
# bandwidth, a reset answer, a silent answer, a slicer) and sqld killed and restarted,
# each during publishes (plain and keyed, retried), claims, ack_and_claim, batches and
# transactions, on a remote queue, an embedded replica and two shards with the fault on
# one. Every call is logged in tests/history's format and each cell's history is checked
# by its checker. `make test-faults` runs the CI set (about two minutes, the silent-answer
# cells waiting out the library's busy timeout + 20 s); `make soak-faults` runs more
# faults, held longer, SOAK_FAULTS_ROUNDS times. Both need sqld: without HAREL_SQLD they
# say "skipped:" and succeed.
.PHONY: test-faults soak-faults faults-bin
SUITES += test-faults
soak: soak-faults

FAULTS_DIR         := $(BUILD)/faults
FAULTS_BIN         := $(FAULTS_DIR)/faults
SOAK_FAULTS_ROUNDS ?= 3
# More flags for the harness, e.g. FAULTS_FLAGS="-modes shards -faults kill -ops batch".
FAULTS_FLAGS       ?=
FAULTS_SKIP        := echo "skipped: faults: HAREL_SQLD is not set (the fault matrix needs sqld; see README, \"Running on sqld / Turso\")"

# The harness, built with cgo against this tree's library (as mk/go.mk's GO_CGO), after
# its formatting, vet and unit tests.
faults-bin: lib
	@unformatted="$$(gofmt -l tests/faults)"; \
		if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	mkdir -p $(FAULTS_DIR)
	cd tests/faults && $(GO_CGO) timeout 600 $(GO) vet . && \
		$(GO_CGO) timeout 300 $(GO) test -count=1 -timeout 120s . && \
		$(GO_CGO) timeout 600 $(GO) build -o $(CURDIR)/$(FAULTS_BIN) .

test-faults:
	@if [ -z "$$HAREL_SQLD" ]; then $(FAULTS_SKIP); exit 0; fi; \
		$(MAKE) --no-print-directory faults-bin && rm -rf $(FAULTS_DIR)/run && \
		timeout 420 $(FAULTS_BIN) -sqld "$$HAREL_SQLD" -dir $(FAULTS_DIR)/run $(FAULTS_FLAGS)

soak-faults:
	@if [ -z "$$HAREL_SQLD" ]; then $(FAULTS_SKIP); exit 0; fi; \
		$(MAKE) --no-print-directory faults-bin && rm -rf $(FAULTS_DIR)/soak && \
		timeout $$(( $(SOAK_FAULTS_ROUNDS) * 900 )) $(FAULTS_BIN) -sqld "$$HAREL_SQLD" -dir $(FAULTS_DIR)/soak \
			-soak -rounds $(SOAK_FAULTS_ROUNDS) $(FAULTS_FLAGS)
