'use strict';
// Publishing: publish and publishMany.

const { argumentError } = require('../errors');
const { checkString, checkInteger, checkOptions, describe } = require('../args');
const { callChecked } = require('../calls');
const { call } = require('../transport');

const PUBLISH_OPTIONS = ['priority', 'routingKey'];
const MESSAGE_FIELDS = ['groupId', 'event', ...PUBLISH_OPTIONS];

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

/** The harel_message of element `i` of publishMany's array. */
function batchElement(message, i) {
  const name = `messages[${i}]`;
  if (message === null || typeof message !== 'object' || Array.isArray(message)) {
    throw argumentError(`${name} must be an object { groupId, event, priority?, routingKey? }, got ${describe(message)}`);
  }
  const m = checkOptions(name, message, MESSAGE_FIELDS);
  return messageStruct(`${name}.`, m.groupId, m.event, m);
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
      const structs = messages.map(batchElement);
      return async (f, handle) => {
        await callChecked(f, 'publishMany', f.publishMany, [handle, structs.length ? structs : null, structs.length]);
      };
    });
  },
};
