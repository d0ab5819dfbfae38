'use strict';
// The mapping of the calls for when a message keeps failing (issue #14): maxAttempts and
// lease.attempts, deadLetter, redrive, purgeDead, purgeGroup, purge, release, stats,
// groups, peek and deadLetters. Each call once with its outputs field by field (frozen
// plain objects, null for absent values, numbers for counts); bad input per call, the
// binding's and the library's, with their codes; concurrent calls with their own errors.
// What the calls do to the queue is the Rust contract's (tests/common/contract.rs).

const assert = require('node:assert/strict');
const { test } = require('node:test');
const { Transport, DEFAULT_LIMIT, MAX_PAGE } = require('..');
const { scratch, manualClock, rejectsWith } = require('./helpers');

const box = scratch();

/** Frozen, and so is everything in it but the parsed events (as a lease's: the caller's to change). */
function deepFrozen(value) {
  if (value === null || typeof value !== 'object') return true;
  return Object.isFrozen(value) && Object.entries(value).every(([key, v]) => key === 'event' || deepFrozen(v));
}

test('maxAttempts moves a message claimed that often to the dead letters; lease.attempts counts', async () => {
  const clock = manualClock(1000);
  const t = await Transport.open(box.db(), { clock: clock.fn, maxAttempts: 2 });
  await t.publish('g', { n: 1 });
  await t.publish('g', { n: 2 });
  const first = await t.claim('w1');
  assert.equal(first.attempts, 1);
  await t.nack(first);
  const second = await t.claim('w2');
  assert.deepEqual([second.seq, second.attempts], [first.seq, 2]);
  clock.advance(31); // w2 dies holding it
  const next = await t.claim('w3');
  assert.deepEqual([next.event, next.attempts], [{ n: 2 }, 1], 'the group goes on with its next message');
  const { letters } = await t.deadLetters({ groupId: 'g' });
  assert.equal(letters.length, 1);
  assert.deepEqual([letters[0].seq, letters[0].attempts, letters[0].lastWorker], [first.seq, 2, 'w2']);
  assert.match(letters[0].reason, /max_attempts is 2/);
  await t.close();

  const unlimited = await Transport.open(':memory:', { maxAttempts: 0 });
  await unlimited.publish('g', {});
  for (let n = 1; n <= 4; n++) {
    const lease = await unlimited.claim('w');
    assert.equal(lease.attempts, n);
    await unlimited.nack(lease);
  }
  await unlimited.close();
  await rejectsWith(assert, Transport.open(':memory:', { maxAttempts: -1 }), 'HAREL_ERR_ARGUMENT', /maxAttempts must be an integer/);
  await rejectsWith(assert, Transport.open(':memory:', { maxAttempts: 2 ** 32 }), 'HAREL_ERR_ARGUMENT', /maxAttempts/);
  await rejectsWith(assert, Transport.open(':memory:', { maxAttempts: 1.5 }), 'HAREL_ERR_ARGUMENT', /maxAttempts/);
});

test('deadLetter, deadLetters (pages, a group), redrive and purgeDead by each selection', async () => {
  const clock = manualClock(1000);
  const t = await Transport.open(box.db(), { clock: clock.fn });
  await t.publish('a', { n: 0 });
  await t.publish('a', ' {"n": 1} ');
  await t.publish('b', { n: 2 }, { priority: 2, routingKey: 'k' });
  clock.advance(1);
  const lease = await t.claim('w');
  assert.equal(await t.deadLetter(lease, 'cannot parse'), undefined);
  await rejectsWith(assert, t.deadLetter(lease, 'again'), 'HAREL_ERR_LEASE_LOST');
  for (let i = 0; i < 2; i++) await t.deadLetter(await t.claim('w'), 'poison'); // b, then a's second
  assert.equal(await t.claim('w'), null);

  const first = await t.deadLetters({ limit: 2 });
  assert.ok(deepFrozen(first));
  assert.deepEqual(Object.keys(first).sort(), ['letters', 'next']);
  assert.equal(first.letters.length, 2);
  assert.equal(typeof first.next, 'string');
  assert.deepEqual({ ...first.letters[0] }, {
    seq: lease.seq, groupId: 'a', event: { n: 0 }, eventJson: '{"n":0}', attempts: 1, lastWorker: 'w',
    reason: 'cannot parse', deadAt: 1001, shard: 0, headers: [],
  });
  assert.equal(first.letters[1].eventJson, ' {"n": 1} ', 'byte for byte');
  const rest = await t.deadLetters({ cursor: first.next, limit: 2 });
  assert.deepEqual([rest.letters.length, rest.letters[0].groupId, rest.next], [1, 'b', null]);
  const bSeq = rest.letters[0].seq;
  assert.deepEqual((await t.deadLetters({ groupId: 'b', cursor: null })).letters.map((d) => d.seq), [bSeq]);
  assert.deepEqual(await t.deadLetters({ groupId: 'none' }), { letters: [], next: null });

  assert.equal(await t.redrive({ seqs: [bSeq, 999999n] }), 1, 'an unknown seq is passed over');
  assert.equal(await t.redrive({ groupId: 'a' }), 2);
  assert.equal(await t.redrive({ all: true }), 0);
  const back = await t.claim('w', { minPriority: 2, routingKeys: ['k'] });
  assert.deepEqual([back.event, back.attempts], [{ n: 2 }, 1], 'b came back with its priority and key, counted anew');
  await t.deadLetter(back, 'again');
  for (let i = 0; i < 2; i++) await t.deadLetter(await t.claim('w'), 'again');

  const aFirst = (await t.deadLetters({ groupId: 'a', limit: 1 })).letters[0].seq;
  assert.equal(await t.purgeDead({ seqs: [aFirst] }), 1);
  assert.equal(await t.purgeDead({ groupId: 'b' }), 1);
  assert.equal(await t.purgeDead({ all: true, groupId: null, seqs: null }), 1);
  assert.equal((await t.stats()).dead, 0);
  await t.close();
});

test('purgeGroup and purge resolve their counts; release true, then false', async () => {
  const t = await Transport.open(box.db());
  for (const g of ['a', 'a', 'b', 'c', 'd']) await t.publish(g, {});
  const held = await t.claim('w'); // a's first
  assert.equal(await t.purgeGroup('a'), 2);
  await rejectsWith(assert, t.ack(held), 'HAREL_ERR_LEASE_LOST');
  assert.equal(await t.purgeGroup('none'), 0);
  const stuck = await t.claim('w1', { visibility: 3600 }); // b
  assert.equal(await t.release('b'), true);
  assert.equal(await t.release('b'), false);
  assert.equal(await t.release('none'), false);
  await rejectsWith(assert, t.ack(stuck), 'HAREL_ERR_LEASE_LOST');
  await t.deadLetter(await t.claim('w'), 'kept'); // c
  assert.equal(await t.purge(), 2);
  assert.equal(await t.purge(), 0);
  const s = await t.stats();
  assert.deepEqual([s.messages, s.groups, s.dead], [0, 0, 1], 'dead letters stay');
  await t.close();
});

test('stats: every field; null for what is absent', async () => {
  const clock = manualClock(1000);
  const t = await Transport.open(box.db(), { clock: clock.fn });
  const empty = await t.stats();
  assert.ok(deepFrozen(empty));
  assert.deepEqual({ ...empty, byPriority: [...empty.byPriority] }, {
    now: 1000, messages: 0, groups: 0, ready: 0, leased: 0, parked: 0, delayed: 0, paused: 0, held: 0, retrying: 0,
    dead: 0, expired: 0, oldestReadyAge: null, oldestReadySeq: null, nextReleaseAt: null, nextDueAt: null,
    byPriority: [],
  });
  await t.publish('leased', {});
  clock.advance(1);
  await t.publish('parked', {}, { priority: 2 });
  await t.publish('parked', {});
  await t.publish('ready', {}, { priority: 2 });
  await t.publish('dead', {}, { priority: 4 });
  await t.claim('w', { visibility: 10 });
  await t.nack(await t.claim('w', { visibility: 10 }), { delay: 5 });
  await t.deadLetter(await t.claim('w', { minPriority: 4 }), 'x');
  clock.advance(1.5);
  const s = await t.stats();
  assert.ok(deepFrozen(s));
  assert.deepEqual([s.now, s.messages, s.groups, s.ready, s.leased, s.parked, s.dead, s.expired],
    [1002.5, 4, 3, 1, 1, 1, 1, 0], 'a worker\'s dead letter is not an expired one');
  assert.equal(s.oldestReadyAge, 1.5, 'the ready group\'s message was published 1.5 s ago');
  assert.equal(s.oldestReadySeq, 4, 'the ready group\'s message was the fourth published');
  assert.equal(s.nextReleaseAt, 1006, 'the park ends before the lease');
  assert.deepEqual(s.byPriority.map((p) => ({ ...p })), [
    { priority: 0, groups: 1, ready: 0, leased: 1, parked: 0, delayed: 0, paused: 0 },
    { priority: 2, groups: 2, ready: 1, leased: 0, parked: 1, delayed: 0, paused: 0 },
  ]);
  await t.close();
});

test('groups: pages followed by next, every field, the state filter', async () => {
  const clock = manualClock(1000);
  const t = await Transport.open(box.db(), { clock: clock.fn });
  for (const g of ['e', 'd', 'c', 'b', 'a']) await t.publish(g, {}, { priority: 1, routingKey: 'key' });
  await t.publish('a', {});
  await t.publish('été', {}, { priority: 3 });
  const leased = await t.claim('w1'); // e
  const parked = await t.claim('w2'); // d
  await t.nack(parked, { delay: 60 });
  clock.advance(4);
  const all = [];
  let page = await t.groups({ limit: 2 });
  let pages = 1;
  for (;;) {
    assert.ok(deepFrozen(page));
    all.push(...page.groups);
    if (page.next === null) break;
    page = await t.groups({ cursor: page.next, limit: 2 });
    pages += 1;
  }
  assert.deepEqual(all.map((g) => g.groupId), ['a', 'b', 'c', 'd', 'e', 'été']);
  assert.equal(pages, 3);
  assert.deepEqual({ ...all[0], headSeq: undefined }, {
    groupId: 'a', state: 'ready', depth: 2, headSeq: undefined, headAge: 4, holder: null, lockExpiry: null,
    priority: 1, routingKey: 'key', headAttempts: 0, shard: 0,
  });
  assert.deepEqual([all[3].state, all[3].holder, all[3].lockExpiry, all[3].headSeq, all[3].headAttempts], ['parked', null, 1060, parked.seq, 1]);
  assert.deepEqual([all[4].state, all[4].holder, all[4].lockExpiry, all[4].headSeq], ['leased', 'w1', leased.lockExpiry, leased.seq]);
  assert.deepEqual([all[5].priority, all[5].routingKey], [3, null]);
  const ids = async (state) => (await t.groups({ state })).groups.map((g) => g.groupId);
  assert.deepEqual(await ids('leased'), ['e']);
  assert.deepEqual(await ids('parked'), ['d']);
  assert.deepEqual(await ids('ready'), ['a', 'b', 'c', 'été']);
  assert.deepEqual(await ids('any'), await ids(null));
  assert.equal((await t.groups({ limit: MAX_PAGE })).groups.length, 6);
  assert.equal(DEFAULT_LIMIT, 100);
  await t.close();
});

test('peek: a group\'s messages with their locks and times, claiming nothing', async () => {
  const clock = manualClock(1000);
  const t = await Transport.open(box.db(), { clock: clock.fn });
  await t.publish('g', ' {"p": 0} ');
  clock.advance(1);
  await t.publish('g', { p: 1 });
  clock.advance(1);
  await t.publish('g', { p: 2 });
  const lease = await t.claim('w');
  const page = await t.peek('g', { limit: 2 });
  assert.ok(deepFrozen(page));
  assert.deepEqual(page.messages.map((m) => ({ ...m })), [
    {
      seq: lease.seq, event: { p: 0 }, eventJson: ' {"p": 0} ', attempts: 1, lockedBy: 'w', lockExpiry: 1032,
      publishedAt: 1000, headers: [], retryDelay: null,
    },
    {
      seq: page.messages[1].seq, event: { p: 1 }, eventJson: '{"p":1}', attempts: 0, lockedBy: null, lockExpiry: null,
      publishedAt: 1001, headers: [], retryDelay: null,
    },
  ]);
  const rest = await t.peek('g', { cursor: page.next });
  assert.deepEqual([rest.messages.map((m) => m.event), rest.next], [[{ p: 2 }], null]);
  await t.nack(lease, { delay: 60 });
  assert.equal((await t.peek('g', { limit: 1 })).messages[0].lockedBy, '__parked__');
  assert.deepEqual(await t.peek('none'), { messages: [], next: null });
  assert.equal(await t.claim('w'), null, 'peek claimed nothing: g is parked');
  await t.close();
});

test('the new calls\' bad input: the binding\'s checks, and the library\'s messages', async () => {
  const t = await Transport.open(box.db());
  await t.publish('g', {});
  await t.publish('g', {});
  await t.publish('d', {});
  await t.deadLetter(await t.claim('w'), 'fixture');
  const lease = await t.claim('w'); // d's
  const groupsCursor = (await t.groups({ limit: 1 })).next;
  assert.equal(typeof groupsCursor, 'string');
  const binding = [
    [() => t.deadLetter(null, 'r'), /lease must be a lease object/],
    [() => t.deadLetter(lease, 42), /reason must be a string/],
    [() => t.deadLetter(lease, 'r\0'), /reason must not contain a NUL/],
    [() => t.redrive(), /which must be/],
    [() => t.redrive({ group: 'g' }), /unknown option "group"/],
    [() => t.redrive({ all: 'yes' }), /all must be a boolean/],
    [() => t.redrive({ seqs: 5 }), /seqs must be an array/],
    [() => t.purgeDead({ seqs: [1.5] }), /seqs\[0\] must be an integer/],
    [() => t.purgeDead({ seqs: [2n ** 63n] }), /seqs\[0\] is outside int64/],
    [() => t.purgeDead({ groupId: 'g\0' }), /groupId must not contain a NUL/],
    [() => t.purgeGroup(7), /groupId must be a string/],
    [() => t.release('g\uD800'), /lone surrogate/],
    [() => t.groups({ state: 'stuck' }), /state must be 'ready', 'leased', 'parked', 'delayed'/],
    [() => t.groups({ limit: -1 }), /limit must be an integer/],
    [() => t.groups({ limit: 2.5 }), /limit must be an integer/],
    [() => t.groups({ cursor: 5 }), /cursor must be a string/],
    [() => t.groups({ cursr: 'x' }), /unknown option "cursr"/],
    [() => t.peek(undefined), /groupId must be a string/],
    [() => t.peek('g', { limit: '10' }), /limit must be an integer/],
    [() => t.deadLetters({ groupId: 'g\0' }), /groupId must not contain a NUL/],
    [() => t.deadLetters('g'), /options must be an object/],
  ];
  for (const [call, pattern] of binding) await rejectsWith(assert, call(), 'HAREL_ERR_ARGUMENT', pattern);
  const library = [
    [() => t.deadLetter(lease, ''), /reason/],
    [() => t.redrive({}), /exactly one of all, group_id/],
    [() => t.redrive({ all: true, groupId: 'g' }), /exactly one/],
    [() => t.purgeDead({ seqs: [] }), /exactly one/],
    [() => t.purgeDead({ groupId: '' }), /group_id is empty/],
    [() => t.purgeGroup(''), /group_id/],
    [() => t.release(''), /group_id/],
    [() => t.groups({ limit: 0 }), /limit is 0/],
    [() => t.groups({ limit: MAX_PAGE + 1 }), /limit is 10001/],
    [() => t.groups({ cursor: 'nope' }), /cursor "nope" is not a cursor of this listing/],
    [() => t.peek('g', { cursor: groupsCursor }), /cursor/],
    [() => t.peek('', {}), /group_id/],
    [() => t.deadLetters({ cursor: groupsCursor }), /cursor/],
    [() => t.deadLetters({ groupId: '' }), /group_id/],
  ];
  for (const [call, pattern] of library) {
    const e = await rejectsWith(assert, call(), 'HAREL_ERR_ARGUMENT', pattern);
    assert.equal(e.status, -1);
  }
  // nothing changed: d's lease held, g's second waiting, the one dead letter
  const s = await t.stats();
  assert.deepEqual([s.messages, s.leased, s.ready, s.dead], [2, 1, 1, 1]);
  await t.ack(lease);
  await t.ack(await t.claim('w'));
  assert.equal(await t.claim('w'), null);
  await t.close();
});

test('the new calls run concurrently on the pool, each with its own outcome', async () => {
  const t = await Transport.open(box.db(), { synchronousFull: false });
  await t.publishMany(Array.from({ length: 20 }, (_, i) => ({ groupId: `g${i}`, event: { i } })));
  const calls = [];
  for (let i = 0; i < 20; i++) {
    calls.push(t.peek(`g${i}`).then((p) => ['peek', i, p.messages[0].event.i]));
    calls.push(t.purgeGroup(`nothing-${i}`).then((n) => ['purgeGroup', i, n]));
    calls.push(t.groups({ limit: 1, cursor: `bad-${i}` }).then(() => assert.fail('a bad cursor was taken'), (e) => ['groups', i, e.message]));
    calls.push(t.stats().then((s) => ['stats', i, s.groups]));
  }
  for (const [what, i, got] of await Promise.all(calls)) {
    if (what === 'peek') assert.equal(got, i);
    else if (what === 'purgeGroup') assert.equal(got, 0);
    else if (what === 'groups') assert.match(got, new RegExp(`"bad-${i}"`), 'its own error message');
    else assert.ok(got === 20);
  }
  await t.close();
});

test('HAREL_ERR_CLOSED for every new call', async () => {
  const t = await Transport.open(box.db());
  await t.close();
  const lease = { seq: 1, groupId: 'g', workerId: 'w' };
  const calls = [
    () => t.deadLetter(lease, 'r'), () => t.redrive({ all: true }), () => t.purgeDead({ all: true }),
    () => t.purgeGroup('g'), () => t.purge(), () => t.release('g'), () => t.stats(), () => t.groups(),
    () => t.peek('g'), () => t.deadLetters(),
  ];
  for (const call of calls) await rejectsWith(assert, call(), 'HAREL_ERR_CLOSED', /the transport is closed/);
});
