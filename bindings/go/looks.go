package harel

// A look inside the queue: counts (Stats), pages of groups, of a group's messages, of
// dead letters and of the archive of acked messages, the pauses in force (Pauses) and the
// limits with their use (Limits).
// Each is one read of the library that takes no write lock, so it never holds up a claim,
// and claims nothing.
//
// Absent values: a time or a duration the library does not have is nil (a *time.Time or
// *time.Duration: 0 would be a real age); a string it does not have is "" (the library
// never stores an empty holder, worker or routing key). A page's Next is "" on the last
// page.

import (
	"encoding/json"
	"strconv"
	"time"
)

// MaxPage is the largest limit a listing takes (Groups, Peek, DeadLetters, Archive:
// 1..MaxPage).
const MaxPage = 10000

// Stats are exact counts of the queue at one instant.
type Stats struct {
	// Now is when the counts were taken, by the Transport's clock.
	Now time.Time
	// Messages and Groups in the queue (the dead letters not counted).
	Messages, Groups uint64
	// Ready, Leased, Parked and Delayed count the groups whose head is claimable now,
	// leased to a worker, parked by a Nack with a delay, held back by its publish's
	// WithDelay or WithNotBefore; Paused the groups a pause names (Transport.Pause),
	// whatever their head; with Held and Retrying below they add up to Groups.
	Ready, Leased, Parked, Delayed, Paused uint64
	// Held counts the groups a limit holds (SetLimit): their routing key had no room when
	// a claim met them, and they wait until it has (LimitInfo.Held, per key).
	Held uint64
	// Retrying counts the groups whose head's lease lapsed and waits its retry policy's
	// backoff (WithRetry, WithRetryPolicy) before its next claim.
	Retrying uint64
	// Dead is how many dead letters there are.
	Dead uint64
	// Expired is how many of Dead expired undelivered (WithTTL, WithExpiresAt): the dead
	// letters whose reason is "expired".
	Expired uint64
	// OldestReadyAge is how long ago the oldest message of a ready group was published;
	// nil when no group is ready, or that message's writer does not stamp the time
	// (harel's Python transports).
	OldestReadyAge *time.Duration
	// OldestReadySeq is the seq of the oldest message of a ready group, also when its age
	// is not known (OldestReadyAge nil); nil when no group is ready.
	OldestReadySeq *int64
	// NextReleaseAt is the soonest end of a lease, a park or a delay; nil when no group is
	// leased, parked or delayed.
	NextReleaseAt *time.Time
	// NextDueAt is the soonest due time of a delayed head (when the first delayed group
	// becomes ready); nil when no group is delayed.
	NextDueAt *time.Time
	// ByPriority has the group counts of each priority level that has groups, lowest first.
	ByPriority []PriorityStats
}

// PriorityStats are the group counts of one priority level. A delayed, paused, held or
// retrying group is in Groups but in none of Ready, Leased and Parked; Paused counts the
// level's paused groups (a paused group is at its own priority), so its delayed, held and
// retrying ones together are Groups - Ready - Leased - Parked - Paused (the C library counts
// those over every level only: Stats.Delayed, Held and Retrying).
type PriorityStats struct {
	Priority                      int
	Groups, Ready, Leased, Parked uint64
	// Paused is how many of Groups a pause names (Transport.Pause).
	Paused uint64
}

// GroupState is where a group stands, from its head (only a head is ever leased), or
// paused, held or retrying. Groups takes one to list only those groups, or GroupAny.
type GroupState int32

// The group states, the values of the C ABI's harel_group_state; GroupAny (-1) lists every
// group.
const (
	GroupAny      GroupState = -1
	GroupReady    GroupState = 0 // the head can be claimed now
	GroupLeased   GroupState = 1 // the head is leased to a worker
	GroupParked   GroupState = 2 // the head is parked by a Nack with a delay
	GroupDelayed  GroupState = 3 // the head was published with WithDelay or WithNotBefore and is not due yet
	GroupPaused   GroupState = 4 // a pause names the group (Transport.Pause), whatever its head
	GroupHeld     GroupState = 5 // the head is free, but a limit of its routing key has no room (Stats.Held)
	GroupRetrying GroupState = 6 // the head's lease lapsed and waits its retry backoff (Stats.Retrying)
)

// String is "any", "ready", "leased", "parked", "delayed", "paused", "held" or "retrying"
// (GroupState(n) for another value).
func (s GroupState) String() string {
	switch s {
	case GroupAny:
		return "any"
	case GroupReady:
		return "ready"
	case GroupLeased:
		return "leased"
	case GroupParked:
		return "parked"
	case GroupDelayed:
		return "delayed"
	case GroupPaused:
		return "paused"
	case GroupHeld:
		return "held"
	case GroupRetrying:
		return "retrying"
	}
	return "GroupState(" + strconv.Itoa(int(s)) + ")"
}

// GroupInfo is one group of a GroupPage.
type GroupInfo struct {
	GroupID string
	State   GroupState
	// Depth is how many messages the group holds.
	Depth   uint64
	HeadSeq int64
	// HeadAge is how long ago the head was published; nil when its writer does not stamp
	// the time.
	HeadAge *time.Duration
	// Holder is the worker holding the head's lease; "" when ready, parked or delayed. A
	// paused group shows the holder of a lease taken before the pause (it finishes).
	Holder string
	// LockExpiry is when the lease or park ends, or when a delayed head is due; nil when
	// ready (a paused group's is its head's).
	LockExpiry *time.Time
	Priority   int
	// RoutingKey is the group's routing key; "" for none.
	RoutingKey string
	// HeadAttempts is how many times the head has been claimed.
	HeadAttempts int
	// Shard is the shard the group was found on (ShardOf's; OpenShards); 0 when the queue
	// is not sharded.
	Shard int
}

// GroupPage is a page of groups in group id order. Pass Next to Groups for the next page;
// it is "" on the last.
type GroupPage struct {
	Groups []GroupInfo
	Next   string
}

// MessageInfo is one message of a MessagePage.
type MessageInfo struct {
	Seq int64
	// Event is the JSON text, byte for byte as published.
	Event json.RawMessage
	// Attempts is how many times it has been claimed.
	Attempts int
	// LockedBy is the worker holding it, "__parked__" while it is parked, "__delayed__"
	// while it is delayed (WithDelay, WithNotBefore); "" when free.
	LockedBy string
	// LockExpiry is when its lease or park ends, or when it is due; nil when free.
	LockExpiry *time.Time
	// PublishedAt is when it was published; nil when its writer does not stamp the time.
	PublishedAt *time.Time
	// Headers are the headers it was published with, in order, byte for byte; nil for
	// none.
	Headers []Header
	// RetryDelay is the backoff its last claim drew under a retry policy (WithRetry,
	// WithRetryPolicy): how long it waits after that claim's Nack with delay 0, or after
	// its lease's end if the lease lapses; nil when none (no policy, or never claimed).
	RetryDelay *time.Duration
}

// MessagePage is a page of a group's messages, oldest first; Next as for GroupPage.
type MessagePage struct {
	Messages []MessageInfo
	Next     string
}

// DeadLetter is a message moved out of its group: by WithMaxAttempts, by a worker's
// DeadLetter, by its expiry (WithTTL, WithExpiresAt: the reason "expired"), or by a claim
// that met text another program stored that is not UTF-8 (its invalid bytes show as U+FFFD
// here).
type DeadLetter struct {
	// Seq is the message's seq in the queue before it died.
	Seq int64
	// GroupID is its group, every byte of it.
	GroupID string
	// Event is its JSON text, byte for byte.
	Event json.RawMessage
	// Attempts is how many times it had been claimed.
	Attempts int
	// LastWorker is the worker that held it last; "" when it was parked or never claimed.
	LastWorker string
	// Reason says why it died: the worker's reason, or the library's.
	Reason string
	// DeadAt is when it was moved, by the Transport's clock.
	DeadAt time.Time
	// Shard is the shard the dead letter is on (OpenShards); 0 when the queue is not
	// sharded. Its Seq is that shard's: DeadLettersBySeq is refused on a sharded queue.
	Shard int
	// Headers are the headers it was published with, in order, byte for byte (a Redrive
	// keeps them); nil for none.
	Headers []Header
}

// DeadLetterPage is a page of dead letters in the order they had in the queue; Next as for
// GroupPage.
type DeadLetterPage struct {
	Letters []DeadLetter
	Next    string
}

// Archived is an acked message the archive keeps (WithArchive), from Archive.
type Archived struct {
	// Seq is the message's seq in the queue: a group's history reads in seq order.
	Seq int64
	// GroupID is its group, every byte of it.
	GroupID string
	// Event is its JSON text, byte for byte as published.
	Event json.RawMessage
	// Headers are the headers it was published with, in order, byte for byte; nil for
	// none.
	Headers []Header
	// Attempts is how many times it had been claimed, the acked claim included.
	Attempts int
	// WorkerID is the worker that acked it.
	WorkerID string
	// PublishedAt is when it was published; nil when its writer does not stamp the time
	// (harel's Python transports).
	PublishedAt *time.Time
	// ClaimedAt is when the claim that was acked took it; nil for a claim made before the
	// archive existed (by a version of the library without it).
	ClaimedAt *time.Time
	// AckedAt is when it was acked, by the acking Transport's clock.
	AckedAt time.Time
	// Shard is the shard it is on (OpenShards); 0 when the queue is not sharded. Its Seq
	// is that shard's.
	Shard int
}

// ArchivePage is a page of archived messages in seq order (a sharded queue's shard after
// shard); Next as for GroupPage.
type ArchivePage struct {
	Messages []Archived
	Next     string
}

// Pause is a pause in force, from Pauses.
type Pause struct {
	Kind PauseKind
	// Name is the group id or routing key, every byte of it; "" for the queue.
	Name string
	// PausedAt is when it was paused, by the clock of the Transport that paused it (on a
	// sharded queue, the earliest shard's).
	PausedAt time.Time
}

// Target is what Pause and Resume take to name this pause again: Resume(p.Target()) ends
// it. A Pause made by hand with a Kind other than the three, or PauseKindQueue with a
// Name, gives a target they refuse (ErrArgument, the library's message).
func (p Pause) Target() PauseTarget { return PauseTarget{kind: p.Kind, name: p.Name, set: true} }

// LimitInfo is a limit in force, from Limits, with its use now.
type LimitInfo struct {
	// RoutingKey is the key limited, every byte of it.
	RoutingKey string
	// Limit is the key's limit as SetLimit set it (Concurrency 0: none; Rate nil: none).
	Limit Limit
	// InUse is how many leases of the key's messages run now, with a concurrency limit
	// (else 0).
	InUse uint64
	// Tokens is how many tokens the key's bucket holds now; nil without a rate limit.
	Tokens *float64
	// Held is how many of the key's groups claims hold until the key has room.
	Held uint64
}

// Stats counts the queue now: messages, groups by state, dead letters, the oldest ready
// message's age, the next release and the next due time, and the same per priority level.
//
// Errors: ErrDatabase, ErrClosed (and ErrArgument from a WithClock clock before the epoch).
func (t *Transport) Stats() (*Stats, error) {
	var s *Stats
	err := t.call(func(h cTransport) (err error) {
		s, err = h.stats()
		return err
	})
	return s, err
}

// Groups lists a page of groups in group id order, at most limit (1..MaxPage) of them:
// every group (GroupAny) or those in state. cursor is "" for the first page, else the
// Next of the page before (only a Groups page's: another listing's cursor is refused).
//
// Errors: ErrArgument (state not GroupAny..GroupRetrying, limit outside 1..MaxPage, a cursor
// this listing did not hand out, or holding a NUL byte), ErrDatabase, ErrClosed.
func (t *Transport) Groups(state GroupState, cursor string, limit int) (*GroupPage, error) {
	var page *GroupPage
	err := t.call(func(h cTransport) (err error) {
		page, err = h.groups(state, cursor, limit)
		return err
	})
	return page, err
}

// Peek lists a page of groupID's messages, oldest first, without claiming them; cursor
// and limit as for Groups. An unknown group is an empty page.
//
// Errors: ErrArgument (groupID empty, a bad cursor or limit, a NUL byte or invalid UTF-8
// in a string), ErrDatabase, ErrClosed.
func (t *Transport) Peek(groupID, cursor string, limit int) (*MessagePage, error) {
	var page *MessagePage
	err := t.call(func(h cTransport) (err error) {
		page, err = h.peek(groupID, cursor, limit)
		return err
	})
	return page, err
}

// DeadLetters lists a page of dead letters in the order they had in the queue: groupID's,
// or every group's for ""; cursor and limit as for Groups.
//
// Errors: as Peek's.
func (t *Transport) DeadLetters(groupID, cursor string, limit int) (*DeadLetterPage, error) {
	var page *DeadLetterPage
	err := t.call(func(h cTransport) (err error) {
		page, err = h.deadLetters(groupID, cursor, limit)
		return err
	})
	return page, err
}

// Archive lists a page of the archive, the acked messages kept by a Transport opened
// WithArchive, in seq order: groupID's history, or every group's for "" (on a queue
// opened with OpenShards, shard after shard, each item with its Shard); cursor and limit
// as for Groups. It reads the table whichever Transport wrote it, this one with or
// without WithArchive; nothing archived (or a queue opened with WithCreateSchema(false)
// whose schema lacks the table) is an empty page. Like every look it takes no context:
// one read that waits for nothing.
//
// Errors: as Peek's (an empty groupID is every group's, not an error).
func (t *Transport) Archive(groupID, cursor string, limit int) (*ArchivePage, error) {
	var page *ArchivePage
	err := t.call(func(h cTransport) (err error) {
		page, err = h.archive(groupID, cursor, limit)
		return err
	})
	return page, err
}

// Pauses lists the pauses in force: the queue's first, then the groups' and then the
// routing keys', each by name. On a queue opened with OpenShards, each pause once, over
// every shard. It is empty (not nil) when there is none, also on a queue opened with
// WithCreateSchema(false) that lacks the pauses table.
//
// Errors: ErrDatabase, ErrConnect, ErrClosed.
func (t *Transport) Pauses() ([]Pause, error) {
	var pauses []Pause
	err := t.call(func(h cTransport) (err error) {
		pauses, err = h.pauses()
		return err
	})
	return pauses, err
}

// Limits lists the limits in force by routing key, each with its use now: the leases
// running, the tokens, the groups held. On a queue opened with OpenShards, each key once
// with InUse, Tokens and Held summed over the shards (its Limit is each shard's own). It
// is empty (not nil) when there is none.
//
// Errors: ErrDatabase, ErrConnect, ErrClosed (and ErrArgument from a WithClock clock
// before the epoch).
func (t *Transport) Limits() ([]LimitInfo, error) {
	var limits []LimitInfo
	err := t.call(func(h cTransport) (err error) {
		limits, err = h.limits()
		return err
	})
	return limits, err
}
