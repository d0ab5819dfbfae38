# The ops CLI (cli/, the binary `harel-transport`; cli/README.md): its tests run the built
# binary against live queue files, and against a sqld server when HAREL_SQLD names one (else
# that test says it skipped), and against a queue harel 0.9's own SqliteTransport made (the
# venv's Python, HAREL_PYTHON). They are a crate of the workspace, not of the root package, so
# the root's `cargo test` (test-rust) does not run them: this target does. `make install`
# installs the binary (mk/install.mk).
.PHONY: test-cli cli
SUITES += test-cli

cli:
	$(LIB_BUILD)

test-cli: venv
	HAREL_PYTHON=$(CURDIR)/$(VENV)/bin/python $(CARGO) test --release -p harel-transport-cli
