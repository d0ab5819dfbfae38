package harel_test

// Mapping tests of message headers (issue 37): WithHeaders and Message.Headers through every
// publish form, Lease.Headers from every call that hands out leases, Lease.Header,
// MessageInfo.Headers (Peek) and DeadLetter.Headers (kept by a Redrive): order and bytes
// kept. Each refusal is the library's ErrArgument naming the header (a NUL byte the
// binding's), nothing written. The rules themselves are the Rust core's tests.

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

// headerSets are header lists at the rules' edges: names repeated and of every kind of
// visible ASCII but '=', values of Unicode, '=', spaces and nothing; the most pairs; the
// most bytes.
func headerSets() map[string][]harel.Header {
	most := make([]harel.Header, harel.MaxHeaders)
	for i := range most {
		most[i] = harel.Header{Name: fmt.Sprintf("h%02d", i), Value: fmt.Sprintf("v=%d", i)}
	}
	// 16 KiB exactly: four pairs of a 6-byte name and a value of 4090 bytes, multibyte
	// characters among them.
	value := strings.Repeat("é", 2000) + strings.Repeat("x", 90) // 4090 bytes
	biggest := make([]harel.Header, 4)
	for i := range biggest {
		biggest[i] = harel.Header{Name: fmt.Sprintf("big-%02d", i), Value: value}
	}
	return map[string][]harel.Header{
		"none": nil,
		"rich": {
			{Name: "content-type", Value: "application/json"},
			{Name: "x-unicode", Value: "héllo, 世界 🚀 — ünïcödé"},
			{Name: "x-equals", Value: "a=b==c="},
			{Name: "x-repeat", Value: "first"},
			{Name: "x-empty", Value: ""},
			{Name: "!#$%&'*+-.^_`|~:;<>?@[]{}()/\\\"", Value: "  spaces around  "},
			{Name: "x-repeat", Value: "second"},
			{Name: strings.Repeat("n", harel.MaxHeaderNameLen), Value: "the longest name"},
		},
		"64 pairs": most,
		"16 KiB":   biggest,
	}
}

func wantHeaders(t *testing.T, what string, got, want []harel.Header) {
	t.Helper()
	if len(want) == 0 && len(got) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: headers\n got %q\nwant %q", what, got, want)
	}
}

// Every publish form, each with every set, claimed and peeked back.
func TestHeadersThroughEveryPublish(t *testing.T) {
	clock := newClock()
	tr := memory(t, clock)
	ctx := context.Background()
	sets := headerSets()
	want := map[string][]harel.Header{} // by group
	for name, hs := range sets {
		g := func(form string) string { group := form + "/" + name; want[group] = hs; return group }
		publish(t, tr, g("publish"), event(1), harel.WithHeaders(hs...))
		publish(t, tr, g("publish+key"), event(1), harel.WithHeaders(hs...), harel.WithKey("k/"+name))
		if len(hs) > 1 { // repeated options add to the list
			publish(t, tr, g("publish+2 options"), event(1), harel.WithHeaders(hs[:1]...), harel.WithHeaders(hs[1:]...))
		}
		if p := publishWith(t, tr, g("publish_with"), 1, harel.WithHeaders(hs...)); p.Seq <= 0 {
			t.Fatalf("publish_with: %+v", p)
		}
		if err := tr.PublishMany([]harel.Message{{GroupID: g("publish_many"), Event: event(1), Headers: hs},
			{GroupID: "publish_many/none/" + name, Event: event(2)}}); err != nil {
			t.Fatalf("publish_many %s: %v", name, err)
		}
		want["publish_many/none/"+name] = nil
		if _, err := tr.PublishManyWith([]harel.Message{{GroupID: g("publish_many_with"), Event: event(1), Headers: hs,
			Delay: time.Nanosecond}}); err != nil {
			t.Fatalf("publish_many_with %s: %v", name, err)
		}
		if _, err := tr.InTx(ctx, func(tx *harel.Tx) error {
			return tx.Publish(g("tx"), event(1), harel.WithHeaders(hs...))
		}); err != nil {
			t.Fatalf("tx publish %s: %v", name, err)
		}
	}
	for group, hs := range want {
		page, err := tr.Peek(group, "", 10)
		if err != nil || len(page.Messages) != 1 {
			t.Fatalf("peek %s: %+v, %v", group, page, err)
		}
		wantHeaders(t, "peek "+group, page.Messages[0].Headers, hs)
	}
	if s := stats(t, tr); s.Messages != uint64(len(want)) {
		t.Fatalf("%d messages, want %d", s.Messages, len(want))
	}
	clock.Advance(time.Second) // the delayed batch's nanosecond
	for i := 0; ; i++ {
		lease, err := tr.Claim("w", visibility)
		if err != nil {
			t.Fatal(err)
		}
		if lease == nil {
			if i != len(want) {
				t.Fatalf("claimed %d messages, want %d", i, len(want))
			}
			break
		}
		wantHeaders(t, "claim "+lease.GroupID, lease.Headers, want[lease.GroupID])
		ack(t, tr, lease)
	}
}

// Every call that hands out leases hands out their headers; the peek of a held message,
// its dead letter and its redriven message keep them; Lease.Header finds the first of a
// name.
func TestHeadersFromEveryClaim(t *testing.T) {
	tr := memory(t, newClock())
	hs := headerSets()["rich"]
	ctx := context.Background()
	pub := func(groups ...string) {
		t.Helper()
		for _, g := range groups {
			publish(t, tr, g, event(1), harel.WithHeaders(hs...))
		}
	}
	check := func(what string, l *harel.Lease) {
		t.Helper()
		if l == nil {
			t.Fatalf("%s: no lease", what)
		}
		wantHeaders(t, what, l.Headers, hs)
	}
	pub("a")
	a := claim(t, tr, "w")
	check("claim", a)
	if v, ok := a.Header("x-repeat"); !ok || v != "first" {
		t.Errorf(`Header("x-repeat") = %q, %v; want the first`, v, ok)
	}
	if v, ok := a.Header("x-empty"); !ok || v != "" {
		t.Errorf(`Header("x-empty") = %q, %v`, v, ok)
	}
	for _, name := range []string{"X-Repeat", "missing", ""} {
		if v, ok := a.Header(name); ok || v != "" {
			t.Errorf("Header(%q) = %q, %v; want none", name, v, ok)
		}
	}
	pub("b")
	b, err := tr.AckAndClaim(a, "w", visibility)
	if err != nil {
		t.Fatal(err)
	}
	check("ack_and_claim", b)
	ack(t, tr, b)
	pub("c")
	c, err := tr.ClaimWait(ctx, "w", visibility, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	check("claim_wait", c)
	ack(t, tr, c)
	pub("d", "e")
	batch, err := tr.ClaimMany(ctx, "w", visibility, 10, time.Second)
	if err != nil || len(batch) != 2 {
		t.Fatalf("claim_many: %d, %v", len(batch), err)
	}
	check("claim_many[0]", batch[0])
	check("claim_many[1]", batch[1])
	pub("f", "g")
	next, _, err := tr.AckAndClaimMany(batch, "w", visibility, 10)
	if err != nil || len(next) != 2 {
		t.Fatalf("ack_and_claim_many: %d, %v", len(next), err)
	}
	check("ack_and_claim_many[0]", next[0])
	check("ack_and_claim_many[1]", next[1])

	// f is held: peek shows it with its headers; its dead letter keeps them, and so does
	// the message a redrive makes of it.
	page, err := tr.Peek(next[0].GroupID, "", 10)
	if err != nil || len(page.Messages) != 1 {
		t.Fatalf("peek: %+v, %v", page, err)
	}
	wantHeaders(t, "peek of a held message", page.Messages[0].Headers, hs)
	if err := tr.DeadLetter(next[0], "no"); err != nil {
		t.Fatal(err)
	}
	publish(t, tr, next[1].GroupID+"-plain", event(2)) // a dead letter without headers beside it
	plain := claim(t, tr, "w")
	if err := tr.DeadLetter(plain, "no"); err != nil {
		t.Fatal(err)
	}
	dead, err := tr.DeadLetters("", "", 10)
	if err != nil || len(dead.Letters) != 2 {
		t.Fatalf("dead letters: %+v, %v", dead, err)
	}
	wantHeaders(t, "dead letter", dead.Letters[0].Headers, hs)
	if dead.Letters[1].Headers != nil {
		t.Errorf("a dead letter without headers: %q", dead.Letters[1].Headers)
	}
	if n, err := tr.Redrive(harel.AllDeadLetters()); err != nil || n != 2 {
		t.Fatalf("redrive: %d, %v", n, err)
	}
	ack(t, tr, next[1])
	redriven := map[string]*harel.Lease{}
	for i := 0; i < 2; i++ {
		l := claim(t, tr, "w")
		redriven[l.GroupID] = l
		ack(t, tr, l)
	}
	check("redriven", redriven[next[0].GroupID])
	if l := redriven[plain.GroupID]; l == nil || l.Headers != nil {
		t.Errorf("redriven without headers: %+v", l)
	}
}

// Each rule broken, in each publish form: ErrArgument naming the header (the library's
// message; a NUL byte the binding's), the queue and the transaction unchanged.
func TestHeaderRefusals(t *testing.T) {
	tr := memory(t, newClock())
	ctx := context.Background()
	publish(t, tr, "kept", event(1), harel.WithHeaders(harel.Header{Name: "a", Value: "b"}))
	tooMany := make([]harel.Header, harel.MaxHeaders+1)
	for i := range tooMany {
		tooMany[i] = harel.Header{Name: fmt.Sprintf("h%d", i), Value: "v"}
	}
	ok := harel.Header{Name: "ok", Value: "fine"}
	for _, c := range []struct {
		what    string
		headers []harel.Header
		parts   []string // after the publish form's prefix
	}{
		{"a name with '='", []harel.Header{ok, {Name: "a=b", Value: "v"}}, []string{"headers[1].name"}},
		{"an empty name", []harel.Header{{Name: "", Value: "v"}}, []string{"headers[0].name"}},
		{"a name with a space", []harel.Header{{Name: "a b", Value: "v"}}, []string{"headers[0].name"}},
		{"a name not ASCII", []harel.Header{{Name: "é", Value: "v"}}, []string{"headers[0].name"}},
		{"a name of 129 bytes", []harel.Header{{Name: strings.Repeat("n", harel.MaxHeaderNameLen+1), Value: "v"}},
			[]string{"headers[0].name"}},
		{"a value not UTF-8", []harel.Header{ok, ok, {Name: "v", Value: "\xff"}}, []string{"headers[2].value"}},
		{"65 pairs", tooMany, []string{"headers has 65 pairs"}},
		{"16 KiB and a byte", []harel.Header{{Name: "a", Value: strings.Repeat("x", harel.MaxHeadersBytes)}},
			[]string{"headers hold 16385 bytes"}},
		// the binding's: a C string cannot carry a NUL byte
		{"a NUL byte in a value", []harel.Header{ok, {Name: "v", Value: "a\x00b"}}, []string{"headers[1].value", "NUL byte"}},
		{"a NUL byte in a name", []harel.Header{{Name: "n\x00", Value: "v"}}, []string{"headers[0].name", "NUL byte"}},
	} {
		hs := harel.WithHeaders(c.headers...)
		prefixed := func(prefix string) []string {
			parts := make([]string, len(c.parts))
			for i, p := range c.parts {
				if strings.HasPrefix(p, "headers") {
					p = prefix + p
				}
				parts[i] = p
			}
			return parts
		}
		err := tr.Publish("new", event(2), hs)
		wantError(t, "publish: "+c.what, err, harel.ErrArgument, c.parts...)
		wantError(t, "publish+key: "+c.what, tr.Publish("new", event(2), hs, harel.WithKey("k")), harel.ErrArgument, c.parts...)
		p, err := tr.PublishWith("new", event(2), hs)
		wantError(t, "publish_with: "+c.what, err, harel.ErrArgument, c.parts...)
		if p != (harel.Published{}) {
			t.Errorf("a refused publish_with returned %+v", p)
		}
		batch := []harel.Message{{GroupID: "new", Event: event(2)}, {GroupID: "new", Event: event(3), Headers: c.headers}}
		wantError(t, "publish_many: "+c.what, tr.PublishMany(batch), harel.ErrArgument, prefixed("messages[1].")...)
		published, err := tr.PublishManyWith(batch)
		wantError(t, "publish_many_with: "+c.what, err, harel.ErrArgument, prefixed("messages[1].")...)
		if published != nil {
			t.Errorf("a refused publish_many_with returned %+v", published)
		}
		// a transaction: refused, and it goes on
		published, err = tr.InTx(ctx, func(tx *harel.Tx) error {
			wantError(t, "tx publish: "+c.what, tx.Publish("new", event(2), hs), harel.ErrArgument, c.parts...)
			return tx.Publish("tx-"+c.what, event(4))
		})
		if err != nil || len(published) != 1 {
			t.Fatalf("the transaction after a refused publish: %+v, %v", published, err)
		}
		if _, err := tr.PurgeGroup("tx-" + c.what); err != nil {
			t.Fatal(err)
		}
	}
	if s := stats(t, tr); s.Messages != 1 || s.Groups != 1 {
		t.Fatalf("refused publishes changed the queue: %+v", s)
	}
	lease := claim(t, tr, "w")
	wantHeaders(t, "the message kept", lease.Headers, []harel.Header{{Name: "a", Value: "b"}})
	// The key of the refused keyed publish was not remembered.
	if p := publishWith(t, tr, "new", 2, harel.WithKey("k")); p.Duplicate {
		t.Fatalf("the refused publish's key was kept: %+v", p)
	}
}

// The caller's headers are not written: a slice given to WithHeaders or in a Message is
// the same after the publish (tracing on, which adds its headers, included).
func TestHeadersOfTheCallerUntouched(t *testing.T) {
	for _, traced := range []bool{false, true} {
		var opts []harel.Option
		if traced {
			opts = append(opts, harel.WithTracerProvider(newRecorder().tp))
		}
		tr := open(t, ":memory:", opts...)
		hs := []harel.Header{{Name: "traceparent", Value: "caller's"}, {Name: "a", Value: "1"}}
		backing := make([]harel.Header, len(hs), 8) // room to append into
		copy(backing, hs)
		publish(t, tr, "g", event(1), harel.WithHeaders(backing...))
		msgs := []harel.Message{{GroupID: "g", Event: event(2), Headers: backing}}
		if err := tr.PublishMany(msgs); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(backing, hs) || !reflect.DeepEqual(backing[:cap(backing)][len(hs):], make([]harel.Header, 6)) ||
			!reflect.DeepEqual(msgs[0].Headers, hs) {
			t.Fatalf("traced %v: the caller's headers became %q", traced, backing[:cap(backing)])
		}
	}
}
