#!/usr/bin/env node
'use strict';
// Waiting claims and the libuv pool (issue 26): fs.promises.stat's latency with no claim
// waiting and with 100 claims waiting in the same process, side by side, on Node's default
// pool of 4 threads; then how soon a publish reaches one of 100 waiters. The waiting claims
// watch the library's readiness descriptor from the event loop (lib/waiting.js), so they
// hold no pool thread: the two columns should match.
//
//   node bench/waiting.js [--rounds 3] [--stats 200] [--waiters 100] [--wakes 20]
//
// `make bench-node` runs it (mk/node.mk). Each round measures both columns, alternating,
// on the same files; the figures are the median of the rounds' p50 and p99.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { setTimeout: sleep } = require('node:timers/promises');
const { Transport } = require('..');

function option(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}

const ROUNDS = option('rounds', 3);
const STATS = option('stats', 200);
const WAITERS = option('waiters', 100);
const WAKES = option('wakes', 20);

function quantile(xs, q) {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

const median = (xs) => quantile(xs, 0.5);

/** `n` fs.promises.stat calls, one after another: their latencies in ms. */
async function stats(n, file) {
  const times = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    await fs.promises.stat(file);
    times.push(performance.now() - started);
  }
  return times;
}

/** `n` claims waiting on `t` (up to 10 minutes); resolves once they have looked and wait. */
async function waiting(t, n) {
  const before = t.metrics().latency.claim.count;
  const claims = Array.from({ length: n }, (_, i) => t.claim(`w${i}`, { wait: 600 }));
  while (t.metrics().latency.claim.count < before + n) await sleep(10);
  await sleep(100);
  return claims;
}

async function main() {
  if (process.env.UV_THREADPOOL_SIZE) console.log(`(UV_THREADPOOL_SIZE=${process.env.UV_THREADPOOL_SIZE})`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'harel-bench-node-'));
  const db = path.join(dir, 'queue.db');
  const t = await Transport.open(db);
  const publisher = await Transport.open(db);
  try {
    await stats(50, __filename); // warm-up
    const idle = { p50: [], p99: [] };
    const busy = { p50: [], p99: [] };
    for (let round = 0; round < ROUNDS; round++) {
      const none = await stats(STATS, __filename);
      idle.p50.push(median(none));
      idle.p99.push(quantile(none, 0.99));
      const claims = await waiting(t, WAITERS);
      const some = await stats(STATS, __filename);
      busy.p50.push(median(some));
      busy.p99.push(quantile(some, 0.99));
      t.interrupt();
      await Promise.allSettled(claims);
    }
    const ms = (x) => `${x.toFixed(3)} ms`.padStart(10);
    console.log(`fs.promises.stat, ${STATS} one after another, median of ${ROUNDS} rounds (default pool of 4 threads):`);
    console.log(`             no claim waiting   ${WAITERS} claims waiting`);
    console.log(`  p50        ${ms(median(idle.p50))}         ${ms(median(busy.p50))}`);
    console.log(`  p99        ${ms(median(idle.p99))}         ${ms(median(busy.p99))}`);

    // A publish by another transport of the process, and one of WAITERS waiters claims it.
    const claims = await waiting(t, WAITERS);
    const woken = new Map(); // groupId -> ms when its claim resolved
    for (const claim of claims) claim.then((lease) => lease && woken.set(lease.groupId, performance.now()), () => {});
    const latencies = [];
    for (let i = 0; i < WAKES; i++) {
      await publisher.publish(`g${i}`, { i });
      const published = performance.now();
      while (!woken.has(`g${i}`)) await sleep(0);
      latencies.push(woken.get(`g${i}`) - published);
      await sleep(20);
    }
    console.log(`a publish's message reached one of ${WAITERS} waiters (from the publish's resolve to the claim's), ${WAKES} publishes:`);
    console.log(`  p50 ${median(latencies).toFixed(2)} ms, max ${Math.max(...latencies).toFixed(2)} ms`);
    t.interrupt();
    await Promise.allSettled(claims);
  } finally {
    await t.close();
    await publisher.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
