package main

// The peer: goqite v0.4.0 on mattn/go-sqlite3, set up as goqite's README does (WAL, a busy
// timeout of 5 s, one connection shared by every goroutine of the process), on files of
// its own: this process never opens one of our queue files with mattn's SQLite (two
// SQLite copies in one process on one file break each other's locks).

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	_ "github.com/mattn/go-sqlite3"
	"maragu.dev/goqite"
)

// goqiteSchema is goqite v0.4.0's schema_sqlite.sql.
const goqiteSchema = `
create table if not exists goqite (
  id text primary key default ('m_' || lower(hex(randomblob(16)))),
  created text not null default (strftime('%Y-%m-%dT%H:%M:%fZ')),
  updated text not null default (strftime('%Y-%m-%dT%H:%M:%fZ')),
  queue text not null,
  body blob not null,
  timeout text not null default (strftime('%Y-%m-%dT%H:%M:%fZ')),
  received integer not null default 0,
  priority integer not null default 0
) strict;

create trigger if not exists goqite_updated_timestamp after update on goqite begin
  update goqite set updated = strftime('%Y-%m-%dT%H:%M:%fZ') where id = old.id;
end;

create index if not exists goqite_queue_priority_created_idx on goqite (queue, priority desc, created);
`

const loopReceiveDelete = "receive+delete"

// goqitePoll is how often a goqite waiter polls: the default PollInterval of goqite's own
// job runner (jobs.NewRunner), which waits with Queue.ReceiveAndWait.
const goqitePoll = 100 * time.Millisecond

type goqiteQueue struct {
	db *sql.DB
	q  *goqite.Queue
	// synchronous is what PRAGMA synchronous reads on the connection: 2 FULL, 1 NORMAL.
	synchronous int
}

// goqiteOpen opens path as goqite's README does; full adds _synchronous=FULL, else the
// driver's default stands (mattn/go-sqlite3 sets NORMAL).
func goqiteOpen(path string, full bool) (*goqiteQueue, error) {
	dsn := path + "?_journal=WAL&_timeout=5000&_fk=true"
	if full {
		dsn += "&_synchronous=FULL"
	}
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	g := &goqiteQueue{db: db, q: goqite.New(goqite.NewOpts{DB: db, Name: "bench", Timeout: visibility})}
	if _, err := db.Exec(goqiteSchema); err != nil {
		db.Close()
		return nil, err
	}
	if err := db.QueryRow("PRAGMA synchronous").Scan(&g.synchronous); err != nil {
		db.Close()
		return nil, err
	}
	return g, nil
}

func (g *goqiteQueue) Close() error { return g.db.Close() }

// goqiteFill sends n messages in one transaction (untimed setup).
func goqiteFill(g *goqiteQueue, n int) error {
	ctx := context.Background()
	tx, err := g.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if err := g.q.SendTx(ctx, tx, goqite.Message{Body: event(i)}); err != nil {
			tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

// goqitePublish sends n messages one call each into a new file: messages per second.
func goqitePublish(path string, full bool, n int) (float64, int, error) {
	g, err := goqiteOpen(path, full)
	if err != nil {
		return 0, 0, err
	}
	defer g.Close()
	ctx := context.Background()
	start := time.Now()
	for i := 0; i < n; i++ {
		if err := g.q.Send(ctx, goqite.Message{Body: event(i)}); err != nil {
			return 0, 0, err
		}
	}
	return float64(n) / time.Since(start).Seconds(), g.synchronous, nil
}

// goqiteDrain drains n messages with workers goroutines on the one connection: each
// Receive, then Delete, until Receive finds nothing; messages per second.
func goqiteDrain(path string, full bool, n, workers int) (float64, error) {
	g, err := goqiteOpen(path, full)
	if err != nil {
		return 0, err
	}
	defer g.Close()
	if err := goqiteFill(g, n); err != nil {
		return 0, err
	}
	ctx := context.Background()
	counts, errs := make([]int, workers), make([]error, workers)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, err := g.q.Receive(ctx)
				if err != nil || m == nil {
					errs[w] = err
					return
				}
				if err := g.q.Delete(ctx, m.ID); err != nil {
					errs[w] = err
					return
				}
				counts[w]++
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	total := 0
	for w := 0; w < workers; w++ {
		if errs[w] != nil {
			return 0, errs[w]
		}
		total += counts[w]
	}
	if total != n {
		return 0, fmt.Errorf("goqite: %d of %d messages drained", total, n)
	}
	return float64(n) / elapsed.Seconds(), nil
}
