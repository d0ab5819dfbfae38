#!/usr/bin/env node
// The Node worker of the cross-language trace test (tests/tracing/run.py; the spec's "The
// cross-language trace test"): opens the queue with tracing on, the SDK's in-memory span
// exporter behind it, claims exactly --count messages of routing key --key (waiting up to
// --wait seconds in all, 30 by default), acks each, then writes every finished span to
// --spans as one JSON object per line and exits 0; 1, with a message on stderr, when fewer
// came (the spans written all the same).
//
//   node bindings/node/tools/tracing-worker.mjs --queue <path-or-URL> [--prefix harel] \
//     --spans <file> --key <routing key> --count N [--wait 30] [--trace-as-parent]
//
// Needs the package's dev dependencies (@opentelemetry/api, @opentelemetry/sdk-trace-base:
// `make node-deps`) and the library (`make lib`), found as the package finds them.

import fs from 'node:fs';
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';

const require = createRequire(import.meta.url);
const { Transport } = require('../index.js');
const { SpanKind } = require('@opentelemetry/api');
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');

const WORKER_ID = 'node-tracing-worker';
const KINDS = { [SpanKind.INTERNAL]: 'internal', [SpanKind.SERVER]: 'server', [SpanKind.CLIENT]: 'client', [SpanKind.PRODUCER]: 'producer', [SpanKind.CONSUMER]: 'consumer' };
const STATUSES = ['unset', 'ok', 'error']; // SpanStatusCode UNSET, OK, ERROR

function usage(message) {
  process.stderr.write(`tracing-worker: ${message}\n` +
    'usage: tracing-worker.mjs --queue <path-or-URL> [--prefix harel] --spans <file> --key <routing key> --count N [--wait 30] [--trace-as-parent]\n');
  process.exit(2);
}

function options() {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        queue: { type: 'string' },
        prefix: { type: 'string', default: 'harel' },
        spans: { type: 'string' },
        key: { type: 'string' },
        count: { type: 'string' },
        wait: { type: 'string', default: '30' },
        'trace-as-parent': { type: 'boolean', default: false },
      },
      strict: true,
    }));
  } catch (e) {
    usage(e.message);
  }
  for (const name of ['queue', 'spans', 'key', 'count']) if (values[name] === undefined) usage(`--${name} is required`);
  const count = Number(values.count);
  if (!Number.isSafeInteger(count) || count < 0) usage(`--count must be an integer >= 0, got ${values.count}`);
  const wait = Number(values.wait);
  if (!Number.isFinite(wait) || wait < 0) usage(`--wait must be seconds >= 0, got ${values.wait}`);
  return { ...values, count, wait };
}

/** A finished span as the spec's JSON object. */
function spanJson(span) {
  const { traceId, spanId } = span.spanContext();
  // sdk-trace-base 2.x: parentSpanContext; 1.x: parentSpanId.
  const parent = span.parentSpanContext ? span.parentSpanContext.spanId : span.parentSpanId;
  return {
    lang: 'node',
    name: span.name,
    kind: KINDS[span.kind] ?? String(span.kind),
    trace_id: traceId,
    span_id: spanId,
    parent_span_id: parent || null,
    links: span.links.map((link) => ({ trace_id: link.context.traceId, span_id: link.context.spanId })),
    attributes: { ...span.attributes },
    status: STATUSES[span.status.code] ?? 'unset',
  };
}

async function main() {
  const o = options();
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const t = await Transport.open(o.queue, { prefix: o.prefix, tracerProvider: provider, traceAsParent: o['trace-as-parent'] });
  const deadline = performance.now() + o.wait * 1000;
  let got = 0;
  try {
    while (got < o.count) {
      const left = (deadline - performance.now()) / 1000;
      if (left <= 0) break;
      const lease = await t.claim(WORKER_ID, { routingKeys: [o.key], wait: left });
      if (lease === null) continue;
      await t.ack(lease);
      got += 1;
    }
  } finally {
    await t.close();
    await provider.forceFlush();
    const lines = exporter.getFinishedSpans().map((span) => JSON.stringify(spanJson(span)) + '\n');
    fs.writeFileSync(o.spans, lines.join(''));
    await provider.shutdown();
  }
  if (got < o.count) {
    process.stderr.write(`tracing-worker: ${got} of ${o.count} messages with routing key ${JSON.stringify(o.key)} came within ${o.wait} s\n`);
    return 1;
  }
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    process.stderr.write(`tracing-worker: ${e && e.stack ? e.stack : e}\n`);
    process.exitCode = 1;
  },
);
