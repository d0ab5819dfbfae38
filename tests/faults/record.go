package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
	"github.com/harel-transport/harel-transport/tests/history/hist"
)

// ---- what an error promises ---------------------------------------------------------------

// label names an outcome for the matrix: ok, or the status with, for HAREL_ERR_CONNECT,
// what its message says was applied.
func label(err error) string {
	if err == nil {
		return "ok"
	}
	var e *harel.Error
	if !errors.As(err, &e) {
		return "go-error"
	}
	name := strings.TrimPrefix(strings.TrimPrefix(e.Status.String(), "HAREL_ERR_"), "HAREL_")
	if e.Status == harel.StatusConnect {
		switch {
		case strings.Contains(e.Message, "may have been applied"):
			return "CONNECT(may)"
		case strings.Contains(e.Message, "nothing was applied"),
			// A sharded batch ack's lease whose shard's transaction failed: the Go binding
			// says it "was not acked ... (it is still held)".
			strings.Contains(e.Message, "was not acked"):
			return "CONNECT(nothing)"
		}
		return "CONNECT(other)"
	}
	return name
}

// outcome is the completion line the library's promise calls for: "ok"; "fail" for a status
// that says nothing was applied (HAREL_ERR_CONNECT saying so, BUSY, DATABASE, LEASE_LOST,
// ARGUMENT...); "info" (outcome unknown) for one that says it may have been applied, or a
// HAREL_ERR_CONNECT that says neither. The checker then holds the library to it: a "fail"
// whose effect is found in the queue is a violation.
func outcome(err error) hist.Record {
	if err == nil {
		return hist.Record{Type: "ok"}
	}
	var e *harel.Error
	if !errors.As(err, &e) {
		return hist.Record{Type: "info", Err: err.Error()}
	}
	r := hist.Record{Status: e.Status.String(), Err: e.Message}
	switch label(err) {
	case "CONNECT(may)", "CONNECT(other)", "PANIC":
		r.Type = "info"
	default:
		r.Type = "fail"
	}
	return r
}

func lost(err error) bool { return errors.Is(err, harel.ErrLeaseLost) }

// ---- the logs ------------------------------------------------------------------------------

// logs are a cell's histories: one directory per shard (logs/CLIENT.jsonl, dump.json), so
// each shard's history is checked on its own, as the separate queue it is. A call on a
// sharded transport is written to the history of each shard it touched, with the part of
// its arguments and outcome that is that shard's.
type logs struct {
	dirs []string
}

func newLogs(dir string, shards int) (*logs, error) {
	l := &logs{}
	for s := 0; s < shards; s++ {
		d := filepath.Join(dir, fmt.Sprintf("shard%d", s))
		if err := os.MkdirAll(filepath.Join(d, "logs"), 0o755); err != nil {
			return nil, err
		}
		l.dirs = append(l.dirs, d)
	}
	return l, nil
}

// client is one logging client (a worker goroutine): a file and a call counter per shard.
type client struct {
	id      string
	counted bool // its calls are the cell's outcomes (not the setup's or the drain's)
	mu      sync.Mutex
	files   []*os.File
	n       []int
}

func (l *logs) client(id string) (*client, error) {
	c := &client{id: id, n: make([]int, len(l.dirs))}
	for _, d := range l.dirs {
		f, err := os.OpenFile(filepath.Join(d, "logs", id+".jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		c.files = append(c.files, f)
	}
	return c, nil
}

func (c *client) close() {
	for _, f := range c.files {
		f.Close()
	}
}

// emit writes call's invocation (at inv) and completion (at cmp) to shard's history.
func (c *client) emit(shard int, inv hist.Record, invAt time.Time, cmp hist.Record, cmpAt time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := c.n[shard]
	c.n[shard]++
	inv.Client, inv.Lang, inv.I, inv.Type, inv.At = c.id, "go", i, "invoke", invAt.UnixNano()
	cmp.Client, cmp.Lang, cmp.I, cmp.At = c.id, "go", i, cmpAt.UnixNano()
	for _, r := range []*hist.Record{&inv, &cmp} {
		b, err := json.Marshal(r)
		if err != nil {
			panic(err)
		}
		if _, err := c.files[shard].Write(append(b, '\n')); err != nil {
			panic(err)
		}
	}
}

// ---- a sharded batch's error ----------------------------------------------------------------

var (
	failedShard = regexp.MustCompile(`shard (\d+) \(`)
	storedParts = regexp.MustCompile(`the parts for shards ([\d, ]+) were stored`)
)

// batchParts reads what a sharded publish_many's error says of each shard's part: the
// shard that failed, and the shards whose parts were stored before it. ok is false when the
// message says neither.
func batchParts(msg string) (failed int, stored map[int]bool, ok bool) {
	m := failedShard.FindStringSubmatch(msg)
	if m == nil {
		return 0, nil, false
	}
	failed, _ = strconv.Atoi(m[1])
	stored = map[int]bool{}
	if s := storedParts.FindStringSubmatch(msg); s != nil {
		for _, f := range strings.Split(s[1], ",") {
			if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil {
				stored[n] = true
			}
		}
	} else if !strings.Contains(msg, "no other shard's part was stored") {
		return failed, nil, false
	}
	return failed, stored, true
}

// ---- what a cell saw -----------------------------------------------------------------------

// tally counts outcomes per call kind, and keeps one message per kind of error.
type tally struct {
	mu       sync.Mutex
	counts   map[string]map[string]int // call -> label -> n
	samples  map[string]string         // label -> a message
	slowest  map[string]time.Duration  // call -> longest
	problems []string
}

func newTally() *tally {
	return &tally{counts: map[string]map[string]int{}, samples: map[string]string{}, slowest: map[string]time.Duration{}}
}

func (t *tally) add(call, lbl string, err error, took time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.counts[call] == nil {
		t.counts[call] = map[string]int{}
	}
	t.counts[call][lbl]++
	if err != nil {
		if _, ok := t.samples[lbl]; !ok {
			t.samples[lbl] = err.Error()
		}
	}
	if took > t.slowest[call] {
		t.slowest[call] = took
	}
}

func (t *tally) problem(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.problems = append(t.problems, fmt.Sprintf(format, args...))
}

// summary: "publish 40 ok 3 CONNECT(may); ack 12 ok" in a fixed order of calls and labels.
func (t *tally) summary() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var calls []string
	for c := range t.counts {
		calls = append(calls, c)
	}
	sort.Strings(calls)
	var parts []string
	for _, c := range calls {
		var lbls []string
		for l := range t.counts[c] {
			lbls = append(lbls, l)
		}
		sort.Slice(lbls, func(a, b int) bool {
			if (lbls[a] == "ok") != (lbls[b] == "ok") {
				return lbls[a] == "ok"
			}
			return lbls[a] < lbls[b]
		})
		var s []string
		for _, l := range lbls {
			s = append(s, fmt.Sprintf("%d %s", t.counts[c][l], l))
		}
		parts = append(parts, c+" "+strings.Join(s, " "))
	}
	return strings.Join(parts, "; ")
}
