# The npm package (issue #18): `npm pack` in bindings/node makes a package that carries the
# prebuilt library, prebuilds/linux-x64-gnu/libharel_transport.so.1 (stripped), which
# index.js loads before a repository build or an installed library, and beside it the poll
# addon waiting claims use, harel_transport_poll.node (mk/node.mk's node-poll). The
# package's prepack script (bindings/node/scripts/prebuild.js) stages them and postpack
# removes them. `make npm-pack` packs a copy of the package, so prebuilds/ never appears
# in bindings/node while test-node runs beside it, into $(NPM_DIR). `make test-npm` checks
# a tarball's file list and versions (NPM_TEST_TGZ: that one, or in `make test` the one of
# `make dist`), installs it into a fresh directory outside the repository (koffi from the
# registry) and runs a publish/claim/ack there (bindings/node/test/pack/check.js).
.PHONY: npm-pack test-npm
SUITES += test-npm

NPM_DIR     := $(BUILD)/npm
NPM_STAGE   := $(NPM_DIR)/stage
NPM_VERSION := $(shell sed -n 's/^  "version": "\(.*\)",$$/\1/p' $(NODE_DIR)/package.json)
NPM_TGZ     := $(NPM_DIR)/harel-transport-$(NPM_VERSION).tgz
# The tarball test-npm checks: `make npm-pack`'s when run alone; in `make test`, mk/dist.mk's
# (TEST_ON_DIST, Makefile; why: mk/python.mk's PY_TEST_WHEEL).
NPM_TEST_TGZ = $(if $(TEST_ON_DIST),$(DIST_DIR)/harel-transport-$(NPM_VERSION).tgz,$(NPM_TGZ))

npm-pack: $(LIB_TARGET) node-poll
	rm -rf $(NPM_STAGE) $(NPM_TGZ) && mkdir -p $(NPM_STAGE)
	tar -C $(NODE_DIR) --exclude=./node_modules --exclude=./prebuilds -cf - . | tar -C $(NPM_STAGE) -xf -
	cd $(NPM_STAGE) && HAREL_TRANSPORT_PREBUILT='$(abspath $(LIB_SO))' HAREL_TRANSPORT_PREBUILT_POLL='$(abspath $(NODE_POLL))' $(NPM) pack --pack-destination ..
	rm -rf $(NPM_STAGE)

test-npm: $(if $(TEST_ON_DIST),dist-once,npm-pack)
	$(call timed,15,$(NODE) $(NODE_DIR)/test/pack/check.js $(NPM_TEST_TGZ))
