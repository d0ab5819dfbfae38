package harel

// ShardCount is the number of databases the queue is sharded over: 1 when it was opened
// with Open (or OpenShards with one database).
//
// Errors: ErrClosed.
func (t *Transport) ShardCount() (int, error) {
	var n int
	err := t.call(func(h cTransport) (err error) {
		n, err = h.shardCount()
		return err
	})
	return n, err
}

// ShardOf is the shard (0..shards-1) that holds groupID in a queue sharded over shards
// databases, computed by the library (FNV-1a, 64-bit, over the id's UTF-8 bytes, modulo
// shards; docs/queue.md gives it): so that a program writing to one database directly
// places a group where the sharded queue looks for it. It needs no Transport.
//
// Errors: ErrArgument (groupID empty, holding a NUL byte or invalid UTF-8; shards outside
// 1..MaxShards).
func ShardOf(groupID string, shards int) (int, error) { return cShardOf(groupID, shards) }
