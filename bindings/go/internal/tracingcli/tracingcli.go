// Package tracingcli is the Go side of the cross-language trace test (tests/tracing): a
// worker and a producer (cmd/tracing-worker, cmd/tracing-producer) that run with the
// OpenTelemetry SDK's in-memory exporter and write every span they ended as one JSON object
// per line.
package tracingcli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// The worker's lease length.
const visibility = 30 * time.Second

// waitInAll is how long the worker waits for its messages in all (a variable for the
// tests).
var waitInAll = 30 * time.Second

// common are the flags of both programs.
type common struct {
	queue, prefix, spans string
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.queue, "queue", "", "the queue: a file path, or a libSQL server's URL (http://127.0.0.1:PORT)")
	fs.StringVar(&c.prefix, "prefix", "harel", "the queue's table prefix")
	fs.StringVar(&c.spans, "spans", "", "the file the spans are written to, one JSON object per line")
}

func (c *common) check() error {
	if c.queue == "" || c.spans == "" {
		return errors.New("--queue and --spans are required")
	}
	return nil
}

// open opens the queue, traced by a provider whose ended spans the exporter keeps; every
// span is sampled, whatever its parent's flags.
func (c *common) open(opts ...harel.Option) (*harel.Transport, *sdktrace.TracerProvider, *tracetest.InMemoryExporter, error) {
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	tr, err := harel.Open(c.queue, append([]harel.Option{harel.WithPrefix(c.prefix), harel.WithTracerProvider(tp)}, opts...)...)
	if err != nil {
		return nil, nil, nil, err
	}
	return tr, tp, exporter, nil
}

// parse parses args into fs, its usage and errors on stderr; false after -h or an error.
func parse(fs *flag.FlagSet, args []string, stderr io.Writer) bool {
	fs.SetOutput(stderr)
	return fs.Parse(args) == nil
}

// Worker runs `tracing-worker --queue Q [--prefix P] --spans FILE --key KEY --count N`: it
// claims N messages of routing key KEY (waiting up to 30 s in all), acks each, writes the
// spans and returns 0; 1 with a message on stderr when fewer came (the spans written all
// the same) or a call failed; 2 for bad arguments.
func Worker(args []string, stderr io.Writer) int {
	var c common
	fs := flag.NewFlagSet("tracing-worker", flag.ContinueOnError)
	c.register(fs)
	key := fs.String("key", "", "the routing key of the messages to claim")
	count := fs.Int("count", 0, "how many messages to claim and ack")
	if !parse(fs, args, stderr) {
		return 2
	}
	if err := c.check(); err != nil || *key == "" || *count < 0 {
		fmt.Fprintln(stderr, "tracing-worker: --queue, --spans and --key are required, --count at least 0")
		return 2
	}
	tr, tp, exporter, err := c.open()
	if err != nil {
		fmt.Fprintln(stderr, "tracing-worker:", err)
		return 1
	}
	got, failed := 0, error(nil)
	deadline := time.Now().Add(waitInAll)
	for got < *count {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		lease, err := tr.ClaimWait(context.Background(), "go-tracing-worker", visibility, left, harel.WithRoutingKeys(*key))
		if err != nil {
			failed = err
			break
		}
		if lease == nil {
			break // the wait ran out
		}
		if err := tr.Ack(lease); err != nil {
			failed = err
			break
		}
		got++
	}
	tr.Close()
	status := 0
	if failed != nil {
		fmt.Fprintln(stderr, "tracing-worker:", failed)
		status = 1
	} else if got < *count {
		fmt.Fprintf(stderr, "tracing-worker: %d of %d messages of routing key %q came within %v\n", got, *count, *key, waitInAll)
		status = 1
	}
	if err := finish(tp, exporter, c.spans); err != nil {
		fmt.Fprintln(stderr, "tracing-worker:", err)
		status = 1
	}
	return status
}

// Producer runs `tracing-producer --queue Q [--prefix P] --spans FILE --traceparent TP
// --keys go,node,...`: under the remote context of TP (read by the library), for each key
// K it publishes {"from":"go","key":"K"} to group go-K with routing key K, each publish its
// own span; it writes the spans and returns 0; 1 when a call failed; 2 for bad arguments
// (a traceparent that is not valid among them).
func Producer(args []string, stderr io.Writer) int {
	var c common
	fs := flag.NewFlagSet("tracing-producer", flag.ContinueOnError)
	c.register(fs)
	traceparent := fs.String("traceparent", "", "the W3C traceparent of the remote parent of the publishes")
	keys := fs.String("keys", "", "the routing keys, comma-separated: one message each")
	if !parse(fs, args, stderr) {
		return 2
	}
	if err := c.check(); err != nil || *keys == "" {
		fmt.Fprintln(stderr, "tracing-producer: --queue, --spans, --traceparent and --keys are required")
		return 2
	}
	parent := harel.ExtractSpanContext([]harel.Header{{Name: harel.TraceparentHeader, Value: *traceparent}})
	if !parent.IsValid() {
		fmt.Fprintf(stderr, "tracing-producer: --traceparent %q is not a valid traceparent\n", *traceparent)
		return 2
	}
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), parent)
	tr, tp, exporter, err := c.open()
	if err != nil {
		fmt.Fprintln(stderr, "tracing-producer:", err)
		return 1
	}
	status := 0
	for _, key := range strings.Split(*keys, ",") {
		event, _ := json.Marshal(struct {
			From string `json:"from"`
			Key  string `json:"key"`
		}{"go", key})
		if err := tr.PublishContext(ctx, "go-"+key, event, harel.WithRoutingKey(key)); err != nil {
			fmt.Fprintf(stderr, "tracing-producer: publish for %q: %v\n", key, err)
			status = 1
			break
		}
	}
	tr.Close()
	if err := finish(tp, exporter, c.spans); err != nil {
		fmt.Fprintln(stderr, "tracing-producer:", err)
		status = 1
	}
	return status
}

// finish shuts the provider down and writes the spans its exporter kept.
func finish(tp *sdktrace.TracerProvider, exporter *tracetest.InMemoryExporter, path string) error {
	spans := exporter.GetSpans() // before the shutdown, which resets the exporter
	if err := tp.Shutdown(context.Background()); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := WriteSpans(f, spans); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Span is one span as the trace test reads it.
type Span struct {
	Lang         string         `json:"lang"`
	Name         string         `json:"name"`
	Kind         string         `json:"kind"`
	TraceID      string         `json:"trace_id"`
	SpanID       string         `json:"span_id"`
	ParentSpanID *string        `json:"parent_span_id"`
	Links        []Link         `json:"links"`
	Attributes   map[string]any `json:"attributes"`
	Status       string         `json:"status"`
}

// Link is one of a span's links.
type Link struct {
	TraceID string `json:"trace_id"`
	SpanID  string `json:"span_id"`
}

// FromStub is s as the trace test reads it.
func FromStub(s tracetest.SpanStub) Span {
	out := Span{
		Lang:       "go",
		Name:       s.Name,
		Kind:       s.SpanKind.String(), // "producer", "consumer", ...
		TraceID:    s.SpanContext.TraceID().String(),
		SpanID:     s.SpanContext.SpanID().String(),
		Links:      []Link{},
		Attributes: map[string]any{},
		Status:     "unset",
	}
	if s.Parent.IsValid() {
		parent := s.Parent.SpanID().String()
		out.ParentSpanID = &parent
	}
	for _, l := range s.Links {
		out.Links = append(out.Links, Link{TraceID: l.SpanContext.TraceID().String(), SpanID: l.SpanContext.SpanID().String()})
	}
	for _, kv := range s.Attributes {
		out.Attributes[string(kv.Key)] = kv.Value.AsInterface()
	}
	switch s.Status.Code {
	case codes.Ok:
		out.Status = "ok"
	case codes.Error:
		out.Status = "error"
	}
	return out
}

// WriteSpans writes each span as one JSON object on a line of its own.
func WriteSpans(w io.Writer, spans tracetest.SpanStubs) error {
	enc := json.NewEncoder(w)
	for _, s := range spans {
		if err := enc.Encode(FromStub(s)); err != nil {
			return err
		}
	}
	return nil
}
