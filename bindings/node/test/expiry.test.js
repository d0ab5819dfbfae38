'use strict';
// Expiry (issue 38): the `ttl` and `expiresAt` delivery options of publishWith,
// publishManyWith and a transaction's publishWith (harel_delivery's ttl and expires_at,
// at its end), and stats().expired (harel_stats.expired, at its end). Each call's mapping
// onto the C ABI: by the transport's JS clock, the message expires at the instant they
// give (the earlier of both), becomes a dead letter with the reason 'expired' and counts
// in stats().expired; bad input, the binding's and the library's, is HAREL_ERR_ARGUMENT
// naming it (and the element, in a batch) with the queue as it was. The queue's rules
// themselves are the Rust contract's (tests/common/contract_expiry.rs).

const assert = require('node:assert/strict');
const { test } = require('node:test');
const { setTimeout: sleep } = require('node:timers/promises');
const { Transport } = require('..');
const { scratch, manualClock, rejectsWith } = require('./helpers');

const box = scratch();

/** Every dead letter's [seq, groupId, event, reason]. */
async function deadOf(t) {
  return (await t.deadLetters()).letters.map((d) => [d.seq, d.groupId, d.event, d.reason]);
}

// Each publishes { n: 1 } into group 'g', expiring 10 s after the publish (at 1010).
const FORMS = [
  ['publishWith ttl', (t) => t.publishWith('g', { n: 1 }, { ttl: 10 })],
  ['publishWith expiresAt', (t) => t.publishWith('g', { n: 1 }, { expiresAt: 1010 })],
  ['publishWith both, expiresAt earlier', (t) => t.publishWith('g', { n: 1 }, { ttl: 3600, expiresAt: 1010 })],
  ['publishWith both, ttl earlier', (t) => t.publishWith('g', { n: 1 }, { ttl: 10, expiresAt: 5000 })],
  ['publishWith ttl, delayed', (t) => t.publishWith('g', { n: 1 }, { ttl: 10, delay: 5 })],
  ['publishWith ttl and a unique key', (t) => t.publishWith('g', { n: 1 }, { ttl: 10, unique: { key: 'u' } })],
  ['publishWith ttl and a key, null expiresAt',
    (t) => t.publishWith('g', { n: 1 }, { ttl: 10, key: 'k', expiresAt: null })],
  ['publishManyWith ttl', (t) => t.publishManyWith([{ groupId: 'g', event: { n: 1 }, ttl: 10 }])],
  ['publishManyWith expiresAt', (t) => t.publishManyWith([{ groupId: 'g', event: { n: 1 }, expiresAt: 1010 }])],
  ['publishManyWith both', (t) => t.publishManyWith([{ groupId: 'g', event: { n: 1 }, ttl: 10, expiresAt: 2000 }])],
  ['transaction publishWith', (t) => t.transaction((tx) => tx.publishWith('g', { n: 1 }, { ttl: 10 }))],
  ['begin publishWith', async (t) => {
    const tx = t.begin();
    await tx.publishWith('g', { n: 1 }, { expiresAt: 1010 });
    await tx.commit();
  }],
];

for (const [name, publish] of FORMS) {
  test(`${name}: expires 10 s after the publish, dead with the reason 'expired'; its group goes on`, async () => {
    const clock = manualClock(1000);
    const t = await Transport.open(box.db(), { clock: clock.fn });
    await publish(t);
    // behind it, messages with no expiry (absent, null)
    await t.publish('g', { n: 2 });
    await t.publishWith('g', { n: 3 }, { ttl: null, expiresAt: null });
    assert.equal((await t.stats()).expired, 0);
    clock.now = 1009.5;
    const first = await t.claim('w');
    assert.deepEqual([first.seq, first.event], [1, { n: 1 }], 'not expired before its time');
    await t.nack(first);
    clock.now = 1010;
    const second = await t.claim('w');
    assert.deepEqual([second.seq, second.event], [2, { n: 2 }], 'expired: its group goes on behind it');
    await t.ack(second);
    clock.now = 1_000_000;
    const third = await t.claim('w');
    assert.deepEqual(third.event, { n: 3 }, 'no expiry: never expires');
    await t.ack(third);
    assert.equal(await t.claim('w'), null);
    assert.deepEqual(await deadOf(t), [[1, 'g', { n: 1 }, 'expired']]);
    const s = await t.stats();
    assert.deepEqual([s.messages, s.dead, s.expired], [0, 1, 1]);
    await t.close();
  });
}

test('stats().expired counts the expired dead letters only, not a worker\'s; redriven, none is left', async () => {
  const clock = manualClock(1000);
  const t = await Transport.open(box.db(), { clock: clock.fn });
  await t.publish('x', { n: 0 });
  await t.publishManyWith([
    { groupId: 'a', event: { n: 1 }, ttl: 60 },
    { groupId: 'b', event: { n: 2 }, expiresAt: 1060 },
    { groupId: 'c', event: { n: 3 } },
    { groupId: 'd', event: { n: 4 }, ttl: 60, headers: [['h', '1']] },
  ]);
  const before = await t.stats();
  assert.deepEqual([before.messages, before.dead, before.expired], [5, 0, 0]);
  const lease = await t.claim('w');
  assert.deepEqual(lease.event, { n: 0 });
  await t.deadLetter(lease, 'bad');
  clock.now = 1060;
  const kept = await t.claim('w'); // the claim swept the expired ones first
  assert.deepEqual(kept.event, { n: 3 });
  await t.ack(kept);
  assert.equal(await t.claim('w'), null);
  const s = await t.stats();
  assert.deepEqual([s.messages, s.dead, s.expired], [0, 4, 3]);
  assert.deepEqual((await deadOf(t)).map(([, group, , reason]) => [group, reason]).sort(),
    [['a', 'expired'], ['b', 'expired'], ['d', 'expired'], ['x', 'bad']]);
  assert.equal(await t.redrive({ all: true }), 4);
  const redriven = await t.stats();
  assert.deepEqual([redriven.messages, redriven.dead, redriven.expired], [4, 0, 0]);
  await t.close();
});

test('bad input is HAREL_ERR_ARGUMENT, names it (and a batch\'s element), and leaves the queue as it was', async () => {
  const clock = manualClock(1000);
  const t = await Transport.open(box.db(), { clock: clock.fn });
  const kept = await t.publishWith('g', { n: 'kept' }, { ttl: 3600 });
  const before = await t.stats();
  const peekBefore = await t.peek('g');
  const ok = { groupId: 'g', event: { n: 'new' }, ttl: 60, unique: { key: 'fresh' } }; // stored by no batch below
  const mustBe = /; it must be a finite number of seconds > 0, at most 315360000 \(ten years\)/;
  const debounce = { unique: { key: 'd', mode: 'debounce', delay: 60 } };

  // the library's, without a clock: its messages, naming the C field
  const library = [
    [{ ttl: -1 }, /ttl is -1/],
    [{ ttl: NaN }, /ttl is NaN/],
    [{ ttl: Infinity }, /ttl is inf/],
    [{ ttl: 315360001 }, /ttl is 315360001/],
    [{ ttl: -1, expiresAt: 2000 }, /ttl is -1/],
    [{ expiresAt: -5 }, /expires_at is -5; it must be finite epoch seconds >= 0/],
    [{ expiresAt: NaN }, /expires_at is NaN; it must be finite epoch seconds >= 0/],
    [{ expiresAt: -Infinity }, /expires_at is -inf/],
  ];
  // the library's, against now (1000)
  const byNow = [
    [{ expiresAt: 1000 }, /expires_at is 1000: not after now \(1000\)/],
    [{ expiresAt: 999.5 }, /expires_at is 999\.5: not after now \(1000\)/],
    [{ ttl: 3600, expiresAt: 999 }, /expires_at is 999: not after now/],
    [{ ttl: 1e-14 }, /expires_at is 1000: not after now/], // 1000 + 1e-14 is 1000
    [{ delay: 60, expiresAt: 1030 },
      /expires_at is 1030: not after the message is due \(1060\), so it could never be delivered/],
    [{ notBefore: 1060, ttl: 60 }, /expires_at is 1060: not after the message is due \(1060\)/],
    [{ ...debounce, ttl: 1 }, /expires_at is 1001: not after the message is due \(1060\)/],
  ];
  // the binding's: what the C struct would read as never (0), or could not take
  const binding = [
    [{ ttl: 0 }, /ttl must be a number of seconds > 0, or null for none, got number 0/],
    [{ ttl: -0 }, /ttl must be a number of seconds > 0, or null for none, got number 0/],
    [{ expiresAt: 0 }, /expiresAt must be epoch seconds > 0, or null for none, got number 0/],
    [{ ttl: '60' }, /ttl must be a number of seconds > 0 as a number, or null for none, got the string "60"/],
    [{ ttl: 60n }, /ttl must be .* got bigint 60/],
    [{ ttl: true }, /ttl must be .* got boolean true/],
    [{ expiresAt: new Date(2_000_000) },
      /expiresAt must be epoch seconds > 0 as a number, or null for none, got object \(for a Date, pass date\.getTime/],
    [{ expiresAt: '2030-01-01' }, /expiresAt must be .* got the string "2030-01-01"/],
    [{ expiresAt: {} }, /expiresAt must be .* got object/],
  ];
  const tx = t.begin(); // goes on past every refusal at its publishWith
  for (const [options, pattern] of [...library, ...byNow, ...binding]) {
    const e = await rejectsWith(assert, t.publishWith('g', { n: 'bad' }, options), 'HAREL_ERR_ARGUMENT', pattern);
    assert.equal(e.status, -1);
    const element = { groupId: 'g', event: {}, ...options };
    const batch = await rejectsWith(assert, t.publishManyWith([ok, element]), 'HAREL_ERR_ARGUMENT', pattern);
    assert.match(batch.message, /messages\[1\]\./, 'the batch\'s error names the element');
    if (!byNow.some(([o]) => o === options)) {
      await rejectsWith(assert, tx.publishWith('g', {}, options), 'HAREL_ERR_ARGUMENT', pattern);
    }
  }
  // against now in a transaction: refused by its publishWith, or at the latest by its
  // commit (the library checks there with the commit's own now), which rolls it back
  for (const [options, pattern] of byNow) {
    const other = t.begin();
    let error;
    try {
      await other.publishWith('g', {}, options);
      await other.commit();
    } catch (e) {
      error = e;
    }
    await rejectsWith(assert, Promise.reject(error), 'HAREL_ERR_ARGUMENT', pattern);
    await other.rollback(); // resolves on one that has ended
  }
  await rejectsWith(assert, t.publish('g', {}, { ttl: 60 }), 'HAREL_ERR_ARGUMENT', /unknown option "ttl"/);
  await rejectsWith(assert, t.publishMany([{ groupId: 'g', event: {}, expiresAt: 2000 }]), 'HAREL_ERR_ARGUMENT',
    /messages\[0\]: unknown option "expiresAt"/);
  await rejectsWith(assert, t.publishManyWith([ok, { groupId: 'g', event: {}, expires_at: 2000 }]),
    'HAREL_ERR_ARGUMENT', /messages\[1\]: unknown option "expires_at" \(known: .*ttl, expiresAt, retry\)/);
  await tx.publishWith('h', { n: 'tx' }, { ttl: 60 });
  assert.deepEqual(await tx.commit(), [{ seq: kept.seq + 1, duplicate: false, replaced: false }],
    'the transaction went on: only its good publish');

  // nothing else changed: the same message; 'fresh' and 'd' were never taken
  const after = await t.stats();
  const grown = { messages: before.messages + 1, groups: before.groups + 1, ready: before.ready + 1 };
  assert.deepEqual({ ...after, byPriority: undefined }, { ...before, ...grown, byPriority: undefined });
  assert.deepEqual(await t.peek('g'), peekBefore);
  assert.equal((await t.publishWith('g', {}, { unique: { key: 'fresh' } })).duplicate, false);
  assert.equal((await t.publishWith('g', {}, debounce)).duplicate, false);
  await t.close();
});

test('the system clock: a ttl of 0.2 s, looked at after a second, expired at a claim', async () => {
  const t = await Transport.open(box.db());
  await t.publishWith('g', { n: 1 }, { ttl: 0.2 });
  await sleep(1000);
  assert.equal(await t.claim('w'), null, 'expired: nothing to claim');
  const s = await t.stats();
  assert.deepEqual([s.messages, s.dead, s.expired], [0, 1, 1]);
  assert.deepEqual((await deadOf(t)).map(([, , , reason]) => reason), ['expired']);
  await t.close();
});

test('HAREL_ERR_CLOSED for an expiring publish, even with bad arguments', async () => {
  const t = await Transport.open(box.db());
  await t.close();
  for (const call of [
    () => t.publishWith('g', {}, { ttl: 10 }),
    () => t.publishWith('g', {}, { ttl: 0 }),
    () => t.publishManyWith([{ groupId: 'g', event: {}, expiresAt: 'soon' }]),
  ]) {
    await rejectsWith(assert, call(), 'HAREL_ERR_CLOSED', /the transport is closed/);
  }
});
