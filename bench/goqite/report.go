package main

// The table, the targets of issue 15 and the JSON line.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

type row struct {
	id, label string
	value     float64
	unit      string
	peer      string // the id of the row this one is divided by; "" for none
	// A drain: its loop; at FULL, limit is the id of the fdatasync rate measured before it,
	// and the loop's disk limit that rate ÷ the loop's commits per message.
	loop, limit string
	samples     []float64 // the runs whose median value is, if more than one
}

type report struct {
	rows  []*row
	byID  map[string]*row
	notes []string
}

func newReport() *report { return &report{byID: map[string]*row{}} }

func (r *report) add(id, label string, value float64, unit, peer string) {
	r.addRow(&row{id: id, label: label, value: value, unit: unit, peer: peer})
}

func (r *report) addRow(x *row) {
	if x.samples == nil {
		fmt.Fprintf(os.Stderr, "  %-75s %10.2f %s\n", x.label, x.value, x.unit)
	}
	r.rows = append(r.rows, x)
	r.byID[x.id] = x
}

func (r *report) note(s string) { r.notes = append(r.notes, s) }

func (r *report) value(id string) float64 {
	if x, ok := r.byID[id]; ok {
		return x.value
	}
	return 0
}

// ratio is the row's value divided by its peer's.
func (r *report) ratio(x *row) (float64, bool) {
	p, ok := r.byID[x.peer]
	if !ok || p.value == 0 {
		return 0, false
	}
	return x.value / p.value, true
}

// diskShare is a FULL drain's rate as a share of its loop's disk limit.
func (r *report) diskShare(x *row) (float64, bool) {
	disk, ok := r.byID[x.limit]
	if !ok || disk.value == 0 {
		return 0, false
	}
	return x.value / (disk.value / commitsPerMessage[x.loop]), true
}

type target struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Want  string  `json:"want"`
	Met   bool    `json:"met"`
}

func (r *report) targets() []target {
	var ts []target
	at := func(name string, value float64, want string, met bool) {
		ts = append(ts, target{name, value, want, met})
	}
	for _, w := range []string{"w1", "w4"} {
		batched := r.value("drain.ours.full." + w + "." + loopClaimManyAckMany)
		one := r.value("drain.ours.full." + w + "." + loopClaimAck)
		goq := r.value("drain.goqite.full." + w)
		limit := r.value("disk.fdatasync."+w) / commitsPerMessage[loopClaimManyAckMany]
		at("drain FULL "+w+": claim_many/ack_many 10 ÷ goqite FULL", batched/goq, "≥ 5", batched >= 5*goq)
		at("drain FULL "+w+": claim_many/ack_many 10 ÷ ours claim+ack", batched/one, "≥ 5", batched >= 5*one)
		at("drain FULL "+w+": claim_many/ack_many 10 ÷ disk limit (fdatasync/s × 10 ÷ 2)", batched/limit, "≥ 0.5", batched >= limit/2)
		at("drain FULL "+w+": ours claim+ack ÷ goqite FULL", one/goq, "≥ 1.2", one >= 1.2*goq)
		if shared, ok := r.byID["drain.ours.full."+w+".shared."+loopClaimAck]; ok {
			at("drain FULL "+w+": ours claim+ack, one Transport shared ÷ goqite FULL", shared.value/goq, "≥ 1.2", shared.value >= 1.2*goq)
		}
	}
	wake := r.value("wake.ours.send.p50")
	at("wake-up p50 after another process's publish (from its send time), ms", wake, "≤ 5", wake <= 5)
	cpu := r.value("idle.ours.cpu")
	at("8 idle waiters: CPU, % of one core", cpu, "< 2", cpu < 2)
	committed := r.value("idle.ours.committed")
	if x, ok := r.byID["idle.ours.write_locks"]; ok {
		committed += x.value
	}
	at("8 idle waiters: commits seen + write transactions started", committed, "0", committed == 0)
	return ts
}

func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "\nharel-transport (Go binding) beside goqite v0.4.0 (mattn/go-sqlite3), 100-byte events, one group per message for ours\n")
	fmt.Fprintf(w, "÷ peer: the value divided by the named peer's, same run; disk: a FULL drain's rate ÷ its loop's limit (the fdatasync rate\n")
	fmt.Fprintf(w, "measured before its drains ÷ the loop's commits per message); publishes and drains: the median of their runs\n\n")
	fmt.Fprintf(w, "%-78s %12s %-6s %9s  %-44s %7s\n", "figure", "value", "", "÷ peer", "peer", "disk")
	figures, shares, runs := map[string]float64{}, map[string]float64{}, map[string][]float64{}
	for _, x := range r.rows {
		ratio, peer := "", ""
		if q, ok := r.ratio(x); ok {
			ratio, peer = fmt.Sprintf("×%.2f", q), shortLabel(r.byID[x.peer].label)
		}
		share := ""
		if s, ok := r.diskShare(x); ok {
			share = fmt.Sprintf("%.0f%%", 100*s)
			shares[x.id] = s
		}
		fmt.Fprintf(w, "%-78s %12.2f %-6s %9s  %-44s %7s\n", x.label, x.value, x.unit, ratio, peer, share)
		figures[x.id] = x.value
		if len(x.samples) > 1 {
			runs[x.id] = x.samples
		}
	}
	fmt.Fprintln(w)
	for _, n := range r.notes {
		fmt.Fprintln(w, "note:", n)
	}
	ts := r.targets()
	fmt.Fprintln(w, "\ntargets (issue 15):")
	for _, t := range ts {
		verdict := "MISSED"
		if t.Met {
			verdict = "met"
		}
		fmt.Fprintf(w, "  %-90s %8.2f  want %-6s %s\n", t.Name, t.Value, t.Want, verdict)
	}
	line, _ := json.Marshal(map[string]any{
		"bench": "goqite", "figures": figures, "runs": runs, "disk_share": shares, "targets": ts, "notes": r.notes,
	})
	fmt.Fprintf(w, "\n%s\n", line)
}

// shortLabel is a peer's label without its section ("drain 4 worker(s): ").
func shortLabel(label string) string {
	if i := strings.Index(label, ": "); i >= 0 {
		return label[i+2:]
	}
	return label
}
