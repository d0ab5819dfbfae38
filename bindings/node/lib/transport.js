'use strict';
// The Transport: opening and closing a queue, and what every call goes through (the
// transport's calls in flight, its JS clock, its waiting claims). Its other methods are in
// lib/methods/, a file per group of docs/architecture.md's glossary, which index.js adds to
// the class; the open group's stay here, with the private state they set up and tear down.

const { STATUS, HarelError, argumentError, closedError } = require('./errors');
const { load } = require('./native');
const { checkString, checkNumber, checkUint32, checkBoolean, checkOptions, describe } = require('./args');
const { callChecked, callCheckedHere } = require('./calls');
const { ClockCell } = require('./clock');
const { Waits } = require('./waiting');
const { refuseInside } = require('./tx');
const { retryPolicy } = require('./message');
const { tracingOption } = require('./tracing');

const OPEN_OPTIONS = [
  'prefix', 'createSchema', 'syncUrl', 'syncUrls', 'authToken', 'syncInterval', 'busyTimeout', 'synchronousFull',
  'maxAttempts', 'keyRetention', 'archiveRetention', 'retry', 'clock', 'tracerProvider', 'traceAsParent',
];

const PRIVATE = Symbol('harel-transport constructor');

// A Transport dropped without close(): close its handle when it is collected. (A Transport
// with a call in flight is not collected: the call's callback holds it.)
const finalizer = new FinalizationRegistry((held) => {
  load().close(held.handle);
  if (held.clock) held.clock.free();
});

function noop() {}

// How lib/methods/ reach a Transport's private members, given the transport: call
// (#call), clocked (#clocked), waiting (a waiting claim on it: Waits.claim in
// lib/waiting.js), interruptWaits (the end of its waiting claims: Waits.interrupt), now
// (the time by its clock), handleNow (its handle for a call made here on the main thread,
// one that never waits), txCall (a call of one of its transactions: counted in flight,
// and in turn with a JS clock if it reads it) and tracingOf (its Tracing, lib/tracing.js;
// null when tracing is off). The class's static block sets them.
let call;
let clocked;
let waiting;
let interruptWaits;
let now;
let handleNow;
let txCall;
let tracingOf;
let construct; // a Transport of an open handle (openWith)

/**
 * What open and openShards share: checks `options` (every one before anything is
 * allocated), sets them on a harel_options, then runs the open `opening(options_, out)`
 * names (a C function and its arguments, `out` last but for err) on the pool. `where`:
 * the Transport's path.
 */
async function openWith(f, what, options, where, opening) {
  const o = checkOptions('options', options, OPEN_OPTIONS);
  const set = [];
  if (o.prefix !== undefined) set.push([f.setPrefix, checkString('prefix', o.prefix)]);
  if (o.createSchema !== undefined) set.push([f.setCreateSchema, checkBoolean('createSchema', o.createSchema)]);
  if (o.syncUrl !== undefined) set.push([f.setSyncUrl, checkString('syncUrl', o.syncUrl, { nullable: true })]);
  if (o.syncUrls !== undefined) {
    if (!Array.isArray(o.syncUrls)) throw argumentError(`syncUrls must be an array of strings, got ${describe(o.syncUrls)}`);
    const urls = Array.from(o.syncUrls, (url, i) => checkString(`syncUrls[${i}]`, url));
    set.push([f.setSyncUrls, urls, urls.length]);
  }
  if (o.authToken !== undefined) set.push([f.setAuthToken, checkString('authToken', o.authToken, { nullable: true })]);
  if (o.syncInterval !== undefined) set.push([f.setSyncInterval, checkNumber('syncInterval', o.syncInterval)]);
  if (o.busyTimeout !== undefined) set.push([f.setBusyTimeout, checkNumber('busyTimeout', o.busyTimeout)]);
  if (o.synchronousFull !== undefined) {
    set.push([f.setSynchronousFull, checkBoolean('synchronousFull', o.synchronousFull)]);
  }
  if (o.maxAttempts !== undefined) set.push([f.setMaxAttempts, checkUint32('maxAttempts', o.maxAttempts)]);
  if (o.keyRetention !== undefined) set.push([f.setKeyRetention, checkNumber('keyRetention', o.keyRetention)]);
  if (o.archiveRetention !== undefined) {
    set.push([f.setArchive, checkNumber('archiveRetention', o.archiveRetention)]);
  }
  if (o.retry !== undefined && o.retry !== null) {
    const { base, factor, cap, jitter } = retryPolicy('retry', o.retry);
    set.push([f.setRetry, base, factor, cap, jitter]);
  }
  if (o.clock !== undefined && typeof o.clock !== 'function') {
    throw argumentError(`clock must be a function returning epoch seconds, got ${describe(o.clock)}`);
  }
  if (o.traceAsParent !== undefined) checkBoolean('traceAsParent', o.traceAsParent);
  // The spans' queue is the prefix (the library checks it at the open that follows).
  const tracing = tracingOption(o.tracerProvider, o.traceAsParent === true, o.prefix === undefined ? 'harel' : o.prefix);

  const options_ = f.optionsNew();
  if (!options_) throw new HarelError('HAREL_ERR_PANIC', 'harel_options_new failed', { status: STATUS.HAREL_ERR_PANIC });
  let clock = null;
  try {
    for (const [setter, ...values] of set) callCheckedHere(f, what, setter, [options_, ...values]);
    if (o.clock !== undefined) {
      clock = new ClockCell(o.clock);
      clock.tick();
      callCheckedHere(f, what, f.setClock, [options_, f.atof, clock.ptr]);
    }
    const out = [null];
    // On the pool: opening waits for the write lock while it sets up the schema, and for
    // a server's round trips. The options stay allocated until it has returned.
    const [fn, args] = opening(options_, out);
    await callChecked(f, what, fn, args);
    return construct(out[0], clock, where, tracing);
  } catch (e) {
    if (clock) clock.free();
    throw e;
  } finally {
    f.optionsFree(options_);
  }
}

class Transport {
  #handle;
  #clock; // a ClockCell, or null for the system clock
  #path;
  #inFlight = 0; // calls made and not yet settled; close() waits for them
  #drained = null; // close()'s wake-up, once #inFlight is 0
  #clockTail = Promise.resolve(); // with a JS clock: the end of the calls that read it
  #waits; // the waiting claims in progress and their watches (see lib/waiting.js)
  #closed = false;
  #closing = null;
  #tracing; // a Tracing (lib/tracing.js), or null: tracing off

  /** Use `await Transport.open(path, options)`. */
  constructor(token, handle, clock, where, tracing) {
    if (token !== PRIVATE) throw new TypeError('use `await Transport.open(path, options)` to make a Transport');
    this.#handle = handle;
    this.#tracing = tracing;
    this.#clock = clock;
    this.#path = where;
    this.#waits = new Waits(load(), handle, (step) => this.#clocked(step), (promise) => this.#track(promise));
    finalizer.register(this, { handle, clock }, this);
  }

  /**
   * Opens (and by default creates) the queue at `path`: a file, ':memory:', or a libsql://,
   * http:// or https:// URL. Runs on the thread pool, like every call that may wait.
   */
  static async open(path, options = {}) {
    const f = load();
    checkString('path', path);
    return openWith(f, 'open', options, path, (options_, out) => [f.open, [path, options_, out]]);
  }

  /**
   * Opens one queue sharded over `databases` (1..256 paths or URLs, each as open takes
   * it, in shard order; the same options for each): harel_transport_open_shards. The
   * list's checks (its length, an empty or repeated entry, a list that does not match the
   * databases' records) are the library's.
   */
  static async openShards(databases, options = {}) {
    const f = load();
    if (!Array.isArray(databases)) {
      throw argumentError(`databases must be an array of strings, got ${describe(databases)}`);
    }
    // A copy: the caller's array may change while the open waits for its turn.
    const list = Array.from(databases, (database, i) => checkString(`databases[${i}]`, database));
    return openWith(f, 'openShards', options, list[0], (options_, out) => [f.openShards, [list, list.length, options_, out]]);
  }

  /** The path (or URL) this transport was opened with: openShards's first database. */
  get path() {
    return this.#path;
  }

  /** True once close() has been called. */
  get closed() {
    return this.#closed;
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
    this.#waits.close();
    this.#closing = (async () => {
      if (this.#inFlight > 0) await new Promise((resolve) => (this.#drained = resolve));
      const f = load();
      // The watches, their polls stopped first, before the handle they watch.
      await this.#waits.free();
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
   * ended, right after the clock is read (see lib/clock.js). A call made of several C calls
   * (a waiting claim) passes false and puts each of them through #clocked.
   */
  #call(what, readsClock, prepare) {
    let run;
    try {
      if (this.#closed) throw closedError(what);
      refuseInside(this, what);
      run = prepare();
    } catch (e) {
      return Promise.reject(e);
    }
    const f = load();
    const handle = this.#handle;
    return this.#track(readsClock ? this.#clocked(() => run(f, handle)) : run(f, handle));
  }

  /** Counts `promise` (a call) in flight until it settles: close() waits for it. */
  #track(promise) {
    this.#inFlight += 1;
    return promise.finally(() => {
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

  static {
    construct = (handle, clock, where, tracing) => new Transport(PRIVATE, handle, clock, where, tracing);
    tracingOf = (transport) => transport.#tracing;
    call = (transport, what, readsClock, prepare) => transport.#call(what, readsClock, prepare);
    clocked = (transport, step) => transport.#clocked(step);
    waiting = (transport, ...args) => transport.#waits.claim(...args);
    interruptWaits = (transport) => transport.#waits.interrupt();
    now = (transport) => (transport.#clock ? transport.#clock.read() : Date.now() / 1000);
    handleNow = (transport, what) => {
      if (transport.#closed) throw closedError(what);
      return transport.#handle;
    };
    // Unlike #call, not refused once closed: the library refuses a transaction whose
    // transport was closed, naming why (its handle stays valid until freed).
    txCall = (transport, readsClock, step) => transport.#track(readsClock ? transport.#clocked(step) : step());
  }
}

module.exports = { Transport, call, clocked, waiting, interruptWaits, now, handleNow, txCall, tracingOf };
