package harel_test

// Mapping tests of the calls for when a message keeps failing (issue #14): WithMaxAttempts
// and Lease.Attempts, DeadLetter, Redrive, PurgeDead, PurgeGroup, Purge, Release, Stats,
// Groups, Peek and DeadLetters. Each call once with its outputs field by field; what the
// binding refuses itself, and what the library refuses, with its message. The semantics
// are the Rust contract's (tests/common/contract.rs).

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

// at is the test clock's start plus d.
func at(d time.Duration) time.Time { return time.Unix(1000, 0).Add(d) }

func wantTime(t *testing.T, what string, got *time.Time, want time.Time) {
	t.Helper()
	if got == nil || !got.Equal(want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

func wantDuration(t *testing.T, what string, got *time.Duration, want time.Duration) {
	t.Helper()
	if got == nil || *got != want {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

func TestWithMaxAttemptsAndLeaseAttempts(t *testing.T) {
	clock := newClock()
	tr := open(t, ":memory:", harel.WithClock(clock.Now), harel.WithMaxAttempts(2))
	publish(t, tr, "g", event(1))
	publish(t, tr, "g", event(2))
	first := claim(t, tr, "w1")
	if first.Attempts != 1 {
		t.Fatalf("first claim: attempts %d", first.Attempts)
	}
	if err := tr.Nack(first, 0); err != nil {
		t.Fatal(err)
	}
	second := claim(t, tr, "w2")
	if second.Seq != first.Seq || second.Attempts != 2 {
		t.Fatalf("second claim: seq %d attempts %d", second.Seq, second.Attempts)
	}
	clock.Advance(visibility + time.Second) // w2 dies holding it
	next := claim(t, tr, "w3")
	if string(next.Event) != string(event(2)) || next.Attempts != 1 {
		t.Fatalf("after max_attempts: got %s (attempts %d), want the group's next message", next.Event, next.Attempts)
	}
	page, err := tr.DeadLetters("g", "", 10)
	if err != nil || len(page.Letters) != 1 {
		t.Fatalf("dead letters: %+v, %v", page, err)
	}
	if d := page.Letters[0]; d.Seq != first.Seq || d.Attempts != 2 || d.LastWorker != "w2" || !strings.Contains(d.Reason, "max_attempts is 2") {
		t.Fatalf("dead letter %+v", d)
	}
	// 0: no limit
	unlimited := open(t, ":memory:", harel.WithMaxAttempts(0))
	publish(t, unlimited, "g", event(1))
	for n := 1; n <= 4; n++ {
		l := claim(t, unlimited, "w")
		if l.Attempts != n {
			t.Fatalf("claim %d: attempts %d", n, l.Attempts)
		}
		if err := unlimited.Nack(l, 0); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDeadLetterRedriveAndPurgeDead(t *testing.T) {
	clock := newClock()
	tr := memory(t, clock)
	publish(t, tr, "a", event(0))
	publish(t, tr, "a", event(1))
	publish(t, tr, "b", event(2), harel.WithPriority(2), harel.WithRoutingKey("k"))
	clock.Advance(time.Second)
	lease := claim(t, tr, "w")
	if err := tr.DeadLetter(lease, "cannot parse"); err != nil {
		t.Fatal(err)
	}
	wantError(t, "dead_letter twice", tr.DeadLetter(lease, "again"), harel.ErrLeaseLost)
	for i := 0; i < 2; i++ { // b, then a's second
		if err := tr.DeadLetter(claim(t, tr, "w"), "poison"); err != nil {
			t.Fatal(err)
		}
	}
	claimNone(t, tr, "every message is dead")

	// DeadLetters: a page of 2, its Next, the rest; every field.
	first, err := tr.DeadLetters("", "", 2)
	if err != nil || len(first.Letters) != 2 || first.Next == "" {
		t.Fatalf("first page: %+v, %v", first, err)
	}
	d := first.Letters[0]
	if d.Seq != lease.Seq || d.GroupID != "a" || string(d.Event) != string(event(0)) || d.Attempts != 1 ||
		d.LastWorker != "w" || d.Reason != "cannot parse" || !d.DeadAt.Equal(at(time.Second)) {
		t.Fatalf("dead letter %+v", d)
	}
	rest, err := tr.DeadLetters("", first.Next, 2)
	if err != nil || len(rest.Letters) != 1 || rest.Next != "" || rest.Letters[0].GroupID != "b" {
		t.Fatalf("rest: %+v, %v", rest, err)
	}
	bSeq := rest.Letters[0].Seq
	if only, err := tr.DeadLetters("b", "", 10); err != nil || len(only.Letters) != 1 || only.Letters[0].Seq != bSeq {
		t.Fatalf("b's: %+v, %v", only, err)
	}
	if none, err := tr.DeadLetters("none", "", 10); err != nil || none.Letters == nil || len(none.Letters) != 0 || none.Next != "" {
		t.Fatalf("an unknown group's: %+v, %v", none, err)
	}

	// Redrive by seq (an unknown one passed over), by group, all.
	for _, c := range []struct {
		which harel.DeadLetters
		want  uint64
	}{
		{harel.DeadLettersBySeq(bSeq, 999999), 1},
		{harel.DeadLettersOfGroup("a"), 2},
		{harel.AllDeadLetters(), 0},
	} {
		if n, err := tr.Redrive(c.which); err != nil || n != c.want {
			t.Fatalf("redrive %+v: %d, %v; want %d", c.which, n, err, c.want)
		}
	}
	back := claim(t, tr, "w", harel.WithMinPriority(2), harel.WithRoutingKeys("k"))
	if string(back.Event) != string(event(2)) || back.Attempts != 1 {
		t.Fatalf("redriven b: %s, attempts %d", back.Event, back.Attempts)
	}
	if err := tr.DeadLetter(back, "again"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := tr.DeadLetter(claim(t, tr, "w"), "again"); err != nil {
			t.Fatal(err)
		}
	}

	// PurgeDead by seq, by group, all.
	a, err := tr.DeadLetters("a", "", 1)
	if err != nil || len(a.Letters) != 1 {
		t.Fatalf("a's: %+v, %v", a, err)
	}
	for _, c := range []struct {
		which harel.DeadLetters
		want  uint64
	}{
		{harel.DeadLettersBySeq(a.Letters[0].Seq), 1},
		{harel.DeadLettersOfGroup("b"), 1},
		{harel.AllDeadLetters(), 1},
	} {
		if n, err := tr.PurgeDead(c.which); err != nil || n != c.want {
			t.Fatalf("purge_dead %+v: %d, %v; want %d", c.which, n, err, c.want)
		}
	}
	if s, err := tr.Stats(); err != nil || s.Dead != 0 || s.Messages != 0 {
		t.Fatalf("stats after the purges: %+v, %v", s, err)
	}
}

func TestPurgeGroupPurgeAndRelease(t *testing.T) {
	tr := memory(t, newClock())
	for _, g := range []string{"a", "a", "b", "c", "d"} {
		publish(t, tr, g, event(0))
	}
	held := claim(t, tr, "w") // a's first
	if n, err := tr.PurgeGroup("a"); err != nil || n != 2 {
		t.Fatalf("purge_group a: %d, %v", n, err)
	}
	wantError(t, "ack of a purged message", tr.Ack(held), harel.ErrLeaseLost)
	if n, err := tr.PurgeGroup("none"); err != nil || n != 0 {
		t.Fatalf("purge_group of an unknown group: %d, %v", n, err)
	}
	stuck := claim(t, tr, "w1") // b
	if released, err := tr.Release("b"); err != nil || !released {
		t.Fatalf("release b: %v, %v", released, err)
	}
	if released, err := tr.Release("b"); err != nil || released {
		t.Fatalf("release b again: %v, %v", released, err)
	}
	wantError(t, "ack after release", tr.Ack(stuck), harel.ErrLeaseLost)
	if err := tr.DeadLetter(claim(t, tr, "w"), "kept"); err != nil { // c, or b again
		t.Fatal(err)
	}
	if n, err := tr.Purge(); err != nil || n != 2 {
		t.Fatalf("purge: %d, %v", n, err)
	}
	if n, err := tr.Purge(); err != nil || n != 0 {
		t.Fatalf("purge of nothing: %d, %v", n, err)
	}
	if s, err := tr.Stats(); err != nil || s.Messages != 0 || s.Groups != 0 || s.Dead != 1 {
		t.Fatalf("stats: %+v, %v", s, err)
	}
}

func TestStats(t *testing.T) {
	clock := newClock()
	tr := memory(t, clock)
	s, err := tr.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if !s.Now.Equal(at(0)) || s.Messages != 0 || s.Groups != 0 || s.Dead != 0 || s.OldestReadyAge != nil ||
		s.OldestReadySeq != nil || s.NextReleaseAt != nil || s.ByPriority == nil || len(s.ByPriority) != 0 {
		t.Fatalf("empty: %+v", s)
	}
	publish(t, tr, "leased", event(0))
	clock.Advance(time.Second)
	publish(t, tr, "parked", event(1), harel.WithPriority(2))
	publish(t, tr, "parked", event(2))
	publish(t, tr, "ready", event(3), harel.WithPriority(2))
	publish(t, tr, "dead", event(4), harel.WithPriority(4))
	if _, err := tr.Claim("w", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	parked, err := tr.Claim("w", 10*time.Second)
	if err != nil || parked == nil {
		t.Fatal(err)
	}
	if err := tr.Nack(parked, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	poison, err := tr.Claim("w", 10*time.Second, harel.WithMinPriority(4))
	if err != nil || poison == nil {
		t.Fatal(err)
	}
	if err := tr.DeadLetter(poison, "x"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(1500 * time.Millisecond)
	if s, err = tr.Stats(); err != nil {
		t.Fatal(err)
	}
	if !s.Now.Equal(at(2500*time.Millisecond)) || s.Messages != 4 || s.Groups != 3 || s.Ready != 1 || s.Leased != 1 || s.Parked != 1 || s.Dead != 1 {
		t.Fatalf("counts: %+v", s)
	}
	wantDuration(t, "oldest ready age", s.OldestReadyAge, 1500*time.Millisecond)
	if s.OldestReadySeq == nil || *s.OldestReadySeq != 4 {
		t.Fatalf("oldest ready seq: %v, want 4 (the ready group's message was the fourth published)", s.OldestReadySeq)
	}
	wantTime(t, "next release", s.NextReleaseAt, at(6*time.Second))
	want := []harel.PriorityStats{{Priority: 0, Groups: 1, Leased: 1}, {Priority: 2, Groups: 2, Ready: 1, Parked: 1}}
	if len(s.ByPriority) != 2 || s.ByPriority[0] != want[0] || s.ByPriority[1] != want[1] {
		t.Fatalf("by priority %+v, want %+v", s.ByPriority, want)
	}
}

func TestGroups(t *testing.T) {
	clock := newClock()
	tr := memory(t, clock)
	for _, g := range []string{"e", "d", "c", "b", "a"} {
		publish(t, tr, g, event(0), harel.WithPriority(1), harel.WithRoutingKey("key"))
	}
	publish(t, tr, "a", event(1))
	publish(t, tr, "été", event(2), harel.WithPriority(3))
	leased := claim(t, tr, "w1") // e
	parked := claim(t, tr, "w2") // d
	if err := tr.Nack(parked, time.Minute); err != nil {
		t.Fatal(err)
	}
	clock.Advance(4 * time.Second)
	var all []harel.GroupInfo
	cursor, pages := "", 0
	for {
		page, err := tr.Groups(harel.GroupAny, cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		all = append(all, page.Groups...)
		if cursor = page.Next; cursor == "" || pages > 5 {
			break
		}
	}
	var ids []string
	for _, g := range all {
		ids = append(ids, g.GroupID)
	}
	if got := strings.Join(ids, ","); got != "a,b,c,d,e,été" || pages != 3 {
		t.Fatalf("groups %s in %d pages", got, pages)
	}
	a, d, e, ete := all[0], all[3], all[4], all[5]
	if a.State != harel.GroupReady || a.Depth != 2 || a.HeadSeq <= 0 || a.Holder != "" || a.LockExpiry != nil ||
		a.Priority != 1 || a.RoutingKey != "key" || a.HeadAttempts != 0 {
		t.Errorf("a: %+v", a)
	}
	wantDuration(t, "a's head age", a.HeadAge, 4*time.Second)
	if d.State != harel.GroupParked || d.Holder != "" || d.HeadSeq != parked.Seq || d.HeadAttempts != 1 {
		t.Errorf("d: %+v", d)
	}
	wantTime(t, "d's park end", d.LockExpiry, at(time.Minute))
	if e.State != harel.GroupLeased || e.Holder != "w1" || e.HeadSeq != leased.Seq {
		t.Errorf("e: %+v", e)
	}
	wantTime(t, "e's lease end", e.LockExpiry, leased.LockExpiry)
	if ete.Priority != 3 || ete.RoutingKey != "" {
		t.Errorf("été: %+v", ete)
	}
	for state, want := range map[harel.GroupState]string{harel.GroupLeased: "e", harel.GroupParked: "d", harel.GroupReady: "a,b,c,été"} {
		page, err := tr.Groups(state, "", 10)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, g := range page.Groups {
			got = append(got, g.GroupID)
			if g.State != state {
				t.Errorf("%v: %s is %v", state, g.GroupID, g.State)
			}
		}
		if strings.Join(got, ",") != want {
			t.Errorf("%v: %v, want %s", state, got, want)
		}
	}
	for s, want := range map[harel.GroupState]string{harel.GroupAny: "any", harel.GroupReady: "ready",
		harel.GroupLeased: "leased", harel.GroupParked: "parked", harel.GroupDelayed: "delayed",
		harel.GroupHeld: "held", harel.GroupRetrying: "retrying", 7: "GroupState(7)"} {
		if s.String() != want {
			t.Errorf("%d.String() = %q", int32(s), s.String())
		}
	}
}

func TestPeek(t *testing.T) {
	clock := newClock()
	tr := memory(t, clock)
	const text = ` {"p": 0} ` // byte for byte
	publish(t, tr, "g", json.RawMessage(text))
	clock.Advance(time.Second)
	publish(t, tr, "g", event(1))
	clock.Advance(time.Second)
	publish(t, tr, "g", event(2))
	lease := claim(t, tr, "w")
	page, err := tr.Peek("g", "", 2)
	if err != nil || len(page.Messages) != 2 || page.Next == "" {
		t.Fatalf("peek: %+v, %v", page, err)
	}
	head, second := page.Messages[0], page.Messages[1]
	if head.Seq != lease.Seq || string(head.Event) != text || head.Attempts != 1 || head.LockedBy != "w" {
		t.Errorf("head %+v", head)
	}
	wantTime(t, "head's lock end", head.LockExpiry, lease.LockExpiry)
	wantTime(t, "head's publish time", head.PublishedAt, at(0))
	if string(second.Event) != string(event(1)) || second.Attempts != 0 || second.LockedBy != "" || second.LockExpiry != nil {
		t.Errorf("second %+v", second)
	}
	wantTime(t, "second's publish time", second.PublishedAt, at(time.Second))
	rest, err := tr.Peek("g", page.Next, 2)
	if err != nil || len(rest.Messages) != 1 || rest.Next != "" || string(rest.Messages[0].Event) != string(event(2)) {
		t.Fatalf("rest: %+v, %v", rest, err)
	}
	if err := tr.Nack(lease, time.Minute); err != nil {
		t.Fatal(err)
	}
	if page, err = tr.Peek("g", "", 1); err != nil || page.Messages[0].LockedBy != "__parked__" {
		t.Fatalf("parked: %+v, %v", page, err)
	}
	if none, err := tr.Peek("none", "", 10); err != nil || len(none.Messages) != 0 || none.Next != "" {
		t.Fatalf("an unknown group: %+v, %v", none, err)
	}
	claimNone(t, tr, "peek claimed nothing: g is parked")
}

// The new calls' bad input: what the binding refuses before C (a NUL byte, a negative
// limit, a nil lease), then what the library refuses, its message reaching the error; none
// of it changes the queue.
func TestBadInputOfTheNewCalls(t *testing.T) {
	tr := memory(t, newClock())
	publish(t, tr, "g", event(1))
	publish(t, tr, "g", event(2))
	publish(t, tr, "d", event(3))
	if err := tr.DeadLetter(claim(t, tr, "w"), "fixture"); err != nil { // g's first
		t.Fatal(err)
	}
	lease := claim(t, tr, "w") // d's
	groups, err := tr.Groups(harel.GroupAny, "", 1)
	if err != nil || groups.Next == "" {
		t.Fatalf("groups: %+v, %v", groups, err)
	}
	count := func(_ uint64, err error) error { return err }
	released := func(_ bool, err error) error { return err }
	groupsPage := func(p *harel.GroupPage, err error) error { return refusedPage(t, p, err) }
	messagePage := func(p *harel.MessagePage, err error) error { return refusedPage(t, p, err) }
	deadPage := func(p *harel.DeadLetterPage, err error) error { return refusedPage(t, p, err) }
	nul := "NUL byte"
	for _, c := range []struct {
		what  string
		err   error
		parts []string
	}{
		// the binding's
		{"dead_letter: nil lease", tr.DeadLetter(nil, "r"), []string{"lease is nil"}},
		{"dead_letter: NUL in reason", tr.DeadLetter(lease, "r\x00"), []string{"reason", nul}},
		{"redrive: NUL in group_id", count(tr.Redrive(harel.DeadLettersOfGroup("g\x00"))), []string{"group_id", nul}},
		{"purge_dead: NUL in group_id", count(tr.PurgeDead(harel.DeadLettersOfGroup("\x00"))), []string{"group_id", nul}},
		{"purge_group: NUL in group_id", count(tr.PurgeGroup("g\x00")), []string{"group_id", nul}},
		{"release: NUL in group_id", released(tr.Release("g\x00")), []string{"group_id", nul}},
		{"groups: NUL in cursor", groupsPage(tr.Groups(harel.GroupAny, "g1.\x00", 10)), []string{"cursor", nul}},
		{"groups: negative limit", groupsPage(tr.Groups(harel.GroupAny, "", -1)), []string{"limit is -1"}},
		{"peek: NUL in group_id", messagePage(tr.Peek("g\x00", "", 10)), []string{"group_id", nul}},
		{"peek: negative limit", messagePage(tr.Peek("g", "", -10)), []string{"limit"}},
		{"dead_letters: NUL in group_id", deadPage(tr.DeadLetters("g\x00", "", 10)), []string{"group_id", nul}},
		{"dead_letters: NUL in cursor", deadPage(tr.DeadLetters("", "\x00", 10)), []string{"cursor", nul}},
		// the library's
		{"dead_letter: empty reason", tr.DeadLetter(lease, ""), []string{"reason"}},
		{"dead_letter: reason not UTF-8", tr.DeadLetter(lease, "\xff"), []string{"reason"}},
		{"redrive: nothing selected", count(tr.Redrive(harel.DeadLetters{})), []string{"exactly one"}},
		{"redrive: no seqs", count(tr.Redrive(harel.DeadLettersBySeq())), []string{"seqs"}},
		{"purge_dead: an empty group id", count(tr.PurgeDead(harel.DeadLettersOfGroup(""))), []string{"group_id"}},
		{"purge_group: an empty group id", count(tr.PurgeGroup("")), []string{"group_id"}},
		{"release: an empty group id", released(tr.Release("")), []string{"group_id"}},
		{"groups: state 7", groupsPage(tr.Groups(7, "", 10)), []string{"state is 7"}},
		{"groups: state -2", groupsPage(tr.Groups(-2, "", 10)), []string{"state"}},
		{"groups: limit 0", groupsPage(tr.Groups(harel.GroupAny, "", 0)), []string{"limit is 0"}},
		{"groups: limit past MaxPage", groupsPage(tr.Groups(harel.GroupAny, "", harel.MaxPage+1)), []string{"limit"}},
		{"groups: a made-up cursor", groupsPage(tr.Groups(harel.GroupAny, "nope", 10)), []string{"cursor"}},
		{"peek: a groups cursor", messagePage(tr.Peek("g", groups.Next, 10)), []string{"cursor"}},
		{"peek: an empty group id", messagePage(tr.Peek("", "", 10)), []string{"group_id"}},
		{"dead_letters: limit past MaxPage", deadPage(tr.DeadLetters("", "", 1<<40)), []string{"limit"}},
		{"dead_letters: a groups cursor", deadPage(tr.DeadLetters("", groups.Next, 10)), []string{"cursor"}},
	} {
		wantError(t, c.what, c.err, harel.ErrArgument, c.parts...)
	}
	// none of it changed the queue: d's lease held, g's second waiting, one dead letter
	if s, err := tr.Stats(); err != nil || s.Messages != 2 || s.Leased != 1 || s.Ready != 1 || s.Dead != 1 {
		t.Fatalf("stats: %+v, %v", s, err)
	}
	ack(t, tr, lease)
	ack(t, tr, claim(t, tr, "w"))
	claimNone(t, tr, "nothing else")
}

// refusedPage is the error of a listing, which returned no page if it failed.
func refusedPage[P comparable](t *testing.T, page P, err error) error {
	t.Helper()
	var none P
	if err != nil && page != none {
		t.Errorf("a refused listing returned %+v", page)
	}
	return err
}
