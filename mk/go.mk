# The Go binding (bindings/go), its worker example (examples/go) and its Prometheus example
# (examples/go-prometheus, a module of its own so that the binding does not depend on
# client_golang, which `go test` fetches through the module proxy as its go.sum pins it; the
# binding's own OpenTelemetry modules come the same way), built with cgo against this tree's library: `make test-go` runs their tests, `make
# examples-go` builds the worker.
.PHONY: test-go examples-go tracing-go
SUITES += test-go

GO         ?= go
GO_PREFIX  := $(BUILD)/go/prefix
GO_WORKER  := $(BUILD)/examples/go/worker
# The header from include/; the library from the release build, also at run time (rpath).
GO_CGO := CGO_ENABLED=1 CGO_CFLAGS="-I$(CURDIR)/include" \
	CGO_LDFLAGS="-L$(CURDIR)/$(RELEASE_DIR) -Wl,-rpath,$(CURDIR)/$(RELEASE_DIR)"

# Formatting, vet and the race-checked tests of the binding and the example; then the
# binding's smoke test, leak test and examples once more the way an installed library is
# used: -tags harel_pkgconfig against a `make install` into $(GO_PREFIX) (its soname
# libharel_transport.so.$(ABI_VERSION)). That build has a Go cache of its own: Go's cache key
# leaves out what pkg-config prints, so a package cached with another prefix's flags (the
# Debian package's, from test-deb) would be linked without this prefix's -L.
GO_PKGCONFIG_CACHE := $(BUILD)/go/cache-pkgconfig
# A hang fails within minutes: -timeout bounds each package's test binary (Go has no limit
# per test) and, when it fires, panics naming the tests still running. The binding's tests
# take 1-2 minutes under -race on a loaded machine, the examples' seconds.
test-go: lib
	@unformatted="$$(gofmt -l bindings/go examples/go examples/go-prometheus)"; \
		if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	cd bindings/go && $(GO_CGO) $(GO) vet ./... && $(GO_CGO) $(GO) test -race -count=1 -timeout 10m ./...
	cd examples/go && $(GO_CGO) $(GO) vet ./... && $(GO_CGO) $(GO) test -race -count=1 -timeout 5m ./...
	cd examples/go-prometheus && $(GO_CGO) $(GO) vet ./... && $(GO_CGO) $(GO) test -race -count=1 -timeout 5m ./...
	$(MAKE) --no-print-directory install PREFIX=$(CURDIR)/$(GO_PREFIX)
	cd bindings/go && CGO_ENABLED=1 CGO_CFLAGS= CGO_LDFLAGS= GOCACHE=$(CURDIR)/$(GO_PKGCONFIG_CACHE) \
		PKG_CONFIG_PATH=$(CURDIR)/$(GO_PREFIX)/lib/pkgconfig LD_LIBRARY_PATH=$(CURDIR)/$(GO_PREFIX)/lib \
		$(GO) test -tags harel_pkgconfig -count=1 -timeout 5m -run 'Example|TestSmoke|TestCallsFreeWhatTheyAllocate' ./...

examples-go: lib
	mkdir -p $(dir $(GO_WORKER))
	cd examples/go && $(GO_CGO) $(GO) build -o $(CURDIR)/$(GO_WORKER) .

# The Go programs of the cross-language trace test (tests/tracing/run.py): the worker and
# the producer (bindings/go/cmd/tracing-*), their options in bindings/go/README.md.
GO_TRACING := $(BUILD)/go/tracing
tracing-go: lib
	mkdir -p $(GO_TRACING)
	cd bindings/go && $(GO_CGO) $(GO) build -o $(CURDIR)/$(GO_TRACING)/ ./cmd/tracing-worker ./cmd/tracing-producer
