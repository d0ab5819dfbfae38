package harel_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

// visibility is the lease length of the tests' claims.
const visibility = 30 * time.Second

// testClock is a clock the test moves by hand.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *testClock { return &testClock{now: time.Unix(1000, 0)} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// memory opens an in-memory queue run by clock, closed when the test ends.
func memory(t *testing.T, clock *testClock) *harel.Transport {
	t.Helper()
	return open(t, ":memory:", harel.WithClock(clock.Now))
}

// tempDB is the path of a fresh queue file in the test's temporary directory.
func tempDB(t *testing.T) string {
	return filepath.Join(t.TempDir(), "queue.db")
}

// open opens database, closed when the test ends.
func open(t *testing.T, database string, opts ...harel.Option) *harel.Transport {
	t.Helper()
	tr, err := harel.Open(database, opts...)
	if err != nil {
		t.Fatalf("open %s: %v", database, err)
	}
	t.Cleanup(func() {
		if err := tr.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return tr
}

// event is a harel event numbered n.
func event(n int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"kind":"tick","id":"e%d","data":{"n":%d}}`, n, n))
}

func publish(t *testing.T, tr *harel.Transport, group string, ev json.RawMessage, opts ...harel.PublishOption) {
	t.Helper()
	if err := tr.Publish(group, ev, opts...); err != nil {
		t.Fatalf("publish %q %s: %v", group, ev, err)
	}
}

// claim expects a lease.
func claim(t *testing.T, tr *harel.Transport, worker string, opts ...harel.ClaimOption) *harel.Lease {
	t.Helper()
	lease, err := tr.Claim(worker, visibility, opts...)
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	if lease == nil {
		t.Fatalf("claim: nothing deliverable, expected a message")
	}
	return lease
}

// claimNone expects nothing deliverable.
func claimNone(t *testing.T, tr *harel.Transport, why string, opts ...harel.ClaimOption) {
	t.Helper()
	lease, err := tr.Claim("w", visibility, opts...)
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	if lease != nil {
		t.Fatalf("%s: claimed seq %d of %q (%s), expected nothing", why, lease.Seq, lease.GroupID, lease.Event)
	}
}

func ack(t *testing.T, tr *harel.Transport, lease *harel.Lease) {
	t.Helper()
	if err := tr.Ack(lease); err != nil {
		t.Fatalf("ack seq %d: %v", lease.Seq, err)
	}
}

// sentinels are every error kind's sentinel.
var sentinels = []*harel.Error{harel.ErrArgument, harel.ErrDatabase, harel.ErrBusy,
	harel.ErrLeaseLost, harel.ErrConnect, harel.ErrInterrupted, harel.ErrPanic, harel.ErrClosed}

// wantError fails unless err is an *harel.Error of want's status that matches want and
// no other sentinel with errors.Is, and its message contains each of parts.
func wantError(t *testing.T, what string, err error, want *harel.Error, parts ...string) {
	t.Helper()
	var e *harel.Error
	if !errors.As(err, &e) {
		t.Errorf("%s: got %v (%T), want an *harel.Error %v", what, err, err, want.Status)
		return
	}
	for _, s := range sentinels {
		if got := errors.Is(err, s); got != (s == want) {
			t.Errorf("%s: errors.Is(%v, %v) = %v", what, err, s.Status, got)
		}
	}
	if e.Status != want.Status {
		t.Errorf("%s: status %v, want %v", what, e.Status, want.Status)
	}
	if e.Message == "" {
		t.Errorf("%s: %v has no message", what, err)
	}
	for _, part := range parts {
		if !strings.Contains(e.Message, part) {
			t.Errorf("%s: message %q does not contain %q", what, e.Message, part)
		}
	}
}
