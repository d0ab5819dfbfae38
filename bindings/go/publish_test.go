package harel_test

// Mapping tests of the producer options (issue 24): PublishWith and PublishManyWith with
// WithKey, WithDelay and WithNotBefore (and Publish and PublishMany given them),
// WithKeyRetention, Published, the delayed state in Stats, Groups and Peek; their bad
// input, the binding's and the library's. Each call once with its outputs field by field;
// the semantics are the Rust contract's (tests/common/contract.rs).

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

// tenYears is the longest delay, and the farthest due time from now, the library takes.
const tenYears = 315_360_000 * time.Second

func publishWith(t *testing.T, tr *harel.Transport, group string, n int, opts ...harel.PublishOption) harel.Published {
	t.Helper()
	p, err := tr.PublishWith(group, event(n), opts...)
	if err != nil {
		t.Fatalf("publish_with %q %d: %v", group, n, err)
	}
	return p
}

func stats(t *testing.T, tr *harel.Transport) *harel.Stats {
	t.Helper()
	s, err := tr.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// claimEvent expects a lease of event n.
func claimEvent(t *testing.T, tr *harel.Transport, n int, opts ...harel.ClaimOption) *harel.Lease {
	t.Helper()
	lease := claim(t, tr, "w", opts...)
	if string(lease.Event) != string(event(n)) {
		t.Fatalf("claimed %q %s, want event %d", lease.GroupID, lease.Event, n)
	}
	return lease
}

// A key stores its message once: a second publish with it, in any group, before or after
// the ack, is a duplicate reporting the first seq; Publish takes the options too.
func TestPublishWithKey(t *testing.T) {
	tr := memory(t, newClock())
	first := publishWith(t, tr, "g", 1, harel.WithKey("k1"), harel.WithPriority(2), harel.WithRoutingKey("rk"))
	if first.Duplicate || first.Seq <= 0 {
		t.Fatalf("first: %+v", first)
	}
	plain := publishWith(t, tr, "g", 2) // no option: a plain publish that reports its seq
	if plain.Duplicate || plain.Seq <= first.Seq {
		t.Fatalf("plain: %+v after %+v", plain, first)
	}
	for _, group := range []string{"g", "other"} { // keys are the queue's, not a group's
		if dup := publishWith(t, tr, group, 9, harel.WithKey("k1")); dup != (harel.Published{Seq: first.Seq, Duplicate: true}) {
			t.Fatalf("the key again into %q: %+v, want a duplicate of seq %d", group, dup, first.Seq)
		}
	}
	if s := stats(t, tr); s.Messages != 2 || s.Groups != 1 {
		t.Fatalf("duplicates stored something: %+v", s)
	}
	// the first publish's priority and routing key reached the library with its key
	lease := claimEvent(t, tr, 1, harel.WithMinPriority(2), harel.WithRoutingKeys("rk"))
	if lease.Seq != first.Seq {
		t.Fatalf("claimed seq %d, want %d", lease.Seq, first.Seq)
	}
	ack(t, tr, lease)
	if dup := publishWith(t, tr, "g", 1, harel.WithKey("k1")); dup != (harel.Published{Seq: first.Seq, Duplicate: true}) {
		t.Fatalf("the key after the ack: %+v", dup)
	}
	if err := tr.Publish("g", event(1), harel.WithKey("k1")); err != nil { // Publish: the same, no outcome
		t.Fatal(err)
	}
	if err := tr.Publish("g", event(3), harel.WithKey("k3")); err != nil {
		t.Fatal(err)
	}
	if err := tr.Publish("g", event(3), harel.WithKey("k3")); err != nil {
		t.Fatal(err)
	}
	ack(t, tr, claimEvent(t, tr, 2))
	ack(t, tr, claimEvent(t, tr, 3))
	claimNone(t, tr, "the duplicates stored nothing")
	m, err := tr.Metrics()
	if err != nil || m.Published != 3 {
		t.Fatalf("metrics: %d published (the stored ones), want 3; %v", m.Published, err)
	}
	boundary := publishWith(t, tr, "g", 4, harel.WithKey(strings.Repeat("é", 128))) // 256 bytes
	if boundary.Duplicate {
		t.Fatalf("a 256-byte key: %+v", boundary)
	}
}

// Keys are forgotten after the retention: a day by default, WithKeyRetention's otherwise.
func TestWithKeyRetention(t *testing.T) {
	for _, c := range []struct {
		name      string
		opts      []harel.Option
		retention time.Duration
	}{
		{"default", nil, 24 * time.Hour},
		{"a minute", []harel.Option{harel.WithKeyRetention(time.Minute)}, time.Minute},
		{"ten years", []harel.Option{harel.WithKeyRetention(tenYears)}, tenYears},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := newClock()
			tr := open(t, ":memory:", append(c.opts, harel.WithClock(clock.Now))...)
			first := publishWith(t, tr, "g", 1, harel.WithKey("k"))
			clock.Advance(c.retention - time.Second)
			if dup := publishWith(t, tr, "g", 1, harel.WithKey("k")); !dup.Duplicate || dup.Seq != first.Seq {
				t.Fatalf("a second before the retention's end: %+v, want a duplicate of %d", dup, first.Seq)
			}
			clock.Advance(2 * time.Second)
			if again := publishWith(t, tr, "g", 1, harel.WithKey("k")); again.Duplicate || again.Seq <= first.Seq {
				t.Fatalf("a second after the retention's end: %+v, want a new message", again)
			}
		})
	}
	for _, d := range []time.Duration{0, -time.Second, tenYears + time.Second, math.MaxInt64} {
		_, err := harel.Open(":memory:", harel.WithKeyRetention(d))
		wantError(t, "WithKeyRetention("+d.String()+")", err, harel.ErrArgument, "WithKeyRetention: ", "key_retention")
	}
}

// A delayed message is not delivered before its due time and keeps its place: the
// group's later messages wait behind it, other groups go on; the group is delayed in
// Stats, Groups and Peek until then.
func TestDelayedDelivery(t *testing.T) {
	clock := newClock()
	tr := memory(t, clock)
	delayed := publishWith(t, tr, "d", 1, harel.WithDelay(10*time.Second), harel.WithPriority(1))
	publish(t, tr, "d", event(2)) // waits behind the delayed head
	publish(t, tr, "r", event(3))
	ack(t, tr, claimEvent(t, tr, 3))
	claimNone(t, tr, "d's head is delayed, its second waits behind it")

	s := stats(t, tr)
	if s.Messages != 2 || s.Groups != 1 || s.Delayed != 1 || s.Ready != 0 || s.Leased != 0 || s.Parked != 0 || s.OldestReadySeq != nil {
		t.Fatalf("stats: %+v", s)
	}
	wantTime(t, "next due", s.NextDueAt, at(10*time.Second))
	wantTime(t, "next release", s.NextReleaseAt, at(10*time.Second))
	if want := (harel.PriorityStats{Priority: 1, Groups: 1}); len(s.ByPriority) != 1 || s.ByPriority[0] != want {
		t.Fatalf("by priority %+v, want %+v (a delayed group in none of ready, leased, parked)", s.ByPriority, want)
	}
	for state, want := range map[harel.GroupState]int{harel.GroupAny: 1, harel.GroupDelayed: 1, harel.GroupReady: 0,
		harel.GroupLeased: 0, harel.GroupParked: 0} {
		page, err := tr.Groups(state, "", 10)
		if err != nil || len(page.Groups) != want {
			t.Fatalf("groups %v: %+v, %v; want %d", state, page, err, want)
		}
		if want == 0 {
			continue
		}
		g := page.Groups[0]
		if g.GroupID != "d" || g.State != harel.GroupDelayed || g.Depth != 2 || g.HeadSeq != delayed.Seq || g.Holder != "" ||
			g.Priority != 1 || g.HeadAttempts != 0 {
			t.Errorf("groups %v: %+v", state, g)
		}
		wantTime(t, "the delayed group's due time", g.LockExpiry, at(10*time.Second))
	}
	if got := harel.GroupDelayed.String(); got != "delayed" {
		t.Errorf("GroupDelayed.String() = %q", got)
	}
	page, err := tr.Peek("d", "", 10)
	if err != nil || len(page.Messages) != 2 {
		t.Fatalf("peek: %+v, %v", page, err)
	}
	if head := page.Messages[0]; head.Seq != delayed.Seq || head.LockedBy != "__delayed__" || head.Attempts != 0 {
		t.Errorf("the delayed head: %+v", head)
	} else {
		wantTime(t, "the head's due time", head.LockExpiry, at(10*time.Second))
	}
	if second := page.Messages[1]; second.LockedBy != "" || second.LockExpiry != nil {
		t.Errorf("the second: %+v", second)
	}

	clock.Advance(10*time.Second - time.Millisecond)
	claimNone(t, tr, "a millisecond before the due time")
	clock.Advance(2 * time.Millisecond)
	head := claimEvent(t, tr, 1)
	if head.Seq != delayed.Seq || head.Attempts != 1 {
		t.Fatalf("the due head: %+v", head)
	}
	claimNone(t, tr, "the second waits for the head's ack")
	ack(t, tr, head)
	ack(t, tr, claimEvent(t, tr, 2))
	if s := stats(t, tr); s.Delayed != 0 || s.NextDueAt != nil || s.NextReleaseAt != nil {
		t.Fatalf("stats after: %+v", s)
	}
}

// WithNotBefore, alone and with WithDelay (the later wins); an instant past, the zero
// Time, a zero delay and the epoch deliver at once; Release delivers a delayed head now.
func TestWithNotBefore(t *testing.T) {
	clock := newClock()
	tr := memory(t, clock)
	now := clock.Now()
	for _, c := range []struct {
		group string
		opts  []harel.PublishOption
		due   time.Duration
	}{
		{"not-before", []harel.PublishOption{harel.WithNotBefore(now.Add(time.Minute))}, time.Minute},
		{"delay-later", []harel.PublishOption{harel.WithNotBefore(now.Add(time.Minute)), harel.WithDelay(2 * time.Minute)}, 2 * time.Minute},
		{"not-before-later", []harel.PublishOption{harel.WithDelay(time.Minute), harel.WithNotBefore(now.Add(3 * time.Minute))}, 3 * time.Minute},
		{"ten-years", []harel.PublishOption{harel.WithDelay(tenYears)}, tenYears},
		{"ten-years-at", []harel.PublishOption{harel.WithNotBefore(now.Add(tenYears))}, tenYears},
	} {
		publishWith(t, tr, c.group, 0, c.opts...)
		groups, err := tr.Groups(harel.GroupAny, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, g := range groups.Groups {
			if g.GroupID == c.group {
				found = true
				if g.State != harel.GroupDelayed {
					t.Errorf("%s: %v", c.group, g.State)
				}
				wantTime(t, c.group+"'s due time", g.LockExpiry, now.Add(c.due))
			}
		}
		if !found {
			t.Errorf("%s not listed", c.group)
		}
	}
	if s := stats(t, tr); s.Delayed != 5 {
		t.Fatalf("stats: %+v", s)
	}
	wantTime(t, "next due", stats(t, tr).NextDueAt, now.Add(time.Minute))
	for n, opt := range []harel.PublishOption{harel.WithNotBefore(now.Add(-time.Second)), harel.WithNotBefore(time.Time{}),
		harel.WithDelay(0), harel.WithNotBefore(time.Unix(0, 0))} {
		p := publishWith(t, tr, "now", n+1, opt)
		lease := claimEvent(t, tr, n+1)
		if lease.Seq != p.Seq {
			t.Fatalf("option %d: claimed %d, want %d", n, lease.Seq, p.Seq)
		}
		ack(t, tr, lease)
	}
	if released, err := tr.Release("not-before"); err != nil || !released {
		t.Fatalf("release of a delayed group: %v, %v", released, err)
	}
	if lease := claim(t, tr, "w"); lease.GroupID != "not-before" {
		t.Fatalf("claimed %q after the release, want not-before", lease.GroupID)
	}
}

// A batch with a key, a delay or an instant per message, and each message's outcome: a key
// met earlier in the batch or before it is a duplicate; PublishMany takes the fields too.
func TestPublishManyWith(t *testing.T) {
	clock := newClock()
	tr := memory(t, clock)
	for _, empty := range [][]harel.Message{nil, {}} {
		if p, err := tr.PublishManyWith(empty); err != nil || p == nil || len(p) != 0 {
			t.Fatalf("an empty batch: %#v, %v", p, err)
		}
	}
	got, err := tr.PublishManyWith([]harel.Message{
		{GroupID: "a", Event: event(1), Key: "k1"},
		{GroupID: "a", Event: event(2), Key: "k2", Delay: 5 * time.Second},
		{GroupID: "b", Event: event(3), Key: "k1"}, // a duplicate of messages[0]
		{GroupID: "c", Event: event(4), Priority: 3, RoutingKey: "rk", NotBefore: at(time.Minute)},
		{GroupID: "d", Event: event(5)},
	})
	if err != nil || len(got) != 5 {
		t.Fatalf("batch: %+v, %v", got, err)
	}
	for i, p := range got {
		if p.Duplicate != (i == 2) || p.Seq <= 0 {
			t.Errorf("published[%d] %+v", i, p)
		}
	}
	if got[1].Seq <= got[0].Seq || got[2].Seq != got[0].Seq || got[3].Seq <= got[1].Seq || got[4].Seq <= got[3].Seq {
		t.Fatalf("seqs: %+v", got)
	}
	mixed, err := tr.PublishManyWith([]harel.Message{
		{GroupID: "x", Event: event(6), Key: "k2"}, // seen before the batch
		{GroupID: "x", Event: event(7), Key: "k3"},
		{GroupID: "x", Event: event(8), Key: "k3"},
	})
	want := []harel.Published{{Seq: got[1].Seq, Duplicate: true}, {Seq: got[4].Seq + 1}, {Seq: got[4].Seq + 1, Duplicate: true}}
	if err != nil || len(mixed) != 3 || mixed[0] != want[0] || mixed[1] != want[1] || mixed[2] != want[2] {
		t.Fatalf("mixed: %+v, %v; want %+v", mixed, err, want)
	}
	if s := stats(t, tr); s.Messages != 5 || s.Groups != 4 || s.Delayed != 1 {
		t.Fatalf("stats: %+v", s)
	}
	// PublishMany with the fields: the same call, without the outcomes
	if err := tr.PublishMany([]harel.Message{{GroupID: "y", Event: event(9), Key: "k3"}}); err != nil {
		t.Fatal(err)
	}
	if err := tr.PublishMany([]harel.Message{{GroupID: "z", Event: event(10)}, {GroupID: "z", Event: event(11), Delay: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	if s := stats(t, tr); s.Messages != 7 || s.Groups != 5 {
		t.Fatalf("stats after PublishMany: %+v", s)
	}
	// a's head, then a's second is delayed until 5 s; c until a minute, with its priority and key
	ack(t, tr, claimEvent(t, tr, 1))
	for _, n := range []int{5, 7, 10} { // d, x, z (round robin: served longest ago first)
		ack(t, tr, claimEvent(t, tr, n))
	}
	claimNone(t, tr, "a's second, c's and z's second are delayed")
	delayed, err := tr.Groups(harel.GroupDelayed, "", 10)
	if err != nil || len(delayed.Groups) != 3 || delayed.Groups[0].GroupID != "a" || delayed.Groups[1].GroupID != "c" ||
		delayed.Groups[2].GroupID != "z" {
		t.Fatalf("delayed groups: %+v, %v", delayed, err)
	}
	wantTime(t, "a's due time", delayed.Groups[0].LockExpiry, at(5*time.Second))
	wantTime(t, "c's due time", delayed.Groups[1].LockExpiry, at(time.Minute))
	wantTime(t, "z's due time", delayed.Groups[2].LockExpiry, at(time.Hour))
	clock.Advance(5*time.Second + time.Millisecond)
	ack(t, tr, claimEvent(t, tr, 2))
	clock.Advance(time.Minute)
	ack(t, tr, claimEvent(t, tr, 4, harel.WithMinPriority(3), harel.WithRoutingKeys("rk")))
	claimNone(t, tr, "z's second is due in an hour")
}

// A waiting claim wakes at the due time of a delayed message (the system clock).
func TestClaimWaitWakesAtTheDueTime(t *testing.T) {
	tr := open(t, ":memory:")
	before := time.Now()
	publishWith(t, tr, "g", 1, harel.WithDelay(200*time.Millisecond))
	claimNone(t, tr, "delayed by 200 ms")
	lease, err := tr.ClaimWait(context.Background(), "w", visibility, 10*time.Second)
	waited := time.Since(before)
	if err != nil || lease == nil || string(lease.Event) != string(event(1)) {
		t.Fatalf("claim_wait: %+v, %v", lease, err)
	}
	if waited < 200*time.Millisecond || waited > 5*time.Second {
		t.Fatalf("delivered %v after the publish, want at its due time, 200 ms", waited)
	}
	t.Logf("a message delayed by 200 ms was claimed %v after its publish", waited)
}

// Every bad value of every new argument: the binding's (a NUL byte, an instant before the
// epoch) and the library's, each ErrArgument naming it; none of it changes the queue or
// remembers a key.
func TestBadDeliveryInput(t *testing.T) {
	clock := newClock()
	tr := memory(t, clock)
	kept := publishWith(t, tr, "g", 1, harel.WithKey("kept"), harel.WithDelay(time.Minute))
	long := strings.Repeat("k", 257)
	nul := "NUL byte"
	farAhead := clock.Now().Add(tenYears + 24*time.Hour)
	beforeEpoch := time.Unix(-1, 0)
	publishWithErr := func(opts ...harel.PublishOption) error {
		p, err := tr.PublishWith("new", event(2), opts...)
		if p != (harel.Published{}) {
			t.Errorf("a refused publish_with returned %+v", p)
		}
		return err
	}
	batchErr := func(bad harel.Message) error {
		p, err := tr.PublishManyWith([]harel.Message{{GroupID: "new", Event: event(2), Key: "fresh"}, bad})
		if p != nil {
			t.Errorf("a refused publish_many_with returned %+v", p)
		}
		return err
	}
	m := func(key string, delay time.Duration, notBefore time.Time) harel.Message {
		return harel.Message{GroupID: "new", Event: event(3), Key: key, Delay: delay, NotBefore: notBefore}
	}
	for _, c := range []struct {
		what  string
		err   error
		parts []string
	}{
		// the binding's
		{"publish_with: NUL in key", publishWithErr(harel.WithKey("k\x00")), []string{"key", nul}},
		{"publish_with: not_before before the epoch", publishWithErr(harel.WithNotBefore(beforeEpoch)),
			[]string{"not_before", "before the Unix epoch"}},
		{"publish_with: not_before a nanosecond before the epoch", publishWithErr(harel.WithNotBefore(time.Unix(0, -1))),
			[]string{"not_before"}},
		{"publish: NUL in key", tr.Publish("new", event(2), harel.WithKey("\x00")), []string{"key", nul}},
		{"batch: NUL in key", batchErr(m("k\x00", 0, time.Time{})), []string{"messages[1].key", nul}},
		{"batch: not_before before the epoch", batchErr(m("", 0, beforeEpoch)), []string{"messages[1].not_before", "epoch"}},
		// the library's
		{"publish_with: empty key", publishWithErr(harel.WithKey("")), []string{"key"}},
		{"publish_with: 257-byte key", publishWithErr(harel.WithKey(long)), []string{"key is 257 bytes"}},
		{"publish_with: key not UTF-8", publishWithErr(harel.WithKey("k\xff")), []string{"key"}},
		{"publish_with: negative delay", publishWithErr(harel.WithDelay(-time.Nanosecond)), []string{"delay"}},
		{"publish_with: delay of an hour back", publishWithErr(harel.WithDelay(-time.Hour)), []string{"delay"}},
		{"publish_with: delay over ten years", publishWithErr(harel.WithDelay(tenYears + time.Second)), []string{"delay"}},
		{"publish_with: the longest Duration", publishWithErr(harel.WithDelay(math.MaxInt64)), []string{"delay"}},
		{"publish_with: not_before over ten years ahead", publishWithErr(harel.WithNotBefore(farAhead)), []string{"not_before"}},
		{"publish_with: a key and a bad delay", publishWithErr(harel.WithKey("fresh"), harel.WithDelay(-time.Second)), []string{"delay"}},
		{"publish_with: empty group_id", func() error { _, err := tr.PublishWith("", event(2), harel.WithKey("fresh")); return err }(),
			[]string{"group_id"}},
		{"publish_with: event not JSON", func() error { _, err := tr.PublishWith("new", []byte("{"), harel.WithKey("fresh")); return err }(),
			[]string{"event_json"}},
		{"publish_with: priority 5", publishWithErr(harel.WithPriority(5), harel.WithKey("fresh")), []string{"priority"}},
		{"publish: empty key", tr.Publish("new", event(2), harel.WithKey("")), []string{"key"}},
		{"publish: negative delay", tr.Publish("new", event(2), harel.WithDelay(-time.Second)), []string{"delay"}},
		{"publish: not_before far ahead", tr.Publish("new", event(2), harel.WithNotBefore(farAhead)), []string{"not_before"}},
		{"batch: 257-byte key", batchErr(m(long, 0, time.Time{})), []string{"messages[1].key is 257 bytes"}},
		{"batch: key not UTF-8", batchErr(m("\xff", 0, time.Time{})), []string{"messages[1].key"}},
		{"batch: negative delay", batchErr(m("", -time.Millisecond, time.Time{})), []string{"messages[1].delay"}},
		{"batch: delay over ten years", batchErr(m("", tenYears+time.Second, time.Time{})), []string{"messages[1].delay"}},
		{"batch: not_before far ahead", batchErr(m("", 0, farAhead)), []string{"messages[1].not_before"}},
		{"batch: event not JSON", batchErr(harel.Message{GroupID: "new", Event: []byte("["), Key: "k"}), []string{"messages[1].event_json"}},
		{"publish_many: negative delay", tr.PublishMany([]harel.Message{m("", -time.Second, time.Time{})}), []string{"messages[0].delay"}},
		{"publish_many: 257-byte key", tr.PublishMany([]harel.Message{{GroupID: "new", Event: event(2)}, m(long, 0, time.Time{})}),
			[]string{"messages[1].key"}},
	} {
		wantError(t, c.what, c.err, harel.ErrArgument, c.parts...)
	}
	// nothing changed: g's delayed message alone, no group "new", and the keys of the
	// refused calls were not remembered
	if s := stats(t, tr); s.Messages != 1 || s.Groups != 1 || s.Delayed != 1 {
		t.Fatalf("stats: %+v", s)
	}
	if p := publishWith(t, tr, "new", 2, harel.WithKey("fresh")); p.Duplicate || p.Seq <= kept.Seq {
		t.Fatalf("the key of the refused calls: %+v", p)
	}
	if p := publishWith(t, tr, "new", 2, harel.WithKey("kept")); p != (harel.Published{Seq: kept.Seq, Duplicate: true}) {
		t.Fatalf("the key stored before: %+v", p)
	}
}

// A queue whose schema lacks the keys table (made before them), opened with
// WithCreateSchema(false): a keyed publish is ErrDatabase, everything else works; opened
// with the schema created, the table is added.
func TestKeysTableMissing(t *testing.T) {
	path := tempDB(t)
	if err := open(t, path).Close(); err != nil { // creates the schema
		t.Fatal(err)
	}
	python(t, `
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=30)
db.execute("DROP TABLE harel_transport_keys")
db.commit()
db.close()
`, path)
	old := open(t, path, harel.WithCreateSchema(false))
	_, err := old.PublishWith("g", event(1), harel.WithKey("k"))
	wantError(t, "a keyed publish without the keys table", err, harel.ErrDatabase, "harel_transport_keys")
	wantError(t, "a keyed batch without the keys table",
		old.PublishMany([]harel.Message{{GroupID: "g", Event: event(1), Key: "k"}}), harel.ErrDatabase)
	if p, err := old.PublishWith("g", event(1), harel.WithDelay(time.Millisecond)); err != nil || p.Duplicate {
		t.Fatalf("a delayed publish without the keys table: %+v, %v", p, err)
	}
	publish(t, old, "g", event(2))
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	upgraded := open(t, path)
	if p, err := upgraded.PublishWith("g", event(3), harel.WithKey("k")); err != nil || p.Duplicate {
		t.Fatalf("a keyed publish once the schema was created: %+v, %v", p, err)
	}
	if s := stats(t, upgraded); s.Messages != 3 {
		t.Fatalf("stats: %+v", s)
	}
}
