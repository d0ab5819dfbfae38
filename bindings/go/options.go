package harel

import (
	"strconv"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Option configures Open. The library checks each value when Open applies it: a bad one
// fails Open with ErrArgument and a message naming it.
type Option func(*config)

// config is what the Options set; Open hands each set field to its C setter.
type config struct {
	prefix          *string
	createSchema    *bool
	syncURL         *string
	syncURLs        []string
	authToken       *string
	syncInterval    *time.Duration
	busyTimeout     *time.Duration
	synchronousFull *bool
	maxAttempts     *uint32
	keyRetention    *time.Duration
	archive         *time.Duration
	retry           *Retry
	clock           func() time.Time
	tracerProvider  trace.TracerProvider
	traceAsParent   bool
}

// WithPrefix names the tables: <prefix>_transport_messages and <prefix>_transport_groups
// (default "harel"). ASCII: a letter or '_', then letters, digits or '_', at most 30.
func WithPrefix(prefix string) Option { return func(c *config) { c.prefix = &prefix } }

// WithCreateSchema turns creating the tables at Open on (the default: idempotent, and an
// older harel 0.9 schema is upgraded in place) or off (a migration tool owns the schema;
// see SchemaSQL; a missing table fails Open with ErrDatabase).
func WithCreateSchema(create bool) Option { return func(c *config) { c.createSchema = &create } }

// WithSyncURL makes the database path an embedded replica of the libSQL server at url
// (its HTTP URL, e.g. "http://127.0.0.1:8080" or "libsql://db.turso.io"). An unreachable
// server fails Open with ErrConnect within seconds.
func WithSyncURL(url string) Option { return func(c *config) { c.syncURL = &url } }

// WithSyncURLs makes the database paths of OpenShards embedded replicas: urls[i] is the
// primary of shard i, so OpenShards then takes as many paths as URLs (ErrArgument
// otherwise, or beside WithSyncURL). WithAuthToken and WithSyncInterval hold for every
// shard. No URLs unsets it.
func WithSyncURLs(urls ...string) Option {
	return func(c *config) { c.syncURLs = append([]string{}, urls...) }
}

// WithAuthToken is the token for a libSQL server: a remote URL's, or a replica's primary's.
func WithAuthToken(token string) Option { return func(c *config) { c.authToken = &token } }

// WithSyncInterval sets how often an embedded replica pulls from its primary (> 0).
func WithSyncInterval(d time.Duration) Option { return func(c *config) { c.syncInterval = &d } }

// WithBusyTimeout sets how long a write waits for the database's write lock before
// failing with ErrBusy (>= 0; default 5 s).
func WithBusyTimeout(d time.Duration) Option { return func(c *config) { c.busyTimeout = &d } }

// WithSynchronousFull chooses, for local files, between synchronous FULL (true, the
// default: every commit but a claim's survives a power loss; a lease dies with its worker
// anyway) and NORMAL (false: faster; the last commits
// before a power loss may be lost, a process crash loses nothing).
func WithSynchronousFull(full bool) Option { return func(c *config) { c.synchronousFull = &full } }

// WithMaxAttempts limits how many times a message is handed out: a claim that would hand
// it out once more (it was claimed n times already, by any worker) moves it to the dead
// letters instead, with a reason that says so, and its group goes on with its next
// message. Every claim counts, lapsed leases and nacks included (Lease.Attempts). 0, the
// default, is no limit. See DeadLetters, Redrive and PurgeDead for what to do with them.
func WithMaxAttempts(n uint32) Option { return func(c *config) { c.maxAttempts = &n } }

// WithKeyRetention sets how long an idempotency key (WithKey) is remembered after its
// publish: within it a publish with the same key stores nothing and reports the first
// message (Published.Duplicate), also after that message was acked. More than 0, at most
// ten years; the default is a day (24 h), which outlasts a producer's retries and the
// outages they ride out. Expired keys are deleted by later keyed publishes.
func WithKeyRetention(d time.Duration) Option { return func(c *config) { c.keyRetention = &d } }

// WithArchive turns the archive on: every ack this Transport makes (Ack, AckMany,
// AckAndClaim, AckAndClaimMany) copies the acked message, in the ack's own transaction,
// into the table <prefix>_transport_archive, where it is kept for retention after its ack
// (Transport.Archive lists them): its event, headers, claims, the worker that acked it, and
// when it was published, claimed and acked. Each ack also deletes up to 100 archived
// messages acked longer ago than retention. More than 0, at most ten years; a bad value
// fails Open with ErrArgument naming it.
//
// Off (the default), an ack deletes the message and nothing is archived or pruned. Only
// acks archive: a lost lease's ack, a dead letter, an expired message and a purge do not.
// It is this Transport's: another one on the same queue without it archives none of its
// own acks, though its Archive reads the table whoever wrote it. With
// WithCreateSchema(false) the table must be there (see SchemaSQL), or Open fails with
// ErrDatabase naming it.
func WithArchive(retention time.Duration) Option { return func(c *config) { c.archive = &retention } }

// WithRetry gives the queue a retry policy (see Retry): a message whose claim ends in a
// Nack with delay 0, or in a lease that lapses, waits the policy's backoff before its next
// delivery, instead of being claimable at once. A message published with a policy of its
// own (WithRetryPolicy, Message.Retry) follows that one. It is this Transport's: its claims
// apply it (each claim draws the message's backoff, which Peek shows as
// MessageInfo.RetryDelay); another Transport on the same queue without it retries its own
// claims' messages at once. Every claim still counts toward WithMaxAttempts.
//
// Without it (the default) there is no policy. A bad value fails Open with ErrArgument
// naming the field ("WithRetry: retry.factor is 17; it must be finite, 1..16"), a Base of
// 0 too (the C ABI would read it as none).
func WithRetry(r Retry) Option { return func(c *config) { c.retry = &r } }

// WithClock replaces the system clock as the library's "now": of claim, ack and nack (lease
// expiry, parking, retry backoffs, round-robin order and message expiry follow it), of
// publish (a message's publish time, the start of a WithDelay and of a WithTTL, the expiry
// of a WithKey), and of DeadLetter, Redrive, Release, Stats and Groups; so tests can move
// time by hand. nil keeps the system clock.
//
// The library calls now on the goroutine that is making a Transport call, while that
// Transport's lock is held: it must be safe for concurrent use, must not call the same
// Transport, and must return a time at or after the Unix epoch (an earlier time fails the
// call with ErrArgument). A panic in now is recovered and fails the call with ErrArgument
// naming it.
func WithClock(now func() time.Time) Option { return func(c *config) { c.clock = now } }

// WithTracerProvider turns OpenTelemetry tracing on, with spans from tp's tracer named
// TracerName; nil (the default) leaves it off, and then no span is made and no header
// written. On:
//
//   - every publish makes a PRODUCER span "publish <prefix>", a child of the span of the
//     context given to PublishContext (and the other ...Context methods; none for the
//     methods without one), and writes its context into the message's headers:
//     traceparent (replacing one the caller gave) and tracestate when the span has one. A
//     batch is one span (messaging.batch.message_count) whose context every message
//     carries. A transaction's publish span ends when Commit returns (with an error status
//     if it failed), or at Rollback.
//   - every lease handed out (Claim, ClaimWait, ClaimMany, AckAndClaim, AckAndClaimMany)
//     gets a CONSUMER span "process <prefix>" (Lease.Span): a new root linked to the
//     context of the lease's traceparent and tracestate headers (ExtractSpanContext;
//     absent or not valid: no link, never an error), or with WithTraceAsParent(true) a
//     child of it. Ack, Nack, DeadLetter and a lost lease end it.
//
// The spans carry OpenTelemetry's messaging attributes: messaging.system "harel",
// messaging.operation.type ("send", "process") and .name ("publish", "process"),
// messaging.destination.name (the prefix), messaging.message.id (the seq, when known: a
// publish that reports it, every lease), messaging.message.conversation_id (the group id),
// messaging.batch.message_count (batches, a batch claim's leases too).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tracerProvider = tp }
}

// WithTraceAsParent makes each lease's CONSUMER span a child of the producer's span
// context its headers carry, instead of a new root linked to it (the default, false).
// Without WithTracerProvider it does nothing.
func WithTraceAsParent(asParent bool) Option {
	return func(c *config) { c.traceAsParent = asParent }
}

// PublishOption configures one Publish or PublishWith.
type PublishOption func(*publishConfig)

type publishConfig struct {
	priority   int
	routingKey *string
	// the delivery options (WithKey, WithDelay, WithNotBefore, WithUnique, WithTTL,
	// WithExpiresAt, WithRetryPolicy)
	key       *string
	delay     time.Duration
	notBefore time.Time
	unique    *Unique
	expiry    expiry
	retry     *Retry
	// WithHeaders'
	headers []Header
}

// delivers says whether a delivery option is set: the publish then goes through
// harel_transport_publish_delivery, its own transaction. A WithDelay(0), or WithNotBefore
// or WithExpiresAt of the zero Time, asks for nothing, as their absence.
func (c *publishConfig) delivers() bool {
	return c.key != nil || c.delay != 0 || !c.notBefore.IsZero() || c.unique != nil || c.expiry.set() ||
		c.retry != nil
}

// expiry is a message's expiry: its time to live (nil: none) and its instant (the zero
// Time: none).
type expiry struct {
	ttl *time.Duration
	at  time.Time
}

func (e expiry) set() bool { return e.ttl != nil || !e.at.IsZero() }

// WithPriority sets the group's priority, 0 (the default) to 4. Only the first publish
// into a group sets it; later ones leave it as it is.
func WithPriority(priority int) PublishOption {
	return func(c *publishConfig) { c.priority = priority }
}

// WithRoutingKey sets the group's routing key (non-empty), which a claim may require with
// WithRoutingKeys. Only the first publish into a group sets it.
func WithRoutingKey(key string) PublishOption {
	return func(c *publishConfig) { c.routingKey = &key }
}

// WithKey gives the message an idempotency key, 1..256 bytes of UTF-8 (so not ""): a
// publish with a key the queue has seen within its retention (WithKeyRetention, a day by
// default) stores nothing, and PublishWith reports the first message's seq with
// Duplicate set, also after that message was claimed and acked. The key and its message
// are committed together, so a publish that failed with ErrConnect (it may have been
// applied) is retried with the same key: one message is stored whichever attempt got
// through. Keys are the queue's, not a group's: one key in two groups is a duplicate.
func WithKey(key string) PublishOption {
	return func(c *publishConfig) { c.key = &key }
}

// WithDelay holds the message back for d from the publish (by the Transport's clock):
// 0 (the default) to ten years; a negative or longer d is ErrArgument. The message keeps
// its place in its group's FIFO, so the group's later messages wait behind it: the group
// is GroupDelayed while it is the head. With WithNotBefore, the later of the two wins.
func WithDelay(d time.Duration) PublishOption {
	return func(c *publishConfig) { c.delay = d }
}

// WithNotBefore holds the message back until at (by the Transport's clock), as
// WithDelay(at minus now); an instant already past delivers it at once. The zero Time is
// none, as the option's absence; an instant before the Unix epoch or more than ten years
// ahead is ErrArgument.
func WithNotBefore(at time.Time) PublishOption {
	return func(c *publishConfig) { c.notBefore = at }
}

// WithTTL gives the message a time to live, d from the publish (by the Transport's clock):
// if no worker has it by then, it expires. An expired message still undelivered (ready,
// parked, delayed, or its lease lapsed; never one a worker holds under a live lease, which
// finishes it) is moved to the dead letters with the reason "expired", and its group goes
// on behind it; its unique key is freed, and it can be redriven as any dead letter. It
// happens inside claims (a claim never hands out an expired message, and first sweeps up
// to 100 expired ones anywhere in the queue): no goroutine, no timer. Stats.Expired counts
// them (they are in Stats.Dead too).
//
// d must be more than 0 and at most ten years; with WithExpiresAt, the earlier of the two
// wins. An expiry not after the message is due (WithDelay, WithNotBefore, a debounce) could
// never be delivered: ErrArgument, as a d out of range ("ttl is -1; ...").
func WithTTL(d time.Duration) PublishOption {
	return func(c *publishConfig) { c.expiry.ttl = &d }
}

// WithExpiresAt makes the message expire at at (by the Transport's clock), as WithTTL(at
// minus now). The zero Time is none, as the option's absence; an instant not after now,
// or not after the message is due, is ErrArgument ("expires_at is 1000: not after now
// (1000)"), and so is one not after the Unix epoch.
func WithExpiresAt(at time.Time) PublishOption {
	return func(c *publishConfig) { c.expiry.at = at }
}

// UniqueMode says what a publish with a unique key does when a message with that key is
// pending (see Unique).
type UniqueMode int32

// The unique modes (the C ABI's harel_unique_mode).
const (
	// UniqueKeep keeps the pending message: the publish stores nothing and reports it as
	// the duplicate (the default).
	UniqueKeep UniqueMode = 0
	// UniqueReplace gives the pending message the new event and headers, in its place in
	// its group's FIFO (its group, priority and routing key stay), unless a worker holds
	// its lease (not lapsed): then it is kept, as UniqueKeep.
	UniqueReplace UniqueMode = 1
	// UniqueDebounce replaces as UniqueReplace, and the message is then due Delay from
	// now, never later than MaxDelay after its first publish; a new message is due Delay
	// from now.
	UniqueDebounce UniqueMode = 2
)

// String is the mode's Go name ("UniqueReplace"), or "UniqueMode(n)" for another value.
func (m UniqueMode) String() string {
	switch m {
	case UniqueKeep:
		return "UniqueKeep"
	case UniqueReplace:
		return "UniqueReplace"
	case UniqueDebounce:
		return "UniqueDebounce"
	}
	return "UniqueMode(" + strconv.Itoa(int(m)) + ")"
}

// Unique is a message's unique key and what a publish with it does to the pending message
// with that key (WithUnique; Message.Unique in a batch).
//
// While a message of the queue with the key is pending (ready, delayed, leased or parked:
// not yet acked, dead-lettered or purged), a publish with the same key stores no new
// message: Published.Duplicate is true and Seq is the pending message's; with
// UniqueReplace or UniqueDebounce that message took this publish's event and headers
// (Published.Replaced), unless a worker holds its lease. The key is freed when the
// message is acked, dead-lettered or purged (a redriven dead letter has none); then a
// publish with it stores a new message. Keys are the queue's, not a group's: a key
// pending in one group makes a publish into another a duplicate of that message (on a
// queue opened with OpenShards, a key is held on the shard of its message's group).
//
// Unlike an idempotency key (WithKey), which is remembered for the key retention after
// its publish, a unique key lasts as long as its message is pending. A publish takes one
// or the other: both are ErrArgument.
type Unique struct {
	// Key is the unique key, 1..256 bytes of UTF-8.
	Key string
	// Mode is what a publish does to the pending message with Key; UniqueKeep, the zero
	// value, keeps it.
	Mode UniqueMode
	// Delay and MaxDelay are UniqueDebounce's (other modes ignore them): the message is
	// due Delay from the publish (by the Transport's clock), never later than MaxDelay
	// after its first publish. Each 0 to ten years, MaxDelay >= Delay.
	Delay, MaxDelay time.Duration
}

// WithUnique gives the message a unique key and its mode (see Unique): while a message
// with u.Key is pending, a publish with it stores nothing new, and PublishWith reports
// the pending message's seq with Duplicate set (and Replaced when it took this event and
// these headers). Not with WithKey. The library checks u (a key of 1..256 bytes of UTF-8,
// a known mode, the debounce delays): a bad value is ErrArgument naming it
// ("unique_key is empty"), nothing written.
//
//	p, err := t.PublishWith("invoice-42", ev, harel.WithUnique(harel.Unique{
//		Key: "recompute/invoice-42", Mode: harel.UniqueDebounce,
//		Delay: 10 * time.Second, MaxDelay: time.Minute}))
func WithUnique(u Unique) PublishOption {
	return func(c *publishConfig) { c.unique = &u }
}

// Jitter says how a retry policy spreads its backoff d (see Retry), so that the messages
// that failed together do not come back together.
type Jitter int32

// The jitters (the C ABI's harel_jitter).
const (
	// JitterFull draws the backoff uniformly in [0, d): the widest spread (the default).
	JitterFull Jitter = 0
	// JitterEqual draws it uniformly in [d/2, d): never sooner than half of d.
	JitterEqual Jitter = 1
	// JitterNone waits d exactly.
	JitterNone Jitter = 2
)

// String is the jitter's Go name ("JitterEqual"), or "Jitter(n)" for another value.
func (j Jitter) String() string {
	switch j {
	case JitterFull:
		return "JitterFull"
	case JitterEqual:
		return "JitterEqual"
	case JitterNone:
		return "JitterNone"
	}
	return "Jitter(" + strconv.Itoa(int(j)) + ")"
}

// Retry is a retry policy: how long a message waits after a failed attempt, a Nack with
// delay 0 or a lease that lapses, before its next delivery (docs/queue.md, "Retries"). The
// queue's is WithRetry; a message's own, which wins over it, WithRetryPolicy (Message.Retry
// in a batch).
//
// Claim number n of a message (Lease.Attempts) draws its backoff d = min(Cap, Base *
// Factor^(n-1)), spread by Jitter, and stores it on the message (MessageInfo.RetryDelay).
// If that attempt ends in Nack(lease, 0) the message is parked for the backoff, blocking
// its group as any park does (Stats.Parked); if its lease lapses, the next claim finds it
// only the backoff after the lease's end (Extend moves both). A Nack with a delay > 0 waits
// the worker's delay instead. Every claim counts toward WithMaxAttempts. Without any policy
// a Nack with delay 0 frees the message at once.
//
// Base must be 1 ms..ten years (0 is refused: the C ABI would read it as no policy);
// Factor 1..16, 0 for 2 (doubling); Cap Base..ten years, 0 for an hour (or Base if
// longer); Jitter one of the three, JitterFull (the zero value) by default. A bad value is
// ErrArgument naming the field: "retry.factor is 17; it must be finite, 1..16", in a
// batch "messages[1].retry.base is -1; ...".
//
//	harel.Retry{Base: time.Second, Factor: 2, Cap: 5 * time.Minute, Jitter: harel.JitterEqual}
type Retry struct {
	// Base is the first backoff (the one after the first claim).
	Base time.Duration
	// Factor is each next backoff's growth: 1 keeps it constant; 0 is 2.
	Factor float64
	// Cap is the longest backoff; 0 is an hour, or Base if longer.
	Cap time.Duration
	// Jitter is how the backoff is spread; JitterFull, the zero value, by default.
	Jitter Jitter
}

// WithRetryPolicy gives the message a retry policy of its own (see Retry), in place of the
// queue's (WithRetry): after a failed attempt it waits the backoff r draws, whichever
// Transport claimed it. A bad r is ErrArgument naming the field ("retry.cap is 0.5; it
// must be finite seconds, from base (1) to 315360000 (ten years)"), nothing written.
//
//	err := t.Publish("emails/42", ev, harel.WithRetryPolicy(harel.Retry{Base: time.Second, Cap: time.Hour}))
func WithRetryPolicy(r Retry) PublishOption {
	return func(c *publishConfig) { c.retry = &r }
}

// ClaimOption configures one Claim.
type ClaimOption func(*claimConfig)

func claimOptions(opts []ClaimOption) (cc claimConfig) {
	for _, opt := range opts {
		opt(&cc)
	}
	return cc
}

type claimConfig struct {
	minPriority int
	routingKeys []string
}

// WithMinPriority makes the claim skip groups whose priority is below min (0..4; the
// default 0 skips none).
func WithMinPriority(min int) ClaimOption {
	return func(c *claimConfig) { c.minPriority = min }
}

// WithRoutingKeys restricts the claim to groups published with one of keys (each
// non-empty). Without it, or with no keys, any group qualifies, with or without a key.
// Repeated options add to the set.
func WithRoutingKeys(keys ...string) ClaimOption {
	return func(c *claimConfig) { c.routingKeys = append(c.routingKeys, keys...) }
}
