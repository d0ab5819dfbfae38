'use strict';
// A call that waits for the database's write lock runs on the thread pool: the event loop
// goes on meanwhile. Another process (python3's sqlite3) holds the lock for 1.5 s, first
// while a claim waits, then while an open waits (open sets the schema up in a write
// transaction). And claims that wait for messages hold no pool thread at all: they watch
// the library's readiness descriptor from the event loop and claim, without waiting, only
// when it fires (lib/waiting.js). With 100 of them waiting in the process (Node's default
// pool of 4): fs.promises.stat is as quick as with none, a publish reaches a waiter within
// a few ms, nothing runs while nothing comes, and an abort, interrupt() or close() ends them
// at once and frees their watches.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { setTimeout: sleep } = require('node:timers/promises');
const { test } = require('node:test');
const { Transport, HarelError } = require('..');
const { scratch, holdWriteLock, openFds, quantile } = require('./helpers');

const box = scratch();
const HOLD_SECONDS = 1.5;

/** Runs `call` while a 10 ms timer ticks; what it resolved, how long it took, the ticks. */
async function ticking(call) {
  let ticks = 0;
  const timer = setInterval(() => {
    ticks += 1;
  }, 10);
  const started = performance.now();
  try {
    const result = await call();
    return { result, elapsed: performance.now() - started, ticks };
  } finally {
    clearInterval(timer);
  }
}

function assertWaitedAndTicked(what, { elapsed, ticks }) {
  assert.ok(elapsed >= 1000, `${what} waited for the lock (${elapsed.toFixed(0)} ms)`);
  // 1.5 s of 10 ms ticks is ~150; a blocked event loop would give 0 or 1.
  assert.ok(ticks >= 20, `the timer kept firing while ${what} waited: ${ticks} ticks in ${elapsed.toFixed(0)} ms`);
}

test('the event loop keeps running while a claim waits for the write lock', async () => {
  const db = box.db();
  const t = await Transport.open(db, { busyTimeout: 30 });
  await t.publish('g', { kind: 'k', id: '1', data: {} });
  const holder = await holdWriteLock(db, HOLD_SECONDS);
  const claim = await ticking(() => t.claim('w'));
  await holder.released();
  assert.ok(claim.result, 'the claim got the message once the lock was free');
  assert.equal(claim.result.groupId, 'g');
  assertWaitedAndTicked('the claim', claim);
  await t.ack(claim.result);
  await t.close();
});

test('the event loop keeps running while open waits for the write lock', async () => {
  const db = box.db();
  await (await Transport.open(db)).close(); // the file exists, in WAL mode, with the schema
  const holder = await holdWriteLock(db, HOLD_SECONDS);
  const open = await ticking(() => Transport.open(db, { busyTimeout: 30 }));
  await holder.released();
  assertWaitedAndTicked('open', open);
  const t = open.result;
  await t.publish('g', {});
  assert.equal((await t.claim('w')).groupId, 'g', 'the transport works');
  await t.close();
});

const WAITERS = 100;
const median = (xs) => quantile(xs, 0.5);

/** `n` fs.promises.stat calls, one after another: their latencies in ms. */
async function stats(n) {
  const times = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    await fs.promises.stat(__filename);
    times.push(performance.now() - started);
  }
  return times;
}

/**
 * `n` claims waiting on `t` (made by `claim(i)`), each with its outcome recorded:
 * resolves once all have made their first look and wait on the watch. A claim that failed
 * instead (the poll addon not loaded, say) never counts one: it fails the test.
 */
async function waiters(t, n, claim = (i) => t.claim(`w${i}`, { wait: 60 })) {
  const before = t.metrics().latency.claim.count;
  const list = Array.from({ length: n }, (_, i) => {
    const waiter = { i, settled: false, at: null, value: undefined, error: undefined };
    waiter.promise = claim(i).then(
      (value) => Object.assign(waiter, { settled: true, at: performance.now(), value }),
      (error) => Object.assign(waiter, { settled: true, at: performance.now(), error }),
    );
    return waiter;
  });
  while (t.metrics().latency.claim.count < before + n) {
    const failed = list.find((w) => w.error);
    if (failed) throw failed.error;
    await sleep(5);
  }
  await sleep(50);
  return list;
}

/** The claim-related call counts of `t`'s metrics. */
function claimCounts(t) {
  const { latency } = t.metrics();
  return { claim: latency.claim.count, claimWait: latency.claimWait.count, ackAndClaim: latency.ackAndClaim.count };
}

test(`while ${WAITERS} claims wait, fs.promises.stat is as quick as with none and the event loop ticks (the default pool of 4)`, async () => {
  assert.equal(process.env.UV_THREADPOOL_SIZE, undefined, 'this test is about the default pool');
  const opened = openFds();
  const t = await Transport.open(box.db());
  await stats(50); // warm-up
  const none = await stats(200);
  const fds = openFds();
  const list = await waiters(t, WAITERS, (i) =>
    i % 2 ? t.claim(`w${i}`, { wait: 60 }) : t.claimMany(`w${i}`, { max: 3, wait: 60, routingKeys: i % 4 ? null : ['k'] }));
  assert.equal(openFds() - fds <= 8, true, `two watches (two filters), not one per claim: ${openFds() - fds} descriptors more`);
  const work = await ticking(() => stats(200));
  const some = work.result;
  // 8 at once, twice the pool: none queues behind a waiting claim
  const burst = await ticking(() => Promise.all(Array.from({ length: 8 }, () => fs.promises.stat(__filename))));
  const figures = (xs) => `p50 ${median(xs).toFixed(3)} ms, p99 ${quantile(xs, 0.99).toFixed(3)} ms`;
  console.log(`fs.promises.stat, 200 one after another: no claim waiting ${figures(none)}; ${WAITERS} waiting ${figures(some)}; 8 at once ${burst.elapsed.toFixed(2)} ms`);
  // A claim holding a pool thread while it waits makes these seconds (the binding before
  // issue 26: 2.9 s with 4 claims waiting 3 s); the slack is for a shared machine.
  assert.ok(median(some) <= 2 * median(none) + 1, `p50 ${median(some).toFixed(3)} ms against ${median(none).toFixed(3)} ms`);
  assert.ok(quantile(some, 0.99) <= 2 * quantile(none, 0.99) + 10, `p99 ${quantile(some, 0.99).toFixed(3)} ms against ${quantile(none, 0.99).toFixed(3)} ms`);
  assert.ok(burst.elapsed < 100, `8 stats at once took ${burst.elapsed.toFixed(1)} ms`);
  assert.ok(work.ticks >= Math.floor(work.elapsed / 10) / 2, `the timer kept firing: ${work.ticks} ticks in ${work.elapsed.toFixed(0)} ms`);
  assert.equal(list.filter((w) => w.settled).length, 0, 'all still wait');
  t.interrupt();
  await Promise.all(list.map((w) => w.promise));
  assert.ok(list.every((w) => w.error && w.error.code === 'HAREL_ERR_INTERRUPTED'));
  await t.close();
  assert.equal(openFds(), opened, 'close freed the watches (idle since their last waiter left)');
});

test(`a publish reaches one of ${WAITERS} waiters within 10 ms (median of 15), and each goes to one waiter`, async () => {
  const db = box.db();
  const t = await Transport.open(db);
  const publisher = await Transport.open(db);
  const list = await waiters(t, WAITERS);
  const latencies = [];
  for (let i = 0; i < 15; i++) {
    await publisher.publish(`g${i}`, { i });
    const published = performance.now();
    let woken;
    while (!(woken = list.find((w) => w.settled && w.value && w.value.groupId === `g${i}`))) await sleep(0);
    latencies.push(woken.at - published);
    await sleep(20);
  }
  console.log(`a publish reached one of ${WAITERS} waiters: p50 ${median(latencies).toFixed(2)} ms, max ${Math.max(...latencies).toFixed(2)} ms after it resolved`);
  assert.ok(median(latencies) < 10, `median ${median(latencies).toFixed(2)} ms: ${latencies.map((x) => x.toFixed(1)).join(' ')}`);
  const got = list.filter((w) => w.settled);
  assert.equal(got.length, 15, 'one waiter per message');
  assert.ok(got.every((w) => w.value && w.value.workerId === `w${w.i}`), "each claimed with its own worker id");
  t.interrupt();
  await Promise.all(list.map((w) => w.promise));
  await t.ackMany(got.map((w) => w.value));
  await t.close();
  await publisher.close();
});

test(`no claim transaction while ${WAITERS} claims wait and nothing comes`, async () => {
  const t = await Transport.open(box.db());
  await t.publish('held', {});
  await t.ack(await t.claim('w')); // nothing leased or parked: no timer pending
  const list = await waiters(t, WAITERS);
  const before = claimCounts(t);
  await sleep(1000);
  const after = claimCounts(t);
  console.log(`over 1 s of ${WAITERS} claims waiting: claims ${before.claim} -> ${after.claim}, claimWait ${before.claimWait} -> ${after.claimWait}`);
  assert.deepEqual(after, before, 'no claim made while idle');
  assert.equal(before.claimWait, 0, 'the claims made for waits are non-waiting ones (timed as claim)');
  t.interrupt();
  await Promise.all(list.map((w) => w.promise));
  await t.close();
});

test(`aborting, interrupting and closing with ${WAITERS} waiters: each ends at once, the watches are freed`, async () => {
  const fds = openFds();
  const t = await Transport.open(box.db());
  const controllers = Array.from({ length: WAITERS }, () => new AbortController());
  let list = await waiters(t, WAITERS, (i) => t.claim(`w${i}`, { wait: 60, signal: controllers[i].signal }));
  let started = performance.now();
  for (const c of controllers) c.abort();
  await Promise.all(list.map((w) => w.promise));
  assert.ok(list.every((w) => w.error && w.error.name === 'AbortError'), 'AbortError each');
  assert.ok(Math.max(...list.map((w) => w.at - started)) < 100, 'at once');

  list = await waiters(t, WAITERS, (i) => t.claimMany(`w${i}`, { max: 2, wait: 60, minPriority: i % 3 }));
  started = performance.now();
  t.interrupt();
  await Promise.all(list.map((w) => w.promise));
  assert.ok(list.every((w) => w.error instanceof HarelError && w.error.code === 'HAREL_ERR_INTERRUPTED'));
  assert.match(list[0].error.message, /^claimMany: Transport\.interrupt\(\) was called while it waited; nothing was claimed$/);
  assert.ok(Math.max(...list.map((w) => w.at - started)) < 100, 'at once');

  list = await waiters(t, WAITERS);
  started = performance.now();
  await t.close();
  const closing = performance.now() - started;
  await Promise.all(list.map((w) => w.promise));
  assert.ok(list.every((w) => w.error && w.error.code === 'HAREL_ERR_INTERRUPTED' && /the transport was closed while it waited/.test(w.error.message)));
  assert.ok(closing < 500, `close took ${closing.toFixed(0)} ms`);
  assert.equal(openFds(), fds, 'the watches and the transport are gone');
});

test('waits with different filters: a message goes to a waiter whose filter takes it, one watch per filter', async () => {
  const db = box.db();
  const t = await Transport.open(db);
  const publisher = await Transport.open(db);
  const fds = openFds();
  const filters = {
    eu: { routingKeys: ['eu'] },
    us: { routingKeys: ['us'] },
    euUs: { routingKeys: ['us', 'eu', 'us'] }, // the same set as usEu: one watch
    usEu: { routingKeys: ['eu', 'us'] },
    high: { minPriority: 3 },
  };
  const names = Object.keys(filters);
  const list = await waiters(t, names.length, (i) => t.claim(names[i], { wait: 30, ...filters[names[i]] }));
  assert.ok(openFds() - fds <= 4 + 3 * 3, `four watches: ${openFds() - fds} descriptors more`);
  const winner = async (groupId) => {
    while (!list.some((w) => w.settled && w.value && w.value.groupId === groupId)) await sleep(1);
    return names[list.find((w) => w.value && w.value.groupId === groupId).i];
  };
  await publisher.publish('low-us', {}, { routingKey: 'us' });
  const first = await winner('low-us');
  assert.ok(['us', 'euUs', 'usEu'].includes(first), first);
  await publisher.publish('high-none', {}, { priority: 4 });
  assert.equal(await winner('high-none'), 'high');
  await publisher.publish('low-none', {}); // no waiter takes it
  await publisher.publish('low-eu', {}, { routingKey: 'eu' });
  const second = await winner('low-eu');
  assert.ok(['eu', 'euUs', 'usEu'].includes(second), second);
  await sleep(100);
  assert.equal(list.filter((w) => w.settled).length, 3, 'the others still wait');
  assert.equal((await publisher.stats()).ready, 1, 'low-none: no waiter with a filter that takes it');
  t.interrupt();
  await Promise.all(list.map((w) => w.promise));
  await t.ackMany(list.filter((w) => w.value).map((w) => w.value));
  await t.close();
  await publisher.close();
});

test('waiters claim in the order they began waiting (FIFO); a batch goes to the first ones', async () => {
  const t = await Transport.open(box.db());
  const list = [];
  for (let i = 0; i < 6; i++) list.push(...(await waiters(t, 1, () => t.claim(`w${i}`, { wait: 30 }))));
  for (let i = 0; i < 3; i++) {
    await t.publish(`g${i}`, {});
    while (list.filter((w) => w.settled).length < i + 1) await sleep(1);
  }
  assert.deepEqual(list.filter((w) => w.settled).map((w) => w.value.workerId), ['w0', 'w1', 'w2']);
  await t.publishMany([{ groupId: 'a', event: {} }, { groupId: 'b', event: {} }]);
  while (list.filter((w) => w.settled).length < 5) await sleep(1);
  assert.deepEqual(list.filter((w) => w.settled).map((w) => w.value.workerId).slice(3).sort(), ['w3', 'w4']);
  assert.equal(list[5].settled, false);
  t.interrupt();
  await Promise.all(list.map((w) => w.promise));
  await t.ackMany(list.filter((w) => w.value).map((w) => w.value));
  await t.close();
});

test(`a lease's end and a park's end (a nack with a delay) wake one of ${WAITERS} waiters`, async () => {
  const t = await Transport.open(box.db());
  await t.publishMany([{ groupId: 'leased', event: {} }, { groupId: 'parked', event: {} }]);
  await t.claim('holder', { visibility: 0.5 }); // leased: lapses in 0.5 s
  await t.nack(await t.claim('holder'), { delay: 0.8 }); // parked for 0.8 s
  const started = performance.now();
  const list = await waiters(t, WAITERS);
  while (list.filter((w) => w.settled).length < 2) await sleep(5);
  const got = list.filter((w) => w.settled).sort((a, b) => a.at - b.at);
  const at = got.map((w) => w.at - started);
  console.log(`with ${WAITERS} waiting: the lapsed lease claimed after ${at[0].toFixed(0)} ms, the parked message after ${at[1].toFixed(0)} ms`);
  assert.deepEqual(got.map((w) => w.value.groupId), ['leased', 'parked']);
  assert.ok(at[0] >= 400 && at[0] < 800, `lease end: ${at[0].toFixed(0)} ms`);
  assert.ok(at[1] >= 700 && at[1] < 1100, `park end: ${at[1].toFixed(0)} ms`);
  t.interrupt();
  await Promise.all(list.map((w) => w.promise));
  await t.ackMany(got.map((w) => w.value));
  await t.close();
});

test(`another process's publish wakes one of ${WAITERS} waiters`, async () => {
  const db = box.db();
  const t = await Transport.open(db);
  const list = await waiters(t, WAITERS);
  const child = `
    const { Transport } = require(${JSON.stringify(path.resolve(__dirname, '..'))});
    (async () => {
      const t = await Transport.open(${JSON.stringify(db)});
      await t.publish('from-child', { pid: process.pid });
      const after = performance.timeOrigin + performance.now();
      await t.close();
      console.log(JSON.stringify({ after }));
    })();`;
  const stdout = await new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', child], { timeout: 30_000 }, (e, out) => (e ? reject(e) : resolve(out)));
  });
  const { after } = JSON.parse(stdout);
  while (!list.some((w) => w.settled)) await sleep(1);
  const woken = list.find((w) => w.settled);
  assert.equal(woken.value.groupId, 'from-child');
  const latency = performance.timeOrigin + woken.at - after;
  console.log(`one of ${WAITERS} waiters woken ${latency.toFixed(1)} ms after another process's publish committed`);
  assert.ok(latency < 500, `${latency.toFixed(0)} ms`);
  await sleep(50);
  assert.equal(list.filter((w) => w.settled).length, 1);
  t.interrupt();
  await Promise.all(list.map((w) => w.promise));
  await t.ack(woken.value);
  await t.close();
});

test('an idle watch lingers for the next claims with its filter, then is freed; few stay idle', async () => {
  const { settings } = require('../lib/waiting');
  const saved = { ...settings };
  Object.assign(settings, { lingerMs: 300, maxIdle: 2 });
  try {
    const t = await Transport.open(box.db());
    const base = openFds();
    let list = await waiters(t, 1);
    const watching = openFds();
    assert.ok(watching > base, 'a watch');
    t.interrupt();
    await list[0].promise;
    assert.equal(openFds(), watching, 'idle, it lingers');
    list = await waiters(t, 1, () => t.claim('again', { wait: 10 }));
    assert.equal(openFds(), watching, 'the next claim with its filter takes it up');
    await t.publish('g', {});
    await list[0].promise;
    assert.equal(list[0].value.groupId, 'g', 'polled again: the publish woke it');
    await t.ack(list[0].value);
    await sleep(300 + 200);
    // The queue keeps one inotify descriptor (its WAL's notices) from its first watch on.
    assert.equal(openFds(), base + 1, 'freed once idle for settings.lingerMs');

    list = await waiters(t, 3, (i) => t.claim('w', { wait: 10, minPriority: i }));
    const three = openFds();
    t.interrupt();
    await Promise.all(list.map((w) => w.promise));
    await sleep(50);
    assert.equal(openFds(), three - 3, 'three idle, one more than settings.maxIdle: the first freed (an epoll, an eventfd, a timerfd)');
    await sleep(300 + 200);
    assert.equal(openFds(), base + 1, "all freed but the queue's WAL notices");
    await t.close();
  } finally {
    Object.assign(settings, saved);
  }
});
