'use strict';
// Producers (issue 24): publishWith and publishManyWith (an idempotency key, a delay or a
// due instant per message, each message's { seq, duplicate }), the keyRetention open
// option, and the delayed state in stats, groups and peek. Each call's mapping onto the C
// ABI, with what it does that the binding must carry whole (duplicates, a delayed head
// holding its group); bad input, the binding's and the library's, leaving the queue as it
// was. The queue's rules themselves are the Rust contract's (tests/common/contract.rs).

const assert = require('node:assert/strict');
const { test } = require('node:test');
const { Transport } = require('..');
const { scratch, manualClock, rejectsWith, runPython } = require('./helpers');

const box = scratch();

/** The seqs of a group's messages, oldest first. */
async function seqsOf(t, groupId) {
  return (await t.peek(groupId)).messages.map((m) => m.seq);
}

/** Claims and acks everything deliverable now; resolves the events, in claim order. */
async function drain(t) {
  const events = [];
  for (let lease = await t.claim('w'); lease; lease = await t.ackAndClaim(lease, 'w')) events.push(lease.event);
  return events;
}

test('publishWith: the options reach the library; it resolves a frozen { seq, duplicate }', async () => {
  const t = await Transport.open(box.db());
  const plain = await t.publishWith('plain', { n: 0 });
  assert.deepEqual(plain, { seq: 1, duplicate: false, replaced: false });
  assert.ok(Object.isFrozen(plain));
  assert.equal(typeof plain.seq, 'number', 'a seq is a Number, as a lease\'s');
  const east = await t.publishWith('east', '{"n":1}', { priority: 3, routingKey: 'east', key: null, delay: 0, notBefore: null });
  assert.deepEqual(east, { seq: 2, duplicate: false, replaced: false });
  const lease = await t.claim('w', { minPriority: 3, routingKeys: ['east'] });
  assert.deepEqual([lease.seq, lease.groupId, lease.eventJson], [east.seq, 'east', '{"n":1}'], 'priority and routingKey reached the library');
  await t.ack(lease);
  assert.equal((await t.claim('w')).seq, plain.seq, 'the seq resolved is the message\'s');
  await t.close();
});

test('a key seen stores nothing: the duplicate resolves the first message\'s seq, also after its ack', async () => {
  const t = await Transport.open(box.db());
  const first = await t.publishWith('order-17', { kind: 'paid', attempt: 1 }, { key: 'order-17/paid' });
  assert.deepEqual(first, { seq: 1, duplicate: false, replaced: false });
  const retry = await t.publishWith('order-17', { kind: 'paid', attempt: 2 }, { key: 'order-17/paid' });
  assert.deepEqual(retry, { seq: first.seq, duplicate: true, replaced: false });
  const elsewhere = await t.publishWith('order-99', {}, { key: 'order-17/paid', delay: 60 });
  assert.deepEqual(elsewhere, { seq: first.seq, duplicate: true, replaced: false }, 'the key is the queue\'s, whatever the group and options');
  assert.deepEqual(await seqsOf(t, 'order-17'), [first.seq], 'one message stored');
  assert.deepEqual((await t.groups()).groups.map((g) => g.groupId), ['order-17'], 'no group made by a duplicate');
  assert.equal(t.metrics().published, 1, 'a duplicate is not a published message');

  const lease = await t.claim('w');
  assert.deepEqual(lease.event, { kind: 'paid', attempt: 1 });
  await t.ack(lease);
  const afterAck = await t.publishWith('order-17', { kind: 'paid', attempt: 3 }, { key: 'order-17/paid' });
  assert.deepEqual(afterAck, { seq: first.seq, duplicate: true, replaced: false }, 'the key outlives its message');
  assert.equal(await t.claim('w'), null, 'nothing stored after the ack');

  const other = await t.publishWith('order-17', {}, { key: 'order-17/shipped' });
  assert.deepEqual(other, { seq: first.seq + 1, duplicate: false, replaced: false }, 'another key stores');
  const unkeyed = await t.publishWith('order-17', {});
  assert.equal(unkeyed.duplicate, false, 'no key: never a duplicate');
  await t.close();
});

test('publishManyWith: options per message, an outcome per message in order, duplicates in and before the batch', async () => {
  const clock = manualClock(1000);
  const t = await Transport.open(box.db(), { clock: clock.fn });
  const earlier = await t.publishWith('a', { n: 'earlier' }, { key: 'k-earlier' });
  const outcomes = await t.publishManyWith([
    { groupId: 'a', event: { n: 0 }, key: 'k0' },
    { groupId: 'b', event: '{"n":1}', priority: 2, routingKey: 'b-key', key: 'k-earlier' },
    { groupId: 'b', event: { n: 2 }, key: 'k0' },
    { groupId: 'c', event: { n: 3 }, delay: 10 },
    { groupId: 'd', event: { n: 4 }, notBefore: 1005, key: null },
    { groupId: 'a', event: { n: 5 } },
  ]);
  assert.ok(Array.isArray(outcomes) && outcomes.every((o) => Object.isFrozen(o)));
  const s = earlier.seq;
  assert.deepEqual(outcomes, [
    { seq: s + 1, duplicate: false, replaced: false },
    { seq: s, duplicate: true, replaced: false }, // seen before the batch
    { seq: s + 1, duplicate: true, replaced: false }, // k0 earlier in the batch
    { seq: s + 2, duplicate: false, replaced: false },
    { seq: s + 3, duplicate: false, replaced: false },
    { seq: s + 4, duplicate: false, replaced: false },
  ]);
  assert.deepEqual(await seqsOf(t, 'a'), [s, s + 1, s + 4]);
  assert.deepEqual(await seqsOf(t, 'b'), [], 'both of b\'s were duplicates: no message, no group');
  assert.deepEqual((await t.groups()).groups.map((g) => [g.groupId, g.state]), [['a', 'ready'], ['c', 'delayed'], ['d', 'delayed']]);
  assert.deepEqual((await t.peek('c')).messages[0].lockExpiry, 1010, 'the delay reached the library');
  assert.deepEqual((await t.peek('d')).messages[0].lockExpiry, 1005, 'notBefore reached the library');
  assert.deepEqual(await t.publishManyWith([]), [], 'an empty batch');
  const all = await t.publishManyWith([{ groupId: 'e', event: {} }, { groupId: 'e', event: {}, priority: 1 }]);
  assert.deepEqual(all.map((o) => o.duplicate), [false, false], 'elements without delivery options');
  await t.close();
});

test('concurrent retries with one key: one message stored, every retry resolves its seq', async () => {
  const t = await Transport.open(box.db(), { synchronousFull: false });
  const tries = await Promise.all(Array.from({ length: 12 }, (_, i) => t.publishWith('g', { try: i }, { key: 'once' })));
  assert.equal(tries.filter((o) => !o.duplicate).length, 1);
  assert.equal(new Set(tries.map((o) => o.seq)).size, 1);
  const batches = await Promise.all(Array.from({ length: 4 }, () => t.publishManyWith([{ groupId: 'h', event: {}, key: 'twice' }])));
  assert.equal(batches.filter(([o]) => !o.duplicate).length, 1);
  assert.deepEqual((await t.stats()).messages, 2);
  await t.close();
});

test('seqs past 2^53 - 1 come back as bigints, as a lease\'s do', async () => {
  const db = box.db();
  const t = await Transport.open(db);
  await t.publish('g', {});
  const big = 2n ** 53n + 1n;
  await runPython(`
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
db.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'harel_transport_messages'", (${big},))
print("null")
`, db);
  const one = await t.publishWith('g', {}, { key: 'big' });
  assert.deepEqual(one, { seq: big + 1n, duplicate: false, replaced: false });
  assert.deepEqual(await t.publishWith('g', {}, { key: 'big' }), { seq: big + 1n, duplicate: true, replaced: false });
  assert.deepEqual(await t.publishManyWith([{ groupId: 'g', event: {} }, { groupId: 'g', event: {}, key: 'big' }]), [
    { seq: big + 2n, duplicate: false, replaced: false },
    { seq: big + 1n, duplicate: true, replaced: false },
  ]);
  await t.close();
});

test('keyRetention: a key is remembered that long, then forgotten; bad values are refused', async () => {
  const clock = manualClock(1000);
  const t = await Transport.open(box.db(), { clock: clock.fn, keyRetention: 60 });
  const first = await t.publishWith('g', {}, { key: 'k' });
  clock.advance(59);
  assert.deepEqual(await t.publishWith('g', {}, { key: 'k' }), { seq: first.seq, duplicate: true, replaced: false });
  clock.advance(2);
  assert.deepEqual(await t.publishWith('g', {}, { key: 'k' }), { seq: first.seq + 1, duplicate: false, replaced: false }, 'forgotten after 60 s');
  await t.close();

  const day = manualClock(1000);
  const byDefault = await Transport.open(box.db(), { clock: day.fn });
  await byDefault.publishWith('g', {}, { key: 'k' });
  day.advance(86399);
  assert.equal((await byDefault.publishWith('g', {}, { key: 'k' })).duplicate, true, 'the default: a day');
  day.advance(2);
  assert.equal((await byDefault.publishWith('g', {}, { key: 'k' })).duplicate, false);
  await byDefault.close();

  for (const bad of [0, -1, NaN, Infinity, 11 * 365 * 86400]) {
    await rejectsWith(assert, Transport.open(box.db(), { keyRetention: bad }), 'HAREL_ERR_ARGUMENT', /key_retention/);
  }
  for (const bad of ['1d', null, 60n]) {
    await rejectsWith(assert, Transport.open(box.db(), { keyRetention: bad }), 'HAREL_ERR_ARGUMENT', /keyRetention must be a number/);
  }
});

test('a delayed message is not claimable before its time, and is after; the later of delay and notBefore', async () => {
  const clock = manualClock(1000);
  const t = await Transport.open(box.db(), { clock: clock.fn });
  await t.publishWith('by-delay', { n: 'delay' }, { delay: 10 });
  await t.publishWith('by-instant', { n: 'instant' }, { notBefore: 1020 });
  await t.publishWith('both-delay', { n: 'both, delay later' }, { delay: 30, notBefore: 1025 });
  await t.publishWith('both-instant', { n: 'both, instant later' }, { delay: 5, notBefore: 1040 });
  await t.publishWith('past', { n: 'past' }, { notBefore: 500 });
  await t.publishWith('zero', { n: 'zero' }, { delay: 0, notBefore: 0 });
  assert.deepEqual(await drain(t), [{ n: 'past' }, { n: 'zero' }], 'a due time that has passed delays nothing');
  for (const [at, due] of [[1009.999, []], [1010.001, ['delay']], [1019.9, []], [1020.1, ['instant']], [1029.9, []],
    [1030.1, ['both, delay later']], [1039.9, []], [1040.1, ['both, instant later']]]) {
    clock.now = at;
    assert.deepEqual((await drain(t)).map((e) => e.n), due, `at ${at}`);
  }
  await t.close();
});

test('a later message of the group waits behind a delayed one; other groups are served meanwhile', async () => {
  const clock = manualClock(1000);
  const t = await Transport.open(box.db(), { clock: clock.fn });
  await t.publishWith('g', { n: 1 }, { delay: 10 });
  await t.publish('g', { n: 2 });
  await t.publishManyWith([{ groupId: 'g', event: { n: 3 } }, { groupId: 'other', event: { n: 'other' } }]);
  assert.deepEqual(await drain(t), [{ n: 'other' }], 'g holds: its head is delayed');
  clock.advance(5);
  assert.equal(await t.claim('w'), null);
  clock.advance(5.5);
  assert.deepEqual(await drain(t), [{ n: 1 }, { n: 2 }, { n: 3 }], 'in FIFO order once due');

  // a delayed message behind a ready one holds the group once it is the head
  await t.publish('h', { n: 'first' });
  await t.publishWith('h', { n: 'delayed' }, { delay: 10 });
  await t.publish('h', { n: 'last' });
  assert.deepEqual(await drain(t), [{ n: 'first' }]);
  clock.advance(10.5);
  assert.deepEqual(await drain(t), [{ n: 'delayed' }, { n: 'last' }]);
  await t.close();
});

test('the delayed state: stats count it, groups list it and filter by it, peek shows the lock; release delivers now', async () => {
  const clock = manualClock(1000);
  const t = await Transport.open(box.db(), { clock: clock.fn });
  await t.publishWith('d1', {}, { delay: 30, priority: 2 });
  await t.publishWith('d2', {}, { notBefore: 1010 });
  await t.publish('d2', {});
  await t.publish('ready', {});
  await t.publish('leased', {}, { priority: 2 });
  const lease = await t.claim('w', { minPriority: 2, visibility: 60 });
  assert.equal(lease.groupId, 'leased');
  const s = await t.stats();
  assert.deepEqual([s.groups, s.ready, s.leased, s.parked, s.delayed, s.messages], [4, 1, 1, 0, 2, 5]);
  assert.equal(s.ready + s.leased + s.parked + s.delayed, s.groups);
  assert.equal(s.nextDueAt, 1010, 'the soonest due time');
  assert.equal(s.nextReleaseAt, 1010, 'a due time is a release too (the soonest of leases, parks and delays)');
  assert.deepEqual(s.byPriority.map((p) => ({ ...p })), [
    { priority: 0, groups: 2, ready: 1, leased: 0, parked: 0, delayed: 1, paused: 0 },
    { priority: 2, groups: 2, ready: 0, leased: 1, parked: 0, delayed: 1, paused: 0 },
  ]);

  const groups = (await t.groups()).groups;
  assert.deepEqual(groups.map((g) => [g.groupId, g.state, g.holder, g.lockExpiry, g.depth]), [
    ['d1', 'delayed', null, 1030, 1],
    ['d2', 'delayed', null, 1010, 2],
    ['leased', 'leased', 'w', 1060, 1],
    ['ready', 'ready', null, null, 1],
  ]);
  assert.deepEqual((await t.groups({ state: 'delayed' })).groups.map((g) => g.groupId), ['d1', 'd2']);
  assert.deepEqual((await t.groups({ state: 'ready' })).groups.map((g) => g.groupId), ['ready']);
  assert.deepEqual((await t.groups({ state: 'delayed', limit: 1 })).next !== null, true, 'the filter pages');
  assert.deepEqual((await t.peek('d2')).messages.map((m) => [m.lockedBy, m.lockExpiry, m.attempts]), [
    ['__delayed__', 1010, 0],
    [null, null, 0],
  ]);

  clock.advance(10.5); // d2 is due
  const later = await t.stats();
  assert.deepEqual([later.ready, later.delayed, later.nextDueAt], [2, 1, 1030]);
  assert.deepEqual((await t.groups({ state: 'ready' })).groups.map((g) => g.groupId), ['d2', 'ready']);
  assert.equal(await t.release('d1'), true, 'release ends a delay as it ends a lease or park');
  const none = await t.stats();
  assert.deepEqual([none.delayed, none.nextDueAt], [0, null]);
  assert.deepEqual((await t.groups({ state: 'delayed' })).groups, []);
  await t.close();
});

test('a waiting claim wakes at the due time of a delayed message', async () => {
  const t = await Transport.open(box.db());
  await t.publishWith('g', { n: 1 }, { delay: 0.4 });
  const started = performance.now();
  const lease = await t.claim('w', { wait: 10 });
  const ms = performance.now() - started;
  assert.deepEqual(lease.event, { n: 1 });
  assert.ok(ms >= 300 && ms < 5000, `woke after ${ms.toFixed(0)} ms`);
  await t.ack(lease);
  await t.close();
});

test('bad input is HAREL_ERR_ARGUMENT and leaves the queue as it was', async () => {
  const clock = manualClock(1000);
  const t = await Transport.open(box.db(), { clock: clock.fn });
  const kept = await t.publishWith('g', { n: 'kept' }, { key: 'kept' });
  await t.publishWith('g', { n: 'delayed' }, { delay: 100 }); // g: ready head, then a delayed one
  const before = await t.stats();
  const peekBefore = await t.peek('g');
  const ok = { groupId: 'g', event: { n: 'new' }, key: 'fresh' }; // stored by none of the batches below
  const ok2 = () => ({ groupId: 'g', event: { n: 'new' } });

  // the library's checks: its messages, naming the C parameter (and the element in a batch)
  const tenYears = 315360000;
  const library = [
    [{ key: '' }, /key is empty/],
    [{ key: 'k'.repeat(257) }, /key is 257 bytes; at most 256/],
    [{ key: 'é'.repeat(129) }, /key is 258 bytes/], // bytes, not characters
    [{ delay: NaN }, /delay is NaN/],
    [{ delay: -1 }, /delay is -1/],
    [{ delay: -Infinity }, /delay is -inf/],
    [{ delay: Infinity }, /delay is inf/],
    [{ delay: tenYears + 1 }, /delay is 315360001/],
    [{ delay: 1e300 }, /delay is/],
    [{ notBefore: NaN }, /not_before is NaN/],
    [{ notBefore: Infinity }, /not_before is inf/],
    [{ notBefore: 1000 + tenYears + 10 }, /not_before .*more than ten years/],
    [{ notBefore: 1e300 }, /not_before .*more than ten years/],
    [{ priority: 5 }, /priority/],
    [{ routingKey: '' }, /routing_key/],
  ];
  for (const [options, pattern] of library) {
    const e = await rejectsWith(assert, t.publishWith('g', { n: 'bad' }, { key: 'fresh', ...options }), 'HAREL_ERR_ARGUMENT', pattern);
    assert.equal(e.status, -1);
    const batch = await rejectsWith(assert, t.publishManyWith([ok, { groupId: 'g', event: {}, ...options }]), 'HAREL_ERR_ARGUMENT', pattern);
    assert.match(batch.message, /messages\[1\]\./, 'the batch\'s error names the element');
  }
  await rejectsWith(assert, t.publishWith('', {}, { key: 'fresh' }), 'HAREL_ERR_ARGUMENT', /group_id/);
  await rejectsWith(assert, t.publishWith('g', '{not json', { key: 'fresh' }), 'HAREL_ERR_ARGUMENT', /event_json/);
  await rejectsWith(assert, t.publishManyWith([ok, { groupId: 'g', event: '[1,' }]), 'HAREL_ERR_ARGUMENT', /messages\[1\]\.event_json/);

  // the binding's: what the C call would take otherwise (a cut string, a number made of a
  // string, a negative not_before read as none)
  const binding = [
    [{ key: 5 }, /key must be a string or null, got number 5/],
    [{ key: ['k'] }, /key must be a string/],
    [{ key: 'k\0' }, /key must not contain a NUL/],
    [{ key: 'k\uD800' }, /key is not valid Unicode/],
    [{ delay: '10' }, /delay must be a number/],
    [{ delay: null }, /delay must be a number/],
    [{ delay: 10n }, /delay must be a number/],
    [{ notBefore: new Date(2030, 0, 1) }, /notBefore must be epoch seconds as a number.*date\.getTime\(\) \/ 1000/],
    [{ notBefore: '2030-01-01' }, /notBefore must be epoch seconds as a number/],
    [{ notBefore: 1n }, /notBefore must be epoch seconds as a number/],
    [{ notBefore: -1 }, /notBefore must be epoch seconds >= 0/],
    [{ notBefore: -Infinity }, /notBefore must be epoch seconds >= 0/],
    [{ priority: 1.5 }, /priority must be an integer/],
    [{ routingKey: 7 }, /routingKey must be a string/],
  ];
  for (const [options, pattern] of binding) {
    await rejectsWith(assert, t.publishWith('g', { n: 'bad' }, { key: 'fresh', ...options }), 'HAREL_ERR_ARGUMENT', pattern);
    const batch = await rejectsWith(assert, t.publishManyWith([ok, { groupId: 'g', event: {}, ...options }]), 'HAREL_ERR_ARGUMENT', pattern);
    assert.match(batch.message, /^messages\[1\]\./, 'the batch\'s error names the element');
  }
  const shapes = [
    [() => t.publishWith('g', {}, { idempotencyKey: 'k' }), /options: unknown option "idempotencyKey"/],
    [() => t.publishWith('g', {}, 'key'), /options must be an object/],
    [() => t.publishWith(42, {}), /groupId must be a string/],
    [() => t.publishWith('g', undefined), /event can't be turned into JSON/],
    [() => t.publishManyWith({ groupId: 'g', event: {} }), /messages must be an array/],
    // a hole is an element too (the C array is as long as the JS one)
    [() => t.publishManyWith([ok, , ok]), /messages\[1\] must be an object \{ groupId, event, .*got undefined/],
    [() => t.publishMany([ok2(), , ok2()]), /messages\[1\] must be an object \{ groupId, event, priority\?, routingKey\?, headers\? \}, got undefined/],
    [() => t.publishManyWith([ok, null]),
      /messages\[1\] must be an object \{ groupId, event, priority\?, .*, unique\?, ttl\?, expiresAt\?, retry\? \}/],
    [() => t.publishManyWith([ok, { groupId: 'g', event: {}, delai: 5 }]), /messages\[1\]: unknown option "delai"/],
    [() => t.publishMany([{ groupId: 'g', event: {}, key: 'k' }]), /messages\[0\]: unknown option "key"/],
    [() => t.publish('g', {}, { delay: 5 }), /unknown option "delay"/],
  ];
  for (const [call, pattern] of shapes) await rejectsWith(assert, call(), 'HAREL_ERR_ARGUMENT', pattern);

  // nothing changed: the same messages, the same delayed head; 'fresh' was never taken
  const after = await t.stats();
  assert.deepEqual({ ...after, byPriority: undefined }, { ...before, byPriority: undefined });
  assert.deepEqual(await t.peek('g'), peekBefore);
  assert.deepEqual(await t.publishWith('g', {}, { key: 'kept' }), { seq: kept.seq, duplicate: true, replaced: false });
  assert.equal((await t.publishWith('g', { n: 'new' }, { key: 'fresh' })).duplicate, false, 'no rejected call stored its key');
  await t.close();
});

test('HAREL_ERR_CLOSED for publishWith and publishManyWith, even with bad arguments', async () => {
  const t = await Transport.open(box.db());
  await t.close();
  for (const call of [() => t.publishWith('g', {}), () => t.publishManyWith([]), () => t.publishWith('g', {}, { key: '' })]) {
    const e = await rejectsWith(assert, call(), 'HAREL_ERR_CLOSED', /the transport is closed/);
    assert.equal(e.status, undefined);
  }
});

test('a JS clock is read once per publishWith and publishManyWith, which wait their turn', async () => {
  const clock = manualClock(5000);
  let reads = 0;
  const t = await Transport.open(box.db(), {
    clock: () => {
      reads += 1;
      return clock.now;
    },
  });
  const atOpen = reads;
  await t.publishWith('g', {}, { delay: 1 });
  await t.publishManyWith([{ groupId: 'h', event: {}, delay: 2 }, { groupId: 'i', event: {} }]);
  assert.equal(reads, atOpen + 2);
  // in flight together, each reads the time just before its own call
  const calls = [];
  for (let i = 0; i < 5; i++) {
    clock.now = 6000 + i;
    calls.push(t.publishWith(`j${i}`, {}, { delay: 10 }));
  }
  await Promise.all(calls);
  const dues = (await t.groups({ state: 'delayed' })).groups.filter((g) => g.groupId.startsWith('j')).map((g) => g.lockExpiry);
  assert.deepEqual(dues, [6014, 6014, 6014, 6014, 6014], 'each read the clock when its turn came');
  await t.close();
});
