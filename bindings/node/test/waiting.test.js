'use strict';
// Waiting claims through the binding: claim and claimMany with `wait` return once the
// wait is over, or as soon as something is claimed — woken by another Transport's publish,
// by another process's, by a park's or a lease's end — and end early on an AbortSignal,
// interrupt() or close(), never leaving a lease behind. The binding cuts each C wait into
// slices of at most 1 s and lets at most UV_THREADPOOL_SIZE - 1 of them be on the pool at
// once (lib/waiting.js); these tests hold with more waiters than that.

const assert = require('node:assert/strict');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { getEventListeners } = require('node:events');
const { setTimeout: sleep } = require('node:timers/promises');
const { test } = require('node:test');
const { Transport, HarelError } = require('..');
const { scratch, manualClock, rejectsWith } = require('./helpers');

const box = scratch();
const PACKAGE = path.resolve(__dirname, '..');

/** How long `promise` takes to settle, in ms, and its outcome. */
async function timed(promise) {
  const started = performance.now();
  let value;
  let error;
  try {
    value = await promise;
  } catch (e) {
    error = e;
  }
  return { ms: performance.now() - started, value, error };
}

/** Epoch ms, on the clock a child process reads too. */
function epochMs() {
  return performance.timeOrigin + performance.now();
}

test('a waiting claim resolves null (claimMany: []) once its wait is over: within one slice and over several', async () => {
  const t = await Transport.open(box.db());
  const short = await timed(t.claim('w', { wait: 0.3 }));
  assert.equal(short.value, null);
  assert.ok(short.ms >= 290 && short.ms < 800, `wait 0.3 s took ${short.ms.toFixed(0)} ms`);
  const long = await timed(t.claimMany('w', { max: 5, wait: 2.2 }));
  assert.deepEqual(long.value, []);
  assert.ok(long.ms >= 2190 && long.ms < 3000, `wait 2.2 s (three slices) took ${long.ms.toFixed(0)} ms`);
  const look = await timed(t.claim('w', { wait: 0 }));
  assert.equal(look.value, null);
  assert.ok(look.ms < 200, 'wait 0 looks once');
  await t.close();
});

test("a waiting claim is woken at once by another Transport's publish, in the first slice or a later one", async () => {
  const db = box.db();
  const waiter = await Transport.open(db);
  const publisher = await Transport.open(db);
  for (const after of [150, 1400]) {
    const claim = waiter.claimMany('w', { max: 3, wait: 10 });
    await sleep(after);
    await publisher.publish(`g${after}`, { after });
    const published = performance.now();
    const leases = await claim;
    const latency = performance.now() - published;
    console.log(`woken ${latency.toFixed(1)} ms after another Transport's publish (published ${after} ms into the wait)`);
    assert.deepEqual(leases.map((l) => l.groupId), [`g${after}`]);
    assert.ok(latency < 150, `woken ${latency.toFixed(0)} ms after the publish`);
    await waiter.ackMany(leases);
  }
  await waiter.close();
  await publisher.close();
});

test("a waiting claim is woken by another process's publish", async () => {
  const db = box.db();
  const t = await Transport.open(db);
  const claim = t.claim('w', { wait: 20 }).then((lease) => ({ lease, at: epochMs() }));
  await sleep(300); // the claim waits (past its first look) before the child starts
  const child = `
    const { Transport } = require(${JSON.stringify(PACKAGE)});
    (async () => {
      const t = await Transport.open(${JSON.stringify(db)});
      await new Promise((resolve) => setTimeout(resolve, 1200)); // into the waiter's second slice
      const before = performance.timeOrigin + performance.now();
      await t.publish('from-child', { pid: process.pid });
      const after = performance.timeOrigin + performance.now();
      await t.close();
      console.log(JSON.stringify({ before, after }));
    })();`;
  const { stdout } = await new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', child], { timeout: 30_000 }, (e, out, err) => (e ? reject(e) : resolve({ stdout: out, stderr: err })));
  });
  const { before, after } = JSON.parse(stdout);
  const { lease, at } = await claim;
  assert.equal(lease.groupId, 'from-child');
  const latency = at - after;
  console.log(`woken ${latency.toFixed(1)} ms after another process's publish committed (${(at - before).toFixed(1)} ms after it began)`);
  assert.ok(at - before < 500, `woken ${(at - before).toFixed(0)} ms after the other process began its publish`);
  await t.ack(lease);
  await t.close();
});

test("a waiting claim wakes at a park's end and at a lease's end", async () => {
  const t = await Transport.open(box.db());
  await t.publish('parked', {});
  const first = await t.claim('w1');
  await t.nack(first, { delay: 0.6 });
  const parked = await timed(t.claim('w2', { wait: 5 }));
  assert.equal(parked.value.groupId, 'parked');
  assert.ok(parked.ms >= 550 && parked.ms < 900, `woken ${parked.ms.toFixed(0)} ms after a 0.6 s park began`);
  await t.ack(parked.value);
  await t.publish('leased', {});
  await t.claim('w1', { visibility: 0.5 });
  const leaseEnd = await timed(t.claim('w2', { wait: 5 }));
  assert.equal(leaseEnd.value.groupId, 'leased');
  assert.ok(leaseEnd.ms >= 450 && leaseEnd.ms < 800, `woken ${leaseEnd.ms.toFixed(0)} ms after a 0.5 s lease began`);
  await t.ack(leaseEnd.value);
  await t.close();
});

test('an AbortSignal ends a wait at once: AbortError (or its reason), no lease left behind, listeners removed', async () => {
  const t = await Transport.open(box.db());
  const controller = new AbortController();
  const claim = timed(t.claimMany('w', { max: 4, wait: 30, signal: controller.signal }));
  await sleep(1200); // into the second slice
  const aborted = performance.now();
  controller.abort();
  const { error, ms } = await claim;
  const late = performance.now() - aborted;
  assert.ok(error instanceof DOMException && error.name === 'AbortError', `rejected with ${error}`);
  assert.equal(error, controller.signal.reason);
  assert.ok(late < 100, `ended ${late.toFixed(1)} ms after the abort (${ms.toFixed(0)} ms in all)`);
  assert.equal(getEventListeners(controller.signal, 'abort').length, 0, 'the listener was removed');

  const reason = new Error('shutting down');
  const custom = new AbortController();
  const single = t.claim('w', { wait: 30, signal: custom.signal });
  setTimeout(() => custom.abort(reason), 50);
  await assert.rejects(single, (e) => e === reason);
  const s = await t.stats();
  assert.deepEqual([s.leased, s.messages], [0, 0]);

  // One signal for many claims (a worker's lifetime): none leaves its listener behind.
  const lifetime = new AbortController();
  await t.publish('g', {});
  for (let i = 0; i < 20; i++) {
    const lease = await t.claim('w', { wait: 0.01, signal: lifetime.signal });
    if (lease) await t.nack(lease);
  }
  assert.equal(getEventListeners(lifetime.signal, 'abort').length, 0);
  await t.close();
});

test('an already aborted signal rejects at once, calling nothing', async () => {
  const clock = manualClock(1000);
  let reads = 0;
  const t = await Transport.open(box.db(), {
    clock: () => {
      reads += 1;
      return clock.now;
    },
  });
  await t.publish('g', {});
  const before = reads;
  const controller = new AbortController();
  controller.abort();
  await assert.rejects(t.claim('w', { wait: 5, signal: controller.signal }), { name: 'AbortError' });
  await assert.rejects(t.claimMany('w', { max: 1, signal: controller.signal }), { name: 'AbortError' });
  assert.equal(reads, before, 'no call reached the library (each would read the clock)');
  assert.equal((await t.claim('w')).groupId, 'g', 'the message is still there');
  await t.close();
});

test('aborting as a claim takes a message: it resolves the leases or rejects having claimed none, never in between', async () => {
  const t = await Transport.open(box.db(), { synchronousFull: false });
  const outcomes = { leases: 0, aborted: 0 };
  for (let i = 0; i < 200; i++) {
    await t.publishMany([{ groupId: `a${i}`, event: {} }, { groupId: `b${i}`, event: {} }]);
    const controller = new AbortController();
    const claim = t.claimMany('w', { max: 2, wait: 5, signal: controller.signal });
    if (i % 2) controller.abort();
    else queueMicrotask(() => controller.abort());
    let leases = [];
    try {
      leases = await claim;
      outcomes.leases += 1;
    } catch (e) {
      assert.equal(e.name, 'AbortError');
      outcomes.aborted += 1;
    }
    const s = await t.stats();
    assert.equal(s.leased, leases.length, `round ${i}: the leases in flight are the ones resolved`);
    await t.ackMany(leases);
    await t.purge();
  }
  console.log(`abort racing a claim, 200 rounds: ${outcomes.leases} resolved their leases, ${outcomes.aborted} claimed nothing`);
  assert.equal(outcomes.leases + outcomes.aborted, 200);
  await t.close();
});

test('interrupt() ends the waits in progress with HAREL_ERR_INTERRUPTED; later claims wait as usual', async () => {
  const t = await Transport.open(box.db());
  const waits = [t.claim('w1', { wait: 30 }), t.claimMany('w2', { max: 3, wait: 30 })].map(timed);
  await sleep(100);
  t.interrupt();
  for (const { error, ms } of await Promise.all(waits)) {
    assert.ok(error instanceof HarelError, String(error));
    assert.deepEqual([error.code, error.status], ['HAREL_ERR_INTERRUPTED', -6]);
    assert.match(error.message, /^claim(Many)?: Transport\.interrupt\(\) was called while it waited; nothing was claimed$/);
    assert.ok(ms < 400, `interrupted after ${ms.toFixed(0)} ms`);
  }
  const later = t.claim('w3', { wait: 10 });
  await sleep(100);
  await t.publish('g', {});
  const lease = await later;
  assert.equal(lease.groupId, 'g', 'a claim made after interrupt() waited and got the message');
  await t.ack(lease);
  await t.close();
});

test('close() interrupts the claims that wait (more of them than wait slots) and does not hang behind them', async () => {
  const t = await Transport.open(box.db());
  const waits = Array.from({ length: 10 }, (_, i) => timed(t.claim(`w${i}`, { wait: 60 })));
  await sleep(200);
  const closing = await timed(t.close());
  assert.ok(closing.ms < 500, `close took ${closing.ms.toFixed(0)} ms`);
  for (const { error } of await Promise.all(waits)) {
    assert.equal(error && error.code, 'HAREL_ERR_INTERRUPTED');
    assert.match(error.message, /the transport was closed while it waited/);
  }
  await rejectsWith(assert, t.claim('w', { wait: 1 }), 'HAREL_ERR_CLOSED');
});

test('8 concurrent waiters and one publish: exactly one gets it, the others time out', async () => {
  const db = box.db();
  const t = await Transport.open(db);
  const publisher = await Transport.open(db);
  const waiters = Array.from({ length: 8 }, (_, i) => timed(t.claim(`w${i}`, { wait: 2 })));
  await sleep(300);
  await publisher.publish('only', {});
  const results = await Promise.all(waiters);
  const got = results.filter((r) => r.value !== null);
  assert.equal(got.length, 1, 'exactly one waiter got the message');
  assert.ok(got[0].ms < 600, `it got it ${got[0].ms.toFixed(0)} ms into the wait`);
  for (const r of results.filter((x) => x.value === null)) {
    assert.ok(r.ms >= 1990 && r.ms < 3300, `a waiter timed out after ${r.ms.toFixed(0)} ms (wait 2 s)`);
  }
  await t.ack(got[0].value);
  await t.close();
  await publisher.close();
});

test('12 waiters (more than the wait slots) all get their messages at once when 12 groups arrive', async () => {
  const t = await Transport.open(box.db());
  const waiters = Array.from({ length: 12 }, (_, i) => t.claim(`w${i}`, { wait: 20 }));
  await sleep(1500);
  const published = performance.now();
  await t.publishMany(Array.from({ length: 12 }, (_, i) => ({ groupId: `g${i}`, event: { i } })));
  const leases = await Promise.all(waiters);
  const ms = performance.now() - published;
  assert.equal(new Set(leases.map((l) => l.groupId)).size, 12);
  assert.ok(ms < 1000, `all 12 claimed within ${ms.toFixed(0)} ms of the publish`);
  await t.ackMany(leases);
  await t.close();
});

test('with a JS clock, a waiting claim lets the transport\'s other calls through between its slices', async () => {
  const clock = manualClock(5000);
  const t = await Transport.open(box.db(), { clock: clock.fn });
  const claim = timed(t.claim('w', { wait: 10 }));
  await sleep(100);
  const publish = await timed(t.publish('g', {}));
  assert.ok(publish.ms < 1500, `the publish waited ${publish.ms.toFixed(0)} ms for the claim's slice to end`);
  const { value, ms } = await claim;
  assert.equal(value.groupId, 'g');
  assert.ok(ms < 2000, `the claim had it ${ms.toFixed(0)} ms into its wait`);
  assert.equal(value.lockExpiry, 5030, 'read the JS clock');
  await t.ack(value);
  await t.close();
});
