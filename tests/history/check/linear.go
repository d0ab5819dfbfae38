package check

// group-linearizable: each group's calls, checked with porcupine (v1.3.1) against a
// sequential model of one group of the queue. The group is the partition: a call that
// touches several groups (publish_many, claim_many, ack_many...) is split into one
// operation per group it touched, each with the call's interval.
//
// The model's state is the group's messages in seq order, each free, leased (to whom,
// until when) or parked (until when), and the highest seq the group has seen:
//
//   publish(seq)           seq above every seq the group has seen; appended, free.
//   claim(seq, w, t, exp)  seq is the group's head (lowest seq), and the head is free, or
//                          its lease or park ended before t (the instant the claim read its
//                          clock); the head becomes leased to w until exp.
//   ack / dead_letter      this library: ok iff the message is there and locked_by = w
//                          (removed); refused iff not. harel's ack removes it if there.
//   nack / park            the same rule; the message is freed, or parked until its end.
//   extend(exp)            the same rule; the lease's end becomes exp.
//   final(seqs)            the queue's dump: the group holds exactly these seqs.
//
// Instants: this library's claim carries its "now" (lock_expiry - visibility), read under
// the write lock that makes it one step, so its operation is placed at that instant;
// harel's claim reads its clock before it takes the lock, and is placed within its call.
// A call with no completion (its client was killed) may or may not have happened: the
// model takes both branches (porcupine's nondeterministic model). A claim with no
// completion may have leased any group's head: a "ghost" claim, in every group, from its
// invocation on. A message never seen (not leased, not in the dump) is not modelled: its
// loss is no-loss's finding.

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// LinearTimeout bounds porcupine per group; a group not decided in time is reported.
var LinearTimeout = 60 * time.Second

// VisualizeDir, when set, receives porcupine's HTML view of a group that failed.
var VisualizeDir = ""

const (
	kPublish = iota
	kClaim
	kGhost
	kAck
	kNack
	kPark
	kExtend
	kFinal
)

type pin struct {
	kind    int
	seq     int64
	w       string
	checked bool   // this library's rules (harel's: none)
	out     string // ok, fail, unknown
	t       int64  // claim: the instant its clock read
	exp     int64  // claim: the lease's end; extend: the new end; park: its end
	final   []int64
	op      *Op
}

type mstate struct {
	seq int64
	w   string // "" free, "__parked__", or the holder
	exp int64
}

type gstate struct {
	msgs   []mstate
	maxSeq int64
}

func (s *gstate) clone() *gstate {
	return &gstate{msgs: append([]mstate(nil), s.msgs...), maxSeq: s.maxSeq}
}

func (s *gstate) find(seq int64) int {
	for i, m := range s.msgs {
		if m.seq == seq {
			return i
		}
	}
	return -1
}

func (s *gstate) held(seq int64, w string) bool {
	i := s.find(seq)
	return i >= 0 && s.msgs[i].w == w
}

// step gives the states the group may be in after in, from s (none: in cannot happen).
func step(s *gstate, in *pin) []*gstate {
	apply := func() *gstate { // the call's effect, as it succeeded
		switch in.kind {
		case kPublish:
			if in.seq <= s.maxSeq {
				return nil
			}
			n := s.clone()
			n.msgs = append(n.msgs, mstate{seq: in.seq})
			n.maxSeq = in.seq
			return n
		case kClaim:
			if len(s.msgs) == 0 || s.msgs[0].seq != in.seq {
				return nil
			}
			h := s.msgs[0]
			if h.w != "" && h.exp > in.t+tol {
				return nil // leased or parked at the claim's instant
			}
			n := s.clone()
			n.msgs[0] = mstate{seq: h.seq, w: in.w, exp: in.exp}
			return n
		case kGhost:
			if len(s.msgs) == 0 || (s.msgs[0].w != "" && s.msgs[0].exp > in.t+tol) {
				return nil // nothing to claim before the client was gone
			}
			n := s.clone()
			n.msgs[0] = mstate{seq: n.msgs[0].seq, w: in.w, exp: in.exp}
			return n
		}
		i := s.find(in.seq)
		if in.checked && (i < 0 || s.msgs[i].w != in.w) {
			return nil
		}
		n := s.clone()
		if i < 0 {
			return n // harel's ack or nack of a message gone: nothing
		}
		switch in.kind {
		case kAck:
			n.msgs = append(n.msgs[:i], n.msgs[i+1:]...)
		case kNack:
			n.msgs[i].w, n.msgs[i].exp = "", 0
		case kPark:
			n.msgs[i].w, n.msgs[i].exp = "__parked__", in.exp
		case kExtend:
			n.msgs[i].exp = in.exp
		}
		return n
	}
	if in.kind == kFinal {
		if len(s.msgs) != len(in.final) {
			return nil
		}
		for i, m := range s.msgs {
			if m.seq != in.final[i] {
				return nil
			}
		}
		return []*gstate{s}
	}
	var out []*gstate
	switch in.out {
	case "ok":
		if n := apply(); n != nil {
			out = append(out, n)
		}
	case "fail": // refused: the lease was not held
		if !s.held(in.seq, in.w) {
			out = append(out, s)
		}
	default: // unknown: applied or not
		out = append(out, s)
		if n := apply(); n != nil {
			out = append(out, n)
		}
	}
	return out
}

func stateEqual(a, b interface{}) bool {
	x, y := a.(*gstate), b.(*gstate)
	if x.maxSeq != y.maxSeq || len(x.msgs) != len(y.msgs) {
		return false
	}
	for i := range x.msgs {
		if x.msgs[i] != y.msgs[i] {
			return false
		}
	}
	return true
}

func stateHash(a interface{}) uint64 {
	s := a.(*gstate)
	f := fnv.New64a()
	fmt.Fprint(f, s.maxSeq)
	for _, m := range s.msgs {
		fmt.Fprint(f, m.seq, m.w, m.exp)
	}
	return f.Sum64()
}

var groupModel = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{&gstate{}} },
	Step: func(state, input, _ interface{}) []interface{} {
		var out []interface{}
		for _, n := range step(state.(*gstate), input.(*pin)) {
			out = append(out, n)
		}
		return out
	},
	Equal: stateEqual,
	Hash:  stateHash,
	DescribeOperation: func(input, _ interface{}) string {
		in := input.(*pin)
		name := []string{"publish", "claim", "ghost claim", "ack", "nack", "park", "extend", "final"}[in.kind]
		if in.kind == kFinal {
			return fmt.Sprintf("final %v", in.final)
		}
		return fmt.Sprintf("%s seq %d by %s -> %s (%s)", name, in.seq, in.w, in.out, in.op)
	},
	DescribeState: func(state interface{}) string {
		s := state.(*gstate)
		var b strings.Builder
		for _, m := range s.msgs {
			fmt.Fprintf(&b, "%d", m.seq)
			if m.w != "" {
				fmt.Fprintf(&b, "[%s until %s]", m.w, at(m.exp))
			}
			b.WriteString(" ")
		}
		return b.String()
	},
}

// groupOps builds each group's operations.
func (h *History) groupOps() map[string][]porcupine.Operation {
	end := h.Dump.At
	for _, o := range h.Ops {
		end = max(end, o.Inv+1)
		if o.Cmp < Never {
			end = max(end, o.Cmp+1)
		}
	}
	unknownEnd := end - 1 // a call with no completion: its client died before the dump
	ops := map[string][]porcupine.Operation{}
	groups := map[string]bool{}
	add := func(g string, call, ret int64, in *pin) {
		if ret >= Never {
			ret = unknownEnd
		}
		if call > ret {
			call = ret
		}
		groups[g] = true
		ops[g] = append(ops[g], porcupine.Operation{Input: in, Call: call, Output: nil, Return: ret})
	}
	// The instant a call of this library took effect, when a lease it returned says so.
	instant := map[*Op]int64{}
	for _, hd := range h.Holds {
		if !hd.Park && hd.Op.Lang != "harel" {
			instant[hd.Op] = hd.StartLo
		}
	}
	window := func(o *Op) (int64, int64) {
		if t, ok := instant[o]; ok {
			return max(o.Inv, t-tol/20), min(o.Cmp, t+tol/20)
		}
		return o.Inv, o.Cmp
	}
	var ghosts []*Op
	for _, o := range h.Ops {
		// publishes: the messages seen stored, whatever the call's outcome said
		for j, m := range o.A.Msgs {
			p := h.Pubs[m.E]
			if p == nil || p.Op != o || p.Idx != j || p.Dup() {
				continue
			}
			if s, ok := h.SeqOf[m.E]; ok {
				add(m.G, o.Inv, o.Cmp, &pin{kind: kPublish, seq: s, out: "ok", op: o})
			}
		}
		switch o.Name {
		case "claim", "ack_and_claim", "ack_and_claim_many":
			if o.Out == "unknown" {
				ghosts = append(ghosts, o)
			}
		}
	}
	for _, hd := range h.Holds {
		if hd.Park {
			continue
		}
		o := hd.Op
		call, ret := window(o)
		t := hd.StartLo
		if o.Lang == "harel" {
			t = hd.Exp - ns(o.A.Vis) // harel's clock, read before its lock
		}
		add(hd.G, call, ret, &pin{kind: kClaim, seq: hd.S, w: hd.W, checked: true, out: "ok", t: t, exp: hd.Exp, op: o})
	}
	for _, a := range h.Actions {
		if a.Out == "fail" && a.Op.R != nil && a.Op.R.Status != "HAREL_ERR_LEASE_LOST" && a.Op.Out == "fail" {
			continue // refused for another reason (busy...): nothing happened, nothing to check
		}
		in := &pin{seq: a.Ref.S, w: a.Ref.W, checked: a.Op.Checked(), out: a.Out, exp: a.Exp, op: a.Op}
		switch a.Kind {
		case "ack", "dead_letter":
			in.kind = kAck
		case "nack":
			in.kind = kNack
		case "park":
			in.kind = kPark
		case "extend":
			in.kind = kExtend
		}
		if !in.checked && in.out == "fail" {
			continue
		}
		call, ret := window(a.Op)
		add(a.Ref.G, call, ret, in)
	}
	final := map[string][]int64{}
	for _, m := range h.Dump.Messages {
		final[m.G] = append(final[m.G], m.S)
		groups[m.G] = true
	}
	for g := range groups {
		for _, o := range ghosts {
			t := o.Cmp // the latest instant it can have claimed at: its process was gone then
			if t >= Never {
				t = unknownEnd
			}
			add(g, o.Inv, o.Cmp, &pin{kind: kGhost, w: o.Client, out: "unknown", t: t, exp: o.Inv + ns(o.A.Vis), op: o})
		}
		f := final[g]
		sort.Slice(f, func(a, b int) bool { return f[a] < f[b] })
		ops[g] = append(ops[g], porcupine.Operation{Input: &pin{kind: kFinal, final: f}, Call: end, Return: end})
	}
	return ops
}

func groupLinearizable(h *History) Result {
	var r Result
	model := groupModel.ToModel()
	byGroup := h.groupOps()
	var names []string
	for g := range byGroup {
		names = append(names, g)
	}
	sort.Strings(names)
	undecided := 0
	for _, g := range names {
		ops := byGroup[g]
		r.N += len(ops)
		res, info := porcupine.CheckOperationsVerbose(model, ops, LinearTimeout)
		switch res {
		case porcupine.Unknown:
			undecided++
		case porcupine.Illegal:
			v := Violation{Msg: fmt.Sprintf("group %s: no order of its %d operations fits the model", g, len(ops))}
			v.Extra = append(v.Extra, stuck(model, ops, info)...)
			if VisualizeDir != "" {
				path := fmt.Sprintf("%s/porcupine-%s.html", VisualizeDir, g)
				if porcupine.VisualizePath(model, info, path) == nil {
					v.Extra = append(v.Extra, "porcupine's view: "+path)
				}
			}
			r.Violations = append(r.Violations, v)
		}
	}
	r.Note = fmt.Sprintf("%d groups", len(names))
	if undecided > 0 {
		r.Note += fmt.Sprintf(", %d not decided within %s", undecided, LinearTimeout)
	}
	return r
}

// stuck describes where the longest linearization porcupine found ends: the operations
// that could come next, none of which the model allows.
func stuck(model porcupine.Model, ops []porcupine.Operation, info porcupine.LinearizationInfo) []string {
	parts := info.PartialLinearizationsOperations()
	if len(parts) == 0 || len(parts[0]) == 0 {
		return nil
	}
	longest := parts[0][0]
	for _, p := range parts[0] {
		if len(p) > len(longest) {
			longest = p
		}
	}
	state := model.Init()
	for _, o := range longest {
		_, state = model.Step(state, o.Input, o.Output)
	}
	done := map[*pin]bool{}
	for _, o := range longest {
		done[o.Input.(*pin)] = true
	}
	var out []string
	out = append(out, fmt.Sprintf("after %d operations the group is: %s", len(longest), model.DescribeState(state)))
	// the earliest-returning operation not linearized: nothing can be placed before it
	var next []porcupine.Operation
	for _, o := range ops {
		if !done[o.Input.(*pin)] {
			next = append(next, o)
		}
	}
	sort.Slice(next, func(a, b int) bool { return next[a].Return < next[b].Return })
	if len(next) > 0 {
		first := next[0]
		for _, o := range next {
			if o.Call <= first.Return {
				out = append(out, "could not place: "+model.DescribeOperation(o.Input, o.Output))
			}
		}
	}
	if len(out) > 8 {
		out = append(out[:8], fmt.Sprintf("... (%d more)", len(out)-8))
	}
	return out
}
