package harel_test

// The transport contract (SPEC.md and ABI.md's semantics) through the Go API, with a clock
// the tests move by hand.

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

func TestFIFOWithinAGroup(t *testing.T) {
	tr := memory(t, newClock())
	for n := 0; n < 5; n++ {
		publish(t, tr, "g", event(n))
	}
	for n := 0; n < 5; n++ {
		lease := claim(t, tr, "w")
		if string(lease.Event) != string(event(n)) {
			t.Fatalf("message %d: got %s", n, lease.Event)
		}
		ack(t, tr, lease)
	}
	claimNone(t, tr, "all acked")
}

func TestOneInFlightPerGroupWhileOthersProceed(t *testing.T) {
	tr := memory(t, newClock())
	publish(t, tr, "a", event(1))
	publish(t, tr, "a", event(2))
	publish(t, tr, "b", event(3))
	first := claim(t, tr, "w1")
	if first.GroupID != "a" {
		t.Fatalf("first claim: group %s, want a", first.GroupID)
	}
	if second := claim(t, tr, "w2"); second.GroupID != "b" {
		t.Fatalf("a is in flight, b should proceed; got %s", second.GroupID)
	}
	claimNone(t, tr, "both groups in flight")
	ack(t, tr, first)
	third := claim(t, tr, "w3")
	if third.GroupID != "a" || string(third.Event) != string(event(2)) {
		t.Fatalf("after the ack: got %s %s, want a's second message", third.GroupID, third.Event)
	}
}

func TestLeaseFields(t *testing.T) {
	clock := newClock()
	tr := memory(t, clock)
	const text = ` {"kind": "x"} `
	publish(t, tr, "g", []byte(text))
	lease := claim(t, tr, "worker-7")
	if lease.GroupID != "g" || lease.WorkerID != "worker-7" || lease.Seq <= 0 {
		t.Fatalf("lease %+v", lease)
	}
	if string(lease.Event) != text {
		t.Fatalf("event %q, want %q byte for byte", lease.Event, text)
	}
	if want := clock.Now().Add(visibility); !lease.LockExpiry.Equal(want) {
		t.Fatalf("lock expiry %v, want %v", lease.LockExpiry, want)
	}
}

func TestAckRemovesTheMessage(t *testing.T) {
	clock := newClock()
	tr := memory(t, clock)
	publish(t, tr, "g", event(1))
	ack(t, tr, claim(t, tr, "w"))
	claimNone(t, tr, "acked")
	clock.Advance(10 * visibility)
	claimNone(t, tr, "an acked message never comes back")
}

func TestNackNowMakesTheMessageClaimableAtOnce(t *testing.T) {
	tr := memory(t, newClock())
	publish(t, tr, "g", event(1))
	lease := claim(t, tr, "w1")
	nack(t, tr, lease, 0)
	again := claim(t, tr, "w2")
	if again.Seq != lease.Seq || again.WorkerID != "w2" {
		t.Fatalf("got seq %d for %s, want seq %d for w2", again.Seq, again.WorkerID, lease.Seq)
	}
}

func TestNackWithDelayParksAndBlocksTheGroup(t *testing.T) {
	clock := newClock()
	tr := memory(t, clock)
	publish(t, tr, "g", event(1))
	publish(t, tr, "g", event(2))
	publish(t, tr, "other", event(3))
	lease := claim(t, tr, "w")
	nack(t, tr, lease, time.Minute)
	other := claim(t, tr, "w")
	if other.GroupID != "other" {
		t.Fatalf("a parked group must not block others; got %s", other.GroupID)
	}
	ack(t, tr, other)
	claimNone(t, tr, "the parked head blocks its group")
	clock.Advance(59 * time.Second)
	claimNone(t, tr, "still parked")
	clock.Advance(2 * time.Second)
	if again := claim(t, tr, "w"); again.Seq != lease.Seq {
		t.Fatalf("after the park: seq %d, want the parked head %d", again.Seq, lease.Seq)
	}
}

func TestALapsedLeaseIsClaimableAgain(t *testing.T) {
	clock := newClock()
	tr := memory(t, clock)
	publish(t, tr, "g", event(1))
	lease := claim(t, tr, "w1")
	clock.Advance(visibility)
	claimNone(t, tr, "lock_expiry >= now is still in flight")
	clock.Advance(500 * time.Millisecond)
	again := claim(t, tr, "w2")
	if again.Seq != lease.Seq || again.WorkerID != "w2" {
		t.Fatalf("got seq %d for %s, want the lapsed seq %d for w2", again.Seq, again.WorkerID, lease.Seq)
	}
}

func TestRoundRobin(t *testing.T) {
	t.Run("a group just served yields to one never claimed", func(t *testing.T) {
		clock := newClock()
		tr := memory(t, clock)
		publish(t, tr, "a", event(1))
		publish(t, tr, "a", event(2))
		first := claim(t, tr, "w")
		publish(t, tr, "b", event(3))
		clock.Advance(time.Second)
		ack(t, tr, first)
		if next := claim(t, tr, "w"); next.GroupID != "b" {
			t.Fatalf("got %s, want never-claimed b before served a", next.GroupID)
		}
	})
	t.Run("cycles through groups", func(t *testing.T) {
		clock := newClock()
		tr := memory(t, clock)
		for round := 0; round < 3; round++ {
			for _, g := range []string{"a", "b", "c"} {
				publish(t, tr, g, event(round))
			}
		}
		var order strings.Builder
		for i := 0; i < 9; i++ {
			clock.Advance(time.Second)
			lease := claim(t, tr, "w")
			order.WriteString(lease.GroupID)
			ack(t, tr, lease)
		}
		if order.String() != "abcabcabc" {
			t.Fatalf("order %s, want abcabcabc", order.String())
		}
	})
}

func TestPriorityFloor(t *testing.T) {
	tr := memory(t, newClock())
	publish(t, tr, "low", event(1), harel.WithPriority(1))
	publish(t, tr, "high", event(2), harel.WithPriority(3))
	publish(t, tr, "top", event(3), harel.WithPriority(4))
	floor := harel.WithMinPriority(3)
	for _, want := range []string{"high", "top"} {
		if got := claim(t, tr, "w", floor); got.GroupID != want {
			t.Fatalf("got %s, want %s", got.GroupID, want)
		}
	}
	claimNone(t, tr, "low is below the floor", floor)
	if got := claim(t, tr, "w"); got.GroupID != "low" {
		t.Fatalf("no floor: got %s, want low", got.GroupID)
	}
}

func TestRoutingKeys(t *testing.T) {
	tr := memory(t, newClock())
	publish(t, tr, "a", event(1), harel.WithRoutingKey("k1"))
	publish(t, tr, "b", event(2), harel.WithRoutingKey("k2"))
	publish(t, tr, "c", event(3))
	publish(t, tr, "d", event(4), harel.WithRoutingKey("k3"))
	if got := claim(t, tr, "w", harel.WithRoutingKeys("k2")); got.GroupID != "b" {
		t.Fatalf("k2: got %s", got.GroupID)
	}
	claimNone(t, tr, "no other k2 group", harel.WithRoutingKeys("k2"))
	either := harel.WithRoutingKeys("k3", "k1")
	for _, want := range []string{"a", "d"} {
		if got := claim(t, tr, "w", either); got.GroupID != want {
			t.Fatalf("k3 or k1: got %s, want %s (oldest first)", got.GroupID, want)
		}
	}
	if got := claim(t, tr, "w", harel.WithRoutingKeys()); got.GroupID != "c" {
		t.Fatalf("no keys means any group: got %s", got.GroupID)
	}
}

func TestManyRoutingKeys(t *testing.T) {
	tr := memory(t, newClock())
	publish(t, tr, "g", event(1), harel.WithRoutingKey("key-40"))
	publish(t, tr, "h", event(2), harel.WithRoutingKey("elsewhere"))
	var keys []string
	for i := 0; i < 50; i++ {
		keys = append(keys, fmt.Sprintf("key-%d", i))
	}
	if got := claim(t, tr, "w", harel.WithRoutingKeys(keys...)); got.GroupID != "g" {
		t.Fatalf("got %s, want g", got.GroupID)
	}
	claimNone(t, tr, "h's key is not among them", harel.WithRoutingKeys(keys...))
}

func TestTheFirstPublishFixesPriorityAndRoutingKey(t *testing.T) {
	tr := memory(t, newClock())
	publish(t, tr, "g", event(1), harel.WithPriority(4), harel.WithRoutingKey("east"))
	publish(t, tr, "g", event(2), harel.WithRoutingKey("west"))
	claimNone(t, tr, "the routing key stayed east", harel.WithRoutingKeys("west"))
	first := claim(t, tr, "w", harel.WithMinPriority(4), harel.WithRoutingKeys("east"))
	ack(t, tr, first)
	claim(t, tr, "w", harel.WithMinPriority(4), harel.WithRoutingKeys("east"))
}

func TestPublishManyKeepsBatchOrderAcrossGroups(t *testing.T) {
	clock := newClock()
	tr := memory(t, clock)
	var msgs []harel.Message
	for n := 0; n < 9; n++ {
		msgs = append(msgs, harel.Message{GroupID: []string{"a", "b", "c"}[n%3], Event: event(n)})
	}
	if err := tr.PublishMany(msgs); err != nil {
		t.Fatalf("publish many: %v", err)
	}
	// Round robin over a, b, c; each group in batch order: the batch's order exactly.
	for n := 0; n < 9; n++ {
		lease := claim(t, tr, "w")
		if lease.GroupID != msgs[n].GroupID || string(lease.Event) != string(event(n)) {
			t.Fatalf("claim %d: got %s %s, want %s %s", n, lease.GroupID, lease.Event, msgs[n].GroupID, event(n))
		}
		ack(t, tr, lease)
		clock.Advance(time.Second)
	}
	claimNone(t, tr, "all acked")
}

func TestPublishManyFirstMessageFixesTheGroup(t *testing.T) {
	tr := memory(t, newClock())
	err := tr.PublishMany([]harel.Message{
		{GroupID: "g", Event: event(1), Priority: 4, RoutingKey: "east"},
		{GroupID: "g", Event: event(2), RoutingKey: "west"},
		{GroupID: "h", Event: event(3)},
	})
	if err != nil {
		t.Fatalf("publish many: %v", err)
	}
	claimNone(t, tr, "g's routing key stayed east", harel.WithRoutingKeys("west"))
	ack(t, tr, claim(t, tr, "w", harel.WithMinPriority(4), harel.WithRoutingKeys("east")))
	ack(t, tr, claim(t, tr, "w", harel.WithMinPriority(4), harel.WithRoutingKeys("east")))
	claimNone(t, tr, `h's RoutingKey "" is no key`, harel.WithRoutingKeys("east", "west"))
	if got := claim(t, tr, "w"); got.GroupID != "h" {
		t.Fatalf("got %s, want h", got.GroupID)
	}
}

func TestPublishManyEmptyDoesNothing(t *testing.T) {
	tr := memory(t, newClock())
	if err := tr.PublishMany(nil); err != nil {
		t.Fatalf("nil batch: %v", err)
	}
	if err := tr.PublishMany([]harel.Message{}); err != nil {
		t.Fatalf("empty batch: %v", err)
	}
	claimNone(t, tr, "nothing was published")
}

func TestAckAndClaimAcksThenLeasesTheNext(t *testing.T) {
	tr := memory(t, newClock())
	publish(t, tr, "a", event(1))
	publish(t, tr, "a", event(2))
	first := claim(t, tr, "w")
	next, err := tr.AckAndClaim(first, "w", visibility)
	if err != nil || next == nil || next.GroupID != "a" || string(next.Event) != string(event(2)) {
		t.Fatalf("ack_and_claim: %v %+v, want a's second message (a is free once its head is acked)", err, next)
	}
	// The claim's options apply; nothing left for them is nil, nil after the ack.
	publish(t, tr, "k", event(3), harel.WithRoutingKey("key"))
	publish(t, tr, "other", event(5))
	keyed, err := tr.AckAndClaim(next, "w", visibility, harel.WithRoutingKeys("key"))
	if err != nil || keyed == nil || keyed.GroupID != "k" {
		t.Fatalf("ack_and_claim with a routing key: %v %+v", err, keyed)
	}
	last, err := tr.AckAndClaim(keyed, "w", visibility, harel.WithRoutingKeys("key"))
	if err != nil || last != nil {
		t.Fatalf("ack_and_claim of the key's last message: %v %+v, want nil, nil", err, last)
	}
	// A lost lease: ErrLeaseLost, and nothing is claimed.
	if lost, err := tr.AckAndClaim(keyed, "w", visibility); !errors.Is(err, harel.ErrLeaseLost) || lost != nil {
		t.Fatalf("ack_and_claim of an acked lease: %v %+v, want ErrLeaseLost", err, lost)
	}
	claim(t, tr, "w") // "other" was not claimed by the failed call
	if _, err := tr.AckAndClaim(nil, "w", visibility); !errors.Is(err, harel.ErrArgument) {
		t.Fatalf("ack_and_claim of nil: %v, want ErrArgument", err)
	}
}

func TestLostLeases(t *testing.T) {
	t.Run("lapsed and claimed by another worker", func(t *testing.T) {
		clock := newClock()
		tr := memory(t, clock)
		publish(t, tr, "g", event(1))
		stale := claim(t, tr, "w1")
		clock.Advance(visibility + time.Second)
		fresh := claim(t, tr, "w2")
		if err := tr.Ack(stale); !errors.Is(err, harel.ErrLeaseLost) {
			t.Fatalf("ack of a lease now w2's: %v, want ErrLeaseLost", err)
		}
		if err := tr.Nack(stale, 0); !errors.Is(err, harel.ErrLeaseLost) {
			t.Fatalf("nack of a lease now w2's: %v, want ErrLeaseLost", err)
		}
		ack(t, tr, fresh)
		if err := tr.Ack(fresh); !errors.Is(err, harel.ErrLeaseLost) {
			t.Fatalf("second ack: %v, want ErrLeaseLost", err)
		}
	})
	t.Run("a nacked lease is over", func(t *testing.T) {
		clock := newClock()
		tr := memory(t, clock)
		publish(t, tr, "g", event(1))
		lease := claim(t, tr, "w")
		nack(t, tr, lease, 10*time.Second)
		if err := tr.Ack(lease); !errors.Is(err, harel.ErrLeaseLost) {
			t.Fatalf("ack of a parked message: %v", err)
		}
		if err := tr.Nack(lease, 0); !errors.Is(err, harel.ErrLeaseLost) {
			t.Fatalf("nack of a parked message: %v", err)
		}
		clock.Advance(11 * time.Second)
		again := claim(t, tr, "w")
		nack(t, tr, again, 0)
		if err := tr.Ack(again); !errors.Is(err, harel.ErrLeaseLost) {
			t.Fatalf("ack of a free message: %v", err)
		}
		claim(t, tr, "w") // still there
	})
	t.Run("a lease edited to another group", func(t *testing.T) {
		tr := memory(t, newClock())
		publish(t, tr, "g", event(1))
		lease := claim(t, tr, "w")
		forged := *lease
		forged.GroupID = "other"
		err := tr.Ack(&forged)
		var e *harel.Error
		if !errors.As(err, &e) || e.Status != harel.StatusLeaseLost || e.Message == "" {
			t.Fatalf("forged ack: %#v, want an *Error with StatusLeaseLost and a message", err)
		}
		ack(t, tr, lease)
	})
}

func TestAnyJSONTextIsAnEventByteForByte(t *testing.T) {
	tr := memory(t, newClock())
	texts := []string{"0", `"text"`, "null", "[]", ` {"kind": "x"} `, `{"a":[1,2,{"b":null}]}`, `"é ✓ 𝄞"`}
	for _, text := range texts {
		publish(t, tr, "g", []byte(text))
	}
	for _, text := range texts {
		lease := claim(t, tr, "w")
		if string(lease.Event) != text {
			t.Fatalf("got %q, want %q", lease.Event, text)
		}
		ack(t, tr, lease)
	}
}

func TestNonASCIIIdentifiers(t *testing.T) {
	tr := memory(t, newClock())
	publish(t, tr, "grüppe ✓", event(1), harel.WithRoutingKey("clé"))
	lease := claim(t, tr, "wörker", harel.WithRoutingKeys("clé"))
	if lease.GroupID != "grüppe ✓" || lease.WorkerID != "wörker" {
		t.Fatalf("lease %+v", lease)
	}
	ack(t, tr, lease)
}

func TestAFileSurvivesReopening(t *testing.T) {
	path := tempDB(t)
	first, err := harel.Open(path, harel.WithPrefix("q1"), harel.WithSynchronousFull(false),
		harel.WithBusyTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	publish(t, first, "g", event(1))
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second := open(t, path, harel.WithPrefix("q1"), harel.WithCreateSchema(false))
	if lease := claim(t, second, "w"); string(lease.Event) != string(event(1)) {
		t.Fatalf("got %s", lease.Event)
	}
	other := open(t, path, harel.WithPrefix("q2"))
	claimNone(t, other, "another prefix is another queue")
}

func TestSchemaSQL(t *testing.T) {
	sql, err := harel.SchemaSQL("app")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sql, "CREATE TABLE IF NOT EXISTS app_transport_messages") {
		t.Fatalf("schema:\n%s", sql)
	}
	upgrade, err := harel.SchemaUpgradeSQL("app")
	if err != nil || !strings.Contains(upgrade, "routing_key") {
		t.Fatalf("upgrade %q, %v", upgrade, err)
	}
	if _, err := harel.SchemaSQL("1bad"); !errors.Is(err, harel.ErrArgument) {
		t.Fatalf("bad prefix: %v", err)
	}
	if v := harel.Version(); strings.Count(v, ".") != 2 {
		t.Fatalf("version %q", v)
	}
}
