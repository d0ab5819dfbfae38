# The Debian packages that packaging/build-deb.sh builds and packaging/test-deb.sh tests, in
# install order; sourced by both after they set $abi (build.rs's ABI_VERSION).
PACKAGES=("libharel-transport$abi" libharel-transport-dev)
# The ops CLI (cli/, the binary harel-transport), when the tree has it.
if [ -f cli/Cargo.toml ]; then PACKAGES+=(harel-transport-tools); fi
