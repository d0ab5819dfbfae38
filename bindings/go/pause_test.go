package harel_test

// Mapping tests of pause and resume (issue 38): Pause, Resume and Pauses with every kind of
// PauseTarget, their answers and the listing field by field and in order; the paused state
// in Groups (and its filter), Stats.Paused and each level's; bad input, the binding's and
// the library's, leaving the queue as it was; goroutines pausing, resuming and claiming at
// once; a queue without the pauses table; a sharded queue; rounds of them freeing what they
// allocate.
// The semantics are the Rust contract's (tests/common/contract_pause.rs).

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

func pause(t *testing.T, tr *harel.Transport, target harel.PauseTarget, want bool) {
	t.Helper()
	if paused, err := tr.Pause(target); err != nil || paused != want {
		t.Fatalf("pause %v %q: %v, %v; want %v", target.Kind(), target.Name(), paused, err, want)
	}
}

func resume(t *testing.T, tr *harel.Transport, target harel.PauseTarget, want bool) {
	t.Helper()
	if resumed, err := tr.Resume(target); err != nil || resumed != want {
		t.Fatalf("resume %v %q: %v, %v; want %v", target.Kind(), target.Name(), resumed, err, want)
	}
}

func pauses(t *testing.T, tr *harel.Transport) []harel.Pause {
	t.Helper()
	list, err := tr.Pauses()
	if err != nil {
		t.Fatal(err)
	}
	if list == nil {
		t.Fatal("pauses: nil, want a slice (empty when there is none)")
	}
	return list
}

// groupIDs lists the ids of the groups in state (one page), checking each is in it.
func groupIDs(t *testing.T, tr *harel.Transport, state harel.GroupState) string {
	t.Helper()
	page, err := tr.Groups(state, "", 100)
	if err != nil {
		t.Fatalf("groups %v: %v", state, err)
	}
	var ids []string
	for _, g := range page.Groups {
		ids = append(ids, g.GroupID)
		if state != harel.GroupAny && g.State != state {
			t.Errorf("groups %v: %s is %v", state, g.GroupID, g.State)
		}
	}
	return strings.Join(ids, ",")
}

// Each kind of target paused and resumed, with Pause's and Resume's answers (new or not,
// there or not); Pauses field by field, in its order (the queue's, then the groups' and
// the routing keys', each by name); a listed pause's Target resuming it.
func TestPauseAndResume(t *testing.T) {
	clock := newClock()
	tr := memory(t, clock)
	if list := pauses(t, tr); len(list) != 0 {
		t.Fatalf("pauses of a new queue: %+v", list)
	}
	publish(t, tr, "east-1", event(1), harel.WithRoutingKey("east"))
	publish(t, tr, "east-2", event(2), harel.WithRoutingKey("east"))
	publish(t, tr, "zed", event(3))
	publish(t, tr, "free", event(4))

	pause(t, tr, harel.PauseGroup("zed"), true)
	pause(t, tr, harel.PauseGroup("zed"), false) // there already
	clock.Advance(time.Second)
	pause(t, tr, harel.PauseRoutingKey("east"), true)
	clock.Advance(time.Second)
	pause(t, tr, harel.PauseGroup("later"), true) // a group with no messages yet
	claimEvent(t, tr, 4)                          // only "free" is served
	claimNone(t, tr, "every other group paused")
	if got := groupIDs(t, tr, harel.GroupPaused); got != "east-1,east-2,zed" {
		t.Fatalf("paused groups: %s", got)
	}
	publish(t, tr, "later", event(5)) // publishes go on, into a paused group too
	claimNone(t, tr, "a group published while its pause lasts")

	clock.Advance(time.Second)
	pause(t, tr, harel.PauseQueue(), true)
	pause(t, tr, harel.PauseQueue(), false)
	want := []harel.Pause{
		{Kind: harel.PauseKindQueue, Name: "", PausedAt: at(3 * time.Second)},
		{Kind: harel.PauseKindGroup, Name: "later", PausedAt: at(2 * time.Second)},
		{Kind: harel.PauseKindGroup, Name: "zed", PausedAt: at(0)},
		{Kind: harel.PauseKindRoutingKey, Name: "east", PausedAt: at(time.Second)},
	}
	list := pauses(t, tr)
	if len(list) != len(want) {
		t.Fatalf("pauses: %+v, want %+v", list, want)
	}
	for i := range want {
		if list[i].Kind != want[i].Kind || list[i].Name != want[i].Name || !list[i].PausedAt.Equal(want[i].PausedAt) {
			t.Errorf("pauses[%d]: %+v, want %+v", i, list[i], want[i])
		}
	}
	if list[0].Target() != harel.PauseQueue() || list[2].Target() != harel.PauseGroup("zed") ||
		list[3].Target() != harel.PauseRoutingKey("east") {
		t.Errorf("targets of the listed pauses: %+v", list)
	}

	// the queue resumed: the groups paused on their own stay paused
	resume(t, tr, harel.PauseQueue(), true)
	resume(t, tr, harel.PauseQueue(), false) // no such pause now
	resume(t, tr, harel.PauseGroup("never-paused"), false)
	resume(t, tr, harel.PauseRoutingKey("never-paused"), false)
	claimNone(t, tr, "the queue resumed, the others still paused")
	resume(t, tr, harel.PauseGroup("zed"), true)
	ack(t, tr, claimEvent(t, tr, 3))
	resume(t, tr, harel.PauseRoutingKey("east"), true)
	ack(t, tr, claimEvent(t, tr, 1))
	ack(t, tr, claimEvent(t, tr, 2))
	for _, p := range pauses(t, tr) { // "later" is left
		resume(t, tr, p.Target(), true)
	}
	ack(t, tr, claimEvent(t, tr, 5))
	if list := pauses(t, tr); len(list) != 0 {
		t.Fatalf("pauses after every resume: %+v", list)
	}

	// a pause is the database's: another Transport on the file sees it, and a reopened one
	path := tempDB(t)
	first := open(t, path)
	pause(t, first, harel.PauseGroup("g"), true)
	second := open(t, path)
	publish(t, second, "g", event(6))
	claimNone(t, second, "paused through another Transport")
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	reopened := open(t, path, harel.WithCreateSchema(false))
	if list := pauses(t, reopened); len(list) != 1 || list[0].Target() != harel.PauseGroup("g") {
		t.Fatalf("pauses after reopening: %+v", list)
	}
	resume(t, reopened, harel.PauseGroup("g"), true)
	ack(t, second, claimEvent(t, second, 6))

	// the closed Transport
	for what, err := range map[string]error{"pause": errOf(first.Pause(harel.PauseQueue())),
		"resume": errOf(first.Resume(harel.PauseQueue())), "pauses": errOf(first.Pauses())} {
		wantError(t, what+" after Close", err, harel.ErrClosed)
	}
}

// errOf is the error of a call's two results.
func errOf[T any](_ T, err error) error { return err }

// The names of the kinds and the paused state; a target's accessors and comparison.
func TestPauseKindAndTarget(t *testing.T) {
	for k, want := range map[harel.PauseKind]string{harel.PauseKindQueue: "queue", harel.PauseKindGroup: "group",
		harel.PauseKindRoutingKey: "routing_key", 7: "PauseKind(7)"} {
		if k.String() != want {
			t.Errorf("%d.String() = %q, want %q", int32(k), k.String(), want)
		}
	}
	if harel.GroupPaused.String() != "paused" || harel.GroupPaused != 4 {
		t.Errorf("GroupPaused: %d %q", int32(harel.GroupPaused), harel.GroupPaused.String())
	}
	for _, c := range []struct {
		target harel.PauseTarget
		kind   harel.PauseKind
		name   string
	}{
		{harel.PauseQueue(), harel.PauseKindQueue, ""},
		{harel.PauseGroup("g"), harel.PauseKindGroup, "g"},
		{harel.PauseRoutingKey("k"), harel.PauseKindRoutingKey, "k"},
	} {
		if c.target.Kind() != c.kind || c.target.Name() != c.name {
			t.Errorf("%+v: kind %v, name %q", c.target, c.target.Kind(), c.target.Name())
		}
		listed := harel.Pause{Kind: c.kind, Name: c.name, PausedAt: time.Unix(1, 0)}
		if listed.Target() != c.target {
			t.Errorf("%+v.Target() = %+v, want %+v", listed, listed.Target(), c.target)
		}
	}
	if harel.PauseGroup("g") == harel.PauseRoutingKey("g") || harel.PauseGroup("g") == harel.PauseGroup("h") ||
		harel.PauseQueue() == (harel.PauseTarget{}) {
		t.Error("different targets compare equal")
	}
}

// The paused state in the looks: Groups lists a paused group as paused only (its holder,
// lease end and own priority shown), its filter takes GroupPaused and the others leave
// it out; Stats.Paused counts it, in none of the other states, per priority in Groups
// and Paused. A lease taken before the pause finishes.
func TestPausedGroupInLooks(t *testing.T) {
	clock := newClock()
	tr := memory(t, clock)
	publish(t, tr, "held", event(1), harel.WithPriority(2), harel.WithRoutingKey("k"))
	publish(t, tr, "held", event(2))
	publish(t, tr, "ready", event(3))
	leased := claim(t, tr, "w1", harel.WithMinPriority(2))
	pause(t, tr, harel.PauseGroup("held"), true)
	page, err := tr.Groups(harel.GroupAny, "", 10)
	if err != nil || len(page.Groups) != 2 {
		t.Fatalf("groups: %+v, %v", page, err)
	}
	held := page.Groups[0]
	if held.GroupID != "held" || held.State != harel.GroupPaused || held.Holder != "w1" || held.Depth != 2 ||
		held.HeadSeq != leased.Seq || held.Priority != 2 || held.RoutingKey != "k" || held.HeadAttempts != 1 {
		t.Errorf("the paused group: %+v", held)
	}
	wantTime(t, "the paused group's lease end", held.LockExpiry, leased.LockExpiry)
	for state, want := range map[harel.GroupState]string{harel.GroupPaused: "held", harel.GroupReady: "ready",
		harel.GroupLeased: "", harel.GroupParked: "", harel.GroupDelayed: ""} {
		if got := groupIDs(t, tr, state); got != want {
			t.Errorf("groups %v: %q, want %q", state, got, want)
		}
	}
	s := stats(t, tr)
	if s.Groups != 2 || s.Paused != 1 || s.Ready != 1 || s.Leased != 0 || s.Parked != 0 || s.Delayed != 0 ||
		s.Messages != 3 {
		t.Errorf("stats: %+v", s)
	}
	want := []harel.PriorityStats{{Priority: 0, Groups: 1, Ready: 1}, {Priority: 2, Groups: 1, Paused: 1}}
	if !reflect.DeepEqual(s.ByPriority, want) {
		t.Errorf("by priority %+v, want %+v", s.ByPriority, want)
	}
	ack(t, tr, leased) // the lease taken before the pause
	claimEvent(t, tr, 3)
	claimNone(t, tr, "the paused group's next message")
	if s := stats(t, tr); s.Paused != 1 || s.Leased != 1 {
		t.Errorf("stats after the ack: %+v", s)
	}
	resume(t, tr, harel.PauseGroup("held"), true)
	if s := stats(t, tr); s.Paused != 0 || s.Ready != 1 {
		t.Errorf("stats after resume: %+v", s)
	}
	if got := groupIDs(t, tr, harel.GroupPaused); got != "" {
		t.Errorf("paused groups after resume: %q", got)
	}
}

// Each level's Paused, from the library's per-level count: a paused group at its own
// priority whatever its head (a delayed head too), so a level's delayed groups are its
// Groups - Ready - Leased - Parked - Paused; resuming one group and pausing the queue.
func TestPausedByPriority(t *testing.T) {
	tr := memory(t, newClock())
	publish(t, tr, "plain", event(1))
	publish(t, tr, "ready", event(2), harel.WithPriority(1))
	publish(t, tr, "paused-ready", event(3), harel.WithPriority(1))
	publish(t, tr, "delayed", event(4), harel.WithPriority(1), harel.WithDelay(time.Minute))
	publish(t, tr, "paused-delayed", event(5), harel.WithPriority(1), harel.WithDelay(time.Minute))
	publish(t, tr, "top", event(6), harel.WithPriority(3), harel.WithRoutingKey("k"))
	pause(t, tr, harel.PauseGroup("paused-ready"), true)
	pause(t, tr, harel.PauseGroup("paused-delayed"), true)
	pause(t, tr, harel.PauseRoutingKey("k"), true)
	// levelDelayed is each level's remainder, their sum checked against Stats.Delayed.
	levelDelayed := func(what string, s *harel.Stats) []uint64 {
		t.Helper()
		var delayed []uint64
		var sum, paused uint64
		for _, l := range s.ByPriority {
			if l.Ready+l.Leased+l.Parked+l.Paused > l.Groups {
				t.Fatalf("%s: level %+v counts more than its groups", what, l)
			}
			d := l.Groups - l.Ready - l.Leased - l.Parked - l.Paused
			delayed, sum, paused = append(delayed, d), sum+d, paused+l.Paused
		}
		if sum != s.Delayed || paused != s.Paused {
			t.Errorf("%s: levels' delayed %d, paused %d; stats %+v", what, sum, paused, s)
		}
		return delayed
	}

	s := stats(t, tr)
	if s.Groups != 6 || s.Ready != 2 || s.Delayed != 1 || s.Paused != 3 {
		t.Errorf("stats: %+v", s)
	}
	want := []harel.PriorityStats{{Priority: 0, Groups: 1, Ready: 1}, {Priority: 1, Groups: 4, Ready: 1, Paused: 2},
		{Priority: 3, Groups: 1, Paused: 1}}
	if !reflect.DeepEqual(s.ByPriority, want) {
		t.Errorf("by priority %+v, want %+v", s.ByPriority, want)
	}
	if got := levelDelayed("paused", s); !reflect.DeepEqual(got, []uint64{0, 1, 0}) {
		t.Errorf("each level's delayed groups: %v, want [0 1 0] (the paused delayed head not among them)", got)
	}

	resume(t, tr, harel.PauseGroup("paused-delayed"), true) // delayed again: its head is not due
	resume(t, tr, harel.PauseGroup("paused-ready"), true)
	s = stats(t, tr)
	if l := s.ByPriority[1]; l != (harel.PriorityStats{Priority: 1, Groups: 4, Ready: 2}) {
		t.Errorf("level 1 after the resumes: %+v", l)
	}
	if got := levelDelayed("resumed", s); !reflect.DeepEqual(got, []uint64{0, 2, 0}) || s.Delayed != 2 {
		t.Errorf("each level's delayed groups after the resumes: %v, want [0 2 0]; stats %+v", got, s)
	}

	pause(t, tr, harel.PauseQueue(), true)
	s = stats(t, tr)
	for _, l := range s.ByPriority {
		if l.Paused != l.Groups || l.Ready != 0 || l.Leased != 0 || l.Parked != 0 {
			t.Errorf("a level with the queue paused: %+v", l)
		}
	}
	if got := levelDelayed("queue paused", s); !reflect.DeepEqual(got, []uint64{0, 0, 0}) || s.Paused != 6 {
		t.Errorf("each level's delayed groups with the queue paused: %v; stats %+v", got, s)
	}
}

// Bad input, the binding's (the zero target, a NUL byte) and the library's (an empty group
// id or routing key, text not UTF-8, a kind outside the three, the queue's with a name: the
// last two only from a Pause made by hand), each ErrArgument with its message from Pause and
// Resume alike; none changes the queue.
func TestBadPauseInput(t *testing.T) {
	tr := memory(t, newClock())
	publish(t, tr, "g", event(1), harel.WithRoutingKey("k"))
	pause(t, tr, harel.PauseGroup("kept"), true)
	bad := []struct {
		what   string
		target harel.PauseTarget
		parts  []string
	}{
		{"the zero target", harel.PauseTarget{}, []string{"no pause target", "PauseQueue()"}},
		{"NUL in a group id", harel.PauseGroup("g\x00"), []string{"group_id", "NUL byte"}},
		{"NUL in a routing key", harel.PauseRoutingKey("k\x00"), []string{"routing_key", "NUL byte"}},
		{"an empty group id", harel.PauseGroup(""), []string{"group_id is empty"}},
		{"an empty routing key", harel.PauseRoutingKey(""), []string{"routing_key is empty"}},
		{"a group id not UTF-8", harel.PauseGroup("g\xff"), []string{"UTF-8"}},
		{"kind 7", harel.Pause{Kind: 7, Name: "g"}.Target(), []string{"kind is 7"}},
		{"kind -1, no name", harel.Pause{Kind: -1}.Target(), []string{"kind is -1"}},
		{"the queue with a name", harel.Pause{Kind: harel.PauseKindQueue, Name: "g"}.Target(),
			[]string{"name must be NULL with HAREL_PAUSE_QUEUE"}},
		{"NUL in the queue's name", harel.Pause{Kind: harel.PauseKindQueue, Name: "\x00"}.Target(),
			[]string{"name holds a NUL byte"}},
	}
	for _, c := range bad {
		paused, err := tr.Pause(c.target)
		if paused {
			t.Errorf("%s: a refused pause returned true", c.what)
		}
		wantError(t, "pause: "+c.what, err, harel.ErrArgument, c.parts...)
		resumed, err := tr.Resume(c.target)
		if resumed {
			t.Errorf("%s: a refused resume returned true", c.what)
		}
		wantError(t, "resume: "+c.what, err, harel.ErrArgument, c.parts...)
	}
	if list := pauses(t, tr); len(list) != 1 || list[0].Target() != harel.PauseGroup("kept") {
		t.Fatalf("pauses after the refusals: %+v", list)
	}
	if s := stats(t, tr); s.Paused != 0 || s.Ready != 1 {
		t.Fatalf("stats after the refusals: %+v", s)
	}
	ack(t, tr, claimEvent(t, tr, 1))
}

// A queue opened with WithCreateSchema(false) whose schema lacks the pauses table (a file
// of a version before it): Pause and Resume are ErrDatabase naming it, Pauses is empty;
// opened with the schema created, pauses work.
func TestPausesTableMissing(t *testing.T) {
	path := tempDB(t)
	if err := open(t, path).Close(); err != nil { // creates the schema
		t.Fatal(err)
	}
	python(t, `
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=30)
db.execute("DROP TRIGGER harel_transport_groups_paused_at_birth")
db.execute("DROP TRIGGER harel_transport_groups_paused_turn")
db.execute("DROP TABLE harel_transport_pauses")
db.commit()
db.close()
`, path)
	old := open(t, path, harel.WithCreateSchema(false))
	publish(t, old, "g", event(1))
	_, err := old.Pause(harel.PauseGroup("g"))
	wantError(t, "pause without the table", err, harel.ErrDatabase, "harel_transport_pauses")
	_, err = old.Resume(harel.PauseQueue())
	wantError(t, "resume without the table", err, harel.ErrDatabase, "harel_transport_pauses")
	if list := pauses(t, old); len(list) != 0 {
		t.Fatalf("pauses without the table: %+v", list)
	}
	if s := stats(t, old); s.Paused != 0 || s.Ready != 1 {
		t.Fatalf("stats without the table: %+v", s)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	upgraded := open(t, path)
	pause(t, upgraded, harel.PauseGroup("g"), true)
	claimNone(t, upgraded, "paused once the schema was created")
}

// On a sharded queue a pause is on every shard and listed once: groups of both shards
// paused by the queue's and a routing key's pause, a group's pause made before its group.
func TestPauseOnShards(t *testing.T) {
	files := shardFiles(t, 2)
	tr := openShards(t, files)
	groups := groupsOnShards(t, 2, 1) // one group per shard
	for i, g := range []string{groups[0][0], groups[1][0]} {
		publish(t, tr, g, event(i), harel.WithRoutingKey("k"))
	}
	pause(t, tr, harel.PauseRoutingKey("k"), true)
	pause(t, tr, harel.PauseRoutingKey("k"), false)
	pause(t, tr, harel.PauseQueue(), true)
	pause(t, tr, harel.PauseGroup("not-yet"), true)
	if s := stats(t, tr); s.Paused != 2 || s.Groups != 2 {
		t.Fatalf("stats: %+v", s)
	}
	page, err := tr.Groups(harel.GroupPaused, "", 10)
	if err != nil || len(page.Groups) != 2 || page.Groups[0].Shard == page.Groups[1].Shard {
		t.Fatalf("paused groups: %+v, %v", page, err)
	}
	list := pauses(t, tr)
	var got []string
	for _, p := range list {
		got = append(got, p.Kind.String()+":"+p.Name)
	}
	if strings.Join(got, ",") != "queue:,group:not-yet,routing_key:k" {
		t.Fatalf("pauses: %v", got)
	}
	resume(t, tr, harel.PauseQueue(), true)
	claimNone(t, tr, "the routing key still paused on both shards")
	resume(t, tr, harel.PauseRoutingKey("k"), true)
	ack(t, tr, claim(t, tr, "w"))
	ack(t, tr, claim(t, tr, "w"))
	resume(t, tr, harel.PauseGroup("not-yet"), true)
	resume(t, tr, harel.PauseGroup("not-yet"), false)
}

// Goroutines at once, under the race detector, through one Transport and their own on one
// file: rounds of several pausing and then resuming the same targets (exactly one of each
// round's calls finds it new, or there), while a publisher publishes and workers list,
// claim and ack. At the end every message arrived exactly once.
func TestPauseConcurrently(t *testing.T) {
	const pausers, rounds, workers, messages = 4, 20, 4, 400
	path := tempDB(t)
	opts := []harel.Option{harel.WithSynchronousFull(false), harel.WithBusyTimeout(time.Minute)}
	shared := open(t, path, opts...)
	deadline := time.Now().Add(2 * time.Minute)
	var failed atomic.Bool
	fail := func(format string, args ...any) { failed.Store(true); t.Errorf(format, args...) }
	targets := []harel.PauseTarget{harel.PauseQueue(), harel.PauseGroup("g1"), harel.PauseRoutingKey("odd")}

	publishOne := func(i int) error {
		var key []harel.PublishOption
		if i%2 == 1 {
			key = append(key, harel.WithRoutingKey("odd"))
		}
		return shared.Publish(fmt.Sprintf("g%d", i%10), event(i), key...)
	}
	for i := 0; i < messages/2; i++ { // half before, half while the pausers go on
		if err := publishOne(i); err != nil {
			t.Fatal(err)
		}
	}

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := messages / 2; i < messages; i++ {
			if err := publishOne(i); err != nil {
				fail("publish %d: %v", i, err)
				return
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	var stop atomic.Bool
	// the pausers: each round every one pauses every target, then every one resumes them
	var paused, resumed [rounds][3]atomic.Int32
	var barrier sync.WaitGroup
	start := make([]chan struct{}, rounds*2)
	for i := range start {
		start[i] = make(chan struct{})
	}
	for p := 0; p < pausers; p++ {
		tr := shared
		if p%2 == 1 {
			tr = open(t, path, opts...)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				for half, call := range []func(harel.PauseTarget) (bool, error){tr.Pause, tr.Resume} {
					<-start[2*r+half]
					for i, target := range targets {
						done, err := call(target)
						if err != nil {
							fail("pauser %d, round %d: %v", p, r, err)
						} else if done && half == 0 {
							paused[r][i].Add(1)
						} else if done {
							resumed[r][i].Add(1)
						}
					}
					barrier.Done()
				}
			}
		}()
	}
	// the workers claim, ack and look while the pausers go on
	var mu sync.Mutex
	seen := map[int64]int{}
	var acked atomic.Int64
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
				if _, err := tr.Pauses(); err != nil {
					fail("%s: pauses: %v", worker, err)
					return
				}
				if _, err := tr.Groups(harel.GroupPaused, "", 10); err != nil {
					fail("%s: groups: %v", worker, err)
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
				if err := tr.Ack(lease); err != nil {
					fail("%s: ack: %v", worker, err)
					return
				}
				mu.Lock()
				seen[lease.Seq]++
				mu.Unlock()
				acked.Add(1)
			}
		}()
	}
	for i := range start {
		barrier.Add(pausers)
		close(start[i])
		barrier.Wait()
	}
	// every pause resumed: the workers drain what is left
	for acked.Load() < messages && !failed.Load() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	if failed.Load() {
		return
	}
	for r := 0; r < rounds; r++ {
		for i, target := range targets {
			if n, m := paused[r][i].Load(), resumed[r][i].Load(); n != 1 || m != 1 {
				t.Errorf("round %d, %v %q: %d pauses new and %d resumes there, want 1 and 1", r, target.Kind(),
					target.Name(), n, m)
			}
		}
	}
	if len(seen) != messages {
		t.Fatalf("%d distinct messages arrived, want %d", len(seen), messages)
	}
	for seq, n := range seen {
		if n != 1 {
			t.Errorf("seq %d arrived %d times", seq, n)
		}
	}
	if list := pauses(t, shared); len(list) != 0 {
		t.Errorf("pauses left: %+v", list)
	}
}

// Rounds of Pause, Resume and Pauses, with long names and refused, free what they allocate
// (leak_test.go's way): the names' C copies, the pause lists and their strings, the errors.
func TestPausesFreeWhatTheyAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	tr := open(t, tempDB(t), harel.WithSynchronousFull(false))
	name := func(i int) string { return strings.Repeat("p", 8<<10) + fmt.Sprint(i) }
	round := func() {
		for i := 0; i < 16; i++ {
			if _, err := tr.Pause(harel.PauseGroup(name(i))); err != nil {
				t.Fatal(err)
			}
			if _, err := tr.Pause(harel.PauseRoutingKey(name(i))); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tr.Pause(harel.PauseQueue()); err != nil {
			t.Fatal(err)
		}
		list, err := tr.Pauses()
		if err != nil || len(list) != 33 {
			t.Fatalf("pauses: %d, %v", len(list), err)
		}
		if _, err := tr.Pause(harel.PauseGroup("")); err == nil {
			t.Fatal("an empty group id was taken")
		}
		if _, err := tr.Resume(harel.PauseGroup(name(0) + "\x00")); err == nil {
			t.Fatal("a NUL byte was taken")
		}
		for _, p := range list {
			if _, err := tr.Resume(p.Target()); err != nil {
				t.Fatal(err)
			}
		}
	}
	// a leak of the listed names alone would be 264 KiB a round, 26 MiB; of the C copies
	// of the names, twice that
	const rounds, limit = 100, 3 << 20
	set := func() {
		for i := 0; i < rounds; i++ {
			round()
		}
	}
	set()
	grown := settledGrowth(t, limit, set)
	t.Logf("resident memory grew by %d KiB over %d rounds of pauses", grown/1024, rounds)
	if grown > limit {
		t.Fatalf("resident memory grew by %d KiB over %d rounds of pauses: a leak", grown/1024, rounds)
	}
}
