'use strict';
// Publishing: publish and publishMany, and publishWith and publishManyWith (an idempotency
// key, a delay or a due instant per message, and each message's outcome).

const { argumentError } = require('../errors');
const { checkOptions, describe } = require('../args');
const { callChecked } = require('../calls');
const { PUBLISH_OPTIONS, DELIVERY_OPTIONS, PUBLISH_WITH_OPTIONS, messageStruct, delivery, outcome } = require('../message');
const { call } = require('../transport');

const MESSAGE_FIELDS = ['groupId', 'event', ...PUBLISH_OPTIONS];
const MESSAGE_WITH_FIELDS = [...MESSAGE_FIELDS, ...DELIVERY_OPTIONS];

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
