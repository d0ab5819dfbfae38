'use strict';
// What a transport counted since it was opened (issue 25): the library's harel_metrics,
// copied into a frozen plain object with the C names in camelCase.

const koffi = require('koffi');
const { load, MetricsType, METRICS_COUNTERS, METRICS_COUNTERS_AT_END, METRICS_OPERATIONS } = require('../native');
const { callCheckedHere } = require('../calls');
const { handleNow } = require('../transport');

const COUNTERS = [...METRICS_COUNTERS, ...METRICS_COUNTERS_AT_END];

/** dead_lettered_by_claim → deadLetteredByClaim */
function camel(name) {
  return name.replace(/_(.)/g, (_, c) => c.toUpperCase());
}

/**
 * The metrics the library handed out, as numbers (like the stats' counts: exact up to
 * 2^53 - 1, which a counter of one process never reaches); `ptr` is freed.
 */
function takeMetrics(f, ptr) {
  try {
    const raw = koffi.decode(ptr, MetricsType);
    const bounds = Object.freeze(raw.bounds); // one array, shared by every histogram
    const histogram = (h) => Object.freeze({
      bounds,
      buckets: Object.freeze(h.buckets.map(Number)),
      count: Number(h.count),
      sum: h.sum,
    });
    return Object.freeze({
      // every counter, those the struct gained at its end (after the histograms) too
      ...Object.fromEntries(COUNTERS.map((name) => [camel(name), Number(raw[name])])),
      latency: Object.freeze(Object.fromEntries(METRICS_OPERATIONS.map((name) => [camel(name), histogram(raw[name])]))),
    });
  } finally {
    f.metricsFree(ptr);
  }
}

module.exports = {
  /**
   * What this transport counted since it was opened. Synchronous, unlike the calls that
   * touch the database: the library reads counters in memory (no I/O, no lock, never
   * busy), which takes less than a trip to the thread pool would.
   */
  metrics() {
    const handle = handleNow(this, 'metrics');
    const f = load();
    const out = [null];
    callCheckedHere(f, 'metrics', f.metrics, [handle, out]);
    return takeMetrics(f, out[0]);
  },
};
