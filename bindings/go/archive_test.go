package harel_test

// Mapping tests of the archive (issue 38): WithArchive and Archive. Every field of an
// archived message reaches Go (the test clock's times, headers, attempts, the worker, both
// unknown times as nil), pages followed by Next and a group's history in order, acks of
// every form archived, off by default and per Transport, the retention reaching the
// library, every refusal (the binding's and the library's) matching ErrArgument, a
// closed Transport, a schema without the table, a sharded queue's Shard, and
// rounds of it not growing memory. The semantics are the Rust contract's
// (tests/common/contract.rs).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

// archivePage expects a page of tr's archive.
func archivePage(t *testing.T, tr *harel.Transport, group, cursor string, limit int) *harel.ArchivePage {
	t.Helper()
	page, err := tr.Archive(group, cursor, limit)
	if err != nil {
		t.Fatalf("archive(%q, %q, %d): %v", group, cursor, limit, err)
	}
	if page == nil || page.Messages == nil {
		t.Fatalf("archive(%q, %q, %d): %+v, want a page with a non-nil slice", group, cursor, limit, page)
	}
	return page
}

// archiveAll follows Next from the first page of group's archive (every group's for ""),
// limit at a time: every item in order, and how many pages there were.
func archiveAll(t *testing.T, tr *harel.Transport, group string, limit int) ([]harel.Archived, int) {
	t.Helper()
	var all []harel.Archived
	pages := 0
	for cursor := ""; ; {
		page := archivePage(t, tr, group, cursor, limit)
		pages++
		if len(page.Messages) > limit {
			t.Fatalf("archive(%q, limit %d): a page of %d", group, limit, len(page.Messages))
		}
		all = append(all, page.Messages...)
		if page.Next == "" {
			return all, pages
		}
		cursor = page.Next
	}
}

func publishSeq(t *testing.T, tr *harel.Transport, group string, ev json.RawMessage,
	opts ...harel.PublishOption) int64 {
	t.Helper()
	p, err := tr.PublishWith(group, ev, opts...)
	if err != nil || p.Duplicate {
		t.Fatalf("publish %q: %+v, %v", group, p, err)
	}
	return p.Seq
}

// execSQL runs statements on tr in a transaction of their own.
func execSQL(t *testing.T, tr *harel.Transport, statements ...string) {
	t.Helper()
	_, err := tr.InTx(context.Background(), func(tx *harel.Tx) error {
		for _, s := range statements {
			if err := tx.Exec(s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%q: %v", statements, err)
	}
}

// Every field of an acked message reaches Go: published with headers, claimed, nacked,
// claimed again by a named worker and acked, by the test clock.
func TestArchiveEveryField(t *testing.T) {
	clock := newClock()
	tr := open(t, ":memory:", harel.WithClock(clock.Now), harel.WithArchive(time.Hour))
	const group, worker = "grüppe ✓", "wörker-2"
	ev := json.RawMessage(` {"kind": "paid", "note": "é ✓ 𝄞"} `) // byte for byte
	headers := []harel.Header{{Name: "traceparent", Value: "00-abc"}, {Name: "k", Value: "v=1 ✓"},
		{Name: "k", Value: ""}}
	seq := publishSeq(t, tr, group, ev, harel.WithHeaders(headers...))
	if page := archivePage(t, tr, "", "", 10); len(page.Messages) != 0 || page.Next != "" {
		t.Fatalf("nothing acked yet: %+v", page)
	}

	clock.Advance(1500 * time.Millisecond)
	first := claim(t, tr, "w1")
	if err := tr.Nack(first, 0); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2250 * time.Millisecond)
	second := claim(t, tr, worker)
	if second.Seq != seq || second.Attempts != 2 {
		t.Fatalf("second claim %+v, want seq %d, attempt 2", second, seq)
	}
	clock.Advance(3 * time.Second)
	ack(t, tr, second)

	want := harel.Archived{Seq: seq, GroupID: group, Event: ev, Headers: headers, Attempts: 2, WorkerID: worker,
		AckedAt: at(6750 * time.Millisecond), Shard: 0}
	for _, g := range []string{"", group} {
		page := archivePage(t, tr, g, "", 10)
		if len(page.Messages) != 1 || page.Next != "" {
			t.Fatalf("archive(%q): %+v, want one item and no next page", g, page)
		}
		got := page.Messages[0]
		wantTime(t, "PublishedAt", got.PublishedAt, at(0))
		wantTime(t, "ClaimedAt", got.ClaimedAt, at(3750*time.Millisecond))
		got.PublishedAt, got.ClaimedAt = nil, nil
		if !got.AckedAt.Equal(want.AckedAt) {
			t.Errorf("AckedAt %v, want %v", got.AckedAt, want.AckedAt)
		}
		got.AckedAt = want.AckedAt
		if !bytes.Equal(got.Event, ev) {
			t.Errorf("event %q, want %q", got.Event, ev)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("archive(%q): %+v, want %+v", g, got, want)
		}
	}
	if s, err := tr.Stats(); err != nil || s.Messages != 0 || s.Groups != 0 {
		t.Fatalf("the acked message is still queued: %+v, %v", s, err)
	}

	// No headers: nil. Times the writer did not record (a publish of harel's Python
	// transports, a claim made before the archive existed), made so by hand in the
	// messages table while the message is queued and leased: nil.
	bare := publishSeq(t, tr, "bare", event(2))
	execSQL(t, tr, "UPDATE harel_transport_messages SET enqueued_at = NULL")
	lease := claim(t, tr, "w")
	execSQL(t, tr, "UPDATE harel_transport_messages SET claimed_at = NULL")
	clock.Advance(time.Second)
	ack(t, tr, lease)
	page := archivePage(t, tr, "bare", "", 10)
	if len(page.Messages) != 1 {
		t.Fatalf("archive(bare): %+v", page)
	}
	got := page.Messages[0]
	if got.Seq != bare || got.Headers != nil || got.PublishedAt != nil || got.ClaimedAt != nil ||
		got.Attempts != 1 || got.WorkerID != "w" || !got.AckedAt.Equal(at(7750*time.Millisecond)) {
		t.Fatalf("archive(bare): %+v, want no headers, no publish or claim time", got)
	}
}

// Every form of ack archives; pages followed by Next list every group's in seq order, and
// a group's history in order.
func TestArchivePagesAndHistory(t *testing.T) {
	clock := newClock()
	tr := open(t, ":memory:", harel.WithClock(clock.Now), harel.WithArchive(time.Hour))
	ctx := context.Background()
	var seqs []int64
	history := map[string][]int64{}
	for i, g := range []string{"a", "b", "a", "b", "a", "c", "a", "b"} {
		seq := publishSeq(t, tr, g, event(i))
		seqs = append(seqs, seq)
		history[g] = append(history[g], seq)
	}
	// Ack, AckAndClaim, AckMany, AckAndClaimMany, until the queue is empty.
	next, err := tr.AckAndClaim(claim(t, tr, "w"), "w", visibility)
	if err != nil || next == nil {
		t.Fatalf("ack_and_claim: %v, %v", next, err)
	}
	if acked, err := tr.AckMany([]*harel.Lease{next}); err != nil || acked[0] != nil {
		t.Fatalf("ack_many: %v, %v", acked, err)
	}
	leases, err := tr.ClaimMany(ctx, "w", visibility, 3, 0)
	if err != nil || len(leases) != 3 {
		t.Fatalf("claim_many: %d, %v", len(leases), err)
	}
	for len(leases) > 0 {
		clock.Advance(time.Second)
		var acked []error
		leases, acked, err = tr.AckAndClaimMany(leases, "w", visibility, 3)
		if err != nil {
			t.Fatalf("ack_and_claim_many: %v", err)
		}
		for i, e := range acked {
			if e != nil {
				t.Fatalf("ack_and_claim_many: lease %d: %v", i, e)
			}
		}
	}
	for lease, _ := tr.Claim("w", visibility); lease != nil; lease, _ = tr.Claim("w", visibility) {
		ack(t, tr, lease)
	}
	claimNone(t, tr, "all acked")

	for _, limit := range []int{1, 3, len(seqs), harel.MaxPage} {
		all, pages := archiveAll(t, tr, "", limit)
		if want := (len(seqs) + limit - 1) / limit; pages != want {
			t.Errorf("limit %d: %d pages, want %d", limit, pages, want)
		}
		var got []int64
		for _, a := range all {
			got = append(got, a.Seq)
		}
		if !reflect.DeepEqual(got, seqs) {
			t.Fatalf("every group's, limit %d: seqs %v, want %v", limit, got, seqs)
		}
	}
	for g, want := range history {
		all, _ := archiveAll(t, tr, g, 2)
		var got []int64
		for _, a := range all {
			if a.GroupID != g || a.WorkerID != "w" || a.Attempts != 1 {
				t.Errorf("%s's history: %+v", g, a)
			}
			got = append(got, a.Seq)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s's history: %v, want %v", g, got, want)
		}
	}
	if none := archivePage(t, tr, "none", "", 10); len(none.Messages) != 0 || none.Next != "" {
		t.Fatalf("an unknown group: %+v", none)
	}
}

// Off by default, and per Transport: a Transport without WithArchive archives none of its
// own acks, and reads what one with it archived.
func TestArchiveOffByDefault(t *testing.T) {
	path := tempDB(t)
	off := open(t, path)
	publish(t, off, "g", event(1))
	ack(t, off, claim(t, off, "w"))
	if page := archivePage(t, off, "", "", 10); len(page.Messages) != 0 || page.Next != "" {
		t.Fatalf("archived without WithArchive: %+v", page)
	}

	on := open(t, path, harel.WithArchive(time.Hour))
	kept := publishSeq(t, on, "g", event(2))
	publish(t, on, "g", event(3))
	ack(t, on, claim(t, on, "w-on"))
	ack(t, off, claim(t, off, "w-off"))
	claimNone(t, off, "all acked")
	for name, tr := range map[string]*harel.Transport{"off": off, "on": on} {
		page := archivePage(t, tr, "", "", 10)
		if len(page.Messages) != 1 || page.Messages[0].Seq != kept || page.Messages[0].WorkerID != "w-on" {
			t.Fatalf("%s's look: %+v, want only seq %d acked by w-on", name, page, kept)
		}
	}
}

// The retention reaches the library: an ack prunes what was acked longer ago. Ten years
// is taken.
func TestWithArchiveRetention(t *testing.T) {
	clock := newClock()
	tr := open(t, ":memory:", harel.WithClock(clock.Now), harel.WithArchive(time.Minute))
	seqs := make([]int64, 3)
	for i := range seqs {
		seqs[i] = publishSeq(t, tr, "g", event(i))
	}
	ack(t, tr, claim(t, tr, "w"))
	clock.Advance(59 * time.Second)
	ack(t, tr, claim(t, tr, "w"))
	if all, _ := archiveAll(t, tr, "", 10); len(all) != 2 {
		t.Fatalf("within the retention: %+v, want both", all)
	}
	clock.Advance(2 * time.Second)
	ack(t, tr, claim(t, tr, "w"))
	all, _ := archiveAll(t, tr, "", 10)
	if len(all) != 2 || all[0].Seq != seqs[1] || all[1].Seq != seqs[2] {
		t.Fatalf("a minute and a second after the first ack: %+v, want seqs %v", all, seqs[1:])
	}
	tr = open(t, ":memory:", harel.WithArchive(tenYears))
	publish(t, tr, "g", event(1))
	ack(t, tr, claim(t, tr, "w"))
	if all, _ := archiveAll(t, tr, "", 10); len(all) != 1 {
		t.Fatalf("ten years: %+v", all)
	}
}

// Each refusal is ErrArgument with its message: the option's, and the look's (the
// binding's and the library's); none of them changes the archive.
func TestArchiveBadInput(t *testing.T) {
	for _, c := range []struct {
		retention time.Duration
		part      string
	}{
		{0, "archive_retention is 0; it must be a finite number of seconds > 0"},
		{-time.Second, "archive_retention is -1"},
		{tenYears + time.Second, "archive_retention is 315360001; at most 315360000 (ten years)"},
		{math.MaxInt64, "at most 315360000"},
	} {
		tr, err := harel.Open(":memory:", harel.WithArchive(c.retention))
		if tr != nil {
			tr.Close()
		}
		wantError(t, "WithArchive("+c.retention.String()+")", err, harel.ErrArgument, "WithArchive: ", c.part)
	}

	tr := open(t, ":memory:", harel.WithArchive(time.Hour))
	for _, g := range []string{"a", "b"} {
		publish(t, tr, g, event(1))
		publish(t, tr, g, event(2))
		ack(t, tr, claim(t, tr, "w"))
		if err := tr.DeadLetter(claim(t, tr, "w"), "r"); err != nil {
			t.Fatal(err)
		}
	}
	dead, err := tr.DeadLetters("", "", 1)
	if err != nil || dead.Next == "" {
		t.Fatalf("dead letters: %+v, %v", dead, err)
	}
	groups, err := tr.Groups(harel.GroupAny, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	publish(t, tr, "c", event(1))
	publish(t, tr, "d", event(1))
	if groups, err = tr.Groups(harel.GroupAny, "", 1); err != nil || groups.Next == "" {
		t.Fatalf("groups: %+v, %v", groups, err)
	}
	first := archivePage(t, tr, "", "", 1)
	if len(first.Messages) != 1 || first.Next == "" {
		t.Fatalf("archive: %+v", first)
	}
	// "" is every group's (as DeadLetters'), so the library's "group_id is empty" cannot
	// be asked for from Go.
	if all, _ := archiveAll(t, tr, "", 10); len(all) != 2 {
		t.Fatalf(`archive(""): %+v, want every group's two`, all)
	}

	page := func(p *harel.ArchivePage, err error) error { return refusedPage(t, p, err) }
	deadPage := func(p *harel.DeadLetterPage, err error) error { return refusedPage(t, p, err) }
	groupsPage := func(p *harel.GroupPage, err error) error { return refusedPage(t, p, err) }
	nul := "NUL byte"
	for _, c := range []struct {
		what  string
		err   error
		parts []string
	}{
		// the binding's
		{"NUL in group_id", page(tr.Archive("a\x00", "", 10)), []string{"group_id", nul}},
		{"NUL in cursor", page(tr.Archive("", "\x00", 10)), []string{"cursor", nul}},
		{"negative limit", page(tr.Archive("", "", -1)), []string{"limit is -1"}},
		// the library's
		{"group_id not UTF-8", page(tr.Archive("\xff", "", 10)), []string{"group_id"}},
		{"limit 0", page(tr.Archive("", "", 0)), []string{"limit is 0; it must be 1..10000"}},
		{"limit 0 of a group", page(tr.Archive("a", "", 0)), []string{"limit is 0"}},
		{"limit past MaxPage", page(tr.Archive("", "", harel.MaxPage+1)), []string{"limit is 10001"}},
		{"limit far past MaxPage", page(tr.Archive("", "", 1<<40)), []string{"limit"}},
		{"a made-up cursor", page(tr.Archive("", "nope", 10)), []string{"cursor", "not a cursor of this listing"}},
		{"a dead letters cursor", page(tr.Archive("", dead.Next, 10)), []string{"not a cursor of this listing"}},
		{"a dead letters cursor, a group", page(tr.Archive("a", dead.Next, 10)), []string{"cursor"}},
		{"a groups cursor", page(tr.Archive("", groups.Next, 10)), []string{"not a cursor of this listing"}},
		{"dead_letters: an archive cursor", deadPage(tr.DeadLetters("", first.Next, 10)), []string{"cursor"}},
		{"groups: an archive cursor", groupsPage(tr.Groups(harel.GroupAny, first.Next, 10)), []string{"cursor"}},
	} {
		wantError(t, c.what, c.err, harel.ErrArgument, c.parts...)
	}
	if all, _ := archiveAll(t, tr, "", 10); len(all) != 2 {
		t.Fatalf("after the refusals: %+v", all)
	}

	// A closed Transport.
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := tr.Archive("", "", 10)
	if p != nil {
		t.Fatalf("after close: %+v", p)
	}
	wantError(t, "after close", err, harel.ErrClosed)
}

// A schema without the archive table (WithCreateSchema(false)): an empty look without
// WithArchive; with it, Open fails with ErrDatabase naming the table.
func TestArchiveWithoutTheTable(t *testing.T) {
	path := tempDB(t)
	tr := open(t, path)
	publish(t, tr, "g", event(1))
	execSQL(t, tr, "DROP TABLE harel_transport_archive")
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	tr = open(t, path, harel.WithCreateSchema(false))
	ack(t, tr, claim(t, tr, "w"))
	if page := archivePage(t, tr, "", "", 10); len(page.Messages) != 0 || page.Next != "" {
		t.Fatalf("no table: %+v", page)
	}
	if page := archivePage(t, tr, "g", "", 10); len(page.Messages) != 0 {
		t.Fatalf("no table, a group: %+v", page)
	}
	refused, err := harel.Open(path, harel.WithCreateSchema(false), harel.WithArchive(time.Hour))
	if refused != nil {
		refused.Close()
	}
	wantError(t, "WithArchive without the table", err, harel.ErrDatabase, "harel_transport_archive")
	tr = open(t, path, harel.WithArchive(time.Hour)) // creates it
	publish(t, tr, "g", event(2))
	ack(t, tr, claim(t, tr, "w"))
	if page := archivePage(t, tr, "", "", 10); len(page.Messages) != 1 {
		t.Fatalf("the table made again: %+v", page)
	}
}

// A sharded queue lists shard after shard, each item with its Shard; pages cross shards.
func TestArchiveSharded(t *testing.T) {
	const n = 3
	tr := openShards(t, shardFiles(t, n), harel.WithArchive(time.Hour))
	onShard := groupsOnShards(t, n, 2)
	shardOfGroup := map[string]int{}
	for s := n - 1; s >= 0; s-- { // published last shard first: the look still lists shard 0 first
		for _, g := range onShard[s] {
			shardOfGroup[g] = s
			publish(t, tr, g, event(s), harel.WithHeaders(harel.Header{Name: "shard", Value: fmt.Sprint(s)}))
			publish(t, tr, g, event(s+10))
		}
	}
	for lease, _ := tr.Claim("w", visibility); lease != nil; lease, _ = tr.Claim("w", visibility) {
		ack(t, tr, lease)
	}
	claimNone(t, tr, "all acked")
	for _, limit := range []int{1, 3, 100} {
		all, _ := archiveAll(t, tr, "", limit)
		if len(all) != 4*n {
			t.Fatalf("limit %d: %d items, want %d", limit, len(all), 4*n)
		}
		for i, a := range all {
			if a.Shard != shardOfGroup[a.GroupID] {
				t.Errorf("limit %d: %q on shard %d, want %d", limit, a.GroupID, a.Shard, shardOfGroup[a.GroupID])
			}
			if i > 0 && (a.Shard < all[i-1].Shard || a.Shard == all[i-1].Shard && a.Seq <= all[i-1].Seq) {
				t.Errorf("limit %d: item %d (shard %d, seq %d) after (shard %d, seq %d)",
					limit, i, a.Shard, a.Seq, all[i-1].Shard, all[i-1].Seq)
			}
		}
	}
	for g, s := range shardOfGroup {
		all, _ := archiveAll(t, tr, g, 1)
		if len(all) != 2 || all[0].Shard != s || all[1].Shard != s || all[0].Seq >= all[1].Seq {
			t.Fatalf("%s's history: %+v, want two items on shard %d in order", g, all, s)
		}
		want := []harel.Header{{Name: "shard", Value: fmt.Sprint(s)}}
		if !reflect.DeepEqual(all[0].Headers, want) || all[1].Headers != nil || !bytes.Equal(all[0].Event, event(s)) {
			t.Fatalf("%s's history: %+v", g, all)
		}
	}
}

// Rounds of archived messages with kilobytes of strings listed, of refusals quoting them
// and of refused opens, pruned as they go (the test clock passes the retention each round),
// do not grow the process's memory.
func TestArchiveFreesWhatItAllocates(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	clock := newClock()
	tr := open(t, tempDB(t), harel.WithSynchronousFull(false), harel.WithClock(clock.Now),
		harel.WithArchive(time.Minute))
	big := strings.Repeat("x", 8192)
	group, worker := "group-"+big, "worker-"+big
	ev := json.RawMessage(`{"data":"` + big + `"}`)
	headers := []harel.Header{{Name: "h", Value: big}, {Name: "h2", Value: "v"}} // under 16 KiB in all
	round := func() {
		clock.Advance(2 * time.Minute) // the last round's message is pruned by this one's ack
		publish(t, tr, group, ev, harel.WithHeaders(headers...))
		ack(t, tr, claim(t, tr, worker))
		for _, g := range []string{group, ""} {
			page, err := tr.Archive(g, "", 10)
			if err != nil || len(page.Messages) != 1 || page.Messages[0].WorkerID != worker ||
				len(page.Messages[0].Headers) != 2 || len(page.Messages[0].Event) != len(ev) {
				t.Fatalf("archive: %v", err)
			}
		}
		if _, err := tr.Archive("", "a1."+big, 10); err == nil || len(err.Error()) < len(big) {
			t.Fatalf("a made-up cursor: %v", err)
		}
		if _, err := tr.Archive("\xff"+big, "", 10); err == nil {
			t.Fatal("a group id not UTF-8 was taken")
		}
		if _, err := harel.Open(":memory:", harel.WithArchive(-time.Second)); err == nil {
			t.Fatal("a negative retention was taken")
		}
	}
	const rounds, limit = 1000, 4 << 20 // a leak of one string per round would be 8 MiB
	set := func() {
		for i := 0; i < rounds; i++ {
			round()
		}
	}
	set()
	grown := settledGrowth(t, limit, set)
	t.Logf("resident memory grew by %d KiB over %d rounds of the archive", grown/1024, rounds)
	if grown > limit {
		t.Fatalf("resident memory grew by %d KiB over %d rounds of the archive: a leak", grown/1024, rounds)
	}
}

// WithArchive keeps each acked message for its retention: Archive lists them, a group's
// history in order.
func ExampleWithArchive() {
	t, err := harel.Open(":memory:", harel.WithArchive(7*24*time.Hour)) // kept a week after the ack
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close() // closing cannot fail: always nil
	_ = t.Publish("order-7", json.RawMessage(`{"kind":"paid"}`), harel.WithHeaders(harel.Header{Name: "by", Value: "web"}))
	_ = t.Publish("order-7", json.RawMessage(`{"kind":"shipped"}`))
	for lease, _ := t.Claim("worker-1", time.Minute); lease != nil; lease, _ = t.Claim("worker-1", time.Minute) {
		_ = t.Ack(lease)
	}

	page, err := t.Archive("order-7", "", 100) // the group's history, the first page
	if err != nil {
		log.Fatal(err)
	}
	for _, a := range page.Messages {
		fmt.Println(a.GroupID, string(a.Event), a.Headers, "attempts", a.Attempts, "acked by", a.WorkerID,
			"published", a.PublishedAt != nil, "claimed", a.ClaimedAt != nil, "next page", page.Next != "")
	}
	// Output:
	// order-7 {"kind":"paid"} [{by web}] attempts 1 acked by worker-1 published true claimed true next page false
	// order-7 {"kind":"shipped"} [] attempts 1 acked by worker-1 published true claimed true next page false
}
