package harel

// The C calls of publish: a message or a batch, with the delivery options and their
// outcomes or without.

// #include "harel_transport.h"
import "C"

import (
	"strconv"
	"unsafe"
)

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
