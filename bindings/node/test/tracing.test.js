'use strict';
// OpenTelemetry (issue 37; /work spec "OpenTelemetry in each face"): the open options
// tracerProvider and traceAsParent, with the SDK's in-memory exporter. A PRODUCER span per
// publish, whose ids the message's traceparent header carries (written by the library's
// harel_traceparent_format); a CONSUMER span per lease handed out, linked to the
// producer's context (or its child with traceAsParent), ended by ack (OK), nack (event and
// error), deadLetter, a lost lease; extend's event; batch claims; a transaction's publish
// ending at its commit; an invalid traceparent ignored; nothing at all when off; the
// package loading without @opentelemetry/api; calls still off the event loop.

const assert = require('node:assert/strict');
const path = require('node:path');
const { AsyncLocalStorage } = require('node:async_hooks');
const { execFile } = require('node:child_process');
const { test } = require('node:test');
const api = require('@opentelemetry/api');
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { Transport, leaseSpan } = require('..');
const { scratch, manualClock, rejectsWith, holdWriteLock } = require('./helpers');

const box = scratch();
const { SpanKind, SpanStatusCode, context, trace } = api;

// A context manager on AsyncLocalStorage (what @opentelemetry/context-async-hooks does), so
// that context.with() reaches the publish made inside it.
class AlsContextManager {
  #als = new AsyncLocalStorage();
  active() {
    return this.#als.getStore() || api.ROOT_CONTEXT;
  }
  with(ctx, fn, thisArg, ...args) {
    return this.#als.run(ctx, () => fn.call(thisArg, ...args));
  }
  bind(ctx, target) {
    return typeof target === 'function' ? (...args) => this.with(ctx, target, undefined, ...args) : target;
  }
  enable() {
    return this;
  }
  disable() {
    this.#als.disable();
    return this;
  }
}
context.setGlobalContextManager(new AlsContextManager());

/** A provider with an in-memory exporter: `spans()` the finished ones. */
function tracer() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return { provider, exporter, spans: () => exporter.getFinishedSpans() };
}

/** The traceparent a span's context makes: version 00, sampled. */
function traceparentOf(span) {
  const { traceId, spanId, traceFlags } = span.spanContext();
  return `00-${traceId}-${spanId}-0${traceFlags}`;
}

function header(lease, name) {
  return lease.headers.filter(([n]) => n === name).map(([, v]) => v);
}

const PRODUCER_ATTRIBUTES = {
  'messaging.system': 'harel',
  'messaging.destination.name': 'harel',
  'messaging.operation.type': 'send',
  'messaging.operation.name': 'publish',
};
const CONSUMER_ATTRIBUTES = {
  'messaging.system': 'harel',
  'messaging.destination.name': 'harel',
  'messaging.operation.type': 'process',
  'messaging.operation.name': 'process',
};

test('publish: a PRODUCER span, child of the active context, whose ids the traceparent header carries', async () => {
  const { provider, spans } = tracer();
  const t = await Transport.open(box.db(), { tracerProvider: provider });
  const app = provider.getTracer('app');
  const parent = app.startSpan('request');
  await context.with(trace.setSpan(context.active(), parent), () => t.publish('order-17', { n: 1 }, {
    headers: [['before', '1'], ['traceparent', 'the caller\'s, replaced'], ['after', '2'], ['traceparent', 'dropped']],
  }));
  parent.end();
  const [producer] = spans().filter((s) => s.kind === SpanKind.PRODUCER);
  assert.equal(producer.name, 'publish harel');
  assert.equal(producer.spanContext().traceId, parent.spanContext().traceId, 'in the caller\'s trace');
  assert.equal(producer.parentSpanContext.spanId, parent.spanContext().spanId, 'a child of the active span');
  assert.deepEqual(producer.attributes, { ...PRODUCER_ATTRIBUTES, 'messaging.message.conversation_id': 'order-17' });
  assert.equal(producer.status.code, SpanStatusCode.UNSET);
  assert.ok(producer.ended);

  const lease = await t.claim('w');
  assert.deepEqual(lease.headers.map(([n]) => n), ['before', 'traceparent', 'after'], 'the caller\'s traceparent replaced in its place');
  assert.deepEqual(header(lease, 'traceparent'), [traceparentOf(producer)]);
  assert.equal(header(lease, 'traceparent')[0].length, 55);
  assert.deepEqual(header(lease, 'tracestate'), [], 'no tracestate: the context has none');
  await t.ack(lease);
  await t.close();
});

test('the context\'s tracestate goes into a tracestate header; publishWith adds the message id', async () => {
  const { provider, spans } = tracer();
  const t = await Transport.open(box.db(), { tracerProvider: provider, prefix: 'shop' });
  const remote = {
    traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1, isRemote: true,
    traceState: api.createTraceState('vendor=abc,other=x y'),
  };
  const ctx = trace.setSpanContext(api.ROOT_CONTEXT, remote);
  const published = await context.with(ctx, () => t.publishWith('g', {}, { headers: [['tracestate', 'stale=1']] }));
  const [producer] = spans();
  assert.equal(producer.name, 'publish shop', 'the queue is the prefix');
  assert.equal(producer.spanContext().traceId, remote.traceId);
  assert.equal(producer.parentSpanContext.spanId, remote.spanId);
  assert.deepEqual(producer.attributes, {
    ...PRODUCER_ATTRIBUTES, 'messaging.destination.name': 'shop', 'messaging.message.conversation_id': 'g',
    'messaging.message.id': String(published.seq),
  });
  const lease = await t.claim('w');
  assert.deepEqual(header(lease, 'traceparent'), [traceparentOf(producer)]);
  assert.deepEqual(header(lease, 'tracestate'), ['vendor=abc,other=x y'], 'the caller\'s replaced by the context\'s');
  await t.ack(lease);
  await t.close();
});

test('a batch: one PRODUCER span with the message count, every message carrying its context', async () => {
  const { provider, spans } = tracer();
  const t = await Transport.open(box.db(), { tracerProvider: provider });
  await t.publishMany([{ groupId: 'a', event: {} }, { groupId: 'b', event: {}, headers: [['x', 'y']] }, { groupId: 'a', event: {} }]);
  const outcomes = await t.publishManyWith([{ groupId: 'c', event: {} }, { groupId: 'c', event: {}, key: 'k' }]);
  const [many, manyWith] = spans();
  assert.deepEqual(many.attributes, { ...PRODUCER_ATTRIBUTES, 'messaging.batch.message_count': 3 }, 'two groups: no conversation id');
  assert.deepEqual(manyWith.attributes, {
    ...PRODUCER_ATTRIBUTES, 'messaging.batch.message_count': 2, 'messaging.message.conversation_id': 'c',
  });
  assert.equal(outcomes.length, 2);
  const leases = [];
  for (let lease = await t.claim('w'); lease; lease = await t.ackAndClaim(lease, 'w')) leases.push(lease);
  const byGroup = (g) => leases.filter((l) => l.groupId === g).map((l) => header(l, 'traceparent')[0]);
  assert.deepEqual([...byGroup('a'), ...byGroup('b')], [traceparentOf(many), traceparentOf(many), traceparentOf(many)]);
  assert.deepEqual(byGroup('c'), [traceparentOf(manyWith), traceparentOf(manyWith)]);
  assert.deepEqual(header(leases.find((l) => l.groupId === 'b'), 'x'), ['y'], 'the message\'s own headers kept');
  await t.close();
});

test('a publish the library refuses ends its span with an error status', async () => {
  const { provider, spans } = tracer();
  const t = await Transport.open(box.db(), { tracerProvider: provider });
  await rejectsWith(assert, t.publish('g', {}, { headers: [['bad=name', 'v']] }), 'HAREL_ERR_ARGUMENT');
  await rejectsWith(assert, t.publishMany([{ groupId: 'g', event: 'not json' }]), 'HAREL_ERR_ARGUMENT');
  const [one, batch] = spans();
  assert.equal(one.status.code, SpanStatusCode.ERROR);
  assert.match(one.status.message, /headers\[0\]\.name/);
  assert.equal(batch.status.code, SpanStatusCode.ERROR);
  assert.equal((await t.stats()).messages, 0);
  await t.close();
});

test('a lease: a CONSUMER root span linked to the producer\'s context; ack ends it OK', async () => {
  const { provider, spans } = tracer();
  const t = await Transport.open(box.db(), { tracerProvider: provider });
  await t.publish('order-9', { n: 1 });
  const [producer] = spans();
  const lease = await t.claim('w');
  const span = leaseSpan(lease);
  assert.ok(span, 'leaseSpan gives the span while it lives');
  assert.equal(spans().length, 1, 'not ended before the ack');
  await t.ack(lease);
  assert.equal(leaseSpan(lease), undefined, 'ended: gone');
  const consumer = spans()[1];
  assert.equal(consumer, span);
  assert.equal(consumer.name, 'process harel');
  assert.equal(consumer.kind, SpanKind.CONSUMER);
  assert.equal(consumer.parentSpanContext, undefined, 'a root');
  assert.notEqual(consumer.spanContext().traceId, producer.spanContext().traceId, 'a trace of its own');
  assert.deepEqual(consumer.links.map((l) => [l.context.traceId, l.context.spanId]), [
    [producer.spanContext().traceId, producer.spanContext().spanId],
  ]);
  assert.deepEqual(consumer.attributes, {
    ...CONSUMER_ATTRIBUTES, 'messaging.message.id': String(lease.seq), 'messaging.message.conversation_id': 'order-9',
  });
  assert.deepEqual(consumer.status, { code: SpanStatusCode.OK });
  await t.close();
});

test('traceAsParent: the CONSUMER span is a child of the producer\'s context, without a link', async () => {
  const { provider, spans } = tracer();
  const t = await Transport.open(box.db(), { tracerProvider: provider, traceAsParent: true });
  await t.publish('g', {});
  const lease = await t.claim('w');
  await t.ack(lease);
  const [producer, consumer] = spans();
  assert.equal(consumer.spanContext().traceId, producer.spanContext().traceId);
  assert.equal(consumer.parentSpanContext.spanId, producer.spanContext().spanId);
  assert.equal(consumer.parentSpanContext.isRemote, true);
  assert.deepEqual(consumer.links, []);
  await t.close();
});

test('nack: an event with the delay and an error status; deadLetter: an event with the reason and an error status; extend: an event', async () => {
  const { provider, spans } = tracer();
  const t = await Transport.open(box.db(), { tracerProvider: provider });
  await t.publish('n', {});
  await t.publish('d', {});
  const first = await t.claim('w');
  await t.extend(first, 60);
  await t.nack(first, { delay: 2.5 });
  const second = await t.claim('w');
  await t.deadLetter(second, 'cannot parse');
  const [nacked, dead] = spans().filter((s) => s.kind === SpanKind.CONSUMER);
  assert.deepEqual(nacked.events.map((e) => [e.name, e.attributes]), [['extend', {}], ['nack', { 'messaging.harel.nack_delay': 2.5 }]]);
  assert.deepEqual(nacked.status, { code: SpanStatusCode.ERROR, message: 'nacked' });
  assert.deepEqual(dead.events.map((e) => [e.name, e.attributes]), [['dead_letter', { 'messaging.harel.dead_letter_reason': 'cannot parse' }]]);
  assert.deepEqual(dead.status, { code: SpanStatusCode.ERROR, message: 'cannot parse' });
  await t.close();
});

test('a lease lost: the ack (or nack, or extend) that finds it ends its span with "lease lost"', async () => {
  const clock = manualClock();
  const { provider, spans } = tracer();
  const t = await Transport.open(box.db(), { tracerProvider: provider, clock: clock.fn });
  await t.publish('a', {});
  await t.publish('b', {});
  await t.publish('c', {});
  const leases = await t.claimMany('w1', { max: 3, visibility: 5 });
  clock.advance(10);
  const again = await t.claimMany('w2', { max: 3 });
  assert.equal(again.length, 3, 'the lapsed leases were claimed by another worker');
  const [a, b, c] = leases;
  await rejectsWith(assert, t.ack(a), 'HAREL_ERR_LEASE_LOST');
  await rejectsWith(assert, t.nack(b), 'HAREL_ERR_LEASE_LOST');
  await rejectsWith(assert, t.extend(c, 30), 'HAREL_ERR_LEASE_LOST');
  const lost = spans().filter((s) => s.kind === SpanKind.CONSUMER);
  assert.equal(lost.length, 3);
  for (const span of lost) assert.deepEqual(span.status, { code: SpanStatusCode.ERROR, message: 'lease lost' });
  assert.deepEqual(lost.map((s) => s.attributes['messaging.message.id']).sort(), leases.map((l) => String(l.seq)).sort());
  // ackMany's lost lease too, while the others are acked OK.
  clock.advance(40);
  const third = await t.claimMany('w3', { max: 3, visibility: 5 });
  clock.advance(10);
  const fourth = await t.claim('w4');
  const outcomes = await t.ackMany(third);
  assert.deepEqual(outcomes.map((o) => o.ok), third.map((l) => l.groupId !== fourth.groupId));
  const ended = spans().slice(-3);
  assert.equal(ended.length, 3);
  const statusOf = (l) => ended.find((s) => s.attributes['messaging.message.id'] === String(l.seq)).status;
  for (const l of third) {
    const expected = l.groupId === fourth.groupId ? { code: SpanStatusCode.ERROR, message: 'lease lost' } : { code: SpanStatusCode.OK };
    assert.deepEqual(statusOf(l), expected, `the lease of ${l.groupId}`);
  }
  await t.close();
});

test('batch claims: claimMany and ackAndClaimMany spans carry the batch size; ackMany, ackAndClaim and ackAndClaimMany end the acked leases\' spans', async () => {
  const { provider, spans } = tracer();
  const t = await Transport.open(box.db(), { tracerProvider: provider });
  await t.publishMany(['a', 'b', 'c', 'a', 'b', 'c'].map((g) => ({ groupId: g, event: {} })));
  const batch = await t.claimMany('w', { max: 10 });
  assert.equal(batch.length, 3);
  const next = await t.ackAndClaimMany(batch, 'w', { max: 2 });
  assert.equal(next.leases.length, 2);
  const consumers = () => spans().filter((s) => s.kind === SpanKind.CONSUMER);
  assert.equal(consumers().length, 3, 'the acked leases\' spans ended');
  for (const s of consumers()) {
    assert.equal(s.attributes['messaging.batch.message_count'], 3);
    assert.deepEqual(s.status, { code: SpanStatusCode.OK });
  }
  const last = await t.ackAndClaim(next.leases[0], 'w');
  assert.ok(last);
  await t.ackMany([next.leases[1], last]);
  const all = consumers();
  assert.equal(all.length, 6);
  assert.deepEqual(all.slice(3).map((s) => s.attributes['messaging.batch.message_count']), [2, 2, undefined]);
  assert.ok(all.every((s) => s.status.code === SpanStatusCode.OK));
  // A waiting claim, woken by a publish, and a waiting claimMany.
  const waiting = t.claim('w', { wait: 10 });
  await new Promise((resolve) => setTimeout(resolve, 30));
  await t.publish('z', {});
  const woken = await waiting;
  assert.ok(leaseSpan(woken), 'a waiting claim\'s lease has its span');
  await t.ack(woken);
  await t.publish('y', {});
  const [many] = await t.claimMany('w', { max: 5, wait: 5 });
  assert.equal(leaseSpan(many).attributes['messaging.batch.message_count'], 1);
  await t.ack(many);
  await t.close();
});

test('a transaction\'s publish: its span starts at the publish and ends when the commit returns', async () => {
  const { provider, spans } = tracer();
  const t = await Transport.open(box.db(), { tracerProvider: provider });
  const tx = t.begin();
  await tx.publish('g', { n: 1 });
  await tx.publishWith('g', { n: 2 }, { key: 'k' });
  await rejectsWith(assert, tx.publish('g', {}, { headers: [['', 'v']] }), 'HAREL_ERR_ARGUMENT');
  assert.deepEqual(spans().map((s) => s.status.code), [SpanStatusCode.ERROR], 'only the refused publish\'s span ended');
  const published = await tx.commit();
  const [, first, second] = spans();
  assert.deepEqual([first.attributes['messaging.message.id'], second.attributes['messaging.message.id']], published.map((p) => String(p.seq)));
  assert.deepEqual([first.status.code, second.status.code], [SpanStatusCode.UNSET, SpanStatusCode.UNSET]);
  const leases = await t.claimMany('w', { max: 1 });
  assert.deepEqual(header(leases[0], 'traceparent'), [traceparentOf(first)]);
  await t.ackMany(leases);
  const next = await t.claim('w');
  assert.deepEqual(header(next, 'traceparent'), [traceparentOf(second)]);
  await t.ack(next);

  // A rollback, and a commit that fails: error statuses.
  const before = spans().length;
  const rolled = t.begin();
  await rolled.publish('g', {});
  await rolled.rollback();
  await rejectsWith(assert, t.transaction(async (body) => {
    await body.publish('g', {});
    await body.execute('INSERT INTO no_such_table VALUES (1)');
  }), 'HAREL_ERR_DATABASE');
  const ended = spans().slice(before).filter((s) => s.kind === SpanKind.PRODUCER);
  assert.deepEqual(ended.map((s) => s.status.code), [SpanStatusCode.ERROR, SpanStatusCode.ERROR]);
  assert.equal(ended[0].status.message, 'rolled back');
  assert.match(ended[1].status.message, /no_such_table/);
  await t.close();
});

test('an invalid or absent traceparent: no link, no parent, no error', async () => {
  const { provider, spans } = tracer();
  const plain = await Transport.open(box.db('invalid'));
  const values = [
    '00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01', // upper case
    '00-00000000000000000000000000000000-b7ad6b7169203331-01', // a zero trace id
    'ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', // version ff
    '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331', // too short
    'garbage',
    '',
  ];
  for (const traceAsParent of [false, true]) {
    for (const value of values) await plain.publish('g', {}, { headers: [['traceparent', value], ['tracestate', 'a=b']] });
    await plain.publish('g', {}, { headers: [['tracestate', 'a=b']] }); // none
    const t = await Transport.open(plain.path, { tracerProvider: provider, traceAsParent });
    let n = 0;
    for (let lease = await t.claim('w'); lease; lease = await t.ackAndClaim(lease, 'w')) n += 1;
    assert.equal(n, values.length + 1);
    await t.close();
  }
  const consumers = spans();
  assert.equal(consumers.length, 2 * (values.length + 1));
  for (const s of consumers) {
    assert.deepEqual(s.links, []);
    assert.equal(s.parentSpanContext, undefined);
  }
  await plain.close();
});

test('a valid traceparent from another producer, with a tracestate: linked, its tracestate kept; a higher version read', async () => {
  const { provider, spans } = tracer();
  const t = await Transport.open(box.db(), { tracerProvider: provider, traceAsParent: true });
  const plain = await Transport.open(t.path);
  await plain.publish('g', {}, { headers: [['traceparent', ' 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\t'], ['tracestate', 'v=1'], ['tracestate', 'w=2']] });
  await plain.publish('g', {}, { headers: [['traceparent', '01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203332-03-extra'], ['tracestate', 'BAD']] });
  for (let lease = await t.claim('w'); lease; lease = await t.ackAndClaim(lease, 'w'));
  const [one, two] = spans();
  assert.equal(one.spanContext().traceId, '0af7651916cd43dd8448eb211c80319c');
  assert.equal(one.parentSpanContext.spanId, 'b7ad6b7169203331');
  assert.equal(one.parentSpanContext.traceState.serialize(), 'v=1,w=2', 'several tracestate headers joined');
  assert.equal(two.parentSpanContext.spanId, 'b7ad6b7169203332');
  assert.equal(two.parentSpanContext.traceFlags, 1, 'a higher version: the sampled bit only');
  assert.equal(two.parentSpanContext.traceState, undefined, 'an invalid tracestate dropped');
  await plain.close();
  await t.close();
});

test('off: no header written, no span, even with a global provider', async () => {
  const { provider, spans } = tracer();
  trace.setGlobalTracerProvider(provider);
  try {
    const t = await Transport.open(box.db());
    await t.publish('g', {});
    await t.publishWith('g', {}, { headers: [['a', 'b']] });
    await t.publishMany([{ groupId: 'g', event: {} }]);
    await t.transaction((tx) => tx.publish('g', {}));
    const leases = await t.claimMany('w', { max: 1 });
    assert.deepEqual(leases[0].headers, []);
    assert.equal(leaseSpan(leases[0]), undefined);
    await t.ackMany(leases);
    assert.deepEqual((await t.peek('g')).messages.map((m) => m.headers.map(([n]) => n)), [['a'], [], []]);
    assert.equal(spans().length, 0);

    // 'global': the API's global provider.
    const g = await Transport.open(t.path, { tracerProvider: 'global' });
    await g.publish('g', {});
    assert.equal(spans().length, 1);
    await g.close();
    await t.close();
  } finally {
    trace.disable();
  }
});

test('the open options are checked', async () => {
  await rejectsWith(assert, Transport.open(box.db(), { tracerProvider: {} }), 'HAREL_ERR_ARGUMENT', /tracerProvider must be/);
  await rejectsWith(assert, Transport.open(box.db(), { tracerProvider: 'local' }), 'HAREL_ERR_ARGUMENT', /tracerProvider must be/);
  await rejectsWith(assert, Transport.open(box.db(), { traceAsParent: 'yes' }), 'HAREL_ERR_ARGUMENT', /traceAsParent must be a boolean/);
});

test('the package loads and works without @opentelemetry/api; asking for tracing then says what is missing', async () => {
  // A child process in which @opentelemetry/api cannot be found.
  const script = `
    const Module = require('node:module');
    const resolve = Module._resolveFilename;
    Module._resolveFilename = function (request, ...rest) {
      if (request === '@opentelemetry/api' || request.startsWith('@opentelemetry/')) {
        const e = new Error("Cannot find module '" + request + "'");
        e.code = 'MODULE_NOT_FOUND';
        throw e;
      }
      return resolve.call(this, request, ...rest);
    };
    const { Transport } = require(${JSON.stringify(path.join(__dirname, '..'))});
    (async () => {
      const t = await Transport.open(':memory:');
      await t.publish('g', { n: 1 }, { headers: [['a', 'b']] });
      const lease = await t.claim('w');
      await t.ack(lease);
      await t.close();
      try {
        await Transport.open(':memory:', { tracerProvider: { getTracer() {} } });
        console.log('opened');
      } catch (e) {
        console.log(JSON.stringify({ headers: lease.headers, code: e.code, message: e.message }));
      }
    })();
  `;
  const out = await new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', script], (error, stdout, stderr) => (error ? reject(new Error(stderr || error.message)) : resolve(stdout)));
  });
  const result = JSON.parse(out);
  assert.deepEqual(result.headers, [['a', 'b']]);
  assert.equal(result.code, 'HAREL_ERR_ARGUMENT');
  assert.match(result.message, /@opentelemetry\/api/);
});

test('with tracing on, calls still leave the event loop free while they wait for the write lock', async () => {
  const { provider, spans } = tracer();
  const db = box.db();
  const t = await Transport.open(db, { tracerProvider: provider });
  await t.publish('g', {});
  const holder = await holdWriteLock(db, 1.0);
  let ticks = 0;
  const timer = setInterval(() => {
    ticks += 1;
  }, 10);
  const started = performance.now();
  try {
    await Promise.all([t.publish('g', {}), t.claim('w').then((lease) => t.ack(lease))]);
  } finally {
    clearInterval(timer);
  }
  const elapsed = performance.now() - started;
  await holder.released();
  assert.ok(elapsed >= 700, `the calls waited for the lock (${elapsed.toFixed(0)} ms)`);
  assert.ok(ticks >= elapsed / 10 / 3, `the event loop ran meanwhile: ${ticks} ticks in ${elapsed.toFixed(0)} ms`);
  assert.equal(spans().length, 3);
  await t.close();
});
