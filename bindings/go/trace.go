package harel

// OpenTelemetry tracing (WithTracerProvider): a PRODUCER span per publish, whose context
// goes into the message's traceparent and tracestate headers, and a CONSUMER span per
// lease, linked to (or, with WithTraceAsParent, a child of) that context, ended by what
// the worker does with the lease. The headers are written and read with the library's
// W3C Trace Context functions (capi_trace.go). Off (no provider), each call pays one
// branch: no span, no header.

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// TracerName is the name of the tracer the binding asks the TracerProvider for: its
// import path (OpenTelemetry's convention for an instrumentation library).
const TracerName = "github.com/harel-transport/harel-transport/bindings/go"

// The header names of W3C Trace Context.
const (
	TraceparentHeader = "traceparent"
	TracestateHeader  = "tracestate"
)

// The attributes of the spans: OpenTelemetry's messaging semantic conventions, and the
// binding's own under messaging.harel.
const (
	attrSystem           = attribute.Key("messaging.system")
	attrOperationType    = attribute.Key("messaging.operation.type")
	attrOperationName    = attribute.Key("messaging.operation.name")
	attrDestination      = attribute.Key("messaging.destination.name")
	attrMessageID        = attribute.Key("messaging.message.id")
	attrConversationID   = attribute.Key("messaging.message.conversation_id")
	attrBatchCount       = attribute.Key("messaging.batch.message_count")
	attrNackDelay        = attribute.Key("messaging.harel.nack_delay")
	attrDeadLetterReason = attribute.Key("messaging.harel.dead_letter_reason")
)

// tracing is a Transport's tracer and what its spans share; nil when tracing is off.
type tracing struct {
	tracer   trace.Tracer
	asParent bool
	// the spans' names, "publish <queue>" and "process <queue>" (queue: the prefix)
	publishName, processName string
	// the attributes every span of a kind carries
	publishAttrs, processAttrs []attribute.KeyValue
}

func newTracing(tp trace.TracerProvider, queue string, asParent bool) *tracing {
	destination := attrDestination.String(queue)
	return &tracing{
		tracer:      tp.Tracer(TracerName, trace.WithInstrumentationVersion(Version())),
		asParent:    asParent,
		publishName: "publish " + queue,
		processName: "process " + queue,
		publishAttrs: []attribute.KeyValue{attrSystem.String("harel"), attrOperationType.String("send"),
			attrOperationName.String("publish"), destination},
		processAttrs: []attribute.KeyValue{attrSystem.String("harel"), attrOperationType.String("process"),
			attrOperationName.String("process"), destination},
	}
}

// startPublish starts the PRODUCER span of one message of groupID, a child of ctx's span,
// and returns it with headers carrying its context (a copy: the caller's slice is not
// written).
func (tr *tracing) startPublish(ctx context.Context, groupID string, headers []Header) (trace.Span, []Header) {
	attrs := append(tr.publishAttrs[:len(tr.publishAttrs):len(tr.publishAttrs)], attrConversationID.String(groupID))
	_, span := tr.tracer.Start(ctx, tr.publishName, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
	return span, injectHeaders(span.SpanContext(), headers)
}

// startBatch starts the one PRODUCER span of a batch and returns it with a copy of msgs
// whose headers carry its context (the caller's messages are not written).
func (tr *tracing) startBatch(ctx context.Context, msgs []Message) (trace.Span, []Message) {
	attrs := append(tr.publishAttrs[:len(tr.publishAttrs):len(tr.publishAttrs)], attrBatchCount.Int(len(msgs)))
	oneGroup := true
	for i := range msgs {
		oneGroup = oneGroup && msgs[i].GroupID == msgs[0].GroupID
	}
	if oneGroup {
		attrs = append(attrs, attrConversationID.String(msgs[0].GroupID))
	}
	_, span := tr.tracer.Start(ctx, tr.publishName, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
	traced := make([]Message, len(msgs))
	for i := range msgs {
		traced[i] = msgs[i]
		traced[i].Headers = injectHeaders(span.SpanContext(), msgs[i].Headers)
	}
	return span, traced
}

// endPublish ends a PRODUCER span: its message's id when known (seq >= 0), an error
// status when the publish failed.
func endPublish(span trace.Span, seq int64, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	} else if seq >= 0 {
		span.SetAttributes(attrMessageID.String(strconv.FormatInt(seq, 10)))
	}
	span.End()
}

// injectHeaders is a copy of headers with traceparent set to sc's (replacing the
// caller's, if any), and tracestate to sc's when it has one; headers as they are when sc
// is not valid (a no-op tracer's).
func injectHeaders(sc trace.SpanContext, headers []Header) []Header {
	if !sc.IsValid() {
		return headers
	}
	traceparent, err := traceparentFormat(sc.TraceID(), sc.SpanID(), byte(sc.TraceFlags()))
	if err != nil { // a valid span context has ids that are not all zero: not reached
		return headers
	}
	out := setHeader(append(make([]Header, 0, len(headers)+2), headers...), TraceparentHeader, traceparent)
	if ts := sc.TraceState().String(); ts != "" && tracestateValid(ts) {
		out = setHeader(out, TracestateHeader, ts)
	}
	return out
}

// setHeader sets the first header named name to value and drops the others of that
// name, or appends it when there is none.
func setHeader(hs []Header, name, value string) []Header {
	found, kept := false, hs[:0]
	for _, h := range hs {
		if h.Name == name {
			if found {
				continue
			}
			found, h.Value = true, value
		}
		kept = append(kept, h)
	}
	if !found {
		kept = append(kept, Header{Name: name, Value: value})
	}
	return kept
}

// ExtractSpanContext is the remote span context that headers carry: their first
// traceparent, read with the library's harel_traceparent_parse, and their tracestate
// (several joined with ',', as HTTP joins them) when harel_tracestate_valid finds it
// valid. It is not valid (IsValid false) when there is no traceparent or it is not valid:
// to be ignored, never an error. A worker gets this from a lease's Headers; the consumer
// spans of WithTracerProvider are linked to it.
func ExtractSpanContext(headers []Header) trace.SpanContext {
	value, ok := headerValue(headers, TraceparentHeader)
	if !ok {
		return trace.SpanContext{}
	}
	traceID, spanID, flags, valid := traceparentParse(value)
	if !valid {
		return trace.SpanContext{}
	}
	cfg := trace.SpanContextConfig{TraceID: traceID, SpanID: spanID, TraceFlags: trace.TraceFlags(flags), Remote: true}
	var states []string
	for _, h := range headers {
		if h.Name == TracestateHeader {
			states = append(states, h.Value)
		}
	}
	if ts := strings.Join(states, ","); ts != "" && tracestateValid(ts) {
		if state, err := trace.ParseTraceState(ts); err == nil {
			cfg.TraceState = state
		}
	}
	return trace.NewSpanContext(cfg)
}

// startProcess gives l its CONSUMER span: a new root linked to the context of its
// headers, or with asParent a child of it (a root without link when they carry none).
// batch is the size of the claim's batch, 0 for a claim of one.
func (tr *tracing) startProcess(l *Lease, batch int) {
	attrs := make([]attribute.KeyValue, len(tr.processAttrs), len(tr.processAttrs)+3)
	copy(attrs, tr.processAttrs)
	attrs = append(attrs, attrMessageID.String(strconv.FormatInt(l.Seq, 10)), attrConversationID.String(l.GroupID))
	if batch > 0 {
		attrs = append(attrs, attrBatchCount.Int(batch))
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...)}
	ctx := context.Background() // no span in it: a root unless asParent
	if producer := ExtractSpanContext(l.Headers); producer.IsValid() {
		if tr.asParent {
			ctx = trace.ContextWithRemoteSpanContext(ctx, producer)
		} else {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: producer}))
		}
	}
	_, l.span = tr.tracer.Start(ctx, tr.processName, opts...)
}

// startProcessAll gives each lease of a batch its span.
func (tr *tracing) startProcessAll(leases []*Lease) {
	for _, l := range leases {
		tr.startProcess(l, len(leases))
	}
}

// Span is the lease's CONSUMER span ("process <queue>") when its Transport traces
// (WithTracerProvider), else a span that records nothing. Ack ends it (status OK), Nack
// (event "nack", error status "nacked") and DeadLetter (event "dead_letter", error status
// with the reason) too, and so does a call that finds the lease lost (error status "lease
// lost"); Extend adds an event "extend". Start the handler's spans under it with
// trace.ContextWithSpan(ctx, lease.Span()).
func (l *Lease) Span() trace.Span {
	if l == nil || l.span == nil {
		return trace.SpanFromContext(context.Background()) // a no-op span
	}
	return l.span
}

// traced says whether l has a span (its Transport traces).
func (l *Lease) traced() bool { return l != nil && l.span != nil }

// leaseOutcome ends or marks l's span after a call on it returned err: nil runs done,
// a lost lease ends it with that error status; another error leaves it (the lease is still
// held). Nothing when l has no span (tracing off).
func leaseOutcome(l *Lease, err error, done func(trace.Span)) {
	if !l.traced() {
		return
	}
	switch {
	case err == nil:
		done(l.span)
	case errors.Is(err, ErrLeaseLost):
		l.span.SetStatus(codes.Error, "lease lost")
		l.span.End()
	}
}

func spanAcked(s trace.Span) {
	s.SetStatus(codes.Ok, "")
	s.End()
}

func spanNacked(delay time.Duration) func(trace.Span) {
	return func(s trace.Span) {
		s.AddEvent("nack", trace.WithAttributes(attrNackDelay.Float64(delay.Seconds())))
		s.SetStatus(codes.Error, "nacked")
		s.End()
	}
}

func spanDeadLettered(reason string) func(trace.Span) {
	return func(s trace.Span) {
		s.AddEvent("dead_letter", trace.WithAttributes(attrDeadLetterReason.String(reason)))
		s.SetStatus(codes.Error, reason)
		s.End()
	}
}

func spanExtended(s trace.Span) { s.AddEvent("extend") }

// batchOutcomes is leaseOutcome with each lease's ack outcome of a batch ack.
func batchOutcomes(leases []*Lease, acked []error) {
	for i, l := range leases {
		if i < len(acked) {
			leaseOutcome(l, acked[i], spanAcked)
		}
	}
}
