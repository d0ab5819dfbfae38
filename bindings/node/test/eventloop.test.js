'use strict';
// A call that waits for the database's write lock runs on the thread pool: the event loop
// goes on meanwhile. Another process (python3's sqlite3) holds the lock for 1.5 s, first
// while a claim waits, then while an open waits (open sets the schema up in a write
// transaction).

const assert = require('node:assert/strict');
const { test } = require('node:test');
const { Transport } = require('..');
const { scratch, holdWriteLock } = require('./helpers');

const box = scratch();
const HOLD_SECONDS = 1.5;

/** Runs `call` while a 10 ms timer ticks; what it resolved, how long it took, the ticks. */
async function ticking(call) {
  let ticks = 0;
  const timer = setInterval(() => {
    ticks += 1;
  }, 10);
  const started = performance.now();
  try {
    const result = await call();
    return { result, elapsed: performance.now() - started, ticks };
  } finally {
    clearInterval(timer);
  }
}

function assertWaitedAndTicked(what, { elapsed, ticks }) {
  assert.ok(elapsed >= 1000, `${what} waited for the lock (${elapsed.toFixed(0)} ms)`);
  // 1.5 s of 10 ms ticks is ~150; a blocked event loop would give 0 or 1.
  assert.ok(ticks >= 20, `the timer kept firing while ${what} waited: ${ticks} ticks in ${elapsed.toFixed(0)} ms`);
}

test('the event loop keeps running while a claim waits for the write lock', async () => {
  const db = box.db();
  const t = await Transport.open(db, { busyTimeout: 30 });
  await t.publish('g', { kind: 'k', id: '1', data: {} });
  const holder = await holdWriteLock(db, HOLD_SECONDS);
  const claim = await ticking(() => t.claim('w'));
  await holder.released();
  assert.ok(claim.result, 'the claim got the message once the lock was free');
  assert.equal(claim.result.groupId, 'g');
  assertWaitedAndTicked('the claim', claim);
  await t.ack(claim.result);
  await t.close();
});

test('the event loop keeps running while open waits for the write lock', async () => {
  const db = box.db();
  await (await Transport.open(db)).close(); // the file exists, in WAL mode, with the schema
  const holder = await holdWriteLock(db, HOLD_SECONDS);
  const open = await ticking(() => Transport.open(db, { busyTimeout: 30 }));
  await holder.released();
  assertWaitedAndTicked('open', open);
  const t = open.result;
  await t.publish('g', {});
  assert.equal((await t.claim('w')).groupId, 'g', 'the transport works');
  await t.close();
});
