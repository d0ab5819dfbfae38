'use strict';
// harel-transport for Node.js: the C ABI of libharel_transport (see include/harel_transport.h)
// through koffi. CommonJS; `import { Transport } from 'harel-transport'` works too.
//
// Threading: every call that touches the database (open, publish, publishMany, claim, ack,
// ackAndClaim, nack, deadLetter, redrive, purgeDead, purgeGroup, purge, release, stats,
// groups, peek, deadLetters, close) runs on the libuv thread pool through koffi's
// `.async()`, so the event loop keeps running while a call waits. The calls of one
// Transport go to the pool concurrently: each reads its own error from its
// `harel_error **err` out-parameter, and the library runs them on the handle (publishes
// arriving while another commits share its next commit). The one exception is a Transport
// with a JS clock (see ClockCell).

const fs = require('node:fs');
const path = require('node:path');
const koffi = require('koffi');

// ---------------------------------------------------------------------------------------
// Errors

const STATUS = Object.freeze({
  HAREL_OK: 0,
  HAREL_EMPTY: 1,
  HAREL_ERR_ARGUMENT: -1,
  HAREL_ERR_DATABASE: -2,
  HAREL_ERR_BUSY: -3,
  HAREL_ERR_LEASE_LOST: -4,
  HAREL_ERR_CONNECT: -5,
  HAREL_ERR_PANIC: -99,
});

class HarelError extends Error {
  /**
   * @param {string} code e.g. 'HAREL_ERR_LEASE_LOST'
   * @param {string} message
   * @param {{ status?: number, cause?: unknown }} [extra]
   */
  constructor(code, message, extra = {}) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = 'HarelError';
    this.code = code;
    // The library's harel_status; undefined for the binding's own codes (HAREL_ERR_CLOSED,
    // HAREL_ERR_LOAD).
    this.status = extra.status;
  }
}

function argumentError(message, cause) {
  return new HarelError('HAREL_ERR_ARGUMENT', message, { status: STATUS.HAREL_ERR_ARGUMENT, cause });
}

function closedError(what) {
  return new HarelError('HAREL_ERR_CLOSED', `${what}: the transport is closed`);
}

// ---------------------------------------------------------------------------------------
// The library

// Rust code runs on koffi's own stack for the call; koffi's default for async calls is
// 128 KiB. A claim needs well under 64 KiB today; give it room. koffi only accepts this
// before its first library load in the process: if another module got there first, the
// default stays (and still suffices).
const ASYNC_STACK = 512 * 1024;
try {
  const config = koffi.config();
  if (config.async_stack_size < ASYNC_STACK) koffi.config({ ...config, async_stack_size: ASYNC_STACK });
} catch {
  // koffi is already in use by another module; keep its settings.
}

/** Where the library is looked for, in order (see README "Finding the library"). */
function libraryCandidates() {
  const env = process.env.HAREL_TRANSPORT_LIB;
  if (env) return [env];
  const candidates = [];
  // The npm package's own copy (scripts/prebuild.js stages it when packing): linux-x64-gnu only.
  const prebuilt = path.join(__dirname, 'prebuilds', `${process.platform}-${process.arch}-gnu`, 'libharel_transport.so.1');
  if (fs.existsSync(prebuilt)) candidates.push(prebuilt);
  const repoBuild = path.join(__dirname, '..', '..', 'target', 'release', 'libharel_transport.so');
  if (fs.existsSync(repoBuild)) candidates.push(repoBuild);
  candidates.push('libharel_transport.so.1'); // installed (ABI 1): the dynamic loader's search path
  return candidates;
}

let native = null;

function load() {
  if (native) return native;
  const failures = [];
  for (const candidate of libraryCandidates()) {
    let lib;
    try {
      lib = koffi.load(candidate);
    } catch (e) {
      failures.push(`${candidate}: ${e.message}`);
      continue;
    }
    try {
      native = bind(lib, candidate);
    } catch (e) {
      failures.push(`${candidate}: ${e.message} (a libharel_transport older than this binding?)`);
      continue;
    }
    return native;
  }
  throw new HarelError(
    'HAREL_ERR_LOAD',
    'libharel_transport could not be loaded (set HAREL_TRANSPORT_LIB to the path of ' +
      'libharel_transport.so, build it with `make lib`, or install it): ' + failures.join('; '),
  );
}

// The C types, anonymous: koffi's type names are global to the process, and another copy of
// this package (or another binding of the same library) may declare its own. The lease's
// group id and event are raw pointers, read with their lengths (they may hold NUL bytes);
// in a lease the binding fills for ack and nack, group_id is a Buffer of its UTF-8 bytes.
const LeaseType = koffi.struct({
  seq: 'int64_t',
  group_id: 'void *',
  group_id_len: 'size_t',
  event: 'void *',
  event_len: 'size_t',
  worker_id: 'const char *',
  lock_expiry: 'double',
  attempts: 'int64_t',
});
// The looks: the stats and the pages. Strings read by length are raw pointers, as in the
// lease; the others are NUL-terminated (koffi copies them into JS strings), NULL for none.
const PriorityStatsType = koffi.struct({
  priority: 'int32_t',
  groups: 'uint64_t',
  ready: 'uint64_t',
  leased: 'uint64_t',
  parked: 'uint64_t',
});
const StatsType = koffi.struct({
  now: 'double',
  messages: 'uint64_t',
  groups: 'uint64_t',
  ready: 'uint64_t',
  leased: 'uint64_t',
  parked: 'uint64_t',
  dead: 'uint64_t',
  oldest_ready_age: 'double',
  next_release_at: 'double',
  by_priority: 'void *',
  n_priorities: 'size_t',
});
const GroupInfoType = koffi.struct({
  group_id: 'void *',
  group_id_len: 'size_t',
  state: 'int', // enum harel_group_state
  depth: 'uint64_t',
  head_seq: 'int64_t',
  head_age: 'double',
  holder: 'const char *',
  lock_expiry: 'double',
  priority: 'int32_t',
  routing_key: 'const char *',
  head_attempts: 'int64_t',
});
const MessageInfoType = koffi.struct({
  seq: 'int64_t',
  event: 'void *',
  event_len: 'size_t',
  attempts: 'int64_t',
  locked_by: 'const char *',
  lock_expiry: 'double',
  published_at: 'double',
});
const DeadLetterType = koffi.struct({
  seq: 'int64_t',
  group_id: 'void *',
  group_id_len: 'size_t',
  event: 'void *',
  event_len: 'size_t',
  attempts: 'int64_t',
  last_worker: 'const char *',
  reason: 'const char *',
  dead_at: 'double',
});
// harel_group_page, harel_message_page and harel_dead_page: items, count, next_cursor.
const PageType = koffi.struct({ items: 'void *', n_items: 'size_t', next_cursor: 'const char *' });
const MessageType = koffi.struct({
  group_id: 'const char *',
  event_json: 'const char *',
  priority: 'int32_t',
  routing_key: 'const char *',
});
const T = koffi.pointer(koffi.opaque()); // harel_transport *
const O = koffi.pointer(koffi.opaque()); // harel_options *
const E = koffi.pointer(koffi.opaque()); // harel_error *
const L = koffi.pointer(LeaseType); // harel_lease *
const M = koffi.pointer(MessageType); // const harel_message *: koffi copies a JS array in
// harel_error **err: in-out, so that koffi writes the NULL the library requires on entry.
const ERR = koffi.inout(koffi.pointer(E));
const COUNT = koffi.out(koffi.pointer('uint64_t')); // uint64_t *moved, *purged
const OUT = koffi.out(koffi.pointer('void *')); // harel_stats **, harel_*_page **

function bind(lib, where) {
  const status = 'int32_t';
  const fn = (name, ret, params) => lib.func(name, ret, params);

  return {
    where,
    Lease: LeaseType,
    // The C clock of a Transport with a JS clock: the C library's atof (a dependency of
    // libharel_transport, found through it) reading the text of "now" (see ClockCell).
    atof: lib.symbol('atof'),
    version: fn('harel_version', 'const char *', []),
    statusName: fn('harel_status_name', 'const char *', ['int32_t']),
    errorStatus: fn('harel_error_status', status, [E]),
    errorMessage: fn('harel_error_message', 'const char *', [E]),
    errorFree: fn('harel_error_free', 'void', [E]),
    stringFree: fn('harel_string_free', 'void', ['void *']),
    optionsNew: fn('harel_options_new', O, []),
    optionsFree: fn('harel_options_free', 'void', [O]),
    setPrefix: fn('harel_options_set_prefix', status, [O, 'const char *', ERR]),
    setCreateSchema: fn('harel_options_set_create_schema', status, [O, 'bool', ERR]),
    setSyncUrl: fn('harel_options_set_sync_url', status, [O, 'const char *', ERR]),
    setAuthToken: fn('harel_options_set_auth_token', status, [O, 'const char *', ERR]),
    setSyncInterval: fn('harel_options_set_sync_interval', status, [O, 'double', ERR]),
    setBusyTimeout: fn('harel_options_set_busy_timeout', status, [O, 'double', ERR]),
    setSynchronousFull: fn('harel_options_set_synchronous_full', status, [O, 'bool', ERR]),
    setClock: fn('harel_options_set_clock', status, [O, 'void *', 'void *', ERR]),
    open: fn('harel_transport_open', status, ['const char *', O, koffi.out(koffi.pointer(T)), ERR]),
    publish: fn('harel_transport_publish', status, [T, 'const char *', 'const char *', 'int32_t', 'const char *', ERR]),
    publishMany: fn('harel_transport_publish_many', status, [T, M, 'size_t', ERR]),
    claim: fn('harel_transport_claim', status, [
      T, 'const char *', 'double', 'int32_t', 'const char **', 'size_t', koffi.out(koffi.pointer(L)), ERR,
    ]),
    ack: fn('harel_transport_ack', status, [T, L, ERR]),
    ackAndClaim: fn('harel_transport_ack_and_claim', status, [
      T, L, 'const char *', 'double', 'int32_t', 'const char **', 'size_t', koffi.out(koffi.pointer(L)), ERR,
    ]),
    nack: fn('harel_transport_nack', status, [T, L, 'double', ERR]),
    close: fn('harel_transport_close', 'void', [T]),
    leaseFree: fn('harel_lease_free', 'void', [L]),
    schemaSql: fn('harel_schema_sql', status, ['const char *', koffi.out(koffi.pointer('void *')), ERR]),
    schemaUpgradeSql: fn('harel_schema_upgrade_sql', status, ['const char *', koffi.out(koffi.pointer('void *')), ERR]),
    // when a message keeps failing (issue #14)
    setMaxAttempts: fn('harel_options_set_max_attempts', status, [O, 'uint32_t', ERR]),
    deadLetter: fn('harel_transport_dead_letter', status, [T, L, 'const char *', ERR]),
    redrive: fn('harel_transport_redrive', status, [T, 'bool', 'const char *', 'const int64_t *', 'size_t', COUNT, ERR]),
    purgeDead: fn('harel_transport_purge_dead', status, [T, 'bool', 'const char *', 'const int64_t *', 'size_t', COUNT, ERR]),
    purgeGroup: fn('harel_transport_purge_group', status, [T, 'const char *', COUNT, ERR]),
    purge: fn('harel_transport_purge', status, [T, COUNT, ERR]),
    release: fn('harel_transport_release', status, [T, 'const char *', koffi.out(koffi.pointer('bool')), ERR]),
    stats: fn('harel_transport_stats', status, [T, OUT, ERR]),
    groups: fn('harel_transport_groups', status, [T, 'int32_t', 'const char *', 'size_t', OUT, ERR]),
    peek: fn('harel_transport_peek', status, [T, 'const char *', 'const char *', 'size_t', OUT, ERR]),
    deadLetters: fn('harel_transport_dead_letters', status, [T, 'const char *', 'const char *', 'size_t', OUT, ERR]),
    statsFree: fn('harel_stats_free', 'void', ['void *']),
    groupPageFree: fn('harel_group_page_free', 'void', ['void *']),
    messagePageFree: fn('harel_message_page_free', 'void', ['void *']),
    deadPageFree: fn('harel_dead_page_free', 'void', ['void *']),
  };
}

// ---------------------------------------------------------------------------------------
// Arguments: what koffi would silently change is refused here (a NUL would truncate the
// C string, a lone surrogate would become U+FFFD, 1.5 would become 1, NaN would become 0
// for an integer). Ranges (priority 0..4, visibility > 0, ...) are the library's to check.

function checkString(name, value, { nullable = false, nul = false } = {}) {
  if (nullable && (value === undefined || value === null)) return null;
  if (typeof value !== 'string') {
    throw argumentError(`${name} must be a string${nullable ? ' or null' : ''}, got ${describe(value)}`);
  }
  if (!nul && value.includes('\0')) throw argumentError(`${name} must not contain a NUL character`);
  if (!value.isWellFormed()) throw argumentError(`${name} is not valid Unicode (it has a lone surrogate)`);
  return value;
}

function checkInteger(name, value) {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < -(2 ** 31) || value >= 2 ** 31) {
    throw argumentError(`${name} must be an integer, got ${describe(value)}`);
  }
  return value;
}

function checkNumber(name, value) {
  if (typeof value !== 'number') throw argumentError(`${name} must be a number of seconds, got ${describe(value)}`);
  return value;
}

/** A count the C side takes as uint32_t: an integer 0..2^32-1 (koffi would wrap others). */
function checkUint32(name, value) {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value >= 2 ** 32) {
    throw argumentError(`${name} must be an integer 0..4294967295, got ${describe(value)}`);
  }
  return value;
}

/** A seq: a safe integer Number, or a BigInt within int64. */
function checkSeq(name, seq) {
  if (!((typeof seq === 'number' && Number.isSafeInteger(seq)) || typeof seq === 'bigint')) {
    throw argumentError(`${name} must be an integer (number or bigint), got ${describe(seq)}`);
  }
  if (typeof seq === 'bigint' && (seq < -(2n ** 63n) || seq >= 2n ** 63n)) {
    throw argumentError(`${name} is outside int64: ${seq}`);
  }
  return seq;
}

/**
 * A page's limit, as the C size_t: an integer >= 0 (koffi would turn -1 into 2^64 - 1 and
 * 1.5 into 1). The range, 1..10000, is the library's to check.
 */
function checkLimit(value) {
  if (value === undefined) return DEFAULT_LIMIT;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw argumentError(`limit must be an integer (1..${MAX_PAGE}), got ${describe(value)}`);
  }
  return value;
}

function checkBoolean(name, value) {
  if (typeof value !== 'boolean') throw argumentError(`${name} must be a boolean, got ${describe(value)}`);
  return value;
}

function checkOptions(name, value, allowed) {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw argumentError(`${name} must be an object, got ${describe(value)}`);
  }
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) {
      throw argumentError(`${name}: unknown option ${JSON.stringify(key)} (known: ${allowed.join(', ')})`);
    }
  }
  return value;
}

function describe(value) {
  if (value === null) return 'null';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? value.slice(0, 40) + '…' : value)}`;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return `${typeof value} ${value}`;
  return Array.isArray(value) ? 'an array' : typeof value;
}

function eventText(name, event) {
  if (typeof event === 'string') return checkString(name, event);
  let text;
  try {
    text = JSON.stringify(event);
  } catch (e) {
    throw argumentError(`${name} can't be turned into JSON: ${e.message}`, e);
  }
  if (text === undefined) throw argumentError(`${name} can't be turned into JSON (it is ${describe(event)})`);
  return checkString(name, text);
}

/**
 * A harel_message of publish's arguments, checked; errors name them after `prefix`
 * ('messages[3].' in a batch). The C publish takes NUL-terminated strings: no NUL inside.
 */
function messageStruct(prefix, groupId, event, { priority, routingKey }) {
  return {
    group_id: checkString(`${prefix}groupId`, groupId),
    event_json: eventText(`${prefix}event`, event),
    priority: checkInteger(`${prefix}priority`, priority === undefined ? 0 : priority),
    routing_key: checkString(`${prefix}routingKey`, routingKey, { nullable: true }),
  };
}

/** The harel_message of element `i` of publishMany's array. */
function batchElement(message, i) {
  const name = `messages[${i}]`;
  if (message === null || typeof message !== 'object' || Array.isArray(message)) {
    throw argumentError(`${name} must be an object { groupId, event, priority?, routingKey? }, got ${describe(message)}`);
  }
  const m = checkOptions(name, message, MESSAGE_FIELDS);
  return messageStruct(`${name}.`, m.groupId, m.event, m);
}

/** A claim's arguments after the handle, checked: worker, visibility, floor, keys, count. */
function claimArgs(workerId, options) {
  const o = checkOptions('options', options, CLAIM_OPTIONS);
  const worker = checkString('workerId', workerId);
  const visibility = checkNumber('visibility', o.visibility === undefined ? DEFAULT_VISIBILITY : o.visibility);
  const minPriority = checkInteger('minPriority', o.minPriority === undefined ? 0 : o.minPriority);
  let keys = o.routingKeys === undefined || o.routingKeys === null ? [] : o.routingKeys;
  if (!Array.isArray(keys)) throw argumentError(`routingKeys must be an array of strings, got ${describe(keys)}`);
  keys = keys.map((key, i) => checkString(`routingKeys[${i}]`, key));
  return [worker, visibility, minPriority, keys.length ? keys : null, keys.length];
}

/**
 * The harel_lease ack, nack and ackAndClaim read (seq, group_id with group_id_len,
 * worker_id). The group id goes as a Buffer of its UTF-8 bytes with its length, so a group
 * id holding NUL bytes (stored by another writer, handed out by a claim) reaches the
 * library whole; the Buffer stays referenced by the struct until the call has ended.
 */
function leaseStruct(lease) {
  if (lease === null || typeof lease !== 'object') {
    throw argumentError(`lease must be a lease object from claim(), got ${describe(lease)}`);
  }
  const seq = checkSeq('lease.seq', lease.seq);
  const groupId = Buffer.from(checkString('lease.groupId', lease.groupId, { nul: true }) + '\0', 'utf8');
  return {
    seq,
    group_id: groupId,
    group_id_len: groupId.length - 1,
    event: null, // ack and nack read only seq, group_id and worker_id
    event_len: 0,
    worker_id: checkString('lease.workerId', lease.workerId),
    lock_expiry: 0,
    attempts: 0,
  };
}

/**
 * The dead letters redrive and purgeDead take, as the C arguments all, group_id, seqs and
 * their count: `{ all: true }`, `{ groupId }` or `{ seqs: [...] }`. That exactly one is
 * given is the library's to check (its message says so).
 */
function selection(which) {
  if (which === null || typeof which !== 'object' || Array.isArray(which)) {
    throw argumentError(`which must be { all: true }, { groupId } or { seqs }, got ${describe(which)}`);
  }
  const o = checkOptions('which', which, SELECTION);
  const all = o.all === undefined ? false : checkBoolean('all', o.all);
  const groupId = checkString('groupId', o.groupId, { nullable: true });
  const seqs = o.seqs === undefined || o.seqs === null ? [] : o.seqs;
  if (!Array.isArray(seqs)) throw argumentError(`seqs must be an array of integers, got ${describe(seqs)}`);
  const array = BigInt64Array.from(seqs, (seq, i) => BigInt(checkSeq(`seqs[${i}]`, seq)));
  return [all, groupId, array.length ? array : null, array.length];
}

/** The `state` of groups(): a harel_group_state, or -1 for any. */
function groupStateArg(state) {
  if (state === undefined || state === null || state === 'any') return -1;
  const i = GROUP_STATES.indexOf(state);
  if (i < 0) {
    throw argumentError(`state must be 'ready', 'leased', 'parked', 'any' or null, got ${describe(state)}`);
  }
  return i;
}

// ---------------------------------------------------------------------------------------
// Calls

function noop() {}

// At most this many of the binding's async calls are with koffi at once (for every
// Transport of the process); the rest wait here, in call order. koffi refuses calls past
// its own limit (max_async_calls, 256 by default, shared by every module in the process)
// and sets memory aside for each queued call (8 sets kept, the rest allocated per call),
// while only the libuv pool's threads (UV_THREADPOOL_SIZE, 4 by default) run them. Twice
// the pool keeps every thread fed without making the pool's other users (fs, dns, zlib)
// queue behind many of ours.
const POOL_THREADS = Number.parseInt(process.env.UV_THREADPOOL_SIZE, 10) || 4;
const MAX_ISSUED = Math.min(128, Math.max(8, 2 * POOL_THREADS));
let issued = 0;
const pending = []; // calls waiting for a slot: () => void
let pendingHead = 0;

/** Runs `fn.async(...args)` on the pool; resolves its return value. */
function callAsync(fn, args) {
  return new Promise((resolve, reject) => {
    const start = () => {
      issued += 1;
      const done = (err, result) => {
        issued -= 1;
        if (pendingHead < pending.length) {
          const next = pending[pendingHead];
          pending[pendingHead++] = undefined;
          if (pendingHead === pending.length) {
            pending.length = pendingHead = 0;
          } else if (pendingHead >= 1024 && 2 * pendingHead >= pending.length) {
            pending.splice(0, pendingHead); // a queue that never empties: drop the started
            pendingHead = 0;
          }
          next();
        }
        if (err) reject(err);
        else resolve(result);
      };
      try {
        fn.async(...args, done);
      } catch (e) {
        done(e);
      }
    };
    if (issued < MAX_ISSUED) start();
    else pending.push(start);
  });
}

function statusName(status) {
  return load().statusName(status);
}

/**
 * The HarelError of a call that returned `status`, from the harel_error the call set in
 * its own `err` (freed here); the call's own, whichever thread made it.
 */
function takeError(f, status, error, what) {
  let message = null;
  if (error) {
    try {
      status = f.errorStatus(error);
      message = f.errorMessage(error);
    } finally {
      f.errorFree(error);
    }
  }
  const code = statusName(status);
  return new HarelError(code, message || `${what}: ${code} (the library gave no message)`, { status });
}

/**
 * The outcome of a fallible C call that returned `status` with `err` (the one-element
 * array koffi wrote its `harel_error *` into): HAREL_OK or HAREL_EMPTY, or a HarelError
 * thrown.
 */
function outcome(f, what, err, status) {
  const error = err[0];
  if (status === STATUS.HAREL_OK || status === STATUS.HAREL_EMPTY) {
    if (error) f.errorFree(error); // never set on success; freed should it be
    return status;
  }
  throw takeError(f, status, error, what);
}

/** Runs a fallible C function on the pool with its `err` appended; resolves its outcome. */
async function callChecked(f, what, fn, args) {
  const err = [null];
  return outcome(f, what, err, await callAsync(fn, [...args, err]));
}

/** The same, here on the main thread: for calls that never wait (options, schema text). */
function callCheckedHere(f, what, fn, args) {
  const err = [null];
  return outcome(f, what, err, fn(...args, err));
}

/** A copy of a string the library handed out; the library's copy is freed. */
function takeString(ptr) {
  try {
    return koffi.decode.string(ptr);
  } finally {
    load().stringFree(ptr);
  }
}

/** The `len` bytes at `ptr` as text (NUL bytes included). */
function bytesText(ptr, len) {
  const n = Number(len);
  return n === 0 ? '' : Buffer.from(koffi.view(ptr, n)).toString('utf8');
}

/** JSON.parse(text), or undefined for text that isn't JSON JavaScript parses. */
function parsed(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined; // e.g. NaN from another producer
  }
}

/** The ABI's optional numbers: -1 (any negative) is absent, null. */
function optionalNumber(x) {
  return x < 0 ? null : x;
}

/** A lease the library handed out, copied into a frozen JS object (the caller frees `ptr`). */
function makeLease(f, ptr) {
  const raw = koffi.decode(ptr, f.Lease);
  const eventJson = bytesText(raw.event, raw.event_len);
  const event = parsed(eventJson);
  return Object.freeze({
    seq: raw.seq,
    groupId: bytesText(raw.group_id, raw.group_id_len),
    event,
    eventJson,
    workerId: raw.worker_id,
    lockExpiry: raw.lock_expiry,
    attempts: Number(raw.attempts),
  });
}

/** The stats the library handed out, copied into frozen JS objects; `ptr` is freed. */
function takeStats(f, ptr) {
  try {
    const raw = koffi.decode(ptr, StatsType);
    const n = Number(raw.n_priorities);
    const levels = n ? koffi.decode(raw.by_priority, PriorityStatsType, n) : [];
    return Object.freeze({
      now: raw.now,
      messages: Number(raw.messages),
      groups: Number(raw.groups),
      ready: Number(raw.ready),
      leased: Number(raw.leased),
      parked: Number(raw.parked),
      dead: Number(raw.dead),
      oldestReadyAge: optionalNumber(raw.oldest_ready_age),
      nextReleaseAt: optionalNumber(raw.next_release_at),
      byPriority: Object.freeze(levels.map((p) => Object.freeze({
        priority: p.priority,
        groups: Number(p.groups),
        ready: Number(p.ready),
        leased: Number(p.leased),
        parked: Number(p.parked),
      }))),
    });
  } finally {
    f.statsFree(ptr);
  }
}

/**
 * A page the library handed out: its items (of C type `type`) copied by `item` into frozen
 * JS objects, and its next cursor (null on the last page); `ptr` is freed with `free`.
 */
function takePage(ptr, type, free, item) {
  try {
    const page = koffi.decode(ptr, PageType);
    const n = Number(page.n_items);
    const raws = n ? koffi.decode(page.items, type, n) : [];
    return [Object.freeze(raws.map(item)), page.next_cursor || null];
  } finally {
    free(ptr);
  }
}

function groupInfo(g) {
  return Object.freeze({
    groupId: bytesText(g.group_id, g.group_id_len),
    state: GROUP_STATES[g.state] || `unknown(${g.state})`,
    depth: Number(g.depth),
    headSeq: g.head_seq,
    headAge: optionalNumber(g.head_age),
    holder: g.holder || null,
    lockExpiry: optionalNumber(g.lock_expiry),
    priority: g.priority,
    routingKey: g.routing_key || null,
    headAttempts: Number(g.head_attempts),
  });
}

function messageInfo(m) {
  const eventJson = bytesText(m.event, m.event_len);
  return Object.freeze({
    seq: m.seq,
    event: parsed(eventJson),
    eventJson,
    attempts: Number(m.attempts),
    lockedBy: m.locked_by || null,
    lockExpiry: optionalNumber(m.lock_expiry),
    publishedAt: optionalNumber(m.published_at),
  });
}

function deadLetter(d) {
  const eventJson = bytesText(d.event, d.event_len);
  return Object.freeze({
    seq: d.seq,
    groupId: bytesText(d.group_id, d.group_id_len),
    event: parsed(eventJson),
    eventJson,
    attempts: Number(d.attempts),
    lastWorker: d.last_worker || null,
    reason: d.reason,
    deadAt: d.dead_at,
  });
}

/** Runs a call that writes a uint64_t count into its out argument; resolves it as a Number. */
async function countOf(f, what, call, args) {
  const out = [0];
  await callChecked(f, what, call, [...args, out]);
  return Number(out[0]);
}

/** Runs a look that hands out `*out`; resolves what `take` makes of it (and frees). */
async function lookOf(f, what, call, args, take) {
  const out = [null];
  await callChecked(f, what, call, [...args, out]);
  return take(out[0]);
}

const OPEN_OPTIONS = ['prefix', 'createSchema', 'syncUrl', 'authToken', 'syncInterval', 'busyTimeout', 'synchronousFull', 'maxAttempts', 'clock'];
const PUBLISH_OPTIONS = ['priority', 'routingKey'];
const MESSAGE_FIELDS = ['groupId', 'event', ...PUBLISH_OPTIONS];
const CLAIM_OPTIONS = ['visibility', 'minPriority', 'routingKeys'];
const NACK_OPTIONS = ['delay'];
const SELECTION = ['all', 'groupId', 'seqs'];
const GROUPS_OPTIONS = ['state', 'cursor', 'limit'];
const PEEK_OPTIONS = ['cursor', 'limit'];
const DEAD_OPTIONS = ['groupId', 'cursor', 'limit'];
const GROUP_STATES = ['ready', 'leased', 'parked']; // harel_group_state's values, in order
const DEFAULT_VISIBILITY = 30;
const DEFAULT_LIMIT = 100;
const MAX_PAGE = 10000;

const PRIVATE = Symbol('harel-transport constructor');

// A Transport dropped without close(): close its handle when it is collected. (A Transport
// with a call in flight is not collected: the call's callback holds it.)
const finalizer = new FinalizationRegistry((held) => {
  load().close(held.handle);
  if (held.clock) held.clock.free();
});

class Transport {
  #handle;
  #clock; // a ClockCell, or null for the system clock
  #path;
  #inFlight = 0; // calls made and not yet settled; close() waits for them
  #drained = null; // close()'s wake-up, once #inFlight is 0
  #clockTail = Promise.resolve(); // with a JS clock: the end of the calls that read it
  #closed = false;
  #closing = null;

  /** Use `await Transport.open(path, options)`. */
  constructor(token, handle, clock, where) {
    if (token !== PRIVATE) throw new TypeError('use `await Transport.open(path, options)` to make a Transport');
    this.#handle = handle;
    this.#clock = clock;
    this.#path = where;
    finalizer.register(this, { handle, clock }, this);
  }

  /**
   * Opens (and by default creates) the queue at `path`: a file, ':memory:', or a libsql://,
   * http:// or https:// URL. Runs on the thread pool, like every call that may wait.
   */
  static async open(path, options = {}) {
    const f = load();
    checkString('path', path);
    const o = checkOptions('options', options, OPEN_OPTIONS);
    // Check every option before anything is allocated.
    const set = [];
    if (o.prefix !== undefined) set.push([f.setPrefix, checkString('prefix', o.prefix)]);
    if (o.createSchema !== undefined) set.push([f.setCreateSchema, checkBoolean('createSchema', o.createSchema)]);
    if (o.syncUrl !== undefined) set.push([f.setSyncUrl, checkString('syncUrl', o.syncUrl, { nullable: true })]);
    if (o.authToken !== undefined) set.push([f.setAuthToken, checkString('authToken', o.authToken, { nullable: true })]);
    if (o.syncInterval !== undefined) set.push([f.setSyncInterval, checkNumber('syncInterval', o.syncInterval)]);
    if (o.busyTimeout !== undefined) set.push([f.setBusyTimeout, checkNumber('busyTimeout', o.busyTimeout)]);
    if (o.synchronousFull !== undefined) {
      set.push([f.setSynchronousFull, checkBoolean('synchronousFull', o.synchronousFull)]);
    }
    if (o.maxAttempts !== undefined) set.push([f.setMaxAttempts, checkUint32('maxAttempts', o.maxAttempts)]);
    if (o.clock !== undefined && typeof o.clock !== 'function') {
      throw argumentError(`clock must be a function returning epoch seconds, got ${describe(o.clock)}`);
    }

    const options_ = f.optionsNew();
    if (!options_) throw new HarelError('HAREL_ERR_PANIC', 'harel_options_new failed', { status: STATUS.HAREL_ERR_PANIC });
    let clock = null;
    try {
      for (const [setter, value] of set) callCheckedHere(f, 'open', setter, [options_, value]);
      if (o.clock !== undefined) {
        clock = new ClockCell(o.clock);
        clock.tick();
        callCheckedHere(f, 'open', f.setClock, [options_, f.atof, clock.ptr]);
      }
      const out = [null];
      // On the pool: opening waits for the write lock while it sets up the schema, and for
      // a server's round trips. The options stay allocated until it has returned.
      await callChecked(f, 'open', f.open, [path, options_, out]);
      return new Transport(PRIVATE, out[0], clock, path);
    } catch (e) {
      if (clock) clock.free();
      throw e;
    } finally {
      f.optionsFree(options_);
    }
  }

  /** The path (or URL) this transport was opened with. */
  get path() {
    return this.#path;
  }

  /** True once close() has been called. */
  get closed() {
    return this.#closed;
  }

  /** Appends `event` (an object, serialized with JSON.stringify, or a JSON text) to the group's FIFO. */
  publish(groupId, event, options = {}) {
    return this.#call('publish', true, () => {
      const m = messageStruct('', groupId, event, checkOptions('options', options, PUBLISH_OPTIONS));
      return async (f, handle) => {
        await callChecked(f, 'publish', f.publish, [handle, m.group_id, m.event_json, m.priority, m.routing_key]);
      };
    });
  }

  /**
   * Appends `messages` ({ groupId, event, priority?, routingKey? } each, as publish takes
   * them) in order, in one transaction: all of them or none, with one commit for the batch.
   */
  publishMany(messages) {
    return this.#call('publishMany', true, () => {
      if (!Array.isArray(messages)) throw argumentError(`messages must be an array, got ${describe(messages)}`);
      const structs = messages.map(batchElement);
      return async (f, handle) => {
        await callChecked(f, 'publishMany', f.publishMany, [handle, structs.length ? structs : null, structs.length]);
      };
    });
  }

  /** Leases the next deliverable message to `workerId`; null when there is none. */
  claim(workerId, options = {}) {
    return this.#call('claim', true, () => {
      const args = claimArgs(workerId, options);
      return (f, handle) => leaseOf(f, 'claim', f.claim, [handle, ...args]);
    });
  }

  /**
   * Acks `lease` and claims the next message for `workerId` in one transaction (one commit
   * instead of two): the worker loop's fast path. Null when the ack succeeded and nothing
   * is deliverable; if the ack fails, nothing is claimed.
   */
  ackAndClaim(lease, workerId, options = {}) {
    return this.#call('ackAndClaim', true, () => {
      const struct = leaseStruct(lease);
      const args = claimArgs(workerId, options);
      return (f, handle) => leaseOf(f, 'ack_and_claim', f.ackAndClaim, [handle, struct, ...args]);
    });
  }

  /** Finishes a lease: deletes its message. HAREL_ERR_LEASE_LOST if it is no longer this worker's. */
  ack(lease) {
    return this.#call('ack', true, () => {
      const struct = leaseStruct(lease);
      return async (f, handle) => {
        await callChecked(f, 'ack', f.ack, [handle, struct]);
      };
    });
  }

  /** Gives a lease back: claimable at once (delay 0, the default) or parked for `delay` seconds. */
  nack(lease, options = {}) {
    return this.#call('nack', true, () => {
      const struct = leaseStruct(lease);
      const o = checkOptions('options', options, NACK_OPTIONS);
      const delay = checkNumber('delay', o.delay === undefined ? 0 : o.delay);
      return async (f, handle) => {
        await callChecked(f, 'nack', f.nack, [handle, struct, delay]);
      };
    });
  }

  /**
   * Moves the leased message to the dead letters with `reason` (a worker's verdict: it will
   * never succeed); its group goes on at once. HAREL_ERR_LEASE_LOST as for ack.
   */
  deadLetter(lease, reason) {
    return this.#call('deadLetter', true, () => {
      const struct = leaseStruct(lease);
      const text = checkString('reason', reason);
      return async (f, handle) => {
        await callChecked(f, 'dead_letter', f.deadLetter, [handle, struct, text]);
      };
    });
  }

  /**
   * Moves dead letters back into their groups as the newest messages, claimed 0 times:
   * `{ all: true }`, `{ groupId }` or `{ seqs: [...] }`. Resolves how many moved.
   */
  redrive(which) {
    return this.#call('redrive', true, () => {
      const args = selection(which);
      return (f, handle) => countOf(f, 'redrive', f.redrive, [handle, ...args]);
    });
  }

  /** Deletes dead letters, chosen as for redrive. Resolves how many. */
  purgeDead(which) {
    return this.#call('purgeDead', false, () => {
      const args = selection(which);
      return (f, handle) => countOf(f, 'purge_dead', f.purgeDead, [handle, ...args]);
    });
  }

  /** Deletes a group's messages and the group (a lease on one is lost). Resolves how many messages. */
  purgeGroup(groupId) {
    return this.#call('purgeGroup', false, () => {
      const group = checkString('groupId', groupId);
      return (f, handle) => countOf(f, 'purge_group', f.purgeGroup, [handle, group]);
    });
  }

  /** Deletes every message and group; dead letters stay. Resolves how many messages. */
  purge() {
    return this.#call('purge', false, () => (f, handle) => countOf(f, 'purge', f.purge, [handle]));
  }

  /** Ends the lease or park on a group's head now. Resolves false when nothing was held. */
  release(groupId) {
    return this.#call('release', true, () => {
      const group = checkString('groupId', groupId);
      return async (f, handle) => {
        const out = [false];
        await callChecked(f, 'release', f.release, [handle, group, out]);
        return Boolean(out[0]);
      };
    });
  }

  /** Exact counts of the queue now; one read without the write lock. */
  stats() {
    return this.#call('stats', true, () => (f, handle) => lookOf(f, 'stats', f.stats, [handle], (ptr) => takeStats(f, ptr)));
  }

  /**
   * A page of groups in group id order: `state` ('ready', 'leased', 'parked'; any when
   * absent), `cursor` (the `next` of the page before; none for the first), `limit`
   * (1..10000, default 100). Resolves `{ groups, next }`, `next` null on the last page.
   */
  groups(options = {}) {
    return this.#call('groups', true, () => {
      const o = checkOptions('options', options, GROUPS_OPTIONS);
      const state = groupStateArg(o.state);
      const cursor = checkString('cursor', o.cursor, { nullable: true });
      const limit = checkLimit(o.limit);
      return (f, handle) => lookOf(f, 'groups', f.groups, [handle, state, cursor, limit], (ptr) => {
        const [groups, next] = takePage(ptr, GroupInfoType, f.groupPageFree, groupInfo);
        return Object.freeze({ groups, next });
      });
    });
  }

  /** A page of a group's messages, oldest first, claiming none. Resolves `{ messages, next }`. */
  peek(groupId, options = {}) {
    return this.#call('peek', false, () => {
      const group = checkString('groupId', groupId);
      const o = checkOptions('options', options, PEEK_OPTIONS);
      const cursor = checkString('cursor', o.cursor, { nullable: true });
      const limit = checkLimit(o.limit);
      return (f, handle) => lookOf(f, 'peek', f.peek, [handle, group, cursor, limit], (ptr) => {
        const [messages, next] = takePage(ptr, MessageInfoType, f.messagePageFree, messageInfo);
        return Object.freeze({ messages, next });
      });
    });
  }

  /** A page of dead letters in queue order (one group's with `groupId`). Resolves `{ letters, next }`. */
  deadLetters(options = {}) {
    return this.#call('deadLetters', false, () => {
      const o = checkOptions('options', options, DEAD_OPTIONS);
      const group = checkString('groupId', o.groupId, { nullable: true });
      const cursor = checkString('cursor', o.cursor, { nullable: true });
      const limit = checkLimit(o.limit);
      return (f, handle) => lookOf(f, 'dead_letters', f.deadLetters, [handle, group, cursor, limit], (ptr) => {
        const [letters, next] = takePage(ptr, DeadLetterType, f.deadPageFree, deadLetter);
        return Object.freeze({ letters, next });
      });
    });
  }

  /**
   * Closes the transport once the calls already made on it have finished: the handle is
   * never closed while a call uses it. Calls made after close() reject with
   * HAREL_ERR_CLOSED. Calling close() again returns the same promise.
   */
  close() {
    if (this.#closing) return this.#closing;
    this.#closed = true;
    this.#closing = (async () => {
      if (this.#inFlight > 0) await new Promise((resolve) => (this.#drained = resolve));
      const f = load();
      const handle = this.#handle;
      this.#handle = null;
      finalizer.unregister(this);
      // On the pool too: the last connection to a file checkpoints its WAL.
      await new Promise((resolve) => {
        try {
          f.close.async(handle, () => resolve());
        } catch {
          f.close(handle); // koffi could not queue it
          resolve();
        }
      });
      if (this.#clock) this.#clock.free();
      this.#clock = null;
    })();
    return this.#closing;
  }

  async [Symbol.asyncDispose || Symbol.for('nodejs.asyncDispose')]() {
    await this.close();
  }

  /**
   * Checks the arguments now (`prepare` throws or returns the call), then runs the call:
   * at once, concurrently with this transport's other calls; or, for a call that reads the
   * clock (`readsClock`) on a transport with a JS clock, once the previous such call has
   * ended, right after the clock is read (see ClockCell).
   */
  #call(what, readsClock, prepare) {
    let run;
    try {
      if (this.#closed) throw closedError(what);
      run = prepare();
    } catch (e) {
      return Promise.reject(e);
    }
    const f = load();
    const handle = this.#handle;
    this.#inFlight += 1;
    let result;
    if (this.#clock && readsClock) {
      const clock = this.#clock;
      result = this.#clockTail.then(() => {
        clock.tick();
        return run(f, handle);
      });
      this.#clockTail = result.then(noop, noop);
    } else {
      result = run(f, handle);
    }
    return result.finally(() => {
      this.#inFlight -= 1;
      if (this.#inFlight === 0 && this.#drained) this.#drained();
    });
  }
}

/** Runs a call that leases a message into its out argument; copies the lease out and frees it. */
async function leaseOf(f, what, call, args) {
  const out = [null];
  const status = await callChecked(f, what, call, [...args, out]);
  if (status === STATUS.HAREL_EMPTY) return null;
  const ptr = out[0];
  try {
    return makeLease(f, ptr);
  } finally {
    f.leaseFree(ptr);
  }
}

/**
 * A JS clock for the library without calling JavaScript from a pool thread. koffi could
 * run a registered JS callback for the C clock: the pool thread would wait for the main
 * thread to run it. But a process that dies of an uncaught exception joins the pool
 * threads before exiting, and one of them waiting for the dead main thread hangs it
 * forever. So the JS clock is read on the main thread just before each call and written,
 * as text, into a small C buffer; the C clock is libc's `double atof(const char *)`
 * with that buffer as its ctx. The text is exact: the shortest decimal digits of the
 * double as an integer with an exponent ("17000000005e-1"), which strtod rounds back to
 * the same double, and no decimal point, so no locale can change it.
 *
 * One buffer per transport, so the calls that read the clock (publish, publishMany, claim,
 * ackAndClaim, ack, nack, deadLetter, redrive, release, stats, groups) go one at a time on a
 * transport with a JS clock: were two in flight, writing the second's time on the main
 * thread could tear the first's read of it on a pool thread, and the first could read the
 * second's time. (A publish reads it too: the library stamps each message with its publish
 * time.) purgeDead, purgeGroup, purge, peek and deadLetters never read it: they stay
 * concurrent. Without a JS clock every call is concurrent.
 */
const CELL_SIZE = 48;
const CELL_TYPE = koffi.array('char', CELL_SIZE);

class ClockCell {
  constructor(clock) {
    this.clock = clock;
    this.ptr = koffi.alloc('char', CELL_SIZE);
  }

  /** Reads the JS clock and stores its time for the next call. */
  tick() {
    let now;
    try {
      now = this.clock();
    } catch (e) {
      throw argumentError(`the clock threw: ${e instanceof Error ? e.message : String(e)}`, e);
    }
    if (typeof now !== 'number') {
      throw argumentError(`the clock returned ${describe(now)}; it must return epoch seconds as a number`);
    }
    koffi.encode(this.ptr, CELL_TYPE, numberText(now));
  }

  free() {
    if (this.ptr !== null) koffi.free(this.ptr);
    this.ptr = null;
  }
}

/** `x` as text that C's strtod reads back as exactly `x`, without a decimal point. */
function numberText(x) {
  if (Number.isNaN(x)) return 'nan'; // the library rejects a non-finite or negative time
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (Object.is(x, -0)) return '-0';
  const [mantissa, exponent] = x.toExponential().split('e'); // shortest round-trip digits
  const decimals = (mantissa.split('.')[1] || '').length;
  return `${mantissa.replace('.', '')}e${Number(exponent) - decimals}`;
}

/** The library's version, "MAJOR.MINOR.PATCH". */
function version() {
  return load().version();
}

/** Which library file was loaded, and its version. */
function libraryInfo() {
  const f = load();
  return { path: f.where, version: f.version() };
}

/** The idempotent CREATE statements of a fresh schema, one per line, for a migration tool. */
function schemaSql(prefix = 'harel') {
  return schemaText('schemaSql', load().schemaSql, prefix);
}

/** The statements that upgrade a harel 0.9 groups table (adds routing_key). Run once. */
function schemaUpgradeSql(prefix = 'harel') {
  return schemaText('schemaUpgradeSql', load().schemaUpgradeSql, prefix);
}

function schemaText(what, fn, prefix) {
  checkString('prefix', prefix);
  const out = [null];
  callCheckedHere(load(), what, fn, [prefix, out]);
  return takeString(out[0]);
}

module.exports = {
  Transport,
  HarelError,
  STATUS,
  DEFAULT_VISIBILITY,
  DEFAULT_LIMIT,
  MAX_PAGE,
  version,
  libraryInfo,
  schemaSql,
  schemaUpgradeSql,
};
