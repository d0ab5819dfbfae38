'use strict';
// Limits per routing key (issue 39): setLimit(routingKey, { concurrency?, rate?: {
// perSecond, burst } }) (harel_transport_set_limit, concurrency 0 and rate and burst 0 for
// a kind not given), removeLimit(routingKey) (harel_transport_remove_limit) and limits()
// (harel_transport_limits, its list copied out and freed). Each call's mapping onto the C
// ABI: a concurrency limit holding groups and an ack making room, the listing's in use and
// held, stats().held (ready without the held groups), metrics().limitHolds (each hold
// counted), a rate limit's fields and tokens, replace and remove, every bad input as
// HAREL_ERR_ARGUMENT (the binding's and the library's) leaving the queue as it was, the JS
// clock, a sharded queue (set on every shard, the listing summed), many calls in flight at
// once, off the event loop, a waiting claim woken by a token. The queue's rules themselves
// are the Rust contract's (tests/common/contract_limits.rs).

const assert = require('node:assert/strict');
const { test } = require('node:test');
const { Transport, MAX_LIMIT, shardOf } = require('..');
const { scratch, manualClock, rejectsWith, holdWriteLock } = require('./helpers');

const box = scratch();

/** Every lease the claims hand out until none is left, not acked. */
async function claimAll(t, options) {
  const leases = [];
  for (let lease = await t.claim('w', options); lease !== null; lease = await t.claim('w', options)) leases.push(lease);
  return leases;
}

/** The sorted group ids of `leases`. */
function groupsOf(leases) {
  return leases.map((lease) => lease.groupId).sort();
}

/** A listed limit's fields, as an array: [routingKey, concurrency, rate, inUse, tokens, held]. */
function row(l) {
  return [l.routingKey, l.concurrency, l.rate, l.inUse, l.tokens, l.held];
}

/** The stats' [ready, leased, held, retrying], checked first to add up to their groups. */
async function counts(t) {
  const s = await t.stats();
  assert.equal(s.ready + s.leased + s.parked + s.delayed + s.paused + s.held + s.retrying, s.groups, 'adding up');
  return [s.ready, s.leased, s.held, s.retrying];
}

test('a concurrency limit of 1: one claim through, the others pass over it; an ack lets the next through', async () => {
  const t = await Transport.open(box.db(), { clock: manualClock(1000).fn });
  assert.equal(await t.setLimit('k', { concurrency: 1 }), undefined);
  for (const g of ['k1', 'k2', 'k3']) await t.publish(g, { g }, { routingKey: 'k' });
  await t.publish('free', {});
  await t.publish('other', {}, { routingKey: 'other' });
  assert.deepEqual(await counts(t), [5, 0, 0, 0], 'nothing held before a claim meets the limit');
  assert.equal(t.metrics().limitHolds, 0);

  const first = await claimAll(t);
  assert.deepEqual(groupsOf(first), ['free', 'k1', 'other'], 'one of k, and every group without its limit');
  assert.deepEqual((await t.limits()).map(row), [['k', 1, null, 1, null, 2]], 'one in use, two held');
  assert.deepEqual(await counts(t), [0, 3, 2, 0], 'stats: two held, not ready');
  assert.equal(t.metrics().limitHolds, 2, 'metrics: k2 and k3 held, each counted once');
  const held = (await t.groups({ state: 'held' })).groups;
  assert.deepEqual(held.map((g) => [g.groupId, g.state]), [['k2', 'held'], ['k3', 'held']], 'listed as held');
  assert.deepEqual((await t.groups({ state: 'ready' })).groups, [], 'none listed as ready');

  const k1 = first.find((lease) => lease.groupId === 'k1');
  await t.ack(k1);
  assert.deepEqual(await counts(t), [0, 2, 2, 0], 'held until a claim gives one back');
  const second = await claimAll(t);
  assert.deepEqual(groupsOf(second), ['k2'], 'the ack makes room for one: the held group that came first');
  assert.deepEqual((await t.limits()).map(row), [['k', 1, null, 1, null, 1]]);
  assert.deepEqual(await counts(t), [0, 3, 1, 0], 'k3 still held');
  await t.nack(second[0]);
  const third = await claimAll(t);
  assert.deepEqual(groupsOf(third), ['k3'], 'a nack makes room, and the held group goes before the nacked one');
  await t.deadLetter(third[0], 'poison');
  const fourth = await claimAll(t);
  assert.deepEqual(groupsOf(fourth), ['k2'], 'a dead letter makes room');
  assert.deepEqual((await t.limits()).map(row), [['k', 1, null, 1, null, 0]]);
  await t.ack(fourth[0]);
  assert.deepEqual((await t.limits()).map(row), [['k', 1, null, 0, null, 0]], 'nothing in use');
  for (const lease of first.filter((l) => !l.groupId.startsWith('k'))) await t.ack(lease);
  assert.equal(await t.claim('w'), null);
  await t.close();
});

test('a rate limit\'s fields and tokens reach the listing; both kinds on one key', async () => {
  const clock = manualClock(1000);
  const t = await Transport.open(box.db(), { clock: clock.fn });
  await t.setLimit('r', { rate: { perSecond: 2, burst: 3 } });
  const [fresh] = await t.limits();
  assert.deepEqual(row(fresh), ['r', null, { perSecond: 2, burst: 3 }, 0, 3, 0], 'a bucket starts full');
  assert.deepEqual(Object.keys(fresh), ['routingKey', 'concurrency', 'rate', 'inUse', 'tokens', 'held']);
  assert.ok(Object.isFrozen(fresh) && Object.isFrozen(fresh.rate));

  for (let i = 0; i < 6; i++) await t.publish(`r${i}`, { i }, { routingKey: 'r' });
  const burst = await claimAll(t);
  assert.equal(burst.length, 3, 'the burst of 3');
  let [info] = await t.limits();
  assert.ok(Math.abs(info.tokens) < 1e-9, `no token left: ${info.tokens}`);
  assert.deepEqual([info.inUse, info.held], [0, 3], 'no slot without a concurrency limit; the groups met held');
  clock.advance(0.25);
  [info] = await t.limits();
  assert.ok(Math.abs(info.tokens - 0.5) < 1e-9, `half a token a quarter second: ${info.tokens}`);
  assert.equal(await t.claim('w'), null, 'half a token');
  clock.advance(0.25);
  assert.equal((await claimAll(t)).length, 1, 'one token a half second');
  clock.advance(100);
  [info] = await t.limits();
  assert.equal(info.tokens, 3, 'an idle key keeps at most its burst');

  // both kinds: the listing shows each, a rate with fractions as set
  await t.setLimit('both', { concurrency: 7, rate: { perSecond: 0.5, burst: 1.5 } });
  await t.setLimit('max', { concurrency: MAX_LIMIT, rate: { perSecond: MAX_LIMIT, burst: MAX_LIMIT } });
  await t.setLimit('least', { concurrency: 1, rate: { perSecond: Number.MIN_VALUE, burst: 1 } });
  const rows = (await t.limits()).map(row);
  assert.deepEqual(rows, [
    ['both', 7, { perSecond: 0.5, burst: 1.5 }, 0, 1.5, 0],
    ['least', 1, { perSecond: Number.MIN_VALUE, burst: 1 }, 0, 1, 0],
    ['max', MAX_LIMIT, { perSecond: MAX_LIMIT, burst: MAX_LIMIT }, 0, MAX_LIMIT, 0],
    ['r', null, { perSecond: 2, burst: 3 }, 0, 3, 2],
  ], 'in routing key order (r still holds the two groups the claims met last)');
  await t.close();
});

test('setLimit replaces a key\'s limits; removeLimit serves its held groups; limits outlive their setter', async () => {
  const db = box.db();
  const clock = manualClock(1000);
  const setter = await Transport.open(db, { clock: clock.fn });
  await setter.setLimit('k', { concurrency: 1, rate: { perSecond: 1, burst: 5 } });
  await setter.close();

  const t = await Transport.open(db, { clock: clock.fn });
  assert.deepEqual((await t.limits()).map(row), [['k', 1, { perSecond: 1, burst: 5 }, 0, 5, 0]], 'stored');
  for (let i = 0; i < 6; i++) await t.publish(`g${i}`, { i }, { routingKey: 'k' });
  assert.equal((await claimAll(t)).length, 1);
  await t.setLimit('k', { concurrency: 3 });
  assert.deepEqual((await t.limits()).map(row), [['k', 3, null, 1, null, 5]], 'the rate is off: not given');
  assert.equal((await claimAll(t)).length, 2, 'a larger limit makes room at once');
  await t.setLimit('k', { rate: { perSecond: 1, burst: 1 }, concurrency: null });
  const [replaced] = await t.limits();
  assert.deepEqual([replaced.concurrency, replaced.rate, replaced.tokens, replaced.held],
    [null, { perSecond: 1, burst: 1 }, 1, 3], 'the concurrency is off (null)');
  assert.equal((await claimAll(t)).length, 1, 'the one token');
  assert.deepEqual(await counts(t), [0, 4, 2, 0], 'two held by the rate');
  assert.equal(await t.removeLimit('k'), undefined);
  assert.deepEqual(await counts(t), [2, 4, 0, 0], 'removed: held no more, ready');
  assert.equal((await claimAll(t)).length, 2, 'removed: every held group is served');
  assert.deepEqual(await t.limits(), []);
  assert.ok(Object.isFrozen(await t.limits()));
  await rejectsWith(assert, t.removeLimit('k'), 'HAREL_ERR_ARGUMENT', /^routing key "k" has no limit to remove$/);
  await rejectsWith(assert, t.removeLimit('never'), 'HAREL_ERR_ARGUMENT', /routing key "never" has no limit to remove/);
  await t.close();
});

test('routing keys reach the library whole: several UTF-8 bytes, a long key; listed in byte order', async () => {
  const t = await Transport.open(box.db());
  const keys = ['paiement-é', '支払い', 'emoji-🎉', 'k'.repeat(1000), 'a b'];
  for (const [i, key] of keys.entries()) {
    await t.setLimit(key, { concurrency: i + 1 });
    await t.publish(`g-${key}`, {}, { routingKey: key });
  }
  const byBytes = (a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b));
  const listed = await t.limits();
  assert.deepEqual(listed.map((l) => [l.routingKey, l.concurrency]),
    keys.map((key, i) => [key, i + 1]).sort(([a], [b]) => byBytes(a, b)));
  const leases = await claimAll(t);
  assert.equal(leases.length, keys.length);
  assert.ok((await t.limits()).every((l) => l.inUse === 1), 'each lease counted under its own key');
  for (const key of keys) await t.removeLimit(key);
  assert.deepEqual(await t.limits(), []);
  await t.close();
});

test('setLimit and limits read the JS clock; removeLimit does not', async () => {
  const clock = manualClock(5000);
  let reads = 0;
  const t = await Transport.open(box.db(), {
    clock: () => {
      reads += 1;
      return clock.now;
    },
  });
  const atOpen = reads;
  await t.setLimit('k', { concurrency: 1 });
  await t.setLimit('r', { rate: { perSecond: 1, burst: 2 } });
  assert.equal(reads, atOpen + 2);
  await t.limits();
  assert.equal(reads, atOpen + 3, 'limits() reads it: the tokens now');
  await t.removeLimit('k');
  assert.equal(reads, atOpen + 3, 'removeLimit reads no clock');
  await assert.rejects(t.setLimit('k', { max: 1 }), { code: 'HAREL_ERR_ARGUMENT' });
  await assert.rejects(t.setLimit('k', { concurrency: 0 }), { code: 'HAREL_ERR_ARGUMENT' });
  assert.equal(reads, atOpen + 3, 'a limit the binding refuses reads no clock');
  await t.close();
});

test('bad input is HAREL_ERR_ARGUMENT, the library\'s and the binding\'s, and leaves the queue as it was', async () => {
  const t = await Transport.open(box.db(), { clock: manualClock(1000).fn });
  await t.setLimit('kept', { concurrency: 2, rate: { perSecond: 3, burst: 4 } });
  await t.publish('g', { n: 1 }, { routingKey: 'k' });
  const limitsBefore = await t.limits();
  const groupsBefore = await t.groups();
  const rate = (perSecond, burst) => ({ rate: { perSecond, burst } });

  // the library's, its messages naming them (the spec's cases)
  const library = [
    ['', { concurrency: 1 }, /^routing_key is empty$/],
    ['k', {}, /^the limit has neither a concurrency nor a rate$/],
    ['k', { concurrency: null, rate: null }, /^the limit has neither a concurrency nor a rate$/],
    ['k', { concurrency: undefined }, /^the limit has neither a concurrency nor a rate$/],
    ['k', { concurrency: 1000001 }, /^concurrency is 1000001; it must be 1\.\.1000000$/],
    ['k', { concurrency: 2 ** 32 - 1 }, /^concurrency is 4294967295; it must be 1\.\.1000000$/],
    ['k', rate(0, 1), /^rate is 0; it must be a finite number > 0, at most 1000000$/],
    ['k', rate(-1, 1), /^rate is -1; it must be a finite number > 0, at most 1000000$/],
    ['k', rate(NaN, 1), /^rate is NaN; it must be a finite number > 0, at most 1000000$/],
    ['k', rate(Infinity, 1), /^rate is inf; it must be a finite number > 0, at most 1000000$/],
    ['k', rate(-Infinity, 1), /^rate is -inf; /],
    ['k', rate(2e6, 1), /^rate is 2000000; it must be a finite number > 0, at most 1000000$/],
    ['k', rate(1, 0.5), /^burst is 0\.5; it must be a finite number >= 1, at most 1000000$/],
    ['k', rate(1, 0), /^burst is 0; it must be a finite number >= 1, at most 1000000$/],
    ['k', rate(1, NaN), /^burst is NaN; it must be a finite number >= 1, at most 1000000$/],
    ['k', rate(1, Infinity), /^burst is inf; /],
    ['k', rate(1, 1000001), /^burst is 1000001; /],
    ['k', { concurrency: 1, ...rate(0, 1) }, /^rate is 0; /],
  ];
  for (const [key, limit, pattern] of library) {
    const e = await rejectsWith(assert, t.setLimit(key, limit), 'HAREL_ERR_ARGUMENT', pattern);
    assert.equal(e.status, -1);
  }
  await rejectsWith(assert, t.removeLimit(''), 'HAREL_ERR_ARGUMENT', /^routing_key is empty$/);
  await rejectsWith(assert, t.removeLimit('k'), 'HAREL_ERR_ARGUMENT', /^routing key "k" has no limit to remove$/);

  // the binding's: the zeros the C call reads as "not given", with the library's message
  // for a zero (they would otherwise turn a kind off, or be refused as no limit)
  const zeros = [
    [{ concurrency: 0 }, /^concurrency is 0; it must be 1\.\.1000000$/],
    [{ concurrency: -0 }, /^concurrency is 0; it must be 1\.\.1000000$/],
    [{ concurrency: 0, ...rate(1, 1) }, /^concurrency is 0; /],
    [rate(0, 0), /^rate is 0; it must be a finite number > 0, at most 1000000$/],
    [rate(-0, 0), /^rate is 0; /],
    [{ concurrency: 3, ...rate(0, 0) }, /^rate is 0; /],
  ];
  // the binding's: what has no C value, or that koffi would change, refused before any call
  const binding = [
    [undefined, /^limit must be \{ concurrency\?, rate\?: \{ perSecond, burst \} \}, got undefined$/],
    [null, /^limit must be .*, got null$/],
    [5, /^limit must be .*, got number 5$/],
    ['concurrency', /^limit must be .*, got the string "concurrency"$/],
    [[1], /^limit must be .*, got an array$/],
    [{ max: 5 }, /^limit: unknown option "max" \(known: concurrency, rate\)$/],
    [{ concurrency: 1, burst: 2 }, /^limit: unknown option "burst"/],
    [{ concurrency: 1.5 }, /^limit\.concurrency must be an integer \(1\.\.1000000\), got number 1\.5$/],
    [{ concurrency: -1 }, /^limit\.concurrency must be an integer .*, got number -1$/],
    [{ concurrency: 2 ** 32 }, /^limit\.concurrency must be an integer .*, got number 4294967296$/],
    [{ concurrency: NaN }, /^limit\.concurrency must be an integer .*, got number NaN$/],
    [{ concurrency: Infinity }, /^limit\.concurrency must be an integer .*, got number Infinity$/],
    [{ concurrency: '5' }, /^limit\.concurrency must be an integer .*, got the string "5"$/],
    [{ concurrency: 5n }, /^limit\.concurrency must be an integer .*, got bigint 5$/],
    [{ concurrency: true }, /^limit\.concurrency must be an integer .*, got boolean true$/],
    [{ rate: 5 }, /^limit\.rate must be \{ perSecond, burst \}, got number 5$/],
    [{ rate: [1, 2] }, /^limit\.rate must be \{ perSecond, burst \}, got an array$/],
    [{ rate: {} }, /^limit\.rate\.perSecond must be a number, got undefined$/],
    [{ rate: { perSecond: 5 } }, /^limit\.rate\.burst must be a number, got undefined$/],
    [{ rate: { burst: 5 } }, /^limit\.rate\.perSecond must be a number, got undefined$/],
    [rate('5', 1), /^limit\.rate\.perSecond must be a number, got the string "5"$/],
    [rate(1, null), /^limit\.rate\.burst must be a number, got null$/],
    [rate(1n, 1), /^limit\.rate\.perSecond must be a number, got bigint 1$/],
    [{ rate: { perSecond: 1, burst: 1, per: 's' } }, /^limit\.rate: unknown option "per" \(known: perSecond, burst\)$/],
    [{ rate: { rate: 1, burst: 1 } }, /^limit\.rate: unknown option "rate"/],
  ];
  for (const [limit, pattern] of [...zeros, ...binding]) {
    const e = await rejectsWith(assert, t.setLimit('k', limit), 'HAREL_ERR_ARGUMENT', pattern);
    assert.equal(e.status, -1);
  }
  await rejectsWith(assert, t.setLimit('k'), 'HAREL_ERR_ARGUMENT', /got undefined$/);
  // a routing key that is no string, or that koffi would change
  const keys = [
    [undefined, /^routingKey must be a string, got undefined$/],
    [null, /^routingKey must be a string, got null$/],
    [42, /^routingKey must be a string, got number 42$/],
    [['k'], /^routingKey must be a string, got an array$/],
    [{ routingKey: 'k' }, /^routingKey must be a string, got object$/],
    ['k\0', /^routingKey must not contain a NUL character$/],
    ['k\uD800', /^routingKey is not valid Unicode/],
  ];
  for (const [key, pattern] of keys) {
    await rejectsWith(assert, t.setLimit(key, { concurrency: 1 }), 'HAREL_ERR_ARGUMENT', pattern);
    await rejectsWith(assert, t.removeLimit(key), 'HAREL_ERR_ARGUMENT', pattern);
  }
  await rejectsWith(assert, t.removeLimit(), 'HAREL_ERR_ARGUMENT', /got undefined$/);

  // nothing changed: the same limit, the same groups; g (key k, no limit) is still served
  assert.deepEqual(await t.limits(), limitsBefore);
  assert.deepEqual(await t.groups(), groupsBefore);
  const [lease] = await claimAll(t);
  assert.equal(lease.groupId, 'g');
  assert.deepEqual((await t.limits()).map(row), [['kept', 2, { perSecond: 3, burst: 4 }, 0, 4, 0]]);
  await t.close();
});

test('HAREL_ERR_CLOSED for setLimit, removeLimit and limits, even with bad arguments', async () => {
  const t = await Transport.open(box.db());
  await t.close();
  for (const call of [
    () => t.setLimit('k', { concurrency: 1 }), () => t.removeLimit('k'), () => t.limits(),
    () => t.setLimit('', {}), () => t.setLimit('k', { concurrency: 0 }), () => t.setLimit(null),
    () => t.removeLimit(''),
  ]) {
    const e = await rejectsWith(assert, call(), 'HAREL_ERR_CLOSED', /the transport is closed/);
    assert.equal(e.status, undefined);
  }
});

test('a sharded queue: setLimit and removeLimit act on every shard, limits() sums each key\'s use', async () => {
  const databases = [0, 1, 2].map((i) => box.db(`shard${i}`));
  const clock = manualClock(1000);
  const t = await Transport.openShards(databases, { clock: clock.fn });
  // two groups of key k on each shard, and one of key r
  const by = [[], [], []];
  const rs = [null, null, null];
  for (let i = 0; by.some((ids) => ids.length < 2) || rs.includes(null); i++) {
    const id = `g${i}`;
    const shard = shardOf(id, 3);
    if (by[shard].length < 2) by[shard].push(id);
    else if (rs[shard] === null) rs[shard] = id;
  }
  for (const id of by.flat()) await t.publish(id, { id }, { routingKey: 'k' });
  for (const id of rs) await t.publish(id, { id }, { routingKey: 'r' });
  await t.setLimit('k', { concurrency: 1 });
  await t.setLimit('r', { rate: { perSecond: 1, burst: 2 } });
  assert.deepEqual((await t.limits()).map(row), [
    ['k', 1, null, 0, null, 0],
    ['r', null, { perSecond: 1, burst: 2 }, 0, 6, 0],
  ], 'each key once; its tokens summed: a bucket on each shard');

  const leases = await claimAll(t, { routingKeys: ['k'] });
  assert.equal(leases.length, 3, 'one of k on each shard: the limit is each shard\'s own');
  assert.deepEqual(leases.map((lease) => shardOf(lease.groupId, 3)).sort(), [0, 1, 2]);
  const served = await claimAll(t, { routingKeys: ['r'] });
  assert.equal(served.length, 3, 'a token on each shard for its one group of r');
  assert.deepEqual((await t.limits()).map(row), [
    ['k', 1, null, 3, null, 3],
    ['r', null, { perSecond: 1, burst: 2 }, 0, 3, 0],
  ], 'in use and held summed over the shards');
  assert.deepEqual(await counts(t), [0, 6, 3, 0], 'stats: the held groups summed over the shards');
  assert.equal(t.metrics().limitHolds, 3, 'metrics: a hold on each shard, counted by the one transport');

  await t.ack(leases[0]);
  const next = await claimAll(t, { routingKeys: ['k'] });
  assert.equal(next.length, 1);
  assert.equal(shardOf(next[0].groupId, 3), shardOf(leases[0].groupId, 3), 'the ack made room on its own shard');
  assert.deepEqual(row((await t.limits())[0]), ['k', 1, null, 3, null, 2]);

  await t.removeLimit('k');
  assert.equal((await claimAll(t, { routingKeys: ['k'] })).length, 2, 'removed on every shard: each held group served');
  await t.removeLimit('r');
  assert.deepEqual(await t.limits(), []);
  await rejectsWith(assert, t.removeLimit('k'), 'HAREL_ERR_ARGUMENT', /routing key "k" has no limit to remove/);
  await t.close();
});

test('many setLimits, limits() and claims in flight at once: the limit holds for the workers', async () => {
  const t = await Transport.open(box.db(), { synchronousFull: false });
  const GROUPS = 24;
  const PER_GROUP = 4;
  const messages = [];
  for (let n = 0; n < PER_GROUP; n++) {
    for (let i = 0; i < GROUPS; i++) messages.push({ groupId: `g${i}`, event: { n }, routingKey: `k${i % 3}` });
  }
  await t.publishMany(messages);
  const keyOf = new Map(messages.map((m) => [m.groupId, m.routingKey]));
  // each key's limit set many times at once, the same limit each time
  await Promise.all([0, 1, 2].flatMap((i) => Array.from({ length: 5 }, () => t.setLimit(`k${i}`, { concurrency: 2 }))));
  assert.deepEqual((await t.limits()).map((l) => [l.routingKey, l.concurrency]), [['k0', 2], ['k1', 2], ['k2', 2]]);

  const leased = new Map([['k0', 0], ['k1', 0], ['k2', 0]]);
  let most = 0;
  const served = [];
  const worker = async (w) => {
    for (let lease = await t.claim(`w${w}`); lease !== null; lease = await t.claim(`w${w}`)) {
      const key = keyOf.get(lease.groupId);
      leased.set(key, leased.get(key) + 1);
      most = Math.max(most, leased.get(key));
      served.push([lease.groupId, lease.event.n]);
      await new Promise((resolve) => setImmediate(resolve));
      leased.set(key, leased.get(key) - 1);
      await t.ack(lease);
    }
  };
  const looks = [];
  await Promise.all([
    ...Array.from({ length: 12 }, (_, w) => worker(w)),
    ...Array.from({ length: 10 }, () => t.limits().then((l) => looks.push(l))),
  ]);
  // a worker ends at its first empty claim, which another's held group may have caused
  await Promise.all(Array.from({ length: 2 }, (_, w) => worker(w)));
  assert.ok(most <= 2, `at most 2 of a key's messages leased at once: ${most}`);
  assert.ok(looks.every((l) => l.length === 3 && l.every((x) => x.inUse <= 2)), 'each look within the limit');
  assert.equal(served.length, GROUPS * PER_GROUP, 'every message once');
  for (let i = 0; i < GROUPS; i++) {
    assert.deepEqual(served.filter(([g]) => g === `g${i}`).map(([, n]) => n), [0, 1, 2, 3], `g${i} in order`);
  }
  assert.deepEqual((await t.limits()).map((l) => [l.inUse, l.held]), [[0, 0], [0, 0], [0, 0]]);
  await Promise.all([0, 1, 2].map((i) => t.removeLimit(`k${i}`)));
  await t.close();
});

test('setLimit and removeLimit that wait for the write lock leave the event loop running', async () => {
  const db = box.db();
  const t = await Transport.open(db, { busyTimeout: 30 });
  await t.publish('g', { n: 1 }, { routingKey: 'k' });
  const holder = await holdWriteLock(db, 1.5);
  let ticks = 0;
  let timer = setInterval(() => {
    ticks += 1;
  }, 10);
  const started = performance.now();
  try {
    await Promise.all([t.setLimit('k', { concurrency: 1 }), t.setLimit('j', { rate: { perSecond: 1, burst: 1 } })]);
  } finally {
    clearInterval(timer);
  }
  const elapsed = performance.now() - started;
  await holder.released();
  assert.ok(elapsed >= 1000, `the setLimits waited for the lock (${elapsed.toFixed(0)} ms)`);
  assert.ok(ticks >= 20, `the timer kept firing while they waited: ${ticks} ticks in ${elapsed.toFixed(0)} ms`);
  assert.deepEqual((await t.limits()).map((l) => l.routingKey), ['j', 'k']);

  const again = await holdWriteLock(db, 1.5);
  ticks = 0;
  timer = setInterval(() => {
    ticks += 1;
  }, 10);
  const removedAt = performance.now();
  try {
    await Promise.all([t.removeLimit('k'), t.removeLimit('j')]);
  } finally {
    clearInterval(timer);
  }
  const waited = performance.now() - removedAt;
  await again.released();
  assert.ok(waited >= 1000, `the removeLimits waited for the lock (${waited.toFixed(0)} ms)`);
  assert.ok(ticks >= 20, `the timer kept firing while they waited: ${ticks} ticks in ${waited.toFixed(0)} ms`);
  assert.deepEqual(await t.limits(), []);
  await t.close();
});

test('a waiting claim held by a rate limit is woken when the next token is due', async () => {
  const t = await Transport.open(box.db());
  await t.setLimit('r', { rate: { perSecond: 4, burst: 1 } });
  await t.publish('a', {}, { routingKey: 'r' });
  await t.publish('b', {}, { routingKey: 'r' });
  const first = await t.claim('w');
  assert.equal(first.groupId, 'a');
  const started = performance.now();
  const second = await t.claim('w', { wait: 5 });
  const ms = performance.now() - started;
  assert.equal(second && second.groupId, 'b');
  assert.ok(ms < 2000, `woken at the token (a quarter second), not at the end of the wait: ${ms.toFixed(0)} ms`);
  await t.ack(first);
  await t.ack(second);
  await t.close();
});
