'use strict';
// Publishing inside the application's transaction (issue 24): begin() and its Tx (execute,
// query, publish, publishWith, commit, rollback), and transaction(body). Each call's mapping
// onto the C ABI: the values both ways, the outcomes of commit, every status and what it
// leaves the transaction in; the binding's own: a transaction's calls in call order, off the
// event loop, the transport's calls refused inside transaction(), close, garbage collection
// and a JS clock. The rules themselves are the Rust contract's (tests/common/contract.rs,
// "a_transaction_").

const assert = require('node:assert/strict');
const { setTimeout: sleep } = require('node:timers/promises');
const { test } = require('node:test');
const { Transport, Tx, HarelError } = require('..');
const { POOL_THREADS } = require('../lib/calls');
const { scratch, manualClock, rejectsWith } = require('./helpers');

const box = scratch();

require('node:v8').setFlagsFromString('--expose-gc');
const gc = require('node:vm').runInNewContext('gc');

const ORDERS = 'CREATE TABLE orders (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)';

/** A queue on a new file with the application's orders table; `options` for open. */
async function openWithOrders(options = {}) {
  const db = box.db();
  const t = await Transport.open(db, options);
  await t.transaction((tx) => tx.execute(ORDERS));
  return { db, t };
}

/** The names in the orders table, read in a transaction of `t`. */
async function orderNames(t) {
  const { value } = await t.transaction((tx) => tx.query('SELECT name FROM orders ORDER BY id'));
  return value.map(([name]) => name);
}

/** How long `promise` took to settle, in ms, and what it rejected with (or null). */
async function timed(promise) {
  const started = performance.now();
  let error = null;
  try {
    await promise;
  } catch (e) {
    error = e;
  }
  return { ms: performance.now() - started, error };
}

test('transaction(): the rows and the messages are committed together; it resolves { value, published }', async () => {
  const { db, t } = await openWithOrders();
  const result = await t.transaction(async (tx) => {
    assert.ok(tx instanceof Tx);
    await tx.execute('INSERT INTO orders (name) VALUES (?1)', ['o-17']);
    await tx.publish('order-17', { kind: 'order.placed' }, { priority: 2, routingKey: 'eu' });
    await tx.publishWith('order-17', '{"kind":"order.paid"}', { key: 'o-17/paid' });
    return 'done';
  });
  assert.deepEqual(result, {
    value: 'done',
    published: [{ seq: 1, duplicate: false, replaced: false }, { seq: 2, duplicate: false, replaced: false }],
  });
  assert.ok(result.published.every((p) => Object.isFrozen(p)), 'outcomes are frozen, as publishWith\'s');

  // Another transport on the file sees both.
  const other = await Transport.open(db);
  assert.deepEqual(await orderNames(other), ['o-17']);
  const lease = await other.claim('w', { minPriority: 2, routingKeys: ['eu'] });
  assert.deepEqual([lease.seq, lease.groupId, lease.event], [1, 'order-17', { kind: 'order.placed' }], 'priority and routing key reached the library');

  // A key seen before: a duplicate with the first message's seq, and nothing stored.
  const again = await t.transaction(async (tx) => {
    await tx.publishWith('order-17', {}, { key: 'o-17/paid' });
    await tx.publish('order-18', {});
  });
  assert.deepEqual(again, {
    value: undefined,
    published: [{ seq: 2, duplicate: true, replaced: false }, { seq: 3, duplicate: false, replaced: false }],
  });
  assert.equal((await other.stats()).messages, 3);

  // A body that is not async works too; no publish: published is empty.
  assert.deepEqual(await t.transaction(() => 42), { value: 42, published: [] });
  await other.close();
  await t.close();
});

test('begin(): execute and publish queue, query sees the transaction\'s own writes, commit resolves the outcomes in order', async () => {
  const { db, t } = await openWithOrders();
  const other = await Transport.open(db);
  const tx = t.begin();
  assert.ok(tx instanceof Tx);
  await tx.execute('INSERT INTO orders (name) VALUES (?)', ['a']);
  await tx.publish('g', { n: 1 });
  assert.deepEqual(await tx.query('SELECT name FROM orders'), [['a']], 'the query sees the queued insert');
  assert.equal((await other.stats()).messages, 0, 'nothing is visible outside before the commit');
  await tx.publishWith('g', { n: 2 }, { delay: 60 });
  assert.deepEqual(await tx.query('SELECT count(*) FROM orders WHERE name = ?1', ['b']), [[0]]);
  assert.deepEqual(await tx.query('SELECT name FROM orders WHERE name = ?1', ['b']), [], 'no rows: an empty array');
  const published = await tx.commit();
  assert.deepEqual(published, [{ seq: 1, duplicate: false, replaced: false }, { seq: 2, duplicate: false, replaced: false }],
    'the publish sent with a query comes back too');
  assert.deepEqual(await orderNames(other), ['a']);
  const stats = await other.stats();
  assert.deepEqual([stats.messages, stats.delayed], [2, 0], 'the delayed message is the group\'s second: the group is ready');
  await other.close();
  await t.close();
});

test('a transaction\'s calls keep their call order without awaiting each', async () => {
  const { t } = await openWithOrders();
  const tx = t.begin();
  const calls = [];
  for (let i = 0; i < 30; i++) {
    calls.push(tx.execute('INSERT INTO orders (name) VALUES (?)', [`n${i}`]));
    if (i % 10 === 0) calls.push(tx.publish(`g${i}`, { i }));
  }
  const rows = tx.query('SELECT name FROM orders ORDER BY id');
  const committed = tx.commit();
  await Promise.all(calls);
  assert.deepEqual((await rows).map(([name]) => name), Array.from({ length: 30 }, (_, i) => `n${i}`));
  assert.deepEqual((await committed).map((p) => p.seq), [1, 2, 3]);
  await t.close();
});

test('query: each value type both ways', async () => {
  const t = await Transport.open(box.db());
  await t.transaction(async (tx) => {
    const [row] = await tx.query("SELECT NULL, 7, -2.5, 'héllo 🎉', x'00ff10', x'', 9007199254740993, -9223372036854775808");
    assert.deepEqual(row, [null, 7, -2.5, 'héllo 🎉', Buffer.from([0, 255, 16]), Buffer.alloc(0), 9007199254740993n, -(2n ** 63n)]);
    assert.ok(Buffer.isBuffer(row[4]));

    const blob = new Uint8Array([9, 1, 2, 3]).subarray(1); // a view at an offset: its own bytes only
    const params = [
      null, undefined, true, false, 42, -0, 2 ** 60, 1.5, 1e300, 2n ** 63n - 1n, -(2n ** 63n), 'text ✓', '',
      Buffer.from('blob'), blob, Buffer.alloc(0),
    ];
    const sql = `SELECT ${params.map((_, i) => `typeof(?${i + 1}), ?${i + 1}`).join(', ')}`;
    const [typed] = await tx.query(sql, params);
    const pairs = [];
    for (let i = 0; i < typed.length; i += 2) pairs.push([typed[i], typed[i + 1]]);
    assert.deepEqual(pairs, [
      ['null', null],
      ['null', null],
      ['integer', 1],
      ['integer', 0],
      ['integer', 42],
      ['integer', 0],
      ['integer', 2n ** 60n], // exact: past 2^53 a bigint
      ['real', 1.5],
      ['real', 1e300], // integral but past int64: REAL
      ['integer', 2n ** 63n - 1n],
      ['integer', -(2n ** 63n)],
      ['text', 'text ✓'],
      ['text', ''],
      ['blob', Buffer.from('blob')],
      ['blob', Buffer.from([1, 2, 3])],
      ['blob', Buffer.alloc(0)],
    ]);
    // Several rows, row by row; a hole in params is NULL.
    const holed = Object.assign(new Array(2), { 0: 1 });
    assert.deepEqual(await tx.query('SELECT ?1, ?2 UNION ALL SELECT 3, 4', holed), [[1, null], [3, 4]]);
  });
  await t.close();
});

test('bad statements and parameters: HAREL_ERR_ARGUMENT at once, and the transaction goes on', async () => {
  const { t } = await openWithOrders();
  const tx = t.begin();
  await tx.execute('INSERT INTO orders (name) VALUES (?)', ['kept']);
  const refused = [
    // the binding's
    [[42], /sql must be a string/],
    [['SELECT 1\0'], /sql must not contain a NUL/],
    [['SELECT ?', 'x'], /params must be an array/],
    [['SELECT ?', { 0: 1 }], /params must be an array/],
    [['SELECT ?', [2n ** 63n]], /params\[0\] is outside int64/],
    [['SELECT ?', [-(2n ** 63n) - 1n]], /params\[0\] is outside int64/],
    [['SELECT ?, ?', [1, 'a\0b']], /params\[1\] must not contain a NUL/],
    [['SELECT ?', ['\ud800']], /params\[0\] is not valid Unicode/],
    [['SELECT ?', [{}]], /params\[0\] must be null, a boolean, a number, a bigint, a string or a Buffer\/Uint8Array, got object/],
    [['SELECT ?', [[1]]], /params\[0\] .* got an array/],
    [['SELECT ?', [new Date()]], /params\[0\]/],
    [['SELECT ?', [Symbol('s')]], /params\[0\]/],
    [['SELECT ?', [() => 1]], /params\[0\]/],
    [['SELECT ?', [new ArrayBuffer(2)]], /params\[0\]/],
    // the library's
    [[''], /sql/],
    [['SELECT ?', [Number.NaN]], /params\[0\].*finite/],
    [['SELECT ?', [Infinity]], /params\[0\].*finite/],
    [['SELECT ?', [-Infinity]], /params\[0\].*finite/],
  ];
  for (const [args, pattern] of refused) {
    await rejectsWith(assert, tx.execute(...args), 'HAREL_ERR_ARGUMENT', pattern);
    await rejectsWith(assert, tx.query(...args), 'HAREL_ERR_ARGUMENT', pattern);
  }
  assert.deepEqual(await tx.query('SELECT name FROM orders'), [['kept']], 'nothing of the refused calls was queued');
  await tx.commit();
  assert.deepEqual(await orderNames(t), ['kept']);
  await t.close();
});

test('bad publish arguments: HAREL_ERR_ARGUMENT at once, and the transaction goes on', async () => {
  const t = await Transport.open(box.db());
  const tx = t.begin();
  await tx.publish('g', { n: 1 });
  const refused = [
    // the binding's
    ['publish', [1, {}], /groupId must be a string/],
    ['publish', ['g\0', {}], /groupId must not contain a NUL/],
    ['publish', ['g', '{"a":"\0"}'], /event must not contain a NUL/],
    ['publish', ['g', undefined], /event can't be turned into JSON/],
    ['publish', ['g', {}, { priority: 1.5 }], /priority must be an integer/],
    ['publish', ['g', {}, { routingKey: 5 }], /routingKey must be a string or null/],
    ['publish', ['g', {}, { key: 'k' }], /unknown option "key"/],
    ['publish', ['g', {}, 'eu'], /options must be an object/],
    ['publishWith', ['g', {}, { key: 5 }], /key must be a string or null/],
    ['publishWith', ['g', {}, { delay: '10s' }], /delay must be a number/],
    ['publishWith', ['g', {}, { notBefore: -1 }], /notBefore must be epoch seconds >= 0/],
    ['publishWith', ['g', {}, { notBefore: new Date() }], /date.getTime\(\) \/ 1000/],
    ['publishWith', ['g', {}, { idempotencyKey: 'k' }], /unknown option "idempotencyKey"/],
    // the library's
    ['publish', ['', {}], /group_id/],
    ['publish', ['g', '{not json'], /event_json/],
    ['publish', ['g', {}, { priority: 9 }], /priority/],
    ['publish', ['g', {}, { routingKey: '' }], /routing_key/],
    ['publishWith', ['g', {}, { key: '' }], /key/],
    ['publishWith', ['g', {}, { delay: -1 }], /delay/],
    ['publishWith', ['g', {}, { delay: Number.NaN }], /delay/],
  ];
  for (const [method, args, pattern] of refused) {
    await rejectsWith(assert, tx[method](...args), 'HAREL_ERR_ARGUMENT', pattern);
  }
  await tx.publishWith('g', { n: 2 }, { key: 'k' });
  assert.deepEqual(await tx.commit(), [{ seq: 1, duplicate: false, replaced: false }, { seq: 2, duplicate: false, replaced: false }],
    'only the good publishes were queued');
  assert.equal((await t.stats()).messages, 2);
  await t.close();
});

test('a body that throws or rejects: rolled back, nothing kept, the same error rethrown', async () => {
  const { t } = await openWithOrders({ busyTimeout: 0.2 });
  const thrown = new Error('the application changed its mind');
  const rejected = await t.transaction(async (tx) => {
    await tx.execute('INSERT INTO orders (name) VALUES (?)', ['gone']);
    await tx.publish('g', {});
    await tx.query('SELECT 1'); // holds the connection and the write lock
    throw thrown;
  }).then(() => null, (e) => e);
  assert.equal(rejected, thrown, 'the very error the body threw');
  const notAnError = await t.transaction(() => {
    throw 'a string'; // eslint-disable-line no-throw-literal
  }).then(() => null, (e) => e);
  assert.equal(notAnError, 'a string');
  assert.deepEqual(await orderNames(t), []);
  assert.equal((await t.stats()).messages, 0);
  await t.publish('g', {}); // the connection was let go at once (no wait for the busy timeout)
  await t.close();
});

test('rollback(): nothing kept; the connection let go; again, and every call after it, as the rules say', async () => {
  const { t } = await openWithOrders({ busyTimeout: 0.2 });
  const tx = t.begin();
  await tx.execute('INSERT INTO orders (name) VALUES (?)', ['gone']);
  await tx.publish('g', {});
  await tx.query('SELECT 1');
  await tx.rollback();
  await tx.rollback(); // ended: nothing to do
  await t.publish('h', {});
  assert.deepEqual(await orderNames(t), []);
  assert.equal((await t.stats()).messages, 1, 'only the publish made after the rollback');
  for (const call of [() => tx.execute('SELECT 1'), () => tx.query('SELECT 1'), () => tx.publish('g', {}),
    () => tx.publishWith('g', {}), () => tx.commit()]) {
    await rejectsWith(assert, call(), 'HAREL_ERR_ARGUMENT', /the transaction was rolled back: begin a new one/);
  }
  // Disposing rolls back unless committed.
  const scoped = t.begin();
  await scoped.publish('g', {});
  await scoped[Symbol.asyncDispose]();
  await rejectsWith(assert, scoped.commit(), 'HAREL_ERR_ARGUMENT', /rolled back/);
  assert.equal((await t.stats()).messages, 1);
  await t.close();
});

test('after commit every call is refused, but rollback', async () => {
  const t = await Transport.open(box.db());
  const tx = t.begin();
  await tx.publish('g', {});
  await tx.commit();
  for (const call of [() => tx.execute('SELECT 1'), () => tx.query('SELECT 1'), () => tx.publish('g', {}),
    () => tx.publishWith('g', {}), () => tx.commit()]) {
    await rejectsWith(assert, call(), 'HAREL_ERR_ARGUMENT', /the transaction was committed: begin a new one/);
  }
  await tx.rollback();
  await tx[Symbol.asyncDispose]();
  assert.equal((await t.stats()).messages, 1, 'the rollback after the commit undid nothing');
  await t.close();
});

test('a failing statement: HAREL_ERR_DATABASE, the transaction rolled back and ended', async () => {
  const { t } = await openWithOrders();
  // At a query: what was queued before it is not kept; later calls name why.
  const tx = t.begin();
  await tx.execute('INSERT INTO orders (name) VALUES (?)', ['a']);
  await tx.publish('g', {});
  await tx.execute('INSERT INTO orders (name) VALUES (?)', ['a']); // queued: its error comes with the query
  await rejectsWith(assert, tx.query('SELECT 1'), 'HAREL_ERR_DATABASE', /UNIQUE/);
  for (const call of [() => tx.execute('SELECT 1'), () => tx.query('SELECT 1'), () => tx.publish('g', {}), () => tx.commit()]) {
    await rejectsWith(assert, call(), 'HAREL_ERR_ARGUMENT', /the transaction was rolled back after an error: begin a new one/);
  }
  await tx.rollback();
  // The commit refused above freed the handle: the binding names why.
  await rejectsWith(assert, tx.commit(), 'HAREL_ERR_ARGUMENT', /the transaction was ended by its failed commit: begin a new one/);

  // The query's own error.
  const bad = t.begin();
  await rejectsWith(assert, bad.query('SELECT * FROM nowhere'), 'HAREL_ERR_DATABASE', /no such table/);
  await rejectsWith(assert, bad.execute('SELECT 1'), 'HAREL_ERR_ARGUMENT', /rolled back after an error/);
  await bad.rollback();

  // At the commit: nothing kept; later calls are refused.
  const late = t.begin();
  await late.execute('INSERT INTO orders (name) VALUES (?)', ['b']);
  await late.publish('g', {});
  await late.execute('INSERT INTO nowhere VALUES (1)');
  await rejectsWith(assert, late.commit(), 'HAREL_ERR_DATABASE', /no such table/);
  await rejectsWith(assert, late.execute('SELECT 1'), 'HAREL_ERR_ARGUMENT', /the transaction was ended by its failed commit/);
  await late.rollback();

  // Through transaction(): the error rejects it.
  await rejectsWith(assert, t.transaction(async (txn) => {
    await txn.execute('INSERT INTO orders (name) VALUES (?)', ['c']);
    await txn.execute('INSERT INTO orders (id, name) VALUES (1, ?)', ['c']);
  }), 'HAREL_ERR_DATABASE', /UNIQUE/);

  assert.deepEqual(await orderNames(t), []);
  assert.equal((await t.stats()).messages, 0);
  await t.close();
});

test('inside transaction() the transport\'s own calls are refused at once with HAREL_ERR_BUSY', async () => {
  const t = await Transport.open(box.db(), { busyTimeout: 5 });
  const elsewhere = await Transport.open(box.db());
  let later;
  await t.transaction(async (tx) => {
    await tx.query('SELECT 1');
    for (const call of [() => t.publish('g', {}), () => t.publishWith('g', {}), () => t.stats(), () => t.claim('w', { wait: 1 }),
      () => t.transaction(() => {})]) {
      const { ms, error } = await timed(call());
      assert.ok(error instanceof HarelError, `refused: ${error}`);
      assert.equal(error.code, 'HAREL_ERR_BUSY');
      assert.match(error.message, /inside a transaction\(\) of this transport.*tx\.publish.*transactions do not nest/);
      assert.ok(ms < 1000, `at once, not after the busy timeout: ${ms.toFixed(0)} ms`);
    }
    assert.throws(() => t.begin(), (e) => e.code === 'HAREL_ERR_BUSY' && /^begin: /.test(e.message));
    await elsewhere.publish('g', {}); // another transport is not refused
    await tx.publish('g', {});
    // A timer set inside fires after the commit: its call is not refused.
    later = new Promise((resolve) => setTimeout(() => resolve(t.publish('g', { late: true })), 50));
  });
  await later;
  assert.equal((await t.stats()).messages, 2);
  // A call on another transport's transaction inside is fine (the scope is the transport's).
  await elsewhere.transaction(async () => {
    await t.publish('g', {});
  });
  await elsewhere.close();
  await t.close();
});

test('a transaction nested on one transport without transaction(): the library fails it with HAREL_ERR_BUSY', async () => {
  const { t } = await openWithOrders({ busyTimeout: 0.2 });
  const outer = t.begin();
  await outer.execute('INSERT INTO orders (name) VALUES (?)', ['outer']);
  await outer.query('SELECT 1'); // holds the transport's connection
  const publish = await timed(t.publish('g', {}));
  assert.equal(publish.error && publish.error.code, 'HAREL_ERR_BUSY', String(publish.error));
  assert.match(publish.error.message, /transactions do not nest/);
  assert.ok(publish.ms >= 150, `the library waited the busy timeout: ${publish.ms.toFixed(0)} ms`);
  const inner = t.begin();
  await inner.execute('INSERT INTO orders (name) VALUES (?)', ['inner']);
  await inner.publish('g', {});
  await rejectsWith(assert, inner.commit(), 'HAREL_ERR_BUSY', /transactions do not nest/);
  await rejectsWith(assert, inner.execute('SELECT 1'), 'HAREL_ERR_ARGUMENT', /failed commit/);
  const inner2 = t.begin();
  await rejectsWith(assert, inner2.query('SELECT 1'), 'HAREL_ERR_BUSY', /transactions do not nest/);
  await inner2.rollback();
  assert.deepEqual(await outer.commit(), []);
  assert.deepEqual(await orderNames(t), ['outer']);
  assert.equal((await t.stats()).messages, 0);
  await t.close();
});

test('close() with open transactions: it waits for their calls in flight, rolls them back; their calls are refused but rollback', async () => {
  const { db, t } = await openWithOrders();
  const held = t.begin();
  await held.execute('INSERT INTO orders (name) VALUES (?)', ['held']);
  await held.publish('g', {});
  const querying = held.query('SELECT count(*) FROM orders'); // in flight: close() waits for it
  const queued = t.begin();
  await queued.publish('g', {});
  const closing = t.close();
  assert.deepEqual(await querying, [[1]]);
  await closing;
  for (const tx of [held, queued]) {
    for (const call of [() => tx.execute('SELECT 1'), () => tx.query('SELECT 1'), () => tx.publish('g', {})]) {
      await rejectsWith(assert, call(), 'HAREL_ERR_ARGUMENT', /transport was closed: it was rolled back/);
    }
    await tx.rollback();
    await rejectsWith(assert, tx.commit(), 'HAREL_ERR_ARGUMENT', /the transaction was rolled back: begin a new one/);
  }
  assert.throws(() => t.begin(), (e) => e.code === 'HAREL_ERR_CLOSED');
  await rejectsWith(assert, t.transaction(() => {}), 'HAREL_ERR_CLOSED');
  const again = await Transport.open(db);
  assert.deepEqual(await orderNames(again), []);
  assert.equal((await again.stats()).messages, 0);
  await again.close();
});

test('many transactions in flight on separate transports on one file: every row and message once', async () => {
  const { db, t: first } = await openWithOrders({ busyTimeout: 30 });
  const transports = [first];
  for (let i = 1; i < 6; i++) transports.push(await Transport.open(db, { busyTimeout: 30, synchronousFull: false }));
  const perTransport = 10;
  const results = await Promise.all(transports.flatMap((t, i) => Array.from({ length: perTransport }, (_, n) =>
    t.transaction(async (tx) => {
      await tx.execute('INSERT INTO orders (name) VALUES (?)', [`${i}-${n}`]);
      await tx.publish(`g${i}`, { i, n });
      return `${i}-${n}`;
    }))));
  const total = transports.length * perTransport;
  const seqs = results.map((r) => r.published[0].seq);
  assert.equal(new Set(seqs).size, total, 'each transaction its own message');
  assert.deepEqual((await orderNames(first)).sort(), results.map((r) => r.value).sort());
  assert.equal((await first.stats()).messages, total);
  for (const i of transports.keys()) {
    // each group's FIFO holds its transport's messages in the order their commits made them
    const mine = results.filter((r) => r.value.startsWith(`${i}-`)).map((r) => r.published[0].seq).sort((a, b) => a - b);
    assert.deepEqual((await first.peek(`g${i}`)).messages.map((m) => m.seq), mine);
  }
  await Promise.all(transports.map((t) => t.close()));
});

test('transactions that query on one transport run one at a time: each sees the one before', async () => {
  // Each one waiting for the connection holds a pool thread while the one holding it needs a
  // thread for its next call: fewer than the pool's threads (see the README).
  const n = POOL_THREADS - 1;
  const { t } = await openWithOrders({ busyTimeout: 30 });
  const seen = await Promise.all(Array.from({ length: n }, (_, i) => t.transaction(async (tx) => {
    const [[count]] = await tx.query('SELECT count(*) FROM orders');
    await sleep(20); // holding the write lock: the others wait
    await tx.execute('INSERT INTO orders (name) VALUES (?)', [`after-${count}`]);
    await tx.publish('g', { count });
    return count;
  })));
  assert.deepEqual(seen.map((r) => r.value).sort(), Array.from({ length: n }, (_, i) => i), 'no two read the same count');
  assert.equal((await orderNames(t)).length, n);
  await t.close();
});

test('the event loop keeps running while a query waits for the write lock another transport holds', async () => {
  const { db, t } = await openWithOrders();
  const other = await Transport.open(db, { busyTimeout: 30 });
  const holder = t.begin();
  await holder.execute('INSERT INTO orders (name) VALUES (?)', ['first']);
  await holder.query('SELECT 1'); // BEGIN IMMEDIATE: the write lock, until the commit
  setTimeout(() => holder.commit(), 1500);
  let ticks = 0;
  const timer = setInterval(() => {
    ticks += 1;
  }, 10);
  const started = performance.now();
  const waiter = other.begin();
  let rows;
  try {
    rows = await waiter.query("INSERT INTO orders (name) VALUES ('second') RETURNING (SELECT count(*) FROM orders)");
  } finally {
    clearInterval(timer);
  }
  const elapsed = performance.now() - started;
  await waiter.commit();
  assert.deepEqual(rows, [[2]], 'it ran once the holder had committed: it counts the holder\'s row and its own');
  assert.ok(elapsed >= 1000, `the query waited for the lock (${elapsed.toFixed(0)} ms)`);
  assert.ok(ticks >= 20, `the timer kept firing while the query waited: ${ticks} ticks in ${elapsed.toFixed(0)} ms`);
  await other.close();
  await t.close();
});

test('a transaction dropped unfinished is rolled back and freed when collected', async () => {
  const { t } = await openWithOrders({ busyTimeout: 0.2 });
  await (async () => {
    const tx = t.begin();
    await tx.execute('INSERT INTO orders (name) VALUES (?)', ['dropped']);
    await tx.query('SELECT 1'); // holds the connection
  })();
  await rejectsWith(assert, t.publish('g', {}), 'HAREL_ERR_BUSY'); // still held: nothing collected yet
  let published = false;
  for (let i = 0; i < 50 && !published; i++) {
    gc();
    await sleep(20); // the finalizer runs, then the free on the pool
    published = await t.publish('g', {}).then(() => true, (e) => {
      if (e.code !== 'HAREL_ERR_BUSY') throw e;
      return false;
    });
  }
  assert.ok(published, 'the connection was let go once the transaction was collected');
  assert.deepEqual(await orderNames(t), []);
  await t.close();
});

test('a waiting claim wakes when a transaction commits its publish', async () => {
  const t = await Transport.open(box.db());
  const claim = t.claim('w', { wait: 10 });
  await sleep(50);
  const started = performance.now();
  const { published } = await t.transaction((tx) => tx.publish('g', { woke: true }));
  const lease = await claim;
  assert.deepEqual([lease.seq, lease.event], [published[0].seq, { woke: true }]);
  assert.ok(performance.now() - started < 2000, 'at once, not at the end of the wait');
  await t.ack(lease);
  await t.close();
});

test('a JS clock is read for the query and the commit, which stamps the publishes; a clock that throws fails the call', async () => {
  const clock = manualClock(1_000_000);
  let broken = false;
  const t = await Transport.open(box.db(), {
    clock: () => {
      if (broken) throw new Error('no time');
      return clock.fn();
    },
  });
  const tx = t.begin();
  await tx.publish('g', {});
  clock.advance(5);
  broken = true;
  await rejectsWith(assert, tx.query('SELECT 1'), 'HAREL_ERR_ARGUMENT', /the clock threw: no time/);
  await rejectsWith(assert, tx.commit(), 'HAREL_ERR_ARGUMENT', /the clock threw/);
  broken = false;
  await tx.commit(); // the transaction went on
  const [message] = (await t.peek('g')).messages;
  assert.equal(message.publishedAt, 1_000_005, 'stamped at the commit, by the clock');
  await t.close();
});

test('begin and transaction: their own argument checks; a Tx is made by begin()', async () => {
  const t = await Transport.open(box.db());
  for (const body of [undefined, null, 'tx => 1', {}]) {
    await rejectsWith(assert, t.transaction(body), 'HAREL_ERR_ARGUMENT', /body must be a function/);
  }
  assert.throws(() => new Tx(), TypeError);
  await t.close();
});
