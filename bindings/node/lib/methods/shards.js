'use strict';
// A queue sharded over several databases (Transport.openShards): how many it is over.

const { callCheckedHere } = require('../calls');
const { load } = require('../native');
const { handleNow } = require('../transport');

module.exports = {
  /**
   * The number of databases this transport's queue is sharded over (1 when it was opened
   * with open, or openShards of one database). Synchronous, like metrics(): the library
   * reads it in memory. Throws HAREL_ERR_CLOSED after close().
   */
  get shardCount() {
    const handle = handleNow(this, 'shardCount');
    const f = load();
    const out = [0];
    callCheckedHere(f, 'shardCount', f.shardCount, [handle, out]);
    return Number(out[0]);
  },
};
