package harel_test

// Mapping tests of a queue sharded over several databases (issue 28): OpenShards with its
// options, ShardCount, ShardOf, the Shard of a listed group and of a dead letter, each
// refusal (the binding's and the library's, with its message), a transaction and a redrive
// by seq refused, and that rounds of them free what they allocate. The semantics are the
// Rust contract's, run over three files (tests/common/contract.rs).

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

// shardFiles are the paths of n fresh queue files in the test's temporary directory.
func shardFiles(t *testing.T, n int) []string {
	dir := t.TempDir()
	files := make([]string, n)
	for i := range files {
		files[i] = filepath.Join(dir, fmt.Sprintf("shard%d.db", i))
	}
	return files
}

// openShards opens databases as one sharded queue, closed when the test ends.
func openShards(t *testing.T, databases []string, opts ...harel.Option) *harel.Transport {
	t.Helper()
	tr, err := harel.OpenShards(databases, opts...)
	if err != nil {
		t.Fatalf("open shards %v: %v", databases, err)
	}
	t.Cleanup(func() {
		if err := tr.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return tr
}

func shardOf(t *testing.T, group string, shards int) int {
	t.Helper()
	s, err := harel.ShardOf(group, shards)
	if err != nil {
		t.Fatalf("shard_of(%q, %d): %v", group, shards, err)
	}
	return s
}

// groupsOnShards are perShard group ids for each of n shards, picked with ShardOf.
func groupsOnShards(t *testing.T, n, perShard int) [][]string {
	t.Helper()
	groups := make([][]string, n)
	for i, found := 0, 0; found < n*perShard; i++ {
		g := fmt.Sprintf("order-%d", i)
		if s := shardOf(t, g, n); len(groups[s]) < perShard {
			groups[s] = append(groups[s], g)
			found++
		}
	}
	return groups
}

func shardCount(t *testing.T, tr *harel.Transport) int {
	t.Helper()
	n, err := tr.ShardCount()
	if err != nil {
		t.Fatalf("shard_count: %v", err)
	}
	return n
}

func TestShardOf(t *testing.T) {
	for _, c := range []struct {
		group         string
		shards, shard int
	}{{"order-42", 3, 2}, {"order-42", 4, 0}, {"order-42", 1, 0}} {
		if got := shardOf(t, c.group, c.shards); got != c.shard {
			t.Errorf("ShardOf(%q, %d) = %d, want %d", c.group, c.shards, got, c.shard)
		}
	}
	if got := shardOf(t, "g", harel.MaxShards); got < 0 || got >= harel.MaxShards {
		t.Errorf("ShardOf(g, MaxShards) = %d", got)
	}
	for _, c := range []struct {
		what, group string
		shards      int
		says        []string
	}{
		{"an empty group id", "", 3, []string{"group_id"}},
		{"a NUL byte", "order\x0042", 3, []string{"group_id", "NUL"}},
		{"invalid UTF-8", "order-\xff", 3, []string{"group_id"}},
		{"0 shards", "order-42", 0, []string{"n_shards is 0", "1..256"}},
		{"257 shards", "order-42", harel.MaxShards + 1, []string{"n_shards is 257", "1..256"}},
		{"negative shards", "order-42", -1, []string{"n_shards is -1", "1..256"}},
	} {
		s, err := harel.ShardOf(c.group, c.shards)
		if s != 0 {
			t.Errorf("%s: shard %d", c.what, s)
		}
		wantError(t, "ShardOf: "+c.what, err, harel.ErrArgument, c.says...)
	}
}

// Groups on every shard published (one at a time and in a batch), listed with their
// shards, claimed and acked exactly once through the one Transport; then reopened.
func TestOpenShards(t *testing.T) {
	files := shardFiles(t, 3)
	clock := newClock()
	tr := openShards(t, files, harel.WithClock(clock.Now), harel.WithPrefix("app"), harel.WithSynchronousFull(false))
	if n := shardCount(t, tr); n != 3 {
		t.Fatalf("shard_count %d, want 3", n)
	}
	groups := groupsOnShards(t, 3, 2)
	want := map[string]bool{} // "group/event" not yet claimed
	var batch []harel.Message
	for s, gs := range groups {
		publish(t, tr, gs[0], event(s))
		want[gs[0]+"/"+string(event(s))] = true
		for k := 0; k < 2; k++ { // a batch over the three shards: one transaction per shard
			ev := event(10*s + k)
			batch = append(batch, harel.Message{GroupID: gs[1], Event: ev})
			want[gs[1]+"/"+string(ev)] = true
		}
	}
	if err := tr.PublishMany(batch); err != nil {
		t.Fatalf("publish_many: %v", err)
	}

	page, err := tr.Groups(harel.GroupAny, "", harel.MaxPage)
	if err != nil || len(page.Groups) != 6 || page.Next != "" {
		t.Fatalf("groups: %+v, %v", page, err)
	}
	onShard := make([]int, 3)
	for _, g := range page.Groups {
		if s := shardOf(t, g.GroupID, 3); g.Shard != s {
			t.Errorf("group %q listed on shard %d, ShardOf says %d", g.GroupID, g.Shard, s)
		}
		onShard[g.Shard]++
	}
	if fmt.Sprint(onShard) != "[2 2 2]" {
		t.Errorf("groups per shard: %v, want [2 2 2]", onShard)
	}
	if s, err := tr.Stats(); err != nil || s.Messages != 9 || s.Groups != 6 || s.Ready != 6 {
		t.Fatalf("stats: %+v, %v", s, err)
	}

	// One group per shard dead-lettered: listed with their shards; by seq refused.
	for s := 0; s < 3; s++ {
		lease := claim(t, tr, "w")
		if err := tr.DeadLetter(lease, "shard test"); err != nil {
			t.Fatalf("dead_letter: %v", err)
		}
		delete(want, lease.GroupID+"/"+string(lease.Event))
	}
	dead, err := tr.DeadLetters("", "", 10)
	if err != nil || len(dead.Letters) != 3 {
		t.Fatalf("dead letters: %+v, %v", dead, err)
	}
	for _, d := range dead.Letters {
		if s := shardOf(t, d.GroupID, 3); d.Shard != s {
			t.Errorf("dead letter of %q listed on shard %d, ShardOf says %d", d.GroupID, d.Shard, s)
		}
	}
	_, err = tr.Redrive(harel.DeadLettersBySeq(dead.Letters[0].Seq))
	wantError(t, "redrive by seq", err, harel.ErrArgument, "a seq names a dead letter of one shard")
	_, err = tr.PurgeDead(harel.DeadLettersBySeq(dead.Letters[0].Seq))
	wantError(t, "purge_dead by seq", err, harel.ErrArgument, "a seq names a dead letter of one shard")
	if n, err := tr.Redrive(harel.AllDeadLetters()); err != nil || n != 3 {
		t.Fatalf("redrive all: %d, %v", n, err)
	}
	for _, d := range dead.Letters {
		want[d.GroupID+"/"+string(d.Event)] = true
	}

	// Everything claimed once: one at a time, then in batches, each acked.
	claimed := map[string]int{}
	take := func(l *harel.Lease) {
		key := l.GroupID + "/" + string(l.Event)
		claimed[key]++
		if !want[key] {
			t.Errorf("claimed %s, not published (or twice)", key)
		}
		delete(want, key)
	}
	for i := 0; i < 3; i++ {
		l := claim(t, tr, "w")
		take(l)
		ack(t, tr, l)
	}
	for {
		leases, err := tr.ClaimMany(context.Background(), "w", visibility, 10, 0)
		if err != nil {
			t.Fatalf("claim_many: %v", err)
		}
		if len(leases) == 0 {
			break
		}
		for _, l := range leases {
			take(l)
		}
		if acked, err := tr.AckMany(leases); err != nil {
			t.Fatalf("ack_many: %v", err)
		} else {
			for i, e := range acked {
				if e != nil {
					t.Errorf("ack_many: leases[%d]: %v", i, e)
				}
			}
		}
	}
	if len(want) != 0 || len(claimed) != 9 {
		t.Errorf("never claimed: %v; claimed %d distinct", want, len(claimed))
	}
	claimNone(t, tr, "all acked")
	if s, err := tr.Stats(); err != nil || s.Messages != 0 || s.Dead != 0 {
		t.Fatalf("stats after: %+v, %v", s, err)
	}

	// The same list again, with a message left on each shard.
	for s, gs := range groups {
		publish(t, tr, gs[0], event(100+s))
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	again := openShards(t, files, harel.WithPrefix("app"))
	if n := shardCount(t, again); n != 3 {
		t.Fatalf("reopened: shard_count %d", n)
	}
	if s, err := again.Stats(); err != nil || s.Messages != 3 {
		t.Fatalf("reopened: stats %+v, %v", s, err)
	}
}

// A queue that is not sharded: ShardCount 1, every Shard 0; OpenShards of one database is
// such a queue.
func TestOneShard(t *testing.T) {
	for _, c := range []struct {
		what string
		open func(t *testing.T, path string) *harel.Transport
	}{
		{"Open", func(t *testing.T, path string) *harel.Transport { return open(t, path) }},
		{"OpenShards of one", func(t *testing.T, path string) *harel.Transport { return openShards(t, []string{path}) }},
	} {
		tr := c.open(t, tempDB(t))
		if n := shardCount(t, tr); n != 1 {
			t.Errorf("%s: shard_count %d", c.what, n)
		}
		for i := 0; i < 4; i++ {
			publish(t, tr, fmt.Sprintf("g%d", i), event(i))
		}
		if err := tr.DeadLetter(claim(t, tr, "w"), "r"); err != nil {
			t.Fatal(err)
		}
		page, err := tr.Groups(harel.GroupAny, "", 10)
		if err != nil || len(page.Groups) != 3 {
			t.Fatalf("%s: groups %+v, %v", c.what, page, err)
		}
		for _, g := range page.Groups {
			if g.Shard != 0 {
				t.Errorf("%s: group %q on shard %d", c.what, g.GroupID, g.Shard)
			}
		}
		dead, err := tr.DeadLetters("", "", 10)
		if err != nil || len(dead.Letters) != 1 || dead.Letters[0].Shard != 0 {
			t.Fatalf("%s: dead letters %+v, %v", c.what, dead, err)
		}
		// Seqs name dead letters on one database.
		if n, err := tr.Redrive(harel.DeadLettersBySeq(dead.Letters[0].Seq)); err != nil || n != 1 {
			t.Errorf("%s: redrive by seq: %d, %v", c.what, n, err)
		}
	}
}

// Each list the library refuses, and what the binding refuses before it, is ErrArgument
// with the message naming the database; nothing is left open (the right list opens after).
func TestOpenShardsRefusals(t *testing.T) {
	files := shardFiles(t, 3)
	openShards(t, files).Close()
	a, b, c := files[0], files[1], files[2]
	extra := filepath.Join(filepath.Dir(a), "extra.db")
	tooMany := make([]string, harel.MaxShards+1)
	for i := range tooMany {
		tooMany[i] = filepath.Join(filepath.Dir(a), fmt.Sprintf("many%d.db", i))
	}
	for _, r := range []struct {
		what      string
		databases []string
		says      []string
	}{
		{"reordered", []string{b, a, c}, []string{"databases[0] (" + b + ")", "is shard 1", "reordered"}},
		{"a database missing", []string{a, b}, []string{"the list has 2 databases", "shard 0 of 3", "missing"}},
		{"a database extra", []string{a, b, c, extra}, []string{"the list has 4 databases", "extra"}},
		{"an empty list", []string{}, []string{"databases has 0 entries", "1..256"}},
		{"a nil list", nil, []string{"databases has 0 entries"}},
		{"more than MaxShards", tooMany, []string{"databases has 257 entries", "1..256"}},
		{"a repeated database", []string{a, b, a}, []string{"databases[2] repeats databases[0]", a}},
		{"an empty element", []string{a, "", c}, []string{"databases[1] is empty"}},
		{"an element with a NUL byte", []string{a, b + "\x00x", c}, []string{"databases[1]", "NUL"}},
		{"an element not UTF-8", []string{a, b, "\xff.db"}, []string{"databases[2] is not valid UTF-8"}},
	} {
		tr, err := harel.OpenShards(r.databases)
		if tr != nil {
			t.Errorf("%s: a Transport was returned", r.what)
			tr.Close()
		}
		wantError(t, "OpenShards: "+r.what, err, harel.ErrArgument, r.says...)
	}
	// A bad option is the option's error, as Open's.
	_, err := harel.OpenShards(files, harel.WithPrefix("bad prefix"))
	wantError(t, "OpenShards with a bad option", err, harel.ErrArgument, "WithPrefix", "prefix")
	// Replica shards take one primary each; servers that are not there fail to connect, so
	// the URLs reached the shards.
	replicas := []string{extra + "r0", extra + "r1", extra + "r2"}
	for _, r := range []struct {
		what   string
		opts   []harel.Option
		status *harel.Error
		says   []string
	}{
		{"too few primaries", []harel.Option{harel.WithSyncURLs("http://127.0.0.1:1")}, harel.ErrArgument,
			[]string{"sync_urls has 1 URLs and databases 3 paths"}},
		{"a repeated primary", []harel.Option{harel.WithSyncURLs("http://127.0.0.1:1", "http://127.0.0.1:1")},
			harel.ErrArgument, []string{"WithSyncURLs", "urls[1] repeats urls[0]"}},
		{"a primary with a NUL byte", []harel.Option{harel.WithSyncURLs("http://127.0.0.1:1", "http://x\x00")},
			harel.ErrArgument, []string{"WithSyncURLs", "urls[1]", "NUL"}},
		{"WithSyncURL beside", []harel.Option{harel.WithSyncURL("http://127.0.0.1:1"),
			harel.WithSyncURLs("http://127.0.0.1:1/a", "http://127.0.0.1:1/b", "http://127.0.0.1:1/c")},
			harel.ErrArgument, []string{"sync_url and sync_urls are both set"}},
		{"one primary for three", []harel.Option{harel.WithSyncURL("http://127.0.0.1:1")},
			harel.ErrArgument, []string{"sync_url names one primary"}},
		{"primaries not there", []harel.Option{
			harel.WithSyncURLs("http://127.0.0.1:1/a", "http://127.0.0.1:1/b", "http://127.0.0.1:1/c")},
			harel.ErrConnect, []string{"databases[0] (" + replicas[0] + ")"}},
	} {
		tr, err := harel.OpenShards(replicas, r.opts...)
		if tr != nil {
			t.Errorf("%s: a Transport was returned", r.what)
			tr.Close()
		}
		wantError(t, "OpenShards: "+r.what, err, r.status, r.says...)
	}
	// One member of the set alone.
	tr, err := harel.Open(b)
	if tr != nil {
		tr.Close()
	}
	wantError(t, "Open of one shard", err, harel.ErrArgument, b, "shard 1 of 3")
	_, err = harel.OpenShards([]string{c})
	wantError(t, "OpenShards of one shard", err, harel.ErrArgument, "shard 2 of 3")
	// The list itself still opens.
	if n := shardCount(t, openShards(t, files)); n != 3 {
		t.Fatalf("shard_count %d", n)
	}
}

// An application's transaction runs on one database: on a sharded queue its first call
// (a statement, a query, a publish or the commit) is ErrArgument, and nothing of it is kept.
func TestTransactionOnShardsRefused(t *testing.T) {
	tr := openShards(t, shardFiles(t, 3))
	ctx := context.Background()
	for _, c := range []struct {
		what  string
		first func(tx *harel.Tx) error
	}{
		{"exec", func(tx *harel.Tx) error { return tx.Exec("CREATE TABLE app (id INTEGER)") }},
		{"query", func(tx *harel.Tx) error { _, err := tx.Query(ctx, "SELECT 1"); return err }},
		{"publish", func(tx *harel.Tx) error { return tx.Publish("order-42", event(1)) }},
		{"commit", func(tx *harel.Tx) error { _, err := tx.Commit(ctx); return err }},
	} {
		tx, err := tr.Begin()
		if err != nil {
			t.Fatalf("%s: begin: %v", c.what, err)
		}
		wantError(t, c.what, c.first(tx), harel.ErrArgument, "a transaction runs on one database", "sharded over 3")
		if err := tx.Rollback(); err != nil {
			t.Errorf("%s: rollback after: %v", c.what, err)
		}
	}
	published, err := tr.InTx(ctx, func(tx *harel.Tx) error { return tx.Publish("order-42", event(2)) })
	if published != nil {
		t.Errorf("in_tx: published %v", published)
	}
	wantError(t, "in_tx", err, harel.ErrArgument, "a transaction runs on one database")
	if s, err := tr.Stats(); err != nil || s.Messages != 0 {
		t.Fatalf("stats: %+v, %v", s, err)
	}
}

func TestShardsAfterClose(t *testing.T) {
	tr, err := harel.OpenShards(shardFiles(t, 2))
	if err != nil {
		t.Fatal(err)
	}
	tr.Close()
	n, err := tr.ShardCount()
	if n != 0 {
		t.Errorf("shard_count after close: %d", n)
	}
	wantError(t, "shard_count after close", err, harel.ErrClosed)
}

// Rounds of the sharded calls (kilobytes of group ids through ShardOf, the listings'
// shards arrays, refusals whose messages quote them) and of OpenShards, opened and
// refused, do not grow the process's memory.
func TestShardsFreeWhatTheyAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	files := shardFiles(t, 3)
	tr := openShards(t, files, harel.WithSynchronousFull(false))
	big := strings.Repeat("x", 8192)
	ev := json.RawMessage(`{"data":"` + big + `"}`)
	groups := make([]string, 6)
	for i := range groups {
		groups[i] = fmt.Sprintf("%d-%s", i, big)
	}
	round := func() {
		for _, g := range groups {
			if s, err := harel.ShardOf(g, 3); err != nil || s < 0 || s > 2 {
				t.Fatalf("shard_of: %d, %v", s, err)
			}
			if err := tr.Publish(g, ev); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := harel.ShardOf(big+"\xff", 3); err == nil {
			t.Fatal("invalid UTF-8 taken")
		}
		if n, err := tr.ShardCount(); err != nil || n != 3 {
			t.Fatalf("shard_count: %d, %v", n, err)
		}
		lease, err := tr.Claim("w", visibility)
		if err != nil || lease == nil {
			t.Fatalf("claim: %v, %v", lease, err)
		}
		if err := tr.DeadLetter(lease, big); err != nil {
			t.Fatal(err)
		}
		if p, err := tr.Groups(harel.GroupAny, "", 100); err != nil || len(p.Groups) != 5 {
			t.Fatalf("groups: %v", err)
		}
		if p, err := tr.DeadLetters("", "", 100); err != nil || len(p.Letters) != 1 {
			t.Fatalf("dead letters: %v", err)
		} else if _, err := tr.Redrive(harel.DeadLettersBySeq(p.Letters[0].Seq)); err == nil {
			t.Fatal("a redrive by seq was taken")
		}
		if _, err := tr.PurgeDead(harel.AllDeadLetters()); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Purge(); err != nil {
			t.Fatal(err)
		}
	}
	a, b, c := files[0], files[1], files[2]
	opens := func() {
		other, err := harel.OpenShards(files, harel.WithPrefix("p"))
		if err != nil {
			t.Fatal(err)
		}
		if err := other.Publish(groups[0], ev); err != nil {
			t.Fatal(err)
		}
		other.Close()
		if _, err := harel.OpenShards([]string{b, a, c}); err == nil {
			t.Fatal("a reordered list opened")
		}
		if _, err := harel.OpenShards([]string{a, b}); err == nil {
			t.Fatal("a list with a database missing opened")
		}
		if _, err := harel.OpenShards([]string{a, b, c + big}); err == nil {
			t.Fatal("a database that cannot be opened was opened")
		}
	}
	const rounds, openRounds = 600, 60
	const limit = 4 << 20 // a leak of one string per round would be 4.7 MiB; of a page or a handle, far more
	set := func() {
		for i := 0; i < rounds; i++ {
			round()
		}
		for i := 0; i < openRounds; i++ {
			opens()
		}
	}
	set()
	grown := settledGrowth(t, limit, set)
	t.Logf("resident memory grew by %d KiB over %d rounds and %d sharded opens", grown/1024, rounds, openRounds)
	if grown > limit {
		t.Fatalf("resident memory grew by %d KiB over %d rounds and %d sharded opens: a leak", grown/1024, rounds, openRounds)
	}
}
