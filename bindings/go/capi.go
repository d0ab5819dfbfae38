package harel

// The only file that calls the C library, directly: each fallible call gets its own
// `var cerr *C.harel_error` and &cerr, and check turns the status and that error into an
// *Error. The error belongs to the call, not to the OS thread, so it is right even when the
// goroutine moved to another thread between two cgo calls (docs/abi.md, "Errors").
//
// Memory: C never sees Go memory that holds a Go pointer, and keeps nothing past a call.
// Strings in are C copies (C.CString) freed when the call returns; the Go values passed
// by address (&cerr, &out, a harel_lease, an array of routing keys, an array of databases,
// an array of seqs, a count, an array of lease pointers in or out, an array of outcomes, a
// batch's arrays of keys, delays, instants, seqs and duplicate flags, a commit's seqs and
// duplicate flags) hold no Go pointers (the leases an array points to are in C memory, as
// a statement's parameters are, with their texts and blobs). What C hands out (a lease, a
// schema string, an error, the stats, the metrics, a page with its shards, a query's rows)
// is copied into Go values and freed at once.

/*
#include <stdint.h>
#include <stdlib.h>
#include "harel_transport.h"

// The clock: a C function pointer for the Go clock; ctx carries a cgo.Handle (an integer,
// never a Go pointer) to the Go function.
extern double harelGoClock(uintptr_t handle);
static double hgo_clock(void *ctx) { return harelGoClock((uintptr_t)ctx); }
static enum harel_status hgo_set_clock(harel_options *o, uintptr_t handle, harel_error **err) {
	return harel_options_set_clock(o, hgo_clock, (void *)handle, err);
}
*/
import "C"

import (
	"context"
	"fmt"
	"math"
	"runtime/cgo"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"
)

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

// cOpen builds the C options from cfg, opens database with them and frees them. A clock
// handle of 0 means the system clock.
func cOpen(database string, cfg *config, clock cgo.Handle) (cTransport, error) {
	var strs cStrings
	defer strs.free()
	db, err := strs.add("database", database)
	if err != nil {
		return cTransport{}, err
	}
	return withOptions(cfg, clock, &strs, func(o *C.harel_options, t **C.harel_transport, cerr errOut) C.enum_harel_status {
		return C.harel_transport_open(db, o, t, cerr)
	})
}

// cOpenShards opens one queue over databases, in their order, as cOpen opens one: the
// list goes to C as a Go array of C copies (no Go pointers in it); an empty list is NULL
// with 0, which the library refuses, as it does an empty or repeated element.
func cOpenShards(databases []string, cfg *config, clock cgo.Handle) (cTransport, error) {
	var strs cStrings
	defer strs.free()
	dbs := make([]*C.char, len(databases))
	for i, d := range databases {
		var err error
		if dbs[i], err = strs.add("databases["+strconv.Itoa(i)+"]", d); err != nil {
			return cTransport{}, err
		}
	}
	return withOptions(cfg, clock, &strs, func(o *C.harel_options, t **C.harel_transport, cerr errOut) C.enum_harel_status {
		return C.harel_transport_open_shards(firstOf(dbs), C.size_t(len(dbs)), o, t, cerr)
	})
}

// withOptions builds the C options from cfg, opens with them (open's status and error are
// checked here) and frees them.
func withOptions(cfg *config, clock cgo.Handle, strs *cStrings,
	open func(*C.harel_options, **C.harel_transport, errOut) C.enum_harel_status) (cTransport, error) {
	o := C.harel_options_new()
	if o == nil {
		return cTransport{}, &Error{Status: StatusPanic, Message: "harel_options_new failed"}
	}
	defer C.harel_options_free(o)
	if err := setOptions(o, cfg, clock, strs); err != nil {
		return cTransport{}, err
	}
	var t *C.harel_transport
	var cerr *C.harel_error
	if err := check(open(o, &t, &cerr), &cerr); err != nil {
		return cTransport{}, err
	}
	return cTransport{t}, nil
}

func (t cTransport) shardCount() (int, error) {
	var n C.size_t
	var cerr *C.harel_error
	if err := check(C.harel_transport_shard_count(t.p, &n, &cerr), &cerr); err != nil {
		return 0, err
	}
	return int(n), nil
}

// cShardOf asks the library which of shards holds groupID. A negative count cannot be a
// size_t; the library checks the range (1..MaxShards).
func cShardOf(groupID string, shards int) (int, error) {
	if shards < 0 {
		return 0, argumentError("n_shards is " + strconv.Itoa(shards) + "; it must be 1.." + strconv.Itoa(MaxShards))
	}
	var strs cStrings
	defer strs.free()
	g, err := strs.add("group_id", groupID)
	if err != nil {
		return 0, err
	}
	var shard C.size_t
	var cerr *C.harel_error
	if err := check(C.harel_shard_of(g, C.size_t(shards), &shard, &cerr), &cerr); err != nil {
		return 0, err
	}
	return int(shard), nil
}

// setOptions hands each field cfg sets to its C setter; the first refusal is the error,
// its message led by the Option's name (the C message names the setter's parameter).
func setOptions(o *C.harel_options, cfg *config, clock cgo.Handle, strs *cStrings) (err error) {
	set := func(option string, call func(errOut) C.enum_harel_status) {
		if err == nil {
			var cerr *C.harel_error
			err = optionError(option, check(call(&cerr), &cerr))
		}
	}
	text := func(option, param string, value *string, call func(*C.char, errOut) C.enum_harel_status) {
		if value == nil || err != nil {
			return
		}
		p, e := strs.add(param, *value)
		if e != nil {
			err = optionError(option, e)
			return
		}
		set(option, func(ce errOut) C.enum_harel_status { return call(p, ce) })
	}
	text("WithPrefix", "prefix", cfg.prefix,
		func(p *C.char, ce errOut) C.enum_harel_status { return C.harel_options_set_prefix(o, p, ce) })
	text("WithSyncURL", "url", cfg.syncURL,
		func(p *C.char, ce errOut) C.enum_harel_status { return C.harel_options_set_sync_url(o, p, ce) })
	if cfg.syncURLs != nil && err == nil {
		urls := make([]*C.char, len(cfg.syncURLs))
		for i, u := range cfg.syncURLs {
			if urls[i], err = strs.add("urls["+strconv.Itoa(i)+"]", u); err != nil {
				return optionError("WithSyncURLs", err)
			}
		}
		set("WithSyncURLs", func(ce errOut) C.enum_harel_status {
			return C.harel_options_set_sync_urls(o, firstOf(urls), C.size_t(len(urls)), ce)
		})
	}
	text("WithAuthToken", "token", cfg.authToken,
		func(p *C.char, ce errOut) C.enum_harel_status { return C.harel_options_set_auth_token(o, p, ce) })
	if v := cfg.createSchema; v != nil {
		set("WithCreateSchema",
			func(ce errOut) C.enum_harel_status { return C.harel_options_set_create_schema(o, C.bool(*v), ce) })
	}
	if v := cfg.syncInterval; v != nil {
		set("WithSyncInterval",
			func(ce errOut) C.enum_harel_status { return C.harel_options_set_sync_interval(o, seconds(*v), ce) })
	}
	if v := cfg.busyTimeout; v != nil {
		set("WithBusyTimeout",
			func(ce errOut) C.enum_harel_status { return C.harel_options_set_busy_timeout(o, seconds(*v), ce) })
	}
	if v := cfg.synchronousFull; v != nil {
		set("WithSynchronousFull",
			func(ce errOut) C.enum_harel_status { return C.harel_options_set_synchronous_full(o, C.bool(*v), ce) })
	}
	if v := cfg.maxAttempts; v != nil {
		set("WithMaxAttempts",
			func(ce errOut) C.enum_harel_status { return C.harel_options_set_max_attempts(o, C.uint32_t(*v), ce) })
	}
	if v := cfg.keyRetention; v != nil {
		set("WithKeyRetention",
			func(ce errOut) C.enum_harel_status { return C.harel_options_set_key_retention(o, seconds(*v), ce) })
	}
	if clock != 0 {
		set("WithClock", func(ce errOut) C.enum_harel_status { return C.hgo_set_clock(o, C.uintptr_t(clock), ce) })
	}
	return err
}

// optionError leads err's message with the name of the Option that caused it.
func optionError(option string, err error) error {
	if e, ok := err.(*Error); ok {
		return &Error{Status: e.Status, Message: option + ": " + e.Message}
	}
	return err
}

func (t cTransport) publish(groupID string, event []byte, priority int, routingKey *string) error {
	var strs cStrings
	defer strs.free()
	m, err := strs.message("", groupID, event, priority, routingKey)
	if err != nil {
		return err
	}
	var cerr *C.harel_error
	return check(C.harel_transport_publish(t.p, m.group_id, m.event_json, m.priority, m.routing_key, &cerr), &cerr)
}

// publishMany hands msgs to C as an array of harel_message.
func (t cTransport) publishMany(msgs []Message) error {
	var strs cStrings
	defer strs.free()
	array, err := strs.messages(msgs)
	if err != nil {
		return err
	}
	var cerr *C.harel_error
	return check(C.harel_transport_publish_many(t.p, array, C.size_t(len(msgs)), &cerr), &cerr)
}

// messages is msgs as an array of harel_message in C memory (malloc'd, like the strings
// its elements point to, and freed with them: C sees only C memory); NULL for none.
func (a *cStrings) messages(msgs []Message) (*C.harel_message, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	array := (*C.harel_message)(a.alloc(C.size_t(len(msgs)) * C.sizeof_harel_message))
	cmsgs := unsafe.Slice(array, len(msgs))
	for i, m := range msgs {
		var routingKey *string
		if m.RoutingKey != "" {
			routingKey = &m.RoutingKey
		}
		cm, err := a.message(messageParam(i), m.GroupID, m.Event, m.Priority, routingKey)
		if err != nil {
			return nil, err
		}
		cmsgs[i] = cm
	}
	return array, nil
}

// messageParam is the prefix of message i's parameters in errors: "messages[3].".
func messageParam(i int) string { return "messages[" + strconv.Itoa(i) + "]." }

// delivery is a publish's delivery options as the ABI takes them: the key (NULL: none),
// the delay in seconds, not_before in epoch seconds (-1: none).
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

func (t cTransport) publishWith(groupID string, event []byte, pc *publishConfig) (Published, error) {
	var strs cStrings
	defer strs.free()
	m, err := strs.message("", groupID, event, pc.priority, pc.routingKey)
	if err != nil {
		return Published{}, err
	}
	d, err := strs.delivery("", pc.key, pc.delay, pc.notBefore)
	if err != nil {
		return Published{}, err
	}
	var seq C.int64_t
	var duplicate C.int
	var cerr *C.harel_error
	s := C.harel_transport_publish_with(t.p, m.group_id, m.event_json, m.priority, m.routing_key,
		d.key, d.delay, d.notBefore, &seq, &duplicate, &cerr)
	if err := check(s, &cerr); err != nil {
		return Published{}, err
	}
	return Published{Seq: int64(seq), Duplicate: duplicate != 0}, nil
}

// publishManyWith hands msgs to C as publishMany does, with their delivery options in
// Go arrays of numbers and of C pointers (no Go pointers in them), and its outcomes in Go
// arrays of numbers.
func (t cTransport) publishManyWith(msgs []Message) ([]Published, error) {
	var strs cStrings
	defer strs.free()
	array, err := strs.messages(msgs)
	if err != nil {
		return nil, err
	}
	n := len(msgs)
	keys, delays, notBefore := make([]*C.char, n), make([]C.double, n), make([]C.double, n)
	for i := range msgs {
		m := &msgs[i]
		var key *string
		if m.Key != "" {
			key = &m.Key
		}
		d, err := strs.delivery(messageParam(i), key, m.Delay, m.NotBefore)
		if err != nil {
			return nil, err
		}
		keys[i], delays[i], notBefore[i] = d.key, d.delay, d.notBefore
	}
	seqs, duplicates := make([]C.int64_t, n), make([]C.int, n)
	var cerr *C.harel_error
	s := C.harel_transport_publish_many_with(t.p, array, C.size_t(n), firstOf(keys), firstOf(delays),
		firstOf(notBefore), firstOf(seqs), firstOf(duplicates), &cerr)
	if err := check(s, &cerr); err != nil {
		return nil, err
	}
	published := make([]Published, n)
	for i := range published {
		published[i] = Published{Seq: int64(seqs[i]), Duplicate: duplicates[i] != 0}
	}
	return published, nil
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

func (t cTransport) close() { C.harel_transport_close(t.p) }

func cSchemaSQL(prefix string, upgrade bool) (string, error) {
	var strs cStrings
	defer strs.free()
	p, err := strs.add("prefix", prefix)
	if err != nil {
		return "", err
	}
	var out *C.char
	var cerr *C.harel_error
	var s C.enum_harel_status
	if upgrade {
		s = C.harel_schema_upgrade_sql(p, &out, &cerr)
	} else {
		s = C.harel_schema_sql(p, &out, &cerr)
	}
	defer C.harel_string_free(out)
	if err := check(s, &cerr); err != nil {
		return "", err
	}
	return C.GoString(out), nil
}

func cVersion() string { return C.GoString(C.harel_version()) }

// cStatusName is the C library's name of a status (tests compare Status.String with it).
func cStatusName(s Status) string { return C.GoString(C.harel_status_name(C.int32_t(s))) }

// ---- when a message keeps failing: dead letters and the operator's calls ------------------

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

// ---- the looks: stats and the pages, copied out and freed ---------------------------------

// cSlice is the n elements at p (nil for none: an empty page's pointer is not to be read).
func cSlice[T any](p *T, n C.size_t) []T {
	if n == 0 || p == nil {
		return nil
	}
	return unsafe.Slice(p, int(n))
}

// optionalDuration is the ABI's optional seconds: -1 (any negative) is absent, nil.
func optionalDuration(s C.double) *time.Duration {
	if s < 0 {
		return nil
	}
	d := time.Duration(math.Round(float64(s) * float64(time.Second)))
	return &d
}

// optionalTime is the ABI's optional epoch seconds: -1 (any negative) is absent, nil.
func optionalTime(s C.double) *time.Time {
	if s < 0 {
		return nil
	}
	at := fromEpochSeconds(float64(s))
	return &at
}

// optionalString is a NUL-terminated string that may be NULL, as "".
func optionalString(p *C.char) string {
	if p == nil {
		return ""
	}
	return C.GoString(p)
}

// pageArgs are a listing's cursor ("" is NULL: the first page) and limit, as C takes them.
// A limit below 0 cannot be a size_t; the library checks the range (1..10000).
func (strs *cStrings) pageArgs(cursor string, limit int) (*C.char, C.size_t, error) {
	if limit < 0 {
		return nil, 0, argumentError("limit is " + strconv.Itoa(limit) + "; it must be 1..10000")
	}
	if cursor == "" {
		return nil, C.size_t(limit), nil
	}
	c, err := strs.add("cursor", cursor)
	return c, C.size_t(limit), err
}

func (t cTransport) stats() (*Stats, error) {
	var out *C.harel_stats
	var cerr *C.harel_error
	s := C.harel_transport_stats(t.p, &out, &cerr)
	defer C.harel_stats_free(out) // NULL does nothing
	if err := check(s, &cerr); err != nil {
		return nil, err
	}
	st := &Stats{
		Now:            fromEpochSeconds(float64(out.now)),
		Messages:       uint64(out.messages),
		Groups:         uint64(out.groups),
		Ready:          uint64(out.ready),
		Leased:         uint64(out.leased),
		Parked:         uint64(out.parked),
		Delayed:        uint64(out.delayed),
		Dead:           uint64(out.dead),
		OldestReadyAge: optionalDuration(out.oldest_ready_age),
		NextReleaseAt:  optionalTime(out.next_release_at),
		NextDueAt:      optionalTime(out.next_due_at),
		ByPriority:     make([]PriorityStats, 0, int(out.n_priorities)),
	}
	if seq := int64(out.oldest_ready_seq); seq >= 0 {
		st.OldestReadySeq = &seq
	}
	for _, p := range cSlice(out.by_priority, out.n_priorities) {
		st.ByPriority = append(st.ByPriority, PriorityStats{
			Priority: int(p.priority),
			Groups:   uint64(p.groups),
			Ready:    uint64(p.ready),
			Leased:   uint64(p.leased),
			Parked:   uint64(p.parked),
		})
	}
	return st, nil
}

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

func (t cTransport) groups(state GroupState, cursor string, limit int) (*GroupPage, error) {
	var strs cStrings
	defer strs.free()
	c, lim, err := strs.pageArgs(cursor, limit)
	if err != nil {
		return nil, err
	}
	var out *C.harel_group_page
	var cerr *C.harel_error
	s := C.harel_transport_groups(t.p, C.int32_t(state), c, lim, &out, &cerr)
	defer C.harel_group_page_free(out)
	if err := check(s, &cerr); err != nil {
		return nil, err
	}
	page := &GroupPage{Groups: make([]GroupInfo, 0, int(out.n_groups)), Next: optionalString(out.next_cursor)}
	shards := cSlice(out.shards, out.n_groups)
	for i, g := range cSlice(out.groups, out.n_groups) {
		page.Groups = append(page.Groups, GroupInfo{
			Shard:        int(shards[i]),
			GroupID:      C.GoStringN(g.group_id, C.int(g.group_id_len)),
			State:        GroupState(g.state),
			Depth:        uint64(g.depth),
			HeadSeq:      int64(g.head_seq),
			HeadAge:      optionalDuration(g.head_age),
			Holder:       optionalString(g.holder),
			LockExpiry:   optionalTime(g.lock_expiry),
			Priority:     int(g.priority),
			RoutingKey:   optionalString(g.routing_key),
			HeadAttempts: int(g.head_attempts),
		})
	}
	return page, nil
}

func (t cTransport) peek(groupID, cursor string, limit int) (*MessagePage, error) {
	var strs cStrings
	defer strs.free()
	g, err := strs.add("group_id", groupID)
	if err != nil {
		return nil, err
	}
	c, lim, err := strs.pageArgs(cursor, limit)
	if err != nil {
		return nil, err
	}
	var out *C.harel_message_page
	var cerr *C.harel_error
	s := C.harel_transport_peek(t.p, g, c, lim, &out, &cerr)
	defer C.harel_message_page_free(out)
	if err := check(s, &cerr); err != nil {
		return nil, err
	}
	page := &MessagePage{Messages: make([]MessageInfo, 0, int(out.n_messages)), Next: optionalString(out.next_cursor)}
	for _, m := range cSlice(out.messages, out.n_messages) {
		page.Messages = append(page.Messages, MessageInfo{
			Seq:         int64(m.seq),
			Event:       C.GoBytes(unsafe.Pointer(m.event), C.int(m.event_len)),
			Attempts:    int(m.attempts),
			LockedBy:    optionalString(m.locked_by),
			LockExpiry:  optionalTime(m.lock_expiry),
			PublishedAt: optionalTime(m.published_at),
		})
	}
	return page, nil
}

// deadLetters lists groupID's dead letters, or all of them for "" (NULL).
func (t cTransport) deadLetters(groupID, cursor string, limit int) (*DeadLetterPage, error) {
	var strs cStrings
	defer strs.free()
	var g *C.char
	if groupID != "" {
		var err error
		if g, err = strs.add("group_id", groupID); err != nil {
			return nil, err
		}
	}
	c, lim, err := strs.pageArgs(cursor, limit)
	if err != nil {
		return nil, err
	}
	var out *C.harel_dead_page
	var cerr *C.harel_error
	s := C.harel_transport_dead_letters(t.p, g, c, lim, &out, &cerr)
	defer C.harel_dead_page_free(out)
	if err := check(s, &cerr); err != nil {
		return nil, err
	}
	page := &DeadLetterPage{Letters: make([]DeadLetter, 0, int(out.n_letters)), Next: optionalString(out.next_cursor)}
	shards := cSlice(out.shards, out.n_letters)
	for i, d := range cSlice(out.letters, out.n_letters) {
		page.Letters = append(page.Letters, DeadLetter{
			Shard:      int(shards[i]),
			Seq:        int64(d.seq),
			GroupID:    C.GoStringN(d.group_id, C.int(d.group_id_len)),
			Event:      C.GoBytes(unsafe.Pointer(d.event), C.int(d.event_len)),
			Attempts:   int(d.attempts),
			LastWorker: optionalString(d.last_worker),
			Reason:     C.GoString(d.reason),
			DeadAt:     fromEpochSeconds(float64(d.dead_at)),
		})
	}
	return page, nil
}

// ---- the worker loop: waiting claims, batches, extend -------------------------------------

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

// firstOf is the address of a slice's first element, NULL for an empty one.
func firstOf[T any](s []T) *T {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
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

// ---- publishing inside the application's transaction ---------------------------------------

// cTx is a harel_tx*, the caller's until harel_tx_free.
type cTx struct{ p *C.harel_tx }

// The codes of harel_value.type: the header's harel_value_type.
const (
	valueNull    = C.int32_t(C.HAREL_VALUE_NULL)
	valueInteger = C.int32_t(C.HAREL_VALUE_INTEGER)
	valueReal    = C.int32_t(C.HAREL_VALUE_REAL)
	valueText    = C.int32_t(C.HAREL_VALUE_TEXT)
	valueBlob    = C.int32_t(C.HAREL_VALUE_BLOB)
)

func (t cTransport) begin() (cTx, error) {
	var tx *C.harel_tx
	var cerr *C.harel_error
	if err := check(C.harel_transport_begin(t.p, &tx, &cerr), &cerr); err != nil {
		return cTx{}, err
	}
	return cTx{tx}, nil
}

// statement is sql and its parameters as C takes them: copies in C memory (added to
// strs, freed with it), the parameters an array of harel_value (NULL for none) whose
// texts and blobs are C memory too.
func (strs *cStrings) statement(sql string, args []any) (*C.char, *C.harel_value, error) {
	s, err := strs.add("sql", sql)
	if err != nil || len(args) == 0 {
		return s, nil, err
	}
	array := (*C.harel_value)(strs.alloc(C.size_t(len(args)) * C.sizeof_harel_value))
	params := unsafe.Slice(array, len(args))
	for i, arg := range args {
		if params[i], err = strs.value("params["+strconv.Itoa(i)+"]", arg); err != nil {
			return nil, nil, err
		}
	}
	return s, array, nil
}

// value is arg as a harel_value, named name in errors. Go's types that have an SQL value
// map to it (a bool to 0 or 1, as SQLite stores booleans); any other type, and an unsigned
// integer beyond int64, is ErrArgument. A float that is not finite goes to the library,
// which refuses it.
func (strs *cStrings) value(name string, arg any) (v C.harel_value, err error) {
	integer := func(n int64) { v._type, v.integer = valueInteger, C.int64_t(n) }
	unsigned := func(n uint64) {
		if n > math.MaxInt64 {
			err = argumentError(name + " is " + strconv.FormatUint(n, 10) +
				": beyond int64, the largest integer SQL stores")
			return
		}
		integer(int64(n))
	}
	switch a := arg.(type) {
	case nil:
		v._type = valueNull
	case bool:
		var n int64
		if a {
			n = 1
		}
		integer(n)
	case int:
		integer(int64(a))
	case int8:
		integer(int64(a))
	case int16:
		integer(int64(a))
	case int32:
		integer(int64(a))
	case int64:
		integer(a)
	case uint:
		unsigned(uint64(a))
	case uint8:
		unsigned(uint64(a))
	case uint16:
		unsigned(uint64(a))
	case uint32:
		unsigned(uint64(a))
	case uint64:
		unsigned(a)
	case float32:
		v._type, v.real = valueReal, C.double(a)
	case float64:
		v._type, v.real = valueReal, C.double(a)
	case string:
		v._type = valueText
		v.text, err = strs.add(name, a)
	case []byte:
		v._type, v.size = valueBlob, C.size_t(len(a))
		if len(a) > 0 { // an empty blob's pointer is NULL
			p := strs.alloc(C.size_t(len(a)))
			copy(unsafe.Slice((*byte)(p), len(a)), a)
			v.blob = (*C.uint8_t)(p)
		}
	default:
		err = argumentError(fmt.Sprintf("%s is a %T: a parameter is nil, a bool, an integer, a float, "+
			"a string or a []byte", name, arg))
	}
	return v, err
}

func (tx cTx) execute(sql string, args []any) error {
	var strs cStrings
	defer strs.free()
	s, params, err := strs.statement(sql, args)
	if err != nil {
		return err
	}
	var cerr *C.harel_error
	return check(C.harel_tx_execute(tx.p, s, params, C.size_t(len(args)), &cerr), &cerr)
}

func (tx cTx) query(sql string, args []any) ([][]any, error) {
	var strs cStrings
	defer strs.free()
	s, params, err := strs.statement(sql, args)
	if err != nil {
		return nil, err
	}
	var out *C.harel_rows
	var cerr *C.harel_error
	status := C.harel_tx_query(tx.p, s, params, C.size_t(len(args)), &out, &cerr)
	defer C.harel_rows_free(out) // NULL does nothing
	if err := check(status, &cerr); err != nil {
		return nil, err
	}
	return goRows(out), nil
}

// goRows is a Go copy of rows, row by row.
func goRows(rows *C.harel_rows) [][]any {
	n, columns := int(rows.n_rows), int(rows.n_columns)
	values := cSlice(rows.values, rows.n_rows*rows.n_columns)
	out := make([][]any, n)
	for r := range out {
		out[r] = make([]any, columns)
		for c := range out[r] {
			out[r][c] = goValue(&values[r*columns+c])
		}
	}
	return out
}

// goValue is a Go copy of v: nil, int64, float64, string (every byte of its size) or []byte.
func goValue(v *C.harel_value) any {
	switch v._type {
	case valueInteger:
		return int64(v.integer)
	case valueReal:
		return float64(v.real)
	case valueText:
		return C.GoStringN(v.text, C.int(v.size))
	case valueBlob:
		return C.GoBytes(unsafe.Pointer(v.blob), C.int(v.size)) // empty, not nil, for size 0
	}
	return nil // valueNull
}

func (tx cTx) publish(groupID string, event []byte, pc *publishConfig) error {
	var strs cStrings
	defer strs.free()
	m, err := strs.message("", groupID, event, pc.priority, pc.routingKey)
	if err != nil {
		return err
	}
	d, err := strs.delivery("", pc.key, pc.delay, pc.notBefore)
	if err != nil {
		return err
	}
	var cerr *C.harel_error
	return check(C.harel_tx_publish(tx.p, m.group_id, m.event_json, m.priority, m.routing_key,
		d.key, d.delay, d.notBefore, &cerr), &cerr)
}

// commit commits and returns the outcomes of the n publishes queued, in Go arrays of
// numbers n long.
func (tx cTx) commit(n int) ([]Published, error) {
	seqs, duplicates := make([]C.int64_t, n), make([]C.int, n)
	var got C.size_t
	var cerr *C.harel_error
	s := C.harel_tx_commit(tx.p, firstOf(seqs), firstOf(duplicates), C.size_t(n), &got, &cerr)
	if err := check(s, &cerr); err != nil {
		return nil, err
	}
	published := make([]Published, min(n, int(got)))
	for i := range published {
		published[i] = Published{Seq: int64(seqs[i]), Duplicate: duplicates[i] != 0}
	}
	return published, nil
}

func (tx cTx) rollback() error {
	var cerr *C.harel_error
	return check(C.harel_tx_rollback(tx.p, &cerr), &cerr)
}

func (tx cTx) free() { C.harel_tx_free(tx.p) }
