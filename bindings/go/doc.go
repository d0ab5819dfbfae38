// Package harel is the Go binding of libharel_transport: a durable, group-ordered message
// queue stored in libSQL (a local file, a libSQL server, or an embedded replica of one).
//
// Messages are published into groups. Within a group they are delivered in FIFO order, one
// at a time: while a message of a group is leased to a worker, no other message of that
// group is handed out. Across groups, claims go round robin (the group that has waited
// longest first), filtered by an optional priority floor and routing keys.
//
//	t, err := harel.Open("queue.db")
//	if err != nil { ... }
//	defer t.Close()
//	err = t.Publish("order-42", json.RawMessage(`{"kind":"paid","id":"e1","data":{}}`))
//	lease, err := t.Claim("worker-1", 30*time.Second)   // nil, nil: nothing to do now
//	if lease != nil {
//		// handle lease.Event, then:
//		err = t.Ack(lease)                          // or t.Nack(lease, delay) to retry
//	}
//
// # Producer options
//
// [Transport.PublishWith] and [Transport.PublishManyWith] publish with delivery options and
// say what became of each message ([Published]: its seq, and whether it was a duplicate).
// [WithKey] gives a message an idempotency key: a publish with a key the queue has seen
// within its retention ([WithKeyRetention], a day by default) stores nothing and reports
// the first message, so a publish that failed with [ErrConnect] (it may have been applied)
// is retried with the same key. [WithDelay] and [WithNotBefore] hold a message back; it
// keeps its place in its group's FIFO, so the group's later messages wait behind it
// ([GroupDelayed], [Stats].Delayed and NextDueAt). [WithUnique] gives a message a unique
// key: while a message with it is pending, a publish with it stores nothing new and
// reports that message ([UniqueKeep]), or gives it its event and headers
// ([UniqueReplace], Published.Replaced), also moving its due time ([UniqueDebounce]).
// [WithTTL] and [WithExpiresAt] make a message expire: one no worker has by then moves to
// the dead letters with the reason "expired" ([Stats].Expired), inside a claim.
// [WithRetryPolicy] gives a message a retry policy of its own ([Retry]), in place of the
// queue's [WithRetry]: after a failed attempt (a Nack with delay 0, a lapsed lease) it
// waits an exponential backoff, jittered ([MessageInfo].RetryDelay shows it). In a batch
// each [Message] has its own Key, Delay, NotBefore, Unique, TTL, ExpiresAt and Retry.
// [Transport.Publish] and [Transport.PublishMany] take the same options, without the
// outcome.
//
// # Publishing inside a transaction
//
// [Transport.InTx] runs a function in a transaction on the queue's database ([Tx]): the
// application's own statements ([Tx.Exec], [Tx.Query]) and its publishes ([Tx.Publish],
// with any publish option) are committed together, or (on an error or a panic of the
// function, or of the database) none of them. [Transport.Begin] does it by hand, ended
// by [Tx.Commit] or [Tx.Rollback]. Exec and Publish queue their work; the next Query or
// the Commit sends it. The first Query begins the transaction, and from then it holds
// the Transport's connection and the write lock until it ends: the Transport runs one
// transaction at a time, and its other calls wait for it (up to the busy timeout, then
// [ErrBusy]), so publish with the transaction's Publish and do not nest transactions.
// Keep it short, above all on a libSQL server.
//
//	published, err := t.InTx(ctx, func(tx *harel.Tx) error {
//		if err := tx.Exec("UPDATE orders SET state = 'paid' WHERE id = ?", id); err != nil {
//			return err
//		}
//		return tx.Publish("order-42", paid, harel.WithKey("order-42/paid"))
//	})
//
// # The worker loop
//
// A worker waits for work rather than polling: [Transport.ClaimWait] and
// [Transport.ClaimMany] take a context and a wait, and return as soon as something is
// deliverable (woken at once by a commit of this process, within a few milliseconds by
// another process's commit to the same file, at a lease's or park's end). They hold no
// lock while they wait. Cancelling the context ends the wait with an error matching both
// ctx.Err() and [ErrInterrupted], having claimed nothing (a lease had in the same instant is
// returned instead: a cancelled wait never leaves one behind); a deadline before the wait's
// end shortens it. ClaimMany leases up to [MaxClaim] messages of different groups in one
// transaction; [Transport.AckMany] acks a batch in one commit, each lease with its own
// outcome, and [Transport.AckAndClaimMany] acks one batch and leases the next in the same
// commit. A handler that runs longer than its visibility keeps its lease with
// [Transport.Extend], or [Transport.KeepAlive], which extends it periodically and cancels
// the handler's context if the lease is lost:
//
//	for ctx.Err() == nil {
//		leases, err := t.ClaimMany(ctx, "worker-1", 30*time.Second, 10, 20*time.Second)
//		if err != nil { ... }             // ctx's end: errors.Is(err, context.Canceled)
//		for len(leases) > 0 && err == nil {
//			for _, lease := range leases { /* handle lease.Event */ }
//			var acked []error                // per lease: nil, or ErrLeaseLost
//			leases, acked, err = t.AckAndClaimMany(leases, "worker-1", 30*time.Second, 10)
//		}
//	}
//
// # When a message keeps failing
//
// Every claim counts: [Lease].Attempts is how many times the message was handed out, this
// claim included. With [WithMaxAttempts] a claim that would hand a message out once more
// moves it to the dead letters instead, and its group goes on with its next message; a
// worker that knows a message will never succeed moves it there itself with
// [Transport.DeadLetter]. A claim also moves there a head another program stored as text
// that is not UTF-8, so nothing blocks the queue. An operator lists them
// ([Transport.DeadLetters]), puts them back ([Transport.Redrive]) or deletes them
// ([Transport.PurgeDead]), choosing with [AllDeadLetters], [DeadLettersOfGroup] or
// [DeadLettersBySeq]; [Transport.PurgeGroup] and [Transport.Purge] delete messages, and
// [Transport.Release] ends the lease or park of a stuck group at once.
//
// # Pause and resume
//
// [Transport.Pause] stops the claims of one group ([PauseGroup]), of every group of a
// routing key ([PauseRoutingKey]) or of the whole queue ([PauseQueue]) until
// [Transport.Resume]: the messages keep their order, publishes go on, a lease taken before
// finishes. The pause is stored in the database, so every process sees it and it outlives
// restarts. A paused group is [GroupPaused], counted in [Stats].Paused;
// [Transport.Pauses] lists the pauses in force.
//
// # Limits
//
// [Transport.SetLimit] limits the groups of a routing key for every worker of every
// process: a [Limit] of at most Concurrency of their messages leased at once, a [Rate] (a
// token bucket) of leases, or both. A claim passes over a group whose key has no room and
// serves the others, giving the held groups back when the key has room again. The limit
// is stored in the database, in force at every process's next claim;
// [Transport.RemoveLimit] removes it, and [Transport.Limits] lists the limits with their
// use ([LimitInfo]).
//
// # Headers and tracing
//
// A message carries ordered [Header] pairs beside its event ([WithHeaders], a [Message]'s
// Headers), handed back with every lease ([Lease].Headers, [Lease.Header]), by Peek and with
// its dead letter; the library checks them. [WithTracerProvider] turns OpenTelemetry tracing
// on: a PRODUCER span per publish (the ...Context forms give its parent, e.g.
// [Transport.PublishContext]) whose context goes into the traceparent and tracestate
// headers, and a CONSUMER span per lease ([Lease.Span]) linked to it, or its child with
// [WithTraceAsParent], ended by Ack, Nack, DeadLetter or a lost lease. The headers are
// written and read with the library's W3C Trace Context functions ([ExtractSpanContext]).
//
// # Looking inside
//
// [Transport.Stats] counts the queue; [Transport.Groups], [Transport.Peek],
// [Transport.DeadLetters] and [Transport.Archive] list pages of groups, of one group's
// messages, of dead letters and of the acked messages [WithArchive] keeps. Each is one read
// without the write lock and claims nothing. A page's Next is the cursor of the next page
// ("" on the last), which only the same listing takes.
//
// Values the library may not have are absent in one of two ways: a time or a duration is
// a nil pointer (*time.Time, *time.Duration), since their zero is a real value (an age of
// 0); a string is "" (the library never stores an empty worker id or routing key).
//
// # Sharded queues
//
// [OpenShards] opens one queue over a list of databases, in shard order, with the same
// options as [Open] for each; the [Transport] is an ordinary one. Each group lives on the
// shard [ShardOf] names; claims serve the shards in turn, [Transport.PublishMany] is one
// transaction per shard, [Transport.ShardCount] says how many there are, and
// [GroupInfo].Shard and [DeadLetter].Shard say where a listed item is. A list that does not
// match the set its databases record is [ErrArgument] naming the database; an application's
// transaction is refused at its first call, as are Redrive and PurgeDead by seq
// (docs/queue.md, "Sharded queues").
//
// # Errors
//
// Every error is an [*Error] holding the library's status and message. Match kinds with
// errors.Is and the sentinels ([ErrArgument], [ErrDatabase], [ErrBusy], [ErrLeaseLost],
// [ErrConnect], [ErrInterrupted], [ErrPanic], [ErrClosed]). Each C call hands its own error back (the ABI's
// `harel_error **err`), which the binding reads and frees before the method returns, so
// the message is the call's own whichever OS thread the goroutine ran on.
//
// The binding itself rejects what C cannot see: a Go string holding a NUL byte (the C
// functions take NUL-terminated strings, which would end there) is ErrArgument naming the
// parameter, before anything reaches the library; so are a WithNotBefore instant before the
// Unix epoch (the ABI reads a negative instant as none), what the ABI would read as no
// expiry (WithTTL(0), a WithExpiresAt instant not after the epoch) or no retry policy (a
// Retry with Base 0, in WithRetry or WithRetryPolicy) and a transaction's
// parameter of a type with no SQL value ("params[2] is a time.Time"). The exception is a Lease's GroupID,
// which goes to Ack, Nack and AckAndClaim whole with its length: a group id written by
// another program may hold NUL bytes, and its lease must still be acked.
//
// # Concurrency
//
// A [Transport] is safe for concurrent use; the library runs its calls one at a time,
// except that publishes from several goroutines share commits: those that arrive while
// one commits are written together in the next transaction (one fsync for all at
// synchronous FULL), each call still returning its own error, and only once its messages
// are committed. So many goroutines publishing through one Transport is the fast way. To
// claim in parallel open one Transport per goroutine or process on the same file. A claim
// that waits lets the Transport's other calls run meanwhile. Close waits for the calls in
// flight, except for waiting claims, whose waits it ends (they return an error matching
// ErrClosed), and rolls back the open transactions; afterwards every method returns
// ErrClosed (but Tx.Rollback, nil). Closing cannot fail: Close always
// returns nil (its error result makes a Transport an io.Closer).
//
// # Linking
//
// The package links the C library with cgo (CGO_ENABLED=1 and a C compiler are needed),
// ABI version 1 of it (libharel_transport.so.1), the release after 0.4.0 on (the worker
// loop's functions came in 0.3.0; Metrics, the producer options, transactions and sharded
// queues after 0.4.0).
// By default it uses -lharel_transport and expects the header and library where the C
// toolchain finds them: in its default paths (the library installed under /usr/local), or
// through the environment, e.g. for a build tree of the repository:
//
//	make lib       # the library, with its soname link libharel_transport.so.1 beside it
//	export CGO_CFLAGS="-I$REPO/include"
//	export CGO_LDFLAGS="-L$REPO/target/release -Wl,-rpath,$REPO/target/release"
//	go build ./...
//
// With the build tag harel_pkgconfig it asks pkg-config for the flags instead, for a
// library installed with make install (PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig when the prefix
// is not a default one; a prefix the dynamic linker does not search also needs
// LD_LIBRARY_PATH or an rpath at run time):
//
//	make install PREFIX=$HOME/.local
//	PKG_CONFIG_PATH=$HOME/.local/lib/pkgconfig go build -tags harel_pkgconfig ./...
package harel
