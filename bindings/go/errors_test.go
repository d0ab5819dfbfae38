package harel_test

// Errors: every status comes back as its sentinel; what the binding checks itself (what a
// C string or an int32 cannot carry, a nil lease) is ErrArgument naming the parameter
// before anything reaches the library; and the library's own message reaches
// Error.Message.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

func TestEveryStatusMapsToItsSentinel(t *testing.T) {
	t.Run("ARGUMENT", func(t *testing.T) {
		_, err := memory(t, newClock()).Claim("", visibility)
		wantError(t, "claim with an empty worker id", err, harel.ErrArgument, "worker_id")
	})
	t.Run("DATABASE", func(t *testing.T) {
		path := tempDB(t)
		if err := os.WriteFile(path, []byte(strings.Repeat("not a database ", 1000)), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := harel.Open(path)
		wantError(t, "open of a file that is not a database", err, harel.ErrDatabase)
		_, err = harel.Open(tempDB(t), harel.WithCreateSchema(false))
		wantError(t, "open without the schema", err, harel.ErrDatabase)
	})
	t.Run("BUSY", func(t *testing.T) {
		// A claim asks its clock for "now" inside its transaction, holding the file's write
		// lock (and maybe before it too). Each call of its clock stops until another
		// Transport's publish has been tried: the one made inside the transaction makes
		// that publish give up.
		path := tempDB(t)
		var armed atomic.Bool
		calls := make(chan chan struct{})
		holder := open(t, path, harel.WithClock(func() time.Time {
			if armed.Load() {
				release := make(chan struct{})
				calls <- release
				<-release
			}
			return time.Unix(1000, 0)
		}))
		waiter := open(t, path, harel.WithBusyTimeout(50*time.Millisecond))
		publish(t, holder, "g", event(1))
		armed.Store(true)
		claimed := make(chan error)
		go func() {
			_, err := holder.Claim("w", visibility)
			claimed <- err
		}()
		busy := false
		for {
			select {
			case release := <-calls:
				err := waiter.Publish("g", event(2))
				if errors.Is(err, harel.ErrBusy) {
					wantError(t, "publish while another Transport holds the write lock", err, harel.ErrBusy)
					busy = true
					armed.Store(false)
				} else if err != nil {
					t.Fatalf("publish: %v", err)
				}
				close(release)
			case err := <-claimed:
				if err != nil {
					t.Fatalf("the holder's claim: %v", err)
				}
				if !busy {
					t.Fatal("no publish found the write lock taken while the claim asked its clock")
				}
				return
			}
		}
	})
	t.Run("LEASE_LOST", func(t *testing.T) {
		tr := memory(t, newClock())
		publish(t, tr, "g", event(1))
		lease := claim(t, tr, "w")
		ack(t, tr, lease)
		wantError(t, "second ack", tr.Ack(lease), harel.ErrLeaseLost, "no longer leased")
		wantError(t, "nack after the ack", tr.Nack(lease, 0), harel.ErrLeaseLost)
	})
	t.Run("CONNECT", func(t *testing.T) {
		// A loopback port nobody listens on: refused at once.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Skip("no loopback:", err)
		}
		url := "http://" + l.Addr().String()
		l.Close()
		_, err = harel.Open(url, harel.WithAuthToken("token"))
		wantError(t, "open of a server URL", err, harel.ErrConnect, "Connection refused")
	})
	t.Run("INTERRUPTED", func(t *testing.T) {
		tr := memory(t, newClock())
		claimed := make(chan error)
		go func() {
			_, err := tr.ClaimWait(context.Background(), "w", visibility, time.Minute)
			claimed <- err
		}()
		time.Sleep(50 * time.Millisecond) // the claim is waiting
		tr.Interrupt()
		wantError(t, "a waiting claim interrupted", <-claimed, harel.ErrInterrupted, "interrupted")
	})
	t.Run("CLOSED", func(t *testing.T) {
		tr, err := harel.Open(":memory:")
		if err != nil {
			t.Fatal(err)
		}
		tr.Close()
		wantError(t, "publish after close", tr.Publish("g", event(1)), harel.ErrClosed, "closed")
	})
}

// What the binding refuses itself, before calling C: a Go string with a NUL byte (a C
// string would end there), an int that does not fit the ABI's int32, a nil lease.
func TestWhatTheBindingChecks(t *testing.T) {
	clock := newClock()
	tr := memory(t, clock)
	publish(t, tr, "g", event(1))
	lease := claim(t, tr, "w")
	ok := event(9)
	nul := "NUL byte"
	withWorker := func(w string) *harel.Lease { l := *lease; l.WorkerID = w; return &l }
	withGroup := func(g string) *harel.Lease { l := *lease; l.GroupID = g; return &l }
	c := func(worker string, opts ...harel.ClaimOption) error {
		l, err := tr.Claim(worker, visibility, opts...)
		if l != nil {
			t.Errorf("a refused claim returned %+v", l)
		}
		return err
	}
	ackAndClaim := func(l *harel.Lease, worker string, opts ...harel.ClaimOption) error {
		next, err := tr.AckAndClaim(l, worker, visibility, opts...)
		if next != nil {
			t.Errorf("a refused ack_and_claim returned %+v", next)
		}
		return err
	}
	ackMany := func(ls ...*harel.Lease) error {
		acked, err := tr.AckMany(ls)
		if acked != nil {
			t.Errorf("a refused ack_many returned outcomes %v", acked)
		}
		return err
	}
	ackAndClaimMany := func(ls []*harel.Lease, worker string, max int) error {
		next, acked, err := tr.AckAndClaimMany(ls, worker, visibility, max)
		if next != nil || acked != nil {
			t.Errorf("a refused ack_and_claim_many returned %v, %v", next, acked)
		}
		return err
	}
	claimMany := func(worker string, max int) error {
		leases, err := tr.ClaimMany(context.Background(), worker, visibility, max, time.Second)
		if leases != nil {
			t.Errorf("a refused claim_many returned %v", leases)
		}
		return err
	}
	claimWait := func(worker string, opts ...harel.ClaimOption) error {
		l, err := tr.ClaimWait(context.Background(), worker, visibility, time.Second, opts...)
		if l != nil {
			t.Errorf("a refused claim_wait returned %+v", l)
		}
		return err
	}
	batch := func(bad harel.Message) error {
		return tr.PublishMany([]harel.Message{{GroupID: "new", Event: ok}, bad})
	}
	for _, c := range []struct {
		what  string
		err   error
		parts []string
	}{
		{"publish: NUL in group_id", tr.Publish("a\x00b", ok), []string{"group_id", nul, "at byte 1"}},
		{"publish: NUL in event", tr.Publish("new", []byte(`{"a":1}`+"\x00")), []string{"event_json", nul}},
		{"publish: NUL in routing_key", tr.Publish("new", ok, harel.WithRoutingKey("k\x00")), []string{"routing_key", nul}},
		{"publish: priority beyond int32", tr.Publish("new", ok, harel.WithPriority(math.MaxInt32+1)), []string{"priority"}},
		{"publish: priority below int32", tr.Publish("new", ok, harel.WithPriority(-(1 << 40))), []string{"priority"}},
		{"batch: NUL in group_id", batch(harel.Message{GroupID: "\x00", Event: ok}), []string{"messages[1].group_id", nul}},
		{"batch: NUL in event", batch(harel.Message{GroupID: "new", Event: []byte("\x00")}), []string{"messages[1].event_json", nul}},
		{"batch: NUL in routing_key", batch(harel.Message{GroupID: "new", Event: ok, RoutingKey: "\x00"}), []string{"messages[1].routing_key", nul}},
		{"batch: priority beyond int32", batch(harel.Message{GroupID: "new", Event: ok, Priority: 1 << 40}), []string{"messages[1].priority"}},
		{"claim: NUL in worker_id", c("w\x00"), []string{"worker_id", nul}},
		{"claim: NUL in a routing key", c("w", harel.WithRoutingKeys("k", "\x00")), []string{"routing_keys[1]", nul}},
		{"claim: min_priority beyond int32", c("w", harel.WithMinPriority(1<<40)), []string{"min_priority"}},
		{"ack nil", tr.Ack(nil), []string{"lease is nil"}},
		{"ack: empty lease.group_id", tr.Ack(withGroup("")), []string{"lease.group_id is empty"}},
		{"nack: empty lease.group_id", tr.Nack(withGroup(""), 0), []string{"lease.group_id is empty"}},
		{"nack nil", tr.Nack(nil, 0), []string{"lease is nil"}},
		{"ack_and_claim nil", ackAndClaim(nil, "w"), []string{"lease is nil"}},
		{"ack: NUL in lease.worker_id", tr.Ack(withWorker("w\x00")), []string{"lease.worker_id", nul}},
		{"nack: NUL in lease.worker_id", tr.Nack(withWorker("w\x00"), 0), []string{"lease.worker_id", nul}},
		{"ack_and_claim: NUL in worker_id", ackAndClaim(lease, "w\x00"), []string{"worker_id", nul}},
		{"ack_and_claim: NUL in a routing key", ackAndClaim(lease, "w", harel.WithRoutingKeys("\x00")), []string{"routing_keys[0]", nul}},
		{"ack_many: NUL in leases[1].worker_id", ackMany(lease, withWorker("w\x00")), []string{"leases[1].worker_id", nul}},
		{"ack_many: empty leases[0].group_id", ackMany(withGroup("")), []string{"leases[0].group_id is empty"}},
		{"ack_and_claim_many: NUL in worker_id", ackAndClaimMany([]*harel.Lease{lease}, "w\x00", 1), []string{"worker_id", nul}},
		{"ack_and_claim_many: max -1", ackAndClaimMany([]*harel.Lease{lease}, "w", -1), []string{"max is -1"}},
		{"claim_many: max -1", claimMany("w", -1), []string{"max is -1; it must be 1..1000"}},
		{"claim_many: NUL in worker_id", claimMany("w\x00", 1), []string{"worker_id", nul}},
		{"claim_wait: NUL in a routing key", claimWait("w", harel.WithRoutingKeys("\x00")), []string{"routing_keys[0]", nul}},
		{"extend nil", tr.Extend(nil, visibility), []string{"lease is nil"}},
		{"extend: NUL in lease.worker_id", tr.Extend(withWorker("w\x00"), visibility), []string{"lease.worker_id", nul}},
		{"schema: NUL in prefix", schemaErr(harel.SchemaSQL("app\x00")), []string{"prefix", nul}},
		{"upgrade: NUL in prefix", schemaErr(harel.SchemaUpgradeSQL("app\x00")), []string{"prefix", nul}},
	} {
		wantError(t, c.what, c.err, harel.ErrArgument, c.parts...)
	}
	// None of it reached the queue: the lease is still held, nothing else was published.
	ack(t, tr, lease)
	claimNone(t, tr, "nothing was published by the refused calls")

	// Open's strings: the option's name leads the message, and nothing is created.
	path := tempDB(t)
	for _, c := range []struct {
		what     string
		database string
		opt      harel.Option
		parts    []string
	}{
		{"NUL in database", path + "\x00.x", nil, []string{"database", nul}},
		{"NUL in prefix", path, harel.WithPrefix("app\x00"), []string{"WithPrefix: prefix", nul}},
		{"NUL in sync url", path, harel.WithSyncURL("http://x\x00"), []string{"WithSyncURL: url", nul}},
		{"NUL in auth token", path, harel.WithAuthToken("t\x00k"), []string{"WithAuthToken: token", nul}},
	} {
		var opts []harel.Option
		if c.opt != nil {
			opts = append(opts, c.opt)
		}
		tr, err := harel.Open(c.database, opts...)
		if tr != nil {
			t.Errorf("%s: Open returned a Transport", c.what)
			tr.Close()
		}
		wantError(t, c.what, err, harel.ErrArgument, c.parts...)
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("a refused Open created %s", path)
	}
}

func schemaErr(_ string, err error) error { return err }

// A few of the library's own checks: the binding passes the values on, and the library's
// message reaches Error.Message as it wrote it.
func TestTheLibrarysMessagesReachTheError(t *testing.T) {
	tr := memory(t, newClock())
	publish(t, tr, "g", event(1))
	lease := claim(t, tr, "w")

	_, err := tr.Claim("w", 0)
	var e *harel.Error
	if !errors.As(err, &e) || e.Message != "visibility is 0; it must be a finite number of seconds > 0" {
		t.Fatalf("claim with visibility 0: %#v", err)
	}
	if got, want := err.Error(), "harel: HAREL_ERR_ARGUMENT: "+e.Message; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	withGroup := func(g string) *harel.Lease { l := *lease; l.GroupID = g; return &l }
	for _, c := range []struct {
		what  string
		err   error
		parts []string
	}{
		{"publish: event not JSON", tr.Publish("g", []byte("{oops")), []string{"event_json"}},
		{"publish: nil event", tr.Publish("g", nil), []string{"event_json"}},
		{"publish: group_id not UTF-8", tr.Publish("bad\xff", event(1)), []string{"group_id"}},
		{"publish: priority 5", tr.Publish("new", event(1), harel.WithPriority(5)), []string{"priority"}},
		{"batch: bad event at 1", tr.PublishMany([]harel.Message{{GroupID: "g", Event: event(1)}, {GroupID: "g", Event: []byte("[")}}),
			[]string{"messages[1].event_json"}},
		{"claim: reserved worker id", func() error { _, err := tr.Claim("__parked__", visibility); return err }(), []string{"worker_id"}},
		{"claim: an empty routing key", func() error { _, err := tr.Claim("w", visibility, harel.WithRoutingKeys("")); return err }(),
			[]string{"routing_keys"}},
		{"ack: group id not UTF-8", tr.Ack(withGroup("g\xff")), []string{"lease.group_id"}},
		{"nack: negative delay", tr.Nack(lease, -time.Second), []string{"delay"}},
	} {
		wantError(t, c.what, c.err, harel.ErrArgument, c.parts...)
	}
	ack(t, tr, lease) // nothing refused changed the queue
	claimNone(t, tr, "nothing was published by the refused calls")
}

func TestClockErrors(t *testing.T) {
	t.Run("a time before the epoch", func(t *testing.T) {
		now := time.Unix(1000, 0) // the clock runs on the goroutine of the call: no race
		tr := open(t, ":memory:", harel.WithClock(func() time.Time { return now }))
		publish(t, tr, "g", event(1))
		now = time.Time{}
		_, err := tr.Claim("w", visibility)
		wantError(t, "claim", err, harel.ErrArgument, "clock")
		// publish asks the clock too: it stamps the message with its publish time
		wantError(t, "publish", tr.Publish("g", event(2)), harel.ErrArgument, "clock")
		_, err = tr.Stats()
		wantError(t, "stats", err, harel.ErrArgument, "clock")
	})
	t.Run("a clock that panics", func(t *testing.T) {
		clock := newClock()
		panicking := false // the clock runs on the goroutine of the call: no race
		tr := open(t, ":memory:", harel.WithClock(func() time.Time {
			if panicking {
				panic("clock broke")
			}
			return clock.Now()
		}))
		publish(t, tr, "g", event(1))
		panicking = true
		_, err := tr.Claim("w", visibility)
		wantError(t, "claim", err, harel.ErrArgument, "the clock (WithClock) panicked: clock broke")
		panicking = false
		ack(t, tr, claim(t, tr, "w")) // the transport was not harmed
	})
}

// The sentinels and the Error type, without the library.
func TestErrorMatching(t *testing.T) {
	for _, s := range sentinels {
		e := &harel.Error{Status: s.Status, Message: "details"}
		wrapped := fmt.Errorf("while working: %w", e)
		wantError(t, "wrapped "+s.Status.String(), wrapped, s, "details")
		if errors.Is(wrapped, errors.New("details")) {
			t.Errorf("%v matched a foreign error", e)
		}
		var as *harel.Error
		if !errors.As(wrapped, &as) || as != e {
			t.Errorf("errors.As(%v) failed", wrapped)
		}
	}
	e := &harel.Error{Status: harel.StatusLeaseLost, Message: "message 5 is gone"}
	if got := e.Error(); got != "harel: HAREL_ERR_LEASE_LOST: message 5 is gone" {
		t.Errorf("Error() = %q", got)
	}
	if got := harel.ErrBusy.Error(); got != "harel: HAREL_ERR_BUSY" {
		t.Errorf("Error() = %q", got)
	}
	if got := harel.ErrClosed.Error(); got != "harel: HAREL_ERR_CLOSED: the transport is closed" {
		t.Errorf("Error() = %q", got)
	}
	if got := harel.Status(7).String(); got != "HAREL_UNKNOWN(7)" {
		t.Errorf("String() = %q", got)
	}
}
