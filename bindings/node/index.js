'use strict';
// harel-transport for Node.js: the C ABI of libharel_transport (see include/harel_transport.h)
// through koffi. CommonJS; `import { Transport } from 'harel-transport'` works too.
//
// Threading: every call that touches the database (open, openShards, publish, publishMany,
// publishWith, publishManyWith, claim, claimMany, ack, ackMany, ackAndClaim,
// ackAndClaimMany, extend, nack, deadLetter, redrive, purgeDead, purgeGroup, purge, release,
// pause, resume, setLimit, removeLimit, stats, groups, peek, deadLetters, archive, pauses,
// limits, close, and a transaction's execute, query, publish, publishWith, commit and
// rollback) runs on the libuv thread pool through koffi's `.async()`, so the event loop
// keeps running while a call waits (metrics() and shardCount, which read memory, begin(),
// which sends nothing, and shardOf() are synchronous). The calls of one Transport go to
// the pool concurrently: each reads its own error from its `harel_error **err`
// out-parameter, and the library runs them on the handle (publishes arriving while another
// commits share its next commit). The one exception is a Transport with a JS clock (see
// lib/clock.js). A claim that waits holds no pool thread: it watches the library's
// readiness descriptor from the event loop and claims, without waiting, when it fires
// (lib/waiting.js).
//
// The files: lib/native.js loads the library and declares its functions; lib/transport.js
// is the Transport (open, close, and what every call goes through); lib/methods/ holds its
// other methods, a file per group of docs/architecture.md's glossary (the names every face
// shares), added to the class here; lib/calls.js runs a C call and maps its error
// (lib/errors.js), after the checks of lib/args.js, its out-parameters in the memory of
// lib/slots.js; lib/lease.js turns leases both ways; lib/message.js checks a message's
// arguments and lib/headers.js its headers; lib/tracing.js is OpenTelemetry (optional);
// lib/tx.js is a transaction (begin()'s Tx); lib/waiting.js waits, with the
// poll addon lib/poll.js loads (src/poll.c).

const { STATUS, HarelError } = require('./lib/errors');
const { DEFAULT_VISIBILITY, DEFAULT_LIMIT, MAX_PAGE, MAX_CLAIM, MAX_LIMIT } = require('./lib/args');
const { Transport } = require('./lib/transport');
const { Tx } = require('./lib/tx');
const { version, libraryInfo, schemaSql, schemaUpgradeSql, shardOf } = require('./lib/library');
const { leaseSpan } = require('./lib/tracing');

const METHODS = [
  require('./lib/methods/publish'),
  require('./lib/methods/claim'),
  require('./lib/methods/finish'),
  require('./lib/methods/looks'),
  require('./lib/methods/admin'),
  require('./lib/methods/shards'),
  require('./lib/methods/transactions'),
  require('./lib/methods/metrics'),
];

// Added as a class body adds its own: not enumerable.
for (const group of METHODS) {
  for (const [name, descriptor] of Object.entries(Object.getOwnPropertyDescriptors(group))) {
    Object.defineProperty(Transport.prototype, name, { ...descriptor, enumerable: false });
  }
}

module.exports = {
  Transport,
  Tx,
  HarelError,
  STATUS,
  DEFAULT_VISIBILITY,
  DEFAULT_LIMIT,
  MAX_PAGE,
  MAX_CLAIM,
  MAX_LIMIT,
  version,
  libraryInfo,
  schemaSql,
  schemaUpgradeSql,
  shardOf,
  leaseSpan,
};
