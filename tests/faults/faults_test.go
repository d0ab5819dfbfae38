package main

import (
	"testing"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

// The harness's reading of the library's errors: what each promises decides how the call
// is logged, and so what the checker holds the library to.
func TestOutcomeFollowsWhatTheErrorPromises(t *testing.T) {
	cases := []struct {
		err         error
		label, kind string
	}{
		{nil, "ok", "ok"},
		{&harel.Error{Status: harel.StatusConnect, Message: "publish: the libSQL server's answer was lost: reset (the operation may have been applied)"}, "CONNECT(may)", "info"},
		{&harel.Error{Status: harel.StatusConnect, Message: "publish: the libSQL server did not answer within 21 s: the operation may have been applied"}, "CONNECT(may)", "info"},
		{&harel.Error{Status: harel.StatusConnect, Message: "publish: the libSQL server could not be reached: refused (nothing was applied)"}, "CONNECT(nothing)", "fail"},
		{&harel.Error{Status: harel.StatusConnect, Message: "publish: the libSQL server answered HTTP 429: busy"}, "CONNECT(other)", "info"},
		{&harel.Error{Status: harel.StatusConnect, Message: `leases[3]: message 22 of group "g2" was not acked: its shard's transaction failed (it is still held)`}, "CONNECT(nothing)", "fail"},
		{&harel.Error{Status: harel.StatusBusy, Message: "busy"}, "BUSY", "fail"},
		{&harel.Error{Status: harel.StatusDatabase, Message: "rolled back"}, "DATABASE", "fail"},
		{&harel.Error{Status: harel.StatusLeaseLost, Message: "lost"}, "LEASE_LOST", "fail"},
	}
	for _, c := range cases {
		if got := label(c.err); got != c.label {
			t.Errorf("label(%v) = %q, want %q", c.err, got, c.label)
		}
		if got := outcome(c.err).Type; got != c.kind {
			t.Errorf("outcome(%v).Type = %q, want %q", c.err, got, c.kind)
		}
	}
}

func TestBatchPartsReadsASharedBatchsError(t *testing.T) {
	failed, stored, ok := batchParts("publish_many: shard 1 (the parts for shards 0 were stored, later shards' not): the libSQL server's answer was lost: x (the operation may have been applied)")
	if !ok || failed != 1 || !stored[0] || len(stored) != 1 {
		t.Errorf("got %d %v %v", failed, stored, ok)
	}
	failed, stored, ok = batchParts("publish_many: shard 0 (no other shard's part was stored): the libSQL server could not be reached: refused (nothing was applied)")
	if !ok || failed != 0 || len(stored) != 0 {
		t.Errorf("got %d %v %v", failed, stored, ok)
	}
	if _, _, ok := batchParts("publish_many: the libSQL server answered HTTP 429"); ok {
		t.Error("an error that names no shard was read as one")
	}
}

func TestGroupsForASetSpreadOverItsShards(t *testing.T) {
	gs := groupsFor(2)
	per := map[int]int{}
	c := &cell{shards: 2}
	for _, g := range gs {
		per[c.shardOf(g)]++
	}
	if len(gs) != 4 || per[0] != 2 || per[1] != 2 {
		t.Errorf("groups %v by shard %v", gs, per)
	}
}
