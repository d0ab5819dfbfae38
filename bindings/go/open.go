package harel

import (
	"context"
	"runtime/cgo"
	"sync"
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
	// tracing is the tracer and what its spans share (WithTracerProvider); nil: off.
	tracing *tracing
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
	if cfg.tracerProvider != nil {
		queue := "harel"
		if cfg.prefix != nil {
			queue = *cfg.prefix
		}
		t.tracing = newTracing(cfg.tracerProvider, queue, cfg.traceAsParent)
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
