package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
	"github.com/harel-transport/harel-transport/tests/history/check"
	"github.com/harel-transport/harel-transport/tests/history/hist"
)

// The operations a cell exercises while its fault is on.
var allOps = []string{"publish", "publish_key", "claim", "ack_and_claim", "batch", "tx"}

// cell is one (fault, operation, mode): a queue of its own (its table prefix) on the mode's
// sqld, reached through proxies of its own (one per shard), and its own histories.
type cell struct {
	mode   *mode
	fault  *fault
	op     string
	prefix string
	dir    string
	shards int
	busy   time.Duration
	vis    time.Duration
	pxs    []*proxy
	groups []string
	logs   *logs
	tally  *tally

	stopped  atomic.Bool
	wg       sync.WaitGroup
	opened   []*harel.Transport
	clients  []*client
	workers  []worker
	replicas string // where the replica files are, kept from episode to episode

	mu         sync.Mutex
	unfinished []unfinished // keyed publishes the workers left to retry
	notes      []string     // what happened to the servers meanwhile

	verdict string // "pass", or what failed
	checks  []string
}

// support: the setup's and the drains' clients, whose calls are not the cell's outcomes.
func support(who string) bool { return who == "setup" || strings.HasPrefix(who, "drain") }

func (c *cell) name() string { return c.mode.name + "/" + c.fault.name + "/" + c.op }

// open opens a transport of the cell through its proxies: remote (the proxy's URL),
// embedded replica (a file of its own, synced from the proxy's URL) or sharded (every
// shard's proxy URL). The setup and the drain of a replica cell open the primary as a
// remote queue (through the same proxy): only the workers are under test, and a replica's
// open costs seconds on a busy primary.
func (c *cell) open(who string) (*harel.Transport, error) {
	opts := []harel.Option{harel.WithPrefix(c.prefix), harel.WithBusyTimeout(c.busy)}
	var t *harel.Transport
	var err error
	began := time.Now()
	switch {
	case c.shards > 1:
		urls := make([]string, len(c.pxs))
		for i, p := range c.pxs {
			urls[i] = p.url()
		}
		t, err = harel.OpenShards(urls, opts...)
	case c.mode.replica && !support(who):
		// One file per mode, op and worker, used again by the next episode's cell: its
		// first sync then fetches what changed since, not the whole database.
		file := filepath.Join(c.replicas, fmt.Sprintf("%s-%s-%s.db", c.mode.name, c.op, who))
		t, err = harel.Open(file, append(opts, harel.WithSyncURL(c.pxs[0].url()))...)
	default:
		t, err = harel.Open(c.pxs[0].url(), opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: open for %s: %w", c.name(), who, err)
	}
	if took := time.Since(began); took > 3*time.Second {
		fmt.Fprintf(os.Stderr, "faults: %s: open for %s took %.1f s\n", c.name(), who, took.Seconds())
	}
	c.opened = append(c.opened, t)
	return t, nil
}

func (c *cell) client(id string) (*client, error) {
	lg, err := c.logs.client(id)
	if err == nil {
		lg.counted = !support(id)
		c.clients = append(c.clients, lg)
	}
	return lg, err
}

// pause between a worker's calls: the cells of a mode share one sqld on a loaded machine.
func pause() { time.Sleep(15 * time.Millisecond) }

func (c *cell) event(who string, n *int) string {
	*n++
	return fmt.Sprintf("%s-e%d", who, *n)
}

// setup makes the queue (the first open makes a sharded set), the app table of the
// transactions, and, for the cells that consume, messages to consume.
func (c *cell) setup() error {
	for s := 0; s < c.shards; s++ {
		if _, err := query(c.mode.servers[s].url(), "CREATE TABLE IF NOT EXISTS "+c.prefix+"_app (id TEXT PRIMARY KEY)"); err != nil {
			return fmt.Errorf("%s: app table: %w", c.name(), err)
		}
	}
	t, err := c.open("setup")
	if err != nil {
		return err
	}
	lg, err := c.client("setup")
	if err != nil {
		return err
	}
	n := 0
	per := map[string]int{"claim": 20, "ack_and_claim": 20, "batch": 10}[c.op]
	for round := 0; round < per; round += 5 {
		var msgs []hist.Msg
		for i := 0; i < 5; i++ {
			for _, g := range c.groups {
				msgs = append(msgs, hist.Msg{G: g, E: c.event("setup", &n)})
			}
		}
		if _, err := c.publishMany(t, lg, msgs); err != nil {
			return fmt.Errorf("%s: setup publish: %w", c.name(), err)
		}
	}
	return nil
}

// prepare opens the transports of the cell's workers and their logs; launch starts them,
// and they run until stop, then finish what they left pending (keyed publishes retried
// until stored, acks retried once).
func (c *cell) prepare() error {
	workers := map[string][]string{"batch": {"p", "c"}, "claim": {"c"}, "ack_and_claim": {"c"}}[c.op]
	if workers == nil {
		workers = []string{"p"}
	}
	for _, id := range workers {
		t, err := c.open(id)
		if err != nil {
			return err
		}
		lg, err := c.client(id)
		if err != nil {
			return err
		}
		c.workers = append(c.workers, worker{id, t, lg})
	}
	return nil
}

type worker struct {
	id string
	t  *harel.Transport
	lg *client
}

func (c *cell) launch() {
	for _, w := range c.workers {
		var run func(t *harel.Transport, lg *client, id string)
		switch {
		case c.op == "publish":
			run = c.plainPublisher
		case c.op == "publish_key":
			run = c.keyedPublisher
		case c.op == "claim":
			run = c.claimer
		case c.op == "ack_and_claim":
			run = c.ackAndClaimer
		case c.op == "batch" && w.id == "p":
			run = c.batchPublisher
		case c.op == "batch":
			run = c.batchConsumer
		case c.op == "tx":
			run = c.transactor
		default:
			panic("unknown op " + c.op)
		}
		c.wg.Add(1)
		go func(w worker) {
			defer c.wg.Done()
			run(w.t, w.lg, w.id)
		}(w)
	}
}

func (c *cell) stop() {
	c.stopped.Store(true)
	c.wg.Wait()
}

// retryAfterStop: how long after the stop a worker goes on retrying a keyed publish
// before it leaves the retry to the episode (see finish), which first makes sure the
// servers take writes.
const retryAfterStop = 30 * time.Second

func (c *cell) plainPublisher(t *harel.Transport, lg *client, id string) {
	n := 0
	for i := 0; !c.stopped.Load(); i++ {
		c.publish(t, lg, hist.Msg{G: c.groups[i%len(c.groups)], E: c.event(id, &n)})
		pause()
	}
}

// retryKeyed makes attempt (a keyed publish, each time a new event with the same keys)
// until it succeeds or fails for good, or, once the cell is stopped, until retryAfterStop
// has passed: then it is left to finish.
func (c *cell) retryKeyed(what string, attempt func() error) {
	var stoppedAt time.Time
	for {
		err := attempt()
		if !retryable(err) {
			return
		}
		if c.stopped.Load() {
			if stoppedAt.IsZero() {
				stoppedAt = time.Now()
			}
			if time.Since(stoppedAt) > retryAfterStop {
				c.mu.Lock()
				c.unfinished = append(c.unfinished, unfinished{what, attempt})
				c.mu.Unlock()
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type unfinished struct {
	what    string
	attempt func() error
}

// finish retries the keyed publishes the workers left, for up to a minute each.
func (c *cell) finish() {
	for _, u := range c.unfinished {
		var err error
		for until := time.Now().Add(60 * time.Second); time.Now().Before(until); time.Sleep(100 * time.Millisecond) {
			if err = u.attempt(); !retryable(err) {
				break
			}
		}
		if retryable(err) {
			c.tally.problem("%s: still not stored a minute and a half after the fault was healed: %v", u.what, err)
		}
	}
	c.unfinished = nil
}

// keyedPublisher publishes with a new key each time, and after an error publishes again
// with the same key (a new event, so that the history tells the attempts apart) until one
// attempt succeeds: the retry pattern of docs/server.md.
func (c *cell) keyedPublisher(t *harel.Transport, lg *client, id string) {
	n, keys := 0, 0
	for i := 0; !c.stopped.Load(); i++ {
		keys++
		key := fmt.Sprintf("%s-%s-k%d", c.prefix, id, keys)
		g := c.groups[i%len(c.groups)]
		c.retryKeyed("key "+key, func() error {
			_, err := c.publish(t, lg, hist.Msg{G: g, E: c.event(id, &n), K: key})
			return err
		})
		pause()
	}
}

func (c *cell) claimer(t *harel.Transport, lg *client, id string) {
	var pending []*harel.Lease
	for !c.stopped.Load() {
		l, _ := c.claim(t, lg, id, c.vis)
		if l != nil {
			if err := c.ack(t, lg, l); err != nil && !lost(err) {
				pending = append(pending, l)
			}
		}
		pause()
	}
	for _, l := range pending { // an ack that may not have been applied, made again
		c.ack(t, lg, l)
	}
}

func (c *cell) ackAndClaimer(t *harel.Transport, lg *client, id string) {
	var pending []*harel.Lease
	var cur *harel.Lease
	for !c.stopped.Load() {
		if cur == nil {
			cur, _ = c.claim(t, lg, id, c.vis)
			if cur == nil {
				pause()
				continue
			}
		}
		next, err := c.ackAndClaim(t, lg, cur, id, c.vis)
		if err != nil && !lost(err) {
			pending = append(pending, cur)
		}
		cur = next
		pause()
	}
	if cur != nil {
		pending = append(pending, cur)
	}
	for _, l := range pending {
		c.ack(t, lg, l)
	}
}

// batchPublisher alternates plain batches (not retried) and keyed ones (retried whole with
// the same keys until stored).
func (c *cell) batchPublisher(t *harel.Transport, lg *client, id string) {
	n, keys := 0, 0
	for i := 0; !c.stopped.Load(); i++ {
		keyed := i%2 == 1
		size := 3 + i%3
		ks := make([]string, size)
		gs := make([]string, size)
		for j := range ks {
			gs[j] = c.groups[(i+j)%len(c.groups)]
			if keyed {
				keys++
				ks[j] = fmt.Sprintf("%s-%s-k%d", c.prefix, id, keys)
			}
		}
		publish := func() error {
			msgs := make([]hist.Msg, size)
			for j := range msgs {
				msgs[j] = hist.Msg{G: gs[j], E: c.event(id, &n), K: ks[j]}
			}
			_, err := c.publishMany(t, lg, msgs)
			return err
		}
		if !keyed {
			publish()
		} else {
			c.retryKeyed(fmt.Sprintf("the keyed batch %s..%s", ks[0], ks[size-1]), publish)
		}
		pause()
	}
}

// batchConsumer claims batches and finishes them alternately with ack_many and with
// ack_and_claim_many; leases whose ack failed are acked again at the end.
func (c *cell) batchConsumer(t *harel.Transport, lg *client, id string) {
	var held, pending []*harel.Lease
	keep := func(ls []*harel.Lease, acked []error, err error) {
		for i, l := range ls {
			if err != nil || (i < len(acked) && acked[i] != nil && !lost(acked[i])) {
				if err == nil || !lost(err) {
					pending = append(pending, l)
				}
			}
		}
	}
	for i := 0; !c.stopped.Load(); i++ {
		if len(held) == 0 {
			held, _ = c.claimMany(t, lg, id, c.vis, 5, 100*time.Millisecond)
			if len(held) == 0 {
				pause()
				continue
			}
		}
		if i%2 == 0 {
			acked, err := c.ackMany(t, lg, held)
			keep(held, acked, err)
			held = nil
		} else {
			next, acked, err := c.ackAndClaimMany(t, lg, held, id, c.vis, 5)
			keep(held, acked, err)
			held = next
		}
		pause()
	}
	pending = append(pending, held...)
	if len(pending) > 0 {
		c.ackMany(t, lg, pending)
	}
}

func (c *cell) transactor(t *harel.Transport, lg *client, id string) {
	n := 0
	for i := 0; !c.stopped.Load(); i++ {
		msgs := []hist.Msg{{G: c.groups[i%len(c.groups)], E: c.event(id, &n)}}
		if i%3 == 2 {
			msgs = append(msgs, hist.Msg{G: c.groups[(i+1)%len(c.groups)], E: c.event(id, &n)})
		}
		c.tx(t, lg, fmt.Sprintf("%s-%s-t%d", c.prefix, id, i), msgs, i%2 == 1)
		pause()
	}
}

// drain claims and acks until the server holds none of the cell's messages: whatever a
// fault left leased lapses (visibility) and is served here, so the final state shows what
// was stored. who is the drain's client ("drain", "drain2" for a second pass).
func (c *cell) drain(who string) error {
	// A server that a fault left short of connections (sqld answers HTTP 429 while the
	// streams of lost answers wait for their expiry) is waited for, as a worker would.
	var t *harel.Transport
	var err error
	for until := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		if t, err = c.open(who); err == nil || time.Now().After(until) {
			break
		}
	}
	if err != nil {
		return err
	}
	lg, err := c.client(who)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(c.vis + 30*time.Second)
	for {
		left := 0
		for s := 0; s < c.shards; s++ {
			rows, err := query(c.mode.servers[s].url(), "SELECT count(*) FROM "+c.prefix+"_transport_messages")
			if err != nil {
				return fmt.Errorf("count: %w", err)
			}
			left += int(rows[0][0][0].(int64))
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d message(s) still queued %s after the fault", left, c.vis+30*time.Second)
		}
		ls, _ := c.claimMany(t, lg, who, c.vis, 20, 500*time.Millisecond)
		if len(ls) > 0 {
			c.ackMany(t, lg, ls)
		}
	}
}

func (c *cell) closeAll() {
	for _, t := range c.opened {
		t.Close()
	}
	for _, lg := range c.clients {
		lg.close()
	}
	for _, p := range c.pxs {
		p.close()
	}
}

// dump reads each shard's final state straight from its server (not through a proxy, not
// through the library) into its history directory, as hist.Dump.
func (c *cell) dump() error {
	for s := 0; s < c.shards; s++ {
		p := c.prefix
		res, err := query(c.mode.servers[s].url(),
			"SELECT seq, group_id, event, locked_by, lock_expiry, attempts FROM "+p+"_transport_messages ORDER BY seq",
			"SELECT seq, group_id, event, attempts FROM "+p+"_transport_dead ORDER BY seq",
			"SELECT key, seq FROM "+p+"_transport_keys ORDER BY key",
			"SELECT id FROM "+p+"_app ORDER BY id")
		if err != nil {
			return fmt.Errorf("dump shard %d: %w", s, err)
		}
		d := hist.DumpOf(hist.Now(), res[0], res[1], res[2], res[3])
		b, _ := json.MarshalIndent(d, "", " ")
		if err := os.WriteFile(filepath.Join(c.logs.dirs[s], "dump.json"), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// check runs the history checker (tests/history/check) over each shard's history; the
// cell passes when every property holds on every shard and the harness saw no problem.
func (c *cell) check() {
	var failed []string
	for s, dir := range c.logs.dirs {
		h, err := check.Load(dir)
		if err != nil {
			failed = append(failed, fmt.Sprintf("shard %d: the history does not load: %v", s, err))
			continue
		}
		var out strings.Builder
		if check.Report(&out, check.Run(h), 3) > 0 {
			failed = append(failed, fmt.Sprintf("shard %d: checker failed (%s)", s, dir))
			c.checks = append(c.checks, fmt.Sprintf("--- %s shard %d (%s)\n%s", c.name(), s, dir, out.String()))
		}
	}
	failed = append(failed, c.tally.problems...)
	if len(failed) == 0 {
		c.verdict = "pass"
		return
	}
	c.verdict = "FAIL"
	c.checks = append(c.checks, failed...)
}
