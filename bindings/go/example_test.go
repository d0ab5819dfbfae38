package harel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

// Publish into groups, then claim and ack: FIFO within a group, round robin across groups.
func Example() {
	t, err := harel.Open(":memory:") // or a file path: "queue.db"
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close() // closing cannot fail: always nil

	for _, m := range []struct{ group, event string }{
		{"order-1", `{"kind":"created","id":"e1","data":{}}`},
		{"order-1", `{"kind":"paid","id":"e2","data":{}}`},
		{"order-2", `{"kind":"created","id":"e3","data":{}}`},
	} {
		if err := t.Publish(m.group, json.RawMessage(m.event)); err != nil {
			log.Fatal(err)
		}
	}
	for {
		lease, err := t.Claim("worker-1", 30*time.Second)
		if err != nil {
			log.Fatal(err)
		}
		if lease == nil {
			break // nothing deliverable: a real worker sleeps and polls again
		}
		fmt.Printf("%s %s\n", lease.GroupID, lease.Event)
		if err := t.Ack(lease); err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// order-1 {"kind":"created","id":"e1","data":{}}
	// order-2 {"kind":"created","id":"e3","data":{}}
	// order-1 {"kind":"paid","id":"e2","data":{}}
}

// PublishMany appends a batch in one transaction (one commit): all of it or none.
func ExampleTransport_PublishMany() {
	t, err := harel.Open(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close() // closing cannot fail: always nil

	err = t.PublishMany([]harel.Message{
		{GroupID: "order-1", Event: json.RawMessage(`{"kind":"created"}`)},
		{GroupID: "order-2", Event: json.RawMessage(`{"kind":"created"}`), Priority: 3, RoutingKey: "eu"},
		{GroupID: "order-1", Event: json.RawMessage(`{"kind":"paid"}`)},
	})
	fmt.Println(err)

	// One bad message rejects the batch, naming it by index; nothing of it is stored.
	err = t.PublishMany([]harel.Message{
		{GroupID: "order-3", Event: json.RawMessage(`{}`)},
		{GroupID: "order-3", Event: json.RawMessage(`{oops`)},
	})
	fmt.Println(errors.Is(err, harel.ErrArgument))

	for {
		lease, err := t.Claim("worker-1", 30*time.Second)
		if err != nil {
			log.Fatal(err)
		}
		if lease == nil {
			break
		}
		fmt.Printf("%s %s\n", lease.GroupID, lease.Event)
		_ = t.Ack(lease)
	}
	// Output:
	// <nil>
	// true
	// order-1 {"kind":"created"}
	// order-2 {"kind":"created"}
	// order-1 {"kind":"paid"}
}

// PublishWith with an idempotency key makes a retry safe: a publish that failed with
// ErrConnect may have been applied, and the retry with the same key stores nothing if it
// was. With a delay the message waits, and its group's later messages wait behind it.
func ExampleTransport_PublishWith() {
	t, err := harel.Open(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close() // closing cannot fail: always nil

	paid := json.RawMessage(`{"kind":"paid","id":"e7"}`)
	publish := func() harel.Published {
		for attempt := 1; ; attempt++ {
			p, err := t.PublishWith("order-1", paid, harel.WithKey("order-1/e7")) // the event's own id
			if errors.Is(err, harel.ErrConnect) && attempt < 5 {
				time.Sleep(time.Duration(attempt) * time.Second) // it may have been stored: retry, same key
				continue
			}
			if err != nil {
				log.Fatal(err)
			}
			return p
		}
	}
	first, again := publish(), publish() // the second as a retry whose first try got through
	fmt.Println(first.Duplicate, again.Duplicate, again.Seq == first.Seq)

	// A reminder in an hour; the group's next event waits behind it, other groups go on.
	_, _ = t.PublishWith("order-2", json.RawMessage(`{"kind":"remind"}`), harel.WithDelay(time.Hour))
	_ = t.Publish("order-2", json.RawMessage(`{"kind":"cancelled"}`))

	s, _ := t.Stats()
	fmt.Printf("%d ready, %d delayed, due in %v\n", s.Ready, s.Delayed, s.NextDueAt.Sub(s.Now).Round(time.Minute))
	for {
		lease, err := t.Claim("worker-1", 30*time.Second)
		if err != nil {
			log.Fatal(err)
		}
		if lease == nil {
			break // order-2 is delayed for an hour
		}
		fmt.Printf("%s %s\n", lease.GroupID, lease.Event)
		_ = t.Ack(lease)
	}
	// Output:
	// false true true
	// 1 ready, 1 delayed, due in 1h0m0s
	// order-1 {"kind":"paid","id":"e7"}
}

// Goroutines publishing through one Transport share commits: the publishes that arrive
// while one commits go together in the next transaction, and each call still returns its
// own error, once its message is committed.
func ExampleTransport_Publish_concurrent() {
	t, err := harel.Open(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close() // closing cannot fail: always nil

	var wg sync.WaitGroup
	for order := 1; order <= 8; order++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			group := fmt.Sprintf("order-%d", order)
			for _, kind := range []string{"created", "paid", "shipped"} {
				if err := t.Publish(group, json.RawMessage(`{"kind":"`+kind+`"}`)); err != nil {
					log.Fatal(err)
				}
			}
		}()
	}
	wg.Wait()

	kinds := map[string][]string{}
	for {
		lease, err := t.Claim("worker-1", 30*time.Second)
		if err != nil {
			log.Fatal(err)
		}
		if lease == nil {
			break
		}
		var ev struct{ Kind string }
		_ = json.Unmarshal(lease.Event, &ev)
		kinds[lease.GroupID] = append(kinds[lease.GroupID], ev.Kind)
		_ = t.Ack(lease)
	}
	fmt.Println(len(kinds), kinds["order-5"])
	// Output:
	// 8 [created paid shipped]
}

// Claim returns nil, nil when nothing is deliverable, including while the only group with
// messages has one in flight.
func ExampleTransport_Claim() {
	t, err := harel.Open(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close() // closing cannot fail: always nil
	_ = t.Publish("g", json.RawMessage(`{"n":1}`))
	_ = t.Publish("g", json.RawMessage(`{"n":2}`))

	first, _ := t.Claim("w1", time.Minute)
	second, err := t.Claim("w2", time.Minute)
	fmt.Println(string(first.Event), second == nil, err)
	// Output: {"n":1} true <nil>
}

// A worker loop: each ack and the next claim share one transaction (one commit).
func ExampleTransport_AckAndClaim() {
	t, err := harel.Open(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close() // closing cannot fail: always nil
	_ = t.Publish("g", json.RawMessage(`{"n":1}`))
	_ = t.Publish("g", json.RawMessage(`{"n":2}`))

	lease, err := t.Claim("w", time.Minute)
	for lease != nil && err == nil {
		fmt.Println(string(lease.Event)) // handle it
		lease, err = t.AckAndClaim(lease, "w", time.Minute)
	}
	fmt.Println(err)
	// Output:
	// {"n":1}
	// {"n":2}
	// <nil>
}

// Routing keys send groups to the workers that ask for them; priorities set a floor.
func ExampleWithRoutingKeys() {
	t, err := harel.Open(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close() // closing cannot fail: always nil
	_ = t.Publish("gpu-job", json.RawMessage(`{}`), harel.WithRoutingKey("gpu"))
	_ = t.Publish("cpu-job", json.RawMessage(`{}`), harel.WithRoutingKey("cpu"), harel.WithPriority(3))
	_ = t.Publish("urgent", json.RawMessage(`{}`), harel.WithPriority(4))

	lease, _ := t.Claim("gpu-box", time.Minute, harel.WithRoutingKeys("gpu"))
	fmt.Println(lease.GroupID)
	lease, _ = t.Claim("any-box", time.Minute, harel.WithMinPriority(3))
	fmt.Println(lease.GroupID)
	// Output:
	// gpu-job
	// cpu-job
}

// A lease that lapsed and went to another worker can no longer be acked.
func ExampleTransport_Ack_leaseLost() {
	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	t, err := harel.Open(":memory:", harel.WithClock(clock))
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close() // closing cannot fail: always nil
	_ = t.Publish("g", json.RawMessage(`{}`))

	slow, _ := t.Claim("slow-worker", 10*time.Second)
	mu.Lock()
	now = now.Add(11 * time.Second) // the slow worker's lease lapses
	mu.Unlock()
	fast, _ := t.Claim("fast-worker", 10*time.Second)

	err = t.Ack(slow)
	fmt.Println(errors.Is(err, harel.ErrLeaseLost))
	fmt.Println(t.Ack(fast))
	// Output:
	// true
	// <nil>
}

// Nack with a delay parks the message: its group waits, in order, until the delay is over.
func ExampleTransport_Nack() {
	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	t, err := harel.Open(":memory:", harel.WithClock(clock))
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close() // closing cannot fail: always nil
	_ = t.Publish("g", json.RawMessage(`{"try":"me"}`))

	lease, _ := t.Claim("w", time.Minute)
	_ = t.Nack(lease, 5*time.Second) // failed: retry in 5 s
	again, _ := t.Claim("w", time.Minute)
	fmt.Println("at once:", again == nil)
	mu.Lock()
	now = now.Add(6 * time.Second)
	mu.Unlock()
	again, _ = t.Claim("w", time.Minute)
	fmt.Println("after 6 s:", string(again.Event))
	// Output:
	// at once: true
	// after 6 s: {"try":"me"}
}

// Errors carry the library's status and a message naming the bad parameter.
func ExampleError() {
	t, err := harel.Open(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close() // closing cannot fail: always nil

	err = t.Publish("g", json.RawMessage(`{not json`))
	fmt.Println(errors.Is(err, harel.ErrArgument))
	var e *harel.Error
	if errors.As(err, &e) {
		fmt.Println(e.Status)
	}
	_, err = t.Claim("w", 0)
	fmt.Println(err)
	// Output:
	// true
	// HAREL_ERR_ARGUMENT
	// harel: HAREL_ERR_ARGUMENT: visibility is 0; it must be a finite number of seconds > 0
}

// Stats counts the queue in one read that takes no write lock (it never holds up a claim).
func ExampleTransport_Stats() {
	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	t, err := harel.Open(":memory:", harel.WithClock(clock))
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close() // closing cannot fail: always nil
	_ = t.Publish("order-1", json.RawMessage(`{"kind":"paid"}`), harel.WithPriority(2))
	_ = t.Publish("order-2", json.RawMessage(`{"kind":"created"}`))
	_, _ = t.Claim("worker-1", time.Minute) // order-1's
	mu.Lock()
	now = now.Add(3 * time.Second)
	mu.Unlock()

	s, err := t.Stats()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d messages in %d groups: %d ready, %d leased, %d parked; %d dead\n",
		s.Messages, s.Groups, s.Ready, s.Leased, s.Parked, s.Dead)
	fmt.Println("oldest ready:", *s.OldestReadyAge)             // nil when nothing is ready
	fmt.Println("next release in:", s.NextReleaseAt.Sub(s.Now)) // nil when nothing is in flight
	for _, p := range s.ByPriority {
		fmt.Printf("priority %d: %d ready, %d leased\n", p.Priority, p.Ready, p.Leased)
	}
	// Output:
	// 2 messages in 2 groups: 1 ready, 1 leased, 0 parked; 0 dead
	// oldest ready: 3s
	// next release in: 57s
	// priority 0: 1 ready, 0 leased
	// priority 2: 0 ready, 1 leased
}

// A worker moves a message it will never handle to the dead letters, and its group goes
// on; once the cause is fixed, an operator lists the dead letters and redrives them.
func ExampleTransport_DeadLetter() {
	t, err := harel.Open(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close() // closing cannot fail: always nil
	_ = t.Publish("order-7", json.RawMessage(`{"kind":"paid","amount":"oops"}`))
	_ = t.Publish("order-7", json.RawMessage(`{"kind":"shipped"}`))

	lease, _ := t.Claim("worker-1", time.Minute)
	if err := t.DeadLetter(lease, "amount is not a number"); err != nil {
		log.Fatal(err)
	}
	next, _ := t.Claim("worker-1", time.Minute) // the group goes on at once
	fmt.Println(string(next.Event))
	_ = t.Ack(next)

	page, err := t.DeadLetters("", "", 100) // every group's, the first page
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range page.Letters {
		fmt.Printf("%s %s: %s\n", d.GroupID, d.Event, d.Reason)
	}
	moved, err := t.Redrive(harel.AllDeadLetters()) // or DeadLettersOfGroup, DeadLettersBySeq
	fmt.Println("redriven:", moved, err)
	again, _ := t.Claim("worker-2", time.Minute)
	fmt.Println(string(again.Event), "attempt", again.Attempts)
	// Output:
	// {"kind":"shipped"}
	// order-7 {"kind":"paid","amount":"oops"}: amount is not a number
	// redriven: 1 <nil>
	// {"kind":"paid","amount":"oops"} attempt 1
}

// WithMaxAttempts moves a message claimed that many times to the dead letters, so one that
// keeps failing (or keeps killing its worker) does not block its group.
func ExampleWithMaxAttempts() {
	t, err := harel.Open(":memory:", harel.WithMaxAttempts(2))
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close() // closing cannot fail: always nil
	_ = t.Publish("g", json.RawMessage(`{"n":1}`))
	_ = t.Publish("g", json.RawMessage(`{"n":2}`))

	for i := 0; i < 3; i++ {
		lease, _ := t.Claim("w", time.Minute)
		fmt.Println(string(lease.Event), "attempt", lease.Attempts)
		_ = t.Nack(lease, 0) // failed: give it back
	}
	page, _ := t.DeadLetters("g", "", 10)
	fmt.Println(page.Letters[0].Reason)
	// Output:
	// {"n":1} attempt 1
	// {"n":1} attempt 2
	// {"n":2} attempt 1
	// claimed 2 times: max_attempts is 2
}

// ClaimWait waits for work instead of polling: it returns as soon as a message is
// published (here by another goroutine), or, when nothing comes, at the end of its wait or
// of its context, whichever is first.
func ExampleTransport_ClaimWait() {
	t, err := harel.Open(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close() // closing cannot fail: always nil
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = t.Publish("g", json.RawMessage(`{"n":1}`))
	}()

	lease, err := t.ClaimWait(context.Background(), "w", time.Minute, 10*time.Second)
	fmt.Println(string(lease.Event), err)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	lease, err = t.ClaimWait(ctx, "w", time.Minute, 10*time.Second) // g's only message is in flight
	fmt.Println(lease == nil, errors.Is(err, context.DeadlineExceeded), errors.Is(err, harel.ErrInterrupted))
	// Output:
	// {"n":1} <nil>
	// true true true
}

// A batch worker: ClaimMany waits for work and leases up to 10 messages, each of a
// different group; AckAndClaimMany acks a batch and leases the next in one commit. When it
// finds nothing, a real worker goes back to ClaimMany's wait.
func ExampleTransport_ClaimMany() {
	t, err := harel.Open(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close() // closing cannot fail: always nil
	for n, group := range []string{"order-1", "order-2", "order-1", "order-3", "order-1"} {
		_ = t.Publish(group, json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)))
	}

	ctx := context.Background()
	leases, err := t.ClaimMany(ctx, "worker-1", 30*time.Second, 10, 5*time.Second)
	for err == nil && len(leases) > 0 {
		var handled []string
		for _, lease := range leases {
			handled = append(handled, lease.GroupID+" "+string(lease.Event)) // handle it
		}
		fmt.Println(strings.Join(handled, ", "))
		var acked []error
		leases, acked, err = t.AckAndClaimMany(leases, "worker-1", 30*time.Second, 10)
		for _, lost := range acked {
			if lost != nil {
				log.Print(lost) // ErrLeaseLost: it lapsed and another worker has it
			}
		}
	}
	fmt.Println(err)
	// Output:
	// order-1 {"n":0}, order-2 {"n":1}, order-3 {"n":3}
	// order-1 {"n":2}
	// order-1 {"n":4}
	// <nil>
}

// KeepAlive extends a lease while its handler runs longer than the visibility, and stop
// tells whether the lease was kept throughout.
func ExampleTransport_KeepAlive() {
	t, err := harel.Open(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close() // closing cannot fail: always nil
	_ = t.Publish("g", json.RawMessage(`{"slow":true}`))
	lease, _ := t.Claim("w", 200*time.Millisecond)

	ctx, stop := t.KeepAlive(context.Background(), lease, 200*time.Millisecond)
	select { // a handler that takes 2.5 visibilities, and stops if the lease is lost
	case <-time.After(500 * time.Millisecond):
	case <-ctx.Done():
	}
	other, _ := t.Claim("w2", time.Minute)
	fmt.Println("another worker got it:", other != nil)
	fmt.Println("lost:", stop())
	fmt.Println(t.Ack(lease))
	// Output:
	// another worker got it: false
	// lost: <nil>
	// <nil>
}

// InTx writes the application's rows and publishes their events in one transaction: both
// are kept, or (on an error of fn or of the database, or a panic) neither. A Query sees
// the transaction's own writes; what became of each publish comes back from the commit.
func ExampleTransport_InTx() {
	t, err := harel.Open(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close() // closing cannot fail: always nil
	ctx := context.Background()
	_, err = t.InTx(ctx, func(tx *harel.Tx) error {
		return tx.Exec("CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL)")
	})
	fmt.Println(err)

	pay := func(id int, total float64) ([]harel.Published, error) {
		return t.InTx(ctx, func(tx *harel.Tx) error {
			if err := tx.Exec("INSERT INTO orders (id, total) VALUES (?, ?)", id, total); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, "SELECT count(*), sum(total) FROM orders")
			if err != nil {
				return err
			}
			fmt.Println("orders, total:", rows[0][0], rows[0][1])
			ev := json.RawMessage(fmt.Sprintf(`{"kind":"paid","id":"o%d"}`, id))
			return tx.Publish(fmt.Sprintf("order-%d", id), ev, harel.WithKey(fmt.Sprintf("order-%d/paid", id)))
		})
	}
	published, err := pay(1, 9.5)
	fmt.Println(len(published), published[0].Duplicate, err)
	_, err = pay(1, 12) // the same id again: the row's insert fails, so nothing of it is kept
	fmt.Println(errors.Is(err, harel.ErrDatabase))

	lease, _ := t.Claim("worker-1", 30*time.Second)
	fmt.Printf("%s %s\n", lease.GroupID, lease.Event)
	// Output:
	// <nil>
	// orders, total: 1 9.5
	// 1 false <nil>
	// true
	// order-1 {"kind":"paid","id":"o1"}
}

// OpenShards opens one queue over several databases; each group lives on the shard
// ShardOf names, and listings say where each group is.
func ExampleOpenShards() {
	dir, err := os.MkdirTemp("", "harel-shards")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	databases := []string{ // in shard order: every later open passes the same list
		filepath.Join(dir, "shard0.db"), filepath.Join(dir, "shard1.db"), filepath.Join(dir, "shard2.db"),
	}
	t, err := harel.OpenShards(databases)
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close() // closing cannot fail: always nil

	n, _ := t.ShardCount()
	fmt.Println("shards:", n)
	for _, g := range []string{"order-40", "order-42", "order-43"} {
		if err := t.Publish(g, json.RawMessage(`{"kind":"created"}`)); err != nil {
			log.Fatal(err)
		}
	}
	page, err := t.Groups(harel.GroupAny, "", 10)
	if err != nil {
		log.Fatal(err)
	}
	for _, g := range page.Groups {
		s, _ := harel.ShardOf(g.GroupID, n) // no Transport needed
		fmt.Println(g.GroupID, "on shard", g.Shard, s == g.Shard)
	}

	// A transaction runs on one database: refused on a sharded queue.
	_, err = t.InTx(context.Background(), func(tx *harel.Tx) error {
		return tx.Publish("order-42", json.RawMessage(`{"kind":"paid"}`))
	})
	fmt.Println(errors.Is(err, harel.ErrArgument))
	// Output:
	// shards: 3
	// order-40 on shard 1 true
	// order-42 on shard 2 true
	// order-43 on shard 0 true
	// true
}
