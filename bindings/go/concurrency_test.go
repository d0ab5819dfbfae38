package harel_test

// Concurrency through the binding, under the race detector: goroutines publishing through
// one Transport while others drain the file, some through that Transport and some through
// their own. Every message must arrive exactly once. (Exclusivity and order within a
// group are the Rust contract's to check.)

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

func TestGoroutinesPublishAndDrain(t *testing.T) {
	const publishers, perPublisher, workers = 8, 100, 8
	const total = publishers * perPublisher
	path := tempDB(t)
	opts := []harel.Option{harel.WithSynchronousFull(false), harel.WithBusyTimeout(time.Minute)}
	shared := open(t, path, opts...)

	var mu sync.Mutex
	seen := map[string]int{}
	var done atomic.Int64
	var failed atomic.Bool
	fail := func(format string, args ...any) { failed.Store(true); t.Errorf(format, args...) }
	deadline := time.Now().Add(2 * time.Minute)
	record := func(lease *harel.Lease) {
		var ev struct{ ID string }
		if err := json.Unmarshal(lease.Event, &ev); err != nil {
			fail("seq %d: event %q: %v", lease.Seq, lease.Event, err)
		}
		mu.Lock()
		seen[ev.ID]++
		mu.Unlock()
	}

	var wg sync.WaitGroup
	for p := 0; p < publishers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perPublisher; i++ {
				group := fmt.Sprintf("p%d-g%d", p, i%5)
				ev := json.RawMessage(fmt.Sprintf(`{"id":"%d-%d"}`, p, i))
				var err error
				if i%4 == 3 { // now and then a batch of one
					err = shared.PublishMany([]harel.Message{{GroupID: group, Event: ev}})
				} else {
					err = shared.Publish(group, ev)
				}
				if err != nil {
					fail("publisher %d, message %d: %v", p, i, err)
					return
				}
			}
		}()
	}
	for w := 0; w < workers; w++ {
		tr := shared
		if w%2 == 1 {
			tr = open(t, path, opts...)
		}
		worker := fmt.Sprintf("w%d", w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lease *harel.Lease
			for done.Load() < total && !failed.Load() {
				if time.Now().After(deadline) {
					fail("%s: %d of %d messages done at the deadline", worker, done.Load(), total)
					return
				}
				var err error
				if lease == nil {
					if lease, err = tr.Claim(worker, visibility); err != nil {
						fail("%s: claim: %v", worker, err)
						return
					}
					if lease == nil {
						time.Sleep(time.Millisecond)
						continue
					}
				}
				record(lease)
				if w%4 < 2 { // half the workers ack and claim in one call
					lease, err = tr.AckAndClaim(lease, worker, visibility)
				} else {
					err, lease = tr.Ack(lease), nil
				}
				if err != nil {
					fail("%s: ack: %v", worker, err)
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	if failed.Load() {
		return
	}
	if len(seen) != total {
		t.Fatalf("%d distinct messages arrived, want %d", len(seen), total)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("message %s arrived %d times", id, n)
		}
	}
	claimNone(t, shared, "the queue is drained")
}
