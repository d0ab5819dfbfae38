'use strict';
// Shared by the tests: a scratch directory per test file and a clock the test moves.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { after } = require('node:test');

/** A fresh directory, removed when the test file ends. */
function scratch() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'harel-node-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  return {
    dir,
    /** A new database path in the directory. */
    db(name = 'queue') {
      n += 1;
      return path.join(dir, `${name}-${n}.db`);
    },
  };
}

/** A clock that stands still until the test moves it. */
function manualClock(start = 1_000_000) {
  const clock = { now: start };
  clock.fn = () => clock.now;
  clock.advance = (seconds) => {
    clock.now += seconds;
  };
  return clock;
}

/** Asserts that `promise` rejects with a HarelError of `code`, and returns the error. */
async function rejectsWith(assert, promise, code, messagePattern) {
  const { HarelError } = require('..');
  let error;
  try {
    await promise;
  } catch (e) {
    error = e;
  }
  assert.ok(error, `expected a rejection with ${code}, got a result`);
  assert.ok(error instanceof HarelError, `expected a HarelError, got ${error && error.stack}`);
  assert.equal(error.code, code, `expected ${code}, got ${error.code}: ${error.message}`);
  if (messagePattern) assert.match(error.message, messagePattern);
  return error;
}

const ROOT = path.resolve(__dirname, '..', '..', '..');

module.exports = { scratch, manualClock, rejectsWith, ROOT };
