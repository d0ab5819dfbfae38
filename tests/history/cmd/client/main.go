// Command client is the history harness's Go client: random operations on one queue file
// through the Go binding (and so the C ABI), each call logged with its invocation and
// completion (package hist), until its time is up. It then finishes the leases it holds
// and exits. The orchestrator (cmd/run) runs several, kills some with SIGKILL and starts
// them again under a new id.
//
//	client -db queue.db -log go1.0.jsonl -id go1.0 -seconds 30 [-seed N] [-groups 10]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
	"github.com/harel-transport/harel-transport/tests/history/hist"
	"github.com/harel-transport/harel-transport/tests/history/leaselog"
)

type client struct {
	t      *harel.Transport
	log    *hist.Logger
	id     string
	rng    *rand.Rand
	groups int
	start  time.Time // the run's start (shared keys are drawn from a window that moves with it)
	held   []*harel.Lease
	n      int // events published, for their ids
	txs    int
	keys   int
}

func main() {
	db := flag.String("db", "", "queue file")
	logPath := flag.String("log", "", "log file (JSON lines)")
	id := flag.String("id", "", "client id (also the worker id)")
	seconds := flag.Float64("seconds", 10, "how long to run")
	seed := flag.Int64("seed", 0, "random seed (0: from the clock)")
	groups := flag.Int("groups", 10, "how many groups")
	runStart := flag.Int64("start", 0, "the run's start, unix ns (for shared keys)")
	drain := flag.Bool("drain", false, "drain the queue (claim and ack everything) instead")
	flag.Parse()
	if *db == "" || *logPath == "" || *id == "" {
		fmt.Fprintln(os.Stderr, "usage: client -db FILE -log FILE -id ID [-seconds S]")
		os.Exit(2)
	}
	if *seed == 0 {
		*seed = time.Now().UnixNano()
	}
	t, err := harel.Open(*db, harel.WithBusyTimeout(10*time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(1)
	}
	l, err := hist.Open(*logPath, *id, "go")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	start := time.Unix(0, *runStart)
	if *runStart == 0 {
		start = time.Now()
	}
	c := &client{t: t, log: l, id: *id, rng: rand.New(rand.NewSource(*seed)), groups: *groups, start: start}
	deadline := time.Now().Add(time.Duration(*seconds * float64(time.Second)))
	if *drain {
		c.drain(deadline)
		deadline = time.Now()
	}
	for time.Now().Before(deadline) {
		c.step()
		time.Sleep(time.Duration(c.rng.Intn(3000)) * time.Microsecond)
	}
	for len(c.held) > 0 {
		c.ack(c.take(0), false)
	}
	t.Close()
	l.Close()
}

// drain claims and acks until the queue is empty or the deadline: after the run, so that
// the messages left go through claims too (leases of killed clients lapse meanwhile).
func (c *client) drain(deadline time.Time) {
	for time.Now().Before(deadline) {
		if s, err := c.t.Stats(); err == nil && s.Messages == 0 {
			return
		}
		i := c.log.Invoke(hist.Record{Op: "claim", Worker: c.id, Vis: 5, Max: 50})
		leases, err := c.t.ClaimMany(context.Background(), c.id, 5*time.Second, 50, 200*time.Millisecond)
		c.completeClaim(i, leases, err)
		if len(c.held) > 0 {
			c.ackMany()
		}
	}
}

func (c *client) step() {
	r := c.rng.Float64()
	switch {
	case len(c.held) == 0 && r < 0.35, len(c.held) > 0 && r < 0.15:
		c.publishSome()
	case len(c.held) == 0, len(c.held) < 4 && r < 0.4:
		c.claimSome()
	default:
		c.finishSome()
	}
}

// ---- outcomes -------------------------------------------------------------------------

// outcome sorts an error: nil is "ok"; a status that the library promises changed nothing
// is "fail"; anything else (a panic caught by the library, a connection lost with the
// request sent) is "info": unknown.
func outcome(err error) hist.Record {
	if err == nil {
		return hist.Record{Type: "ok"}
	}
	var e *harel.Error
	if errors.As(err, &e) {
		switch e.Status {
		case harel.StatusLeaseLost, harel.StatusBusy, harel.StatusArgument, harel.StatusDatabase, harel.StatusInterrupted:
			return hist.Record{Type: "fail", Status: e.Status.String(), Err: e.Message}
		}
		return hist.Record{Type: "info", Status: e.Status.String(), Err: e.Message}
	}
	return hist.Record{Type: "info", Err: err.Error()}
}

func statusOf(err error) string {
	if err == nil {
		return "ok"
	}
	var e *harel.Error
	if errors.As(err, &e) {
		return e.Status.String()
	}
	return err.Error()
}

func (c *client) group() string { return fmt.Sprintf("g%d", c.rng.Intn(c.groups)) }

func (c *client) eventID() string {
	c.n++
	return fmt.Sprintf("%s-e%d", c.id, c.n)
}

func (c *client) visibility() time.Duration {
	return []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second}[c.rng.Intn(4)]
}

// ---- publishing -----------------------------------------------------------------------

func (c *client) publishSome() {
	r := c.rng.Float64()
	switch {
	case r < 0.30:
		m := hist.Msg{G: c.group(), E: c.eventID()}
		i := c.log.Invoke(hist.Record{Op: "publish", Msgs: []hist.Msg{m}})
		c.log.Complete(i, outcome(c.t.Publish(m.G, hist.Event(m.E))))
	case r < 0.45:
		// A key of this client's, published and, half the time, published again: the
		// retry must be a duplicate of the first.
		c.keys++
		key := fmt.Sprintf("%s-k%d", c.id, c.keys)
		g := c.group()
		for n := 1 + c.rng.Intn(2); n > 0; n-- {
			c.publishKeyed(g, key)
		}
	case r < 0.60:
		// A key drawn from a window every client draws from at the same time: clients of
		// every language race to publish it, and one message must be stored.
		w := int(time.Since(c.start).Seconds())
		key := fmt.Sprintf("shared-%d", w*4+c.rng.Intn(8))
		c.publishKeyed(fmt.Sprintf("g%d", (w*4+c.rng.Intn(8))%c.groups), key)
	case r < 0.75:
		c.publishMany()
	default:
		c.transaction()
	}
}

func (c *client) publishKeyed(g, key string) {
	m := hist.Msg{G: g, E: c.eventID(), K: key}
	i := c.log.Invoke(hist.Record{Op: "publish", Msgs: []hist.Msg{m}})
	p, err := c.t.PublishWith(m.G, hist.Event(m.E), harel.WithKey(key))
	r := outcome(err)
	if err == nil {
		r.Pub = []hist.Pub{{S: p.Seq, Dup: p.Duplicate}}
	}
	c.log.Complete(i, r)
}

func (c *client) publishMany() {
	n := 2 + c.rng.Intn(3)
	keyed := c.rng.Intn(3) == 0
	msgs := make([]hist.Msg, n)
	batch := make([]harel.Message, n)
	for j := range msgs {
		msgs[j] = hist.Msg{G: c.group(), E: c.eventID()}
		if keyed {
			c.keys++
			msgs[j].K = fmt.Sprintf("%s-k%d", c.id, c.keys)
			if j > 0 && c.rng.Intn(3) == 0 {
				msgs[j].K = msgs[j-1].K // a key met earlier in the batch: a duplicate
			}
		}
		batch[j] = harel.Message{GroupID: msgs[j].G, Event: hist.Event(msgs[j].E), Key: msgs[j].K}
	}
	i := c.log.Invoke(hist.Record{Op: "publish_many", Msgs: msgs})
	if !keyed {
		c.log.Complete(i, outcome(c.t.PublishMany(batch)))
		return
	}
	ps, err := c.t.PublishManyWith(batch)
	r := outcome(err)
	for _, p := range ps {
		r.Pub = append(r.Pub, hist.Pub{S: p.Seq, Dup: p.Duplicate})
	}
	c.log.Complete(i, r)
}

// transaction inserts a row of the app table and publishes 1..3 messages in one
// transaction: committed, rolled back on purpose, or failed at its commit by a second
// statement that breaks the table's primary key.
func (c *client) transaction() {
	c.txs++
	txID := fmt.Sprintf("%s-t%d", c.id, c.txs)
	mode := "commit"
	switch r := c.rng.Float64(); {
	case r < 0.15:
		mode = "rollback"
	case r < 0.30:
		mode = "fail"
	}
	msgs := make([]hist.Msg, 1+c.rng.Intn(3))
	for j := range msgs {
		msgs[j] = hist.Msg{G: c.group(), E: c.eventID()}
	}
	i := c.log.Invoke(hist.Record{Op: "tx", Msgs: msgs, Tx: txID, TxMode: mode})
	tx, err := c.t.Begin()
	if err != nil {
		c.log.Complete(i, outcome(err))
		return
	}
	defer tx.Rollback()
	step := func() error {
		if c.rng.Intn(3) == 0 { // a read first: the transaction holds the write lock from here
			if _, err := tx.Query(context.Background(), "SELECT count(*) FROM hist_app"); err != nil {
				return err
			}
		}
		if err := tx.Exec("INSERT INTO hist_app (id, client) VALUES (?, ?)", txID, c.id); err != nil {
			return err
		}
		for _, m := range msgs {
			if err := tx.Publish(m.G, hist.Event(m.E)); err != nil {
				return err
			}
		}
		if mode == "fail" {
			return tx.Exec("INSERT INTO hist_app (id, client) VALUES ('seed', ?)", c.id)
		}
		return nil
	}
	if err := step(); err != nil {
		c.log.Complete(i, outcome(err))
		return
	}
	if mode == "rollback" {
		c.log.Complete(i, outcome(tx.Rollback()))
		return
	}
	ps, err := tx.Commit(context.Background())
	r := outcome(err)
	for _, p := range ps {
		r.Pub = append(r.Pub, hist.Pub{S: p.Seq, Dup: p.Duplicate})
	}
	c.log.Complete(i, r)
}

// ---- claiming -------------------------------------------------------------------------

func (c *client) claimSome() {
	vis := c.visibility()
	ctx := context.Background()
	var leases []*harel.Lease
	var err error
	max := 1
	switch r := c.rng.Float64(); {
	case r < 0.3:
		i := c.log.Invoke(hist.Record{Op: "claim", Worker: c.id, Vis: vis.Seconds(), Max: 1})
		var l *harel.Lease
		l, err = c.t.Claim(c.id, vis)
		if l != nil {
			leases = []*harel.Lease{l}
		}
		c.completeClaim(i, leases, err)
	case r < 0.6:
		i := c.log.Invoke(hist.Record{Op: "claim", Worker: c.id, Vis: vis.Seconds(), Max: 1})
		var l *harel.Lease
		l, err = c.t.ClaimWait(ctx, c.id, vis, time.Duration(20+c.rng.Intn(180))*time.Millisecond)
		if l != nil {
			leases = []*harel.Lease{l}
		}
		c.completeClaim(i, leases, err)
	default:
		max = 1 + c.rng.Intn(4)
		i := c.log.Invoke(hist.Record{Op: "claim", Worker: c.id, Vis: vis.Seconds(), Max: max})
		leases, err = c.t.ClaimMany(ctx, c.id, vis, max, time.Duration(c.rng.Intn(60))*time.Millisecond)
		c.completeClaim(i, leases, err)
	}
}

func (c *client) completeClaim(i int, leases []*harel.Lease, err error) {
	r := outcome(err)
	r.Got = leaselog.Got(leases)
	c.log.Complete(i, r)
	c.held = append(c.held, leases...)
}

// ---- finishing ------------------------------------------------------------------------

func (c *client) take(j int) *harel.Lease {
	l := c.held[j]
	c.held = append(c.held[:j], c.held[j+1:]...)
	return l
}

func (c *client) finishSome() {
	j := c.rng.Intn(len(c.held))
	r := c.rng.Float64()
	switch {
	case r < 0.33:
		c.ack(c.take(j), false)
	case r < 0.43:
		c.ackMany()
	case r < 0.53:
		l := c.take(j)
		vis := c.visibility()
		i := c.log.Invoke(hist.Record{Op: "ack_and_claim", Leases: []hist.Ref{leaselog.Ref(l)}, Worker: c.id, Vis: vis.Seconds()})
		next, err := c.t.AckAndClaim(l, c.id, vis)
		var ls []*harel.Lease
		if next != nil {
			ls = []*harel.Lease{next}
		}
		c.completeClaim(i, ls, err)
	case r < 0.58:
		ls := c.held
		c.held = nil
		vis := c.visibility()
		max := 1 + c.rng.Intn(3)
		i := c.log.Invoke(hist.Record{Op: "ack_and_claim_many", Leases: leaselog.Refs(ls), Worker: c.id, Vis: vis.Seconds(), Max: max})
		next, acked, err := c.t.AckAndClaimMany(ls, c.id, vis, max)
		out := outcome(err)
		for _, a := range acked {
			out.Outcomes = append(out.Outcomes, statusOf(a))
		}
		out.Got = leaselog.Got(next)
		c.log.Complete(i, out)
		c.held = append(c.held, next...)
	case r < 0.68:
		l := c.take(j)
		i := c.log.Invoke(hist.Record{Op: "nack", Leases: []hist.Ref{leaselog.Ref(l)}})
		c.log.Complete(i, outcome(c.t.Nack(l, 0)))
	case r < 0.76:
		l := c.take(j)
		d := time.Duration(50+c.rng.Intn(250)) * time.Millisecond
		i := c.log.Invoke(hist.Record{Op: "nack", Leases: []hist.Ref{leaselog.Ref(l)}, Delay: d.Seconds()})
		c.log.Complete(i, outcome(c.t.Nack(l, d)))
	case r < 0.86:
		l := c.held[j]
		vis := c.visibility()
		i := c.log.Invoke(hist.Record{Op: "extend", Leases: []hist.Ref{leaselog.Ref(l)}, Vis: vis.Seconds()})
		err := c.t.Extend(l, vis)
		out := outcome(err)
		if err == nil {
			out.Exp = float64(l.LockExpiry.UnixMicro()) / 1e6
		} else {
			c.take(j) // lost: nothing more to do with it
		}
		c.log.Complete(i, out)
	case r < 0.89:
		l := c.take(j)
		i := c.log.Invoke(hist.Record{Op: "dead_letter", Leases: []hist.Ref{leaselog.Ref(l)}})
		c.log.Complete(i, outcome(c.t.DeadLetter(l, "history: dead-lettered on purpose")))
	case r < 0.95:
		// The stale ack: wait past the lease's end (when it is near), then ack. Whether it
		// must be refused depends on whether another worker claimed the message meanwhile:
		// the checker knows from the history.
		l := c.take(j)
		left := time.Until(l.LockExpiry)
		if left < 400*time.Millisecond {
			time.Sleep(left + time.Duration(30+c.rng.Intn(120))*time.Millisecond)
		}
		c.ack(l, left < 400*time.Millisecond)
	default:
		c.take(j) // abandoned: its lease lapses and another worker gets the message
	}
}

func (c *client) ack(l *harel.Lease, stale bool) {
	i := c.log.Invoke(hist.Record{Op: "ack", Leases: []hist.Ref{leaselog.Ref(l)}, Stale: stale})
	c.log.Complete(i, outcome(c.t.Ack(l)))
}

func (c *client) ackMany() {
	ls := c.held
	c.held = nil
	i := c.log.Invoke(hist.Record{Op: "ack_many", Leases: leaselog.Refs(ls)})
	acked, err := c.t.AckMany(ls)
	out := outcome(err)
	for _, a := range acked {
		out.Outcomes = append(out.Outcomes, statusOf(a))
	}
	c.log.Complete(i, out)
}
