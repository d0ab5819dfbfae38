'use strict';
// A queue sharded over several databases (issue 28): Transport.openShards, shardCount,
// shardOf, and the shard of each item of groups() and deadLetters(). The mapping onto the C
// ABI (harel_transport_open_shards, harel_transport_shard_count, harel_shard_of, the pages'
// `shards`): the list and the options reach the library, its refusals come back as
// HAREL_ERR_ARGUMENT with its message. What the sharded queue does (routing, the turns of
// claims, the records of a set) is the Rust contract's to test.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const { test } = require('node:test');
const { Transport, HarelError, shardOf } = require('..');
const { scratch, manualClock, rejectsWith } = require('./helpers');

const box = scratch();

/** Three new database paths: the shards of one queue, in order. */
function threeShards() {
  return [0, 1, 2].map((i) => box.db(`shard${i}`));
}

/** `perShard` group ids for each of `n` shards (shardOf picks them): an array per shard. */
function groupsByShard(n, perShard, stem = 'order') {
  const by = Array.from({ length: n }, () => []);
  for (let i = 0; by.some((ids) => ids.length < perShard); i++) {
    const id = `${stem}-${i}`;
    const shard = shardOf(id, n);
    if (by[shard].length < perShard) by[shard].push(id);
  }
  return by;
}

/** `error` is the argument error thrown synchronously by `fn`, its message matching `pattern`. */
function throwsArgument(fn, pattern) {
  assert.throws(fn, (e) => {
    assert.ok(e instanceof HarelError, `expected a HarelError, got ${e && e.stack}`);
    assert.equal(e.code, 'HAREL_ERR_ARGUMENT');
    assert.equal(e.status, -1);
    assert.match(e.message, pattern);
    return true;
  });
}

test('shardOf: the library\'s values; its refusals and the binding\'s checks', () => {
  assert.equal(shardOf('order-42', 3), 2);
  assert.equal(shardOf('order-42', 4), 0);
  assert.equal(shardOf('order-42', 1), 0);
  assert.equal(typeof shardOf('x', 256), 'number');
  // the UTF-8 bytes of the id, whatever they are
  for (const id of ['été', '漢字', '🦀', 'a'.repeat(1000)]) {
    const shard = shardOf(id, 7);
    assert.ok(Number.isInteger(shard) && shard >= 0 && shard < 7, `${id}: ${shard}`);
  }
  // the library's messages
  throwsArgument(() => shardOf('', 3), /group_id is empty/);
  throwsArgument(() => shardOf('order-42', 0), /n_shards is 0; it must be 1\.\.256/);
  throwsArgument(() => shardOf('order-42', 257), /n_shards is 257; it must be 1\.\.256/);
  // the binding's: what koffi would change silently
  throwsArgument(() => shardOf('order-42', -1), /shards must be an integer/);
  throwsArgument(() => shardOf('order-42', 1.5), /shards must be an integer/);
  throwsArgument(() => shardOf('order-42', '3'), /shards must be an integer/);
  throwsArgument(() => shardOf('order-42', 2 ** 64), /shards must be an integer/);
  throwsArgument(() => shardOf('order-42'), /shards must be an integer/);
  throwsArgument(() => shardOf(42, 3), /groupId must be a string/);
  throwsArgument(() => shardOf(null, 3), /groupId must be a string/);
  throwsArgument(() => shardOf('a\0b', 3), /groupId must not contain a NUL/);
  throwsArgument(() => shardOf('\ud800', 3), /groupId is not valid Unicode/);
});

test('openShards: groups on every shard, each message claimed and acked exactly once', async () => {
  const databases = threeShards();
  const t = await Transport.openShards(databases);
  assert.equal(t.shardCount, 3);
  assert.equal(t.path, databases[0], 'path: the first database');
  const by = groupsByShard(3, 2);
  const groups = by.flat();
  const MESSAGES = 3;
  for (let n = 0; n < MESSAGES; n++) {
    for (const id of groups) await t.publish(id, { id, n });
  }
  assert.deepEqual([(await t.stats()).messages, (await t.stats()).groups], [groups.length * MESSAGES, groups.length]);

  const seen = new Map(groups.map((id) => [id, []]));
  for (let lease; (lease = await t.claim('w')) !== null; ) {
    assert.equal(lease.event.id, lease.groupId);
    seen.get(lease.groupId).push(lease.event.n);
    await t.ack(lease);
  }
  for (const [id, ns] of seen) assert.deepEqual(ns, [0, 1, 2], `${id}: each message once, in order`);
  assert.equal((await t.stats()).messages, 0);

  // the batches: publishMany over every shard (one transaction per shard), claimMany and
  // ackMany across them
  await t.publishMany(groups.map((id) => ({ groupId: id, event: { id, n: 3 } })));
  const leases = [];
  for (let batch; (batch = await t.claimMany('w', { max: 4 })).length > 0; ) {
    leases.push(...batch);
    assert.ok((await t.ackMany(batch)).every((o) => o.ok));
  }
  assert.deepEqual(leases.map((l) => l.groupId).sort(), [...groups].sort(), 'each group once');
  assert.equal(await t.claim('w'), null);
  await t.close();
  assert.throws(() => t.shardCount, (e) => e instanceof HarelError && e.code === 'HAREL_ERR_CLOSED');
});

test('groups and deadLetters: each item\'s shard is shardOf of its group', async () => {
  const clock = manualClock(2000);
  const databases = threeShards();
  // the options reach the library as open's do: the clock and the prefix
  const t = await Transport.openShards(databases, { clock: clock.fn, prefix: 'app', maxAttempts: 0 });
  const groups = groupsByShard(3, 2, 'g').flat();
  for (const id of groups) await t.publish(id, { id });
  let all = [];
  for (let page = await t.groups({ limit: 2 }); ; page = await t.groups({ limit: 2, cursor: page.next })) {
    all.push(...page.groups);
    if (page.next === null) break;
  }
  assert.deepEqual(all.map((g) => g.groupId).sort(), [...groups].sort());
  for (const g of all) {
    assert.equal(g.shard, shardOf(g.groupId, 3), g.groupId);
    assert.ok(Object.isFrozen(g));
  }
  assert.deepEqual(new Set(all.map((g) => g.shard)), new Set([0, 1, 2]), 'every shard listed');
  assert.deepEqual((await t.groups({ state: 'ready' })).groups.map((g) => g.shard), (await t.groups()).groups.map((g) => g.shard));

  // a dead letter on each shard, listed with its shard
  clock.advance(5);
  for (let lease; (lease = await t.claim('w')) !== null; ) await t.deadLetter(lease, `dead ${lease.groupId}`);
  all = [];
  for (let page = await t.deadLetters({ limit: 1 }); ; page = await t.deadLetters({ limit: 1, cursor: page.next })) {
    all.push(...page.letters);
    if (page.next === null) break;
  }
  assert.deepEqual(all.map((d) => d.groupId).sort(), [...groups].sort());
  for (const d of all) {
    assert.equal(d.shard, shardOf(d.groupId, 3), d.groupId);
    assert.deepEqual([d.reason, d.deadAt, d.lastWorker], [`dead ${d.groupId}`, 2005, 'w']);
  }
  const one = (await t.deadLetters({ groupId: groups[5] })).letters;
  assert.deepEqual(one.map((d) => [d.groupId, d.shard]), [[groups[5], shardOf(groups[5], 3)]]);

  // a seq names a dead letter of one shard: refused; by group and all work
  await rejectsWith(assert, t.redrive({ seqs: [one[0].seq] }), 'HAREL_ERR_ARGUMENT', /a seq names a dead letter of one shard/);
  await rejectsWith(assert, t.purgeDead({ seqs: [one[0].seq] }), 'HAREL_ERR_ARGUMENT', /a seq names a dead letter of one shard/);
  assert.equal(await t.redrive({ groupId: groups[5] }), 1);
  assert.equal(await t.purgeDead({ all: true }), groups.length - 1);
  assert.deepEqual((await t.groups()).groups.map((g) => [g.groupId, g.shard]), [[groups[5], shardOf(groups[5], 3)]]);
  await t.close();

  // another prefix, other tables: the prefix reached every shard
  const other = await Transport.openShards(databases);
  assert.deepEqual((await other.groups()).groups, []);
  await other.close();
});

test('a queue of one database: shardCount 1, every shard 0', async () => {
  const t = await Transport.open(box.db());
  assert.equal(t.shardCount, 1);
  await t.publish('order-42', {});
  await t.deadLetter(await t.claim('w'), 'no');
  await t.publish('order-42', {});
  assert.deepEqual((await t.groups()).groups.map((g) => g.shard), [0]);
  assert.deepEqual((await t.deadLetters()).letters.map((d) => d.shard), [0]);
  await t.close();
  const one = await Transport.openShards([box.db()]);
  assert.equal(one.shardCount, 1);
  await one.close();
});

test('openShards again with the same list: the same queue', async () => {
  const databases = threeShards();
  const first = await Transport.openShards(databases);
  const groups = groupsByShard(3, 1).flat();
  for (const id of groups) await first.publish(id, { id });
  await first.close();
  const again = await Transport.openShards([...databases]);
  assert.equal(again.shardCount, 3);
  assert.deepEqual((await again.groups()).groups.map((g) => [g.groupId, g.shard]).sort(), groups.map((id) => [id, shardOf(id, 3)]).sort());
  // two transports on the same set at once
  const also = await Transport.openShards(databases);
  const lease = await also.claim('w');
  assert.ok(groups.includes(lease.groupId));
  await again.ack(lease);
  assert.equal((await also.stats()).messages, groups.length - 1);
  await Promise.all([again.close(), also.close()]);
});

test('openShards: each refusal is HAREL_ERR_ARGUMENT with the library\'s message', async () => {
  const databases = threeShards();
  await (await Transport.openShards(databases)).close();
  const [a, b, c] = databases;
  const name = (i, db) => new RegExp(`databases\\[${i}\\] \\(${db.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\)`);

  const reordered = await rejectsWith(assert, Transport.openShards([b, a, c]), 'HAREL_ERR_ARGUMENT', /the list is reordered/);
  assert.match(reordered.message, name(0, b));
  const missing = await rejectsWith(assert, Transport.openShards([a, b]), 'HAREL_ERR_ARGUMENT', /1 database is missing/);
  assert.match(missing.message, name(0, a));
  const extra = box.db('extra');
  await rejectsWith(assert, Transport.openShards([a, b, c, extra]), 'HAREL_ERR_ARGUMENT', /1 database is extra/);
  await rejectsWith(assert, Transport.openShards([]), 'HAREL_ERR_ARGUMENT', /databases has 0 entries; it must have 1\.\.256/);
  const many = Array.from({ length: 257 }, (_, i) => `${box.dir}/never-${i}.db`);
  await rejectsWith(assert, Transport.openShards(many), 'HAREL_ERR_ARGUMENT', /databases has 257 entries/);
  assert.ok(!fs.existsSync(many[0]), 'refused before any is opened');
  const repeated = await rejectsWith(assert, Transport.openShards([a, b, a]), 'HAREL_ERR_ARGUMENT', /databases\[2\] repeats databases\[0\]/);
  assert.match(repeated.message, new RegExp(a.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  await rejectsWith(assert, Transport.openShards([a, '', c]), 'HAREL_ERR_ARGUMENT', /databases\[1\] is empty/);
  // a member of the set opened alone
  await rejectsWith(assert, Transport.open(b), 'HAREL_ERR_ARGUMENT', /is shard 1 of 3 of the sharded queue/);
  // a database of another set
  const others = threeShards();
  await (await Transport.openShards(others)).close();
  await rejectsWith(assert, Transport.openShards([a, b, others[2]]), 'HAREL_ERR_ARGUMENT', /belongs to another sharded queue/);
  // a database with messages that is in no set
  const plain = box.db('plain');
  const p = await Transport.open(plain);
  await p.publish('g', {});
  await p.close();
  await rejectsWith(assert, Transport.openShards([plain, box.db()]), 'HAREL_ERR_ARGUMENT', /holds messages and belongs to no shard set/);

  // the binding's own checks, before the library: what koffi cannot pass
  await rejectsWith(assert, Transport.openShards([a, null, c]), 'HAREL_ERR_ARGUMENT', /databases\[1\] must be a string, got null/);
  await rejectsWith(assert, Transport.openShards([a, undefined]), 'HAREL_ERR_ARGUMENT', /databases\[1\] must be a string/);
  // eslint-disable-next-line no-sparse-arrays
  await rejectsWith(assert, Transport.openShards([a, , c]), 'HAREL_ERR_ARGUMENT', /databases\[1\] must be a string/);
  await rejectsWith(assert, Transport.openShards([a, 'x\0.db']), 'HAREL_ERR_ARGUMENT', /databases\[1\] must not contain a NUL/);
  await rejectsWith(assert, Transport.openShards([a, 42]), 'HAREL_ERR_ARGUMENT', /databases\[1\] must be a string, got number 42/);
  await rejectsWith(assert, Transport.openShards(a), 'HAREL_ERR_ARGUMENT', /databases must be an array of strings/);
  await rejectsWith(assert, Transport.openShards(), 'HAREL_ERR_ARGUMENT', /databases must be an array of strings/);
  await rejectsWith(assert, Transport.openShards(databases, { shards: 3 }), 'HAREL_ERR_ARGUMENT', /unknown option "shards"/);
  await rejectsWith(assert, Transport.openShards(databases, { maxAttempts: -1 }), 'HAREL_ERR_ARGUMENT', /maxAttempts/);

  // replica shards: one primary each; servers that are not there fail to connect, so the
  // URLs reached the shards
  const replicas = [box.db('r0'), box.db('r1'), box.db('r2')];
  const urls = ['http://127.0.0.1:1/a', 'http://127.0.0.1:1/b', 'http://127.0.0.1:1/c'];
  await rejectsWith(assert, Transport.openShards(replicas, { syncUrls: urls.slice(0, 1) }), 'HAREL_ERR_ARGUMENT', /sync_urls has 1 URLs and databases 3 paths/);
  await rejectsWith(assert, Transport.openShards(replicas, { syncUrls: [urls[0], urls[0], urls[2]] }), 'HAREL_ERR_ARGUMENT', /urls\[1\] repeats urls\[0\]/);
  await rejectsWith(assert, Transport.openShards(replicas, { syncUrls: urls, syncUrl: urls[0] }), 'HAREL_ERR_ARGUMENT', /sync_url and sync_urls are both set/);
  await rejectsWith(assert, Transport.openShards(replicas, { syncUrl: urls[0] }), 'HAREL_ERR_ARGUMENT', /sync_url names one primary/);
  await rejectsWith(assert, Transport.openShards(replicas, { syncUrls: [urls[0], 7] }), 'HAREL_ERR_ARGUMENT', /syncUrls\[1\] must be a string, got number 7/);
  await rejectsWith(assert, Transport.openShards(replicas, { syncUrls: urls[0] }), 'HAREL_ERR_ARGUMENT', /syncUrls must be an array of strings/);
  const unreached = await rejectsWith(assert, Transport.openShards(replicas, { syncUrls: urls }), 'HAREL_ERR_CONNECT', /databases\[0\]/);
  assert.match(unreached.message, name(0, replicas[0]));

  // the set itself is unharmed
  const t = await Transport.openShards(databases);
  assert.equal(t.shardCount, 3);
  await t.close();
});

test('a transaction on a sharded queue is refused at its first call', async () => {
  const t = await Transport.openShards(threeShards());
  const tx = t.begin(); // nothing sent yet
  await rejectsWith(assert, tx.execute('SELECT 1'), 'HAREL_ERR_ARGUMENT', /a transaction runs on one database/);
  await tx.rollback();
  await rejectsWith(assert, t.begin().query('SELECT 1'), 'HAREL_ERR_ARGUMENT', /a transaction runs on one database/);
  await rejectsWith(assert, t.begin().commit(), 'HAREL_ERR_ARGUMENT', /a transaction runs on one database/);
  let ran = false;
  await rejectsWith(
    assert,
    t.transaction(async (body) => {
      ran = true;
      await body.publish('order-42', { n: 1 });
    }),
    'HAREL_ERR_ARGUMENT',
    /a transaction runs on one database/,
  );
  assert.ok(ran);
  // nothing was published, and the transport goes on
  assert.equal((await t.stats()).messages, 0);
  await t.publish('order-42', {});
  await t.ack(await t.claim('w'));
  await t.close();
});
