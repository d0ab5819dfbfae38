package harel

// Metrics is what one Transport counted since it was opened: what only this process can
// see (the queue's own counts are Stats). Counters only go up; export them with your own
// metrics client (examples/go-prometheus has a Prometheus collector).
type Metrics struct {
	// Published counts messages committed by Publish and PublishMany (messages, not calls).
	Published uint64
	// Claimed counts leases handed out, by every kind of claim.
	Claimed uint64
	// Acked counts messages acked (Ack, AckMany, the acks of AckAndClaim*).
	Acked uint64
	// Nacked counts Nacks that gave the message back at once (delay 0); Parked those that
	// parked it (delay > 0).
	Nacked, Parked uint64
	// DeadLettered counts messages a worker moved to the dead letters (DeadLetter);
	// DeadLetteredByClaim heads a claim moved there instead of handing them out (over
	// WithMaxAttempts, or not UTF-8).
	DeadLettered, DeadLetteredByClaim uint64
	// LostLeases counts acks, nacks, extends and dead letters refused with ErrLeaseLost.
	LostLeases uint64
	// BusyRetries counts pauses after the database answered busy, before trying again.
	BusyRetries uint64
	// LimitHolds counts groups a claim passed over and held because their routing key had
	// no room under its limit (SetLimit), each time one is held.
	LimitHolds uint64
	// Latency has each operation's calls by duration.
	Latency Latency
}

// Latency has a histogram per operation. Failed calls count; calls refused for a bad
// argument do not.
type Latency struct {
	// Publish: Publish and PublishMany (publishes that shared a commit are one call).
	Publish Histogram
	// Claim: Claim, and ClaimMany with no wait.
	Claim Histogram
	// ClaimWait: ClaimWait and ClaimMany when they may wait: their waiting included, so
	// kept out of Claim.
	ClaimWait Histogram
	// Ack: Ack and AckMany; AckAndClaim: AckAndClaim and AckAndClaimMany.
	Ack, AckAndClaim Histogram
	Nack, Extend     Histogram
	DeadLetter       Histogram
}

// Histogram counts calls by duration, cumulatively, as Prometheus histograms do.
type Histogram struct {
	// Bounds are the buckets' upper bounds in seconds, the same for every histogram:
	// 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
	// 2.5, 5, 10.
	Bounds []float64
	// Buckets[i] counts the calls that took at most Bounds[i] seconds.
	Buckets []uint64
	// Count counts every call (the +Inf bucket); Sum is their total, in seconds.
	Count uint64
	Sum   float64
}

// Metrics reads what t counted since it was opened. It reads memory only: no database
// access, no lock.
//
// Errors: ErrClosed.
func (t *Transport) Metrics() (Metrics, error) {
	var m Metrics
	err := t.call(func(h cTransport) (err error) {
		m, err = h.metrics()
		return err
	})
	return m, err
}
