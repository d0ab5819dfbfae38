'use strict';
// Concurrency through the binding: the calls of one Transport go to the thread pool at
// once (each with its own error), and the library's group commit serves the publishes
// among them. With a JS clock the calls that read it go one at a time (see lib/clock.js).
// And the Node example worker, which `make demo` runs.

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

test('many concurrent publishes and claims on one Transport: every message exactly once', async () => {
  const t = await Transport.open(box.db(), { synchronousFull: false });
  const groups = 40;
  const perGroup = 10;
  const total = groups * perGroup;
  const seen = new Map(); // event id -> times processed
  let publishing = true;
  // 8 worker loops on the same Transport, each claiming and acking as fast as it can,
  // while the publishes are still going in.
  const worker = async (id) => {
    let idle = 0;
    while (publishing || idle < 3) {
      const lease = await t.claim(id);
      if (!lease) {
        idle += 1;
        await new Promise((resolve) => setTimeout(resolve, 2));
        continue;
      }
      idle = 0;
      seen.set(lease.event.id, (seen.get(lease.event.id) || 0) + 1);
      if (lease.seq % 2) await t.ack(lease);
      else {
        const next = await t.ackAndClaim(lease, id); // half of them through the fast path
        if (next) await t.nack(next); // given back at once, for a loop to claim again
      }
    }
  };
  const workers = Array.from({ length: 8 }, (_, i) => worker(`w${i}`));
  const publishes = [];
  for (let n = 0; n < perGroup; n++) {
    for (let g = 0; g < groups; g++) {
      const event = { id: `${g}-${n}` };
      publishes.push(n % 5 === 4 ? t.publishMany([{ groupId: `g${g}`, event }]) : t.publish(`g${g}`, event));
    }
  }
  try {
    assert.deepEqual(await Promise.all(publishes), publishes.map(() => undefined));
  } finally {
    publishing = false;
    await Promise.allSettled(workers);
  }
  await Promise.all(workers);
  assert.equal(seen.size, total, 'every message was processed');
  assert.deepEqual([...seen.values()].filter((times) => times !== 1), [], 'none twice');
  assert.equal(await t.claim('w'), null, 'the queue is empty');
  await t.close();
});

test('Promise.all of 4,000 publishes: each lands once, and the library shares commits among them', async () => {
  // At synchronous FULL a commit is an fsync: publishes awaited one by one pay one each;
  // in flight together, those that arrive while another commits share the next one.
  const t = await Transport.open(box.db(), { synchronousFull: true });
  await t.publish('warm-up', {});
  const rate = async (count, concurrent) => {
    const started = performance.now();
    if (concurrent) {
      await Promise.all(Array.from({ length: count }, (_, i) => t.publish(`g${i % 50}`, { i })));
    } else {
      for (let i = 0; i < count; i++) await t.publish(`s${i % 50}`, { i });
    }
    return count / ((performance.now() - started) / 1000);
  };
  const oneByOne = await rate(200, false);
  const together = await rate(4000, true);
  console.log(`publishes at FULL: ${Math.round(oneByOne)}/s awaited one by one, ${Math.round(together)}/s in Promise.all of 4,000`);
  assert.ok(together > 1.5 * oneByOne, `Promise.all: ${Math.round(together)}/s, one by one: ${Math.round(oneByOne)}/s`);
  const seen = new Set();
  let count = 0;
  for (let lease = await t.claim('w'); lease; lease = await t.ackAndClaim(lease, 'w')) {
    if (lease.groupId.startsWith('g')) seen.add(lease.event.i);
    count += 1;
  }
  assert.equal(seen.size, 4000);
  assert.equal(count, 1 + 200 + 4000, 'nothing twice, nothing lost');
  await t.close();
});

test('with a JS clock, concurrent calls still each get the time read for them', async () => {
  let now = 1000;
  const t = await Transport.open(box.db(), { clock: () => (now += 1) });
  const atOpen = now;
  await Promise.all(Array.from({ length: 30 }, (_, g) => t.publish(`g${g}`, { g })));
  // Publishes read it too (the library stamps each message with its publish time): each
  // its own read, one at a time. peek reads no clock.
  const pages = await Promise.all(Array.from({ length: 30 }, (_, g) => t.peek(`g${g}`)));
  const stamps = pages.map((page) => page.messages[0].publishedAt).sort((a, b) => a - b);
  assert.deepEqual(stamps, Array.from({ length: 30 }, (_, i) => atOpen + 1 + i));
  const before = now;
  const leases = await Promise.all(Array.from({ length: 30 }, (_, i) => t.claim(`w${i}`, { visibility: 100 })));
  // Each claim's clock read was its own: 30 distinct times, each read before its call.
  const expiries = leases.map((lease) => lease.lockExpiry - 100).sort((a, b) => a - b);
  assert.deepEqual(expiries, Array.from({ length: 30 }, (_, i) => before + 1 + i));
  await Promise.all(leases.map((lease) => t.ack(lease)));
  assert.equal(now, before + 60, 'one read per claim and per ack');
  assert.equal(await t.claim('w'), null);
  await t.close();
});

test('examples/node/worker.js: two workers drain a queue and log every message once', async () => {
  const db = box.db('example');
  const t = await Transport.open(db, { synchronousFull: false });
  await t.publishMany(Array.from({ length: 30 }, (_, i) => ({ groupId: `g${i % 6}`, event: { n: i } })));
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
