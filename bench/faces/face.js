'use strict';
// The Node face of `make bench-faces` (bench/faces/run.py): the work of face.c through the
// Node binding (bindings/node: koffi, every call a Promise run on libuv's pool), awaited one
// call at a time as a worker loop would. Usage:
//   node face.js <path|:memory:> <claim_ack|ack_and_claim> [messages] [groups]

const path = require('node:path');
const { Transport } = require(path.join(__dirname, '..', '..', 'bindings', 'node'));

async function main() {
  const [file, mode] = process.argv.slice(2, 4);
  if (mode !== 'claim_ack' && mode !== 'ack_and_claim') {
    console.error('usage: node face.js <path|:memory:> <claim_ack|ack_and_claim> [messages] [groups]');
    process.exit(2);
  }
  const n = Number(process.argv[4] || 4000);
  const groups = Number(process.argv[5] || 50);
  const t = await Transport.open(file, { synchronousFull: false });
  // Events go as JSON text, stored byte for byte (an object would be JSON.stringify'd).
  const batch = [];
  for (let i = 0; i < n; i++) {
    batch.push({
      groupId: `g-${String(i % groups).padStart(3, '0')}`,
      event: `{"id":"ev-${i}","kind":"bench","created_time":null,"received_time":null,"data":{"n":${i}}}`,
    });
  }
  await t.publishMany(batch);

  const opts = { visibility: 30 };
  let done = 0;
  const start = process.hrtime.bigint();
  if (mode === 'ack_and_claim') {
    for (let lease = await t.claim('worker', opts); lease; lease = await t.ackAndClaim(lease, 'worker', opts)) done++;
  } else {
    for (let lease = await t.claim('worker', opts); lease; lease = await t.claim('worker', opts)) {
      await t.ack(lease);
      done++;
    }
  }
  const elapsedUs = Number(process.hrtime.bigint() - start) / 1e3;
  await t.close();
  if (done !== n) throw new Error(`drained ${done} of ${n} messages`);
  const store = file === ':memory:' ? 'memory' : 'file';
  console.log(JSON.stringify({ face: 'node', mode, store, messages: done, us_per_msg: +(elapsedUs / done).toFixed(3) }));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
