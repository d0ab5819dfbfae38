'use strict';
// A call that waits for the database's write lock runs on the thread pool: the event loop
// goes on meanwhile. Another process (python3's sqlite3) holds the lock for 1.5 s, first
// while a claim waits, then while an open waits (open sets the schema up in a write
// transaction). And claims that wait for messages leave the pool's other work going:
// the binding keeps a pool thread free of them (lib/waiting.js).

const assert = require('node:assert/strict');
const fs = require('node:fs');
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

test('while 8 claims wait for messages, the event loop, fs calls and publishes go on (the default pool of 4)', async () => {
  assert.equal(process.env.UV_THREADPOOL_SIZE, undefined, 'this test is about the default pool');
  const db = box.db();
  const t = await Transport.open(db);
  const other = await Transport.open(db);
  const waits = Array.from({ length: 8 }, (_, i) => t.claim(`w${i}`, { wait: 4 }));
  await new Promise((resolve) => setTimeout(resolve, 300));
  const fsTimes = [];
  const publishTimes = [];
  const work = await ticking(async () => {
    for (let i = 0; i < 10; i++) {
      let started = performance.now();
      await fs.promises.readFile(__filename);
      fsTimes.push(performance.now() - started);
      started = performance.now();
      await other.publish(`g${i}`, { i }); // wakes a waiter (the first 8 publishes)
      publishTimes.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });
  const worst = (xs) => Math.max(...xs).toFixed(1);
  console.log(`with 8 claims waiting: fs.promises.readFile at worst ${worst(fsTimes)} ms, a publish ${worst(publishTimes)} ms, ${work.ticks} ticks of 10 ms in ${work.elapsed.toFixed(0)} ms`);
  assert.ok(Math.max(...fsTimes) < 100, `an fs call waited ${worst(fsTimes)} ms for a pool thread`);
  assert.ok(Math.max(...publishTimes) < 200, `a publish waited ${worst(publishTimes)} ms`);
  assert.ok(work.ticks >= 50, `the timer kept firing: ${work.ticks} ticks`);
  const leases = await Promise.all(waits);
  assert.equal(new Set(leases.map((l) => l.groupId)).size, 8, 'each waiter got one of the publishes');
  assert.equal((await t.stats()).ready, 2, 'and two are left');
  await t.ackMany(leases);
  await t.close();
  await other.close();
});
