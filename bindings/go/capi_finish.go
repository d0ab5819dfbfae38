package harel

// The C calls of finish: what a worker does with a lease it holds.

// #include "harel_transport.h"
import "C"

import "time"

// finish acks l, or nacks it with delay.
func (t cTransport) finish(l *Lease, nack bool, delay time.Duration) error {
	var strs cStrings
	defer strs.free()
	cl, err := strs.lease(l)
	if err != nil {
		return err
	}
	var cerr *C.harel_error
	if nack {
		return check(C.harel_transport_nack(t.p, &cl, seconds(delay), &cerr), &cerr)
	}
	return check(C.harel_transport_ack(t.p, &cl, &cerr), &cerr)
}

func (t cTransport) ackMany(ls []*Lease) ([]error, error) {
	var strs cStrings
	defer strs.free()
	ptrs, err := strs.leases(ls)
	if err != nil {
		return nil, err
	}
	outcomes := make([]C.enum_harel_status, len(ls))
	var cerr *C.harel_error
	if err := check(C.harel_transport_ack_many(t.p, firstOf(ptrs), C.size_t(len(ls)), firstOf(outcomes), &cerr), &cerr); err != nil {
		return nil, err
	}
	return outcomeErrors(ls, outcomes), nil
}

func (t cTransport) deadLetter(l *Lease, reason string) error {
	var strs cStrings
	defer strs.free()
	cl, err := strs.lease(l)
	if err != nil {
		return err
	}
	r, err := strs.add("reason", reason)
	if err != nil {
		return err
	}
	var cerr *C.harel_error
	return check(C.harel_transport_dead_letter(t.p, &cl, r, &cerr), &cerr)
}

// extend sets l.LockExpiry to the lease's new end.
func (t cTransport) extend(l *Lease, visibility time.Duration) error {
	var strs cStrings
	defer strs.free()
	cl, err := strs.lease(l)
	if err != nil {
		return err
	}
	var cerr *C.harel_error
	if err := check(C.harel_transport_extend(t.p, &cl, seconds(visibility), &cerr), &cerr); err != nil {
		return err
	}
	l.LockExpiry = fromEpochSeconds(float64(cl.lock_expiry))
	return nil
}
