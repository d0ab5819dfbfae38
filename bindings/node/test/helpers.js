'use strict';
// Shared by the tests: a time limit on each test, a scratch directory per test file, a
// clock the test moves, and python3's sqlite3 in another process (holding the write lock,
// or writing rows as another program would). The test process itself never opens a queue
// file with a second SQLite.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { once } = require('node:events');
const readline = require('node:readline');
const { after, beforeEach, afterEach } = require('node:test');

const PYTHON = process.env.HAREL_PYTHON || 'python3';

// A test of a file that takes these helpers ends its process, naming itself, once it has
// run this long: a hang fails within minutes. mk/node.mk's --test-timeout would too, but
// before Node 24 it bounds each file, not each test, and names only the file.
const TEST_LIMIT_MS = 5 * 60_000;
const limits = new Map(); // test context -> its timer
beforeEach((t) => {
  const timer = setTimeout(() => {
    process.stderr.write(`\n${t.name}: still running after ${TEST_LIMIT_MS / 1000} s: timed out (test/helpers.js)\n`);
    process.exit(1);
  }, TEST_LIMIT_MS);
  timer.unref();
  limits.set(t, timer);
});
afterEach((t) => {
  clearTimeout(limits.get(t));
  limits.delete(t);
});

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
  const { HarelError, STATUS } = require('..');
  let error;
  try {
    await promise;
  } catch (e) {
    error = e;
  }
  assert.ok(error, `expected a rejection with ${code}, got a result`);
  assert.ok(error instanceof HarelError, `expected a HarelError, got ${error && error.stack}`);
  assert.equal(error.code, code, `expected ${code}, got ${error.code}: ${error.message}`);
  assert.equal(error.status, STATUS[code], `the status of ${code}`);
  if (messagePattern) assert.match(error.message, messagePattern);
  return error;
}

/** Spawns python3, failing clearly if it (with sqlite3) is missing. */
async function python(args, options = {}) {
  const child = spawn(PYTHON, args, { stdio: ['pipe', 'pipe', 'inherit'], ...options });
  try {
    await once(child, 'spawn');
  } catch (e) {
    throw new Error(`${PYTHON} (with sqlite3) is needed; set HAREL_PYTHON to use another: ${e.message}`);
  }
  return child;
}

/**
 * Another process (python3's sqlite3) takes `db`'s write lock with BEGIN IMMEDIATE and
 * holds it for `seconds`. Resolves once it holds it, with `released()`: resolves when it
 * has committed and exited.
 */
async function holdWriteLock(db, seconds) {
  const holder = await python([path.join(__dirname, 'fixtures', 'hold-write-lock.py'), db, String(seconds)]);
  holder.stdin.end();
  const exited = once(holder, 'exit');
  const lines = readline.createInterface({ input: holder.stdout })[Symbol.asyncIterator]();
  const first = await lines.next();
  if (first.value !== 'locked') throw new Error(`the lock holder said ${JSON.stringify(first.value)}`);
  return {
    async released() {
      const line = await lines.next();
      const [code] = await exited;
      if (line.value !== 'released' || code !== 0) throw new Error(`the lock holder ended with ${code}`);
    },
  };
}

/**
 * Runs `code` in python3 with `input` (any JSON value) as the JSON text of its stdin and
 * the database path as sys.argv[1]; resolves what it printed, parsed as JSON.
 */
async function runPython(code, db, input = null) {
  const child = await python(['-c', code, db]);
  child.stdin.end(JSON.stringify(input));
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk) => (out += chunk));
  const [status] = await once(child, 'exit');
  if (status !== 0) throw new Error(`python3 failed with ${status}`);
  return JSON.parse(out);
}

/** How many descriptors this process has open (a watch holds 3 or 4 while it lives). */
function openFds() {
  return fs.readdirSync('/proc/self/fd').length;
}

/** The `q` quantile of `xs` (0.5: the median). */
function quantile(xs, q) {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

const ROOT = path.resolve(__dirname, '..', '..', '..');

module.exports = { scratch, manualClock, rejectsWith, holdWriteLock, runPython, openFds, quantile, ROOT };
