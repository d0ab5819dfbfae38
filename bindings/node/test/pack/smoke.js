'use strict';
// Run by check.js in a fresh directory outside the repository, where `npm install <tarball>`
// put harel-transport (and koffi, from the registry) in node_modules: opens a queue file
// there, publishes, claims and acks (one by one, then the worker loop: a waiting
// claimMany woken by a publish, ackMany), and checks the library came from the package's
// prebuilds/. Prints one line per check ("ok - ..." or "not ok - ..."), then a summary as
// JSON; exits 1 if a check failed.

const fs = require('node:fs');
const path = require('node:path');

const results = [];
function check(name, ok, detail) {
  results.push(ok);
  console.log(`${ok ? 'ok' : 'not ok'} - ${name}${detail === undefined ? '' : `: ${detail}`}`);
}

async function main() {
  const here = fs.realpathSync(__dirname);
  const harel = require('harel-transport');
  const pkg = require('harel-transport/package.json');
  const installed = fs.realpathSync(path.dirname(require.resolve('harel-transport')));
  check('harel-transport resolves to node_modules', installed === path.join(here, 'node_modules', 'harel-transport'), installed);
  check('HAREL_TRANSPORT_LIB is unset', process.env.HAREL_TRANSPORT_LIB === undefined);

  const db = path.join(here, 'queue.db');
  const queue = await harel.Transport.open(db);
  await queue.publish('order-1', { kind: 'order.placed', n: 1 });
  await queue.publish('order-2', { kind: 'order.placed', n: 2 });
  await queue.publish('order-1', { kind: 'order.paid', n: 3 });
  const published = (await queue.stats()).messages;
  check('publish: 3 messages in 2 groups', published === 3, `stats().messages = ${published}`);

  const seen = [];
  for (let lease = await queue.claim('worker-1'); lease; lease = await queue.claim('worker-1')) {
    seen.push(`${lease.groupId}:${lease.event.n}`);
    await queue.ack(lease);
  }
  const order1 = seen.filter((s) => s.startsWith('order-1:'));
  check('claim/ack: all 3 delivered once', seen.length === 3 && new Set(seen).size === 3, seen.join(' '));
  check('claim/ack: order-1 in publish order', order1.join(' ') === 'order-1:1 order-1:3', order1.join(' '));
  const after = await queue.stats();
  check('ack: the queue is empty', after.messages === 0 && after.groups === 0, JSON.stringify(after));

  const waiting = queue.claimMany('worker-1', { max: 10, wait: 10 });
  setTimeout(() => queue.publishMany([{ groupId: 'order-3', event: { n: 4 } }]), 100);
  const batch = await waiting;
  check('claimMany with a wait: woken by the publish', batch.length === 1 && batch[0].event.n === 4, JSON.stringify(batch));
  const acked = await queue.ackMany(batch);
  check('ackMany: acked', acked.length === 1 && acked[0].ok && (await queue.stats()).messages === 0, JSON.stringify(acked.map((o) => o.ok)));

  // Headers, without @opentelemetry/api installed (an optional peer): the package works;
  // only asking for tracing says what is missing.
  let api = null;
  try {
    api = require.resolve('@opentelemetry/api');
  } catch {
    // not installed: as it should be
  }
  check('@opentelemetry/api is not installed', api === null, api);
  await queue.publish('order-4', { n: 5 }, { headers: [['traceparent', 'kept as given'], ['x', 'é=1']] });
  const lease = await queue.claim('worker-1');
  check('headers: back with the lease, in order', JSON.stringify(lease.headers) === JSON.stringify([['traceparent', 'kept as given'], ['x', 'é=1']]), JSON.stringify(lease.headers));
  await queue.ack(lease);
  let tracing = null;
  try {
    await harel.Transport.open(db, { tracerProvider: { getTracer() {} } });
  } catch (e) {
    tracing = e;
  }
  check('tracerProvider without @opentelemetry/api: HAREL_ERR_ARGUMENT naming it',
    tracing !== null && tracing.code === 'HAREL_ERR_ARGUMENT' && /@opentelemetry\/api/.test(tracing.message), tracing && tracing.message);
  await queue.close();
  check('the queue file is in the fresh directory', fs.existsSync(db), db);

  const info = harel.libraryInfo();
  const prebuilds = path.join(here, 'node_modules', 'harel-transport', 'prebuilds', 'linux-x64-gnu');
  check('libraryInfo().path is the package\'s prebuilt library', info.path === path.join(prebuilds, 'libharel_transport.so.1'), info.path);
  const addon = Object.keys(require.cache).find((file) => path.basename(file) === 'harel_transport_poll.node');
  check('waiting claims polled with the package\'s prebuilt addon', addon === path.join(prebuilds, 'harel_transport_poll.node'), addon);
  check('the library version is the package version', info.version === pkg.version && harel.version() === pkg.version, `${info.version} / ${pkg.version}`);

  const failed = results.filter((ok) => !ok).length;
  console.log(JSON.stringify({ summary: { passed: results.length - failed, failed, delivered: seen, library: info, node: process.version } }));
  process.exitCode = failed ? 1 : 0;
}

main().catch((e) => {
  check('smoke run', false, e && e.stack ? e.stack : String(e));
  console.log(JSON.stringify({ summary: { passed: results.filter(Boolean).length, failed: results.filter((ok) => !ok).length } }));
  process.exitCode = 1;
});
