'use strict';
// harel-transport for Node.js: the C ABI of libharel_transport (see include/harel_transport.h)
// through koffi. CommonJS; `import { Transport } from 'harel-transport'` works too.
//
// Threading: every call that touches the database (publish, publishMany, claim, ack, nack)
// runs on the libuv thread pool through koffi's `.async()`, so the event loop keeps running
// while a call waits for the write lock. The calls of one Transport are queued in
// JavaScript and issued one at a time: the library runs them one at a time anyway, and it
// is what makes the error message of a failed call readable afterwards (see `failure`
// below). Publishes queued one after another go as one batch (see `append` below).
// `Transport.open` and `close` are synchronous C calls on the main thread (see README).

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

/** A message for a status, should the library give none (it always should). */
const GENERIC = {
  HAREL_ERR_ARGUMENT: 'the library rejected an argument',
  HAREL_ERR_DATABASE: 'the database failed',
  HAREL_ERR_BUSY: 'the write lock was not had within the busy timeout',
  HAREL_ERR_LEASE_LOST: 'the message is gone, or leased to another worker',
  HAREL_ERR_CONNECT: 'the server could not be reached or refused the token',
  HAREL_ERR_PANIC: 'internal error in libharel_transport; close the transport',
};

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
  const repoBuild = path.join(__dirname, '..', '..', 'target', 'release', 'libharel_transport.so');
  if (fs.existsSync(repoBuild)) candidates.push(repoBuild);
  candidates.push('libharel_transport.so.0'); // installed: the dynamic loader's search path
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
// this package (or another binding of the same library) may declare its own.
const LeaseType = koffi.struct({
  seq: 'int64_t',
  group_id: 'char *',
  event: 'char *',
  worker_id: 'char *',
  lock_expiry: 'double',
});
const MessageType = koffi.struct({
  group_id: 'const char *',
  event_json: 'const char *',
  priority: 'int32_t',
  routing_key: 'const char *',
});
const T = koffi.pointer(koffi.opaque()); // harel_transport *
const O = koffi.pointer(koffi.opaque()); // harel_options *
const L = koffi.pointer(LeaseType); // harel_lease *
const M = koffi.pointer(MessageType); // const harel_message *: koffi copies a JS array in

function bind(lib, where) {
  const status = 'int32_t';
  const fn = (name, ret, params) => lib.func(name, ret, params);

  const f = {
    where,
    Lease: LeaseType,
    // The C clock of a Transport with a JS clock: the C library's atof (a dependency of
    // libharel_transport, found through it) reading the text of "now" (see ClockCell).
    atof: lib.symbol('atof'),
    version: fn('harel_version', 'const char *', []),
    statusName: fn('harel_status_name', 'const char *', ['int32_t']),
    lastError: fn('harel_last_error', 'const char *', []),
    stringFree: fn('harel_string_free', 'void', ['void *']),
    optionsNew: fn('harel_options_new', O, []),
    optionsFree: fn('harel_options_free', 'void', [O]),
    setPrefix: fn('harel_options_set_prefix', status, [O, 'const char *']),
    setCreateSchema: fn('harel_options_set_create_schema', status, [O, 'bool']),
    setSyncUrl: fn('harel_options_set_sync_url', status, [O, 'const char *']),
    setAuthToken: fn('harel_options_set_auth_token', status, [O, 'const char *']),
    setSyncInterval: fn('harel_options_set_sync_interval', status, [O, 'double']),
    setBusyTimeout: fn('harel_options_set_busy_timeout', status, [O, 'double']),
    setSynchronousFull: fn('harel_options_set_synchronous_full', status, [O, 'bool']),
    setClock: fn('harel_options_set_clock', status, [O, 'void *', 'void *']),
    open: fn('harel_transport_open', status, ['const char *', O, koffi.out(koffi.pointer(T))]),
    publish: fn('harel_transport_publish', status, [T, 'const char *', 'const char *', 'int32_t', 'const char *']),
    publishMany: fn('harel_transport_publish_many', status, [T, M, 'size_t']),
    claim: fn('harel_transport_claim', status, [
      T, 'const char *', 'double', 'int32_t', 'const char **', 'size_t', koffi.out(koffi.pointer(L)),
    ]),
    ack: fn('harel_transport_ack', status, [T, L]),
    ackAndClaim: fn('harel_transport_ack_and_claim', status, [
      T, L, 'const char *', 'double', 'int32_t', 'const char **', 'size_t', koffi.out(koffi.pointer(L)),
    ]),
    nack: fn('harel_transport_nack', status, [T, L, 'double']),
    close: fn('harel_transport_close', status, [T]),
    leaseFree: fn('harel_lease_free', 'void', [L]),
    schemaSql: fn('harel_schema_sql', status, ['const char *', koffi.out(koffi.pointer('void *'))]),
    schemaUpgradeSql: fn('harel_schema_upgrade_sql', status, ['const char *', koffi.out(koffi.pointer('void *'))]),
    // The message of the last failed call on a handle, whichever thread made it: what an
    // async call's error is read with (see Transport#failure).
    handleLastError: fn('harel_transport_last_error', 'const char *', [T]),
  };
  return f;
}

// ---------------------------------------------------------------------------------------
// Arguments: what koffi would silently change is refused here (a NUL would truncate the
// C string, a lone surrogate would become U+FFFD, 1.5 would become 1, NaN would become 0
// for an integer). Ranges (priority 0..4, visibility > 0, ...) are the library's to check.

function checkString(name, value, { nullable = false } = {}) {
  if (nullable && (value === undefined || value === null)) return null;
  if (typeof value !== 'string') {
    throw argumentError(`${name} must be a string${nullable ? ' or null' : ''}, got ${describe(value)}`);
  }
  if (value.includes('\0')) throw argumentError(`${name} must not contain a NUL character`);
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
 * ('messages[3].' in a batch).
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

function leaseStruct(lease) {
  if (lease === null || typeof lease !== 'object') {
    throw argumentError(`lease must be a lease object from claim(), got ${describe(lease)}`);
  }
  const { seq } = lease;
  if (!((typeof seq === 'number' && Number.isSafeInteger(seq)) || typeof seq === 'bigint')) {
    throw argumentError(`lease.seq must be an integer (number or bigint), got ${describe(seq)}`);
  }
  if (typeof seq === 'bigint' && (seq < -(2n ** 63n) || seq >= 2n ** 63n)) {
    throw argumentError(`lease.seq is outside int64: ${seq}`);
  }
  return {
    seq,
    group_id: checkString('lease.groupId', lease.groupId),
    event: null, // ack and nack read only seq, group_id and worker_id
    worker_id: checkString('lease.workerId', lease.workerId),
    lock_expiry: 0,
  };
}

// ---------------------------------------------------------------------------------------
// Calls

function noop() {}

function callAsync(fn, args) {
  return new Promise((resolve, reject) => {
    fn.async(...args, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

function statusName(status) {
  return load().statusName(status);
}

/**
 * The error of a synchronous call made on this (the main) thread: harel_last_error() is
 * per thread and this thread made the call, so the message is the call's own.
 */
function failureHere(status, what) {
  const message = load().lastError() || `${what}: ${GENERIC[statusName(status)] || 'failed'}`;
  return new HarelError(statusName(status), message, { status });
}

/** A copy of a string the library handed out; the library's copy is freed. */
function takeString(ptr) {
  try {
    return koffi.decode.string(ptr);
  } finally {
    load().stringFree(ptr);
  }
}

function makeLease(raw) {
  let event;
  try {
    event = JSON.parse(raw.event);
  } catch {
    event = undefined; // not JSON that JavaScript parses (e.g. NaN from another producer)
  }
  return Object.freeze({
    seq: raw.seq,
    groupId: raw.group_id,
    event,
    eventJson: raw.event,
    workerId: raw.worker_id,
    lockExpiry: raw.lock_expiry,
  });
}

const OPEN_OPTIONS = ['prefix', 'createSchema', 'syncUrl', 'authToken', 'syncInterval', 'busyTimeout', 'synchronousFull', 'clock'];
const PUBLISH_OPTIONS = ['priority', 'routingKey'];
const MESSAGE_FIELDS = ['groupId', 'event', ...PUBLISH_OPTIONS];
const CLAIM_OPTIONS = ['visibility', 'minPriority', 'routingKeys'];
const NACK_OPTIONS = ['delay'];
const DEFAULT_VISIBILITY = 30;

/** The calls that don't read the clock. */
const PUBLISHING = new Set(['publish', 'publishMany']);

const PRIVATE = Symbol('harel-transport constructor');

// A Transport dropped without close(): close its handle when it is collected.
const finalizer = new FinalizationRegistry((held) => {
  load().close(held.handle);
  if (held.clock) held.clock.free();
});

class Transport {
  #handle;
  #clock; // a ClockCell, or null for the system clock
  #path;
  #tail = Promise.resolve(); // the end of this transport's call queue
  #appends = null; // publishes queued together that have not started yet (see #append)
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
   * http:// or https:// URL. Runs synchronously on the calling thread (see README).
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
    if (o.clock !== undefined && typeof o.clock !== 'function') {
      throw argumentError(`clock must be a function returning epoch seconds, got ${describe(o.clock)}`);
    }

    const options_ = f.optionsNew();
    if (!options_) throw new HarelError('HAREL_ERR_PANIC', 'harel_options_new failed', { status: STATUS.HAREL_ERR_PANIC });
    let clock = null;
    try {
      for (const [setter, value] of set) {
        const status = setter(options_, value);
        if (status !== STATUS.HAREL_OK) throw failureHere(status, 'open');
      }
      if (o.clock !== undefined) {
        clock = new ClockCell(o.clock);
        clock.tick();
        const status = f.setClock(options_, f.atof, clock.ptr);
        if (status !== STATUS.HAREL_OK) throw failureHere(status, 'open');
      }
      const out = [null];
      const status = f.open(path, options_, out);
      if (status !== STATUS.HAREL_OK) throw failureHere(status, 'open');
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
    return this.#append('publish', () => [
      messageStruct('', groupId, event, checkOptions('options', options, PUBLISH_OPTIONS)),
    ]);
  }

  /**
   * Appends `messages` ({ groupId, event, priority?, routingKey? } each, as publish takes
   * them) in order, in one transaction: all of them or none, with one commit for the batch.
   */
  publishMany(messages) {
    return this.#append('publishMany', () => {
      if (!Array.isArray(messages)) throw argumentError(`messages must be an array, got ${describe(messages)}`);
      return messages.map(batchElement);
    });
  }

  /**
   * Queues a publish (its checked messages from `prepare`) like any call, except that
   * publishes queued one right after another, before the first of them has started, go
   * to the library together, as one publishMany: one transaction and one commit for all
   * (at synchronous FULL one fsync instead of one each), so `Promise.all` of many
   * publishes costs about one. Each promise still settles with its own outcome (see
   * #commitAppends). A claim, ack or nack queued between two publishes keeps them apart:
   * calls still take effect in call order.
   */
  #append(what, prepare) {
    let structs;
    try {
      if (this.#closed) throw closedError(what);
      structs = prepare();
    } catch (e) {
      return Promise.reject(e);
    }
    if (this.#appends === null) {
      const appends = [];
      this.#appends = appends;
      this.#enqueue(what, async (f, handle) => {
        if (this.#appends === appends) this.#appends = null; // under way: later publishes queue anew
        await this.#commitAppends(f, handle, appends);
      });
    }
    return new Promise((resolve, reject) => this.#appends.push({ what, structs, resolve, reject }));
  }

  /**
   * Sends the publishes that waited together in one publishMany. If it fails with an
   * error that one of them could have caused (an argument only the library checks, such
   * as event text that is not JSON; a database error), each is sent again alone, so that
   * each gets its own outcome and nobody's messages are refused for another's; a busy or
   * connection error fails them all, as it would each alone.
   */
  async #commitAppends(f, handle, appends) {
    const send = async (what, structs) => {
      const status =
        what === 'publish'
          ? await callAsync(f.publish, [handle, structs[0].group_id, structs[0].event_json, structs[0].priority,
              structs[0].routing_key])
          : await callAsync(f.publishMany, [handle, structs.length ? structs : null, structs.length]);
      return status === STATUS.HAREL_OK ? null : this.#failure(status, what);
    };
    const settle = (a, error) => (error ? a.reject(error) : a.resolve());
    try {
      if (appends.length === 1) {
        settle(appends[0], await send(appends[0].what, appends[0].structs));
        return;
      }
      const error = await send('publishMany', appends.flatMap((a) => a.structs));
      if (error && (error.code === 'HAREL_ERR_ARGUMENT' || error.code === 'HAREL_ERR_DATABASE')) {
        for (const a of appends) settle(a, await send(a.what, a.structs));
        return;
      }
      for (const a of appends) settle(a, error);
    } catch (e) {
      for (const a of appends) a.reject(e); // koffi failed the call; settled ones stay settled
    }
  }

  /** Leases the next deliverable message to `workerId`; null when there is none. */
  claim(workerId, options = {}) {
    return this.#call('claim', () => {
      const args = claimArgs(workerId, options);
      return async (f, handle) => this.#leaseOf(f, 'claim', f.claim, [handle, ...args]);
    });
  }

  /**
   * Acks `lease` and claims the next message for `workerId` in one transaction (one commit
   * instead of two): the worker loop's fast path. Null when the ack succeeded and nothing
   * is deliverable; if the ack fails, nothing is claimed.
   */
  ackAndClaim(lease, workerId, options = {}) {
    return this.#call('ackAndClaim', () => {
      const struct = leaseStruct(lease);
      const args = claimArgs(workerId, options);
      return async (f, handle) => this.#leaseOf(f, 'ack_and_claim', f.ackAndClaim, [handle, struct, ...args]);
    });
  }

  /** Runs a call that leases a message into its last (out) argument; copies it out and frees it. */
  async #leaseOf(f, what, call, args) {
    const out = [null];
    const status = await callAsync(call, [...args, out]);
    if (status === STATUS.HAREL_EMPTY) return null;
    if (status !== STATUS.HAREL_OK) throw this.#failure(status, what);
    const ptr = out[0];
    try {
      return makeLease(koffi.decode(ptr, f.Lease));
    } finally {
      f.leaseFree(ptr);
    }
  }

  /** Finishes a lease: deletes its message. HAREL_ERR_LEASE_LOST if it is no longer this worker's. */
  ack(lease) {
    return this.#call('ack', () => {
      const struct = leaseStruct(lease);
      return async (f, handle) => {
        const status = await callAsync(f.ack, [handle, struct]);
        if (status !== STATUS.HAREL_OK) throw this.#failure(status, 'ack');
      };
    });
  }

  /** Gives a lease back: claimable at once (delay 0, the default) or parked for `delay` seconds. */
  nack(lease, options = {}) {
    return this.#call('nack', () => {
      const struct = leaseStruct(lease);
      const o = checkOptions('options', options, NACK_OPTIONS);
      const delay = checkNumber('delay', o.delay === undefined ? 0 : o.delay);
      return async (f, handle) => {
        const status = await callAsync(f.nack, [handle, struct, delay]);
        if (status !== STATUS.HAREL_OK) throw this.#failure(status, 'nack');
      };
    });
  }

  /**
   * Closes the transport once the calls already made on it have finished. Calls made after
   * close() reject with HAREL_ERR_CLOSED. Calling close() again returns the same promise.
   */
  close() {
    if (this.#closing) return this.#closing;
    this.#closed = true;
    this.#closing = this.#tail.then(() => {
      const handle = this.#handle;
      this.#handle = null;
      finalizer.unregister(this);
      const f = load();
      // Synchronous, so that harel_last_error() (per thread) gives close's own message; the
      // handle is freed even when close fails.
      const status = f.close(handle);
      if (this.#clock) this.#clock.free();
      this.#clock = null;
      if (status !== STATUS.HAREL_OK) throw failureHere(status, 'close');
    });
    return this.#closing;
  }

  async [Symbol.asyncDispose || Symbol.for('nodejs.asyncDispose')]() {
    await this.close();
  }

  /**
   * Checks the arguments now (`prepare` throws or returns the call), then queues the call
   * behind this transport's earlier ones.
   */
  #call(what, prepare) {
    let run;
    try {
      if (this.#closed) throw closedError(what);
      run = prepare();
    } catch (e) {
      return Promise.reject(e);
    }
    this.#appends = null; // publishes after this call must not overtake it
    return this.#enqueue(what, run);
  }

  /** Runs `run(f, handle)` once this transport's earlier calls have finished. */
  #enqueue(what, run) {
    const f = load();
    const result = this.#tail.then(() => {
      // "now" for the library: read from the JS clock here, on the main thread, just
      // before the call (publishing doesn't ask for the time).
      if (this.#clock && !PUBLISHING.has(what)) this.#clock.tick();
      return run(f, this.#handle);
    });
    this.#tail = result.then(noop, noop);
    return result;
  }

  /**
   * The error of a call that returned `status`. harel_last_error() is per thread and the
   * call ran on a pool thread, so it can't be read from here; the handle's own last error
   * can: this handle's calls run one at a time and none has started since this one ended,
   * so it is this call's message.
   */
  #failure(status, what) {
    const code = statusName(status);
    let message = load().handleLastError(this.#handle) || `${what}: ${GENERIC[code] || 'failed'}`;
    return new HarelError(code, message, { status });
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
  return schemaText(load().schemaSql, prefix);
}

/** The statements that upgrade a harel 0.9 groups table (adds routing_key). Run once. */
function schemaUpgradeSql(prefix = 'harel') {
  return schemaText(load().schemaUpgradeSql, prefix);
}

function schemaText(fn, prefix) {
  checkString('prefix', prefix);
  const out = [null];
  const status = fn(prefix, out);
  if (status !== STATUS.HAREL_OK) throw failureHere(status, 'schema');
  return takeString(out[0]);
}

module.exports = {
  Transport,
  HarelError,
  STATUS,
  DEFAULT_VISIBILITY,
  version,
  libraryInfo,
  schemaSql,
  schemaUpgradeSql,
};
