'use strict';
// The poll addon (src/poll.c, built as harel_transport_poll.node): how a waiting claim
// watches the library's readiness descriptor from the event loop (lib/waiting.js). koffi
// cannot poll, and net.Socket refuses an epoll descriptor, so this is the package's one
// native file of its own. Loaded at the first waiting claim, from the first of (README,
// "Finding the library"):
//
// 1. HAREL_TRANSPORT_POLL: the path of the .node file. When set (and not empty) nothing
//    else is tried.
// 2. The package's own copy, prebuilds/<platform>-<arch>-gnu/harel_transport_poll.node,
//    which the npm package carries beside the library (scripts/prebuild.js stages it).
// 3. The repository's build, build/node/harel_transport_poll.node two directories above the
//    package (mk/node.mk builds it before the tests).

const fs = require('node:fs');
const path = require('node:path');
const { HarelError } = require('./errors');

const PACKAGE = path.join(__dirname, '..');
const FILE = 'harel_transport_poll.node';

/** Where the addon is looked for, in order. */
function addonCandidates() {
  const env = process.env.HAREL_TRANSPORT_POLL;
  if (env) return [env];
  const candidates = [];
  const prebuilt = path.join(PACKAGE, 'prebuilds', `${process.platform}-${process.arch}-gnu`, FILE);
  if (fs.existsSync(prebuilt)) candidates.push(prebuilt);
  candidates.push(path.join(PACKAGE, '..', '..', 'build', 'node', FILE));
  return candidates;
}

let addon = null;

/** The addon's exports ({ watch }); a HarelError HAREL_ERR_LOAD when none loads. */
function load() {
  if (addon) return addon;
  const failures = [];
  for (const candidate of addonCandidates()) {
    try {
      const loaded = require(path.resolve(candidate));
      if (typeof loaded.watch !== 'function') throw new Error('it has no watch function');
      addon = loaded;
      return addon;
    } catch (e) {
      failures.push(`${candidate}: ${e.message.split('\n')[0]}`);
    }
  }
  throw new HarelError(
    'HAREL_ERR_LOAD',
    `${FILE}, which waiting claims need, could not be loaded (set HAREL_TRANSPORT_POLL to its ` +
      'path, or build it with `make node-poll`): ' + failures.join('; '),
  );
}

/**
 * A stopped watch of `fd` for readability: `callback(status)` (0 readable, < 0 a libuv
 * error) on every turn of the loop while it is readable and the watch started. The handle
 * has start(), stop(), ref(), unref() and close(); see src/poll.c. (Called through this
 * module's exports, so that a test can stand in for it.)
 */
function watch(fd, callback) {
  return load().watch(fd, callback);
}

module.exports = { load, watch, addonCandidates };
