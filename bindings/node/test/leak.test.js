'use strict';
// A leak check of the native side: the bytes glibc's malloc has handed out and not got
// back (mallinfo2's uordblks: the library's and libSQL's allocations, not V8's heap, which
// is mapped apart) must not grow with the number of calls. Every kind of call runs many
// times — open and close, publish, claim (a lease copied out and freed), nack, ack, and
// the error paths that leave a message behind (a lost lease, an argument the library
// refuses) — after a warm-up that fills SQLite's page cache and the allocator's pools.

const assert = require('node:assert/strict');
const { test } = require('node:test');
const koffi = require('koffi');
const { Transport, HarelError } = require('..');
const { scratch } = require('./helpers');

const box = scratch();
const libc = koffi.load('libc.so.6');
const MallInfo2 = koffi.struct('mallinfo2', {
  arena: 'size_t', ordblks: 'size_t', smblks: 'size_t', hblks: 'size_t', hblkhd: 'size_t',
  usmblks: 'size_t', fsmblks: 'size_t', uordblks: 'size_t', fordblks: 'size_t', keepcost: 'size_t',
});
const mallinfo2 = libc.func('mallinfo2', MallInfo2, []);
// V8 frees what JS objects hold in malloc'ed memory (buffers koffi decodes into) only when
// it collects them: collect before each reading.
require('node:v8').setFlagsFromString('--expose-gc');
const gc = require('node:vm').runInNewContext('gc');
function allocated() {
  gc();
  gc();
  return Number(mallinfo2().uordblks);
}

/**
 * One round of every kind of call (deadLetter, stats and the listings included); `t` is
 * reopened every 100 rounds by the caller.
 */
async function round(t, n) {
  await t.publish(`g${n % 16}`, { n }, { priority: n % 5, routingKey: `k${n % 3}` });
  const first = await t.claim('w');
  await t.nack(first);
  const lease = await t.claim('w', { routingKeys: ['k0', 'k1', 'k2'] });
  await t.ack(lease);
  await assert.rejects(t.ack(lease), (e) => e instanceof HarelError && e.code === 'HAREL_ERR_LEASE_LOST');
  await assert.rejects(t.publish('g', '{}', { priority: 9 }), (e) => e.code === 'HAREL_ERR_ARGUMENT');
  // the dead letters and the looks: the stats and pages copied out and freed
  await t.publish(`x${n % 4}`, { n, pad: 'p'.repeat(200) }, { routingKey: 'x' });
  const x = await t.claim('w', { routingKeys: ['x'] });
  await t.deadLetter(x, `reason ${n} ${'r'.repeat(100)}`);
  const stats = await t.stats();
  assert.equal(stats.dead, 1);
  assert.ok(Array.isArray((await t.groups({ limit: 50 })).groups));
  await t.peek(`g${n % 16}`);
  const { letters } = await t.deadLetters({ limit: 10 });
  assert.equal(await t.purgeDead({ seqs: letters.map((d) => d.seq) }), 1);
  await assert.rejects(t.groups({ cursor: `bad ${n}` }), (e) => e.code === 'HAREL_ERR_ARGUMENT');
}

async function rounds(path, count) {
  let t = await Transport.open(path, { synchronousFull: false });
  for (let n = 0; n < count; n++) {
    if (n % 100 === 99) {
      await t.close();
      t = await Transport.open(path, { synchronousFull: false });
    }
    await round(t, n);
  }
  await t.close();
}

test('the native side does not grow with the number of calls', async () => {
  const path = box.db('leak');
  await rounds(path, 1500);
  const before = allocated();
  const count = 3000;
  await rounds(path, count);
  const grown = allocated() - before;
  // A leaked lease (a struct and three strings: ~150 bytes in malloc's chunks) or error
  // message, two of each per round, would be 600+ KB. Without leaks the allocator's and
  // V8's own noise was 50-120 KB here, the same after 1,000 or 16,000 rounds.
  console.log(`native heap after ${count} rounds (${count * 17} calls, ${count / 100} opens): ${grown >= 0 ? '+' : ''}${grown} bytes`);
  assert.ok(grown < 300_000, `the native heap grew by ${grown} bytes over ${count} rounds`);
});
