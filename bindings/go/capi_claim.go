package harel

// The C calls of claim: a lease now, after a wait (a harel_cancel per waiting call) or a
// batch of them, alone or after an ack in the same transaction; and the interrupt of the
// waits.

// #include "harel_transport.h"
import "C"

import (
	"context"
	"strconv"
	"sync"
	"time"
	"unsafe"
)

// claimArgs are a claim's arguments as C copies (added to strs, freed with it).
type claimArgs struct {
	worker      *C.char
	visibility  C.double
	minPriority C.int32_t
	keys        []*C.char // Go memory holding only C pointers: passed as the array
}

func (strs *cStrings) claimArgs(workerID string, visibility time.Duration, minPriority int, routingKeys []string) (a claimArgs, err error) {
	if a.worker, err = strs.add("worker_id", workerID); err != nil {
		return a, err
	}
	if a.minPriority, err = int32Param("min_priority", minPriority); err != nil {
		return a, err
	}
	for i, k := range routingKeys {
		ck, err := strs.add("routing_keys["+strconv.Itoa(i)+"]", k)
		if err != nil {
			return a, err
		}
		a.keys = append(a.keys, ck)
	}
	a.visibility = seconds(visibility)
	return a, nil
}

func (a *claimArgs) keysPtr() **C.char {
	if len(a.keys) == 0 {
		return nil
	}
	return &a.keys[0]
}

// claimed copies out and frees the lease a claim returned: nil, nil for HAREL_EMPTY.
func claimed(status C.enum_harel_status, l *C.harel_lease, err errOut) (*Lease, error) {
	defer C.harel_lease_free(l) // NULL does nothing
	if err := check(status, err); err != nil || l == nil {
		return nil, err
	}
	return goLease(l), nil
}

// goLease is a Go copy of l.
func goLease(l *C.harel_lease) *Lease {
	return &Lease{
		Seq:        int64(l.seq),
		GroupID:    C.GoStringN(l.group_id, C.int(l.group_id_len)),
		Event:      C.GoBytes(unsafe.Pointer(l.event), C.int(l.event_len)),
		WorkerID:   C.GoString(l.worker_id),
		LockExpiry: fromEpochSeconds(float64(l.lock_expiry)),
		Attempts:   int(l.attempts),
		Headers:    goHeaders(l.headers, l.n_headers),
	}
}

// claim returns nil, nil when nothing is deliverable (HAREL_EMPTY).
func (t cTransport) claim(workerID string, visibility time.Duration, minPriority int, routingKeys []string) (*Lease, error) {
	var strs cStrings
	defer strs.free()
	a, err := strs.claimArgs(workerID, visibility, minPriority, routingKeys)
	if err != nil {
		return nil, err
	}
	var out *C.harel_lease
	var cerr *C.harel_error
	s := C.harel_transport_claim(t.p, a.worker, a.visibility, a.minPriority, a.keysPtr(), C.size_t(len(a.keys)), &out, &cerr)
	return claimed(s, out, &cerr)
}

// ackAndClaim acks l and claims the next message in one transaction.
func (t cTransport) ackAndClaim(l *Lease, workerID string, visibility time.Duration, minPriority int, routingKeys []string) (*Lease, error) {
	var strs cStrings
	defer strs.free()
	cl, err := strs.lease(l)
	if err != nil {
		return nil, err
	}
	a, err := strs.claimArgs(workerID, visibility, minPriority, routingKeys)
	if err != nil {
		return nil, err
	}
	var out *C.harel_lease
	var cerr *C.harel_error
	s := C.harel_transport_ack_and_claim(t.p, &cl, a.worker, a.visibility, a.minPriority, a.keysPtr(),
		C.size_t(len(a.keys)), &out, &cerr)
	return claimed(s, out, &cerr)
}

// cCancel is the harel_cancel of one waiting call, fired when any of its contexts is done
// (the call's own, the Transport's closing). nil passes NULL: no cancel.
type cCancel struct {
	p      *C.harel_cancel
	stops  []func() bool
	firing sync.WaitGroup // one per AfterFunc that may still fire p
}

func newCancel(ctxs ...context.Context) (*cCancel, error) {
	c := &cCancel{p: C.harel_cancel_new()}
	if c.p == nil {
		return nil, &Error{Status: StatusPanic, Message: "harel_cancel_new failed"}
	}
	for _, ctx := range ctxs {
		c.firing.Add(1)
		c.stops = append(c.stops, context.AfterFunc(ctx, func() {
			defer c.firing.Done()
			C.harel_cancel_fire(c.p)
		}))
	}
	return c, nil
}

// free frees the cancel once the call it was given has returned, and once no AfterFunc
// can fire it any more: those stopped in time never run, those that started are waited for.
func (c *cCancel) free() {
	for _, stop := range c.stops {
		if stop() {
			c.firing.Done()
		}
	}
	c.firing.Wait()
	C.harel_cancel_free(c.p)
}

func (c *cCancel) ptr() *C.harel_cancel {
	if c == nil {
		return nil
	}
	return c.p
}

func (t cTransport) interrupt() { C.harel_transport_interrupt(t.p) }

// claimWait returns nil, nil when nothing came within wait (HAREL_EMPTY).
func (t cTransport) claimWait(workerID string, visibility time.Duration, minPriority int, routingKeys []string,
	wait time.Duration, cancel *cCancel) (*Lease, error) {
	var strs cStrings
	defer strs.free()
	a, err := strs.claimArgs(workerID, visibility, minPriority, routingKeys)
	if err != nil {
		return nil, err
	}
	var out *C.harel_lease
	var cerr *C.harel_error
	s := C.harel_transport_claim_wait(t.p, a.worker, a.visibility, a.minPriority, a.keysPtr(), C.size_t(len(a.keys)),
		seconds(wait), cancel.ptr(), &out, &cerr)
	return claimed(s, out, &cerr)
}

// maxParam is a claim's max as a size_t, and the array its leases come in: max elements,
// or HAREL_MAX_CLAIM for a larger max (which the library refuses before writing any), at
// least one (the library refuses 0; the array's address must exist). Go memory holding
// only the C pointers the library writes into it.
func maxParam(n int) (C.size_t, []*C.harel_lease, error) {
	if n < 0 { // a size_t cannot carry it; the library checks the range
		return 0, nil, argumentError("max is " + strconv.Itoa(n) + "; it must be 1.." + strconv.Itoa(MaxClaim))
	}
	return C.size_t(n), make([]*C.harel_lease, min(max(n, 1), C.HAREL_MAX_CLAIM)), nil
}

// claimedMany copies out and frees the n leases a batch claim wrote into out; none on
// HAREL_EMPTY and on error (n is 0 then).
func claimedMany(status C.enum_harel_status, out []*C.harel_lease, n C.size_t, err errOut) ([]*Lease, error) {
	got := out[:n]
	defer func() {
		for _, l := range got {
			C.harel_lease_free(l)
		}
	}()
	if err := check(status, err); err != nil {
		return nil, err
	}
	leases := make([]*Lease, len(got))
	for i, l := range got {
		leases[i] = goLease(l)
	}
	return leases, nil
}

func (t cTransport) claimMany(workerID string, visibility time.Duration, minPriority int, routingKeys []string,
	max int, wait time.Duration, cancel *cCancel) ([]*Lease, error) {
	var strs cStrings
	defer strs.free()
	cmax, out, err := maxParam(max)
	if err != nil {
		return nil, err
	}
	a, err := strs.claimArgs(workerID, visibility, minPriority, routingKeys)
	if err != nil {
		return nil, err
	}
	var n C.size_t
	var cerr *C.harel_error
	s := C.harel_transport_claim_many(t.p, a.worker, a.visibility, a.minPriority, a.keysPtr(), C.size_t(len(a.keys)),
		cmax, seconds(wait), cancel.ptr(), &out[0], &n, &cerr)
	return claimedMany(s, out, n, &cerr)
}

func (t cTransport) ackAndClaimMany(ls []*Lease, workerID string, visibility time.Duration, minPriority int,
	routingKeys []string, max int) ([]*Lease, []error, error) {
	var strs cStrings
	defer strs.free()
	ptrs, err := strs.leases(ls)
	if err != nil {
		return nil, nil, err
	}
	cmax, out, err := maxParam(max)
	if err != nil {
		return nil, nil, err
	}
	a, err := strs.claimArgs(workerID, visibility, minPriority, routingKeys)
	if err != nil {
		return nil, nil, err
	}
	outcomes := make([]C.enum_harel_status, len(ls))
	var n C.size_t
	var cerr *C.harel_error
	s := C.harel_transport_ack_and_claim_many(t.p, firstOf(ptrs), C.size_t(len(ls)), firstOf(outcomes),
		a.worker, a.visibility, a.minPriority, a.keysPtr(), C.size_t(len(a.keys)), cmax, &out[0], &n, &cerr)
	next, err := claimedMany(s, out, n, &cerr)
	if err != nil {
		return nil, nil, err
	}
	return next, outcomeErrors(ls, outcomes), nil
}
