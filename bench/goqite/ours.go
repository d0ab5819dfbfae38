package main

// Our side: harel-transport through its Go binding, one group per message (goqite has no
// groups: each message its own group is the layout where our group rule never holds a
// message back, as goqite never does).

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

const visibility = 30 * time.Second

// The drain loops of ours, by id.
const (
	loopClaimAck         = "claim+ack"
	loopAckAndClaim      = "ack_and_claim"
	loopClaimManyAckMany = "claim_many/ack_many 10"
	loopAckAndClaimMany  = "ack_and_claim_many 10"
	batch                = 10
)

// commitsPerMessage is what a loop commits per message: the disk's limit for it is the
// fsync rate divided by this.
var commitsPerMessage = map[string]float64{
	loopClaimAck:         2,
	loopAckAndClaim:      1,
	loopClaimManyAckMany: 2.0 / batch,
	loopAckAndClaimMany:  1.0 / batch,
	loopReceiveDelete:    2,
}

func oursOpen(path string, full bool) (*harel.Transport, error) {
	return harel.Open(path, harel.WithSynchronousFull(full), harel.WithBusyTimeout(time.Minute))
}

// oursFill publishes n messages, one group each, in batches (untimed setup).
func oursFill(path string, full bool, n int) error {
	tr, err := oursOpen(path, full)
	if err != nil {
		return err
	}
	defer tr.Close()
	for start := 0; start < n; start += 1000 {
		var msgs []harel.Message
		for i := start; i < min(n, start+1000); i++ {
			msgs = append(msgs, harel.Message{GroupID: fmt.Sprintf("g%d", i), Event: event(i)})
		}
		if err := tr.PublishMany(msgs); err != nil {
			return err
		}
	}
	return nil
}

// oursPublish publishes n messages one call each into a new file: messages per second.
func oursPublish(path string, full bool, n int) (float64, error) {
	tr, err := oursOpen(path, full)
	if err != nil {
		return 0, err
	}
	defer tr.Close()
	start := time.Now()
	for i := 0; i < n; i++ {
		if err := tr.Publish(fmt.Sprintf("g%d", i), event(i)); err != nil {
			return 0, err
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// oursDrain drains n messages with workers goroutines, each on its own Transport (the way
// to claim in parallel), or with shared all on one (as goqite's share one connection),
// running loop until nothing is deliverable: messages per second.
func oursDrain(path string, full bool, n, workers int, loop string, shared bool) (float64, error) {
	if err := oursFill(path, full, n); err != nil {
		return 0, err
	}
	var opened, trs []*harel.Transport // opened: to close; trs: each worker's
	defer func() {
		for _, tr := range opened {
			tr.Close()
		}
	}()
	for w := 0; w < workers; w++ {
		if shared && w > 0 {
			trs = append(trs, opened[0])
			continue
		}
		tr, err := oursOpen(path, full)
		if err != nil {
			return 0, err
		}
		opened, trs = append(opened, tr), append(trs, tr)
	}
	counts, errs := make([]int, workers), make([]error, workers)
	var wg sync.WaitGroup
	start := time.Now()
	for w, tr := range trs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			counts[w], errs[w] = oursLoop(tr, fmt.Sprintf("w%d", w), loop)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	total := 0
	for w := range trs {
		if errs[w] != nil {
			return 0, errs[w]
		}
		total += counts[w]
	}
	if total != n {
		return 0, fmt.Errorf("ours %s: %d of %d messages drained", loop, total, n)
	}
	return float64(n) / elapsed.Seconds(), nil
}

// oursLoop runs one worker's loop until nothing is deliverable; how many it acked.
func oursLoop(tr *harel.Transport, worker, loop string) (int, error) {
	ctx := context.Background()
	done := 0
	allAcked := func(acked []error) error {
		for _, err := range acked {
			if err != nil {
				return err
			}
		}
		return nil
	}
	switch loop {
	case loopClaimAck:
		for {
			lease, err := tr.Claim(worker, visibility)
			if err != nil || lease == nil {
				return done, err
			}
			if err := tr.Ack(lease); err != nil {
				return done, err
			}
			done++
		}
	case loopAckAndClaim:
		lease, err := tr.Claim(worker, visibility)
		for err == nil && lease != nil {
			var next *harel.Lease
			if next, err = tr.AckAndClaim(lease, worker, visibility); err == nil {
				done++
			}
			lease = next
		}
		return done, err
	case loopClaimManyAckMany:
		for {
			leases, err := tr.ClaimMany(ctx, worker, visibility, batch, 0)
			if err != nil || len(leases) == 0 {
				return done, err
			}
			acked, err := tr.AckMany(leases)
			if err == nil {
				err = allAcked(acked)
			}
			if err != nil {
				return done, err
			}
			done += len(leases)
		}
	case loopAckAndClaimMany:
		leases, err := tr.ClaimMany(ctx, worker, visibility, batch, 0)
		for err == nil && len(leases) > 0 {
			var next []*harel.Lease
			var acked []error
			if next, acked, err = tr.AckAndClaimMany(leases, worker, visibility, batch); err == nil {
				err = allAcked(acked)
				done += len(leases)
			}
			leases = next
		}
		return done, err
	}
	return 0, fmt.Errorf("no loop %q", loop)
}

// oursWaiter is a claim waiting up to wait (the wake-up and idle measurements).
func oursWaiter(ctx context.Context, tr *harel.Transport, worker string, wait time.Duration) (json.RawMessage, func() error, error) {
	lease, err := tr.ClaimWait(ctx, worker, visibility, wait)
	if err != nil || lease == nil {
		return nil, nil, err
	}
	return lease.Event, func() error { return tr.Ack(lease) }, nil
}
