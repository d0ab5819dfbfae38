package harel

import (
	"encoding/json"
	"time"
)

// Message is one message for PublishMany and PublishManyWith: Publish's arguments and
// options, as a struct. The zero value of each option field asks for nothing.
type Message struct {
	// GroupID is the group whose FIFO the message joins (non-empty).
	GroupID string
	// Event is any valid JSON text, stored and returned byte for byte.
	Event json.RawMessage
	// Priority is the group's priority, 0..4, if this message creates the group (as
	// WithPriority).
	Priority int
	// RoutingKey is the group's routing key, if this message creates the group (as
	// WithRoutingKey); "" for none.
	RoutingKey string
	// Key is the message's idempotency key (as WithKey); "" for none. A key met earlier in
	// the same batch makes this message a duplicate of that one.
	Key string
	// Delay holds the message back from the publish (as WithDelay); 0 for none.
	Delay time.Duration
	// NotBefore holds the message back until then (as WithNotBefore); the zero Time for
	// none.
	NotBefore time.Time
	// TTL is the message's time to live (as WithTTL); 0 for none.
	TTL time.Duration
	// ExpiresAt is when the message expires (as WithExpiresAt); the zero Time for none.
	ExpiresAt time.Time
	// Unique is the message's unique key and mode (as WithUnique); nil for none. A key
	// met earlier in the same batch finds that message pending.
	Unique *Unique
	// Retry is the message's own retry policy (as WithRetryPolicy); nil for the queue's.
	Retry *Retry
	// Headers are the message's headers, in order (as WithHeaders); nil for none. A batch
	// in which a message has headers is one transaction of its own, as PublishManyWith's
	// (no commit shared with concurrent publishes).
	Headers []Header
}

// delivers says whether m sets a delivery option (Key, Delay, NotBefore, Unique, TTL,
// ExpiresAt, Retry).
func (m *Message) delivers() bool {
	return m.Key != "" || m.Delay != 0 || !m.NotBefore.IsZero() || m.Unique != nil || m.expiry().set() ||
		m.Retry != nil
}

// expiry is m's TTL and ExpiresAt as WithTTL and WithExpiresAt set them: a TTL of 0 is none.
func (m *Message) expiry() expiry {
	e := expiry{at: m.ExpiresAt}
	if m.TTL != 0 {
		e.ttl = &m.TTL
	}
	return e
}

// Published is what became of one message of PublishWith or PublishManyWith.
type Published struct {
	// Seq is the message's seq; for a duplicate, the seq of the first message published
	// with its key (which may have been delivered and acked since), or of the pending
	// message with its unique key.
	Seq int64
	// Duplicate is true when the message's key was seen within the key retention, or a
	// message with its unique key is pending: no new message was stored.
	Duplicate bool
	// Replaced is true (with Duplicate) when the pending message with its unique key took
	// this publish's event and headers (UniqueReplace, UniqueDebounce); false when it was
	// kept (UniqueKeep, or a worker holds its lease).
	Replaced bool
}
