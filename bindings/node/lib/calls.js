'use strict';
// Calls: running a C function on the libuv thread pool through koffi's `.async()`, and
// turning its status and `harel_error **err` into a result or a thrown HarelError.

const { STATUS, HarelError } = require('./errors');
const { Gate } = require('./gate');
const { Slots } = require('./slots');
const { load } = require('./native');

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
const slots = new Slots(MAX_ISSUED); // the out-parameters of the calls the gate let through

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
 * The outcome of a fallible C call that returned `status` with `error` (the harel_error *
 * it set, or a false value): HAREL_OK or HAREL_EMPTY, or a HarelError thrown.
 */
function outcome(f, what, error, status) {
  if (status === STATUS.HAREL_OK || status === STATUS.HAREL_EMPTY) {
    if (error) f.errorFree(error); // never set on success; freed should it be
    return status;
  }
  throw takeError(f, status, error, what);
}

/**
 * Runs a fallible C function on the pool with its `err` appended (in a slot, lib/slots.js);
 * resolves its outcome (HAREL_OK or HAREL_EMPTY), or with `take`, `take(status, pointer)`,
 * run in koffi's callback (one promise per call, settled there). `out`: the function hands
 * out a pointer, its out argument before `err`, in the slot too (`pointer` is that, a
 * Number, 0 for NULL).
 */
function callChecked(f, what, fn, args, { out = false, take = null } = {}) {
  return new Promise((resolve, reject) => {
    issuing.enter(() => {
      const slot = slots.take();
      const done = (err, status) => {
        const error = slots.err(slot);
        const pointer = out ? slots.out(slot) : 0;
        slots.give(slot); // before leave(), which may start the next call
        issuing.leave();
        try {
          if (err) throw err; // koffi could not make the call
          const result = outcome(f, what, error, status);
          resolve(take ? take(status, pointer) : result);
        } catch (e) {
          reject(e);
        }
      };
      try {
        if (out) fn.async(...args, slots.outAddress(slot), slots.errAddress(slot), done);
        else fn.async(...args, slots.errAddress(slot), done);
      } catch (e) {
        done(e);
      }
    });
  });
}

/** The same, here on the main thread: for calls that never wait (options, schema text). */
function callCheckedHere(f, what, fn, args) {
  const err = [null];
  const status = fn(...args, err);
  return outcome(f, what, err[0], status);
}

module.exports = { POOL_THREADS, statusName, callAsync, callChecked, callCheckedHere };
