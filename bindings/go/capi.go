package harel

// The C library is called from the capi files only, directly: a capi_<group>.go per method
// group (docs/architecture.md, "Method groups"), and this file with what they share. Each
// fallible call gets its own `var cerr *C.harel_error` and &cerr, and check turns the
// status and that error into an *Error. The error belongs to the call, not to the OS
// thread, so it is right even when the goroutine moved to another thread between two cgo
// calls (docs/abi.md, "Errors").
//
// Memory: C never sees Go memory that holds a Go pointer, and keeps nothing past a call.
// Strings in are C copies (C.CString) freed when the call returns; the Go values passed
// by address (&cerr, &out, a harel_lease, an array of routing keys, an array of databases,
// an array of seqs, a count, an array of lease pointers in or out, an array of outcomes, a
// publish's harel_delivery, a batch's array of harel_delivery pointers, seqs and outcomes,
// a commit's seqs and outcomes) hold no Go pointers (the leases an array points to are in
// C memory, as a batch's harel_delivery structs and a statement's parameters are, with
// their texts and blobs; a message's headers are an array of harel_header in C memory, a
// batch's an array of harel_headers pointing to such arrays). What C hands out (a lease with
// its headers, a schema string, an error, the stats, the metrics, a page with its shards and
// headers, the pauses, the limits, a query's rows) is copied into Go values and freed at once.

/*
#include <stdlib.h>
#include "harel_transport.h"
*/
import "C"

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// The header limits of headers.go are the library's (a build with other values fails here).
const _ = uint(MaxHeaders-C.MAX_HEADERS) + uint(C.MAX_HEADERS-MaxHeaders) +
	uint(MaxHeadersBytes-C.MAX_HEADERS_BYTES) + uint(C.MAX_HEADERS_BYTES-MaxHeadersBytes) +
	uint(MaxHeaderNameLen-C.MAX_HEADER_NAME_LEN) + uint(C.MAX_HEADER_NAME_LEN-MaxHeaderNameLen)

// cTransport is an open harel_transport*.
type cTransport struct{ p *C.harel_transport }

// errOut is where a call hands out its error: &cerr of a `var cerr *C.harel_error`.
type errOut = **C.harel_error

// check turns a call's status and its error into nil (OK, EMPTY) or an *Error, freeing
// the C error. err is the &cerr the call was given (a pointer, so that check reads cerr
// only after the call, whatever the order Go evaluates check's arguments in).
func check(status C.enum_harel_status, err errOut) error {
	defer C.harel_error_free(*err) // NULL does nothing
	if status >= 0 {
		return nil
	}
	e := &Error{Status: Status(status)}
	if m := C.harel_error_message(*err); m != nil {
		e.Message = C.GoString(m)
	}
	return e
}

// cStrings allocates C copies of Go strings and frees them all at once.
type cStrings []*C.char

// add copies s, named param (its ABI name) in errors. A Go string may hold NUL bytes,
// which a NUL-terminated C string cannot: C would see it cut short, so that is
// ErrArgument here.
func (a *cStrings) add(param, s string) (*C.char, error) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return nil, argumentError(param + " holds a NUL byte (at byte " + strconv.Itoa(i) +
			"), which a C string cannot carry")
	}
	return a.addWhole(s), nil
}

// addWhole copies every byte of s, NULs included (then a NUL), for a parameter that
// comes with its length.
func (a *cStrings) addWhole(s string) *C.char {
	p := C.CString(s)
	*a = append(*a, p)
	return p
}

// alloc is size bytes of zeroed C memory, freed with the strings. Zeroed because Go fills
// arrays of pointer-holding structs in it: a pointer store's write barrier hands the slot's
// old value to a marking GC, and what malloc returns may still hold the address of a dead
// Go object (the library frees memory that held &cerr or &out), which corrupts the heap
// when read as live (dirty_memory_internal_test.go).
func (a *cStrings) alloc(size C.size_t) unsafe.Pointer {
	p := C.calloc(1, size)
	*a = append(*a, (*C.char)(p))
	return p
}

func (a *cStrings) free() {
	for _, p := range *a {
		C.free(unsafe.Pointer(p))
	}
	*a = nil
}

// seconds is d in seconds, as the ABI wants durations.
func seconds(d time.Duration) C.double { return C.double(d.Seconds()) }

// epochSeconds is t as the ABI's instants: seconds since the Unix epoch.
func epochSeconds(t time.Time) float64 {
	return float64(t.Unix()) + float64(t.Nanosecond())/1e9
}

// fromEpochSeconds is the inverse of epochSeconds (to the microsecond or so: a float64
// of today's epoch seconds holds about 7 decimal digits of fraction).
func fromEpochSeconds(s float64) time.Time {
	whole, frac := math.Modf(s)
	return time.Unix(int64(whole), int64(math.Round(frac*1e9)))
}

// int32Param converts a Go int to the ABI's int32; a value that does not fit is out of
// range anyway, and would otherwise wrap into range.
func int32Param(param string, v int) (C.int32_t, error) {
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0, argumentError(param + " must be 0..4, got " + strconv.Itoa(v))
	}
	return C.int32_t(v), nil
}

// firstOf is the address of a slice's first element, NULL for an empty one.
func firstOf[T any](s []T) *T {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}

// cSlice is the n elements at p (nil for none: an empty page's pointer is not to be read).
func cSlice[T any](p *T, n C.size_t) []T {
	if n == 0 || p == nil {
		return nil
	}
	return unsafe.Slice(p, int(n))
}

// message is a harel_message of C copies of the arguments (added to a, freed with it);
// errors name each parameter as its ABI name after prefix ("messages[3].").
func (a *cStrings) message(prefix, groupID string, event []byte, priority int, routingKey *string) (C.harel_message, error) {
	var m C.harel_message
	var err error
	if m.group_id, err = a.add(prefix+"group_id", groupID); err != nil {
		return m, err
	}
	if m.event_json, err = a.add(prefix+"event_json", unsafe.String(unsafe.SliceData(event), len(event))); err != nil {
		return m, err
	}
	if routingKey != nil {
		if m.routing_key, err = a.add(prefix+"routing_key", *routingKey); err != nil {
			return m, err
		}
	}
	m.priority, err = int32Param(prefix+"priority", priority)
	return m, err
}

// headers is hs as an array of harel_header in C memory (alloc'd, zeroed, like the
// strings its elements point to, and freed with them); NULL for none. Errors name each
// string as its ABI name after prefix ("messages[3].headers[1].value"): a NUL byte, which
// a C string cannot carry, is the binding's to refuse; every other rule (the count, the
// bytes in all, a name's characters, a value's UTF-8) is the library's.
func (a *cStrings) headers(prefix string, hs []Header) (*C.harel_header, error) {
	if len(hs) == 0 {
		return nil, nil
	}
	array := (*C.harel_header)(a.alloc(C.size_t(len(hs)) * C.sizeof_harel_header))
	items := unsafe.Slice(array, len(hs))
	for i, h := range hs {
		param := prefix + "headers[" + strconv.Itoa(i) + "]."
		name, err := a.add(param+"name", h.Name)
		if err != nil {
			return nil, err
		}
		value, err := a.add(param+"value", h.Value)
		if err != nil {
			return nil, err
		}
		items[i].name, items[i].value = name, value
	}
	return array, nil
}

// goHeaders is a Go copy of the n headers at items (nil for none). Both strings are
// NUL-terminated and hold no NUL of their own (the library's rules).
func goHeaders(items *C.harel_header, n C.size_t) []Header {
	if n == 0 || items == nil {
		return nil
	}
	hs := make([]Header, n)
	for i, h := range unsafe.Slice(items, int(n)) {
		hs[i] = Header{Name: C.GoString(h.name), Value: C.GoString(h.value)}
	}
	return hs
}

// pageHeaders is the headers of item i of a page's n items (nil when the page has no
// header lists).
func pageHeaders(lists *C.harel_headers, n C.size_t, i int) []Header {
	if lists == nil {
		return nil
	}
	h := unsafe.Slice(lists, int(n))[i]
	return goHeaders(h.items, h.n)
}

// delivery is a publish's delivery options as harel_delivery's fields take them: the key
// (NULL: none), the delay in seconds, not_before in epoch seconds (-1: none).
type delivery struct {
	key       *C.char
	delay     C.double
	notBefore C.double
}

// delivery copies a key (nil: none) and converts the delay and the instant (the zero
// Time: none); errors name the parameters after prefix. The library checks the key's
// length and UTF-8, the delay's range and how far ahead the instant is. An instant before
// the epoch is a negative number, which the ABI reads as "none": that is the binding's to
// refuse, as a NUL byte in the key.
func (a *cStrings) delivery(prefix string, key *string, delay time.Duration, notBefore time.Time) (d delivery, err error) {
	d.delay, d.notBefore = seconds(delay), -1
	if key != nil {
		if d.key, err = a.add(prefix+"key", *key); err != nil {
			return d, err
		}
	}
	if !notBefore.IsZero() {
		if notBefore.Before(time.Unix(0, 0)) {
			return d, argumentError(prefix + "not_before is " + notBefore.UTC().Format(time.RFC3339Nano) +
				", before the Unix epoch; it must be an instant from 1970 on, or the zero Time for none")
		}
		d.notBefore = C.double(epochSeconds(notBefore))
	}
	return d, nil
}

// lease is a harel_lease of the fields ack and nack read: seq, the group id whole (NUL
// bytes included, as a lease claimed from another writer's message may hold them) with
// its length, and the worker id.
func (strs *cStrings) lease(l *Lease) (C.harel_lease, error) { return strs.leaseNamed("lease", l) }

// leaseNamed is lease for the parameter name ("lease", "leases[2]") in errors.
func (strs *cStrings) leaseNamed(name string, l *Lease) (cl C.harel_lease, err error) {
	if l == nil {
		return cl, argumentError(name + " is nil")
	}
	if l.GroupID == "" { // C would read it as a lease whose group_id_len was never set
		return cl, argumentError(name + ".group_id is empty")
	}
	cl.seq = C.int64_t(l.Seq)
	cl.group_id = strs.addWhole(l.GroupID)
	cl.group_id_len = C.size_t(len(l.GroupID))
	cl.worker_id, err = strs.add(name+".worker_id", l.WorkerID)
	return cl, err
}

// leases is ls as the batch calls take them: harel_leases in C memory (freed with strs)
// and a Go array of pointers to them. A nil lease is a NULL element, which the library
// refuses naming its index.
func (strs *cStrings) leases(ls []*Lease) ([]*C.harel_lease, error) {
	if len(ls) == 0 {
		return nil, nil
	}
	block := unsafe.Slice((*C.harel_lease)(strs.alloc(C.size_t(len(ls))*C.sizeof_harel_lease)), len(ls))
	ptrs := make([]*C.harel_lease, len(ls))
	for i, l := range ls {
		if l == nil {
			continue
		}
		cl, err := strs.leaseNamed("leases["+strconv.Itoa(i)+"]", l)
		if err != nil {
			return nil, err
		}
		block[i] = cl
		ptrs[i] = &block[i]
	}
	return ptrs, nil
}

// outcomeErrors turns a batch ack's outcomes into nil (acked) or an *Error per lease: a
// lost lease, or (sharded) the error of its shard's transaction.
func outcomeErrors(ls []*Lease, outcomes []C.enum_harel_status) []error {
	errs := make([]error, len(ls))
	for i, s := range outcomes {
		if s < 0 {
			why := " is no longer leased to " + strconv.Quote(ls[i].WorkerID) +
				" (acked or nacked already, or it lapsed and another worker claimed it); nothing of it changed"
			switch Status(s) {
			case StatusLeaseLost:
			case StatusConnect:
				why = " may not have been acked: its shard was unreachable or its answer was lost (ack it again: ErrLeaseLost then says it was)"
			default:
				why = " was not acked: its shard's transaction failed (it is still held)"
			}
			errs[i] = &Error{Status: Status(s), Message: "leases[" + strconv.Itoa(i) + "]: message " +
				strconv.FormatInt(ls[i].Seq, 10) + " of group " + strconv.Quote(ls[i].GroupID) + why}
		}
	}
	return errs
}
