'use strict';
// Unique keys (issue 38): the `unique` delivery option of publishWith, publishManyWith and a
// transaction's publishWith ({ key, mode?, delay?, maxDelay? }, through
// harel_transport_publish_delivery, _publish_many_delivery and harel_tx_publish_delivery),
// and the outcome's `replaced` beside `duplicate`. Each call's mapping onto the C ABI: every
// outcome (stored, duplicate, replaced), each mode, debounce by the transport's clock, off
// the event loop; bad input, the binding's and the library's, leaving the queue as it was.
// The queue's rules themselves are the Rust contract's (tests/common/contract_rules.rs).

const assert = require('node:assert/strict');
const { test } = require('node:test');
const { Transport } = require('..');
const { scratch, manualClock, rejectsWith, holdWriteLock } = require('./helpers');

const box = scratch();

const STORED = Object.freeze({ duplicate: false, replaced: false });
const DUPLICATE = Object.freeze({ duplicate: true, replaced: false });
const REPLACED = Object.freeze({ duplicate: true, replaced: true });

/** The events of a group's messages, oldest first. */
async function eventsOf(t, groupId) {
  return (await t.peek(groupId)).messages.map((m) => m.event);
}

test('keep (the default): a pending key stores nothing and resolves the pending message\'s seq; ack frees it', async () => {
  const t = await Transport.open(box.db());
  const first = await t.publishWith('invoices', { n: 1 }, { unique: { key: 'invoice-42' } });
  assert.deepEqual(first, { seq: 1, ...STORED });
  assert.ok(Object.isFrozen(first));
  const again = await t.publishWith('invoices', { n: 2 }, { unique: { key: 'invoice-42', mode: 'keep' } });
  assert.deepEqual(again, { seq: first.seq, ...DUPLICATE });
  const elsewhere = await t.publishWith('other', { n: 3 }, { unique: { key: 'invoice-42' }, delay: 60 });
  assert.deepEqual(elsewhere, { seq: first.seq, ...DUPLICATE }, 'the key is the queue\'s, whatever the group and options');
  assert.deepEqual(await eventsOf(t, 'invoices'), [{ n: 1 }], 'kept: the first event');
  assert.deepEqual((await t.groups()).groups.map((g) => g.groupId), ['invoices'], 'no group made by a duplicate');
  assert.equal(t.metrics().published, 1, 'a duplicate is not a published message');
  const other = await t.publishWith('invoices', { n: 4 }, { unique: { key: 'invoice-43' }, headers: [['x', '1']] });
  assert.deepEqual(other, { seq: first.seq + 1, ...STORED }, 'another key stores');

  // leased is pending too; the ack frees the key
  const lease = await t.claim('w');
  assert.equal(lease.seq, first.seq);
  assert.deepEqual(await t.publishWith('invoices', {}, { unique: { key: 'invoice-42' } }), { seq: first.seq, ...DUPLICATE });
  await t.ack(lease);
  const afterAck = await t.publishWith('invoices', { n: 5 }, { unique: { key: 'invoice-42' } });
  assert.deepEqual(afterAck, { seq: other.seq + 1, ...STORED }, 'freed at the ack');

  // a dead letter and a purge free it too
  const dead = await t.claim('w');
  assert.equal(dead.seq, other.seq);
  await t.deadLetter(dead, 'poison');
  assert.equal((await t.publishWith('invoices', {}, { unique: { key: 'invoice-43' } })).duplicate, false, 'freed by the dead letter');
  await t.purgeGroup('invoices');
  assert.equal((await t.publishWith('invoices', {}, { unique: { key: 'invoice-42' } })).duplicate, false, 'freed by the purge');
  assert.equal((await t.publishWith('plain', {}, { unique: null })).duplicate, false, 'null: no unique key');
  await t.close();
});

test('replace: the pending message takes the new event and headers in its place; never one a worker holds', async () => {
  const t = await Transport.open(box.db());
  const first = await t.publishWith('profile-7', { v: 1 }, { unique: { key: 'sync-7', mode: 'replace' }, headers: [['v', '1']] });
  assert.deepEqual(first, { seq: 1, ...STORED }, 'nothing pending: stored, whatever the mode');
  await t.publish('profile-7', { v: 'after' });
  const replaced = await t.publishWith('elsewhere', { v: 2 }, { unique: { key: 'sync-7', mode: 'replace' }, headers: [['v', '2']] });
  assert.deepEqual(replaced, { seq: first.seq, ...REPLACED });
  assert.ok(Object.isFrozen(replaced));
  assert.deepEqual(await eventsOf(t, 'profile-7'), [{ v: 2 }, { v: 'after' }], 'in its place, in its group');
  assert.deepEqual((await t.groups()).groups.map((g) => g.groupId), ['profile-7']);
  assert.deepEqual(await t.publishWith('profile-7', { v: 3 }, { unique: { key: 'sync-7' } }), { seq: first.seq, ...DUPLICATE },
    'keep, on a message that was replaced');

  const lease = await t.claim('w');
  assert.deepEqual([lease.seq, lease.event, lease.headers], [first.seq, { v: 2 }, [['v', '2']]]);
  const held = await t.publishWith('profile-7', { v: 4 }, { unique: { key: 'sync-7', mode: 'replace' } });
  assert.deepEqual(held, { seq: first.seq, ...DUPLICATE }, 'a worker holds it: kept, a duplicate');
  assert.deepEqual(await eventsOf(t, 'profile-7'), [{ v: 2 }, { v: 'after' }]);
  await t.ack(lease);
  assert.deepEqual(await t.publishWith('profile-7', { v: 5 }, { unique: { key: 'sync-7', mode: 'replace' } }),
    { seq: first.seq + 2, ...STORED });
  await t.close();
});

test('debounce: the due time moves to now + delay, capped at the first publish + maxDelay (stats().delayed, the clock)', async () => {
  const clock = manualClock(1000);
  const t = await Transport.open(box.db(), { clock: clock.fn });
  const debounce = (maxDelay) => ({ unique: { key: 'reindex', mode: 'debounce', delay: 10, maxDelay } });
  const first = await t.publishWith('search', { v: 1 }, debounce(25));
  assert.deepEqual(first, { seq: 1, ...STORED });
  const due = async () => {
    const s = await t.stats();
    return [s.delayed, s.nextDueAt];
  };
  assert.deepEqual(await due(), [1, 1010], 'a new message is due now + delay');
  clock.now = 1005;
  assert.deepEqual(await t.publishWith('search', { v: 2 }, debounce(25)), { seq: first.seq, ...REPLACED });
  assert.deepEqual(await due(), [1, 1015], 'moved to now + delay');
  clock.now = 1014;
  assert.deepEqual(await t.publishWith('search', { v: 3 }, debounce(25)), { seq: first.seq, ...REPLACED });
  assert.deepEqual(await due(), [1, 1024]);
  clock.now = 1023;
  assert.deepEqual(await t.publishWith('search', { v: 4 }, debounce(25)), { seq: first.seq, ...REPLACED });
  assert.deepEqual(await due(), [1, 1025], 'never past the first publish + maxDelay');
  assert.deepEqual((await t.peek('search')).messages.map((m) => [m.seq, m.lockExpiry]), [[first.seq, 1025]]);
  clock.now = 1024.9;
  assert.equal(await t.claim('w'), null, 'not due yet');
  clock.now = 1025.1;
  const lease = await t.claim('w');
  assert.deepEqual([lease.seq, lease.event], [first.seq, { v: 4 }], 'the last event, once due');
  assert.deepEqual(await due(), [0, null]);
  assert.deepEqual(await t.publishWith('search', { v: 5 }, debounce(25)), { seq: first.seq, ...DUPLICATE }, 'leased: kept');
  await t.ack(lease);

  // no maxDelay: no cap but the library's ten years
  clock.now = 2000;
  const second = await t.publishWith('search', { v: 6 }, { unique: { key: 'reindex', mode: 'debounce', delay: 10 } });
  assert.deepEqual(second, { seq: first.seq + 1, ...STORED }, 'freed at the ack');
  for (const at of [2008, 2016, 2024, 2032]) {
    clock.now = at;
    assert.deepEqual(await t.publishWith('search', {}, { unique: { key: 'reindex', mode: 'debounce', delay: 10 } }),
      { seq: second.seq, ...REPLACED });
  }
  assert.deepEqual(await due(), [1, 2042], 'moved past any cap the binding could have chosen');
  // delay 0 (the default): due at once
  const now = await t.publishWith('other', {}, { unique: { key: 'at-once', mode: 'debounce' } });
  assert.deepEqual(now, { seq: second.seq + 1, ...STORED });
  assert.equal((await t.claim('w')).seq, now.seq);
  await t.close();
});

test('publishManyWith: unique keys per message, met before and earlier in the batch; an outcome each', async () => {
  const t = await Transport.open(box.db());
  const pending = await t.publishWith('a', { v: 'pending' }, { unique: { key: 'u-pending' } });
  const outcomes = await t.publishManyWith([
    { groupId: 'a', event: { v: 0 }, unique: { key: 'u0' } },
    { groupId: 'b', event: { v: 1 }, unique: { key: 'u-pending', mode: 'replace' }, headers: [['h', '1']] },
    { groupId: 'b', event: { v: 2 }, unique: { key: 'u0' } },
    { groupId: 'a', event: { v: 3 }, unique: { key: 'u0', mode: 'replace' } },
    { groupId: 'c', event: { v: 4 }, key: 'idem' },
    { groupId: 'c', event: { v: 5 } },
    { groupId: 'd', event: { v: 6 }, unique: { key: 'u6', mode: 'debounce', delay: 30, maxDelay: 60 } },
  ]);
  assert.ok(outcomes.every((o) => Object.isFrozen(o)));
  const s = pending.seq;
  assert.deepEqual(outcomes, [
    { seq: s + 1, ...STORED },
    { seq: s, ...REPLACED }, // pending before the batch
    { seq: s + 1, ...DUPLICATE }, // u0 earlier in the batch
    { seq: s + 1, ...REPLACED },
    { seq: s + 2, ...STORED },
    { seq: s + 3, ...STORED },
    { seq: s + 4, ...STORED },
  ]);
  assert.deepEqual(await eventsOf(t, 'a'), [{ v: 1 }, { v: 3 }]);
  assert.deepEqual((await t.peek('a')).messages[0].headers, [['h', '1']]);
  assert.deepEqual(await eventsOf(t, 'b'), [], 'b\'s were duplicates: no message, no group');
  assert.deepEqual((await t.groups({ state: 'delayed' })).groups.map((g) => g.groupId), ['d'], 'the debounced message is delayed');
  assert.equal((await t.stats()).delayed, 1);
  await t.close();
});

test('a transaction: unique keys are outcomes of the commit, never errors; a rollback holds no key', async () => {
  const db = box.db();
  const t = await Transport.open(db);
  await t.transaction((tx) => tx.execute('CREATE TABLE orders (name TEXT)'));
  const pending = await t.publishWith('order-17', { v: 1 }, { unique: { key: 'o-17/summary' } });
  const { value, published } = await t.transaction(async (tx) => {
    await tx.execute('INSERT INTO orders (name) VALUES (?1)', ['o-17']);
    await tx.publishWith('order-17', { v: 2 }, { unique: { key: 'o-17/summary', mode: 'replace' } });
    await tx.publishWith('order-18', { v: 3 }, { unique: { key: 'o-18/summary' } });
    await tx.publishWith('order-18', { v: 4 }, { unique: { key: 'o-18/summary' } });
    await tx.publishWith('order-17', { v: 5 }, { unique: { key: 'o-17/summary', mode: 'keep' } });
    await tx.publish('order-18', { v: 6 });
    return 'committed';
  });
  assert.equal(value, 'committed');
  assert.ok(published.every((o) => Object.isFrozen(o)));
  assert.deepEqual(published, [
    { seq: pending.seq, ...REPLACED },
    { seq: pending.seq + 1, ...STORED },
    { seq: pending.seq + 1, ...DUPLICATE }, // earlier in the transaction
    { seq: pending.seq, ...DUPLICATE },
    { seq: pending.seq + 2, ...STORED },
  ]);
  assert.deepEqual(await eventsOf(t, 'order-17'), [{ v: 2 }]);
  assert.deepEqual(await eventsOf(t, 'order-18'), [{ v: 3 }, { v: 6 }]);
  assert.deepEqual((await t.transaction((tx) => tx.query('SELECT name FROM orders'))).value, [['o-17']]);

  // debounce through begin(); a bad unique key is refused at once and the transaction goes on
  const tx = t.begin();
  await rejectsWith(assert, tx.publishWith('g', {}, { unique: { key: '' } }), 'HAREL_ERR_ARGUMENT', /unique_key is empty/);
  await rejectsWith(assert, tx.publishWith('g', {}, { unique: { key: 'k', mode: 'later' } }), 'HAREL_ERR_ARGUMENT', /unique\.mode must be/);
  await tx.publishWith('g', { v: 7 }, { unique: { key: 'g/debounced', mode: 'debounce', delay: 60 } });
  assert.deepEqual(await tx.commit(), [{ seq: pending.seq + 3, ...STORED }], 'only the good publish was queued');
  assert.equal((await t.stats()).delayed, 1, 'g, debounced by the transaction');

  // a rollback keeps nothing, the key neither
  const rolledBack = t.begin();
  await rolledBack.publishWith('h', {}, { unique: { key: 'h/once' } });
  await rolledBack.rollback();
  assert.deepEqual(await t.publishWith('h', {}, { unique: { key: 'h/once' } }), { seq: pending.seq + 4, ...STORED });
  await t.close();
});

test('bad input is HAREL_ERR_ARGUMENT and leaves the queue as it was', async () => {
  const clock = manualClock(1000);
  const t = await Transport.open(box.db(), { clock: clock.fn });
  const kept = await t.publishWith('g', { n: 'kept' }, { unique: { key: 'kept', mode: 'replace' } });
  const before = await t.stats();
  const peekBefore = await t.peek('g');
  const ok = { groupId: 'g', event: { n: 'new' }, unique: { key: 'fresh' } }; // stored by none of the batches below

  // the library's checks: its messages, naming the C field (and the element in a batch)
  const tenYears = 315360000;
  const debounce = (delay, maxDelay) => ({ unique: { key: 'kept', mode: 'debounce', delay, maxDelay } });
  const library = [
    [{ unique: { key: '' } }, /unique_key is empty/],
    [{ unique: { key: 'k'.repeat(257), mode: 'replace' } }, /unique_key is 257 bytes; at most 256/],
    [{ unique: { key: 'é'.repeat(129) } }, /unique_key is 258 bytes/], // bytes, not characters
    [{ key: 'idem', unique: { key: 'kept' } }, /key and (messages\[1\]\.)?unique_key are both given/],
    [debounce(NaN, 10), /debounce delay is NaN/],
    [debounce(-1, 10), /debounce delay is -1/],
    [debounce(tenYears + 1, tenYears + 1), /debounce delay is 315360001/],
    [debounce(1, Infinity), /debounce max_delay is inf/],
    [debounce(10, 5), /debounce max_delay is 5; it must be >= its delay \(10\)/],
    [{ unique: { key: 'kept', mode: 'replace' }, delay: -1 }, /delay is -1/],
  ];
  for (const [options, pattern] of library) {
    const e = await rejectsWith(assert, t.publishWith('g', { n: 'bad' }, options), 'HAREL_ERR_ARGUMENT', pattern);
    assert.equal(e.status, -1);
    const batch = await rejectsWith(assert, t.publishManyWith([ok, { groupId: 'g', event: {}, ...options }]), 'HAREL_ERR_ARGUMENT', pattern);
    assert.match(batch.message, /messages\[1\]\./, 'the batch\'s error names the element');
  }

  // the binding's: what the C struct would take otherwise (an unknown mode as keep, a missing
  // key as none, a debounce delay with another mode passed over, a cut string)
  const binding = [
    [{ unique: { key: 'kept', mode: 'dedupe' } }, /unique\.mode must be 'keep', 'replace' or 'debounce', got the string "dedupe"/],
    [{ unique: { key: 'kept', mode: 'Replace' } }, /unique\.mode must be .*got the string "Replace"/],
    [{ unique: { key: 'kept', mode: 1 } }, /unique\.mode must be .*got number 1/],
    [{ unique: { key: 'kept', mode: null } }, /unique\.mode must be .*got null/],
    [{ unique: { mode: 'replace' } }, /unique\.key must be a string, got undefined/],
    [{ unique: { key: null } }, /unique\.key must be a string, got null/],
    [{ unique: { key: 42 } }, /unique\.key must be a string, got number 42/],
    [{ unique: { key: 'k\0' } }, /unique\.key must not contain a NUL/],
    [{ unique: { key: 'k\uD800' } }, /unique\.key is not valid Unicode/],
    [{ unique: 'kept' }, /unique must be an object, got the string "kept"/],
    [{ unique: ['kept'] }, /unique must be an object, got an array/],
    [{ unique: { key: 'kept', ttl: 5 } }, /unique: unknown option "ttl" \(known: key, mode, delay, maxDelay\)/],
    [{ unique: { key: 'kept', delay: 5 } }, /unique\.delay is for mode 'debounce' only; this unique key's mode is 'keep'/],
    [{ unique: { key: 'kept', mode: 'replace', maxDelay: 5 } }, /unique\.maxDelay is for mode 'debounce' only/],
    [{ unique: { key: 'kept', mode: 'debounce', delay: '5s' } }, /unique\.delay must be a number/],
    [{ unique: { key: 'kept', mode: 'debounce', maxDelay: 60n } }, /unique\.maxDelay must be a number/],
  ];
  for (const [options, pattern] of binding) {
    await rejectsWith(assert, t.publishWith('g', { n: 'bad' }, options), 'HAREL_ERR_ARGUMENT', pattern);
    const batch = await rejectsWith(assert, t.publishManyWith([ok, { groupId: 'g', event: {}, ...options }]), 'HAREL_ERR_ARGUMENT', pattern);
    assert.match(batch.message, /^messages\[1\]\.unique/, 'the batch\'s error names the element');
  }
  await rejectsWith(assert, t.publish('g', {}, { unique: { key: 'kept' } }), 'HAREL_ERR_ARGUMENT', /unknown option "unique"/);
  await rejectsWith(assert, t.publishMany([{ groupId: 'g', event: {}, unique: { key: 'kept' } }]), 'HAREL_ERR_ARGUMENT',
    /messages\[0\]: unknown option "unique"/);
  const tx = t.begin();
  await rejectsWith(assert, tx.publish('g', {}, { unique: { key: 'kept' } }), 'HAREL_ERR_ARGUMENT', /unknown option "unique"/);
  await tx.rollback();

  // nothing changed: the same message, its event kept; 'fresh' was never taken
  const after = await t.stats();
  assert.deepEqual({ ...after, byPriority: undefined }, { ...before, byPriority: undefined });
  assert.deepEqual(await t.peek('g'), peekBefore);
  assert.deepEqual(await t.publishWith('g', {}, { unique: { key: 'kept' } }), { seq: kept.seq, ...DUPLICATE });
  assert.deepEqual(await t.publishWith('g', {}, { unique: { key: 'fresh' } }), { seq: kept.seq + 1, ...STORED },
    'no rejected call stored its key');
  await t.close();
});

test('HAREL_ERR_CLOSED for a unique publish, even with bad arguments', async () => {
  const t = await Transport.open(box.db());
  await t.close();
  for (const call of [
    () => t.publishWith('g', {}, { unique: { key: 'u' } }),
    () => t.publishWith('g', {}, { unique: { key: 'u', mode: 'nope' } }),
    () => t.publishManyWith([{ groupId: 'g', event: {}, unique: { key: '' } }]),
  ]) {
    await rejectsWith(assert, call(), 'HAREL_ERR_CLOSED', /the transport is closed/);
  }
});

test('a unique publish that waits for the write lock leaves the event loop running', async () => {
  const db = box.db();
  const t = await Transport.open(db, { busyTimeout: 30 });
  await t.publishWith('g', { v: 1 }, { unique: { key: 'u', mode: 'replace' } });
  const holder = await holdWriteLock(db, 1.5);
  let ticks = 0;
  const timer = setInterval(() => {
    ticks += 1;
  }, 10);
  const started = performance.now();
  try {
    const [one, many] = await Promise.all([
      t.publishWith('g', { v: 2 }, { unique: { key: 'u', mode: 'replace' } }),
      t.publishManyWith([{ groupId: 'h', event: {}, unique: { key: 'v', mode: 'debounce', delay: 1 } }]),
    ]);
    assert.deepEqual(one, { seq: 1, ...REPLACED });
    assert.deepEqual(many, [{ seq: 2, ...STORED }]);
  } finally {
    clearInterval(timer);
  }
  const elapsed = performance.now() - started;
  await holder.released();
  assert.ok(elapsed >= 1000, `the publishes waited for the lock (${elapsed.toFixed(0)} ms)`);
  assert.ok(ticks >= 20, `the timer kept firing while they waited: ${ticks} ticks in ${elapsed.toFixed(0)} ms`);
  await t.close();
});
