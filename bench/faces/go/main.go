// The Go face of `make bench-faces` (bench/faces/run.py): the work of face.c through the
// Go binding (bindings/go, cgo), a module of its own so the binding's go.mod stays as it is.
// Usage: face <path|:memory:> <claim_ack|ack_and_claim> [messages] [groups]
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	harel "github.com/harel-transport/harel-transport/bindings/go"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: face <path|:memory:> <claim_ack|ack_and_claim> [messages] [groups]")
		os.Exit(2)
	}
	path, mode := os.Args[1], os.Args[2]
	if mode != "claim_ack" && mode != "ack_and_claim" {
		fmt.Fprintln(os.Stderr, "unknown mode", mode)
		os.Exit(2)
	}
	number := func(i, fallback int) int {
		if len(os.Args) <= i {
			return fallback
		}
		n, err := strconv.Atoi(os.Args[i])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		return n
	}
	n, groups := number(3, 4000), number(4, 50)
	if err := run(path, mode, n, groups); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(path, mode string, n, groups int) error {
	t, err := harel.Open(path, harel.WithSynchronousFull(false))
	if err != nil {
		return err
	}
	defer t.Close()
	batch := make([]harel.Message, n)
	for i := range batch {
		batch[i] = harel.Message{
			GroupID: fmt.Sprintf("g-%03d", i%groups),
			Event: json.RawMessage(fmt.Sprintf(
				`{"id":"ev-%d","kind":"bench","created_time":null,"received_time":null,"data":{"n":%d}}`, i, i)),
		}
	}
	if err := t.PublishMany(batch); err != nil {
		return err
	}

	done := 0
	start := time.Now()
	if mode == "ack_and_claim" {
		lease, err := t.Claim("worker", 30*time.Second)
		for err == nil && lease != nil {
			lease, err = t.AckAndClaim(lease, "worker", 30*time.Second)
			done++
		}
		if err != nil {
			return err
		}
	} else {
		for {
			lease, err := t.Claim("worker", 30*time.Second)
			if err != nil {
				return err
			}
			if lease == nil {
				break
			}
			if err := t.Ack(lease); err != nil {
				return err
			}
			done++
		}
	}
	elapsed := time.Since(start)
	if done != n {
		return fmt.Errorf("drained %d of %d messages", done, n)
	}
	store := "file"
	if path == ":memory:" {
		store = "memory"
	}
	fmt.Printf("{\"face\":\"go\",\"mode\":%q,\"store\":%q,\"messages\":%d,\"us_per_msg\":%.3f}\n",
		mode, store, done, elapsed.Seconds()*1e6/float64(done))
	return nil
}
