#!/usr/bin/env node
// A Node worker, one of the cross-language demo's: the worker loop of the binding's README.
// It waits for up to BATCH messages (claimMany with a wait), handles them with each lease
// kept alive, then acks the batch and claims the next in one transaction
// (ackAndClaimMany); when a wait of IDLE_WAIT seconds brings nothing it prints
// "node WORKER_ID: processed N" and stops (SIGINT or SIGTERM stop it too, at once). With
// `--log FILE` it writes one line per message it finished — `claimed_ns acking_ns seq
// group_id`, epoch nanoseconds stamped after the claim returned and before the ack was
// sent, so they lie inside the lease — which the demo uses to prove per-group order.
//
//     node examples/node/worker.js queue.db node-1 [--log node-1.log]
//
// It uses the binding in bindings/node (run `npm ci` there first) and the library that
// binding finds (HAREL_TRANSPORT_LIB, else target/release, else the installed one).

'use strict';

const fs = require('node:fs');
const { Transport, HarelError } = require('../../bindings/node');

const VISIBILITY = 30; // seconds to handle an event before another worker may get it
const BATCH = 8; // leases per claim, each the head of a different group
const IDLE_WAIT = 1; // a wait this long (seconds) that brings nothing, and the worker stops

/** Epoch nanoseconds (performance.timeOrigin is epoch ms; now() adds monotonic ms). */
function epochNs() {
  return BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6));
}

/** `call()`, again while another process holds the write lock past the busy timeout. */
async function retryBusy(call) {
  for (;;) {
    try {
      return await call();
    } catch (e) {
      if (!(e instanceof HarelError && e.code === 'HAREL_ERR_BUSY')) throw e;
    }
  }
}

async function main(argv) {
  const [database, workerId] = argv;
  const logAt = argv.indexOf('--log');
  const logFile = logAt >= 0 ? argv[logAt + 1] : null;
  if (!database || !workerId || database.startsWith('--') || workerId.startsWith('--') || (logAt >= 0 && !logFile)) {
    console.error('usage: node worker.js DATABASE WORKER_ID [--log FILE]');
    return 2;
  }

  const stop = new AbortController();
  for (const name of ['SIGINT', 'SIGTERM']) process.once(name, () => stop.abort());
  const claimOptions = { max: BATCH, visibility: VISIBILITY };
  const transport = await Transport.open(database);
  const log = [];
  let processed = 0;
  let leases = [];
  try {
    for (;;) {
      if (leases.length === 0) {
        // Waits for messages rather than polling: a commit wakes it at once.
        leases = await retryBusy(() => transport.claimMany(workerId, { ...claimOptions, wait: IDLE_WAIT, signal: stop.signal }));
        if (leases.length === 0) break;
      }
      const claimed = epochNs();
      for (const lease of leases) {
        // A handler slower than half the visibility would have its lease extended.
        const alive = transport.keepAlive(lease, { visibility: VISIBILITY });
        try {
          handle(lease);
        } finally {
          alive.stop();
        }
      }
      const acking = epochNs();
      const next = await retryBusy(() => transport.ackAndClaimMany(leases, workerId, claimOptions));
      for (const { lease, ok, error } of next.acked) {
        if (ok) {
          log.push(`${claimed} ${acking} ${lease.seq} ${lease.groupId}\n`);
          processed += 1;
        } else {
          // The lease lapsed and another worker has the message now: it is theirs to finish.
          console.error(`node ${workerId}: ${error.message}`);
        }
      }
      leases = next.leases;
      if (stop.signal.aborted) break;
    }
  } catch (e) {
    if (!stop.signal.aborted) throw e; // a signal ended the wait: stop as after an idle wait
  } finally {
    for (const lease of leases) await transport.nack(lease).catch(() => {}); // claimed, not handled: back at once
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
