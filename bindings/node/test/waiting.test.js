'use strict';
// Waiting claims through the binding: claim and claimMany with `wait` return once the
// wait is over, or as soon as something is claimed — woken by another Transport's publish,
// by another process's, by a park's or a lease's end — and end early on an AbortSignal,
// interrupt() or close(), never leaving a lease behind. The binding waits on the event loop,
// watching the library's readiness descriptor, and makes only non-waiting C claims
// (lib/waiting.js); the last tests take its failures one by one (a rearm, a claim of a
// relay, the poll, the watch). eventloop.test.js has the tests with 100 waiters.

const assert = require('node:assert/strict');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { getEventListeners } = require('node:events');
const { setTimeout: sleep } = require('node:timers/promises');
const { test } = require('node:test');
const { Transport, HarelError, STATUS } = require('..');
const { load } = require('../lib/native');
const { scratch, manualClock, rejectsWith, holdWriteLock, openFds } = require('./helpers');
const poll = require('../lib/poll');

const box = scratch();
const PACKAGE = path.resolve(__dirname, '..');

/**
 * How long `call()`'s promise takes to settle, in ms, from before the call (on a loaded
 * machine the call itself can take longer than a wait's slack), and its outcome.
 */
async function timed(call) {
  const started = performance.now();
  let value;
  let error;
  try {
    value = await call();
  } catch (e) {
    error = e;
  }
  return { ms: performance.now() - started, value, error };
}

/** Epoch ms, on the clock a child process reads too. */
function epochMs() {
  return performance.timeOrigin + performance.now();
}

test('a waiting claim resolves null (claimMany: []) once its wait is over, short or long', async () => {
  const t = await Transport.open(box.db());
  const short = await timed(() => t.claim('w', { wait: 0.3 }));
  assert.equal(short.value, null);
  assert.ok(short.ms >= 290 && short.ms < 800, `wait 0.3 s took ${short.ms.toFixed(0)} ms`);
  const long = await timed(() => t.claimMany('w', { max: 5, wait: 2.2 }));
  assert.deepEqual(long.value, []);
  assert.ok(long.ms >= 2190 && long.ms < 3000, `wait 2.2 s took ${long.ms.toFixed(0)} ms`);
  const look = await timed(() => t.claim('w', { wait: 0 }));
  assert.equal(look.value, null);
  assert.ok(look.ms < 200, 'wait 0 looks once');
  await t.close();
});

test("a waiting claim is woken at once by another Transport's publish, early in its wait or later", async () => {
  const db = box.db();
  const waiter = await Transport.open(db);
  const publisher = await Transport.open(db);
  for (const after of [150, 1400]) {
    const claim = waiter.claimMany('w', { max: 3, wait: 10 });
    await sleep(after);
    await publisher.publish(`g${after}`, { after });
    const published = performance.now();
    const leases = await claim;
    const latency = performance.now() - published;
    console.log(`woken ${latency.toFixed(1)} ms after another Transport's publish (published ${after} ms into the wait)`);
    assert.deepEqual(leases.map((l) => l.groupId), [`g${after}`]);
    assert.ok(latency < 150, `woken ${latency.toFixed(0)} ms after the publish`);
    await waiter.ackMany(leases);
  }
  await waiter.close();
  await publisher.close();
});

test("a waiting claim is woken by another process's publish", async () => {
  const db = box.db();
  const t = await Transport.open(db);
  const claim = t.claim('w', { wait: 20 }).then((lease) => ({ lease, at: epochMs() }));
  await sleep(300); // the claim waits (past its first look) before the child starts
  const child = `
    const { Transport } = require(${JSON.stringify(PACKAGE)});
    (async () => {
      const t = await Transport.open(${JSON.stringify(db)});
      await new Promise((resolve) => setTimeout(resolve, 1200)); // over a second into the wait
      const before = performance.timeOrigin + performance.now();
      await t.publish('from-child', { pid: process.pid });
      const after = performance.timeOrigin + performance.now();
      await t.close();
      console.log(JSON.stringify({ before, after }));
    })();`;
  const { stdout } = await new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', child], { timeout: 30_000 }, (e, out, err) => (e ? reject(e) : resolve({ stdout: out, stderr: err })));
  });
  const { before, after } = JSON.parse(stdout);
  const { lease, at } = await claim;
  assert.equal(lease.groupId, 'from-child');
  const latency = at - after;
  console.log(`woken ${latency.toFixed(1)} ms after another process's publish committed (${(at - before).toFixed(1)} ms after it began)`);
  assert.ok(at - before < 500, `woken ${(at - before).toFixed(0)} ms after the other process began its publish`);
  await t.ack(lease);
  await t.close();
});

test("a waiting claim wakes at a park's end and at a lease's end", async () => {
  const t = await Transport.open(box.db());
  await t.publish('parked', {});
  const first = await t.claim('w1');
  await t.nack(first, { delay: 0.6 });
  const parked = await timed(() => t.claim('w2', { wait: 5 }));
  assert.equal(parked.value.groupId, 'parked');
  assert.ok(parked.ms >= 550 && parked.ms < 900, `woken ${parked.ms.toFixed(0)} ms after a 0.6 s park began`);
  await t.ack(parked.value);
  await t.publish('leased', {});
  await t.claim('w1', { visibility: 0.5 });
  const leaseEnd = await timed(() => t.claim('w2', { wait: 5 }));
  assert.equal(leaseEnd.value.groupId, 'leased');
  assert.ok(leaseEnd.ms >= 450 && leaseEnd.ms < 800, `woken ${leaseEnd.ms.toFixed(0)} ms after a 0.5 s lease began`);
  await t.ack(leaseEnd.value);
  await t.close();
});

test('an AbortSignal ends a wait at once: AbortError (or its reason), no lease left behind, listeners removed', async () => {
  const t = await Transport.open(box.db());
  const controller = new AbortController();
  const claim = timed(() => t.claimMany('w', { max: 4, wait: 30, signal: controller.signal }));
  await sleep(1200); // well into the wait
  const aborted = performance.now();
  controller.abort();
  const { error, ms } = await claim;
  const late = performance.now() - aborted;
  assert.ok(error instanceof DOMException && error.name === 'AbortError', `rejected with ${error}`);
  assert.equal(error, controller.signal.reason);
  assert.ok(late < 100, `ended ${late.toFixed(1)} ms after the abort (${ms.toFixed(0)} ms in all)`);
  assert.equal(getEventListeners(controller.signal, 'abort').length, 0, 'the listener was removed');

  const reason = new Error('shutting down');
  const custom = new AbortController();
  const single = t.claim('w', { wait: 30, signal: custom.signal });
  setTimeout(() => custom.abort(reason), 50);
  await assert.rejects(single, (e) => e === reason);
  const s = await t.stats();
  assert.deepEqual([s.leased, s.messages], [0, 0]);

  // One signal for many claims (a worker's lifetime): none leaves its listener behind.
  const lifetime = new AbortController();
  await t.publish('g', {});
  for (let i = 0; i < 20; i++) {
    const lease = await t.claim('w', { wait: 0.01, signal: lifetime.signal });
    if (lease) await t.nack(lease);
  }
  assert.equal(getEventListeners(lifetime.signal, 'abort').length, 0);
  await t.close();
});

test('an already aborted signal rejects at once, calling nothing', async () => {
  const clock = manualClock(1000);
  let reads = 0;
  const t = await Transport.open(box.db(), {
    clock: () => {
      reads += 1;
      return clock.now;
    },
  });
  await t.publish('g', {});
  const before = reads;
  const controller = new AbortController();
  controller.abort();
  await assert.rejects(t.claim('w', { wait: 5, signal: controller.signal }), { name: 'AbortError' });
  await assert.rejects(t.claimMany('w', { max: 1, signal: controller.signal }), { name: 'AbortError' });
  assert.equal(reads, before, 'no call reached the library (each would read the clock)');
  assert.equal((await t.claim('w')).groupId, 'g', 'the message is still there');
  await t.close();
});

test('aborting as a claim takes a message: it resolves the leases or rejects having claimed none, never in between', async () => {
  const t = await Transport.open(box.db(), { synchronousFull: false });
  const outcomes = { leases: 0, aborted: 0 };
  for (let i = 0; i < 200; i++) {
    await t.publishMany([{ groupId: `a${i}`, event: {} }, { groupId: `b${i}`, event: {} }]);
    const controller = new AbortController();
    const claim = t.claimMany('w', { max: 2, wait: 5, signal: controller.signal });
    if (i % 2) controller.abort();
    else queueMicrotask(() => controller.abort());
    let leases = [];
    try {
      leases = await claim;
      outcomes.leases += 1;
    } catch (e) {
      assert.equal(e.name, 'AbortError');
      outcomes.aborted += 1;
    }
    const s = await t.stats();
    assert.equal(s.leased, leases.length, `round ${i}: the leases in flight are the ones resolved`);
    await t.ackMany(leases);
    await t.purge();
  }
  console.log(`abort racing a claim, 200 rounds: ${outcomes.leases} resolved their leases, ${outcomes.aborted} claimed nothing`);
  assert.equal(outcomes.leases + outcomes.aborted, 200);
  await t.close();
});

test('interrupt() ends the waits in progress with HAREL_ERR_INTERRUPTED; later claims wait as usual', async () => {
  const t = await Transport.open(box.db());
  const waits = [() => t.claim('w1', { wait: 30 }), () => t.claimMany('w2', { max: 3, wait: 30 })].map(timed);
  await sleep(100);
  t.interrupt();
  for (const { error, ms } of await Promise.all(waits)) {
    assert.ok(error instanceof HarelError, String(error));
    assert.deepEqual([error.code, error.status], ['HAREL_ERR_INTERRUPTED', -6]);
    assert.match(error.message, /^claim(Many)?: Transport\.interrupt\(\) was called while it waited; nothing was claimed$/);
    assert.ok(ms < 400, `interrupted after ${ms.toFixed(0)} ms`);
  }
  const later = t.claim('w3', { wait: 10 });
  await sleep(100);
  await t.publish('g', {});
  const lease = await later;
  assert.equal(lease.groupId, 'g', 'a claim made after interrupt() waited and got the message');
  await t.ack(lease);
  await t.close();
});

test('close() interrupts the claims that wait and does not hang behind them', async () => {
  const t = await Transport.open(box.db());
  const waits = Array.from({ length: 10 }, (_, i) => timed(() => t.claim(`w${i}`, { wait: 60 })));
  await sleep(200);
  const closing = await timed(() => t.close());
  assert.ok(closing.ms < 500, `close took ${closing.ms.toFixed(0)} ms`);
  for (const { error } of await Promise.all(waits)) {
    assert.equal(error && error.code, 'HAREL_ERR_INTERRUPTED');
    assert.match(error.message, /the transport was closed while it waited/);
  }
  await rejectsWith(assert, t.claim('w', { wait: 1 }), 'HAREL_ERR_CLOSED');
});

test('8 concurrent waiters and one publish: exactly one gets it, the others time out', async () => {
  const db = box.db();
  const t = await Transport.open(db);
  const publisher = await Transport.open(db);
  const waiters = Array.from({ length: 8 }, (_, i) => timed(() => t.claim(`w${i}`, { wait: 2 })));
  await sleep(300);
  await publisher.publish('only', {});
  const results = await Promise.all(waiters);
  const got = results.filter((r) => r.value !== null);
  assert.equal(got.length, 1, 'exactly one waiter got the message');
  assert.ok(got[0].ms < 600, `it got it ${got[0].ms.toFixed(0)} ms into the wait`);
  for (const r of results.filter((x) => x.value === null)) {
    assert.ok(r.ms >= 1990 && r.ms < 3300, `a waiter timed out after ${r.ms.toFixed(0)} ms (wait 2 s)`);
  }
  await t.ack(got[0].value);
  await t.close();
  await publisher.close();
});

test('12 waiters all get their messages at once when 12 groups arrive', async () => {
  const t = await Transport.open(box.db());
  const waiters = Array.from({ length: 12 }, (_, i) => t.claim(`w${i}`, { wait: 20 }));
  await sleep(1500);
  const published = performance.now();
  await t.publishMany(Array.from({ length: 12 }, (_, i) => ({ groupId: `g${i}`, event: { i } })));
  const leases = await Promise.all(waiters);
  const ms = performance.now() - published;
  assert.equal(new Set(leases.map((l) => l.groupId)).size, 12);
  assert.ok(ms < 1000, `all 12 claimed within ${ms.toFixed(0)} ms of the publish`);
  await t.ackMany(leases);
  await t.close();
});

test('with a JS clock, a waiting claim holds up none of the transport\'s other calls', async () => {
  const clock = manualClock(5000);
  const t = await Transport.open(box.db(), { clock: clock.fn });
  const claim = timed(() => t.claim('w', { wait: 10 }));
  await sleep(100);
  const publish = await timed(() => t.publish('g', {}));
  assert.ok(publish.ms < 500, `the publish took ${publish.ms.toFixed(0)} ms`);
  const { value, ms } = await claim;
  assert.equal(value.groupId, 'g');
  assert.ok(ms < 2000, `the claim had it ${ms.toFixed(0)} ms into its wait`);
  assert.equal(value.lockExpiry, 5030, 'read the JS clock');
  await t.ack(value);
  await t.close();
});

/** Resolves once this process has `n` descriptors open again (a watch is freed on the pool). */
async function descriptors(n, what) {
  for (let i = 0; i < 100 && openFds() !== n; i++) await sleep(10);
  assert.equal(openFds(), n, what);
}

/**
 * Resolves once `t` has made `n` more claims than `before` (the first looks of `waits`,
 * timed), or once one of them has ended: one that failed before its claim (the poll addon
 * not loaded, say) never counts one, and the test's checks say what it got.
 */
async function claimsMade(t, before, n, waits) {
  let ended = false;
  for (const wait of waits) wait.then(() => (ended = true));
  while (!ended && t.metrics().latency.claim.count < before + n) await sleep(5);
  await sleep(30);
}

test('a claim in flight when its waiter is aborted resolves what it claimed: no lease left behind, none handed on', async () => {
  const db = box.db();
  const t = await Transport.open(db, { busyTimeout: 10 });
  await t.publish('g', {});
  const holder = await holdWriteLock(db, 0.8); // the claim's transaction waits for the lock
  const controller = new AbortController();
  const claim = timed(() => t.claim('w', { wait: 5, signal: controller.signal }));
  await sleep(200);
  controller.abort();
  const { value, error, ms } = await claim;
  await holder.released();
  assert.equal(error, undefined, `rejected with ${error}`);
  assert.equal(value.groupId, 'g', 'the lease it claimed, though the signal aborted meanwhile');
  assert.ok(ms >= 500, `it resolved once its claim was back (${ms.toFixed(0)} ms)`);
  assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
  assert.equal((await t.stats()).leased, 1, 'the lease is the one resolved');
  await t.ack(value);
  await t.close();
});

test('a rearm that fails rejects the claims waiting on that watch with its error', async () => {
  const db = box.db();
  let broken = false;
  const t = await Transport.open(db, {
    clock: () => {
      if (broken) throw new Error('clock unplugged');
      return Date.now() / 1000;
    },
  });
  const publisher = await Transport.open(db);
  const before = t.metrics().latency.claim.count;
  const waits = [() => t.claim('w1', { wait: 30 }), () => t.claimMany('w2', { max: 2, wait: 30 })].map(timed);
  await claimsMade(t, before, 2, waits);
  broken = true; // the rearm reads the clock first
  await publisher.publish('g', {});
  const [a, b] = await Promise.all(waits);
  for (const { error } of [a, b]) {
    assert.ok(error instanceof HarelError, String(error));
    assert.equal(error.code, 'HAREL_ERR_ARGUMENT');
    assert.match(error.message, /the clock threw: clock unplugged/);
  }
  assert.notEqual(a.error, b.error, 'each its own error object');
  broken = false;
  const lease = await t.claim('w3', { wait: 5 });
  assert.equal(lease.groupId, 'g', 'a later claim waits (on the same watch, idle meanwhile) and claims as usual');
  await t.ack(lease);
  await t.close();
  await publisher.close();
});

test("a relay's claim that fails rejects its waiter; the next waiter claims at the next turn", async () => {
  const db = box.db();
  const t = await Transport.open(db);
  const publisher = await Transport.open(db);
  const before = t.metrics().latency.claim.count;
  const first = timed(() => t.claim('w1', { wait: 30 }));
  await claimsMade(t, before, 1, [first]);
  const second = timed(() => t.claim('w2', { wait: 30 }));
  await claimsMade(t, before, 2, [first, second]);
  // The next harel_transport_claim fails with HAREL_ERR_BUSY (as one would after
  // busyTimeout): that is w1's, in the relay the publish starts.
  const f = load();
  const real = f.claim;
  f.claim = {
    async: (...args) => {
      f.claim = real;
      setImmediate(() => args.at(-1)(null, STATUS.HAREL_ERR_BUSY));
    },
  };
  try {
    await publisher.publish('g', {});
    const [one, two] = await Promise.all([first, second]);
    assert.equal(one.error && one.error.code, 'HAREL_ERR_BUSY', String(one.error));
    assert.equal(one.error.message, 'claim: HAREL_ERR_BUSY (the library gave no message)');
    assert.equal(two.value && two.value.groupId, 'g', `w2 claimed it: ${two.error}`);
    assert.equal(two.value.workerId, 'w2');
    await t.ack(two.value);
  } finally {
    f.claim = real;
  }
  await t.close();
  await publisher.close();
});

test("a watch whose descriptor can't be polled: HAREL_ERR_PANIC for its claim, the C watch freed", async () => {
  const t = await Transport.open(box.db());
  // The queue keeps one inotify descriptor (its WAL's notices) from its first watch on.
  const fds = openFds() + 1;
  const real = poll.watch;
  poll.watch = () => {
    throw Object.assign(new Error('uv_poll_init: too many open files (EMFILE)'), { code: 'EMFILE' });
  };
  let result;
  try {
    result = await timed(() => t.claimMany('w', { max: 1, wait: 5 }));
  } finally {
    poll.watch = real;
  }
  assert.ok(result.error instanceof HarelError, String(result.error));
  assert.deepEqual([result.error.code, result.error.status], ['HAREL_ERR_PANIC', -99]);
  assert.equal(result.error.message, "claimMany: could not poll the watch's descriptor: uv_poll_init: too many open files (EMFILE)");
  assert.equal(result.error.cause.code, 'EMFILE');
  assert.ok(result.ms < 200, 'at once');
  await descriptors(fds, 'the C watch was freed');
  const later = t.claim('w', { wait: 5 });
  await sleep(50);
  await t.publish('g', {});
  assert.equal((await later).groupId, 'g');
  await t.close();
});

test('a poll that reports an error rejects the claims on that watch with HAREL_ERR_PANIC; other watches go on', async () => {
  const fds = openFds();
  const t = await Transport.open(box.db());
  const real = poll.watch;
  const callbacks = [];
  poll.watch = (fd, callback) => {
    callbacks.push(callback);
    return real(fd, callback);
  };
  try {
    const before = t.metrics().latency.claim.count;
    const failing = [timed(() => t.claim('a', { wait: 30 })), timed(() => t.claim('b', { wait: 30 }))];
    await claimsMade(t, before, 2, failing);
    const other = timed(() => t.claim('c', { wait: 30, minPriority: 1 }));
    await claimsMade(t, before, 3, [...failing, other]);
    assert.equal(callbacks.length, 2, 'two watches: two filters');
    callbacks[0](-9); // UV_EBADF
    for (const { error, ms } of await Promise.all(failing)) {
      assert.equal(error && error.code, 'HAREL_ERR_PANIC');
      assert.equal(error.message, "claim: polling the watch's descriptor failed (libuv status -9)");
      assert.ok(ms < 1000);
    }
    await t.publish('g', {}, { priority: 2 });
    const { value } = await other;
    assert.equal(value.groupId, 'g', 'the other watch still wakes its claim');
    await t.ack(value);
  } finally {
    poll.watch = real;
  }
  await t.close();
  assert.equal(openFds(), fds, 'both watches freed');
});

test('harel_transport_watch failing (no descriptor left): the claim rejects with its error, later ones wait', () => {
  // In a child whose descriptors run out: its soft limit lowered, then filled.
  const child = `
    const fs = require('node:fs');
    const { Transport } = require(${JSON.stringify(PACKAGE)});
    (async () => {
      const t = await Transport.open(${JSON.stringify(box.db())});
      await t.publish('g', {});
      await t.ack(await t.claim('w'));
      await t.claim('w', { wait: 0.05 }); // the addon loaded (dlopen needs a descriptor)
      const filler = [];
      for (;;) {
        try { filler.push(fs.openSync('/dev/null', 'r')); } catch { break; }
      }
      const out = {};
      try {
        await t.claim('w', { wait: 2, minPriority: 1 }); // a new watch (the first lingers)
      } catch (e) {
        out.code = e.code;
        out.message = e.message;
      }
      for (const fd of filler) fs.closeSync(fd);
      out.later = await t.claim('w', { wait: 0.2 });
      await t.close();
      console.log(JSON.stringify(out));
    })();`;
  const r = require('node:child_process').spawnSync('sh', ['-c', 'ulimit -S -n 200 && exec "$0" -e "$1"', process.execPath, child], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out.code, 'HAREL_ERR_DATABASE', out.message);
  assert.match(out.message, /too many open files/i);
  assert.equal(out.later, null, 'once descriptors are free again, a claim waits');
});
