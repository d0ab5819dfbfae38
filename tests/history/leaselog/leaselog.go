// Package leaselog turns the Go binding's leases into what the history logs of them: the
// clients (cmd/client) and the fault matrix (tests/faults) log them alike.
package leaselog

import (
	harel "github.com/harel-transport/harel-transport/bindings/go"
	"github.com/harel-transport/harel-transport/tests/history/hist"
)

// Ref names l as an ack, nack, extend or dead_letter is logged.
func Ref(l *harel.Lease) hist.Ref {
	return hist.Ref{S: l.Seq, G: l.GroupID, W: l.WorkerID, E: hist.EventID(l.Event)}
}

// Refs is Ref of each.
func Refs(ls []*harel.Lease) []hist.Ref {
	out := make([]hist.Ref, len(ls))
	for i, l := range ls {
		out[i] = Ref(l)
	}
	return out
}

// Got is what a claim that returned ls logs.
func Got(ls []*harel.Lease) []hist.Lease {
	out := make([]hist.Lease, len(ls))
	for i, l := range ls {
		out[i] = hist.Lease{S: l.Seq, G: l.GroupID, E: hist.EventID(l.Event), W: l.WorkerID,
			Exp: float64(l.LockExpiry.UnixMicro()) / 1e6, Att: l.Attempts}
	}
	return out
}
