package harel_test

// Mapping tests of limits per routing key (issue 39): SetLimit with a concurrency, a rate
// and both, replacing a key's limits; Limits field by field (InUse, Tokens, Held) and in
// order, a listed limit set again as it is; Stats.Held (Ready without the held groups);
// Metrics().LimitHolds (each hold counted); RemoveLimit serving the held groups; a limit
// seen through another Transport and after reopening; bad input, the binding's and the
// library's, each ErrArgument with its message and the queue unchanged; ErrClosed; a
// sharded queue, its use summed; goroutines claiming under a limit while others set and
// list it; rounds of them freeing what they allocate.
// The semantics are the Rust contract's (tests/common/contract_limits.rs).

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

func setLimit(t *testing.T, tr *harel.Transport, routingKey string, limit harel.Limit) {
	t.Helper()
	if err := tr.SetLimit(routingKey, limit); err != nil {
		t.Fatalf("set_limit %q %+v: %v", routingKey, limit, err)
	}
}

func removeLimit(t *testing.T, tr *harel.Transport, routingKey string) {
	t.Helper()
	if err := tr.RemoveLimit(routingKey); err != nil {
		t.Fatalf("remove_limit %q: %v", routingKey, err)
	}
}

func limits(t *testing.T, tr *harel.Transport) []harel.LimitInfo {
	t.Helper()
	list, err := tr.Limits()
	if err != nil {
		t.Fatal(err)
	}
	if list == nil {
		t.Fatal("limits: nil, want a slice (empty when there is none)")
	}
	return list
}

// oneLimit is the only limit listed, checked to be routingKey's.
func oneLimit(t *testing.T, tr *harel.Transport, routingKey string) harel.LimitInfo {
	t.Helper()
	list := limits(t, tr)
	if len(list) != 1 || list[0].RoutingKey != routingKey {
		t.Fatalf("limits: %s, want %q's alone", showLimits(list), routingKey)
	}
	return list[0]
}

// showLimits prints a listing with its pointers followed.
func showLimits(list []harel.LimitInfo) string {
	var all []string
	for _, l := range list {
		rate, tokens := "nil", "nil"
		if l.Limit.Rate != nil {
			rate = fmt.Sprintf("%+v", *l.Limit.Rate)
		}
		if l.Tokens != nil {
			tokens = fmt.Sprint(*l.Tokens)
		}
		all = append(all, fmt.Sprintf("{%q concurrency %d rate %s in_use %d tokens %s held %d}", l.RoutingKey,
			l.Limit.Concurrency, rate, l.InUse, tokens, l.Held))
	}
	return "[" + strings.Join(all, " ") + "]"
}

// wantUse fails unless info has these numbers in use and held.
func wantUse(t *testing.T, what string, info harel.LimitInfo, inUse, held uint64) {
	t.Helper()
	if info.InUse != inUse || info.Held != held {
		t.Errorf("%s: %s, want in_use %d, held %d", what, showLimits([]harel.LimitInfo{info}), inUse, held)
	}
}

// wantTokens fails unless info has tokens (within a hair: they are computed from times).
func wantTokens(t *testing.T, what string, info harel.LimitInfo, tokens float64) {
	t.Helper()
	if info.Tokens == nil || math.Abs(*info.Tokens-tokens) > 1e-6 {
		t.Errorf("%s: %s, want tokens %v", what, showLimits([]harel.LimitInfo{info}), tokens)
	}
}

// wantHeld fails unless the stats count these groups ready, leased and held by a limit
// (none retrying, none parked), the counts adding up to Groups: Ready excludes the held.
func wantHeld(t *testing.T, what string, tr *harel.Transport, ready, leased, held uint64) {
	t.Helper()
	s := stats(t, tr)
	if s.Ready != ready || s.Leased != leased || s.Held != held || s.Retrying != 0 || s.Parked != 0 {
		t.Errorf("%s: stats %+v, want ready %d, leased %d, held %d", what, s, ready, leased, held)
	}
	if sum := s.Ready + s.Leased + s.Parked + s.Delayed + s.Paused + s.Held + s.Retrying; sum != s.Groups {
		t.Errorf("%s: the counts of %+v add up to %d, not its %d groups", what, s, sum, s.Groups)
	}
}

// wantLimitHolds fails unless tr's Metrics count holds groups held by a limit.
func wantLimitHolds(t *testing.T, what string, tr *harel.Transport, holds uint64) {
	t.Helper()
	m, err := tr.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if m.LimitHolds != holds {
		t.Errorf("%s: Metrics().LimitHolds %d, want %d", what, m.LimitHolds, holds)
	}
}

// claimedGroups claims until nothing is deliverable, acking nothing, and returns the
// leases by group id.
func claimedGroups(t *testing.T, tr *harel.Transport) (map[string]*harel.Lease, string) {
	t.Helper()
	leases := map[string]*harel.Lease{}
	var ids []string
	for {
		lease, err := tr.Claim("w", visibility)
		if err != nil {
			t.Fatalf("claim: %v", err)
		}
		if lease == nil {
			return leases, strings.Join(ids, ",")
		}
		leases[lease.GroupID] = lease
		ids = append(ids, lease.GroupID)
	}
}

// A concurrency limit of 1 on a key with 3 groups lets one claim through, the others pass
// over them (a group without the key is served); the listing shows the lease in use and the
// groups held; an ack lets the next held group through, the one that came first; removing
// the limit serves the rest at once, and a second removal is refused.
func TestConcurrencyLimit(t *testing.T) {
	tr := memory(t, newClock())
	if list := limits(t, tr); len(list) != 0 {
		t.Fatalf("limits of a new queue: %s", showLimits(list))
	}
	setLimit(t, tr, "k", harel.Limit{Concurrency: 1})
	for _, g := range []string{"k1", "k2", "k3"} {
		publish(t, tr, g, event(1), harel.WithRoutingKey("k"))
	}
	publish(t, tr, "free", event(2))
	wantHeld(t, "before any claim", tr, 4, 0, 0)
	wantLimitHolds(t, "before any claim", tr, 0)
	leases, got := claimedGroups(t, tr)
	if got != "k1,free" {
		t.Fatalf("claimed %s, want k1 and the group without the key", got)
	}
	wantHeld(t, "k at its limit", tr, 0, 2, 2)
	if held, ready := groupIDs(t, tr, harel.GroupHeld), groupIDs(t, tr, harel.GroupReady); held != "k2,k3" ||
		ready != "" {
		t.Errorf("listed held %q and ready %q, want k2 and k3 held only", held, ready)
	}
	wantLimitHolds(t, "k at its limit: k2 and k3 held", tr, 2)
	info := oneLimit(t, tr, "k")
	if info.Limit.Concurrency != 1 || info.Limit.Rate != nil || info.Tokens != nil {
		t.Errorf("a concurrency limit listed: %s", showLimits([]harel.LimitInfo{info}))
	}
	wantUse(t, "k at its limit", info, 1, 2)
	page, err := tr.Groups(harel.GroupLeased, "", 10)
	if err != nil || len(page.Groups) != 2 {
		t.Fatalf("leased groups: %+v, %v", page, err)
	}

	ack(t, tr, leases["k1"])
	wantUse(t, "after the ack", oneLimit(t, tr, "k"), 0, 2)
	wantHeld(t, "after the ack, before a claim gives one back", tr, 0, 1, 2)
	leases, got = claimedGroups(t, tr)
	if got != "k2" {
		t.Fatalf("after the ack claimed %q, want k2 (held first)", got)
	}
	wantUse(t, "k2 leased", oneLimit(t, tr, "k"), 1, 1)
	wantHeld(t, "k2 leased", tr, 0, 2, 1)

	removeLimit(t, tr, "k")
	if list := limits(t, tr); len(list) != 0 {
		t.Fatalf("limits after the removal: %s", showLimits(list))
	}
	wantHeld(t, "after the removal", tr, 1, 2, 0)
	if _, got = claimedGroups(t, tr); got != "k3" {
		t.Fatalf("after the removal claimed %q, want the held k3", got)
	}
	ack(t, tr, leases["k2"])
	err = tr.RemoveLimit("k")
	wantError(t, "a second removal", err, harel.ErrArgument, `routing key "k" has no limit to remove`)
}

// A rate limit's fields reach the listing: the bucket full at first (Tokens = Burst), the
// burst taken at once, then a token a 1/PerSecond seconds by the Transport's clock; both
// kinds at once; setting replaces the key's limits (a kind not given is off); a listed
// limit set again as it is; keys listed in order.
func TestRateLimit(t *testing.T) {
	clock := newClock()
	tr := memory(t, clock)
	rate := harel.Rate{PerSecond: 2, Burst: 3}
	setLimit(t, tr, "r", harel.Limit{Rate: &rate})
	info := oneLimit(t, tr, "r")
	if info.Limit.Concurrency != 0 || info.Limit.Rate == nil || *info.Limit.Rate != rate {
		t.Errorf("a rate limit listed: %s", showLimits([]harel.LimitInfo{info}))
	}
	if info.Limit.Rate == &rate {
		t.Error("the listing hands back the caller's Rate, not a copy")
	}
	wantTokens(t, "a new bucket", info, 3)
	wantUse(t, "a new bucket", info, 0, 0)
	for i := 0; i < 6; i++ {
		publish(t, tr, fmt.Sprintf("r%d", i), event(i), harel.WithRoutingKey("r"))
	}
	if _, got := claimedGroups(t, tr); got != "r0,r1,r2" {
		t.Fatalf("claimed %q, want the burst of 3", got)
	}
	info = oneLimit(t, tr, "r")
	wantTokens(t, "the burst taken", info, 0)
	wantUse(t, "the burst taken (no concurrency limit: none counted in use)", info, 0, 3)
	clock.Advance(250 * time.Millisecond)
	wantTokens(t, "a quarter second later", oneLimit(t, tr, "r"), 0.5)
	claimNone(t, tr, "half a token")
	clock.Advance(250 * time.Millisecond)
	if _, got := claimedGroups(t, tr); got != "r3" {
		t.Fatalf("a token later claimed %q, want r3", got)
	}

	// both kinds, listed with the other key in order; then replaced by a rate alone
	both := harel.Limit{Concurrency: 5, Rate: &harel.Rate{PerSecond: 0.5, Burst: 1}}
	setLimit(t, tr, "a", both)
	list := limits(t, tr)
	if len(list) != 2 || list[0].RoutingKey != "a" || list[1].RoutingKey != "r" ||
		!reflect.DeepEqual(list[0].Limit, both) {
		t.Fatalf("limits: %s", showLimits(list))
	}
	wantTokens(t, "a's new bucket", list[0], 1)
	publish(t, tr, "a1", event(7), harel.WithRoutingKey("a"))
	publish(t, tr, "a2", event(8), harel.WithRoutingKey("a"))
	leases, got := claimedGroups(t, tr)
	if got != "a1" {
		t.Fatalf("claimed %q, want a1 (a's one token)", got)
	}
	info = limits(t, tr)[0]
	wantUse(t, "a with both kinds", info, 1, 1)
	wantTokens(t, "a with both kinds", info, 0)
	setLimit(t, tr, "a", harel.Limit{Concurrency: 1})
	if info := limits(t, tr)[0]; !reflect.DeepEqual(info.Limit, harel.Limit{Concurrency: 1}) || info.Tokens != nil {
		t.Fatalf("a replaced by a concurrency alone: %s", showLimits([]harel.LimitInfo{info}))
	}
	claimNone(t, tr, "a at its concurrency, r out of tokens")
	ack(t, tr, leases["a1"])
	if _, got := claimedGroups(t, tr); got != "a2" {
		t.Fatalf("claimed %q, want a2 (no rate limit now)", got)
	}

	// every listed limit set again as it is leaves the listing as it was
	before := limits(t, tr)
	for _, l := range before {
		setLimit(t, tr, l.RoutingKey, l.Limit)
	}
	after := limits(t, tr)
	for i := range before {
		if !reflect.DeepEqual(before[i].Limit, after[i].Limit) || before[i].RoutingKey != after[i].RoutingKey {
			t.Errorf("set again: %s, was %s", showLimits(after), showLimits(before))
		}
	}
}

// A limit is the database's: another Transport on the file sees it, and a reopened one;
// the closed Transport's calls are ErrClosed.
func TestLimitOutlivesItsSetter(t *testing.T) {
	path := tempDB(t)
	first := open(t, path)
	setLimit(t, first, "k", harel.Limit{Concurrency: 1, Rate: &harel.Rate{PerSecond: 100, Burst: 10}})
	second := open(t, path)
	publish(t, second, "g1", event(1), harel.WithRoutingKey("k"))
	publish(t, second, "g2", event(2), harel.WithRoutingKey("k"))
	lease := claim(t, second, "w")
	claimNone(t, second, "limited through another Transport")
	if info := oneLimit(t, first, "k"); info.InUse != 1 || info.Held != 1 || info.Limit.Concurrency != 1 {
		t.Errorf("the setter's listing: %s", showLimits([]harel.LimitInfo{info}))
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	reopened := open(t, path, harel.WithCreateSchema(false))
	want := harel.Limit{Concurrency: 1, Rate: &harel.Rate{PerSecond: 100, Burst: 10}}
	if info := oneLimit(t, reopened, "k"); !reflect.DeepEqual(info.Limit, want) || info.Tokens == nil {
		t.Fatalf("the limit after reopening: %s", showLimits([]harel.LimitInfo{info}))
	}
	ack(t, second, lease)
	removeLimit(t, reopened, "k")
	ack(t, second, claim(t, second, "w"))

	for what, err := range map[string]error{"set_limit": first.SetLimit("k", harel.Limit{Concurrency: 1}),
		"remove_limit": first.RemoveLimit("k"), "limits": errOf(first.Limits())} {
		wantError(t, what+" after Close", err, harel.ErrClosed)
	}
}

// Bad input, the binding's (a NUL byte, a Concurrency that is not a uint32, a Rate of two
// zeros, which C reads as none) and the library's (an empty or not UTF-8 key, neither kind,
// each number out of its range, a key without a limit to remove), each ErrArgument with
// its message; none changes the queue: the limit set before is listed as it was.
func TestBadLimits(t *testing.T) {
	tr := memory(t, newClock())
	kept := harel.Limit{Concurrency: 3, Rate: &harel.Rate{PerSecond: 1, Burst: 2}}
	setLimit(t, tr, "kept", kept)
	rate := func(perSecond, burst float64) harel.Limit {
		return harel.Limit{Rate: &harel.Rate{PerSecond: perSecond, Burst: burst}}
	}
	const ok = "1..1000000"
	bad := []struct {
		what  string
		key   string
		limit harel.Limit
		parts []string
	}{
		{"NUL in the key", "k\x00", harel.Limit{Concurrency: 1}, []string{"routing_key holds a NUL byte"}},
		{"concurrency -1", "kept", harel.Limit{Concurrency: -1}, []string{"concurrency is -1; it must be " + ok}},
		{"a rate of two zeros", "kept", rate(0, 0),
			[]string{"rate is 0; it must be a finite number > 0, at most 1000000"}},
		{"an empty key", "", harel.Limit{Concurrency: 1}, []string{"routing_key is empty"}},
		{"a key not UTF-8", "k\xff", harel.Limit{Concurrency: 1}, []string{"routing_key", "UTF-8"}},
		{"the zero Limit", "kept", harel.Limit{}, []string{"the limit has neither a concurrency nor a rate"}},
		{"concurrency 1000001", "kept", harel.Limit{Concurrency: 1000001},
			[]string{"concurrency is 1000001; it must be " + ok}},
		{"rate 0", "kept", rate(0, 1), []string{"rate is 0; it must be a finite number > 0, at most 1000000"}},
		{"rate -1", "kept", rate(-1, 1), []string{"rate is -1"}},
		{"rate NaN", "kept", rate(math.NaN(), 1), []string{"rate is NaN"}},
		{"rate inf", "kept", rate(math.Inf(1), 1), []string{"rate is inf"}},
		{"rate 2000000", "kept", rate(2e6, 1), []string{"rate is 2000000"}},
		{"burst 0.5", "kept", rate(1, 0.5), []string{"burst is 0.5; it must be a finite number >= 1, at most 1000000"}},
		{"burst 0", "kept", rate(1, 0), []string{"burst is 0"}},
		{"burst NaN", "kept", rate(1, math.NaN()), []string{"burst is NaN"}},
		{"burst 2000000", "kept", rate(1, 2e6), []string{"burst is 2000000"}},
		{"a good concurrency, a bad burst", "kept",
			harel.Limit{Concurrency: 1, Rate: &harel.Rate{PerSecond: 1, Burst: 0.5}}, []string{"burst is 0.5"}},
	}
	if strconv.IntSize == 64 {
		wraps := 1 << 16
		wraps <<= 16 // 1<<32: as a uint32, 0 (none)
		bad = append(bad, struct {
			what  string
			key   string
			limit harel.Limit
			parts []string
		}{"concurrency 1<<32", "kept", harel.Limit{Concurrency: wraps, Rate: &harel.Rate{PerSecond: 1, Burst: 1}},
			[]string{"concurrency is 4294967296; it must be " + ok}})
	}
	for _, c := range bad {
		wantError(t, "set_limit: "+c.what, tr.SetLimit(c.key, c.limit), harel.ErrArgument, c.parts...)
	}
	for _, c := range []struct{ what, key, part string }{
		{"an empty key", "", "routing_key is empty"},
		{"NUL in the key", "kept\x00", "routing_key holds a NUL byte"},
		{"a key not UTF-8", "k\xff", "UTF-8"},
		{"a key without a limit", "none", `routing key "none" has no limit to remove`},
	} {
		wantError(t, "remove_limit: "+c.what, tr.RemoveLimit(c.key), harel.ErrArgument, c.part)
	}
	if info := oneLimit(t, tr, "kept"); !reflect.DeepEqual(info.Limit, kept) {
		t.Fatalf("the limit after the refusals: %s", showLimits([]harel.LimitInfo{info}))
	}
}

// On a sharded queue each shard holds the limit for its own groups, set and removed on
// every shard and listed once, its use summed: a concurrency of 1 lets one group of each
// shard through; a rate's tokens are each shard's bucket added up.
func TestLimitsOnShards(t *testing.T) {
	files := shardFiles(t, 2)
	tr := openShards(t, files, harel.WithClock(newClock().Now))
	groups := groupsOnShards(t, 2, 2) // two groups per shard
	for i, g := range append(groups[0], groups[1]...) {
		publish(t, tr, g, event(i), harel.WithRoutingKey("k"))
	}
	setLimit(t, tr, "k", harel.Limit{Concurrency: 1})
	setLimit(t, tr, "r", harel.Limit{Rate: &harel.Rate{PerSecond: 1, Burst: 2}})
	leases, got := claimedGroups(t, tr)
	if len(leases) != 2 {
		t.Fatalf("claimed %s, want one group of each shard", got)
	}
	shards := map[int]bool{}
	for g := range leases {
		shards[shardOf(t, g, 2)] = true
	}
	if len(shards) != 2 {
		t.Fatalf("claimed %s, want one group of each shard", got)
	}
	list := limits(t, tr)
	if len(list) != 2 || list[0].RoutingKey != "k" || list[1].RoutingKey != "r" {
		t.Fatalf("limits: %s", showLimits(list))
	}
	if list[0].Limit.Concurrency != 1 || list[0].Tokens != nil {
		t.Errorf("k over the shards: %s", showLimits(list))
	}
	wantUse(t, "k over the shards", list[0], 2, 2)
	wantTokens(t, "r over the shards", list[1], 4)
	wantHeld(t, "k over the shards", tr, 0, 2, 2)
	wantLimitHolds(t, "k over the shards: one group of each held", tr, 2)
	removeLimit(t, tr, "k")
	if _, got := claimedGroups(t, tr); len(strings.Split(got, ",")) != 2 {
		t.Fatalf("after the removal claimed %q, want the two held groups", got)
	}
	if list := limits(t, tr); len(list) != 1 || list[0].RoutingKey != "r" {
		t.Fatalf("limits after the removal: %s", showLimits(list))
	}
	wantError(t, "a second removal", tr.RemoveLimit("k"), harel.ErrArgument, `routing key "k" has no limit to remove`)
	wantError(t, "a bad limit", tr.SetLimit("k", harel.Limit{}), harel.ErrArgument, "neither")
}

// Goroutines at once, under the race detector, through one Transport and their own on one
// file: workers claim and ack under a concurrency limit of 2 while another sets it again
// and lists it; never more than 2 of the key's messages are held at once (counted from
// each claim's return to its ack's call, inside the lease), nor listed in use, and every
// message arrives exactly once.
func TestLimitsConcurrently(t *testing.T) {
	const workers, messages = 4, 200
	path := tempDB(t)
	opts := []harel.Option{harel.WithSynchronousFull(false), harel.WithBusyTimeout(time.Minute)}
	shared := open(t, path, opts...)
	setLimit(t, shared, "k", harel.Limit{Concurrency: 2})
	for i := 0; i < messages; i++ {
		publish(t, shared, fmt.Sprintf("g%d", i%20), event(i), harel.WithRoutingKey("k"))
	}
	deadline := time.Now().Add(2 * time.Minute)
	var failed, stop atomic.Bool
	fail := func(format string, args ...any) { failed.Store(true); t.Errorf(format, args...) }
	var held, most, acked atomic.Int64
	var mu sync.Mutex
	seen := map[int64]int{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the operator: sets the same limit again and lists it
		defer wg.Done()
		for !stop.Load() && !failed.Load() {
			if err := shared.SetLimit("k", harel.Limit{Concurrency: 2}); err != nil {
				fail("set_limit: %v", err)
				return
			}
			list, err := shared.Limits()
			if err != nil || len(list) != 1 || list[0].InUse > 2 {
				fail("limits: %s, %v", showLimits(list), err)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	for w := 0; w < workers; w++ {
		tr := shared
		if w%2 == 1 {
			tr = open(t, path, opts...)
		}
		worker := fmt.Sprintf("w%d", w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() && !failed.Load() {
				if time.Now().After(deadline) {
					fail("%s: %d of %d messages acked at the deadline", worker, acked.Load(), messages)
					return
				}
				lease, err := tr.Claim(worker, visibility)
				if err != nil {
					fail("%s: claim: %v", worker, err)
					return
				}
				if lease == nil {
					time.Sleep(time.Millisecond)
					continue
				}
				n := held.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(100 * time.Microsecond)
				held.Add(-1)
				if err := tr.Ack(lease); err != nil {
					fail("%s: ack: %v", worker, err)
					return
				}
				mu.Lock()
				seen[lease.Seq]++
				mu.Unlock()
				if acked.Add(1) == messages {
					stop.Store(true)
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() {
		return
	}
	if m := most.Load(); m > 2 || m < 1 {
		t.Errorf("at most %d of the key's messages were held at once, want 1..2", m)
	}
	if len(seen) != messages {
		t.Fatalf("%d distinct messages arrived, want %d", len(seen), messages)
	}
	for seq, n := range seen {
		if n != 1 {
			t.Errorf("seq %d arrived %d times", seq, n)
		}
	}
	wantUse(t, "at the end", oneLimit(t, shared, "k"), 0, 0)
}

// Rounds of SetLimit, Limits and RemoveLimit, with long keys and refused, free what they
// allocate (leak_test.go's way): the keys' C copies, the limit lists and their strings, the
// errors.
func TestLimitsFreeWhatTheyAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	tr := open(t, tempDB(t), harel.WithSynchronousFull(false))
	key := func(i int) string { return strings.Repeat("k", 8<<10) + fmt.Sprint(i) }
	round := func() {
		for i := 0; i < 16; i++ {
			limit := harel.Limit{Concurrency: i + 1}
			if i%2 == 1 {
				limit.Rate = &harel.Rate{PerSecond: float64(i), Burst: 1}
			}
			if err := tr.SetLimit(key(i), limit); err != nil {
				t.Fatal(err)
			}
		}
		list, err := tr.Limits()
		if err != nil || len(list) != 16 {
			t.Fatalf("limits: %d, %v", len(list), err)
		}
		if err := tr.SetLimit(key(0), harel.Limit{}); err == nil {
			t.Fatal("the zero Limit was taken")
		}
		if err := tr.SetLimit(key(0)+"\x00", harel.Limit{Concurrency: 1}); err == nil {
			t.Fatal("a NUL byte was taken")
		}
		for _, l := range list {
			if err := tr.RemoveLimit(l.RoutingKey); err != nil {
				t.Fatal(err)
			}
		}
		if err := tr.RemoveLimit(key(0)); err == nil || len(err.Error()) < 8<<10 {
			t.Fatalf("a second removal: %v", err)
		}
	}
	// a leak of the listed keys alone would be 128 KiB a round, 12 MiB; of the C copies of
	// the keys, more than twice that
	const rounds, limit = 100, 3 << 20
	set := func() {
		for i := 0; i < rounds; i++ {
			round()
		}
	}
	set()
	grown := settledGrowth(t, limit, set)
	t.Logf("resident memory grew by %d KiB over %d rounds of limits", grown/1024, rounds)
	if grown > limit {
		t.Fatalf("resident memory grew by %d KiB over %d rounds of limits: a leak", grown/1024, rounds)
	}
}
