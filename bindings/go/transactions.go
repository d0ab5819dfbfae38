package harel

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"go.opentelemetry.io/otel/trace"
)

// Tx is an application's transaction on the queue's database: its own statements and its
// publishes, committed together or not at all. Begin makes one; InTx runs a function in
// one. Exec and Publish queue their work; it is sent, in order, with the next Query or
// with Commit. A transaction with no Query is one write transaction made by its Commit
// (on a libSQL server one request, the write lock held for its statements alone). The
// first Query begins it, and from then it holds the Transport's connection and the
// database's write lock until it ends: keep it short (on a server the lock is held across
// the network, and a transaction that holds it for 5 s while another writer waits is
// rolled back by the server: the next call fails with ErrDatabase and nothing of it is
// kept).
//
// Any error of a statement, a publish or the commit ends it, rolled back; so do Rollback
// and the Transport's Close. Once it ended every call but Rollback fails with ErrArgument
// saying why ("the transaction was committed: begin a new one"); after Close, with
// ErrClosed.
//
// A Transport runs one transaction at a time: while one holds its connection (after a
// Query), the Transport's other calls and another transaction's Query or Commit wait for
// it, up to the busy timeout (WithBusyTimeout), then fail with ErrBusy. So inside a
// transaction publish with its own Publish, not the Transport's, and do not nest
// transactions of one Transport.
//
// End every Tx with Commit or Rollback: until then its handle is allocated in the
// library, and after a Query it holds the Transport's connection. Deferring Rollback right
// after Begin does it on every path (once committed, Rollback does nothing). Its calls may
// come from several goroutines; they run one at a time.
type Tx struct {
	t  *Transport
	mu sync.Mutex // held by each call: the handle is freed under it
	h  cTx        // zero once Commit or Rollback freed it
	// ended is why, once the handle is freed: "committed", "rolled back"...
	ended string
	// publishes counts the publishes queued, so that Commit has room for their outcomes.
	publishes int
	// spans are the PRODUCER spans of the publishes queued (tracing on), ended when the
	// transaction ends.
	spans []trace.Span
}

// Begin begins a transaction on t. Nothing is sent, and no lock taken, before its first
// Query or its Commit. A transaction runs on one database: on a queue opened with
// OpenShards over more than one, its first call (Exec, Query, Publish or Commit) fails
// with ErrArgument.
//
//	tx, err := t.Begin()
//	if err != nil { return err }
//	defer tx.Rollback() // keeps nothing unless committed; nothing to do after Commit
//	err = tx.Exec("INSERT INTO orders (id, total) VALUES (?, ?)", id, total)
//	...
//	err = tx.Publish("order-"+id, event)
//	...
//	published, err := tx.Commit(ctx)
//
// Errors: ErrClosed.
func (t *Transport) Begin() (*Tx, error) {
	var h cTx
	err := t.call(func(c cTransport) (err error) {
		h, err = c.begin()
		return err
	})
	if err != nil {
		return nil, err
	}
	return &Tx{t: t, h: h}, nil
}

// InTx runs fn in a transaction of t and commits it if fn returns nil: what became of
// each publish (Commit's result). If fn returns an error it is rolled back and InTx
// returns that error as it is; if fn panics it is rolled back and the panic goes on. fn
// must not end tx itself (Commit or Rollback): the commit would then fail with
// ErrArgument. ctx is Commit's, and done before InTx begins the transaction fails it as
// Commit's does.
//
//	published, err := t.InTx(ctx, func(tx *harel.Tx) error {
//		if err := tx.Exec("UPDATE orders SET state = 'paid' WHERE id = ?", id); err != nil {
//			return err
//		}
//		return tx.Publish("order-"+id, paid, harel.WithKey("order-"+id+"/paid"))
//	})
//
// Errors: fn's; Begin's and Commit's.
func (t *Transport) InTx(ctx context.Context, fn func(tx *Tx) error) ([]Published, error) {
	if err := ctx.Err(); err != nil {
		return nil, contextDone(err, "before the transaction began")
	}
	tx, err := t.Begin()
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() // after an error or a panic of fn; nothing to do after the commit
	if err := fn(tx); err != nil {
		return nil, err
	}
	return tx.Commit(ctx)
}

// Exec queues the application statement sql (one statement, no rows wanted) with its
// args, bound to ?1, ?2... (or ?) in order. It runs, in order, with the next Query or with
// Commit; an error of the statement (a syntax error, a constraint) fails that call and
// ends the transaction. Its rows-changed count is not reported: when it matters, run it
// with RETURNING through Query.
//
// An arg is nil (NULL), a bool (stored as 1 or 0), any int or uint type (an unsigned
// value beyond int64 is refused), a float32 or float64 (finite), a string (without NUL
// bytes: the library takes C strings) or a []byte (a BLOB; nil is an empty one).
//
// Errors: ErrArgument (sql empty or not UTF-8, an arg of another type or refused as
// above, named by its index "params[2]"; nothing was queued and the transaction goes on;
// or the transaction ended), ErrClosed.
func (tx *Tx) Exec(sql string, args ...any) error {
	return tx.call(func(h cTx) error { return h.execute(sql, args) })
}

// Query sends what was queued and runs sql (a SELECT, or a write with RETURNING) with its
// args (as Exec's) inside the transaction, and returns its rows: each a slice of its
// columns' values, nil (NULL), int64, float64, string or []byte. The first Query begins
// the transaction: from then it holds the Transport's connection and the write lock until
// it ends. A text holding a NUL byte comes back cut there from a local file (libSQL reads
// texts as C strings).
//
// ctx done before the call fails it with an error matching ctx.Err() and ErrInterrupted;
// nothing was sent and the transaction goes on. The call itself is not interrupted: it
// waits at most the busy timeout.
//
// Errors: ErrArgument (as Exec's; the transaction goes on), ErrDatabase (an error of this
// or of a queued statement or publish: the transaction is rolled back and ended), ErrBusy
// (the write lock, or the Transport's connection held by another of its transactions, was
// not had within the busy timeout: ended), ErrConnect (the server could not be reached:
// ended), ErrClosed.
func (tx *Tx) Query(ctx context.Context, sql string, args ...any) ([][]any, error) {
	var rows [][]any
	err := tx.call(func(h cTx) (err error) {
		if err := ctx.Err(); err != nil {
			return contextDone(err, "before the query; nothing was sent")
		}
		rows, err = h.query(sql, args)
		return err
	})
	return rows, err
}

// Publish queues a publish, with Transport.PublishWith's arguments and options
// (WithPriority, WithRoutingKey, WithHeaders, WithKey, WithDelay, WithNotBefore,
// WithUnique, WithTTL, WithExpiresAt, WithRetryPolicy). They are checked now; what became
// of the message (its seq, whether its key made it a duplicate, whether it replaced the
// pending message with its unique key) comes back from Commit, in the order of the Publish
// calls: a unique key's duplicate is an answer, not an error, and the transaction's
// statements commit with it. After the commit the message is delivered as any other, and
// this process's waiting claims wake for it.
//
// Errors: ErrArgument (an argument refused as PublishWith refuses it; nothing was queued
// and the transaction goes on; or the transaction ended), ErrDatabase (WithKey on a queue
// whose schema lacks the keys table), ErrClosed.
func (tx *Tx) Publish(groupID string, event json.RawMessage, opts ...PublishOption) error {
	return tx.PublishContext(context.Background(), groupID, event, opts...)
}

// PublishContext is Publish with a context: its span is the parent of the publish's span
// when the Transport traces (WithTracerProvider); that span ends when Commit returns (with
// an error status if the commit failed), or at Rollback. A ctx done before the call fails
// it with an error matching ctx.Err() and ErrInterrupted; nothing was queued and the
// transaction goes on.
func (tx *Tx) PublishContext(ctx context.Context, groupID string, event json.RawMessage, opts ...PublishOption) error {
	pc := publishOptions(opts)
	return tx.call(func(h cTx) error {
		if err := ctx.Err(); err != nil {
			return contextDone(err, "before the publish; nothing was queued")
		}
		var span trace.Span
		if tr := tx.t.tracing; tr != nil {
			span, pc.headers = tr.startPublish(ctx, groupID, pc.headers)
		}
		if err := h.publish(groupID, event, &pc); err != nil {
			if span != nil {
				endPublish(span, -1, err)
			}
			return err
		}
		tx.publishes++
		if span != nil {
			tx.spans = append(tx.spans, span)
		}
		return nil
	})
}

// Commit sends what was queued and commits: the application's statements and the
// messages, all of them or (on any error) none. It returns what became of each publish,
// in the order of the Publish calls (empty for none). The transaction is ended either way.
//
// ctx done before the call rolls the transaction back instead, with an error matching
// ctx.Err() and ErrInterrupted. The call itself is not interrupted: it waits at most the
// busy timeout.
//
// Errors: ErrArgument (the transaction had ended), ErrDatabase (a statement, a publish or
// the COMMIT failed: nothing was kept; also a server's 5 s rule), ErrBusy (the write lock
// was not had within the busy timeout: nothing was kept), ErrConnect (the server could not
// be reached: nothing was kept; or its answer to the COMMIT was lost: the message says the
// commit may have been applied; publish with WithKey to make a retry safe), ErrClosed (the
// Transport's Close rolled it back).
func (tx *Tx) Commit(ctx context.Context) (published []Published, err error) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if err := tx.live(); err != nil {
		return nil, err
	}
	defer tx.end("rolled back after an error") // unless said otherwise below
	err = tx.t.call(func(cTransport) (err error) {
		if done := ctx.Err(); done != nil {
			tx.ended = "rolled back"
			if err := tx.h.rollback(); err != nil {
				return err
			}
			return contextDone(done, "before the commit; the transaction was rolled back")
		}
		if published, err = tx.h.commit(tx.publishes); err == nil {
			tx.ended = "committed"
		}
		return err
	})
	if errors.Is(err, ErrClosed) {
		tx.ended = "rolled back" // by Close
	}
	tx.endSpans(published, err)
	return published, err
}

// endSpans ends the publishes' spans as the transaction ended: each with its message's
// seq, or with an error status (mu held).
func (tx *Tx) endSpans(published []Published, err error) {
	for i, span := range tx.spans {
		seq := int64(-1)
		if err == nil && i < len(published) {
			seq = published[i].Seq
		}
		endPublish(span, seq, err)
	}
	tx.spans = nil
}

// Rollback ends the transaction, keeping nothing of it. On a transaction that ended
// already (committed, rolled back, failed, or rolled back by the Transport's Close) it
// does nothing and returns nil, so a cleanup path may always call it.
//
// Errors: none but ErrPanic (a bug in the library).
func (tx *Tx) Rollback() error {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if tx.h.p == nil {
		return nil
	}
	defer tx.end("rolled back")
	if tx.spans != nil {
		tx.endSpans(nil, errRolledBack)
	}
	err := tx.t.call(func(cTransport) error { return tx.h.rollback() })
	if errors.Is(err, ErrClosed) {
		return nil // Close rolled it back
	}
	return err
}

// call runs f on the live transaction's handle while its Transport is open.
func (tx *Tx) call(f func(h cTx) error) error {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if err := tx.live(); err != nil {
		return err
	}
	return tx.t.call(func(cTransport) error { return f(tx.h) })
}

// live is ErrArgument saying why once Commit or Rollback freed the handle (mu held).
func (tx *Tx) live() error {
	if tx.h.p == nil {
		return argumentError("the transaction was " + tx.ended + ": begin a new one")
	}
	return nil
}

// end frees the handle, the transaction ended as why unless a reason was set (mu held).
func (tx *Tx) end(why string) {
	tx.h.free()
	tx.h = cTx{}
	if tx.ended == "" {
		tx.ended = why
	}
}

// errRolledBack is the status of the spans of a transaction's publishes at its Rollback.
var errRolledBack = errors.New("the transaction was rolled back")

// contextDone is the error of a call whose context was done before it: as a claim's, it
// matches ctx's error and ErrInterrupted.
func contextDone(ctxErr error, when string) error {
	return interruptedBy(ctxErr, &Error{Status: StatusInterrupted, Message: "the context was done " + when})
}
