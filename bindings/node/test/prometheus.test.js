'use strict';
// examples/prometheus.js: two transports registered on a prom-client Registry, scraped
// after known calls; the exposition text parsed and its values checked; a closed
// transport fails the scrape.

const assert = require('node:assert/strict');
const { test } = require('node:test');
const { Registry } = require('prom-client');
const { Transport } = require('..');
const { registerTransportMetrics } = require('../examples/prometheus');

/** The exposition's samples: `name{labels}` → value, and each family's # TYPE. */
function parse(text) {
  const samples = new Map();
  const types = new Map();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) types.set(type[1], type[2]);
    const sample = /^([a-z_]+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (sample) samples.set(sample[1] + (sample[2] || ''), Number(sample[3]));
  }
  return { samples, types };
}

test('prometheus: the registry exposes each transport\'s metrics at each scrape', async () => {
  const orders = await Transport.open(':memory:');
  const idle = await Transport.open(':memory:');
  const registry = new Registry();
  registerTransportMetrics(registry, [
    { transport: orders, labels: { queue: 'orders' } },
    { transport: idle, labels: { queue: 'idle' } },
  ]);
  await orders.publishMany([{ groupId: 'a', event: {} }, { groupId: 'b', event: {} }, { groupId: 'c', event: {} }]);
  const [a, b, c] = await orders.claimMany('w', { max: 3 });
  await orders.ack(a);
  await assert.rejects(orders.ack(a), { code: 'HAREL_ERR_LEASE_LOST' });
  await orders.nack(b);
  await orders.nack(c, { delay: 60 });
  await orders.deadLetter(await orders.claim('w'), 'poison');

  const { samples, types } = parse(await registry.metrics());
  const want = {
    'harel_transport_published_messages_total{queue="orders"}': 3,
    'harel_transport_claimed_messages_total{queue="orders"}': 4,
    'harel_transport_acked_messages_total{queue="orders"}': 1,
    'harel_transport_nacked_messages_total{queue="orders",delay="none"}': 1,
    'harel_transport_nacked_messages_total{queue="orders",delay="parked"}': 1,
    'harel_transport_dead_lettered_messages_total{queue="orders",by="worker"}': 1,
    'harel_transport_dead_lettered_messages_total{queue="orders",by="claim"}': 0,
    'harel_transport_lost_leases_total{queue="orders"}': 1,
    'harel_transport_busy_retries_total{queue="orders"}': 0,
    'harel_transport_limit_holds_total{queue="orders"}': 0,
    'harel_transport_published_messages_total{queue="idle"}': 0,
    'harel_transport_call_duration_seconds_count{queue="orders",operation="publish"}': 1,
    'harel_transport_call_duration_seconds_count{queue="orders",operation="claim"}': 2,
    'harel_transport_call_duration_seconds_bucket{queue="orders",operation="ack",le="+Inf"}': 2,
    'harel_transport_call_duration_seconds_count{queue="orders",operation="nack"}': 2,
    'harel_transport_call_duration_seconds_count{queue="orders",operation="dead_letter"}': 1,
    'harel_transport_call_duration_seconds_count{queue="orders",operation="claim_wait"}': 0,
    'harel_transport_call_duration_seconds_count{queue="idle",operation="publish"}': 0,
  };
  for (const [sample, value] of Object.entries(want)) assert.equal(samples.get(sample), value, sample);
  assert.equal(types.get('harel_transport_call_duration_seconds'), 'histogram');
  assert.equal(types.get('harel_transport_nacked_messages_total'), 'counter');

  // the buckets are the library's, cumulative, 16 bounds and +Inf
  const m = orders.metrics().latency.claim;
  const buckets = [...m.bounds.map(String), '+Inf'].map((le) =>
    samples.get(`harel_transport_call_duration_seconds_bucket{queue="orders",operation="claim",le="${le}"}`));
  assert.deepEqual(buckets, [...m.buckets, m.count]);
  assert.equal(samples.get('harel_transport_call_duration_seconds_sum{queue="orders",operation="claim"}'), m.sum);

  // read again at the next scrape
  await orders.publish('d', {});
  assert.equal(parse(await registry.metrics()).samples.get('harel_transport_published_messages_total{queue="orders"}'), 4);

  await idle.close();
  await assert.rejects(registry.metrics(), { code: 'HAREL_ERR_CLOSED' });
  await orders.close();
});
