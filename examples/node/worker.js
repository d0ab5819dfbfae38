#!/usr/bin/env node
// A Node worker, one of the cross-language demo's: claims, handles, acks until nothing has
// been deliverable for IDLE_POLLS polls in a row, then prints "node WORKER_ID: processed N".
// With `--log FILE` it writes one line per message it finished — `claimed_ns acking_ns seq
// group_id`, epoch nanoseconds stamped after the claim returned and before the ack was
// sent, so they lie inside the lease — which the demo uses to prove per-group order.
//
//     node examples/node/worker.js queue.db node-1 [--log node-1.log]
//
// It uses the binding in bindings/node (run `npm ci` there first) and the library that
// binding finds (HAREL_TRANSPORT_LIB, else target/release, else the installed one).

'use strict';

const fs = require('node:fs');
const { setTimeout: sleep } = require('node:timers/promises');
const { Transport, HarelError } = require('../../bindings/node');

const VISIBILITY = 30; // seconds to handle an event before another worker may get it
const POLL_MS = 100; // pause between claims while nothing is deliverable
const IDLE_POLLS = 10; // this many empty polls in a row (about a second) and the worker stops

/** Epoch nanoseconds (performance.timeOrigin is epoch ms; now() adds monotonic ms). */
function epochNs() {
  return BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6));
}

async function main(argv) {
  const [database, workerId] = argv;
  const logAt = argv.indexOf('--log');
  const logFile = logAt >= 0 ? argv[logAt + 1] : null;
  if (!database || !workerId || database.startsWith('--') || workerId.startsWith('--') || (logAt >= 0 && !logFile)) {
    console.error('usage: node worker.js DATABASE WORKER_ID [--log FILE]');
    return 2;
  }

  const transport = await Transport.open(database);
  const log = [];
  let processed = 0;
  let idle = 0;
  try {
    while (idle < IDLE_POLLS) {
      let lease;
      try {
        lease = await transport.claim(workerId, { visibility: VISIBILITY });
      } catch (e) {
        // Another process held the write lock past the busy timeout: try again.
        if (e instanceof HarelError && e.code === 'HAREL_ERR_BUSY') continue;
        throw e;
      }
      if (!lease) {
        idle += 1;
        await sleep(POLL_MS);
        continue;
      }
      idle = 0;
      const claimed = epochNs();
      handle(lease);
      const acking = epochNs();
      try {
        await transport.ack(lease);
      } catch (e) {
        // The lease lapsed and another worker has the message now: it is theirs to finish.
        if (e instanceof HarelError && e.code === 'HAREL_ERR_LEASE_LOST') {
          console.error(`node ${workerId}: ${e.message}`);
          continue;
        }
        throw e;
      }
      log.push(`${claimed} ${acking} ${lease.seq} ${lease.groupId}\n`);
      processed += 1;
    }
  } finally {
    await transport.close();
  }
  if (logFile) fs.writeFileSync(logFile, log.join(''));
  console.log(`node ${workerId}: processed ${processed}`);
  return 0;
}

/** The work: here, only looking at the event (the binding already parsed its JSON). */
function handle(lease) {
  if (lease.event === undefined) console.error(`node: seq ${lease.seq}: the event is not JSON JavaScript can read`);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    console.error(`node worker: ${e instanceof HarelError ? `${e.code}: ${e.message}` : e.stack}`);
    process.exitCode = 1;
  },
);
