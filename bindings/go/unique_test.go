package harel_test

// Mapping tests of unique keys (issue 38): WithUnique and Message.Unique in every publish
// form (PublishWith, Publish, PublishManyWith, PublishMany, a Tx's Publish), each mode
// (UniqueKeep, UniqueReplace, UniqueDebounce) and each outcome (stored, duplicate,
// replaced) with Published field by field; the debounce's due time through the test
// clock and Stats.Delayed; bad input, the binding's and the library's, each ErrArgument
// naming it with the queue unchanged; and rounds of them freeing what they allocate. The
// semantics are the Rust contract's (tests/common/contract_rules.rs).

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"reflect"
	"strings"
	"testing"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

// unique is WithUnique of key in mode (UniqueDebounce's delays 0).
func unique(key string, mode harel.UniqueMode) harel.PublishOption {
	return harel.WithUnique(harel.Unique{Key: key, Mode: mode})
}

// debounce is WithUnique of key debounced by delay, at most max after its first publish.
func debounce(key string, delay, max time.Duration) harel.PublishOption {
	return harel.WithUnique(harel.Unique{Key: key, Mode: harel.UniqueDebounce, Delay: delay, MaxDelay: max})
}

// wantPublished fails unless got is want.
func wantPublished(t *testing.T, what string, got, want harel.Published) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: %+v, want %+v", what, got, want)
	}
}

// stored fails unless p is a new message (after seq), and returns it.
func stored(t *testing.T, what string, p harel.Published, after int64) harel.Published {
	t.Helper()
	if p.Duplicate || p.Replaced || p.Seq <= after {
		t.Fatalf("%s: %+v, want a new message after seq %d", what, p, after)
	}
	return p
}

// peekOne expects group to hold one message, and returns it.
func peekOne(t *testing.T, tr *harel.Transport, group string) harel.MessageInfo {
	t.Helper()
	page, err := tr.Peek(group, "", 10)
	if err != nil || len(page.Messages) != 1 {
		t.Fatalf("peek %q: %+v, %v; want one message", group, page, err)
	}
	return page.Messages[0]
}

// A unique key (UniqueKeep) while its message is pending (ready, leased, parked, delayed)
// makes a publish with it, into any group, a duplicate reporting the pending seq; an ack,
// a dead letter and a purge free it; a redriven dead letter has none; Publish takes the
// option too.
func TestPublishWithUniqueKey(t *testing.T) {
	clock := newClock()
	tr := memory(t, clock)
	u := unique("u", harel.UniqueKeep)
	first := stored(t, "the first", publishWith(t, tr, "g", 1, u), 0)
	duplicate := func(what string, n int, of harel.Published) {
		t.Helper()
		for _, group := range []string{"g", "other"} { // keys are the queue's, not a group's
			wantPublished(t, what+" into "+group, publishWith(t, tr, group, n, u), harel.Published{Seq: of.Seq, Duplicate: true})
		}
	}
	duplicate("ready", 2, first)
	// the zero Unique's mode is UniqueKeep
	wantPublished(t, "the zero mode", publishWith(t, tr, "g", 2, harel.WithUnique(harel.Unique{Key: "u"})),
		harel.Published{Seq: first.Seq, Duplicate: true})
	if err := tr.Publish("g", event(3), u); err != nil { // Publish: the same, no outcome
		t.Fatal(err)
	}
	if err := tr.PublishContext(context.Background(), "g", event(3), u); err != nil {
		t.Fatal(err)
	}
	if s := stats(t, tr); s.Messages != 1 || s.Groups != 1 {
		t.Fatalf("the duplicates stored something: %+v", s)
	}
	lease := claimEvent(t, tr, 1)
	duplicate("leased", 4, first)
	if err := tr.Nack(lease, time.Minute); err != nil {
		t.Fatal(err)
	}
	duplicate("parked", 4, first)
	clock.Advance(time.Minute + time.Millisecond)

	// a dead letter frees the key; redriven, it has none
	if err := tr.DeadLetter(claimEvent(t, tr, 1), "bad"); err != nil {
		t.Fatal(err)
	}
	second := stored(t, "after the dead letter", publishWith(t, tr, "g", 5, u), first.Seq)
	if n, err := tr.Redrive(harel.AllDeadLetters()); err != nil || n != 1 {
		t.Fatalf("redrive: %d, %v", n, err)
	}
	duplicate("beside the redriven letter", 6, second)
	// a purge frees it
	if n, err := tr.PurgeGroup("g"); err != nil || n != 2 {
		t.Fatalf("purge: %d, %v", n, err)
	}
	third := stored(t, "after the purge", publishWith(t, tr, "g", 7, u), second.Seq)
	// an ack frees it
	lease = claimEvent(t, tr, 7)
	if lease.Seq != third.Seq {
		t.Fatalf("claimed seq %d, want %d", lease.Seq, third.Seq)
	}
	ack(t, tr, lease)
	// a delayed message is pending too
	delayed := stored(t, "after the ack", publishWith(t, tr, "g", 8, u, harel.WithDelay(time.Minute)), third.Seq)
	duplicate("delayed", 9, delayed)
	if s := stats(t, tr); s.Messages != 1 || s.Delayed != 1 {
		t.Fatalf("stats: %+v", s)
	}
	// keys are compared byte for byte; 256 bytes is the longest
	stored(t, "another case", publishWith(t, tr, "h", 10, unique("U", harel.UniqueKeep)), delayed.Seq)
	long := unique(strings.Repeat("é", 128), harel.UniqueKeep)
	boundary := stored(t, "a 256-byte key", publishWith(t, tr, "h", 11, long), delayed.Seq)
	wantPublished(t, "the 256-byte key again", publishWith(t, tr, "h", 12, long), harel.Published{Seq: boundary.Seq, Duplicate: true})
}

// UniqueReplace gives the pending message the new event and headers in its place (its
// group, priority and routing key stay), unless a worker holds its lease (then it is
// kept); a lapsed lease is no worker's.
func TestUniqueReplace(t *testing.T) {
	clock := newClock()
	tr := memory(t, clock)
	h1 := []harel.Header{{Name: "v", Value: "1"}}
	h2 := []harel.Header{{Name: "v", Value: "2"}, {Name: "x", Value: "é"}}
	replace := unique("u", harel.UniqueReplace)
	first := stored(t, "the first", publishWith(t, tr, "g", 1, replace, harel.WithHeaders(h1...), harel.WithPriority(2),
		harel.WithRoutingKey("rk")), 0)
	publish(t, tr, "g", event(9)) // behind it
	replaced := publishWith(t, tr, "other", 2, replace, harel.WithHeaders(h2...), harel.WithPriority(4),
		harel.WithRoutingKey("other"))
	wantPublished(t, "replace", replaced, harel.Published{Seq: first.Seq, Duplicate: true, Replaced: true})
	page, err := tr.Peek("g", "", 10)
	if err != nil || len(page.Messages) != 2 {
		t.Fatalf("peek: %+v, %v", page, err)
	}
	if head := page.Messages[0]; head.Seq != first.Seq || string(head.Event) != string(event(2)) ||
		!reflect.DeepEqual(head.Headers, h2) {
		t.Fatalf("the replaced message: %+v, want event 2 with %v in its place", head, h2)
	}
	if s := stats(t, tr); s.Messages != 2 || s.Groups != 1 || len(s.ByPriority) != 1 || s.ByPriority[0].Priority != 2 {
		t.Fatalf("stats: %+v (the message stays in g, priority 2)", s)
	}
	// UniqueKeep keeps it
	wantPublished(t, "keep", publishWith(t, tr, "g", 3, unique("u", harel.UniqueKeep)),
		harel.Published{Seq: first.Seq, Duplicate: true})
	if other := pageOf(t, tr, "other"); len(other) != 0 {
		t.Fatalf("other holds %+v", other)
	}
	// a worker's lease keeps it
	lease := claimEvent(t, tr, 2, harel.WithMinPriority(2), harel.WithRoutingKeys("rk"))
	if lease.Seq != first.Seq || !reflect.DeepEqual(lease.Headers, h2) {
		t.Fatalf("the lease: %+v", lease)
	}
	wantPublished(t, "replace under a lease", publishWith(t, tr, "g", 4, replace),
		harel.Published{Seq: first.Seq, Duplicate: true})
	if head, _ := tr.Peek("g", "", 1); string(head.Messages[0].Event) != string(event(2)) {
		t.Fatalf("replaced under a lease: %s", head.Messages[0].Event)
	}
	// a lapsed one does not: replaced, and the old holder's ack is refused
	clock.Advance(visibility + time.Second)
	wantPublished(t, "replace after the lease lapsed", publishWith(t, tr, "g", 5, replace),
		harel.Published{Seq: first.Seq, Duplicate: true, Replaced: true})
	wantError(t, "the lapsed holder's ack", tr.Ack(lease), harel.ErrLeaseLost)
	ack(t, tr, claimEvent(t, tr, 5))
	stored(t, "after the ack", publishWith(t, tr, "g", 6, replace), first.Seq)
}

// pageOf is what Peek of group gives at most 10 of.
func pageOf(t *testing.T, tr *harel.Transport, group string) []harel.MessageInfo {
	t.Helper()
	page, err := tr.Peek(group, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	return page.Messages
}

// UniqueDebounce: a new message is due Delay from now; each publish with its key
// replaces it and moves its due time to now + Delay, never past its first publish +
// MaxDelay (the test clock; Stats.Delayed and NextDueAt, Peek's due time).
func TestUniqueDebounce(t *testing.T) {
	clock := newClock()
	tr := memory(t, clock)
	deb := debounce("u", 10*time.Second, 30*time.Second)
	due := func(what string, d time.Duration) {
		t.Helper()
		s := stats(t, tr)
		if s.Messages != 1 || s.Delayed != 1 {
			t.Fatalf("%s: stats %+v, want one delayed message", what, s)
		}
		wantTime(t, what+": next due", s.NextDueAt, at(d))
		wantTime(t, what+": the message's due time", pageOf(t, tr, "g")[0].LockExpiry, at(d))
	}
	first := stored(t, "the first", publishWith(t, tr, "g", 1, deb), 0)
	due("the first", 10*time.Second)
	claimNone(t, tr, "debounced")
	for _, c := range []struct {
		advance time.Duration
		n       int
		due     time.Duration
	}{
		{8 * time.Second, 2, 18 * time.Second}, // now + delay
		{9 * time.Second, 3, 27 * time.Second}, // now + delay
		{9 * time.Second, 4, 30 * time.Second}, // capped: first publish + max
		{3 * time.Second, 5, 30 * time.Second}, // capped
	} {
		clock.Advance(c.advance)
		claimNone(t, tr, "not due yet")
		wantPublished(t, fmt.Sprintf("debounce of event %d", c.n), publishWith(t, tr, "other", c.n, deb),
			harel.Published{Seq: first.Seq, Duplicate: true, Replaced: true})
		due(fmt.Sprintf("after event %d", c.n), c.due)
	}
	clock.Advance(time.Second - time.Millisecond) // 29.999 s
	claimNone(t, tr, "a millisecond before the cap")
	clock.Advance(2 * time.Millisecond)
	lease := claimEvent(t, tr, 5)
	if lease.Seq != first.Seq || lease.GroupID != "g" {
		t.Fatalf("the debounced message: %+v", lease)
	}
	// under a worker's lease: kept, its due time untouched
	wantPublished(t, "debounce under a lease", publishWith(t, tr, "g", 6, deb), harel.Published{Seq: first.Seq, Duplicate: true})
	ack(t, tr, lease)
	// freed by the ack: a new message, due Delay from now
	second := stored(t, "after the ack", publishWith(t, tr, "g", 7, deb), first.Seq)
	due("the second", 40*time.Second+time.Millisecond)
	if released, err := tr.Release("g"); err != nil || !released {
		t.Fatalf("release: %v, %v", released, err)
	}
	if lease := claimEvent(t, tr, 7); lease.Seq != second.Seq {
		t.Fatalf("released: %+v", lease)
	}
	// a zero delay: due at once
	stored(t, "a zero delay", publishWith(t, tr, "h", 8, debounce("z", 0, 0)), second.Seq)
	ack(t, tr, claimEvent(t, tr, 8))
}

// A batch with unique keys (PublishManyWith, and PublishMany without the outcomes): a key
// met earlier in the batch finds that message pending; the modes and the other options
// per message.
func TestPublishManyWithUnique(t *testing.T) {
	clock := newClock()
	tr := memory(t, clock)
	h := []harel.Header{{Name: "n", Value: "2"}}
	got, err := tr.PublishManyWith([]harel.Message{
		{GroupID: "a", Event: event(1), Unique: &harel.Unique{Key: "u"}},
		{GroupID: "b", Event: event(2), Headers: h, Unique: &harel.Unique{Key: "u", Mode: harel.UniqueReplace}},
		{GroupID: "a", Event: event(3), Unique: &harel.Unique{Key: "u"}},
		{GroupID: "c", Event: event(4), Unique: &harel.Unique{Key: "v", Mode: harel.UniqueDebounce, Delay: time.Minute,
			MaxDelay: time.Hour}},
		{GroupID: "d", Event: event(5), Key: "k", Priority: 3},
		{GroupID: "d", Event: event(6), Delay: time.Second},
		{GroupID: "e", Event: event(7)},
	})
	if err != nil || len(got) != 7 {
		t.Fatalf("batch: %+v, %v", got, err)
	}
	s0 := stored(t, "messages[0]", got[0], 0).Seq
	wantPublished(t, "messages[1]", got[1], harel.Published{Seq: s0, Duplicate: true, Replaced: true})
	wantPublished(t, "messages[2]", got[2], harel.Published{Seq: s0, Duplicate: true})
	for i := 3; i < 7; i++ {
		stored(t, fmt.Sprintf("messages[%d]", i), got[i], got[i-1].Seq)
	}
	if m := peekOne(t, tr, "a"); m.Seq != s0 || string(m.Event) != string(event(2)) || !reflect.DeepEqual(m.Headers, h) {
		t.Fatalf("a's message: %+v", m)
	}
	if s := stats(t, tr); s.Messages != 5 || s.Groups != 4 || s.Delayed != 1 {
		t.Fatalf("stats: %+v (groups a, c, d, e; c delayed)", s)
	}
	wantTime(t, "c's due time", peekOne(t, tr, "c").LockExpiry, at(time.Minute))
	// a later batch: the keys pending, the idempotency key seen
	again, err := tr.PublishManyWith([]harel.Message{
		{GroupID: "x", Event: event(8), Unique: &harel.Unique{Key: "u"}},
		{GroupID: "x", Event: event(9), Unique: &harel.Unique{Key: "v", Mode: harel.UniqueDebounce, Delay: 2 * time.Minute,
			MaxDelay: time.Hour}},
		{GroupID: "x", Event: event(10), Key: "k"},
	})
	want := []harel.Published{{Seq: s0, Duplicate: true}, {Seq: got[3].Seq, Duplicate: true, Replaced: true},
		{Seq: got[4].Seq, Duplicate: true}}
	if err != nil || !reflect.DeepEqual(again, want) {
		t.Fatalf("again: %+v, %v; want %+v", again, err, want)
	}
	wantTime(t, "c's due time debounced", peekOne(t, tr, "c").LockExpiry, at(2*time.Minute))
	// PublishMany takes Unique: nothing stored, a's message replaced
	if err := tr.PublishMany([]harel.Message{{GroupID: "y", Event: event(11), Unique: &harel.Unique{Key: "u",
		Mode: harel.UniqueReplace}}}); err != nil {
		t.Fatal(err)
	}
	if m := peekOne(t, tr, "a"); string(m.Event) != string(event(11)) {
		t.Fatalf("a's message after PublishMany: %s", m.Event)
	}
	if s := stats(t, tr); s.Messages != 5 || s.Groups != 4 {
		t.Fatalf("stats after: %+v", s)
	}
}

// A transaction's publishes with unique keys: a duplicate is an answer (the statements
// commit with it), a key met earlier in the transaction finds that message pending; a
// rollback stores nothing and holds no key.
func TestATransactionPublishesWithUniqueKeys(t *testing.T) {
	clock := newClock()
	tr := memory(t, clock)
	orders := appTable(t, tr, "orders")
	pending := stored(t, "pending", publishWith(t, tr, "g", 1, unique("u", harel.UniqueKeep)), 0)
	published, err := tr.InTx(context.Background(), func(tx *harel.Tx) error {
		if err := tx.Exec("INSERT INTO orders (id, note) VALUES (?, ?)", 1, "one"); err != nil {
			return err
		}
		for _, p := range []struct {
			group string
			n     int
			opt   harel.PublishOption
		}{
			{"other", 2, unique("u", harel.UniqueReplace)},
			{"g", 3, unique("u", harel.UniqueKeep)},
			{"h", 4, unique("v", harel.UniqueKeep)},
			{"h", 5, unique("v", harel.UniqueKeep)},
			{"d", 6, debounce("w", time.Minute, time.Hour)},
		} {
			if err := tx.Publish(p.group, event(p.n), p.opt); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || len(published) != 5 {
		t.Fatalf("commit: %+v, %v", published, err)
	}
	wantPublished(t, "replace", published[0], harel.Published{Seq: pending.Seq, Duplicate: true, Replaced: true})
	wantPublished(t, "keep", published[1], harel.Published{Seq: pending.Seq, Duplicate: true})
	v := stored(t, "a new key", published[2], pending.Seq)
	wantPublished(t, "the new key again", published[3], harel.Published{Seq: v.Seq, Duplicate: true})
	stored(t, "debounced", published[4], v.Seq)
	if n := count(t, tr, orders); n != 1 {
		t.Fatalf("%d rows", n)
	}
	if m := peekOne(t, tr, "g"); m.Seq != pending.Seq || string(m.Event) != string(event(2)) {
		t.Fatalf("g's message: %+v", m)
	}
	if s := stats(t, tr); s.Messages != 3 || s.Delayed != 1 {
		t.Fatalf("stats: %+v", s)
	}
	wantTime(t, "the debounced message's due time", peekOne(t, tr, "d").LockExpiry, at(time.Minute))
	// rolled back: nothing stored, the key not held
	tx := begin(t, tr)
	txPublish(t, tx, "z", 7, unique("z", harel.UniqueKeep))
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	stored(t, "after the rollback", publishWith(t, tr, "z", 8, unique("z", harel.UniqueKeep)), v.Seq)
}

// Every bad value of a unique key and its mode: the binding's (a NUL byte) and the
// library's, alone, in a batch and in a transaction, each ErrArgument naming it; none of it
// changes the queue or holds a key, and the transaction goes on.
func TestBadUniqueInput(t *testing.T) {
	clock := newClock()
	tr := memory(t, clock)
	kept := stored(t, "kept", publishWith(t, tr, "g", 1, unique("kept", harel.UniqueKeep)), 0)
	long := strings.Repeat("u", 257)
	bad := []struct {
		what  string
		u     harel.Unique
		key   string
		delay time.Duration
		parts []string
	}{
		// the binding's
		{what: "NUL in unique key", u: harel.Unique{Key: "u\x00"}, parts: []string{"unique_key", "NUL byte"}},
		// the library's
		{what: "empty unique key", u: harel.Unique{Key: ""}, parts: []string{"unique_key is empty"}},
		{what: "empty unique key, replace", u: harel.Unique{Key: "", Mode: harel.UniqueReplace}, parts: []string{"unique_key is empty"}},
		{what: "257-byte unique key", u: harel.Unique{Key: long}, parts: []string{"unique_key is 257 bytes; at most 256"}},
		{what: "unique key not UTF-8", u: harel.Unique{Key: "u\xff"}, parts: []string{"unique_key", "UTF-8"}},
		{what: "mode 7", u: harel.Unique{Key: "fresh", Mode: 7}, parts: []string{"unique_mode is 7"}},
		{what: "mode -1", u: harel.Unique{Key: "fresh", Mode: -1}, parts: []string{"unique_mode is -1"}},
		{what: "both keys", u: harel.Unique{Key: "fresh"}, key: "k", parts: []string{"key and ", "unique_key are both given"}},
		{what: "both keys, the unique one pending", u: harel.Unique{Key: "kept"}, key: "k2",
			parts: []string{"unique_key are both given"}},
		{what: "debounce max below its delay", u: harel.Unique{Key: "fresh", Mode: harel.UniqueDebounce, Delay: 10 * time.Second,
			MaxDelay: 5 * time.Second}, parts: []string{"debounce max_delay is 5; it must be >= its delay (10)"}},
		{what: "debounce negative delay", u: harel.Unique{Key: "fresh", Mode: harel.UniqueDebounce, Delay: -time.Second,
			MaxDelay: time.Second}, parts: []string{"debounce delay is -1"}},
		{what: "debounce max over ten years", u: harel.Unique{Key: "fresh", Mode: harel.UniqueDebounce, Delay: time.Second,
			MaxDelay: tenYears + time.Second}, parts: []string{"debounce max_delay", "ten years"}},
		{what: "the longest Duration", u: harel.Unique{Key: "fresh", Mode: harel.UniqueDebounce, Delay: 1<<63 - 1,
			MaxDelay: 1<<63 - 1}, parts: []string{"debounce delay"}},
		{what: "a unique key and a bad delay", u: harel.Unique{Key: "fresh"}, delay: -time.Second, parts: []string{"delay is -1"}},
	}
	tx := begin(t, tr)
	for _, c := range bad {
		opts := []harel.PublishOption{harel.WithUnique(c.u), harel.WithDelay(c.delay)}
		if c.key != "" {
			opts = append(opts, harel.WithKey(c.key))
		}
		msg := harel.Message{GroupID: "new", Event: event(3), Unique: &c.u, Key: c.key, Delay: c.delay}
		p, err := tr.PublishWith("new", event(2), opts...)
		if p != (harel.Published{}) {
			t.Errorf("%s: a refused publish_with returned %+v", c.what, p)
		}
		wantError(t, "publish_with: "+c.what, err, harel.ErrArgument, c.parts...)
		wantError(t, "publish: "+c.what, tr.Publish("new", event(2), opts...), harel.ErrArgument, c.parts...)
		batch, err := tr.PublishManyWith([]harel.Message{{GroupID: "new", Event: event(2), Unique: &harel.Unique{Key: "fresh"}}, msg})
		if batch != nil {
			t.Errorf("%s: a refused publish_many_with returned %+v", c.what, batch)
		}
		wantError(t, "publish_many_with: "+c.what, err, harel.ErrArgument, append([]string{"messages[1]."}, c.parts...)...)
		wantError(t, "publish_many: "+c.what, tr.PublishMany([]harel.Message{msg}), harel.ErrArgument,
			append([]string{"messages[0]."}, c.parts...)...)
		wantError(t, "a transaction's publish: "+c.what, tx.Publish("new", event(2), opts...), harel.ErrArgument, c.parts...)
	}
	// the transaction goes on: only its good publish
	txPublish(t, tx, "new", 4, unique("fresh", harel.UniqueKeep))
	published := commit(t, tx)
	if len(published) != 1 {
		t.Fatalf("the transaction's publishes: %+v", published)
	}
	fresh := stored(t, "the transaction's good publish", published[0], kept.Seq)
	// nothing else changed: no key of a refused call held
	if s := stats(t, tr); s.Messages != 2 || s.Groups != 2 {
		t.Fatalf("stats: %+v", s)
	}
	wantPublished(t, "the key stored before", publishWith(t, tr, "g", 5, unique("kept", harel.UniqueKeep)),
		harel.Published{Seq: kept.Seq, Duplicate: true})
	wantPublished(t, "the transaction's key", publishWith(t, tr, "g", 5, unique("fresh", harel.UniqueKeep)),
		harel.Published{Seq: fresh.Seq, Duplicate: true})
	if got := harel.UniqueDebounce.String() + " " + harel.UniqueMode(7).String(); got != "UniqueDebounce UniqueMode(7)" {
		t.Errorf("String: %q", got)
	}
}

// A queue opened with WithCreateSchema(false) whose schema lacks the column unique_key (a
// file of a version before it) is refused at Open, naming it; opened with the schema
// created, the column is added and unique keys work.
func TestUniqueKeyColumnMissing(t *testing.T) {
	path := tempDB(t)
	if err := open(t, path).Close(); err != nil { // creates the schema
		t.Fatal(err)
	}
	python(t, `
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=30)
db.execute("DROP INDEX harel_transport_messages_by_unique_key")
db.execute("ALTER TABLE harel_transport_messages DROP COLUMN unique_key")
db.commit()
db.close()
`, path)
	_, err := harel.Open(path, harel.WithCreateSchema(false))
	wantError(t, "open without the column", err, harel.ErrDatabase, "unique_key")
	upgraded := open(t, path)
	first := stored(t, "once the schema was created", publishWith(t, upgraded, "g", 1, unique("u", harel.UniqueKeep)), 0)
	wantPublished(t, "again", publishWith(t, upgraded, "g", 2, unique("u", harel.UniqueKeep)), harel.Published{Seq: first.Seq, Duplicate: true})
}

// Rounds of unique-keyed publishes of every form, replaced, refused by the library and by
// the binding, free what they allocate (leak_test.go's way): the keys' C copies and the
// harel_delivery structs, a batch's array of them.
func TestUniqueKeysFreeWhatTheyAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	tr := open(t, tempDB(t), harel.WithSynchronousFull(false))
	ctx := context.Background()
	key := func(i int) string { return strings.Repeat("k", 250) + string(rune('a'+i%26)) + string(rune('a'+i/26)) }
	round := func() {
		msgs := make([]harel.Message, 256)
		for i := range msgs {
			mode := harel.UniqueMode(i % 3)
			msgs[i] = harel.Message{GroupID: "g", Event: event(i), Unique: &harel.Unique{Key: key(i % 128), Mode: mode,
				Delay: time.Millisecond, MaxDelay: time.Second}}
		}
		got, err := tr.PublishManyWith(msgs) // 128 stored, 128 duplicates or replaced
		if err != nil || len(got) != 256 {
			t.Fatalf("batch: %v", err)
		}
		if p, err := tr.PublishWith("h", event(1), harel.WithUnique(harel.Unique{Key: key(140), Mode: harel.UniqueReplace})); err != nil || p.Duplicate {
			t.Fatalf("publish_with: %+v, %v", p, err)
		}
		if err := tr.Publish("h", event(2), harel.WithUnique(harel.Unique{Key: key(140), Mode: harel.UniqueReplace})); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.InTx(ctx, func(tx *harel.Tx) error {
			return tx.Publish("h", event(3), harel.WithUnique(harel.Unique{Key: key(141), Mode: harel.UniqueDebounce,
				Delay: time.Second, MaxDelay: time.Minute}))
		}); err != nil {
			t.Fatal(err)
		}
		// refusals: the library's (a bad mode, after the good keys) and the binding's (a NUL byte)
		msgs[255].Unique = &harel.Unique{Key: key(255), Mode: 7}
		if _, err := tr.PublishManyWith(msgs); err == nil {
			t.Fatal("a bad mode was taken")
		}
		msgs[255].Unique = &harel.Unique{Key: key(255) + "\x00"}
		if _, err := tr.PublishManyWith(msgs); err == nil {
			t.Fatal("a NUL byte was taken")
		}
		if _, err := tr.PublishWith("h", event(1), harel.WithUnique(harel.Unique{Key: key(1)}), harel.WithKey(key(2))); err == nil {
			t.Fatal("both keys were taken")
		}
		if n, err := tr.Purge(); err != nil || n != 130 {
			t.Fatalf("purge: %d, %v", n, err)
		}
	}
	// a leak of the batch's keys alone would be 64 KiB a round, 19 MiB; of its harel_delivery
	// structs, 16 KiB a round, 4.8 MiB
	const rounds, limit = 300, 3 << 20
	set := func() {
		for i := 0; i < rounds; i++ {
			round()
		}
	}
	set()
	grown := settledGrowth(t, limit, set)
	t.Logf("resident memory grew by %d KiB over %d rounds of unique keys", grown/1024, rounds)
	if grown > limit {
		t.Fatalf("resident memory grew by %d KiB over %d rounds of unique keys: a leak", grown/1024, rounds)
	}
}

// A unique key with UniqueDebounce coalesces a burst: the message is published once, each
// later publish with the key replaces its event and moves its due time, up to MaxDelay
// after the first; once it is acked, the key is free again.
func ExampleWithUnique() {
	t, err := harel.Open(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close()

	recompute := harel.WithUnique(harel.Unique{Key: "recompute/invoice-42", Mode: harel.UniqueDebounce,
		Delay: 10 * time.Second, MaxDelay: time.Minute})
	for i := 1; i <= 3; i++ {
		p, err := t.PublishWith("invoice-42", json.RawMessage(fmt.Sprintf(`{"edit":%d}`, i)), recompute)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("edit %d: duplicate %v, replaced %v\n", i, p.Duplicate, p.Replaced)
	}
	s, _ := t.Stats()
	fmt.Printf("%d message, %d delayed\n", s.Messages, s.Delayed)
	if _, err := t.Release("invoice-42"); err != nil { // deliver it now, for the example
		log.Fatal(err)
	}
	lease, _ := t.Claim("worker-1", 30*time.Second)
	fmt.Println(string(lease.Event))
	// Output:
	// edit 1: duplicate false, replaced false
	// edit 2: duplicate true, replaced true
	// edit 3: duplicate true, replaced true
	// 1 message, 1 delayed
	// {"edit":3}
}
