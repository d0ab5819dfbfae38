package harel

import (
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/trace"
)

// Publish appends event, any valid JSON text (stored and returned byte for byte), to the
// FIFO of groupID. The first publish into a group fixes its priority and routing key
// (WithPriority, WithRoutingKey); later ones leave both as they are. WithHeaders gives the
// message headers. The message and its group are written in one transaction, or nothing
// is. Concurrent publishes share commits.
//
// With a delivery option (WithKey, WithDelay, WithNotBefore, WithUnique, WithTTL,
// WithExpiresAt, WithRetryPolicy) it is PublishWith without the outcome: its own
// transaction, no shared commit.
//
// Errors: ErrArgument (groupID or a routing key empty, a NUL byte or invalid UTF-8 in a
// string, event not JSON, priority outside 0..4, a bad header, a bad delivery option as
// PublishWith's), ErrBusy, ErrDatabase, ErrClosed.
func (t *Transport) Publish(groupID string, event json.RawMessage, opts ...PublishOption) error {
	return t.PublishContext(context.Background(), groupID, event, opts...)
}

// PublishContext is Publish with a context: its span is the parent of the publish's span
// when the Transport traces (WithTracerProvider). A ctx done before the call fails it with
// an error matching ctx.Err() and ErrInterrupted; nothing was published. The call itself
// is not interrupted: it waits at most the busy timeout.
func (t *Transport) PublishContext(ctx context.Context, groupID string, event json.RawMessage, opts ...PublishOption) error {
	if err := ctx.Err(); err != nil {
		return contextDone(err, "before the publish; nothing was published")
	}
	pc := publishOptions(opts)
	var span trace.Span
	if t.tracing != nil {
		span, pc.headers = t.tracing.startPublish(ctx, groupID, pc.headers)
	}
	seq := int64(-1) // not known: a plain publish does not report it
	err := t.call(func(h cTransport) error {
		if pc.delivers() {
			p, err := h.publishWith(groupID, event, &pc)
			seq = p.Seq
			return err
		}
		return h.publish(groupID, event, &pc)
	})
	if span != nil {
		endPublish(span, seq, err)
	}
	return err
}

// PublishWith is Publish that says what became of the message: its seq, and whether it
// was a duplicate. With WithKey, a key the queue has seen within its retention
// (WithKeyRetention) stores nothing: Published.Duplicate is true and Seq is the first
// message's, also after that message was acked; so a publish that failed with ErrConnect
// (a libSQL server's answer lost: it may have been applied) is safe to retry with the same
// key. With WithDelay or WithNotBefore the message is not delivered before the later of
// now + delay and the instant; it keeps its place in its group's FIFO, and the group's
// later messages wait behind it (GroupDelayed while it is the head). With WithUnique, a
// message with its unique key still pending makes it a duplicate of that message
// (Published.Duplicate, Seq the pending message's), and with UniqueReplace or
// UniqueDebounce that message takes this event and these headers (Published.Replaced)
// unless a worker holds its lease. With WithTTL or WithExpiresAt a message no worker has
// by then expires: it moves to the dead letters with the reason "expired". With
// WithRetryPolicy a failed attempt (a Nack with delay 0, a lapsed lease) waits the
// policy's backoff, in place of the queue's WithRetry. The key and the message are one
// transaction of their own (no commit shared with concurrent Publish calls).
//
// Errors: ErrArgument (as Publish's; or WithKey "" or over 256 bytes, a NUL byte or invalid
// UTF-8 in it; WithDelay negative or over ten years; WithNotBefore before the Unix epoch or
// more than ten years ahead; WithUnique as it says, or with WithKey: "key and unique_key
// are both given"; WithTTL 0 or less or over ten years; WithExpiresAt not after the Unix
// epoch; an expiry not after now or not after the message is due; WithRetryPolicy with a
// field out of its range, "retry.base is 0; ..."; nothing was written),
// ErrBusy, ErrConnect, ErrDatabase (also: a key given to a queue opened with
// WithCreateSchema(false) whose schema lacks the keys table), ErrClosed.
func (t *Transport) PublishWith(groupID string, event json.RawMessage, opts ...PublishOption) (Published, error) {
	return t.PublishWithContext(context.Background(), groupID, event, opts...)
}

// PublishWithContext is PublishWith with a context, as PublishContext.
func (t *Transport) PublishWithContext(ctx context.Context, groupID string, event json.RawMessage, opts ...PublishOption) (Published, error) {
	if err := ctx.Err(); err != nil {
		return Published{}, contextDone(err, "before the publish; nothing was published")
	}
	pc := publishOptions(opts)
	var span trace.Span
	if t.tracing != nil {
		span, pc.headers = t.tracing.startPublish(ctx, groupID, pc.headers)
	}
	var p Published
	err := t.call(func(h cTransport) (err error) {
		p, err = h.publishWith(groupID, event, &pc)
		return err
	})
	if span != nil {
		endPublish(span, p.Seq, err)
	}
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
// An empty msgs does nothing. A batch in which a message sets Key, Delay, NotBefore, Unique,
// TTL, ExpiresAt, Retry or Headers (or any batch of a Transport that traces, whose messages
// carry the trace context) is PublishManyWith without the outcomes: its own transaction, no
// commit shared with concurrent publishes. On a queue opened with OpenShards it is one transaction per
// shard: all or none on each shard, not across them.
//
// Errors: ErrArgument (as Publish's, for any message; nothing was written), ErrBusy,
// ErrDatabase (the batch was rolled back), ErrClosed.
func (t *Transport) PublishMany(msgs []Message) error {
	return t.PublishManyContext(context.Background(), msgs)
}

// PublishManyContext is PublishMany with a context, as PublishContext: one span for the
// batch.
func (t *Transport) PublishManyContext(ctx context.Context, msgs []Message) error {
	if err := ctx.Err(); err != nil {
		return contextDone(err, "before the publish; nothing was published")
	}
	var span trace.Span
	if t.tracing != nil && len(msgs) > 0 {
		span, msgs = t.tracing.startBatch(ctx, msgs)
	}
	err := t.call(func(h cTransport) error {
		for i := range msgs {
			if msgs[i].delivers() || len(msgs[i].Headers) > 0 {
				_, err := h.publishManyWith(msgs)
				return err
			}
		}
		return h.publishMany(msgs)
	})
	if span != nil {
		endPublish(span, -1, err)
	}
	return err
}

// PublishManyWith is PublishMany with each message's Key, Delay, NotBefore, Unique, TTL,
// ExpiresAt and Retry (as PublishWith's options) and what became of each: Published[i] is
// msgs[i]'s. One transaction: every message stored or found a duplicate (or replaced), or
// nothing written. A key met earlier in the batch makes the later message a duplicate of
// the earlier one (its Seq); a key seen before the batch, within the retention, a duplicate
// of that message. A unique key met earlier in the batch finds the earlier message pending.
// An empty msgs writes nothing and returns an empty slice. On a queue opened with
// OpenShards it is one transaction per shard, as PublishMany.
//
// Errors: as PublishWith's, naming the bad message by its index ("messages[3].key is
// empty", "messages[3].unique_key is empty", "messages[3].ttl is -1; ...",
// "messages[3].retry.base is -1; ..."); nothing was written.
func (t *Transport) PublishManyWith(msgs []Message) ([]Published, error) {
	return t.PublishManyWithContext(context.Background(), msgs)
}

// PublishManyWithContext is PublishManyWith with a context, as PublishContext: one span
// for the batch.
func (t *Transport) PublishManyWithContext(ctx context.Context, msgs []Message) ([]Published, error) {
	if err := ctx.Err(); err != nil {
		return nil, contextDone(err, "before the publish; nothing was published")
	}
	var span trace.Span
	if t.tracing != nil && len(msgs) > 0 {
		span, msgs = t.tracing.startBatch(ctx, msgs)
	}
	var published []Published
	err := t.call(func(h cTransport) (err error) {
		published, err = h.publishManyWith(msgs)
		return err
	})
	if span != nil {
		endPublish(span, -1, err)
	}
	return published, err
}
