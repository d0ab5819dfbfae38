# The Node binding (bindings/node): its tests with `node --test`, and its declarations
# type-checked by tsc on a typed usage file. The package finds the library the tests use
# in target/release, and its poll addon in $(BUILD)/node (see bindings/node/README.md,
# "Finding the library").
.PHONY: test-node node-deps node-poll bench-node
SUITES += test-node

NODE_DIR  := bindings/node
NODE_DEPS := $(NODE_DIR)/node_modules/.package-lock.json
NPM       ?= npm
NODE      ?= node

# The binding's packages (koffi; typescript for the check; prom-client for
# bindings/node/examples/prometheus.js and its test; @opentelemetry/api, an optional peer of
# the package, and @opentelemetry/sdk-trace-base, for the tracing tests and the
# cross-language trace test's worker, bindings/node/tools/tracing-worker.mjs, which needs
# lib and node-deps): `npm ci` from the lock when
# node_modules is missing or older than the package files, `npm install` when there is no
# lock. Anything that runs the binding (examples/node/worker.js too) depends on node-deps,
# which builds the poll addon its waiting claims need too (node-poll, below).
node-deps: $(NODE_DEPS) node-poll
$(NODE_DEPS): $(NODE_DIR)/package.json $(wildcard $(NODE_DIR)/package-lock.json)
	cd $(NODE_DIR) && if [ -f package-lock.json ]; then $(NPM) ci --no-audit --no-fund; else $(NPM) install --no-audit --no-fund; fi
	touch $@

# The poll addon (bindings/node/src/poll.c): how waiting claims watch the library's
# readiness descriptor from the event loop. Plain C against Node's N-API and libuv headers,
# which every Node installation carries in include/node beside bin/; the napi_* and uv_*
# symbols stay undefined and are Node's own when it loads the file. N-API version 8: one
# build serves every Node from 20 on. No node-gyp, nothing downloaded. -z nodelete: a worker
# thread's end unloads the addons it loaded before its loop runs the close callbacks of
# their handles, which are in the addon (a crash, without it).
NODE_POLL    := $(BUILD)/node/harel_transport_poll.node
NODE_INCLUDE ?= $(abspath $(dir $(shell readlink -f "$$(command -v $(NODE))"))../include/node)
node-poll: $(NODE_POLL)
$(NODE_POLL): $(NODE_DIR)/src/poll.c
	@test -f '$(NODE_INCLUDE)/node_api.h' || { echo "node-poll: no node_api.h in $(NODE_INCLUDE): set NODE_INCLUDE to Node's include/node" >&2; exit 1; }
	mkdir -p $(dir $@)
	$(CC) -O2 -g -Wall -Wextra -std=gnu11 -fPIC -shared -fvisibility=hidden -Wl,-z,nodelete -I'$(NODE_INCLUDE)' -o $@ $<

# A hang fails within minutes, naming itself: --test-timeout bounds each test file before
# Node 24 (each test from 24 on), and test/helpers.js ends a test past 5 minutes, by name.
NODE_TEST_TIMEOUT := 600000
test-node: lib node-deps
	cd $(NODE_DIR) && $(NODE) --test --test-timeout=$(NODE_TEST_TIMEOUT) test/*.test.js
	cd $(NODE_DIR) && ./node_modules/.bin/tsc --noEmit -p test/types

# Waiting claims and the thread pool: fs.promises.stat's latency (p50, p99) with no claim
# waiting and with 100 waiting, side by side, and a publish's wake-up of a waiter.
bench-node: lib node-deps
	cd $(NODE_DIR) && $(NODE) bench/waiting.js
