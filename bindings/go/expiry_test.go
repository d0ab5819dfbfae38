package harel_test

// Mapping tests of expiry (issue 38): WithTTL and WithExpiresAt, Message.TTL and
// Message.ExpiresAt in every publish form (Publish, PublishWith, PublishMany,
// PublishManyWith, a Tx's Publish) reach the library as harel_delivery's ttl and expires_at:
// by the test clock, the message expires at the instant they give (the earlier of the two),
// is a dead letter with the reason "expired" and counts in Stats.Expired. Bad input, the
// binding's and the library's, is ErrArgument naming it (and the message, in a batch),
// with the queue unchanged. The semantics are the Rust contract's
// (tests/common/contract_expiry.rs).

import (
	"context"
	"fmt"
	"log"
	"math"
	"reflect"
	"sync"
	"testing"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

// deadLetters is every dead letter of tr.
func deadLetters(t *testing.T, tr *harel.Transport) []harel.DeadLetter {
	t.Helper()
	page, err := tr.DeadLetters("", "", harel.MaxPage)
	if err != nil {
		t.Fatalf("dead letters: %v", err)
	}
	return page.Letters
}

// Each publish form's expiry reaches the library: a message expiring 10 s after the
// publish (its ttl, its instant, or the earlier of both) is handed out at 9.5 s, and at
// 10 s it is a dead letter with the reason "expired" while the message behind it in its
// group, which has no expiry, is delivered; Stats.Expired counts it beside Stats.Dead.
func TestExpiryReachesTheLibrary(t *testing.T) {
	ten := at(10 * time.Second)
	forms := []struct {
		name    string
		publish func(tr *harel.Transport) error
	}{
		{"Publish WithTTL", func(tr *harel.Transport) error {
			return tr.Publish("g", event(1), harel.WithTTL(10*time.Second))
		}},
		{"PublishWith WithTTL", func(tr *harel.Transport) error {
			p, err := tr.PublishWith("g", event(1), harel.WithTTL(10*time.Second))
			if err == nil && (p.Seq != 1 || p.Duplicate || p.Replaced) {
				err = fmt.Errorf("published %+v, want seq 1 stored", p)
			}
			return err
		}},
		{"PublishWith WithExpiresAt", func(tr *harel.Transport) error {
			_, err := tr.PublishWith("g", event(1), harel.WithExpiresAt(ten))
			return err
		}},
		{"PublishWith both, the instant earlier", func(tr *harel.Transport) error {
			_, err := tr.PublishWith("g", event(1), harel.WithTTL(time.Hour), harel.WithExpiresAt(ten))
			return err
		}},
		{"PublishWith both, the ttl earlier", func(tr *harel.Transport) error {
			_, err := tr.PublishWith("g", event(1), harel.WithExpiresAt(at(time.Hour)), harel.WithTTL(10*time.Second))
			return err
		}},
		{"PublishWith WithTTL, delayed", func(tr *harel.Transport) error {
			_, err := tr.PublishWith("g", event(1), harel.WithDelay(5*time.Second), harel.WithTTL(10*time.Second))
			return err
		}},
		{"PublishWith WithTTL and a unique key", func(tr *harel.Transport) error {
			_, err := tr.PublishWith("g", event(1), harel.WithTTL(10*time.Second), unique("u", harel.UniqueReplace))
			return err
		}},
		{"PublishMany TTL", func(tr *harel.Transport) error {
			return tr.PublishMany([]harel.Message{{GroupID: "g", Event: event(1), TTL: 10 * time.Second}})
		}},
		{"PublishManyWith ExpiresAt", func(tr *harel.Transport) error {
			_, err := tr.PublishManyWith([]harel.Message{{GroupID: "g", Event: event(1), ExpiresAt: ten}})
			return err
		}},
		{"PublishManyWith both", func(tr *harel.Transport) error {
			_, err := tr.PublishManyWith([]harel.Message{
				{GroupID: "g", Event: event(1), TTL: time.Hour, ExpiresAt: ten},
			})
			return err
		}},
		{"Tx.Publish WithTTL", func(tr *harel.Transport) error {
			_, err := tr.InTx(context.Background(), func(tx *harel.Tx) error {
				return tx.Publish("g", event(1), harel.WithTTL(10*time.Second))
			})
			return err
		}},
	}
	for _, form := range forms {
		t.Run(form.name, func(t *testing.T) {
			clock := newClock()
			tr := memory(t, clock)
			if err := form.publish(tr); err != nil {
				t.Fatalf("publish: %v", err)
			}
			// behind it, a message with no expiry (a batch's TTL 0 and zero ExpiresAt are none)
			if _, err := tr.PublishManyWith([]harel.Message{{GroupID: "g", Event: event(2), Key: "k"}}); err != nil {
				t.Fatal(err)
			}
			clock.Advance(9500 * time.Millisecond)
			lease := claimEvent(t, tr, 1)
			if err := tr.Nack(lease, 0); err != nil {
				t.Fatal(err)
			}
			clock.Advance(500 * time.Millisecond) // 10 s: expired
			lease = claimEvent(t, tr, 2)          // its group goes on behind it
			ack(t, tr, lease)
			claimNone(t, tr, "everything expired or acked")
			letters := deadLetters(t, tr)
			if len(letters) != 1 {
				t.Fatalf("dead letters: %+v, want one", letters)
			}
			d := letters[0]
			if d.Seq != 1 || d.GroupID != "g" || string(d.Event) != string(event(1)) || d.Reason != "expired" {
				t.Fatalf("the dead letter: %+v, want seq 1 of g with the reason \"expired\"", d)
			}
			if s := stats(t, tr); s.Messages != 0 || s.Dead != 1 || s.Expired != 1 {
				t.Fatalf("stats: %+v, want 0 messages, 1 dead, 1 expired", s)
			}
		})
	}
}

// Stats.Expired counts only the dead letters that expired, not a worker's; the message
// with no expiry in a batch beside expiring ones stays; redriven, none is left.
func TestStatsExpired(t *testing.T) {
	clock := newClock()
	tr := memory(t, clock)
	publish(t, tr, "x", event(0))
	published, err := tr.PublishManyWith([]harel.Message{
		{GroupID: "a", Event: event(1), TTL: time.Minute},
		{GroupID: "b", Event: event(2), ExpiresAt: at(time.Minute)},
		{GroupID: "c", Event: event(3)},
		{GroupID: "d", Event: event(4), TTL: time.Minute},
	})
	if err != nil || len(published) != 4 {
		t.Fatalf("publish: %+v, %v", published, err)
	}
	if s := stats(t, tr); s.Messages != 5 || s.Dead != 0 || s.Expired != 0 {
		t.Fatalf("stats before: %+v", s)
	}
	if err := tr.DeadLetter(claimEvent(t, tr, 0), "bad"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	ack(t, tr, claimEvent(t, tr, 3)) // the claim swept the expired ones first
	claimNone(t, tr, "the others expired")
	if s := stats(t, tr); s.Messages != 0 || s.Dead != 4 || s.Expired != 3 {
		t.Fatalf("stats after: %+v, want 4 dead, 3 expired", s)
	}
	reasons := map[string]int{}
	for _, d := range deadLetters(t, tr) {
		reasons[d.Reason]++
	}
	if !reflect.DeepEqual(reasons, map[string]int{"bad": 1, "expired": 3}) {
		t.Fatalf("reasons: %v", reasons)
	}
	if n, err := tr.Redrive(harel.AllDeadLetters()); err != nil || n != 4 {
		t.Fatalf("redrive: %d, %v", n, err)
	}
	if s := stats(t, tr); s.Dead != 0 || s.Expired != 0 || s.Messages != 4 {
		t.Fatalf("stats after the redrive: %+v", s)
	}
}

// Every refusal of an expiry, the binding's (what the ABI would read as none) and the
// library's, alone, in each batch (naming the message) and in a transaction: ErrArgument
// naming it, nothing written. A transaction's Publish refuses what needs no clock at once
// (the transaction goes on); what is checked against now (an expiry not after now, or not
// after the message is due) is refused at the latest by its Commit, which rolls back.
func TestBadExpiryInput(t *testing.T) {
	clock := newClock()
	tr := memory(t, clock)
	stored(t, "kept", publishWith(t, tr, "g", 1, harel.WithTTL(time.Hour)), 0)
	debounced := harel.Unique{Key: "d", Mode: harel.UniqueDebounce, Delay: time.Minute, MaxDelay: time.Minute}
	const mustBe = "; it must be a finite number of seconds > 0, at most 315360000 (ten years)"
	bad := []struct {
		what  string
		opts  []harel.PublishOption
		msg   *harel.Message // the same as a batch's message; nil: none (a TTL of 0 is none there)
		byNow bool           // checked against now
		parts []string
	}{
		// the binding's
		{"ttl 0", []harel.PublishOption{harel.WithTTL(0)}, nil, false, []string{"ttl is 0" + mustBe}},
		{"expires_at at the epoch", []harel.PublishOption{harel.WithExpiresAt(time.Unix(0, 0))},
			&harel.Message{ExpiresAt: time.Unix(0, 0)}, false,
			[]string{"expires_at is 1970-01-01T00:00:00Z, not after the Unix epoch"}},
		{"expires_at before the epoch", []harel.PublishOption{harel.WithExpiresAt(time.Unix(-5, 0))},
			&harel.Message{ExpiresAt: time.Unix(-5, 0)}, false,
			[]string{"expires_at is 1969-12-31T23:59:55Z, not after the Unix epoch"}},
		// the library's
		{"ttl negative", []harel.PublishOption{harel.WithTTL(-time.Second)}, &harel.Message{TTL: -time.Second}, false,
			[]string{"ttl is -1" + mustBe}},
		{"ttl over ten years", []harel.PublishOption{harel.WithTTL(tenYears + time.Second)},
			&harel.Message{TTL: tenYears + time.Second}, false, []string{"ttl is 315360001" + mustBe}},
		{"the longest Duration", []harel.PublishOption{harel.WithTTL(math.MaxInt64)}, &harel.Message{TTL: math.MaxInt64},
			false, []string{"ttl is 9223372036.85"}},
		{"expires_at now", []harel.PublishOption{harel.WithExpiresAt(at(0))}, &harel.Message{ExpiresAt: at(0)}, true,
			[]string{"expires_at is 1000: not after now (1000)"}},
		{"expires_at past", []harel.PublishOption{harel.WithExpiresAt(at(-time.Second))},
			&harel.Message{ExpiresAt: at(-time.Second)}, true, []string{"expires_at is 999: not after now (1000)"}},
		{"the earlier of both past", []harel.PublishOption{harel.WithTTL(time.Hour), harel.WithExpiresAt(at(-time.Second))},
			&harel.Message{TTL: time.Hour, ExpiresAt: at(-time.Second)}, true, []string{"expires_at is 999: not after now"}},
		{"expiry before the delay", []harel.PublishOption{harel.WithDelay(time.Minute),
			harel.WithExpiresAt(at(30 * time.Second))}, &harel.Message{Delay: time.Minute, ExpiresAt: at(30 * time.Second)},
			true, []string{"expires_at is 1030: not after the message is due (1060), so it could never be delivered"}},
		{"expiry at not_before", []harel.PublishOption{harel.WithNotBefore(at(time.Minute)), harel.WithTTL(time.Minute)},
			&harel.Message{NotBefore: at(time.Minute), TTL: time.Minute}, true,
			[]string{"expires_at is 1060: not after the message is due (1060)"}},
		{"expiry before a debounce", []harel.PublishOption{harel.WithUnique(debounced), harel.WithTTL(time.Second)},
			&harel.Message{Unique: &debounced, TTL: time.Second}, true,
			[]string{"expires_at is 1001: not after the message is due (1060)"}},
	}
	before := stats(t, tr)
	tx := begin(t, tr)
	for _, c := range bad {
		p, err := tr.PublishWith("new", event(2), c.opts...)
		if p != (harel.Published{}) {
			t.Errorf("%s: a refused publish_with returned %+v", c.what, p)
		}
		wantError(t, "publish_with: "+c.what, err, harel.ErrArgument, c.parts...)
		wantError(t, "publish: "+c.what, tr.Publish("new", event(2), c.opts...), harel.ErrArgument, c.parts...)
		if !c.byNow {
			wantError(t, "a transaction's publish: "+c.what, tx.Publish("new", event(2), c.opts...), harel.ErrArgument,
				c.parts...)
		} else {
			other := begin(t, tr)
			err := other.Publish("new", event(2), c.opts...)
			if err == nil {
				var published []harel.Published
				published, err = other.Commit(context.Background())
				if published != nil {
					t.Errorf("%s: a refused commit returned %+v", c.what, published)
				}
			} else if rollback := other.Rollback(); rollback != nil {
				t.Fatal(rollback)
			}
			wantError(t, "a transaction's publish or commit: "+c.what, err, harel.ErrArgument, c.parts...)
		}
		if c.msg == nil {
			continue
		}
		msg := *c.msg
		msg.GroupID, msg.Event = "new", event(3)
		good := harel.Message{GroupID: "new", Event: event(2), TTL: time.Hour}
		batch, err := tr.PublishManyWith([]harel.Message{good, msg})
		if batch != nil {
			t.Errorf("%s: a refused publish_many_with returned %+v", c.what, batch)
		}
		wantError(t, "publish_many_with: "+c.what, err, harel.ErrArgument, append([]string{"messages[1]."}, c.parts...)...)
		wantError(t, "publish_many: "+c.what, tr.PublishMany([]harel.Message{msg, good}), harel.ErrArgument,
			append([]string{"messages[0]."}, c.parts...)...)
	}
	// the transaction goes on: only its good publish
	txPublish(t, tx, "new", 4, harel.WithTTL(time.Hour))
	if published := commit(t, tx); len(published) != 1 {
		t.Fatalf("the transaction's publishes: %+v", published)
	}
	// nothing else changed: the kept message and the transaction's, no key held
	after := stats(t, tr)
	if after.Messages != before.Messages+1 || after.Groups != before.Groups+1 || after.Dead != 0 || after.Expired != 0 {
		t.Fatalf("stats: %+v, before %+v", after, before)
	}
	stored(t, "the debounce key was not held", publishWith(t, tr, "h", 5, harel.WithUnique(debounced)), 2)
}

// A real clock, for the option's path without WithClock: a message with a ttl of 0.2 s,
// looked at after a second (a claim expires it), robust under a loaded machine.
func TestExpiryByTheSystemClock(t *testing.T) {
	tr := open(t, ":memory:")
	if err := tr.Publish("g", event(1), harel.WithTTL(200*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	claimNone(t, tr, "the message expired")
	if s := stats(t, tr); s.Messages != 0 || s.Dead != 1 || s.Expired != 1 {
		t.Fatalf("stats: %+v", s)
	}
	if d := deadLetters(t, tr); len(d) != 1 || d[0].Reason != "expired" {
		t.Fatalf("dead letters: %+v", d)
	}
}

// A message with a time to live that no worker claims in time expires: a claim moves it
// to the dead letters with the reason "expired", and its group goes on.
func ExampleWithTTL() {
	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { // a clock the example moves, instead of waiting
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	t, err := harel.Open(":memory:", harel.WithClock(clock))
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close()

	if err := t.Publish("prices", []byte(`{"quote":1}`), harel.WithTTL(30*time.Second)); err != nil {
		log.Fatal(err)
	}
	if err := t.Publish("prices", []byte(`{"quote":2}`)); err != nil {
		log.Fatal(err)
	}
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	lease, _ := t.Claim("worker-1", 30*time.Second)
	fmt.Println(string(lease.Event))
	page, _ := t.DeadLetters("", "", 10)
	fmt.Println(string(page.Letters[0].Event), page.Letters[0].Reason)
	s, _ := t.Stats()
	fmt.Printf("%d dead, %d expired\n", s.Dead, s.Expired)
	// Output:
	// {"quote":2}
	// {"quote":1} expired
	// 1 dead, 1 expired
}
