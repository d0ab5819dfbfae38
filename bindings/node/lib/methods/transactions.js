'use strict';
// Publishing inside the application's transaction: begin and transaction (the Tx itself is
// lib/tx.js).

const { argumentError } = require('../errors');
const { describe } = require('../args');
const { callCheckedHere } = require('../calls');
const { load } = require('../native');
const { makeTx, runTransaction, refuseInside } = require('../tx');
const { handleNow, txCall, tracingOf } = require('../transport');

module.exports = {
  /**
   * Begins a transaction: a Tx, synchronously (nothing is sent and no lock taken before its
   * first query or its commit).
   */
  begin() {
    refuseInside(this, 'begin');
    const f = load();
    const out = [null];
    callCheckedHere(f, 'begin', f.begin, [handleNow(this, 'begin'), out]);
    return makeTx(this, out[0], txCall, tracingOf(this));
  },

  /**
   * Runs `body(tx)` in a new transaction and commits it when `body` resolves; rolls it back
   * and rejects with what `body` threw when it throws or rejects. Resolves `{ value,
   * published }`: what `body` returned, and what became of each publish, in order.
   */
  async transaction(body) {
    if (typeof body !== 'function') throw argumentError(`body must be a function (tx) => ..., got ${describe(body)}`);
    return runTransaction(this, this.begin(), body);
  },
};
