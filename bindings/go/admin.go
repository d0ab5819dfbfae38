package harel

// The operator's writes: dead letters redriven or purged (which ones: DeadLetters), a
// group's messages or every message purged, a stuck group released, a group, a routing key
// or the whole queue paused and resumed (which: PauseTarget), a routing key's limits set
// and removed (Limit). Each method is one transaction of the library (on a sharded queue,
// Pause, Resume, SetLimit and RemoveLimit make one per shard).

import "strconv"

// DeadLetters says which dead letters Redrive or PurgeDead takes: exactly one of all of
// them (AllDeadLetters), one group's (DeadLettersOfGroup) or some by seq
// (DeadLettersBySeq). The zero value selects nothing, which the library refuses with
// ErrArgument, as it does DeadLettersBySeq() with no seqs.
type DeadLetters struct {
	all     bool
	byGroup bool
	group   string
	seqs    []int64
}

// AllDeadLetters selects every dead letter.
func AllDeadLetters() DeadLetters { return DeadLetters{all: true} }

// DeadLettersOfGroup selects the dead letters of groupID (not empty).
func DeadLettersOfGroup(groupID string) DeadLetters {
	return DeadLetters{byGroup: true, group: groupID}
}

// DeadLettersBySeq selects the dead letters with these seqs (DeadLetter.Seq); seqs that
// are not dead letters are passed over. The seqs are copied. A seq is one database's: on a
// queue opened with OpenShards, Redrive and PurgeDead refuse this selection (ErrArgument).
func DeadLettersBySeq(seqs ...int64) DeadLetters {
	return DeadLetters{seqs: append([]int64(nil), seqs...)}
}

// Redrive moves the selected dead letters back into their groups as the newest messages
// (after what each group holds now), in the order they had, claimed 0 times; a group they
// bring back is made with its old priority and routing key. It returns how many moved.
//
// Errors: ErrArgument (not exactly one selection, an empty group id, a NUL byte or invalid
// UTF-8 in it, DeadLettersBySeq on a sharded queue; nothing changed), ErrBusy, ErrDatabase, ErrClosed.
func (t *Transport) Redrive(which DeadLetters) (uint64, error) {
	var moved uint64
	err := t.call(func(h cTransport) (err error) {
		moved, err = h.selectDead(which, false)
		return err
	})
	return moved, err
}

// PurgeDead deletes the selected dead letters and returns how many.
//
// Errors: as Redrive's.
func (t *Transport) PurgeDead(which DeadLetters) (uint64, error) {
	var purged uint64
	err := t.call(func(h cTransport) (err error) {
		purged, err = h.selectDead(which, true)
		return err
	})
	return purged, err
}

// PurgeGroup deletes groupID's messages and the group, and returns how many messages; a
// lease on one of them is lost (its Ack is ErrLeaseLost). An unknown group is 0.
//
// Errors: ErrArgument (groupID empty, holding a NUL byte or invalid UTF-8), ErrBusy,
// ErrDatabase, ErrClosed.
func (t *Transport) PurgeGroup(groupID string) (uint64, error) {
	var purged uint64
	err := t.call(func(h cTransport) (err error) {
		purged, err = h.purgeGroup(groupID)
		return err
	})
	return purged, err
}

// Purge deletes every message and group (the dead letters stay) and returns how many
// messages.
//
// Errors: ErrBusy, ErrDatabase, ErrClosed.
func (t *Transport) Purge() (uint64, error) {
	var purged uint64
	err := t.call(func(h cTransport) (err error) {
		purged, err = h.purge()
		return err
	})
	return purged, err
}

// Release ends the lease, park or delay on groupID's head now, so a stuck group is served
// at once (the holder's Ack or Nack then finds its lease lost; a delayed head is delivered
// before its due time). It returns false when nothing was held (the group is ready, or
// unknown).
//
// Errors: ErrArgument (groupID empty, holding a NUL byte or invalid UTF-8), ErrBusy,
// ErrDatabase, ErrClosed.
func (t *Transport) Release(groupID string) (bool, error) {
	var released bool
	err := t.call(func(h cTransport) (err error) {
		released, err = h.release(groupID)
		return err
	})
	return released, err
}

// PauseKind is what a pause names: the whole queue, one group or every group of a routing
// key (Pause.Kind, PauseTarget).
type PauseKind int32

// The pause kinds, the values of the C ABI's harel_pause_kind.
const (
	PauseKindQueue      PauseKind = 0 // every group, and every group made while the pause lasts
	PauseKindGroup      PauseKind = 1 // one group, by id, whether or not it has messages now
	PauseKindRoutingKey PauseKind = 2 // every group published with the routing key
)

// String is "queue", "group" or "routing_key" (PauseKind(n) for another value).
func (k PauseKind) String() string {
	switch k {
	case PauseKindQueue:
		return "queue"
	case PauseKindGroup:
		return "group"
	case PauseKindRoutingKey:
		return "routing_key"
	}
	return "PauseKind(" + strconv.Itoa(int(k)) + ")"
}

// PauseTarget says what Pause and Resume name: exactly one of the whole queue
// (PauseQueue), one group (PauseGroup) or every group of a routing key (PauseRoutingKey);
// a listed Pause names its own (Pause.Target). Targets compare with ==. The zero value
// names nothing, which Pause and Resume refuse with ErrArgument (it does not pause the
// queue).
type PauseTarget struct {
	kind PauseKind
	name string
	set  bool
}

// PauseQueue names the whole queue: every group, and every group made while the pause
// lasts.
func PauseQueue() PauseTarget { return PauseTarget{kind: PauseKindQueue, set: true} }

// PauseGroup names the group groupID (not empty), whether or not it has messages now.
func PauseGroup(groupID string) PauseTarget {
	return PauseTarget{kind: PauseKindGroup, name: groupID, set: true}
}

// PauseRoutingKey names every group published with routingKey (not empty), those made
// while the pause lasts too.
func PauseRoutingKey(routingKey string) PauseTarget {
	return PauseTarget{kind: PauseKindRoutingKey, name: routingKey, set: true}
}

// Kind is what the target names; PauseKindQueue for the zero value too.
func (p PauseTarget) Kind() PauseKind { return p.kind }

// Name is the group id or routing key the target names; "" for the queue.
func (p PauseTarget) Name() string { return p.name }

// Pause pauses the target: no claim takes the heads of the groups it names (nor harel
// 0.9's Python transports) until Resume, while their messages keep their order and
// publishes into them go on. The pause is stored in the database: every process and every
// Transport on the queue sees it, and it outlives restarts. A lease taken before the pause
// finishes (Ack, Nack, Extend and DeadLetter work). While paused, a group is GroupPaused in
// Groups and counted in Stats.Paused; Pauses lists the pauses in force. On a queue opened
// with OpenShards, it pauses on every shard. It returns false when the pause was there
// already (nothing changed).
//
// Errors: ErrArgument (the zero PauseTarget, an empty group id or routing key, one holding
// a NUL byte or invalid UTF-8; nothing changed), ErrBusy, ErrDatabase (also when the queue,
// opened with WithCreateSchema(false), lacks the pauses table), ErrConnect, ErrClosed.
func (t *Transport) Pause(target PauseTarget) (bool, error) {
	var paused bool
	err := t.call(func(h cTransport) (err error) {
		paused, err = h.pause(target, false)
		return err
	})
	return paused, err
}

// Resume ends the target's pause (as Pause named it): the groups it paused that no other
// pause names are served again at once, each from its head (a parked or delayed head stays
// held until its time). A group paused on its own stays paused when the queue is resumed,
// and the other way round. It returns false when there was no such pause (nothing changed).
//
// Errors: as Pause's.
func (t *Transport) Resume(target PauseTarget) (bool, error) {
	var resumed bool
	err := t.call(func(h cTransport) (err error) {
		resumed, err = h.pause(target, true)
		return err
	})
	return resumed, err
}

// MaxLimit is the most of each number of a Limit (a concurrency, a rate, a burst): far
// above any real fleet's, low enough that a typo (an extra zero or three) is caught.
const MaxLimit = 1000000

// Limit is what SetLimit sets on a routing key, one kind or both: at most Concurrency of
// the key's messages leased at once, leases taken at most at Rate. A Limit listed by
// Limits is the key's as it was set, so SetLimit(info.RoutingKey, info.Limit) sets it
// again. The zero Limit has neither, which SetLimit refuses with ErrArgument.
type Limit struct {
	// Concurrency is how many of the key's messages may be leased at once, across every
	// worker of every process: 1..MaxLimit; 0 for no concurrency limit.
	Concurrency int
	// Rate is the key's token bucket; nil for no rate limit.
	Rate *Rate
}

// Rate is a token bucket: PerSecond tokens a second (> 0, at most MaxLimit) and at most
// Burst kept (>= 1, at most MaxLimit; both finite); each lease of the key takes a token. A
// key idle for a while may take Burst leases at once, then one per 1/PerSecond seconds.
type Rate struct {
	PerSecond float64
	Burst     float64
}

// SetLimit limits the groups of routingKey (the key they were published with,
// WithRoutingKey) for every worker of every process: at most limit.Concurrency of their
// messages leased at once, leases taken at most at limit.Rate (harel 0.9's Python
// transports know nothing of limits: their claims are outside them). It replaces the
// key's limits (a kind not given is off) and is in force at every process's next claim;
// it is stored in the database and outlives restarts. A claim passes over a group whose
// key has no room and serves the others, holding that group (Limits counts it in Held);
// when the key has room again (an ack, a nack, a dead letter, a lease lapsing, a token
// due, a larger limit) the next claims give the held groups back, the one served longest
// ago first. On a queue opened with OpenShards, each shard holds the limit for its own
// groups (a claim is one shard's transaction): the key's ceiling over the whole queue is
// the limit times the shards.
//
// Errors: ErrArgument (routingKey empty, holding a NUL byte or invalid UTF-8; the zero
// Limit; a Concurrency below 0 or over MaxLimit; a Rate whose PerSecond is not finite,
// not > 0 or over MaxLimit, or whose Burst is not finite, below 1 or over MaxLimit;
// nothing changed), ErrBusy, ErrDatabase, ErrConnect, ErrClosed (and ErrArgument from a
// WithClock clock before the epoch).
func (t *Transport) SetLimit(routingKey string, limit Limit) error {
	return t.call(func(h cTransport) error { return h.setLimit(routingKey, limit) })
}

// RemoveLimit removes routingKey's limits (on a queue opened with OpenShards, from every
// shard): its held groups are served again at once.
//
// Errors: ErrArgument (routingKey empty, holding a NUL byte or invalid UTF-8, or a key
// without a limit: `routing key "k" has no limit to remove`), ErrBusy, ErrDatabase,
// ErrConnect, ErrClosed.
func (t *Transport) RemoveLimit(routingKey string) error {
	return t.call(func(h cTransport) error { return h.removeLimit(routingKey) })
}
