'use strict';
// The worker loop's calls (issue #15) as mappings onto the C ABI: claimMany, ackMany,
// ackAndClaimMany, extend and keepAlive, their results and per-lease outcomes, and their
// bad input (the binding's own checks, and the library's messages). How claims wait
// (wakes, aborts, interrupt, close, the pool) is waiting.test.js's.

const assert = require('node:assert/strict');
const { setTimeout: sleep } = require('node:timers/promises');
const { test } = require('node:test');
const { Transport, HarelError, STATUS, MAX_CLAIM } = require('..');
const { scratch, manualClock, rejectsWith } = require('./helpers');

const box = scratch();

/** Publishes one message into each group, in order, with the given options. */
async function fill(t, groups, options = {}) {
  for (const g of groups) await t.publish(g, { g }, options[g] || {});
}

test('claimMany: distinct groups, in the order single claims hand them out; its options reach the library', async () => {
  const clock = manualClock(1000);
  const groups = ['a', 'b', 'c', 'd', 'e'];
  const options = { c: { priority: 3 }, d: { priority: 1, routingKey: 'eu' } };
  const one = await Transport.open(box.db(), { clock: clock.fn });
  const many = await Transport.open(box.db(), { clock: clock.fn });
  for (const t of [one, many]) {
    await fill(t, groups, options);
    await t.publish('a', { g: 'a', second: true }); // a's second message: never in the same batch as its first
  }
  const singles = [];
  for (let i = 0; i < 4; i++) singles.push((await one.claim('w', { visibility: 7 })).groupId);
  const batch = await many.claimMany('w', { max: 4, visibility: 7 });
  assert.ok(Array.isArray(batch));
  assert.deepEqual(batch.map((l) => l.groupId), singles, 'the serving order of one claim after another');
  assert.equal(new Set(batch.map((l) => l.groupId)).size, 4, 'each the head of a different group');
  for (const lease of batch) {
    assert.deepEqual([lease.workerId, lease.lockExpiry, lease.attempts], ['w', 1007, 1]);
    assert.ok(Object.isFrozen(lease));
    assert.deepEqual(lease.event, { g: lease.groupId });
  }
  const rest = await many.claimMany('w', { max: MAX_CLAIM });
  assert.deepEqual(rest.map((l) => l.groupId), groups.filter((g) => !batch.some((l) => l.groupId === g)));
  assert.deepEqual(await many.claimMany('w', { max: 3 }), [], 'an empty array when nothing is deliverable');

  // minPriority and routingKeys
  await many.ackMany([...batch, ...rest]);
  await fill(many, ['p0', 'p1', 'p3'], { p1: { priority: 1, routingKey: 'eu' }, p3: { priority: 3 } });
  const floor = await many.claimMany('w', { max: 10, minPriority: 1 });
  assert.deepEqual(floor.map((l) => l.groupId).sort(), ['p1', 'p3']);
  await many.ackMany(floor);
  await fill(many, ['p1', 'p3'], { p1: { routingKey: 'eu' } });
  const keyed = await many.claimMany('w', { max: 10, routingKeys: ['eu'] });
  assert.deepEqual(keyed.map((l) => l.groupId), ['p1']);
  await one.close();
  await many.close();
});

test('claimMany at MAX_CLAIM: 1,000 leases in one call, then ackMany acks them in one', async () => {
  const t = await Transport.open(box.db(), { synchronousFull: false });
  await t.publishMany(Array.from({ length: MAX_CLAIM + 5 }, (_, i) => ({ groupId: `g${i}`, event: { i, pad: 'x'.repeat(50) } })));
  const leases = await t.claimMany('w', { max: MAX_CLAIM });
  assert.equal(leases.length, MAX_CLAIM);
  assert.equal(new Set(leases.map((l) => l.groupId)).size, MAX_CLAIM);
  const outcomes = await t.ackMany(leases);
  assert.equal(outcomes.length, MAX_CLAIM);
  assert.ok(outcomes.every((o, i) => o.ok && o.error === null && o.lease === leases[i]));
  const s = await t.stats();
  assert.deepEqual([s.messages, s.leased], [5, 0]);
  await t.close();
});

test('ackMany: an outcome per lease, in order; a lost one is reported and the others are acked', async () => {
  const t = await Transport.open(box.db());
  await fill(t, ['a', 'b', 'c']);
  const [a, b, c] = await t.claimMany('w', { max: 3 });
  await t.ack(b); // b's lease is gone before the batch
  const outcomes = await t.ackMany([a, b, { seq: c.seq, groupId: c.groupId, workerId: c.workerId }]);
  assert.deepEqual(outcomes.map((o) => o.ok), [true, false, true]);
  assert.equal(outcomes[0].lease, a, 'each outcome carries the lease it is about');
  assert.equal(outcomes[0].error, null);
  const lost = outcomes[1].error;
  assert.ok(lost instanceof HarelError);
  assert.deepEqual([lost.code, lost.status], ['HAREL_ERR_LEASE_LOST', STATUS.HAREL_ERR_LEASE_LOST]);
  assert.match(lost.message, /ackMany: leases\[1\], message \d+ of group "b", is no longer leased to worker "w"/);
  assert.ok(Object.isFrozen(outcomes[1]));
  const s = await t.stats();
  assert.deepEqual([s.messages, s.leased], [0, 0], 'a and c acked all the same');
  assert.deepEqual(await t.ackMany([]), [], 'an empty array does nothing');
  await t.close();
});

test('ackAndClaimMany: { acked, leases }; a lost lease does not stop the claim; empty when nothing is left', async () => {
  const clock = manualClock(2000);
  const t = await Transport.open(box.db(), { clock: clock.fn });
  await fill(t, ['a', 'b', 'c']);
  await t.publish('a', { g: 'a', n: 2 });
  const [a, b] = await t.claimMany('w', { max: 2 });
  const stolen = { ...b, workerId: 'someone-else' };
  const { acked, leases } = await t.ackAndClaimMany([a, stolen], 'w2', { max: 5, visibility: 9 });
  assert.deepEqual(acked.map((o) => [o.ok, o.error && o.error.code]), [[true, null], [false, 'HAREL_ERR_LEASE_LOST']]);
  assert.equal(acked[1].lease, stolen);
  assert.deepEqual(leases.map((l) => [l.groupId, l.workerId, l.lockExpiry]), [['c', 'w2', 2009], ['a', 'w2', 2009]],
    'claimed after the ack, in the same transaction: a\'s next message is free');
  const last = await t.ackAndClaimMany([b, ...leases], 'w', { max: 1 });
  assert.ok(last.acked.every((o) => o.ok));
  assert.deepEqual(last.leases, [], 'nothing deliverable: no leases');
  const none = await t.ackAndClaimMany([], 'w', { max: 1 });
  assert.deepEqual([none.acked, none.leases], [[], []]);
  assert.equal((await t.stats()).messages, 0);
  await t.close();
});

test('extend: the lease runs to now + visibility, and the Lease object says so', async () => {
  const clock = manualClock(3000);
  const t = await Transport.open(box.db(), { clock: clock.fn });
  await fill(t, ['a']);
  const lease = await t.claim('w', { visibility: 5 });
  clock.advance(2);
  assert.equal(await t.extend(lease, 10), 3012);
  assert.equal(lease.lockExpiry, 3012, "the lease object's lockExpiry moved");
  assert.ok(Object.isFrozen(lease), 'still frozen: only extend moves it');
  assert.throws(() => {
    lease.lockExpiry = 0;
  }, TypeError);
  assert.equal(JSON.parse(JSON.stringify(lease)).lockExpiry, 3012, 'JSON and spreads carry the new value');
  assert.equal({ ...lease }.lockExpiry, 3012);
  clock.advance(9); // past the first visibility: still held
  assert.equal(await t.claim('other'), null, 'still held past its first end');
  assert.equal((await t.groups({ state: 'leased' })).groups[0].lockExpiry, 3012);

  // A plain object with the lease's fields is extended too; it is left as it was.
  const ref = { seq: lease.seq, groupId: lease.groupId, workerId: lease.workerId };
  assert.equal(await t.extend(ref, 1), 3012);
  assert.deepEqual(Object.keys(ref), ['seq', 'groupId', 'workerId']);
  assert.equal(lease.lockExpiry, 3012, 'another object extended: this one is not told');
  await t.ack(lease);
  await rejectsWith(assert, t.extend(lease, 10), 'HAREL_ERR_LEASE_LOST', /no longer leased to worker "w"/);
  assert.equal(lease.lockExpiry, 3012, 'unchanged on LEASE_LOST');
  await t.close();
});

test('extend after a lapse: claimed by another, HAREL_ERR_LEASE_LOST; claimed by no one, extended', async () => {
  const clock = manualClock(4000);
  const t = await Transport.open(box.db(), { clock: clock.fn });
  await fill(t, ['a', 'b']);
  const [a, b] = await t.claimMany('w1', { max: 2, visibility: 5 });
  clock.advance(6); // both lapsed
  const taken = await t.claim('w2', { routingKeys: null, visibility: 5 });
  assert.equal(taken.groupId, a.groupId, 'a was claimed again, by w2');
  await rejectsWith(assert, t.extend(a, 30), 'HAREL_ERR_LEASE_LOST', /lapsed and another worker claimed it/);
  assert.equal(a.lockExpiry, 4005);
  assert.equal(await t.extend(b, 30), 4036, 'b lapsed, but no one claimed it: still w1\'s');
  assert.equal(b.lockExpiry, 4036);
  assert.equal(await t.claim('w2'), null, 'b is held again');
  await t.ack(b);
  await t.ack(taken);
  await t.close();
});

test('keepAlive: a lease outlives its visibility while the beats go on; stop() ends them', async () => {
  const t = await Transport.open(box.db());
  await t.publish('slow', { n: 1 });
  const lease = await t.claim('w', { visibility: 0.6 });
  const first = lease.lockExpiry;
  const alive = t.keepAlive(lease, { visibility: 0.6, every: 0.2 });
  assert.equal(alive.stopped, false);
  await sleep(1500); // 2.5 visibilities
  assert.equal(await t.claim('other'), null, 'still held');
  assert.ok(lease.lockExpiry > first + 0.8, `extended: ${lease.lockExpiry - first} s later`);
  assert.equal(alive.signal.aborted, false);
  alive.stop();
  assert.equal(alive.stopped, true);
  alive.stop(); // again: nothing
  await sleep(900);
  const again = await t.claim('other');
  assert.ok(again && again.groupId === 'slow', 'lapsed once the beats stopped');
  await t.ack(again);
  await t.close();
});

test("keepAlive's signal aborts with HAREL_ERR_LEASE_LOST when the lease is lost; the caller's signal stops it", async () => {
  const t = await Transport.open(box.db());
  await t.publish('g', {});
  const lease = await t.claim('w', { visibility: 30 });
  const alive = t.keepAlive(lease, { visibility: 30, every: 0.05 });
  await t.release('g'); // the operator ends the lease; another worker takes the message
  const other = await t.claim('other');
  assert.ok(other);
  await new Promise((resolve) => alive.signal.addEventListener('abort', resolve, { once: true }));
  const reason = alive.signal.reason;
  assert.ok(reason instanceof HarelError);
  assert.equal(reason.code, 'HAREL_ERR_LEASE_LOST');
  assert.equal(alive.stopped, true);
  assert.equal((await t.groups({ state: 'leased' })).groups[0].holder, 'other');

  const controller = new AbortController();
  const mine = t.keepAlive(other, { every: 0.05, signal: controller.signal });
  controller.abort();
  assert.equal(mine.stopped, true, "the caller's signal stops it");
  assert.equal(mine.signal.aborted, false, 'stopping is not losing the lease');
  const already = t.keepAlive(other, { signal: controller.signal });
  assert.equal(already.stopped, true, 'an aborted signal: never started');
  await t.ack(other);
  await t.close();
});

test('keepAlive: the first beat comes at half the lease\'s time left; a bad visibility aborts its signal with the library\'s error', async () => {
  const t = await Transport.open(box.db());
  await t.publish('g', {});
  const lease = await t.claim('w', { visibility: 0.4 });
  const before = lease.lockExpiry;
  const alive = t.keepAlive(lease, { visibility: 5, every: 10 });
  await sleep(100);
  assert.equal(lease.lockExpiry, before, 'not yet');
  await sleep(250);
  assert.ok(lease.lockExpiry > before + 4, 'extended once half of the 0.4 s was gone, not after every = 10 s');
  alive.stop();

  const bad = t.keepAlive({ seq: lease.seq, groupId: 'g', workerId: 'w' }, { visibility: -1, every: 1 });
  await new Promise((resolve) => bad.signal.addEventListener('abort', resolve, { once: true }));
  assert.equal(bad.signal.reason.code, 'HAREL_ERR_ARGUMENT');
  assert.match(bad.signal.reason.message, /visibility/);
  await t.ack(lease);
  await t.close();
});

test("the worker loop's bad input: the binding's checks, and the library's messages", async () => {
  const t = await Transport.open(box.db());
  await fill(t, ['a', 'b']);
  const lease = await t.claim('w');
  const binding = [
    [() => t.claimMany('w'), /max must be an integer 1\.\.1000, got undefined/],
    [() => t.claimMany('w', { max: MAX_CLAIM + 1 }), /max must be an integer 1\.\.1000, got number 1001/],
    [() => t.claimMany('w', { max: 1.5 }), /max must be an integer/],
    [() => t.claimMany('w', { max: -1 }), /max must be an integer/],
    [() => t.claimMany('w', { max: '3' }), /max must be an integer/],
    [() => t.claimMany('w', { max: 1, waits: 5 }), /unknown option "waits"/],
    [() => t.claimMany(7, { max: 1 }), /workerId must be a string/],
    [() => t.claim('w', { wait: '1' }), /wait must be a number of seconds/],
    [() => t.claim('w', { wait: 1, signal: {} }), /signal must be an AbortSignal/],
    [() => t.claim('w', { signal: 'stop' }), /signal must be an AbortSignal/],
    [() => t.ackAndClaim(lease, 'w', { wait: 1 }), /unknown option "wait"/],
    [() => t.ackMany(lease), /leases must be an array of leases, got object/],
    [() => t.ackMany(null), /leases must be an array/],
    [() => t.ackMany([lease, null]), /leases\[1\] must be a lease object/],
    [() => t.ackMany([lease, { seq: 1, groupId: 'a' }]), /leases\[1\]\.workerId must be a string/],
    [() => t.ackMany([{ groupId: 'a', workerId: 'w' }]), /leases\[0\]\.seq must be an integer/],
    [() => t.ackAndClaimMany('a', 'w', { max: 1 }), /leases must be an array/],
    [() => t.ackAndClaimMany([lease], 'w'), /max must be an integer/],
    [() => t.ackAndClaimMany([lease], 'w', { max: 1, wait: 1 }), /unknown option "wait"/],
    [() => t.extend(lease), /visibility must be a number of seconds/],
    [() => t.extend({ seq: 1, workerId: 'w' }, 5), /lease\.groupId must be a string/],
    [() => t.extend(lease, '5'), /visibility must be a number/],
  ];
  for (const [call, pattern] of binding) await rejectsWith(assert, call(), 'HAREL_ERR_ARGUMENT', pattern);
  const sync = [
    [() => t.keepAlive(lease, { every: 0 }), /every must be a positive number/],
    [() => t.keepAlive(lease, { every: NaN }), /every must be a positive number/],
    [() => t.keepAlive(lease, { visibility: -3 }), /every must be a positive number of seconds \(default: visibility \/ 3\), got number -1/],
    [() => t.keepAlive(lease, { visibility: '30' }), /visibility must be a number/],
    [() => t.keepAlive({ seq: 1 }), /lease\.groupId must be a string/],
    [() => t.keepAlive(lease, { signal: 1 }), /signal must be an AbortSignal/],
    [() => t.keepAlive(lease, { beat: 1 }), /unknown option "beat"/],
  ];
  for (const [call, pattern] of sync) {
    assert.throws(call, (e) => e instanceof HarelError && e.code === 'HAREL_ERR_ARGUMENT' && pattern.test(e.message), String(pattern));
  }
  const library = [
    [() => t.claimMany('w', { max: 0 }), /max/],
    [() => t.claimMany('w', { max: 2, visibility: 0 }), /visibility/],
    [() => t.claimMany('w', { max: 2, minPriority: 5 }), /min_priority/],
    [() => t.claimMany('', { max: 2 }), /worker_id/],
    [() => t.claim('w', { wait: -1 }), /wait/],
    [() => t.claim('w', { wait: NaN }), /wait/],
    [() => t.claim('w', { wait: Infinity }), /wait/],
    [() => t.claimMany('w', { max: 1, wait: -0.5 }), /wait/],
    [() => t.claimMany('w', { max: 1, wait: Infinity }), /wait/],
    [() => t.ackMany([lease, { ...lease, workerId: '' }]), /leases\[1\]\.worker_id/],
    [() => t.ackAndClaimMany([lease], 'w', { max: 0 }), /max/],
    [() => t.ackAndClaimMany([{ ...lease, groupId: '' }], 'w', { max: 1 }), /leases\[0\]\.group_id/],
    [() => t.extend(lease, 0), /visibility/],
    [() => t.extend(lease, NaN), /visibility/],
    [() => t.extend({ ...lease, workerId: '' }, 5), /worker_id/],
  ];
  for (const [call, pattern] of library) {
    const e = await rejectsWith(assert, call(), 'HAREL_ERR_ARGUMENT', pattern);
    assert.equal(e.status, -1);
  }
  // nothing changed: a's lease held (the bad batches acked nothing), b ready
  const s = await t.stats();
  assert.deepEqual([s.messages, s.leased, s.ready], [2, 1, 1]);
  await t.ack(lease);
  await t.ack(await t.claim('w'));
  await t.close();
});

test('HAREL_ERR_CLOSED for every call of the worker loop', async () => {
  const t = await Transport.open(box.db());
  await t.close();
  const lease = { seq: 1, groupId: 'g', workerId: 'w' };
  const calls = [
    () => t.claim('w', { wait: 1 }), () => t.claimMany('w', { max: 1, wait: 1 }), () => t.ackMany([lease]),
    () => t.ackAndClaimMany([lease], 'w', { max: 1 }), () => t.extend(lease, 5),
  ];
  for (const call of calls) await rejectsWith(assert, call(), 'HAREL_ERR_CLOSED', /the transport is closed/);
  assert.throws(() => t.keepAlive(lease), (e) => e.code === 'HAREL_ERR_CLOSED');
  t.interrupt(); // nothing waits: nothing to do, and no error
});
