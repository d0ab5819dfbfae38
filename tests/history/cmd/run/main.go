// Command run is the history harness's orchestrator: it makes a queue file, runs clients
// of every language on it for a while (killing some with SIGKILL at random instants and
// starting them again), waits for them, dumps what the queue holds, and checks the history
// (package check). It exits 0 when every property holds, 1 when one fails, 2 when the
// harness itself went wrong.
//
//	run -dir DIR -seconds 60 -go 2 -rust 2 -harel 1 -python 1 \
//	    -client bin/client -rust-client target/release/examples/history_client \
//	    -venv-python .venv/bin/python -sys-python python3 -scripts tests/history
//
// With -rogue MODE a rogue client (rogue.py) breaks the queue's rules behind the library's
// back; -expect NAME then makes the run succeed only if the checker fails NAME.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
	"github.com/harel-transport/harel-transport/tests/history/check"
	"github.com/harel-transport/harel-transport/tests/history/hist"
)

type opts struct {
	dir, db                 string
	seconds                 float64
	nGo, nRust, nHarel, nPy int
	client, rustClient      string
	venvPython, sysPython   string
	pyPath, libPath         string
	scripts                 string
	rogue, expect           string
	killEvery, drain        float64
	linearTimeout           float64
	groups, show            int
	seed                    int64
	start                   int64
}

// proc is one client slot: a language and a base id; each start is an incarnation
// ("go1.0", "go1.1" after a kill...).
type proc struct {
	lang, base  string
	killable    bool
	incarnation int
	cmd         *exec.Cmd
	done        chan struct{}
	exitErr     error
	killed      bool
}

func main() {
	var o opts
	flag.StringVar(&o.dir, "dir", "", "working directory (made; default: a new temporary one)")
	flag.Float64Var(&o.seconds, "seconds", 30, "how long the clients run")
	flag.IntVar(&o.nGo, "go", 2, "Go clients (the C ABI through the Go binding)")
	flag.IntVar(&o.nRust, "rust", 2, "Rust clients (examples/history_client.rs)")
	flag.IntVar(&o.nHarel, "harel", 1, "harel 0.9 workers (SqliteTransport, harel_worker.py)")
	flag.IntVar(&o.nPy, "python", 0, "Python clients (this library's harel_transport package, py_client.py)")
	flag.StringVar(&o.client, "client", "", "the Go client binary")
	flag.StringVar(&o.rustClient, "rust-client", "", "the Rust client binary")
	flag.StringVar(&o.venvPython, "venv-python", ".venv/bin/python", "a Python with harel 0.9.0")
	flag.StringVar(&o.sysPython, "sys-python", "python3", "a Python for the rogue and the Python client")
	flag.StringVar(&o.pyPath, "pythonpath", "bindings/python", "where the harel_transport package is (py_client.py)")
	flag.StringVar(&o.libPath, "lib", "target/release/libharel_transport.so", "the library (py_client.py)")
	flag.StringVar(&o.scripts, "scripts", "tests/history", "where harel_worker.py, py_client.py and rogue.py are")
	flag.StringVar(&o.rogue, "rogue", "", "run a rogue client (rogue.py): skip-group-check, redeliver or stale-ack")
	flag.StringVar(&o.expect, "expect", "", "succeed only if the checker fails this property")
	flag.Float64Var(&o.killEvery, "kill-every", 4, "mean seconds between SIGKILLs of a random client (0: none)")
	flag.Float64Var(&o.drain, "drain", 3, "seconds of draining after the run (a Go client claiming and acking all)")
	flag.IntVar(&o.groups, "groups", 10, "how many groups")
	flag.IntVar(&o.show, "show", 5, "violations shown per property")
	flag.Float64Var(&o.linearTimeout, "linear-timeout", 60, "seconds porcupine may spend on one group")
	flag.Int64Var(&o.seed, "seed", 0, "random seed (0: from the clock)")
	flag.Parse()
	if o.seed == 0 {
		o.seed = time.Now().UnixNano()
	}
	os.Exit(run(&o))
}

func abs(p string) string {
	if p == "" || !strings.Contains(p, "/") {
		return p
	}
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

func run(o *opts) int {
	var err error
	if o.dir == "" {
		if o.dir, err = os.MkdirTemp("", "harel-history-"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	for _, p := range []*string{&o.client, &o.rustClient, &o.venvPython, &o.sysPython, &o.pyPath, &o.libPath, &o.scripts} {
		*p = abs(*p)
	}
	if err := os.MkdirAll(filepath.Join(o.dir, "logs"), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	o.db = filepath.Join(o.dir, "queue.db")
	if err := setup(o.db); err != nil {
		fmt.Fprintln(os.Stderr, "setup:", err)
		return 2
	}
	rng := rand.New(rand.NewSource(o.seed))
	fmt.Printf("history: %s, %.0f s, seed %d: %d Go, %d Rust, %d harel 0.9, %d Python client(s)%s\n",
		o.dir, o.seconds, o.seed, o.nGo, o.nRust, o.nHarel, o.nPy, map[bool]string{true: ", rogue " + o.rogue}[o.rogue != ""])
	var procs []*proc
	for i := 1; i <= o.nGo; i++ {
		procs = append(procs, &proc{lang: "go", base: fmt.Sprintf("go%d", i), killable: true})
	}
	for i := 1; i <= o.nRust; i++ {
		procs = append(procs, &proc{lang: "rust", base: fmt.Sprintf("rust%d", i), killable: true})
	}
	for i := 1; i <= o.nHarel; i++ {
		procs = append(procs, &proc{lang: "harel", base: fmt.Sprintf("harel%d", i), killable: true})
	}
	for i := 1; i <= o.nPy; i++ {
		procs = append(procs, &proc{lang: "python", base: fmt.Sprintf("py%d", i), killable: true})
	}
	if o.rogue != "" {
		procs = append(procs, &proc{lang: "rogue", base: "rogue"})
	}
	began := time.Now()
	o.start = began.UnixNano()
	end := began.Add(time.Duration(o.seconds * float64(time.Second)))
	var all []*proc // every incarnation, for the exit report
	var mu sync.Mutex
	startProc := func(p *proc) error {
		left := time.Until(end).Seconds()
		if left < 0.5 {
			return nil
		}
		q := &proc{lang: p.lang, base: p.base, killable: p.killable, incarnation: p.incarnation}
		p.incarnation++
		id := fmt.Sprintf("%s.%d", q.base, q.incarnation)
		cmd, err := command(o, q.lang, id, left, rng.Int63())
		if err != nil {
			return err
		}
		out, err := os.Create(filepath.Join(o.dir, "logs", id+".out"))
		if err != nil {
			return err
		}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		q.cmd, q.done = cmd, make(chan struct{})
		go func() {
			q.exitErr = cmd.Wait()
			// The instant the process was surely gone: whatever it left unfinished took
			// effect before, if at all.
			_ = os.WriteFile(filepath.Join(o.dir, "logs", id+".exit"), []byte(fmt.Sprint(hist.Now())), 0o644)
			out.Close()
			close(q.done)
		}()
		p.cmd, p.done = q.cmd, q.done
		mu.Lock()
		all = append(all, q)
		mu.Unlock()
		return nil
	}
	for _, p := range procs {
		if err := startProc(p); err != nil {
			fmt.Fprintln(os.Stderr, "start:", err)
			return 2
		}
	}
	kills := 0
	if o.killEvery > 0 {
		for {
			wait := time.Duration(rng.ExpFloat64() * o.killEvery * float64(time.Second))
			if time.Now().Add(wait).After(end.Add(-time.Second)) {
				break
			}
			time.Sleep(wait)
			var live []*proc
			for _, p := range procs {
				if p.killable {
					select {
					case <-p.done:
					default:
						live = append(live, p)
					}
				}
			}
			if len(live) == 0 {
				continue
			}
			p := live[rng.Intn(len(live))]
			mu.Lock()
			for _, q := range all {
				if q.done == p.done {
					q.killed = true
				}
			}
			mu.Unlock()
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			<-p.done
			kills++
			if err := startProc(p); err != nil {
				fmt.Fprintln(os.Stderr, "restart:", err)
				return 2
			}
		}
	}
	// Every client stops by itself at the end; a hard limit beyond it.
	hard := time.After(time.Until(end) + 60*time.Second)
	for _, p := range procs {
		select {
		case <-p.done:
		case <-hard:
			fmt.Fprintf(os.Stderr, "history: %s did not stop in time: killed\n", p.base)
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			<-p.done
		}
	}
	bad := 0
	for _, q := range all {
		if q.exitErr != nil && !q.killed {
			bad++
			fmt.Fprintf(os.Stderr, "history: client %s.%d failed: %v (see %s)\n", q.base, q.incarnation, q.exitErr,
				filepath.Join(o.dir, "logs", fmt.Sprintf("%s.%d.out", q.base, q.incarnation)))
		}
	}
	ran := time.Since(began)
	if o.drain > 0 {
		cmd, _ := command(o, "go", "drain.0", o.drain, 1)
		cmd.Args = append(cmd.Args, "-drain")
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "history: the drain failed: %v\n%s", err, out)
			return 2
		}
	}
	if err := dump(o.db, filepath.Join(o.dir, "dump.json")); err != nil {
		fmt.Fprintln(os.Stderr, "dump:", err)
		return 2
	}
	fmt.Printf("history: clients ran %.1f s, %d processes (%d killed with SIGKILL and restarted)\n", ran.Seconds(), len(all), kills)
	checked := time.Now()
	check.VisualizeDir = o.dir
	check.LinearTimeout = time.Duration(o.linearTimeout * float64(time.Second))
	h, err := check.Load(o.dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "check:", err)
		return 2
	}
	fmt.Printf("history: %d calls (%d with no completion: their outcome is unknown), %d leases; calls by language: %s\n",
		len(h.Ops), countUnknown(h), countLeases(h), byLang(h))
	rs := check.Run(h)
	failed := check.Report(os.Stdout, rs, o.show)
	if o.expect == "" {
		fmt.Printf("history: %d passed, %d failed\n", len(rs)-failed, failed)
	} else { // not a suite's closing line: these failures are the point of the run
		fmt.Printf("history: with the planted bug, %d properties held and %d broke\n", len(rs)-failed, failed)
	}
	fmt.Printf("history: checked in %.1f s\n", time.Since(checked).Seconds())
	if bad > 0 {
		fmt.Fprintf(os.Stderr, "history: %d client(s) failed on their own\n", bad)
		return 2
	}
	if o.expect != "" {
		for _, r := range rs {
			if r.Name == o.expect && len(r.Violations) > 0 {
				fmt.Printf("history: the planted bug (%s) was caught: %s failed, as expected\n", o.rogue, o.expect)
				return 0
			}
		}
		fmt.Printf("history: the planted bug (%s) was NOT caught: %s did not fail\n", o.rogue, o.expect)
		return 1
	}
	if failed > 0 {
		return 1
	}
	return 0
}

func countUnknown(h *check.History) int {
	n := 0
	for _, o := range h.Ops {
		if o.R == nil {
			n++
		}
	}
	return n
}

func byLang(h *check.History) string {
	n := map[string]int{}
	for _, o := range h.Ops {
		n[o.Lang]++
	}
	var out []string
	for _, l := range []string{"go", "rust", "python", "harel", "rogue"} {
		if n[l] > 0 {
			out = append(out, fmt.Sprintf("%s %d", l, n[l]))
		}
	}
	return strings.Join(out, ", ")
}

func countLeases(h *check.History) int {
	n := 0
	for _, hd := range h.Holds {
		if !hd.Park {
			n++
		}
	}
	return n
}

func command(o *opts, lang, id string, seconds float64, seed int64) (*exec.Cmd, error) {
	log := filepath.Join(o.dir, "logs", id+".jsonl")
	common := []string{"-db", o.db, "-log", log, "-id", id, "-seconds", fmt.Sprintf("%.3f", seconds),
		"-seed", fmt.Sprint(seed), "-groups", fmt.Sprint(o.groups), "-start", fmt.Sprint(o.start)}
	switch lang {
	case "go":
		return exec.Command(o.client, common...), nil
	case "rust":
		return exec.Command(o.rustClient, common...), nil
	case "harel":
		return exec.Command(o.venvPython, append([]string{filepath.Join(o.scripts, "harel_worker.py")}, common...)...), nil
	case "python":
		cmd := exec.Command(o.sysPython, append([]string{filepath.Join(o.scripts, "py_client.py")}, common...)...)
		cmd.Env = append(os.Environ(), "PYTHONPATH="+o.pyPath, "HAREL_TRANSPORT_LIB="+o.libPath)
		return cmd, nil
	case "rogue":
		return exec.Command(o.sysPython, append([]string{filepath.Join(o.scripts, "rogue.py"), "-mode", o.rogue}, common...)...), nil
	}
	return nil, fmt.Errorf("unknown language %q", lang)
}

// setup makes the queue's tables (through the library) and the app table the clients'
// transactions write, with the row "seed" that a failing transaction collides with.
func setup(db string) error {
	t, err := harel.Open(db)
	if err != nil {
		return err
	}
	defer t.Close()
	_, err = t.InTx(context.Background(), func(tx *harel.Tx) error {
		if err := tx.Exec("CREATE TABLE IF NOT EXISTS hist_app (id TEXT PRIMARY KEY, client TEXT NOT NULL)"); err != nil {
			return err
		}
		return tx.Exec("INSERT INTO hist_app (id, client) VALUES ('seed', 'run')")
	})
	return err
}

// dump reads, through the library's transaction API, every message, dead letter and
// idempotency key, and the app table, into path.
func dump(db, path string) error {
	t, err := harel.Open(db)
	if err != nil {
		return err
	}
	defer t.Close()
	var rows [4][][]any
	_, err = t.InTx(context.Background(), func(tx *harel.Tx) error {
		for i, sql := range []string{
			"SELECT seq, group_id, event, locked_by, lock_expiry, attempts FROM harel_transport_messages ORDER BY seq",
			"SELECT seq, group_id, event, attempts FROM harel_transport_dead ORDER BY seq",
			"SELECT key, seq FROM harel_transport_keys ORDER BY key",
			"SELECT id FROM hist_app WHERE id <> 'seed' ORDER BY id",
		} {
			if rows[i], err = tx.Query(context.Background(), sql); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	d := hist.DumpOf(hist.Now(), rows[0], rows[1], rows[2], rows[3])
	sort.Slice(d.Messages, func(a, b int) bool { return d.Messages[a].S < d.Messages[b].S })
	b, err := json.MarshalIndent(d, "", " ")
	if err != nil {
		return err
	}
	fmt.Printf("history: the queue at the end: %d messages, %d dead letters, %d keys, %d app rows\n",
		len(d.Messages), len(d.Dead), len(d.Keys), len(d.App))
	return os.WriteFile(path, b, 0o644)
}
