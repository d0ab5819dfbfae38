package harel_test

// Errors: every bad argument is ErrArgument naming the parameter (the binding's own NUL
// check included), a rejected call changes nothing, and the sentinels match with errors.Is.

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

const invalidUTF8 = "bad\xff\xfe"

// wantArgument fails unless err is ErrArgument and its message names param.
func wantArgument(t *testing.T, what string, err error, param string) {
	t.Helper()
	var e *harel.Error
	switch {
	case !errors.Is(err, harel.ErrArgument):
		t.Errorf("%s: got %v, want ErrArgument", what, err)
	case !errors.As(err, &e):
		t.Errorf("%s: %T is not an *harel.Error", what, err)
	case !strings.Contains(e.Message, param):
		t.Errorf("%s: message %q does not name %s", what, e.Message, param)
	}
}

// fixture is a queue with a leased message, one waiting behind it and a parked one.
type fixture struct {
	tr     *harel.Transport
	clock  *testClock
	lease  *harel.Lease
	parked int64
}

func newFixture(t *testing.T) *fixture {
	clock := newClock()
	tr := memory(t, clock)
	publish(t, tr, "a", event(1))
	publish(t, tr, "a", event(2))
	publish(t, tr, "b", event(3))
	lease := claim(t, tr, "w")
	toPark := claim(t, tr, "w")
	nack(t, tr, toPark, 100*time.Second)
	return &fixture{tr: tr, clock: clock, lease: lease, parked: toPark.Seq}
}

// stillWorks checks that the queue is as the fixture made it: no rejected call changed it.
func (f *fixture) stillWorks(t *testing.T) {
	t.Helper()
	ack(t, f.tr, f.lease)
	next := claim(t, f.tr, "w")
	if next.GroupID != "a" || string(next.Event) != string(event(2)) {
		t.Fatalf("after the rejected calls: got %s %s, want a's second message", next.GroupID, next.Event)
	}
	ack(t, f.tr, next)
	claimNone(t, f.tr, "b is still parked")
	f.clock.Advance(101 * time.Second)
	if again := claim(t, f.tr, "w"); again.Seq != f.parked {
		t.Fatalf("got seq %d, want the parked %d", again.Seq, f.parked)
	}
}

func TestPublishArguments(t *testing.T) {
	f := newFixture(t)
	p := func(group string, ev string, opts ...harel.PublishOption) error {
		return f.tr.Publish(group, []byte(ev), opts...)
	}
	ok := string(event(9))
	wantArgument(t, "empty group_id", p("", ok), "group_id")
	wantArgument(t, "group_id not UTF-8", p(invalidUTF8, ok), "group_id")
	wantArgument(t, "NUL in group_id", p("a\x00b", ok), "group_id")
	for _, bad := range []string{"", "{", "nope", "{'a':1}", "{} x", `{"a":}`, "\xff", `{"a":1}` + "\x00junk"} {
		wantArgument(t, fmt.Sprintf("event %q", bad), p("new", bad), "event_json")
	}
	wantArgument(t, "nil event", f.tr.Publish("new", nil), "event_json")
	for _, prio := range []int{-1, 5, math.MinInt32, math.MaxInt32, math.MaxInt32 + 1, 1 << 40, -(1 << 40)} {
		wantArgument(t, fmt.Sprintf("priority %d", prio), p("new", ok, harel.WithPriority(prio)), "priority")
	}
	wantArgument(t, "empty routing_key", p("new", ok, harel.WithRoutingKey("")), "routing_key")
	wantArgument(t, "routing_key not UTF-8", p("new", ok, harel.WithRoutingKey(invalidUTF8)), "routing_key")
	wantArgument(t, "NUL in routing_key", p("new", ok, harel.WithRoutingKey("k\x00")), "routing_key")
	f.stillWorks(t)
}

func TestPublishManyArguments(t *testing.T) {
	f := newFixture(t)
	ok := event(9)
	// A batch of good messages, the one at index 1 replaced by bad: all of it is rejected.
	withBad := func(bad harel.Message) error {
		return f.tr.PublishMany([]harel.Message{{GroupID: "a", Event: ok}, bad, {GroupID: "new", Event: ok}})
	}
	good := harel.Message{GroupID: "new", Event: ok}
	with := func(change func(m *harel.Message)) harel.Message {
		m := good
		change(&m)
		return m
	}
	wantArgument(t, "empty group_id", withBad(with(func(m *harel.Message) { m.GroupID = "" })), "messages[1].group_id")
	wantArgument(t, "group_id not UTF-8", withBad(with(func(m *harel.Message) { m.GroupID = invalidUTF8 })), "messages[1].group_id")
	wantArgument(t, "NUL in group_id", withBad(with(func(m *harel.Message) { m.GroupID = "a\x00b" })), "messages[1].group_id")
	for _, bad := range []string{"", "{", "nope", `{"a":1}` + "\x00junk"} {
		err := withBad(with(func(m *harel.Message) { m.Event = []byte(bad) }))
		wantArgument(t, fmt.Sprintf("event %q", bad), err, "messages[1].event_json")
	}
	for _, prio := range []int{-1, 5, math.MaxInt32 + 1, -(1 << 40)} {
		err := withBad(with(func(m *harel.Message) { m.Priority = prio }))
		wantArgument(t, fmt.Sprintf("priority %d", prio), err, "messages[1].priority")
	}
	wantArgument(t, "NUL in routing_key", withBad(with(func(m *harel.Message) { m.RoutingKey = "k\x00" })), "messages[1].routing_key")
	wantArgument(t, "routing_key not UTF-8", withBad(with(func(m *harel.Message) { m.RoutingKey = invalidUTF8 })), "messages[1].routing_key")
	f.stillWorks(t)
}

func TestClaimArguments(t *testing.T) {
	f := newFixture(t)
	c := func(worker string, v time.Duration, opts ...harel.ClaimOption) error {
		lease, err := f.tr.Claim(worker, v, opts...)
		if lease != nil {
			t.Errorf("claim(%q, %v) returned a lease with error %v", worker, v, err)
		}
		return err
	}
	wantArgument(t, "empty worker_id", c("", visibility), "worker_id")
	wantArgument(t, "reserved worker_id", c("__parked__", visibility), "worker_id")
	wantArgument(t, "worker_id not UTF-8", c(invalidUTF8, visibility), "worker_id")
	wantArgument(t, "NUL in worker_id", c("w\x00", visibility), "worker_id")
	for _, v := range []time.Duration{0, -1, -time.Second, math.MinInt64} {
		wantArgument(t, fmt.Sprintf("visibility %v", v), c("w", v), "visibility")
	}
	for _, p := range []int{-1, 5, 1 << 40} {
		wantArgument(t, fmt.Sprintf("min_priority %d", p), c("w", visibility, harel.WithMinPriority(p)), "min_priority")
	}
	wantArgument(t, "an empty routing key", c("w", visibility, harel.WithRoutingKeys("k", "")), "routing_keys")
	wantArgument(t, "a routing key not UTF-8", c("w", visibility, harel.WithRoutingKeys(invalidUTF8)), "routing_keys")
	wantArgument(t, "NUL in a routing key", c("w", visibility, harel.WithRoutingKeys("k", "\x00")), "routing_keys")
	f.stillWorks(t)
}

func TestAckAndNackArguments(t *testing.T) {
	f := newFixture(t)
	wantArgument(t, "ack nil", f.tr.Ack(nil), "lease")
	wantArgument(t, "nack nil", f.tr.Nack(nil, 0), "lease")
	for _, d := range []time.Duration{-1, -time.Second} {
		wantArgument(t, fmt.Sprintf("delay %v", d), f.tr.Nack(f.lease, d), "delay")
	}
	edit := func(change func(*harel.Lease)) *harel.Lease {
		l := *f.lease
		change(&l)
		return &l
	}
	bad := map[string]struct {
		lease *harel.Lease
		param string
	}{
		"empty group_id":      {edit(func(l *harel.Lease) { l.GroupID = "" }), "group_id"},
		"group_id not UTF-8":  {edit(func(l *harel.Lease) { l.GroupID = invalidUTF8 }), "group_id"},
		"NUL in group_id":     {edit(func(l *harel.Lease) { l.GroupID = "a\x00" }), "group_id"},
		"empty worker_id":     {edit(func(l *harel.Lease) { l.WorkerID = "" }), "worker_id"},
		"reserved worker_id":  {edit(func(l *harel.Lease) { l.WorkerID = "__parked__" }), "worker_id"},
		"worker_id not UTF-8": {edit(func(l *harel.Lease) { l.WorkerID = invalidUTF8 }), "worker_id"},
		"NUL in worker_id":    {edit(func(l *harel.Lease) { l.WorkerID = "w\x00" }), "worker_id"},
	}
	for what, b := range bad {
		wantArgument(t, "ack, "+what, f.tr.Ack(b.lease), b.param)
		wantArgument(t, "nack, "+what, f.tr.Nack(b.lease, 0), b.param)
	}
	f.stillWorks(t)
}

func TestOpenArguments(t *testing.T) {
	path := tempDB(t)
	cases := map[string]struct {
		database string
		opt      harel.Option
		param    string
	}{
		"empty database":         {"", nil, "database"},
		"database not UTF-8":     {invalidUTF8, nil, "database"},
		"NUL in database":        {path + "\x00.x", nil, "database"},
		"empty prefix":           {path, harel.WithPrefix(""), "prefix"},
		"prefix not identifier":  {path, harel.WithPrefix("1abc"), "prefix"},
		"prefix too long":        {path, harel.WithPrefix(strings.Repeat("p", 31)), "prefix"},
		"prefix not UTF-8":       {path, harel.WithPrefix(invalidUTF8), "prefix"},
		"NUL in prefix":          {path, harel.WithPrefix("app\x00"), "prefix"},
		"negative busy timeout":  {path, harel.WithBusyTimeout(-time.Second), "seconds"},
		"zero sync interval":     {path, harel.WithSyncInterval(0), "seconds"},
		"empty sync url":         {path, harel.WithSyncURL(""), "url"},
		"NUL in auth token":      {path, harel.WithAuthToken("t\x00k"), "token"},
		"auth token not UTF-8":   {path, harel.WithAuthToken(invalidUTF8), "token"},
		"NUL in sync url":        {path, harel.WithSyncURL("http://x\x00"), "url"},
		"sync interval negative": {path, harel.WithSyncInterval(-time.Minute), "seconds"},
	}
	for what, c := range cases {
		var opts []harel.Option
		if c.opt != nil {
			opts = append(opts, c.opt)
		}
		tr, err := harel.Open(c.database, opts...)
		if tr != nil {
			t.Errorf("%s: Open returned a Transport with %v", what, err)
			tr.Close()
		}
		wantArgument(t, what, err, c.param)
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("a rejected Open created %s", path)
	}
}

func TestOpenFailures(t *testing.T) {
	t.Run("schema missing with create_schema off", func(t *testing.T) {
		_, err := harel.Open(tempDB(t), harel.WithCreateSchema(false))
		if !errors.Is(err, harel.ErrDatabase) {
			t.Fatalf("got %v, want ErrDatabase", err)
		}
	})
	t.Run("not a database", func(t *testing.T) {
		path := tempDB(t)
		if err := os.WriteFile(path, []byte(strings.Repeat("not a database ", 1000)), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := harel.Open(path); !errors.Is(err, harel.ErrDatabase) {
			t.Fatalf("got %v, want ErrDatabase", err)
		}
	})
	t.Run("a server that is not there", func(t *testing.T) {
		start := time.Now()
		_, err := harel.Open(tempDB(t), harel.WithSyncURL("http://127.0.0.1:9"), harel.WithAuthToken("x"))
		if !errors.Is(err, harel.ErrConnect) {
			t.Fatalf("got %v, want ErrConnect", err)
		}
		if took := time.Since(start); took > time.Minute {
			t.Fatalf("ErrConnect took %v", took)
		}
	})
}

func TestClockErrors(t *testing.T) {
	t.Run("a time before the epoch", func(t *testing.T) {
		tr := open(t, ":memory:", harel.WithClock(func() time.Time { return time.Time{} }))
		publish(t, tr, "g", event(1)) // publish does not ask the clock
		_, err := tr.Claim("w", visibility)
		if !errors.Is(err, harel.ErrArgument) {
			t.Fatalf("got %v, want ErrArgument", err)
		}
	})
	t.Run("a clock that panics", func(t *testing.T) {
		clock := newClock()
		panicking := true
		tr := open(t, ":memory:", harel.WithClock(func() time.Time {
			if panicking {
				panic("clock broke")
			}
			return clock.Now()
		}))
		publish(t, tr, "g", event(1))
		_, err := tr.Claim("w", visibility)
		if !errors.Is(err, harel.ErrArgument) || !strings.Contains(err.Error(), "clock broke") {
			t.Fatalf("got %v, want ErrArgument naming the panic", err)
		}
		panicking = false
		ack(t, tr, claim(t, tr, "w")) // the transport was not harmed
	})
}

func TestErrorMatching(t *testing.T) {
	sentinels := []*harel.Error{harel.ErrArgument, harel.ErrDatabase, harel.ErrBusy,
		harel.ErrLeaseLost, harel.ErrConnect, harel.ErrPanic, harel.ErrClosed}
	for _, s := range sentinels {
		e := &harel.Error{Status: s.Status, Message: "details"}
		wrapped := fmt.Errorf("while working: %w", e)
		for _, other := range sentinels {
			if got, want := errors.Is(wrapped, other), other == s; got != want {
				t.Errorf("errors.Is(%v, %v) = %v", e, other, got)
			}
		}
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
	if got := harel.Status(7).String(); got != "HAREL_UNKNOWN(7)" {
		t.Errorf("String() = %q", got)
	}
}
