'use strict';
// harel-transport for Node.js: the C ABI of libharel_transport (see include/harel_transport.h)
// through koffi. CommonJS; `import { Transport } from 'harel-transport'` works too.
//
// Threading: every call that touches the database (open, publish, publishMany, claim,
// claimMany, ack, ackMany, ackAndClaim, ackAndClaimMany, extend, nack, deadLetter, redrive,
// purgeDead, purgeGroup, purge, release, stats, groups, peek, deadLetters, close) runs on
// the libuv thread pool through koffi's `.async()`, so the event loop keeps running while
// a call waits. The calls of one Transport go to the pool concurrently: each reads its own
// error from its `harel_error **err` out-parameter, and the library runs them on the
// handle (publishes arriving while another commits share its next commit). The one
// exception is a Transport with a JS clock (see ClockCell). A claim that waits holds a
// pool thread while it waits: see "Waiting claims" below for how the binding keeps the
// pool's other work going.

const fs = require('node:fs');
const path = require('node:path');
const { inspect } = require('node:util');
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
  HAREL_ERR_INTERRUPTED: -6,
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
const C = koffi.pointer(koffi.opaque()); // harel_cancel *
// const harel_lease *const *leases: koffi copies a JS array of lease structs in, each
// behind its pointer. LEASES_OUT, harel_lease **leases_out: a JS array of `max` elements
// that koffi fills with the leases handed out.
const LEASES = koffi.pointer(L);
const LEASES_OUT = koffi.out(koffi.pointer(L));
const OUTCOMES = koffi.out(koffi.pointer('int32_t')); // harel_status *outcomes: an Int32Array
const SIZE_OUT = koffi.out(koffi.pointer('size_t')); // size_t *n_out
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
    // the worker loop (issue #15)
    claimWait: fn('harel_transport_claim_wait', status, [
      T, 'const char *', 'double', 'int32_t', 'const char **', 'size_t', 'double', C, koffi.out(koffi.pointer(L)), ERR,
    ]),
    claimMany: fn('harel_transport_claim_many', status, [
      T, 'const char *', 'double', 'int32_t', 'const char **', 'size_t', 'size_t', 'double', C, LEASES_OUT, SIZE_OUT, ERR,
    ]),
    ackMany: fn('harel_transport_ack_many', status, [T, LEASES, 'size_t', OUTCOMES, ERR]),
    ackAndClaimMany: fn('harel_transport_ack_and_claim_many', status, [
      T, LEASES, 'size_t', OUTCOMES, 'const char *', 'double', 'int32_t', 'const char **', 'size_t', 'size_t',
      LEASES_OUT, SIZE_OUT, ERR,
    ]),
    extend: fn('harel_transport_extend', status, [T, koffi.inout(L), 'double', ERR]),
    cancelNew: fn('harel_cancel_new', C, []),
    cancelFire: fn('harel_cancel_fire', 'void', [C]),
    cancelFree: fn('harel_cancel_free', 'void', [C]),
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

/**
 * A claim's arguments after the handle, checked: worker, visibility, floor, keys, count.
 * `o` is the options object, checked by the caller against the options its method takes.
 */
function claimArgs(workerId, o) {
  const worker = checkString('workerId', workerId);
  const visibility = checkNumber('visibility', o.visibility === undefined ? DEFAULT_VISIBILITY : o.visibility);
  const minPriority = checkInteger('minPriority', o.minPriority === undefined ? 0 : o.minPriority);
  let keys = o.routingKeys === undefined || o.routingKeys === null ? [] : o.routingKeys;
  if (!Array.isArray(keys)) throw argumentError(`routingKeys must be an array of strings, got ${describe(keys)}`);
  keys = keys.map((key, i) => checkString(`routingKeys[${i}]`, key));
  return [worker, visibility, minPriority, keys.length ? keys : null, keys.length];
}

/**
 * claimMany's `max`, as the C size_t. The range (1..MAX_CLAIM) is the library's to check,
 * but the binding hands it an out array of `max` elements, so it refuses to make one past
 * MAX_CLAIM (and what koffi would change: -1, 1.5, NaN).
 */
function maxArg(value) {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > MAX_CLAIM) {
    throw argumentError(`max must be an integer 1..${MAX_CLAIM}, got ${describe(value)}`);
  }
  return value;
}

/** A wait in seconds (0, looking once, when absent); its range is the library's to check. */
function waitArg(value) {
  return value === undefined ? 0 : checkNumber('wait', value);
}

/** An AbortSignal, or null; anything else is refused (a typo would otherwise never abort). */
function signalArg(signal) {
  if (signal === undefined || signal === null) return null;
  if (typeof signal !== 'object' || typeof signal.aborted !== 'boolean' || typeof signal.addEventListener !== 'function') {
    throw argumentError(`signal must be an AbortSignal, got ${describe(signal)}`);
  }
  return signal;
}

/** What a call aborted by `signal` rejects with, as Node's own APIs do: its reason. */
function abortReason(signal) {
  return signal.reason !== undefined ? signal.reason : new DOMException('This operation was aborted', 'AbortError');
}

function interruptedError(what, why) {
  const cause = why === 'close' ? 'the transport was closed' : 'Transport.interrupt() was called';
  return new HarelError('HAREL_ERR_INTERRUPTED', `${what}: ${cause} while it waited; nothing was claimed`, {
    status: STATUS.HAREL_ERR_INTERRUPTED,
  });
}

/**
 * The harel_lease ack, nack, extend and ackAndClaim read (seq, group_id with group_id_len,
 * worker_id); `name` names it in errors ('leases[2]' in a batch). The group id goes as a
 * Buffer of its UTF-8 bytes with its length, so a group id holding NUL bytes (stored by
 * another writer, handed out by a claim) reaches the library whole; the Buffer stays
 * referenced by the struct until the call has ended.
 */
function leaseStruct(lease, name = 'lease') {
  if (lease === null || typeof lease !== 'object') {
    throw argumentError(`${name} must be a lease object from claim(), got ${describe(lease)}`);
  }
  const seq = checkSeq(`${name}.seq`, lease.seq);
  const groupId = Buffer.from(checkString(`${name}.groupId`, lease.groupId, { nul: true }) + '\0', 'utf8');
  return {
    seq,
    group_id: groupId,
    group_id_len: groupId.length - 1,
    event: null, // the calls that take a lease read only seq, group_id and worker_id
    event_len: 0,
    worker_id: checkString(`${name}.workerId`, lease.workerId),
    lock_expiry: 0,
    attempts: 0,
  };
}

/** The lease structs of ackMany's and ackAndClaimMany's array. */
function leaseStructs(leases) {
  if (!Array.isArray(leases)) throw argumentError(`leases must be an array of leases, got ${describe(leases)}`);
  return leases.map((lease, i) => leaseStruct(lease, `leases[${i}]`));
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

/**
 * At most `slots` of something at once; the rest wait in a FIFO queue. `enter(start)` runs
 * `start` now, or queues it and returns a ticket `withdraw` can take back out of the queue;
 * whoever entered calls `leave()` once done, which starts the next in the queue.
 */
class Gate {
  #free;
  #queue = []; // tickets { start }, start null once withdrawn
  #head = 0;

  constructor(slots) {
    this.#free = slots;
  }

  enter(start) {
    if (this.#free > 0) {
      this.#free -= 1;
      start();
      return null;
    }
    const ticket = { start };
    this.#queue.push(ticket);
    return ticket;
  }

  leave() {
    while (this.#head < this.#queue.length) {
      const { start } = this.#queue[this.#head];
      this.#queue[this.#head++] = undefined;
      if (this.#head === this.#queue.length) {
        this.#queue.length = this.#head = 0;
      } else if (this.#head >= 1024 && 2 * this.#head >= this.#queue.length) {
        this.#queue.splice(0, this.#head); // a queue that never empties: drop the started
        this.#head = 0;
      }
      if (start) {
        start();
        return;
      }
    }
    this.#free += 1;
  }

  withdraw(ticket) {
    ticket.start = null;
  }
}

// At most this many of the binding's async calls are with koffi at once (for every
// Transport of the process); the rest wait here, in call order. koffi refuses calls past
// its own limit (max_async_calls, 256 by default, shared by every module in the process)
// and sets memory aside for each queued call (8 sets kept, the rest allocated per call),
// while only the libuv pool's threads (UV_THREADPOOL_SIZE, 4 by default) run them. Twice
// the pool keeps every thread fed without making the pool's other users (fs, dns, zlib)
// queue behind many of ours.
const POOL_THREADS = Number.parseInt(process.env.UV_THREADPOOL_SIZE, 10) || 4;
const MAX_ISSUED = Math.min(128, Math.max(8, 2 * POOL_THREADS));
const issuing = new Gate(MAX_ISSUED);

/** Runs `fn.async(...args)` on the pool; resolves its return value. */
function callAsync(fn, args) {
  return new Promise((resolve, reject) => {
    issuing.enter(() => {
      const done = (err, result) => {
        issuing.leave();
        if (err) reject(err);
        else resolve(result);
      };
      try {
        fn.async(...args, done);
      } catch (e) {
        done(e);
      }
    });
  });
}

// Waiting claims. A C call that waits holds its pool thread for as long as it waits: with
// the default pool of 4, four waiting claims stopped every fs call, dns lookup and publish
// of the process until their waits ended (measured: an fs.promises.stat took the whole
// 3 s wait of 4 claims, and the publish that would have woken them waited behind them).
// So the binding (1) lets at most POOL_THREADS - 1 waits be on the pool at once (at least
// one), keeping a thread for everything else, and (2) makes each C wait at most
// WAIT_SLICE seconds: a claim that waits longer calls the same C function again with the
// time left and the same harel_cancel, after the others queued for a wait slot have had
// a turn. The waiting itself (what wakes a claim, when it looks) stays the library's.
const WAIT_SLOTS = Math.max(1, POOL_THREADS - 1);
const WAIT_SLICE = 1;
const waitGate = new Gate(WAIT_SLOTS);

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

// A Lease is frozen, but extend() moves its lockExpiry: that is an own enumerable getter
// (spreads and JSON.stringify carry it) reading a record behind a symbol, which extend()
// writes. The getter and the inspector are shared by every lease (a closure per lease
// cost the native heap measurably more in leak.test.js).
const EXPIRY = Symbol('lockExpiry');
const LOCK_EXPIRY = {
  enumerable: true,
  get: function lockExpiry() {
    return this[EXPIRY].lockExpiry;
  },
};
const INSPECT = {
  value: function inspectLease(depth, options, inspectValue) {
    return inspectValue({ ...this }, options); // the value, not "[Getter]"
  },
};

/** A lease the library handed out, copied into a frozen JS object (the caller frees `ptr`). */
function makeLease(f, ptr) {
  const raw = koffi.decode(ptr, f.Lease);
  const eventJson = bytesText(raw.event, raw.event_len);
  const lease = {
    seq: raw.seq,
    groupId: bytesText(raw.group_id, raw.group_id_len),
    event: parsed(eventJson),
    eventJson,
    workerId: raw.worker_id,
    lockExpiry: undefined, // keeps the key's place; made the getter below
    attempts: Number(raw.attempts),
  };
  Object.defineProperty(lease, EXPIRY, { value: { lockExpiry: raw.lock_expiry } });
  Object.defineProperty(lease, 'lockExpiry', LOCK_EXPIRY);
  Object.defineProperty(lease, inspect.custom, INSPECT);
  return Object.freeze(lease);
}

/** The first `n` leases of an array the library filled, copied out; each one freed. */
function takeLeases(f, ptrs, n) {
  try {
    return ptrs.slice(0, n).map((ptr) => makeLease(f, ptr));
  } finally {
    for (let i = 0; i < n; i++) f.leaseFree(ptrs[i]);
  }
}

/**
 * The per-lease outcomes of ackMany and ackAndClaimMany: `{ lease, ok: true, error: null }`,
 * or `{ lease, ok: false, error }` with a HarelError naming the lease (the library reports
 * a lost lease by its status alone).
 */
function ackOutcomes(what, leases, statuses) {
  return leases.map((lease, i) => {
    const status = statuses[i];
    if (status === STATUS.HAREL_OK) return Object.freeze({ lease, ok: true, error: null });
    const code = statusName(status);
    const why = status === STATUS.HAREL_ERR_LEASE_LOST
      ? `is no longer leased to worker ${JSON.stringify(lease.workerId)}: it was acked or nacked already, or its lease lapsed and another worker claimed it`
      : `was not acked (${code})`;
    const error = new HarelError(code, `${what}: leases[${i}], message ${lease.seq} of group ${JSON.stringify(lease.groupId)}, ${why}`, { status });
    return Object.freeze({ lease, ok: false, error });
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
const WAITING_CLAIM_OPTIONS = [...CLAIM_OPTIONS, 'wait', 'signal'];
const CLAIM_MANY_OPTIONS = [...WAITING_CLAIM_OPTIONS, 'max'];
const ACK_AND_CLAIM_MANY_OPTIONS = [...CLAIM_OPTIONS, 'max'];
const KEEP_ALIVE_OPTIONS = ['visibility', 'every', 'signal'];
const NACK_OPTIONS = ['delay'];
const SELECTION = ['all', 'groupId', 'seqs'];
const GROUPS_OPTIONS = ['state', 'cursor', 'limit'];
const PEEK_OPTIONS = ['cursor', 'limit'];
const DEAD_OPTIONS = ['groupId', 'cursor', 'limit'];
const GROUP_STATES = ['ready', 'leased', 'parked']; // harel_group_state's values, in order
const DEFAULT_VISIBILITY = 30;
const DEFAULT_LIMIT = 100;
const MAX_PAGE = 10000;
const MAX_CLAIM = 1000; // HAREL_MAX_CLAIM: the most leases one claimMany hands out

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
  #waits = new Set(); // the waiting claims in progress (see #waiting)
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

  /**
   * Leases the next deliverable message to `workerId`; null when there is none. With
   * `wait` (seconds) it waits that long for one; `signal` (an AbortSignal) ends the wait:
   * see #waiting.
   */
  claim(workerId, options = {}) {
    return this.#call('claim', false, () => {
      const o = checkOptions('options', options, WAITING_CLAIM_OPTIONS);
      const args = claimArgs(workerId, o);
      if (o.wait === undefined && o.signal === undefined) {
        return (f, handle) => this.#clocked(() => leaseOf(f, 'claim', f.claim, [handle, ...args]));
      }
      const wait = waitArg(o.wait);
      const signal = signalArg(o.signal);
      return async (f, handle) => {
        const leases = await this.#waiting(f, 'claim', wait, signal, async (seconds, cancel) => {
          const out = [null];
          const status = await callChecked(f, 'claim', f.claimWait, [handle, ...args, seconds, cancel, out]);
          return status === STATUS.HAREL_OK ? takeLeases(f, out, 1) : [];
        });
        return leases.length ? leases[0] : null;
      };
    });
  }

  /**
   * Leases up to `max` (1..1000) messages, each the head of a different group, in serving
   * order, in one transaction; waits up to `wait` seconds while there is none. Resolves
   * an array, empty when nothing came within the wait.
   */
  claimMany(workerId, options) {
    return this.#call('claimMany', false, () => {
      const o = checkOptions('options', options, CLAIM_MANY_OPTIONS);
      const args = claimArgs(workerId, o);
      const max = maxArg(o.max);
      const wait = waitArg(o.wait);
      const signal = signalArg(o.signal);
      return (f, handle) => this.#waiting(f, 'claimMany', wait, signal, async (seconds, cancel) => {
        const out = new Array(max).fill(null);
        const n = [0];
        const status = await callChecked(f, 'claim_many', f.claimMany, [handle, ...args, max, seconds, cancel, out, n]);
        return status === STATUS.HAREL_OK ? takeLeases(f, out, Number(n[0])) : [];
      });
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
      const args = claimArgs(workerId, checkOptions('options', options, CLAIM_OPTIONS));
      return (f, handle) => leaseOf(f, 'ack_and_claim', f.ackAndClaim, [handle, struct, ...args]);
    });
  }

  /**
   * Acks `leases` in one transaction (one commit). Resolves an outcome per lease, in
   * order: `{ lease, ok: true, error: null }`, or `{ lease, ok: false, error }` for one
   * that was lost (HAREL_ERR_LEASE_LOST), while the others are acked. It rejects (acking
   * none) for a bad lease or a failed transaction.
   */
  ackMany(leases) {
    return this.#call('ackMany', true, () => {
      const structs = leaseStructs(leases);
      return async (f, handle) => {
        const statuses = new Int32Array(structs.length);
        const n = structs.length;
        await callChecked(f, 'ack_many', f.ackMany, [handle, n ? structs : null, n, n ? statuses : null]);
        return ackOutcomes('ackMany', leases, statuses);
      };
    });
  }

  /**
   * ackMany, then claimMany without waiting, in one transaction: a batch worker's loop
   * with one commit per batch. Resolves `{ acked, leases }`: the outcomes as ackMany's (a
   * lost lease does not stop the claim), and the new leases (empty when none is
   * deliverable).
   */
  ackAndClaimMany(leases, workerId, options) {
    return this.#call('ackAndClaimMany', true, () => {
      const structs = leaseStructs(leases);
      const o = checkOptions('options', options, ACK_AND_CLAIM_MANY_OPTIONS);
      const args = claimArgs(workerId, o);
      const max = maxArg(o.max);
      return async (f, handle) => {
        const n = structs.length;
        const statuses = new Int32Array(n);
        const out = new Array(max).fill(null);
        const claimed = [0];
        const status = await callChecked(f, 'ack_and_claim_many', f.ackAndClaimMany, [
          handle, n ? structs : null, n, n ? statuses : null, ...args, max, out, claimed,
        ]);
        const next = status === STATUS.HAREL_OK ? takeLeases(f, out, Number(claimed[0])) : [];
        return Object.freeze({ acked: ackOutcomes('ackAndClaimMany', leases, statuses), leases: next });
      };
    });
  }

  /**
   * Makes `lease` run to now + `visibility` seconds. Resolves the new lock expiry, which a
   * Lease from this transport's claims then reads as its `lockExpiry` too.
   * HAREL_ERR_LEASE_LOST if it was acked or nacked, or lapsed and was claimed by another
   * worker (a lapsed lease no one claimed since is still yours, and is extended).
   */
  extend(lease, visibility) {
    return this.#call('extend', true, () => {
      const struct = leaseStruct(lease);
      const seconds = checkNumber('visibility', visibility);
      return async (f, handle) => {
        await callChecked(f, 'extend', f.extend, [handle, struct, seconds]);
        if (Object.hasOwn(lease, EXPIRY)) lease[EXPIRY].lockExpiry = struct.lock_expiry; // a Lease of ours
        return struct.lock_expiry;
      };
    });
  }

  /**
   * Keeps `lease` from lapsing while its handler runs: extends it by `visibility` (default
   * 30) seconds every `every` seconds (default visibility / 3), the first time once half
   * of what is left of it has passed (at once for a lease without a lockExpiry), until
   * stop() (or `signal` aborts). A handler quicker than that costs nothing. The handle's
   * `signal` aborts, with the HarelError as its reason, when the lease is lost or can no
   * longer be extended.
   */
  keepAlive(lease, options = {}) {
    if (this.#closed) throw closedError('keepAlive');
    leaseStruct(lease); // checked now, not at the first beat
    const o = checkOptions('options', options, KEEP_ALIVE_OPTIONS);
    const visibility = checkNumber('visibility', o.visibility === undefined ? DEFAULT_VISIBILITY : o.visibility);
    // The beat's interval is the binding's own (a timer): setTimeout would make NaN or a
    // negative number 1 ms, extending in a hot loop. The visibility is the library's to check.
    const every = o.every === undefined ? visibility / 3 : checkNumber('every', o.every);
    if (!(Number.isFinite(every) && every > 0)) {
      throw argumentError(`every must be a positive number of seconds (default: visibility / 3), got ${describe(every)}`);
    }
    const signal = signalArg(o.signal);
    // "Now" by the clock the library stamped lockExpiry with.
    const now = this.#clock ? this.#clock.read() : Date.now() / 1000;
    const left = typeof lease.lockExpiry === 'number' ? lease.lockExpiry - now : 0;
    const first = Math.min(every, Math.max(0, left / 2)) || 0;
    return new KeepAlive((l, v) => this.extend(l, v), lease, visibility, every, first, signal);
  }

  /**
   * Ends the waits of the claims made so far on this transport: each rejects with
   * HAREL_ERR_INTERRUPTED (or resolves its leases, had it claimed meanwhile). Claims made
   * later wait as usual.
   */
  interrupt() {
    // Each claim's own cancel, not harel_transport_interrupt: that ends only the C waits in
    // progress, and a claim between two turns, or queued for one, would then wait again.
    for (const waiting of this.#waits) fire(waiting, 'interrupt');
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
   * Closes the transport once the calls already made on it have finished (claims that wait
   * are interrupted first): the handle is never closed while a call uses it. Calls made
   * after close() reject with HAREL_ERR_CLOSED. Calling close() again returns the same
   * promise.
   */
  close() {
    if (this.#closing) return this.#closing;
    this.#closed = true;
    // Waiting claims would hold the close for the rest of their waits.
    for (const waiting of this.#waits) fire(waiting, 'close');
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
   * ended, right after the clock is read (see ClockCell). A call made of several C calls
   * (a waiting claim) passes false and puts each of them through #clocked.
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
    const result = readsClock ? this.#clocked(() => run(f, handle)) : run(f, handle);
    return result.finally(() => {
      this.#inFlight -= 1;
      if (this.#inFlight === 0 && this.#drained) this.#drained();
    });
  }

  /** Runs `step` (a C call that reads the clock): at once, or in turn with a JS clock. */
  #clocked(step) {
    if (!this.#clock) return step();
    const clock = this.#clock;
    const result = this.#clockTail.then(() => {
      clock.tick();
      return step();
    });
    this.#clockTail = result.then(noop, noop);
    return result;
  }

  /**
   * A claim that waits up to `wait` seconds, ended early by `signal`, interrupt() or
   * close(). `issue(seconds, cancel)` makes the C call, waiting up to `seconds` with
   * `cancel`, and resolves the leases it claimed (none: []). The call gets its own
   * harel_cancel, fired by all three and freed once its last C call has returned.
   *
   * The C wait is cut into slices of WAIT_SLICE seconds, each waiting for a wait slot
   * (see WAIT_SLOTS); a slice that ends with nothing while time is left is followed by
   * the same call for the time left. A wait that is not a finite number >= 0 goes to the
   * library as given, which refuses it.
   *
   * Outcomes: leases claimed are resolved, whatever happened meanwhile (a lease is never
   * left behind). Else, if `signal` aborted: its reason. Else the C call's error, or
   * HAREL_ERR_INTERRUPTED by interrupt() or close(); else [] once the wait is over.
   */
  async #waiting(f, what, wait, signal, issue) {
    if (signal && signal.aborted) throw abortReason(signal);
    const cancel = f.cancelNew();
    if (!cancel) throw new HarelError('HAREL_ERR_PANIC', 'harel_cancel_new failed', { status: STATUS.HAREL_ERR_PANIC });
    const waiting = { cancel, why: null, withdraw: null };
    const onAbort = () => fire(waiting, 'abort');
    this.#waits.add(waiting);
    if (signal) signal.addEventListener('abort', onAbort, { once: true });
    try {
      const valid = Number.isFinite(wait) && wait >= 0;
      const deadline = performance.now() + wait * 1000;
      const seconds = () => (valid ? Math.min(WAIT_SLICE, Math.max(0, (deadline - performance.now()) / 1000)) : wait);
      for (;;) {
        const step = () => this.#clocked(() => issue(seconds(), cancel));
        let leases = null; // stays null for a slice withdrawn from the wait slots' queue
        let error = null;
        try {
          leases = await (valid && seconds() > 0 ? waitSlot(waiting, step) : step());
        } catch (e) {
          error = e;
        }
        if (leases && leases.length) return leases;
        if (signal && signal.aborted) throw abortReason(signal);
        if (error) throw error.code === 'HAREL_ERR_INTERRUPTED' && waiting.why ? interruptedError(what, waiting.why) : error;
        if (performance.now() >= deadline) return [];
        if (waiting.why) throw interruptedError(what, waiting.why);
      }
    } finally {
      if (signal) signal.removeEventListener('abort', onAbort);
      this.#waits.delete(waiting);
      f.cancelFree(cancel);
    }
  }
}

/** Fires a waiting claim's cancel (`why`: 'abort', 'interrupt', 'close'); the first reason stays. */
function fire(waiting, why) {
  if (waiting.why) return;
  waiting.why = why;
  load().cancelFire(waiting.cancel);
  if (waiting.withdraw) waiting.withdraw();
}

/**
 * Runs `step` (one slice of a waiting claim) once it has a wait slot, and gives the slot
 * back when it ends. While it waits for a slot, firing the claim's cancel takes it out of
 * the queue: it resolves null without a C call.
 */
function waitSlot(waiting, step) {
  return new Promise((resolve, reject) => {
    const ticket = waitGate.enter(() => {
      waiting.withdraw = null;
      step().then(
        (leases) => {
          waitGate.leave();
          resolve(leases);
        },
        (e) => {
          waitGate.leave();
          reject(e);
        },
      );
    });
    if (ticket) {
      waiting.withdraw = () => {
        waiting.withdraw = null;
        waitGate.withdraw(ticket);
        resolve(null);
      };
    }
  });
}

/**
 * Transport.keepAlive's handle: extends a lease `first` seconds from now and then every
 * `every` seconds until stop(). An extend that fails with HAREL_ERR_BUSY or
 * HAREL_ERR_CONNECT is tried again at the next beat (the lease may still be had: a lapsed
 * lease no one claimed is extended); any other failure (HAREL_ERR_LEASE_LOST above all)
 * ends the beats and aborts `signal` with the error. Until then its timer keeps the
 * process alive, as the work it stands for does.
 */
class KeepAlive {
  #extend;
  #lease;
  #visibility;
  #every;
  #lost = new AbortController();
  #timer = null;
  #stopped = false;
  #unlisten = noop;

  constructor(extend, lease, visibility, every, first, signal) {
    this.#extend = extend;
    this.#lease = lease;
    this.#visibility = visibility;
    this.#every = every;
    if (signal) {
      if (signal.aborted) {
        this.#stopped = true;
        return;
      }
      const stop = () => this.stop();
      signal.addEventListener('abort', stop, { once: true });
      this.#unlisten = () => signal.removeEventListener('abort', stop);
    }
    this.#schedule(first);
  }

  /** Aborts, with the HarelError as its reason, when the lease is lost or can't be extended. */
  get signal() {
    return this.#lost.signal;
  }

  /** True once stop() was called (or the caller's signal aborted, or the lease was lost). */
  get stopped() {
    return this.#stopped;
  }

  /** Stops extending. An extend already on its way still lands; its outcome is ignored. */
  stop() {
    if (this.#stopped) return;
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#unlisten();
  }

  [Symbol.dispose || Symbol.for('nodejs.dispose')]() {
    this.stop();
  }

  #beat() {
    this.#extend(this.#lease, this.#visibility).then(
      () => this.#schedule(this.#every),
      (e) => {
        if (this.#stopped) return;
        if (e.code === 'HAREL_ERR_BUSY' || e.code === 'HAREL_ERR_CONNECT') return this.#schedule(this.#every);
        this.stop();
        this.#lost.abort(e);
      },
    );
  }

  #schedule(seconds) {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => this.#beat(), seconds * 1000);
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
    koffi.encode(this.ptr, CELL_TYPE, numberText(this.read()));
  }

  /** The JS clock's time, checked to be a number. */
  read() {
    let now;
    try {
      now = this.clock();
    } catch (e) {
      throw argumentError(`the clock threw: ${e instanceof Error ? e.message : String(e)}`, e);
    }
    if (typeof now !== 'number') {
      throw argumentError(`the clock returned ${describe(now)}; it must return epoch seconds as a number`);
    }
    return now;
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
  MAX_CLAIM,
  version,
  libraryInfo,
  schemaSql,
  schemaUpgradeSql,
};
