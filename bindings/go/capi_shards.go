package harel

// The C calls of shards: a sharded queue's own calls.

// #include "harel_transport.h"
import "C"

import "strconv"

func (t cTransport) shardCount() (int, error) {
	var n C.size_t
	var cerr *C.harel_error
	if err := check(C.harel_transport_shard_count(t.p, &n, &cerr), &cerr); err != nil {
		return 0, err
	}
	return int(n), nil
}

// cShardOf asks the library which of shards holds groupID. A negative count cannot be a
// size_t; the library checks the range (1..MaxShards).
func cShardOf(groupID string, shards int) (int, error) {
	if shards < 0 {
		return 0, argumentError("n_shards is " + strconv.Itoa(shards) + "; it must be 1.." + strconv.Itoa(MaxShards))
	}
	var strs cStrings
	defer strs.free()
	g, err := strs.add("group_id", groupID)
	if err != nil {
		return 0, err
	}
	var shard C.size_t
	var cerr *C.harel_error
	if err := check(C.harel_shard_of(g, C.size_t(shards), &shard, &cerr), &cerr); err != nil {
		return 0, err
	}
	return int(shard), nil
}
