'use strict';
// Publishing: publish and publishMany, and publishWith and publishManyWith (an idempotency
// key, a delay or a due instant, a unique key, an expiry, a retry policy per message, and each message's outcome,
// through harel_transport_publish_delivery and _publish_many_delivery). Each takes a
// message's headers (lib/headers.js); with tracing on (lib/tracing.js) each makes a
// PRODUCER span, whose context the messages' headers carry.

const { argumentError } = require('../errors');
const { checkOptions, describe } = require('../args');
const { callChecked } = require('../calls');
const { PUBLISH_OPTIONS, DELIVERY_OPTIONS, PUBLISH_WITH_OPTIONS, messageStruct, delivery, outcome } = require('../message');
const { headerPairs, headerArgs, headerStructs } = require('../headers');
const { publishing } = require('../tracing');
const { call, tracingOf } = require('../transport');

const MESSAGE_FIELDS = ['groupId', 'event', ...PUBLISH_OPTIONS];
const MESSAGE_WITH_FIELDS = [...MESSAGE_FIELDS, ...DELIVERY_OPTIONS];
const MESSAGE_SHAPE = 'groupId, event, priority?, routingKey?, headers?';
const MESSAGE_WITH_SHAPE =
  'groupId, event, priority?, routingKey?, headers?, key?, delay?, notBefore?, unique?, ttl?, expiresAt?, retry?';

function noop() {}

/** The element `i` of a batch's array, checked to be an object of `fields`. */
function batchObject(message, i, fields, shape) {
  const name = `messages[${i}]`;
  if (message === null || typeof message !== 'object' || Array.isArray(message)) {
    throw argumentError(`${name} must be an object { ${shape} }, got ${describe(message)}`);
  }
  return checkOptions(name, message, fields);
}

/**
 * One message's headers, with its PRODUCER span when `transport` traces: `[span, pairs]`
 * (span null when it does not; pairs null for none).
 */
function traced(transport, groupId, pairs) {
  const tracing = tracingOf(transport);
  return tracing === null ? [null, pairs] : tracing.startPublish(groupId, pairs);
}

/**
 * A batch's headers, with its one PRODUCER span when `transport` traces: `[span, lists]`,
 * lists the C array of harel_headers (one per message), or null when no message has any.
 */
function tracedBatch(transport, structs, pairsList) {
  const tracing = tracingOf(transport);
  let span = null;
  if (tracing !== null) [span, pairsList] = tracing.startBatch(structs.map((m) => m.group_id), pairsList);
  if (!pairsList.some((pairs) => pairs !== null && pairs.length > 0)) return [span, null];
  return [span, pairsList.map((pairs) => {
    const items = headerStructs(pairs);
    return { items, n: items === null ? 0 : items.length };
  })];
}

/** `promise` (a publish), ending `span` (when there is one) as it settles. */
function spanned(span, promise, seqOf) {
  return span === null ? promise : publishing(span, promise, seqOf);
}

module.exports = {
  /** Appends `event` (an object, serialized with JSON.stringify, or a JSON text) to the group's FIFO. */
  publish(groupId, event, options = {}) {
    return call(this, 'publish', true, () => {
      const o = checkOptions('options', options, PUBLISH_OPTIONS);
      const m = messageStruct('', groupId, event, o);
      const [span, pairs] = traced(this, m.group_id, headerPairs('', o.headers));
      const [headers, n] = headerArgs(pairs);
      return (f, handle) => spanned(span, headers === null
        ? callChecked(f, 'publish', f.publish, [handle, m.group_id, m.event_json, m.priority, m.routing_key])
        : callChecked(f, 'publish', f.publishHeaders, [handle, m.group_id, m.event_json, m.priority, m.routing_key, headers, n]),
      ).then(noop);
    });
  },

  /**
   * Appends `messages` ({ groupId, event, priority?, routingKey?, headers? } each, as
   * publish takes them) in order, in one transaction: all of them or none, with one commit
   * for the batch. With headers, publish_many_with_headers without delivery options.
   */
  publishMany(messages) {
    return call(this, 'publishMany', true, () => {
      if (!Array.isArray(messages)) throw argumentError(`messages must be an array, got ${describe(messages)}`);
      const n = messages.length;
      const structs = [];
      const pairsList = [];
      for (let i = 0; i < n; i++) { // every index, a hole too (map would skip it)
        const m = batchObject(messages[i], i, MESSAGE_FIELDS, MESSAGE_SHAPE);
        structs.push(messageStruct(`messages[${i}].`, m.groupId, m.event, m));
        pairsList.push(headerPairs(`messages[${i}].`, m.headers));
      }
      const [span, lists] = tracedBatch(this, structs, pairsList);
      return (f, handle) => spanned(span, lists === null
        ? callChecked(f, 'publishMany', f.publishMany, [handle, n ? structs : null, n])
        : callChecked(f, 'publishMany', f.publishManyWithHeaders, [handle, structs, n, lists, null, null, null, null, null]),
      ).then(noop);
    });
  },

  /**
   * publish with delivery options: `key` (an idempotency key: a key seen within the
   * queue's keyRetention stores nothing and resolves the first message's seq with
   * duplicate true), `delay` (seconds) and `notBefore` (epoch seconds by the transport's
   * clock): not delivered before the later of now + delay and notBefore, keeping its place
   * in its group's FIFO; `unique` ({ key, mode?, delay?, maxDelay? }: while a message with
   * that unique key is pending, the publish stores nothing new and resolves its seq with
   * duplicate true, replaced true when mode 'replace' or 'debounce' gave it this event);
   * `ttl` (seconds) and `expiresAt` (epoch seconds by the transport's clock; with both, the
   * earlier): a message no worker has by then is moved to the dead letters with the reason
   * 'expired' by a claim; `retry` ({ base, factor?, cap?, jitter? }: the message's own
   * retry policy, in place of the queue's). Resolves `{ seq, duplicate, replaced }`. Its own
   * transaction (no group commit).
   */
  publishWith(groupId, event, options = {}) {
    return call(this, 'publishWith', true, () => {
      const o = checkOptions('options', options, PUBLISH_WITH_OPTIONS);
      const m = messageStruct('', groupId, event, o);
      const d = delivery('', o);
      const [span, pairs] = traced(this, m.group_id, headerPairs('', o.headers));
      const [headers, n] = headerArgs(pairs);
      return (f, handle) => {
        const seq = [0];
        const published = [0];
        const done = callChecked(f, 'publishWith', f.publishDelivery, [
          handle, m.group_id, m.event_json, m.priority, m.routing_key, headers, n, d, seq, published,
        ]);
        return spanned(span, done.then(() => outcome(seq[0], published[0])), (result) => result.seq);
      };
    });
  },

  /**
   * publishMany with publishWith's options per message ({ groupId, event, priority?,
   * routingKey?, headers?, key?, delay?, notBefore?, unique?, ttl?, expiresAt?, retry? }), in
   * one transaction: every
   * message stored or found a duplicate (or replaced), or nothing written. A key or unique
   * key met earlier in the batch makes the later message a duplicate of the earlier one.
   * Resolves one `{ seq, duplicate, replaced }` per message, in order.
   */
  publishManyWith(messages) {
    return call(this, 'publishManyWith', true, () => {
      if (!Array.isArray(messages)) throw argumentError(`messages must be an array, got ${describe(messages)}`);
      const n = messages.length;
      const structs = [];
      const deliveries = [];
      const pairsList = [];
      for (let i = 0; i < n; i++) { // every index, a hole too: the C arrays are n long
        const m = batchObject(messages[i], i, MESSAGE_WITH_FIELDS, MESSAGE_WITH_SHAPE);
        structs.push(messageStruct(`messages[${i}].`, m.groupId, m.event, m));
        pairsList.push(headerPairs(`messages[${i}].`, m.headers));
        deliveries.push(delivery(`messages[${i}].`, m));
      }
      const [span, lists] = tracedBatch(this, structs, pairsList);
      return (f, handle) => {
        const seqs = new BigInt64Array(n);
        const outcomes = new Int32Array(n);
        const done = n === 0
          ? callChecked(f, 'publishManyWith', f.publishManyDelivery, [handle, null, 0, null, null, null, null])
          : callChecked(f, 'publishManyWith', f.publishManyDelivery, [handle, structs, n, lists, deliveries, seqs, outcomes]);
        return spanned(span, done.then(() => Array.from(seqs, (seq, i) => outcome(seq, outcomes[i]))));
      };
    });
  },
};
