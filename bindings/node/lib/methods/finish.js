'use strict';
// Finishing a lease: ack and ackMany, nack, deadLetter.

const { checkString, checkNumber, checkOptions } = require('../args');
const { callChecked } = require('../calls');
const { leaseStruct, leaseStructs, ackOutcomes } = require('../lease');
const { call } = require('../transport');

const NACK_OPTIONS = ['delay'];

module.exports = {
  /** Finishes a lease: deletes its message. HAREL_ERR_LEASE_LOST if it is no longer this worker's. */
  ack(lease) {
    return call(this, 'ack', true, () => {
      const struct = leaseStruct(lease);
      return async (f, handle) => {
        await callChecked(f, 'ack', f.ack, [handle, struct]);
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
        return ackOutcomes('ackMany', leases, statuses);
      };
    });
  },

  /** Gives a lease back: claimable at once (delay 0, the default) or parked for `delay` seconds. */
  nack(lease, options = {}) {
    return call(this, 'nack', true, () => {
      const struct = leaseStruct(lease);
      const o = checkOptions('options', options, NACK_OPTIONS);
      const delay = checkNumber('delay', o.delay === undefined ? 0 : o.delay);
      return async (f, handle) => {
        await callChecked(f, 'nack', f.nack, [handle, struct, delay]);
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
        await callChecked(f, 'dead_letter', f.deadLetter, [handle, struct, text]);
      };
    });
  },
};
