package harel_test

// Lifetimes of headers and tracing (leak_test.go's way): the headers' C arrays and string
// copies of every publish form, the headers copied out of leases, peeks and dead letters,
// the traceparent written and read through the library, refusals; with tracing on.

import (
	"context"
	"strings"
	"testing"

	harel "github.com/harel-transport/harel-transport/bindings/go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func TestHeadersAndTracingFreeWhatTheyAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	tp := sdktrace.NewTracerProvider() // spans made and ended, exported nowhere
	tr := open(t, tempDB(t), harel.WithSynchronousFull(false), harel.WithTracerProvider(tp))
	big := strings.Repeat("x", 8192)
	hs := []harel.Header{{Name: "big", Value: big}, {Name: "a", Value: "1"}, {Name: "a", Value: "é=2"},
		{Name: "tracestate", Value: "k=v"}}
	group := "group-" + big[:1024]
	ev := event(1)
	ctx := context.Background()
	withHeaders := harel.WithHeaders(hs...)
	round := func() {
		if err := tr.Publish(group, ev, withHeaders); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.PublishWith(group, ev, withHeaders); err != nil {
			t.Fatal(err)
		}
		msgs := []harel.Message{{GroupID: group, Event: ev, Headers: hs}, {GroupID: group + "2", Event: ev, Headers: hs}}
		if err := tr.PublishMany(msgs); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.PublishManyWith(msgs); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.InTx(ctx, func(tx *harel.Tx) error { return tx.Publish(group, ev, withHeaders) }); err != nil {
			t.Fatal(err)
		}
		// refusals: the library's (a bad name) and the binding's (a NUL byte), with the
		// kilobytes of the good headers copied before them
		bad := append(append([]harel.Header{}, hs...), harel.Header{Name: "x=" + big[:100], Value: "v"})
		if err := tr.Publish(group, ev, harel.WithHeaders(bad...)); err == nil {
			t.Fatal("a bad name was taken")
		}
		nul := append(append([]harel.Header{}, hs...), harel.Header{Name: "n", Value: big + "\x00"})
		if _, err := tr.PublishManyWith([]harel.Message{{GroupID: group, Event: ev, Headers: nul}}); err == nil {
			t.Fatal("a NUL byte was taken")
		}
		// seven messages, in two groups: leases, peeks, dead letters and their headers out
		if p, err := tr.Peek(group, "", 10); err != nil || len(p.Messages) != 5 || p.Messages[4].Headers[0].Value != big {
			t.Fatalf("peek: %v", err)
		}
		lease, err := tr.Claim("w", visibility)
		if err != nil || lease == nil || len(lease.Headers) != 5 {
			t.Fatalf("claim: %+v, %v", lease, err)
		}
		if err := tr.DeadLetter(lease, "r"); err != nil {
			t.Fatal(err)
		}
		if d, err := tr.DeadLetters("", "", 10); err != nil || len(d.Letters) != 1 || d.Letters[0].Headers[0].Value != big {
			t.Fatalf("dead letters: %v", err)
		}
		if n, err := tr.Redrive(harel.AllDeadLetters()); err != nil || n != 1 {
			t.Fatalf("redrive: %v", err)
		}
		leases, err := tr.ClaimMany(ctx, "w", visibility, 10, 0)
		if err != nil || len(leases) != 2 {
			t.Fatalf("claim_many: %d, %v", len(leases), err)
		}
		for {
			next, _, err := tr.AckAndClaimMany(leases, "w", visibility, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(next) == 0 {
				break
			}
			leases = next
		}
		if sc := harel.ExtractSpanContext(lease.Headers); !sc.IsValid() {
			t.Fatal("no trace context in the headers")
		}
		if st := stats(t, tr); st.Messages != 0 {
			t.Fatalf("%d messages left", st.Messages)
		}
	}
	const rounds, limit = 600, 3 << 20 // a leak of one 8 KiB value per round: 4.8 MiB
	set := func() {
		for i := 0; i < rounds; i++ {
			round()
		}
	}
	set()
	grown := settledGrowth(t, limit, set)
	t.Logf("resident memory grew by %d KiB over %d rounds of headers and spans", grown/1024, rounds)
	if grown > limit {
		t.Fatalf("resident memory grew by %d KiB over %d rounds of headers and spans: a leak", grown/1024, rounds)
	}
}
