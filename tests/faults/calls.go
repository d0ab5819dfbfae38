package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
	"github.com/harel-transport/harel-transport/tests/history/hist"
	"github.com/harel-transport/harel-transport/tests/history/leaselog"
)

// The calls a cell makes, each timed, counted and logged in the history format: on a
// sharded transport, to the history of each shard it touched (see logs).

func (c *cell) shardOf(g string) int {
	if c.shards == 1 {
		return 0
	}
	s, err := harel.ShardOf(g, c.shards)
	if err != nil {
		panic(err)
	}
	return s
}

// finished counts a call and checks it against the documented limit on how long a call
// may wait for a server: the busy timeout plus 20 s (per request to a shard).
func (c *cell) finished(lg *client, call string, err error, took time.Duration, requests int, waited time.Duration) {
	lbl := label(err)
	if lg.counted {
		c.tally.add(call, lbl, err, took)
	}
	limit := time.Duration(requests)*(c.busy+20*time.Second) + waited + 3*time.Second
	if took > limit {
		c.tally.problem("%s took %.1f s, past the limit of %d request(s) × (busy timeout + 20 s) (+3 s slack): %s",
			call, took.Seconds(), requests, lbl)
	}
}

func (c *cell) publish(t *harel.Transport, lg *client, m hist.Msg) (harel.Published, error) {
	inv := hist.Record{Op: "publish", Msgs: []hist.Msg{m}}
	start := time.Now()
	var p harel.Published
	var err error
	if m.K != "" {
		p, err = t.PublishWith(m.G, hist.Event(m.E), harel.WithKey(m.K))
	} else {
		err = t.Publish(m.G, hist.Event(m.E))
	}
	end := time.Now()
	r := outcome(err)
	call := "publish"
	if m.K != "" {
		call = "publish_key"
		if err == nil {
			r.Pub = []hist.Pub{{S: p.Seq, Dup: p.Duplicate}}
			if p.Duplicate && lg.counted {
				c.tally.add("publish_key", "dup", nil, 0)
			}
		}
	}
	lg.emit(c.shardOf(m.G), inv, start, r, end)
	c.finished(lg, call, err, end.Sub(start), 1, 0)
	return p, err
}

func (c *cell) publishMany(t *harel.Transport, lg *client, msgs []hist.Msg) ([]harel.Published, error) {
	keyed := false
	batch := make([]harel.Message, len(msgs))
	for i, m := range msgs {
		batch[i] = harel.Message{GroupID: m.G, Event: hist.Event(m.E), Key: m.K}
		keyed = keyed || m.K != ""
	}
	start := time.Now()
	var ps []harel.Published
	var err error
	if keyed {
		ps, err = t.PublishManyWith(batch)
	} else {
		err = t.PublishMany(batch)
	}
	end := time.Now()
	call := "publish_many"
	if keyed {
		call = "publish_many_key"
	}
	// Each shard's part, in order.
	parts := map[int][]int{}
	for i, m := range msgs {
		s := c.shardOf(m.G)
		parts[s] = append(parts[s], i)
	}
	var failed int
	var stored map[int]bool
	parsed := true
	if err != nil && c.shards > 1 {
		failed, stored, parsed = batchParts(err.Error())
		if !parsed {
			c.tally.problem("a sharded publish_many's error does not say which parts were stored: %v", err)
		}
	}
	for s := 0; s < c.shards; s++ {
		idx := parts[s]
		if len(idx) == 0 {
			continue
		}
		inv := hist.Record{Op: "publish_many"}
		for _, i := range idx {
			inv.Msgs = append(inv.Msgs, msgs[i])
		}
		var r hist.Record
		switch {
		case err == nil:
			r = hist.Record{Type: "ok"}
			for _, i := range idx {
				if keyed && i < len(ps) {
					r.Pub = append(r.Pub, hist.Pub{S: ps[i].Seq, Dup: ps[i].Duplicate})
				}
			}
		case c.shards == 1 || !parsed:
			r = outcome(err)
			if !parsed {
				r.Type = "info"
			}
		case s == failed:
			r = outcome(err)
		case stored[s]:
			// Stored, says the error; without the seqs (a keyed part may have been all
			// duplicates), so only a plain part is known to be new.
			r = hist.Record{Type: "ok"}
			if keyed {
				r = hist.Record{Type: "info", Err: "stored before shard " + fmt.Sprint(failed) + " failed: " + err.Error()}
			}
		default:
			r = outcome(err)
			r.Type = "fail" // a part after the failed shard's: not sent
		}
		lg.emit(s, inv, start, r, end)
	}
	c.finished(lg, call, err, end.Sub(start), len(parts), 0)
	return ps, err
}

// claimed logs a claim's leases to their shards' histories (an error or no lease: to
// every shard, where it changes nothing the checker sees).
func (c *cell) claimed(lg *client, inv hist.Record, start, end time.Time, leases []*harel.Lease, err error) {
	by := map[int][]*harel.Lease{}
	for _, l := range leases {
		s := c.shardOf(l.GroupID)
		by[s] = append(by[s], l)
	}
	for s := 0; s < c.shards; s++ {
		if err == nil && len(by[s]) == 0 && len(leases) > 0 {
			continue
		}
		r := outcome(err)
		if err == nil {
			r.Got = leaselog.Got(by[s])
		}
		lg.emit(s, inv, start, r, end)
	}
}

func (c *cell) claim(t *harel.Transport, lg *client, worker string, vis time.Duration) (*harel.Lease, error) {
	inv := hist.Record{Op: "claim", Worker: worker, Vis: vis.Seconds(), Max: 1}
	start := time.Now()
	l, err := t.Claim(worker, vis)
	end := time.Now()
	var ls []*harel.Lease
	if l != nil {
		ls = []*harel.Lease{l}
	}
	c.claimed(lg, inv, start, end, ls, err)
	c.finished(lg, "claim", err, end.Sub(start), c.shards, 0)
	return l, err
}

func (c *cell) claimMany(t *harel.Transport, lg *client, worker string, vis time.Duration, max int,
	wait time.Duration) ([]*harel.Lease, error) {
	inv := hist.Record{Op: "claim", Worker: worker, Vis: vis.Seconds(), Max: max}
	start := time.Now()
	ls, err := t.ClaimMany(context.Background(), worker, vis, max, wait)
	end := time.Now()
	c.claimed(lg, inv, start, end, ls, err)
	c.finished(lg, "claim_many", err, end.Sub(start), c.shards, wait)
	return ls, err
}

func (c *cell) ack(t *harel.Transport, lg *client, l *harel.Lease) error {
	inv := hist.Record{Op: "ack", Leases: []hist.Ref{leaselog.Ref(l)}}
	start := time.Now()
	err := t.Ack(l)
	end := time.Now()
	lg.emit(c.shardOf(l.GroupID), inv, start, outcome(err), end)
	c.finished(lg, "ack", err, end.Sub(start), 1, 0)
	return err
}

// acksOf is the history of one shard's part of an ack_many: the whole call's error, or the
// shard transaction's (every lease of it has the same error that is not a lost lease), or
// each lease's outcome.
func acksOf(ls []*harel.Lease, acked []error, idx []int, err error) hist.Record {
	if err != nil {
		return outcome(err)
	}
	var shardErr error
	for _, i := range idx {
		if i < len(acked) && acked[i] != nil && !lost(acked[i]) {
			shardErr = acked[i]
		}
	}
	if shardErr != nil {
		return outcome(shardErr)
	}
	r := hist.Record{Type: "ok"}
	for _, i := range idx {
		o := "ok"
		if i < len(acked) && acked[i] != nil {
			o = harel.StatusLeaseLost.String()
		}
		r.Outcomes = append(r.Outcomes, o)
	}
	return r
}

func (c *cell) countAcks(lg *client, call string, acked []error) {
	for _, a := range acked {
		if a != nil && lg.counted {
			c.tally.add(call, "lease:"+label(a), a, 0)
		}
	}
}

func (c *cell) ackMany(t *harel.Transport, lg *client, ls []*harel.Lease) ([]error, error) {
	start := time.Now()
	acked, err := t.AckMany(ls)
	end := time.Now()
	by := map[int][]int{}
	for i, l := range ls {
		s := c.shardOf(l.GroupID)
		by[s] = append(by[s], i)
	}
	for s, idx := range by {
		inv := hist.Record{Op: "ack_many"}
		for _, i := range idx {
			inv.Leases = append(inv.Leases, leaselog.Ref(ls[i]))
		}
		lg.emit(s, inv, start, acksOf(ls, acked, idx, err), end)
	}
	c.finished(lg, "ack_many", err, end.Sub(start), len(by), 0)
	c.countAcks(lg, "ack_many", acked)
	return acked, err
}

func (c *cell) ackAndClaim(t *harel.Transport, lg *client, l *harel.Lease, worker string,
	vis time.Duration) (*harel.Lease, error) {
	inv := hist.Record{Op: "ack_and_claim", Leases: []hist.Ref{leaselog.Ref(l)}, Worker: worker, Vis: vis.Seconds()}
	start := time.Now()
	next, err := t.AckAndClaim(l, worker, vis)
	end := time.Now()
	home := c.shardOf(l.GroupID)
	r := outcome(err)
	if err == nil {
		r.Got = []hist.Lease{}
		if next != nil && c.shardOf(next.GroupID) == home {
			r.Got = leaselog.Got([]*harel.Lease{next})
		}
	}
	lg.emit(home, inv, start, r, end)
	if err == nil && next != nil && c.shardOf(next.GroupID) != home {
		// The claim that went on to another shard, within the same call.
		lg.emit(c.shardOf(next.GroupID), hist.Record{Op: "claim", Worker: worker, Vis: vis.Seconds(), Max: 1},
			start, hist.Record{Type: "ok", Got: leaselog.Got([]*harel.Lease{next})}, end)
	}
	c.finished(lg, "ack_and_claim", err, end.Sub(start), c.shards+1, 0)
	return next, err
}

func (c *cell) ackAndClaimMany(t *harel.Transport, lg *client, ls []*harel.Lease, worker string, vis time.Duration,
	max int) ([]*harel.Lease, []error, error) {
	start := time.Now()
	next, acked, err := t.AckAndClaimMany(ls, worker, vis, max)
	end := time.Now()
	home := 0
	if len(ls) > 0 {
		home = c.shardOf(ls[0].GroupID)
	}
	byAck, byNext := map[int][]int{}, map[int][]*harel.Lease{}
	for i, l := range ls {
		s := c.shardOf(l.GroupID)
		byAck[s] = append(byAck[s], i)
	}
	for _, l := range next {
		s := c.shardOf(l.GroupID)
		byNext[s] = append(byNext[s], l)
	}
	for s := 0; s < c.shards; s++ {
		idx := byAck[s]
		if s == home || (err != nil && len(idx) > 0) {
			// The fused ack and claim on the home shard (or a failed call's part).
			inv := hist.Record{Op: "ack_and_claim_many", Worker: worker, Vis: vis.Seconds(), Max: max}
			for _, i := range idx {
				inv.Leases = append(inv.Leases, leaselog.Ref(ls[i]))
			}
			r := acksOf(ls, acked, idx, err)
			if r.Type == "ok" {
				r.Got = leaselog.Got(byNext[s])
			}
			lg.emit(s, inv, start, r, end)
			continue
		}
		if len(idx) > 0 {
			inv := hist.Record{Op: "ack_many", Leases: nil}
			for _, i := range idx {
				inv.Leases = append(inv.Leases, leaselog.Ref(ls[i]))
			}
			lg.emit(s, inv, start, acksOf(ls, acked, idx, err), end)
		}
		if err == nil && len(byNext[s]) > 0 {
			lg.emit(s, hist.Record{Op: "claim", Worker: worker, Vis: vis.Seconds(), Max: max}, start,
				hist.Record{Type: "ok", Got: leaselog.Got(byNext[s])}, end)
		}
	}
	c.finished(lg, "ack_and_claim_many", err, end.Sub(start), 2*c.shards, 0)
	c.countAcks(lg, "ack_and_claim_many", acked)
	return next, acked, err
}

// tx inserts the app row txID and publishes msgs in one transaction (InTx); withQuery reads
// first, which begins the transaction on the server and holds it across round trips.
func (c *cell) tx(t *harel.Transport, lg *client, txID string, msgs []hist.Msg, withQuery bool) error {
	inv := hist.Record{Op: "tx", Msgs: msgs, Tx: txID, TxMode: "commit"}
	start := time.Now()
	ps, err := t.InTx(context.Background(), func(tx *harel.Tx) error {
		if withQuery {
			if _, err := tx.Query(context.Background(), "SELECT count(*) FROM "+c.prefix+"_app"); err != nil {
				return err
			}
		}
		if err := tx.Exec("INSERT INTO "+c.prefix+"_app (id) VALUES (?)", txID); err != nil {
			return err
		}
		for _, m := range msgs {
			var opts []harel.PublishOption
			if m.K != "" {
				opts = append(opts, harel.WithKey(m.K))
			}
			if err := tx.Publish(m.G, hist.Event(m.E), opts...); err != nil {
				return err
			}
		}
		return nil
	})
	end := time.Now()
	r := outcome(err)
	for _, p := range ps {
		r.Pub = append(r.Pub, hist.Pub{S: p.Seq, Dup: p.Duplicate})
	}
	lg.emit(0, inv, start, r, end)
	call := "tx"
	if withQuery {
		call = "tx_query"
	}
	c.finished(lg, call, err, end.Sub(start), 3, 0)
	return err
}

// retryable: a status after which a keyed publish is made again with the same key.
func retryable(err error) bool {
	return err != nil && !errors.Is(err, harel.ErrArgument) && !errors.Is(err, harel.ErrClosed)
}
