'use strict';
// The cross-language trace test's Node worker (tools/tracing-worker.mjs), run as the lead's
// tests/tracing/run.py runs it: against a file queue published to from here (a traceparent
// header written by hand, as the Go producer's would be, and one from a tracing
// Transport), it claims the messages of its routing key, acks them, and writes its spans
// as JSON lines; exit 1 with a message when fewer than --count came.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { test } = require('node:test');
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { Transport } = require('..');
const { scratch } = require('./helpers');

const box = scratch();
const WORKER = path.join(__dirname, '..', 'tools', 'tracing-worker.mjs');
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN_ID = '00f067aa0ba902b7';

/** Runs the worker; resolves { code, stdout, stderr }. */
function worker(args) {
  return new Promise((resolve) => {
    execFile(process.execPath, [WORKER, ...args], { cwd: path.join(__dirname, '..', '..', '..') }, (error, stdout, stderr) => {
      resolve({ code: error ? error.code : 0, stdout, stderr });
    });
  });
}

function lines(file) {
  return fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line));
}

test('the worker claims --count messages of its --key, acks them and writes its spans as JSON lines', async () => {
  const db = box.db();
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const producer = await Transport.open(db, { tracerProvider: provider });
  const plain = await Transport.open(db);
  await plain.publish('go-node', { from: 'go', key: 'node' }, {
    routingKey: 'node', headers: [['traceparent', `00-${TRACE_ID}-${SPAN_ID}-01`], ['tracestate', 'go=1']],
  });
  await producer.publish('node-node', { from: 'node', key: 'node' }, { routingKey: 'node' });
  await plain.publish('go-python', { from: 'go', key: 'python' }, { routingKey: 'python', headers: [['traceparent', `00-${TRACE_ID}-${SPAN_ID}-01`]] });
  const [producerSpan] = exporter.getFinishedSpans();
  await producer.close();

  const spans = path.join(box.dir, 'spans.jsonl');
  const run = await worker(['--queue', db, '--prefix', 'harel', '--spans', spans, '--key', 'node', '--count', '2']);
  assert.equal(run.code, 0, run.stderr);
  const out = lines(spans);
  assert.equal(out.length, 2);
  const byGroup = Object.fromEntries(out.map((s) => [s.attributes['messaging.message.conversation_id'], s]));
  assert.deepEqual(Object.keys(byGroup).sort(), ['go-node', 'node-node']);
  for (const s of out) {
    assert.deepEqual(Object.keys(s), ['lang', 'name', 'kind', 'trace_id', 'span_id', 'parent_span_id', 'links', 'attributes', 'status']);
    assert.equal(s.lang, 'node');
    assert.equal(s.name, 'process harel');
    assert.equal(s.kind, 'consumer');
    assert.match(s.trace_id, /^[0-9a-f]{32}$/);
    assert.match(s.span_id, /^[0-9a-f]{16}$/);
    assert.equal(s.parent_span_id, null);
    assert.equal(s.status, 'ok');
    assert.equal(s.attributes['messaging.system'], 'harel');
    assert.equal(s.attributes['messaging.operation.type'], 'process');
    assert.equal(s.attributes['messaging.destination.name'], 'harel');
    assert.match(s.attributes['messaging.message.id'], /^\d+$/);
  }
  assert.deepEqual(byGroup['go-node'].links, [{ trace_id: TRACE_ID, span_id: SPAN_ID }]);
  assert.deepEqual(byGroup['node-node'].links, [{ trace_id: producerSpan.spanContext().traceId, span_id: producerSpan.spanContext().spanId }]);
  assert.equal((await plain.peek('go-python')).messages.length, 1, 'another key\'s message left alone');

  // --trace-as-parent: the producer's span as the parent.
  await plain.publish('go-node-2', {}, { routingKey: 'node', headers: [['traceparent', `00-${TRACE_ID}-${SPAN_ID}-01`]] });
  const asParent = path.join(box.dir, 'as-parent.jsonl');
  const second = await worker(['--queue', db, '--spans', asParent, '--key', 'node', '--count', '1', '--trace-as-parent']);
  assert.equal(second.code, 0, second.stderr);
  const [child] = lines(asParent);
  assert.deepEqual([child.trace_id, child.parent_span_id, child.links], [TRACE_ID, SPAN_ID, []]);
  await plain.close();
});

test('fewer than --count within the wait: exit 1 with a message on stderr; bad arguments: exit 2', async () => {
  const db = box.db();
  const t = await Transport.open(db);
  await t.publish('g', {}, { routingKey: 'node' });
  await t.close();
  const spans = path.join(box.dir, 'short.jsonl');
  const started = performance.now();
  const run = await worker(['--queue', db, '--spans', spans, '--key', 'node', '--count', '2', '--wait', '0.5']);
  assert.equal(run.code, 1);
  assert.match(run.stderr, /1 of 2 messages with routing key "node" came within 0.5 s/);
  assert.ok(performance.now() - started < 10_000);
  assert.equal(lines(spans).length, 1, 'the spans of what came are written all the same');
  const bad = await worker(['--queue', db, '--key', 'node', '--count', '1']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--spans is required/);
});
