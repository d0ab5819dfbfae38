'use strict';
// The binding's mapping of each function and method onto the C ABI: arguments reach the
// library, results come back whole. What the queue does with them (FIFO, leases, fairness,
// parking) is the Rust contract's to test (tests/common/contract.rs), not this file's.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const { inspect } = require('node:util');
const { test } = require('node:test');
const harel = require('..');
const { Transport, STATUS, DEFAULT_VISIBILITY } = harel;
const { scratch, manualClock, rejectsWith } = require('./helpers');

const box = scratch();

test('smoke: publish, claim, ack', async () => {
  const t = await Transport.open(box.db());
  await t.publish('order-17', { kind: 'order.placed', id: 'e1', data: { total: 12 } });
  const lease = await t.claim('worker-1');
  assert.equal(lease.groupId, 'order-17');
  assert.equal(lease.event.kind, 'order.placed');
  await t.ack(lease);
  assert.equal(await t.claim('worker-1'), null, 'null when nothing is deliverable');
  await t.close();
});

test('a lease is a frozen copy of every field; the event text comes back byte for byte', async () => {
  const clock = manualClock(1000.123456789);
  const t = await Transport.open(box.db(), { clock: clock.fn });
  const text = ' {"kind": "x",  "data": [1, 2.50, "é", "🦀"]} ';
  await t.publish('group-ü-漢字', text);
  const lease = await t.claim('worker-7', { visibility: 12.5 });
  assert.deepEqual(Object.keys(lease).sort(), ['attempts', 'event', 'eventJson', 'groupId', 'headers', 'lockExpiry', 'seq', 'workerId']);
  assert.equal(lease.attempts, 1, 'its first claim');
  assert.equal(typeof lease.seq, 'number', 'seq is a Number while it is a safe integer');
  assert.ok(Number.isSafeInteger(lease.seq) && lease.seq > 0);
  assert.equal(lease.groupId, 'group-ü-漢字');
  assert.equal(lease.eventJson, text);
  assert.deepEqual(lease.event, { kind: 'x', data: [1, 2.5, 'é', '🦀'] });
  assert.equal(lease.workerId, 'worker-7');
  assert.equal(lease.lockExpiry, 1000.123456789 + 12.5, "the clock's exact double reached the library");
  assert.ok(Object.isFrozen(lease));
  await t.ack(lease);

  const big = { kind: 'big', data: 'x'.repeat(1 << 20) };
  await t.publish('big', big);
  await t.publish('text', JSON.stringify('just a string'));
  const bigLease = await t.claim('w');
  assert.equal(bigLease.eventJson, JSON.stringify(big), 'a 1 MiB event whole');
  assert.equal(bigLease.lockExpiry, clock.now + DEFAULT_VISIBILITY, 'the default visibility is 30 s');
  await t.ack(bigLease);
  assert.equal((await t.claim('w')).event, 'just a string', 'a string event is JSON text');
  await t.close();
});

test("a lease is a plain frozen object: its fields in order and read-only, lockExpiry a getter, its symbols hidden", async () => {
  const t = await Transport.open(box.db(), { clock: manualClock(2000).fn });
  await t.publish('g', { n: 1 });
  const lease = await t.claim('w', { visibility: 5 });
  assert.equal(Object.getPrototypeOf(lease), Object.prototype, 'a plain object');
  assert.ok(Object.isFrozen(lease));
  assert.deepEqual(Object.keys(lease), ['seq', 'groupId', 'event', 'eventJson', 'workerId', 'lockExpiry', 'attempts', 'headers']);
  const own = Object.getOwnPropertyDescriptors(lease);
  for (const key of Object.keys(lease).filter((k) => k !== 'lockExpiry')) {
    assert.deepEqual([own[key].enumerable, own[key].writable, own[key].configurable], [true, false, false], key);
  }
  assert.deepEqual([typeof own.lockExpiry.get, own.lockExpiry.set, own.lockExpiry.enumerable], ['function', undefined, true]);
  for (const symbol of Object.getOwnPropertySymbols(lease)) assert.equal(own[symbol].enumerable, false, String(symbol));
  const plain = { seq: lease.seq, groupId: 'g', event: { n: 1 }, eventJson: '{"n":1}', workerId: 'w', lockExpiry: 2005, attempts: 1, headers: [] };
  assert.deepStrictEqual({ ...lease }, plain, 'a spread: the fields alone, lockExpiry a value');
  assert.equal(JSON.stringify(lease), JSON.stringify(plain));
  assert.equal(inspect(lease), inspect(plain), 'inspect shows lockExpiry, not [Getter]');
  assert.throws(() => {
    lease.attempts = 2;
  }, TypeError);
  assert.throws(() => {
    lease.note = 'x';
  }, TypeError);
  await t.ack(lease);
  await t.close();
});

test('a lease goes back whole: ids of several UTF-8 bytes, a copy, a bigint seq', async () => {
  const t = await Transport.open(box.db());
  const group = 'gröup-漢字-🦀';
  const worker = 'wörker-é-🦀';
  for (let i = 0; i < 4; i++) await t.publish(group, { i });
  const first = await t.claim(worker);
  assert.deepEqual([first.groupId, first.workerId], [group, worker]);
  assert.ok((await t.extend(first, 60)) > 0, 'extend reads the ids too');
  await t.nack({ ...first });
  const again = await t.claim(worker);
  assert.equal(again.seq, first.seq);
  const second = await t.ackAndClaim(again, worker);
  assert.deepEqual([second.event, second.workerId], [{ i: 1 }, worker]);
  await t.ack({ seq: BigInt(second.seq), groupId: group, workerId: worker });
  const [third] = await t.claimMany(worker, { max: 1 });
  assert.deepEqual((await t.ackMany([third])).map((o) => o.ok), [true]);
  await rejectsWith(assert, t.ack(third), 'HAREL_ERR_LEASE_LOST', new RegExp(`"${worker}"`));
  assert.deepEqual((await t.claim(worker)).event, { i: 3 });
  await t.close();
});

test('the JS clock is read for every call that asks the library for the time', async () => {
  const clock = manualClock(5000);
  let reads = 0;
  const t = await Transport.open(box.db(), {
    clock: () => {
      reads += 1;
      return clock.now;
    },
  });
  const atOpen = reads;
  await t.publish('g', { n: 1 });
  clock.now = 5001;
  await t.publishMany([{ groupId: 'g', event: { n: 2 } }]);
  assert.equal(reads, atOpen + 2, 'a publish stamps its messages with the time');
  assert.deepEqual((await t.peek('g')).messages.map((m) => m.publishedAt), [5000, 5001]);
  const first = await t.claim('w', { visibility: 1 });
  clock.now = 10; // backwards: the library takes what the clock says
  await t.nack(first);
  const again = await t.claim('w', { visibility: 0.25 });
  assert.equal(again.lockExpiry, 10.25);
  const second = await t.ackAndClaim(again, 'w', { visibility: 2 });
  assert.equal(second.lockExpiry, 12);
  await t.ack(second);
  assert.equal(reads, atOpen + 2 + 5);
  // the calls that do not ask for the time, and those that do
  await Promise.all([t.purgeDead({ all: true }), t.purgeGroup('x'), t.purge(), t.peek('g'), t.deadLetters()]);
  assert.equal(reads, atOpen + 7, 'purgeDead, purgeGroup, purge, peek and deadLetters read no clock');
  await Promise.all([t.stats(), t.groups(), t.release('g'), t.redrive({ all: true })]);
  assert.equal(reads, atOpen + 11);
  await t.publish('g', {});
  await t.deadLetter(await t.claim('w'), 'r');
  assert.equal(reads, atOpen + 14);
  await t.close();
});

test("publish's and claim's options reach the library", async () => {
  const t = await Transport.open(box.db());
  await t.publish('plain', {});
  await t.publish('east', { n: 1 }, { priority: 3, routingKey: 'east' });
  assert.equal(await t.claim('w', { routingKeys: ['west'] }), null, 'routingKeys reached the claim');
  const east = await t.claim('w', { minPriority: 3, routingKeys: ['north', 'east'] });
  assert.equal(east.groupId, 'east', 'priority and routingKey reached the publish');
  assert.equal(await t.claim('w', { minPriority: 3 }), null, 'minPriority reached the claim');
  assert.equal((await t.claim('w', { routingKeys: null, minPriority: 0 })).groupId, 'plain');
  await t.close();
});

test('publishMany passes the array in order, with each element\'s options; [] does nothing', async () => {
  const t = await Transport.open(box.db(), { synchronousFull: false });
  await t.publishMany([
    { groupId: 'g', event: { n: 0 } },
    { groupId: 'k', event: '{"n":9}', priority: 4, routingKey: 'key' },
    { groupId: 'g', event: { n: 1 }, priority: 0, routingKey: null },
  ]);
  await t.publishMany([]);
  const keyed = await t.claim('w', { minPriority: 4, routingKeys: ['key'] });
  assert.deepEqual([keyed.groupId, keyed.event], ['k', { n: 9 }]);
  const ns = [];
  for (let lease = await t.claim('w'); lease; lease = await t.ackAndClaim(lease, 'w')) ns.push(lease.event.n);
  assert.deepEqual(ns, [0, 1]);
  await t.close();
});

test('ackAndClaim resolves the next lease, or null; nack passes its delay', async () => {
  const clock = manualClock();
  const t = await Transport.open(box.db(), { clock: clock.fn });
  await t.publish('a', { n: 1 });
  await t.publish('a', { n: 2 });
  const first = await t.claim('w');
  const next = await t.ackAndClaim(first, 'w', { visibility: 5 });
  assert.deepEqual([next.event, next.lockExpiry], [{ n: 2 }, clock.now + 5]);
  await t.nack(next, { delay: 60 });
  assert.equal(await t.claim('w'), null, 'parked for the delay');
  clock.advance(61);
  const back = await t.claim('w');
  assert.equal(back.seq, next.seq);
  assert.equal(await t.ackAndClaim(back, 'w'), null, 'acked, nothing left');
  await t.close();
});

test('ack and nack take any object with seq, groupId and workerId; seq may be a bigint', async () => {
  const t = await Transport.open(box.db());
  await t.publish('g', {});
  await t.publish('g', {});
  const lease = await t.claim('w');
  await t.ack(JSON.parse(JSON.stringify({ seq: lease.seq, groupId: lease.groupId, workerId: lease.workerId })));
  const second = await t.claim('w');
  await t.nack({ seq: BigInt(second.seq), groupId: 'g', workerId: 'w' });
  assert.equal((await t.claim('w')).seq, second.seq);
  await t.close();
});

test('open: the options reach the library', async () => {
  const path = box.db('options');
  const a = await Transport.open(path, { prefix: 'app_1', synchronousFull: false, busyTimeout: 2, syncInterval: 1 });
  assert.equal(a.path, path);
  const b = await Transport.open(path, { prefix: 'app_1', createSchema: false, authToken: null, syncUrl: null });
  const other = await Transport.open(path, { prefix: 'other' });
  await a.publish('g', {});
  assert.equal(await other.claim('w'), null, 'another prefix, other tables');
  await b.ack(await b.claim('w'));
  await rejectsWith(assert, Transport.open(path, { prefix: 'missing', createSchema: false }), 'HAREL_ERR_DATABASE', /missing_transport/);
  await Promise.all([a.close(), b.close(), other.close()]);

  const mem = await Transport.open(':memory:');
  await mem.publish('g', {});
  assert.equal((await mem.claim('w')).groupId, 'g');
  await mem.close();
});

test('close, closed and Symbol.asyncDispose', async () => {
  const t = await Transport.open(box.db());
  assert.equal(t.closed, false);
  const closing = t.close();
  assert.equal(t.closed, true, 'closed at once');
  assert.equal(t.close(), closing, 'close() again: the same promise');
  await closing;
  const u = await Transport.open(box.db());
  await u[Symbol.asyncDispose]();
  assert.equal(u.closed, true);
  assert.throws(() => new Transport(), /Transport\.open/);
});

test('module functions and constants', () => {
  assert.match(harel.version(), /^\d+\.\d+\.\d+$/);
  const info = harel.libraryInfo();
  assert.equal(info.version, harel.version());
  assert.ok(fs.existsSync(info.path) || info.path === 'libharel_transport.so.1');
  const sql = harel.schemaSql('app');
  assert.match(sql, /CREATE TABLE IF NOT EXISTS app_transport_messages/);
  assert.ok(sql.trim().split('\n').every((line) => line.endsWith(';')));
  assert.match(harel.schemaSql(), /harel_transport_groups/);
  assert.match(harel.schemaUpgradeSql(), /ALTER TABLE harel_transport_groups/);
  assert.match(harel.schemaUpgradeSql('app'), /ALTER TABLE app_transport_groups/);
  assert.deepEqual({ ...STATUS }, {
    HAREL_OK: 0, HAREL_EMPTY: 1, HAREL_ERR_ARGUMENT: -1, HAREL_ERR_DATABASE: -2, HAREL_ERR_BUSY: -3,
    HAREL_ERR_LEASE_LOST: -4, HAREL_ERR_CONNECT: -5, HAREL_ERR_INTERRUPTED: -6, HAREL_ERR_PANIC: -99,
  });
  assert.ok(Object.isFrozen(STATUS));
  assert.equal(DEFAULT_VISIBILITY, 30);
  assert.equal(harel.MAX_CLAIM, 1000, "the header's HAREL_MAX_CLAIM");
});
