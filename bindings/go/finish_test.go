package harel_test

// Mapping tests of finishing leases (issue #15): AckMany, and AckAndClaimMany's acks, with
// a lease lost; Extend; KeepAlive. The lease rules are the Rust contract's.

import (
	"context"
	"slices"
	"testing"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

func TestAckManyAndAckAndClaimMany(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	tr := memory(t, clock)
	for n, g := range []string{"a", "b", "c", "a", "b"} {
		publish(t, tr, g, event(n))
		clock.Advance(time.Second)
	}
	t.Run("AckMany with one lease lost", func(t *testing.T) {
		leases, err := tr.ClaimMany(ctx, "w", visibility, 3, 0)
		if err != nil || len(leases) != 3 {
			t.Fatalf("claim_many: %v, %v", groupsOf(leases), err)
		}
		ack(t, tr, leases[1]) // b's lease: acked already
		acked, err := tr.AckMany(leases)
		if err != nil || len(acked) != 3 || acked[0] != nil || acked[2] != nil {
			t.Fatalf("ack_many: %v, %v", acked, err)
		}
		wantError(t, "the lost lease's outcome", acked[1], harel.ErrLeaseLost, "leases[1]", `group "b"`, "no longer leased")
		if s, err := tr.Stats(); err != nil || s.Messages != 2 || s.Leased != 0 {
			t.Fatalf("after ack_many: %+v, %v", s, err)
		}
		for _, empty := range [][]*harel.Lease{nil, {}} {
			if acked, err := tr.AckMany(empty); err != nil || len(acked) != 0 {
				t.Fatalf("an empty ack_many: %v, %v", acked, err)
			}
		}
		acked, err = tr.AckMany([]*harel.Lease{leases[0], nil})
		wantError(t, "a nil lease in ack_many", err, harel.ErrArgument, "leases[1]")
		if acked != nil {
			t.Fatalf("a refused ack_many: %v", acked)
		}
	})
	t.Run("AckAndClaimMany: a lost lease does not stop the claim", func(t *testing.T) {
		first, err := tr.ClaimMany(ctx, "w", visibility, 10, 0)
		if err != nil || !slices.Equal(groupsOf(first), []string{"a", "b"}) {
			t.Fatalf("claim_many: %v, %v", groupsOf(first), err)
		}
		publish(t, tr, "a", event(10))
		publish(t, tr, "c", event(11))
		ack(t, tr, first[0])
		next, acked, err := tr.AckAndClaimMany(first, "w2", visibility, 10, harel.WithMinPriority(0))
		if err != nil || len(acked) != 2 || acked[1] != nil {
			t.Fatalf("ack_and_claim_many: %v, %v, %v", groupsOf(next), acked, err)
		}
		wantError(t, "the lost lease's outcome", acked[0], harel.ErrLeaseLost, "leases[0]")
		byGroup := map[string]string{}
		for _, l := range next {
			if l.WorkerID != "w2" {
				t.Errorf("lease %+v", l)
			}
			byGroup[l.GroupID] = string(l.Event)
		}
		if len(next) != 2 || byGroup["a"] != string(event(10)) || byGroup["c"] != string(event(11)) {
			t.Fatalf("next: %v, want the new messages of a and c", byGroup)
		}
		next, acked, err = tr.AckAndClaimMany(next, "w2", visibility, 10)
		if err != nil || len(next) != 0 || len(acked) != 2 || acked[0] != nil || acked[1] != nil {
			t.Fatalf("the last ack_and_claim_many: %v, %v, %v", groupsOf(next), acked, err)
		}
		next, acked, err = tr.AckAndClaimMany(nil, "w", visibility, 1)
		if err != nil || len(next) != 0 || len(acked) != 0 {
			t.Fatalf("nothing to ack, nothing to claim: %v, %v, %v", next, acked, err)
		}
	})
}

func TestExtend(t *testing.T) {
	clock := newClock()
	tr := memory(t, clock)
	publish(t, tr, "g", event(1))
	lease, err := tr.Claim("w", 10*time.Second)
	if err != nil || lease == nil {
		t.Fatal(lease, err)
	}
	clock.Advance(5 * time.Second)
	if err := tr.Extend(lease, time.Minute); err != nil {
		t.Fatal(err)
	}
	if want := clock.Now().Add(time.Minute); !lease.LockExpiry.Equal(want) {
		t.Fatalf("lock expiry %v, want %v", lease.LockExpiry, want)
	}
	clock.Advance(30 * time.Second) // past the old end: still held
	claimNone(t, tr, "extended")

	clock.Advance(time.Hour) // lapsed, and nobody claimed it since: still this worker's
	if err := tr.Extend(lease, 10*time.Second); err != nil {
		t.Fatalf("extend after a lapse nobody used: %v", err)
	}
	if want := clock.Now().Add(10 * time.Second); !lease.LockExpiry.Equal(want) {
		t.Fatalf("lock expiry %v, want %v", lease.LockExpiry, want)
	}
	claimNone(t, tr, "extended after its lapse")

	clock.Advance(time.Minute) // lapsed, and another worker claims it
	other := claim(t, tr, "w2")
	before := lease.LockExpiry
	wantError(t, "extend of a lease lapsed and claimed by another", tr.Extend(lease, time.Minute), harel.ErrLeaseLost)
	if !lease.LockExpiry.Equal(before) {
		t.Fatalf("a lost extend changed the lease's expiry to %v", lease.LockExpiry)
	}
	wantError(t, "extend with visibility 0", tr.Extend(other, 0), harel.ErrArgument, "visibility")
	ack(t, tr, other)
	wantError(t, "extend after the ack", tr.Extend(other, time.Minute), harel.ErrLeaseLost)
}

func TestKeepAlive(t *testing.T) {
	const vis = 300 * time.Millisecond
	path := tempDB(t)
	tr := open(t, path, harel.WithSynchronousFull(false))
	other := open(t, path, harel.WithSynchronousFull(false))
	t.Run("a lease kept past its visibility while the handler works", func(t *testing.T) {
		publish(t, tr, "g", event(1))
		lease, err := tr.Claim("w", vis)
		if err != nil || lease == nil {
			t.Fatal(lease, err)
		}
		claimedUntil := lease.LockExpiry
		ctx, stop := tr.KeepAlive(context.Background(), lease, vis)
		for end := time.Now().Add(4 * vis); time.Now().Before(end); time.Sleep(vis / 6) { // the handler
			if l, err := other.Claim("w2", vis); err != nil || l != nil {
				t.Fatalf("another worker claimed %+v (%v) from a kept lease", l, err)
			}
			if ctx.Err() != nil {
				t.Fatalf("the handler's context ended: %v", context.Cause(ctx))
			}
		}
		if err := stop(); err != nil {
			t.Fatalf("stop: %v", err)
		}
		if ctx.Err() == nil {
			t.Fatal("stop left the handler's context running")
		}
		if !lease.LockExpiry.After(claimedUntil.Add(2 * vis)) {
			t.Fatalf("lock expiry %v, claimed until %v: not extended", lease.LockExpiry, claimedUntil)
		}
		if err := stop(); err != nil {
			t.Fatalf("stop again: %v", err)
		}
		// Stopped: nothing extends it any more, so it lapses and another worker gets it.
		time.Sleep(time.Until(lease.LockExpiry) + 50*time.Millisecond)
		taken := claim(t, other, "w2")
		if taken.Seq != lease.Seq {
			t.Fatalf("got seq %d, want the lapsed %d", taken.Seq, lease.Seq)
		}
		wantError(t, "ack of the lapsed lease", tr.Ack(lease), harel.ErrLeaseLost)
		ack(t, other, taken)
	})
	t.Run("a lost lease ends the handler's context", func(t *testing.T) {
		publish(t, tr, "h", event(2))
		lease, err := tr.Claim("w", vis)
		if err != nil || lease == nil {
			t.Fatal(lease, err)
		}
		ctx, stop := tr.KeepAlive(context.Background(), lease, vis)
		if released, err := other.Release("h"); err != nil || !released {
			t.Fatal(released, err)
		}
		taken := claim(t, other, "w2")
		select {
		case <-ctx.Done():
		case <-time.After(10 * vis):
			t.Fatal("the handler's context outlived its lease")
		}
		wantError(t, "the context's cause", context.Cause(ctx), harel.ErrLeaseLost)
		wantError(t, "stop", stop(), harel.ErrLeaseLost)
		ack(t, other, taken)
	})
	t.Run("the parent context ends it; bad input ends it at once", func(t *testing.T) {
		publish(t, tr, "p", event(3))
		lease := claim(t, tr, "w")
		parent, cancel := context.WithCancel(context.Background())
		ctx, stop := tr.KeepAlive(parent, lease, visibility)
		cancel()
		<-ctx.Done()
		if err := stop(); err != nil {
			t.Fatalf("stopped by its parent: %v", err)
		}
		ack(t, tr, lease)
		for _, c := range []struct {
			lease *harel.Lease
			vis   time.Duration
			part  string
		}{{nil, visibility, "lease is nil"}, {lease, 0, "visibility"}, {lease, -time.Second, "visibility"}} {
			ctx, stop := tr.KeepAlive(context.Background(), c.lease, c.vis)
			if ctx.Err() == nil {
				t.Errorf("keep_alive %s: the context is not done", c.part)
			}
			wantError(t, "keep_alive "+c.part, stop(), harel.ErrArgument, c.part)
		}
	})
}
