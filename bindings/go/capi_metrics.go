package harel

// The C call of metrics: the counters and latencies, copied out and freed.

// #include "harel_transport.h"
import "C"

func (t cTransport) metrics() (Metrics, error) {
	var out *C.harel_metrics
	var cerr *C.harel_error
	s := C.harel_transport_metrics(t.p, &out, &cerr)
	defer C.harel_metrics_free(out) // NULL does nothing
	if err := check(s, &cerr); err != nil {
		return Metrics{}, err
	}
	bounds := make([]float64, len(out.bounds))
	for i, b := range out.bounds {
		bounds[i] = float64(b)
	}
	histogram := func(h C.harel_histogram) Histogram {
		buckets := make([]uint64, len(h.buckets))
		for i, n := range h.buckets {
			buckets[i] = uint64(n)
		}
		return Histogram{Bounds: bounds, Buckets: buckets, Count: uint64(h.count), Sum: float64(h.sum)}
	}
	return Metrics{
		Published:           uint64(out.published),
		Claimed:             uint64(out.claimed),
		Acked:               uint64(out.acked),
		Nacked:              uint64(out.nacked),
		Parked:              uint64(out.parked),
		DeadLettered:        uint64(out.dead_lettered),
		DeadLetteredByClaim: uint64(out.dead_lettered_by_claim),
		LostLeases:          uint64(out.lost_leases),
		BusyRetries:         uint64(out.busy_retries),
		LimitHolds:          uint64(out.limit_holds),
		Latency: Latency{
			Publish:     histogram(out.publish),
			Claim:       histogram(out.claim),
			ClaimWait:   histogram(out.claim_wait),
			Ack:         histogram(out.ack),
			AckAndClaim: histogram(out.ack_and_claim),
			Nack:        histogram(out.nack),
			Extend:      histogram(out.extend),
			DeadLetter:  histogram(out.dead_letter),
		},
	}, nil
}
