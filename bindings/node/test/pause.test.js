'use strict';
// Pause and resume (issue 38): pause(target) and resume(target) (harel_transport_pause and
// _resume, target { queue: true }, { groupId } or { routingKey } as the C kind and name),
// pauses() (harel_transport_pauses, its list copied out and freed), the group state
// 'paused' in groups() and its filter, stats().paused and each level's. Each call's
// mapping onto the C ABI: every kind, both outcomes, the JS clock, a sharded queue, a queue
// without the pauses table, bad input (the binding's and the library's) leaving the queue
// as it was, many calls in flight at once, off the event loop. The queue's rules themselves
// are the Rust contract's (tests/common/contract_pause.rs).

const assert = require('node:assert/strict');
const { test } = require('node:test');
const { Transport, shardOf } = require('..');
const { scratch, manualClock, rejectsWith, holdWriteLock, runPython } = require('./helpers');

const box = scratch();

/** The groups every claim hands out until none is left (each acked), in claim order. */
async function drain(t, options) {
  const served = [];
  for (let lease = await t.claim('w', options); lease !== null; lease = await t.claim('w', options)) {
    served.push([lease.groupId, lease.event]);
    await t.ack(lease);
  }
  return served;
}

/** The sorted ids of the groups in `served`, each once. */
function groupsOf(served) {
  return [...new Set(served.map(([groupId]) => groupId))].sort();
}

/** The state of every group, by id. */
async function states(t) {
  return Object.fromEntries((await t.groups()).groups.map((g) => [g.groupId, g.state]));
}

test('pause and resume a group: true when new, false when already; its messages wait, in order', async () => {
  const t = await Transport.open(box.db());
  await t.publish('p', { n: 0 }, { priority: 2 });
  await t.publish('p', { n: 1 }, { priority: 2 });
  await t.publish('q', { n: 2 });
  assert.equal(await t.pause({ groupId: 'p' }), true, 'a new pause');
  assert.equal(await t.pause({ groupId: 'p' }), false, 'paused already');
  await t.publish('p', { n: 3 }, { priority: 2 }); // publishes go on
  assert.deepEqual(await states(t), { p: 'paused', q: 'ready' });
  assert.equal(await t.claim('w', { minPriority: 2 }), null, 'a floor claim passes it too');
  assert.deepEqual(await drain(t), [['q', { n: 2 }]], 'only the other group');

  assert.equal(await t.resume({ groupId: 'p' }), true);
  assert.equal(await t.resume({ groupId: 'p' }), false, 'resumed already: nothing changed');
  assert.equal(await t.resume({ groupId: 'never-paused' }), false);
  assert.deepEqual(await drain(t), [['p', { n: 0 }], ['p', { n: 1 }], ['p', { n: 3 }]], 'in order');
  assert.deepEqual(await t.pauses(), []);

  // a group paused before it has messages, and a lease taken before the pause
  assert.equal(await t.pause({ groupId: 'later' }), true);
  await t.publish('later', { n: 4 });
  assert.equal(await t.claim('w'), null);
  await t.resume({ groupId: 'later' });
  const lease = await t.claim('w');
  assert.equal(lease.groupId, 'later');
  await t.publish('later', { n: 5 });
  await t.pause({ groupId: 'later' });
  const [listed] = (await t.groups()).groups;
  assert.deepEqual([listed.state, listed.holder], ['paused', 'w'], 'paused, its holder shown');
  await t.extend(lease, 30);
  await t.ack(lease);
  assert.equal(await t.claim('w'), null, 'the ack leaves the group paused');
  await t.resume({ groupId: 'later' });
  assert.deepEqual(await drain(t), [['later', { n: 5 }]]);
  await t.close();
});

test('pause and resume a routing key and the queue; pauses() lists them, the queue\'s first', async () => {
  const clock = manualClock(1000);
  const t = await Transport.open(box.db(), { clock: clock.fn });
  await t.publish('k1', { n: 0 }, { routingKey: 'k' });
  await t.publish('other', { n: 1 }, { routingKey: 'j' });
  assert.equal(await t.pause({ routingKey: 'k' }), true);
  assert.equal(await t.pause({ routingKey: 'k' }), false);
  await t.publish('k2', { n: 2 }, { routingKey: 'k' }); // made while paused: paused too
  assert.equal(await t.claim('w', { routingKeys: ['k'] }), null);
  assert.deepEqual(await states(t), { k1: 'paused', k2: 'paused', other: 'ready' });

  clock.now = 1010;
  assert.equal(await t.pause({ queue: true }), true);
  assert.equal(await t.pause({ queue: true }), false);
  await t.publish('new', { n: 3 });
  clock.now = 1020;
  assert.equal(await t.pause({ groupId: 'new' }), true);
  assert.equal(await t.pause({ groupId: 'k' }), true, 'a group id and a routing key apart');
  assert.equal(await t.claim('w'), null, 'the whole queue');
  assert.deepEqual(await states(t), { k1: 'paused', k2: 'paused', new: 'paused', other: 'paused' });

  const pauses = await t.pauses();
  assert.deepEqual(pauses, [
    { kind: 'queue', name: '', pausedAt: 1010 },
    { kind: 'group', name: 'k', pausedAt: 1020 },
    { kind: 'group', name: 'new', pausedAt: 1020 },
    { kind: 'routingKey', name: 'k', pausedAt: 1000 },
  ], 'the queue\'s first, then by kind and name; pausedAt by the transport\'s clock');
  assert.ok(Object.isFrozen(pauses) && pauses.every((p) => Object.isFrozen(p)));
  assert.deepEqual(Object.keys(pauses[0]), ['kind', 'name', 'pausedAt']);

  clock.now = 1030;
  assert.equal(await t.resume({ queue: true }), true);
  assert.equal(await t.resume({ queue: true }), false);
  assert.deepEqual(await states(t), { k1: 'paused', k2: 'paused', new: 'paused', other: 'ready' },
    'a group paused on its own, or by its routing key, stays paused');
  assert.deepEqual(await drain(t), [['other', { n: 1 }]]);
  assert.equal(await t.resume({ routingKey: 'k' }), true);
  assert.deepEqual(groupsOf(await drain(t, { routingKeys: ['k'] })), ['k1', 'k2']);
  assert.equal(await t.resume({ routingKey: 'k' }), false);
  await t.resume({ groupId: 'new' });
  await t.resume({ groupId: 'k' });
  assert.deepEqual(await drain(t), [['new', { n: 3 }]]);
  assert.deepEqual(await t.pauses(), []);
  await t.close();
});

test('group ids and routing keys reach the library whole: several UTF-8 bytes, a long name', async () => {
  const t = await Transport.open(box.db());
  const ids = ['commande-é', '注文-17', 'emoji-🎉', 'x'.repeat(1000)];
  for (const id of ids) {
    await t.publish(id, {}, { routingKey: `rk-${id}` });
    assert.equal(await t.pause({ groupId: id }), true);
    assert.equal(await t.pause({ routingKey: `rk-${id}` }), true);
  }
  const listed = (await t.pauses()).map((p) => [p.kind, p.name]);
  const byName = (a, b) => (Buffer.compare(Buffer.from(a), Buffer.from(b)));
  assert.deepEqual(listed, [
    ...ids.slice().sort(byName).map((id) => ['group', id]),
    ...ids.map((id) => `rk-${id}`).sort(byName).map((key) => ['routingKey', key]),
  ]);
  assert.deepEqual(Object.values(await states(t)), ids.map(() => 'paused'));
  for (const id of ids) assert.equal(await t.resume({ groupId: id }), true);
  assert.equal(await t.claim('w'), null, 'still paused by their routing keys');
  for (const id of ids) assert.equal(await t.resume({ routingKey: `rk-${id}` }), true);
  assert.deepEqual(groupsOf(await drain(t)), ids.slice().sort());
  await t.close();
});

test('the paused state: the groups() filter, stats().paused, each level\'s paused count', async () => {
  const clock = manualClock(1000);
  const t = await Transport.open(box.db(), { clock: clock.fn });
  await t.publish('leased', {}, { priority: 1 });
  const lease = await t.claim('w');
  assert.equal(lease.groupId, 'leased');
  await t.publish('ready', {}, { priority: 1 });
  await t.publish('p2', {}, { priority: 2 });
  await t.publish('p2', {});
  await t.publish('p0', {});
  await t.publishWith('delayed', {}, { delay: 60, priority: 2 });
  await t.pause({ groupId: 'p2' });
  await t.pause({ groupId: 'p0' });

  const paused = await t.groups({ state: 'paused' });
  assert.deepEqual(paused.groups.map((g) => [g.groupId, g.state, g.priority, g.depth]),
    [['p0', 'paused', 0, 1], ['p2', 'paused', 2, 2]], 'each at its own priority');
  assert.equal(paused.next, null);
  assert.deepEqual((await t.groups({ state: 'ready' })).groups.map((g) => g.groupId), ['ready']);
  assert.deepEqual((await t.groups({ state: 'delayed' })).groups.map((g) => g.groupId), ['delayed']);
  const limited = await t.groups({ state: 'paused', limit: 1 });
  assert.deepEqual(limited.groups.map((g) => g.groupId), ['p0']);
  const rest = await t.groups({ state: 'paused', cursor: limited.next });
  assert.deepEqual(rest.groups.map((g) => g.groupId), ['p2'], 'the filter pages');

  let stats = await t.stats();
  const counts = (x) => [x.groups, x.ready, x.leased, x.parked, x.delayed, x.paused];
  assert.deepEqual(counts(stats), [5, 1, 1, 0, 1, 2]);
  assert.ok(Object.keys(stats).indexOf('paused') === Object.keys(stats).indexOf('delayed') + 1, 'beside delayed');
  // a delayed group (level 2) and paused ones (levels 0 and 2): each level's paused count
  // from the library, delayed the rest without them
  assert.deepEqual(stats.byPriority.map((l) => [l.priority, l.groups, l.delayed, l.paused]),
    [[0, 1, 0, 1], [1, 2, 0, 0], [2, 2, 1, 1]], 'a paused group in its level\'s paused only');
  const whole = (l) => l.ready + l.leased + l.parked + l.delayed + l.paused === l.groups;
  assert.ok(stats.byPriority.every(whole));

  await t.resume({ groupId: 'p0' });
  stats = await t.stats();
  assert.deepEqual([stats.ready, stats.delayed, stats.paused], [2, 1, 1]);
  assert.deepEqual(stats.byPriority.map((l) => [l.priority, l.groups, l.ready, l.delayed, l.paused]),
    [[0, 1, 1, 0, 0], [1, 2, 1, 0, 0], [2, 2, 0, 1, 1]], 'p0 resumed: ready again');
  assert.ok(stats.byPriority.every((l) => Object.isFrozen(l)));
  await t.pause({ groupId: 'delayed' }); // its head is not due: paused, not delayed
  stats = await t.stats();
  assert.deepEqual([stats.delayed, stats.paused], [0, 2]);
  assert.deepEqual(stats.byPriority.map((l) => [l.priority, l.groups, l.ready, l.delayed, l.paused]),
    [[0, 1, 1, 0, 0], [1, 2, 1, 0, 0], [2, 2, 0, 0, 2]], 'a paused delayed group in paused only');
  assert.ok(stats.byPriority.every(whole));
  await t.resume({ groupId: 'delayed' });

  clock.now = 1100; // the delay has passed: no delayed group
  await t.pause({ queue: true });
  stats = await t.stats();
  assert.deepEqual([stats.ready, stats.leased, stats.delayed, stats.paused], [0, 0, 0, 5], 'the leased group too');
  assert.deepEqual(stats.byPriority.map((l) => [l.priority, l.groups, l.leased, l.delayed, l.paused]),
    [[0, 1, 0, 0, 1], [1, 2, 0, 0, 2], [2, 2, 0, 0, 2]], 'every group paused, the leased one too');
  assert.equal((await t.groups({ state: 'leased' })).groups.length, 0, 'a paused group is listed as paused only');

  await t.resume({ queue: true });
  await t.resume({ groupId: 'p2' });
  stats = await t.stats();
  assert.equal(stats.paused, 0);
  assert.ok(stats.byPriority.every((l) => l.paused === 0 && whole(l)));
  assert.deepEqual((await t.groups({ state: 'paused' })).groups, []);
  await t.ack(lease);
  await t.close();
});

test('pause and resume read the JS clock; pauses() does not', async () => {
  const clock = manualClock(5000);
  let reads = 0;
  const t = await Transport.open(box.db(), {
    clock: () => {
      reads += 1;
      return clock.now;
    },
  });
  const atOpen = reads;
  await t.pause({ groupId: 'g' });
  await t.resume({ groupId: 'g' });
  await t.pause({ queue: true });
  await t.resume({ routingKey: 'k' });
  assert.equal(reads, atOpen + 4);
  await t.pauses();
  assert.equal(reads, atOpen + 4, 'pauses() reads no clock');
  await assert.rejects(t.pause({ group: 'g' }), { code: 'HAREL_ERR_ARGUMENT' });
  assert.equal(reads, atOpen + 4, 'a target the binding refuses reads no clock');
  await t.close();
});

test('bad targets are HAREL_ERR_ARGUMENT and leave the queue as it was', async () => {
  const t = await Transport.open(box.db(), { clock: manualClock(1000).fn });
  await t.publish('g', { n: 1 }, { routingKey: 'k' });
  await t.pause({ groupId: 'kept' });
  const statsBefore = await t.stats();
  const pausesBefore = await t.pauses();
  const groupsBefore = await t.groups();

  // the library's: an empty group id or routing key, its message naming it
  for (const [target, pattern] of [
    [{ groupId: '' }, /group_id is empty/],
    [{ routingKey: '' }, /routing_key is empty/],
  ]) {
    for (const call of [() => t.pause(target), () => t.resume(target)]) {
      const e = await rejectsWith(assert, call(), 'HAREL_ERR_ARGUMENT', pattern);
      assert.equal(e.status, -1);
    }
  }

  // the binding's: what has no C kind and name, refused before any call
  const shapes = '\\{ queue: true \\}, \\{ groupId \\} or \\{ routingKey \\}';
  const binding = [
    [undefined, new RegExp(`^target must be ${shapes}, got undefined$`)],
    [null, /^target must be .*, got null$/],
    ['queue', /^target must be .*, got the string "queue"$/],
    ['g', /^target must be .*, got the string "g"$/],
    [42, /^target must be .*, got number 42$/],
    [['g'], /^target must be .*, got an array$/],
    [{}, new RegExp(`^target must name exactly one: ${shapes}; it names none$`)],
    [{ groupId: undefined }, /it names none$/],
    [{ groupId: 'g', routingKey: 'k' }, /it names groupId and routingKey$/],
    [{ queue: true, groupId: 'g' }, /it names queue and groupId$/],
    [{ queue: true, groupId: 'g', routingKey: 'k' }, /it names queue and groupId and routingKey$/],
    [{ group: 'g' }, /^target: unknown option "group" \(known: queue, groupId, routingKey\)$/],
    [{ groupId: 'g', kind: 'group' }, /^target: unknown option "kind"/],
    [{ queue: false }, /^target\.queue must be true, got boolean false$/],
    [{ queue: 'yes' }, /^target\.queue must be true, got the string "yes"$/],
    [{ queue: 1 }, /^target\.queue must be true, got number 1$/],
    [{ queue: null }, /^target\.queue must be true, got null$/],
    [{ groupId: null }, /^target\.groupId must be a string, got null$/],
    [{ groupId: 17 }, /^target\.groupId must be a string, got number 17$/],
    [{ routingKey: ['k'] }, /^target\.routingKey must be a string, got an array$/],
    [{ groupId: 'g\0' }, /^target\.groupId must not contain a NUL character$/],
    [{ routingKey: 'k\uD800' }, /^target\.routingKey is not valid Unicode/],
  ];
  for (const [target, pattern] of binding) {
    for (const call of [() => t.pause(target), () => t.resume(target)]) {
      await rejectsWith(assert, call(), 'HAREL_ERR_ARGUMENT', pattern);
    }
  }
  await rejectsWith(assert, t.pause(), 'HAREL_ERR_ARGUMENT', /got undefined/);

  // nothing changed: the same pause, the same groups; g is still served
  assert.deepEqual(await t.pauses(), pausesBefore);
  assert.deepEqual(await t.groups(), groupsBefore);
  const statsAfter = await t.stats();
  assert.deepEqual(statsAfter, statsBefore);
  assert.equal(statsAfter.paused, 0, '"kept" has no messages: no group to count');
  assert.deepEqual(await drain(t), [['g', { n: 1 }]]);
  await t.close();
});

test('HAREL_ERR_CLOSED for pause, resume and pauses, even with bad arguments', async () => {
  const t = await Transport.open(box.db());
  await t.close();
  for (const call of [
    () => t.pause({ queue: true }), () => t.resume({ groupId: 'g' }), () => t.pauses(),
    () => t.pause({ group: 'g' }), () => t.resume(null), () => t.pause({ routingKey: '' }),
  ]) {
    const e = await rejectsWith(assert, call(), 'HAREL_ERR_CLOSED', /the transport is closed/);
    assert.equal(e.status, undefined);
  }
});

test('no pauses table (createSchema false): pause and resume HAREL_ERR_DATABASE, pauses() []', async () => {
  const db = box.db();
  const first = await Transport.open(db);
  await first.publish('g', { n: 1 });
  await first.close();
  await runPython([
    'import json, sqlite3, sys',
    'db = sqlite3.connect(sys.argv[1])',
    "db.executescript('DROP TRIGGER harel_transport_groups_paused_at_birth; '",
    "                 'DROP TRIGGER harel_transport_groups_paused_turn; DROP TABLE harel_transport_pauses;')",
    'db.close()',
    'print(json.dumps(True))',
  ].join('\n'), db);
  const t = await Transport.open(db, { createSchema: false });
  const missing = /the table harel_transport_pauses or its triggers are missing/;
  const paused = await rejectsWith(assert, t.pause({ groupId: 'g' }), 'HAREL_ERR_DATABASE', missing);
  assert.match(paused.message, /^pause: /);
  const resumed = await rejectsWith(assert, t.resume({ queue: true }), 'HAREL_ERR_DATABASE', missing);
  assert.match(resumed.message, /^resume: /);
  assert.deepEqual(await t.pauses(), []);
  assert.equal((await t.stats()).paused, 0);
  assert.deepEqual(await drain(t), [['g', { n: 1 }]], 'the queue works otherwise');
  await t.close();
});

test('a sharded queue: pause and resume act on every shard, the list and the counts merge them', async () => {
  const databases = [0, 1, 2].map((i) => box.db(`shard${i}`));
  const t = await Transport.openShards(databases);
  const ids = [];
  for (let i = 0; new Set(ids.map((id) => shardOf(id, 3))).size < 3 || ids.length < 6; i++) ids.push(`g${i}`);
  await t.publishMany(ids.map((groupId) => ({ groupId, event: {} })));
  assert.equal(await t.pause({ queue: true }), true);
  assert.equal(await t.pause({ queue: true }), false, 'on every shard already');
  assert.equal(await t.pause({ groupId: ids[0] }), true);
  assert.deepEqual((await t.pauses()).map((p) => [p.kind, p.name]), [['queue', ''], ['group', ids[0]]], 'one each');
  assert.equal((await t.stats()).paused, ids.length);
  const paused = (await t.groups({ state: 'paused' })).groups;
  assert.deepEqual(paused.map((g) => [g.groupId, g.shard]).sort(), ids.map((id) => [id, shardOf(id, 3)]).sort());
  assert.equal(await t.claim('w'), null);
  assert.equal(await t.resume({ queue: true }), true);
  assert.equal(await t.resume({ queue: true }), false);
  assert.deepEqual(groupsOf(await drain(t)), ids.slice(1).sort(), 'all but the group paused on its own');
  await t.resume({ groupId: ids[0] });
  assert.deepEqual(groupsOf(await drain(t)), [ids[0]]);
  await t.close();
});

test('many pauses, resumes and claims in flight at once: one new pause each, each message once, in order', async () => {
  const t = await Transport.open(box.db());
  const GROUPS = 40;
  const PER_GROUP = 5;
  const id = (i) => `g${String(i).padStart(2, '0')}`;
  const FREE = 8; // groups of routing key 'free', which no pause names
  const free = (i) => `free${i}`;
  const messages = [];
  for (let n = 0; n < PER_GROUP; n++) {
    for (let i = 0; i < GROUPS; i++) messages.push({ groupId: id(i), event: { n }, routingKey: `k${i % 4}` });
    for (let i = 0; i < FREE; i++) messages.push({ groupId: free(i), event: { n }, routingKey: 'free' });
  }
  await t.publishMany(messages);
  const served = [];
  const worker = async (w, options) => {
    for (let lease = await t.claim(`w${w}`, options); lease !== null; lease = await t.claim(`w${w}`, options)) {
      served.push([lease.groupId, lease.event.n]);
      await t.ack(lease);
    }
  };

  // every pause made three times at once, claims of the free groups in flight with them:
  // exactly one pause of each resolves true
  const held = Array.from({ length: 10 }, (_, i) => ({ groupId: id(i) })); // g00..g09, paused throughout
  const moving = Array.from({ length: 10 }, (_, i) => ({ groupId: id(10 + i) })); // g10..g19, resumed below
  const targets = [...held, ...moving, { routingKey: 'k3' }];
  const [firsts] = await Promise.all([
    Promise.all(targets.flatMap((target) => [0, 1, 2].map(() => t.pause(target)))),
    ...Array.from({ length: 8 }, (_, w) => worker(w, { routingKeys: ['free'] })),
  ]);
  for (let i = 0; i < targets.length; i++) {
    const news = firsts.slice(3 * i, 3 * i + 3).filter(Boolean).length;
    assert.equal(news, 1, `one new pause of ${JSON.stringify(targets[i])}`);
  }
  assert.equal((await t.pauses()).length, targets.length);

  // claims, acks and resumes in flight together; the groups paused throughout are never served
  const resumes = [...moving, { routingKey: 'k3' }].flatMap((target) => [t.resume(target), t.resume(target)]);
  const [resumed] = await Promise.all([Promise.all(resumes), ...Array.from({ length: 16 }, (_, w) => worker(w))]);
  for (let i = 0; i < resumed.length; i += 2) {
    assert.equal(resumed[i] + resumed[i + 1], 1, 'one of two resumes of a pause finds it');
  }
  await Promise.all(Array.from({ length: 4 }, (_, w) => worker(w))); // what a resume freed after the workers ended

  const heldIds = new Set(held.map((target) => target.groupId));
  assert.ok(served.every(([groupId]) => !heldIds.has(groupId)), 'no group paused throughout was served');
  assert.equal(served.length, (GROUPS - held.length + FREE) * PER_GROUP, 'every other message once');
  for (const groupId of [...Array.from({ length: GROUPS - held.length }, (_, i) => id(held.length + i)),
    ...Array.from({ length: FREE }, (_, i) => free(i))]) {
    const ns = served.filter(([g]) => g === groupId).map(([, n]) => n);
    assert.deepEqual(ns, [0, 1, 2, 3, 4], `${groupId}: each message once, in order`);
  }
  const stats = await t.stats();
  assert.deepEqual([stats.groups, stats.paused, stats.ready], [held.length, held.length, 0]);

  // resumed and stats looked at, all at once
  const [again] = await Promise.all([Promise.all(held.map((target) => t.resume(target))), t.stats(), t.pauses()]);
  assert.ok(again.every((r) => r === true));
  assert.deepEqual(await t.pauses(), []);
  assert.equal((await drain(t)).length, held.length * PER_GROUP);
  await t.close();
});

test('with a JS clock, pauses and resumes in flight at once each get the time read for them', async () => {
  let now = 2000;
  const t = await Transport.open(box.db(), { clock: () => (now += 1) });
  const before = now;
  const ids = Array.from({ length: 20 }, (_, i) => `g${String(i).padStart(2, '0')}`);
  const [paused] = await Promise.all([Promise.all(ids.map((groupId) => t.pause({ groupId }))), t.pauses()]);
  assert.ok(paused.every((r) => r === true));
  // each pause's read its own: 20 distinct times, one read per pause (pauses() reads none)
  const stamps = (await t.pauses()).map((p) => p.pausedAt).sort((a, b) => a - b);
  assert.deepEqual(stamps, Array.from({ length: 20 }, (_, i) => before + 1 + i));
  assert.ok((await Promise.all(ids.map((groupId) => t.resume({ groupId })))).every((r) => r === true));
  assert.equal(now, before + 40, 'one read per pause and per resume');
  await t.close();
});

test('pause and resume that wait for the write lock leave the event loop running', async () => {
  const db = box.db();
  const t = await Transport.open(db, { busyTimeout: 30 });
  await t.publish('g', { n: 1 });
  const holder = await holdWriteLock(db, 1.5);
  let ticks = 0;
  const timer = setInterval(() => {
    ticks += 1;
  }, 10);
  const started = performance.now();
  try {
    const [paused, pauses] = await Promise.all([t.pause({ groupId: 'g' }), t.pause({ queue: true })]);
    assert.deepEqual([paused, pauses], [true, true]);
  } finally {
    clearInterval(timer);
  }
  const elapsed = performance.now() - started;
  await holder.released();
  assert.ok(elapsed >= 1000, `the pauses waited for the lock (${elapsed.toFixed(0)} ms)`);
  assert.ok(ticks >= 20, `the timer kept firing while they waited: ${ticks} ticks in ${elapsed.toFixed(0)} ms`);
  assert.equal((await t.pauses()).length, 2);

  const again = await holdWriteLock(db, 1.5);
  ticks = 0;
  const timer2 = setInterval(() => {
    ticks += 1;
  }, 10);
  const resumedAt = performance.now();
  try {
    assert.deepEqual(await Promise.all([t.resume({ groupId: 'g' }), t.resume({ queue: true })]), [true, true]);
  } finally {
    clearInterval(timer2);
  }
  const waited = performance.now() - resumedAt;
  await again.released();
  assert.ok(waited >= 1000, `the resumes waited for the lock (${waited.toFixed(0)} ms)`);
  assert.ok(ticks >= 20, `the timer kept firing while they waited: ${ticks} ticks in ${waited.toFixed(0)} ms`);
  assert.deepEqual(await drain(t), [['g', { n: 1 }]]);
  await t.close();
});
