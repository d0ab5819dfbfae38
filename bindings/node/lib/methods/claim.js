'use strict';
// Claiming: claim and claimMany, waiting or not, and the worker loop's ackAndClaim and
// ackAndClaimMany, which ack in the same transaction; interrupt, which ends the waits.

const { STATUS, argumentError } = require('../errors');
const {
  DEFAULT_VISIBILITY, MAX_CLAIM, checkString, checkInteger, checkNumber, checkOptions, describe, signalArg,
} = require('../args');
const { callChecked } = require('../calls');
const { leaseStruct, leaseStructs, takeLeases, leaseOf, ackOutcomes } = require('../lease');
const { finishing, finishOutcomes, acked } = require('../tracing');
const { call, clocked, waiting, interruptWaits, tracingOf } = require('../transport');

const CLAIM_OPTIONS = ['visibility', 'minPriority', 'routingKeys'];
const WAITING_CLAIM_OPTIONS = [...CLAIM_OPTIONS, 'wait', 'signal'];
const CLAIM_MANY_OPTIONS = [...WAITING_CLAIM_OPTIONS, 'max'];
const ACK_AND_CLAIM_MANY_OPTIONS = [...CLAIM_OPTIONS, 'max'];

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

/**
 * A claim's run, `run(f, handle)` resolving a lease or null, giving the lease its CONSUMER
 * span when `transport` traces (lib/tracing.js).
 */
function tracedLease(transport, run) {
  const tracing = tracingOf(transport);
  if (tracing === null) return run;
  return (f, handle) => run(f, handle).then((lease) => (lease === null ? null : tracing.process(lease, 0)));
}

/** The same for a claim of a batch: `run` resolves an array of leases. */
function tracedLeases(transport, run) {
  const tracing = tracingOf(transport);
  if (tracing === null) return run;
  return (f, handle) => run(f, handle).then((leases) => tracing.processAll(leases));
}

/** A wait in seconds (0, looking once, when absent); its range is the library's to check. */
function waitArg(value) {
  return value === undefined ? 0 : checkNumber('wait', value);
}

module.exports = {
  /**
   * Leases the next deliverable message to `workerId`; null when there is none. With
   * `wait` (seconds) it waits that long for one; `signal` (an AbortSignal) ends the wait:
   * see lib/waiting.js (the binding waits; every C claim it makes is one that does not).
   */
  claim(workerId, options = {}) {
    return call(this, 'claim', false, () => {
      const o = checkOptions('options', options, WAITING_CLAIM_OPTIONS);
      const args = claimArgs(workerId, o);
      const once = (f, handle) => clocked(this, () => leaseOf(f, 'claim', f.claim, [handle, ...args]));
      if (o.wait === undefined && o.signal === undefined) return tracedLease(this, once);
      const wait = waitArg(o.wait);
      const signal = signalArg(o.signal);
      return tracedLease(this, async (f, handle) => {
        const leases = await waiting(this, 'claim', wait, signal, args[2], args[3] || [],
          async () => {
            const lease = await once(f, handle);
            return lease ? [lease] : [];
          },
          // a wait the library refuses (not a finite number >= 0): its message
          () => clocked(this, async () => {
            const out = [null];
            const status = await callChecked(f, 'claim', f.claimWait, [handle, ...args, wait, null, out]);
            return status === STATUS.HAREL_OK ? takeLeases(f, out, 1) : [];
          }));
        return leases.length ? leases[0] : null;
      });
    });
  },

  /**
   * Leases up to `max` (1..1000) messages, each the head of a different group, in serving
   * order, in one transaction; waits up to `wait` seconds while there is none. Resolves
   * an array, empty when nothing came within the wait.
   */
  claimMany(workerId, options) {
    return call(this, 'claimMany', false, () => {
      const o = checkOptions('options', options, CLAIM_MANY_OPTIONS);
      const args = claimArgs(workerId, o);
      const max = maxArg(o.max);
      const wait = waitArg(o.wait);
      const signal = signalArg(o.signal);
      return tracedLeases(this, (f, handle) => {
        const issue = async (seconds) => {
          const out = new Array(max).fill(null);
          const n = [0];
          const status = await callChecked(f, 'claim_many', f.claimMany, [handle, ...args, max, seconds, null, out, n]);
          return status === STATUS.HAREL_OK ? takeLeases(f, out, Number(n[0])) : [];
        };
        if (o.wait === undefined && o.signal === undefined) return clocked(this, () => issue(0));
        // Waiting: non-waiting claims when the watch fires (lib/waiting.js); a wait the
        // library refuses goes to it as given, for its message.
        return waiting(this, 'claimMany', wait, signal, args[2], args[3] || [],
          () => clocked(this, () => issue(0)), () => clocked(this, () => issue(wait)));
      });
    });
  },

  /**
   * Acks `lease` and claims the next message for `workerId` in one transaction (one commit
   * instead of two): the worker loop's fast path. Null when the ack succeeded and nothing
   * is deliverable; if the ack fails, nothing is claimed.
   */
  ackAndClaim(lease, workerId, options = {}) {
    return call(this, 'ackAndClaim', true, () => {
      const struct = leaseStruct(lease);
      const args = claimArgs(workerId, checkOptions('options', options, CLAIM_OPTIONS));
      // The ack ends the acked lease's span; the lease claimed gets one.
      return tracedLease(this, (f, handle) => {
        const next = leaseOf(f, 'ack_and_claim', f.ackAndClaim, [handle, struct, ...args]);
        return finishing(lease, next, acked);
      });
    });
  },

  /**
   * ackMany, then claimMany without waiting, in one transaction: a batch worker's loop
   * with one commit per batch. Resolves `{ acked, leases }`: the outcomes as ackMany's (a
   * lost lease does not stop the claim), and the new leases (empty when none is
   * deliverable).
   */
  ackAndClaimMany(leases, workerId, options) {
    return call(this, 'ackAndClaimMany', true, () => {
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
        const tracing = tracingOf(this);
        if (tracing !== null) tracing.processAll(next);
        return Object.freeze({ acked: finishOutcomes(ackOutcomes('ackAndClaimMany', leases, statuses)), leases: next });
      };
    });
  },

  /**
   * Ends the waits of the claims made so far on this transport: each rejects with
   * HAREL_ERR_INTERRUPTED (or resolves its leases, had it claimed meanwhile). Claims made
   * later wait as usual.
   */
  interrupt() {
    // The binding's own waiting claims (no C call of theirs waits), so not
    // harel_transport_interrupt.
    interruptWaits(this);
  },
};
