'use strict';
// Administration: redrive and purgeDead (the dead letters), purgeGroup and purge, release,
// pause and resume, setLimit and removeLimit.

const { argumentError } = require('../errors');
const { MAX_LIMIT, checkString, checkSeq, checkBoolean, checkOptions, describe } = require('../args');
const { callChecked } = require('../calls');
const { call } = require('../transport');

const SELECTION = ['all', 'groupId', 'seqs'];
const PAUSE_TARGET = ['queue', 'groupId', 'routingKey']; // harel_pause_kind's values, in order
const TARGET_SHAPES = '{ queue: true }, { groupId } or { routingKey }';
const LIMIT = ['concurrency', 'rate'];
const RATE = ['perSecond', 'burst'];
const LIMIT_SHAPE = '{ concurrency?, rate?: { perSecond, burst } }';

/**
 * The dead letters redrive and purgeDead take, as the C arguments all, group_id, seqs and
 * their count: `{ all: true }`, `{ groupId }` or `{ seqs: [...] }`. That exactly one is
 * given is the library's to check (its message says so).
 */
function selection(which) {
  if (which === null || typeof which !== 'object' || Array.isArray(which)) {
    throw argumentError(`which must be { all: true }, { groupId } or { seqs }, got ${describe(which)}`);
  }
  const o = checkOptions('which', which, SELECTION);
  const all = o.all === undefined ? false : checkBoolean('all', o.all);
  const groupId = checkString('groupId', o.groupId, { nullable: true });
  const seqs = o.seqs === undefined || o.seqs === null ? [] : o.seqs;
  if (!Array.isArray(seqs)) throw argumentError(`seqs must be an array of integers, got ${describe(seqs)}`);
  const array = BigInt64Array.from(seqs, (seq, i) => BigInt(checkSeq(`seqs[${i}]`, seq)));
  return [all, groupId, array.length ? array : null, array.length];
}

/**
 * What pause and resume name, as the C arguments kind (a harel_pause_kind) and name:
 * `{ queue: true }` (name NULL), `{ groupId }` or `{ routingKey }`. Exactly one, checked
 * here: the C call takes a kind, so a target naming two would otherwise lose one. An empty
 * group id or routing key is the library's to refuse (its message names it).
 */
function pauseTarget(target) {
  if (target === null || typeof target !== 'object' || Array.isArray(target)) {
    throw argumentError(`target must be ${TARGET_SHAPES}, got ${describe(target)}`);
  }
  const o = checkOptions('target', target, PAUSE_TARGET);
  const named = PAUSE_TARGET.filter((key) => o[key] !== undefined);
  if (named.length !== 1) {
    const names = named.length ? named.join(' and ') : 'none';
    throw argumentError(`target must name exactly one: ${TARGET_SHAPES}; it names ${names}`);
  }
  const [key] = named;
  if (key === 'queue') {
    if (o.queue !== true) throw argumentError(`target.queue must be true, got ${describe(o.queue)}`);
    return [0, null];
  }
  return [PAUSE_TARGET.indexOf(key), checkString(`target.${key}`, o[key])];
}

/**
 * A limit, `{ concurrency?, rate?: { perSecond, burst } }` (a kind absent or null: not
 * given), as the C arguments concurrency, rate and burst, 0 for a kind not given. What koffi
 * would change is refused here: a concurrency that is not an integer 0..2^32-1 (it would be
 * truncated or wrapped), a rate or burst that is not a number. The ranges are the
 * library's to check (neither kind given, 1000001, NaN, Infinity, -1, a burst of 0.5: its
 * messages name them), but for the zeros the C call reads as "not given": a concurrency of
 * 0, or a rate of 0 with a burst of 0, would turn that kind off (or be refused as a limit of
 * neither kind), so they are refused here, with the message the library gives a zero.
 */
function limitArgs(limit) {
  if (limit === null || typeof limit !== 'object' || Array.isArray(limit)) {
    throw argumentError(`limit must be ${LIMIT_SHAPE}, got ${describe(limit)}`);
  }
  const o = checkOptions('limit', limit, LIMIT);
  let concurrency = 0;
  if (o.concurrency !== undefined && o.concurrency !== null) {
    const n = o.concurrency;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n >= 2 ** 32) {
      throw argumentError(`limit.concurrency must be an integer (1..${MAX_LIMIT}), got ${describe(n)}`);
    }
    if (n === 0) throw argumentError(`concurrency is 0; it must be 1..${MAX_LIMIT}`);
    concurrency = n;
  }
  let [rate, burst] = [0, 0];
  if (o.rate !== undefined && o.rate !== null) {
    if (typeof o.rate !== 'object' || Array.isArray(o.rate)) {
      throw argumentError(`limit.rate must be { perSecond, burst }, got ${describe(o.rate)}`);
    }
    const r = checkOptions('limit.rate', o.rate, RATE);
    for (const key of RATE) {
      if (typeof r[key] !== 'number') {
        throw argumentError(`limit.rate.${key} must be a number, got ${describe(r[key])}`);
      }
    }
    [rate, burst] = [r.perSecond, r.burst];
    if (rate === 0 && burst === 0) {
      throw argumentError(`rate is 0; it must be a finite number > 0, at most ${MAX_LIMIT}`);
    }
  }
  return [concurrency, rate, burst];
}

/** Runs pause or resume (`what`) on `target`; resolves the C call's bool. Both read the clock. */
function pausing(transport, what, target) {
  return call(transport, what, true, () => {
    const [kind, name] = pauseTarget(target);
    return async (f, handle) => {
      const out = [false];
      await callChecked(f, what, f[what], [handle, kind, name, out]);
      return Boolean(out[0]);
    };
  });
}

/** Runs a call that writes a uint64_t count into its out argument; resolves it as a Number. */
async function countOf(f, what, fn, args) {
  const out = [0];
  await callChecked(f, what, fn, [...args, out]);
  return Number(out[0]);
}

module.exports = {
  /**
   * Moves dead letters back into their groups as the newest messages, claimed 0 times:
   * `{ all: true }`, `{ groupId }` or `{ seqs: [...] }`. Resolves how many moved.
   */
  redrive(which) {
    return call(this, 'redrive', true, () => {
      const args = selection(which);
      return (f, handle) => countOf(f, 'redrive', f.redrive, [handle, ...args]);
    });
  },

  /** Deletes dead letters, chosen as for redrive. Resolves how many. */
  purgeDead(which) {
    return call(this, 'purgeDead', false, () => {
      const args = selection(which);
      return (f, handle) => countOf(f, 'purge_dead', f.purgeDead, [handle, ...args]);
    });
  },

  /** Deletes a group's messages and the group (a lease on one is lost). Resolves how many messages. */
  purgeGroup(groupId) {
    return call(this, 'purgeGroup', false, () => {
      const group = checkString('groupId', groupId);
      return (f, handle) => countOf(f, 'purge_group', f.purgeGroup, [handle, group]);
    });
  },

  /** Deletes every message and group; dead letters stay. Resolves how many messages. */
  purge() {
    return call(this, 'purge', false, () => (f, handle) => countOf(f, 'purge', f.purge, [handle]));
  },

  /** Ends the lease or park on a group's head now. Resolves false when nothing was held. */
  release(groupId) {
    return call(this, 'release', true, () => {
      const group = checkString('groupId', groupId);
      return async (f, handle) => {
        const out = [false];
        await callChecked(f, 'release', f.release, [handle, group, out]);
        return Boolean(out[0]);
      };
    });
  },

  /**
   * Pauses `{ queue: true }`, `{ groupId }` or `{ routingKey }` (stored in the database, until
   * resume): no claim takes the groups it names. Resolves false when that pause was there already.
   */
  pause(target) {
    return pausing(this, 'pause', target);
  },

  /** Ends the pause `target` names (as pause's). Resolves false when there was none. */
  resume(target) {
    return pausing(this, 'resume', target);
  },

  /**
   * Limits the groups of `routingKey` (stored in the database, for every worker of every
   * process): `{ concurrency?, rate?: { perSecond, burst } }`, replacing the key's limits
   * (a kind not given is off). Reads the clock (a rate limit's bucket starts full then).
   */
  setLimit(routingKey, limit) {
    return call(this, 'setLimit', true, () => {
      const key = checkString('routingKey', routingKey);
      const args = limitArgs(limit);
      return async (f, handle) => {
        await callChecked(f, 'set_limit', f.setLimit, [handle, key, ...args]);
      };
    });
  },

  /** Removes `routingKey`'s limits: its held groups are served again at once. */
  removeLimit(routingKey) {
    return call(this, 'removeLimit', false, () => {
      const key = checkString('routingKey', routingKey);
      return async (f, handle) => {
        await callChecked(f, 'remove_limit', f.removeLimit, [handle, key]);
      };
    });
  },
};
