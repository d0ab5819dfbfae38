'use strict';
// Administration: redrive and purgeDead (the dead letters), purgeGroup and purge, release,
// pause and resume.

const { argumentError } = require('../errors');
const { checkString, checkSeq, checkBoolean, checkOptions, describe } = require('../args');
const { callChecked } = require('../calls');
const { call } = require('../transport');

const SELECTION = ['all', 'groupId', 'seqs'];
const PAUSE_TARGET = ['queue', 'groupId', 'routingKey']; // harel_pause_kind's values, in order
const TARGET_SHAPES = '{ queue: true }, { groupId } or { routingKey }';

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
};
