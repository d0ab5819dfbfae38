package check

import (
	"fmt"
	"io"
	"sort"
)

// Violation is one breach of a property, with the calls that show it.
type Violation struct {
	Msg   string
	Ops   []*Op
	Extra []string
}

// Result is a property's verdict on a history.
type Result struct {
	Name       string
	N          int    // how many events it looked at
	Note       string // what it looked at, said in words
	Violations []Violation
}

// Property is one promise of docs/queue.md and how it is checked.
type Property struct {
	Name  string
	What  string
	Check func(h *History) Result
}

// Properties are checked in this order; the names are what a test expects to see fail.
var Properties = []Property{
	{"no-redelivery-after-ack", "a message acked (or dead-lettered) is never leased again nor left in the queue", noRedelivery},
	{"no-loss", "every message published (or seen stored) is acked, dead or still in the queue", noLoss},
	{"no-phantom", "every stored message was published by a call that did not fail, and stored once", noPhantom},
	{"group-fifo", "a group's message is leased only once every message before it is gone; seqs follow commit order", groupFIFO},
	{"one-holder-per-group", "at any instant, at most one valid lease or park per group", oneHolder},
	{"stale-ack-refused", "an ack, nack, extend or dead_letter of a lease no longer held is refused", staleAck},
	{"keyed-publish-once", "publishes with one idempotency key store one message; the others report it as a duplicate", keyedOnce},
	{"transaction-atomicity", "a transaction's app row and its messages are stored together or not at all", txAtomic},
	{"group-linearizable", "each group's history is linearizable against a model of the queue (porcupine)", groupLinearizable},
}

// Run checks every property.
func Run(h *History) []Result {
	out := make([]Result, len(Properties))
	for i, p := range Properties {
		out[i] = p.Check(h)
		out[i].Name = p.Name
	}
	return out
}

// Report prints a line per property and the first violations of a failed one with the log
// lines involved. It returns how many failed; the caller prints the closing line.
func Report(w io.Writer, rs []Result, maxShown int) int {
	failed := 0
	for _, r := range rs {
		if len(r.Violations) == 0 {
			fmt.Fprintf(w, "%s: ok (%d events%s)\n", r.Name, r.N, note(r.Note))
			continue
		}
		failed++
		fmt.Fprintf(w, "%s: FAILED, %d violation(s) (%d events%s)\n", r.Name, len(r.Violations), r.N, note(r.Note))
		for i, v := range r.Violations {
			if i == maxShown {
				fmt.Fprintf(w, "  ... and %d more\n", len(r.Violations)-maxShown)
				break
			}
			fmt.Fprintf(w, "  - %s\n", v.Msg)
			seen := map[*Op]bool{}
			for _, o := range v.Ops {
				if o == nil || seen[o] {
					continue
				}
				seen[o] = true
				for _, l := range o.Lines() {
					fmt.Fprintf(w, "      %s\n", l)
				}
			}
			for _, e := range v.Extra {
				fmt.Fprintf(w, "      %s\n", e)
			}
		}
	}
	return failed
}

func note(n string) string {
	if n == "" {
		return ""
	}
	return "; " + n
}

func at(t int64) string {
	if t >= Never {
		return "never"
	}
	if t <= -Never {
		return "unknown"
	}
	return fmt.Sprintf("%d.%09d", t/1e9, t%1e9)
}

// ---- helpers --------------------------------------------------------------------------

// deletions are the actions that removed seq s or may have (ok, or outcome unknown).
func (h *History) deletions(s int64) []*Action {
	var out []*Action
	for _, a := range h.BySeq[s] {
		if a.Deletes() && a.Out != "fail" {
			out = append(out, a)
		}
	}
	return out
}

// delLo is the earliest instant seq s may have been removed: the first invocation of a
// deletion that did or may have; +Never if nothing removed it and it is still queued;
// -Never if it is gone with no call to show when.
func (h *History) delLo(s int64) (int64, *Action) {
	lo, by := int64(Never), (*Action)(nil)
	for _, a := range h.deletions(s) {
		if a.Op.Inv < lo {
			lo, by = a.Op.Inv, a
		}
	}
	if by != nil {
		return lo, by
	}
	if _, ok := h.Remaining[s]; ok {
		return Never, nil
	}
	return -Never, nil
}

// definiteDeletion is the deletion of seq s that surely happened and returned first.
func (h *History) definiteDeletion(s int64) *Action {
	var best *Action
	for _, a := range h.BySeq[s] {
		if a.Deletes() && a.Out == "ok" && (best == nil || a.Op.Cmp < best.Op.Cmp) {
			best = a
		}
	}
	return best
}

type seen struct {
	G string
	E string
}

// stored is every message seen stored, by seq.
func (h *History) stored() map[int64]seen {
	out := map[int64]seen{}
	for _, ss := range h.Sights {
		for _, s := range ss {
			out[s.S] = seen{s.G, s.E}
		}
	}
	return out
}

func leases(hs []*Hold) []*Hold {
	var out []*Hold
	for _, hd := range hs {
		if !hd.Park {
			out = append(out, hd)
		}
	}
	return out
}

func (hd *Hold) String() string {
	kind := "lease"
	if hd.Park {
		kind = "park"
	}
	return fmt.Sprintf("%s of seq %d (group %s) by %s, from [%s, %s] until at least %s",
		kind, hd.S, hd.G, hd.W, at(hd.StartLo), at(hd.StartHi), at(hd.EndLo))
}

// ---- no-redelivery-after-ack ------------------------------------------------------------

func noRedelivery(h *History) Result {
	var r Result
	bySeq := map[int64][]*Hold{}
	for _, hd := range leases(h.Holds) {
		bySeq[hd.S] = append(bySeq[hd.S], hd)
	}
	seqs := map[int64]bool{}
	for _, a := range h.Actions {
		if a.Deletes() && a.Out == "ok" {
			seqs[a.Ref.S] = true
		}
	}
	for s := range seqs {
		d := h.definiteDeletion(s)
		r.N++
		for _, hd := range bySeq[s] {
			if hd.StartLo > d.Op.Cmp+tol {
				r.Violations = append(r.Violations, Violation{
					Msg: fmt.Sprintf("seq %d was %s by %s (returned %s), then leased again by %s at %s",
						s, d.Kind+"ed", d.Op, at(d.Op.Cmp), hd.W, at(hd.StartLo)),
					Ops: []*Op{d.Op, hd.Op}})
			}
		}
		if m, ok := h.Remaining[s]; ok {
			r.Violations = append(r.Violations, Violation{
				Msg: fmt.Sprintf("seq %d was %s by %s, yet is still in the queue at the end (locked_by %q)",
					s, d.Kind+"ed", d.Op, m.LockedBy), Ops: []*Op{d.Op}})
		}
		if _, ok := h.Dead[s]; ok && d.Kind == "ack" {
			r.Violations = append(r.Violations, Violation{
				Msg: fmt.Sprintf("seq %d was acked by %s, yet is a dead letter at the end", s, d.Op), Ops: []*Op{d.Op}})
		}
	}
	r.Note = fmt.Sprintf("%d messages surely acked or dead-lettered, %d leases", len(seqs), len(leases(h.Holds)))
	r.N += len(leases(h.Holds))
	return r
}

// ---- no-loss ----------------------------------------------------------------------------

func noLoss(h *History) Result {
	var r Result
	acked, dead, queued := 0, 0, 0
	account := func(s int64) string {
		if _, ok := h.Remaining[s]; ok {
			queued++
			return "queued"
		}
		if _, ok := h.Dead[s]; ok {
			dead++
			return "dead"
		}
		if len(h.deletions(s)) > 0 {
			acked++
			return "acked"
		}
		return ""
	}
	done := map[int64]bool{}
	var events []string
	for e := range h.Pubs {
		events = append(events, e)
	}
	sort.Strings(events)
	for _, e := range events {
		p := h.Pubs[e]
		if !p.Committed() {
			continue
		}
		r.N++
		s := h.SeqOf[e]
		if s == 0 {
			s = p.ReportedSeq()
		}
		if s == 0 {
			r.Violations = append(r.Violations, Violation{
				Msg: fmt.Sprintf("event %s (group %s) was published by %s and never seen again: not leased, not in the queue, not a dead letter",
					e, p.Msg.G, p.Op), Ops: []*Op{p.Op}})
			continue
		}
		done[s] = true
		if account(s) == "" {
			r.Violations = append(r.Violations, lostAt(h, s, e, p.Op))
		}
	}
	// Messages seen stored whose publish's outcome was not known (or not a publish at all):
	// stored is stored.
	for s, m := range h.stored() {
		if done[s] {
			continue
		}
		r.N++
		if account(s) == "" {
			var op *Op
			if p := h.Pubs[m.E]; p != nil {
				op = p.Op
			}
			r.Violations = append(r.Violations, lostAt(h, s, m.E, op))
		}
	}
	r.Note = fmt.Sprintf("%d acked, %d dead, %d still queued", acked, dead, queued)
	return r
}

func lostAt(h *History, s int64, e string, pub *Op) Violation {
	v := Violation{Msg: fmt.Sprintf("seq %d (event %s) was stored, then vanished: never acked, not a dead letter, not in the queue", s, e),
		Ops: []*Op{pub}}
	for _, sg := range h.Sights[e] {
		if sg.Op != nil {
			v.Ops = append(v.Ops, sg.Op)
		}
	}
	return v
}

// ---- no-phantom -------------------------------------------------------------------------

func noPhantom(h *History) Result {
	var r Result
	events := map[int64]map[string]bool{}
	for e, ss := range h.Sights {
		r.N++
		seqs := map[int64]bool{}
		for _, s := range ss {
			seqs[s.S] = true
			if events[s.S] == nil {
				events[s.S] = map[string]bool{}
			}
			events[s.S][s.E] = true
		}
		var ops []*Op
		for _, s := range ss {
			if s.Op != nil {
				ops = append(ops, s.Op)
			}
		}
		p := h.Pubs[e]
		switch {
		case p == nil:
			r.Violations = append(r.Violations, Violation{
				Msg: fmt.Sprintf("event %s (seq %d) is stored but no call ever published it (%s)", e, ss[0].S, ss[0].Where), Ops: ops})
			continue
		case p.Op.Out == "fail" && p.Op.Name != "tx":
			r.Violations = append(r.Violations, Violation{
				Msg: fmt.Sprintf("event %s (seq %d) is stored although its publish failed (%s)", e, ss[0].S, p.Op.R.Status),
				Ops: append([]*Op{p.Op}, ops...)})
		case p.Msg.G != ss[0].G:
			r.Violations = append(r.Violations, Violation{
				Msg: fmt.Sprintf("event %s was published into group %s but stored in %s", e, p.Msg.G, ss[0].G),
				Ops: append([]*Op{p.Op}, ops...)})
		}
		if len(seqs) > 1 {
			r.Violations = append(r.Violations, Violation{
				Msg: fmt.Sprintf("event %s is stored under %d seqs %v: one publish stored twice", e, len(seqs), keys(seqs)),
				Ops: append([]*Op{p.Op}, ops...)})
		}
	}
	for s, es := range events {
		if len(es) > 1 {
			var list []string
			for e := range es {
				list = append(list, e)
			}
			sort.Strings(list)
			r.Violations = append(r.Violations, Violation{Msg: fmt.Sprintf("seq %d carries several events: %v", s, list)})
		}
	}
	r.Note = "messages seen stored"
	return r
}

func keys(m map[int64]bool) []int64 {
	var out []int64
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	return out
}

// ---- group-fifo -------------------------------------------------------------------------

func groupFIFO(h *History) Result {
	var r Result
	stored := h.stored()
	// Per group, the messages seen, by seq, and for each the earliest instant it may have
	// been removed.
	type msg struct {
		s     int64
		e     string
		delLo int64
	}
	byGroup := map[string][]msg{}
	for s, m := range stored {
		lo, _ := h.delLo(s)
		byGroup[m.G] = append(byGroup[m.G], msg{s, m.E, lo})
	}
	for g := range byGroup {
		ms := byGroup[g]
		sort.Slice(ms, func(a, b int) bool { return ms[a].s < ms[b].s })
	}
	holdsByGroup := map[string][]*Hold{}
	for _, hd := range leases(h.Holds) {
		holdsByGroup[hd.G] = append(holdsByGroup[hd.G], hd)
	}
	for g, hs := range holdsByGroup {
		ms := byGroup[g]
		// prefix maximum of delLo over seq order: the message before seq s that stayed longest
		best := make([]int, len(ms))
		for i := range ms {
			best[i] = i
			if i > 0 && ms[best[i-1]].delLo >= ms[i].delLo {
				best[i] = best[i-1]
			}
		}
		for _, hd := range hs {
			r.N++
			i := sort.Search(len(ms), func(i int) bool { return ms[i].s >= hd.S }) // messages before: ms[:i]
			if i == 0 {
				continue
			}
			m1 := ms[best[i-1]]
			if m1.delLo > hd.StartHi+tol {
				v := Violation{
					Msg: fmt.Sprintf("group %s: seq %d was leased to %s at %s while seq %d (event %s), before it in the group, was still queued (removed no earlier than %s)",
						g, hd.S, hd.W, at(hd.StartHi), m1.s, m1.e, at(m1.delLo)),
					Ops: []*Op{hd.Op}}
				if p := h.Pubs[m1.e]; p != nil {
					v.Ops = append(v.Ops, p.Op)
				}
				for _, a := range h.deletions(m1.s) {
					v.Ops = append(v.Ops, a.Op)
				}
				r.Violations = append(r.Violations, v)
			}
		}
	}
	// Seqs follow the real-time order of the publishes that stored them.
	type pubAt struct {
		s int64
		p *Pub
	}
	var ps []pubAt
	for e, p := range h.Pubs {
		if !p.Committed() {
			continue
		}
		s := h.SeqOf[e]
		if s == 0 {
			s = p.ReportedSeq()
		}
		if s != 0 {
			ps = append(ps, pubAt{s, p})
		}
	}
	sort.Slice(ps, func(a, b int) bool { return ps[a].s < ps[b].s })
	minCmp, by := int64(Never), (*Pub)(nil)
	for i := len(ps) - 1; i >= 0; i-- {
		p := ps[i]
		r.N++
		if by != nil && minCmp+tol < p.p.Op.Inv {
			r.Violations = append(r.Violations, Violation{
				Msg: fmt.Sprintf("event %s got seq %d, below seq %d of event %s, whose publish had returned (%s) before this one was invoked (%s)",
					p.p.Msg.E, p.s, h.SeqOf[by.Msg.E], by.Msg.E, at(minCmp), at(p.p.Op.Inv)),
				Ops: []*Op{by.Op, p.p.Op}})
		}
		if p.p.Op.Cmp < minCmp {
			minCmp, by = p.p.Op.Cmp, p.p
		}
	}
	// Within a batch (publish_many, a transaction) a group's messages keep their order.
	for _, o := range h.Ops {
		if len(o.A.Msgs) < 2 {
			continue
		}
		last := map[string]int64{}
		for _, m := range o.A.Msgs {
			p := h.Pubs[m.E]
			if p == nil || p.Op != o || !p.Committed() {
				continue
			}
			s := h.SeqOf[m.E]
			if s == 0 {
				s = p.ReportedSeq()
			}
			if s == 0 {
				continue
			}
			if s < last[m.G] {
				r.Violations = append(r.Violations, Violation{
					Msg: fmt.Sprintf("group %s: event %s got seq %d, below its batch predecessor's %d", m.G, m.E, s, last[m.G]),
					Ops: []*Op{o}})
			}
			last[m.G] = s
		}
	}
	r.Note = "leases checked against their group's earlier messages; publishes against commit order"
	return r
}

// ---- one-holder-per-group ---------------------------------------------------------------

func oneHolder(h *History) Result {
	var r Result
	byGroup := map[string][]*Hold{}
	for _, hd := range h.Holds {
		byGroup[hd.G] = append(byGroup[hd.G], hd)
		if !hd.Park && hd.Op.Lang != "harel" && (hd.StartLo < hd.Op.Inv-tol || hd.StartLo > hd.Op.Cmp+tol) {
			r.Violations = append(r.Violations, Violation{
				Msg: fmt.Sprintf("lease of seq %d: its claim's instant %s (lock_expiry - visibility) is outside the call [%s, %s]",
					hd.S, at(hd.StartLo), at(hd.Op.Inv), at(hd.Op.Cmp)), Ops: []*Op{hd.Op}})
		}
	}
	parks := 0
	for _, hs := range byGroup {
		sort.Slice(hs, func(a, b int) bool { return hs[a].StartLo < hs[b].StartLo })
		for i, a := range hs {
			r.N++
			if a.Park {
				parks++
			}
			for _, b := range hs[i+1:] {
				if b.StartLo > a.EndLo {
					break // sorted by StartLo: no later one can overlap a surely
				}
				if a.Park && b.Park {
					continue
				}
				// Surely overlapping: each began before the other surely ended.
				if b.StartHi+tol < a.EndLo && a.StartHi+tol < b.EndLo {
					v := Violation{
						Msg: fmt.Sprintf("group %s held twice at once: %s; and %s", a.G, a, b),
						Ops: []*Op{a.Op, b.Op}}
					if a.Ended != nil {
						v.Ops = append(v.Ops, a.Ended)
					}
					r.Violations = append(r.Violations, v)
				}
			}
		}
	}
	r.Note = fmt.Sprintf("%d leases and %d parks", r.N-parks, parks)
	return r
}

// ---- stale-ack-refused ------------------------------------------------------------------

func staleAck(h *History) Result {
	var r Result
	refusedStale, acceptedStale, refused := 0, 0, 0
	for _, act := range h.Actions {
		o := act.Op
		if !o.Checked() {
			continue
		}
		r.N++
		if o.Name == "ack" && o.A.Stale {
			if act.Out == "fail" {
				refusedStale++
			} else if act.Out == "ok" {
				acceptedStale++
			}
		}
		if act.Out == "fail" {
			refused++
		}
		if act.Out != "ok" {
			continue
		}
		s, w := act.Ref.S, act.Ref.W
		what := fmt.Sprintf("%s of seq %d by %s (%s#%d) succeeded", act.Kind, s, w, o.Client, o.I)
		// (a) the message was surely gone before the call.
		for _, d := range h.BySeq[s] {
			if d != act && d.Deletes() && d.Out == "ok" && d.Op.Cmp+tol < o.Inv {
				r.Violations = append(r.Violations, Violation{
					Msg: fmt.Sprintf("%s, but the message was %s by %s before it (returned %s)", what, d.Kind+"ed", d.Op, at(d.Op.Cmp)),
					Ops: []*Op{d.Op, o}})
				break
			}
		}
		// (b) another worker surely claimed it after this worker's lease and before the call.
		mine := h.holdOf(s, w, o.Cmp)
		if mine == nil {
			r.Violations = append(r.Violations, Violation{Msg: fmt.Sprintf("%s, but %s never leased seq %d", what, w, s), Ops: []*Op{o}})
			continue
		}
		for _, other := range leases(h.holdsBySeq(s)) {
			if other.W != w && other.StartLo > mine.StartHi+tol && other.StartHi+tol < o.Inv {
				r.Violations = append(r.Violations, Violation{
					Msg: fmt.Sprintf("%s, but %s had claimed the message since (at %s, after %s's lease of %s)",
						what, other.W, at(other.StartHi), w, at(mine.StartHi)),
					Ops: []*Op{mine.Op, other.Op, o}})
				break
			}
		}
		// (c) the same lease was surely acked or nacked already.
		if act.Kind != "extend" {
			for _, prev := range h.BySeq[s] {
				if prev == act || prev.Kind == "extend" || prev.Out != "ok" || !prev.Op.Checked() || prev.Ref.W != w {
					continue
				}
				if prev.Op.Inv > mine.StartHi && prev.Op.Cmp+tol < o.Inv {
					r.Violations = append(r.Violations, Violation{
						Msg: fmt.Sprintf("%s, but that lease had ended already: %s by %s", what, prev.Kind, prev.Op),
						Ops: []*Op{mine.Op, prev.Op, o}})
					break
				}
			}
		}
	}
	r.Note = fmt.Sprintf("%d refused; of the acks sent after their lease's end on purpose, %d refused, %d accepted (no claim in between)",
		refused, refusedStale, acceptedStale)
	return r
}

// ---- keyed-publish-once -----------------------------------------------------------------

func keyedOnce(h *History) Result {
	var r Result
	byKey := map[string][]*Pub{}
	for _, o := range h.Ops {
		for j, m := range o.A.Msgs {
			if m.K != "" {
				byKey[m.K] = append(byKey[m.K], &Pub{Op: o, Idx: j, Msg: m})
			}
		}
	}
	table := map[string]int64{}
	for _, k := range h.Dump.Keys {
		table[k.Key] = k.S
	}
	dups := 0
	for k, ps := range byKey {
		r.N++
		storedSeqs := map[int64]bool{}
		var firsts []*Pub
		reported := map[int64]bool{}
		var ops []*Op
		for _, p := range ps {
			ops = append(ops, p.Op)
			if s, ok := h.SeqOf[p.Msg.E]; ok {
				storedSeqs[s] = true
				if p.Dup() {
					r.Violations = append(r.Violations, Violation{
						Msg: fmt.Sprintf("key %s: event %s was reported a duplicate, yet is stored (seq %d)", k, p.Msg.E, s),
						Ops: []*Op{p.Op}})
				}
			}
			if p.Op.Out == "ok" && p.Op.R != nil && p.Idx < len(p.Op.R.Pub) {
				reported[p.Op.R.Pub[p.Idx].S] = true
				if p.Dup() {
					dups++
				} else {
					firsts = append(firsts, p)
				}
			}
		}
		if len(storedSeqs) > 1 {
			r.Violations = append(r.Violations, Violation{
				Msg: fmt.Sprintf("key %s stored %d messages: seqs %v", k, len(storedSeqs), keys(storedSeqs)), Ops: ops})
		}
		if len(firsts) > 1 {
			r.Violations = append(r.Violations, Violation{
				Msg: fmt.Sprintf("key %s: %d publishes reported storing a new message", k, len(firsts)), Ops: ops})
		}
		if len(reported) > 1 {
			r.Violations = append(r.Violations, Violation{
				Msg: fmt.Sprintf("key %s: publishes reported different seqs %v", k, keys(reported)), Ops: ops})
		}
		for s := range reported {
			if len(storedSeqs) == 1 && !storedSeqs[s] {
				r.Violations = append(r.Violations, Violation{
					Msg: fmt.Sprintf("key %s: publishes reported seq %d, but the message stored is seq %v", k, s, keys(storedSeqs)), Ops: ops})
			}
			if ts, ok := table[k]; !ok {
				r.Violations = append(r.Violations, Violation{
					Msg: fmt.Sprintf("key %s: a publish reported seq %d, but the keys table does not remember the key", k, s), Ops: ops})
			} else if ts != s {
				r.Violations = append(r.Violations, Violation{
					Msg: fmt.Sprintf("key %s: publishes reported seq %d, the keys table says %d", k, s, ts), Ops: ops})
			}
		}
	}
	r.Note = fmt.Sprintf("keys; %d publishes reported duplicates", dups)
	return r
}

// ---- transaction-atomicity --------------------------------------------------------------

func txAtomic(h *History) Result {
	var r Result
	committed, rolledBack, failed, unknown := 0, 0, 0, 0
	for _, o := range h.Ops {
		if o.Name != "tx" {
			continue
		}
		r.N++
		row := h.App[o.A.Tx]
		var in, out []string
		for _, m := range o.A.Msgs {
			if _, ok := h.SeqOf[m.E]; ok {
				in = append(in, m.E)
			} else {
				out = append(out, m.E)
			}
		}
		all, none := len(out) == 0, len(in) == 0
		state := fmt.Sprintf("row %s: %v; messages stored %v, not stored %v", o.A.Tx, row, in, out)
		bad := ""
		switch {
		case o.Out == "ok" && o.A.TxMode != "rollback":
			committed++
			if !row || !all {
				bad = "committed, but not everything is there"
			}
		case o.Out == "fail" || (o.Out == "ok" && o.A.TxMode == "rollback"):
			if o.Out == "fail" {
				failed++
			} else {
				rolledBack++
			}
			if row || !none {
				bad = "rolled back or failed, but something of it is there"
			}
		default:
			unknown++
			if !(row && all) && !(!row && none) {
				bad = "outcome unknown, and only part of it is there"
			}
		}
		if bad != "" {
			r.Violations = append(r.Violations, Violation{Msg: fmt.Sprintf("transaction %s %s: %s", o.A.Tx, bad, state), Ops: []*Op{o}})
		}
	}
	r.Note = fmt.Sprintf("%d committed, %d rolled back, %d failed, %d unknown", committed, rolledBack, failed, unknown)
	return r
}
