#!/usr/bin/env node
'use strict';
// The prebuilt binaries the npm package carries: prebuilds/linux-x64-gnu/libharel_transport.so.1
// (the soname's file name), which lib/native.js loads before a repository build or an
// installed library, and harel_transport_poll.node beside it, the poll addon of waiting
// claims (src/poll.c; lib/poll.js loads it). `npm pack` and `npm publish` run this as
// prepack (`stage`) and postpack (`clean`), so the binaries are in the package directory
// only while npm packs it, and never in git.
//
//   node scripts/prebuild.js stage   builds the release library and the addon (`make lib
//                                    node-poll` in the repository two directories up) and
//                                    copies them, stripped, to prebuilds/
//   node scripts/prebuild.js clean   removes prebuilds/
//
// HAREL_TRANSPORT_PREBUILT=<path of libharel_transport.so> and
// HAREL_TRANSPORT_PREBUILT_POLL=<path of harel_transport_poll.node> stage those files
// instead, without building (make's npm-pack target sets both: it has just built them).

const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const PACKAGE = path.resolve(__dirname, '..');
const PLATFORM = 'linux-x64-gnu';
const PREBUILDS = path.join(PACKAGE, 'prebuilds');
const TARGET = path.join(PREBUILDS, PLATFORM, 'libharel_transport.so.1');
const POLL_TARGET = path.join(PREBUILDS, PLATFORM, 'harel_transport_poll.node');
const ROOT = path.resolve(PACKAGE, '..', '..');

function fail(message) {
  console.error(`prebuild: ${message}`);
  process.exit(1);
}

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: 'inherit', ...options });
  if (result.error) fail(`${command}: ${result.error.message}`);
  if (result.status !== 0) fail(`${command} ${args.join(' ')} exited with ${result.status ?? result.signal}`);
}

/** The repository two directories up, checked to be this package's (its version). */
function repository() {
  if (!fs.existsSync(path.join(ROOT, 'Makefile')) || !fs.existsSync(path.join(ROOT, 'Cargo.toml'))) {
    fail(
      `no repository two directories above ${PACKAGE} to build in: set HAREL_TRANSPORT_PREBUILT ` +
        'and HAREL_TRANSPORT_PREBUILT_POLL to the paths of a built libharel_transport.so and harel_transport_poll.node',
    );
  }
  const cargo = /^version = "(.*)"/m.exec(fs.readFileSync(path.join(ROOT, 'Cargo.toml'), 'utf8'));
  const version = require(path.join(PACKAGE, 'package.json')).version;
  if (!cargo || cargo[1] !== version) {
    fail(`package.json's version ${version} is not the library's (Cargo.toml: ${cargo && cargo[1]})`);
  }
  return ROOT;
}

/** A built file to stage: the one `variable` names, or the repository's, built now by `target`. */
function source(variable, target, built) {
  const given = process.env[variable];
  if (given) {
    if (!fs.existsSync(given)) fail(`${variable} names ${given}, which does not exist`);
    return given;
  }
  const root = repository();
  run(process.env.MAKE || 'make', ['--no-print-directory', '-C', root, target]);
  return path.join(root, built);
}

/** Copies `from` to `to` stripped, like packaging/build-deb.sh (dh_strip). */
function stripTo(from, to) {
  // No symbol table or .comment; the dynamic symbols, which koffi binds and Node resolves,
  // stay.
  run('strip', ['--remove-section=.comment', '--remove-section=.note', '--strip-unneeded', '-o', to, from]);
  fs.chmodSync(to, 0o755);
  console.error(`prebuild: staged ${path.relative(PACKAGE, to)} (${fs.statSync(to).size} bytes)`);
}

function stage() {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    fail(`the package carries ${PLATFORM} binaries; this is ${process.platform}-${process.arch}`);
  }
  const version = require(path.join(PACKAGE, 'package.json')).version;
  const lib = source('HAREL_TRANSPORT_PREBUILT', 'lib', path.join('target', 'release', 'libharel_transport.so'));
  const addon = source('HAREL_TRANSPORT_PREBUILT_POLL', 'node-poll', path.join('build', 'node', 'harel_transport_poll.node'));
  fs.rmSync(PREBUILDS, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(TARGET), { recursive: true });
  stripTo(lib, TARGET);
  stripTo(addon, POLL_TARGET);
  console.error(`prebuild: package ${version}`);
}

function clean() {
  fs.rmSync(PREBUILDS, { recursive: true, force: true });
}

const command = process.argv[2];
if (command === 'stage') stage();
else if (command === 'clean') clean();
else fail(`usage: node scripts/prebuild.js stage|clean (got ${command ?? 'nothing'})`);
