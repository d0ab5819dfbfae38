package harel

// The C calls of admin: the operator's writes.

// #include "harel_transport.h"
import "C"

import (
	"math"
	"strconv"
	"unsafe"
)

// MaxLimit of admin.go is the library's (a build with another value fails here).
const _ = uint(MaxLimit-C.HAREL_MAX_LIMIT) + uint(C.HAREL_MAX_LIMIT-MaxLimit)

// selectDead redrives (or, with purge, deletes) the dead letters which selects, passed to
// C as its three arguments: all, group_id (NULL unless a group is chosen), seqs with their
// count (Go memory of int64s: no Go pointers in it).
func (t cTransport) selectDead(which DeadLetters, purge bool) (uint64, error) {
	var strs cStrings
	defer strs.free()
	var group *C.char
	if which.byGroup {
		g, err := strs.add("group_id", which.group)
		if err != nil {
			return 0, err
		}
		group = g
	}
	var seqs *C.int64_t
	if len(which.seqs) > 0 {
		seqs = (*C.int64_t)(unsafe.Pointer(&which.seqs[0]))
	}
	var n C.uint64_t
	var cerr *C.harel_error
	var s C.enum_harel_status
	if purge {
		s = C.harel_transport_purge_dead(t.p, C.bool(which.all), group, seqs, C.size_t(len(which.seqs)), &n, &cerr)
	} else {
		s = C.harel_transport_redrive(t.p, C.bool(which.all), group, seqs, C.size_t(len(which.seqs)), &n, &cerr)
	}
	if err := check(s, &cerr); err != nil {
		return 0, err
	}
	return uint64(n), nil
}

func (t cTransport) purgeGroup(groupID string) (uint64, error) {
	var strs cStrings
	defer strs.free()
	g, err := strs.add("group_id", groupID)
	if err != nil {
		return 0, err
	}
	var n C.uint64_t
	var cerr *C.harel_error
	if err := check(C.harel_transport_purge_group(t.p, g, &n, &cerr), &cerr); err != nil {
		return 0, err
	}
	return uint64(n), nil
}

func (t cTransport) purge() (uint64, error) {
	var n C.uint64_t
	var cerr *C.harel_error
	if err := check(C.harel_transport_purge(t.p, &n, &cerr), &cerr); err != nil {
		return 0, err
	}
	return uint64(n), nil
}

func (t cTransport) release(groupID string) (bool, error) {
	var strs cStrings
	defer strs.free()
	g, err := strs.add("group_id", groupID)
	if err != nil {
		return false, err
	}
	var released C.bool
	var cerr *C.harel_error
	if err := check(C.harel_transport_release(t.p, g, &released, &cerr), &cerr); err != nil {
		return false, err
	}
	return bool(released), nil
}

// pause pauses (or, with resume, resumes) target: its kind as it is, its name a C copy
// (named in errors as the library names it: group_id, routing_key), NULL for the queue's
// "". A kind outside harel_pause_kind, or a queue's target with a name (both only from a
// Pause made by hand), reach the library, which refuses them. The zero PauseTarget is
// refused before C.
func (t cTransport) pause(target PauseTarget, resume bool) (bool, error) {
	if !target.set {
		return false, argumentError("no pause target: give PauseQueue(), PauseGroup(id) or PauseRoutingKey(key)")
	}
	var strs cStrings
	defer strs.free()
	var name *C.char
	if target.kind != PauseKindQueue || target.name != "" {
		param := "name"
		switch target.kind {
		case PauseKindGroup:
			param = "group_id"
		case PauseKindRoutingKey:
			param = "routing_key"
		}
		n, err := strs.add(param, target.name)
		if err != nil {
			return false, err
		}
		name = n
	}
	var done C.bool
	var cerr *C.harel_error
	var s C.enum_harel_status
	if resume {
		s = C.harel_transport_resume(t.p, C.int32_t(target.kind), name, &done, &cerr)
	} else {
		s = C.harel_transport_pause(t.p, C.int32_t(target.kind), name, &done, &cerr)
	}
	if err := check(s, &cerr); err != nil {
		return false, err
	}
	return bool(done), nil
}

// setLimit sets routingKey's limit as C takes it: the concurrency (0: none), the rate and
// the burst (both 0: none). What C would read as something else is refused before it, in
// the library's words: a Concurrency that is not a uint32 (below 0 it would wrap), a Rate
// given with both numbers 0 (C's "none"). Every other number reaches the library, which
// checks its range.
func (t cTransport) setLimit(routingKey string, limit Limit) error {
	var strs cStrings
	defer strs.free()
	key, err := strs.add("routing_key", routingKey)
	if err != nil {
		return err
	}
	most := strconv.Itoa(MaxLimit)
	if limit.Concurrency < 0 || uint64(limit.Concurrency) > math.MaxUint32 {
		return argumentError("concurrency is " + strconv.Itoa(limit.Concurrency) + "; it must be 1.." + most +
			", or 0 for none")
	}
	var rate, burst C.double
	if r := limit.Rate; r != nil {
		if r.PerSecond == 0 && r.Burst == 0 {
			return argumentError("rate is " + strconv.FormatFloat(r.PerSecond, 'g', -1, 64) +
				"; it must be a finite number > 0, at most " + most + " (a nil Rate for none)")
		}
		rate, burst = C.double(r.PerSecond), C.double(r.Burst)
	}
	var cerr *C.harel_error
	s := C.harel_transport_set_limit(t.p, key, C.uint32_t(limit.Concurrency), rate, burst, &cerr)
	return check(s, &cerr)
}

func (t cTransport) removeLimit(routingKey string) error {
	var strs cStrings
	defer strs.free()
	key, err := strs.add("routing_key", routingKey)
	if err != nil {
		return err
	}
	var cerr *C.harel_error
	return check(C.harel_transport_remove_limit(t.p, key, &cerr), &cerr)
}
