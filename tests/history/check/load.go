// Package check reads a history (every client's log and the queue's final dump) and
// checks the queue's promises on it, one property at a time (see Properties).
package check

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/harel-transport/harel-transport/tests/history/hist"
)

// Never is the completion instant of a call whose completion was never logged (its
// client was killed during it): its outcome is unknown.
const Never = math.MaxInt64 / 4

// tol absorbs the rounding of lease ends (the Go binding gives microseconds, float seconds
// carry ~0.3 us at today's epoch): no finding rests on a margin smaller than this.
const tol = int64(1_000_000) // 1 ms

// Op is one call: its invocation, and its completion if it was logged.
type Op struct {
	Client, Lang string
	I            int
	Name         string
	Inv, Cmp     int64
	Out          string       // ok, fail, unknown
	A            *hist.Record // the invocation's line
	R            *hist.Record // the completion's line; nil when unknown
}

// Checked says whether the op's lease rules are this library's (acks and nacks of a lease
// not held are refused). harel 0.9's transports check nothing: their ack deletes by seq.
func (o *Op) Checked() bool { return o.Lang != "harel" }

func (o *Op) String() string {
	return fmt.Sprintf("%s#%d %s (%s)", o.Client, o.I, o.Name, o.Out)
}

// Lines gives the op's log lines, for a report.
func (o *Op) Lines() []string {
	out := []string{fmt.Sprintf("%s:%d %s", o.A.File, o.A.Line, raw(o.A))}
	if o.R != nil {
		out = append(out, fmt.Sprintf("%s:%d %s", o.R.File, o.R.Line, raw(o.R)))
	} else {
		out = append(out, "(no completion: the client was killed during the call; outcome unknown)")
	}
	return out
}

func raw(r *hist.Record) string {
	b, _ := json.Marshal(r)
	return string(b)
}

// Load reads dir/logs/*.jsonl and dir/dump.json.
func Load(dir string) (*History, error) {
	files, err := filepath.Glob(filepath.Join(dir, "logs", "*.jsonl"))
	if err != nil {
		return nil, err
	}
	var recs []*hist.Record
	for _, f := range files {
		rs, err := readLog(f, dir)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rs...)
	}
	// When each client process was reaped (cmd/run writes it): a call left without a
	// completion took effect before then, if at all.
	exits := map[string]int64{}
	ends, _ := filepath.Glob(filepath.Join(dir, "logs", "*.exit"))
	for _, f := range ends {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var t int64
		if _, err := fmt.Sscan(string(b), &t); err != nil {
			return nil, fmt.Errorf("%s: %v", f, err)
		}
		exits[strings.TrimSuffix(filepath.Base(f), ".exit")] = t
	}
	var dump hist.Dump
	b, err := os.ReadFile(filepath.Join(dir, "dump.json"))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &dump); err != nil {
		return nil, fmt.Errorf("dump.json: %w", err)
	}
	return Build(recs, &dump, exits)
}

func readLog(path, dir string) ([]*hist.Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	name, _ := filepath.Rel(dir, path)
	var out []*hist.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	n := 0
	var bad error
	for sc.Scan() {
		n++
		if bad != nil { // a torn line is allowed only last, where a kill may leave it
			return nil, bad
		}
		r := new(hist.Record)
		if err := json.Unmarshal(sc.Bytes(), r); err != nil {
			bad = fmt.Errorf("%s:%d: %v", name, n, err)
			continue
		}
		r.File, r.Line = name, n
		out = append(out, r)
	}
	return out, sc.Err()
}

// Build pairs invocations with completions and indexes the history. exits has, by client,
// the instant its process was gone: a call of it with no completion is bounded by it.
func Build(recs []*hist.Record, dump *hist.Dump, exits map[string]int64) (*History, error) {
	type key struct {
		c string
		i int
	}
	ops := map[key]*Op{}
	var order []*Op
	for _, r := range recs {
		k := key{r.Client, r.I}
		switch r.Type {
		case "invoke":
			if ops[k] != nil {
				return nil, fmt.Errorf("%s:%d: call %s#%d invoked twice", r.File, r.Line, r.Client, r.I)
			}
			o := &Op{Client: r.Client, Lang: r.Lang, I: r.I, Name: r.Op, Inv: r.At, Cmp: Never, Out: "unknown", A: r}
			ops[k] = o
			order = append(order, o)
		case "ok", "fail", "info":
			o := ops[k]
			if o == nil {
				return nil, fmt.Errorf("%s:%d: completion of %s#%d, never invoked", r.File, r.Line, r.Client, r.I)
			}
			o.R, o.Cmp = r, r.At
			o.Out = map[string]string{"ok": "ok", "fail": "fail", "info": "unknown"}[r.Type]
		default:
			return nil, fmt.Errorf("%s:%d: unknown type %q", r.File, r.Line, r.Type)
		}
	}
	for _, o := range order {
		if t, ok := exits[o.Client]; ok && o.R == nil && t > o.Inv {
			o.Cmp = t // still unknown, but over by then
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return order[a].Inv < order[b].Inv })
	h := &History{Ops: order, Dump: dump}
	h.index()
	return h, nil
}

// ---- the index ------------------------------------------------------------------------

// Pub is one message a publish call wrote, or tried to.
type Pub struct {
	Op  *Op
	Idx int
	Msg hist.Msg
}

// Committed says whether the publish definitely stored its message (ok, not a duplicate,
// not a transaction rolled back), and Failed whether it definitely stored nothing.
func (p *Pub) Committed() bool {
	if p.Op.Out != "ok" || p.Dup() {
		return false
	}
	return p.Op.Name != "tx" || p.Op.A.TxMode != "rollback"
}

func (p *Pub) Failed() bool {
	return p.Op.Out == "fail" || p.Dup() || (p.Op.Name == "tx" && p.Op.A.TxMode == "rollback" && p.Op.Out == "ok")
}

// Dup says whether the call reported the message a duplicate of its key.
func (p *Pub) Dup() bool {
	return p.Op.Out == "ok" && p.Op.R != nil && p.Idx < len(p.Op.R.Pub) && p.Op.R.Pub[p.Idx].Dup
}

// ReportedSeq is the seq the call reported for the message (0 if none).
func (p *Pub) ReportedSeq() int64 {
	if p.Op.Out == "ok" && p.Op.R != nil && p.Idx < len(p.Op.R.Pub) {
		return p.Op.R.Pub[p.Idx].S
	}
	return 0
}

// Sight is one place a stored message was seen: a lease, the final dump's messages or its
// dead letters.
type Sight struct {
	S     int64
	G     string
	E     string
	Where string
	Op    *Op // the claim, when a lease
}

// Hold is an interval over which a group's head was held: a lease (claim instant in
// [StartLo, StartHi], valid at least until EndLo) or a park (Park set).
type Hold struct {
	S                       int64
	G, E, W                 string
	Park                    bool
	StartLo, StartHi, EndLo int64
	Exp                     int64 // the lease's end as last known
	Op                      *Op   // the claim (or the nack that parked)
	Ended                   *Op   // what ended it, if anything did (for reports)
}

// Action is what an op did, or tried, to one lease: ack, nack (now), park (nack with a
// delay), extend or dead_letter, with its own outcome (ack_many and the like have one per
// lease).
type Action struct {
	Op   *Op
	Kind string
	Ref  hist.Ref
	Out  string
	Exp  int64 // extend: the new end; park: its end if known
}

// Deletes says whether the action removes the message when it succeeds.
func (a *Action) Deletes() bool { return a.Kind == "ack" || a.Kind == "dead_letter" }

// History is a loaded history and its indexes.
type History struct {
	Ops  []*Op
	Dump *hist.Dump

	Pubs      map[string]*Pub    // by event id
	Sights    map[string][]Sight // by event id
	Holds     []*Hold
	Actions   []*Action
	BySeq     map[int64][]*Action // actions by the seq they name
	Remaining map[int64]hist.DumpMsg
	Dead      map[int64]hist.DumpMsg
	App       map[string]bool
	SeqOf     map[string]int64 // event id -> seq, from sightings and reported seqs

	holdSeq map[int64][]*Hold
}

func ns(seconds float64) int64 { return int64(math.Round(seconds * 1e9)) }

func (h *History) index() {
	h.Pubs = map[string]*Pub{}
	h.Sights = map[string][]Sight{}
	h.BySeq = map[int64][]*Action{}
	h.Remaining = map[int64]hist.DumpMsg{}
	h.Dead = map[int64]hist.DumpMsg{}
	h.App = map[string]bool{}
	h.SeqOf = map[string]int64{}
	for _, o := range h.Ops {
		a := o.A
		for j, m := range a.Msgs {
			if h.Pubs[m.E] == nil {
				h.Pubs[m.E] = &Pub{Op: o, Idx: j, Msg: m}
			}
		}
		if o.Out == "ok" && o.R != nil {
			for _, l := range o.R.Got {
				h.addLease(o, l)
			}
		}
		h.addActions(o)
	}
	for _, m := range h.Dump.Messages {
		h.Remaining[m.S] = m
		h.Sights[m.E] = append(h.Sights[m.E], Sight{S: m.S, G: m.G, E: m.E, Where: "dump: messages"})
	}
	for _, m := range h.Dump.Dead {
		h.Dead[m.S] = m
		h.Sights[m.E] = append(h.Sights[m.E], Sight{S: m.S, G: m.G, E: m.E, Where: "dump: dead letters"})
	}
	for _, id := range h.Dump.App {
		h.App[id] = true
	}
	for e, ss := range h.Sights {
		h.SeqOf[e] = ss[0].S
	}
	h.endHolds()
}

func (h *History) addLease(o *Op, l hist.Lease) {
	vis := ns(o.A.Vis)
	hd := &Hold{S: l.S, G: l.G, E: l.E, W: l.W, Exp: ns(l.Exp), Op: o}
	if o.Lang == "harel" || l.Exp == 0 {
		// harel's claim reads its clock before it takes the write lock and does not say
		// when it got it: the lease began within the call.
		hd.StartLo, hd.StartHi = o.Inv, o.Cmp
	} else {
		// This library's lease carries its claim's "now", read under the write lock.
		hd.StartLo = hd.Exp - vis
		hd.StartHi = hd.StartLo
	}
	h.Holds = append(h.Holds, hd)
	h.Sights[l.E] = append(h.Sights[l.E], Sight{S: l.S, G: l.G, E: l.E, Where: "lease", Op: o})
}

func (h *History) addActions(o *Op) {
	a := o.A
	add := func(kind string, r hist.Ref, out string) *Action {
		act := &Action{Op: o, Kind: kind, Ref: r, Out: out}
		h.Actions = append(h.Actions, act)
		h.BySeq[r.S] = append(h.BySeq[r.S], act)
		return act
	}
	perLease := func(j int) string {
		if o.Out != "ok" {
			return o.Out
		}
		if o.R == nil || j >= len(o.R.Outcomes) {
			return "unknown"
		}
		if o.R.Outcomes[j] == "ok" {
			return "ok"
		}
		return "fail"
	}
	switch o.Name {
	case "ack", "dead_letter", "ack_and_claim":
		kind := o.Name
		if kind == "ack_and_claim" {
			kind = "ack"
		}
		if len(a.Leases) > 0 {
			add(kind, a.Leases[0], o.Out)
		}
	case "nack":
		if len(a.Leases) > 0 {
			if a.Delay > 0 {
				act := add("park", a.Leases[0], o.Out)
				if o.R != nil && o.R.Exp > 0 {
					act.Exp = ns(o.R.Exp)
				} else {
					act.Exp = o.Inv + ns(a.Delay) // the earliest it can end
				}
			} else {
				add("nack", a.Leases[0], o.Out)
			}
		}
	case "extend":
		if len(a.Leases) > 0 {
			act := add("extend", a.Leases[0], o.Out)
			if o.R != nil && o.Out == "ok" {
				act.Exp = ns(o.R.Exp)
			} else {
				act.Exp = o.Inv + ns(a.Vis) // the earliest new end, had it been applied
			}
		}
	case "ack_many", "ack_and_claim_many":
		for j, r := range a.Leases {
			add("ack", r, perLease(j))
		}
	}
}

// holdOf finds the lease an action by worker w on seq s acts on: the library matches the
// seq and the worker, so it is w's latest lease on s claimed before the action returned.
func (h *History) holdOf(s int64, w string, before int64) *Hold {
	var best *Hold
	for _, hd := range h.holdsBySeq(s) {
		if hd.Park || hd.W != w || hd.StartLo > before {
			continue
		}
		if best == nil || hd.StartLo > best.StartLo {
			best = hd
		}
	}
	return best
}

func (h *History) holdsBySeq(s int64) []*Hold {
	if h.holdSeq == nil {
		h.holdSeq = map[int64][]*Hold{}
		for _, hd := range h.Holds {
			h.holdSeq[hd.S] = append(h.holdSeq[hd.S], hd)
		}
	}
	return h.holdSeq[s]
}

// endHolds works out how long each lease surely lasted (EndLo), and adds the parks.
func (h *History) endHolds() {
	for _, hd := range h.Holds {
		hd.EndLo = hd.Exp
	}
	// The holder's own actions, in the order it made them.
	acts := append([]*Action(nil), h.Actions...)
	sort.SliceStable(acts, func(a, b int) bool { return acts[a].Op.Inv < acts[b].Op.Inv })
	closed := map[*Hold]bool{}
	var parks []*Hold
	for _, act := range acts {
		o := act.Op
		if !o.Checked() {
			// harel's ack and nack act on the seq, whoever holds it: every lease on the
			// message that began before may end there.
			if act.Out == "fail" {
				continue
			}
			for _, hd := range h.holdsBySeq(act.Ref.S) {
				if hd.StartLo < o.Cmp && o.Inv < hd.EndLo {
					hd.EndLo, hd.Ended = o.Inv, o
				}
			}
			if act.Kind == "park" {
				parks = append(parks, &Hold{S: act.Ref.S, G: act.Ref.G, E: act.Ref.E, W: "__parked__", Park: true,
					StartLo: o.Inv, StartHi: o.Cmp, EndLo: act.Exp, Exp: act.Exp, Op: o})
			}
			continue
		}
		hd := h.holdOf(act.Ref.S, act.Ref.W, o.Cmp)
		if hd == nil || closed[hd] {
			continue
		}
		switch {
		case act.Kind == "extend":
			switch act.Out {
			case "ok":
				hd.Exp, hd.EndLo = act.Exp, act.Exp
			case "unknown":
				hd.EndLo = min(hd.EndLo, act.Exp)
			}
		case act.Out == "ok" || act.Out == "unknown":
			if o.Inv < hd.EndLo {
				hd.EndLo, hd.Ended = o.Inv, o
			}
			closed[hd] = true
			if act.Kind == "park" && act.Out == "ok" {
				parks = append(parks, &Hold{S: act.Ref.S, G: act.Ref.G, E: act.Ref.E, W: "__parked__", Park: true,
					StartLo: o.Inv, StartHi: o.Cmp, EndLo: act.Exp, Exp: act.Exp, Op: o})
			}
		}
	}
	h.Holds = append(h.Holds, parks...)
	h.holdSeq = nil
}
