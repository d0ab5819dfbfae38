'use strict';
// The lease both ways: the harel_lease a call takes, made from a lease object, and the
// frozen Lease made from one the library hands out; the per-lease outcomes of the batch
// acks.

const { inspect } = require('node:util');
const koffi = require('koffi');
const { STATUS, HarelError, argumentError } = require('./errors');
const { checkString, checkSeq, describe } = require('./args');
const { statusName, callChecked } = require('./calls');
const { bytesText, parsed } = require('./decode');
const { LeaseType } = require('./native');
const { readHeaders } = require('./headers');

// Where the fields of a harel_lease are, by koffi's layout of the C struct: a lease the
// library hands out is read field by field (koffi's decoding of the struct makes an object,
// and a BigInt per pointer, to be read again).
const AT = Object.fromEntries(
  ['seq', 'group_id', 'group_id_len', 'event', 'event_len', 'worker_id', 'lock_expiry', 'attempts', 'headers', 'n_headers']
    .map((field) => [field, koffi.offsetof(LeaseType, field)]),
);

/**
 * The harel_lease ack, nack, extend and ackAndClaim read (seq, group_id with group_id_len,
 * worker_id); `name` names it in errors ('leases[2]' in a batch). The group id goes as a
 * Buffer of its UTF-8 bytes with its length, so a group id holding NUL bytes (stored by
 * another writer, handed out by a claim) reaches the library whole; the Buffer stays
 * referenced by the struct until the call has ended.
 */
function leaseStruct(lease, name = 'lease') {
  if (lease === null || typeof lease !== 'object') {
    throw argumentError(`${name} must be a lease object from claim(), got ${describe(lease)}`);
  }
  const seq = checkSeq(`${name}.seq`, lease.seq);
  const groupId = Buffer.from(checkString(`${name}.groupId`, lease.groupId, { nul: true }) + '\0', 'utf8');
  return {
    seq,
    group_id: groupId,
    group_id_len: groupId.length - 1,
    event: null, // the calls that take a lease read only seq, group_id and worker_id
    event_len: 0,
    worker_id: checkString(`${name}.workerId`, lease.workerId),
    lock_expiry: 0,
    attempts: 0,
    headers: null, // nor these
    n_headers: 0,
  };
}

/** The lease structs of ackMany's and ackAndClaimMany's array. */
function leaseStructs(leases) {
  if (!Array.isArray(leases)) throw argumentError(`leases must be an array of leases, got ${describe(leases)}`);
  return leases.map((lease, i) => leaseStruct(lease, `leases[${i}]`));
}

// A Lease is frozen, but extend() moves its lockExpiry: that is an own enumerable getter
// (spreads and JSON.stringify carry it) reading a record behind a symbol, which extend()
// writes. The getter and the inspector are shared by every lease (a closure per lease
// cost the native heap measurably more in leak.test.js).
const EXPIRY = Symbol('lockExpiry');
const LOCK_EXPIRY = {
  enumerable: true,
  get: function lockExpiry() {
    return this[EXPIRY].lockExpiry;
  },
};
const INSPECT = {
  value: function inspectLease(depth, options, inspectValue) {
    return inspectValue({ ...this }, options); // the value, not "[Getter]"
  },
};

/**
 * The lease the library handed out at `ptr`, copied into a frozen JS object (the caller
 * frees `ptr`). Its properties are added in their order, each one new: every lease then
 * shares V8's hidden class (redefining a property already there, as a placeholder, would
 * turn each lease into a slow dictionary object). Pointers and sizes are read as 64-bit
 * integers (both platforms of the package, x64 and arm64, are 64-bit), as Numbers: an
 * address is below 2^53.
 */
function makeLease(ptr) {
  const p = Number(ptr);
  const eventJson = bytesText(koffi.decode.uint64(p + AT.event), koffi.decode.uint64(p + AT.event_len));
  const lease = {
    seq: koffi.decode.int64(p + AT.seq),
    groupId: bytesText(koffi.decode.uint64(p + AT.group_id), koffi.decode.uint64(p + AT.group_id_len)),
    event: parsed(eventJson),
    eventJson,
    workerId: koffi.decode.string(koffi.decode.uint64(p + AT.worker_id)),
  };
  Object.defineProperty(lease, 'lockExpiry', LOCK_EXPIRY);
  lease.attempts = Number(koffi.decode.int64(p + AT.attempts));
  lease.headers = readHeaders(koffi.decode.uint64(p + AT.headers), koffi.decode.uint64(p + AT.n_headers));
  Object.defineProperty(lease, EXPIRY, { value: { lockExpiry: koffi.decode.double(p + AT.lock_expiry) } });
  Object.defineProperty(lease, inspect.custom, INSPECT);
  return Object.freeze(lease);
}

/** The lease at `ptr`, copied out; the library's copy freed. */
function takeLease(f, ptr) {
  try {
    return makeLease(ptr);
  } finally {
    f.leaseFree(ptr);
  }
}

/** The first `n` leases of an array the library filled, copied out; each one freed. */
function takeLeases(f, ptrs, n) {
  try {
    return ptrs.slice(0, n).map(makeLease);
  } finally {
    for (let i = 0; i < n; i++) f.leaseFree(ptrs[i]);
  }
}

/**
 * The per-lease outcomes of ackMany and ackAndClaimMany: `{ lease, ok: true, error: null }`,
 * or `{ lease, ok: false, error }` with a HarelError naming the lease (the library reports
 * a lost lease by its status alone).
 */
function ackOutcomes(what, leases, statuses) {
  return leases.map((lease, i) => {
    const status = statuses[i];
    if (status === STATUS.HAREL_OK) return Object.freeze({ lease, ok: true, error: null });
    const code = statusName(status);
    const why = status === STATUS.HAREL_ERR_LEASE_LOST
      ? `is no longer leased to worker ${JSON.stringify(lease.workerId)}: it was acked or nacked already, or its lease lapsed and another worker claimed it`
      : status === STATUS.HAREL_ERR_CONNECT
        ? `may not have been acked (${code}): its shard was unreachable or its answer was lost (ack it again: HAREL_ERR_LEASE_LOST then says it was)`
        : `was not acked (${code})`;
    const error = new HarelError(code, `${what}: leases[${i}], message ${lease.seq} of group ${JSON.stringify(lease.groupId)}, ${why}`, { status });
    return Object.freeze({ lease, ok: false, error });
  });
}

/**
 * Runs a call that leases a message into its out argument (appended to `args`, before its
 * err); resolves the lease, copied out in koffi's callback and freed, or null for
 * HAREL_EMPTY.
 */
function leaseOf(f, what, call, args) {
  const take = (status, ptr) => (status === STATUS.HAREL_EMPTY ? null : takeLease(f, ptr));
  return callChecked(f, what, call, args, { out: true, take });
}

module.exports = { EXPIRY, leaseStruct, leaseStructs, takeLeases, leaseOf, ackOutcomes };
