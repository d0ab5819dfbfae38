package main

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

// After known calls, a scrape through promhttp shows each counter and each histogram's
// count; the pedantic registry checks the metrics are consistent.
func TestCollectorScrape(t *testing.T) {
	tr, err := harel.Open(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	for _, g := range []string{"a", "b", "c"} {
		if err := tr.Publish(g, []byte(`{"n":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	leases, err := tr.ClaimMany(context.Background(), "w", 30*time.Second, 3, 0)
	if err != nil || len(leases) != 3 {
		t.Fatalf("claim_many: %v, %d leases", err, len(leases))
	}
	must(t, tr.Ack(leases[0]))
	if err := tr.Ack(leases[0]); err == nil {
		t.Fatal("a second ack of one lease went through")
	}
	must(t, tr.Nack(leases[1], 0))
	must(t, tr.Nack(leases[2], time.Minute))

	registry := prometheus.NewPedanticRegistry()
	registry.MustRegister(NewCollector(tr, prometheus.Labels{"queue": "test"}))
	counters := `
# HELP harel_transport_acked_messages_total Messages acked.
# TYPE harel_transport_acked_messages_total counter
harel_transport_acked_messages_total{queue="test"} 1
# HELP harel_transport_lost_leases_total Acks, nacks, extends and dead letters refused: the lease was lost.
# TYPE harel_transport_lost_leases_total counter
harel_transport_lost_leases_total{queue="test"} 1
# HELP harel_transport_nacked_messages_total Messages given back: at once (delay none) or parked.
# TYPE harel_transport_nacked_messages_total counter
harel_transport_nacked_messages_total{delay="none",queue="test"} 1
harel_transport_nacked_messages_total{delay="parked",queue="test"} 1
# HELP harel_transport_published_messages_total Messages published (committed).
# TYPE harel_transport_published_messages_total counter
harel_transport_published_messages_total{queue="test"} 3
`
	if err := testutil.GatherAndCompare(registry, strings.NewReader(counters), "harel_transport_acked_messages_total",
		"harel_transport_lost_leases_total", "harel_transport_nacked_messages_total", "harel_transport_published_messages_total"); err != nil {
		t.Fatal(err)
	}

	server := httptest.NewServer(promhttp.HandlerFor(registry, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer server.Close()
	resp, err := server.Client().Get(server.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("scrape: %d, %v", resp.StatusCode, err)
	}
	for _, line := range []string{
		`harel_transport_claimed_messages_total{queue="test"} 3`,
		`harel_transport_dead_lettered_messages_total{by="claim",queue="test"} 0`,
		`harel_transport_busy_retries_total{queue="test"} 0`,
		`harel_transport_limit_holds_total{queue="test"} 0`,
		`harel_transport_call_duration_seconds_count{operation="publish",queue="test"} 3`,
		`harel_transport_call_duration_seconds_count{operation="claim",queue="test"} 1`,
		`harel_transport_call_duration_seconds_count{operation="ack",queue="test"} 2`,
		`harel_transport_call_duration_seconds_count{operation="nack",queue="test"} 2`,
		`harel_transport_call_duration_seconds_bucket{operation="ack",queue="test",le="+Inf"} 2`,
		`harel_transport_call_duration_seconds_bucket{operation="extend",queue="test",le="10"} 0`,
	} {
		if !strings.Contains(string(body), line+"\n") {
			t.Errorf("the scrape lacks %q:\n%s", line, body)
		}
	}
}

// Claims under a concurrency limit of 1 on a key of three groups hold two of them: the
// scrape counts the two holds.
func TestCollectorCountsLimitHolds(t *testing.T) {
	tr, err := harel.Open(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	must(t, tr.SetLimit("k", harel.Limit{Concurrency: 1}))
	for _, g := range []string{"k1", "k2", "k3"} {
		must(t, tr.Publish(g, []byte(`{"n":1}`), harel.WithRoutingKey("k")))
	}
	for i := 0; i < 2; i++ { // the second claim finds k2 and k3 held already
		if _, err := tr.Claim("w", 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	registry := prometheus.NewPedanticRegistry()
	registry.MustRegister(NewCollector(tr, prometheus.Labels{"queue": "test"}))
	want := `
# HELP harel_transport_limit_holds_total Groups a claim passed over and held: their routing key had no room.
# TYPE harel_transport_limit_holds_total counter
harel_transport_limit_holds_total{queue="test"} 2
`
	err = testutil.GatherAndCompare(registry, strings.NewReader(want), "harel_transport_limit_holds_total")
	if err != nil {
		t.Fatal(err)
	}
}

// A closed Transport fails the scrape instead of reporting zeros.
func TestCollectorOfAClosedTransport(t *testing.T) {
	tr, err := harel.Open(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	registry := prometheus.NewRegistry()
	registry.MustRegister(NewCollector(tr, nil))
	must(t, tr.Close())
	if _, err := registry.Gather(); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("gather after close: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
