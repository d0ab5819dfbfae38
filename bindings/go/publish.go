package harel

import "encoding/json"

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
