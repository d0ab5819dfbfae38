'use strict';
// Retries (issue 39): the `retry` open option (harel_options_set_retry), the `retry`
// delivery option of publishWith, publishManyWith and a transaction's publishWith
// (harel_delivery's retry_base, retry_factor, retry_cap and retry_jitter, at its end), and
// peek's retryDelay (harel_message_page's retry_delays, at its end). Each call's mapping
// onto the C ABI: by the transport's JS clock, a nack without a delay parks the message for
// the backoff its claim drew (min(cap, base * factor^(n-1)), spread by the jitter), which
// peek shows, and a lapsed lease's group is stats().retrying until its backoff ends; bad
// input, the binding's and the library's, is HAREL_ERR_ARGUMENT naming it (and the element,
// in a batch) with the queue as it was. The queue's rules themselves are the Rust
// contract's (tests/common/contract_retry.rs).

const assert = require('node:assert/strict');
const { test } = require('node:test');
const { setTimeout: sleep } = require('node:timers/promises');
const { Transport, shardOf } = require('..');
const { scratch, manualClock, rejectsWith } = require('./helpers');

const box = scratch();

/** The retryDelay peek shows for the head of `group`. */
async function shown(t, group) {
  return (await t.peek(group, { limit: 1 })).messages[0].retryDelay;
}

/** Nothing is claimable just before `at` seconds from now; the message is, just after. */
async function waits(t, clock, at) {
  clock.advance(at - 0.01);
  assert.equal(await t.claim('w'), null, `still waiting its backoff of ${at} s`);
  clock.advance(0.02);
  const lease = await t.claim('w');
  assert.ok(lease, `claimable once its backoff of ${at} s passed`);
  return lease;
}

test('the open option: a nack without a delay parks for the backoff, growing to its cap; peek shows it', async () => {
  const clock = manualClock(1000);
  const t = await Transport.open(box.db(), { clock: clock.fn, retry: { base: 2, factor: 3, cap: 20, jitter: 'none' } });
  await t.publish('g', { n: 0 });
  assert.equal(await shown(t, 'g'), null, 'never claimed: no backoff');
  let lease = await t.claim('w');
  for (const [attempt, backoff] of [[1, 2], [2, 6], [3, 18], [4, 20], [5, 20]]) {
    assert.equal(lease.attempts, attempt);
    assert.equal(await shown(t, 'g'), backoff, `claim ${attempt} drew min(cap, base * factor^${attempt - 1})`);
    await t.nack(lease);
    const s = await t.stats();
    assert.deepEqual([s.ready, s.parked], [0, 1], 'parked for its backoff');
    const [head] = (await t.peek('g')).messages;
    assert.deepEqual([head.lockedBy, head.lockExpiry, head.retryDelay], ['__parked__', clock.now + backoff, backoff]);
    lease = await waits(t, clock, backoff);
  }
  await t.nack(lease, { delay: 1 });
  lease = await waits(t, clock, 1);
  assert.equal(lease.attempts, 7, 'a worker\'s own delay wins over the backoff');
  await t.ack(lease);
  assert.equal(await t.claim('w'), null);
  await t.close();
});

test('the open option\'s defaults: factor 2, cap an hour (or the base if longer), jitter full', async () => {
  const clock = manualClock(1000);
  const t = await Transport.open(box.db(), { clock: clock.fn, retry: { base: 1000, jitter: 'none' } });
  await t.publish('g', {});
  let lease = await t.claim('w');
  for (const backoff of [1000, 2000, 3600, 3600]) {
    assert.equal(await shown(t, 'g'), backoff);
    await t.nack(lease);
    lease = await waits(t, clock, backoff);
  }
  await t.ack(lease);
  await t.close();

  const long = await Transport.open(box.db(), { clock: clock.fn, retry: { base: 5000, jitter: 'none' } });
  await long.publish('g', {});
  lease = await long.claim('w');
  assert.equal(await shown(long, 'g'), 5000);
  await long.nack(lease);
  lease = await waits(long, clock, 5000);
  assert.equal(await shown(long, 'g'), 5000, 'capped at the base, which is longer than an hour');
  await long.close();

  // jitter absent: full, in [0, 1000) for the first claim
  const full = await Transport.open(box.db(), { clock: clock.fn, retry: { base: 1000 } });
  for (let i = 0; i < 10; i++) await full.publish(`g${i}`, {});
  for (let i = 0; i < 10; i++) await full.claim('w');
  const drawn = [];
  for (let i = 0; i < 10; i++) drawn.push(await shown(full, `g${i}`));
  assert.ok(drawn.every((d) => d >= 0 && d < 1000), `${drawn}`);
  assert.ok(new Set(drawn).size > 1, `each claim draws anew: ${drawn}`);
  await full.close();
});

test('jitter: \'full\' draws in [0, d), \'equal\' in [d/2, d), \'none\' is d; each claim anew', async () => {
  const clock = manualClock(1000);
  for (const [jitter, low, high] of [['full', 0, 10], ['equal', 5, 10], ['none', 10, 10]]) {
    const t = await Transport.open(box.db(), { clock: clock.fn, retry: { base: 10, factor: 1, cap: 10, jitter } });
    const groups = Array.from({ length: 20 }, (_, i) => `${jitter}-${i}`);
    for (const g of groups) await t.publish(g, {});
    const leases = [];
    for (let lease; (lease = await t.claim('w')) !== null;) leases.push(lease);
    assert.equal(leases.length, groups.length);
    const drawn = [];
    for (const g of groups) drawn.push(await shown(t, g));
    if (jitter === 'none') {
      assert.ok(drawn.every((d) => d === 10), `${jitter}: ${drawn}`);
    } else {
      assert.ok(drawn.every((d) => d >= low && d < high), `${jitter}: ${drawn}`);
      assert.ok(new Set(drawn).size > 1, `${jitter} draws each claim anew: ${drawn}`);
    }
    await t.ackMany(leases);
    await t.close();
  }
});

test('a lapsed lease waits the backoff after its end (an extend moves both); each claim is an attempt', async () => {
  const clock = manualClock(1000);
  const retry = { base: 10, factor: 2, cap: 100, jitter: 'none' };
  const t = await Transport.open(box.db(), { clock: clock.fn, retry, maxAttempts: 3 });
  await t.publish('g', { n: 0 });
  const first = await t.claim('w', { visibility: 30 });
  clock.advance(20);
  assert.equal(await t.extend(first, 30), 1050);
  const second = await waits(t, clock, 30 + 10);
  assert.deepEqual([second.event, second.attempts], [{ n: 0 }, 2], 'after the extended end + 10');
  assert.equal(await shown(t, 'g'), 20);
  await waits(t, clock, 30 + 20);
  clock.advance(30 + 41);
  assert.equal(await t.claim('w'), null, 'claimed 3 times: buried, not handed out');
  const dead = (await t.deadLetters()).letters;
  assert.equal(dead.length, 1);
  assert.match(dead[0].reason, /max_attempts is 3/);
  await t.close();
});

test('stats: a lapsed lease\'s group is retrying, not ready, from the lease\'s end to its backoff\'s', async () => {
  const clock = manualClock(1000);
  const t = await Transport.open(box.db(), { clock: clock.fn, retry: { base: 10, factor: 1, jitter: 'none' } });
  const counts = async () => {
    const s = await t.stats();
    assert.equal(s.ready + s.leased + s.parked + s.delayed + s.paused + s.held + s.retrying, s.groups, 'adding up');
    return [s.ready, s.leased, s.retrying, s.held, s.oldestReadySeq];
  };
  await t.publish('g', { n: 0 });
  assert.deepEqual(await counts(), [1, 0, 0, 0, 1], 'ready');
  const lease = await t.claim('w', { visibility: 1 });
  assert.deepEqual(await counts(), [0, 1, 0, 0, null], 'leased');
  clock.advance(1.01);
  assert.deepEqual(await counts(), [0, 0, 1, 0, null], 'the lease lapsed: retrying, not ready');
  clock.advance(9.98);
  assert.deepEqual(await counts(), [0, 0, 1, 0, null], 'retrying to its backoff\'s end');
  const listed = async (state) => (await t.groups({ state })).groups.map((g) => [g.groupId, g.state]);
  assert.deepEqual([await listed('retrying'), await listed('ready')], [[['g', 'retrying']], []], 'listed as retrying');
  assert.equal(await t.claim('w'), null, 'not claimable while retrying');
  clock.advance(0.02);
  assert.deepEqual(await counts(), [1, 0, 0, 0, 1], 'its backoff passed: ready again');
  assert.deepEqual(await listed('ready'), [['g', 'ready']]);
  const again = await t.claim('w');
  assert.deepEqual([again.seq, again.attempts], [lease.seq, 2]);
  assert.deepEqual(await counts(), [0, 1, 0, 0, null], 'leased again');
  await t.ack(again);
  await t.close();
});

// Each publishes { n: 1 } into group 'g' with its own policy: 5 s, constant, no jitter.
const OWN = { base: 5, factor: 1, cap: 5, jitter: 'none' };
const FORMS = [
  ['publishWith', (t) => t.publishWith('g', { n: 1 }, { retry: OWN })],
  ['publishWith with a key and a ttl', (t) => t.publishWith('g', { n: 1 }, { retry: OWN, key: 'k', ttl: 3600 })],
  ['publishManyWith', (t) => t.publishManyWith([{ groupId: 'g', event: { n: 1 }, retry: OWN }])],
  ['publishManyWith, the second element',
    (t) => t.publishManyWith([
      { groupId: 'later', event: {}, delay: 3600 }, // not claimable during the test
      { groupId: 'g', event: { n: 1 }, retry: OWN },
    ])],
  ['transaction publishWith', (t) => t.transaction((tx) => tx.publishWith('g', { n: 1 }, { retry: OWN }))],
  ['begin publishWith', async (t) => {
    const tx = t.begin();
    await tx.publishWith('g', { n: 1 }, { retry: OWN });
    await tx.commit();
  }],
];

for (const [name, publish] of FORMS) {
  test(`${name}: the message's own policy wins over the queue's; the next message follows the queue's`, async () => {
    const clock = manualClock(1000);
    const retry = { base: 50, factor: 1, cap: 50, jitter: 'none' };
    const t = await Transport.open(box.db(), { clock: clock.fn, retry });
    await publish(t);
    // behind it, messages without one of their own (absent, null)
    await t.publish('g', { n: 2 });
    await t.publishWith('g', { n: 3 }, { retry: null });
    let lease = await t.claim('w');
    assert.deepEqual([lease.event, await shown(t, 'g')], [{ n: 1 }, 5], 'its own');
    await t.nack(lease);
    lease = await waits(t, clock, 5);
    await t.ack(lease);
    for (const n of [2, 3]) {
      lease = await t.claim('w');
      assert.deepEqual([lease.event, await shown(t, 'g')], [{ n }, 50], 'the queue\'s');
      await t.nack(lease);
      lease = await waits(t, clock, 50);
      await t.ack(lease);
    }
    await t.close();
  });
}

test('no policy anywhere: a nack of 0 frees at once, retryDelay null; a message\'s own still applies', async () => {
  const clock = manualClock(1000);
  for (const options of [{}, { retry: null }]) {
    const t = await Transport.open(box.db(), { clock: clock.fn, ...options });
    await t.publish('g', { n: 1 });
    await t.publishWith('g', { n: 2 }, { retry: { base: 7, jitter: 'none' } });
    let lease = await t.claim('w');
    assert.equal(await shown(t, 'g'), null, 'no policy: no backoff');
    await t.nack(lease);
    assert.equal((await t.stats()).parked, 0);
    lease = await t.claim('w');
    assert.deepEqual([lease.event, lease.attempts], [{ n: 1 }, 2], 'freed at once');
    await t.ack(lease);
    lease = await t.claim('w');
    assert.deepEqual([lease.event, await shown(t, 'g')], [{ n: 2 }, 7]);
    await t.nack(lease);
    assert.equal((await t.stats()).parked, 1);
    await waits(t, clock, 7);
    await t.close();
  }
});

test('the claiming transport\'s option applies: two transports on one queue, one with a policy', async () => {
  const db = box.db();
  const clock = manualClock(1000);
  const plain = await Transport.open(db, { clock: clock.fn });
  const retrying = await Transport.open(db, { clock: clock.fn, retry: { base: 30, jitter: 'none' } });
  await plain.publish('g', {});
  let lease = await plain.claim('w');
  assert.equal(await shown(retrying, 'g'), null, 'claimed by the plain one: no backoff');
  await plain.nack(lease);
  lease = await retrying.claim('w');
  assert.equal(lease.attempts, 2, 'freed at once');
  assert.equal(await shown(plain, 'g'), 60, 'claim 2 of the retrying one: 30 * 2');
  await retrying.nack(lease);
  assert.equal(await plain.claim('w'), null, 'parked, whoever claims next');
  lease = await waits(plain, clock, 60);
  await plain.ack(lease);
  await plain.close();
  await retrying.close();
});

test('peek: retryDelay per message of the page (null for those never claimed), across pages', async () => {
  const clock = manualClock(1000);
  const t = await Transport.open(box.db(), { clock: clock.fn, retry: { base: 4, jitter: 'none' } });
  for (let n = 0; n < 3; n++) await t.publish('g', { n });
  await t.publishWith('g', { n: 3 }, { retry: { base: 9, jitter: 'none' } });
  const lease = await t.claim('w');
  const page = await t.peek('g');
  assert.deepEqual(page.messages.map((m) => [m.event.n, m.retryDelay]), [[0, 4], [1, null], [2, null], [3, null]]);
  assert.ok(page.messages.every((m) => Object.isFrozen(m) && Object.hasOwn(m, 'retryDelay')));
  await t.ack(lease);
  await t.ack(await t.claim('w'));
  await t.ack(await t.claim('w'));
  await t.nack(await t.claim('w')); // its own: 9
  const first = await t.peek('g', { limit: 1 });
  assert.deepEqual(first.messages.map((m) => [m.event.n, m.retryDelay, m.lockedBy]), [[3, 9, '__parked__']]);
  assert.equal(first.next, null);
  await t.close();
});

test('a sharded queue: the option reaches every shard; peek shows each group\'s backoff', async () => {
  const databases = [0, 1].map((i) => box.db(`shard${i}`));
  const clock = manualClock(1000);
  const t = await Transport.openShards(databases, { clock: clock.fn, retry: { base: 3, factor: 1, jitter: 'none' } });
  const groups = [];
  for (let i = 0; groups.length < 2; i++) {
    if (shardOf(`g${i}`, 2) === groups.length) groups.push(`g${i}`);
  }
  await t.publish(groups[0], {});
  await t.publishWith(groups[1], {}, { retry: { base: 8, jitter: 'none' } });
  const leases = [await t.claim('w'), await t.claim('w')];
  assert.deepEqual([await shown(t, groups[0]), await shown(t, groups[1])], [3, 8]);
  for (const lease of leases) await t.nack(lease);
  assert.equal((await t.stats()).parked, 2);
  clock.advance(3.01);
  const back = await t.claim('w');
  assert.equal(back.groupId, groups[0]);
  assert.equal(await t.claim('w'), null, 'the other waits its own 8 s');
  await t.close();
});

test('bad input is HAREL_ERR_ARGUMENT naming the field (a batch\'s element too); the queue as it was', async () => {
  const clock = manualClock(1000);
  const t = await Transport.open(box.db(), { clock: clock.fn });
  await t.publishWith('g', { n: 'kept' }, { retry: { base: 1 } });
  const before = await t.stats();
  const peekBefore = await t.peek('g');
  // stored by no batch below
  const ok = { groupId: 'g', event: { n: 'new' }, retry: { base: 1 }, unique: { key: 'fresh' } };
  const base = '; it must be finite seconds, 0.001..315360000 \\(ten years\\)';
  const factor = '; it must be finite, 1..16';
  const cap = (b) => `; it must be finite seconds, from base \\(${b}\\) to 315360000 \\(ten years\\)`;

  // the library's, naming the field as the option does (`retry.`, after `messages[i].` in a batch)
  const library = [
    [{ base: -1 }, `retry.base is -1${base}`],
    [{ base: 0.0005 }, `retry.base is 0.0005${base}`],
    [{ base: NaN }, `retry.base is NaN${base}`],
    [{ base: Infinity }, `retry.base is inf${base}`],
    [{ base: 315360001 }, `retry.base is 315360001${base}`],
    [{ base: 1, factor: 0.5 }, `retry.factor is 0.5${factor}`],
    [{ base: 1, factor: 17 }, `retry.factor is 17${factor}`],
    [{ base: 1, factor: -2 }, `retry.factor is -2${factor}`],
    [{ base: 1, factor: NaN }, `retry.factor is NaN${factor}`],
    [{ base: 1, cap: 0.5 }, `retry.cap is 0.5${cap(1)}`],
    [{ base: 1, cap: Infinity }, `retry.cap is inf${cap(1)}`],
    [{ base: 2, cap: 315360001 }, `retry.cap is 315360001${cap(2)}`],
  ];
  // the binding's: the 0s C would read as none or as the default, in the library's words
  const zeros = [
    [{ base: 0 }, `retry.base is 0${base}`],
    [{ base: -0, factor: 2 }, `retry.base is 0${base}`],
    [{ base: 1, factor: 0 }, `retry.factor is 0${factor}`],
    [{ base: 1.5, cap: 0 }, `retry.cap is 0${cap(1.5)}`],
  ];
  // the binding's: what C could not take
  const binding = [
    [{}, 'retry.base must be a number of seconds, got undefined'],
    [{ factor: 2 }, 'retry.base must be a number of seconds, got undefined'],
    [{ base: '1' }, 'retry.base must be a number of seconds, got the string "1"'],
    [{ base: 1n }, 'retry.base must be a number of seconds, got bigint 1'],
    [{ base: null }, 'retry.base must be a number of seconds, got null'],
    [{ base: 1, factor: '2' }, 'retry.factor must be a number, got the string "2"'],
    [{ base: 1, cap: null }, 'retry.cap must be a number of seconds, got null'],
    [{ base: 1, jitter: 'half' }, 'retry.jitter must be \'full\', \'equal\' or \'none\', got the string "half"'],
    [{ base: 1, jitter: 1 }, 'retry.jitter must be \'full\', \'equal\' or \'none\', got number 1'],
    [{ base: 1, jitter: null }, 'retry.jitter must be \'full\', \'equal\' or \'none\', got null'],
    [{ base: 1, max: 60 }, 'retry: unknown option "max" \\(known: base, factor, cap, jitter\\)'],
    [5, 'retry must be an object, got number 5'],
    ['1s', 'retry must be an object, got the string "1s"'],
    [[1, 2], 'retry must be an object, got an array'],
  ];
  const tx = t.begin(); // goes on past every refusal at its publishWith
  for (const [retry, says] of [...library, ...zeros, ...binding]) {
    // the library's messages begin with the call ('publish: '), the binding's with the field
    const pattern = new RegExp(`(?:^|: )${says}`);
    const opened = await rejectsWith(assert, Transport.open(box.db(), { retry }), 'HAREL_ERR_ARGUMENT', pattern);
    assert.equal(opened.status, -1);
    await rejectsWith(assert, Transport.openShards([box.db(), box.db()], { retry }), 'HAREL_ERR_ARGUMENT', pattern);
    const e = await rejectsWith(assert, t.publishWith('g', { n: 'bad' }, { retry }), 'HAREL_ERR_ARGUMENT', pattern);
    assert.equal(e.status, -1);
    const element = { groupId: 'g', event: {}, retry };
    const inBatch = new RegExp(`(?:^|: )messages\\[1\\]\\.${says}`);
    await rejectsWith(assert, t.publishManyWith([ok, element]), 'HAREL_ERR_ARGUMENT', inBatch);
    await rejectsWith(assert, tx.publishWith('g', {}, { retry }), 'HAREL_ERR_ARGUMENT', pattern);
  }
  await rejectsWith(assert, t.publish('g', {}, { retry: { base: 1 } }), 'HAREL_ERR_ARGUMENT', /unknown option "retry"/);
  await rejectsWith(assert, t.publishMany([{ groupId: 'g', event: {}, retry: { base: 1 } }]), 'HAREL_ERR_ARGUMENT',
    /messages\[0\]: unknown option "retry"/);
  await rejectsWith(assert, t.publishManyWith([ok, { groupId: 'g', event: {}, retry_base: 1 }]), 'HAREL_ERR_ARGUMENT',
    /messages\[1\]: unknown option "retry_base" \(known: .*expiresAt, retry\)/);
  await rejectsWith(assert, Transport.open(box.db(), { retryBase: 1 }), 'HAREL_ERR_ARGUMENT',
    /unknown option "retryBase" \(known: .*archiveRetention, retry, clock/);
  await tx.publishWith('h', { n: 'tx' }, { retry: { base: 1 } });
  assert.deepEqual(await tx.commit(), [{ seq: 2, duplicate: false, replaced: false }],
    'the transaction went on: only its good publish');

  // nothing else changed: the same message; 'fresh' was never taken
  const after = await t.stats();
  const grown = { messages: before.messages + 1, groups: before.groups + 1, ready: before.ready + 1 };
  assert.deepEqual({ ...after, byPriority: undefined }, { ...before, ...grown, byPriority: undefined });
  assert.deepEqual(await t.peek('g'), peekBefore);
  assert.equal((await t.publishWith('g', {}, { unique: { key: 'fresh' } })).duplicate, false);
  await t.close();

  // at their bounds, taken
  for (const retry of [
    { base: 0.001 }, { base: 315360000 }, { base: 1, factor: 1, cap: 1 }, { base: 1, factor: 16, cap: 315360000 },
  ]) {
    const bounded = await Transport.open(box.db(), { retry });
    await bounded.publishWith('g', {}, { retry });
    await bounded.close();
  }
});

test('the system clock: a backoff of 0.3 s, nothing before, the message after', async () => {
  const t = await Transport.open(box.db(), { retry: { base: 0.3, jitter: 'none' } });
  await t.publish('g', { n: 1 });
  const lease = await t.claim('w');
  assert.equal(await shown(t, 'g'), 0.3);
  await t.nack(lease);
  assert.equal(await t.claim('w'), null, 'parked for its backoff');
  await sleep(600);
  const again = await t.claim('w');
  assert.deepEqual([again.event, again.attempts], [{ n: 1 }, 2]);
  await t.ack(again);
  await t.close();
});

test('HAREL_ERR_CLOSED for a publish with a retry policy, even a bad one', async () => {
  const t = await Transport.open(box.db());
  await t.close();
  for (const call of [
    () => t.publishWith('g', {}, { retry: { base: 1 } }),
    () => t.publishWith('g', {}, { retry: { base: 0 } }),
    () => t.publishManyWith([{ groupId: 'g', event: {}, retry: 'soon' }]),
  ]) {
    await rejectsWith(assert, call(), 'HAREL_ERR_CLOSED', /the transport is closed/);
  }
});
