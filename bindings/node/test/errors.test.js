'use strict';
// Error codes and messages, bad input, closed transports.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const { test } = require('node:test');
const harel = require('..');
const { Transport, HarelError, STATUS } = harel;
const { scratch, manualClock, rejectsWith } = require('./helpers');

const box = scratch();

async function fresh(options = {}) {
  return Transport.open(box.db(), { clock: manualClock().fn, ...options });
}

test('HarelError is an Error with a code, a status and the message', async () => {
  const t = await fresh();
  const e = await rejectsWith(assert, t.publish('g', '{not json'), 'HAREL_ERR_ARGUMENT');
  assert.ok(e instanceof Error);
  assert.equal(e.name, 'HarelError');
  assert.equal(e.status, STATUS.HAREL_ERR_ARGUMENT);
  assert.match(e.message, /event_json is not valid JSON/, "the library's own message, read per handle");
  assert.match(String(e.stack), /HarelError/);
  await t.close();
});

test('the library checks ranges; its messages name the parameter', async () => {
  const t = await fresh();
  await t.publish('g', '{}');
  const cases = [
    [() => t.publish('', '{}'), /group_id/],
    [() => t.publish('g', '{}', { priority: 5 }), /priority/],
    [() => t.publish('g', '{}', { priority: -1 }), /priority/],
    [() => t.publish('g', '{}', { routingKey: '' }), /routing_key/],
    [() => t.publish('g', ''), /event_json/],
    [() => t.claim(''), /worker_id/],
    [() => t.claim('__parked__'), /__parked__|reserved/],
    [() => t.claim('w', { visibility: 0 }), /visibility/],
    [() => t.claim('w', { visibility: -1 }), /visibility/],
    [() => t.claim('w', { visibility: NaN }), /visibility/],
    [() => t.claim('w', { visibility: Infinity }), /visibility/],
    [() => t.claim('w', { minPriority: 7 }), /min_priority/],
    [() => t.claim('w', { routingKeys: ['ok', ''] }), /routing/],
    [() => t.nack({ seq: 1, groupId: 'g', workerId: 'w' }, { delay: -1 }), /delay/],
    [() => t.nack({ seq: 1, groupId: 'g', workerId: 'w' }, { delay: NaN }), /delay/],
    [() => t.ack({ seq: 1, groupId: '', workerId: 'w' }), /group_id/],
    [() => t.ack({ seq: 1, groupId: 'g', workerId: '__parked__' }), /worker_id|__parked__/],
  ];
  for (const [call, pattern] of cases) {
    await rejectsWith(assert, call(), 'HAREL_ERR_ARGUMENT', pattern);
  }
  // Nothing of that changed the queue: the one good message is still the only one.
  const lease = await t.claim('w');
  assert.equal(lease.eventJson, '{}');
  await t.ack(lease);
  assert.equal(await t.claim('w'), null);
  await t.close();
});

test('the binding refuses what koffi would silently change', async () => {
  const t = await fresh();
  const lease = { seq: 1, groupId: 'g', workerId: 'w' };
  const cases = [
    [() => t.publish('g\0hidden', '{}'), /groupId must not contain a NUL/],
    [() => t.publish('g', '{"a":"\0"}'), /event must not contain a NUL/],
    [() => t.publish('g', { a: 'x\0y' }), null], // JSON.stringify escapes it: fine, see below
    [() => t.publish('g', '{}', { routingKey: 'k\0' }), /routingKey/],
    [() => t.publish('g\uD800', '{}'), /lone surrogate/],
    [() => t.publish(42, '{}'), /groupId must be a string/],
    [() => t.publish('g', undefined), /event can't be turned into JSON/],
    [() => t.publish('g', () => 1), /event can't be turned into JSON/],
    [() => t.publish('g', { n: 1n }), /event can't be turned into JSON/],
    [() => t.publish('g', '{}', { priority: 1.5 }), /priority must be an integer/],
    [() => t.publish('g', '{}', { priority: '1' }), /priority must be an integer/],
    [() => t.publish('g', '{}', { priority: 2 ** 32 + 1 }), /priority must be an integer/],
    [() => t.publish('g', '{}', { prio: 1 }), /unknown option "prio"/],
    [() => t.publish('g', '{}', 'high'), /options must be an object/],
    [() => t.claim('w\0x'), /workerId must not contain a NUL/],
    [() => t.claim(undefined), /workerId must be a string/],
    [() => t.claim('w', { visibility: '30' }), /visibility must be a number/],
    [() => t.claim('w', { minPriority: NaN }), /minPriority must be an integer/],
    [() => t.claim('w', { routingKeys: 'east' }), /routingKeys must be an array/],
    [() => t.claim('w', { routingKeys: ['east', 7] }), /routingKeys\[1\] must be a string/],
    [() => t.claim('w', { routingKeys: ['ea\0st'] }), /routingKeys\[0\] must not contain a NUL/],
    [() => t.claim('w', { visiblity: 5 }), /unknown option "visiblity"/],
    [() => t.ack(null), /lease must be a lease object/],
    [() => t.ack({ groupId: 'g', workerId: 'w' }), /lease\.seq must be an integer/],
    [() => t.ack({ ...lease, seq: 1.5 }), /lease\.seq must be an integer/],
    [() => t.ack({ ...lease, seq: 2 ** 60 }), /lease\.seq must be an integer/],
    [() => t.ack({ ...lease, seq: 2n ** 64n }), /outside int64/],
    [() => t.ack({ ...lease, groupId: 'g\0' }), /lease\.groupId must not contain a NUL/],
    [() => t.ack({ ...lease, workerId: 5 }), /lease\.workerId must be a string/],
    [() => t.nack(lease, { delay: '1' }), /delay must be a number/],
  ];
  for (const [call, pattern] of cases) {
    if (pattern === null) {
      await call();
      continue;
    }
    await rejectsWith(assert, call(), 'HAREL_ERR_ARGUMENT', pattern);
  }
  const only = await t.claim('w');
  assert.deepEqual(only.event, { a: 'x\0y' }, 'a NUL inside a JSON string survives as the escape \\u0000');
  await t.ack(only);
  assert.equal(await t.claim('w'), null, 'nothing else was published');
  await t.close();
});

test('publishMany: one bad message rejects the whole batch, naming its index', async () => {
  const t = await fresh();
  await t.publish('g', '{}');
  const good = { groupId: 'g', event: { ok: true } };
  const cases = [
    // the library's checks
    [{ groupId: '', event: '{}' }, /messages\[1\]\.group_id is empty/],
    [{ groupId: 'new', event: '{oops' }, /messages\[1\]\.event_json is not valid JSON/],
    [{ groupId: 'new', event: '{}', priority: 5 }, /messages\[1\]\.priority/],
    [{ groupId: 'new', event: '{}', routingKey: '' }, /messages\[1\]\.routing_key/],
    // the binding's
    [{ groupId: 'n\0', event: '{}' }, /messages\[1\]\.groupId must not contain a NUL/],
    [{ groupId: 'new', event: undefined }, /messages\[1\]\.event can't be turned into JSON/],
    [{ groupId: 'new', event: '{}', priority: 1.5 }, /messages\[1\]\.priority must be an integer/],
    [{ groupId: 'new', event: '{}', prio: 1 }, /messages\[1\]: unknown option "prio"/],
    [null, /messages\[1\] must be an object/],
    ['{}', /messages\[1\] must be an object/],
  ];
  for (const [bad, pattern] of cases) {
    await rejectsWith(assert, t.publishMany([good, bad, good]), 'HAREL_ERR_ARGUMENT', pattern);
  }
  await rejectsWith(assert, t.publishMany(good), 'HAREL_ERR_ARGUMENT', /messages must be an array/);
  await rejectsWith(assert, t.publishMany(), 'HAREL_ERR_ARGUMENT', /messages must be an array/);
  const only = await t.claim('w');
  assert.equal(only.eventJson, '{}');
  await t.ack(only);
  assert.equal(await t.claim('w'), null, 'nothing of any rejected batch was stored');
  await t.close();
});

test('open: bad options and bad databases', async () => {
  await rejectsWith(assert, Transport.open(box.db(), { prefix: '1abc' }), 'HAREL_ERR_ARGUMENT', /prefix/);
  await rejectsWith(assert, Transport.open(box.db(), { prefix: 'a'.repeat(31) }), 'HAREL_ERR_ARGUMENT', /prefix/);
  await rejectsWith(assert, Transport.open(box.db(), { busyTimeout: -1 }), 'HAREL_ERR_ARGUMENT', /busy_timeout|seconds/);
  await rejectsWith(assert, Transport.open(box.db(), { syncInterval: 0 }), 'HAREL_ERR_ARGUMENT', /seconds|interval/);
  await rejectsWith(assert, Transport.open(box.db(), { createSchema: 'yes' }), 'HAREL_ERR_ARGUMENT', /createSchema must be a boolean/);
  await rejectsWith(assert, Transport.open(box.db(), { clock: 5 }), 'HAREL_ERR_ARGUMENT', /clock must be a function/);
  await rejectsWith(assert, Transport.open(box.db(), { cache: true }), 'HAREL_ERR_ARGUMENT', /unknown option "cache"/);
  await rejectsWith(assert, Transport.open(''), 'HAREL_ERR_ARGUMENT', /database/);
  await rejectsWith(assert, Transport.open('a\0b'), 'HAREL_ERR_ARGUMENT', /path must not contain a NUL/);
  await rejectsWith(assert, Transport.open(box.db(), { createSchema: false }), 'HAREL_ERR_DATABASE', /.+/);
  const garbage = box.db('garbage');
  fs.writeFileSync(garbage, 'this is not a database, just some text that is long enough '.repeat(100));
  await rejectsWith(assert, Transport.open(garbage), 'HAREL_ERR_DATABASE', /.+/);
  await rejectsWith(assert, Transport.open(box.db('no/such/dir/q')), 'HAREL_ERR_DATABASE', /.+/);
  assert.throws(() => new Transport(), /Transport\.open/);
});

test('a clock that throws, or returns something else than epoch seconds, fails the call', async () => {
  let mode = 'ok';
  const boom = new Error('clock is broken');
  const clock = () => {
    if (mode === 'throw') throw boom;
    if (mode === 'string') return '1000';
    if (mode === 'nan') return NaN;
    if (mode === 'negative') return -5;
    return 1000;
  };
  const t = await Transport.open(box.db(), { clock });
  await t.publish('g', '{}');
  mode = 'throw';
  const e = await rejectsWith(assert, t.claim('w'), 'HAREL_ERR_ARGUMENT', /the clock threw: clock is broken/);
  assert.equal(e.cause, boom);
  mode = 'string';
  await rejectsWith(assert, t.claim('w'), 'HAREL_ERR_ARGUMENT', /clock returned the string "1000"/);
  mode = 'nan';
  await rejectsWith(assert, t.claim('w'), 'HAREL_ERR_ARGUMENT', /clock returned NaN/);
  mode = 'negative';
  await rejectsWith(assert, t.claim('w'), 'HAREL_ERR_ARGUMENT', /clock returned -5/);
  mode = 'ok';
  assert.equal((await t.claim('w')).lockExpiry, 1030, 'the transport works again');
  await t.close();
  mode = 'throw';
  await rejectsWith(assert, Transport.open(box.db(), { clock }), 'HAREL_ERR_ARGUMENT', /clock threw/);
});

test('a closed transport rejects every call with HAREL_ERR_CLOSED, and close is idempotent', async () => {
  const t = await fresh();
  await t.publish('g', '{}');
  const lease = await t.claim('w');
  assert.equal(t.closed, false);
  await t.close();
  assert.equal(t.closed, true);
  for (const call of [() => t.publish('g', '{}'), () => t.claim('w'), () => t.ack(lease), () => t.nack(lease)]) {
    await rejectsWith(assert, call(), 'HAREL_ERR_CLOSED', /the transport is closed/);
  }
  // Even bad arguments: closed is what the caller needs to know.
  await rejectsWith(assert, t.claim(''), 'HAREL_ERR_CLOSED');
  await t.close();
  const e = await rejectsWith(assert, t.claim('w'), 'HAREL_ERR_CLOSED');
  assert.equal(e.status, undefined, 'a binding code: no library status');
});

test('close waits for the calls already made; calls made after it are refused', async () => {
  const t = await fresh();
  for (let i = 0; i < 20; i++) await t.publish(`g${i}`, { i });
  const claims = Array.from({ length: 20 }, (_, i) => t.claim(`w${i}`));
  const closing = t.close();
  const late = t.claim('late').catch((e) => e);
  const leases = await Promise.all(claims);
  assert.equal(leases.filter(Boolean).length, 20, 'every claim made before close() completed');
  await closing;
  const refused = await late;
  assert.ok(refused instanceof HarelError);
  assert.equal(refused.code, 'HAREL_ERR_CLOSED');
  assert.equal(t.closed, true);
});

test('a failed call leaves the transport usable', async () => {
  const t = await fresh();
  await rejectsWith(assert, t.ack({ seq: 12345, groupId: 'nope', workerId: 'w' }), 'HAREL_ERR_LEASE_LOST', /12345|nope/);
  await t.publish('g', '{}');
  assert.ok(await t.claim('w'));
  await t.close();
});

test('each failed call gets its own message, with many calls in flight on several transports', async () => {
  const path = box.db('messages');
  const transports = await Promise.all([1, 2, 3].map(() => Transport.open(path, { clock: manualClock().fn })));
  const calls = [];
  for (let i = 0; i < 60; i++) {
    const t = transports[i % 3];
    if (i % 2 === 0) {
      calls.push(t.ack({ seq: 1000 + i, groupId: `group-${i}`, workerId: `worker-${i}` }).then(
        () => assert.fail('a forged lease was acked'),
        (e) => ({ i, e }),
      ));
    } else {
      calls.push(t.publish(`ok-${i}`, { i }).then(() => ({ i, e: null })));
    }
  }
  for (const { i, e } of await Promise.all(calls)) {
    if (i % 2 === 1) {
      assert.equal(e, null);
      continue;
    }
    assert.equal(e.code, 'HAREL_ERR_LEASE_LOST');
    assert.match(e.message, new RegExp(`\\b${1000 + i}\\b`), `message of call ${i}: ${e.message}`);
    assert.match(e.message, new RegExp(`"group-${i}"`), `message of call ${i}: ${e.message}`);
  }
  await Promise.all(transports.map((t) => t.close()));
});

test('module helpers: version, libraryInfo, schemaSql', () => {
  assert.match(harel.version(), /^\d+\.\d+\.\d+$/);
  const info = harel.libraryInfo();
  assert.equal(info.version, harel.version());
  assert.ok(fs.existsSync(info.path) || info.path === 'libharel_transport.so.0');
  const sql = harel.schemaSql('app');
  assert.match(sql, /CREATE TABLE IF NOT EXISTS app_transport_messages/);
  assert.ok(sql.trim().split('\n').every((line) => line.endsWith(';')));
  assert.match(harel.schemaUpgradeSql(), /ALTER TABLE harel_transport_groups/);
  assert.throws(() => harel.schemaSql('bad prefix'), (e) => e instanceof HarelError && e.code === 'HAREL_ERR_ARGUMENT' && /prefix/.test(e.message));
  assert.throws(() => harel.schemaSql('a\0'), (e) => e.code === 'HAREL_ERR_ARGUMENT');
});
