package harel_test

// Close: every call after it is ErrClosed (never a crash), closing twice is fine and always
// nil, and Close waits for the calls in flight.

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

func TestUseAfterClose(t *testing.T) {
	tr, err := harel.Open(":memory:", harel.WithClock(newClock().Now))
	if err != nil {
		t.Fatal(err)
	}
	publish(t, tr, "g", event(1))
	lease := claim(t, tr, "w")
	for i := 0; i < 2; i++ {
		if err := tr.Close(); err != nil {
			t.Fatalf("close #%d: %v", i+1, err)
		}
	}
	_, claimErr := tr.Claim("w", visibility)
	next, ackAndClaimErr := tr.AckAndClaim(lease, "w", visibility)
	if next != nil {
		t.Errorf("ack_and_claim after close returned %+v", next)
	}
	discard := func(_ any, err error) error { return err }
	for name, err := range map[string]error{
		"dead_letter":   tr.DeadLetter(lease, "r"),
		"redrive":       discard(tr.Redrive(harel.AllDeadLetters())),
		"purge_dead":    discard(tr.PurgeDead(harel.AllDeadLetters())),
		"purge_group":   discard(tr.PurgeGroup("g")),
		"purge":         discard(tr.Purge()),
		"release":       discard(tr.Release("g")),
		"stats":         discard(tr.Stats()),
		"groups":        discard(tr.Groups(harel.GroupAny, "", 10)),
		"peek":          discard(tr.Peek("g", "", 10)),
		"dead_letters":  discard(tr.DeadLetters("", "", 10)),
		"publish":       tr.Publish("g", event(2)),
		"publish many":  tr.PublishMany([]harel.Message{{GroupID: "g", Event: event(2)}}),
		"claim":         claimErr,
		"ack":           tr.Ack(lease),
		"ack_and_claim": ackAndClaimErr,
		"nack":          tr.Nack(lease, 0),
		"ack nil":       tr.Ack(nil),
		"claim_wait":    discard(tr.ClaimWait(context.Background(), "w", visibility, time.Second)),
		"claim_many":    discard(tr.ClaimMany(context.Background(), "w", visibility, 10, time.Second)),
		"ack_many":      discard(tr.AckMany([]*harel.Lease{lease})),
		"ack_and_claim_many": func() error {
			_, _, err := tr.AckAndClaimMany([]*harel.Lease{lease}, "w", visibility, 10)
			return err
		}(),
		"extend": tr.Extend(lease, visibility),
	} {
		wantError(t, name+" after close", err, harel.ErrClosed)
	}
	for name, err := range map[string]error{ // the producer options
		"publish_with":          discard(tr.PublishWith("g", event(2), harel.WithKey("k"))),
		"publish_many_with":     discard(tr.PublishManyWith([]harel.Message{{GroupID: "g", Event: event(2), Delay: time.Second}})),
		"publish, keyed":        tr.Publish("g", event(2), harel.WithKey("k")),
		"publish_many, delayed": tr.PublishMany([]harel.Message{{GroupID: "g", Event: event(2), Delay: time.Second}}),
	} {
		wantError(t, name+" after close", err, harel.ErrClosed)
	}
	tr.Interrupt() // does nothing on a closed Transport
	kept, stop := tr.KeepAlive(context.Background(), lease, 30*time.Millisecond)
	<-kept.Done() // its first extension fails
	wantError(t, "keep_alive after close", stop(), harel.ErrClosed)
	wantError(t, "keep_alive's cause", context.Cause(kept), harel.ErrClosed)
}

func TestCloseWaitsForTheCallInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var armed atomic.Bool // publish asks the clock too: only the claim stops
	tr, err := harel.Open(":memory:", harel.WithClock(func() time.Time {
		if armed.Load() {
			once.Do(func() { close(entered); <-release }) // the claim stops inside the library
		}
		return time.Unix(1000, 0)
	}))
	if err != nil {
		t.Fatal(err)
	}
	publish(t, tr, "g", event(1))
	armed.Store(true)
	type result struct {
		lease *harel.Lease
		err   error
	}
	claimed := make(chan result)
	go func() {
		lease, err := tr.Claim("w", visibility)
		claimed <- result{lease, err}
	}()
	<-entered
	closed := make(chan error)
	go func() { closed <- tr.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a claim was in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if r := <-claimed; r.err != nil || r.lease == nil {
		t.Fatalf("the claim in flight: %+v", r)
	}
	if err := <-closed; err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := tr.Claim("w", visibility); !errors.Is(err, harel.ErrClosed) {
		t.Fatalf("claim after close: %v", err)
	}
}

func TestCloseWhileGoroutinesWork(t *testing.T) {
	tr, err := harel.Open(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for n := 0; n < 8; n++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				err := tr.Publish("g", event(n))
				if err == nil {
					var lease *harel.Lease
					if lease, err = tr.Claim("w", visibility); err == nil && lease != nil {
						err = tr.Ack(lease)
					}
				}
				if errors.Is(err, harel.ErrClosed) {
					return
				}
				if err != nil {
					t.Errorf("worker %d: %v", n, err)
					return
				}
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	if err := tr.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	wg.Wait()
}
