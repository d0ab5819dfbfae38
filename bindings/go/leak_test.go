package harel_test

// Lifetimes: what the binding allocates in C for a call (string copies, the lease and the
// error the library hands out, a schema string, the stats and the pages, a whole handle) is
// freed. Measured as the
// process's resident memory over many rounds of every kind of call, after a first batch of
// rounds has warmed every cache: a leak of even the smallest string per round would add
// megabytes, since the strings here are 8 KiB long. A leak grows every set of rounds; the
// allocators' own swings (once 7 MiB in CI) do not repeat, so a set over the limit is
// measured once more before it fails.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

// settledGrowth is the resident memory's growth over one run of work; when that is over
// limit, the smaller of it and the growth over one more run.
func settledGrowth(t *testing.T, limit int64, work func()) int64 {
	t.Helper()
	growth := func() int64 {
		before := residentBytes(t)
		work()
		return residentBytes(t) - before
	}
	grown := growth()
	if grown > limit {
		t.Logf("resident memory grew by %d KiB over one set: measuring another", grown/1024)
		grown = min(grown, growth())
	}
	return grown
}

// residentBytes is the process's resident set size (Linux).
func residentBytes(t *testing.T) int64 {
	t.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	statm, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skip("no /proc/self/statm:", err)
	}
	fields := strings.Fields(string(statm))
	pages, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		t.Fatalf("statm %q: %v", statm, err)
	}
	return pages * int64(os.Getpagesize())
}

func TestCallsFreeWhatTheyAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	path := tempDB(t)
	tr := open(t, path, harel.WithSynchronousFull(false))
	big := strings.Repeat("x", 8192)
	group, worker := "group-"+big, "worker-"+big
	ev := json.RawMessage(`{"data":"` + big + `"}`)
	// The dead letters, the operator's calls and the looks: pages and stats full of the
	// kilobytes of strings, each copied out and freed; errors that quote a long cursor.
	looks := func() {
		for i := 0; i < 3; i++ {
			if err := tr.Publish(group, ev, harel.WithRoutingKey(big)); err != nil {
				t.Fatal(err)
			}
		}
		lease, err := tr.Claim(worker, visibility)
		if err != nil || lease == nil {
			t.Fatalf("claim: %v, %v", lease, err)
		}
		if err := tr.DeadLetter(lease, "reason-"+big); err != nil {
			t.Fatal(err)
		}
		held, err := tr.Claim(worker, visibility)
		if err != nil || held == nil {
			t.Fatalf("claim: %v, %v", held, err)
		}
		if s, err := tr.Stats(); err != nil || s.Dead != 1 || len(s.ByPriority) != 1 {
			t.Fatalf("stats: %+v, %v", s, err)
		}
		if p, err := tr.Groups(harel.GroupAny, "", 100); err != nil || len(p.Groups) != 1 || p.Groups[0].Holder != worker {
			t.Fatalf("groups: %+v, %v", p, err)
		}
		if p, err := tr.Peek(group, "", 100); err != nil || len(p.Messages) != 2 || p.Messages[0].LockedBy != worker {
			t.Fatalf("peek: %v", err)
		}
		dead, err := tr.DeadLetters(group, "", 100)
		if err != nil || len(dead.Letters) != 1 || len(dead.Letters[0].Reason) != len(big)+7 {
			t.Fatalf("dead letters: %v", err)
		}
		if _, err := tr.DeadLetters("", "d1."+big, 10); err == nil || len(err.Error()) < len(big) {
			t.Fatalf("a made-up cursor: %v", err)
		}
		if released, err := tr.Release(group); err != nil || !released {
			t.Fatalf("release: %v, %v", released, err)
		}
		if n, err := tr.Redrive(harel.DeadLettersBySeq(dead.Letters[0].Seq)); err != nil || n != 1 {
			t.Fatalf("redrive: %d, %v", n, err)
		}
		lease, err = tr.Claim(worker, visibility)
		if err != nil || lease == nil {
			t.Fatalf("claim: %v, %v", lease, err)
		}
		if err := tr.DeadLetter(lease, big); err != nil {
			t.Fatal(err)
		}
		if n, err := tr.PurgeGroup(group); err != nil || n != 2 {
			t.Fatalf("purge_group: %d, %v", n, err)
		}
		if n, err := tr.PurgeDead(harel.DeadLettersOfGroup(group)); err != nil || n != 1 {
			t.Fatalf("purge_dead: %d, %v", n, err)
		}
		if n, err := tr.Purge(); err != nil || n != 0 {
			t.Fatalf("purge: %d, %v", n, err)
		}
	}
	// The producer options: keys (the longest), delays and instants in and seqs out of a
	// batch; refusals that name a message; the first round stores, the rest are duplicates.
	key := strings.Repeat("k", 256)
	producers := func() {
		batch := []harel.Message{
			{GroupID: group, Event: ev, RoutingKey: big, Key: key, Delay: time.Hour},
			{GroupID: group, Event: ev, Key: key, NotBefore: time.Now().Add(time.Hour)},
		}
		if p, err := tr.PublishManyWith(batch); err != nil || len(p) != 2 || !p[1].Duplicate {
			t.Fatalf("publish_many_with: %+v, %v", p, err)
		}
		if p, err := tr.PublishWith(group, ev, harel.WithKey(key), harel.WithDelay(time.Hour)); err != nil || !p.Duplicate {
			t.Fatalf("publish_with: %+v, %v", p, err)
		}
		if _, err := tr.PublishManyWith([]harel.Message{batch[0], {GroupID: big, Event: ev, Key: big}}); err == nil {
			t.Fatal("a batch with a key too long was published")
		}
		if _, err := tr.PublishWith(group, ev, harel.WithKey(key+"\x00")); err == nil {
			t.Fatal("a key with a NUL byte was taken")
		}
		if _, err := tr.Purge(); err != nil {
			t.Fatal(err)
		}
	}
	round := func() {
		if err := tr.Publish(group, ev, harel.WithRoutingKey(big)); err != nil {
			t.Fatal(err)
		}
		lease, err := tr.Claim(worker, visibility, harel.WithRoutingKeys(big, "other"))
		if err != nil || lease == nil || !bytes.Equal(lease.Event, ev) {
			t.Fatalf("claim: %v, %v", lease, err)
		}
		if err := tr.Nack(lease, 0); err != nil {
			t.Fatal(err)
		}
		lease, err = tr.Claim(worker, visibility)
		if err != nil || lease == nil {
			t.Fatalf("claim: %v, %v", lease, err)
		}
		if next, err := tr.AckAndClaim(lease, worker, visibility); err != nil || next != nil {
			t.Fatalf("ack_and_claim: %v, %v", next, err)
		}
		// Errors from the library, whose messages quote the kilobytes of group id.
		if err := tr.Ack(lease); err == nil || len(err.Error()) < len(big) {
			t.Fatalf("second ack: %v", err)
		}
		if err := tr.PublishMany([]harel.Message{{GroupID: group, Event: ev}, {GroupID: big, Event: []byte(big)}}); err == nil {
			t.Fatal("a batch with a bad event was published")
		}
		for i := 0; i < 8; i++ { // a schema is a kilobyte or so
			if _, err := harel.SchemaSQL("app"); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := harel.SchemaUpgradeSQL("bad prefix"); err == nil {
			t.Fatal("a bad prefix was taken")
		}
		looks()
		producers()
	}
	openClose := func() {
		tr, err := harel.Open(":memory:", harel.WithPrefix("p"), harel.WithClock(newClock().Now))
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Publish(group, ev); err != nil {
			t.Fatal(err)
		}
		tr.Close()
	}
	const rounds, opens = 1000, 200
	const limit = 4 << 20 // a leak of one string per round would be 8 MiB; of a handle, far more
	set := func() {
		for i := 0; i < rounds; i++ {
			round()
		}
		for i := 0; i < opens; i++ {
			openClose()
		}
	}
	set()
	grown := settledGrowth(t, limit, set)
	t.Logf("resident memory grew by %d KiB over %d rounds and %d open/close", grown/1024, rounds, opens)
	if grown > limit {
		t.Fatalf("resident memory grew by %d KiB over %d rounds and %d open/close: a leak", grown/1024, rounds, opens)
	}
}

// The worker loop's calls: waits ended by each of their ways (each a harel_cancel made,
// fired and freed, and AfterFuncs stopped), batches of leases in and out, extensions and
// their errors, with kilobytes of strings. Neither memory nor goroutines may grow.
func TestWaitsAndBatchesFreeWhatTheyAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	path := tempDB(t)
	tr := open(t, path, harel.WithSynchronousFull(false))
	big := strings.Repeat("x", 8192)
	worker := "worker-" + big
	ev := json.RawMessage(`{"data":"` + big + `"}`)
	background := context.Background()
	round := func(n int) {
		// Waits that end: by a cancel, by a deadline, by their own end, by Interrupt.
		ctx, cancel := context.WithCancel(background)
		time.AfterFunc(time.Millisecond, cancel)
		if _, err := tr.ClaimWait(ctx, worker, visibility, time.Minute); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled: %v", err)
		}
		ctx, cancel = context.WithTimeout(background, time.Millisecond)
		if _, err := tr.ClaimMany(ctx, worker, visibility, 10, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("deadline: %v", err)
		}
		cancel()
		if leases, err := tr.ClaimMany(background, worker, visibility, 10, time.Millisecond); err != nil || len(leases) != 0 {
			t.Fatalf("a wait that ends: %v, %v", leases, err)
		}
		if n%10 == 0 {
			waiting := make(chan error)
			go func() { _, err := tr.ClaimWait(background, worker, visibility, time.Minute); waiting <- err }()
			time.Sleep(time.Millisecond)
			for {
				tr.Interrupt()
				select {
				case err := <-waiting:
					if !errors.Is(err, harel.ErrInterrupted) {
						t.Fatalf("interrupted: %v", err)
					}
				case <-time.After(time.Millisecond):
					continue // not waiting yet when interrupted
				}
				break
			}
		}
		// Batches: three groups of kilobyte ids out and back in, one lease lost.
		for g := 0; g < 3; g++ {
			if err := tr.Publish(fmt.Sprintf("%d-%s", g, big), ev); err != nil {
				t.Fatal(err)
			}
		}
		leases, err := tr.ClaimMany(background, worker, visibility, 10, time.Second, harel.WithRoutingKeys())
		if err != nil || len(leases) != 3 || !bytes.Equal(leases[2].Event, ev) {
			t.Fatalf("claim_many: %d leases, %v", len(leases), err)
		}
		if err := tr.Extend(leases[0], time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := tr.Ack(leases[0]); err != nil {
			t.Fatal(err)
		}
		if err := tr.Extend(leases[0], time.Minute); err == nil || len(err.Error()) < len(big) {
			t.Fatalf("extend of an acked lease: %v", err)
		}
		next, acked, err := tr.AckAndClaimMany(leases[:2], worker, visibility, 10)
		if err != nil || len(next) != 0 || acked[0] == nil || len(acked[0].Error()) < len(big) {
			t.Fatalf("ack_and_claim_many: %v, %v, %v", next, acked, err)
		}
		if acked, err := tr.AckMany(leases[1:]); err != nil || acked[0] == nil || acked[1] != nil {
			t.Fatalf("ack_many: %v, %v", acked, err)
		}
		if _, err := tr.AckMany([]*harel.Lease{leases[0], nil}); err == nil {
			t.Fatal("a nil lease was acked")
		}
	}
	// Many short waits on one long-lived context: a cancel not freed (about 110 bytes), or
	// an AfterFunc not stopped (kept in the context's children), of each would add megabytes.
	const shortWaitCount = 50000
	live, stopLive := context.WithCancel(background)
	defer stopLive()
	shortWaits := func() {
		for i := 0; i < shortWaitCount; i++ {
			if lease, err := tr.ClaimWait(live, worker, visibility, time.Microsecond); lease != nil || err != nil {
				t.Fatalf("a short wait: %v, %v", lease, err)
			}
		}
	}
	const rounds, limit = 300, 3 << 20
	set := func() {
		for i := 0; i < rounds; i++ {
			round(i)
		}
		shortWaits()
	}
	set()
	goroutines := runtime.NumGoroutine()
	grown := settledGrowth(t, limit, set)
	t.Logf("resident memory grew by %d KiB over %d rounds of waits and batches and %d short waits", grown/1024, rounds, shortWaitCount)
	if grown > limit {
		t.Fatalf("resident memory grew by %d KiB over %d rounds of waits and batches: a leak", grown/1024, rounds)
	}
	time.Sleep(10 * time.Millisecond) // the last AfterFunc goroutines finish
	if now := runtime.NumGoroutine(); now > goroutines+2 {
		t.Fatalf("%d goroutines after the rounds, %d before: a leak", now, goroutines)
	}
}
