'use strict';
// metrics(): every counter and histogram after known calls, the bounds, a busy retry while
// another process holds the write lock, a second transport counting apart, a closed
// transport refused at once, and harel_metrics' layout (limit_holds at its end).
// test/limits.test.js counts limitHolds under a limit.

const assert = require('node:assert/strict');
const { test } = require('node:test');
const koffi = require('koffi');
const { Transport, HarelError } = require('..');
const { MetricsType } = require('../lib/native');
const { scratch, holdWriteLock, rejectsWith } = require('./helpers');

const box = scratch();
const BOUNDS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Every histogram's call count, by operation. */
function calls(m) {
  return Object.fromEntries(Object.entries(m.latency).map(([op, h]) => [op, h.count]));
}

test('metrics: every counter and histogram after known calls', async () => {
  const t = await Transport.open(':memory:');
  await t.publish('a', { n: 1 });
  await t.publishMany([{ groupId: 'b', event: { n: 2 } }, { groupId: 'c', event: { n: 3 } }]);
  const [a, b, c] = await t.claimMany('w', { max: 3 });
  await t.ack(a);
  await rejectsWith(assert, t.ack(a), 'HAREL_ERR_LEASE_LOST');
  await t.nack(b);
  await t.nack(c, { delay: 60 });
  const again = await t.claim('w');
  await t.extend(again, 30);
  await t.deadLetter(again, 'poison');
  assert.equal(await t.claim('w', { wait: 0.01 }), null, 'c is parked'); // a claim without waiting, then the watch
  await t.publish('d', { n: 4 });
  assert.equal(await t.ackAndClaim(await t.claim('w'), 'w'), null);

  const m = t.metrics();
  assert.ok(Object.isFrozen(m) && Object.isFrozen(m.latency) && Object.isFrozen(m.latency.ack.buckets));
  const { latency, ...counters } = m;
  assert.deepEqual(counters, {
    published: 4, claimed: 5, acked: 2, nacked: 1, parked: 1, deadLettered: 1, deadLetteredByClaim: 0,
    lostLeases: 1, busyRetries: 0, limitHolds: 0,
  });
  assert.deepEqual(calls(m), {
    publish: 3, claim: 4, claimWait: 0, ack: 2, ackAndClaim: 1, nack: 2, extend: 1, deadLetter: 1,
  });
  for (const [op, h] of Object.entries(latency)) {
    assert.deepEqual(h.bounds, BOUNDS, op);
    assert.equal(h.buckets.length, BOUNDS.length, op);
    assert.ok(h.buckets.every((n, i) => n <= h.count && (i === 0 || n >= h.buckets[i - 1])), `${op}: ${h.buckets}`);
    assert.equal(h.sum > 0, h.count > 0, `${op}: sum ${h.sum} of ${h.count} calls`);
  }
  // The binding waits itself (lib/waiting.js): the C claims of a waiting claim never wait,
  // so the library times them as claims, and its 10 ms wait is in no histogram.
  assert.ok(latency.claim.sum < 0.01 * 4, `claim's sum ${latency.claim.sum} leaves the 10 ms wait out`);
  assert.equal(latency.claim.bounds, latency.ack.bounds, 'one bounds array, shared');
  await t.close();
});

test('metrics: dead letters by a claim, and each transport its own', async () => {
  const t = await Transport.open(':memory:', { maxAttempts: 1 });
  await t.publish('g', { n: 1 });
  await t.nack(await t.claim('w'));
  assert.equal(await t.claim('w'), null, 'the head is over maxAttempts');
  const m = t.metrics();
  assert.deepEqual([m.claimed, m.nacked, m.deadLetteredByClaim, m.deadLettered], [1, 1, 1, 0]);
  const other = await Transport.open(':memory:');
  assert.deepEqual(calls(other.metrics()), {
    publish: 0, claim: 0, claimWait: 0, ack: 0, ackAndClaim: 0, nack: 0, extend: 0, deadLetter: 0,
  });
  assert.equal(other.metrics().published, 0);
  await Promise.all([t.close(), other.close()]);
});

test('metrics: a publish that found the write lock held counts busy retries', async () => {
  const db = box.db();
  const t = await Transport.open(db);
  const holder = await holdWriteLock(db, 0.3);
  await t.publish('g', { n: 1 });
  await holder.released();
  const m = t.metrics();
  assert.ok(m.busyRetries > 0, `busyRetries ${m.busyRetries}`);
  assert.equal(m.published, 1);
  assert.ok(m.latency.publish.sum >= 0.2, `publish took ${m.latency.publish.sum} s behind a 0.3 s lock`);
  await t.close();
});

test('metrics: synchronous, and HAREL_ERR_CLOSED once close() is called', async () => {
  const t = await Transport.open(':memory:');
  const published = t.publish('g', { n: 1 });
  assert.equal(typeof t.metrics().then, 'undefined', 'no Promise');
  await published;
  const closing = t.close(); // refused at once, not only once closed
  for (const when of ['closing', 'closed']) {
    assert.throws(() => t.metrics(), (e) => e instanceof HarelError && e.code === 'HAREL_ERR_CLOSED', when);
    await closing;
  }
});

test('metrics: harel_metrics as the header lays it out, limit_holds after the histograms', () => {
  // nine uint64 counters (72), 16 double bounds (128), eight histograms of 16 buckets, a
  // count and a sum (144 each), then limit_holds: the layout gcc gives the header's struct
  assert.equal(koffi.offsetof(MetricsType, 'dead_letter'), 72 + 128 + 7 * 144);
  assert.equal(koffi.offsetof(MetricsType, 'limit_holds'), 1352);
  assert.equal(koffi.sizeof(MetricsType), 1360);
});
