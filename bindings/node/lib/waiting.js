'use strict';
// Waiting claims. A C call that waits holds its pool thread for as long as it waits: with
// the default pool of 4, four waiting claims stopped every fs call, dns lookup and publish
// of the process until their waits ended (measured: an fs.promises.stat took the whole
// 3 s wait of 4 claims, and the publish that would have woken them waited behind them).
// So the binding (1) lets at most POOL_THREADS - 1 waits be on the pool at once (at least
// one), keeping a thread for everything else, and (2) makes each C wait at most
// WAIT_SLICE seconds: a claim that waits longer calls the same C function again with the
// time left and the same harel_cancel, after the others queued for a wait slot have had
// a turn. The waiting itself (what wakes a claim, when it looks) stays the library's.

const { STATUS, HarelError } = require('./errors');
const { Gate } = require('./gate');
const { load } = require('./native');
const { POOL_THREADS } = require('./calls');

const WAIT_SLOTS = Math.max(1, POOL_THREADS - 1);
const WAIT_SLICE = 1;
const waitGate = new Gate(WAIT_SLOTS);

/**
 * A claim that waits up to `wait` seconds, ended early by `signal`, interrupt() or
 * close(): `waits` is its transport's set of waiting claims, which those two fire, and
 * `clocked(step)` runs a C call as the transport runs one that reads its clock.
 * `issue(seconds, cancel)` makes the C call, waiting up to `seconds` with `cancel`, and
 * resolves the leases it claimed (none: []). The call gets its own harel_cancel, fired by
 * all three and freed once its last C call has returned.
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
async function waitingClaim(waits, clocked, f, what, wait, signal, issue) {
  if (signal && signal.aborted) throw abortReason(signal);
  const cancel = f.cancelNew();
  if (!cancel) throw new HarelError('HAREL_ERR_PANIC', 'harel_cancel_new failed', { status: STATUS.HAREL_ERR_PANIC });
  const waiting = { cancel, why: null, withdraw: null };
  const onAbort = () => fire(waiting, 'abort');
  waits.add(waiting);
  if (signal) signal.addEventListener('abort', onAbort, { once: true });
  try {
    const valid = Number.isFinite(wait) && wait >= 0;
    const deadline = performance.now() + wait * 1000;
    const seconds = () => (valid ? Math.min(WAIT_SLICE, Math.max(0, (deadline - performance.now()) / 1000)) : wait);
    for (;;) {
      const step = () => clocked(() => issue(seconds(), cancel));
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
    waits.delete(waiting);
    f.cancelFree(cancel);
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

module.exports = { waitingClaim, fire };
