# The Go faces under a collector that runs all the time (GOGC=1) and cgo's strictest
# pointer checks (GOEXPERIMENT=cgocheck2): a binding that lets the GC read a stale address
# out of C memory, or hands C memory that holds Go pointers, crashes here (the heap
# corruption bench-goqite died of, fixed in capi.go's alloc). `make test` runs the binding's
# suite so; `make soak-go` the examples' too, and bench-goqite's program (goqite and
# mattn/go-sqlite3's own SQLite in the process beside ours) SOAK_GO_RUNS times so.
.PHONY: test-go-stress soak-go
SUITES += test-go-stress
soak: soak-go

GO_STRESS    := GOGC=1 GOEXPERIMENT=cgocheck2
SOAK_GO_RUNS ?= 10

test-go-stress: lib
	cd bindings/go && $(GO_CGO) $(GO_STRESS) $(GO) test -count=1 -timeout 10m ./...

# The examples' suites so too (their cgocheck2 build costs CI a minute), then the bench's
# program: each run a short bench (about half a minute), killed if it passes 10 minutes.
soak-go: lib
	cd examples/go && $(GO_CGO) $(GO_STRESS) $(GO) test -count=1 -timeout 5m ./...
	cd examples/go-prometheus && $(GO_CGO) $(GO_STRESS) $(GO) test -count=1 -timeout 5m ./...
	mkdir -p $(BUILD)/bench-goqite $(BUILD)/soak-go
	cd bench/goqite && $(GO_CGO) GOEXPERIMENT=cgocheck2 $(GO) build -tags sqlite_dbstat -o $(CURDIR)/$(BUILD)/soak-go/goqite .
	@failed=0; for run in $$(seq 1 $(SOAK_GO_RUNS)); do \
		if $(GO_STRESS) timeout 600 $(BUILD)/soak-go/goqite -dir $(BUILD)/bench-goqite -rounds 1 -idle 1 -wake 20 \
			-n 1000 -publish 500 > $(BUILD)/soak-go/run-$$run.log 2>&1; then echo "soak-go: run $$run passed"; \
		else failed=$$((failed + 1)); echo "soak-go: run $$run FAILED: $(BUILD)/soak-go/run-$$run.log"; \
			grep -m3 -E 'fatal error|panic|SIGSEGV' $(BUILD)/soak-go/run-$$run.log; fi; \
	done; echo "soak-go: $$(($(SOAK_GO_RUNS) - failed)) passed, $$failed failed"; test $$failed = 0
