'use strict';
// Many claims at once: pending promises on one Transport, several Transports in one
// process, and several worker processes on one file. Many publishes at once on one
// Transport, which go to the library as one batch.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { promisify } = require('node:util');
const { test } = require('node:test');
const { Transport } = require('..');
const { scratch, ROOT } = require('./helpers');

const run = promisify(execFile);
const box = scratch();

/** Publishes `groups` x `perGroup` events {g, n}, in rounds so groups interleave in seq order. */
async function fill(t, groups, perGroup) {
  for (let n = 0; n < perGroup; n++) {
    for (let g = 0; g < groups; g++) await t.publish(`g${g}`, { g, n });
  }
}

/** Checks a record {group: [n, ...]} of what was processed: each exactly once, in order. */
function assertAllInOrder(record, groups, perGroup) {
  assert.equal(Object.keys(record).length, groups);
  for (const [group, ns] of Object.entries(record)) {
    assert.deepEqual(ns, Array.from({ length: perGroup }, (_, n) => n), `group ${group} in publish order, each once`);
  }
}

test('many pending claims on one Transport: one lease per group at a time, each message once', async () => {
  const t = await Transport.open(box.db(), { synchronousFull: false });
  const groups = 12;
  const perGroup = 5;
  await fill(t, groups, perGroup);
  const record = {};
  for (let round = 0; round < perGroup; round++) {
    // 40 claims in flight at once; only one message of each group can be leased.
    const leases = (await Promise.all(Array.from({ length: 40 }, (_, i) => t.claim(`w${i}`)))).filter(Boolean);
    assert.equal(leases.length, groups, `round ${round}: one lease per group`);
    assert.equal(new Set(leases.map((l) => l.groupId)).size, groups, 'no group leased twice');
    for (const lease of leases) (record[lease.groupId] ||= []).push(lease.event.n);
    await Promise.all(leases.map((lease) => t.ack(lease)));
  }
  assert.equal(await t.claim('w'), null);
  assertAllInOrder(record, groups, perGroup);
  await t.close();
});

test('several Transports in one process drain one file together (calls run in parallel)', async () => {
  const db = box.db();
  const producer = await Transport.open(db, { synchronousFull: false });
  const groups = 10;
  const perGroup = 8;
  await fill(producer, groups, perGroup);
  await producer.close();
  const record = {};
  const inFlight = new Set();
  const worker = async (id) => {
    const t = await Transport.open(db, { synchronousFull: false });
    let idle = 0;
    while (idle < 5) {
      const lease = await t.claim(id);
      if (!lease) {
        idle += 1;
        await new Promise((resolve) => setTimeout(resolve, 5));
        continue;
      }
      idle = 0;
      assert.ok(!inFlight.has(lease.groupId), `${lease.groupId} leased twice at once`);
      inFlight.add(lease.groupId);
      (record[lease.groupId] ||= []).push(lease.event.n);
      await new Promise((resolve) => setImmediate(resolve));
      inFlight.delete(lease.groupId);
      await t.ack(lease);
    }
    await t.close();
  };
  await Promise.all(['a', 'b', 'c', 'd'].map(worker));
  assertAllInOrder(record, groups, perGroup);
});

test('4 worker processes on one file: no group in flight twice, each message once, in order', async () => {
  const db = box.db('processes');
  const dir = fs.mkdtempSync(path.join(box.dir, 'check-'));
  fs.mkdirSync(path.join(dir, 'inflight'));
  fs.mkdirSync(path.join(dir, 'order'));
  const t = await Transport.open(db);
  const groups = 24;
  const perGroup = 10;
  await fill(t, groups, perGroup);
  await t.close();

  const script = path.join(__dirname, 'fixtures', 'checked-worker.js');
  const results = await Promise.all(
    [1, 2, 3, 4].map((i) => run(process.execPath, [script, db, `proc-${i}`, dir], { timeout: 120_000 })),
  );
  const counts = results.map(({ stdout }) => Number(/processed (\d+)/.exec(stdout)[1]));
  assert.equal(counts.reduce((a, b) => a + b, 0), groups * perGroup, `per worker: ${counts.join(', ')}`);
  assert.ok(!fs.existsSync(path.join(dir, 'violations')), () => fs.readFileSync(path.join(dir, 'violations'), 'utf8'));
  assert.deepEqual(fs.readdirSync(path.join(dir, 'inflight')), [], 'every lease was released');

  const record = {};
  const seqs = new Set();
  for (const group of fs.readdirSync(path.join(dir, 'order'))) {
    const lines = fs.readFileSync(path.join(dir, 'order', group), 'utf8').trim().split('\n');
    record[group] = lines.map((line) => Number(line.split(' ')[1]));
    const groupSeqs = lines.map((line) => Number(line.split(' ')[0]));
    assert.deepEqual(groupSeqs, [...groupSeqs].sort((a, b) => a - b), `${group}: seq order`);
    for (const seq of groupSeqs) seqs.add(seq);
  }
  assert.equal(seqs.size, groups * perGroup, 'no seq processed twice');
  assertAllInOrder(record, groups, perGroup);

  const check = await Transport.open(db);
  assert.equal(await check.claim('w'), null, 'the queue is empty');
  await check.close();
});

test('examples/node/worker.js: two workers drain a queue and log every message once', async () => {
  const db = box.db('example');
  const t = await Transport.open(db, { synchronousFull: false });
  await fill(t, 6, 5);
  await t.close();
  const worker = path.join(ROOT, 'examples', 'node', 'worker.js');
  const logs = [path.join(box.dir, 'node-1.log'), path.join(box.dir, 'node-2.log')];
  const results = await Promise.all(
    logs.map((log, i) => run(process.execPath, [worker, db, `node-${i + 1}`, '--log', log], { timeout: 120_000 })),
  );
  let total = 0;
  const seqs = new Set();
  results.forEach(({ stdout }, i) => {
    const last = stdout.trim().split('\n').pop();
    const match = /^node node-(\d): processed (\d+)$/.exec(last);
    assert.ok(match, `final line: ${last}`);
    assert.equal(match[1], String(i + 1));
    total += Number(match[2]);
    const lines = fs.readFileSync(logs[i], 'utf8').trim().split('\n').filter(Boolean);
    assert.equal(lines.length, Number(match[2]));
    for (const line of lines) {
      const [claimed, acking, seq, group] = line.split(' ');
      assert.ok(BigInt(claimed) <= BigInt(acking) && BigInt(claimed) > 1_600_000_000n * 1_000_000_000n, line);
      assert.match(group, /^g\d$/);
      seqs.add(Number(seq));
    }
  });
  assert.equal(total, 30);
  assert.equal(seqs.size, 30);
  const usage = await run(process.execPath, [worker]).then(() => null, (e) => e);
  assert.equal(usage.code, 2, 'no arguments: usage and exit 2');
  assert.match(usage.stderr, /usage/);
});

test('publishes queued together go as one batch: each lands once, in call order within its group', async () => {
  const t = await Transport.open(box.db(), { synchronousFull: false });
  const groups = 8;
  const perGroup = 25;
  const calls = [];
  for (let n = 0; n < perGroup; n++) {
    for (let g = 0; g < groups; g++) {
      // Every third call is a batch of one, so publish and publishMany share the batches.
      calls.push(n % 3 === 2 ? t.publishMany([{ groupId: `g${g}`, event: { g, n } }]) : t.publish(`g${g}`, { g, n }));
    }
  }
  assert.deepEqual(await Promise.all(calls), calls.map(() => undefined));
  const record = {};
  for (let lease = await t.claim('w'); lease; lease = await t.ackAndClaim(lease, 'w')) {
    (record[lease.groupId] ||= []).push(lease.event.n);
  }
  assertAllInOrder(record, groups, perGroup);
  await t.close();
});

test('a publish that fails in a shared batch fails alone; the others land', async () => {
  const t = await Transport.open(box.db(), { synchronousFull: false });
  const outcomes = await Promise.allSettled([
    t.publish('g', { n: 0 }),
    t.publish('g', '{not json'), // only the library checks a JSON text
    t.publishMany([{ groupId: 'g', event: { n: 1 } }, { groupId: 'h', event: { n: 2 } }]),
    t.publishMany([{ groupId: 'h', event: { n: 3 } }, { groupId: 'h', event: '[1,' }]),
    t.publish('h', { n: 4 }),
  ]);
  assert.deepEqual(outcomes.map((o) => o.status), ['fulfilled', 'rejected', 'fulfilled', 'rejected', 'fulfilled']);
  assert.equal(outcomes[1].reason.code, 'HAREL_ERR_ARGUMENT');
  assert.match(outcomes[1].reason.message, /event_json/);
  assert.equal(outcomes[3].reason.code, 'HAREL_ERR_ARGUMENT');
  assert.match(outcomes[3].reason.message, /messages\[1\]\.event_json/, 'its own index, not the shared batch\'s');
  const events = [];
  for (let lease = await t.claim('w'); lease; lease = await t.ackAndClaim(lease, 'w')) events.push(lease.event.n);
  assert.deepEqual(events.sort(), [0, 1, 2, 4], 'the good calls landed; nothing of the bad ones');
  await t.close();
});

test('a call queued between two publishes keeps them apart: calls take effect in call order', async () => {
  const t = await Transport.open(box.db(), { synchronousFull: false });
  const first = t.publish('low', { n: 1 });
  const claim = t.claim('w', { minPriority: 3 });
  const second = t.publish('high', { n: 2 }, { priority: 4 });
  await Promise.all([first, second]);
  assert.equal(await claim, null, 'the claim ran before the second publish');
  assert.equal((await t.claim('w', { minPriority: 3 })).groupId, 'high');
  await t.close();
});
