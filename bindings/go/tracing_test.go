package harel_test

// Mapping tests of OpenTelemetry tracing (issue 37, /work/notes' shared spec): spans
// recorded with the SDK's in-memory exporter, checked field by field: the PRODUCER span of
// each publish form and the traceparent/tracestate headers it writes (through the library's
// harel_traceparent_format), the CONSUMER span of each claim, linked or parented, and how
// ack, nack, dead_letter, extend and a lost lease end it; batches; a transaction's publish
// ending at its commit; an invalid traceparent ignored; tracing off.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// recorder is a tracer provider whose ended spans are kept in memory.
type recorder struct {
	exporter *tracetest.InMemoryExporter
	tp       *sdktrace.TracerProvider
}

func newRecorder() *recorder {
	e := tracetest.NewInMemoryExporter()
	return &recorder{exporter: e, tp: sdktrace.NewTracerProvider(sdktrace.WithSyncer(e))}
}

// ended are the spans ended since the last call, and forgets them.
func (r *recorder) ended() tracetest.SpanStubs {
	spans := r.exporter.GetSpans()
	r.exporter.Reset()
	return spans
}

// one expects exactly one span ended since the last call.
func (r *recorder) one(t *testing.T, what string) tracetest.SpanStub {
	t.Helper()
	spans := r.ended()
	if len(spans) != 1 {
		t.Fatalf("%s: %d spans ended, want 1: %v", what, len(spans), names(spans))
	}
	return spans[0]
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

// parent starts a span of the test's own, the parent of the publishes under its context.
func (r *recorder) parent() (context.Context, trace.Span) {
	return r.tp.Tracer("test").Start(context.Background(), "parent")
}

// wantAttributes fails unless the span's attributes are exactly want.
func wantAttributes(t *testing.T, what string, s tracetest.SpanStub, want map[string]any) {
	t.Helper()
	got := map[string]any{}
	for _, kv := range s.Attributes {
		got[string(kv.Key)] = kv.Value.AsInterface()
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: attributes\n got %v\nwant %v", what, got, want)
	}
}

func producerAttrs(queue string, extra map[string]any) map[string]any {
	m := map[string]any{"messaging.system": "harel", "messaging.operation.type": "send",
		"messaging.operation.name": "publish", "messaging.destination.name": queue}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func consumerAttrs(queue string, l *harel.Lease, extra map[string]any) map[string]any {
	m := map[string]any{"messaging.system": "harel", "messaging.operation.type": "process",
		"messaging.operation.name": "process", "messaging.destination.name": queue,
		"messaging.message.id": fmt.Sprint(l.Seq), "messaging.message.conversation_id": l.GroupID}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// traceparentOf is the traceparent of sc, as W3C Trace Context writes it (the expected
// value of a header, not a parser: the binding's goes through the library).
func traceparentOf(sc trace.SpanContext) string {
	return fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags())
}

func wantStatus(t *testing.T, what string, s tracetest.SpanStub, code codes.Code, description string) {
	t.Helper()
	if s.Status.Code != code || s.Status.Description != description {
		t.Errorf("%s: status %v %q, want %v %q", what, s.Status.Code, s.Status.Description, code, description)
	}
}

func wantEvent(t *testing.T, what string, s tracetest.SpanStub, name string, attrs ...attribute.KeyValue) {
	t.Helper()
	for _, e := range s.Events {
		if e.Name == name {
			if !reflect.DeepEqual(attribute.NewSet(e.Attributes...), attribute.NewSet(attrs...)) {
				t.Errorf("%s: event %s has %v, want %v", what, name, e.Attributes, attrs)
			}
			return
		}
	}
	t.Errorf("%s: no event %q among %v", what, name, s.Events)
}

// A publish's PRODUCER span: its name, kind, parent and attributes; the headers it
// writes, the caller's kept in order and a traceparent given by the caller replaced.
func TestTracingPublish(t *testing.T) {
	rec := newRecorder()
	tr := open(t, ":memory:", harel.WithTracerProvider(rec.tp))
	ctx, parent := rec.parent()
	defer parent.End()
	err := tr.PublishContext(ctx, "g", event(1), harel.WithHeaders(harel.Header{Name: "a", Value: "1"},
		harel.Header{Name: "traceparent", Value: "the caller's"}, harel.Header{Name: "b", Value: "2"},
		harel.Header{Name: "traceparent", Value: "another"}))
	if err != nil {
		t.Fatal(err)
	}
	s := rec.one(t, "publish")
	if s.Name != "publish harel" || s.SpanKind != trace.SpanKindProducer {
		t.Errorf("span %q of kind %v", s.Name, s.SpanKind)
	}
	if s.Parent.SpanID() != parent.SpanContext().SpanID() || s.SpanContext.TraceID() != parent.SpanContext().TraceID() {
		t.Errorf("parent %v, want the context's span %v", s.Parent, parent.SpanContext())
	}
	wantAttributes(t, "publish", s, producerAttrs("harel", map[string]any{"messaging.message.conversation_id": "g"}))
	wantStatus(t, "publish", s, codes.Unset, "")
	lease := claim(t, tr, "w")
	wantHeaders(t, "publish", lease.Headers, []harel.Header{{Name: "a", Value: "1"},
		{Name: "traceparent", Value: traceparentOf(s.SpanContext)}, {Name: "b", Value: "2"}})
	if sc := harel.ExtractSpanContext(lease.Headers); sc.TraceID() != s.SpanContext.TraceID() || sc.SpanID() != s.SpanContext.SpanID() ||
		!sc.IsSampled() || !sc.IsRemote() {
		t.Errorf("the header's context %v, want the span's %v", sc, s.SpanContext)
	}
	ack(t, tr, lease)
	rec.ended()

	// Each other form: Publish without a context (a root), with a delivery option (the
	// seq known), PublishWith (the seq); a failed publish (an error status).
	publish(t, tr, "g", event(2))
	s = rec.one(t, "publish without a context")
	if s.Parent.IsValid() || s.Name != "publish harel" {
		t.Errorf("a publish without a context: parent %v", s.Parent)
	}
	p, err := tr.PublishWithContext(ctx, "h", event(3), harel.WithKey("k"))
	if err != nil {
		t.Fatal(err)
	}
	s = rec.one(t, "publish_with")
	wantAttributes(t, "publish_with", s, producerAttrs("harel", map[string]any{
		"messaging.message.conversation_id": "h", "messaging.message.id": fmt.Sprint(p.Seq)}))
	if err := tr.PublishContext(ctx, "h", event(4), harel.WithDelay(time.Second)); err != nil {
		t.Fatal(err)
	}
	s = rec.one(t, "publish with a delay")
	page, err := tr.Peek("h", "", 10)
	if err != nil || len(page.Messages) != 2 {
		t.Fatalf("peek: %+v, %v", page, err)
	}
	wantAttributes(t, "publish with a delay", s, producerAttrs("harel", map[string]any{
		"messaging.message.conversation_id": "h", "messaging.message.id": fmt.Sprint(page.Messages[1].Seq)}))
	err = tr.PublishContext(ctx, "", event(5))
	wantError(t, "an empty group", err, harel.ErrArgument, "group_id")
	wantStatus(t, "a failed publish", rec.one(t, "a failed publish"), codes.Error, err.Error())

	// A context done before the publish: nothing published, no span.
	done, cancel := context.WithCancel(ctx)
	cancel()
	err = tr.PublishContext(done, "g", event(6))
	if !errors.Is(err, harel.ErrInterrupted) || !errors.Is(err, context.Canceled) {
		t.Errorf("a done context: %v", err)
	}
	if _, err := tr.PublishWithContext(done, "g", event(6)); !errors.Is(err, context.Canceled) {
		t.Errorf("a done context: %v", err)
	}
	if err := tr.PublishManyContext(done, []harel.Message{{GroupID: "g", Event: event(6)}}); !errors.Is(err, context.Canceled) {
		t.Errorf("a done context: %v", err)
	}
	if _, err := tr.PublishManyWithContext(done, []harel.Message{{GroupID: "g", Event: event(6)}}); !errors.Is(err, context.Canceled) {
		t.Errorf("a done context: %v", err)
	}
	if spans := rec.ended(); len(spans) != 0 {
		t.Errorf("publishes of a done context made spans: %v", names(spans))
	}
	if st := stats(t, tr); st.Messages != 3 {
		t.Errorf("%d messages, want 3", st.Messages)
	}
}

// The queue is the prefix; a tracestate of the span's context is written beside the
// traceparent (replacing the caller's).
func TestTracingPrefixAndTracestate(t *testing.T) {
	rec := newRecorder()
	tr := open(t, ":memory:", harel.WithTracerProvider(rec.tp), harel.WithPrefix("orders"))
	state, err := trace.ParseTraceState("vendor=abc,other=x-1")
	if err != nil {
		t.Fatal(err)
	}
	remote := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6},
		TraceFlags: trace.FlagsSampled, TraceState: state, Remote: true})
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), remote)
	if err := tr.PublishContext(ctx, "g", event(1), harel.WithHeaders(harel.Header{Name: "tracestate", Value: "mine=1"})); err != nil {
		t.Fatal(err)
	}
	s := rec.one(t, "publish")
	if s.Name != "publish orders" || s.Parent.SpanID() != remote.SpanID() || s.SpanContext.TraceID() != remote.TraceID() {
		t.Errorf("span %q, parent %v", s.Name, s.Parent)
	}
	wantAttributes(t, "publish", s, producerAttrs("orders", map[string]any{"messaging.message.conversation_id": "g"}))
	lease := claim(t, tr, "w")
	wantHeaders(t, "publish", lease.Headers, []harel.Header{{Name: "tracestate", Value: "vendor=abc,other=x-1"},
		{Name: "traceparent", Value: traceparentOf(s.SpanContext)}})
	ack(t, tr, lease)
	c := rec.one(t, "process")
	if c.Name != "process orders" || len(c.Links) != 1 || c.Links[0].SpanContext.TraceState().String() != "vendor=abc,other=x-1" {
		t.Errorf("process span %q, links %v", c.Name, c.Links)
	}
	wantAttributes(t, "process", c, consumerAttrs("orders", lease, nil))
}

// A lease's CONSUMER span: by default a new root linked to the producer's span; with
// WithTraceAsParent its child; ended OK by the ack.
func TestTracingClaimLinkedOrParented(t *testing.T) {
	rec := newRecorder()
	path := tempDB(t)
	producer := open(t, path, harel.WithTracerProvider(rec.tp))
	for _, asParent := range []bool{false, true} {
		worker := open(t, path, harel.WithTracerProvider(rec.tp), harel.WithTraceAsParent(asParent))
		publish(t, producer, "g", event(1))
		ps := rec.one(t, "publish")
		lease := claim(t, worker, "w")
		if spans := rec.ended(); len(spans) != 0 {
			t.Fatalf("spans ended before the ack: %v", names(spans))
		}
		if !lease.Span().IsRecording() {
			t.Errorf("the lease's span is not recording")
		}
		ack(t, worker, lease)
		cs := rec.one(t, "process")
		what := fmt.Sprintf("as parent %v", asParent)
		if cs.Name != "process harel" || cs.SpanKind != trace.SpanKindConsumer || !cs.SpanContext.Equal(lease.Span().SpanContext()) {
			t.Errorf("%s: span %q of kind %v", what, cs.Name, cs.SpanKind)
		}
		wantAttributes(t, what, cs, consumerAttrs("harel", lease, nil))
		wantStatus(t, what, cs, codes.Ok, "")
		if asParent {
			if cs.Parent.SpanID() != ps.SpanContext.SpanID() || !cs.Parent.IsRemote() ||
				cs.SpanContext.TraceID() != ps.SpanContext.TraceID() || len(cs.Links) != 0 {
				t.Errorf("%s: parent %v, links %v; want the producer's span %v as parent", what, cs.Parent, cs.Links, ps.SpanContext)
			}
		} else {
			if cs.Parent.IsValid() || cs.SpanContext.TraceID() == ps.SpanContext.TraceID() || len(cs.Links) != 1 ||
				cs.Links[0].SpanContext.TraceID() != ps.SpanContext.TraceID() || cs.Links[0].SpanContext.SpanID() != ps.SpanContext.SpanID() {
				t.Errorf("%s: parent %v, links %v; want a root linked to %v", what, cs.Parent, cs.Links, ps.SpanContext)
			}
		}
	}
}

// How the worker's calls end a lease's span: nack, dead_letter, a lost lease (ack and
// extend); extend adds an event.
func TestTracingLeaseEnds(t *testing.T) {
	rec := newRecorder()
	tr := open(t, ":memory:", harel.WithTracerProvider(rec.tp))
	publish(t, tr, "g", event(1))
	rec.ended()

	lease := claim(t, tr, "w")
	if err := tr.Extend(lease, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := tr.Nack(lease, 2500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	s := rec.one(t, "nack")
	wantEvent(t, "extend", s, "extend")
	wantEvent(t, "nack", s, "nack", attribute.Float64("messaging.harel.nack_delay", 2.5))
	wantStatus(t, "nack", s, codes.Error, "nacked")
	if err := tr.Nack(lease, 0); !errors.Is(err, harel.ErrLeaseLost) { // ended already: nothing more
		t.Fatalf("a second nack: %v", err)
	}
	if spans := rec.ended(); len(spans) != 0 {
		t.Fatalf("a second end: %v", names(spans))
	}

	if _, err := tr.Release("g"); err != nil {
		t.Fatal(err)
	}
	lease = claim(t, tr, "w")
	if err := tr.DeadLetter(lease, "bad input"); err != nil {
		t.Fatal(err)
	}
	s = rec.one(t, "dead_letter")
	wantEvent(t, "dead_letter", s, "dead_letter", attribute.String("messaging.harel.dead_letter_reason", "bad input"))
	wantStatus(t, "dead_letter", s, codes.Error, "bad input")
	wantAttributes(t, "dead_letter", s, consumerAttrs("harel", lease, nil))

	// Lost: the group released and claimed by another worker.
	for _, finish := range []struct {
		name string
		call func(*harel.Lease) error
	}{
		{"ack", tr.Ack},
		{"extend", func(l *harel.Lease) error { return tr.Extend(l, time.Minute) }},
		{"nack", func(l *harel.Lease) error { return tr.Nack(l, time.Second) }},
		{"dead_letter", func(l *harel.Lease) error { return tr.DeadLetter(l, "r") }},
	} {
		publish(t, tr, "lost", event(2))
		rec.ended()
		lease := claim(t, tr, "w1")
		if _, err := tr.Release("lost"); err != nil {
			t.Fatal(err)
		}
		other := claim(t, tr, "w2")
		wantError(t, finish.name+" of a lost lease", finish.call(lease), harel.ErrLeaseLost)
		s := rec.one(t, finish.name+" of a lost lease")
		wantStatus(t, finish.name+" of a lost lease", s, codes.Error, "lease lost")
		if !s.SpanContext.Equal(lease.Span().SpanContext()) || len(s.Events) != 0 {
			t.Errorf("%s of a lost lease: the span %v, events %v", finish.name, s.SpanContext, s.Events)
		}
		ack(t, tr, other)
		rec.ended()
	}
}

// Batches: one PRODUCER span for a publish_many (the batch's count; its group when there
// is one), every message carrying its context; a claim_many's and an
// ack_and_claim_many's spans with the batch's size; ack_many and ack_and_claim end
// theirs.
func TestTracingBatches(t *testing.T) {
	rec := newRecorder()
	tr := open(t, ":memory:", harel.WithTracerProvider(rec.tp))
	ctx, parent := rec.parent()
	defer parent.End()
	ctxBg := context.Background()
	if err := tr.PublishManyContext(ctx, []harel.Message{{GroupID: "a", Event: event(1)},
		{GroupID: "b", Event: event(2), Headers: []harel.Header{{Name: "x", Value: "y"}}}, {GroupID: "c", Event: event(3)}}); err != nil {
		t.Fatal(err)
	}
	batch := rec.one(t, "publish_many")
	if batch.Parent.SpanID() != parent.SpanContext().SpanID() || batch.SpanKind != trace.SpanKindProducer {
		t.Errorf("publish_many: parent %v, kind %v", batch.Parent, batch.SpanKind)
	}
	wantAttributes(t, "publish_many", batch, producerAttrs("harel", map[string]any{"messaging.batch.message_count": int64(3)}))
	leases, err := tr.ClaimMany(ctxBg, "w", visibility, 10, 0)
	if err != nil || len(leases) != 3 {
		t.Fatalf("claim_many: %d, %v", len(leases), err)
	}
	tp := traceparentOf(batch.SpanContext)
	wantHeaders(t, "a", leases[0].Headers, []harel.Header{{Name: "traceparent", Value: tp}})
	wantHeaders(t, "b", leases[1].Headers, []harel.Header{{Name: "x", Value: "y"}, {Name: "traceparent", Value: tp}})
	wantHeaders(t, "c", leases[2].Headers, []harel.Header{{Name: "traceparent", Value: tp}})

	// ack_many: a, and b lost; c is acked by ack_and_claim_many, which claims d and e.
	if _, err := tr.Release("b"); err != nil {
		t.Fatal(err)
	}
	stolen := claim(t, tr, "other")
	if _, err := tr.PublishManyWithContext(ctx, []harel.Message{{GroupID: "d", Event: event(4)}, {GroupID: "d", Event: event(5)},
		{GroupID: "e", Event: event(6), Key: "k"}}); err != nil {
		t.Fatal(err)
	}
	withBatch := rec.one(t, "publish_many_with")
	wantAttributes(t, "publish_many_with", withBatch, producerAttrs("harel", map[string]any{"messaging.batch.message_count": int64(3)}))
	if _, err := tr.PublishManyWith([]harel.Message{{GroupID: "f", Event: event(7)}, {GroupID: "f", Event: event(8)}}); err != nil {
		t.Fatal(err)
	}
	oneGroup := rec.one(t, "publish_many_with of one group")
	wantAttributes(t, "one group", oneGroup, producerAttrs("harel", map[string]any{"messaging.batch.message_count": int64(2),
		"messaging.message.conversation_id": "f"}))
	if oneGroup.Parent.IsValid() {
		t.Errorf("publish_many_with without a context: parent %v", oneGroup.Parent)
	}
	acked, err := tr.AckMany(leases[:2])
	if err != nil || acked[0] != nil || !errors.Is(acked[1], harel.ErrLeaseLost) {
		t.Fatalf("ack_many: %v, %v", acked, err)
	}
	spans := rec.ended()
	if len(spans) != 2 {
		t.Fatalf("ack_many ended %v", names(spans))
	}
	for i, s := range spans {
		if !s.SpanContext.Equal(leases[i].Span().SpanContext()) {
			t.Fatalf("ack_many: span %d is not lease %d's", i, i)
		}
		wantAttributes(t, "claim_many", s, consumerAttrs("harel", leases[i], map[string]any{"messaging.batch.message_count": int64(3)}))
		if len(s.Links) != 1 || s.Links[0].SpanContext.SpanID() != batch.SpanContext.SpanID() {
			t.Errorf("claim_many: links %v, want the batch's span", s.Links)
		}
	}
	wantStatus(t, "ack_many: acked", spans[0], codes.Ok, "")
	wantStatus(t, "ack_many: lost", spans[1], codes.Error, "lease lost")
	ack(t, tr, stolen)
	rec.ended()

	next, acked, err := tr.AckAndClaimMany(leases[2:], "w", visibility, 2)
	if err != nil || acked[0] != nil || len(next) != 2 {
		t.Fatalf("ack_and_claim_many: %d, %v, %v", len(next), acked, err)
	}
	s := rec.one(t, "ack_and_claim_many")
	if !s.SpanContext.Equal(leases[2].Span().SpanContext()) {
		t.Errorf("ack_and_claim_many ended %v, not c's span", s.SpanContext)
	}
	wantStatus(t, "ack_and_claim_many", s, codes.Ok, "")
	// next's spans end with the ack_and_claim that acks one and claims the last message
	last, err := tr.AckAndClaim(next[0], "w", visibility)
	if err != nil || last == nil {
		t.Fatalf("ack_and_claim: %v, %v", last, err)
	}
	s = rec.one(t, "ack_and_claim")
	wantAttributes(t, "ack_and_claim_many", s, consumerAttrs("harel", next[0], map[string]any{"messaging.batch.message_count": int64(2)}))
	wantStatus(t, "ack_and_claim", s, codes.Ok, "")
	if _, err := tr.AckAndClaim(next[0], "w", visibility); !errors.Is(err, harel.ErrLeaseLost) {
		t.Fatalf("ack_and_claim of an acked lease: %v", err)
	}
	if spans := rec.ended(); len(spans) != 0 {
		t.Fatalf("an ended span ended again: %v", names(spans))
	}
	if _, acked, err := tr.AckAndClaimMany([]*harel.Lease{next[1], last}, "w", visibility, 1); err != nil || acked[0] != nil || acked[1] != nil {
		t.Fatalf("ack_and_claim_many: %v, %v", acked, err)
	}
	spans = rec.ended()
	if len(spans) != 2 {
		t.Fatalf("ack_and_claim_many ended %v", names(spans))
	}
	wantAttributes(t, "ack_and_claim (one)", spans[1], consumerAttrs("harel", last, nil))
	// ClaimWait: one lease, no batch
	publish(t, tr, "g", event(9))
	rec.ended()
	waited, err := tr.ClaimWait(ctxBg, "w", visibility, time.Second)
	if err != nil || waited == nil {
		t.Fatalf("claim_wait: %v, %v", waited, err)
	}
	ack(t, tr, waited)
	wantAttributes(t, "claim_wait", rec.one(t, "claim_wait"), consumerAttrs("harel", waited, nil))
}

// A transaction's publish: its span starts at the publish and ends when the commit
// returns (the seq known), with an error status when the commit failed, at the
// rollback, or at once for a publish refused.
func TestTracingTransaction(t *testing.T) {
	rec := newRecorder()
	tr := open(t, ":memory:", harel.WithTracerProvider(rec.tp))
	ctx, parent := rec.parent()
	defer parent.End()
	tx := begin(t, tr)
	if err := tx.PublishContext(ctx, "g", event(1)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Publish("h", event(2)); err != nil {
		t.Fatal(err)
	}
	if spans := rec.ended(); len(spans) != 0 {
		t.Fatalf("spans ended before the commit: %v", names(spans))
	}
	published, err := tx.Commit(context.Background())
	if err != nil || len(published) != 2 {
		t.Fatalf("commit: %v, %v", published, err)
	}
	spans := rec.ended()
	if len(spans) != 2 {
		t.Fatalf("commit ended %v", names(spans))
	}
	if spans[0].Parent.SpanID() != parent.SpanContext().SpanID() || spans[1].Parent.IsValid() {
		t.Errorf("parents %v and %v", spans[0].Parent, spans[1].Parent)
	}
	for i, group := range []string{"g", "h"} {
		wantAttributes(t, "tx publish "+group, spans[i], producerAttrs("harel", map[string]any{
			"messaging.message.conversation_id": group, "messaging.message.id": fmt.Sprint(published[i].Seq)}))
		wantStatus(t, "tx publish "+group, spans[i], codes.Unset, "")
		lease := claim(t, tr, "w")
		wantHeaders(t, "tx publish "+group, lease.Headers, []harel.Header{{Name: "traceparent", Value: traceparentOf(spans[i].SpanContext)}})
		ack(t, tr, lease)
	}
	rec.ended()

	// A commit that fails: a statement of a table that does not exist.
	tx = begin(t, tr)
	if err := tx.Exec("INSERT INTO nowhere VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if err := tx.PublishContext(ctx, "g", event(3)); err != nil {
		t.Fatal(err)
	}
	_, err = tx.Commit(context.Background())
	wantError(t, "a failed commit", err, harel.ErrDatabase)
	wantStatus(t, "a failed commit", rec.one(t, "a failed commit"), codes.Error, err.Error())

	// Rolled back; a refused publish, whose span ends at once.
	tx = begin(t, tr)
	if err := tx.Publish("g", event(4)); err != nil {
		t.Fatal(err)
	}
	err = tx.Publish("", event(5))
	wantError(t, "a refused tx publish", err, harel.ErrArgument)
	wantStatus(t, "a refused tx publish", rec.one(t, "a refused tx publish"), codes.Error, err.Error())
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := tx.PublishContext(done, "g", event(6)); !errors.Is(err, context.Canceled) || !errors.Is(err, harel.ErrInterrupted) {
		t.Errorf("a done context: %v", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "rolled back", rec.one(t, "rolled back"), codes.Error, "the transaction was rolled back")
	if st := stats(t, tr); st.Messages != 0 {
		t.Fatalf("%d messages kept", st.Messages)
	}
	// InTx: the span ends at its commit.
	if _, err := tr.InTx(ctx, func(tx *harel.Tx) error { return tx.PublishContext(ctx, "g", event(7)) }); err != nil {
		t.Fatal(err)
	}
	if s := rec.one(t, "in_tx"); s.Parent.SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("in_tx: parent %v", s.Parent)
	}
}

// A traceparent that is not valid, or none, is ignored: a root without link (also as
// parent), never an error. A tracestate that is not valid is dropped, the traceparent kept.
func TestTracingInvalidTraceContext(t *testing.T) {
	rec := newRecorder()
	path := tempDB(t)
	plain := open(t, path) // not traced: the headers go as given
	const valid = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, asParent := range []bool{false, true} {
		tr := open(t, path, harel.WithTracerProvider(rec.tp), harel.WithTraceAsParent(asParent))
		for _, c := range []struct {
			what    string
			headers []harel.Header
			link    bool
			state   string
		}{
			{"none", nil, false, ""},
			{"upper-case hex", []harel.Header{{Name: "traceparent", Value: "00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01"}}, false, ""},
			{"a trace id of zeros", []harel.Header{{Name: "traceparent", Value: "00-00000000000000000000000000000000-b7ad6b7169203331-01"}}, false, ""},
			{"version ff", []harel.Header{{Name: "traceparent", Value: "ff" + valid[2:]}}, false, ""},
			{"garbage", []harel.Header{{Name: "traceparent", Value: "not a traceparent"}, {Name: "tracestate", Value: "a=1"}}, false, ""},
			{"empty", []harel.Header{{Name: "traceparent", Value: ""}}, false, ""},
			{"another name's case", []harel.Header{{Name: "Traceparent", Value: valid}}, false, ""},
			{"valid, a tracestate not", []harel.Header{{Name: "traceparent", Value: valid}, {Name: "tracestate", Value: "A=1"}}, true, ""},
			{"valid, two tracestates", []harel.Header{{Name: "tracestate", Value: "a=1"}, {Name: "traceparent", Value: valid},
				{Name: "tracestate", Value: "b=2"}}, true, "a=1,b=2"},
			{"surrounded by spaces", []harel.Header{{Name: "traceparent", Value: " \t" + valid + " "}}, true, ""},
		} {
			what := fmt.Sprintf("%s (as parent %v)", c.what, asParent)
			publish(t, plain, "g", event(1), harel.WithHeaders(c.headers...))
			lease, err := tr.Claim("w", visibility)
			if err != nil || lease == nil {
				t.Fatalf("%s: claim: %v, %v", what, lease, err)
			}
			ack(t, tr, lease)
			s := rec.one(t, what)
			sc := s.Parent
			if !asParent {
				if len(s.Links) > 1 || s.Parent.IsValid() {
					t.Fatalf("%s: links %v, parent %v", what, s.Links, s.Parent)
				}
				sc = trace.SpanContext{}
				if len(s.Links) == 1 {
					sc = s.Links[0].SpanContext
				}
			} else if len(s.Links) != 0 {
				t.Errorf("%s: links %v as parent", what, s.Links)
			}
			if sc.IsValid() != c.link {
				t.Errorf("%s: producer context %v, want one: %v", what, sc, c.link)
				continue
			}
			if c.link && (sc.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" || sc.SpanID().String() != "b7ad6b7169203331" ||
				sc.TraceState().String() != c.state) {
				t.Errorf("%s: producer context %v (state %q)", what, sc, sc.TraceState())
			}
			if !c.link && s.SpanContext.TraceID() == (trace.TraceID{}) {
				t.Errorf("%s: no trace", what)
			}
			wantStatus(t, what, s, codes.Ok, "")
		}
	}
}

// ExtractSpanContext: a header's context, read by the library; none for none.
func TestExtractSpanContext(t *testing.T) {
	sc := harel.ExtractSpanContext([]harel.Header{{Name: "x", Value: "y"},
		{Name: "traceparent", Value: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"},
		{Name: "traceparent", Value: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		{Name: "tracestate", Value: "congo=t61rcWkgMzE"}})
	if sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() != "00f067aa0ba902b7" ||
		sc.IsSampled() || !sc.IsRemote() || sc.TraceState().String() != "congo=t61rcWkgMzE" {
		t.Errorf("the first traceparent's context: %v %q", sc, sc.TraceState())
	}
	// A higher version: its first 55 characters, of its flags only the sampled bit.
	sc = harel.ExtractSpanContext([]harel.Header{{Name: "traceparent", Value: "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff-more"}})
	if !sc.IsValid() || sc.TraceFlags() != trace.FlagsSampled {
		t.Errorf("a higher version: %v", sc)
	}
	for _, hs := range [][]harel.Header{nil, {{Name: "tracestate", Value: "a=1"}}, {{Name: "traceparent", Value: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0\x001"}}} {
		if sc := harel.ExtractSpanContext(hs); sc.IsValid() || sc.TraceState().Len() != 0 {
			t.Errorf("%q: %v", hs, sc)
		}
	}
}

// Off (no provider): no header written, no span; Lease.Span records nothing. A no-op
// provider's spans have no context of their own: none is written, or the context's own
// passed through (OpenTelemetry's API without an SDK).
func TestTracingOff(t *testing.T) {
	for _, c := range []struct {
		what string
		opts []harel.Option
	}{
		{"off", nil},
		{"a nil provider", []harel.Option{harel.WithTracerProvider(nil), harel.WithTraceAsParent(true)}},
	} {
		rec := newRecorder()
		tr := open(t, ":memory:", c.opts...)
		ctx, parent := rec.parent() // a recording span in the context, which the binding must not use
		if err := tr.PublishContext(ctx, "g", event(1)); err != nil {
			t.Fatal(err)
		}
		if err := tr.PublishManyContext(ctx, []harel.Message{{GroupID: "g", Event: event(2)}}); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.InTx(ctx, func(tx *harel.Tx) error { return tx.PublishContext(ctx, "g", event(3)) }); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			lease := claim(t, tr, "w")
			if lease.Headers != nil {
				t.Errorf("%s: headers %q", c.what, lease.Headers)
			}
			if lease.Span().IsRecording() || lease.Span().SpanContext().IsValid() {
				t.Errorf("%s: the lease's span records", c.what)
			}
			ack(t, tr, lease)
		}
		parent.End()
		if spans := rec.ended(); len(spans) != 1 || spans[0].Name != "parent" {
			t.Errorf("%s: spans %v", c.what, names(spans))
		}
	}
	var none *harel.Lease
	if none.Span().IsRecording() {
		t.Error("a nil lease's span records")
	}

	tr := open(t, ":memory:", harel.WithTracerProvider(noop.NewTracerProvider()))
	publish(t, tr, "g", event(1))
	rec := newRecorder()
	ctx, parent := rec.parent()
	defer parent.End()
	if err := tr.PublishContext(ctx, "g", event(2)); err != nil {
		t.Fatal(err)
	}
	for _, want := range [][]harel.Header{nil, {{Name: "traceparent", Value: traceparentOf(parent.SpanContext())}}} {
		lease := claim(t, tr, "w")
		wantHeaders(t, "a no-op provider", lease.Headers, want)
		if lease.Span().IsRecording() {
			t.Error("a no-op provider's span records")
		}
		ack(t, tr, lease)
	}
}
