package harel

// The C calls of looks: the stats and the pages, copied out and freed.

// #include "harel_transport.h"
import "C"

import (
	"math"
	"strconv"
	"time"
	"unsafe"
)

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

// optionalGroup is a listing's group id, "" being NULL: every group's.
func (strs *cStrings) optionalGroup(groupID string) (*C.char, error) {
	if groupID == "" {
		return nil, nil
	}
	return strs.add("group_id", groupID)
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
		Paused:         uint64(out.paused),
		Held:           uint64(out.held),
		Retrying:       uint64(out.retrying),
		Dead:           uint64(out.dead),
		Expired:        uint64(out.expired),
		OldestReadyAge: optionalDuration(out.oldest_ready_age),
		NextReleaseAt:  optionalTime(out.next_release_at),
		NextDueAt:      optionalTime(out.next_due_at),
		ByPriority:     make([]PriorityStats, 0, int(out.n_priorities)),
	}
	if seq := int64(out.oldest_ready_seq); seq >= 0 {
		st.OldestReadySeq = &seq
	}
	paused := cSlice(out.paused_by_priority, out.n_priorities) // one count per level
	for i, p := range cSlice(out.by_priority, out.n_priorities) {
		st.ByPriority = append(st.ByPriority, PriorityStats{
			Priority: int(p.priority),
			Groups:   uint64(p.groups),
			Ready:    uint64(p.ready),
			Leased:   uint64(p.leased),
			Parked:   uint64(p.parked),
			Paused:   uint64(paused[i]),
		})
	}
	return st, nil
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
	delays := cSlice(out.retry_delays, out.n_messages) // -1: none
	for i, m := range cSlice(out.messages, out.n_messages) {
		page.Messages = append(page.Messages, MessageInfo{
			Seq:         int64(m.seq),
			Event:       C.GoBytes(unsafe.Pointer(m.event), C.int(m.event_len)),
			Attempts:    int(m.attempts),
			LockedBy:    optionalString(m.locked_by),
			LockExpiry:  optionalTime(m.lock_expiry),
			PublishedAt: optionalTime(m.published_at),
			Headers:     pageHeaders(out.headers, out.n_messages, i),
			RetryDelay:  optionalDuration(delays[i]),
		})
	}
	return page, nil
}

// deadLetters lists groupID's dead letters, or all of them for "" (NULL).
func (t cTransport) deadLetters(groupID, cursor string, limit int) (*DeadLetterPage, error) {
	var strs cStrings
	defer strs.free()
	g, err := strs.optionalGroup(groupID)
	if err != nil {
		return nil, err
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
			Headers:    pageHeaders(out.headers, out.n_letters, i),
		})
	}
	return page, nil
}

// archive lists groupID's archived messages, or every group's for "" (NULL).
func (t cTransport) archive(groupID, cursor string, limit int) (*ArchivePage, error) {
	var strs cStrings
	defer strs.free()
	g, err := strs.optionalGroup(groupID)
	if err != nil {
		return nil, err
	}
	c, lim, err := strs.pageArgs(cursor, limit)
	if err != nil {
		return nil, err
	}
	var out *C.harel_archive_page
	var cerr *C.harel_error
	s := C.harel_transport_archive(t.p, g, c, lim, &out, &cerr)
	defer C.harel_archive_page_free(out) // NULL does nothing
	if err := check(s, &cerr); err != nil {
		return nil, err
	}
	page := &ArchivePage{Messages: make([]Archived, 0, int(out.n_messages)), Next: optionalString(out.next_cursor)}
	for _, a := range cSlice(out.messages, out.n_messages) {
		page.Messages = append(page.Messages, Archived{
			Shard:       int(a.shard),
			Seq:         int64(a.seq),
			GroupID:     C.GoStringN(a.group_id, C.int(a.group_id_len)),
			Event:       C.GoBytes(unsafe.Pointer(a.event), C.int(a.event_len)),
			Attempts:    int(a.attempts),
			WorkerID:    optionalString(a.worker_id),
			PublishedAt: optionalTime(a.published_at),
			ClaimedAt:   optionalTime(a.claimed_at),
			AckedAt:     fromEpochSeconds(float64(a.acked_at)),
			Headers:     goHeaders(a.headers.items, a.headers.n),
		})
	}
	return page, nil
}

func (t cTransport) pauses() ([]Pause, error) {
	var out *C.harel_pause_list
	var cerr *C.harel_error
	s := C.harel_transport_pauses(t.p, &out, &cerr)
	defer C.harel_pause_list_free(out) // NULL does nothing
	if err := check(s, &cerr); err != nil {
		return nil, err
	}
	pauses := make([]Pause, 0, int(out.n_pauses))
	for _, p := range cSlice(out.pauses, out.n_pauses) {
		pauses = append(pauses, Pause{
			Kind:     PauseKind(p.kind),
			Name:     C.GoStringN(p.name, C.int(p.name_len)),
			PausedAt: fromEpochSeconds(float64(p.paused_at)),
		})
	}
	return pauses, nil
}

func (t cTransport) limits() ([]LimitInfo, error) {
	var out *C.harel_limit_list
	var cerr *C.harel_error
	s := C.harel_transport_limits(t.p, &out, &cerr)
	defer C.harel_limit_list_free(out) // NULL does nothing
	if err := check(s, &cerr); err != nil {
		return nil, err
	}
	limits := make([]LimitInfo, 0, int(out.n_limits))
	for _, l := range cSlice(out.limits, out.n_limits) {
		info := LimitInfo{
			RoutingKey: C.GoStringN(l.routing_key, C.int(l.routing_key_len)),
			Limit:      Limit{Concurrency: int(l.concurrency)},
			InUse:      uint64(l.in_use),
			Held:       uint64(l.held),
		}
		if l.rate != 0 || l.burst != 0 { // both 0: no rate limit
			info.Limit.Rate = &Rate{PerSecond: float64(l.rate), Burst: float64(l.burst)}
		}
		if l.tokens != -1 { // -1: no rate limit (a bucket just emptied may be a hair below 0)
			tokens := float64(l.tokens)
			info.Tokens = &tokens
		}
		limits = append(limits, info)
	}
	return limits, nil
}
