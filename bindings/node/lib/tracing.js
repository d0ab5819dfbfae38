'use strict';
// OpenTelemetry (the open options tracerProvider and traceAsParent): a PRODUCER span per
// publish, whose context goes into the message's `traceparent` and `tracestate` headers,
// and a CONSUMER span per lease handed out, linked to (or, with traceAsParent, a child of)
// the context its headers carry, ended by what the worker does with the lease. The
// library writes and reads traceparent and checks tracestate (harel_traceparent_format,
// harel_traceparent_parse, harel_tracestate_valid): the binding never parses them itself.
//
// @opentelemetry/api is an optional peer dependency: required at the first open that asks
// for tracing, never before, so the package loads without it. Off (no tracerProvider), a
// Transport has no Tracing and each call pays one branch: no span, no header written. The
// module's lease functions (finishing, finishOutcomes) pay one branch too until some
// transport of the process has traced.
//
// The helpers are synchronous C calls on the main thread: they compute a few dozen bytes
// and touch no database, as shardOf does.

const { STATUS, argumentError } = require('./errors');
const { load } = require('./native');
const { callCheckedHere } = require('./calls');

const TRACER_NAME = 'harel-transport';
const TRACER_VERSION = require('../package.json').version;
const TRACEPARENT = 'traceparent';
const TRACESTATE = 'tracestate';
const TRACEPARENT_LEN = 55; // HAREL_TRACEPARENT_LEN

let api = null; // @opentelemetry/api, once a transport asked for tracing

function otelApi() {
  if (api) return api;
  try {
    api = require('@opentelemetry/api');
  } catch (e) {
    throw argumentError(
      'tracerProvider: tracing needs the package @opentelemetry/api (an optional peer dependency of ' +
        `harel-transport): npm install @opentelemetry/api (${String(e.message).split('\n')[0]})`,
      e,
    );
  }
  return api;
}

// The CONSUMER span of each lease handed out by a tracing transport, until it ends. A
// WeakMap: a lease dropped unfinished takes its span with it. `used`: whether any
// transport of the process has traced (until then the lease functions look nothing up).
const leaseSpans = new WeakMap();
let used = false;

/** The traceparent of a span context, written by harel_traceparent_format. */
function formatTraceparent(spanContext) {
  const f = load();
  const out = Buffer.alloc(TRACEPARENT_LEN + 1);
  callCheckedHere(f, 'traceparent', f.traceparentFormat, [
    Buffer.from(spanContext.traceId, 'hex'), Buffer.from(spanContext.spanId, 'hex'), spanContext.traceFlags & 0xff, out,
  ]);
  return out.toString('latin1', 0, TRACEPARENT_LEN);
}

/** Whether `value` is a valid tracestate (harel_tracestate_valid); false for one with a NUL. */
function tracestateValid(value) {
  if (value.includes('\0')) return false;
  const f = load();
  const valid = [false];
  try {
    callCheckedHere(f, 'tracestate', f.tracestateValid, [value, valid]);
  } catch {
    return false;
  }
  return Boolean(valid[0]);
}

/**
 * The remote span context `headers` ([name, value] pairs) carry: their first traceparent,
 * read by harel_traceparent_parse, and their tracestate (several joined with ',', as HTTP
 * joins them) when harel_tracestate_valid finds it valid. Null when there is no
 * traceparent or it is not valid: ignored, never an error.
 */
function extract(headers) {
  const pair = headers.find(([name]) => name === TRACEPARENT);
  if (pair === undefined || pair[1].includes('\0')) return null;
  const f = load();
  const traceId = Buffer.alloc(16);
  const spanId = Buffer.alloc(8);
  const flags = [0];
  const valid = [false];
  try {
    callCheckedHere(f, 'traceparent', f.traceparentParse, [pair[1], traceId, spanId, flags, valid]);
  } catch {
    return null;
  }
  if (!valid[0]) return null;
  const spanContext = {
    traceId: traceId.toString('hex'),
    spanId: spanId.toString('hex'),
    traceFlags: Number(flags[0]),
    isRemote: true,
  };
  const state = headers.filter(([name]) => name === TRACESTATE).map(([, value]) => value).join(',');
  if (state !== '' && tracestateValid(state)) spanContext.traceState = api.createTraceState(state);
  return spanContext;
}

/** `pairs` with the first header `name` set to `value` and the others of that name dropped; appended if none. */
function setHeader(pairs, name, value) {
  let found = false;
  const out = [];
  for (const pair of pairs) {
    if (pair[0] !== name) out.push(pair);
    else if (!found) {
      found = true;
      out.push([name, value]);
    }
  }
  if (!found) out.push([name, value]);
  return out;
}

/**
 * A copy of `pairs` (null: none) carrying `spanContext`: traceparent (the caller's
 * replaced), and tracestate when the context has one (the caller's replaced). `pairs` as
 * they are for a context that is not valid (a no-op tracer's).
 */
function inject(spanContext, pairs) {
  if (!api.isSpanContextValid(spanContext)) return pairs;
  let out = setHeader(pairs || [], TRACEPARENT, formatTraceparent(spanContext));
  const state = spanContext.traceState ? spanContext.traceState.serialize() : '';
  if (state !== '' && tracestateValid(state)) out = setHeader(out, TRACESTATE, state);
  return out;
}

/** A Transport's tracer and what its spans share. */
class Tracing {
  constructor(provider, queue, asParent) {
    this.tracer = provider.getTracer(TRACER_NAME, TRACER_VERSION);
    this.asParent = asParent;
    this.publishName = `publish ${queue}`;
    this.processName = `process ${queue}`;
    const common = { 'messaging.system': 'harel', 'messaging.destination.name': queue };
    this.publishAttributes = { ...common, 'messaging.operation.type': 'send', 'messaging.operation.name': 'publish' };
    this.processAttributes = { ...common, 'messaging.operation.type': 'process', 'messaging.operation.name': 'process' };
    used = true;
  }

  /**
   * Starts the PRODUCER span of one message of `groupId`, a child of the active context;
   * returns it with a copy of `pairs` (null: none) carrying its context.
   */
  startPublish(groupId, pairs) {
    const attributes = { ...this.publishAttributes, 'messaging.message.conversation_id': groupId };
    const span = this.tracer.startSpan(this.publishName, { kind: api.SpanKind.PRODUCER, attributes }, api.context.active());
    return [span, inject(span.spanContext(), pairs)];
  }

  /**
   * Starts the one PRODUCER span of a batch of messages of `groupIds`; returns it with a
   * copy of each message's pairs carrying its context. The group id is an attribute when
   * the batch has one group.
   */
  startBatch(groupIds, pairsList) {
    const attributes = { ...this.publishAttributes, 'messaging.batch.message_count': groupIds.length };
    if (groupIds.length > 0 && groupIds.every((g) => g === groupIds[0])) {
      attributes['messaging.message.conversation_id'] = groupIds[0];
    }
    const span = this.tracer.startSpan(this.publishName, { kind: api.SpanKind.PRODUCER, attributes }, api.context.active());
    const context = span.spanContext();
    return [span, pairsList.map((pairs) => inject(context, pairs))];
  }

  /**
   * Gives `lease` its CONSUMER span: a new root linked to the context its headers carry,
   * or with traceAsParent a child of it (a root without a link when they carry none).
   * `batch`: the size of the claim's batch (claimMany, ackAndClaimMany), 0 for a claim of one.
   */
  process(lease, batch) {
    const attributes = {
      ...this.processAttributes,
      'messaging.message.id': String(lease.seq),
      'messaging.message.conversation_id': lease.groupId,
    };
    if (batch > 0) attributes['messaging.batch.message_count'] = batch;
    const options = { kind: api.SpanKind.CONSUMER, attributes };
    let context = api.ROOT_CONTEXT; // no span in it: a root
    const producer = extract(lease.headers);
    if (producer !== null) {
      if (this.asParent) context = api.trace.setSpanContext(context, producer);
      else options.links = [{ context: producer }];
    }
    leaseSpans.set(lease, this.tracer.startSpan(this.processName, options, context));
    return lease;
  }

  /** process() for each lease of a claim's batch. */
  processAll(leases) {
    for (const lease of leases) this.process(lease, leases.length);
    return leases;
  }
}

/**
 * Ends a PRODUCER span: the message's id when known (`seq` not undefined), an error status
 * with `error`'s message (an Error or a text) when the publish failed.
 */
function endPublish(span, error, seq) {
  if (error) span.setStatus({ code: api.SpanStatusCode.ERROR, message: typeof error === 'string' ? error : error.message });
  else if (seq !== undefined) span.setAttribute('messaging.message.id', String(seq));
  span.end();
}

/** Ends a PRODUCER span when `promise` settles; resolves and rejects as it does. */
function publishing(span, promise, seqOf) {
  return promise.then(
    (value) => {
      endPublish(span, null, seqOf ? seqOf(value) : undefined);
      return value;
    },
    (e) => {
      endPublish(span, e);
      throw e;
    },
  );
}

// What a call on a lease does to its span.
function acked(span) {
  span.setStatus({ code: api.SpanStatusCode.OK });
  span.end();
}

function lost(span) {
  span.setStatus({ code: api.SpanStatusCode.ERROR, message: 'lease lost' });
  span.end();
}

function nacked(span, delay) {
  span.addEvent('nack', { 'messaging.harel.nack_delay': delay });
  span.setStatus({ code: api.SpanStatusCode.ERROR, message: 'nacked' });
  span.end();
}

function deadLettered(span, reason) {
  span.addEvent('dead_letter', { 'messaging.harel.dead_letter_reason': reason });
  span.setStatus({ code: api.SpanStatusCode.ERROR, message: reason });
  span.end();
}

function extended(span) {
  span.addEvent('extend');
  return false; // the span goes on
}

/**
 * `promise`, a call on `lease` (ack, nack, deadLetter, extend, ackAndClaim), as it settles,
 * applied to the lease's span: `done(span, arg)` when it succeeds (ending it unless `done`
 * returns false), an end with the error status "lease lost" when it fails with
 * HAREL_ERR_LEASE_LOST. Another error leaves the span as it is: the lease may still be had.
 */
function finishing(lease, promise, done, arg) {
  if (!used) return promise;
  const span = leaseSpans.get(lease);
  if (span === undefined) return promise;
  return promise.then(
    (value) => {
      if (done(span, arg) !== false) leaseSpans.delete(lease);
      return value;
    },
    (e) => {
      if (e && e.status === STATUS.HAREL_ERR_LEASE_LOST) {
        leaseSpans.delete(lease);
        lost(span);
      }
      throw e;
    },
  );
}

/** The outcomes of ackMany and ackAndClaimMany, applied to their leases' spans. */
function finishOutcomes(outcomes) {
  if (!used) return outcomes;
  for (const { lease, ok, error } of outcomes) {
    const span = leaseSpans.get(lease);
    if (span === undefined) continue;
    if (ok) acked(span);
    else if (error.status === STATUS.HAREL_ERR_LEASE_LOST) lost(span);
    else continue;
    leaseSpans.delete(lease);
  }
  return outcomes;
}

/** The CONSUMER span of a lease from a tracing transport, until it ends; else undefined. */
function leaseSpan(lease) {
  return used && lease !== null && typeof lease === 'object' ? leaseSpans.get(lease) : undefined;
}

/**
 * The Tracing of the open options `tracerProvider` (absent or null: none, tracing off; an
 * object with getTracer; or 'global', the API's global provider) and `traceAsParent`, for
 * the queue `queue` (the prefix).
 */
function tracingOption(provider, asParent, queue) {
  if (provider === undefined || provider === null) return null;
  const otel = otelApi();
  if (provider === 'global') provider = otel.trace.getTracerProvider();
  if (typeof provider !== 'object' || typeof provider.getTracer !== 'function') {
    throw argumentError("tracerProvider must be an OpenTelemetry TracerProvider (an object with getTracer) or 'global'");
  }
  return new Tracing(provider, queue, asParent);
}

module.exports = {
  TRACEPARENT,
  TRACESTATE,
  tracingOption,
  endPublish,
  publishing,
  finishing,
  finishOutcomes,
  acked,
  nacked,
  deadLettered,
  extended,
  leaseSpan,
};
