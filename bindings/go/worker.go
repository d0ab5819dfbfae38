package harel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// The worker loop: claims that wait for work, in batches, and leases kept alive while a
// handler runs.
//
//	leases, err := t.ClaimMany(ctx, "w1", 30*time.Second, 10, 20*time.Second)
//	// handle each lease.Event, then one commit for the acks and the next batch:
//	leases, lost, err = t.AckAndClaimMany(leases, "w1", 30*time.Second, 10)

// MaxClaim is the largest batch ClaimMany and AckAndClaimMany take (max: 1..MaxClaim).
const MaxClaim = 1000

// ClaimWait is Claim, waiting up to wait for something deliverable: it returns as soon as a
// lease is had, and nil, nil when nothing came within wait (0 looks once, as Claim). While
// it waits it holds no lock of the database and the Transport's other calls go ahead. It
// wakes at once on a commit by any Transport of this process on the same queue, within a
// few milliseconds of another process's commit to a local file (Linux; elsewhere it polls
// every 50 ms), and at the end of a lease or park; on a libSQL server it polls.
//
// ctx ends the wait early: cancelled, or at its deadline if that comes before wait, the
// call returns an error matching both ctx.Err() (context.Canceled or
// context.DeadlineExceeded) and ErrInterrupted, having claimed nothing. A lease had in the
// same instant is returned, with a nil error: a cancelled wait never leaves a lease behind.
// Close ends the wait too (an error matching ErrClosed), and Interrupt (ErrInterrupted).
//
// Errors: as Claim's, and ErrArgument for wait < 0; ErrInterrupted as above.
func (t *Transport) ClaimWait(ctx context.Context, workerID string, visibility, wait time.Duration, opts ...ClaimOption) (*Lease, error) {
	cc := claimOptions(opts)
	var lease *Lease
	err := t.waiting(ctx, wait, func(h cTransport, wait time.Duration, cancel *cCancel) (claimed bool, err error) {
		lease, err = h.claimWait(workerID, visibility, cc.minPriority, cc.routingKeys, wait, cancel)
		return lease != nil, err
	})
	return lease, err
}

// ClaimMany leases up to max messages (1..MaxClaim) to workerID in one transaction, each
// the head of a different group, in the order Claim would hand them out one after
// another; it waits as ClaimWait does (ctx and wait alike) while nothing is deliverable,
// and returns no leases (len 0) and a nil error when nothing came within wait. Each lease
// is finished on its own (Ack, Nack) or with the others (AckMany, AckAndClaimMany).
//
// Errors: as ClaimWait's, and ErrArgument for max outside 1..MaxClaim.
func (t *Transport) ClaimMany(ctx context.Context, workerID string, visibility time.Duration, max int, wait time.Duration,
	opts ...ClaimOption) ([]*Lease, error) {
	cc := claimOptions(opts)
	var leases []*Lease
	err := t.waiting(ctx, wait, func(h cTransport, wait time.Duration, cancel *cCancel) (claimed bool, err error) {
		leases, err = h.claimMany(workerID, visibility, cc.minPriority, cc.routingKeys, max, wait, cancel)
		return len(leases) > 0, err
	})
	return leases, err
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
	return acked, err
}

// AckAndClaimMany is AckMany and then ClaimMany without waiting, in one transaction: a
// batch worker's loop with one commit per batch. acked is AckMany's (a lost lease does not
// stop the claim); next holds up to max new leases for workerID, none (len 0) when nothing
// is deliverable. On error nothing was acked or claimed.
//
// Errors: as AckMany's and ClaimMany's.
func (t *Transport) AckAndClaimMany(leases []*Lease, workerID string, visibility time.Duration, max int,
	opts ...ClaimOption) (next []*Lease, acked []error, err error) {
	cc := claimOptions(opts)
	err = t.call(func(h cTransport) (err error) {
		next, acked, err = h.ackAndClaimMany(leases, workerID, visibility, cc.minPriority, cc.routingKeys, max)
		return err
	})
	return next, acked, err
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
	return t.call(func(h cTransport) error { return h.extend(lease, visibility) })
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

// Interrupt ends every claim waiting on t now (ClaimWait, ClaimMany): each returns an
// error matching ErrInterrupted, having claimed nothing; claims that start later wait as
// usual. For one call, cancel its context instead; Close ends the waits by itself.
func (t *Transport) Interrupt() {
	_ = t.call(func(h cTransport) error { h.interrupt(); return nil })
}

// waiting runs claim, a call that may wait up to wait, on the open handle. ctx's deadline
// shortens the wait; ctx's end, or Close, fires the call's harel_cancel. claim reports
// whether it claimed anything. The library's HAREL_ERR_INTERRUPTED is told apart here by
// what ended the wait: Close (ErrClosed), ctx (its error too), or Interrupt (as it is).
func (t *Transport) waiting(ctx context.Context, wait time.Duration,
	claim func(h cTransport, wait time.Duration, cancel *cCancel) (bool, error)) error {
	return t.call(func(h cTransport) error {
		if err := ctx.Err(); err != nil {
			return interruptedBy(err, &Error{Status: StatusInterrupted,
				Message: "the context was done before the claim; nothing was claimed"})
		}
		byDeadline := false
		if d, ok := ctx.Deadline(); ok && wait >= 0 {
			if left := time.Until(d); left < wait {
				wait, byDeadline = max(left, 0), true
			}
		}
		var cancel *cCancel
		if wait > 0 { // a call that does not wait has nothing to cancel
			var err error
			if cancel, err = newCancel(ctx, t.closing); err != nil {
				return err
			}
			defer cancel.free()
		}
		claimed, err := claim(h, wait, cancel)
		var e *Error
		switch {
		case errors.As(err, &e) && e.Status == StatusInterrupted && t.closing.Err() != nil:
			return &Error{Status: StatusClosed, Message: "the transport was closed while the claim waited; nothing was claimed"}
		case e != nil && e.Status == StatusInterrupted && ctx.Err() != nil:
			return interruptedBy(ctx.Err(), e)
		case err == nil && !claimed && byDeadline:
			return interruptedBy(context.DeadlineExceeded, &Error{Status: StatusInterrupted,
				Message: "the context's deadline ended the wait; nothing was claimed"})
		}
		return err
	})
}

// interruptedBy is e, an ErrInterrupted, matching ctxErr too.
func interruptedBy(ctxErr error, e *Error) error { return fmt.Errorf("%w (%w)", e, ctxErr) }
