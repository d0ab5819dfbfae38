'use strict';
// Exports Transports' metrics with prom-client: metric families registered on a Registry
// that read `t.metrics()` at each scrape (synchronous: it reads memory only). The same
// names and labels as examples/go-prometheus and the Python binding's collector.
//
//   const { register } = require('prom-client');
//   registerTransportMetrics(register, [{ transport: queue, labels: { queue: 'orders' } }]);
//   http.createServer(async (req, res) => res.end(await register.metrics())).listen(9464);
//
// prom-client's own Counter and Histogram keep their values themselves (a Histogram
// observes one duration at a time, into buckets of its own), while the library's are
// already counted and bucketed. So each family here is an object of the interface a
// Registry takes from its metrics — name, help, type and get() — whose get() hands the
// library's values over as they are.

const PREFIX = 'harel_transport_';
const DURATION = `${PREFIX}call_duration_seconds`;

// name, help, and the samples of one transport's metrics: [labels, value] pairs.
const COUNTERS = [
  ['published_messages_total', 'Messages published (committed).', (m) => [[{}, m.published]]],
  ['claimed_messages_total', 'Leases handed out by claims.', (m) => [[{}, m.claimed]]],
  ['acked_messages_total', 'Messages acked.', (m) => [[{}, m.acked]]],
  ['nacked_messages_total', 'Messages given back: at once (delay none) or parked.', (m) => [
    [{ delay: 'none' }, m.nacked],
    [{ delay: 'parked' }, m.parked],
  ]],
  ['dead_lettered_messages_total', 'Messages moved to the dead letters by a worker or by a claim.', (m) => [
    [{ by: 'worker' }, m.deadLettered],
    [{ by: 'claim' }, m.deadLetteredByClaim],
  ]],
  ['lost_leases_total', 'Acks, nacks, extends and dead letters refused: the lease was lost.', (m) => [[{}, m.lostLeases]]],
  ['busy_retries_total', 'Pauses after the database answered busy.', (m) => [[{}, m.busyRetries]]],
  ['limit_holds_total', 'Groups a claim passed over and held: their routing key had no room.', (m) => [
    [{}, m.limitHolds],
  ]],
];

/** claimWait → claim_wait: the operation label the other bindings' exporters give. */
function snake(name) {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** One transport's histograms as Prometheus samples: cumulative buckets, +Inf, sum, count. */
function durationSamples(m, labels) {
  const samples = [];
  for (const [op, h] of Object.entries(m.latency)) {
    const l = { ...labels, operation: snake(op) };
    h.bounds.forEach((le, i) => samples.push({ metricName: `${DURATION}_bucket`, labels: { ...l, le }, value: h.buckets[i] }));
    samples.push(
      { metricName: `${DURATION}_bucket`, labels: { ...l, le: '+Inf' }, value: h.count },
      { metricName: `${DURATION}_sum`, labels: l, value: h.sum },
      { metricName: `${DURATION}_count`, labels: l, value: h.count },
    );
  }
  return samples;
}

/**
 * Registers on `registry` (prom-client's `register`, or a `new Registry()`) the counters
 * and the `harel_transport_call_duration_seconds` histogram (by `operation`) of `sources`, an array
 * of `{ transport, labels }`: `labels` (a queue's name, say) tell the transports apart.
 * A closed transport fails the scrape (register.metrics() rejects with HAREL_ERR_CLOSED).
 */
function registerTransportMetrics(registry, sources) {
  const family = (name, help, type, samples) => {
    // aggregator: for prom-client's cluster registry, where the workers' counts add up.
    const meta = { name, help, type, aggregator: 'sum' };
    const values = () => sources.flatMap(({ transport, labels = {} }) => samples(transport.metrics(), labels));
    registry.registerMetric({ ...meta, get: () => ({ ...meta, values: values() }) });
  };
  for (const [name, help, pairs] of COUNTERS) {
    family(`${PREFIX}${name}`, help, 'counter', (m, labels) =>
      pairs(m).map(([own, value]) => ({ labels: { ...labels, ...own }, value })));
  }
  family(DURATION, "Duration of the transport's calls, by operation.", 'histogram', durationSamples);
}

module.exports = { registerTransportMetrics };
