#!/usr/bin/env node
'use strict';
// The prebuilt library the npm package carries: prebuilds/linux-x64-gnu/libharel_transport.so.1
// (the soname's file name), which lib/native.js loads before a repository build or an
// installed library. `npm pack` and `npm publish` run this as prepack (`stage`) and postpack
// (`clean`), so the binary is in the package directory only while npm packs it, and never in
// git.
//
//   node scripts/prebuild.js stage   builds the release library (`make lib` in the repository
//                                    two directories up) and copies it, stripped, to prebuilds/
//   node scripts/prebuild.js clean   removes prebuilds/
//
// HAREL_TRANSPORT_PREBUILT=<path of libharel_transport.so> stages that file instead, without
// building (make's npm-pack target sets it: it has just built the library).

const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const PACKAGE = path.resolve(__dirname, '..');
const PLATFORM = 'linux-x64-gnu';
const PREBUILDS = path.join(PACKAGE, 'prebuilds');
const TARGET = path.join(PREBUILDS, PLATFORM, 'libharel_transport.so.1');

function fail(message) {
  console.error(`prebuild: ${message}`);
  process.exit(1);
}

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: 'inherit', ...options });
  if (result.error) fail(`${command}: ${result.error.message}`);
  if (result.status !== 0) fail(`${command} ${args.join(' ')} exited with ${result.status ?? result.signal}`);
}

/** The built library to stage: HAREL_TRANSPORT_PREBUILT, or the repository's, built now. */
function source() {
  const given = process.env.HAREL_TRANSPORT_PREBUILT;
  if (given) {
    if (!fs.existsSync(given)) fail(`HAREL_TRANSPORT_PREBUILT names ${given}, which does not exist`);
    return given;
  }
  const root = path.resolve(PACKAGE, '..', '..');
  if (!fs.existsSync(path.join(root, 'Makefile')) || !fs.existsSync(path.join(root, 'Cargo.toml'))) {
    fail(
      `no repository two directories above ${PACKAGE} to build the library in: ` +
        'set HAREL_TRANSPORT_PREBUILT to the path of a built libharel_transport.so',
    );
  }
  const cargo = /^version = "(.*)"/m.exec(fs.readFileSync(path.join(root, 'Cargo.toml'), 'utf8'));
  const version = require(path.join(PACKAGE, 'package.json')).version;
  if (!cargo || cargo[1] !== version) {
    fail(`package.json's version ${version} is not the library's (Cargo.toml: ${cargo && cargo[1]})`);
  }
  run(process.env.MAKE || 'make', ['--no-print-directory', '-C', root, 'lib']);
  return path.join(root, 'target', 'release', 'libharel_transport.so');
}

function stage() {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    fail(`the package carries a ${PLATFORM} library; this is ${process.platform}-${process.arch}`);
  }
  const version = require(path.join(PACKAGE, 'package.json')).version;
  const from = source();
  fs.rmSync(PREBUILDS, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(TARGET), { recursive: true });
  // Like packaging/build-deb.sh (dh_strip): no symbol table or .comment; the dynamic
  // symbols, which koffi binds, stay.
  run('strip', ['--remove-section=.comment', '--remove-section=.note', '--strip-unneeded', '-o', TARGET, from]);
  fs.chmodSync(TARGET, 0o755);
  const size = fs.statSync(TARGET).size;
  console.error(`prebuild: staged ${path.relative(PACKAGE, TARGET)} (${size} bytes, package ${version})`);
}

function clean() {
  fs.rmSync(PREBUILDS, { recursive: true, force: true });
}

const command = process.argv[2];
if (command === 'stage') stage();
else if (command === 'clean') clean();
else fail(`usage: node scripts/prebuild.js stage|clean (got ${command ?? 'nothing'})`);
