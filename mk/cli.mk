# The ops CLI (cli/, the binary `harel-transport`; cli/README.md): its tests run the built
# binary against live queue files, and against a sqld server when HAREL_SQLD names one (else
# that test says it skipped). They are a crate of the workspace, not of the root package, so
# the root's `cargo test` (test-rust) does not run them: this target does. `make install`
# installs the binary (mk/install.mk).
.PHONY: test-cli cli
test: test-cli

cli:
	$(CARGO) build --release -p harel-transport-cli

test-cli:
	$(CARGO) test --release -p harel-transport-cli
