package main

// The bench's other processes: the bench binary run again with "child MODE ...". Each
// opens a queue file that the parent does not open with that SQLite: a publisher for the
// wake-up latency, eight idle waiters, and readers of a queue file through mattn's
// SQLite (dbstat, data_version), never in the process that has our library on it.

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"maragu.dev/goqite"
)

// idleWaiters is how many waiting workers the idle measurement runs.
const idleWaiters = 8

func runChild(args []string) error {
	switch {
	case len(args) == 3 && args[0] == "publisher":
		return childPublisher(args[1], args[2])
	case len(args) == 4 && args[0] == "idle":
		secs, err := strconv.ParseFloat(args[3], 64)
		if err != nil {
			return err
		}
		return childIdle(args[1], args[2], time.Duration(secs*float64(time.Second)))
	case len(args) == 2 && args[0] == "pages":
		return childPages(args[1])
	case len(args) == 2 && args[0] == "dataversion":
		return childDataVersion(args[1])
	}
	return fmt.Errorf("child: bad arguments %q", args)
}

// childPublisher publishes, for each line on stdin, one message stamped with its send
// time, at synchronous FULL, and prints the time its publish returned.
func childPublisher(system, path string) error {
	var publish func(n int, ev []byte) error
	switch system {
	case "ours":
		tr, err := oursOpen(path, true)
		if err != nil {
			return err
		}
		defer tr.Close()
		publish = func(n int, ev []byte) error { return tr.Publish(fmt.Sprintf("p%d", n), ev) }
	case "goqite":
		g, err := goqiteOpen(path, true)
		if err != nil {
			return err
		}
		defer g.Close()
		publish = func(_ int, ev []byte) error { return g.q.Send(context.Background(), goqite.Message{Body: ev}) }
	default:
		return fmt.Errorf("publisher: no system %q", system)
	}
	in, out := bufio.NewScanner(os.Stdin), bufio.NewWriter(os.Stdout)
	for n := 0; in.Scan(); n++ {
		if err := publish(n, stamped(time.Now().UnixNano())); err != nil {
			return err
		}
		fmt.Fprintln(out, time.Now().UnixNano())
		if err := out.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// idleReport is what childIdle prints at the end of its window.
type idleReport struct {
	CPUSeconds  float64 `json:"cpu_s"`
	WallSeconds float64 `json:"wall_s"`
	StartNs     int64   `json:"start_ns"`
	EndNs       int64   `json:"end_ns"`
}

// childIdle runs idleWaiters workers waiting on an empty queue: ours each on its own
// Transport in ClaimMany with a one-minute wait; goqite's in ReceiveAndWait polling every
// goqitePoll on the shared connection. One second after they started (every wait begun),
// it prints "ready", then after window its CPU time over the window as JSON.
func childIdle(system, path string, window time.Duration) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, idleWaiters)
	stopped := func(err error) bool {
		if err != nil && ctx.Err() == nil {
			errs <- err
		}
		return err != nil
	}
	switch system {
	case "ours":
		for w := 0; w < idleWaiters; w++ {
			tr, err := oursOpen(path, true)
			if err != nil {
				return err
			}
			defer tr.Close()
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					leases, err := tr.ClaimMany(ctx, fmt.Sprintf("w%d", w), visibility, batch, time.Minute)
					if stopped(err) {
						return
					}
					_, err = tr.AckMany(leases)
					if stopped(err) {
						return
					}
				}
			}()
		}
	case "goqite":
		g, err := goqiteOpen(path, true)
		if err != nil {
			return err
		}
		defer g.Close()
		for w := 0; w < idleWaiters; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					m, err := g.q.ReceiveAndWait(ctx, goqitePoll)
					if stopped(err) {
						return
					}
					if stopped(g.q.Delete(context.Background(), m.ID)) {
						return
					}
				}
			}()
		}
	default:
		return fmt.Errorf("idle: no system %q", system)
	}
	time.Sleep(time.Second)
	cpu0, err := cpuTime()
	if err != nil {
		return err
	}
	start := time.Now()
	fmt.Println("ready")
	time.Sleep(window)
	cpu1, err := cpuTime()
	end := time.Now()
	cancel()
	wg.Wait()
	if err != nil {
		return err
	}
	select {
	case err := <-errs:
		return err
	default:
	}
	return json.NewEncoder(os.Stdout).Encode(idleReport{
		CPUSeconds: (cpu1 - cpu0).Seconds(), WallSeconds: end.Sub(start).Seconds(),
		StartNs: start.UnixNano(), EndNs: end.UnixNano(),
	})
}

// childPages prints, as JSON, what each page of the database at path belongs to (its
// b-tree's name and the page's type, from dbstat); a page it does not list is on the
// free list.
func childPages(path string) error {
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.Query("SELECT pageno, name, pagetype FROM dbstat")
	if err != nil {
		return err
	}
	defer rows.Close()
	pages := map[uint32]string{}
	for rows.Next() {
		var pageno uint32
		var name, kind string
		if err := rows.Scan(&pageno, &name, &kind); err != nil {
			return err
		}
		pages[pageno] = name + " " + kind
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(pages)
}

// childDataVersion prints PRAGMA data_version of one connection to path now and again
// after a line on stdin: the two differ if another connection committed in between.
func childDataVersion(path string) error {
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		return err
	}
	defer conn.Close()
	read := func() error {
		var v int64
		if err := conn.QueryRowContext(context.Background(), "PRAGMA data_version").Scan(&v); err != nil {
			return err
		}
		fmt.Println(v)
		return nil
	}
	if err := read(); err != nil {
		return err
	}
	bufio.NewScanner(os.Stdin).Scan()
	return read()
}
