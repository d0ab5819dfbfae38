package harel

import (
	"context"
	"encoding/json"
	"runtime/cgo"
	"sync"
	"time"
)

// Transport is an open queue. It is safe for concurrent use by multiple goroutines: the
// library runs one call at a time per Transport, except that concurrent publishes share
// commits (see the package doc) and that a claim waiting for work (ClaimWait, ClaimMany)
// lets the other calls run while it waits; to claim in parallel open one Transport per
// goroutine (or process) on the same database file; the database's write lock keeps them
// correct.
//
// Close it when done. After Close every method returns ErrClosed.
type Transport struct {
	// mu is held shared by every call and exclusively by Close, so Close waits for the calls
	// in flight and no call starts on a closed handle.
	mu     sync.RWMutex
	handle cTransport // zero once closed
	clock  *clock     // nil: the system clock
	ref    cgo.Handle // the handle of clock, deleted at Close; 0 without a clock
	// closing is done once Close has begun: it fires the cancel of every waiting claim,
	// those in flight and any that starts before Close has the lock.
	closing    context.Context
	beginClose context.CancelFunc
}

// Open opens the queue at database: a file path (a local libSQL file in WAL mode),
// ":memory:", a "libsql://", "http://" or "https://" URL (a libSQL server), or a path with
// WithSyncURL (an embedded replica of that server). By default it creates the tables if they
// are missing.
//
// Errors: ErrArgument (a bad option or database string, a database of a set OpenShards
// made, opened alone), ErrDatabase (not a database, or a
// table missing with WithCreateSchema(false)), ErrBusy, ErrConnect.
func Open(database string, opts ...Option) (*Transport, error) {
	return openWith(opts, func(cfg *config, clock cgo.Handle) (cTransport, error) {
		return cOpen(database, cfg, clock)
	})
}

// MaxShards is the most databases OpenShards takes, and the largest count ShardOf takes.
const MaxShards = 256

// OpenShards opens one queue sharded over databases (1..MaxShards of them, each as Open
// takes it, in shard order), with opts applied to every one of them. The Transport is an
// ordinary one: each group lives on the shard ShardOf names, and its publishes, acks, nacks,
// extensions and dead letters go there; claims serve the shards in turn (the serving order
// holds within a shard only) and waits cover them all; PublishMany is one transaction per
// shard (all or none on each shard, not across them); Stats adds the shards up, Groups and
// DeadLetters list them with each item's Shard. Each database stays a queue of its own that
// harel's workers can serve.
//
// The first open of empty databases makes them a set: each records the queue's id, its
// index and the number of shards. Every later open must pass the same list in the same
// order. A list of one is a queue that is not sharded, as Open opens it. Open refuses one
// member of a set opened alone.
//
// On a sharded queue an application's transaction (Begin, InTx) is refused at its first
// call (ErrArgument: a transaction runs on one database), and so are Redrive and
// PurgeDead with DeadLettersBySeq (a seq names a dead letter of one shard); those of all
// dead letters or of a group work.
//
// Errors: ErrArgument (an empty list or more than MaxShards, an element empty, repeated or
// holding a NUL byte, a bad option; a list that does not match the databases' records: one
// missing, one extra, the order changed, another queue's database, a database that holds
// messages but belongs to no set; the message names it as "databases[i] (its text)"),
// otherwise as Open's, naming the database that failed. On error nothing is left open.
func OpenShards(databases []string, opts ...Option) (*Transport, error) {
	return openWith(opts, func(cfg *config, clock cgo.Handle) (cTransport, error) {
		return cOpenShards(databases, cfg, clock)
	})
}

// openWith applies opts and opens with them: the clock's handle made before and deleted
// if the open fails.
func openWith(opts []Option, open func(*config, cgo.Handle) (cTransport, error)) (*Transport, error) {
	var cfg config
	for _, opt := range opts {
		opt(&cfg)
	}
	t := &Transport{}
	t.closing, t.beginClose = context.WithCancel(context.Background())
	if cfg.clock != nil {
		t.clock = &clock{now: cfg.clock}
		t.ref = cgo.NewHandle(t.clock)
	}
	handle, err := open(&cfg, t.ref)
	if err != nil {
		if t.clock != nil {
			err = t.clock.explain(err)
			t.ref.Delete()
		}
		t.beginClose()
		return nil, err
	}
	t.handle = handle
	return t, nil
}

// ShardCount is the number of databases the queue is sharded over: 1 when it was opened
// with Open (or OpenShards with one database).
//
// Errors: ErrClosed.
func (t *Transport) ShardCount() (int, error) {
	var n int
	err := t.call(func(h cTransport) (err error) {
		n, err = h.shardCount()
		return err
	})
	return n, err
}

// ShardOf is the shard (0..shards-1) that holds groupID in a queue sharded over shards
// databases, computed by the library (FNV-1a, 64-bit, over the id's UTF-8 bytes, modulo
// shards; docs/queue.md gives it): so that a program writing to one database directly
// places a group where the sharded queue looks for it. It needs no Transport.
//
// Errors: ErrArgument (groupID empty, holding a NUL byte or invalid UTF-8; shards outside
// 1..MaxShards).
func ShardOf(groupID string, shards int) (int, error) { return cShardOf(groupID, shards) }

// call runs f on the open handle, or returns ErrClosed.
func (t *Transport) call(f func(h cTransport) error) error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.handle.p == nil {
		return ErrClosed
	}
	err := f(t.handle)
	if err != nil && t.clock != nil {
		err = t.clock.explain(err)
	}
	return err
}

// Publish appends event, any valid JSON text (stored and returned byte for byte), to the
// FIFO of groupID. The first publish into a group fixes its priority and routing key
// (WithPriority, WithRoutingKey); later ones leave both as they are. The message and its
// group are written in one transaction, or nothing is. Concurrent publishes share commits.
//
// With a delivery option (WithKey, WithDelay, WithNotBefore) it is PublishWith without
// the outcome: its own transaction, no shared commit.
//
// Errors: ErrArgument (groupID or a routing key empty, a NUL byte or invalid UTF-8 in a
// string, event not JSON, priority outside 0..4, a bad delivery option as PublishWith's),
// ErrBusy, ErrDatabase, ErrClosed.
func (t *Transport) Publish(groupID string, event json.RawMessage, opts ...PublishOption) error {
	pc := publishOptions(opts)
	return t.call(func(h cTransport) error {
		if pc.delivers() {
			_, err := h.publishWith(groupID, event, &pc)
			return err
		}
		return h.publish(groupID, event, pc.priority, pc.routingKey)
	})
}

// PublishWith is Publish that says what became of the message: its seq, and whether it
// was a duplicate. With WithKey, a key the queue has seen within its retention
// (WithKeyRetention) stores nothing: Published.Duplicate is true and Seq is the first
// message's, also after that message was acked; so a publish that failed with ErrConnect
// (a libSQL server's answer lost: it may have been applied) is safe to retry with the same
// key. With WithDelay or WithNotBefore the message is not delivered before the later of
// now + delay and the instant; it keeps its place in its group's FIFO, and the group's
// later messages wait behind it (GroupDelayed while it is the head). The key and the
// message are one transaction of their own (no commit shared with concurrent Publish
// calls).
//
// Errors: ErrArgument (as Publish's; or WithKey "" or over 256 bytes, a NUL byte or invalid
// UTF-8 in it; WithDelay negative or over ten years; WithNotBefore before the Unix epoch or
// more than ten years ahead; nothing was written), ErrBusy, ErrConnect, ErrDatabase (also:
// a key given to a queue opened with WithCreateSchema(false) whose schema lacks the keys
// table), ErrClosed.
func (t *Transport) PublishWith(groupID string, event json.RawMessage, opts ...PublishOption) (Published, error) {
	pc := publishOptions(opts)
	var p Published
	err := t.call(func(h cTransport) (err error) {
		p, err = h.publishWith(groupID, event, &pc)
		return err
	})
	return p, err
}

func publishOptions(opts []PublishOption) (pc publishConfig) {
	for _, opt := range opts {
		opt(&pc)
	}
	return pc
}

// PublishMany appends msgs in order, each as Publish would, in one transaction: all of
// them or none. It is one commit for the whole batch, so at the default synchronous FULL
// one fsync instead of one per message: the way to publish many messages fast. Within a
// group the messages keep their order in msgs; the first message into a group (in msgs or
// before) fixes its priority and routing key. Every message is checked before anything is
// written, and an error names the bad one by its index ("messages[3].event_json ...").
// An empty msgs does nothing. A batch in which a message sets Key, Delay or NotBefore is
// PublishManyWith without the outcomes. On a queue opened with OpenShards it is one
// transaction per shard: all or none on each shard, not across them.
//
// Errors: ErrArgument (as Publish's, for any message; nothing was written), ErrBusy,
// ErrDatabase (the batch was rolled back), ErrClosed.
func (t *Transport) PublishMany(msgs []Message) error {
	return t.call(func(h cTransport) error {
		for i := range msgs {
			if msgs[i].delivers() {
				_, err := h.publishManyWith(msgs)
				return err
			}
		}
		return h.publishMany(msgs)
	})
}

// PublishManyWith is PublishMany with each message's Key, Delay and NotBefore (as
// PublishWith's options) and what became of each: Published[i] is msgs[i]'s. One
// transaction: every message stored or found a duplicate, or nothing written. A key met
// earlier in the batch makes the later message a duplicate of the earlier one (its Seq);
// a key seen before the batch, within the retention, a duplicate of that message. An
// empty msgs writes nothing and returns an empty slice. On a queue opened with OpenShards
// it is one transaction per shard, as PublishMany.
//
// Errors: as PublishWith's, naming the bad message by its index ("messages[3].key is
// empty"); nothing was written.
func (t *Transport) PublishManyWith(msgs []Message) ([]Published, error) {
	var published []Published
	err := t.call(func(h cTransport) (err error) {
		published, err = h.publishManyWith(msgs)
		return err
	})
	return published, err
}

// Claim leases one message to workerID for visibility: the oldest message of the group
// that has waited longest among those with nothing in flight (and, with ClaimOptions, a
// priority at least WithMinPriority and a routing key among WithRoutingKeys). Until the lease
// lapses no other message of that group is handed out; finish it with Ack or Nack.
//
// Claim returns (nil, nil) when nothing is deliverable now. An empty queue is the normal
// state a worker polls, not a failure (the library reports it as the non-error status
// HAREL_EMPTY), so err stays reserved for things that went wrong and a worker loop reads:
//
//	lease, err := t.Claim("w1", 30*time.Second)
//	if err != nil { return err }
//	if lease == nil { time.Sleep(poll); continue }
//
// To wait for work instead of polling, use ClaimWait or ClaimMany.
//
// Errors: ErrArgument (workerID empty, "__parked__" or "__delayed__" (reserved), visibility
// <= 0, a bad priority or routing key, a NUL byte or invalid UTF-8 in a string), ErrBusy,
// ErrDatabase, ErrClosed.
func (t *Transport) Claim(workerID string, visibility time.Duration, opts ...ClaimOption) (*Lease, error) {
	cc := claimOptions(opts)
	var lease *Lease
	err := t.call(func(h cTransport) (err error) {
		lease, err = h.claim(workerID, visibility, cc.minPriority, cc.routingKeys)
		return err
	})
	return lease, err
}

// Ack finishes a lease: the message is deleted (and its group's row with the last one).
// The lease's GroupID goes to the library whole, with its length: a group id holding NUL
// bytes (written by another program) is acked as it was claimed.
//
// Errors: ErrLeaseLost (the message is gone or no longer leased to lease.WorkerID: acked
// or nacked already, or the lease lapsed and another worker claimed it; nothing changed),
// ErrArgument (lease nil, GroupID or WorkerID empty, WorkerID holding a NUL byte,
// "__parked__" or "__delayed__"), ErrBusy, ErrDatabase, ErrClosed.
func (t *Transport) Ack(lease *Lease) error {
	return t.call(func(h cTransport) error { return h.finish(lease, false, 0) })
}

// AckAndClaim acks lease and claims the next message for workerID in one transaction: a
// worker loop with one commit per message instead of two (at synchronous FULL, half the
// fsyncs). It returns the next lease, or nil, nil when the ack succeeded and nothing is
// deliverable. If the ack fails, nothing is claimed.
//
// Errors: as Ack's and Claim's.
func (t *Transport) AckAndClaim(lease *Lease, workerID string, visibility time.Duration, opts ...ClaimOption) (*Lease, error) {
	cc := claimOptions(opts)
	var next *Lease
	err := t.call(func(h cTransport) (err error) {
		next, err = h.ackAndClaim(lease, workerID, visibility, cc.minPriority, cc.routingKeys)
		return err
	})
	return next, err
}

// Nack gives a leased message back. With delay 0 it is claimable at once; with delay > 0
// it is parked for delay, blocking its group (FIFO order holds) until then. The lease is
// over either way: acking or nacking it again is ErrLeaseLost.
//
// Errors: as Ack's, and ErrArgument for delay < 0.
func (t *Transport) Nack(lease *Lease, delay time.Duration) error {
	return t.call(func(h cTransport) error { return h.finish(lease, true, delay) })
}

// Close waits for the calls in flight, closes the connection and frees the handle. Calls
// after it return ErrClosed; closing again does nothing. A claim waiting for work
// (ClaimWait, ClaimMany) does not hold it up: its wait ends at once, and it returns an
// error matching ErrClosed, having claimed nothing. Closing cannot fail (the C library's
// harel_transport_close returns nothing): the error is always nil, there so that a
// Transport is an io.Closer.
func (t *Transport) Close() error {
	// Each waiting claim holds mu shared until its wait ends: end the waits first. This
	// fires the claims' own cancels rather than harel_transport_interrupt, which only
	// reaches the waits already begun in the library, not one whose call is just entering it.
	t.beginClose()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.handle.p == nil {
		return nil
	}
	t.handle.close()
	t.handle = cTransport{}
	if t.clock != nil {
		t.ref.Delete() // the library is done with the clock: it went with the handle
	}
	return nil
}

// SchemaSQL returns the idempotent CREATE statements of a fresh schema under prefix, one
// per line, each ending in ';': for a migration tool that owns the schema (then open with
// WithCreateSchema(false)).
func SchemaSQL(prefix string) (string, error) { return cSchemaSQL(prefix, false) }

// SchemaUpgradeSQL returns the statements that upgrade a groups table made without
// routing_key (harel 0.9), one per line. Not idempotent: run them once.
func SchemaUpgradeSQL(prefix string) (string, error) { return cSchemaSQL(prefix, true) }

// Version is the C library's version, "MAJOR.MINOR.PATCH".
func Version() string { return cVersion() }
