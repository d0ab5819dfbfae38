'use strict';
// Looking at the queue without changing it: stats, the pages of groups, peek and
// deadLetters, the pauses in force, the archive of acked messages, and the limits in force.

const koffi = require('koffi');
const { argumentError } = require('../errors');
const { DEFAULT_LIMIT, MAX_PAGE, checkString, checkOptions, describe } = require('../args');
const { callChecked } = require('../calls');
const { bytesText, parsed, optionalNumber } = require('../decode');
const {
  PriorityStatsType, StatsType, GroupInfoType, MessageInfoType, DeadLetterType, GroupPageType, MessagePageType, DeadPageType,
  PauseType, PauseListType, ArchivedType, ArchivePageType, LimitInfoType, LimitListType,
} = require('../native');
const { readHeaders, readHeaderList } = require('../headers');
const { call } = require('../transport');

const GROUPS_OPTIONS = ['state', 'cursor', 'limit'];
const PEEK_OPTIONS = ['cursor', 'limit'];
const DEAD_OPTIONS = ['groupId', 'cursor', 'limit'];
const ARCHIVE_OPTIONS = ['groupId', 'cursor', 'limit'];
// harel_group_state's values, in order
const GROUP_STATES = ['ready', 'leased', 'parked', 'delayed', 'paused', 'held', 'retrying'];
const PAUSE_KINDS = ['queue', 'group', 'routingKey']; // harel_pause_kind's values, in order
const SIZE_T = koffi.sizeof('size_t');
const DOUBLE = koffi.sizeof('double');
const UINT64 = koffi.sizeof('uint64_t');
const PAUSE_SIZE = koffi.sizeof(PauseType);
const ARCHIVED_SIZE = koffi.sizeof(ArchivedType);
const LIMIT_INFO_SIZE = koffi.sizeof(LimitInfoType);

/**
 * A page's limit, as the C size_t: an integer >= 0 (koffi would turn -1 into 2^64 - 1 and
 * 1.5 into 1). The range, 1..10000, is the library's to check.
 */
function checkLimit(value) {
  if (value === undefined) return DEFAULT_LIMIT;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw argumentError(`limit must be an integer (1..${MAX_PAGE}), got ${describe(value)}`);
  }
  return value;
}

/** The `state` of groups(): a harel_group_state, or -1 for any. */
function groupStateArg(state) {
  if (state === undefined || state === null || state === 'any') return -1;
  const i = GROUP_STATES.indexOf(state);
  if (i < 0) {
    const states = GROUP_STATES.map((name) => `'${name}'`).join(', ');
    throw argumentError(`state must be ${states}, 'any' or null, got ${describe(state)}`);
  }
  return i;
}

/** Runs a look that hands out `*out`; resolves what `take` makes of it (and frees). */
async function lookOf(f, what, fn, args, take) {
  const out = [null];
  await callChecked(f, what, fn, [...args, out]);
  return take(out[0]);
}

/** The stats the library handed out, copied into frozen JS objects; `ptr` is freed. */
function takeStats(f, ptr) {
  try {
    const raw = koffi.decode(ptr, StatsType);
    const n = Number(raw.n_priorities);
    const levels = n ? koffi.decode(raw.by_priority, PriorityStatsType, n) : [];
    // Each level's paused count at its offset: koffi.decode with a count makes a new array
    // type at every call and keeps it (see takePage).
    const paused = (i) => Number(koffi.decode(raw.paused_by_priority, i * UINT64, 'uint64_t'));
    return Object.freeze({
      now: raw.now,
      messages: Number(raw.messages),
      groups: Number(raw.groups),
      ready: Number(raw.ready),
      leased: Number(raw.leased),
      parked: Number(raw.parked),
      delayed: Number(raw.delayed),
      paused: Number(raw.paused),
      held: Number(raw.held),
      retrying: Number(raw.retrying),
      dead: Number(raw.dead),
      expired: Number(raw.expired),
      oldestReadyAge: optionalNumber(raw.oldest_ready_age),
      oldestReadySeq: optionalNumber(Number(raw.oldest_ready_seq)),
      nextReleaseAt: optionalNumber(raw.next_release_at),
      nextDueAt: optionalNumber(raw.next_due_at),
      byPriority: Object.freeze(levels.map((p, i) => priorityStats(p, paused(i)))),
    });
  } finally {
    f.statsFree(ptr);
  }
}

/**
 * One level of the stats. harel_priority_stats has a fixed size, without a delayed count:
 * a level's delayed, paused, held and retrying groups are in its `groups` and in none of
 * ready, leased and parked (the header's contract), and `paused` is the level's entry of
 * paused_by_priority, so `delayed` is what is left: the level's delayed groups with its
 * held and retrying ones, which the library counts over the whole queue only.
 */
function priorityStats(p, paused) {
  const [groups, ready, leased, parked] = [p.groups, p.ready, p.leased, p.parked].map(Number);
  const delayed = groups - ready - leased - parked - paused;
  return Object.freeze({ priority: p.priority, groups, ready, leased, parked, delayed, paused });
}

/**
 * A page the library handed out, of C type `pageType`: its items (of C type `type`) copied
 * by `item(raw, shard, headers, retryDelay)` into frozen JS objects, and its next cursor
 * (null on the last page); `ptr` is freed with `free`. A page of groups and one of dead
 * letters carry each item's shard (`shards`), one of messages and one of dead letters each
 * item's headers (`headers`), one of messages each item's backoff (`retry_delays`, -1 for
 * none: null); `item` gets undefined for what its page lacks.
 */
function takePage(ptr, pageType, type, free, item) {
  try {
    const page = koffi.decode(ptr, pageType);
    const n = Number(page.n_items);
    const raws = n ? koffi.decode(page.items, type, n) : [];
    // Each size_t at its offset: koffi.decode with a count (the items' above) makes a new
    // array type at every call and keeps it, some 20 bytes of the native heap.
    const shard = page.shards === undefined ? () => undefined : (i) => Number(koffi.decode(page.shards, i * SIZE_T, 'size_t'));
    const headers = page.headers === undefined ? () => undefined : (i) => readHeaderList(page.headers, i);
    const retryDelay = page.retry_delays === undefined
      ? () => undefined
      : (i) => optionalNumber(koffi.decode(page.retry_delays, i * DOUBLE, 'double'));
    const items = raws.map((raw, i) => item(raw, shard(i), headers(i), retryDelay(i)));
    return [Object.freeze(items), page.next_cursor || null];
  } finally {
    free(ptr);
  }
}

function groupInfo(g, shard) {
  return Object.freeze({
    groupId: bytesText(g.group_id, g.group_id_len),
    state: GROUP_STATES[g.state] || `unknown(${g.state})`,
    depth: Number(g.depth),
    headSeq: g.head_seq,
    headAge: optionalNumber(g.head_age),
    holder: g.holder || null,
    lockExpiry: optionalNumber(g.lock_expiry),
    priority: g.priority,
    routingKey: g.routing_key || null,
    headAttempts: Number(g.head_attempts),
    shard,
  });
}

/** The pauses the library handed out, copied into frozen JS objects; `ptr` is freed. */
function takePauses(f, ptr) {
  try {
    const list = koffi.decode(ptr, PauseListType);
    const pauses = [];
    // Each harel_pause at its offset: koffi.decode with a count makes a new array type at
    // every call and keeps it (see takePage).
    for (let i = 0; i < Number(list.n_pauses); i++) {
      const p = koffi.decode(list.pauses, i * PAUSE_SIZE, PauseType);
      pauses.push(Object.freeze({
        kind: PAUSE_KINDS[p.kind] || `unknown(${p.kind})`,
        name: bytesText(p.name, p.name_len),
        pausedAt: p.paused_at,
      }));
    }
    return Object.freeze(pauses);
  } finally {
    f.pauseListFree(ptr);
  }
}

/**
 * The limits the library handed out, copied into frozen JS objects; `ptr` is freed. Each
 * harel_limit_info at its offset: koffi.decode with a count makes a new array type at
 * every call and keeps it (see takePage).
 */
function takeLimits(f, ptr) {
  try {
    const list = koffi.decode(ptr, LimitListType);
    const limits = [];
    for (let i = 0; i < Number(list.n_limits); i++) {
      limits.push(limitInfo(koffi.decode(list.limits, i * LIMIT_INFO_SIZE, LimitInfoType)));
    }
    return Object.freeze(limits);
  } finally {
    f.limitListFree(ptr);
  }
}

/** One limit: the C zeros of a kind not set (concurrency 0; rate and burst 0) are null. */
function limitInfo(l) {
  const unrated = l.rate === 0 && l.burst === 0;
  return Object.freeze({
    routingKey: bytesText(l.routing_key, l.routing_key_len),
    concurrency: l.concurrency === 0 ? null : l.concurrency,
    rate: unrated ? null : Object.freeze({ perSecond: l.rate, burst: l.burst }),
    inUse: Number(l.in_use),
    tokens: optionalNumber(l.tokens),
    held: Number(l.held),
  });
}

function messageInfo(m, _shard, headers, retryDelay) {
  const eventJson = bytesText(m.event, m.event_len);
  return Object.freeze({
    seq: m.seq,
    event: parsed(eventJson),
    eventJson,
    attempts: Number(m.attempts),
    lockedBy: m.locked_by || null,
    lockExpiry: optionalNumber(m.lock_expiry),
    publishedAt: optionalNumber(m.published_at),
    headers,
    retryDelay,
  });
}

function deadLetter(d, shard, headers) {
  const eventJson = bytesText(d.event, d.event_len);
  return Object.freeze({
    seq: d.seq,
    groupId: bytesText(d.group_id, d.group_id_len),
    event: parsed(eventJson),
    eventJson,
    attempts: Number(d.attempts),
    lastWorker: d.last_worker || null,
    reason: d.reason,
    deadAt: d.dead_at,
    shard,
    headers,
  });
}

/**
 * A page of the archive the library handed out: its messages copied into frozen JS objects
 * (archived), and its next cursor (null on the last page); `ptr` is freed. Each
 * harel_archived at its offset: koffi.decode with a count makes a new array type at every
 * call and keeps it (see takePage).
 */
function takeArchive(f, ptr) {
  try {
    const page = koffi.decode(ptr, ArchivePageType);
    const messages = [];
    for (let i = 0; i < Number(page.n_messages); i++) {
      messages.push(archived(koffi.decode(page.messages, i * ARCHIVED_SIZE, ArchivedType)));
    }
    return Object.freeze({ messages: Object.freeze(messages), next: page.next_cursor || null });
  } finally {
    f.archivePageFree(ptr);
  }
}

function archived(a) {
  const eventJson = bytesText(a.event, a.event_len);
  return Object.freeze({
    seq: a.seq,
    groupId: bytesText(a.group_id, a.group_id_len),
    event: parsed(eventJson),
    eventJson,
    headers: readHeaders(a.headers.items, a.headers.n),
    attempts: Number(a.attempts),
    workerId: a.worker_id,
    publishedAt: optionalNumber(a.published_at),
    claimedAt: optionalNumber(a.claimed_at),
    ackedAt: a.acked_at,
    shard: Number(a.shard),
  });
}

module.exports = {
  /** Exact counts of the queue now; one read without the write lock. */
  stats() {
    return call(this, 'stats', true, () => (f, handle) => lookOf(f, 'stats', f.stats, [handle], (ptr) => takeStats(f, ptr)));
  },

  /**
   * A page of groups in group id order: `state` ('ready', 'leased', 'parked', 'delayed',
   * 'paused', 'held', 'retrying'; any when absent), `cursor` (the `next` of the page before; none for the
   * first), `limit` (1..10000, default 100). Resolves `{ groups, next }`, `next` null on the last page.
   */
  groups(options = {}) {
    return call(this, 'groups', true, () => {
      const o = checkOptions('options', options, GROUPS_OPTIONS);
      const state = groupStateArg(o.state);
      const cursor = checkString('cursor', o.cursor, { nullable: true });
      const limit = checkLimit(o.limit);
      return (f, handle) => lookOf(f, 'groups', f.groups, [handle, state, cursor, limit], (ptr) => {
        const [groups, next] = takePage(ptr, GroupPageType, GroupInfoType, f.groupPageFree, groupInfo);
        return Object.freeze({ groups, next });
      });
    });
  },

  /**
   * A page of a group's messages, oldest first, claiming none. Resolves `{ messages, next }`;
   * each message's `retryDelay` is the backoff its last claim drew under a retry policy
   * (seconds; null for none).
   */
  peek(groupId, options = {}) {
    return call(this, 'peek', false, () => {
      const group = checkString('groupId', groupId);
      const o = checkOptions('options', options, PEEK_OPTIONS);
      const cursor = checkString('cursor', o.cursor, { nullable: true });
      const limit = checkLimit(o.limit);
      return (f, handle) => lookOf(f, 'peek', f.peek, [handle, group, cursor, limit], (ptr) => {
        const [messages, next] = takePage(ptr, MessagePageType, MessageInfoType, f.messagePageFree, messageInfo);
        return Object.freeze({ messages, next });
      });
    });
  },

  /** A page of dead letters in queue order (one group's with `groupId`). Resolves `{ letters, next }`. */
  deadLetters(options = {}) {
    return call(this, 'deadLetters', false, () => {
      const o = checkOptions('options', options, DEAD_OPTIONS);
      const group = checkString('groupId', o.groupId, { nullable: true });
      const cursor = checkString('cursor', o.cursor, { nullable: true });
      const limit = checkLimit(o.limit);
      return (f, handle) => lookOf(f, 'dead_letters', f.deadLetters, [handle, group, cursor, limit], (ptr) => {
        const [letters, next] = takePage(ptr, DeadPageType, DeadLetterType, f.deadPageFree, deadLetter);
        return Object.freeze({ letters, next });
      });
    });
  },

  /**
   * A page of the archive (the messages acked while a transport kept it: the
   * archiveRetention option) in seq order: one group's history with `groupId`, or every
   * group's (a sharded queue's shard after shard). Resolves `{ messages, next }`.
   */
  archive(options = {}) {
    return call(this, 'archive', false, () => {
      const o = checkOptions('options', options, ARCHIVE_OPTIONS);
      const group = checkString('groupId', o.groupId, { nullable: true });
      const cursor = checkString('cursor', o.cursor, { nullable: true });
      const limit = checkLimit(o.limit);
      return (f, handle) => (
        lookOf(f, 'archive', f.archive, [handle, group, cursor, limit], (ptr) => takeArchive(f, ptr))
      );
    });
  },

  /**
   * The pauses in force, the queue's first, then by kind and name: frozen `{ kind, name,
   * pausedAt }`, kind 'queue' (name ''), 'group' or 'routingKey', pausedAt epoch seconds.
   */
  pauses() {
    return call(this, 'pauses', false, () => (f, handle) => (
      lookOf(f, 'pauses', f.pauses, [handle], (ptr) => takePauses(f, ptr))
    ));
  },

  /**
   * The limits in force, by routing key (a sharded queue's summed over its shards): frozen
   * `{ routingKey, concurrency, rate, inUse, tokens, held }`, concurrency and rate (`{
   * perSecond, burst }`) null when not set, tokens null without a rate. Reads the clock
   * (the tokens are the bucket's now).
   */
  limits() {
    return call(this, 'limits', true, () => (f, handle) => (
      lookOf(f, 'limits', f.limits, [handle], (ptr) => takeLimits(f, ptr))
    ));
  },
};
