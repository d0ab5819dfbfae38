# The web console of `harel-transport serve` in a real browser (tests/console): headless
# Chromium, Debian's `chromium`, driven by puppeteer-core from npm (which downloads no
# browser), against a queue the example console_queue builds (cli/examples) and the CLI
# serves. Where Chromium is not installed it says it skipped; .ci/run installs it. With
# SCREENSHOT=docs/console.png it saves the console's picture for the README.
.PHONY: test-console console-deps
SUITES += test-console

CONSOLE_DIR  := tests/console
CONSOLE_DEPS := $(CONSOLE_DIR)/node_modules/.package-lock.json
CHROMIUM     ?= $(shell command -v chromium 2>/dev/null)

console-deps: $(CONSOLE_DEPS)
$(CONSOLE_DEPS): $(CONSOLE_DIR)/package.json $(CONSOLE_DIR)/package-lock.json
	cd $(CONSOLE_DIR) && PUPPETEER_SKIP_DOWNLOAD=1 $(NPM) ci --no-audit --no-fund
	touch $@

test-console:
	@if [ -z "$(CHROMIUM)" ]; then \
	  echo "test-console: skipped (no chromium: install Debian's chromium package to run it)"; \
	else \
	  $(MAKE) --no-print-directory console-deps && \
	  $(CARGO) build --release -p harel-transport-cli --bin harel-transport --example console_queue && \
	  cd $(CONSOLE_DIR) && HAREL_BIN=$(CURDIR)/$(RELEASE_DIR)/harel-transport \
	    HAREL_FIXTURE=$(CURDIR)/$(RELEASE_DIR)/examples/console_queue CHROMIUM=$(CHROMIUM) \
	    $(if $(SCREENSHOT),SCREENSHOT=$(abspath $(SCREENSHOT))) $(NODE) --test --test-timeout=$(NODE_TEST_TIMEOUT) console.test.js; \
	fi
