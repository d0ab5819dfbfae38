package harel

// The C calls of publish: a message or a batch, with the delivery options and their
// outcomes or without, with headers or without.

// #include "harel_transport.h"
import "C"

import (
	"strconv"
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
	d, err := strs.delivery("", pc.key, pc.delay, pc.notBefore)
	if err != nil {
		return Published{}, err
	}
	var seq C.int64_t
	var duplicate C.int
	var cerr *C.harel_error
	s := C.harel_transport_publish_with_headers(t.p, m.group_id, m.event_json, m.priority, m.routing_key,
		hs, C.size_t(len(pc.headers)), d.key, d.delay, d.notBefore, &seq, &duplicate, &cerr)
	if err := check(s, &cerr); err != nil {
		return Published{}, err
	}
	return Published{Seq: int64(seq), Duplicate: duplicate != 0}, nil
}

// publishManyWith hands msgs to C as publishMany does, with their headers in a C array
// (NULL when none has any), their delivery options in Go arrays of numbers and of C
// pointers (no Go pointers in them), and its outcomes in Go arrays of numbers.
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
	s := C.harel_transport_publish_many_with_headers(t.p, array, C.size_t(n), headers, firstOf(keys), firstOf(delays),
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
