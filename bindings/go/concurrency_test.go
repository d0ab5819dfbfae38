package harel_test

// Many goroutines draining one file: every message handled exactly once, in FIFO order
// within its group, and never two messages of one group in flight at once. The clock
// stands still, so no lease lapses and every claimed lease must ack. Also: many
// goroutines publishing through one Transport.

import (
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

const (
	groups   = 40
	perGroup = 25
	total    = groups * perGroup
	workers  = 16
)

func groupName(g int) string { return fmt.Sprintf("g%02d", g) }

func message(g, i int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"kind":"tick","id":"%d-%d","data":{"g":%d,"i":%d}}`, g, i, g, i))
}

// fill publishes round by round, so every group's messages spread over the whole file.
func fill(t *testing.T, tr *harel.Transport) {
	for i := 0; i < perGroup; i++ {
		for g := 0; g < groups; g++ {
			publish(t, tr, groupName(g), message(g, i))
		}
	}
}

type groupState struct {
	inFlight int64 // the seq in flight, 0 for none
	next     int   // the index the next claim must bring
	lastSeq  int64
}

// ledger checks what the workers see as they go. A worker marks a message in flight after
// its claim returns and clears it before acking, inside the real lease, so an overlap seen
// here is an overlap in the queue.
type ledger struct {
	mu       sync.Mutex
	groups   map[string]*groupState
	byWorker map[string]int
	done     atomic.Int64
	failed   atomic.Bool
}

func newLedger() *ledger {
	return &ledger{groups: map[string]*groupState{}, byWorker: map[string]int{}}
}

func (l *ledger) fail(t *testing.T, format string, args ...any) {
	l.failed.Store(true)
	t.Errorf(format, args...)
}

func (l *ledger) stop() bool { return l.failed.Load() || l.done.Load() >= total }

func (l *ledger) claimed(t *testing.T, lease *harel.Lease) bool {
	var ev struct {
		Data struct{ G, I int }
	}
	if err := json.Unmarshal(lease.Event, &ev); err != nil || lease.GroupID != groupName(ev.Data.G) {
		l.fail(t, "seq %d: event %s in group %s (%v)", lease.Seq, lease.Event, lease.GroupID, err)
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.groups[lease.GroupID]
	if s == nil {
		s = &groupState{}
		l.groups[lease.GroupID] = s
	}
	switch {
	case s.inFlight != 0:
		l.fail(t, "group %s: seq %d claimed while seq %d is in flight", lease.GroupID, lease.Seq, s.inFlight)
	case ev.Data.I != s.next:
		l.fail(t, "group %s out of order: got message %d, want %d", lease.GroupID, ev.Data.I, s.next)
	case lease.Seq <= s.lastSeq:
		l.fail(t, "group %s: seq %d after seq %d", lease.GroupID, lease.Seq, s.lastSeq)
	default:
		s.inFlight, s.lastSeq = lease.Seq, lease.Seq
		return true
	}
	return false
}

func (l *ledger) acking(lease *harel.Lease) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.groups[lease.GroupID]
	s.inFlight = 0
	s.next++
	l.byWorker[lease.WorkerID]++
}

func (l *ledger) check(t *testing.T, path string) {
	t.Helper()
	if l.failed.Load() {
		return
	}
	if got := l.done.Load(); got != total {
		t.Fatalf("%d messages acked, want %d", got, total)
	}
	if len(l.groups) != groups {
		t.Fatalf("%d groups seen, want %d", len(l.groups), groups)
	}
	for g, s := range l.groups {
		if s.next != perGroup || s.inFlight != 0 {
			t.Fatalf("group %s: %d processed, in flight %d", g, s.next, s.inFlight)
		}
	}
	claimNone(t, open(t, path), "the queue is drained")
	t.Logf("messages per worker: %v", l.byWorker)
}

// work claims and acks until every message is done or the test failed.
func work(t *testing.T, tr *harel.Transport, worker string, l *ledger) {
	for !l.stop() {
		lease, err := tr.Claim(worker, visibility)
		if err != nil {
			l.fail(t, "%s: claim: %v", worker, err)
			return
		}
		if lease == nil {
			runtime.Gosched()
			continue
		}
		if !l.claimed(t, lease) {
			return
		}
		runtime.Gosched() // "handling": let the others try the same group meanwhile
		l.acking(lease)
		if err := tr.Ack(lease); err != nil {
			l.fail(t, "%s: ack seq %d (the lease cannot have lapsed): %v", worker, lease.Seq, err)
			return
		}
		l.done.Add(1)
	}
}

func fileOptions(clock *testClock) []harel.Option {
	return []harel.Option{harel.WithClock(clock.Now), harel.WithSynchronousFull(false),
		harel.WithBusyTimeout(time.Minute)}
}

// drain runs the workers, each on the Transport transport(n) gives it.
func drain(t *testing.T, transport func(n int) *harel.Transport) *ledger {
	l := newLedger()
	var wg sync.WaitGroup
	for n := 0; n < workers; n++ {
		tr := transport(n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			work(t, tr, fmt.Sprintf("w%d", n), l)
		}()
	}
	wg.Wait()
	return l
}

func TestSixteenGoroutinesShareOneTransport(t *testing.T) {
	path, clock := tempDB(t), newClock()
	tr := open(t, path, fileOptions(clock)...)
	fill(t, tr)
	l := drain(t, func(int) *harel.Transport { return tr })
	l.check(t, path)
}

func TestSixteenGoroutinesWithATransportEach(t *testing.T) {
	path, clock := tempDB(t), newClock()
	fill(t, open(t, path, fileOptions(clock)...))
	l := drain(t, func(int) *harel.Transport { return open(t, path, fileOptions(clock)...) })
	l.check(t, path)
}

// Publishes from many goroutines share commits (the library's group commit): each
// goroutine publishes its own groups' messages in order; every message must come out
// once, each group in its order.
func TestSixteenGoroutinesPublishThroughOneTransport(t *testing.T) {
	path, clock := tempDB(t), newClock()
	tr := open(t, path, fileOptions(clock)...)
	var wg sync.WaitGroup
	for k := 0; k < workers; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perGroup; i++ {
				for g := k; g < groups; g += workers {
					if err := tr.Publish(groupName(g), message(g, i)); err != nil {
						t.Errorf("publish %s #%d: %v", groupName(g), i, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	l := drain(t, func(int) *harel.Transport { return tr })
	l.check(t, path)
}
