// Command faults runs the fault matrix of the server path (issue 41, point 4): each cell is
// a fault (a toxiproxy toxic between the library and sqld, or sqld killed with SIGKILL and
// started again) × an operation (publish, keyed publish retried, claim + ack,
// ack_and_claim, batches, transactions) × a mode (remote, embedded replica, two shards with
// the fault on one). Every call is logged in the history format of tests/history/hist,
// the queue is drained after the fault is healed, its final state read straight from sqld,
// and the history checker (tests/history/check) judges each cell. It prints a line per
// cell and "N passed, N failed"; the exit status is 1 if a cell failed, 2 if the harness
// could not run.
//
//	faults -sqld ../shared/sqld/sqld [-dir DIR] [-soak] [-modes remote,replica,shards]
//	       [-faults latency,...] [-ops publish,...] [-rounds 1] [-busy 1s]
//
// The cells of one mode run against one sqld (two for the shards), a fault at a time: the
// cells of an episode (a mode and a fault) run together, each through proxies of its own,
// and the fault is set on all of them at once (on shard 0's proxies for the shards). The
// modes run side by side unless -serial.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

type mode struct {
	name    string
	shards  int
	replica bool
	servers []*sqld
}

type fault struct {
	name   string
	toxics []toxic
	kill   bool // kill -9 shard 0's sqld, start it again after the hold
	refuse bool // while it is down, its proxies refuse connections (as the server's own port would)
	soak   bool // only in -soak
	silent bool // held past the busy timeout + 20 s, so that the library's own limit ends the calls
	what   string
}

func faults(rate int) []fault {
	return []fault{
		{name: "latency", what: "latency 150±150 ms down, 50±50 ms up", toxics: []toxic{
			{Name: "lat_down", Type: "latency", Stream: "downstream", Attributes: map[string]any{"latency": 150, "jitter": 150}},
			{Name: "lat_up", Type: "latency", Stream: "upstream", Attributes: map[string]any{"latency": 50, "jitter": 50}}}},
		{name: "bandwidth", what: fmt.Sprintf("bandwidth %d KB/s each way", rate), toxics: []toxic{
			{Name: "bw_down", Type: "bandwidth", Stream: "downstream", Attributes: map[string]any{"rate": rate}},
			{Name: "bw_up", Type: "bandwidth", Stream: "upstream", Attributes: map[string]any{"rate": rate}}}},
		{name: "reset_peer", what: "reset_peer on the answer (TCP RST once sqld answers: the request ran)", toxics: []toxic{
			{Name: "reset", Type: "reset_peer", Stream: "downstream", Attributes: map[string]any{"timeout": 0}}}},
		{name: "timeout", silent: true, what: "timeout 0 on the answer (answers dropped, the connection kept open)", toxics: []toxic{
			{Name: "silent", Type: "timeout", Stream: "downstream", Attributes: map[string]any{"timeout": 0}}}},
		{name: "slicer", what: "slicer 32±16 bytes, 200 µs apart, each way", toxics: []toxic{
			{Name: "slice_down", Type: "slicer", Stream: "downstream", Attributes: map[string]any{"average_size": 32, "size_variation": 16, "delay": 200}},
			{Name: "slice_up", Type: "slicer", Stream: "upstream", Attributes: map[string]any{"average_size": 32, "size_variation": 16, "delay": 200}}}},
		{name: "kill", kill: true, refuse: true, what: "sqld killed (SIGKILL) and restarted on the same port and data; refused while down"},
		// Soak only: the other directions and a killed server behind a proxy that stays up.
		{name: "reset_up", soak: true, what: "reset_peer on the request (the request never reaches sqld)", toxics: []toxic{
			{Name: "reset_up", Type: "reset_peer", Stream: "upstream", Attributes: map[string]any{"timeout": 0}}}},
		{name: "timeout_up", soak: true, silent: true, what: "timeout 0 on the request (requests dropped, the connection kept open)", toxics: []toxic{
			{Name: "silent_up", Type: "timeout", Stream: "upstream", Attributes: map[string]any{"timeout": 0}}}},
		{name: "reset_half", soak: true, what: "reset_peer on the answer after 5 ms, half the connections", toxics: []toxic{
			{Name: "reset_half", Type: "reset_peer", Stream: "downstream", Toxicity: 0.5, Attributes: map[string]any{"timeout": 5}}}},
		{name: "latency_big", soak: true, what: "latency 2000±1000 ms down (past the 3 s visibility)", toxics: []toxic{
			{Name: "lat_big", Type: "latency", Stream: "downstream", Attributes: map[string]any{"latency": 2000, "jitter": 1000}}}},
		{name: "kill_proxied", soak: true, kill: true, what: "sqld killed and restarted behind a proxy that keeps accepting"},
	}
}

type config struct {
	root                string
	busy, vis           time.Duration
	before, hold, after time.Duration
	ops                 []string
}

func main() {
	zerolog.SetGlobalLevel(zerolog.Disabled) // toxiproxy's toxics log through zerolog's global logger
	bin := flag.String("sqld", os.Getenv("HAREL_SQLD"), "the sqld binary (default $HAREL_SQLD)")
	dir := flag.String("dir", "", "working directory (default: a new temporary one)")
	soak := flag.Bool("soak", false, "more faults, longer holds")
	modesFlag := flag.String("modes", "remote,replica,shards", "modes to run")
	faultsFlag := flag.String("faults", "", "faults to run (default: the CI set, or every fault with -soak)")
	opsFlag := flag.String("ops", strings.Join(allOps, ","), "operations to run")
	rounds := flag.Int("rounds", 1, "run the matrix this many times")
	busy := flag.Duration("busy", time.Second, "the transports' busy timeout")
	hold := flag.Duration("hold", 0, "how long a fault lasts (default 2 s, 6 s with -soak)")
	rate := flag.Int("rate", 8, "the bandwidth toxic's rate, KB/s")
	serial := flag.Bool("serial", false, "run the modes one after another instead of side by side")
	flag.Parse()

	if *bin == "" {
		fmt.Println("skipped: faults: no sqld (set HAREL_SQLD or -sqld to the sqld binary)")
		return
	}
	if _, err := os.Stat(*bin); err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		os.Exit(2)
	}
	cfg := config{busy: *busy, vis: 3 * time.Second, before: 600 * time.Millisecond, hold: 2 * time.Second,
		after: 600 * time.Millisecond, ops: split(*opsFlag)}
	if *soak {
		cfg.hold = 6 * time.Second
	}
	if *hold > 0 {
		cfg.hold = *hold
	}
	var err error
	if cfg.root = *dir; cfg.root == "" {
		if cfg.root, err = os.MkdirTemp("", "harel-faults-"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	if err := os.MkdirAll(cfg.root, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var chosen []fault
	want := map[string]bool{}
	for _, f := range split(*faultsFlag) {
		want[f] = true
	}
	for _, f := range faults(*rate) {
		if (len(want) == 0 && (!f.soak || *soak)) || want[f.name] {
			chosen = append(chosen, f)
		}
	}
	all := map[string]*mode{
		"remote":  {name: "remote", shards: 1},
		"replica": {name: "replica", shards: 1, replica: true},
		"shards":  {name: "shards", shards: 2},
	}
	var modes []*mode
	for _, name := range split(*modesFlag) {
		m := all[name]
		if m == nil {
			fmt.Fprintf(os.Stderr, "faults: unknown mode %q\n", name)
			os.Exit(2)
		}
		modes = append(modes, m)
	}
	began := time.Now()
	fmt.Printf("faults: %s; sqld %s; busy timeout %s, visibility %s, fault held %s; %d fault(s) × %d op(s) × %d mode(s)\n",
		cfg.root, *bin, cfg.busy, cfg.vis, cfg.hold, len(chosen), len(cfg.ops), len(modes))
	for _, f := range chosen {
		fmt.Printf("  %-12s %s\n", f.name, f.what)
	}
	x := newToxics()
	for _, m := range modes {
		for s := 0; s < m.shards; s++ {
			srv, err := startSqld(*bin, filepath.Join(cfg.root, fmt.Sprintf("sqld-%s-%d", m.name, s)))
			if err != nil {
				fmt.Fprintln(os.Stderr, "faults:", err)
				os.Exit(2)
			}
			m.servers = append(m.servers, srv)
		}
	}
	defer func() {
		for _, m := range modes {
			for _, s := range m.servers {
				s.kill()
			}
		}
	}()

	var mu sync.Mutex
	var cells []*cell
	harness := 0
	runMode := func(m *mode) {
		for r := 0; r < *rounds; r++ {
			for i := range chosen {
				// An episode whose setup failed (sqld 0.24 can stall every writer for
				// tens of seconds on a loaded machine: docs/server.md, "Stalls of sqld 0.24 under contention") is
				// run once more with new cells before the fault; a failure after it counts.
				var cs []*cell
				var err error
				for attempt := 0; attempt < 2; attempt++ {
					t0 := time.Now()
					cs, err = episode(&cfg, m, &chosen[i], x, r)
					fmt.Fprintf(os.Stderr, "faults: %s/%s: %d cells in %.1f s\n", m.name, chosen[i].name, len(cs), time.Since(t0).Seconds())
					var early setupError
					if !errors.As(err, &early) {
						break
					}
					fmt.Fprintf(os.Stderr, "faults: %s/%s: %v (before the fault)\n", m.name, chosen[i].name, err)
					for s, srv := range m.servers {
						if !srv.takesWrites() {
							fmt.Fprintf(os.Stderr, "faults: %s: sqld %d answers no write: restarted\n", m.name, s)
							if err := srv.restart(); err != nil {
								fmt.Fprintf(os.Stderr, "faults: %s: %v\n", m.name, err)
							}
						}
					}
				}
				mu.Lock()
				cells = append(cells, cs...)
				if err != nil {
					harness++
					fmt.Fprintf(os.Stderr, "faults: %s/%s: %v\n", m.name, chosen[i].name, err)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}
	}
	if *serial {
		for _, m := range modes {
			runMode(m)
		}
	} else {
		var wg sync.WaitGroup
		for _, m := range modes {
			wg.Add(1)
			go func(m *mode) { defer wg.Done(); runMode(m) }(m)
		}
		wg.Wait()
	}
	failed := report(os.Stdout, cells, &cfg, time.Since(began))
	if f, err := os.Create(filepath.Join(cfg.root, "matrix.txt")); err == nil {
		report(f, cells, &cfg, time.Since(began))
		f.Close()
	}
	switch {
	case harness > 0:
		os.Exit(2)
	case failed > 0:
		os.Exit(1)
	}
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

var prefixes struct {
	sync.Mutex
	n int
}

// groupsFor: four groups, two on each shard of a sharded set.
func groupsFor(shards int) []string {
	if shards == 1 {
		return []string{"g0", "g1", "g2", "g3"}
	}
	var out []string
	per := map[int]int{}
	c := &cell{shards: shards}
	for i := 0; len(out) < 2*shards; i++ {
		g := fmt.Sprintf("g%d", i)
		if s := c.shardOf(g); per[s] < 2 {
			per[s]++
			out = append(out, g)
		}
	}
	return out
}

// episode runs every op's cell of one mode under one fault, together.
func episode(cfg *config, m *mode, f *fault, x *toxics, round int) ([]*cell, error) {
	var cells []*cell
	for _, op := range cfg.ops {
		if op == "tx" && m.shards > 1 {
			continue // a transaction is one database's: refused on a sharded queue
		}
		prefixes.Lock()
		prefixes.n++
		n := prefixes.n
		prefixes.Unlock()
		c := &cell{mode: m, fault: f, op: op, prefix: fmt.Sprintf("c%03d", n), shards: m.shards, busy: cfg.busy,
			vis: cfg.vis, groups: groupsFor(m.shards), tally: newTally(), replicas: filepath.Join(cfg.root, "replicas")}
		c.dir = filepath.Join(cfg.root, fmt.Sprintf("r%d-%s-%s-%s", round, m.name, f.name, op))
		if err := os.MkdirAll(c.replicas, 0o755); err != nil {
			return cells, err
		}
		os.RemoveAll(c.dir) // a failed attempt's, when the episode runs again
		if err := os.MkdirAll(c.dir, 0o755); err != nil {
			return cells, err
		}
		var err error
		if c.logs, err = newLogs(c.dir, c.shards); err != nil {
			return cells, err
		}
		for _, srv := range m.servers {
			p, err := x.proxy(srv.addr())
			if err != nil {
				return cells, err
			}
			c.pxs = append(c.pxs, p)
		}
		cells = append(cells, c)
	}
	each := func(f func(c *cell) error) error {
		var wg sync.WaitGroup
		errs := make([]error, len(cells))
		for i, c := range cells {
			wg.Add(1)
			go func(i int, c *cell) { defer wg.Done(); errs[i] = f(c) }(i, c)
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	}
	fail := func(err error) ([]*cell, error) {
		for _, c := range cells {
			c.closeAll()
		}
		return nil, setupError{err}
	}
	if err := each(func(c *cell) error { return c.setup() }); err != nil {
		return fail(err)
	}
	if err := each(func(c *cell) error { return c.prepare() }); err != nil {
		return fail(err)
	}
	for _, c := range cells {
		c.launch()
	}
	time.Sleep(cfg.before)
	hold := cfg.hold
	if f.silent {
		hold = max(hold, cfg.busy+22*time.Second)
	}
	var faultErr error
	if f.kill {
		if f.refuse {
			for _, c := range cells {
				c.pxs[0].down()
			}
		}
		m.servers[0].kill()
		time.Sleep(hold)
		faultErr = m.servers[0].launch()
		if f.refuse {
			for _, c := range cells {
				if err := c.pxs[0].up(); err != nil && faultErr == nil {
					faultErr = err
				}
			}
		}
	} else {
		t0 := time.Now()
		if err := each(func(c *cell) error { return c.pxs[0].add(f.toxics) }); err != nil {
			faultErr = err
		}
		if took := time.Since(t0); took > 500*time.Millisecond {
			fmt.Fprintf(os.Stderr, "faults: %s/%s: setting the toxics took %.1f s\n", m.name, f.name, took.Seconds())
		}
		time.Sleep(hold)
		each(func(c *cell) error { c.pxs[0].heal(); return nil })
	}
	time.Sleep(cfg.after)
	for _, c := range cells {
		c.stopped.Store(true)
	}
	each(func(c *cell) error { c.stop(); return nil })
	drained := make([]error, len(cells))
	var wg sync.WaitGroup
	for i, c := range cells {
		wg.Add(1)
		go func(i int, c *cell) { defer wg.Done(); drained[i] = c.drain("drain") }(i, c)
	}
	wg.Wait()
	stuck := false
	for i, c := range cells {
		stuck = stuck || drained[i] != nil || len(c.unfinished) > 0
	}
	if stuck {
		// sqld 0.24 can wedge its write lock (its log: "failed to rollback: cannot rollback
		// - no transaction is active") and then answer no write until it restarts. A server
		// that takes no write is restarted, as an operator would, and the cells finish.
		for s, srv := range m.servers {
			if srv.takesWrites() {
				continue
			}
			note := fmt.Sprintf("sqld of shard %d answered no write after the fault: restarted (kill -9, same data) before the drain", s)
			if m.shards == 1 {
				note = "sqld answered no write after the fault: restarted (kill -9, same data) before the drain"
			}
			fmt.Fprintf(os.Stderr, "faults: %s/%s: %s\n", m.name, f.name, note)
			if err := srv.restart(); err != nil {
				faultErr = err
			}
			for _, c := range cells {
				c.notes = append(c.notes, note)
			}
		}
		each(func(c *cell) error { c.finish(); return nil })
		for i, c := range cells {
			wg.Add(1)
			go func(i int, c *cell) { defer wg.Done(); drained[i] = c.drain("drain2") }(i, c)
		}
		wg.Wait()
	}
	for i, c := range cells {
		if drained[i] != nil {
			c.tally.problem("drain: %v", drained[i])
		}
	}
	for _, c := range cells {
		c.closeAll()
	}
	if faultErr != nil {
		return cells, faultErr
	}
	return cells, each(func(c *cell) error {
		if err := c.dump(); err != nil {
			return err
		}
		c.check()
		return nil
	})
}

// setupError is an episode's failure before its fault was set.
type setupError struct{ error }

func report(w io.Writer, cells []*cell, cfg *config, took time.Duration) int {
	order := map[string]int{}
	for i, op := range allOps {
		order[op] = i
	}
	modeOrder := map[string]int{"remote": 0, "replica": 1, "shards": 2}
	faultOrder := map[string]int{}
	for i, f := range faults(0) {
		faultOrder[f.name] = i
	}
	sort.SliceStable(cells, func(a, b int) bool {
		ca, cb := cells[a], cells[b]
		if ca.mode.name != cb.mode.name {
			return modeOrder[ca.mode.name] < modeOrder[cb.mode.name]
		}
		if ca.fault.name != cb.fault.name {
			return faultOrder[ca.fault.name] < faultOrder[cb.fault.name]
		}
		return order[ca.op] < order[cb.op]
	})
	passed, failed := 0, 0
	fmt.Fprintf(w, "\n%-8s %-12s %-14s %-6s %-7s %s\n", "mode", "fault", "op", "check", "slowest", "outcomes (call: count outcome)")
	samples := map[string]string{}
	for _, c := range cells {
		v := c.verdict
		if v == "" {
			v = "FAIL"
			c.checks = append(c.checks, "not checked (the episode did not finish)")
		}
		if v == "pass" {
			passed++
		} else {
			failed++
		}
		var slow time.Duration
		for _, d := range c.tally.slowest {
			slow = max(slow, d)
		}
		if len(c.notes) > 0 {
			v += "*"
		}
		fmt.Fprintf(w, "%-8s %-12s %-14s %-6s %6.1fs %s\n", c.mode.name, c.fault.name, c.op, v, slow.Seconds(), c.tally.summary())
		for l, s := range c.tally.samples {
			if _, ok := samples[l]; !ok {
				samples[l] = s
			}
		}
	}
	if len(samples) > 0 {
		fmt.Fprintln(w, "\none message of each outcome seen:")
		var ls []string
		for l := range samples {
			ls = append(ls, l)
		}
		sort.Strings(ls)
		for _, l := range ls {
			fmt.Fprintf(w, "  %s: %s\n", l, samples[l])
		}
	}
	for _, c := range cells {
		if len(c.notes) > 0 {
			fmt.Fprintf(w, "\n* %s: %s\n", c.name(), strings.Join(c.notes, "; "))
		}
	}
	for _, c := range cells {
		if c.verdict != "pass" {
			fmt.Fprintf(w, "\n%s FAILED (%s):\n", c.name(), c.dir)
			for _, s := range c.checks {
				fmt.Fprintf(w, "  %s\n", strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  "))
			}
		}
	}
	fmt.Fprintf(w, "\nfaults: ran in %.0f s; logs in %s\n", took.Seconds(), cfg.root)
	fmt.Fprintf(w, "%d passed, %d failed\n", passed, failed)
	return failed
}
