'use strict';
// Publishing: publish and publishMany, and publishWith and publishManyWith (an idempotency
// key, a delay or a due instant per message, and each message's outcome).

const { argumentError } = require('../errors');
const { checkString, checkInteger, checkNumber, checkOptions, describe } = require('../args');
const { callChecked } = require('../calls');
const { call } = require('../transport');

const PUBLISH_OPTIONS = ['priority', 'routingKey'];
const MESSAGE_FIELDS = ['groupId', 'event', ...PUBLISH_OPTIONS];
const DELIVERY_OPTIONS = ['key', 'delay', 'notBefore'];
const PUBLISH_WITH_OPTIONS = [...PUBLISH_OPTIONS, ...DELIVERY_OPTIONS];
const MESSAGE_WITH_FIELDS = [...MESSAGE_FIELDS, ...DELIVERY_OPTIONS];

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

/** The element `i` of a batch's array, checked to be an object of `fields`. */
function batchObject(message, i, fields, shape) {
  const name = `messages[${i}]`;
  if (message === null || typeof message !== 'object' || Array.isArray(message)) {
    throw argumentError(`${name} must be an object { ${shape} }, got ${describe(message)}`);
  }
  return checkOptions(name, message, fields);
}

/** The harel_message of element `i` of publishMany's array. */
function batchElement(message, i) {
  const m = batchObject(message, i, MESSAGE_FIELDS, 'groupId, event, priority?, routingKey?');
  return messageStruct(`messages[${i}].`, m.groupId, m.event, m);
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

module.exports = {
  /** Appends `event` (an object, serialized with JSON.stringify, or a JSON text) to the group's FIFO. */
  publish(groupId, event, options = {}) {
    return call(this, 'publish', true, () => {
      const m = messageStruct('', groupId, event, checkOptions('options', options, PUBLISH_OPTIONS));
      return async (f, handle) => {
        await callChecked(f, 'publish', f.publish, [handle, m.group_id, m.event_json, m.priority, m.routing_key]);
      };
    });
  },

  /**
   * Appends `messages` ({ groupId, event, priority?, routingKey? } each, as publish takes
   * them) in order, in one transaction: all of them or none, with one commit for the batch.
   */
  publishMany(messages) {
    return call(this, 'publishMany', true, () => {
      if (!Array.isArray(messages)) throw argumentError(`messages must be an array, got ${describe(messages)}`);
      const structs = Array.from(messages, batchElement); // a hole too (map would skip it)
      return async (f, handle) => {
        await callChecked(f, 'publishMany', f.publishMany, [handle, structs.length ? structs : null, structs.length]);
      };
    });
  },

  /**
   * publish with delivery options: `key` (an idempotency key: a key seen within the
   * queue's keyRetention stores nothing and resolves the first message's seq with
   * duplicate true), `delay` (seconds) and `notBefore` (epoch seconds by the transport's
   * clock): not delivered before the later of now + delay and notBefore, keeping its place
   * in its group's FIFO. Resolves `{ seq, duplicate }`. Its own transaction (no group commit).
   */
  publishWith(groupId, event, options = {}) {
    return call(this, 'publishWith', true, () => {
      const o = checkOptions('options', options, PUBLISH_WITH_OPTIONS);
      const m = messageStruct('', groupId, event, o);
      const d = delivery('', o);
      return async (f, handle) => {
        const seq = [0];
        const duplicate = [0];
        await callChecked(f, 'publishWith', f.publishWith, [
          handle, m.group_id, m.event_json, m.priority, m.routing_key, d.key, d.delay, d.notBefore, seq, duplicate,
        ]);
        return outcome(seq[0], duplicate[0]);
      };
    });
  },

  /**
   * publishMany with publishWith's options per message ({ groupId, event, priority?,
   * routingKey?, key?, delay?, notBefore? }), in one transaction: every message stored or
   * found a duplicate, or nothing written. A key met earlier in the batch makes the later
   * message a duplicate of the earlier one. Resolves one `{ seq, duplicate }` per message,
   * in order.
   */
  publishManyWith(messages) {
    return call(this, 'publishManyWith', true, () => {
      if (!Array.isArray(messages)) throw argumentError(`messages must be an array, got ${describe(messages)}`);
      const n = messages.length;
      const structs = [];
      const keys = [];
      const delays = new Float64Array(n);
      const notBefore = new Float64Array(n);
      for (let i = 0; i < n; i++) { // every index, a hole too: the C arrays are n long
        const shape = 'groupId, event, priority?, routingKey?, key?, delay?, notBefore?';
        const m = batchObject(messages[i], i, MESSAGE_WITH_FIELDS, shape);
        structs.push(messageStruct(`messages[${i}].`, m.groupId, m.event, m));
        const d = delivery(`messages[${i}].`, m);
        keys.push(d.key);
        delays[i] = d.delay;
        notBefore[i] = d.notBefore;
      }
      return async (f, handle) => {
        const seqs = new BigInt64Array(n);
        const duplicates = new Int32Array(n);
        const keyed = keys.some((k) => k !== null);
        await callChecked(f, 'publishManyWith', f.publishManyWith, n === 0
          ? [handle, null, 0, null, null, null, null, null]
          : [handle, structs, n, keyed ? keys : null, delays, notBefore, seqs, duplicates]);
        return Array.from(seqs, (seq, i) => outcome(seq, duplicates[i]));
      };
    });
  },
};
