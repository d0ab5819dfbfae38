package harel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// Headers go with the message, in order, and come back with its lease.
func ExampleWithHeaders() {
	t, err := harel.Open(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close()
	err = t.Publish("order-42", json.RawMessage(`{"kind":"paid"}`), harel.WithHeaders(
		harel.Header{Name: "content-type", Value: "application/json"},
		harel.Header{Name: "tenant", Value: "acme"}))
	if err != nil {
		log.Fatal(err)
	}
	lease, err := t.Claim("worker-1", 30*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	tenant, ok := lease.Header("tenant")
	fmt.Println(len(lease.Headers), tenant, ok)
	// Output:
	// 2 acme true
}

// With a tracer provider, a publish makes a PRODUCER span whose context travels in the
// message's traceparent header, and its lease a CONSUMER span linked to it.
func ExampleWithTracerProvider() {
	exporter := tracetest.NewInMemoryExporter() // a real program exports to its backend
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	t, err := harel.Open(":memory:", harel.WithTracerProvider(tp))
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close()

	ctx, request := tp.Tracer("app").Start(context.Background(), "handle request")
	if err := t.PublishContext(ctx, "order-42", json.RawMessage(`{"kind":"paid"}`)); err != nil {
		log.Fatal(err)
	}
	request.End()

	lease, err := t.Claim("worker-1", 30*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	_, work := tp.Tracer("app").Start(trace.ContextWithSpan(context.Background(), lease.Span()), "work")
	work.End()
	if err := t.Ack(lease); err != nil { // ends the lease's span
		log.Fatal(err)
	}
	for _, s := range exporter.GetSpans() {
		fmt.Printf("%s (%s), links %d\n", s.Name, s.SpanKind, len(s.Links))
	}
	// Output:
	// publish harel (producer), links 0
	// handle request (internal), links 0
	// work (internal), links 0
	// process harel (consumer), links 1
}
