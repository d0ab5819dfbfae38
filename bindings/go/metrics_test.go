package harel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

// The counters and histograms after known calls, mapped field by field; a second
// Transport counts apart; a closed one is refused.
func TestMetrics(t *testing.T) {
	clock := newClock()
	tr := memory(t, clock)
	publish(t, tr, "a", event(0))
	if err := tr.PublishMany([]harel.Message{{GroupID: "b", Event: event(1)}, {GroupID: "c", Event: event(2)}}); err != nil {
		t.Fatal(err)
	}
	leases, err := tr.ClaimMany(context.Background(), "w", visibility, 3, 0)
	if err != nil || len(leases) != 3 {
		t.Fatalf("claim_many: %v, %d leases", err, len(leases))
	}
	if err := tr.Ack(leases[0]); err != nil {
		t.Fatal(err)
	}
	if err := tr.Ack(leases[0]); !errors.Is(err, harel.ErrLeaseLost) {
		t.Fatalf("a second ack: %v", err)
	}
	if err := tr.Nack(leases[1], 0); err != nil {
		t.Fatal(err)
	}
	if err := tr.Nack(leases[2], 5*time.Second); err != nil {
		t.Fatal(err)
	}
	again, err := tr.Claim("w", visibility)
	if err != nil || again == nil {
		t.Fatalf("claim: %v", err)
	}
	if err := tr.DeadLetter(again, "poison"); err != nil {
		t.Fatal(err)
	}
	if lease, err := tr.ClaimWait(context.Background(), "w", visibility, 10*time.Millisecond); err != nil || lease != nil {
		t.Fatalf("claim_wait on nothing ready: %v, %v", lease, err)
	}
	m, err := tr.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	counts := [...]uint64{m.Published, m.Claimed, m.Acked, m.Nacked, m.Parked, m.DeadLettered, m.DeadLetteredByClaim,
		m.LostLeases, m.BusyRetries, m.LimitHolds}
	if counts != [...]uint64{3, 4, 1, 1, 1, 1, 0, 1, 0, 0} {
		t.Fatalf("counters: %+v", m)
	}
	l := m.Latency
	calls := map[string]struct {
		h    harel.Histogram
		want uint64
	}{
		"publish": {l.Publish, 2}, "claim": {l.Claim, 2}, "claim_wait": {l.ClaimWait, 1}, "ack": {l.Ack, 2},
		"ack_and_claim": {l.AckAndClaim, 0}, "nack": {l.Nack, 2}, "extend": {l.Extend, 0}, "dead_letter": {l.DeadLetter, 1},
	}
	for name, c := range calls {
		h := c.h
		if h.Count != c.want || len(h.Bounds) != 16 || len(h.Buckets) != 16 || h.Bounds[0] != 0.0001 || h.Bounds[15] != 10 {
			t.Errorf("%s: %+v, want %d calls", name, h, c.want)
		}
		for i := 1; i < len(h.Buckets); i++ {
			if h.Buckets[i] < h.Buckets[i-1] || h.Buckets[i] > h.Count {
				t.Errorf("%s: buckets not cumulative: %v", name, h.Buckets)
			}
		}
		if (h.Count > 0) != (h.Sum > 0) {
			t.Errorf("%s: sum %g for %d calls", name, h.Sum, h.Count)
		}
	}
	if l.ClaimWait.Sum < 0.01 {
		t.Errorf("claim_wait's sum %g leaves its 10 ms wait out", l.ClaimWait.Sum)
	}
	other, err := memory(t, clock).Metrics()
	if err != nil || other.Published != 0 || other.Latency.Publish.Count != 0 {
		t.Fatalf("another transport: %+v, %v", other, err)
	}
	closed := memory(t, clock)
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := closed.Metrics(); !errors.Is(err, harel.ErrClosed) {
		t.Fatalf("metrics of a closed transport: %v", err)
	}
}
