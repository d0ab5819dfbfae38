'use strict';
// Finishing a lease: ack and ackMany, nack, deadLetter; and keeping it meanwhile: extend,
// and keepAlive, which extends it on a timer while a handler runs.

const { argumentError, closedError } = require('../errors');
const { DEFAULT_VISIBILITY, checkString, checkNumber, checkOptions, describe, signalArg } = require('../args');
const { callChecked } = require('../calls');
const { EXPIRY, leaseStruct, leaseStructs, ackOutcomes } = require('../lease');
const { finishing, finishOutcomes, acked, nacked, deadLettered, extended } = require('../tracing');
const { call, now } = require('../transport');

const NACK_OPTIONS = ['delay'];
const KEEP_ALIVE_OPTIONS = ['visibility', 'every', 'signal'];

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
  #unlisten = () => {};

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

module.exports = {
  /** Finishes a lease: deletes its message. HAREL_ERR_LEASE_LOST if it is no longer this worker's. */
  ack(lease) {
    return call(this, 'ack', true, () => {
      const struct = leaseStruct(lease);
      return async (f, handle) => {
        await finishing(lease, callChecked(f, 'ack', f.ack, [handle, struct]), acked);
      };
    });
  },

  /**
   * Acks `leases` in one transaction (one commit). Resolves an outcome per lease, in
   * order: `{ lease, ok: true, error: null }`, or `{ lease, ok: false, error }` for one
   * that was lost (HAREL_ERR_LEASE_LOST), while the others are acked. It rejects (acking
   * none) for a bad lease or a failed transaction.
   */
  ackMany(leases) {
    return call(this, 'ackMany', true, () => {
      const structs = leaseStructs(leases);
      return async (f, handle) => {
        const statuses = new Int32Array(structs.length);
        const n = structs.length;
        await callChecked(f, 'ack_many', f.ackMany, [handle, n ? structs : null, n, n ? statuses : null]);
        return finishOutcomes(ackOutcomes('ackMany', leases, statuses));
      };
    });
  },

  /**
   * Gives a lease back: claimable at once (delay 0, the default; under a retry policy,
   * parked for the backoff its claim drew) or parked for `delay` seconds.
   */
  nack(lease, options = {}) {
    return call(this, 'nack', true, () => {
      const struct = leaseStruct(lease);
      const o = checkOptions('options', options, NACK_OPTIONS);
      const delay = checkNumber('delay', o.delay === undefined ? 0 : o.delay);
      return async (f, handle) => {
        await finishing(lease, callChecked(f, 'nack', f.nack, [handle, struct, delay]), nacked, delay);
      };
    });
  },

  /**
   * Moves the leased message to the dead letters with `reason` (a worker's verdict: it will
   * never succeed); its group goes on at once. HAREL_ERR_LEASE_LOST as for ack.
   */
  deadLetter(lease, reason) {
    return call(this, 'deadLetter', true, () => {
      const struct = leaseStruct(lease);
      const text = checkString('reason', reason);
      return async (f, handle) => {
        await finishing(lease, callChecked(f, 'dead_letter', f.deadLetter, [handle, struct, text]), deadLettered, text);
      };
    });
  },

  /**
   * Makes `lease` run to now + `visibility` seconds. Resolves the new lock expiry, which a
   * Lease from this transport's claims then reads as its `lockExpiry` too.
   * HAREL_ERR_LEASE_LOST if it was acked or nacked, or lapsed and was claimed by another
   * worker (a lapsed lease no one claimed since is still yours, and is extended).
   */
  extend(lease, visibility) {
    return call(this, 'extend', true, () => {
      const struct = leaseStruct(lease);
      const seconds = checkNumber('visibility', visibility);
      return async (f, handle) => {
        await finishing(lease, callChecked(f, 'extend', f.extend, [handle, struct, seconds]), extended);
        if (Object.hasOwn(lease, EXPIRY)) lease[EXPIRY].lockExpiry = struct.lock_expiry; // a Lease of ours
        return struct.lock_expiry;
      };
    });
  },

  /**
   * Keeps `lease` from lapsing while its handler runs: extends it by `visibility` (default
   * 30) seconds every `every` seconds (default visibility / 3), the first time once half
   * of what is left of it has passed (at once for a lease without a lockExpiry), until
   * stop() (or `signal` aborts). A handler quicker than that costs nothing. The handle's
   * `signal` aborts, with the HarelError as its reason, when the lease is lost or can no
   * longer be extended.
   */
  keepAlive(lease, options = {}) {
    if (this.closed) throw closedError('keepAlive');
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
    const time = now(this);
    const left = typeof lease.lockExpiry === 'number' ? lease.lockExpiry - time : 0;
    const first = Math.min(every, Math.max(0, left / 2)) || 0;
    return new KeepAlive((l, v) => this.extend(l, v), lease, visibility, every, first, signal);
  },
};
