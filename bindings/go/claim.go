package harel

// The claims: a lease now (Claim), after an ack in the same transaction (AckAndClaim,
// AckAndClaimMany), waiting for work (ClaimWait) and in batches (ClaimMany).
//
//	leases, err := t.ClaimMany(ctx, "w1", 30*time.Second, 10, 20*time.Second)
//	// handle each lease.Event, then one commit for the acks and the next batch:
//	leases, lost, err = t.AckAndClaimMany(leases, "w1", 30*time.Second, 10)

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MaxClaim is the largest batch ClaimMany and AckAndClaimMany take (max: 1..MaxClaim).
const MaxClaim = 1000

// Claim leases one message to workerID for visibility: the oldest message of the group
// that has waited longest among those with nothing in flight (and, with ClaimOptions, a
// priority at least WithMinPriority and a routing key among WithRoutingKeys). Until the lease
// lapses no other message of that group is handed out; finish it with Ack or Nack.
//
// Claim returns (nil, nil) when nothing is deliverable now. An empty queue is the normal
// state a worker polls, not a failure (the library reports it as the non-error status
// HAREL_EMPTY), so err stays reserved for things that went wrong and a worker loop reads:
//
//	lease, err := t.Claim("w1", 30*time.Second)
//	if err != nil { return err }
//	if lease == nil { time.Sleep(poll); continue }
//
// To wait for work instead of polling, use ClaimWait or ClaimMany.
//
// Errors: ErrArgument (workerID empty, "__parked__" or "__delayed__" (reserved), visibility
// <= 0, a bad priority or routing key, a NUL byte or invalid UTF-8 in a string), ErrBusy,
// ErrDatabase, ErrClosed.
func (t *Transport) Claim(workerID string, visibility time.Duration, opts ...ClaimOption) (*Lease, error) {
	cc := claimOptions(opts)
	var lease *Lease
	err := t.call(func(h cTransport) (err error) {
		lease, err = h.claim(workerID, visibility, cc.minPriority, cc.routingKeys)
		return err
	})
	if t.tracing != nil && lease != nil {
		t.tracing.startProcess(lease, 0)
	}
	return lease, err
}

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
	if t.tracing != nil && lease != nil {
		t.tracing.startProcess(lease, 0)
	}
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
	if t.tracing != nil {
		t.tracing.startProcessAll(leases)
	}
	return leases, err
}

// AckAndClaim acks lease and claims the next message for workerID in one transaction: a
// worker loop with one commit per message instead of two (at synchronous FULL, half the
// fsyncs). It returns the next lease, or nil, nil when the ack succeeded and nothing is
// deliverable. If the ack fails, nothing is claimed.
//
// Errors: as Ack's and Claim's.
func (t *Transport) AckAndClaim(lease *Lease, workerID string, visibility time.Duration, opts ...ClaimOption) (*Lease, error) {
	cc := claimOptions(opts)
	var next *Lease
	err := t.call(func(h cTransport) (err error) {
		next, err = h.ackAndClaim(lease, workerID, visibility, cc.minPriority, cc.routingKeys)
		return err
	})
	if t.tracing != nil {
		leaseOutcome(lease, err, spanAcked)
		if next != nil {
			t.tracing.startProcess(next, 0)
		}
	}
	return next, err
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
	if t.tracing != nil && err == nil {
		batchOutcomes(leases, acked)
		t.tracing.startProcessAll(next)
	}
	return next, acked, err
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
