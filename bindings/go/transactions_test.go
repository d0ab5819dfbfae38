package harel_test

// Mapping tests of publishing inside the application's transaction (issue 24): Begin,
// InTx and every method of Tx with its outputs, every status they map, what the binding
// checks itself (the Go types of parameters), the Transport's Close and concurrency, and
// that rounds of them free what they allocate. The semantics are the Rust contract's
// (tests/common/contract.rs, "a_transaction_").

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

// appTable creates the application's table name (id, note) in the queue's database.
func appTable(t *testing.T, tr *harel.Transport, name string) string {
	t.Helper()
	if _, err := tr.InTx(context.Background(), func(tx *harel.Tx) error {
		return tx.Exec("CREATE TABLE " + name + " (id INTEGER PRIMARY KEY, note TEXT)")
	}); err != nil {
		t.Fatalf("create table %s: %v", name, err)
	}
	return name
}

// query runs sql in a transaction of its own.
func query(t *testing.T, tr *harel.Transport, sql string, args ...any) [][]any {
	t.Helper()
	var rows [][]any
	if _, err := tr.InTx(context.Background(), func(tx *harel.Tx) (err error) {
		rows, err = tx.Query(context.Background(), sql, args...)
		return err
	}); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return rows
}

// count is how many rows table holds.
func count(t *testing.T, tr *harel.Transport, table string) int64 {
	t.Helper()
	return query(t, tr, "SELECT count(*) FROM "+table)[0][0].(int64)
}

// nothingKept fails unless table and the queue are empty.
func nothingKept(t *testing.T, tr *harel.Transport, table, what string) {
	t.Helper()
	if n := count(t, tr, table); n != 0 {
		t.Errorf("%s: %d rows kept", what, n)
	}
	if s := stats(t, tr); s.Messages != 0 {
		t.Errorf("%s: %d messages kept", what, s.Messages)
	}
}

func begin(t *testing.T, tr *harel.Transport) *harel.Tx {
	t.Helper()
	tx, err := tr.Begin()
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	t.Cleanup(func() {
		if err := tx.Rollback(); err != nil {
			t.Errorf("rollback at the end: %v", err)
		}
	})
	return tx
}

func txExec(t *testing.T, tx *harel.Tx, sql string, args ...any) {
	t.Helper()
	if err := tx.Exec(sql, args...); err != nil {
		t.Fatalf("exec %s: %v", sql, err)
	}
}

func txPublish(t *testing.T, tx *harel.Tx, group string, n int, opts ...harel.PublishOption) {
	t.Helper()
	if err := tx.Publish(group, event(n), opts...); err != nil {
		t.Fatalf("publish %q %d: %v", group, n, err)
	}
}

func commit(t *testing.T, tx *harel.Tx) []harel.Published {
	t.Helper()
	published, err := tx.Commit(context.Background())
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	return published
}

func TestATransactionCommitsRowsAndMessagesTogether(t *testing.T) {
	clock := newClock()
	path := tempDB(t)
	tr := open(t, path, harel.WithClock(clock.Now))
	orders := appTable(t, tr, "orders")
	tx := begin(t, tr)
	txExec(t, tx, "INSERT INTO orders (id, note) VALUES (?1, ?2)", 1, "first order")
	txPublish(t, tx, "order-1", 1, harel.WithPriority(3), harel.WithRoutingKey("eu"))
	txPublish(t, tx, "order-1", 2, harel.WithKey("order-1/2"))
	txPublish(t, tx, "later", 3, harel.WithDelay(time.Minute))
	txPublish(t, tx, "later", 4, harel.WithNotBefore(clock.Now().Add(time.Hour)))
	other := open(t, path, harel.WithClock(clock.Now))
	if s := stats(t, other); s.Messages != 0 {
		t.Fatalf("before the commit another Transport sees %d messages", s.Messages)
	}
	published := commit(t, tx)
	if len(published) != 4 {
		t.Fatalf("published: %+v", published)
	}
	for i, p := range published {
		if p.Duplicate || (i > 0 && p.Seq <= published[i-1].Seq) {
			t.Fatalf("published: %+v", published)
		}
	}
	if n := count(t, other, orders); n != 1 {
		t.Fatalf("%d rows after the commit", n)
	}
	// The options reached the library: the group's priority and routing key, the delays.
	if s := stats(t, other); s.Messages != 4 || s.Delayed != 1 || s.ByPriority[len(s.ByPriority)-1].Priority != 3 {
		t.Fatalf("stats: %+v", s)
	}
	lease := claim(t, other, "w", harel.WithMinPriority(3), harel.WithRoutingKeys("eu"))
	if lease.Seq != published[0].Seq || string(lease.Event) != string(event(1)) {
		t.Fatalf("claimed %+v, want the first publish", lease)
	}
	ack(t, other, lease)
	ack(t, other, claimEvent(t, other, 2))
	claimNone(t, other, "the delayed group")
	clock.Advance(time.Minute + time.Millisecond) // due after a minute
	ack(t, other, claimEvent(t, other, 3))
	claimNone(t, other, "not before an hour")
	clock.Advance(time.Hour)
	ack(t, other, claimEvent(t, other, 4))

	// A key seen before: the message is a duplicate, the row is new.
	published, err := tr.InTx(context.Background(), func(tx *harel.Tx) error {
		if err := tx.Exec("INSERT INTO orders (id, note) VALUES (?, ?)", 2, nil); err != nil {
			return err
		}
		return tx.Publish("order-1", event(2), harel.WithKey("order-1/2"))
	})
	if err != nil || !reflect.DeepEqual(published, []harel.Published{{Seq: published[0].Seq, Duplicate: true}}) {
		t.Fatalf("the duplicate: %+v, %v", published, err)
	}
	if n := count(t, tr, orders); n != 2 {
		t.Fatalf("%d rows", n)
	}
	// Nothing asked: a commit with no outcome.
	if published, err := begin(t, tr).Commit(context.Background()); err != nil || published == nil || len(published) != 0 {
		t.Fatalf("an empty commit: %#v, %v", published, err)
	}
	if published, err := tr.InTx(context.Background(), func(*harel.Tx) error { return nil }); err != nil || len(published) != 0 {
		t.Fatalf("an empty InTx: %#v, %v", published, err)
	}
}

// Publishes on both sides of a Query come back from Commit in the order published.
func TestAQuerySeesItsOwnWrites(t *testing.T) {
	tr := memory(t, newClock())
	reads := appTable(t, tr, "reads")
	var seen, returned [][]any
	published, err := tr.InTx(context.Background(), func(tx *harel.Tx) (err error) {
		if err := tx.Exec("INSERT INTO reads (id, note) VALUES (1, 'a'), (2, 'b')"); err != nil {
			return err
		}
		if err := tx.Publish("g", event(1), harel.WithKey("k")); err != nil {
			return err
		}
		if seen, err = tx.Query(context.Background(), "SELECT id, note FROM reads ORDER BY id"); err != nil {
			return err
		}
		if err := tx.Publish("g", event(2), harel.WithKey("k")); err != nil {
			return err
		}
		returned, err = tx.Query(context.Background(), "UPDATE reads SET note = ?1 WHERE id = 2 RETURNING note", "changed")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]any{{int64(1), "a"}, {int64(2), "b"}}; !reflect.DeepEqual(seen, want) {
		t.Fatalf("seen %#v, want %#v", seen, want)
	}
	if want := [][]any{{"changed"}}; !reflect.DeepEqual(returned, want) {
		t.Fatalf("returned %#v, want %#v", returned, want)
	}
	if len(published) != 2 || published[0].Duplicate || published[1] != (harel.Published{Seq: published[0].Seq, Duplicate: true}) {
		t.Fatalf("published: %+v", published)
	}
	if rows := query(t, tr, "SELECT note FROM reads WHERE id = 2"); rows[0][0] != "changed" {
		t.Fatalf("after the commit: %#v", rows)
	}
	if rows := query(t, tr, "SELECT * FROM "+reads+" WHERE id > 2"); rows == nil || len(rows) != 0 {
		t.Fatalf("no rows: %#v", rows)
	}
}

// Every Go type a parameter may have goes in as its SQL value and comes back as Query's.
func TestEveryValueTypeGoesAndComesBack(t *testing.T) {
	tr := memory(t, newClock())
	for _, c := range []struct {
		arg  any
		want any
		typ  string
	}{
		{nil, nil, "null"},
		{true, int64(1), "integer"},
		{false, int64(0), "integer"},
		{int(-7), int64(-7), "integer"},
		{int8(math.MinInt8), int64(math.MinInt8), "integer"},
		{int16(math.MaxInt16), int64(math.MaxInt16), "integer"},
		{int32(math.MinInt32), int64(math.MinInt32), "integer"},
		{int64(math.MinInt64), int64(math.MinInt64), "integer"},
		{uint(7), int64(7), "integer"},
		{uint8(math.MaxUint8), int64(math.MaxUint8), "integer"},
		{uint16(math.MaxUint16), int64(math.MaxUint16), "integer"},
		{uint32(math.MaxUint32), int64(math.MaxUint32), "integer"},
		{uint64(math.MaxInt64), int64(math.MaxInt64), "integer"},
		{float32(0.5), 0.5, "real"},
		{0.1 + 0.2, 0.1 + 0.2, "real"},
		{math.MaxFloat64, math.MaxFloat64, "real"},
		{"", "", "text"},
		{"a'\"\u00e9\U0010FFFF", "a'\"\u00e9\U0010FFFF", "text"},
		{[]byte{0, 255, 'x'}, []byte{0, 255, 'x'}, "blob"},
		{[]byte{}, []byte{}, "blob"},
		{[]byte(nil), []byte{}, "blob"},
	} {
		rows := query(t, tr, "SELECT ?1, typeof(?1)", c.arg)
		if len(rows) != 1 || len(rows[0]) != 2 {
			t.Fatalf("%#v: rows %#v", c.arg, rows)
		}
		if got := rows[0][0]; !reflect.DeepEqual(got, c.want) {
			t.Errorf("%#v (%T) came back as %#v (%T), want %#v (%T)", c.arg, c.arg, got, got, c.want, c.want)
		}
		if got := rows[0][1]; got != c.typ {
			t.Errorf("%#v (%T) went in as %v, want %s", c.arg, c.arg, got, c.typ)
		}
	}
	// Many columns and rows, row by row.
	rows := query(t, tr, "SELECT 1, 'one', x'01' UNION ALL SELECT 2, NULL, 2.5")
	want := [][]any{{int64(1), "one", []byte{1}}, {int64(2), nil, 2.5}}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("rows %#v, want %#v", rows, want)
	}
	// A text comes back with its length: kilobytes, and a NUL byte made by SQL (a local
	// file's text holding a NUL is cut there: libSQL reads texts as C strings).
	big := strings.Repeat("x", 100_000)
	if rows := query(t, tr, "SELECT ?1 || 'y'", big); rows[0][0] != big+"y" {
		t.Fatalf("a long text came back %d bytes long", len(rows[0][0].(string)))
	}
	if rows := query(t, tr, "SELECT 'a' || char(0) || 'b'"); rows[0][0] != "a" && rows[0][0] != "a\x00b" {
		t.Fatalf("a text holding a NUL: %q", rows[0][0])
	}
}

func TestATransactionThatFailsKeepsNothing(t *testing.T) {
	tr := memory(t, newClock())
	orders := appTable(t, tr, "failing")
	insert := "INSERT INTO failing (id, note) VALUES (?, ?)"
	work := func(tx *harel.Tx) {
		txExec(t, tx, insert, 1, nil)
		txPublish(t, tx, "g", 1)
	}

	tx := begin(t, tr)
	work(tx)
	if err := tx.Rollback(); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	nothingKept(t, tr, orders, "rolled back")
	tx = begin(t, tr)
	work(tx)
	if rows, err := tx.Query(context.Background(), "SELECT count(*) FROM failing"); err != nil || rows[0][0] != int64(1) {
		t.Fatalf("query: %#v, %v", rows, err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatalf("rollback after a query: %v", err)
	}
	nothingKept(t, tr, orders, "rolled back after a query began it")
	if err := tx.Rollback(); err != nil {
		t.Fatalf("a second rollback: %v", err)
	}
	wantError(t, "exec after the rollback", tx.Exec(insert, 2, nil), harel.ErrArgument, "the transaction was rolled back: begin a new one")

	// fn's error comes back as it is.
	changedMind := errors.New("the application changed its mind")
	published, err := tr.InTx(context.Background(), func(tx *harel.Tx) error {
		work(tx)
		return changedMind
	})
	if err != changedMind || published != nil {
		t.Fatalf("InTx returned %v, %v; want fn's error itself", published, err)
	}
	nothingKept(t, tr, orders, "fn returned an error")
	var leaked *harel.Tx
	_, err = tr.InTx(context.Background(), func(tx *harel.Tx) error {
		leaked = tx
		work(tx)
		_, err := tx.Query(context.Background(), "SELECT * FROM failing")
		if err != nil {
			return err
		}
		return fmt.Errorf("wrapped: %w", harel.ErrLeaseLost)
	})
	if !errors.Is(err, harel.ErrLeaseLost) || err.Error() != "wrapped: harel: HAREL_ERR_LEASE_LOST" {
		t.Fatalf("fn's error after a query: %v", err)
	}
	nothingKept(t, tr, orders, "fn returned an error after a query")
	wantError(t, "the tx of an InTx that returned", leaked.Exec(insert, 1, nil), harel.ErrArgument, "rolled back")

	// A panic in fn: rolled back, and the panic goes on with its value.
	type oops struct{ n int }
	func() {
		defer func() {
			if p := recover(); p != (oops{7}) {
				t.Fatalf("recovered %#v, want fn's panic", p)
			}
		}()
		_, _ = tr.InTx(context.Background(), func(tx *harel.Tx) error {
			work(tx)
			if _, err := tx.Query(context.Background(), "SELECT * FROM failing"); err != nil {
				return err
			}
			panic(oops{7})
		})
		t.Fatal("InTx returned after fn panicked")
	}()
	nothingKept(t, tr, orders, "fn panicked")

	// A statement that fails at the commit takes the publishes before it with it.
	_, err = tr.InTx(context.Background(), func(tx *harel.Tx) error {
		work(tx)
		return tx.Exec(insert, 1, nil)
	})
	wantError(t, "a constraint at the commit", err, harel.ErrDatabase, "UNIQUE")
	nothingKept(t, tr, orders, "a constraint failed at the commit")
	publish(t, tr, "g", event(9)) // the transport is usable after all of it
	ack(t, tr, claimEvent(t, tr, 9))
}

// A failing statement ends the transaction, rolled back: every later call is ErrArgument
// saying why, but Rollback.
func TestAFailedTransactionRefusesItsCalls(t *testing.T) {
	tr := memory(t, newClock())
	orders := appTable(t, tr, "ended")
	tx := begin(t, tr)
	txExec(t, tx, "INSERT INTO ended (id) VALUES (1)")
	txPublish(t, tx, "g", 1)
	txExec(t, tx, "INSERT INTO no_such_table VALUES (1)") // queued: checked when sent
	rows, err := tx.Query(context.Background(), "SELECT 1")
	wantError(t, "a query after a bad statement", err, harel.ErrDatabase, "no_such_table")
	if rows != nil {
		t.Fatalf("a failed query returned %#v", rows)
	}
	ended := "the transaction was rolled back after an error: begin a new one"
	wantError(t, "exec", tx.Exec("INSERT INTO ended (id) VALUES (2)"), harel.ErrArgument, ended)
	wantError(t, "publish", tx.Publish("g", event(2)), harel.ErrArgument, ended)
	_, err = tx.Query(context.Background(), "SELECT 1")
	wantError(t, "query", err, harel.ErrArgument, ended)
	published, err := tx.Commit(context.Background())
	wantError(t, "commit", err, harel.ErrArgument, ended)
	if published != nil {
		t.Fatalf("a refused commit returned %+v", published)
	}
	wantError(t, "exec after the commit", tx.Exec("SELECT 1"), harel.ErrArgument, ended)
	if err := tx.Rollback(); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	nothingKept(t, tr, orders, "a failed transaction")

	// A query that fails itself.
	tx = begin(t, tr)
	txPublish(t, tx, "g", 1)
	_, err = tx.Query(context.Background(), "SELECT no_such_column FROM ended")
	wantError(t, "a bad query", err, harel.ErrDatabase, "no_such_column")
	wantError(t, "publish after it", tx.Publish("g", event(2)), harel.ErrArgument, ended)
	nothingKept(t, tr, orders, "a failed query")
}

func TestUseAfterCommit(t *testing.T) {
	tr := memory(t, newClock())
	tx := begin(t, tr)
	txPublish(t, tx, "g", 1)
	if published := commit(t, tx); len(published) != 1 {
		t.Fatalf("published: %+v", published)
	}
	committed := "the transaction was committed: begin a new one"
	wantError(t, "exec", tx.Exec("SELECT 1"), harel.ErrArgument, committed)
	wantError(t, "publish", tx.Publish("g", event(2)), harel.ErrArgument, committed)
	rows, err := tx.Query(context.Background(), "SELECT 1")
	wantError(t, "query", err, harel.ErrArgument, committed)
	if rows != nil {
		t.Fatalf("a refused query returned %#v", rows)
	}
	published, err := tx.Commit(context.Background())
	wantError(t, "commit", err, harel.ErrArgument, committed)
	if published != nil {
		t.Fatalf("a refused commit returned %+v", published)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatalf("rollback after the commit: %v", err)
	}
	wantError(t, "exec after the rollback too", tx.Exec("SELECT 1"), harel.ErrArgument, committed)
	if s := stats(t, tr); s.Messages != 1 {
		t.Fatalf("%d messages", s.Messages)
	}
	// fn may not end its transaction itself: InTx's commit then finds it ended.
	_, err = tr.InTx(context.Background(), func(tx *harel.Tx) error { _, err := tx.Commit(context.Background()); return err })
	wantError(t, "InTx whose fn committed", err, harel.ErrArgument, committed)
	_, err = tr.InTx(context.Background(), func(tx *harel.Tx) error { return tx.Rollback() })
	wantError(t, "InTx whose fn rolled back", err, harel.ErrArgument, "the transaction was rolled back: begin a new one")
}

// Refused arguments queue nothing, and the transaction goes on.
func TestBadTransactionInput(t *testing.T) {
	tr := memory(t, newClock())
	orders := appTable(t, tr, "bad")
	tx := begin(t, tr)
	ok := event(1)
	nul := "NUL byte"
	queryErr := func(sql string, args ...any) error {
		rows, err := tx.Query(context.Background(), sql, args...)
		if rows != nil {
			t.Errorf("a refused query returned %#v", rows)
		}
		return err
	}
	insert := "INSERT INTO bad (id, note) VALUES (?, ?)"
	type point struct{ x, y int }
	for _, c := range []struct {
		what  string
		err   error
		parts []string
	}{
		// the binding's
		{"exec: NUL in sql", tx.Exec("SELECT 1\x00"), []string{"sql", nul}},
		{"exec: NUL in a text", tx.Exec(insert, 1, "a\x00b"), []string{"params[1]", nul, "at byte 1"}},
		{"exec: a uint64 beyond int64", tx.Exec(insert, uint64(math.MaxInt64)+1, nil), []string{"params[0] is 9223372036854775808", "int64"}},
		{"exec: a uint beyond int64", tx.Exec(insert, 1, uint(math.MaxUint)), []string{"params[1]", "int64"}},
		{"exec: a struct", tx.Exec(insert, point{1, 2}, nil), []string{"params[0] is a harel_test.point"}},
		{"exec: a time", tx.Exec(insert, 1, time.Unix(0, 0)), []string{"params[1] is a time.Time"}},
		{"exec: a pointer", tx.Exec(insert, new(int), nil), []string{"params[0] is a *int"}},
		{"exec: a named []byte", tx.Exec(insert, 1, ok), []string{"params[1] is a json.RawMessage"}},
		{"exec: a slice of args", tx.Exec(insert, []any{1, 2}), []string{"params[0] is a []interface {}"}},
		{"query: a map", queryErr("SELECT ?", map[string]int{}), []string{"params[0] is a map[string]int"}},
		{"query: NUL in a text", queryErr("SELECT ?", "\x00"), []string{"params[0]", nul}},
		{"publish: NUL in group_id", tx.Publish("a\x00", ok), []string{"group_id", nul}},
		{"publish: NUL in key", tx.Publish("g", ok, harel.WithKey("k\x00")), []string{"key", nul}},
		{"publish: priority beyond int32", tx.Publish("g", ok, harel.WithPriority(1<<40)), []string{"priority"}},
		{"publish: not_before before the epoch", tx.Publish("g", ok, harel.WithNotBefore(time.Unix(-1, 0))), []string{"not_before", "epoch"}},
		// the library's
		{"exec: empty sql", tx.Exec(""), []string{"sql is empty"}},
		{"exec: sql not UTF-8", tx.Exec("SELECT '\xff'"), []string{"sql"}},
		{"exec: NaN", tx.Exec(insert, math.NaN(), nil), []string{"params[0] is NaN"}},
		{"exec: +Inf float32", tx.Exec(insert, 1, float32(math.Inf(1))), []string{"params[1] is inf"}},
		{"exec: -Inf", tx.Exec(insert, 1, math.Inf(-1)), []string{"params[1] is -inf"}},
		{"exec: a text not UTF-8", tx.Exec(insert, 1, "\xff"), []string{"params[1]"}},
		{"query: empty sql", queryErr(""), []string{"sql is empty"}},
		{"query: NaN", queryErr("SELECT ?", math.NaN()), []string{"params[0] is NaN"}},
		{"publish: empty group_id", tx.Publish("", ok), []string{"group_id"}},
		{"publish: event not JSON", tx.Publish("g", []byte("{")), []string{"event_json"}},
		{"publish: priority 5", tx.Publish("g", ok, harel.WithPriority(5)), []string{"priority"}},
		{"publish: empty routing key", tx.Publish("g", ok, harel.WithRoutingKey("")), []string{"routing_key"}},
		{"publish: empty key", tx.Publish("g", ok, harel.WithKey("")), []string{"key"}},
		{"publish: 257-byte key", tx.Publish("g", ok, harel.WithKey(strings.Repeat("k", 257))), []string{"key is 257 bytes"}},
		{"publish: negative delay", tx.Publish("g", ok, harel.WithDelay(-time.Second)), []string{"delay"}},
		{"publish: delay over ten years", tx.Publish("g", ok, harel.WithDelay(tenYears+time.Second)), []string{"delay"}},
	} {
		wantError(t, c.what, c.err, harel.ErrArgument, c.parts...)
	}
	// A context done before a call: Query sends nothing and the transaction goes on.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	rows, err := tx.Query(done, "INSERT INTO bad (id) VALUES (99) RETURNING id")
	wantError(t, "query with a done context", err, harel.ErrInterrupted, "before the query")
	if !errors.Is(err, context.Canceled) || rows != nil {
		t.Fatalf("query with a done context: %#v, %v", rows, err)
	}
	txExec(t, tx, insert, 1, "kept")
	txPublish(t, tx, "g", 1)
	if published := commit(t, tx); len(published) != 1 {
		t.Fatalf("only the good publish: %+v", published)
	}
	if rows := query(t, tr, "SELECT id, note FROM "+orders); !reflect.DeepEqual(rows, [][]any{{int64(1), "kept"}}) {
		t.Fatalf("only the good row: %#v", rows)
	}
	// Commit with a done context rolls back.
	tx = begin(t, tr)
	txExec(t, tx, insert, 2, nil)
	txPublish(t, tx, "g", 2)
	expired, stop := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer stop()
	published, err := tx.Commit(expired)
	wantError(t, "commit with a done context", err, harel.ErrInterrupted, "before the commit", "rolled back")
	if !errors.Is(err, context.DeadlineExceeded) || published != nil {
		t.Fatalf("commit with a done context: %+v, %v", published, err)
	}
	wantError(t, "exec after it", tx.Exec(insert, 3, nil), harel.ErrArgument, "the transaction was rolled back: begin a new one")
	// An instant more than ten years ahead is refused by Publish itself; it queues nothing,
	// and the transaction goes on.
	tx = begin(t, tr)
	txExec(t, tx, insert, 2, nil)
	far := tx.Publish("g", event(2), harel.WithNotBefore(time.Unix(1000, 0).Add(tenYears+time.Hour)))
	wantError(t, "publish of a not_before far ahead", far, harel.ErrArgument, "not_before", "more than ten years")
	if err := tx.Rollback(); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	// InTx with a done context begins nothing.
	ran := false
	published, err = tr.InTx(done, func(*harel.Tx) error { ran = true; return nil })
	wantError(t, "InTx with a done context", err, harel.ErrInterrupted, "before the transaction began")
	if !errors.Is(err, context.Canceled) || ran || published != nil {
		t.Fatalf("InTx with a done context: ran %v, %+v, %v", ran, published, err)
	}
	if n := count(t, tr, orders); n != 1 {
		t.Fatalf("%d rows", n)
	}
	if s := stats(t, tr); s.Messages != 1 {
		t.Fatalf("%d messages", s.Messages)
	}
}

// While a transaction holds the Transport's connection, the Transport's other calls and
// a transaction inside it wait the busy timeout, then fail with ErrBusy saying why.
func TestTransactionsDoNotNest(t *testing.T) {
	const busy = 100 * time.Millisecond
	tr := open(t, tempDB(t), harel.WithBusyTimeout(busy))
	orders := appTable(t, tr, "nested")
	published, err := tr.InTx(context.Background(), func(tx *harel.Tx) error {
		txExec(t, tx, "INSERT INTO nested (id) VALUES (1)")
		txPublish(t, tx, "outer", 1)
		if _, err := tx.Query(context.Background(), "SELECT 1"); err != nil {
			return err
		}
		started := time.Now()
		_, err := tr.InTx(context.Background(), func(inner *harel.Tx) error {
			if err := inner.Exec("INSERT INTO nested (id) VALUES (2)"); err != nil {
				return err
			}
			return inner.Publish("inner", event(2))
		})
		wantError(t, "a transaction's commit inside another", err, harel.ErrBusy, "do not nest")
		if waited := time.Since(started); waited < busy {
			t.Errorf("the nested commit failed after %v, before the busy timeout", waited)
		}
		_, err = begin(t, tr).Query(context.Background(), "SELECT 1")
		wantError(t, "a transaction's query inside another", err, harel.ErrBusy, "do not nest")
		wantError(t, "the Transport's publish inside it", tr.Publish("outside", event(3)), harel.ErrBusy,
			"transaction's own publish")
		return nil
	})
	if err != nil || len(published) != 1 {
		t.Fatalf("the outer transaction: %+v, %v", published, err)
	}
	if rows := query(t, tr, "SELECT id FROM "+orders); !reflect.DeepEqual(rows, [][]any{{int64(1)}}) {
		t.Fatalf("rows: %#v", rows)
	}
	if s := stats(t, tr); s.Messages != 1 || s.Groups != 1 {
		t.Fatalf("only the outer message: %+v", s)
	}
}

// Closing the Transport rolls back its open transactions: their calls are then ErrClosed,
// Rollback nil.
func TestCloseRollsBackOpenTransactions(t *testing.T) {
	path := tempDB(t)
	tr, err := harel.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	orders := appTable(t, tr, "closing")
	holding, queued, committing := begin(t, tr), begin(t, tr), begin(t, tr)
	for i, tx := range []*harel.Tx{holding, queued, committing} {
		txExec(t, tx, "INSERT INTO closing (id) VALUES (?)", i)
		txPublish(t, tx, "g", i)
	}
	if _, err := holding.Query(context.Background(), "SELECT count(*) FROM closing"); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	wantError(t, "exec", holding.Exec("SELECT 1"), harel.ErrClosed)
	wantError(t, "publish", holding.Publish("g", event(9)), harel.ErrClosed)
	_, err = holding.Query(context.Background(), "SELECT 1")
	wantError(t, "query", err, harel.ErrClosed)
	published, err := committing.Commit(context.Background())
	wantError(t, "commit", err, harel.ErrClosed)
	if published != nil {
		t.Fatalf("a refused commit returned %+v", published)
	}
	wantError(t, "exec after that commit", committing.Exec("SELECT 1"), harel.ErrArgument, "the transaction was rolled back")
	for _, tx := range []*harel.Tx{holding, queued, holding} {
		if err := tx.Rollback(); err != nil {
			t.Fatalf("rollback after close: %v", err)
		}
	}
	_, err = tr.Begin()
	wantError(t, "begin after close", err, harel.ErrClosed)
	_, err = tr.InTx(context.Background(), func(*harel.Tx) error { t.Error("fn ran after close"); return nil })
	wantError(t, "InTx after close", err, harel.ErrClosed)
	nothingKept(t, open(t, path), orders, "closed with its transactions open")
}

// A commit wakes this process's waiting claims.
func TestACommitWakesAWaitingClaim(t *testing.T) {
	path := tempDB(t)
	waiter, producer := open(t, path), open(t, path)
	claimed := make(chan *harel.Lease)
	go func() {
		lease, err := waiter.ClaimWait(context.Background(), "w", visibility, 20*time.Second)
		if err != nil {
			t.Error(err)
		}
		claimed <- lease
	}()
	time.Sleep(100 * time.Millisecond) // the claim is waiting
	started := time.Now()
	if _, err := producer.InTx(context.Background(), func(tx *harel.Tx) error { return tx.Publish("g", event(1)) }); err != nil {
		t.Fatal(err)
	}
	lease := <-claimed
	if lease == nil || string(lease.Event) != string(event(1)) {
		t.Fatalf("claimed %+v", lease)
	}
	if took := time.Since(started); took > 5*time.Second {
		t.Fatalf("woken %v after the commit", took)
	}
}

// Goroutines each with its own Transport, and goroutines sharing one (which the library
// runs one transaction at a time), each running transactions that query, on one file:
// every row and every message is kept, once.
func TestConcurrentTransactions(t *testing.T) {
	const goroutines, each = 6, 20
	path := tempDB(t)
	opts := []harel.Option{harel.WithSynchronousFull(false), harel.WithBusyTimeout(time.Minute)}
	shared := open(t, path, opts...)
	orders := appTable(t, shared, "concurrent")
	var wg sync.WaitGroup
	var mu sync.Mutex
	seqs := map[int64]bool{}
	for g := 0; g < 2*goroutines; g++ {
		tr := shared
		if g < goroutines {
			tr = open(t, path, opts...)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				id := g*each + i
				published, err := tr.InTx(context.Background(), func(tx *harel.Tx) error {
					if err := tx.Exec("INSERT INTO concurrent (id, note) VALUES (?, ?)", id, "n"); err != nil {
						return err
					}
					rows, err := tx.Query(context.Background(), "SELECT count(*) FROM concurrent WHERE id = ?", id)
					if err != nil {
						return err
					}
					if rows[0][0] != int64(1) {
						return fmt.Errorf("the transaction does not see its row %d: %#v", id, rows)
					}
					return tx.Publish(fmt.Sprintf("g%d", g), event(id))
				})
				if err != nil || len(published) != 1 {
					t.Errorf("goroutine %d, transaction %d: %+v, %v", g, i, published, err)
					return
				}
				mu.Lock()
				seqs[published[0].Seq] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	const total = 2 * goroutines * each
	if len(seqs) != total {
		t.Fatalf("%d distinct seqs, want %d", len(seqs), total)
	}
	if n := count(t, shared, orders); n != total {
		t.Fatalf("%d rows, want %d", n, total)
	}
	if s := stats(t, shared); s.Messages != total {
		t.Fatalf("%d messages, want %d", s.Messages, total)
	}
}

// Rounds of every transaction call, with kilobytes of strings and blobs in and out, and
// their errors, do not grow the process's memory.
func TestTransactionsFreeWhatTheyAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	tr := open(t, tempDB(t), harel.WithSynchronousFull(false))
	appTable(t, tr, "leaks")
	big := strings.Repeat("x", 8192)
	blob := []byte(big)
	ev := []byte(`{"data":"` + big + `"}`)
	ctx := context.Background()
	round := func(n int) {
		tx, err := tr.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Exec("INSERT INTO leaks (id, note) VALUES (?, ?)", n, big); err != nil {
			t.Fatal(err)
		}
		if err := tx.Publish("group-"+big, ev, harel.WithKey(strings.Repeat("k", 256)), harel.WithRoutingKey(big)); err != nil {
			t.Fatal(err)
		}
		rows, err := tx.Query(ctx, "SELECT note, ?1, ?2, ?3 FROM leaks WHERE id = ?4", big, blob, 0.5, n)
		if err != nil || len(rows) != 1 || len(rows[0][0].(string)) != len(big) || len(rows[0][2].([]byte)) != len(blob) {
			t.Fatalf("query: %v", err)
		}
		if err := tx.Exec(big); err != nil { // refused when sent: the commit's error quotes it
			t.Fatal(err)
		}
		if _, err := tx.Commit(ctx); err == nil {
			t.Fatal("a commit of a bad statement")
		}
		// Refused at once: the binding's and the library's errors.
		if err := tx.Exec("SELECT ?", big+"\x00"); err == nil {
			t.Fatal("a NUL byte was taken")
		}
		if _, err := tr.InTx(ctx, func(tx *harel.Tx) error {
			if err := tx.Exec("SELECT ?", math.NaN(), big); err == nil {
				t.Fatal("a NaN was taken")
			}
			if err := tx.Publish(big, []byte(big)); err == nil {
				t.Fatal("an event not JSON was taken")
			}
			if err := tx.Exec("DELETE FROM leaks WHERE id = ?", n); err != nil {
				return err
			}
			return tx.Publish("g", ev)
		}); err != nil {
			t.Fatal(err)
		}
		rolled, err := tr.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if err := rolled.Exec("INSERT INTO leaks (id, note) VALUES (?, ?)", n, big); err != nil {
			t.Fatal(err)
		}
		if err := rolled.Rollback(); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Purge(); err != nil {
			t.Fatal(err)
		}
	}
	// Many transactions that send nothing: a handle not freed (its slot in the library,
	// about 100 bytes) by Commit or Rollback would add megabytes.
	const short = 50000
	shortOnes := func() {
		for i := 0; i < short; i++ {
			tx, err := tr.Begin()
			if err != nil {
				t.Fatal(err)
			}
			if i%2 == 0 {
				err = tx.Rollback()
			} else {
				_, err = tx.Commit(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	const rounds, limit = 1000, 4 << 20 // a leak of one string per round would be 8 MiB
	set := func() {
		for i := 0; i < rounds; i++ {
			round(i)
		}
		shortOnes()
	}
	set()
	grown := settledGrowth(t, limit, set)
	t.Logf("resident memory grew by %d KiB over %d rounds of transactions and %d short ones", grown/1024, rounds, short)
	if grown > limit {
		t.Fatalf("resident memory grew by %d KiB over %d rounds of transactions: a leak", grown/1024, rounds)
	}
}
