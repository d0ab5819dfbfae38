'use strict';
// The archive of acked messages (issue 38): the archiveRetention open option
// (harel_options_set_archive) and archive() (harel_transport_archive, its page freed with
// harel_archive_page_free). The mapping onto the C ABI: every field of a harel_archived
// reaches JS (the optional times as null), the pages follow their cursor, the option and
// the look's arguments reach the library and its refusals come back as HAREL_ERR_ARGUMENT
// with its message, the look runs on the pool. What the archive keeps and when it prunes
// is the Rust contract's to test.

const assert = require('node:assert/strict');
const { test } = require('node:test');
const { Transport, HarelError, shardOf } = require('..');
const { scratch, manualClock, rejectsWith, holdWriteLock, runPython } = require('./helpers');

const box = scratch();
const DAY = 86400;
const TEN_YEARS = 315360000;
const EMPTY = { messages: [], next: null };

/** Every item of every page of `t.archive(options)` with pages of `limit`, and the pages' count. */
async function walk(t, options, limit) {
  const items = [];
  let pages = 0;
  for (let cursor = null; ; ) {
    const page = await t.archive({ ...options, limit, cursor });
    pages += 1;
    assert.ok(page.messages.length <= limit);
    items.push(...page.messages);
    if (page.next === null) return { items, pages };
    assert.equal(typeof page.next, 'string');
    cursor = page.next;
  }
}

/** Claims and acks every message there is, one at a time; the leases in claim order. */
async function drain(t, worker = 'w') {
  const leases = [];
  for (let lease; (lease = await t.claim(worker)) !== null; ) {
    await t.ack(lease);
    leases.push(lease);
  }
  return leases;
}

test('every field reaches JS: headers, two claims, the acking worker, the times by the clock', async () => {
  const clock = manualClock(1000);
  let reads = 0;
  const counted = () => {
    reads += 1;
    return clock.fn();
  };
  const t = await Transport.open(box.db(), { clock: counted, archiveRetention: DAY });
  const headers = [
    ['traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'], ['tenant', 'été 🦀'], ['tenant', 'b'],
  ];
  const { seq } = await t.publishWith('order-17', { kind: 'order.placed', total: 12 }, { headers });
  clock.advance(5); // 1005
  const first = await t.claim('first-worker');
  assert.equal(first.seq, seq);
  clock.advance(1); // 1006
  await t.nack(first);
  assert.deepEqual(await t.archive(), EMPTY, 'a nack archives nothing');
  clock.advance(4); // 1010
  const again = await t.claim('second-worker', { visibility: 60 });
  assert.equal(again.attempts, 2);
  clock.advance(2.5); // 1012.5
  await t.ack(again);

  const page = await t.archive();
  assert.equal(page.next, null);
  assert.equal(page.messages.length, 1);
  const [a] = page.messages;
  assert.deepEqual(a, {
    seq,
    groupId: 'order-17',
    event: { kind: 'order.placed', total: 12 },
    eventJson: '{"kind":"order.placed","total":12}',
    headers,
    attempts: 2,
    workerId: 'second-worker',
    publishedAt: 1000,
    claimedAt: 1010,
    ackedAt: 1012.5,
    shard: 0,
  });
  assert.deepEqual(Object.keys(a), [
    'seq', 'groupId', 'event', 'eventJson', 'headers', 'attempts', 'workerId', 'publishedAt', 'claimedAt', 'ackedAt',
    'shard',
  ]);
  for (const frozen of [page, page.messages, a, a.headers, a.headers[0]]) assert.ok(Object.isFrozen(frozen));
  assert.equal(Object.getPrototypeOf(a), Object.prototype, 'a plain object');
  // the group's history: the same one message; the look reads no clock (it stays concurrent)
  const before = reads;
  assert.deepEqual(await t.archive({ groupId: 'order-17' }), page);
  assert.deepEqual(await t.archive({ groupId: 'order-18' }), EMPTY);
  assert.equal(reads, before, 'archive never reads the clock');

  // no headers: an empty list; the event as published, text and parsed
  await t.publish('plain', '[1, "two"]');
  await t.ack(await t.claim('w'));
  const [plain] = (await t.archive({ groupId: 'plain' })).messages;
  assert.deepEqual([plain.headers, plain.event, plain.eventJson, plain.attempts], [[], [1, 'two'], '[1, "two"]', 1]);
  assert.ok(Object.isFrozen(plain.headers));
  await t.close();
});

test('what another program wrote: publish and claim times unknown (null), NUL bytes kept', async () => {
  const db = box.db();
  const clock = manualClock(2000);
  const t = await Transport.open(db, { clock: clock.fn, archiveRetention: DAY });
  // written as harel's Python transports write: no publish time; a group id and an event with NUL bytes
  const group = 'tenant\0north-é';
  const event = '{"kind":"a","note":"x\0y"}';
  const [seq] = await runPython(`
import json, sqlite3, sys
group_id, event = json.load(sys.stdin)
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
db.execute("BEGIN IMMEDIATE")
seq = db.execute("INSERT INTO harel_transport_messages (group_id, event) VALUES (?, ?)", (group_id, event)).lastrowid
db.execute("INSERT OR IGNORE INTO harel_transport_groups (group_id, priority, routing_key) VALUES (?, 0, NULL)",
           (group_id,))
db.execute("COMMIT")
print(json.dumps([seq]))
`, db, [group, event]);
  const lease = await t.claim('w');
  assert.equal(lease.seq, seq);
  // a claim the queue has no time of (harel's own claims leave claimed_at as it is)
  await runPython(`
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=30)
db.execute("UPDATE harel_transport_messages SET claimed_at = NULL")
db.commit()
print("[]")
`, db);
  clock.advance(3);
  await t.ack(lease);
  const [a] = (await t.archive()).messages;
  assert.deepEqual(
    [a.seq, a.groupId, a.eventJson, a.event, a.publishedAt, a.claimedAt, a.ackedAt, a.workerId, a.attempts],
    [seq, group, event, undefined, null, null, 2003, 'w', 1],
  );
  // a group id with a NUL cannot be named (the C string would end there): the binding refuses it
  await rejectsWith(assert, t.archive({ groupId: group }), 'HAREL_ERR_ARGUMENT', /groupId must not contain a NUL/);
  assert.deepEqual(await t.archive({ groupId: 'tenant' }), EMPTY);
  await t.close();
});

test('pages follow their cursor in seq order; a group\'s history in order; every ack call archives', async () => {
  const t = await Transport.open(box.db(), { archiveRetention: DAY });
  // eight of group a and four of b, interleaved
  const published = [];
  for (let i = 0; i < 12; i++) {
    const groupId = i % 5 < 3 ? 'a' : 'b';
    const { seq } = await t.publishWith(groupId, { n: i }, { headers: [['n', String(i)]] });
    published.push({ groupId, n: i, seq });
  }
  // each ack call: ack, ackMany, ackAndClaim, ackAndClaimMany
  const one = await t.claim('w-ack');
  await t.ack(one);
  const two = await t.claimMany('w-many', { max: 2 });
  assert.ok((await t.ackMany(two)).every((o) => o.ok));
  let lease = await t.claim('w-and');
  lease = await t.ackAndClaim(lease, 'w-and');
  await t.ack(lease);
  const batch = await t.claimMany('w-batch', { max: 2 });
  const next = await t.ackAndClaimMany(batch, 'w-batch', { max: 2 });
  assert.ok(next.acked.every((o) => o.ok));
  await t.ackMany(next.leases);
  await drain(t);
  const now = Date.now() / 1000;

  // every group's: pages of 5 (three of them), each item once, in seq order
  const all = await walk(t, {}, 5);
  assert.equal(all.pages, 3);
  assert.deepEqual(all.items.map((m) => m.seq), published.map((p) => p.seq));
  assert.deepEqual(
    all.items.map((m) => [m.groupId, m.event.n, m.headers]),
    published.map((p) => [p.groupId, p.n, [['n', String(p.n)]]]),
  );
  for (const m of all.items) {
    assert.equal(m.attempts, 1);
    const ordered = m.publishedAt <= m.claimedAt && m.claimedAt <= m.ackedAt && m.ackedAt <= now + 1;
    assert.ok(ordered, `ordered, by the system clock: ${m.publishedAt} ${m.claimedAt} ${m.ackedAt} ${now}`);
    assert.ok(m.publishedAt > now - 60, 'close to now');
  }
  const workers = new Set(all.items.map((m) => m.workerId));
  for (const worker of ['w-ack', 'w-many', 'w-and', 'w-batch']) {
    assert.ok(workers.has(worker), `${worker} acked and archived`);
  }
  // exactly one page when the limit is its length; the largest limit
  assert.equal((await t.archive({ limit: 12 })).next, null);
  assert.equal((await t.archive({ limit: 10000 })).messages.length, 12);
  assert.equal((await t.archive({ limit: 11 })).messages.length, 11);

  // one group's history, in order, a page of 2 at a time
  for (const groupId of ['a', 'b']) {
    const history = await walk(t, { groupId }, 2);
    const mine = published.filter((p) => p.groupId === groupId);
    assert.equal(history.pages, Math.ceil(mine.length / 2));
    const got = history.items.map((m) => [m.seq, m.event.n]);
    assert.deepEqual(got, mine.map((p) => [p.seq, p.n]), `${groupId}'s history`);
  }
  // a cursor of one page goes on from there, for the listing it came from; null and undefined are none
  const firstA = await t.archive({ groupId: 'a', limit: 3 });
  assert.deepEqual(firstA.messages.map((m) => m.event.n), [0, 1, 2]);
  const restA = await t.archive({ groupId: 'a', cursor: firstA.next });
  assert.deepEqual(restA.messages.map((m) => m.event.n), [5, 6, 7, 10, 11]);
  assert.deepEqual(await t.archive({ groupId: null, cursor: null, limit: undefined }), await t.archive());
  assert.deepEqual(await t.archive({ groupId: 'nobody' }), EMPTY);
  await t.close();
});

test('off by default: acks delete, nothing is archived; the look reads what another transport archived', async () => {
  const db = box.db();
  const off = await Transport.open(db);
  assert.deepEqual(await off.archive(), EMPTY, 'nothing archived yet');
  await off.publish('g', { n: 1 });
  await drain(off, 'off');
  await off.publish('g', { n: 2 });
  await off.deadLetter(await off.claim('off'), 'poison');
  assert.deepEqual(await off.archive(), EMPTY, 'no option: nothing archived');
  assert.equal((await off.stats()).messages, 0, 'the ack deleted');

  // beside it, a transport with the option: its acks are archived, the other's are not
  const on = await Transport.open(db, { archiveRetention: 3600 });
  await off.publish('g', { n: 3 });
  await off.publish('g', { n: 4 });
  await on.ack(await on.claim('on'));
  await off.ack(await off.claim('off'));
  const expected = [[3, 'on']];
  assert.deepEqual((await on.archive()).messages.map((m) => [m.event.n, m.workerId]), expected);
  const read = (await off.archive()).messages.map((m) => [m.event.n, m.workerId]);
  assert.deepEqual(read, expected, 'read whoever wrote it');
  // a dead letter, a lost lease's ack: not archived
  await on.publish('g', { n: 5 });
  await on.deadLetter(await on.claim('on'), 'poison');
  await on.publish('g', { n: 6 });
  const lapsed = await on.claim('on', { visibility: 0.001 });
  await new Promise((resolve) => setTimeout(resolve, 20));
  const taken = await off.claim('off');
  await rejectsWith(assert, on.ack(lapsed), 'HAREL_ERR_LEASE_LOST');
  await off.ack(taken);
  assert.deepEqual((await on.archive()).messages.map((m) => m.event.n), [3]);
  await Promise.all([on.close(), off.close()]);
});

test('archiveRetention reaches the library: an archived message is pruned once older than it', async () => {
  const clock = manualClock(10_000);
  const t = await Transport.open(box.db(), { clock: clock.fn, archiveRetention: 60 });
  await t.publish('g', { n: 1 });
  await t.ack(await t.claim('w'));
  clock.advance(60);
  await t.publish('g', { n: 2 });
  await t.ack(await t.claim('w'));
  const kept = (await t.archive()).messages.map((m) => [m.event.n, m.ackedAt]);
  assert.deepEqual(kept, [[1, 10_000], [2, 10_060]], 'kept its 60 s');
  clock.advance(1);
  await t.publish('g', { n: 3 });
  await t.ack(await t.claim('w'));
  const pruned = (await t.archive()).messages.map((m) => m.event.n);
  assert.deepEqual(pruned, [2, 3], 'the next ack pruned what was older than 60 s');
  await t.close();
  // at most ten years, a fraction of a second: both taken
  for (const retention of [TEN_YEARS, 0.5]) {
    await (await Transport.open(box.db(), { archiveRetention: retention })).close();
  }
});

test('bad input rejects with HAREL_ERR_ARGUMENT: the library\'s messages, the binding\'s checks', async () => {
  // the option: the library's checks, naming it by its C name
  const retentions = [
    [0, /archive_retention is 0; it must be a finite number of seconds > 0/],
    [-1, /archive_retention is -1; it must be a finite number of seconds > 0/],
    [NaN, /archive_retention is NaN; it must be a finite number of seconds > 0/],
    [Infinity, /archive_retention is inf; it must be a finite number of seconds > 0/],
    [-Infinity, /archive_retention is -inf; it must be a finite number of seconds > 0/],
    [400000000, /archive_retention is 400000000; at most 315360000 \(ten years\)/],
    [TEN_YEARS + 1, /archive_retention is 315360001; at most 315360000 \(ten years\)/],
  ];
  for (const [bad, pattern] of retentions) {
    const options = { archiveRetention: bad };
    await rejectsWith(assert, Transport.open(box.db(), options), 'HAREL_ERR_ARGUMENT', pattern);
    await rejectsWith(assert, Transport.openShards([box.db(), box.db()], options), 'HAREL_ERR_ARGUMENT', pattern);
  }
  // the binding's: what is not a number never reaches the library
  for (const bad of ['30', '1d', null, true, 10n, {}]) {
    const opening = Transport.open(box.db(), { archiveRetention: bad });
    await rejectsWith(assert, opening, 'HAREL_ERR_ARGUMENT', /archiveRetention must be a number of seconds/);
  }
  const misnamed = Transport.open(box.db(), { archive: 60 });
  await rejectsWith(assert, misnamed, 'HAREL_ERR_ARGUMENT', /unknown option "archive"/);

  // the look
  const t = await Transport.open(box.db(), { archiveRetention: DAY, maxAttempts: 0 });
  for (let i = 0; i < 3; i++) await t.publish(`g${i}`, { i });
  for (let i = 0; i < 3; i++) await t.deadLetter(await t.claim('w'), 'poison');
  for (let i = 0; i < 3; i++) await t.publish(`h${i}`, { i });
  assert.deepEqual(await t.archive({ limit: 1 }), EMPTY, 'nothing archived: one empty page');
  const groupsCursor = (await t.groups({ limit: 1 })).next;
  await drain(t);
  const cursor = (await t.archive({ limit: 1 })).next;
  const deadCursor = (await t.deadLetters({ limit: 1 })).next;
  for (const c of [cursor, deadCursor, groupsCursor]) assert.equal(typeof c, 'string');
  // the library's
  const refused = [
    [() => t.archive({ groupId: '' }), /group_id is empty/],
    [() => t.archive({ limit: 0 }), /limit is 0; it must be 1\.\.10000/],
    [() => t.archive({ limit: 10001 }), /limit is 10001; it must be 1\.\.10000/],
    [() => t.archive({ cursor: deadCursor }), /is not a cursor of this listing/],
    [() => t.archive({ cursor: groupsCursor }), /is not a cursor of this listing/],
    [() => t.archive({ cursor: 'bogus' }), /is not a cursor of this listing/],
    [() => t.archive({ cursor: '' }), /cursor "" is not a cursor of this listing/],
    [() => t.deadLetters({ cursor }), /cursor/], // and the other way round
  ];
  // the binding's: what koffi would change, and what is not an option
  refused.push(
    [() => t.archive({ groupId: 'g\0h' }), /groupId must not contain a NUL/],
    [() => t.archive({ groupId: 17 }), /groupId must be a string or null/],
    [() => t.archive({ cursor: 17 }), /cursor must be a string or null/],
    [() => t.archive({ limit: -1 }), /limit must be an integer \(1\.\.10000\)/],
    [() => t.archive({ limit: 1.5 }), /limit must be an integer/],
    [() => t.archive({ limit: NaN }), /limit must be an integer/],
    [() => t.archive({ limit: '10' }), /limit must be an integer/],
    [() => t.archive('g'), /options must be an object/],
    [() => t.archive({ group: 'g' }), /unknown option "group"/],
    [() => t.archive({ groupId: '\ud800' }), /groupId is not valid Unicode/],
  );
  for (const [call, pattern] of refused) {
    const error = await rejectsWith(assert, call(), 'HAREL_ERR_ARGUMENT', pattern);
    assert.ok(error instanceof HarelError);
  }
  assert.equal((await t.archive({ cursor })).messages.length, 2, 'its own cursor works after all that');
  await t.close();
  await rejectsWith(assert, t.archive(), 'HAREL_ERR_CLOSED', /the transport is closed/);
});

test('createSchema false: the archive on, a missing table fails open naming it; off, the look is empty', async () => {
  const db = box.db();
  await (await Transport.open(db)).close();
  await runPython(`
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=30)
db.execute("DROP TABLE harel_transport_archive")
db.commit()
print("[]")
`, db);
  const on = Transport.open(db, { createSchema: false, archiveRetention: DAY });
  await rejectsWith(assert, on, 'HAREL_ERR_DATABASE', /the table harel_transport_archive/);
  const off = await Transport.open(db, { createSchema: false });
  await off.publish('g', {});
  await off.ack(await off.claim('w'));
  assert.deepEqual(await off.archive(), EMPTY);
  await off.close();
});

test('a sharded queue: each archived message\'s shard is shardOf of its group, shard after shard', async () => {
  const databases = [0, 1, 2].map((i) => box.db(`shard${i}`));
  const clock = manualClock(5000);
  const t = await Transport.openShards(databases, { clock: clock.fn, archiveRetention: DAY });
  const by = Array.from({ length: 3 }, () => []);
  for (let i = 0; by.some((ids) => ids.length < 2); i++) {
    const id = `order-${i}`;
    const shard = shardOf(id, 3);
    if (by[shard].length < 2) by[shard].push(id);
  }
  const groups = by.flat();
  for (const id of groups) {
    await t.publish(id, { id, n: 1 }, { headers: [['shard', String(shardOf(id, 3))]] });
    await t.publish(id, { id, n: 2 });
  }
  clock.advance(1);
  const acked = await drain(t, 'w');
  assert.equal(acked.length, groups.length * 2);

  const { items, pages } = await walk(t, {}, 1);
  assert.equal(pages, groups.length * 2);
  const names = (list) => list.map((x) => `${x.groupId}/${x.event.n}`).sort();
  assert.deepEqual(names(items), names(acked));
  for (const m of items) {
    assert.equal(m.shard, shardOf(m.groupId, 3), m.groupId);
    assert.deepEqual([m.workerId, m.publishedAt, m.ackedAt], ['w', 5000, 5001]);
    assert.deepEqual(m.headers, m.event.n === 1 ? [['shard', String(m.shard)]] : []);
  }
  const shards = items.map((m) => m.shard);
  assert.deepEqual(shards, [...shards].sort(), 'shard after shard');
  assert.deepEqual(new Set(shards), new Set([0, 1, 2]), 'every shard listed');
  // one group's history: on its shard, in order
  for (const id of [groups[0], groups[5]]) {
    const history = (await t.archive({ groupId: id })).messages;
    const shard = shardOf(id, 3);
    assert.deepEqual(history.map((m) => [m.groupId, m.event.n, m.shard]), [[id, 1, shard], [id, 2, shard]]);
    assert.ok(history[0].seq < history[1].seq);
  }
  await t.close();
  // another prefix: other tables, nothing archived there
  const other = await Transport.openShards(databases, { prefix: 'app' });
  assert.deepEqual(await other.archive(), EMPTY);
  await other.close();
});

test('the look runs on the thread pool: the event loop goes on while it waits for the handle', async () => {
  const db = box.db();
  const t = await Transport.open(db, { busyTimeout: 30, archiveRetention: DAY });
  await t.publish('g', { n: 1 });
  const holder = await holdWriteLock(db, 1.5);
  // a claim waits for the write lock on a pool thread, holding the handle: the look after
  // it waits its turn on another pool thread
  const claim = t.claim('w');
  await new Promise((resolve) => setTimeout(resolve, 100));
  let ticks = 0;
  const timer = setInterval(() => {
    ticks += 1;
  }, 10);
  const started = performance.now();
  let page;
  try {
    page = await t.archive();
  } finally {
    clearInterval(timer);
  }
  const elapsed = performance.now() - started;
  await holder.released();
  assert.deepEqual(page, EMPTY);
  assert.ok(elapsed >= 800, `the look waited for the claim (${elapsed.toFixed(0)} ms)`);
  assert.ok(ticks >= 20, `the timer kept firing while the look waited: ${ticks} ticks in ${elapsed.toFixed(0)} ms`);
  await t.ack(await claim);
  assert.equal((await t.archive()).messages.length, 1);
  await t.close();
});
