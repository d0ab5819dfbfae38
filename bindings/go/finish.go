package harel

// What a worker does with a lease it holds: acks it (Ack, AckMany), gives it back (Nack),
// moves it to the dead letters (DeadLetter), or keeps it longer (Extend, KeepAlive).

import (
	"context"
	"sync"
	"time"
)

// Ack finishes a lease: the message is deleted (and its group's row with the last one).
// The lease's GroupID goes to the library whole, with its length: a group id holding NUL
// bytes (written by another program) is acked as it was claimed.
//
// Errors: ErrLeaseLost (the message is gone or no longer leased to lease.WorkerID: acked
// or nacked already, or the lease lapsed and another worker claimed it; nothing changed),
// ErrArgument (lease nil, GroupID or WorkerID empty, WorkerID holding a NUL byte,
// "__parked__" or "__delayed__"), ErrBusy, ErrDatabase, ErrClosed.
func (t *Transport) Ack(lease *Lease) error {
	err := t.call(func(h cTransport) error { return h.finish(lease, false, 0) })
	leaseOutcome(lease, err, spanAcked)
	return err
}

// AckMany acks leases in one transaction (one commit), in order. acked has an element per
// lease: nil when it was acked, or an error matching ErrLeaseLost when it was lost (as Ack
// would report it; nothing of it changed) while the others were acked all the same; on a
// sharded queue, a lease of a shard whose transaction failed has that error (ErrBusy, ...:
// not acked, still held). err is the whole call's: then nothing was acked and acked is
// nil. An empty leases does nothing.
//
// Errors: ErrArgument (a lease nil or as for Ack, named by its index "leases[2]"; nothing
// was acked), ErrBusy, ErrDatabase, ErrConnect, ErrClosed.
func (t *Transport) AckMany(leases []*Lease) (acked []error, err error) {
	err = t.call(func(h cTransport) (err error) {
		acked, err = h.ackMany(leases)
		return err
	})
	if t.tracing != nil && err == nil {
		batchOutcomes(leases, acked)
	}
	return acked, err
}

// Nack gives a leased message back. With delay 0 it is claimable at once, or, under a retry
// policy (WithRetry, WithRetryPolicy), parked for the backoff its claim drew
// (MessageInfo.RetryDelay); with delay > 0 it is parked for delay, blocking its group (FIFO
// order holds) until then. The lease is over either way: acking or nacking it again is
// ErrLeaseLost.
//
// Errors: as Ack's, and ErrArgument for delay < 0.
func (t *Transport) Nack(lease *Lease, delay time.Duration) error {
	err := t.call(func(h cTransport) error { return h.finish(lease, true, delay) })
	if lease.traced() {
		leaseOutcome(lease, err, spanNacked(delay))
	}
	return err
}

// DeadLetter moves the leased message to the dead letters with reason (not empty), for a
// worker that knows the message will never succeed; its group goes on with the next
// message at once. The lease is over, as after Ack. It reads the lease as Ack does.
//
// Errors: ErrLeaseLost (as Ack's; nothing changed), ErrArgument (as Ack's, or reason empty,
// holding a NUL byte or invalid UTF-8), ErrBusy, ErrDatabase, ErrClosed.
func (t *Transport) DeadLetter(lease *Lease, reason string) error {
	err := t.call(func(h cTransport) error { return h.deadLetter(lease, reason) })
	if lease.traced() {
		leaseOutcome(lease, err, spanDeadLettered(reason))
	}
	return err
}

// Extend makes lease run to now + visibility and sets lease.LockExpiry to its new end: a
// handler that runs longer than its visibility keeps its message (see KeepAlive, which
// does it periodically). A lease that lapsed but that no other worker claimed since is
// still this worker's, and is extended.
//
// Errors: ErrLeaseLost (acked or nacked already, or it lapsed and another worker claimed
// the message; nothing changed), ErrArgument (as for Ack, or visibility <= 0), ErrBusy,
// ErrDatabase, ErrConnect, ErrClosed.
func (t *Transport) Extend(lease *Lease, visibility time.Duration) error {
	err := t.call(func(h cTransport) error { return h.extend(lease, visibility) })
	leaseOutcome(lease, err, spanExtended)
	return err
}

// KeepAlive keeps lease for as long as a handler works on it: every visibility/3 it extends
// the lease to now + visibility, until stop is called or ctx is done. The context it
// returns, derived from ctx, is cancelled if an extension fails (the lease lost to another
// worker, the database busy beyond its timeout, the Transport closed): the handler should
// then give up, as another worker may have the message. stop ends the heartbeat, waits
// for an extension in progress, copies the lease's latest end into lease.LockExpiry, and
// returns the error that ended the heartbeat (one matching ErrLeaseLost for a lost lease),
// or nil if the lease was kept throughout; calling it again returns the same.
//
//	ctx, stop := t.KeepAlive(ctx, lease, 30*time.Second)
//	err := handle(ctx, lease.Event)
//	if lost := stop(); lost != nil {
//		return lost // not ours any more: do not ack
//	}
//	return t.Ack(lease)
//
// Call stop before finishing the lease (an extension after the Ack would find it lost).
// Until stop returns, the heartbeat works on its own copy of the lease: the handler may
// read lease meanwhile. The errors are Extend's; a nil lease, or a visibility whose third
// is not a positive duration, is ErrArgument at once (the context is returned done).
func (t *Transport) KeepAlive(ctx context.Context, lease *Lease, visibility time.Duration) (context.Context, func() error) {
	kept, cancel := context.WithCancelCause(ctx)
	var bad error
	switch {
	case lease == nil:
		bad = argumentError("lease is nil")
	case visibility/3 <= 0: // also the heartbeat's period
		bad = argumentError("visibility is " + visibility.String() + "; it must be at least 3ns (the lease is extended every third of it)")
	}
	if bad != nil {
		cancel(bad)
		return kept, func() error { return bad }
	}
	held := *lease // the heartbeat's own copy
	quit, done := make(chan struct{}), make(chan struct{})
	var ended error // written before done is closed
	go func() {
		defer close(done)
		timer := time.NewTimer(visibility / 3)
		defer timer.Stop()
		for {
			select {
			case <-quit:
				return
			case <-kept.Done():
				return
			case <-timer.C:
			}
			if err := t.Extend(&held, visibility); err != nil {
				ended = err
				cancel(err)
				return
			}
			timer.Reset(visibility / 3)
		}
	}()
	var once sync.Once
	stop := func() error {
		once.Do(func() {
			close(quit)
			<-done
			cancel(nil)
			lease.LockExpiry = held.LockExpiry
		})
		return ended
	}
	return kept, stop
}
