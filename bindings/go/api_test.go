package harel_test

// Mapping tests: each function, method and option of the binding reaches the library and
// each result comes back as the Go value it should be. What the queue does with them
// (FIFO, round robin, priorities, leases...) is the Rust contract's to test
// (tests/common/contract.rs), once for every binding.

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

var _ io.Closer = (*harel.Transport)(nil) // Close() error stays, for io.Closer

// One message end to end through a file: publish, claim, ack, and nothing left.
func TestSmoke(t *testing.T) {
	path := tempDB(t)
	tr := open(t, path)
	const text = ` {"kind": "paid", "note": "é ✓ 𝄞"} ` // any JSON text, byte for byte
	publish(t, tr, "order-42", json.RawMessage(text))
	before := time.Now()
	lease := claim(t, tr, "worker-1")
	if lease.GroupID != "order-42" || lease.WorkerID != "worker-1" || lease.Seq <= 0 {
		t.Fatalf("lease %+v", lease)
	}
	if string(lease.Event) != text {
		t.Fatalf("event %q, want %q", lease.Event, text)
	}
	if lo, hi := before.Add(visibility-time.Second), time.Now().Add(visibility+time.Second); lease.LockExpiry.Before(lo) || lease.LockExpiry.After(hi) {
		t.Fatalf("lock expiry %v, want about now + %v", lease.LockExpiry, visibility)
	}
	ack(t, tr, lease)
	claimNone(t, tr, "acked")
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	claimNone(t, open(t, path, harel.WithCreateSchema(false)), "acked, after reopening")
}

// The lease's fields and the clock's times convert both ways: the lease runs to the
// clock's now + visibility, to the microsecond.
func TestLeaseFieldsAndTimes(t *testing.T) {
	clock := &testClock{now: time.Unix(1_700_000_000, 123_456_000)}
	tr := memory(t, clock)
	publish(t, tr, "grüppe ✓", event(1))
	lease := claim(t, tr, "wörker")
	if lease.GroupID != "grüppe ✓" || lease.WorkerID != "wörker" || string(lease.Event) != string(event(1)) {
		t.Fatalf("lease %+v", lease)
	}
	ack(t, tr, lease)
	publish(t, tr, "g", event(2))
	want := clock.Now().Add(1500 * time.Millisecond)
	lease, err := tr.Claim("w", 1500*time.Millisecond)
	if err != nil || lease == nil {
		t.Fatalf("claim: %v %v", lease, err)
	}
	if d := lease.LockExpiry.Sub(want); d < -time.Microsecond || d > time.Microsecond {
		t.Fatalf("lock expiry %v, want %v", lease.LockExpiry, want)
	}
}

// Every method, function and option, each checked for reaching the library: a value
// that changes what the library does, or one the library refuses naming the option.
func TestEveryCallReachesTheLibrary(t *testing.T) {
	clock := newClock()
	path := tempDB(t)
	tr := open(t, path, harel.WithPrefix("q1"), harel.WithClock(clock.Now), harel.WithSynchronousFull(false),
		harel.WithBusyTimeout(10*time.Second), harel.WithCreateSchema(true))

	t.Run("Publish with priority and routing key, Claim with a floor and keys", func(t *testing.T) {
		publish(t, tr, "k", event(1), harel.WithPriority(2), harel.WithRoutingKey("east"))
		claimNone(t, tr, "another key", harel.WithRoutingKeys("west"))
		claimNone(t, tr, "a floor above the priority", harel.WithMinPriority(3))
		lease := claim(t, tr, "w", harel.WithMinPriority(2), harel.WithRoutingKeys("west"), harel.WithRoutingKeys("x", "east"))
		ack(t, tr, lease)
	})
	t.Run("PublishMany", func(t *testing.T) {
		for _, batch := range [][]harel.Message{nil, {}} {
			if err := tr.PublishMany(batch); err != nil {
				t.Fatalf("empty batch: %v", err)
			}
		}
		claimNone(t, tr, "nothing was published")
		err := tr.PublishMany([]harel.Message{
			{GroupID: "a", Event: event(1)},
			{GroupID: "b", Event: event(2), Priority: 4, RoutingKey: "rk"},
		})
		if err != nil {
			t.Fatal(err)
		}
		b := claim(t, tr, "w", harel.WithMinPriority(4), harel.WithRoutingKeys("rk"))
		if b.GroupID != "b" || string(b.Event) != string(event(2)) {
			t.Fatalf("got %q %s, want b's message", b.GroupID, b.Event)
		}
		ack(t, tr, b)
		a := claim(t, tr, "w")
		if a.GroupID != "a" || string(a.Event) != string(event(1)) {
			t.Fatalf("got %q %s, want a's message", a.GroupID, a.Event)
		}
		ack(t, tr, a)
	})
	t.Run("AckAndClaim", func(t *testing.T) {
		publish(t, tr, "g", event(1))
		publish(t, tr, "g", event(2))
		publish(t, tr, "h", event(3), harel.WithRoutingKey("rk"))
		h := claim(t, tr, "w", harel.WithRoutingKeys("rk"))
		next, err := tr.AckAndClaim(h, "w2", visibility, harel.WithRoutingKeys("rk"))
		if err != nil || next != nil {
			t.Fatalf("acked, no other rk group: got %+v, %v; want nil, nil", next, err)
		}
		lost, err := tr.AckAndClaim(h, "w2", visibility)
		wantError(t, "ack_and_claim of an acked lease", err, harel.ErrLeaseLost)
		if lost != nil {
			t.Fatalf("a failed ack_and_claim claimed %+v", lost)
		}
		g := claim(t, tr, "w")
		next, err = tr.AckAndClaim(g, "w2", visibility)
		if err != nil || next == nil || next.GroupID != "g" || next.WorkerID != "w2" || string(next.Event) != string(event(2)) {
			t.Fatalf("got %+v, %v; want g's second message for w2", next, err)
		}
		ack(t, tr, next)
		claimNone(t, tr, "all acked")
	})
	t.Run("Nack", func(t *testing.T) {
		publish(t, tr, "n", event(1))
		lease := claim(t, tr, "w")
		if err := tr.Nack(lease, 0); err != nil {
			t.Fatal(err)
		}
		again := claim(t, tr, "w2")
		if again.Seq != lease.Seq {
			t.Fatalf("nack 0: got seq %d, want %d", again.Seq, lease.Seq)
		}
		if err := tr.Nack(again, time.Minute); err != nil {
			t.Fatal(err)
		}
		claimNone(t, tr, "parked for the delay")
		clock.Advance(time.Minute + time.Second)
		ack(t, tr, claim(t, tr, "w"))
	})
	t.Run("WithPrefix and WithCreateSchema", func(t *testing.T) {
		publish(t, tr, "p", event(1))
		claimNone(t, open(t, path, harel.WithPrefix("q2")), "another prefix is another queue")
		ack(t, tr, claim(t, open(t, path, harel.WithPrefix("q1"), harel.WithCreateSchema(false)), "w"))
		_, err := harel.Open(path, harel.WithPrefix("q3"), harel.WithCreateSchema(false))
		wantError(t, "q3 with create_schema off", err, harel.ErrDatabase)
	})
	t.Run("the options the library refuses", func(t *testing.T) {
		for _, c := range []struct {
			opt  harel.Option
			name string
		}{
			{harel.WithPrefix("1abc"), "WithPrefix: "},
			{harel.WithSyncURL(""), "WithSyncURL: "},
			{harel.WithAuthToken("bad\xff"), "WithAuthToken: "},
			{harel.WithSyncInterval(0), "WithSyncInterval: "},
			{harel.WithBusyTimeout(-time.Second), "WithBusyTimeout: "},
		} {
			_, err := harel.Open(":memory:", c.opt)
			wantError(t, c.name, err, harel.ErrArgument, c.name)
		}
		if tr, err := harel.Open(":memory:", harel.WithClock(nil), harel.WithSynchronousFull(true)); err != nil {
			t.Fatalf("WithClock(nil): %v", err)
		} else {
			tr.Close()
		}
	})
	t.Run("SchemaSQL, SchemaUpgradeSQL, Version", func(t *testing.T) {
		sql, err := harel.SchemaSQL("app")
		if err != nil || !strings.Contains(sql, "CREATE TABLE IF NOT EXISTS app_transport_messages") {
			t.Fatalf("schema %q, %v", sql, err)
		}
		upgrade, err := harel.SchemaUpgradeSQL("app")
		if err != nil || !strings.Contains(upgrade, "ALTER TABLE app_transport_groups ADD COLUMN routing_key") {
			t.Fatalf("upgrade %q, %v", upgrade, err)
		}
		for name, f := range map[string]func(string) (string, error){"SchemaSQL": harel.SchemaSQL, "SchemaUpgradeSQL": harel.SchemaUpgradeSQL} {
			s, err := f("1bad")
			wantError(t, name+" of a bad prefix", err, harel.ErrArgument, "prefix")
			if s != "" {
				t.Errorf("%s of a bad prefix: %q", name, s)
			}
		}
		if v := harel.Version(); strings.Count(v, ".") != 2 || !strings.HasPrefix(v, "0.") {
			t.Fatalf("version %q", v)
		}
	})
}
