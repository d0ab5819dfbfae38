'use strict';
// A message's arguments as the C publishes take them, checked: publish's and publishWith's
// (lib/methods/publish.js) and a transaction's (lib/tx.js); and what became of a message.

const { argumentError } = require('./errors');
const { checkString, checkInteger, checkNumber, checkOptions, describe } = require('./args');
const { DELIVERY_SIZE } = require('./native');

// `headers`: the message's [name, value] pairs (lib/headers.js), beside the harel_message.
const PUBLISH_OPTIONS = ['priority', 'routingKey', 'headers'];
const DELIVERY_OPTIONS = ['key', 'delay', 'notBefore', 'unique', 'ttl', 'expiresAt', 'retry'];
const UNIQUE_OPTIONS = ['key', 'mode', 'delay', 'maxDelay'];
const RETRY_OPTIONS = ['base', 'factor', 'cap', 'jitter'];
// harel_jitter's values, in order: HAREL_JITTER_FULL (0), _EQUAL (1), _NONE (2).
const JITTERS = ['full', 'equal', 'none'];
// HAREL_MIN_RETRY_BASE and HAREL_MAX_RETRY_FACTOR, for the messages of the 0s refused here.
const MIN_RETRY_BASE = 0.001;
const MAX_RETRY_FACTOR = 16;
// harel_unique_mode's values, in order: HAREL_UNIQUE_KEEP (0), _REPLACE (1), _DEBOUNCE (2).
const UNIQUE_MODES = ['keep', 'replace', 'debounce'];
const DEBOUNCE = 2;
// HAREL_MAX_DELAY: debounce's maxDelay when none is given (no cap but the library's own).
const MAX_DELAY = 315360000;
const PUBLISH_WITH_OPTIONS = [...PUBLISH_OPTIONS, ...DELIVERY_OPTIONS];

function eventText(name, event) {
  if (typeof event === 'string') return checkString(name, event);
  let text;
  try {
    text = JSON.stringify(event);
  } catch (e) {
    throw argumentError(`${name} can't be turned into JSON: ${e.message}`, e);
  }
  if (text === undefined) throw argumentError(`${name} can't be turned into JSON (it is ${describe(event)})`);
  return checkString(name, text);
}

/**
 * A harel_message of publish's arguments, checked; errors name them after `prefix`
 * ('messages[3].' in a batch). The C publish takes NUL-terminated strings: no NUL inside.
 */
function messageStruct(prefix, groupId, event, { priority, routingKey }) {
  return {
    group_id: checkString(`${prefix}groupId`, groupId),
    event_json: eventText(`${prefix}event`, event),
    priority: checkInteger(`${prefix}priority`, priority === undefined ? 0 : priority),
    routing_key: checkString(`${prefix}routingKey`, routingKey, { nullable: true }),
  };
}

/**
 * A message's delivery options as a harel_delivery (the C struct, its `size` set), checked
 * for their types only: the library checks the values (an empty or over-long key, a delay,
 * instant, ttl or expiry out of range, a key with a unique key, a debounce cap below its
 * delay, an expiry not after now or not after the message is due, a retry policy's
 * values) and names them. A negative `notBefore` is refused here: the C call reads any
 * negative not_before as "none", which would pass it over silently; so are a `ttl` or an
 * `expiresAt` of 0, which the C call reads as "never", and a retry policy's 0s (retryPolicy).
 */
function delivery(prefix, { key, delay, notBefore, unique, ttl, expiresAt, retry }) {
  return {
    size: DELIVERY_SIZE,
    key: checkString(`${prefix}key`, key, { nullable: true }),
    delay: checkNumber(`${prefix}delay`, delay === undefined ? 0 : delay),
    not_before: instant(`${prefix}notBefore`, notBefore),
    ...uniqueFields(`${prefix}unique`, unique),
    ttl: expiry(`${prefix}ttl`, ttl, 'a number of seconds > 0'),
    expires_at: expiry(`${prefix}expiresAt`, expiresAt, 'epoch seconds > 0'),
    ...retryFields(`${prefix}retry`, retry),
  };
}

/** The `retry` option (retryPolicy) as the harel_delivery's retry_base, _factor, _cap and _jitter. */
function retryFields(name, retry) {
  const { base, factor, cap, jitter } = retryPolicy(name, retry);
  return { retry_base: base, retry_factor: factor, retry_cap: cap, retry_jitter: jitter };
}

/**
 * A retry policy ({ base, factor?, cap?, jitter? }, or null for none): the open option
 * `retry` (harel_options_set_retry's arguments) and a message's (harel_delivery's retry
 * fields), named `name` ('retry', 'messages[3].retry'). As C takes them: base 0 for none,
 * factor and cap 0 for the library's defaults (2; an hour, or the base if longer), jitter a
 * harel_jitter. Refused here, as C would read them otherwise: a missing `base`, a non-number,
 * an unknown jitter, and a base, factor or cap of 0 given (C reads them as none or as the
 * default), with the library's own message for that value. The ranges (base 0.001..ten
 * years, factor 1..16, cap from base to ten years, all finite) are the library's to check.
 */
function retryPolicy(name, retry) {
  if (retry === undefined || retry === null) return { base: 0, factor: 0, cap: 0, jitter: 0 };
  const r = checkOptions(name, retry, RETRY_OPTIONS);
  const number = (field, what) => {
    const value = r[field];
    if (typeof value !== 'number') throw argumentError(`${name}.${field} must be ${what}, got ${describe(value)}`);
    return value;
  };
  const base = number('base', 'a number of seconds');
  if (base === 0) {
    throw argumentError(`${name}.base is 0; it must be finite seconds, ${MIN_RETRY_BASE}..${MAX_DELAY} (ten years)`);
  }
  const factor = r.factor === undefined ? 0 : number('factor', 'a number');
  if (r.factor !== undefined && factor === 0) {
    throw argumentError(`${name}.factor is 0; it must be finite, 1..${MAX_RETRY_FACTOR}`);
  }
  const cap = r.cap === undefined ? 0 : number('cap', 'a number of seconds');
  if (r.cap !== undefined && cap === 0) {
    throw argumentError(`${name}.cap is 0; it must be finite seconds, from base (${base}) to ${MAX_DELAY} (ten years)`);
  }
  const jitter = r.jitter === undefined ? 0 : JITTERS.indexOf(r.jitter);
  if (jitter < 0) throw argumentError(`${name}.jitter must be 'full', 'equal' or 'none', got ${describe(r.jitter)}`);
  return { base, factor, cap, jitter };
}

/**
 * `ttl` or `expiresAt` as the C field: a number, 0 for none (undefined or null). A 0 given
 * is refused (C would read it as never); NaN, negative or too large are the library's.
 */
function expiry(name, value, what) {
  if (value === undefined || value === null) return 0;
  if (typeof value !== 'number') {
    const hint = value instanceof Date ? ' (for a Date, pass date.getTime() / 1000)' : '';
    throw argumentError(`${name} must be ${what} as a number, or null for none, got ${describe(value)}${hint}`);
  }
  if (value === 0) throw argumentError(`${name} must be ${what}, or null for none, got ${describe(value)}`);
  return value;
}

/**
 * The `unique` option ({ key, mode?, delay?, maxDelay? }, or null for none) as the
 * harel_delivery's unique_key, unique_mode, debounce_delay and debounce_max_delay. Refused
 * here, as the C struct would pass them over silently: a missing key (a NULL unique_key is
 * no unique key), an unknown mode (a typo would be a keep), and a delay or maxDelay
 * without mode 'debounce' (the other modes never read them).
 */
function uniqueFields(name, unique) {
  const none = { unique_key: null, unique_mode: 0, debounce_delay: 0, debounce_max_delay: 0 };
  if (unique === undefined || unique === null) return none;
  const u = checkOptions(name, unique, UNIQUE_OPTIONS);
  const mode = u.mode === undefined ? 0 : UNIQUE_MODES.indexOf(u.mode);
  if (mode < 0) {
    throw argumentError(`${name}.mode must be 'keep', 'replace' or 'debounce', got ${describe(u.mode)}`);
  }
  const fields = { ...none, unique_key: checkString(`${name}.key`, u.key), unique_mode: mode };
  if (mode !== DEBOUNCE) {
    for (const option of ['delay', 'maxDelay']) {
      if (u[option] !== undefined) {
        throw argumentError(`${name}.${option} is for mode 'debounce' only; this unique key's mode is '${UNIQUE_MODES[mode]}'`);
      }
    }
    return fields;
  }
  fields.debounce_delay = checkNumber(`${name}.delay`, u.delay === undefined ? 0 : u.delay);
  fields.debounce_max_delay = checkNumber(`${name}.maxDelay`, u.maxDelay === undefined ? MAX_DELAY : u.maxDelay);
  return fields;
}

/** notBefore as the C not_before: epoch seconds, or -1 for none (undefined or null). */
function instant(name, value) {
  if (value === undefined || value === null) return -1;
  if (typeof value !== 'number') {
    const hint = value instanceof Date ? ' (for a Date, pass date.getTime() / 1000)' : '';
    throw argumentError(`${name} must be epoch seconds as a number, or null, got ${describe(value)}${hint}`);
  }
  if (value < 0) throw argumentError(`${name} must be epoch seconds >= 0, or null for none, got ${describe(value)}`);
  return value;
}

/** A seq the library wrote into an int64_t: a Number, a BigInt only past 2^53 - 1 (as a lease's). */
function seqValue(seq) {
  if (typeof seq !== 'bigint') return seq;
  return seq <= BigInt(Number.MAX_SAFE_INTEGER) && seq >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(seq) : seq;
}

/**
 * What became of one message of publishWith or publishManyWith, from its seq and its
 * harel_published: stored (0), a duplicate (1: nothing stored) or replaced (2: nothing new
 * stored; the pending message took its event and headers), which is a duplicate too.
 */
function outcome(seq, published) {
  return Object.freeze({ seq: seqValue(seq), duplicate: published !== 0, replaced: published === 2 });
}

module.exports = {
  PUBLISH_OPTIONS, DELIVERY_OPTIONS, PUBLISH_WITH_OPTIONS, messageStruct, delivery, retryPolicy, outcome,
};
