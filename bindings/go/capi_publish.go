package harel

// The C calls of publish: a message or a batch, with the delivery options and their
// outcomes or without, with headers or without.

// #include "harel_transport.h"
import "C"

import (
	"strconv"
	"time"
	"unsafe"
)

// publish is a plain publish (group commit), through harel_transport_publish_headers
// (which, with no headers, is harel_transport_publish).
func (t cTransport) publish(groupID string, event []byte, pc *publishConfig) error {
	var strs cStrings
	defer strs.free()
	m, err := strs.message("", groupID, event, pc.priority, pc.routingKey)
	if err != nil {
		return err
	}
	hs, err := strs.headers("", pc.headers)
	if err != nil {
		return err
	}
	var cerr *C.harel_error
	return check(C.harel_transport_publish_headers(t.p, m.group_id, m.event_json, m.priority, m.routing_key,
		hs, C.size_t(len(pc.headers)), &cerr), &cerr)
}

// publishMany hands msgs to C as an array of harel_message (a batch without delivery
// options or headers: those go through publishManyWith).
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

// messageHeaders is the messages' headers as the batch calls take them: an array of
// harel_headers in C memory, element i message i's; NULL when no message has any.
func (a *cStrings) messageHeaders(msgs []Message) (*C.harel_headers, error) {
	some := false
	for i := range msgs {
		some = some || len(msgs[i].Headers) > 0
	}
	if !some {
		return nil, nil
	}
	array := (*C.harel_headers)(a.alloc(C.size_t(len(msgs)) * C.sizeof_harel_headers))
	lists := unsafe.Slice(array, len(msgs))
	for i := range msgs {
		items, err := a.headers(messageParam(i), msgs[i].Headers)
		if err != nil {
			return nil, err
		}
		lists[i].items, lists[i].n = items, C.size_t(len(msgs[i].Headers))
	}
	return array, nil
}

// messageParam is the prefix of message i's parameters in errors: "messages[3].".
func messageParam(i int) string { return "messages[" + strconv.Itoa(i) + "]." }

// The codes of harel_published, what became of a message (HAREL_PUBLISHED_DUPLICATE is
// any other).
const (
	publishedStored   = C.int(C.HAREL_PUBLISHED_STORED)
	publishedReplaced = C.int(C.HAREL_PUBLISHED_REPLACED)
)

// UniqueMode's values are the library's harel_unique_mode (a build with others fails here).
const _ = uint(UniqueKeep-C.HAREL_UNIQUE_KEEP) + uint(C.HAREL_UNIQUE_KEEP-UniqueKeep) +
	uint(UniqueReplace-C.HAREL_UNIQUE_REPLACE) + uint(C.HAREL_UNIQUE_REPLACE-UniqueReplace) +
	uint(UniqueDebounce-C.HAREL_UNIQUE_DEBOUNCE) + uint(C.HAREL_UNIQUE_DEBOUNCE-UniqueDebounce)

// outcomeOf is a message's Published from its seq and its harel_published: a replaced
// message is a duplicate too (nothing new was stored), as the library's Published.
func outcomeOf(seq C.int64_t, outcome C.int) Published {
	return Published{Seq: int64(seq), Duplicate: outcome != publishedStored, Replaced: outcome == publishedReplaced}
}

// harelDelivery is a message's delivery options as a harel_delivery (its size set;
// unique_key NULL for a nil u, retry_base 0 for a nil r), its strings added to a and freed
// with it. Errors name the fields after prefix ("messages[3]."), as the library does. A NUL
// byte, an instant before the epoch and what the ABI reads as none (a ttl of 0, an expiry
// at the epoch, a retry base of 0) are the binding's to refuse (delivery's, expiryFields',
// retryFields'); every other value the library's.
func (a *cStrings) harelDelivery(prefix string, key *string, delay time.Duration, notBefore time.Time,
	u *Unique, e expiry, r *Retry) (cd C.harel_delivery, err error) {
	d, err := a.delivery(prefix, key, delay, notBefore)
	if err != nil {
		return cd, err
	}
	cd.size = C.sizeof_harel_delivery
	cd.key, cd.delay, cd.not_before = d.key, d.delay, d.notBefore
	if cd.ttl, cd.expires_at, err = expiryFields(prefix, e); err != nil {
		return cd, err
	}
	if r != nil {
		base, factor, longest, jitter, err := retryFields(prefix+"retry", r)
		if err != nil {
			return cd, err
		}
		cd.retry_base, cd.retry_factor, cd.retry_cap, cd.retry_jitter = base, factor, longest, jitter
	}
	if u != nil {
		if cd.unique_key, err = a.add(prefix+"unique_key", u.Key); err != nil {
			return cd, err
		}
		cd.unique_mode = C.int32_t(u.Mode)
		cd.debounce_delay, cd.debounce_max_delay = seconds(u.Delay), seconds(u.MaxDelay)
	}
	return cd, nil
}

// expiryFields is e as harel_delivery's ttl and expires_at, 0 each for none. The ABI reads
// 0 as none, so a WithTTL(0) and an instant at the epoch (before it: negative, which the
// library would name in epoch seconds) are refused here, in the library's words; a negative
// or too long ttl goes to the library, which refuses it.
func expiryFields(prefix string, e expiry) (ttl, expiresAt C.double, err error) {
	if e.ttl != nil {
		if *e.ttl == 0 {
			return 0, 0, argumentError(prefix + "ttl is 0; it must be a finite number of seconds > 0, at most " +
				"315360000 (ten years)")
		}
		ttl = seconds(*e.ttl)
	}
	if !e.at.IsZero() {
		if !e.at.After(time.Unix(0, 0)) {
			return 0, 0, argumentError(prefix + "expires_at is " + e.at.UTC().Format(time.RFC3339Nano) +
				", not after the Unix epoch; it must be an instant after 1970, or the zero Time for none")
		}
		expiresAt = C.double(epochSeconds(e.at))
	}
	return ttl, expiresAt, nil
}

// retryFields is r as harel_options_set_retry's arguments and harel_delivery's retry fields,
// name naming it in errors ("retry", "messages[3].retry"). The ABI reads a base of 0 as no
// policy, so a Base of 0 is refused here, in the library's words; a Factor or Cap of 0 goes
// through, which the ABI reads as 2 and as an hour (or the base if longer); every other
// value is the library's to check (a negative base, a factor or cap out of range, an
// unknown jitter).
func retryFields(name string, r *Retry) (base, factor, longest C.double, jitter C.int32_t, err error) {
	if r.Base == 0 {
		return 0, 0, 0, 0, argumentError(name + ".base is 0; it must be finite seconds, 0.001..315360000 " +
			"(ten years)")
	}
	return seconds(r.Base), C.double(r.Factor), seconds(r.Cap), C.int32_t(r.Jitter), nil
}

// Jitter's values are the library's harel_jitter (a build with others fails here).
const _ = uint(JitterFull-C.HAREL_JITTER_FULL) + uint(C.HAREL_JITTER_FULL-JitterFull) +
	uint(JitterEqual-C.HAREL_JITTER_EQUAL) + uint(C.HAREL_JITTER_EQUAL-JitterEqual) +
	uint(JitterNone-C.HAREL_JITTER_NONE) + uint(C.HAREL_JITTER_NONE-JitterNone)

// publishWith publishes with the delivery options, through harel_transport_publish_delivery.
func (t cTransport) publishWith(groupID string, event []byte, pc *publishConfig) (Published, error) {
	var strs cStrings
	defer strs.free()
	m, err := strs.message("", groupID, event, pc.priority, pc.routingKey)
	if err != nil {
		return Published{}, err
	}
	hs, err := strs.headers("", pc.headers)
	if err != nil {
		return Published{}, err
	}
	d, err := strs.harelDelivery("", pc.key, pc.delay, pc.notBefore, pc.unique, pc.expiry, pc.retry)
	if err != nil {
		return Published{}, err
	}
	var seq C.int64_t
	var outcome C.int
	var cerr *C.harel_error
	s := C.harel_transport_publish_delivery(t.p, m.group_id, m.event_json, m.priority, m.routing_key,
		hs, C.size_t(len(pc.headers)), &d, &seq, &outcome, &cerr)
	if err := check(s, &cerr); err != nil {
		return Published{}, err
	}
	return outcomeOf(seq, outcome), nil
}

// publishManyWith hands msgs to C as publishMany does, with their headers in a C array
// (NULL when none has any), each message's delivery options a harel_delivery in C memory
// pointed to from a Go array, and its outcomes in Go arrays of numbers.
func (t cTransport) publishManyWith(msgs []Message) ([]Published, error) {
	var strs cStrings
	defer strs.free()
	array, err := strs.messages(msgs)
	if err != nil {
		return nil, err
	}
	headers, err := strs.messageHeaders(msgs)
	if err != nil {
		return nil, err
	}
	deliveries, err := strs.deliveries(msgs)
	if err != nil {
		return nil, err
	}
	n := len(msgs)
	seqs, outcomes := make([]C.int64_t, n), make([]C.int, n)
	var cerr *C.harel_error
	s := C.harel_transport_publish_many_delivery(t.p, array, C.size_t(n), headers, firstOf(deliveries),
		firstOf(seqs), firstOf(outcomes), &cerr)
	if err := check(s, &cerr); err != nil {
		return nil, err
	}
	published := make([]Published, n)
	for i := range published {
		published[i] = outcomeOf(seqs[i], outcomes[i])
	}
	return published, nil
}

// messageKey is m's idempotency key as delivery takes it: nil for none ("").
func messageKey(m *Message) *string {
	if m.Key == "" {
		return nil
	}
	return &m.Key
}

// deliveries is the messages' delivery options as harel_transport_publish_many_delivery
// takes them: a harel_delivery per message in C memory (freed with a), and a Go array of
// pointers to them (nil for no messages). Errors name the message ("messages[3].unique_key").
func (a *cStrings) deliveries(msgs []Message) ([]*C.harel_delivery, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	block := unsafe.Slice((*C.harel_delivery)(a.alloc(C.size_t(len(msgs))*C.sizeof_harel_delivery)), len(msgs))
	ptrs := make([]*C.harel_delivery, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		d, err := a.harelDelivery(messageParam(i), messageKey(m), m.Delay, m.NotBefore, m.Unique, m.expiry(),
			m.Retry)
		if err != nil {
			return nil, err
		}
		block[i] = d
		ptrs[i] = &block[i]
	}
	return ptrs, nil
}
