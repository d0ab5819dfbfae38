'use strict';
// Waiting claims, on the event loop. A C call that waits would hold a libuv pool thread for
// as long as it waits (with the default pool of 4, four of them stopped every fs call, dns
// lookup and publish of the process), so no C call of the binding waits. A waiting claim
// watches the library's readiness descriptor instead (harel_transport_watch: an epoll
// descriptor that becomes readable when a claim with the watch's filter may find work),
// from the event loop through the poll addon (lib/poll.js, src/poll.c), and makes ordinary
// non-waiting claims on the pool only when it fires:
//
// - A waiting claim first claims once itself (unless a relay, below, is running on its
//   watch: it then joins, and makes that claim in the relay, after the waiters before it,
//   even if theirs brought nothing). If that brings nothing and the wait is not over, it
//   joins the FIFO queue of its watch: one C watch per filter (min priority and routing
//   keys) of the transport, shared by all the claims waiting with that filter, made when
//   the first joins (harel_transport_watch makes descriptors and touches no database: on
//   the main thread).
// - When the descriptor is readable, the watch stops polling and calls harel_watch_rearm
//   on the pool (it clears the descriptor and looks). HAREL_EMPTY: nothing to claim; poll
//   again. HAREL_OK: a relay: the waiters claim in FIFO order, one after another, each its
//   own claim (worker, visibility, max) without waiting; a waiter that got leases resolves
//   them and the next claims, until a claim brings nothing (or fails, or no one is left);
//   then poll again (the descriptor stays readable after HAREL_OK, so the next rearm looks
//   again and arms the library's timer for the leases just taken). The rearm always comes
//   before the claims, so a commit made after it rings again: no wake is lost.
// - A watch whose last waiter left stops polling and lingers, idle, for the next claims
//   with its filter (a worker loop waits again soon): freed after settings.lingerMs unused,
//   or when more than settings.maxIdle of the transport's are idle, or at close(). Freeing
//   runs on the pool, as every C call but the making of a watch does (closing descriptors
//   is the kernel's work, and a close of the handle must wait for it).
// - Each waiter has its own deadline (a timer), its AbortSignal, and interrupt()/close().
//   A waiter whose claim is in flight when one of them comes is decided when the claim is
//   back, as the C waiting claims did: leases claimed are resolved, whatever happened
//   meanwhile (a claim never leaves a lease behind, and none is handed to another waiter
//   or released: the claim that took it resolves it); with none, the abort's reason, the
//   claim's error, [] past the deadline, or HAREL_ERR_INTERRUPTED, in that order. A waiter
//   that is only queued is decided at once.
//
// Idle (nothing committed, no lease or park ending) nothing runs: no transaction, no thread,
// no timer but each waiter's deadline.

const { STATUS, HarelError } = require('./errors');
const { callAsync, callChecked, callCheckedHere } = require('./calls');
const poll = require('./poll');

// The longest delay setTimeout takes (about 24.8 days); a longer wait re-arms its timer.
const MAX_TIMER_MS = 2 ** 31 - 1;
// An idle watch (no claim waiting on it) is freed after this long, or when more than
// MAX_IDLE of the transport's are idle (the one idle longest first). A setting object, so
// that a test can shorten it.
const settings = { lingerMs: 10_000, maxIdle: 8 };

/**
 * A transport's waiting claims and watches. `f` and `handle` are its library and handle,
 * `clocked(step)` runs a C call that reads its clock as the transport does, and
 * `track(promise)` counts a C call the transport's close() must wait for.
 */
class Waits {
  constructor(f, handle, clocked, track) {
    this.f = f;
    this.handle = handle;
    this.clocked = clocked;
    this.track = track;
    this.watches = new Map(); // filter key -> Watch
    this.waiters = new Set(); // the waiting claims in progress: interrupt() and close() end them
    this.idle = new Set(); // the watches no claim waits on, idle longest first
    this.closing = false;
  }

  /**
   * A claim that waits up to `wait` seconds (a finite number >= 0), ended early by `signal`,
   * interrupt() or close(). `claimOnce()` claims without waiting (its C call through
   * `clocked`), resolving the leases ([] for none); `minPriority` and `keys` are its filter.
   * `refuse()` makes the C waiting call with a wait that is not a finite number >= 0, which
   * the library refuses with its own message. Resolves the leases, [] once the wait is over.
   */
  claim(what, wait, signal, minPriority, keys, claimOnce, refuse) {
    if (signal && signal.aborted) return Promise.reject(abortReason(signal));
    if (!(typeof wait === 'number' && Number.isFinite(wait) && wait >= 0)) return refuse();
    if (wait > 0) {
      try {
        poll.load(); // before any C call: a claim that could not wait calls nothing
      } catch (e) {
        return Promise.reject(e);
      }
    }
    return new Promise((resolve, reject) => {
      const waiter = new Waiter(this, what, wait, signal, filterKey(minPriority, keys), minPriority, keys, claimOnce, resolve, reject);
      this.waiters.add(waiter);
      waiter.begin();
    });
  }

  /** Ends the waits of the claims in progress: HAREL_ERR_INTERRUPTED (or their leases). */
  interrupt() {
    for (const waiter of [...this.waiters]) waiter.end('interrupt');
  }

  /** close(), first: ends every wait and stops polling; free() follows once the calls are in. */
  close() {
    this.closing = true;
    for (const waiter of [...this.waiters]) waiter.end('close');
    for (const watch of this.watches.values()) watch.stopPolling();
  }

  /** close(), last (no call in flight): frees the watches left; resolves once they are. */
  free() {
    return Promise.all([...this.watches.values()].map((watch) => watch.free()));
  }

  /** harel_watch_free, on the pool (counted as a call in flight); resolves when done. */
  freeWatch(cwatch) {
    const { f } = this;
    return this.track(callAsync(f.watchFree, [cwatch]).catch(() => f.watchFree(cwatch)));
  }

  /** The watch of a filter, made if there is none (a HarelError if that fails). */
  watchFor(key, minPriority, keys, what) {
    let watch = this.watches.get(key);
    if (!watch) {
      watch = new Watch(this, key, minPriority, keys, what);
      this.watches.set(key, watch);
    }
    return watch;
  }

  /** harel_watch_rearm on the pool: HAREL_OK (a claim may find work) or HAREL_EMPTY. */
  rearm(cwatch) {
    const { f, handle } = this;
    return this.track(this.clocked(() => callChecked(f, 'watch_rearm', f.watchRearm, [handle, cwatch])));
  }
}

/** Claims with the same floor and the same set of routing keys share a watch. */
function filterKey(minPriority, keys) {
  return JSON.stringify([minPriority, [...new Set(keys)].sort()]);
}

/**
 * One C watch (harel_watch) and the poll of its descriptor, and the FIFO queue of the
 * claims waiting on it. `busy` while a relay runs: then it neither polls nor is freed.
 */
class Watch {
  /** Makes the C watch and the poll of its descriptor, stopped. */
  constructor(waits, key, minPriority, keys, what) {
    this.waits = waits;
    this.key = key;
    this.what = what;
    this.queue = new Set(); // Waiters, in the order they joined
    this.busy = false;
    this.freed = null; // once freed: the promise of harel_watch_free
    this.lingering = null; // the timer of an idle watch
    const { f, handle } = waits;
    const out = [null];
    callCheckedHere(f, what, f.transportWatch, [handle, minPriority, keys.length ? keys : null, keys.length, out]);
    this.cwatch = out[0];
    try {
      const fd = [-1];
      callCheckedHere(f, what, f.watchFd, [this.cwatch, fd]);
      try {
        this.poller = poll.watch(fd[0], (status) => this.readable(status));
      } catch (e) {
        throw e instanceof HarelError ? e : pollError(what, "could not poll the watch's descriptor", e);
      }
    } catch (e) {
      waits.freeWatch(this.cwatch);
      throw e;
    }
  }

  /** A waiter joins the queue (its own claim brought nothing, or a relay runs). */
  join(waiter) {
    waiter.watch = this;
    this.queue.add(waiter);
    if (this.lingering) {
      clearTimeout(this.lingering);
      this.lingering = null;
      this.waits.idle.delete(this);
    }
    if (!this.busy) this.poller.start();
  }

  /** A waiter leaves (settled); after the last one the watch idles, unless it is busy. */
  leave(waiter) {
    this.queue.delete(waiter);
    waiter.watch = null;
    if (this.queue.size === 0 && !this.busy) this.idle();
  }

  /** After a relay: poll while claims wait, else idle. */
  resume() {
    if (this.queue.size === 0) this.idle();
    else if (!this.waits.closing) this.poller.start();
  }

  /** No claim waits: stop polling and linger (see settings), or go at once when closing. */
  idle() {
    if (this.freed || this.lingering) return;
    this.poller.stop();
    if (this.waits.closing) {
      this.free();
      return;
    }
    const { idle } = this.waits;
    idle.add(this);
    this.lingering = setTimeout(() => this.free(), settings.lingerMs);
    this.lingering.unref(); // an idle watch keeps no process alive
    if (idle.size > settings.maxIdle) idle.values().next().value.free();
  }

  stopPolling() {
    if (!this.freed) this.poller.stop();
  }

  /** The poll's callback: the descriptor is readable (status 0), or polling failed. */
  readable(status) {
    if (this.freed || this.busy) return; // (stopped while busy: a turn already under way)
    if (status < 0) {
      this.free(); // a descriptor that cannot be polled: no claim may wait on it
      this.fail(pollError(this.what, `polling the watch's descriptor failed (libuv status ${status})`));
      return;
    }
    this.relay();
  }

  /**
   * Rearm, then (HAREL_OK) the waiters claim in turn until a claim brings nothing; then
   * those who joined meanwhile and were not reached make their first claim.
   */
  async relay() {
    this.busy = true;
    this.poller.stop(); // level-triggered: it would call back on every turn meanwhile
    try {
      let status;
      try {
        status = await this.waits.rearm(this.cwatch);
      } catch (e) {
        this.fail(e);
        return;
      }
      // A Set's iterator sees the waiters who join meanwhile and skips those who left.
      if (status === STATUS.HAREL_OK) {
        for (const waiter of this.queue) {
          if (!(await waiter.claim())) break;
        }
      }
      // Those who joined during the relay and were not reached make their first claim now:
      // every waiting claim looks once (one with a wait of 0 has no deadline to end it).
      for (const waiter of this.queue) {
        if (!waiter.looked) await waiter.claim();
      }
    } finally {
      this.busy = false;
      this.resume();
    }
  }

  /**
   * Rejects every queued waiter with `error` (a failed rearm or poll: each would have
   * failed its own look as well), each with its own copy.
   */
  fail(error) {
    for (const waiter of [...this.queue]) {
      if (!waiter.claiming) waiter.settle(false, copyError(error));
    }
  }

  /**
   * Stops polling (the descriptor leaves the loop's poll set at once) and frees the C watch
   * on the pool; resolves once it is freed.
   */
  free() {
    if (this.freed) return this.freed;
    if (this.lingering) clearTimeout(this.lingering);
    this.lingering = null;
    this.waits.idle.delete(this);
    if (this.waits.watches.get(this.key) === this) this.waits.watches.delete(this.key);
    this.poller.close();
    this.freed = this.waits.freeWatch(this.cwatch);
    return this.freed;
  }
}

/** A waiting claim in progress. */
class Waiter {
  constructor(waits, what, wait, signal, key, minPriority, keys, claimOnce, resolve, reject) {
    this.waits = waits;
    this.what = what;
    this.deadline = performance.now() + wait * 1000;
    this.signal = signal;
    this.key = key;
    this.minPriority = minPriority;
    this.keys = keys;
    this.claimOnce = claimOnce;
    this.resolve = resolve;
    this.reject = reject;
    this.why = null; // 'interrupt' or 'close': the first that came
    this.timedOut = wait === 0;
    this.claiming = false; // a claim of this waiter is in flight: decided when it is back
    this.looked = false; // it has made a claim (its first look)
    this.watch = null; // the watch whose queue it is in
    this.settled = false;
    this.timer = null;
    this.onAbort = () => this.end('abort');
  }

  begin() {
    if (this.signal) this.signal.addEventListener('abort', this.onAbort, { once: true });
    const watch = this.waits.watches.get(this.key);
    if (watch && watch.busy) watch.join(this); // a relay runs: it will come to this one
    else this.claim(); // (claiming from here on: however short the wait, it looks once)
    if (!this.timedOut) this.armTimer();
  }

  armTimer() {
    const left = this.deadline - performance.now();
    if (left <= 0) {
      this.timedOut = true;
      this.end('timeout');
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = null;
      this.armTimer();
    }, Math.min(MAX_TIMER_MS, Math.ceil(left)));
  }

  /**
   * One claim without waiting: its own first look, or its turn in a relay. Resolves the
   * number of leases it claimed (0 for none, or for an error: the waiter has settled).
   */
  async claim() {
    this.claiming = true;
    this.looked = true;
    let leases = [];
    let error = null;
    try {
      leases = await this.claimOnce();
    } catch (e) {
      error = e;
    }
    this.claiming = false;
    if (leases.length) {
      this.settle(true, leases);
      return leases.length;
    }
    if (this.signal && this.signal.aborted) this.settle(false, abortReason(this.signal));
    else if (error) this.settle(false, error);
    else if (!this.decide() && !this.watch) this.joinWatch();
    return 0;
  }

  joinWatch() {
    try {
      this.waits.watchFor(this.key, this.minPriority, this.keys, this.what).join(this);
    } catch (e) {
      this.settle(false, e);
    }
  }

  /** Abort, interrupt(), close() or the deadline: decided now unless a claim is in flight. */
  end(why) {
    if (this.settled) return;
    if ((why === 'interrupt' || why === 'close') && !this.why) this.why = why;
    if (!this.claiming) this.decide();
  }

  /** Settles a waiter whose wait is over (aborted, timed out, interrupted); true if it did. */
  decide() {
    if (this.signal && this.signal.aborted) return this.settle(false, abortReason(this.signal));
    if (this.timedOut || performance.now() >= this.deadline) return this.settle(true, []);
    if (this.why) return this.settle(false, interruptedError(this.what, this.why));
    return false;
  }

  settle(ok, value) {
    if (this.settled) return true;
    this.settled = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.signal) this.signal.removeEventListener('abort', this.onAbort);
    this.waits.waiters.delete(this);
    if (this.watch) this.watch.leave(this);
    if (ok) this.resolve(value);
    else this.reject(value);
    return true;
  }
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

/** The addon failing on the watch's descriptor: no library status fits, so a panic's. */
function pollError(what, message, cause) {
  const detail = cause ? `: ${cause.message}` : '';
  return new HarelError('HAREL_ERR_PANIC', `${what}: ${message}${detail}`, { status: STATUS.HAREL_ERR_PANIC, cause });
}

/** A HarelError for each waiter a failure ends (the same values, its own object). */
function copyError(error) {
  if (!(error instanceof HarelError)) return error;
  return new HarelError(error.code, error.message, { status: error.status, cause: error.cause });
}

module.exports = { Waits, settings };
