'use strict';
// A message's arguments as the C publishes take them, checked: publish's and publishWith's
// (lib/methods/publish.js) and a transaction's (lib/tx.js); and what became of a message.

const { argumentError } = require('./errors');
const { checkString, checkInteger, checkNumber, describe } = require('./args');

// `headers`: the message's [name, value] pairs (lib/headers.js), beside the harel_message.
const PUBLISH_OPTIONS = ['priority', 'routingKey', 'headers'];
const DELIVERY_OPTIONS = ['key', 'delay', 'notBefore'];
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
 * A message's delivery options as the C arguments key, delay and not_before, checked for
 * their types only: the library checks the values (an empty or over-long key, a delay or
 * instant out of range) and names them. A negative `notBefore` is refused here: the C call
 * reads any negative not_before as "none", which would pass it over silently.
 */
function delivery(prefix, { key, delay, notBefore }) {
  return {
    key: checkString(`${prefix}key`, key, { nullable: true }),
    delay: checkNumber(`${prefix}delay`, delay === undefined ? 0 : delay),
    notBefore: instant(`${prefix}notBefore`, notBefore),
  };
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

/** What became of one message of publishWith or publishManyWith. */
function outcome(seq, duplicate) {
  return Object.freeze({ seq: seqValue(seq), duplicate: duplicate !== 0 });
}

module.exports = { PUBLISH_OPTIONS, DELIVERY_OPTIONS, PUBLISH_WITH_OPTIONS, messageStruct, delivery, outcome };
