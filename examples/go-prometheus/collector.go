package main

import (
	"github.com/prometheus/client_golang/prometheus"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

// Collector exports what one Transport counted (Transport.Metrics), read at each scrape:
// counters and a histogram of call durations by operation. Register one per Transport;
// constLabels (a queue's name, say) tell several apart.
type Collector struct {
	t                                                                       *harel.Transport
	published, claimed, acked, nacked, deadLettered, lost, busy, limitHolds *prometheus.Desc
	duration                                                                *prometheus.Desc
}

// NewCollector is a Collector of t's metrics.
func NewCollector(t *harel.Transport, constLabels prometheus.Labels) *Collector {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("harel_transport_"+name, help, labels, constLabels)
	}
	return &Collector{
		t:            t,
		published:    desc("published_messages_total", "Messages published (committed)."),
		claimed:      desc("claimed_messages_total", "Leases handed out by claims."),
		acked:        desc("acked_messages_total", "Messages acked."),
		nacked:       desc("nacked_messages_total", "Messages given back: at once (delay none) or parked.", "delay"),
		deadLettered: desc("dead_lettered_messages_total", "Messages moved to the dead letters by a worker or by a claim.", "by"),
		lost:         desc("lost_leases_total", "Acks, nacks, extends and dead letters refused: the lease was lost."),
		busy:         desc("busy_retries_total", "Pauses after the database answered busy."),
		limitHolds:   desc("limit_holds_total", "Groups a claim passed over and held: their routing key had no room."),
		duration:     desc("call_duration_seconds", "Duration of the transport's calls, by operation.", "operation"),
	}
}

// Describe sends every metric's description.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.published, c.claimed, c.acked, c.nacked, c.deadLettered, c.lost, c.busy, c.limitHolds, c.duration,
	} {
		ch <- d
	}
}

// Collect reads the Transport's metrics and sends them; a closed Transport is an invalid
// metric, which fails the scrape.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	m, err := c.t.Metrics()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.published, err)
		return
	}
	counter := func(d *prometheus.Desc, n uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(n), labels...)
	}
	counter(c.published, m.Published)
	counter(c.claimed, m.Claimed)
	counter(c.acked, m.Acked)
	counter(c.nacked, m.Nacked, "none")
	counter(c.nacked, m.Parked, "parked")
	counter(c.deadLettered, m.DeadLettered, "worker")
	counter(c.deadLettered, m.DeadLetteredByClaim, "claim")
	counter(c.lost, m.LostLeases)
	counter(c.busy, m.BusyRetries)
	counter(c.limitHolds, m.LimitHolds)
	l := m.Latency
	for _, op := range []struct {
		name string
		h    harel.Histogram
	}{
		{"publish", l.Publish}, {"claim", l.Claim}, {"claim_wait", l.ClaimWait}, {"ack", l.Ack},
		{"ack_and_claim", l.AckAndClaim}, {"nack", l.Nack}, {"extend", l.Extend}, {"dead_letter", l.DeadLetter},
	} {
		buckets := make(map[float64]uint64, len(op.h.Bounds))
		for i, bound := range op.h.Bounds {
			buckets[bound] = op.h.Buckets[i] // cumulative already, as Prometheus wants
		}
		ch <- prometheus.MustNewConstHistogram(c.duration, op.h.Count, op.h.Sum, buckets, op.name)
	}
}
