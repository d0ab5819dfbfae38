package harel

// The only file that calls the C library. Each C call goes through a small helper in the
// preamble that makes the call and, when it failed, copies harel_last_error() before
// returning: the message is thread-local in C, and a goroutine may move to another OS thread
// between two cgo calls, so reading it in a second cgo call could read another call's error.
//
// Memory: Go memory never outlives a call in C. Strings in are C copies (C.CString) freed
// when the call returns; what C hands out (a lease, a schema string, an error message) is
// copied into Go values and freed at once.

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "harel_transport.h"

// A call's status; for an error, a malloc'd copy of harel_last_error() (or NULL if out of
// memory); and what the call handed out, if anything.
typedef struct {
	int32_t status;
	char *message;
	void *out;
} hgo_result;

static hgo_result hgo_result_of(harel_status status, void *out) {
	hgo_result r;
	r.status = (int32_t)status;
	r.message = NULL;
	r.out = out;
	if (status < 0) {
		const char *m = harel_last_error();
		r.message = strdup(m != NULL ? m : "");
	}
	return r;
}

static hgo_result hgo_set_prefix(harel_options *o, const char *prefix) {
	return hgo_result_of(harel_options_set_prefix(o, prefix), NULL);
}
static hgo_result hgo_set_create_schema(harel_options *o, bool on) {
	return hgo_result_of(harel_options_set_create_schema(o, on), NULL);
}
static hgo_result hgo_set_sync_url(harel_options *o, const char *url) {
	return hgo_result_of(harel_options_set_sync_url(o, url), NULL);
}
static hgo_result hgo_set_auth_token(harel_options *o, const char *token) {
	return hgo_result_of(harel_options_set_auth_token(o, token), NULL);
}
static hgo_result hgo_set_sync_interval(harel_options *o, double seconds) {
	return hgo_result_of(harel_options_set_sync_interval(o, seconds), NULL);
}
static hgo_result hgo_set_busy_timeout(harel_options *o, double seconds) {
	return hgo_result_of(harel_options_set_busy_timeout(o, seconds), NULL);
}
static hgo_result hgo_set_synchronous_full(harel_options *o, bool full) {
	return hgo_result_of(harel_options_set_synchronous_full(o, full), NULL);
}

// The clock: ctx carries a cgo.Handle (an integer, never a Go pointer) to the Go function.
extern double harelGoClock(uintptr_t handle);
static double hgo_clock(void *ctx) {
	return harelGoClock((uintptr_t)ctx);
}
static hgo_result hgo_set_clock(harel_options *o, uintptr_t handle) {
	return hgo_result_of(harel_options_set_clock(o, hgo_clock, (void *)handle), NULL);
}

static hgo_result hgo_open(const char *database, const harel_options *o) {
	harel_transport *t = NULL;
	harel_status s = harel_transport_open(database, o, &t);
	return hgo_result_of(s, t);
}
static hgo_result hgo_publish(harel_transport *t, const char *group_id, const char *event_json,
                              int32_t priority, const char *routing_key) {
	return hgo_result_of(harel_transport_publish(t, group_id, event_json, priority, routing_key), NULL);
}
static hgo_result hgo_publish_many(harel_transport *t, const harel_message *messages, size_t n) {
	return hgo_result_of(harel_transport_publish_many(t, messages, n), NULL);
}
static hgo_result hgo_claim(harel_transport *t, const char *worker_id, double visibility,
                            int32_t min_priority, char **routing_keys, size_t n) {
	harel_lease *lease = NULL;
	harel_status s = harel_transport_claim(t, worker_id, visibility, min_priority,
	                                       (const char *const *)routing_keys, n, &lease);
	return hgo_result_of(s, lease);
}
// ack and nack get a lease built here from the Go Lease's fields (ABI.md: a caller may fill
// a harel_lease of its own; ack and nack read only seq, group_id and worker_id).
static hgo_result hgo_ack(harel_transport *t, int64_t seq, char *group_id, char *worker_id) {
	harel_lease lease = { seq, group_id, NULL, worker_id, 0.0 };
	return hgo_result_of(harel_transport_ack(t, &lease), NULL);
}
static hgo_result hgo_ack_and_claim(harel_transport *t, int64_t seq, char *group_id,
                                    char *lease_worker_id, const char *worker_id,
                                    double visibility, int32_t min_priority,
                                    char **routing_keys, size_t n) {
	harel_lease lease = { seq, group_id, NULL, lease_worker_id, 0.0 };
	harel_lease *next = NULL;
	harel_status s = harel_transport_ack_and_claim(t, &lease, worker_id, visibility, min_priority,
	                                               (const char *const *)routing_keys, n, &next);
	return hgo_result_of(s, next);
}
static hgo_result hgo_nack(harel_transport *t, int64_t seq, char *group_id, char *worker_id,
                           double delay) {
	harel_lease lease = { seq, group_id, NULL, worker_id, 0.0 };
	return hgo_result_of(harel_transport_nack(t, &lease, delay), NULL);
}
static hgo_result hgo_close(harel_transport *t) {
	return hgo_result_of(harel_transport_close(t), NULL);
}
static hgo_result hgo_schema_sql(const char *prefix, bool upgrade) {
	char *out = NULL;
	harel_status s = upgrade ? harel_schema_upgrade_sql(prefix, &out) : harel_schema_sql(prefix, &out);
	return hgo_result_of(s, out);
}
*/
import "C"

import (
	"math"
	"runtime/cgo"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// cTransport is an open harel_transport*.
type cTransport struct{ p *C.harel_transport }

// check turns a result into nil (OK, EMPTY) or an *Error, freeing the message copy.
func check(r C.hgo_result) error {
	status := Status(r.status)
	if status >= 0 {
		return nil
	}
	e := &Error{Status: status}
	if r.message != nil {
		e.Message = C.GoString(r.message)
		C.free(unsafe.Pointer(r.message))
	}
	return e
}

// cStrings allocates C copies of Go strings and frees them all at once.
type cStrings []*C.char

// add copies s, named param (its ABI name) in errors. A Go string may hold NUL bytes,
// which a C string cannot: C would see it cut short, so that is ErrArgument here.
func (a *cStrings) add(param, s string) (*C.char, error) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return nil, argumentError(param + " holds a NUL byte (at byte " + strconv.Itoa(i) +
			"), which a C string cannot carry")
	}
	p := C.CString(s)
	*a = append(*a, p)
	return p, nil
}

func (a *cStrings) addBytes(param string, b []byte) (*C.char, error) {
	return a.add(param, unsafe.String(unsafe.SliceData(b), len(b)))
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
	o := C.harel_options_new()
	if o == nil {
		return cTransport{}, &Error{Status: StatusPanic, Message: "harel_options_new failed"}
	}
	defer C.harel_options_free(o)
	if err := setOptions(o, cfg, clock, &strs); err != nil {
		return cTransport{}, err
	}
	r := C.hgo_open(db, o)
	if err := check(r); err != nil {
		return cTransport{}, err
	}
	return cTransport{(*C.harel_transport)(r.out)}, nil
}

// setOptions hands each field cfg sets to its C setter; the first refusal is the error,
// its message led by the Option's name (the C message names the setter's parameter).
func setOptions(o *C.harel_options, cfg *config, clock cgo.Handle, strs *cStrings) error {
	type setter struct {
		option string
		set    func() C.hgo_result
	}
	var setters []setter
	text := func(option, param string, value *string, set func(*C.char) C.hgo_result) error {
		if value == nil {
			return nil
		}
		p, err := strs.add(param, *value)
		if err != nil {
			return optionError(option, err)
		}
		setters = append(setters, setter{option, func() C.hgo_result { return set(p) }})
		return nil
	}
	if err := text("WithPrefix", "prefix", cfg.prefix,
		func(p *C.char) C.hgo_result { return C.hgo_set_prefix(o, p) }); err != nil {
		return err
	}
	if err := text("WithSyncURL", "url", cfg.syncURL,
		func(p *C.char) C.hgo_result { return C.hgo_set_sync_url(o, p) }); err != nil {
		return err
	}
	if err := text("WithAuthToken", "token", cfg.authToken,
		func(p *C.char) C.hgo_result { return C.hgo_set_auth_token(o, p) }); err != nil {
		return err
	}
	if v := cfg.createSchema; v != nil {
		setters = append(setters, setter{"WithCreateSchema",
			func() C.hgo_result { return C.hgo_set_create_schema(o, C.bool(*v)) }})
	}
	if v := cfg.syncInterval; v != nil {
		setters = append(setters, setter{"WithSyncInterval",
			func() C.hgo_result { return C.hgo_set_sync_interval(o, seconds(*v)) }})
	}
	if v := cfg.busyTimeout; v != nil {
		setters = append(setters, setter{"WithBusyTimeout",
			func() C.hgo_result { return C.hgo_set_busy_timeout(o, seconds(*v)) }})
	}
	if v := cfg.synchronousFull; v != nil {
		setters = append(setters, setter{"WithSynchronousFull",
			func() C.hgo_result { return C.hgo_set_synchronous_full(o, C.bool(*v)) }})
	}
	if clock != 0 {
		setters = append(setters, setter{"WithClock",
			func() C.hgo_result { return C.hgo_set_clock(o, C.uintptr_t(clock)) }})
	}
	for _, s := range setters {
		if err := check(s.set()); err != nil {
			return optionError(s.option, err)
		}
	}
	return nil
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
	return check(C.hgo_publish(t.p, m.group_id, m.event_json, m.priority, m.routing_key))
}

// publishMany hands msgs to C as an array of harel_message. The array is malloc'd, like
// the strings its elements point to: C sees only C memory, and no Go pointer can end up in
// it.
func (t cTransport) publishMany(msgs []Message) error {
	var strs cStrings
	defer strs.free()
	var array *C.harel_message
	if len(msgs) > 0 {
		array = (*C.harel_message)(C.malloc(C.size_t(len(msgs)) * C.sizeof_harel_message))
		defer C.free(unsafe.Pointer(array))
	}
	cmsgs := unsafe.Slice(array, len(msgs))
	for i, m := range msgs {
		var routingKey *string
		if m.RoutingKey != "" {
			routingKey = &m.RoutingKey
		}
		cm, err := strs.message("messages["+strconv.Itoa(i)+"].", m.GroupID, m.Event, m.Priority, routingKey)
		if err != nil {
			return err
		}
		cmsgs[i] = cm
	}
	return check(C.hgo_publish_many(t.p, array, C.size_t(len(msgs))))
}

// message is a harel_message of C copies of the arguments (added to a, freed with it);
// errors name each parameter as its ABI name after prefix ("messages[3].").
func (a *cStrings) message(prefix, groupID string, event []byte, priority int, routingKey *string) (C.harel_message, error) {
	var m C.harel_message
	var err error
	if m.group_id, err = a.add(prefix+"group_id", groupID); err != nil {
		return m, err
	}
	if m.event_json, err = a.addBytes(prefix+"event_json", event); err != nil {
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
	// A Go array of C pointers: Go memory holding no Go pointers may be passed for the call.
	keys []*C.char
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
func claimed(r C.hgo_result) (*Lease, error) {
	if err := check(r); err != nil {
		return nil, err
	}
	if Status(r.status) == StatusEmpty || r.out == nil {
		return nil, nil
	}
	l := (*C.harel_lease)(r.out)
	defer C.harel_lease_free(l)
	return &Lease{
		Seq:        int64(l.seq),
		GroupID:    C.GoString(l.group_id),
		Event:      C.GoBytes(unsafe.Pointer(l.event), C.int(C.strlen(l.event))),
		WorkerID:   C.GoString(l.worker_id),
		LockExpiry: fromEpochSeconds(float64(l.lock_expiry)),
	}, nil
}

// claim returns nil, nil when nothing is deliverable (HAREL_EMPTY).
func (t cTransport) claim(workerID string, visibility time.Duration, minPriority int, routingKeys []string) (*Lease, error) {
	var strs cStrings
	defer strs.free()
	a, err := strs.claimArgs(workerID, visibility, minPriority, routingKeys)
	if err != nil {
		return nil, err
	}
	return claimed(C.hgo_claim(t.p, a.worker, a.visibility, a.minPriority, a.keysPtr(), C.size_t(len(a.keys))))
}

// ackAndClaim acks l and claims the next message in one transaction.
func (t cTransport) ackAndClaim(l *Lease, workerID string, visibility time.Duration, minPriority int, routingKeys []string) (*Lease, error) {
	var strs cStrings
	defer strs.free()
	g, w, err := strs.leaseFields(l)
	if err != nil {
		return nil, err
	}
	a, err := strs.claimArgs(workerID, visibility, minPriority, routingKeys)
	if err != nil {
		return nil, err
	}
	return claimed(C.hgo_ack_and_claim(t.p, C.int64_t(l.Seq), g, w, a.worker, a.visibility, a.minPriority,
		a.keysPtr(), C.size_t(len(a.keys))))
}

// leaseFields are C copies of the lease fields ack and nack read (seq aside).
func (strs *cStrings) leaseFields(l *Lease) (groupID, workerID *C.char, err error) {
	if l == nil {
		return nil, nil, argumentError("lease is nil")
	}
	if groupID, err = strs.add("lease.group_id", l.GroupID); err != nil {
		return nil, nil, err
	}
	workerID, err = strs.add("lease.worker_id", l.WorkerID)
	return groupID, workerID, err
}

// leaseCall runs ack (nack false) or nack on a harel_lease built from l's fields.
func (t cTransport) leaseCall(l *Lease, nack bool, delay time.Duration) error {
	var strs cStrings
	defer strs.free()
	g, w, err := strs.leaseFields(l)
	if err != nil {
		return err
	}
	if nack {
		return check(C.hgo_nack(t.p, C.int64_t(l.Seq), g, w, seconds(delay)))
	}
	return check(C.hgo_ack(t.p, C.int64_t(l.Seq), g, w))
}

func (t cTransport) close() error { return check(C.hgo_close(t.p)) }

func cSchemaSQL(prefix string, upgrade bool) (string, error) {
	var strs cStrings
	defer strs.free()
	p, err := strs.add("prefix", prefix)
	if err != nil {
		return "", err
	}
	r := C.hgo_schema_sql(p, C.bool(upgrade))
	if err := check(r); err != nil {
		return "", err
	}
	defer C.harel_string_free((*C.char)(r.out))
	return C.GoString((*C.char)(r.out)), nil
}

func cVersion() string { return C.GoString(C.harel_version()) }
