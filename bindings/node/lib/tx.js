'use strict';
// Publishing inside the application's transaction: the Tx a Transport's begin() hands out
// (a harel_tx), its SQL values both ways, and transaction()'s scope.
//
// The calls of a Tx run on the pool, as the Transport's do (a query may wait for the write
// lock or a server; execute and publish only queue, but they take the transaction's lock,
// which a query in flight holds), and one after another in call order: what execute and
// publish queue is sent in the order they were called, so calls made without awaiting the
// previous one keep their order. They also count among the transport's calls in flight
// (close() waits for them), and a query or commit reads a JS clock as the transport's
// clock-reading calls do (lib/clock.js).

const { AsyncLocalStorage } = require('node:async_hooks');
const koffi = require('koffi');
const { STATUS, HarelError, argumentError } = require('./errors');
const { checkString, checkOptions, describe } = require('./args');
const { callAsync, callChecked } = require('./calls');
const { load, ValueType, RowsType } = require('./native');
const { bytesText } = require('./decode');
const { PUBLISH_OPTIONS, PUBLISH_WITH_OPTIONS, messageStruct, delivery, outcome } = require('./message');
const { headerPairs, headerArgs } = require('./headers');
const { endPublish } = require('./tracing');

// harel_value_type
const NULL = 0;
const INTEGER = 1;
const REAL = 2;
const TEXT = 3;
const BLOB = 4;

const PRIVATE = Symbol('harel-transport Tx constructor');

// A Tx dropped unfinished: free its handle when it is collected, on the pool (harel_tx_free
// rolls back a transaction that holds the connection: a round trip on a server). A Tx with
// a call in flight is not collected: the call's callback holds it.
const finalizer = new FinalizationRegistry((handle) => {
  const f = load();
  callAsync(f.txFree, [handle]).catch(() => f.txFree(handle)); // koffi could not queue it
});

function noop() {}

/** A parameter as a harel_value; `name` names it in errors ('params[2]'). */
function paramValue(name, value) {
  const v = { type: NULL, integer: 0, real: 0, text: null, blob: null, size: 0 };
  if (value === null || value === undefined) return v;
  switch (typeof value) {
    case 'boolean':
      return { ...v, type: INTEGER, integer: value ? 1 : 0 };
    case 'number':
      // An integral number within int64 is an INTEGER (JavaScript can't tell 1.0 from 1);
      // as a BigInt, koffi writes it exactly. The others are REAL: the library refuses
      // NaN and the infinities with its message.
      if (Number.isInteger(value) && value >= -(2 ** 63) && value < 2 ** 63) {
        return { ...v, type: INTEGER, integer: BigInt(value) };
      }
      return { ...v, type: REAL, real: value };
    case 'bigint':
      if (value < -(2n ** 63n) || value >= 2n ** 63n) throw argumentError(`${name} is outside int64: ${value}`);
      return { ...v, type: INTEGER, integer: value };
    case 'string':
      // The C side reads a parameter's text up to its NUL: none inside (checkString).
      return { ...v, type: TEXT, text: Buffer.from(checkString(name, value) + '\0', 'utf8') };
    default:
      if (value instanceof Uint8Array) return { ...v, type: BLOB, blob: value, size: value.length };
      throw argumentError(
        `${name} must be null, a boolean, a number, a bigint, a string or a Buffer/Uint8Array, got ${describe(value)}`,
      );
  }
}

/** execute's and query's `params`, as the C array (null for none) and its length. */
function paramValues(params) {
  if (params === undefined || params === null) return [null, 0];
  if (!Array.isArray(params)) throw argumentError(`params must be an array, got ${describe(params)}`);
  const values = Array.from(params, (value, i) => paramValue(`params[${i}]`, value)); // a hole too: NULL
  return [values.length ? values : null, values.length];
}

/** One column of a row the library handed out, copied out. */
function columnValue(v) {
  switch (v.type) {
    case INTEGER:
      return v.integer; // koffi: a Number, a BigInt only past 2^53 - 1 (as a seq)
    case REAL:
      return v.real;
    case TEXT:
      return bytesText(v.text, v.size);
    case BLOB:
      return v.size === 0 ? Buffer.alloc(0) : Buffer.from(new Uint8Array(koffi.view(v.blob, Number(v.size))));
    default:
      return null;
  }
}

/** The rows of a query (the caller frees `ptr`), as arrays of values. */
function takeRows(ptr) {
  const { n_rows: nRows, n_columns: nColumns, values } = koffi.decode(ptr, RowsType);
  const rows = Number(nRows);
  const columns = Number(nColumns);
  if (rows === 0) return [];
  const flat = koffi.decode(values, ValueType, rows * columns);
  return Array.from({ length: rows }, (_, r) => flat.slice(r * columns, (r + 1) * columns).map(columnValue));
}

// Inside the body of transaction() the transport's own calls would wait for the connection
// the transaction holds (the library fails them with HAREL_ERR_BUSY after the busy
// timeout): the binding refuses them at once. A scope for each body, in the async context
// of everything the body starts, closed when the body settles (a timer it set may fire
// later); `outer`: the body this one runs inside, if any.
const inside = new AsyncLocalStorage();

/** Throws HAREL_ERR_BUSY for a call `what` on `transport` made inside one of its transaction bodies. */
function refuseInside(transport, what) {
  for (let scope = inside.getStore(); scope; scope = scope.outer) {
    if (scope.open && scope.transport === transport) {
      throw new HarelError(
        'HAREL_ERR_BUSY',
        `${what}: called inside a transaction() of this transport, whose calls would wait for the connection ` +
          'the transaction holds: inside a transaction publish with the transaction\'s own tx.publish, and do not ' +
          'begin another on the same transport (transactions do not nest)',
        { status: STATUS.HAREL_ERR_BUSY },
      );
    }
  }
}

/**
 * An application's transaction on the queue's database: its statements and publishes,
 * committed together or not at all. Made by Transport.begin(); `run(transport, readsClock,
 * step)` runs a step as one of the transport's calls.
 */
class Tx {
  #transport;
  #handle;
  #run;
  #tail = Promise.resolve(); // the end of the calls made so far: the next one starts after it
  #publishes = 0; // publishes queued: how many outcomes the commit hands back
  #ended = null; // once freed (committed or rolled back): why, for the calls that follow
  #tracing; // the transport's Tracing, or null: tracing off
  #spans = []; // with tracing: the PRODUCER span of each publish queued, and its place in the commit's outcomes

  /** Use `t.begin()` or `t.transaction(body)`. */
  constructor(token, transport, handle, run, tracing) {
    if (token !== PRIVATE) throw new TypeError('use `t.begin()` or `t.transaction(body)` to make a Tx');
    this.#transport = transport;
    this.#handle = handle;
    this.#run = run;
    this.#tracing = tracing;
    finalizer.register(this, handle, this);
  }

  /**
   * Queues a statement (one, no rows wanted) with its `params` (`?1`, `?2`, ... or `?`);
   * it runs, in order, with the next query or the commit, where its error ends the
   * transaction.
   */
  execute(sql, params) {
    return this.#step('execute', false, () => {
      const text = checkString('sql', sql);
      const [values, n] = paramValues(params);
      return async (f, handle) => {
        await callChecked(f, 'execute', f.txExecute, [handle, text, values, n]);
      };
    });
  }

  /**
   * Sends what was queued and runs `sql` (a SELECT, or a write with RETURNING); resolves
   * its rows, each an array of values. The first query begins the transaction: from then it
   * holds the transport's connection and the write lock until commit or rollback.
   */
  query(sql, params) {
    return this.#step('query', true, () => {
      const text = checkString('sql', sql);
      const [values, n] = paramValues(params);
      return async (f, handle) => {
        const out = [null];
        await callChecked(f, 'query', f.txQuery, [handle, text, values, n, out]);
        try {
          return takeRows(out[0]);
        } finally {
          f.rowsFree(out[0]);
        }
      };
    });
  }

  /** Queues a publish, with publish's arguments (checked now); its outcome comes from commit. */
  publish(groupId, event, options = {}) {
    return this.#publish('publish', PUBLISH_OPTIONS, groupId, event, options);
  }

  /**
   * Queues a publish, with publishWith's arguments and delivery options (checked now; a
   * unique key's too; an expiry is checked against now by the library, at the commit at
   * the latest). A unique key's duplicate is an outcome of the commit, not an error.
   */
  publishWith(groupId, event, options = {}) {
    return this.#publish('publishWith', PUBLISH_WITH_OPTIONS, groupId, event, options);
  }

  /**
   * Sends what was queued and commits: resolves what became of each publish ({ seq,
   * duplicate, replaced }, as publishWith's), in publish order. The transaction ends either way.
   */
  commit() {
    return this.#step('commit', true, () => async (f, handle) => {
      const n = this.#publishes;
      const seqs = new BigInt64Array(n);
      const kinds = new Int32Array(n); // each a harel_published: stored, duplicate or replaced
      const published = [0];
      let outcomes;
      try {
        await callChecked(f, 'commit', f.txCommit, n === 0
          ? [handle, null, null, 0, published]
          : [handle, seqs, kinds, n, published]);
        outcomes = Array.from(seqs.subarray(0, Number(published[0])), (seq, i) => outcome(seq, kinds[i]));
      } catch (e) {
        this.#free('ended by its failed commit', e);
        throw e;
      }
      this.#free('committed', null, outcomes);
      return outcomes;
    });
  }

  /** Ends the transaction keeping nothing of it. Resolves on one that has ended already. */
  rollback() {
    const result = this.#tail.then(async () => {
      if (this.#ended) return;
      const f = load();
      const handle = this.#handle;
      try {
        await this.#run(this.#transport, false, () => callChecked(f, 'rollback', f.txRollback, [handle]));
      } finally {
        this.#free('rolled back', 'rolled back');
      }
    });
    this.#tail = result.then(noop, noop);
    return result;
  }

  /** `await using tx = t.begin()`: rollback() at the end of the scope, unless committed. */
  async [Symbol.asyncDispose || Symbol.for('nodejs.asyncDispose')]() {
    await this.rollback();
  }

  /**
   * A publish, queued. With tracing, its PRODUCER span starts here and ends with the
   * commit (or the rollback, or at once if the publish is refused).
   */
  #publish(what, allowed, groupId, event, options) {
    let span = null;
    const result = this.#step(what, false, () => {
      const o = checkOptions('options', options, allowed);
      const m = messageStruct('', groupId, event, o);
      const d = delivery('', o); // publish's: none
      let pairs = headerPairs('', o.headers);
      if (this.#tracing !== null) [span, pairs] = this.#tracing.startPublish(m.group_id, pairs);
      const [headers, n] = headerArgs(pairs);
      return async (f, handle) => {
        await callChecked(f, what, f.txPublishDelivery, [
          handle, m.group_id, m.event_json, m.priority, m.routing_key, headers, n, d,
        ]);
        if (span !== null) {
          this.#spans.push({ span, index: this.#publishes });
          span = null; // the commit's now
        }
        this.#publishes += 1;
      };
    });
    // Refused (by the library, or as the transaction had ended): not published.
    if (span !== null) result.then(noop, (e) => span !== null && endPublish(span, e));
    return result;
  }

  /**
   * Checks the arguments now (`prepare` throws or returns the call), then runs the call once
   * the previous one has settled; refused once the handle is freed.
   */
  #step(what, readsClock, prepare) {
    let run;
    try {
      run = prepare();
    } catch (e) {
      return Promise.reject(e);
    }
    const result = this.#tail.then(() => {
      if (this.#ended) throw argumentError(`${what}: the transaction was ${this.#ended}: begin a new one`);
      const handle = this.#handle;
      return this.#run(this.#transport, readsClock, () => run(load(), handle));
    });
    this.#tail = result.then(noop, noop);
    return result;
  }

  /**
   * Frees the handle of a transaction that has ended: no rollback left to wait for. Ends
   * the spans of its publishes: with `error` (an Error or a text) when nothing was
   * published, else each with its message's seq from `outcomes`.
   */
  #free(why, error = null, outcomes = []) {
    for (const { span, index } of this.#spans) {
      endPublish(span, error, error || index >= outcomes.length ? undefined : outcomes[index].seq);
    }
    this.#spans = [];
    this.#ended = why;
    finalizer.unregister(this);
    load().txFree(this.#handle);
    this.#handle = null;
  }
}

/** A Tx of `transport`'s transaction `handle`; `tracing`: the transport's Tracing, or null. */
function makeTx(transport, handle, run, tracing) {
  return new Tx(PRIVATE, transport, handle, run, tracing);
}

/**
 * Runs `body(tx)` and commits, or rolls back and rethrows what it threw; resolves
 * `{ value, published }`. Inside the body, the transport's own calls are refused.
 */
async function runTransaction(transport, tx, body) {
  const scope = { transport, open: true, outer: inside.getStore() };
  let value;
  try {
    value = await inside.run(scope, body, tx);
  } catch (e) {
    await tx.rollback();
    throw e;
  } finally {
    scope.open = false;
  }
  return { value, published: await tx.commit() };
}

module.exports = { Tx, makeTx, runTransaction, refuseInside };
