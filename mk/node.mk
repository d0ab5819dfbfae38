# The Node binding (bindings/node): its tests with `node --test`, and its declarations
# type-checked by tsc on a typed usage file. The package finds the library the tests use
# in target/release (see bindings/node/README.md, "Finding the library").
.PHONY: test-node node-deps
test: test-node

NODE_DIR  := bindings/node
NODE_DEPS := $(NODE_DIR)/node_modules/.package-lock.json
NPM       ?= npm
NODE      ?= node

# The binding's packages (koffi; typescript for the check; prom-client for
# bindings/node/examples/prometheus.js and its test): `npm ci` from the lock when
# node_modules is missing or older than the package files, `npm install` when there is no
# lock. Anything that runs the binding (examples/node/worker.js too) depends on node-deps.
node-deps: $(NODE_DEPS)
$(NODE_DEPS): $(NODE_DIR)/package.json $(wildcard $(NODE_DIR)/package-lock.json)
	cd $(NODE_DIR) && if [ -f package-lock.json ]; then $(NPM) ci --no-audit --no-fund; else $(NPM) install --no-audit --no-fund; fi
	touch $@

test-node: lib node-deps
	cd $(NODE_DIR) && $(NODE) --test test/*.test.js
	cd $(NODE_DIR) && ./node_modules/.bin/tsc --noEmit -p test/types
