'use strict';
// A claim waiting for the database's write lock runs on the thread pool: the event loop
// goes on meanwhile. Another process (python3's sqlite3) holds the lock for 1.5 s.

const assert = require('node:assert/strict');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { once } = require('node:events');
const readline = require('node:readline');
const { test } = require('node:test');
const { Transport } = require('..');
const { scratch } = require('./helpers');

const box = scratch();
const PYTHON = process.env.HAREL_PYTHON || 'python3';
const HOLD_SECONDS = 1.5;

test('the event loop keeps running while a claim waits for the write lock', async () => {
  const db = box.db();
  const t = await Transport.open(db, { busyTimeout: 30 });
  await t.publish('g', { kind: 'k', id: '1', data: {} });

  const holder = spawn(PYTHON, [path.join(__dirname, 'fixtures', 'hold-write-lock.py'), db, String(HOLD_SECONDS)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const spawned = once(holder, 'spawn').then(() => null, (e) => e);
  const exited = once(holder, 'exit');
  const lines = readline.createInterface({ input: holder.stdout })[Symbol.asyncIterator]();
  const failedToSpawn = await spawned;
  assert.equal(failedToSpawn, null, `${PYTHON} (with sqlite3) is needed; set HAREL_PYTHON to use another`);
  assert.equal((await lines.next()).value, 'locked');

  let ticks = 0;
  const timer = setInterval(() => {
    ticks += 1;
  }, 10);
  const started = performance.now();
  const lease = await t.claim('w');
  const elapsed = performance.now() - started;
  clearInterval(timer);

  assert.ok(lease, 'the claim got the message once the lock was free');
  assert.equal(lease.groupId, 'g');
  assert.equal((await lines.next()).value, 'released');
  assert.ok(elapsed >= 1000, `the claim waited for the lock (${elapsed.toFixed(0)} ms)`);
  // 1.5 s of 10 ms ticks is ~150; a blocked event loop would give 0 or 1.
  assert.ok(ticks >= 20, `the timer kept firing while the claim waited: ${ticks} ticks in ${elapsed.toFixed(0)} ms`);
  const [code] = await exited;
  assert.equal(code, 0);
  await t.ack(lease);
  await t.close();
});
