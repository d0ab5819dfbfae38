package harel_test

// Mapping tests of the claims that wait (issue #15): ClaimWait and ClaimMany with their
// contexts, and Interrupt. What wakes a wait is checked from the outside as a Go program
// sees it: a publish by another Transport, by another process, a park's end; what ends
// it: the context's cancel or deadline, Close, Interrupt. The queue's rules (serving
// order, lease rules) are the Rust contract's.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

// publisherEnv makes the test binary, run again, the publisher of
// TestWokenByAnotherProcess: it publishes one message stamped with its send time per line
// read from stdin, into the queue file the variable names.
const publisherEnv = "HAREL_GO_TEST_PUBLISHER"

func TestMain(m *testing.M) {
	if path := os.Getenv(publisherEnv); path != "" {
		os.Exit(runPublisher(path))
	}
	os.Exit(m.Run())
}

func runPublisher(path string) int {
	tr, err := harel.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "publisher:", err)
		return 1
	}
	defer tr.Close()
	in := bufio.NewScanner(os.Stdin)
	for n := 0; in.Scan(); n++ {
		ev := fmt.Sprintf(`{"n":%d,"sent_ns":%d}`, n, time.Now().UnixNano())
		if err := tr.Publish(fmt.Sprintf("g%d", n), json.RawMessage(ev)); err != nil {
			fmt.Fprintln(os.Stderr, "publisher:", err)
			return 1
		}
		fmt.Println("published", n)
	}
	return 0
}

// leasedNow is how many groups are leased: a claim that was ended must leave none.
func leasedNow(t *testing.T, tr *harel.Transport) uint64 {
	t.Helper()
	s, err := tr.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return s.Leased
}

// groupsOf are the leases' group ids, in order.
func groupsOf(leases []*harel.Lease) []string {
	var g []string
	for _, l := range leases {
		g = append(g, l.GroupID)
	}
	return g
}

type claimResult struct {
	lease *harel.Lease
	err   error
	took  time.Duration
}

// claimWaitAsync starts a ClaimWait in a goroutine.
func claimWaitAsync(ctx context.Context, tr *harel.Transport, worker string, wait time.Duration) <-chan claimResult {
	done := make(chan claimResult, 1)
	go func() {
		start := time.Now()
		lease, err := tr.ClaimWait(ctx, worker, visibility, wait)
		done <- claimResult{lease, err, time.Since(start)}
	}()
	return done
}

// settle gives a claim started in a goroutine time to be waiting in the library.
func settle() { time.Sleep(50 * time.Millisecond) }

func TestClaimWaitAndClaimMany(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	tr := memory(t, clock)
	t.Run("nothing within the wait: nil, nil after it", func(t *testing.T) {
		start := time.Now()
		lease, err := tr.ClaimWait(ctx, "w", visibility, 100*time.Millisecond)
		if lease != nil || err != nil {
			t.Fatalf("got %+v, %v", lease, err)
		}
		leases, err := tr.ClaimMany(ctx, "w", visibility, 5, 100*time.Millisecond)
		if len(leases) != 0 || err != nil {
			t.Fatalf("got %v, %v", leases, err)
		}
		if took := time.Since(start); took < 200*time.Millisecond || took > 5*time.Second {
			t.Fatalf("two waits of 100 ms took %v", took)
		}
		if lease, err := tr.ClaimWait(ctx, "w", visibility, 0); lease != nil || err != nil {
			t.Fatalf("wait 0: %+v, %v", lease, err)
		}
	})
	t.Run("ClaimWait takes what is there at once, with Claim's options", func(t *testing.T) {
		publish(t, tr, "low", event(1), harel.WithRoutingKey("east"))
		publish(t, tr, "high", event(2), harel.WithPriority(3))
		start := time.Now()
		lease, err := tr.ClaimWait(ctx, "w2", 1500*time.Millisecond, time.Minute, harel.WithMinPriority(3))
		if err != nil || lease == nil || lease.GroupID != "high" || lease.WorkerID != "w2" || lease.Attempts != 1 {
			t.Fatalf("got %+v, %v", lease, err)
		}
		if !lease.LockExpiry.Equal(clock.Now().Add(1500 * time.Millisecond)) {
			t.Fatalf("lock expiry %v", lease.LockExpiry)
		}
		ack(t, tr, lease)
		lease, err = tr.ClaimWait(ctx, "w", visibility, time.Minute, harel.WithRoutingKeys("east"))
		if err != nil || lease == nil || lease.GroupID != "low" {
			t.Fatalf("got %+v, %v", lease, err)
		}
		ack(t, tr, lease)
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("claims of what was there took %v", took)
		}
	})
	t.Run("ClaimMany: distinct groups, in serving order, up to max", func(t *testing.T) {
		for n, g := range []string{"a", "b", "a", "c", "b", "d"} {
			publish(t, tr, g, event(n))
			clock.Advance(time.Second)
		}
		first, err := tr.ClaimMany(ctx, "w", visibility, 3, time.Minute)
		if err != nil || !slices.Equal(groupsOf(first), []string{"a", "b", "c"}) {
			t.Fatalf("got %v, %v; want a, b, c", groupsOf(first), err)
		}
		for i, want := range []int{0, 1, 3} {
			if l := first[i]; string(l.Event) != string(event(want)) || l.WorkerID != "w" || l.Attempts != 1 ||
				!l.LockExpiry.Equal(clock.Now().Add(visibility)) {
				t.Errorf("lease %d: %+v", i, l)
			}
		}
		rest, err := tr.ClaimMany(ctx, "w", visibility, harel.MaxClaim, 0)
		if err != nil || !slices.Equal(groupsOf(rest), []string{"d"}) {
			t.Fatalf("the rest: %v, %v; want d (a, b and c have one in flight)", groupsOf(rest), err)
		}
		acked, err := tr.AckMany(append(first, rest...))
		if err != nil || len(acked) != 4 || slices.ContainsFunc(acked, func(e error) bool { return e != nil }) {
			t.Fatalf("ack_many: %v, %v", acked, err)
		}
		second, err := tr.ClaimMany(ctx, "w", visibility, 10, 0, harel.WithRoutingKeys("none"))
		if err != nil || len(second) != 0 {
			t.Fatalf("no group has the key: %v, %v", groupsOf(second), err)
		}
		second, err = tr.ClaimMany(ctx, "w", visibility, 10, 0)
		if err != nil || !slices.Equal(groupsOf(second), []string{"a", "b"}) {
			t.Fatalf("second messages: %v, %v", groupsOf(second), err)
		}
		if _, err := tr.AckMany(second); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		publish(t, tr, "x", event(1))
		for _, c := range []struct {
			what, part string
			call       func() error
		}{
			{"max 0", "max", func() error { _, err := tr.ClaimMany(ctx, "w", visibility, 0, 0); return err }},
			{"max 1001", "max", func() error { _, err := tr.ClaimMany(ctx, "w", visibility, harel.MaxClaim+1, 0); return err }},
			{"max beyond int32", "max", func() error { _, err := tr.ClaimMany(ctx, "w", visibility, 1<<40, 0); return err }},
			{"claim_many wait < 0", "wait", func() error { _, err := tr.ClaimMany(ctx, "w", visibility, 1, -time.Second); return err }},
			{"claim_wait wait < 0", "wait", func() error { _, err := tr.ClaimWait(ctx, "w", visibility, -time.Nanosecond); return err }},
			{"claim_wait visibility 0", "visibility", func() error { _, err := tr.ClaimWait(ctx, "w", 0, time.Second); return err }},
			{"claim_many empty worker", "worker_id", func() error { _, err := tr.ClaimMany(ctx, "", visibility, 1, time.Second); return err }},
			{"ack_and_claim_many max 0", "max", func() error { _, _, err := tr.AckAndClaimMany(nil, "w", visibility, 0); return err }},
			{"ack_and_claim_many visibility < 0", "visibility", func() error {
				_, _, err := tr.AckAndClaimMany(nil, "w", -visibility, 1)
				return err
			}},
		} {
			wantError(t, c.what, c.call(), harel.ErrArgument, c.part)
		}
		if n := leasedNow(t, tr); n != 0 {
			t.Fatalf("a refused claim leased %d groups", n)
		}
		// A deadline far beyond any wait: the wait is what it says.
		long, cancel := context.WithTimeout(ctx, 1000*time.Hour)
		defer cancel()
		lease, err := tr.ClaimWait(long, "w", visibility, 1<<62)
		if err != nil || lease == nil {
			t.Fatalf("the longest wait, something there: %+v, %v", lease, err)
		}
		ack(t, tr, lease)
	})
}

func TestWaitersAreWoken(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	tr := open(t, path)
	t.Run("by another Transport's publish", func(t *testing.T) {
		publisher := open(t, path)
		var took []time.Duration
		for n := 0; n < 10; n++ {
			done := claimWaitAsync(ctx, tr, "w", time.Minute)
			settle()
			sent := time.Now()
			publish(t, publisher, "g", event(n))
			r := <-done
			if r.err != nil || r.lease == nil || string(r.lease.Event) != string(event(n)) {
				t.Fatalf("round %d: %+v", n, r)
			}
			took = append(took, time.Since(sent))
			ack(t, tr, r.lease)
		}
		slices.Sort(took)
		t.Logf("woken after another Transport's publish returned: median %v, max %v", took[len(took)/2], took[len(took)-1])
		if took[len(took)/2] > 100*time.Millisecond {
			t.Fatalf("median wake-up %v", took[len(took)/2])
		}
	})
	t.Run("by another process's publish", func(t *testing.T) {
		child := exec.Command(os.Args[0], "-test.run=^$")
		child.Env = append(os.Environ(), publisherEnv+"="+path)
		child.Stderr = os.Stderr
		stdin, err := child.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := child.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		replies := bufio.NewScanner(stdout)
		var took []time.Duration
		for n := 0; n < 20; n++ {
			done := claimWaitAsync(ctx, tr, "w", time.Minute)
			settle()
			fmt.Fprintln(stdin, "go")
			r := <-done
			woken := time.Now()
			if r.err != nil || r.lease == nil {
				t.Fatalf("round %d: %+v", n, r)
			}
			var ev struct {
				N      int64
				SentNs int64 `json:"sent_ns"`
			}
			if err := json.Unmarshal(r.lease.Event, &ev); err != nil || ev.N != int64(n) {
				t.Fatalf("round %d: event %s (%v)", n, r.lease.Event, err)
			}
			took = append(took, woken.Sub(time.Unix(0, ev.SentNs)))
			ack(t, tr, r.lease)
			if !replies.Scan() {
				t.Fatal("the publisher stopped")
			}
		}
		stdin.Close()
		if err := child.Wait(); err != nil {
			t.Fatalf("publisher: %v", err)
		}
		slices.Sort(took)
		t.Logf("woken after another process's publish (its send time to the claim's return): median %v, p90 %v, max %v",
			took[len(took)/2], took[len(took)*9/10], took[len(took)-1])
		if took[len(took)/2] > 100*time.Millisecond {
			t.Fatalf("median wake-up %v", took[len(took)/2])
		}
	})
	t.Run("by a park's end", func(t *testing.T) {
		publish(t, tr, "parked", event(1))
		lease := claim(t, tr, "w")
		const delay = 300 * time.Millisecond
		// The park runs from the instant the nack reads the clock: timed from after it
		// returned, a slow nack on a loaded machine made the wake look early.
		parkedAt := time.Now()
		if err := tr.Nack(lease, delay); err != nil {
			t.Fatal(err)
		}
		leases, err := tr.ClaimMany(ctx, "w", visibility, 10, time.Minute)
		took := time.Since(parkedAt)
		if err != nil || len(leases) != 1 || leases[0].Seq != lease.Seq || leases[0].Attempts != 2 {
			t.Fatalf("got %+v, %v", leases, err)
		}
		t.Logf("woken %v after a nack parked the message for %v", took, delay)
		if took < delay-10*time.Millisecond || took > delay+time.Second {
			t.Fatalf("woken %v after a park of %v", took, delay)
		}
		ack(t, tr, leases[0])
	})
	t.Run("eight waiters, one publish: one gets it, the rest time out", func(t *testing.T) {
		const wait = time.Second
		results := make(chan claimResult, 8)
		for w := 0; w < 8; w++ {
			waiter := tr
			if w%2 == 1 {
				waiter = open(t, path)
			}
			go func() {
				start := time.Now()
				leases, err := waiter.ClaimMany(ctx, fmt.Sprintf("w%d", w), visibility, 10, wait)
				r := claimResult{err: err, took: time.Since(start)}
				if len(leases) > 1 {
					r.err = fmt.Errorf("%d leases of one message", len(leases))
				} else if len(leases) == 1 {
					r.lease = leases[0]
				}
				results <- r
			}()
		}
		settle()
		publish(t, tr, "one", event(1))
		got := 0
		for w := 0; w < 8; w++ {
			r := <-results
			switch {
			case r.err != nil:
				t.Errorf("a waiter: %v", r.err)
			case r.lease != nil:
				got++
				ack(t, tr, r.lease)
			case r.took < wait-10*time.Millisecond:
				t.Errorf("a waiter got nothing after %v of a %v wait", r.took, wait)
			}
		}
		if got != 1 {
			t.Fatalf("%d waiters got the one message", got)
		}
	})
}

func TestWaitsEnded(t *testing.T) {
	path := tempDB(t)
	tr := open(t, path, harel.WithSynchronousFull(false))
	wantInterrupted := func(t *testing.T, what string, err error, ctxErr error, parts ...string) {
		t.Helper()
		wantError(t, what, err, harel.ErrInterrupted, parts...)
		if !errors.Is(err, ctxErr) {
			t.Errorf("%s: %v does not match %v", what, err, ctxErr)
		}
	}
	t.Run("by the context's cancel", func(t *testing.T) {
		for _, many := range []bool{false, true} {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan claimResult, 1)
			go func() {
				var r claimResult
				if many {
					var leases []*harel.Lease
					leases, r.err = tr.ClaimMany(ctx, "w", visibility, 10, time.Minute)
					if len(leases) > 0 {
						r.lease = leases[0]
					}
				} else {
					r.lease, r.err = tr.ClaimWait(ctx, "w", visibility, time.Minute)
				}
				done <- r
			}()
			settle()
			cancelled := time.Now()
			cancel()
			r := <-done
			took := time.Since(cancelled)
			wantInterrupted(t, fmt.Sprintf("cancelled (many: %v)", many), r.err, context.Canceled, "cancelled", "nothing was claimed")
			if r.lease != nil || took > time.Second {
				t.Fatalf("a cancelled wait returned %+v after %v", r.lease, took)
			}
			t.Logf("a cancelled wait (many: %v) returned %v after the cancel", many, took)
		}
		if n := leasedNow(t, tr); n != 0 {
			t.Fatalf("cancelled waits left %d leases", n)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		publish(t, tr, "g", event(1))
		lease, err := tr.ClaimWait(ctx, "w", visibility, time.Minute)
		wantInterrupted(t, "a context done before the call", err, context.Canceled, "before the claim")
		leases, err := tr.ClaimMany(ctx, "w", visibility, 1, 0)
		wantInterrupted(t, "a context done before a call that does not wait", err, context.Canceled)
		if lease != nil || leases != nil || leasedNow(t, tr) != 0 {
			t.Fatalf("a done context claimed %+v %v", lease, leases)
		}
		ack(t, tr, claim(t, tr, "w"))
	})
	t.Run("by the context's deadline, when it comes before the wait's end", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		lease, err := tr.ClaimWait(ctx, "w", visibility, time.Minute)
		took := time.Since(start)
		wantInterrupted(t, "deadline", err, context.DeadlineExceeded, "nothing was claimed")
		if lease != nil || took < 190*time.Millisecond || took > 2*time.Second {
			t.Fatalf("got %+v after %v, want nothing after 200 ms", lease, took)
		}
		later, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if leases, err := tr.ClaimMany(later, "w", visibility, 1, 100*time.Millisecond); err != nil || len(leases) != 0 {
			t.Fatalf("a wait shorter than the deadline: %v, %v", leases, err)
		}
		past, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel()
		_, err = tr.ClaimMany(past, "w", visibility, 1, time.Minute)
		wantInterrupted(t, "a deadline past", err, context.DeadlineExceeded)
	})
	t.Run("never with a lease left behind", func(t *testing.T) {
		// A cancel and a publish at about the same instant: either the lease comes back
		// (with a nil error), or nothing was claimed.
		publisher := open(t, path, harel.WithSynchronousFull(false))
		returned := 0
		for n := 0; n < 100; n++ {
			ctx, cancel := context.WithCancel(context.Background())
			done := claimWaitAsync(ctx, tr, "w", time.Minute)
			time.Sleep(time.Duration(n%5) * time.Millisecond)
			published := make(chan error, 1)
			go func() { published <- publisher.Publish(fmt.Sprintf("race-%d", n), event(n)) }()
			time.Sleep(time.Duration(n%3) * 500 * time.Microsecond)
			cancel()
			r := <-done
			if err := <-published; err != nil {
				t.Fatal(err)
			}
			switch {
			case r.lease != nil && r.err == nil:
				returned++
				ack(t, tr, r.lease)
			case r.lease == nil && errors.Is(r.err, context.Canceled) && errors.Is(r.err, harel.ErrInterrupted):
			default:
				t.Fatalf("round %d: %+v", n, r)
			}
			if l := leasedNow(t, tr); l != 0 {
				t.Fatalf("round %d: %d leases left behind", n, l)
			}
		}
		drained, err := tr.ClaimMany(context.Background(), "w", visibility, harel.MaxClaim, time.Second)
		if err != nil || returned+len(drained) != 100 {
			t.Fatalf("%d leases returned, %d left to drain (%v): want 100 in all", returned, len(drained), err)
		}
		if _, err := tr.AckMany(drained); err != nil {
			t.Fatal(err)
		}
		t.Logf("%d of 100 cancelled waits returned the lease published at the same instant", returned)
	})
	t.Run("by Interrupt: the waits in progress, not later ones", func(t *testing.T) {
		first := claimWaitAsync(context.Background(), tr, "w", time.Minute)
		settle()
		tr.Interrupt()
		r := <-first
		wantError(t, "interrupted", r.err, harel.ErrInterrupted, "interrupted")
		if errors.Is(r.err, context.Canceled) || r.lease != nil {
			t.Fatalf("interrupted: %+v", r)
		}
		later := claimWaitAsync(context.Background(), tr, "w", time.Minute)
		settle()
		publish(t, tr, "after", event(1))
		if r := <-later; r.err != nil || r.lease == nil {
			t.Fatalf("a wait after the interrupt: %+v", r)
		} else {
			ack(t, tr, r.lease)
		}
	})
	t.Run("by Close, which does not wait for them", func(t *testing.T) {
		closing, err := harel.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		one := claimWaitAsync(context.Background(), closing, "w", time.Hour)
		many := make(chan error, 1)
		go func() {
			_, err := closing.ClaimMany(context.Background(), "w", visibility, 10, time.Hour)
			many <- err
		}()
		settle()
		start := time.Now()
		if err := closing.Close(); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("Close took %v behind waiting claims", took)
		}
		wantError(t, "claim_wait when closed", (<-one).err, harel.ErrClosed, "closed while the claim waited")
		wantError(t, "claim_many when closed", <-many, harel.ErrClosed, "closed while the claim waited")
	})
}

// Goroutines waiting on one Transport and on their own while others publish through one:
// every message arrives exactly once, under the race detector.
func TestWaitingWorkersDrain(t *testing.T) {
	const publishers, perPublisher, workers = 4, 100, 6
	path := tempDB(t)
	opts := []harel.Option{harel.WithSynchronousFull(false), harel.WithBusyTimeout(time.Minute)}
	shared := open(t, path, opts...)
	var mu sync.Mutex
	seen := map[string]int{}
	var done atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		tr := shared
		if w%2 == 1 {
			tr = open(t, path, opts...)
		}
		worker := fmt.Sprintf("w%d", w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var leases []*harel.Lease
			for done.Load() < publishers*perPublisher {
				var err error
				if len(leases) == 0 {
					if leases, err = tr.ClaimMany(ctx, worker, visibility, 1+w, 100*time.Millisecond); err != nil {
						t.Errorf("%s: claim_many: %v", worker, err)
						return
					}
					continue
				}
				mu.Lock()
				for _, l := range leases {
					seen[string(l.Event)]++
				}
				mu.Unlock()
				n := int64(len(leases))
				var acked []error
				if w%3 == 0 {
					acked, err = tr.AckMany(leases)
					leases = nil
				} else {
					leases, acked, err = tr.AckAndClaimMany(leases, worker, visibility, 1+w)
				}
				if err != nil || slices.ContainsFunc(acked, func(e error) bool { return e != nil }) {
					t.Errorf("%s: ack: %v %v", worker, acked, err)
					return
				}
				done.Add(n)
			}
		}()
	}
	for p := 0; p < publishers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perPublisher; i++ {
				if err := shared.Publish(fmt.Sprintf("p%d-g%d", p, i%7), json.RawMessage(fmt.Sprintf(`{"id":"%d-%d"}`, p, i))); err != nil {
					t.Errorf("publish: %v", err)
					return
				}
				if i%10 == 0 {
					time.Sleep(time.Millisecond) // now and then the workers wait
				}
			}
		}()
	}
	wg.Wait()
	if len(seen) != publishers*perPublisher {
		t.Fatalf("%d distinct messages arrived, want %d", len(seen), publishers*perPublisher)
	}
	var twice []string
	for id, n := range seen {
		if n != 1 {
			twice = append(twice, fmt.Sprintf("%s×%d", id, n))
		}
	}
	sort.Strings(twice)
	if len(twice) > 0 {
		t.Fatalf("arrived more than once: %s", strings.Join(twice, " "))
	}
}
