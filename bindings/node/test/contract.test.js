'use strict';
// The transport contract (SPEC.md, ABI.md) through the Node binding, with an injected clock.

const assert = require('node:assert/strict');
const { test } = require('node:test');
const { Transport, DEFAULT_VISIBILITY } = require('..');
const { scratch, manualClock, rejectsWith } = require('./helpers');

const box = scratch();

function open(clock, options = {}) {
  return Transport.open(box.db(), { clock: clock.fn, ...options });
}

const event = (n) => ({ kind: 'test', id: `e${n}`, data: { n } });

test('FIFO within a group; one message of a group in flight at a time', async () => {
  const clock = manualClock();
  const t = await open(clock);
  for (let n = 0; n < 3; n++) await t.publish('a', event(n));
  await t.publish('b', event(9));
  const first = await t.claim('w1');
  assert.equal(first.groupId, 'a');
  assert.deepEqual(first.event, event(0));
  const second = await t.claim('w2');
  assert.equal(second.groupId, 'b', 'a is in flight, b proceeds');
  assert.equal(await t.claim('w3'), null, 'both groups in flight');
  await t.ack(first);
  for (const n of [1, 2]) {
    const lease = await t.claim('w3');
    assert.deepEqual([lease.groupId, lease.event], ['a', event(n)]);
    await t.ack(lease);
  }
  await t.ack(second);
  assert.equal(await t.claim('w1'), null);
  await t.close();
});

test('a lease has every field; the event is parsed and kept byte for byte', async () => {
  const clock = manualClock(1000);
  const t = await open(clock);
  const text = ' {"kind": "x",  "data": [1, 2.50, "é"]} ';
  await t.publish('g', text);
  const lease = await t.claim('worker-7', { visibility: 12.5 });
  assert.deepEqual(Object.keys(lease).sort(), ['event', 'eventJson', 'groupId', 'lockExpiry', 'seq', 'workerId']);
  assert.equal(typeof lease.seq, 'number', 'seq is a Number while it is a safe integer');
  assert.ok(Number.isSafeInteger(lease.seq) && lease.seq > 0);
  assert.equal(lease.groupId, 'g');
  assert.equal(lease.eventJson, text, 'stored and returned byte for byte');
  assert.deepEqual(lease.event, { kind: 'x', data: [1, 2.5, 'é'] });
  assert.equal(lease.workerId, 'worker-7');
  assert.equal(lease.lockExpiry, 1000 + 12.5);
  assert.ok(Object.isFrozen(lease));
  await t.ack(lease);
  await t.close();
});

test('the default visibility is 30 seconds', async () => {
  const clock = manualClock(5000);
  const t = await open(clock);
  assert.equal(DEFAULT_VISIBILITY, 30);
  await t.publish('g', event(1));
  const lease = await t.claim('w');
  assert.equal(lease.lockExpiry, 5000 + 30);
  await t.close();
});

test('events: objects, JSON texts of any kind, unicode, and a large one', async () => {
  const clock = manualClock();
  const t = await open(clock);
  const big = { kind: 'big', data: 'x'.repeat(1 << 20) };
  const samples = [['o', { a: [1, { b: null }] }], ['s', '"just a string"'], ['n', '42'], ['u', { emoji: '🦀', cjk: '漢字' }], ['big', big]];
  for (const [group, sample] of samples) await t.publish(`group-${group}-ü`, sample);
  const seen = new Map();
  for (;;) {
    const lease = await t.claim('w');
    if (!lease) break;
    seen.set(lease.groupId, lease);
    await t.ack(lease);
  }
  assert.equal(seen.size, samples.length);
  assert.deepEqual(seen.get('group-o-ü').event, { a: [1, { b: null }] });
  assert.equal(seen.get('group-s-ü').event, 'just a string');
  assert.equal(seen.get('group-n-ü').event, 42);
  assert.deepEqual(seen.get('group-u-ü').event, { emoji: '🦀', cjk: '漢字' });
  assert.equal(seen.get('group-big-ü').eventJson, JSON.stringify(big));
  await t.close();
});

test('a lapsed lease is claimable again, and the old holder has lost it', async () => {
  const clock = manualClock();
  const t = await open(clock);
  await t.publish('g', event(1));
  const stale = await t.claim('w1', { visibility: 10 });
  assert.equal(await t.claim('w2'), null, 'still leased');
  clock.advance(11);
  const fresh = await t.claim('w2', { visibility: 10 });
  assert.equal(fresh.seq, stale.seq);
  assert.equal(fresh.workerId, 'w2');
  await rejectsWith(assert, t.ack(stale), 'HAREL_ERR_LEASE_LOST', /no longer leased to worker "w1"/);
  await rejectsWith(assert, t.nack(stale), 'HAREL_ERR_LEASE_LOST');
  await t.ack(fresh);
  await rejectsWith(assert, t.ack(fresh), 'HAREL_ERR_LEASE_LOST', /gone|no longer/);
  await t.close();
});

test('nack: delay 0 frees at once, a delay parks the group until it passes', async () => {
  const clock = manualClock();
  const t = await open(clock);
  await t.publish('g', event(1));
  await t.publish('g', event(2));
  await t.publish('other', event(3));
  const lease = await t.claim('w1');
  assert.equal(lease.groupId, 'g');
  await t.nack(lease);
  clock.advance(1);
  const again = await t.claim('w2', { minPriority: 0, routingKeys: [] });
  assert.equal(again.groupId, 'other', 'the served group yields to the never-claimed one');
  clock.advance(1);
  const retry = await t.claim('w2');
  assert.deepEqual([retry.seq, retry.workerId], [lease.seq, 'w2'], 'claimable at once after nack');
  await t.nack(retry, { delay: 60 });
  await rejectsWith(assert, t.ack(retry), 'HAREL_ERR_LEASE_LOST', undefined);
  await t.ack(again);
  assert.equal(await t.claim('w3'), null, 'the parked message blocks its group');
  clock.advance(61);
  const after = await t.claim('w3');
  assert.deepEqual([after.seq, after.event], [lease.seq, event(1)], 'FIFO kept through the park');
  await t.ack(after);
  await t.close();
});

test('round robin cycles through groups', async () => {
  const clock = manualClock();
  const t = await open(clock);
  for (let round = 0; round < 3; round++) for (const g of ['a', 'b', 'c']) await t.publish(g, event(round));
  let order = '';
  for (let i = 0; i < 9; i++) {
    clock.advance(1);
    const lease = await t.claim('w');
    order += lease.groupId;
    await t.ack(lease);
  }
  assert.equal(order, 'abcabcabc');
  await t.close();
});

test('priority floor and routing keys; the first publish fixes both', async () => {
  const clock = manualClock();
  const t = await open(clock);
  await t.publish('low', event(1), { priority: 1 });
  await t.publish('high', event(2), { priority: 3, routingKey: 'east' });
  await t.publish('high', event(3), { priority: 0, routingKey: 'west' });
  await t.publish('keyed', event(4), { routingKey: 'west' });
  const top = await t.claim('w', { minPriority: 3 });
  assert.equal(top.groupId, 'high');
  assert.equal(await t.claim('w', { minPriority: 3 }), null, 'low is below the floor');
  await t.ack(top);
  clock.advance(1);
  const west = await t.claim('w', { routingKeys: ['west'] });
  assert.equal(west.groupId, 'keyed', "high's key stayed east");
  const east = await t.claim('w', { routingKeys: ['north', 'east'], minPriority: 3 });
  assert.deepEqual([east.groupId, east.event], ['high', event(3)], "high's priority stayed 3");
  assert.equal((await t.claim('w', { routingKeys: null })).groupId, 'low', 'no keys: any group');
  await t.close();
});

test('publishMany: one batch, each group in batch order, the first message fixes the group', async () => {
  const clock = manualClock();
  const t = await open(clock);
  const groups = ['a', 'b', 'c'];
  const batch = [0, 1, 2, 3, 4, 5].map((n) => ({ groupId: groups[n % 3], event: event(n) }));
  batch[1] = { ...batch[1], priority: 3, routingKey: 'east' };
  batch[4] = { ...batch[4], priority: 0, routingKey: 'west' }; // b exists: changes nothing
  await t.publishMany(batch);
  assert.equal(await t.claim('w', { routingKeys: ['west'] }), null, "b's key stayed east");
  const b = await t.claim('w', { minPriority: 3, routingKeys: ['east'] });
  assert.deepEqual([b.groupId, b.event], ['b', event(1)], "b's priority stayed 3");
  await t.ack(b);
  clock.advance(1);
  const order = [];
  for (let lease = await t.claim('w'); lease !== null; lease = await t.claim('w')) {
    order.push(lease.event.data.n);
    await t.ack(lease);
    clock.advance(1);
  }
  assert.deepEqual(order, [0, 2, 4, 3, 5], 'round robin (b was served first): a, c, b, a, c; each in batch order');
  await t.publishMany([]);
  assert.equal(await t.claim('w'), null, 'an empty batch publishes nothing');
  await t.close();
});

test('ackAndClaim acks, then leases the next message by the claim options; a lost lease claims nothing', async () => {
  const clock = manualClock();
  const t = await open(clock);
  await t.publish('a', event(1));
  await t.publish('a', event(2));
  const first = await t.claim('w');
  const next = await t.ackAndClaim(first, 'w');
  assert.deepEqual([next.groupId, next.event], ['a', event(2)], 'a is free once its head is acked');
  await t.publish('k', event(3), { routingKey: 'key' });
  await t.publish('other', event(5));
  const keyed = await t.ackAndClaim(next, 'w', { routingKeys: ['key'], visibility: 5 });
  assert.equal(keyed.groupId, 'k');
  assert.equal(keyed.lockExpiry, clock.now + 5);
  assert.equal(await t.ackAndClaim(keyed, 'w', { routingKeys: ['key'] }), null, 'acked, and nothing left for the key');
  await t.publish('b', event(4));
  await rejectsWith(assert, t.ackAndClaim(keyed, 'w'), 'HAREL_ERR_LEASE_LOST');
  assert.deepEqual([(await t.claim('w')).groupId, (await t.claim('w')).groupId].sort(), ['b', 'other'], 'the failed call claimed nothing');
  await rejectsWith(assert, t.ackAndClaim(null, 'w'), 'HAREL_ERR_ARGUMENT', /lease/);
  await rejectsWith(assert, t.ackAndClaim(first, 'w', { minPriority: 9 }), 'HAREL_ERR_ARGUMENT', /min_priority/);
  await t.close();
});

test('ack and nack take any object with seq, groupId and workerId (e.g. a copied lease)', async () => {
  const clock = manualClock();
  const t = await open(clock);
  await t.publish('g', event(1));
  await t.publish('g', event(2));
  const lease = await t.claim('w');
  const copy = JSON.parse(JSON.stringify({ seq: lease.seq, groupId: lease.groupId, workerId: lease.workerId }));
  await rejectsWith(assert, t.ack({ ...copy, groupId: 'other' }), 'HAREL_ERR_LEASE_LOST');
  await t.ack(copy);
  const second = await t.claim('w');
  await t.nack({ seq: BigInt(second.seq), groupId: 'g', workerId: 'w' }, { delay: 0 });
  assert.equal((await t.claim('w')).seq, second.seq, 'a bigint seq works as well');
  await t.close();
});

test('":memory:" works, and two transports on one file see one queue', async () => {
  const clock = manualClock();
  const mem = await Transport.open(':memory:', { clock: clock.fn });
  await mem.publish('g', event(1));
  assert.equal((await mem.claim('w')).groupId, 'g');
  await mem.close();

  const path = box.db('shared');
  const a = await Transport.open(path, { clock: clock.fn, prefix: 'app_1', synchronousFull: false, busyTimeout: 2 });
  const b = await Transport.open(path, { clock: clock.fn, prefix: 'app_1', createSchema: false });
  const other = await Transport.open(path, { clock: clock.fn, prefix: 'other' });
  assert.equal(a.path, path);
  await a.publish('g', event(1));
  assert.equal(await other.claim('w'), null, 'another prefix is another queue');
  const lease = await b.claim('w');
  assert.equal(lease.groupId, 'g');
  await a.ack(lease);
  assert.equal(await b.claim('w'), null);
  await Promise.all([a.close(), b.close(), other.close()]);
});

test('the clock is read for claim, ack and nack, and may move backwards or be fractional', async () => {
  const clock = manualClock(1000.123456789);
  let reads = 0;
  const t = await Transport.open(box.db(), { clock: () => { reads += 1; return clock.now; } });
  const atOpen = reads;
  await t.publish('g', event(1));
  assert.equal(reads, atOpen, 'publish needs no time');
  const lease = await t.claim('w', { visibility: 1 });
  assert.equal(lease.lockExpiry, 1000.123456789 + 1, 'the exact double reaches the library');
  clock.now = 10;
  await t.nack(lease);
  const again = await t.claim('w', { visibility: 0.25 });
  assert.equal(again.lockExpiry, 10.25);
  await t.ack(again);
  assert.equal(reads, atOpen + 4);
  await t.close();
});
