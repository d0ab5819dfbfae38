'use strict';
// Every status the library can return through the binding becomes a HarelError with its
// code, its status and the call's own message (read from the call's `err`); the binding's
// own checks and codes (HAREL_ERR_CLOSED).

const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const { test } = require('node:test');
const harel = require('..');
const { Transport, HarelError, STATUS } = harel;
const { scratch, manualClock, rejectsWith, holdWriteLock } = require('./helpers');

const box = scratch();

test('HarelError: an Error with the code, the status and the library\'s message', async () => {
  const t = await Transport.open(box.db());
  const e = await rejectsWith(assert, t.publish('g', '{not json'), 'HAREL_ERR_ARGUMENT');
  assert.ok(e instanceof Error);
  assert.equal(e.name, 'HarelError');
  assert.equal(e.status, STATUS.HAREL_ERR_ARGUMENT);
  assert.match(e.message, /event_json is not valid JSON/, "the library's own message");
  assert.match(String(e.stack), /HarelError/);
  const made = new HarelError('HAREL_ERR_BUSY', 'text', { status: -3, cause: e });
  assert.deepEqual([made.code, made.message, made.status, made.cause], ['HAREL_ERR_BUSY', 'text', -3, e]);
  await t.close();
});

test('HAREL_ERR_ARGUMENT from the library: its message names the parameter', async () => {
  const t = await Transport.open(box.db());
  const lease = { seq: 1, groupId: 'g', workerId: 'w' };
  const cases = [
    [() => t.publish('', '{}'), /group_id/],
    [() => t.publish('g', '{}', { priority: 5 }), /priority/],
    [() => t.publish('g', '{}', { routingKey: '' }), /routing_key/],
    [() => t.claim('__parked__'), /__parked__|reserved/],
    [() => t.claim('w', { visibility: 0 }), /visibility/],
    [() => t.claim('w', { visibility: NaN }), /visibility/],
    [() => t.claim('w', { minPriority: 7 }), /min_priority/],
    [() => t.claim('w', { routingKeys: ['ok', ''] }), /routing/],
    [() => t.ackAndClaim(lease, 'w', { minPriority: 9 }), /min_priority/],
    [() => t.nack(lease, { delay: -1 }), /delay/],
    [() => t.ack({ ...lease, groupId: '' }), /group_id/],
    [() => t.ack({ ...lease, workerId: '' }), /worker_id/],
    [() => t.publishMany([{ groupId: 'g', event: '{}' }, { groupId: 'g', event: '[1,' }]), /messages\[1\]\.event_json/],
    [() => Transport.open(box.db(), { prefix: '1abc' }), /prefix/],
    [() => Transport.open(box.db(), { busyTimeout: -1 }), /seconds|busy/],
    [() => Transport.open(box.db(), { syncInterval: 0 }), /seconds|interval/],
    [() => Transport.open(''), /database/],
  ];
  for (const [call, pattern] of cases) await rejectsWith(assert, call(), 'HAREL_ERR_ARGUMENT', pattern);
  assert.throws(() => harel.schemaSql('bad prefix'), (e) => e instanceof HarelError && e.code === 'HAREL_ERR_ARGUMENT' && /prefix/.test(e.message));
  assert.throws(() => harel.schemaUpgradeSql('9'), (e) => e.code === 'HAREL_ERR_ARGUMENT' && e.status === -1);
  assert.equal(await t.claim('w'), null, 'nothing was published');
  await t.close();
});

test('HAREL_ERR_ARGUMENT from the binding: what koffi would silently change', async () => {
  const t = await Transport.open(box.db());
  const lease = { seq: 1, groupId: 'g', workerId: 'w' };
  const cases = [
    [() => t.publish('g\0hidden', '{}'), /groupId must not contain a NUL/],
    [() => t.publish('g', '{"a":"\0"}'), /event must not contain a NUL/],
    [() => t.publish('g', '{}', { routingKey: 'k\0' }), /routingKey must not contain a NUL/],
    [() => t.publishMany([{ groupId: 'n\0', event: '{}' }]), /messages\[0\]\.groupId must not contain a NUL/],
    [() => t.publish('g\uD800', '{}'), /lone surrogate/],
    [() => t.publish(42, '{}'), /groupId must be a string/],
    [() => t.publish('g', undefined), /event can't be turned into JSON/],
    [() => t.publish('g', { n: 1n }), /event can't be turned into JSON/],
    [() => t.publish('g', '{}', { priority: 1.5 }), /priority must be an integer/],
    [() => t.publish('g', '{}', { priority: 2 ** 32 + 1 }), /priority must be an integer/],
    [() => t.publish('g', '{}', { prio: 1 }), /unknown option "prio"/],
    [() => t.publish('g', '{}', 'high'), /options must be an object/],
    [() => t.publishMany({ groupId: 'g', event: {} }), /messages must be an array/],
    [() => t.publishMany([null]), /messages\[0\] must be an object/],
    [() => t.publishMany([{ groupId: 'g', event: {}, prio: 1 }]), /messages\[0\]: unknown option "prio"/],
    [() => t.claim('w\0x'), /workerId must not contain a NUL/],
    [() => t.claim(undefined), /workerId must be a string/],
    [() => t.claim('w', { visibility: '30' }), /visibility must be a number/],
    [() => t.claim('w', { minPriority: NaN }), /minPriority must be an integer/],
    [() => t.claim('w', { routingKeys: 'east' }), /routingKeys must be an array/],
    [() => t.claim('w', { routingKeys: ['ea\0st'] }), /routingKeys\[0\] must not contain a NUL/],
    [() => t.claim('w', { visiblity: 5 }), /unknown option "visiblity"/],
    [() => t.ack(null), /lease must be a lease object/],
    [() => t.ack({ ...lease, seq: 1.5 }), /lease\.seq must be an integer/],
    [() => t.ack({ ...lease, seq: 2 ** 60 }), /lease\.seq must be an integer/],
    [() => t.ack({ ...lease, seq: 2n ** 64n }), /outside int64/],
    [() => t.ack({ ...lease, groupId: 7 }), /lease\.groupId must be a string/],
    [() => t.ack({ ...lease, groupId: 'g\uDC00' }), /lease\.groupId is not valid Unicode/],
    [() => t.nack({ ...lease, workerId: 'w\0' }), /lease\.workerId must not contain a NUL/],
    [() => t.ackAndClaim(lease, 5), /workerId must be a string/],
    [() => t.nack(lease, { delay: '1' }), /delay must be a number/],
    [() => Transport.open('a\0b'), /path must not contain a NUL/],
    [() => Transport.open(box.db(), { createSchema: 'yes' }), /createSchema must be a boolean/],
    [() => Transport.open(box.db(), { clock: 5 }), /clock must be a function/],
    [() => Transport.open(box.db(), { cache: true }), /unknown option "cache"/],
  ];
  for (const [call, pattern] of cases) await rejectsWith(assert, call(), 'HAREL_ERR_ARGUMENT', pattern);
  assert.throws(() => harel.schemaSql('a\0'), (e) => e.code === 'HAREL_ERR_ARGUMENT');
  // A lease's group id may hold NUL (another writer's; see bytes.test.js): the library
  // gets it whole, and here finds no such lease.
  await rejectsWith(assert, t.ack({ ...lease, groupId: 'g\0' }), 'HAREL_ERR_LEASE_LOST', /no longer leased|gone/);
  // JSON.stringify escapes a NUL in an object: that event is fine.
  await t.publish('g', { a: 'x\0y' });
  const only = await t.claim('w');
  assert.deepEqual(only.event, { a: 'x\0y' });
  await t.ack(only);
  assert.equal(await t.claim('w'), null, 'nothing else was published');
  await t.close();
});

test('HAREL_ERR_DATABASE: not a database, no such directory, a table missing', async () => {
  const garbage = box.db('garbage');
  fs.writeFileSync(garbage, 'this is not a database, just some text that is long enough '.repeat(100));
  await rejectsWith(assert, Transport.open(garbage), 'HAREL_ERR_DATABASE', /.+/);
  await rejectsWith(assert, Transport.open(box.db('no/such/dir/q')), 'HAREL_ERR_DATABASE', /.+/);
  await rejectsWith(assert, Transport.open(box.db(), { createSchema: false }), 'HAREL_ERR_DATABASE', /create_schema/);
});

test('HAREL_ERR_BUSY: another process holds the write lock past the busy timeout', async () => {
  const db = box.db('busy');
  const t = await Transport.open(db, { busyTimeout: 0.2 });
  await t.publish('g', {});
  const holder = await holdWriteLock(db, 1);
  await rejectsWith(assert, t.claim('w'), 'HAREL_ERR_BUSY', /.+/);
  await rejectsWith(assert, t.publish('g', {}), 'HAREL_ERR_BUSY', /.+/);
  await holder.released();
  assert.ok(await t.claim('w'), 'the transport works once the lock is free');
  await t.close();

  // open sets the schema up in a write transaction; on a file no other transport of this
  // process has open, so that only open's mapping is at stake.
  const other = box.db('busy-open');
  await (await Transport.open(other)).close();
  const openHolder = await holdWriteLock(other, 1);
  await rejectsWith(assert, Transport.open(other, { busyTimeout: 0.2 }), 'HAREL_ERR_BUSY', /.+/);
  await openHolder.released();
});

test('HAREL_ERR_LEASE_LOST: the message names the lease', async () => {
  const t = await Transport.open(box.db());
  await rejectsWith(assert, t.ack({ seq: 12345, groupId: 'nope', workerId: 'w' }), 'HAREL_ERR_LEASE_LOST', /12345.*"nope"/);
  await rejectsWith(assert, t.nack({ seq: 12345, groupId: 'nope', workerId: 'w' }), 'HAREL_ERR_LEASE_LOST', /12345/);
  await rejectsWith(assert, t.ackAndClaim({ seq: 9, groupId: 'x', workerId: 'w' }, 'w'), 'HAREL_ERR_LEASE_LOST', /\b9\b/);
  await t.publish('g', '{}');
  assert.ok(await t.claim('w'), 'a failed call leaves the transport usable');
  await t.close();
});

test('HAREL_ERR_CONNECT: a server URL nobody listens on', async () => {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  await rejectsWith(assert, Transport.open(`http://127.0.0.1:${port}`), 'HAREL_ERR_CONNECT', new RegExp(`127\\.0\\.0\\.1:${port}`));
});

test('HAREL_ERR_CLOSED: every call after close(), even with bad arguments', async () => {
  const t = await Transport.open(box.db());
  const lease = { seq: 1, groupId: 'g', workerId: 'w' };
  await t.close();
  const calls = [
    () => t.publish('g', '{}'), () => t.publishMany([]), () => t.claim('w'), () => t.ack(lease),
    () => t.nack(lease), () => t.ackAndClaim(lease, 'w'), () => t.claim(''),
  ];
  for (const call of calls) {
    const e = await rejectsWith(assert, call(), 'HAREL_ERR_CLOSED', /the transport is closed/);
    assert.equal(e.status, undefined, 'a binding code: no library status');
  }
});

test('close() waits for the calls in flight; calls made after it are refused', async () => {
  const t = await Transport.open(box.db(), { synchronousFull: false });
  await t.publishMany(Array.from({ length: 20 }, (_, i) => ({ groupId: `g${i}`, event: { i } })));
  const calls = [
    ...Array.from({ length: 20 }, (_, i) => t.claim(`w${i}`)),
    ...Array.from({ length: 20 }, (_, i) => t.publish(`h${i}`, { i })),
  ];
  const closing = t.close();
  const late = t.claim('late').catch((e) => e);
  const results = await Promise.all(calls);
  assert.equal(results.slice(0, 20).filter(Boolean).length, 20, 'every claim made before close() completed');
  await closing;
  assert.equal((await late).code, 'HAREL_ERR_CLOSED');
});

test("a clock that throws or doesn't return epoch seconds fails the call", async () => {
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

test('each failed call gets its own message, with many calls in flight on one transport', async () => {
  const path = box.db('messages');
  const t = await Transport.open(path);
  const other = await Transport.open(path);
  const calls = [];
  for (let i = 0; i < 80; i++) {
    const on = i % 4 === 3 ? other : t;
    if (i % 2 === 0) {
      calls.push(on.ack({ seq: 1000 + i, groupId: `group-${i}`, workerId: `worker-${i}` }).then(
        () => assert.fail('a forged lease was acked'),
        (e) => ({ i, e }),
      ));
    } else if (i % 3 === 0) {
      calls.push(on.publish(`group-${i}`, '{}', { priority: 100 + i }).then(() => assert.fail('published'), (e) => ({ i, e })));
    } else {
      calls.push(on.publish(`ok-${i}`, { i }).then(() => ({ i, e: null })));
    }
  }
  for (const { i, e } of await Promise.all(calls)) {
    if (i % 2 === 0) {
      assert.equal(e.code, 'HAREL_ERR_LEASE_LOST');
      assert.match(e.message, new RegExp(`\\b${1000 + i}\\b.*"group-${i}"`), `message of call ${i}: ${e.message}`);
    } else if (i % 3 === 0) {
      assert.equal(e.code, 'HAREL_ERR_ARGUMENT', `call ${i}: ${e.message}`);
      assert.match(e.message, new RegExp(`priority is ${100 + i};`), `message of call ${i}: ${e.message}`);
    } else {
      assert.equal(e, null);
    }
  }
  await Promise.all([t.close(), other.close()]);
});
