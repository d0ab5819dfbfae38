package harel_test

// Mapping tests of retry policies (issue 39): WithRetry reaches harel_options_set_retry,
// WithRetryPolicy and Message.Retry in every publish form (Publish, PublishWith,
// PublishMany, PublishManyWith, a Tx's Publish) reach harel_delivery's retry fields, and
// MessageInfo.RetryDelay comes from harel_message_page.retry_delays. By the test clock: a
// Nack with delay 0 parks the message for the backoff its claim drew (a millisecond before
// its end nothing is claimable, a millisecond after it is), a lapsed lease waits it after
// the lease's end, its group counted in Stats.Retrying (not Ready) meanwhile. Bad input,
// the binding's and the library's, is ErrArgument naming the field (and the message, in a
// batch), with the queue unchanged. The semantics are the Rust contract's
// (tests/common/contract_retry.rs).

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

// noJitter is a policy that waits its backoff exactly, so the test clock can find its end.
func noJitter(base time.Duration, factor float64, longest time.Duration) harel.Retry {
	return harel.Retry{Base: base, Factor: factor, Cap: longest, Jitter: harel.JitterNone}
}

// retryDelay is the backoff the head of group shows (nil: none).
func retryDelay(t *testing.T, tr *harel.Transport, group string) *time.Duration {
	t.Helper()
	page, err := tr.Peek(group, "", 1)
	if err != nil || len(page.Messages) == 0 {
		t.Fatalf("peek %q: %+v, %v", group, page, err)
	}
	return page.Messages[0].RetryDelay
}

// waitsFor expects nothing claimable until d from now (a millisecond before it, by the test
// clock) and the message of event n just after it.
func waitsFor(t *testing.T, tr *harel.Transport, clock *testClock, d time.Duration, n int) *harel.Lease {
	t.Helper()
	clock.Advance(d - time.Millisecond)
	claimNone(t, tr, fmt.Sprintf("still waiting its backoff of %v", d))
	clock.Advance(2 * time.Millisecond)
	return claimEvent(t, tr, n)
}

// nackParks nacks lease with delay 0 and expects its message, its group's head, parked
// until until (Stats, Peek).
func nackParks(t *testing.T, tr *harel.Transport, lease *harel.Lease, until time.Time) {
	t.Helper()
	if err := tr.Nack(lease, 0); err != nil {
		t.Fatal(err)
	}
	if s := stats(t, tr); s.Parked != 1 || s.Ready != 0 || s.Leased != 0 {
		t.Fatalf("after a nack of 0 under a policy: %+v, want the group parked", s)
	}
	page, err := tr.Peek(lease.GroupID, "", 1)
	if err != nil || len(page.Messages) != 1 {
		t.Fatalf("peek: %+v, %v", page, err)
	}
	m := page.Messages[0]
	if m.Seq != lease.Seq {
		t.Fatalf("the head is seq %d, not the nacked %d", m.Seq, lease.Seq)
	}
	if m.LockedBy != "__parked__" {
		t.Fatalf("after a nack of 0 under a policy: locked by %q, want __parked__", m.LockedBy)
	}
	wantTime(t, "the park's end", m.LockExpiry, until)
}

// WithRetry reaches the library: each claim draws min(Cap, Base * Factor^(n-1)), which Peek
// shows while the worker holds the message and after; a Nack of 0 parks it that long
// (Stats.Parked, GroupParked, "__parked__"); a Nack with a delay waits the worker's delay.
func TestWithRetryReachesTheLibrary(t *testing.T) {
	clock := newClock()
	tr := open(t, ":memory:", harel.WithClock(clock.Now), harel.WithRetry(noJitter(2*time.Second, 3, 20*time.Second)))
	publish(t, tr, "g", event(0))
	if d := retryDelay(t, tr, "g"); d != nil {
		t.Fatalf("never claimed: a backoff of %v, want none", *d)
	}
	lease := claimEvent(t, tr, 0)
	for i, backoff := range []time.Duration{2, 6, 18, 20, 20} {
		backoff *= time.Second
		if lease.Attempts != i+1 {
			t.Fatalf("claim %d: attempts %d", i+1, lease.Attempts)
		}
		wantDuration(t, fmt.Sprintf("claim %d's backoff", i+1), retryDelay(t, tr, "g"), backoff)
		nackParks(t, tr, lease, clock.Now().Add(backoff))
		page, err := tr.Groups(harel.GroupParked, "", 10)
		if err != nil || len(page.Groups) != 1 || page.Groups[0].GroupID != "g" {
			t.Fatalf("parked groups: %+v, %v", page, err)
		}
		wantDuration(t, "a parked message's backoff", retryDelay(t, tr, "g"), backoff)
		lease = waitsFor(t, tr, clock, backoff, 0)
	}
	if err := tr.Nack(lease, time.Second); err != nil {
		t.Fatal(err)
	}
	lease = waitsFor(t, tr, clock, time.Second, 0)
	if lease.Attempts != 7 {
		t.Fatalf("attempts %d, want 7: the worker's own delay won over the backoff of 20 s", lease.Attempts)
	}
	ack(t, tr, lease)
	claimNone(t, tr, "acked")
}

// A Retry's zero Factor and Cap are the ABI's defaults: doubling, up to an hour or the base
// if longer; Factor 1 keeps the backoff constant.
func TestRetryDefaults(t *testing.T) {
	for _, c := range []struct {
		what     string
		retry    harel.Retry
		backoffs []time.Duration
	}{
		{"factor 0 doubles, cap 0 is an hour", noJitter(1000*time.Second, 0, 0),
			[]time.Duration{1000 * time.Second, 2000 * time.Second, time.Hour, time.Hour}},
		{"cap 0 with a base over an hour is the base", noJitter(2*time.Hour, 3, 0),
			[]time.Duration{2 * time.Hour, 2 * time.Hour}},
		{"factor 1 is constant", noJitter(1500*time.Millisecond, 1, time.Minute),
			[]time.Duration{1500 * time.Millisecond, 1500 * time.Millisecond, 1500 * time.Millisecond}},
		{"the shortest base", noJitter(time.Millisecond, 16, 0),
			[]time.Duration{time.Millisecond, 16 * time.Millisecond, 256 * time.Millisecond, 4096 * time.Millisecond}},
		{"the longest cap", noJitter(time.Hour, 16, tenYears), []time.Duration{time.Hour, 16 * time.Hour}},
	} {
		t.Run(c.what, func(t *testing.T) {
			clock := newClock()
			tr := open(t, ":memory:", harel.WithClock(clock.Now), harel.WithRetry(c.retry))
			publish(t, tr, "g", event(1))
			for i, backoff := range c.backoffs {
				lease := claimEvent(t, tr, 1)
				wantDuration(t, fmt.Sprintf("claim %d's backoff", i+1), retryDelay(t, tr, "g"), backoff)
				nackParks(t, tr, lease, clock.Now().Add(backoff))
				clock.Advance(backoff + time.Millisecond)
			}
		})
	}
}

// Each Jitter reaches the library: full (the zero value) draws in [0, d), equal in
// [d/2, d), each claim anew; none is d.
func TestJitterReachesTheLibrary(t *testing.T) {
	for _, c := range []struct {
		jitter    harel.Jitter
		low, high time.Duration
	}{
		{harel.Jitter(0), 0, 10 * time.Second},
		{harel.JitterFull, 0, 10 * time.Second},
		{harel.JitterEqual, 5 * time.Second, 10 * time.Second},
		{harel.JitterNone, 10 * time.Second, 10 * time.Second},
	} {
		t.Run(c.jitter.String(), func(t *testing.T) {
			tr := memory(t, newClock())
			policy := harel.Retry{Base: 10 * time.Second, Factor: 1, Cap: 10 * time.Second, Jitter: c.jitter}
			const n = 20
			for i := 0; i < n; i++ {
				publish(t, tr, fmt.Sprintf("g%02d", i), event(i), harel.WithRetryPolicy(policy))
			}
			for i := 0; i < n; i++ {
				claim(t, tr, "w")
			}
			drawn := map[time.Duration]bool{}
			for i := 0; i < n; i++ {
				d := retryDelay(t, tr, fmt.Sprintf("g%02d", i))
				if d == nil || *d < c.low || *d > c.high || (*d == c.high && c.low != c.high) {
					t.Fatalf("%v drew %v, want it in [%v, %v)", c.jitter, d, c.low, c.high)
				}
				drawn[*d] = true
			}
			if c.low == c.high && len(drawn) != 1 || c.low != c.high && len(drawn) < 2 {
				t.Fatalf("%v drew %v", c.jitter, drawn)
			}
		})
	}
}

// Jitter's String is its Go name; a Retry's zero Jitter is JitterFull.
func TestJitterString(t *testing.T) {
	for j, want := range map[harel.Jitter]string{harel.JitterFull: "JitterFull", harel.JitterEqual: "JitterEqual",
		harel.JitterNone: "JitterNone", 7: "Jitter(7)", -1: "Jitter(-1)"} {
		if got := j.String(); got != want {
			t.Errorf("Jitter(%d).String() = %q, want %q", int32(j), got, want)
		}
	}
	if (harel.Retry{}).Jitter != harel.JitterFull {
		t.Error("the zero Retry's Jitter is not JitterFull")
	}
}

// Each publish form's policy reaches the library, on a queue without one and over the
// queue's (the message's own wins): its claim draws 5 s, its nack of 0 parks it 5 s. A
// message behind it with no policy of its own takes the queue's (or none).
func TestRetryPolicyReachesTheLibrary(t *testing.T) {
	own := noJitter(5*time.Second, 1, 5*time.Second)
	forms := []struct {
		name    string
		publish func(tr *harel.Transport) error
	}{
		{"Publish", func(tr *harel.Transport) error {
			return tr.Publish("g", event(1), harel.WithRetryPolicy(own))
		}},
		{"PublishWith", func(tr *harel.Transport) error {
			p, err := tr.PublishWith("g", event(1), harel.WithRetryPolicy(own), harel.WithPriority(2))
			if err == nil && (p.Seq != 1 || p.Duplicate || p.Replaced) {
				err = fmt.Errorf("published %+v, want seq 1 stored", p)
			}
			return err
		}},
		{"PublishWith beside a key and a ttl", func(tr *harel.Transport) error {
			_, err := tr.PublishWith("g", event(1), harel.WithKey("k"), harel.WithTTL(time.Hour),
				harel.WithRetryPolicy(own))
			return err
		}},
		{"PublishMany", func(tr *harel.Transport) error {
			return tr.PublishMany([]harel.Message{{GroupID: "g", Event: event(1), Retry: &own}})
		}},
		{"PublishManyWith", func(tr *harel.Transport) error {
			p, err := tr.PublishManyWith([]harel.Message{{GroupID: "g", Event: event(1), Retry: &own}})
			if err == nil && (len(p) != 1 || p[0].Seq != 1) {
				err = fmt.Errorf("published %+v, want seq 1", p)
			}
			return err
		}},
		{"Tx.Publish", func(tr *harel.Transport) error {
			_, err := tr.InTx(context.Background(), func(tx *harel.Tx) error {
				return tx.Publish("g", event(1), harel.WithRetryPolicy(own))
			})
			return err
		}},
	}
	for _, form := range forms {
		for _, queue := range []*harel.Retry{nil, {Base: 50 * time.Second, Factor: 1, Jitter: harel.JitterNone}} {
			name := form.name + ", a queue without a policy"
			if queue != nil {
				name = form.name + ", over the queue's"
			}
			t.Run(name, func(t *testing.T) {
				clock := newClock()
				opts := []harel.Option{harel.WithClock(clock.Now)}
				if queue != nil {
					opts = append(opts, harel.WithRetry(*queue))
				}
				tr := open(t, ":memory:", opts...)
				if err := form.publish(tr); err != nil {
					t.Fatalf("publish: %v", err)
				}
				publish(t, tr, "g", event(2)) // behind it, none of its own
				lease := claimEvent(t, tr, 1)
				wantDuration(t, "its own backoff", retryDelay(t, tr, "g"), 5*time.Second)
				nackParks(t, tr, lease, at(5*time.Second))
				ack(t, tr, waitsFor(t, tr, clock, 5*time.Second, 1))
				lease = claimEvent(t, tr, 2)
				if queue == nil {
					if d := retryDelay(t, tr, "g"); d != nil {
						t.Fatalf("no policy: a backoff of %v", *d)
					}
					if err := tr.Nack(lease, 0); err != nil {
						t.Fatal(err)
					}
					ack(t, tr, claimEvent(t, tr, 2)) // freed at once
				} else {
					wantDuration(t, "the queue's backoff", retryDelay(t, tr, "g"), 50*time.Second)
					nackParks(t, tr, lease, clock.Now().Add(50*time.Second))
					ack(t, tr, waitsFor(t, tr, clock, 50*time.Second, 2))
				}
				claimNone(t, tr, "acked")
			})
		}
	}
}

// No policy anywhere: no backoff shown, a nack of 0 frees the message at once (as before
// retries), for every message of a page.
func TestNoRetryPolicy(t *testing.T) {
	tr := memory(t, newClock())
	publish(t, tr, "g", event(1))
	publish(t, tr, "g", event(2))
	lease := claimEvent(t, tr, 1)
	for _, m := range pageOf(t, tr, "g") {
		if m.RetryDelay != nil {
			t.Fatalf("seq %d shows a backoff of %v without a policy", m.Seq, *m.RetryDelay)
		}
	}
	if err := tr.Nack(lease, 0); err != nil {
		t.Fatal(err)
	}
	if s := stats(t, tr); s.Parked != 0 || s.Ready != 1 {
		t.Fatalf("stats: %+v, want the group ready", s)
	}
	ack(t, tr, claimEvent(t, tr, 1))
}

// Peek shows each message's own: the head's drawn backoff, -1 (nil) for those behind it,
// page after page.
func TestPeekShowsEachMessagesBackoff(t *testing.T) {
	tr := open(t, ":memory:", harel.WithClock(newClock().Now), harel.WithRetry(noJitter(3*time.Second, 2, time.Minute)))
	for i := 0; i < 5; i++ {
		publish(t, tr, "g", event(i))
	}
	claimEvent(t, tr, 0)
	var all []harel.MessageInfo
	for cursor := ""; ; {
		page, err := tr.Peek("g", cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page.Messages...)
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	if len(all) != 5 {
		t.Fatalf("peeked %d messages, want 5", len(all))
	}
	wantDuration(t, "the head's backoff", all[0].RetryDelay, 3*time.Second)
	for _, m := range all[1:] {
		if m.RetryDelay != nil {
			t.Errorf("seq %d, never claimed, shows %v", m.Seq, *m.RetryDelay)
		}
	}
}

// A lease that lapses is a failed attempt: the message waits the backoff after the lease's
// end (an Extend moves both), and every claim counts toward WithMaxAttempts.
func TestRetryAfterALapsedLease(t *testing.T) {
	clock := newClock()
	tr := open(t, ":memory:", harel.WithClock(clock.Now), harel.WithMaxAttempts(3),
		harel.WithRetry(noJitter(10*time.Second, 2, 100*time.Second)))
	publish(t, tr, "g", event(0))
	first := claimEvent(t, tr, 0)
	clock.Advance(20 * time.Second)
	if err := tr.Extend(first, visibility); err != nil {
		t.Fatal(err)
	}
	second := waitsFor(t, tr, clock, visibility+10*time.Second, 0)
	if second.Attempts != 2 {
		t.Fatalf("attempts %d, want 2", second.Attempts)
	}
	wantDuration(t, "the second claim's backoff", retryDelay(t, tr, "g"), 20*time.Second)
	waitsFor(t, tr, clock, visibility+20*time.Second, 0)
	clock.Advance(visibility + 41*time.Second)
	claimNone(t, tr, "claimed 3 times: buried")
	if d := deadLetters(t, tr); len(d) != 1 || !strings.Contains(d[0].Reason, "max_attempts is 3") {
		t.Fatalf("dead letters: %+v", d)
	}
}

// wantRetrying fails unless the stats count these groups ready, leased and retrying (none
// held, none parked), the counts adding up to Groups: Ready excludes the retrying.
func wantRetrying(t *testing.T, what string, tr *harel.Transport, ready, leased, retrying uint64) {
	t.Helper()
	s := stats(t, tr)
	if s.Ready != ready || s.Leased != leased || s.Retrying != retrying || s.Held != 0 || s.Parked != 0 {
		t.Errorf("%s: stats %+v, want ready %d, leased %d, retrying %d", what, s, ready, leased, retrying)
	}
	if sum := s.Ready + s.Leased + s.Parked + s.Delayed + s.Paused + s.Held + s.Retrying; sum != s.Groups {
		t.Errorf("%s: the counts of %+v add up to %d, not its %d groups", what, s, sum, s.Groups)
	}
	if (s.OldestReadySeq == nil) != (ready == 0) {
		t.Errorf("%s: oldest ready seq %v with %d groups ready", what, s.OldestReadySeq, ready)
	}
}

// Stats.Retrying counts a group whose head's lease lapsed while it waits its backoff, from
// the lease's end to the backoff's end (by the test clock), in none of Ready and Leased;
// then the group is ready again.
func TestStatsCountARetryingGroup(t *testing.T) {
	clock := newClock()
	tr := open(t, ":memory:", harel.WithClock(clock.Now),
		harel.WithRetry(noJitter(10*time.Second, 1, 10*time.Second)))
	publish(t, tr, "g", event(0))
	wantRetrying(t, "published", tr, 1, 0, 0)
	lease, err := tr.Claim("w", time.Second)
	if err != nil || lease == nil {
		t.Fatalf("claim: %+v, %v", lease, err)
	}
	wantRetrying(t, "leased", tr, 0, 1, 0)
	clock.Advance(time.Second + time.Millisecond)
	wantRetrying(t, "just after the lease's end", tr, 0, 0, 1)
	clock.Advance(10*time.Second - 2*time.Millisecond)
	wantRetrying(t, "just before the backoff's end", tr, 0, 0, 1)
	if retrying, ready := groupIDs(t, tr, harel.GroupRetrying), groupIDs(t, tr, harel.GroupReady); retrying != "g" ||
		ready != "" {
		t.Errorf("listed retrying %q and ready %q, want g retrying only", retrying, ready)
	}
	claimNone(t, tr, "still waiting its backoff")
	clock.Advance(2 * time.Millisecond)
	wantRetrying(t, "after the backoff", tr, 1, 0, 0)
	if ready := groupIDs(t, tr, harel.GroupReady); ready != "g" {
		t.Errorf("listed ready %q after the backoff, want g", ready)
	}
	if again := claimEvent(t, tr, 0); again.Attempts != 2 {
		t.Fatalf("attempts %d, want 2", again.Attempts)
	}
	wantRetrying(t, "claimed again", tr, 0, 1, 0)
}

// The queue's policy is the claiming Transport's: a Transport without WithRetry on the same
// file claims with none (a nack of 0 frees at once); a message's own policy holds whoever
// claims it.
func TestRetryIsTheClaimingTransports(t *testing.T) {
	clock := newClock()
	path := tempDB(t)
	with := open(t, path, harel.WithClock(clock.Now), harel.WithRetry(noJitter(time.Minute, 1, time.Minute)))
	without := open(t, path, harel.WithClock(clock.Now))
	publish(t, without, "g", event(1))
	lease := claimEvent(t, without, 1)
	if d := retryDelay(t, with, "g"); d != nil {
		t.Fatalf("claimed without a policy: %v", *d)
	}
	if err := without.Nack(lease, 0); err != nil {
		t.Fatal(err)
	}
	lease = claimEvent(t, with, 1)
	wantDuration(t, "claimed with the queue's policy", retryDelay(t, without, "g"), time.Minute)
	nackParks(t, without, lease, at(time.Minute))
	lease = waitsFor(t, without, clock, time.Minute, 1)
	ack(t, without, lease)

	publish(t, with, "h", event(2), harel.WithRetryPolicy(noJitter(time.Second, 1, time.Second)))
	lease = claimEvent(t, without, 2)
	wantDuration(t, "its own, claimed without the queue's", retryDelay(t, with, "h"), time.Second)
	nackParks(t, without, lease, clock.Now().Add(time.Second))
	ack(t, with, waitsFor(t, with, clock, time.Second, 2))
}

// Every refusal of a policy, the binding's (a Base of 0, which the ABI reads as none) and
// the library's: at Open (ErrArgument, "WithRetry: retry.<field> ..."), at a publish,
// a transaction's publish (refused at once; the transaction goes on) and in each batch
// (naming the message). Nothing is written.
func TestBadRetryInput(t *testing.T) {
	good := harel.Retry{Base: time.Second, Factor: 2, Cap: time.Minute}
	with := func(change func(r *harel.Retry)) harel.Retry {
		r := good
		change(&r)
		return r
	}
	const baseRange = "; it must be finite seconds, 0.001..315360000 (ten years)"
	const factorRange = "; it must be finite, 1..16"
	const capRange = "; it must be finite seconds, from base (1) to 315360000 (ten years)"
	const jitters = "; it must be HAREL_JITTER_FULL (0), _EQUAL (1) or _NONE (2)"
	bad := []struct {
		retry harel.Retry
		part  string
	}{
		// the binding's
		{with(func(r *harel.Retry) { r.Base = 0 }), "retry.base is 0" + baseRange},
		{harel.Retry{}, "retry.base is 0" + baseRange},
		{harel.Retry{Jitter: 7}, "retry.base is 0" + baseRange},
		// the library's
		{with(func(r *harel.Retry) { r.Base = -time.Second }), "retry.base is -1" + baseRange},
		{with(func(r *harel.Retry) { r.Base = 500 * time.Microsecond }), "retry.base is 0.0005" + baseRange},
		{with(func(r *harel.Retry) { r.Base, r.Cap = tenYears+time.Second, 0 }), "retry.base is 315360001" + baseRange},
		{with(func(r *harel.Retry) { r.Base = math.MaxInt64 }), "retry.base is 9223372036.85"},
		{with(func(r *harel.Retry) { r.Factor = 0.5 }), "retry.factor is 0.5" + factorRange},
		{with(func(r *harel.Retry) { r.Factor = -2 }), "retry.factor is -2" + factorRange},
		{with(func(r *harel.Retry) { r.Factor = 17 }), "retry.factor is 17" + factorRange},
		{with(func(r *harel.Retry) { r.Factor = math.NaN() }), "retry.factor is NaN" + factorRange},
		{with(func(r *harel.Retry) { r.Factor = math.Inf(1) }), "retry.factor is inf" + factorRange},
		{with(func(r *harel.Retry) { r.Cap = 500 * time.Millisecond }), "retry.cap is 0.5" + capRange},
		{with(func(r *harel.Retry) { r.Cap = -time.Second }), "retry.cap is -1" + capRange},
		{with(func(r *harel.Retry) { r.Cap = tenYears + time.Second }), "retry.cap is 315360001" + capRange},
		{with(func(r *harel.Retry) { r.Jitter = 3 }), "retry.jitter is 3" + jitters},
		{with(func(r *harel.Retry) { r.Jitter = -1 }), "retry.jitter is -1" + jitters},
		{with(func(r *harel.Retry) { r.Jitter = math.MaxInt32 }), "retry.jitter is 2147483647" + jitters},
	}
	tr := memory(t, newClock())
	stored(t, "kept", publishWith(t, tr, "g", 1, harel.WithRetryPolicy(good)), 0)
	before := stats(t, tr)
	tx := begin(t, tr)
	for _, c := range bad {
		what := fmt.Sprintf("%+v", c.retry)
		refused, err := harel.Open(":memory:", harel.WithRetry(c.retry))
		if refused != nil {
			refused.Close()
			t.Errorf("%s: Open returned a Transport", what)
		}
		wantError(t, "WithRetry "+what, err, harel.ErrArgument, "WithRetry: "+c.part)
		p, err := tr.PublishWith("new", event(2), harel.WithRetryPolicy(c.retry))
		if p != (harel.Published{}) {
			t.Errorf("%s: a refused publish_with returned %+v", what, p)
		}
		wantError(t, "publish_with "+what, err, harel.ErrArgument, c.part)
		wantError(t, "publish "+what, tr.Publish("new", event(2), harel.WithRetryPolicy(c.retry)), harel.ErrArgument,
			c.part)
		wantError(t, "a transaction's publish "+what, tx.Publish("new", event(2), harel.WithRetryPolicy(c.retry)),
			harel.ErrArgument, c.part)
		r := c.retry
		goodMsg := harel.Message{GroupID: "new", Event: event(2), Retry: &good}
		badMsg := harel.Message{GroupID: "new", Event: event(3), Retry: &r}
		batch, err := tr.PublishManyWith([]harel.Message{goodMsg, badMsg})
		if batch != nil {
			t.Errorf("%s: a refused publish_many_with returned %+v", what, batch)
		}
		wantError(t, "publish_many_with "+what, err, harel.ErrArgument, "messages[1]."+c.part)
		wantError(t, "publish_many "+what, tr.PublishMany([]harel.Message{badMsg, goodMsg}), harel.ErrArgument,
			"messages[0]."+c.part)
	}
	// the transaction goes on: only its good publish
	txPublish(t, tx, "new", 4, harel.WithRetryPolicy(good))
	if published := commit(t, tx); len(published) != 1 {
		t.Fatalf("the transaction's publishes: %+v", published)
	}
	after := stats(t, tr)
	if after.Messages != before.Messages+1 || after.Groups != before.Groups+1 {
		t.Fatalf("stats: %+v, before %+v", after, before)
	}
	// the first refused option fails Open, whatever its place
	_, err := harel.Open(":memory:", harel.WithMaxAttempts(3), harel.WithRetry(harel.Retry{Base: -time.Second}),
		harel.WithArchive(time.Hour))
	wantError(t, "WithRetry among others", err, harel.ErrArgument, "WithRetry: retry.base is -1"+baseRange)
}

// Rounds of policies in (with kilobytes of strings) and backoffs out (a page of 1000
// messages with its array of 8 KB of backoffs, freed with the page: nothing new for the
// binding to free), of refusals and of opens with a policy, good and bad, do not grow the
// process's memory.
func TestRetryFreesWhatItAllocates(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	clock := newClock()
	policy := harel.Retry{Base: time.Second, Factor: 2, Cap: time.Minute, Jitter: harel.JitterEqual}
	tr := open(t, tempDB(t), harel.WithSynchronousFull(false), harel.WithClock(clock.Now), harel.WithRetry(policy))
	big := strings.Repeat("x", 8192)
	group := "group-" + big
	ev := json.RawMessage(`{"data":"` + big + `"}`)
	const depth = 1000 // short messages in a short group id: the page is cheap, its backoffs 8 KB
	batch := make([]harel.Message, depth)
	for i := range batch {
		batch[i] = harel.Message{GroupID: "deep", Event: event(i), Retry: &policy}
	}
	if _, err := tr.PublishManyWith(batch); err != nil {
		t.Fatal(err)
	}
	if err := tr.Nack(claimEvent(t, tr, 0), 0); err != nil { // its head shows a backoff from now on
		t.Fatal(err)
	}
	bad := harel.Retry{Base: time.Second, Factor: 17}
	round := func(i int) {
		publish(t, tr, group, ev, harel.WithRetryPolicy(policy))
		if _, err := tr.PublishManyWith([]harel.Message{{GroupID: group, Event: ev, Retry: &policy}}); err != nil {
			t.Fatal(err)
		}
		lease := claim(t, tr, "w") // of either group
		if err := tr.Nack(lease, 0); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute) // past any backoff
		page, err := tr.Peek("deep", "", depth)
		if err != nil || len(page.Messages) != depth || page.Messages[0].RetryDelay == nil ||
			page.Messages[depth-1].RetryDelay != nil {
			t.Fatalf("peek: %d messages, %v", len(page.Messages), err)
		}
		if _, err := tr.PublishManyWith([]harel.Message{{GroupID: group, Event: ev}, {GroupID: group, Event: ev,
			Retry: &bad}}); err == nil {
			t.Fatal("a factor of 17 was taken")
		}
		if _, err := tr.PurgeGroup(group); err != nil {
			t.Fatal(err)
		}
		if _, err := harel.Open(":memory:", harel.WithRetry(bad)); err == nil {
			t.Fatal("a factor of 17 was taken at Open")
		}
		if i%10 == 0 {
			other, err := harel.Open(":memory:", harel.WithRetry(policy))
			if err != nil {
				t.Fatal(err)
			}
			other.Close()
		}
	}
	// a leaked array of backoffs per round would be 8 MB; a leaked string, as much
	const rounds, limit = 1000, 3 << 20
	set := func() {
		for i := 0; i < rounds; i++ {
			round(i)
		}
	}
	set()
	grown := settledGrowth(t, limit, set)
	t.Logf("resident memory grew by %d KiB over %d rounds of retries", grown/1024, rounds)
	if grown > limit {
		t.Fatalf("resident memory grew by %d KiB over %d rounds of retries: a leak", grown/1024, rounds)
	}
}

// A retry policy: a message whose handling fails (a Nack with delay 0) waits a backoff that
// grows with each attempt, up to its cap.
func ExampleWithRetry() {
	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { // a clock the example moves, instead of waiting
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	t, err := harel.Open(":memory:", harel.WithClock(clock), harel.WithRetry(harel.Retry{
		Base: time.Second, Factor: 2, Cap: 5 * time.Second, Jitter: harel.JitterNone}))
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close()

	if err := t.Publish("emails", []byte(`{"to":"a@example.com"}`)); err != nil {
		log.Fatal(err)
	}
	for attempt := 1; attempt <= 4; attempt++ {
		lease, _ := t.Claim("worker-1", 30*time.Second)
		page, _ := t.Peek("emails", "", 1)
		fmt.Println("attempt", lease.Attempts, "failed; retried in", *page.Messages[0].RetryDelay)
		_ = t.Nack(lease, 0) // parked for the backoff
		mu.Lock()
		now = now.Add(time.Minute) // past it
		mu.Unlock()
	}
	// Output:
	// attempt 1 failed; retried in 1s
	// attempt 2 failed; retried in 2s
	// attempt 3 failed; retried in 4s
	// attempt 4 failed; retried in 5s
}
